#!/usr/bin/python3
"""Trains the shipped demo model models/dates/: a character-level date
normaliser ("sun 22 nov 2026" -> "2026-11-22") built with the reference
implementation tools/py/s2s_ref.py (GRU, chars, bidirectional encoder, additive
Bahdanau attention).

    /usr/bin/python3 tools/py/train_dates.py [--out models/dates] [--steps 3000] [--threads 1]
    # more training from the checkpoint (a new cosine schedule from --lr):
    /usr/bin/python3 tools/py/train_dates.py --resume /tmp/dates_ckpt.pt --steps 1000 --lr 5e-4

The learning-rate schedule follows the step count (cosine from --lr down to
5% of it), so with one thread a run is reproducible; --minutes is only a
safety cap on the wall clock.

Data: random dates 1900-01-01..2099-12-31 written in FORMATS below, each word
format in title, lower or upper case; target ISO YYYY-MM-DD.  Dates are split
by a hash of the date (is_heldout): held-out dates are never trained on; the
evaluation (tools/py/eval_dates.py) uses only held-out dates.
"""
import argparse
import datetime
import json
import math
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s2s_ref  # noqa: E402

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
MON = [m[:3] for m in MONTHS]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WD = [w[:3] for w in WEEKDAYS]

FIRST = datetime.date(1900, 1, 1)
LAST = datetime.date(2099, 12, 31)
N_DAYS = (LAST - FIRST).days + 1


