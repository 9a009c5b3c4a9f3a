"""A `clgraph serve` process on a free loopback port, for the tests."""
import http.client
import json
import os
import select
import signal
import subprocess
import time

import pytest

CLGRAPH = os.environ.get("CG_CLGRAPH", "clgraph")
SRC = os.environ.get("CG_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(SRC, "models", "example")
CG_MODEL = f"ex={EXAMPLE}/model.cg@{EXAMPLE}/weights.safetensors"
MLP = os.path.join(SRC, "tests", "data", "onnx", "models", "mlp_layernorm_opset13", "model.onnx")
TFE = os.path.join(SRC, "tests", "data", "onnx", "models", "transformer_encoder", "model.onnx")


class Server:
    def __init__(self, tmp, *args, env=None):
        self.log = os.path.join(str(tmp), f"access-{time.monotonic_ns()}.log")
        cmd = [CLGRAPH, "serve", "--port", "0", "--access-log", self.log, *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, **(env or {})})
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        line = self.proc.stdout.readline().decode() if ready else ""
        if "listening on" not in line:
            self.proc.kill()
            raise RuntimeError(f"server did not start: {line!r} {self.proc.stderr.read().decode()}")
        self.port = int(line.split(":")[-1].split()[0])
        self.url = f"127.0.0.1:{self.port}"

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict(r.getheaders()), data

    def json(self, method, path, obj=None, headers=None):
        status, hdrs, data = self.request(method, path, None if obj is None else json.dumps(obj).encode(), headers)
        return status, json.loads(data) if data else None

    def metrics(self):
        _, _, data = self.request("GET", "/metrics")
        return data.decode()

    def metrics_with(self, line, timeout=10):
        """/metrics once it has `line`: a batch is counted when it ends, which
        can be after its requests were answered (each leaves when its
        sentences are done)."""
        end = time.monotonic() + timeout
        while True:
            m = self.metrics()
            if line in m or time.monotonic() > end:
                return m
            time.sleep(0.02)

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
            if rc != 0:  # shown with the failure (a sanitizer's report, say)
                print(f"clgraph serve exited {rc}; its stderr:\n{self.proc.stderr.read().decode(errors='replace')}")
            return rc
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()


@pytest.fixture
def serve(tmp_path):
    started = []

    def start(*args, env=None):
        s = Server(tmp_path, *args, env=env)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()
