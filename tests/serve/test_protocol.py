"""The Open Inference Protocol endpoints of `clgraph serve`: health,
metadata, infer with JSON and binary tensors, errors and limits."""
import json
import subprocess

import numpy as np
import pytest

from conftest import CG_MODEL, MLP


def test_health_and_metadata(serve):
    s = serve(CG_MODEL, MLP)
    assert s.request("GET", "/v2/health/live")[0] == 200
    assert s.request("GET", "/v2/health/ready")[0] == 200
    status, meta = s.json("GET", "/v2")
    assert status == 200 and meta["name"] == "clgraph" and "binary_tensor_data" in meta["extensions"]
    status, meta = s.json("GET", "/v2/models/ex")
    assert status == 200
    assert meta["inputs"] == [{"name": "src", "datatype": "INT32", "shape": [-1, -1]},
                              {"name": "src_len", "datatype": "INT32", "shape": [-1]}]
    assert [o["name"] for o in meta["outputs"]] == ["keys", "s0"]
    assert meta["outputs"][1] == {"name": "s0", "datatype": "FP32", "shape": [-1, 16]}
    status, meta = s.json("GET", "/v2/models/model")  # the .onnx file's name
    assert status == 200 and meta["platform"] == "onnx"
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, -1, 8]}]
    assert s.request("GET", "/v2/models/ex/ready")[0] == 200
    assert s.request("GET", "/v2/models/ex/versions/1/ready")[0] == 200
    assert s.request("GET", "/v2/models/ex/versions/2/ready")[0] == 404
    status, err = s.json("GET", "/v2/models/nope")
    assert status == 404 and "no such model" in err["error"]
    assert s.request("POST", "/v2/models/ex")[0] == 405
    assert s.request("GET", "/v2/models/ex/infer")[0] == 405
    assert s.request("GET", "/etc/passwd")[0] == 404
    assert s.request("GET", "/v2/models/../../etc/passwd")[0] == 404
    assert s.stop() == 0


def infer_json(s, model, inputs, outputs=None):
    body = {"inputs": [{"name": n, "datatype": dt, "shape": list(a.shape), "data": a.ravel().tolist()}
                       for n, dt, a in inputs]}
    if outputs:
        body["outputs"] = [{"name": o} for o in outputs]
    return s.json("POST", f"/v2/models/{model}/infer", body)


def test_json_infer_matches_cli(serve, tmp_path):
    """JSON data in and out: FP32 written with 9 significant digits reads back
    as the same f32 as the CLI's output."""
    x = np.random.default_rng(3).standard_normal((2, 3, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    subprocess.run([CLI(), "run", MLP, "--input", f"x={tmp_path}/x.npy", "--output", str(tmp_path / "out")],
                   check=True, capture_output=True)
    want = np.load(tmp_path / "out" / "y.npy")
    s = serve(MLP)
    status, r = infer_json(s, "model", [("x", "FP32", x)])
    assert status == 200, r
    (out,) = r["outputs"]
    assert out["name"] == "y" and out["datatype"] == "FP32" and out["shape"] == [2, 3, 16]
    got = np.array(out["data"], dtype=np.float32).reshape(out["shape"])
    assert np.array_equal(got, want)
    # nested arrays are accepted too, and an id comes back
    body = {"id": "r1", "inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 3, 8], "data": x.tolist()}]}
    status, r = s.json("POST", "/v2/models/model/infer", body)
    assert status == 200 and r["id"] == "r1"
    assert np.array_equal(np.array(r["outputs"][0]["data"], dtype=np.float32).reshape(2, 3, 16), want)
    assert s.stop() == 0


def CLI():
    from conftest import CLGRAPH
    return CLGRAPH


@pytest.mark.parametrize("body, why", [
    (b"{", "not valid JSON"),
    (b"[1]", "not a JSON object"),
    (b'{"inputs": 3}', 'no "inputs" array'),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 1, 8], "data": [1]}]}', "1 values for a shape of 8"),
    (b'{"inputs": [{"name": "x", "datatype": "INT64", "shape": [1, 1, 8], "data": [0,0,0,0,0,0,0,0]}]}',
     "datatype INT64, the model takes FP32"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 1, 7], "data": [0,0,0,0,0,0,0]}]}',
     "shape[2] is 7, the model takes 8"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 8], "data": [0,0,0,0,0,0,0,0]}]}', "rank 2"),
    (b'{"inputs": [{"name": "y", "datatype": "FP32", "shape": [1], "data": [0]}]}', "no such input"),
    (b'{"inputs": []}', "input 'x' is missing"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 1, 8], "data": ["a",0,0,0,0,0,0,0]}]}',
     "element 0 is not a number"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 1, 8], "data": [0,0,0,0,0,0,0,0]}], '
     b'"outputs": [{"name": "z"}]}', "no such output"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 1, 8], "data": [0,0,0,0,0,0,0,0]}]} x',
     "more after its JSON"),
    (b"[" * 100 + b"]" * 100, "nests deeper"),
])
def test_bad_requests(serve, body, why):
    s = serve(MLP)
    status, _, data = s.request("POST", "/v2/models/model/infer", body)
    assert status == 400, data
    assert why in json.loads(data)["error"]
    # the server goes on
    assert s.request("GET", "/v2/health/ready")[0] == 200
    assert s.stop() == 0