def ordinal(n):
    if 11 <= n % 100 <= 13:
        return "%dth" % n
    return "%d%s" % (n, {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th"))


# name -> (function(date, rng) -> natural title-case string, has letters)
def _slash(d, rng):
    if rng.random() < 0.5:
        return "%02d/%02d/%d" % (d.day, d.month, d.year)
    return "%d/%d/%d" % (d.day, d.month, d.year)


FORMATS = {
    "D Month YYYY": (lambda d, r: "%d %s %d" % (d.day, MONTHS[d.month - 1], d.year), True),
    "Month D, YYYY": (lambda d, r: "%s %d, %d" % (MONTHS[d.month - 1], d.day, d.year), True),
    "Mon D YYYY": (lambda d, r: "%s %d %d" % (MON[d.month - 1], d.day, d.year), True),
    "D mon. YYYY": (lambda d, r: "%d %s. %d" % (d.day, MON[d.month - 1], d.year), True),
    "Weekday, Month D, YYYY": (lambda d, r: "%s, %s %d, %d" % (WEEKDAYS[d.weekday()], MONTHS[d.month - 1],
                                                                 d.day, d.year), True),
    "wd D mon YYYY": (lambda d, r: "%s %d %s %d" % (WD[d.weekday()], d.day, MON[d.month - 1], d.year), True),
    "the Dth of Month YYYY": (lambda d, r: "The %s of %s %d" % (ordinal(d.day), MONTHS[d.month - 1], d.year),
                              True),
    "D MON YYYY": (lambda d, r: "%d %s %d" % (d.day, MON[d.month - 1], d.year), True),
    "DD/MM/YYYY": (_slash, False),
    "YYYY.MM.DD": (lambda d, r: "%d.%02d.%02d" % (d.year, d.month, d.day), False),
    "YYYY-MM-DD": (lambda d, r: "%d-%02d-%02d" % (d.year, d.month, d.day), False),
}
FORMAT_NAMES = list(FORMATS)
CASES = ("title", "lower", "upper")


def render(d, fmt, case, rng):
    s = FORMATS[fmt][0](d, rng)
    if case == "lower":
        s = s.lower()
    elif case == "upper":
        s = s.upper()
    return s


def iso(d):
    return "%04d-%02d-%02d" % (d.year, d.month, d.day)


def is_heldout(d):
    """About 10% of all dates, chosen by a multiplicative hash of the day number."""
    k = d.toordinal()
    return ((k * 2654435761) & 0xFFFFFFFF) % 10 == 0


def random_date(rng, heldout):
    while True:
        d = FIRST + datetime.timedelta(days=rng.randrange(N_DAYS))
        if is_heldout(d) == heldout:
            return d


def example(rng, heldout=False, fmt=None, case=None):
    d = random_date(rng, heldout)
    fmt = fmt or rng.choice(FORMAT_NAMES)
    if case is None:
        case = rng.choice(CASES) if FORMATS[fmt][1] else "title"
    return render(d, fmt, case, rng), iso(d), fmt, case


def heldout_set(n, seed):
    """n held-out examples spread evenly over formats (and cases, round robin)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        fmt = FORMAT_NAMES[i % len(FORMAT_NAMES)]
        case = CASES[(i // len(FORMAT_NAMES)) % 3] if FORMATS[fmt][1] else "title"
        out.append(example(rng, True, fmt, case))
    return out


def vocabularies():
    src_chars = set()
    for m in MONTHS + WEEKDAYS:
        src_chars |= set(m) | set(m.lower()) | set(m.upper())
    src_chars |= set("0123456789 ,./-") | set("thndrsoTHNDRSO")  # "the", "of", ordinals
    specials = list(s2s_ref.SPECIAL_TOKENS)
    src = specials + sorted(src_chars)
    tgt = specials + list("0123456789-")
    return src, tgt


CONFIG = {"cell": "gru", "emb_dim": 32, "hidden": 128, "bidirectional": True, "attention": "additive",
          "attention_dim": 96, "decoder_style": "bahdanau", "bridge": "dense", "tokenizer": "chars"}


def encode_batch(batch, src_index, tgt_index, cfg):
    srcs = [[src_index.get(ch, cfg["unk_id"]) for ch in s] for s, _t, _f, _c in batch]
    S = max(len(x) for x in srcs)
    src = torch.full((len(batch), S), cfg["pad_id"], dtype=torch.long)
    for i, x in enumerate(srcs):
        src[i, :len(x)] = torch.tensor(x)
    lens = torch.tensor([len(x) for x in srcs])
    tg = [[tgt_index[ch] for ch in t] for _s, t, _f, _c in batch]
    tin = torch.tensor([[cfg["bos_id"]] + x for x in tg])
    tout = torch.tensor([x + [cfg["eos_id"]] for x in tg])
    return src, lens, tin, tout


def evaluate(model, data, src_index, tgt_vocab, bs=500):
    """Greedy exact match per format (batched greedy == alone greedy)."""
    cfg = model.config
    per = {}
    wrong = []
    model.eval()
    for i in range(0, len(data), bs):
        chunk = data[i:i + bs]
        srcs = [[src_index.get(ch, cfg["unk_id"]) for ch in s] for s, _t, _f, _c in chunk]
        res = s2s_ref.greedy_batch(model, srcs)
        for (s, t, f, c), r in zip(chunk, res):
            hyp = "".join(tgt_vocab[k] for k in r["tokens"])
            ok = r["ended"] and hyp == t
            a, n = per.get(f, (0, 0))
            per[f] = (a + ok, n + 1)
            if not ok:
                wrong.append((s, t, hyp))
    tot = sum(a for a, n in per.values()) / max(1, sum(n for a, n in per.values()))
    return tot, per, wrong


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/dates")
    ap.add_argument("--steps", type=int, default=3000, help="training steps (batches) in this run")
    ap.add_argument("--minutes", type=float, default=40.0, help="wall-clock safety cap")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=CONFIG["hidden"])
    ap.add_argument("--emb", type=int, default=CONFIG["emb_dim"])
    ap.add_argument("--attn-dim", type=int, default=CONFIG["attention_dim"])
    ap.add_argument("--eval-n", type=int, default=3300)
    ap.add_argument("--eval-every", type=int, default=1000)
    ap.add_argument("--ckpt", default="/tmp/dates_ckpt.pt")
    ap.add_argument("--resume", default=None, help="continue from a checkpoint")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    src_vocab, tgt_vocab = vocabularies()
    cfg = dict(CONFIG, hidden=args.hidden, emb_dim=args.emb, attention_dim=args.attn_dim)
    model = s2s_ref.Seq2Seq(cfg, len(src_vocab), len(tgt_vocab))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    step0 = 0
    elapsed0 = 0.0
    if args.resume:
        ck = torch.load(args.resume)
        cfg = ck["config"]
        model = s2s_ref.Seq2Seq(cfg, len(src_vocab), len(tgt_vocab))
        model.load_state_dict(ck["model"])
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
        opt.load_state_dict(ck["opt"])
        step0, elapsed0 = ck["step"], ck.get("elapsed", 0.0)
        rng.seed(args.seed + step0)
    ncfg = model.config
    src_index = {t: i for i, t in enumerate(src_vocab)}
    tgt_index = {t: i for i, t in enumerate(tgt_vocab)}
    dev = heldout_set(args.eval_n, 12345)
    nparams = sum(p.numel() for p in model.parameters())
    print("config %s, %d parameters (%.2f MB f32), vocab %d/%d" % (json.dumps(cfg), nparams, nparams * 4 / 1e6,
                                                                   len(src_vocab), len(tgt_vocab)), flush=True)
    budget = args.minutes * 60
    t0 = time.time()
    lossf = torch.nn.CrossEntropyLoss()
    step = step0
    avg = None
    best = -1.0

    def save(tag):
        torch.save({"config": cfg, "model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                    "elapsed": elapsed0 + time.time() - t0}, args.ckpt)
        s2s_ref.save_model_dir(model, cfg, src_vocab, tgt_vocab, args.out)
        print("saved %s (%s)" % (args.out, tag), flush=True)

    while step < step0 + args.steps:
        if time.time() - t0 >= budget:
            print("wall-clock cap reached", flush=True)
            break
        frac = (step - step0) / args.steps
        lr = args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        model.train()
        batch = [example(rng, False) for _ in range(args.batch)]
        src, lens, tin, tout = encode_batch(batch, src_index, tgt_index, ncfg)
        logits = model(src, lens, tin)
        loss = lossf(logits.reshape(-1, logits.shape[-1]), tout.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        avg = loss.item() if avg is None else 0.98 * avg + 0.02 * loss.item()
        if step % 100 == 0:
            print("step %d loss %.4f lr %.2e %.0fs" % (step, avg, lr, time.time() - t0), flush=True)
        if step % args.eval_every == 0:
            acc, per, _ = evaluate(model, dev[:1100], src_index, tgt_vocab)
            print("step %d dev acc %.4f" % (step, acc), flush=True)
            if acc >= best:
                best = acc
                save("step %d dev %.4f" % (step, acc))
    acc, per, wrong = evaluate(model, dev, src_index, tgt_vocab)
    print("final step %d: held-out exact match %.4f on %d (%.0f s)" % (step, acc, len(dev), time.time() - t0))
    for f in FORMAT_NAMES:
        a, n = per[f]
        print("  %-24s %d/%d = %.4f" % (f, a, n, a / n))
    for w in wrong[:30]:
        print("  wrong: %r -> %r (want %r)" % (w[0], w[2], w[1]))
    save("final")


if __name__ == "__main__":
    main()
