"""tritonclient.http (PyPI), unchanged, against `clgraph serve`: its
outputs are the CLI's (`clgraph run`), bit for bit, for a .cg graph and
two .onnx models, with binary and with JSON tensors."""
import os
import subprocess

import numpy as np
import pytest

from conftest import CG_MODEL, CLGRAPH, EXAMPLE, MLP, TFE

httpclient = pytest.importorskip("tritonclient.http")


def cli_outputs(model, inputs, tmp, weights=None):
    args = [CLGRAPH, "run", model, "--output", str(tmp / "cli")]
    if weights:
        args += ["--weights", weights]
    for name, a in inputs.items():
        np.save(tmp / f"{name}.npy", a)
        args += ["--input", f"{name}={tmp}/{name}.npy"]
    subprocess.run(args, check=True, capture_output=True)
    return {f[:-4]: np.load(tmp / "cli" / f) for f in os.listdir(tmp / "cli")}


def triton_infer(client, model, inputs, binary):
    meta = client.get_model_metadata(model)
    types = {i["name"]: i["datatype"] for i in meta["inputs"]}
    ins = []
    for name, a in inputs.items():
        x = httpclient.InferInput(name, list(a.shape), types[name])
        x.set_data_from_numpy(a, binary_data=binary)
        ins.append(x)
    outs = [httpclient.InferRequestedOutput(o["name"], binary_data=binary) for o in meta["outputs"]]
    r = client.infer(model, ins, outputs=outs)
    return {o["name"]: r.as_numpy(o["name"]) for o in meta["outputs"]}


CASES = [
    ("ex", CG_MODEL, lambda: {"src": np.load(f"{EXAMPLE}/src.npy").astype(np.int32),
                              "src_len": np.load(f"{EXAMPLE}/src_len.npy").astype(np.int32)}),
    ("model", MLP, lambda: {"x": np.random.default_rng(0).standard_normal((3, 5, 8)).astype(np.float32)}),
    ("tfe", f"tfe={TFE}", lambda: {"src": np.random.default_rng(1).integers(0, 16, (2, 7)),
                                   "src_pad": np.array([[0] * 7, [0] * 5 + [1] * 2], dtype=bool)}),
]


@pytest.mark.parametrize("name, spec, make", CASES, ids=[c[0] for c in CASES])
def test_tritonclient_returns_the_cli_outputs(serve, tmp_path, name, spec, make):
    inputs = make()
    path = spec.split("=", 1)[-1]
    model, _, weights = path.partition("@")
    s = serve(spec)
    client = httpclient.InferenceServerClient(s.url)
    assert client.is_server_live() and client.is_server_ready() and client.is_model_ready(name)
    meta = client.get_model_metadata(name)
    # the dtypes the model takes (the .onnx int64 ids may be imported as i32)
    want_types = {"INT32": np.int32, "INT64": np.int64, "BOOL": np.bool_, "FP32": np.float32}
    inputs = {k: v.astype(want_types[t["datatype"]]) for k, v in inputs.items()
              for t in meta["inputs"] if t["name"] == k}
    want = cli_outputs(model, inputs, tmp_path, weights or None)
    for binary in (True, False):
        got = triton_infer(client, name, inputs, binary)
        assert set(got) == set(want)
        for k in want:
            assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
            assert np.array_equal(got[k], want[k]), (k, binary)
    # no outputs named: every output, binary (tritonclient's default)
    ins = []
    for k, a in inputs.items():
        x = httpclient.InferInput(k, list(a.shape), next(t["datatype"] for t in meta["inputs"] if t["name"] == k))
        x.set_data_from_numpy(a)
        ins.append(x)
    r = client.infer(name, ins)
    for k in want:
        assert np.array_equal(r.as_numpy(k), want[k])
    client.close()
    assert s.stop() == 0


def test_tritonclient_errors(serve):
    s = serve(MLP)
    client = httpclient.InferenceServerClient(s.url)
    assert client.get_model_repository_index() == [{"name": "model", "version": "1", "state": "READY"}]
    assert client.get_server_metadata()["extensions"] == ["binary_tensor_data"]
    x = httpclient.InferInput("x", [1, 2, 7], "FP32")
    x.set_data_from_numpy(np.zeros((1, 2, 7), np.float32))
    with pytest.raises(Exception, match="shape\\[2\\] is 7"):
        client.infer("model", [x])
    assert not client.is_model_ready("nope")
    client.close()
    assert s.stop() == 0


@pytest.mark.parametrize("binary", [True, False])
def test_tritonclient_translates_text(serve, binary):
    """A translation model through /infer, as Triton serves text models: one
    BYTES input "text", outputs "translation" (BYTES) and "score" (FP32);
    the decoding options are request parameters. The CLI's translations and
    scores (printed with 6 digits)."""
    from conftest import SRC
    dates = os.path.join(SRC, "models", "dates")
    with open(os.path.join(dates, "samples.txt")) as f:
        lines = [l.strip() for l in f if l.strip()][:5]
    r = subprocess.run([CLGRAPH, "translate", dates, "--scores", "--beam", "3"], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, check=True)
    want = [(l.split("\t")[0], float(l.split("\t")[1])) for l in r.stdout.splitlines()]
    s = serve(dates)
    client = httpclient.InferenceServerClient(s.url)
    meta = client.get_model_metadata("dates")
    assert meta["inputs"] == [{"name": "text", "datatype": "BYTES", "shape": [-1]}]
    x = httpclient.InferInput("text", [len(lines)], "BYTES")
    x.set_data_from_numpy(np.array([l.encode() for l in lines], dtype=object), binary_data=binary)
    outs = [httpclient.InferRequestedOutput(n, binary_data=binary) for n in ("translation", "score")]
    res = client.infer("dates", [x], outputs=outs, parameters={"beam": 3})
    got = [t.decode() if isinstance(t, bytes) else t for t in res.as_numpy("translation")]
    assert got == [w[0] for w in want]
    assert [float(f"{v:.6g}") for v in res.as_numpy("score")] == pytest.approx([w[1] for w in want], abs=1e-6)
    with pytest.raises(Exception, match="nbest, attention"):
        client.infer("dates", [x], parameters={"beam": 3, "nbest": 2})
    client.close()
    assert s.stop() == 0