def test_binary_header_errors(serve):
    s = serve(MLP)
    head = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 1, 8],
                                   "parameters": {"binary_data_size": 32}}]}).encode()
    for extra, hl, why in [(b"\0" * 16, len(head), "ends 16 bytes short"),
                           (b"\0" * 40, len(head), "8 bytes of binary data that no input takes"),
                           (b"\0" * 32, len(head) + 1000, "not within the body"),
                           (b"\0" * 32, "x", "not a size")]:
        status, _, data = s.request("POST", "/v2/models/model/infer", head + extra,
                                    {"Inference-Header-Content-Length": str(hl)})
        assert status == 400 and why in json.loads(data)["error"], data
    assert s.stop() == 0


def test_limits_and_token(serve):
    s = serve(MLP, "--max-body-mb", "0.01", "--max-tensor-mb", "0.001", env={"CLGRAPH_SERVE_TOKEN": "sesame"})
    auth = {"Authorization": "Bearer sesame"}
    assert s.request("GET", "/v2/health/ready")[0] == 200  # probes need no token
    assert s.request("GET", "/v2/models/model")[0] == 401
    assert s.request("GET", "/v2/models/model", headers={"Authorization": "Bearer sesam"})[0] == 401
    assert s.request("GET", "/metrics")[0] == 401
    assert s.request("GET", "/v2/models/model", headers=auth)[0] == 200
    status, _, data = s.request("POST", "/v2/models/model/infer", b" " * 20000, auth)
    assert status == 413, data
    x = np.zeros((1, 40, 8), np.float32)  # 1280 bytes > 0.001 MiB
    body = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 40, 8],
                                   "data": x.ravel().tolist()}]}).encode()
    status, _, data = s.request("POST", "/v2/models/model/infer", body, auth)
    assert status == 400 and b"limit" in data
    # curl, as a user would
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer sesame",
                        f"http://{s.url}/v2/models/model/ready"], capture_output=True, text=True, check=True)
    assert r.stdout == "200"
    assert s.stop() == 0


def test_access_log_and_metrics(serve):
    s = serve(MLP)
    x = np.ones((1, 2, 8), np.float32)
    assert infer_json(s, "model", [("x", "FP32", x)])[0] == 200
    assert s.request("GET", "/v2/models/zzz")[0] == 404
    m = s.metrics()
    assert 'clgraph_requests_total{model="model",code="200"} 1' in m
    assert 'clgraph_requests_total{model="",code="404"} 1' in m
    assert 'clgraph_batch_rows_count{model="model"} 1' in m
    assert 'clgraph_queue_depth{model="model"} 0' in m
    assert "clgraph_device_busy_seconds_total{model=\"model\",device=\"cpu\"}" in m
    assert s.stop() == 0
    # a line is written when its request ends, which may be after the client
    # has its answer and sent the next: in any order
    lines = {(l["method"], l["path"], l["status"]) for l in map(json.loads, open(s.log))}
    assert {("POST", "/v2/models/model/infer", 200), ("GET", "/v2/models/zzz", 404)} <= lines


