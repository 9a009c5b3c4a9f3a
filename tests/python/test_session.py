"""clgraph.Session against independent references: numpy (float64) for .cg
models, ONNX Runtime for ONNX files (made with onnx.helper and exported from
PyTorch where installed)."""
import json
import os
import threading

import numpy as np
import pytest

import clgraph


def test_devices_and_build():
    devs = clgraph.devices()
    assert devs[0].name == "cpu" and "CPU" in devs[0].description
    assert all(d.name.startswith("opencl:") for d in devs[1:])
    assert "onnx" in clgraph.build_features() or True  # reported, whatever the build
    assert clgraph.__version__.count(".") == 2
    assert any(name == "attention" for name, _ in clgraph.rewrites())


def test_cg_model_matches_numpy(mlp, device, rng):
    path, weights, reference = mlp
    s = clgraph.Session(path, device=device, weights=weights)
    assert s.device.startswith(device)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    y, p = s.run(None, {"x": x})
    ry, rp = reference(x)
    assert y.dtype == np.float32 and y.shape == (5, 3)
    np.testing.assert_allclose(y, ry, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(p, rp, rtol=1e-5, atol=1e-6)
    # outputs are owned by their arrays: a second run does not change them
    y0 = y.copy()
    s.run(None, {"x": x * 2})
    np.testing.assert_array_equal(y, y0)


def test_metadata(mlp):
    path, weights, _ = mlp
    s = clgraph.Session(path, weights=weights)
    [x] = s.get_inputs()
    assert (x.name, x.shape, x.dtype, x.type) == ("x", ["B", 4], "f32", "tensor(float)")
    assert x.numpy_dtype == np.float32
    assert [(o.name, o.shape) for o in s.get_outputs()] == [("y", ["B", 3]), ("p", ["B", 3])]


def test_output_selection_and_errors(mlp, rng):
    path, weights, reference = mlp
    s = clgraph.Session(path, weights=weights)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    [p] = s.run(["p"], {"x": x})
    np.testing.assert_allclose(p, reference(x)[1], rtol=1e-5, atol=1e-6)
    with pytest.raises(clgraph.NotFound, match="no output 'q'"):
        s.run(["q"], {"x": x})
    with pytest.raises(clgraph.InvalidInput, match=r"input 'x' is f32\[2, 5\], graph 'mlp' expects f32\[B, 4\]"):
        s.run(None, {"x": np.zeros((2, 5), np.float32)})
    with pytest.raises(clgraph.InvalidInput) as e:
        s.run(None, {})
    assert e.value.status == "CG_ERR_INVALID_ARGUMENT" and "x" in str(e.value)
    with pytest.raises(clgraph.Error, match="float64"):
        s.run(None, {"x": np.zeros((2, 4))})


def test_bad_models_raise_one_line(tmp_path):
    bad = tmp_path / "bad.cg"
    bad.write_text("graph g {\n  input x: f32[N]\n  y = nosuchop(x)\n  output y\n}\n")
    with pytest.raises(clgraph.Error) as e:
        clgraph.Session(str(bad))
    assert str(bad) in str(e.value) and "3:" in str(e.value) and "nosuchop" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(clgraph.InvalidInput, match=r"<text>:2:"):
        clgraph.Session(b"graph g {\n  input x f32[N]\n}\n")
    with pytest.raises(clgraph.FileError) as e:
        clgraph.Session(str(tmp_path / "missing.cg"))
    assert isinstance(e.value, OSError) and "missing.cg" in str(e.value)
    with pytest.raises(clgraph.InvalidInput):
        clgraph.Session(b"\x08\x07\x12\xff\xff garbage that is no ONNX model")
    with pytest.raises(TypeError):
        clgraph.Session(b"graph g {\n  input x: f32[N]\n  output x\n}\n", nosuchoption=1)


def test_every_dtype_in_and_out():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kinds = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "u8": np.uint8,
             "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32, "i64": np.int64,
             "u64": np.uint64, "bool": np.bool_, "f8e4m3fn": ml_dtypes.float8_e4m3fn,
             "f8e5m2": ml_dtypes.float8_e5m2, "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
             "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "f8e8m0": ml_dtypes.float8_e8m0fnu,
             "f4e2m1": ml_dtypes.float4_e2m1fn, "i4": ml_dtypes.int4, "u4": ml_dtypes.uint4,
             "i2": ml_dtypes.int2, "u2": ml_dtypes.uint2}
    for name, t in kinds.items():
        text = f'graph g {{\n  input x: {name}[N, 2]\n  y = cast(x) {{to: "f32"}}\n  output y, x\n}}\n'
        s = clgraph.Session(text.encode())
        assert s.get_inputs()[0].numpy_dtype == np.dtype(t)
        values = np.arange(6).reshape(3, 2)
        if name in ("bool", "i2", "u2"):
            values = values % 2
        elif name == "f8e8m0":  # powers of two only
            values = 2.0 ** values
        x = values.astype(t)
        y, back = s.run(None, {"x": x})
        assert back.dtype == np.dtype(t), name
        np.testing.assert_array_equal(back, x)
        np.testing.assert_array_equal(y, x.astype(np.float32))


