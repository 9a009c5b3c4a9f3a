"""clgraph.Session: run a .cg or ONNX model, as onnxruntime.InferenceSession runs one."""
from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from . import _arrays, _clgraph

# ONNX Runtime's type strings, for code written against InferenceSession
_ORT_TYPE = {
    "f32": "tensor(float)",
    "f16": "tensor(float16)",
    "bf16": "tensor(bfloat16)",
    "i8": "tensor(int8)",
    "u8": "tensor(uint8)",
    "i16": "tensor(int16)",
    "u16": "tensor(uint16)",
    "i32": "tensor(int32)",
    "u32": "tensor(uint32)",
    "i64": "tensor(int64)",
    "u64": "tensor(uint64)",
    "bool": "tensor(bool)",
    "f8e4m3fn": "tensor(float8e4m3fn)",
    "f8e4m3fnuz": "tensor(float8e4m3fnuz)",
    "f8e5m2": "tensor(float8e5m2)",
    "f8e5m2fnuz": "tensor(float8e5m2fnuz)",
    "i4": "tensor(int4)",
    "u4": "tensor(uint4)",
}


class NodeArg(NamedTuple):
    """A graph input or output: its name, shape (ints for fixed sizes, the
    symbol's name for a symbolic one, None where unknown), clgraph dtype name
    (``"f32"``), and ``type``, the ONNX Runtime type string
    (``"tensor(float)"``)."""

    name: str
    shape: List[Union[int, str, None]]
    dtype: str

    @property
    def type(self) -> str:
        return _ORT_TYPE.get(self.dtype, f"tensor({self.dtype})")

    @property
    def numpy_dtype(self):
        """The numpy dtype arrays of this input or output have."""
        return _arrays.numpy_dtype(self.dtype)


class SessionOptions:
    """Options of a Session beyond the device: the CPU thread count (0: every
    CPU; the process has one CPU pool, so sessions of one process must agree),
    the graph rewrites to run (``"all"``, ``"none"``, ``"a,b"``, ``"-a"``;
    None: CLGRAPH_REWRITES or all), the graph of a multi-graph .cg model, and
    `profile`: True or a trace file's path to trace every run, written by
    ``end_profiling()`` (to that path, or one it makes)."""

    def __init__(self, threads: int = 0, rewrites: Optional[str] = None, graph: Optional[str] = None,
                 profile: Union[bool, str, os.PathLike] = False):
        self.threads = threads
        self.rewrites = rewrites
        self.graph = graph
        self.profile = profile