def test_start_errors_are_one_line(serve):
    s = serve(MLP)
    for args, why in [(["--port", str(s.port), MLP], "cannot listen on 127.0.0.1 port"),
                      (["a=" + MLP, "a=" + MLP], "two models named 'a'"),
                      (["nothere.onnx"], "nothere.onnx"),
                      (["--host", "no-such-host.invalid", MLP], "--host no-such-host.invalid: ")]:
        r = subprocess.run([CLI(), "serve", *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and r.stdout == "", (args, r)
        lines = r.stderr.strip().split("\n")
        assert len(lines) == 1 and why in lines[0], (args, r.stderr)
    assert s.stop() == 0


def test_http_details(serve):
    """Chunked bodies, Expect: 100-continue (curl), HEAD, oversized headers."""
    s = serve(MLP, "--max-body-mb", "0.01")
    body = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 1, 8], "data": [1] * 8}]})
    url = f"http://{s.url}/v2/models/model/infer"
    for extra in (["-H", "Transfer-Encoding: chunked"], ["-H", "Expect: 100-continue"]):
        r = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", *extra, "-X", "POST", url, "-d", body],
                           capture_output=True, text=True, check=True)
        assert r.stdout.endswith("\n200") and '"shape":[1,1,16]' in r.stdout, r.stdout
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Transfer-Encoding: chunked",
                        "-X", "POST", url, "--data-binary", " " * 30000], capture_output=True, text=True, check=True)
    assert r.stdout == "413"
    status, headers, data = s.request("HEAD", "/v2/models/model")
    assert status == 200 and data == b""
    status, _, _ = s.request("GET", "/v2/health/live", headers={"X-Big": "a" * 100000})
    assert status == 431
    assert s.request("GET", "/v2/health/live")[0] == 200
    assert s.stop() == 0


def test_slow_body_is_cut_off(serve):
    """A client that trickles its body (often enough to stay clear of the
    idle timeout) has its connection closed once --request-timeout has
    passed since its headers: 408 in the access log and the metrics
    (libmicrohttpd sends no answer before a body's end), and the server
    goes on."""
    import socket
    import time
    s = serve(MLP, "--request-timeout", "1", "--idle-timeout", "30")
    raw = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    raw.sendall(b"POST /v2/models/model/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
    t0, closed = time.monotonic(), None
    while time.monotonic() - t0 < 10 and closed is None:
        try:
            raw.sendall(b" ")
            raw.settimeout(0.3)
            if raw.recv(4096) == b"":
                closed = time.monotonic() - t0
        except socket.timeout:
            pass
        except (BrokenPipeError, ConnectionResetError):
            closed = time.monotonic() - t0
    raw.close()
    assert closed is not None and 0.9 < closed < 5, closed
    assert s.request("GET", "/v2/health/live")[0] == 200
    assert 'clgraph_requests_total{model="",code="408"} 1' in s.metrics()
    assert s.stop() == 0
    lines = [json.loads(l) for l in open(s.log)]
    assert [l["status"] for l in lines if l["path"].endswith("/infer")] == [408]


def test_slow_headers_are_cut_off(serve):
    """Headers trickled a byte at a time (clear of the idle timeout) are cut
    off --header-timeout after the connection opened; a keep-alive client
    that sends a request within it is served, twice."""
    import http.client
    import socket
    import time
    s = serve(MLP, "--header-timeout", "1", "--idle-timeout", "30")
    raw = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    t0, closed = time.monotonic(), None
    head = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
    for i in range(len(head)):
        try:
            raw.sendall(head[i:i + 1])
            raw.settimeout(0.2)
            if raw.recv(4096) == b"":
                closed = time.monotonic() - t0
                break
        except socket.timeout:
            pass
        except (BrokenPipeError, ConnectionResetError):
            closed = time.monotonic() - t0
            break
    raw.close()
    assert closed is not None and 0.9 < closed < 3, closed
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    for _ in range(2):
        time.sleep(0.5)
        c.request("GET", "/v2/health/live")
        r = c.getresponse()
        r.read()
        assert r.status == 200
    c.close()
    assert s.stop() == 0
