"""Translator, Forecaster, quantize and conform against the CLI's own
output (`clgraph translate`, `clgraph forecast`, `clgraph quantize`) on the
shipped models, and the behaviour of long and interrupted streams."""
import datetime
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import clgraph
from conftest import ROOT

DATES = os.path.join(ROOT, "models", "dates")
ELNINO = os.path.join(ROOT, "models", "elnino")
MARIAN = os.path.join(ROOT, "models", "marian_dates")
CLI = os.environ.get("CG_CLGRAPH")
needs_cli = pytest.mark.skipif(not CLI, reason="CG_CLGRAPH (the clgraph binary) is not set")


def date_lines(n, seed=5):
    """Dates written the ways the demo model reads them."""
    r = random.Random(seed)
    forms = ["%B %d, %Y", "%d %b %Y", "%Y-%m-%d", "%d/%m/%Y", "%A, %B %d %Y", "%b. %d %Y", "the %dth of %B %Y"]
    out = []
    for _ in range(n):
        d = datetime.date(1950, 1, 1) + datetime.timedelta(days=r.randrange(40000))
        out.append(d.strftime(r.choice(forms)))
    return out


def cli(*args, stdin=""):
    p = subprocess.run([CLI, *args], input=stdin, capture_output=True, text=True, check=True)
    return p.stdout


@needs_cli
@pytest.mark.parametrize("beam,nbest", [(1, 1), (3, 2)])
def test_translate_matches_cli(beam, nbest, device):
    lines = date_lines(120)
    out = cli("translate", DATES, "--device", device, "--beam", str(beam), "--nbest", str(nbest), "--scores",
              stdin="\n".join(lines) + "\n")
    want = [line.split("\t") for line in out.splitlines()]
    t = clgraph.Translator(DATES, device=device)
    got = t.translate_batch(lines, beam_size=beam, num_hypotheses=nbest, max_batch_size=17)
    flat = [(str(i), h, s) for i, r in enumerate(got) for h, s in zip(r.hypotheses, r.scores)]
    assert len(flat) == len(want)
    for (i, h, s), w in zip(flat, want):
        if nbest > 1:
            assert [i, h] == w[:2]
        else:
            assert h == w[0]
        assert abs(s - float(w[-1])) <= 6e-7, (h, s, w)


def test_translate_forms_and_options():
    t = clgraph.Translator(DATES)
    text = "November 22, 2026"
    [by_text] = t.translate_batch([text])
    [by_tokens] = t.translate_batch([t.tokenize(text)])
    [by_ids] = t.translate_batch([t._c.tokenize(text)])
    assert by_text.hypotheses == ["2026-11-22"]
    assert by_tokens.hypotheses == [list("2026-11-22")]
    assert t._c.detokenize(by_ids.hypotheses[0]) == "2026-11-22"
    assert by_text.scores == by_tokens.scores == by_ids.scores
    [r] = t.translate_batch([text], return_scores=False, return_attention=True, max_decoding_length=4)
    assert r.scores == [] and len(r.hypotheses[0]) == 4
    assert r.attention[0].shape == (4, len(text)) and np.allclose(r.attention[0].sum(axis=1), 1, atol=1e-5)
    [short] = t.translate_batch([text], min_decoding_length=14, max_decoding_length=14)
    assert len(short.hypotheses[0]) == 13  # EOS counts
    # batching by tokens gives the same results as by examples
    lines = date_lines(40, seed=9)
    a = t.translate_batch(lines, max_batch_size=64, batch_type="tokens")
    b = t.translate_batch(lines, max_batch_size=3)
    assert [x.hypotheses for x in a] == [x.hypotheses for x in b]
    with pytest.raises(TypeError, match="alpha"):
        t.translate_batch([text], length_penalty=1.0)
    with pytest.raises(clgraph.InvalidInput, match="nbest|beam"):
        t.translate_batch([text], beam_size=2, num_hypotheses=3)
    with pytest.raises(clgraph.InvalidInput, match="compute_type"):
        clgraph.Translator(DATES, compute_type="int3")
    with pytest.raises(clgraph.FileError):
        clgraph.Translator(os.path.join(ROOT, "no-such-model"))


def marian(device="cpu"):
    try:
        return clgraph.Translator(MARIAN, device=device)
    except clgraph.Unsupported as e:  # a build without SentencePiece
        pytest.skip(str(e))


