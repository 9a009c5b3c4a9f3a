#!/usr/bin/env python3
"""Makes a random seq2seq model directory of a benchmark size (issue sizes):
  medium: E=256, H=512, bidirectional GRU encoder, additive attention A=512,
          bahdanau, V_src = V_tgt = 8000
  large:  E=512, H=1024, V=32000, otherwise the same
EOS is made very unlikely so every sentence decodes exactly --max-len steps.
Usage: /usr/bin/python3 tools/py/bench/make_bench_model.py medium OUT_DIR"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import s2s_ref  # noqa: E402

SIZES = {
    "medium": dict(emb_dim=256, hidden=512, attention_dim=512, v=8000),
    "large": dict(emb_dim=512, hidden=1024, attention_dim=1024, v=32000),
}


def main():
    size, out = sys.argv[1], sys.argv[2]
    s = SIZES[size]
    cfg = {"cell": "gru", "emb_dim": s["emb_dim"], "hidden": s["hidden"], "bidirectional": True,
           "attention": "additive", "attention_dim": s["attention_dim"], "decoder_style": "bahdanau",
           "bridge": "dense", "tokenizer": "words"}
    m = s2s_ref.make_random_model(cfg, s["v"], s["v"], seed=7, eos_bias=-50.0)
    src = s2s_ref.random_vocab(m.config, s["v"], "src")
    tgt = s2s_ref.random_vocab(m.config, s["v"], "tgt")
    s2s_ref.save_model_dir(m, cfg, src, tgt, out)
    print("wrote", out, json.dumps(cfg))


if __name__ == "__main__":
    main()
