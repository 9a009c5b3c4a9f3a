#!/usr/bin/env python3
"""Writes tests/data/marian/tok: a MarianMT tokenizer as transformers'
save_pretrained lays it out (source.spm, target.spm, vocab.json, and the
config.json keys the tokenizer reads), SentencePiece models trained here on
generated dates (unigram, tiny vocabularies), and expected.json: what
transformers' MarianTokenizer makes of a list of texts (ids, EOS
appended) and of a list of target id sequences (text, special tokens
skipped). Needs transformers and sentencepiece (PyPI).

    python3 tools/py/make_marian_tok.py [OUT_DIR]
"""
import datetime
import json
import os
import random
import sys
import tempfile

import sentencepiece as spm
from transformers import MarianTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "data", "marian", "tok")


def main():
    r = random.Random(1)
    src, tgt = [], []
    for _ in range(3000):
        d = datetime.date(1950, 1, 1) + datetime.timedelta(days=r.randrange(40000))
        src.append(d.strftime(r.choice(["%B %d, %Y", "%d %b %Y", "%A, %B %d %Y", "the %d of %B, %Y"])))
        tgt.append(d.strftime("%Y-%m-%d"))
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, lines, size in (("source", src, 90), ("target", tgt, 40)):
            path = os.path.join(tmp, name + ".txt")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            spm.SentencePieceTrainer.train(input=path, model_prefix=os.path.join(tmp, name), vocab_size=size,
                                           model_type="unigram", character_coverage=1.0, minloglevel=2)
        vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
        for name in ("source", "target"):
            sp = spm.SentencePieceProcessor(model_file=os.path.join(tmp, name + ".model"))
            for i in range(sp.get_piece_size()):
                vocab.setdefault(sp.id_to_piece(i), len(vocab))
        vocab_path = os.path.join(tmp, "vocab.json")
        with open(vocab_path, "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        tok = MarianTokenizer(os.path.join(tmp, "source.model"), os.path.join(tmp, "target.model"), vocab_path)
        tok.save_pretrained(OUT)
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump({"model_type": "marian", "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0,
                   "vocab_size": len(vocab)}, f, indent=1)
    texts = ["November 22, 2026", "the 3 of May, 1999", "Sunday, July 04 1976", "", "   ", "  spaced   out  ",
             "Ünïcödé ✓ dates 2026", "NOVEMBER 22 2026", "12/31/1999", "x" * 40]
    inv = {v: k for k, v in vocab.items()}
    rng = random.Random(2)
    targets = [tok(t, text_target=None)["input_ids"] for t in ["1999-12-31"]]
    tgt_ids = [tok(text_target=t)["input_ids"] for t in ["2026-11-22", "1999-12-31", "1976-07-04"]]
    tgt_ids.append([rng.randrange(len(vocab)) for _ in range(12)])
    tgt_ids.append([0, 5, 1, 7])  # pad and EOS inside: skipped
    expected = {"encode": [{"text": t, "ids": tok(t)["input_ids"],
                            "pieces": tok.tokenize(t)} for t in texts],
                "decode": [{"ids": ids, "text": tok.decode(ids, skip_special_tokens=True)} for ids in tgt_ids],
                "vocab_size": len(vocab), "unk_id": vocab["<unk>"]}
    del targets, inv
    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        p = os.path.join(OUT, name)
        if os.path.exists(p):
            os.remove(p)  # not read by clgraph; transformers' version-specific keys
    print(OUT, sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