def test_exact_conversions_only():
    s = clgraph.Session(b'graph g {\n  input ids: i32[N]\n  y = cast(ids) {to: "f32"}\n  output y\n}\n')
    [y] = s.run(None, {"ids": np.array([1, 2, 3], np.int64)})  # int64 ids, as numpy makes them
    np.testing.assert_array_equal(y, [1, 2, 3])
    with pytest.raises(clgraph.InvalidInput, match="ids"):
        s.run(None, {"ids": np.array([1, 2**40], np.int64)})
    with pytest.raises(clgraph.InvalidInput, match="is i32, got an array of f32"):
        s.run(None, {"ids": np.array([1.0], np.float32)})


def test_inputs_any_layout(mlp, rng):
    path, weights, reference = mlp
    s = clgraph.Session(path, weights=weights)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    strided = x[:, ::2]  # not contiguous: copied
    np.testing.assert_allclose(s.run(["y"], {"x": strided})[0], reference(strided)[0], rtol=1e-5, atol=1e-5)
    fortran = np.asfortranarray(x[:, :4])
    np.testing.assert_allclose(s.run(["y"], {"x": fortran})[0], reference(fortran)[0], rtol=1e-5, atol=1e-5)
    as_list = x[:, :4].tolist()  # a list of Python floats is float64: not taken
    with pytest.raises(clgraph.Error, match="float64"):
        s.run(["y"], {"x": as_list})


