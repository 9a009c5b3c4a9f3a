"""POST /v2/models/NAME/forecast: the CLI's forecasts (`clgraph forecast`,
printed with 7 significant digits) for series sent by concurrent clients
and batched together, with attention."""
import csv
import io
import os
import subprocess
import threading

import pytest

from conftest import CLGRAPH, SRC

ELNINO = os.path.join(SRC, "models", "elnino")


def history():
    with open(os.path.join(ELNINO, "example.csv")) as f:
        return [float(r["sst"]) for r in csv.DictReader(f)]


def test_concurrent_series_get_the_cli_forecasts(serve):
    sst = history()
    lengths = [len(sst) - 7 * i for i in range(6)]
    text = "series,sst\n" + "".join(f"s{i},{v}\n" for i, n in enumerate(lengths) for v in sst[:n])
    r = subprocess.run([CLGRAPH, "forecast", ELNINO, "--horizon", "12"], input=text, capture_output=True, text=True,
                       check=True)
    want = {}
    for row in csv.DictReader(io.StringIO(r.stdout)):
        want.setdefault(row["series"], []).append(float(row["sst"]))
    s = serve(ELNINO, "--max-batch", "64", "--max-delay-us", "200000")
    got = [None] * len(lengths)

    def go(i):
        got[i] = s.json("POST", "/v2/models/elnino/forecast",
                        {"series": [[[v] for v in sst[:lengths[i]]]], "horizon": 12, "id": f"s{i}"})

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(lengths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (status, body) in enumerate(got):
        assert status == 200, body
        assert body["columns"] == ["sst"] and body["id"] == f"s{i}"
        values = [row[0] for row in body["forecasts"][0]["values"]]
        assert [float(f"{v:.7g}") for v in values] == want[f"s{i}"], i
    m = s.metrics()
    assert int(m.split('clgraph_batch_rows_count{model="elnino"} ')[1].split()[0]) < len(lengths)
    # attention rows: the weights over the previous states sum to 1
    status, body = s.json("POST", "/v2/models/elnino/forecast", {"series": [sst], "horizon": 4, "attention": True})
    assert status == 200
    att = body["forecasts"][0]["attention"]
    assert len(att) == 4 and all(abs(sum(a["weights"]) - 1) < 1e-4 for a in att if a["weights"])
    for bad, why in [({"series": [sst]}, "horizon"), ({"series": [], "horizon": 2}, "non-empty"),
                     ({"series": [[[1, 2]]], "horizon": 2}, "the model's 1 values"),
                     ({"series": [["x"]], "horizon": 2}, "is not an array")]:
        status, body = s.json("POST", "/v2/models/elnino/forecast", bad)
        assert status == 400 and why in body["error"], (bad, body)
    assert s.json("POST", "/v2/models/elnino/translate", {"sources": ["a"]})[0] == 404
    assert s.stop() == 0


def test_csv_in_csv_out_is_the_cli(serve):
    """A CSV body (?horizon=N) is answered with the CSV `clgraph forecast`
    writes, byte for byte: time column continued, series repeated."""
    with open(os.path.join(ELNINO, "example.csv")) as f:
        one = f.read()
    rows = one.strip().split("\n")
    many = "time,series,sst\n" + "".join(f"{r.split(',')[0]},{name},{r.split(',')[1]}\n"
                                         for name, cut in (("a", 0), ('"b,c"', 5)) for r in rows[1:len(rows) - cut])
    s = serve(ELNINO)
    for text in (one, many):
        want = subprocess.run([CLGRAPH, "forecast", ELNINO, "--horizon", "6"], input=text, capture_output=True,
                              text=True, check=True).stdout
        status, headers, data = s.request("POST", "/v2/models/elnino/forecast?horizon=6", text.encode(),
                                          {"Content-Type": "text/csv"})
        assert status == 200 and headers["Content-Type"].startswith("text/csv"), data
        assert data.decode() == want
    status, _, data = s.request("POST", "/v2/models/elnino/forecast", one.encode(), {"Content-Type": "text/csv"})
    assert status == 400 and b"horizon" in data
    status, _, data = s.request("POST", "/v2/models/elnino/forecast?horizon=2", b"time,sst\n2020-01-01,x\n",
                                {"Content-Type": "text/csv"})
    assert status == 400 and b"2:" in data, data
    assert s.stop() == 0
