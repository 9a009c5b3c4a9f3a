#!/usr/bin/python3
"""Golden data for seq2seq-with-attention models (contract: docs/seq2seq.md).

Regenerate (from the repository root; needs torch and numpy, e.g. Debian's
python3-torch under /usr/bin/python3):

    /usr/bin/python3 tools/py/gen_golden_s2s.py [OUT_DIR]

OUT_DIR defaults to tests/golden/s2s.  For every variant in VARIANTS it writes
a random model directory (tools/py/s2s_ref.py make_random_model) with sources and
the reference's greedy and beam outputs; the format is described in
OUT_DIR/README.md (written by this script too).  Deterministic: each variant
has its own seed; a variant whose decoding comes near a tie (see
check_margins) is reseeded, so that a float32 implementation with another
summation order must reach the same tokens.
"""
import json
import os
import random
import shutil
import sys
import zlib

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s2s_ref as R  # noqa: E402

EOS_BIAS = [0.0, 1.0, -1.0, 2.0]  # added to out.bias[eos_id], cycling over the attempts
MARGIN = 1e-3  # logp / score / window-distance gap required around every decision
BEAMS = [{"k": 4, "nbest": 2, "alpha": 0.0, "max_len": None}, {"k": 4, "nbest": 2, "alpha": 0.6, "max_len": None},
         {"k": 3, "nbest": 3, "alpha": 0.0, "max_len": 3}]
SHORT = 3  # an explicit max_len for the extra greedy run

# name, config, V_src, V_tgt, source lengths (0 = empty source)
VARIANTS = [
    ("gru_additive_bahdanau_words",
     {"cell": "gru", "emb_dim": 8, "hidden": 12, "tokenizer": "words"}, 30, 28, [3, 7, 1, 12, 5, 0]),
    ("lstm_additive_bi_luong_chars",
     {"cell": "lstm", "emb_dim": 10, "hidden": 8, "bidirectional": True, "attention": "additive",
      "attention_dim": 10, "decoder_style": "luong", "tokenizer": "chars"}, 26, 24, [4, 9, 2, 13, 6]),
    ("gru_dot_luong_dec2_chars",
     {"cell": "gru", "emb_dim": 8, "hidden": 12, "attention": "dot", "decoder_style": "luong",
      "decoder_layers": 2, "tokenizer": "chars"}, 24, 30, [5, 2, 11, 8, 1]),
    ("lstm_dot_bahdanau_zeros_words",
     {"cell": "lstm", "emb_dim": 12, "hidden": 10, "attention": "dot", "bridge": "zeros",
      "tokenizer": "words"}, 32, 26, [6, 3, 10, 1, 8]),
    ("gru_scaled_dot_bahdanau_l2_words",
     {"cell": "gru", "emb_dim": 8, "hidden": 16, "attention": "scaled_dot", "encoder_layers": 2,
      "decoder_layers": 2, "tokenizer": "words"}, 28, 32, [4, 12, 2, 7, 9]),
    ("lstm_scaled_dot_luong_chars",
     {"cell": "lstm", "emb_dim": 8, "hidden": 12, "attention": "scaled_dot", "decoder_style": "luong",
      "tokenizer": "chars"}, 22, 25, [3, 8, 14, 1, 5]),
    ("gru_general_bi_luong_words",
     {"cell": "gru", "emb_dim": 10, "hidden": 8, "bidirectional": True, "attention": "general",
      "decoder_style": "luong", "tokenizer": "words"}, 30, 30, [7, 2, 11, 4, 9]),
    ("lstm_general_bi_enc2_bahdanau_chars",
     {"cell": "lstm", "emb_dim": 8, "hidden": 10, "bidirectional": True, "encoder_layers": 2,
      "attention": "general", "tokenizer": "chars"}, 25, 27, [5, 10, 3, 1, 8]),
    ("gru_cosine_bahdanau_chars",
     {"cell": "gru", "emb_dim": 12, "hidden": 12, "attention": "cosine", "tokenizer": "chars"},
     26, 22, [6, 1, 9, 13, 3]),
    ("lstm_cosine_luong_zeros_words",
     {"cell": "lstm", "emb_dim": 8, "hidden": 14, "attention": "cosine", "decoder_style": "luong",
      "bridge": "zeros", "tokenizer": "words"}, 30, 28, [4, 8, 2, 11, 6]),
    ("gru_none_bahdanau_words",
     {"cell": "gru", "emb_dim": 8, "hidden": 12, "attention": "none", "tokenizer": "words"},
     28, 30, [5, 9, 1, 12, 3]),
    ("lstm_none_luong_bi_dec2_chars",
     {"cell": "lstm", "emb_dim": 10, "hidden": 8, "bidirectional": True, "attention": "none",
      "decoder_style": "luong", "decoder_layers": 2, "tokenizer": "chars"}, 24, 26, [3, 10, 6, 1, 8]),
    ("gru_local_monotonic_dot_words",
     {"cell": "gru", "emb_dim": 8, "hidden": 10, "attention": "dot", "local": {"mode": "monotonic", "D": 1},
      "tokenizer": "words"}, 26, 24, [4, 1, 9, 6, 12, 0]),
    ("lstm_local_monotonic_additive_bi_luong_chars",
     {"cell": "lstm", "emb_dim": 8, "hidden": 8, "bidirectional": True, "attention": "additive",
      "local": {"mode": "monotonic", "D": 2}, "decoder_style": "luong", "tokenizer": "chars"},
     28, 26, [5, 2, 11, 8, 3]),
    ("gru_local_predictive_general_bi_chars",
     {"cell": "gru", "emb_dim": 10, "hidden": 10, "bidirectional": True, "attention": "general",
      "local": {"mode": "predictive", "D": 2}, "tokenizer": "chars"}, 24, 28, [6, 3, 12, 1, 9]),
    ("lstm_local_predictive_additive_luong_l2_words",
     {"cell": "lstm", "emb_dim": 8, "hidden": 12, "attention": "additive", "attention_dim": 6,
      "local": {"mode": "predictive", "D": 3}, "decoder_style": "luong", "encoder_layers": 2,
      "decoder_layers": 2, "tokenizer": "words"}, 30, 26, [7, 2, 10, 4, 13]),
    ("gru_local_predictive_scaled_dot_luong_zeros_words",
     {"cell": "gru", "emb_dim": 8, "hidden": 12, "attention": "scaled_dot",
      "local": {"mode": "predictive", "D": 1}, "decoder_style": "luong", "bridge": "zeros",
      "tokenizer": "words"}, 26, 30, [5, 9, 2, 12, 1]),
    ("gru_additive_bi_l2_zeros_chars",
     {"cell": "gru", "emb_dim": 10, "hidden": 8, "bidirectional": True, "encoder_layers": 2,
      "decoder_layers": 2, "attention": "additive", "attention_dim": 12, "bridge": "zeros",
      "tokenizer": "chars"}, 30, 24, [8, 3, 12, 5, 1]),
    ("lstm_additive_custom_ids_words",
     {"cell": "lstm", "emb_dim": 8, "hidden": 10, "attention": "additive", "tokenizer": "words",
      "pad_id": 3, "bos_id": 0, "eos_id": 5, "unk_id": 1}, 24, 24, [6, 2, 9, 4, 11]),
]

