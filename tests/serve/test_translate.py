"""POST /v2/models/NAME/translate: the CLI's translations and scores
(`clgraph translate --scores`), alone or batched with other clients'
sentences, for both families (the RNN dates demo, the MarianMT one)."""
import json
import os
import socket
import subprocess
import threading
import time

import pytest

from conftest import CLGRAPH, SRC

DATES = os.path.join(SRC, "models", "dates")
MARIAN = os.path.join(SRC, "models", "marian_dates")


def cli_translate(model, lines, *args):
    r = subprocess.run([CLGRAPH, "translate", model, "--scores", *args], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, check=True)
    return [(l.split("\t")[0], float(l.split("\t")[1])) for l in r.stdout.splitlines()]


def samples():
    with open(os.path.join(DATES, "samples.txt")) as f:
        return [l.rstrip("\n") for l in f if l.strip()]


@pytest.mark.parametrize("model, args, workers", [(DATES, {}, 1), (DATES, {}, 3), (MARIAN, {}, 1),
                                                  (MARIAN, {"beam": 4}, 2)],
                         ids=["dates", "dates_3_workers", "marian", "marian_beam4_2_workers"])
def test_concurrent_clients_get_the_cli_translations(serve, model, args, workers):
    """With more workers, each has its own handle (cg_s2s_clone) and takes
    batches from the same queue: the same answers."""
    lines = samples()
    want = cli_translate(model, lines, *sum((["--" + k, str(v)] for k, v in args.items()), []))
    s = serve(model, "--max-batch", "64", "--max-delay-us", "200000", "--workers", str(workers))
    name = os.path.basename(model)
    got = [None] * len(lines)

    def go(i):
        status, r = s.json("POST", f"/v2/models/{name}/translate", {"sources": [lines[i]], **args})
        got[i] = (status, r)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(lines))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (status, r) in enumerate(got):
        assert status == 200, r
        (tr,) = r["translations"]
        # the CLI prints scores with 6 significant digits
        assert tr["text"] == want[i][0] and float(f"{tr['score']:.6g}") == pytest.approx(want[i][1], abs=1e-6), (i, tr)
    m = s.metrics_with(f'clgraph_batch_rows_sum{{model="{name}"}} {len(lines)}')
    runs = int(m.split(f'clgraph_batch_rows_count{{model="{name}"}} ')[1].split()[0])
    assert runs < len(lines) or workers > 1
    # several sentences in one request, with ids, n-best and attention
    status, r = s.json("POST", f"/v2/models/{name}/translate",
                       {"sources": lines[:3], "return_ids": True, "attention": True, **args})
    assert status == 200 and [t["text"] for t in r["translations"]] == [w[0] for w in want[:3]]
    for t in r["translations"]:
        assert len(t["ids"]) >= 1 and len(t["attention"]) >= len(t["ids"])
        # the RNN's rows sum to 1; a Transformer's leave out the EOS it appends
        sums = [sum(row) for row in t["attention"]]
        assert all(abs(x - 1) < 1e-4 if name == "dates" else 0 < x <= 1 + 1e-4 for x in sums), sums
    assert s.stop() == 0


def test_nbest_and_errors(serve):
    s = serve(DATES, MARIAN)
    status, r = s.json("POST", "/v2/models/marian_dates/translate",
                       {"sources": ["the 22nd of November 2026"], "beam": 4, "nbest": 3, "id": "q"})
    assert status == 200 and r["id"] == "q"
    nb = r["translations"][0]["nbest"]
    assert len(nb) == 3 and nb[0]["text"] == r["translations"][0]["text"]
    assert nb[0]["score"] >= nb[1]["score"] >= nb[2]["score"]
    for body, why in [({"sources": "x"}, "non-empty array"),
                      ({"sources": ["a"], "ids": [[1]]}, "either"),
                      ({"sources": ["a"], "beam": 2, "nbest": 3}, "larger than"),
                      ({"sources": ["a"], "beam": -1}, "\"beam\" takes"),
                      ({"ids": [[1, 2, 99999]]}, "outside the source vocabulary"),
                      ({"sources": [3]}, "sources[0] is not a string")]:
        status, r = s.json("POST", "/v2/models/dates/translate", body)
        assert status == 400 and why in r["error"], (body, r)
    status, r = s.json("POST", "/v2/models/dates/infer", {"inputs": []})  # /infer takes "text" (test_triton.py)
    assert status == 400 and "one input, 'text'" in r["error"]
    assert s.stop() == 0


def test_a_large_request_is_decoded_max_batch_at_a_time(serve):
    lines = samples() * 3
    want = cli_translate(DATES, lines)
    s = serve(DATES, "--max-batch", "4")
    status, r = s.json("POST", "/v2/models/dates/translate", {"sources": lines})
    assert status == 200 and [t["text"] for t in r["translations"]] == [w[0] for w in want]
    line = f'clgraph_batch_rows_sum{{model="dates"}} {len(lines)}'
    assert line in s.metrics_with(line)  # one request, one run of all its rows
    status, r = s.json("POST", "/v2/models/dates/translate", {"sources": ["a"] * 10001})
    assert status == 400 and "more than 10000 sentences" in r["error"]
    assert s.stop() == 0