def test_run_into(mlp, device, rng):
    path, weights, reference = mlp
    s = clgraph.Session(path, device=device, weights=weights)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    y = np.full((6, 3), np.nan, np.float32)
    p = np.full((6, 3), np.nan, np.float32)
    for _ in range(3):
        s.run_into({"y": y, "p": p}, {"x": x})
    np.testing.assert_allclose(y, reference(x)[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(p, reference(x)[1], rtol=1e-5, atol=1e-6)
    assert s.stats()["last"]["host_allocs"] == 0
    only = np.zeros((6, 3), np.float32)
    s.run_into({"p": only}, {"x": x})
    np.testing.assert_array_equal(only, p)
    with pytest.raises(clgraph.InvalidInput):
        s.run_into({"y": np.zeros((5, 3), np.float32)}, {"x": x})
    with pytest.raises(clgraph.InvalidInput, match="writable"):
        ro = np.zeros((6, 3), np.float32)
        ro.flags.writeable = False
        s.run_into({"y": ro}, {"x": x})


def test_repeated_runs_bit_identical(mlp, device, rng):
    path, weights, _ = mlp
    s = clgraph.Session(path, device=device, weights=weights)
    x = rng.standard_normal((7, 4)).astype(np.float32)
    a = s.run(None, {"x": x})
    b = s.run(None, {"x": x})
    for u, v in zip(a, b):
        assert u.tobytes() == v.tobytes()


def test_stats_and_profile(mlp, tmp_path, rng):
    path, weights, _ = mlp
    s = clgraph.Session(path, weights=weights, profile=True)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    s.run(None, {"x": x})
    s.run(None, {"x": x})
    st = s.stats()
    assert st["total"]["runs"] == 2 and st["last"]["kernel_launches"] >= 4
    assert st["memory"]["arena_bytes"] > 0
    trace = s.end_profiling(tmp_path / "trace.json")
    events = json.load(open(trace))["traceEvents"]
    assert {e["args"]["op"] for e in events if e.get("cat") == "kernel"} >= {"linear", "tanh", "softmax"}
    assert "linear" in s.describe("B=3")
    named = clgraph.Session(path, weights=weights, profile=str(tmp_path / "named.json"))
    named.run(None, {"x": x})
    assert named.end_profiling() == str(tmp_path / "named.json")
    assert json.load(open(tmp_path / "named.json"))["traceEvents"]
    plain = clgraph.Session(path, weights=weights)
    with pytest.raises(clgraph.InvalidInput, match="profile=True"):
        plain.end_profiling(tmp_path / "none.json")


def test_threads_share_and_own_sessions(mlp, rng):
    """Threads running one Session (queued on its lock) and their own (in
    parallel) get what one thread gets."""
    path, weights, reference = mlp
    shared = clgraph.Session(path, weights=weights)
    xs = [rng.standard_normal((3 + i, 4)).astype(np.float32) for i in range(6)]
    want = [shared.run(None, {"x": x}) for x in xs]
    errors = []

    def work(i, session):
        try:
            for _ in range(20):
                got = session.run(None, {"x": xs[i]})
                for g, w in zip(got, want[i]):
                    if g.tobytes() != w.tobytes():
                        errors.append(f"thread {i}: different result")
                        return
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i, shared if i % 2 else clgraph.Session(path, weights=weights)))
               for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_gil_released_while_running(mlp, rng):
    """Another Python thread makes progress while a run is in C."""
    path, weights, _ = mlp
    s = clgraph.Session(path, weights=weights)
    x = rng.standard_normal((20000, 4)).astype(np.float32)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(1)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        before = len(ticks)
        for _ in range(5):
            s.run(None, {"x": x})
        during = len(ticks) - before
    finally:
        done.set()
        t.join()
    assert during > 0


def _onnx_model(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    w = rng.standard_normal((6, 5)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]), helper.make_node("Softmax", ["r"], ["y"], axis=-1),
             helper.make_node("ArgMax", ["y"], ["k"], axis=-1, keepdims=0)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5]),
                               helper.make_tensor_value_info("k", TensorProto.INT64, ["batch"])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "mlp.onnx"
    onnx.save(model, str(path))
    return str(path)


def test_onnx_matches_onnxruntime(tmp_path, device, rng):
    ort = pytest.importorskip("onnxruntime")
    path = _onnx_model(tmp_path)
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    s = clgraph.Session(path, device=device)
    assert [(i.name, i.shape, i.type) for i in s.get_inputs()] == \
        [(i.name, i.shape, i.type) for i in ref.get_inputs()]
    assert [(o.name, o.type) for o in s.get_outputs()] == [(o.name, o.type) for o in ref.get_outputs()]
    x = rng.standard_normal((9, 6)).astype(np.float32)
    got = s.run(None, {"x": x})
    want = ref.run(None, {"x": x})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    assert got[1].dtype == np.int64
    np.testing.assert_array_equal(got[1], want[1])
    # the same from the file's bytes
    s2 = clgraph.Session(open(path, "rb").read(), device=device)
    np.testing.assert_array_equal(s2.run(["y"], {"x": x})[0], got[0])


@pytest.mark.filterwarnings("ignore")
def test_pytorch_export_matches_onnxruntime(tmp_path, rng):
    torch = pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(16, 2, batch_first=True)
            self.norm = torch.nn.LayerNorm(16)
            self.ff = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16))

        def forward(self, x):
            h = self.norm(x + self.attn(x, x, x, need_weights=False)[0])
            return h + self.ff(h)

    torch.manual_seed(0)
    model = Block().eval()
    path = str(tmp_path / "block.onnx")
    # the TorchScript exporter writes nn.MultiheadAttention's head split
    # with the traced sizes: the model runs at the shape it was exported at
    torch.onnx.export(model, (torch.randn(2, 5, 16),), path, input_names=["x"], output_names=["y"], dynamo=False)
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for rewrites in ("all", "none"):
        s = clgraph.Session(path, rewrites=rewrites)
        np.testing.assert_allclose(s.run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-5)
    assert "attention" in clgraph.Session(path).rewrites_fired()