def _looks_like_cg(data: bytes) -> bool:
    """.cg text rather than an ONNX ModelProto: a ModelProto starts with its
    field 1 (ir_version, tag byte 0x08), which no text does, and is rarely
    valid UTF-8."""
    if data[:1] == b"\x08":
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Session:
    """A model ready to run on one device (or placed over several).

    ``Session(model, device="cpu", place=None, plugins=(), weights=None,
    options=None)``: `model` is a path to a ``.onnx`` or ``.cg`` file, or the
    file's bytes; `weights` a safetensors file for a .cg model whose params
    are not in it; `device` ``"cpu"``, ``"opencl:N"``, part of an OpenCL
    device's name, or ``"auto"`` (each node where it measured fastest);
    `place` rules such as ``"*attn*=cpu,encoder=opencl:0"``; `plugins`
    operator plugin libraries; `options` a SessionOptions.

    ``run(output_names, input_feed)`` returns a list of ndarrays, as
    ``onnxruntime.InferenceSession.run`` does. Errors raise clgraph.Error
    subclasses carrying the library's one-line message. The GIL is released
    while the model runs; threads may share a Session (their runs queue) or
    each use their own (they run in parallel).
    """

    def __init__(self, model: Union[str, os.PathLike, bytes], device: str = "cpu", place: Optional[str] = None,
                 plugins: Sequence[str] = (), weights: Optional[Union[str, os.PathLike]] = None,
                 options: Optional[SessionOptions] = None, **kwargs: Any):
        opts = options or SessionOptions()
        for key, value in kwargs.items():  # SessionOptions' fields as keywords
            if not hasattr(opts, key) or key.startswith("_"):
                raise TypeError(f"Session() got an unexpected keyword argument '{key}'")
            setattr(opts, key, value)
        common = dict(device=device, place=place, plugins=[os.fspath(p) for p in plugins],
                      weights=os.fspath(weights) if weights is not None else None, graph=opts.graph,
                      rewrites=opts.rewrites, threads=int(opts.threads), profile=bool(opts.profile))
        self._profile_path = None if isinstance(opts.profile, bool) else os.fspath(opts.profile)
        self._c = _clgraph.Session.__new__(_clgraph.Session)
        if isinstance(model, (bytes, bytearray, memoryview)):
            data = bytes(model)
            if _looks_like_cg(data):
                self._c.__init__(text=data, kind="cg", **common)
            else:  # the importer maps a file: give it one, removed right after
                with tempfile.NamedTemporaryFile(suffix=".onnx") as f:
                    f.write(data)
                    f.flush()
                    self._c.__init__(path=f.name, kind="onnx", **common)
        else:
            path = os.fspath(model)
            kind = "onnx" if path.lower().endswith(".onnx") else "cg"
            self._c.__init__(path=path, kind=kind, **common)
        self._inputs = [NodeArg(n, list(s), t) for n, t, s in self._c.io(False)]
        self._outputs = [NodeArg(n, list(s), t) for n, t, s in self._c.io(True)]
        self._out_index = {o.name: i for i, o in enumerate(self._outputs)}
        self._in_dtype = {i.name: i.dtype for i in self._inputs}

    # -- metadata --------------------------------------------------------
    def get_inputs(self) -> List[NodeArg]:
        """The graph's inputs: name, shape (symbolic dims by name), dtype."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The graph's outputs, in the order run() returns them."""
        return list(self._outputs)

    @property
    def device(self) -> str:
        """The device the plan runs on, e.g. ``"cpu"`` or ``"opencl:0 (NAME)"``."""
        return self._c.device

    def rewrites_fired(self) -> Dict[str, int]:
        """The graph rewrites that changed the model, with how often."""
        return self._c.rewrites_fired()

    # -- running ---------------------------------------------------------
    def _feeds(self, input_feed: Mapping[str, Any]) -> list:
        feeds = []
        for name, value in input_feed.items():
            arr, code = _arrays.to_feed(value)
            if arr.dtype.kind in "fc" and arr.dtype.itemsize > 4 and not code:
                want = self._in_dtype.get(name)
                raise _clgraph.InvalidInput(
                    f"input '{name}' is a {arr.dtype} array; the graph takes {want or 'no such input'} and clgraph "
                    f"has no {arr.dtype}: convert it (astype(numpy.float32))")
            feeds.append((name, arr, code))
        return feeds

    def _indices(self, names: Optional[Iterable[str]]) -> Optional[List[int]]:
        if names is None:
            return None
        try:
            return [self._out_index[n] for n in names]
        except KeyError as e:
            raise _clgraph.NotFound(f"the graph has no output {e.args[0]!r}; it has "
                                    + ", ".join(o.name for o in self._outputs)) from None

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Any = None) -> List[Any]:
        """Runs the model on `input_feed` ({input name: array}) and returns
        the outputs named in `output_names` (None: all, in graph order) as
        ndarrays that own their memory. Arrays whose dtype converts exactly
        into the input's (int64 ids for an int32 input) are converted."""
        del run_options  # accepted for onnxruntime compatibility
        tensors = self._c.run(self._feeds(input_feed), self._indices(output_names))
        return [_arrays.from_tensor(t) for t in tensors]

    def run_into(self, outputs: Mapping[str, Any], input_feed: Mapping[str, Any]) -> None:
        """Runs the model writing into preallocated arrays ({output name:
        array} of the output's dtype and shape, C-contiguous); outputs not
        named are computed but not copied out. With shapes seen before, a run
        allocates nothing."""
        outs = []
        for name, arr in outputs.items():
            k = self._indices([name])[0]
            buf, code = _arrays.to_output(arr)
            outs.append((k, buf, code))
        self._c.run_into(self._feeds(input_feed), outs)

    # -- statistics and profiles -----------------------------------------
    def stats(self) -> Dict[str, Any]:
        """The plan's statistics: ``last`` and ``total`` (runs, kernel
        launches, copies, host allocations, device objects, run_ms...) and
        ``memory`` (arena, params, kernel states)."""
        last, total, memory = self._c.stats()
        return {"last": last, "total": total, "memory": memory}

    def describe(self, bindings: Optional[str] = None, dot: bool = False) -> str:
        """The plan as `clgraph plan` prints it (bindings such as
        ``"B=3,S=7"`` for symbolic dims), or Graphviz source with `dot`."""
        return self._c.describe(bindings, dot)

    def end_profiling(self, path: Optional[Union[str, os.PathLike]] = None) -> str:
        """Writes the trace of the runs so far (a session made with
        ``profile=True`` or ``profile=PATH``) as Chrome / Perfetto JSON, to
        `path`, else the session's PATH, else a new file in the current
        directory (as onnxruntime does); returns its path."""
        if path is None:
            path = self._profile_path
        if path is None:
            fd, path = tempfile.mkstemp(prefix="clgraph_profile_", suffix=".json", dir=os.getcwd())
            os.close(fd)
        self._c.write_profile(os.fspath(path))
        return os.fspath(path)

    def keep_input(self, name: str, keep: bool = True) -> None:
        """Keeps input `name` on the devices that read it between runs, uploading it only when a run gets
        a different array (see cg_plan_keep_input)."""
        self._c.keep_input(name, keep)