def test_a_short_request_joins_and_leaves_a_running_decode(serve):
    """Continuous batching (an RNN model decodes as a stream): while 8
    sentences of a random model decode 2058 steps each, a one-token one
    arrives, joins the running decode at the next step and is answered
    after its own 11 steps, long before the long ones end. Alone first,
    for the long request's time; its sentences and the short one are the
    CLI's either way."""
    model = os.path.join(SRC, "tests", "golden", "s2s", "lstm_dot_bahdanau_zeros_words")
    short, long_ = [4], [4 + i % 10 for i in range(1024)]
    r = subprocess.run([CLGRAPH, "translate", model, "--ids"], capture_output=True, text=True, check=True,
                       input=" ".join(map(str, short)) + "\n" + " ".join(map(str, long_)) + "\n")
    want = [l.split() for l in r.stdout.splitlines()]
    assert len(want[0]) < 20 and len(want[1]) == 2 * len(long_) + 10, [len(w) for w in want]
    # timed: without the repeat check's extra runs
    s = serve("lstm=" + model, "--max-batch", "16", env={"CLGRAPH_CHECK_RUNS": "0"})
    body = {"ids": [long_] * 8, "return_ids": True}
    status, r = s.json("POST", "/v2/models/lstm/translate", {**body, "id": "alone"})
    assert status == 200 and all([str(i) for i in t["ids"]] == want[1] for t in r["translations"])
    got = {}

    def go(name, b):
        got[name] = s.json("POST", "/v2/models/lstm/translate", {**b, "id": name})

    t = threading.Thread(target=go, args=("long", body))
    t.start()
    time.sleep(0.02)  # the long decode under way
    go("short", {"ids": [short], "return_ids": True})
    t.join()
    assert got["short"][0] == 200 and [str(i) for i in got["short"][1]["translations"][0]["ids"]] == want[0]
    assert got["long"][0] == 200 and all([str(i) for i in x["ids"]] == want[1] for x in got["long"][1]["translations"])
    assert s.stop() == 0
    ms = {l["id"]: l["ms"] for l in map(json.loads, open(s.log)) if l.get("id")}
    # the long request alone took ms["alone"] (its plan's first binding too:
    # through batches the short one waits nearly that long); the short one
    # waited for none of it
    assert ms["short"] < ms["alone"] / 4, ms


def busy_seconds(m, model):
    return float(m.split(f'clgraph_device_busy_seconds_total{{model="{model}"')[1].split("} ")[1].split()[0])


def test_a_client_that_leaves_mid_decode_has_its_sentences_dropped(serve):
    """16 sources of 1024 tokens of a random model each decode 2058 steps.
    Decoded whole (twice: the second run is the time), then again with the
    client gone a third of the way in: the decode stops when the server
    next looks at the socket, long before its end (the device's busy
    seconds), and the request counts as 499."""
    model = os.path.join(SRC, "tests", "golden", "s2s", "lstm_dot_bahdanau_zeros_words")
    ids = [[4 + i % 10 for i in range(1024)]] * 16
    # timed by the server's busy seconds: without the repeat check, whose
    # extra runs depend on what the plan saw before
    s = serve("lstm=" + model, "--max-batch", "16", env={"CLGRAPH_CHECK_RUNS": "0"})
    busy = [0.0]
    for _ in range(2):
        t0 = time.monotonic()
        status, r = s.json("POST", "/v2/models/lstm/translate", {"ids": ids})
        wall = time.monotonic() - t0
        assert status == 200 and len(r["translations"]) == len(ids)
        time.sleep(0.05)  # the last step's time counted
        busy.append(busy_seconds(s.metrics(), "lstm"))
    full = busy[2] - busy[1]
    payload = json.dumps({"ids": ids}).encode()
    raw = socket.create_connection(("127.0.0.1", s.port))
    raw.sendall(b"POST /v2/models/lstm/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
    time.sleep(wall / 3)
    raw.close()
    m = s.metrics_with('clgraph_requests_total{model="lstm",code="499"} 1')
    assert 'clgraph_requests_total{model="lstm",code="499"} 1' in m
    second = busy_seconds(m, "lstm") - busy[2]
    assert second < 0.7 * full, (second, full)
    status, r = s.json("POST", "/v2/models/lstm/translate", {"ids": [[4]]})  # the server goes on
    assert status == 200
    assert s.stop() == 0


def test_a_translation_past_its_timeout_leaves_the_decode(serve):
    """16 sources of 2058 steps each with a 30 ms timeout: the request is
    answered 504 when the first step after it ends, not when the decode
    would have; on both decoders."""
    model = os.path.join(SRC, "tests", "golden", "s2s", "lstm_dot_bahdanau_zeros_words")
    ids = [[4 + i % 10 for i in range(1024)]] * 16
    for decode in ("stream", "batch"):
        s = serve("lstm=" + model, "--max-batch", "16", "--decode", decode, env={"CLGRAPH_CHECK_RUNS": "0"})
        status, r = s.json("POST", "/v2/models/lstm/translate", {"ids": ids, "id": "whole"})
        assert status == 200
        status, r = s.json("POST", "/v2/models/lstm/translate", {"ids": ids, "timeout": 30000, "id": "cut"})
        assert status == 504 and "timeout passed while it decoded" in r["error"], (decode, r)
        assert 'clgraph_requests_total{model="lstm",code="504"} 1' in s.metrics()
        assert s.stop() == 0
        ms = {l["id"]: l["ms"] for l in map(json.loads, open(s.log)) if l.get("id")}
        assert ms["cut"] < ms["whole"] / 2, (decode, ms)