CHAR_POOL = list("abcdefghijklmnopqrstuvwxyz") + ["é", "ü", "ß", "€", "ж", "中", " "] + \
    list("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
WORD_POOL = ["the", "cat", "sat", "on", "mat", "über", "naïve", "日本", "déjà", "a", "b", "c"] + \
    ["w%d" % i for i in range(100)]


def make_vocab(c, v, salt):
    toks = [None] * v
    for name, key in zip(R.SPECIAL_TOKENS, ("pad_id", "bos_id", "eos_id", "unk_id")):
        toks[c[key]] = name
    pool = list(CHAR_POOL if c["tokenizer"] == "chars" else WORD_POOL)
    # words: make source and target vocabularies differ a little
    if c["tokenizer"] == "words" and salt:
        pool = [w + "_" + salt if w.startswith("w") else w for w in pool]
    if c["tokenizer"] == "chars":  # keep " " and a few non-ASCII code points inside the vocabulary
        first = ["é", "ü", "ж", "中", " "]
        pool = pool[:6] + first + [p for p in pool[6:] if p not in first]
    it = iter(pool)
    return [t if t is not None else next(it) for t in toks]


def gen_sources(c, v_src, lengths, rng):
    specials = {c["pad_id"], c["bos_id"], c["eos_id"], c["unk_id"]}
    normal = [i for i in range(v_src) if i not in specials]
    srcs = [[rng.choice(normal) for _ in range(n)] for n in lengths]
    # one unknown token in the longest source (OOV text in sources.txt)
    j = max(range(len(srcs)), key=lambda i: len(srcs[i]))
    if srcs[j]:
        srcs[j][len(srcs[j]) // 2] = c["unk_id"]
    return srcs


def source_text(c, vocab, src):
    oov = "#" if c["tokenizer"] == "chars" else "zzz_oov"
    toks = [oov if i == c["unk_id"] else vocab[i] for i in src]
    return "".join(toks) if c["tokenizer"] == "chars" else " ".join(toks)


def check_margins(traces, finished_lists, nbest):
    """Returns a reason string when some decision is within MARGIN of flipping."""
    for tr in traces:
        if tr["kind"] == "greedy":
            lp = tr["logp"]
            top = torch.topk(lp.to(torch.float64), 2).values
            if float(top[0] - top[1]) <= MARGIN:
                return "greedy near-tie at t=%d" % tr["t"]
        else:
            # only the boundary of the walked prefix decides anything (the
            # order inside it matters for exact ties only)
            cs, w = tr["cands"], tr["walked"]
            if w < len(cs) and cs[w - 1] - cs[w] <= MARGIN:
                return "beam cut-off near-tie at t=%d" % tr["t"]
            if tr["stop_gap"] is not None and abs(tr["stop_gap"]) <= MARGIN:
                return "beam stopping-rule near-tie at t=%d" % tr["t"]
            if any(g is not None and abs(g) <= MARGIN for g in tr["evict_gaps"]):
                return "beam finished-set near-tie at t=%d" % tr["t"]
        if tr["p"] is not None and tr["D"] is not None:
            D = tr["D"]
            for p in tr["p"]:
                for i in range(tr["src_len"]):
                    if abs(abs(i - p) - D) <= MARGIN:
                        return "window edge near-tie p=%g i=%d" % (p, i)
    for fin in finished_lists:
        sc = [h["score"] for h in fin[:nbest + 1]]
        for x, y in zip(sc, sc[1:]):
            if x - y <= MARGIN:
                return "n-best order near-tie"
    return None


def coverage(greedy, srcs):
    """Random models tend to stop at once or to loop until max_len; keep the ones
    where greedy decoding of at least two non-empty sources ends with EOS after
    3 or more tokens, and at most one source stops at its first token."""
    good = sum(1 for g, s in zip(greedy, srcs) if s and g["ended"] and len(g["attention"]) >= 3)
    short = sum(1 for g in greedy if len(g["attention"]) == 1)
    if good < 2 or short > 1:
        return "coverage (greedy lengths %s)" % [len(g["attention"]) for g in greedy]
    return None


def rnd(x):
    return float("%.8g" % x)


def decode_all(model, srcs, with_trace):
    traces, fins = [], []
    loc = model.config["local"]
    D = loc["D"] if loc and loc["mode"] == "predictive" else None  # monotonic: p = t exactly
    greedy, short = [], []
    for s in srcs:
        tr = []
        greedy.append(R.greedy_one(model, s, trace=tr if with_trace else None))
        short.append(R.greedy_one(model, s, max_len=SHORT, trace=tr if with_trace else None))
        traces += tr
    beams = []
    for b in BEAMS:
        res = []
        for s in srcs:
            tr = []
            fin = R.beam_one(model, s, b["k"], b["alpha"], max_len=b["max_len"], trace=tr if with_trace else None)
            traces += tr
            fins.append(fin)
            res.append(fin[:b["nbest"]])
        beams.append(res)
    beams.append([[g] for g in short])  # compared like a beam setting
    for tr in traces:
        tr["D"] = D
    return greedy, beams, traces, fins


def same_decoding(g1, b1, g2, b2, tol=1e-4):
    for x, y in zip(g1, g2):
        if x["tokens"] != y["tokens"] or x["ended"] != y["ended"] or abs(x["score"] - y["score"]) > tol:
            return False
    for r1, r2 in zip(b1, b2):
        for h1s, h2s in zip(r1, r2):
            if len(h1s) != len(h2s):
                return False
            for x, y in zip(h1s, h2s):
                if x["tokens"] != y["tokens"] or x["ended"] != y["ended"] or abs(x["score"] - y["score"]) > tol:
                    return False
    return True


def build_variant(name, cfg, v_src, v_tgt, lengths, out_dir):
    base = zlib.crc32(name.encode()) % 100000
    for attempt in range(1000):
        seed = base + 1000 * attempt
        eos_bias = EOS_BIAS[attempt % len(EOS_BIAS)]
        model = R.make_random_model(cfg, v_src, v_tgt, seed, eos_bias=eos_bias)
        c = model.config
        srcs = gen_sources(c, v_src, lengths, random.Random(seed))
        greedy, beams, traces, fins = decode_all(model, srcs, True)
        why = coverage(greedy, srcs)
        if why is None:
            why = check_margins(traces, fins, max(b["nbest"] for b in BEAMS) + 1)
        if why is None:
            # the same weights in float64 must decode identically
            m64 = R.make_random_model(cfg, v_src, v_tgt, seed, dtype=torch.float64, eos_bias=eos_bias)
            g64, b64, _, _ = decode_all(m64, srcs, False)
            if not same_decoding(greedy, beams, g64, b64):
                why = "float64 decodes differently"
        if why is None:
            # an independent numpy (float64) reading of the spec agrees
            w = {k: v.detach().numpy() for k, v in model.state_dict().items()}
            for s_, g in zip(srcs, greedy):
                r = R.numpy_greedy(w, c, s_)
                assert r["tokens"] == g["tokens"] and r["ended"] == g["ended"], name
                assert abs(r["score"] - g["score"]) < 1e-3, name
                for r1, r2 in zip(r["attention"], g["attention"]):
                    assert max([abs(x - y) for x, y in zip(r1, r2)] + [0]) < 1e-4, name
            batched = R.greedy_batch(model, srcs)
            for a, b in zip(greedy, batched):
                assert a["tokens"] == b["tokens"] and a["ended"] == b["ended"], name
                assert abs(a["score"] - b["score"]) < 1e-4, name
            break
        print("  %s seed %d rejected: %s" % (name, seed, why))
    else:
        raise SystemExit("%s: no seed without near-ties" % name)
    d = os.path.join(out_dir, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    src_vocab = make_vocab(c, v_src, "s" if c["tokenizer"] == "words" else "")
    tgt_vocab = make_vocab(c, v_tgt, "t" if c["tokenizer"] == "words" else "")
    R.save_model_dir(model, cfg, src_vocab, tgt_vocab, d)
    # reload from disk and check that nothing changed on the way
    ld = R.load_model_dir(d)
    g2, b2, _, _ = decode_all(ld.model, srcs, False)
    assert same_decoding(greedy, beams, g2, b2, tol=0.0), name
    texts = [source_text(c, src_vocab, s) for s in srcs]
    for t, s in zip(texts, srcs):
        assert ld.tokenize(t) == s, (name, t, s)
    with open(os.path.join(d, "sources.ids"), "w") as f:
        f.write("".join(" ".join(str(i) for i in s) + "\n" for s in srcs))
    with open(os.path.join(d, "sources.txt"), "w", encoding="utf-8", newline="") as f:
        f.write("".join(t + "\n" for t in texts))
    gold = {
        "variant": name,
        "seed": seed,
        "config": c,
        "margin": MARGIN,
        "sources": srcs,
        "max_len": [R.default_max_len(len(s)) for s in srcs],
        "greedy": [{"tokens": g["tokens"], "ended": g["ended"], "score": rnd(g["score"]),
                    "attention": [[rnd(x) for x in row] for row in g["attention"]]} for g in greedy],
        "greedy_max_len": {"max_len": SHORT, "results": [
            {"tokens": g[0]["tokens"], "ended": g[0]["ended"], "score": rnd(g[0]["score"])} for g in beams[-1]]},
        "beam": [dict(b, results=[[{"tokens": h["tokens"], "ended": h["ended"], "score": rnd(h["score"]),
                                     "raw": rnd(h["raw"])} for h in hyps] for hyps in res])
                 for b, res in zip(BEAMS, beams)],
    }
    with open(os.path.join(d, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(gold, f, separators=(",", ":"), ensure_ascii=False)
        f.write("\n")
    # exact CLI outputs (no scores)
    with open(os.path.join(d, "greedy.out"), "w", encoding="utf-8", newline="") as f:
        for g in greedy:
            f.write(ld.detokenize(g["tokens"]) + "\n")
    with open(os.path.join(d, "greedy_ids.out"), "w") as f:
        for g in greedy:
            f.write(" ".join(str(i) for i in g["tokens"]) + "\n")
    b = BEAMS[0]
    with open(os.path.join(d, "beam%d_nbest%d.out" % (b["k"], b["nbest"])), "w", encoding="utf-8",
              newline="") as f:
        for si, hyps in enumerate(beams[0]):
            for h in hyps:
                f.write("%d\t%s\n" % (si, ld.detokenize(h["tokens"])))
    stats = (sum(g["ended"] for g in greedy), len(greedy),
             sum(h["ended"] for res in beams[:2] for hyps in res for h in hyps),
             sum(len(hyps) for res in beams[:2] for hyps in res))
    print("%s: seed %d, greedy ended %d/%d, beam ended %d/%d, greedy lengths %s" % (
        (name, seed) + stats + (["%d/%d" % (len(g["attention"]), m) for g, m in
                                  zip(greedy, gold["max_len"])],)), flush=True)
    return name


README = """# Golden data: seq2seq with attention

Made by `tools/py/gen_golden_s2s.py` (regenerate: `/usr/bin/python3 tools/py/gen_golden_s2s.py`)
from the PyTorch reference `tools/py/s2s_ref.py`, which implements the normative spec
`docs/seq2seq.md`.  Read the docstring of `tools/py/s2s_ref.py` for every decision the
spec leaves open (they are part of what these files check).

One folder per variant (`index.txt` lists them).  Each folder is a model directory
(`config.json`, `weights.safetensors` F32, `src.vocab`, `tgt.vocab`) plus:

| file | content |
| --- | --- |
| `sources.ids` | one source per line, space-separated source ids (an empty line is an empty source) |
| `sources.txt` | the same sources as text for the config's tokenizer; an id equal to `unk_id` is written as an out-of-vocabulary token (`#` for chars, `zzz_oov` for words) |
| `greedy.out` | exact output of `translate DIR < sources.txt` (greedy, text) |
| `greedy_ids.out` | exact output of `translate DIR --ids < sources.ids` |
| `beam4_nbest2.out` | exact output of `translate DIR --beam 4 --nbest 2 < sources.txt` (alpha 0): `<source index>\\t<text>` |
| `golden.json` | everything, with scores and attention (below) |

`golden.json`:

- `config`: the config with every default filled in; `seed`: the model's seed; `margin`;
  `sources`: the source ids; `max_len`: the default max_len per source (2 x src_len + 10).
- `greedy[i]`: `tokens` (target ids without BOS and without the final EOS), `ended`
  (true when EOS was generated, false when max_len stopped it), `score` (sum of the logp
  of every generated token, EOS included), `attention`: one row per generated token
  (the EOS step included, so `len(tokens) + ended` rows), each with `src_len` weights
  (rows are empty lists for `attention: none`; all zeros for an empty local window).
- `greedy_max_len`: `max_len` (3) and `results[i]`: greedy with that explicit max_len
  (`tokens`, `ended`, `score`).
- `beam[j]`: `k`, `nbest`, `alpha`, `max_len` (null = the default) and `results[i]`: the
  n-best list of source i, best first, each `tokens`, `ended` (false: finished "as it
  stands" at max_len), `score` (normalised: raw / ((5 + len) / 6)^alpha, len = generated
  tokens incl. EOS) and `raw`.  Settings: k 4, n-best 2, alpha 0; k 4, n-best 2,
  alpha 0.6; k 3, n-best 3, alpha 0, max_len 3.

Numbers are rounded to 8 significant digits.  The reference computes in float32
(scores summed in float64).  Every variant was checked to be far from ties: each greedy
step's best logp beats the second by more than `margin`; at each beam step the last
candidate walked beats the next one in candidate order by more than `margin` (the order
inside the walked prefix only matters for exact ties); the n-best normalised scores
(top n-best + 1 of the finished list) differ by more than `margin`; for local predictive, every |i - p| is more than `margin` away
from D; and the same weights decoded in float64 give the same tokens (scores within
1e-4).  Batched greedy decoding gives the same results as one sentence at a time, and an
independent numpy float64 implementation (`numpy_greedy` in `tools/py/s2s_ref.py`) gives the
same greedy tokens, scores (1e-3) and attention (1e-4).
Suggested tolerances for a float32 implementation: tokens exact, scores 1e-3 absolute,
attention 1e-4 absolute.

Variants (cell, attention, style, encoder, layers, bridge, local, tokenizer):

"""


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/s2s"
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    names = []
    for v in VARIANTS:
        names.append(build_variant(*v, out))
    with open(os.path.join(out, "index.txt"), "w") as f:
        f.write("".join(n + "\n" for n in names))
    lines = []
    for name, cfg, vs, vt, lengths in VARIANTS:
        c = R.normalize_config(cfg)
        lines.append("- `%s`: %s, %s, %s, %s encoder x%d, decoder x%d, bridge %s, local %s, %s, "
                     "V %d/%d, E %d, H %d%s" % (
                         name, c["cell"], c["attention"], c["decoder_style"],
                         "bidirectional" if c["bidirectional"] else "unidirectional", c["encoder_layers"],
                         c["decoder_layers"], c["bridge"],
                         json.dumps(c["local"]) if c["local"] else "none", c["tokenizer"], vs, vt,
                         c["emb_dim"], c["hidden"],
                         ", ids pad %d bos %d eos %d unk %d" % (c["pad_id"], c["bos_id"], c["eos_id"], c["unk_id"])
                         if (c["pad_id"], c["bos_id"], c["eos_id"], c["unk_id"]) != (0, 1, 2, 3) else ""))
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(README + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