@needs_cli
def test_marian_translates_as_cli_and_transformers(device):
    """A MarianMT directory through the same Translator: the demo's samples,
    n-best scores as the CLI prints them, and ids as transformers' generate()
    gives them (tests/data/marian/dates_gen.json)."""
    t = marian(device)
    assert t.transformer
    with open(os.path.join(DATES, "samples.txt")) as f:
        lines = f.read().splitlines()
    with open(os.path.join(DATES, "samples.expected")) as f:
        expected = f.read().splitlines()
    assert [r.hypotheses[0] for r in t.translate_batch(lines)] == expected
    out = cli("translate", MARIAN, "--device", device, "--beam", "4", "--nbest", "2", "--scores",
              stdin="\n".join(lines) + "\n")
    want = [line.split("\t") for line in out.splitlines()]
    got = t.translate_batch(lines, beam_size=4, num_hypotheses=2, max_batch_size=5)
    flat = [(str(i), h, s) for i, r in enumerate(got) for h, s in zip(r.hypotheses, r.scores)]
    assert [list(f[:2]) for f in flat] == [w[:2] for w in want]
    assert all(abs(s - float(w[2])) <= 6e-7 for (_, _, s), w in zip(flat, want))
    with open(os.path.join(ROOT, "tests", "data", "marian", "dates_gen.json")) as f:
        gen = json.load(f)
    for case in gen["cases"]:
        res = t.translate_batch(gen["sources"], beam_size=case["beam"], num_hypotheses=case["nbest"],
                                length_penalty=case["length_penalty"], max_decoding_length=case["max_length"] - 1)
        assert [r.hypotheses for r in res] == [r["hyps"] for r in case["results"]], case["name"]
    pieces = t.tokenize("July 4, 1976")
    assert pieces and all(isinstance(p, str) for p in pieces)
    by_pieces = t.translate_batch([pieces])[0].hypotheses[0]  # target pieces back
    assert "".join(by_pieces).replace("\u2581", " ").strip() == "1976-07-04"
    with pytest.raises(TypeError, match="not both"):
        t.translate_batch(lines[:1], alpha=1.0, length_penalty=1.0)
    src_ids = t._c.tokenize(lines[0])
    [r] = t.translate_batch([src_ids], return_attention=True)
    # a row per target token and the EOS; a column per source token given
    # (the EOS the model appends left out, so a row sums to at most 1)
    assert r.attention[0].shape == (len(r.hypotheses[0]) + 1, len(src_ids))
    assert np.all(r.attention[0].sum(axis=1) <= 1 + 1e-6) and np.all(r.attention[0] >= 0)
    [h2] = t.translate_batch([src_ids], return_attention=True, attention_head=2)
    assert h2.attention[0].shape == r.attention[0].shape and not np.array_equal(h2.attention[0], r.attention[0])
    with pytest.raises(clgraph.InvalidInput, match="attention_head"):
        t.translate_batch(lines[:1], return_attention=True, attention_head=9)


def test_translate_iterable_streams_in_order():
    t = clgraph.Translator(DATES)
    lines = date_lines(100, seed=3)
    want = [r.hypotheses[0] for r in t.translate_batch(lines)]
    consumed = []

    def source():
        for line in lines:
            consumed.append(line)
            yield line

    it = t.translate_iterable(source(), max_batch_size=8, read_batch_size=20)
    first = next(it)
    assert first.hypotheses[0] == want[0]
    assert len(consumed) == 20  # read ahead is bounded
    rest = [r.hypotheses[0] for r in it]
    assert [first.hypotheses[0]] + rest == want