def test_cpu_without_an_icd(tmp_path):
    """With no OpenCL ICD the package imports, lists the CPU alone, says why,
    runs on the CPU, and refuses an OpenCL device with one line."""
    import subprocess
    import sys
    empty = tmp_path / "no-icds"
    empty.mkdir()
    code = ("import clgraph, numpy as np\n"
            "assert [d.name for d in clgraph.devices()] == ['cpu'], clgraph.devices()\n"
            "print('note:', clgraph.device_note())\n"
            "s = clgraph.Session(b'graph g {\\n  input x: f32[N]\\n  y = neg(x)\\n  output y\\n}\\n')\n"
            "assert s.run(None, {'x': np.ones(2, np.float32)})[0].tolist() == [-1, -1]\n"
            "try:\n"
            "    clgraph.Session(b'graph g {\\n  input x: f32[N]\\n  y = neg(x)\\n  output y\\n}\\n', device='opencl:0')\n"
            "except clgraph.Error as e:\n"
            "    print('refused:', e)\n")
    env = dict(os.environ, OCL_ICD_VENDORS=str(empty), PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("note: ") and len(lines[0]) > len("note: ")
    assert lines[1].startswith("refused: ") and "opencl:0" in lines[1]


def test_half_made_objects_raise():
    """The extension's objects used before (or after a failed) __init__ raise
    instead of touching NULL handles; a second __init__ is refused."""
    from clgraph import _clgraph
    for cls, args in ((_clgraph.Session, dict(path="/nonexistent.cg")),
                      (_clgraph.Translator, dict(dir="/nonexistent")),
                      (_clgraph.Forecaster, dict(dir="/nonexistent"))):
        obj = cls.__new__(cls)
        with pytest.raises(clgraph.FileError):
            obj.__init__(**args)
        method = {"Session": "stats", "Translator": "stats", "Forecaster": "columns"}[cls.__name__]
        with pytest.raises(RuntimeError, match="not initialised"):
            getattr(obj, method)()
        with pytest.raises(RuntimeError, match="already initialised"):
            obj.__init__(**args)


@pytest.mark.skipif(not os.environ.get("CG_FAULT_SHIM"), reason="no OpenCL fault shim (CG_FAULT_SHIM)")
def test_opencl_failure_is_a_device_error(tmp_path):
    """An OpenCL call that fails (tests/fault/cl_fault.c makes the first
    kernel launch fail) raises clgraph.DeviceError with one line naming it."""
    import subprocess
    import sys
    if not [d for d in clgraph.devices() if d.name.startswith("opencl:")]:
        pytest.skip("no OpenCL device")
    code = ("import clgraph, numpy as np\n"
            "s = clgraph.Session(b'graph g {\\n  input x: f32[N]\\n  y = tanh(x)\\n  output y\\n}\\n', device='opencl:0')\n"
            "try:\n"
            "    s.run(None, {'x': np.ones(8, np.float32)})\n"
            "except clgraph.DeviceError as e:\n"
            "    print(e.status, e)\n")
    # the ICD loader preloaded after the shim: the extension is loaded with
    # RTLD_LOCAL, where the shim's RTLD_NEXT lookups would not see it
    preload = ":".join(p for p in (os.environ.get("LD_PRELOAD"), os.environ["CG_FAULT_SHIM"], "libOpenCL.so.1") if p)
    env = dict(os.environ, LD_PRELOAD=preload, CG_FAULT_FN="clEnqueueNDRangeKernel",
               CG_FAULT_N="1", CLGRAPH_CACHE_DIR=str(tmp_path / "cache"),
               ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("CG_ERR_KERNEL ") and "clEnqueueNDRangeKernel" in p.stdout
    assert p.stdout.count("\n") == 1
