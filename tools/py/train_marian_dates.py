#!/usr/bin/env python3
"""Trains models/marian_dates: the date normaliser of models/dates
("sun 22 nov 2026" -> "2026-11-22") as a Transformer in transformers'
MarianMT layout, with SentencePiece models trained here on the same data:
the demo of the Transformer family (docs/transformer.md, issue 34).

    python3 tools/py/train_marian_dates.py [--out models/marian_dates] [--steps 3000] [--threads 2]

The data, its held-out split and the evaluation set are train_dates.py's
(dates split by a hash: held-out dates are never trained on). The
vocabulary follows OPUS-MT's layout (`</s>` 0, `<unk>` 1, `<pad>` last; the
layout CTranslate2's converter expects); generation_config.json forbids pad
(bad_words_ids), as OPUS-MT's do. The held-out accuracy of greedy
`generate` is printed and written to the model's README.md.
"""
import argparse
import json
import math
import os
import random
import sys
import tempfile
import time

import sentencepiece as spm
import torch
from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_dates  # noqa: E402  (the data: formats, cases, held-out split)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def tokenizer(tmp, rng):
    """SentencePiece models on training sources and targets, and vocab.json."""
    src = [train_dates.example(rng)[0] for _ in range(20000)]
    tgt = [train_dates.example(rng)[1] for _ in range(5000)]
    for name, lines, size in (("source", src, 160), ("target", tgt, 24)):
        path = os.path.join(tmp, name + ".txt")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        spm.SentencePieceTrainer.train(input=path, model_prefix=os.path.join(tmp, name), vocab_size=size,
                                       model_type="unigram", character_coverage=1.0, minloglevel=2,
                                       hard_vocab_limit=False)
    vocab = {"</s>": 0, "<unk>": 1}
    for name in ("source", "target"):
        sp = spm.SentencePieceProcessor(model_file=os.path.join(tmp, name + ".model"))
        for i in range(sp.get_piece_size()):
            p = sp.id_to_piece(i)
            if p not in ("<unk>", "<s>", "</s>"):
                vocab.setdefault(p, len(vocab))
    vocab["<pad>"] = len(vocab)
    with open(os.path.join(tmp, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    return MarianTokenizer(os.path.join(tmp, "source.model"), os.path.join(tmp, "target.model"),
                           os.path.join(tmp, "vocab.json")), vocab


def accuracy(model, tok, data, bs=250):
    model.eval()
    right = 0
    with torch.no_grad():
        for i in range(0, len(data), bs):
            chunk = data[i:i + bs]
            enc = tok([s for s, *_ in chunk], return_tensors="pt", padding=True)
            out = model.generate(**enc, num_beams=1, do_sample=False, max_length=16)
            got = tok.batch_decode(out, skip_special_tokens=True)
            right += sum(g == t for g, (_, t, *_) in zip(got, chunk))
    model.train()
    return right / len(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "marian_dates"))
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        tok, vocab = tokenizer(tmp, rng)
        pad, eos = vocab["<pad>"], vocab["</s>"]
        cfg = MarianConfig(vocab_size=len(vocab), d_model=64, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                           decoder_ffn_dim=128, activation_function="swish", scale_embedding=True,
                           max_position_embeddings=64, pad_token_id=pad, eos_token_id=eos,
                           decoder_start_token_id=pad, forced_eos_token_id=eos, dropout=0.0)
        model = MarianMTModel(cfg)
        model.generation_config = GenerationConfig(decoder_start_token_id=pad, eos_token_id=eos,
                                                   pad_token_id=pad, forced_eos_token_id=eos,
                                                   bad_words_ids=[[pad]], max_length=16, num_beams=1)
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
        heldout = train_dates.heldout_set(1000, 12345)
        t0 = time.time()
        model.train()
        for step in range(args.steps):
            lr = args.lr * min(1.0, (step + 1) / 200) * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * step / args.steps)))
            for g in opt.param_groups:
                g["lr"] = lr
            batch = [train_dates.example(rng) for _ in range(args.batch)]
            enc = tok([s for s, *_ in batch], text_target=[t for _, t, *_ in batch], return_tensors="pt",
                      padding=True)
            enc["labels"][enc["labels"] == pad] = -100
            loss = model(**enc).loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if step % 250 == 0 or step == args.steps - 1:
                print(f"step {step} loss {loss.item():.4f} lr {lr:.2e} {time.time() - t0:.0f}s", flush=True)
        acc = accuracy(model, tok, heldout)
        print(f"held-out greedy accuracy {acc:.4f} ({len(heldout)} dates)", flush=True)
        os.makedirs(args.out, exist_ok=True)
        model.eval()
        model.save_pretrained(args.out)
        tok.save_pretrained(args.out)
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        p = os.path.join(args.out, name)
        if os.path.exists(p):
            os.remove(p)  # clgraph reads vocab.json and the .spm files; transformers rebuilds these
    n_params = sum(p.numel() for p in model.parameters())
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(f"""# marian_dates: the date normaliser as a MarianMT Transformer

The task of `models/dates` (any of its date forms -> ISO `YYYY-MM-DD`) learned by a
Transformer in transformers' MarianMT layout (docs/transformer.md), trained by
`tools/py/train_marian_dates.py` (seed {args.seed}, {args.steps} steps of {args.batch}, AdamW, lr {args.lr},
{time.time() - t0:.0f} s on 2 CPU threads) on dates never in the held-out split.

| file | content |
| --- | --- |
| `config.json` | MarianConfig: d_model 64, 2+2 layers, 4 heads, ffn 128, swish, scaled embeddings |
| `model.safetensors` | {n_params:,} parameters (F32; the tied embeddings and sinusoidal positions are not stored) |
| `vocab.json` | {len(vocab)} pieces, OPUS-MT's layout: `</s>` 0, `<unk>` 1, `<pad>` last |
| `source.spm`, `target.spm` | SentencePiece unigram models trained on the data |
| `generation_config.json` | greedy, max_length 16, pad forbidden (bad_words_ids) |

Held-out greedy accuracy with transformers' `generate`: **{acc:.4f}** on {len(heldout)} held-out dates
(`train_dates.heldout_set(1000, 12345)`: every form and case).
""")
    print(args.out, sorted(os.listdir(args.out)))


if __name__ == "__main__":
    main()
