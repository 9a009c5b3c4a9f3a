"""clgraph.conform and clgraph.quantize."""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import List, NamedTuple, Optional, Sequence, Union

from . import _clgraph


class ConformRow(NamedTuple):
    """One operator on one device: ``result`` is "pass", "fail", "no kernel"
    or "no cases"; ``max_abs_error`` the largest |device - cpu| seen."""

    op: str
    plugin: str
    device: str
    result: str
    cases_run: int
    cases_skipped: int
    max_abs_error: float
    message: str
    shapes: str


def conform(ops: Union[str, Sequence[str], None] = None, device: Optional[str] = None, quick: bool = False,
            seed: int = 0, plugins: Sequence[str] = (), plugin_only: bool = False) -> List[ConformRow]:
    """Runs the operators' conformance cases on each OpenCL device (or
    `device`) against their CPU kernels, as `clgraph conform` does: every
    op, or those named in `ops`, built in or from `plugins` (only theirs
    with `plugin_only`). Returns a row per op and device; rows whose result
    is "fail" say why in ``message``."""
    names = [ops] if isinstance(ops, str) else list(ops or ())
    rows = _clgraph.conform(names, device, bool(quick), int(seed), [os.fspath(p) for p in plugins],
                            bool(plugin_only))
    return [ConformRow(r["op"], r["plugin"], r["device"], r["result"], r["cases_run"], r["cases_skipped"],
                       r["max_abs_error"], r["message"], r["shapes"]) for r in rows]


def _umask() -> int:
    """The process's umask, read without setting it (os.umask would change
    it for every thread for a moment)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


_TO = {"int8": "i8", "i8": "i8", "bf16": "bf16", "bfloat16": "bf16", "f16": "f16", "float16": "f16"}
_COPIED = ("config.json", "src.vocab", "tgt.vocab", "model.cg", "generation_config.json", "vocab.json", "source.spm",
           "target.spm", "tokenizer_config.json", "special_tokens_map.json")


def quantize(model_dir: Union[str, os.PathLike], output_dir: Union[str, os.PathLike], to: str = "int8",
             embeddings: bool = False) -> int:
    """Writes `model_dir` (a translation or forecaster directory) to
    `output_dir` with the weights of its matrix products stored as `to`
    ("int8": one scale per row; "bf16" or "f16": rounded to nearest even),
    as `clgraph quantize` does; biases, vectors and (unless `embeddings`)
    embedding tables stay f32. The model is loaded first, so a directory
    that translate or forecast refuses is not copied. Each file is written
    whole or not at all. Returns the number of tensors converted."""
    if to not in _TO:
        raise _clgraph.InvalidInput(f"quantize: to must be int8, bf16 or f16, not '{to}'")
    src, dst = os.fspath(model_dir), os.fspath(output_dir)
    if os.path.exists(dst) and os.path.samefile(src, dst):
        raise _clgraph.InvalidInput("quantize: the output directory is the model directory")
    # a MarianMT directory's weights are model.safetensors
    weights = "model.safetensors" if os.path.exists(os.path.join(src, "model.safetensors")) else "weights.safetensors"
    if os.path.exists(os.path.join(src, "src.vocab")) or weights == "model.safetensors":
        _clgraph.Translator(src, "cpu", None, [], 0, 0)
    else:
        _clgraph.Forecaster(src, "cpu", None, [], 0)
    os.makedirs(dst, exist_ok=True)
    count = _clgraph.narrow_weights(os.path.join(src, weights), os.path.join(dst, weights),
                                    _clgraph.dtypes()[_TO[to]][0], bool(embeddings))
    for name in _COPIED:
        path = os.path.join(src, name)
        if not os.path.exists(path):
            continue
        fd, tmp = tempfile.mkstemp(prefix="." + name, dir=dst)
        os.close(fd)
        try:
            shutil.copyfile(path, tmp)
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; the CLI's files have the umask's mode
            os.replace(tmp, os.path.join(dst, name))
        except BaseException:
            os.unlink(tmp)
            raise
    return count