def test_ctrl_c_interrupts_translate_iterable(tmp_path):
    """SIGINT stops an endless translate_iterable with KeyboardInterrupt."""
    script = tmp_path / "endless.py"
    script.write_text(
        "import itertools, sys, clgraph\n"
        f"t = clgraph.Translator({DATES!r})\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    for r in t.translate_iterable(itertools.repeat('November 22, 2026'), max_batch_size=64):\n"
        "        pass\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(3)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 3 and "interrupted" in p.stdout.read()


def test_translators_in_threads():
    """One Translator shared (runs queue) and one per thread (parallel)
    give what a single thread gets."""
    lines = date_lines(30, seed=11)
    shared = clgraph.Translator(DATES)
    want = [r.hypotheses for r in shared.translate_batch(lines)]
    errors = []

    def work(tr):
        for _ in range(3):
            got = [r.hypotheses for r in tr.translate_batch(lines, max_batch_size=7)]
            if got != want:
                errors.append("different translations")

    threads = [threading.Thread(target=work, args=(shared if i % 2 else clgraph.Translator(DATES),))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@needs_cli
def test_forecast_matches_cli(device):
    csv = open(os.path.join(ELNINO, "example.csv")).read()
    out = cli("forecast", ELNINO, "--horizon", "12", "--device", device, stdin=csv).splitlines()
    assert out[0] == "time,sst"
    want_t = [line.split(",")[0] for line in out[1:]]
    want = np.array([float(line.split(",")[1]) for line in out[1:]])
    f = clgraph.Forecaster(ELNINO, device=device)
    assert f.columns == ["sst"]
    hist = np.array([[float(line.split(",")[1])] for line in csv.splitlines()[1:]])
    got = f.forecast(hist, horizon=12)
    assert got.shape == (12, 1)
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-6)
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(os.path.join(ELNINO, "example.csv"), parse_dates=["time"], index_col="time")
    fc = f.forecast(frame, horizon=12)
    assert list(fc.columns) == ["sst"]
    assert [d.strftime("%Y-%m-%d") for d in fc.index] == want_t
    np.testing.assert_allclose(fc["sst"].to_numpy(), want, rtol=1e-6)


def test_forecast_lists_attention_and_errors():
    f = clgraph.Forecaster(ELNINO)
    rng = np.random.default_rng(2)
    hists = [25 + rng.standard_normal((n, 1)) for n in (30, 48, 60)]
    together = f.forecast(hists, horizon=5)
    alone = [f.forecast(h, horizon=5) for h in hists]
    for a, b in zip(together, alone):
        np.testing.assert_array_equal(a, b)
    r = f.forecast(hists[1], horizon=4, return_attention=True)
    assert r.values.shape == (4, 1) and r.attention.shape == (4, f.window)
    for h in range(4):
        w = r.attention[h, :r.count[h]]  # weight k: the state of step first[h] + k
        assert r.count[h] == 0 or abs(w.sum() - 1) < 1e-5
    with pytest.raises(clgraph.InvalidInput, match="series 0"):
        f.forecast(np.zeros((10, 3)), horizon=2)
    with pytest.raises(clgraph.InvalidInput):
        f.forecast(hists[0], horizon=0)


@needs_cli
@needs_cli
def test_quantize_writes_what_the_cli_writes(tmp_path):
    for to in ("int8", "bf16"):
        ours, theirs = tmp_path / f"py_{to}", tmp_path / f"cli_{to}"
        n = clgraph.quantize(DATES, ours, to=to)
        cli("quantize", DATES, "--to", to, "-o", str(theirs))
        assert n > 0
        for name in sorted(os.listdir(theirs)):
            assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    t = clgraph.Translator(tmp_path / "py_int8")
    assert t.translate_batch(["November 22, 2026"])[0].hypotheses == ["2026-11-22"]
    marian()  # skips without SentencePiece
    ours, theirs = tmp_path / "marian_py", tmp_path / "marian_cli"
    assert clgraph.quantize(MARIAN, ours, to="int8") == 33
    cli("quantize", MARIAN, "--to", "int8", "-o", str(theirs))
    assert sorted(os.listdir(ours)) == sorted(os.listdir(theirs))
    for name in sorted(os.listdir(theirs)):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
        assert (ours / name).stat().st_mode == (theirs / name).stat().st_mode, name
    t = clgraph.Translator(ours)
    assert t.translate_batch(["November 22, 2026"])[0].hypotheses == ["2026-11-22"]
    with pytest.raises(clgraph.Error):
        clgraph.quantize(os.path.join(ROOT, "tests"), tmp_path / "bad")
    assert not (tmp_path / "bad" / "weights.safetensors").exists()


def test_conform_reports_rows():
    if not [d for d in clgraph.devices() if d.name.startswith("opencl:")]:
        pytest.skip("no OpenCL device")
    rows = clgraph.conform(["tanh", "softmax"], device="opencl:0", quick=True)
    assert {(r.op, r.device) for r in rows} == {("tanh", "opencl:0"), ("softmax", "opencl:0")}
    assert all(r.result == "pass" and r.cases_run > 0 for r in rows), rows
    with pytest.raises(clgraph.Error, match="nosuchop"):
        clgraph.conform(["nosuchop"])
