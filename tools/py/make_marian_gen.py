#!/usr/bin/env python3
"""Writes what transformers' generate() makes of the random MarianMT models in
tests/data/marian/ (greedy and beam searches, token ids and scores) into
VARIANT/gen.json (greedy's also with the last layer's cross-attention per
step, averaged over the heads and of head 2), with the generation_config.json
it decoded under: pad
banned as OPUS-MT bans it, EOS forced at max_length. Random models seldom
choose EOS, so the trained demo (models/marian_dates, its own
generation_config.json) is decoded too, into dates_gen.json: its hypotheses
end by EOS at different lengths, which exercises the beams' finished sets
and stop rule. Needs torch, transformers and sentencepiece (PyPI); run
make_marian_ref.py first.

    python3 tools/py/make_marian_gen.py [OUT_ROOT]
"""
import json
import os
import sys

import numpy as np
import torch
from transformers import AutoModelForSeq2SeqLM, GenerationConfig, MarianMTModel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "data", "marian")

PAD, EOS = 0, 1

# Each case is decoded one source at a time (a batch of one: no padding).
CASES = [
    dict(name="greedy", num_beams=1),
    dict(name="beam4", num_beams=4),
    dict(name="beam4_lp06_n2", num_beams=4, length_penalty=0.6, num_return_sequences=2),
    dict(name="beam3_lp0", num_beams=3, length_penalty=0.0),
    dict(name="beam5_lp2_len9", num_beams=5, length_penalty=2.0, max_length=9),
]


def strip(seq, eos, pad):
    """Generated ids without the decoder start, the final EOS and the fill
    (pad is banned, so it is never generated)."""
    toks = []
    for t in seq[1:]:
        if t == eos or t == pad:
            break
        toks.append(int(t))
    return toks


def decode_cases(model, gc, sources, cases):
    eos, pad = gc.eos_token_id, gc.pad_token_id
    out = []
    for case in cases:
        kw = {k: v for k, v in case.items() if k != "name"}
        results = []
        for ids in sources:
            with torch.no_grad():
                g = model.generate(torch.tensor([ids]), return_dict_in_generate=True, output_scores=True,
                                   output_attentions=kw.get("num_beams", 1) == 1, **kw)
            hyps = [strip(s, eos, pad) for s in g.sequences.tolist()]
            scores = g.sequences_scores.tolist() if kw.get("num_beams", 1) > 1 else None
            r = {"hyps": hyps, "scores": scores}
            if kw.get("num_beams", 1) == 1:  # greedy: the last layer's cross-attention per step
                last = [step[-1][0, :, 0, :] for step in g.cross_attentions]  # [heads, S] each
                r["attention_mean"] = [a.mean(dim=0).tolist() for a in last]
                r["attention_head2"] = [a[1].tolist() for a in last]
            results.append(r)
        out.append({"name": case["name"], "beam": kw.get("num_beams", 1),
                    "length_penalty": kw.get("length_penalty", 1.0 if gc.length_penalty is None else gc.length_penalty),
                    "nbest": kw.get("num_return_sequences", 1), "max_length": kw.get("max_length", gc.max_length),
                    "results": results})
    return out


DATES_CASES = [
    dict(name="greedy", num_beams=1),
    dict(name="beam4_n4", num_beams=4, num_return_sequences=4),
    dict(name="beam6_lp06_n3", num_beams=6, length_penalty=0.6, num_return_sequences=3),
    dict(name="beam4_lp2_len9_n2", num_beams=4, length_penalty=2.0, max_length=9, num_return_sequences=2),
    dict(name="beam2_lp0", num_beams=2, length_penalty=0.0),
]


def dates():
    from transformers import MarianTokenizer
    d = os.path.join(HERE, "..", "..", "models", "marian_dates")
    tok = MarianTokenizer.from_pretrained(d)
    model = MarianMTModel.from_pretrained(d).eval()
    model.config._attn_implementation = "eager"
    with open(os.path.join(HERE, "..", "..", "models", "dates", "samples.txt")) as f:
        lines = [l.rstrip("\n") for l in f]
    sources = [tok(l)["input_ids"] for l in lines]
    cases = decode_cases(model, model.generation_config, sources, DATES_CASES)
    with open(os.path.join(ROOT, "dates_gen.json"), "w") as f:
        json.dump({"sources": sources, "cases": cases}, f, indent=1)
    print("dates hypothesis lengths", sorted({len(h) for c in cases for r in c["results"] for h in r["hyps"]}))


def main():
    for name in ("swish_scaled", "gelu", "bart", "mbart"):
        out = os.path.join(ROOT, name)
        # BART-style models: the first token forced (mBART's language code), a minimum length
        extra = dict(forced_bos_token_id=5, min_length=4) if "bart" in name else {}
        gc = GenerationConfig(bad_words_ids=[[PAD]], decoder_start_token_id=PAD, eos_token_id=EOS,
                              forced_eos_token_id=EOS, max_length=16, num_beams=4, pad_token_id=PAD, **extra)
        gc.save_pretrained(out)
        model = AutoModelForSeq2SeqLM.from_pretrained(out).eval()
        model.config._attn_implementation = "eager"
        V = model.config.vocab_size
        rng = np.random.default_rng(7)
        sources = [rng.integers(2, V, n).tolist() + [EOS] for n in (1, 3, 5, 8, 12, 2)]
        cases = decode_cases(model, model.generation_config, sources, CASES)
        with open(os.path.join(out, "gen.json"), "w") as f:
            json.dump({"sources": sources, "cases": cases}, f, indent=1)
        print(out, "hypothesis lengths", sorted({len(h) for c in cases for r in c["results"] for h in r["hyps"]}))
    dates()


if __name__ == "__main__":
    main()
