#!/usr/bin/env python3
"""clgraph against CTranslate2 on one MarianMT model (docs/performance.md,
issue 34): the same weights (a random model at OPUS-MT base size made with
transformers and converted by ct2-transformers-converter), the same source
ids, the same thread count, beam and batch, both decoding --steps tokens
per hypothesis (the minimum length is the maximum: EOS is masked until the
limit in both, so every hypothesis runs to it). Tokens per second = the
hypotheses' decoding steps times the hypotheses returned, over the wall time of
translate_batch, best of --rounds, the two engines interleaved, each in a
process of its own (its peak RSS, VmHWM, is the engine's). Prints a Markdown table and the machine's load.

    PYTHONPATH=build/python python3 tools/py/bench/marian_ct2.py [--work /tmp/marian_base]

Needs torch, transformers, sentencepiece and ctranslate2 (PyPI).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

BASE = dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
            encoder_ffn_dim=2048, decoder_ffn_dim=2048, vocab_size=32000, max_position_embeddings=512,
            activation_function="swish", scale_embedding=True)
WORKLOADS = [("batch 1 greedy", 1, 1), ("batch 32 greedy", 32, 1), ("batch 32 beam 4", 32, 4)]


def make_model(work, small):
    """A random OPUS-MT-base MarianMT directory with tokenizer files (the
    demo's SentencePiece models; vocab.json with OPUS-MT's layout: </s> 0,
    <unk> 1, <pad> last) and its CTranslate2 conversion."""
    hf, ct2 = os.path.join(work, "hf"), os.path.join(work, "ct2")
    if os.path.exists(os.path.join(ct2, "model.bin")) and os.path.exists(os.path.join(ct2 + "_int8", "model.bin")):
        return hf, ct2
    shutil.rmtree(hf, ignore_errors=True)
    import torch
    from transformers import MarianConfig, MarianMTModel
    cfg = dict(BASE)
    if small:
        cfg.update(d_model=64, encoder_layers=2, decoder_layers=2, encoder_ffn_dim=128, decoder_ffn_dim=128,
                   vocab_size=1000)
    V = cfg["vocab_size"]
    config = MarianConfig(pad_token_id=V - 1, eos_token_id=0, decoder_start_token_id=V - 1, forced_eos_token_id=0,
                          **cfg)
    torch.manual_seed(0)
    model = MarianMTModel(config).eval()
    os.makedirs(hf, exist_ok=True)
    model.save_pretrained(hf)
    demo = os.path.join(ROOT, "models", "marian_dates")
    for f in ("source.spm", "target.spm"):
        shutil.copy(os.path.join(demo, f), hf)
    vocab = {"</s>": 0, "<unk>": 1}
    for i in range(2, V - 1):
        vocab[f"\u2581w{i}"] = i
    vocab["<pad>"] = V - 1
    with open(os.path.join(hf, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    with open(os.path.join(hf, "tokenizer_config.json"), "w") as f:
        json.dump({"source_lang": "xx", "target_lang": "yy", "model_max_length": 512}, f)
    # no generation_config.json: transformers' defaults, the options below set the rest
    gc = os.path.join(hf, "generation_config.json")
    if os.path.exists(gc):
        os.remove(gc)
    conv = os.path.join(os.path.dirname(sys.executable), "ct2-transformers-converter")
    subprocess.run([conv, "--model", hf, "--output_dir", ct2 + "_int8", "--quantization", "int8", "--force"],
                   check=True)
    subprocess.run([conv, "--model", hf, "--output_dir", ct2, "--force"], check=True)
    return hf, ct2


def sources(n, V, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.integers(2, V - 1, int(rng.integers(12, 25))).tolist() + [0] for _ in range(n)]


def run_ct2(ct2, src, batch, beam, steps, threads, int8):
    import ctranslate2
    t = ctranslate2.Translator(ct2 + ("_int8" if int8 else ""), device="cpu", intra_threads=threads,
                               inter_threads=1, compute_type="int8" if int8 else "float32")
    toks = [[f"\u2581w{i}" if i else "</s>" for i in s] for s in src]

    def go():
        r = t.translate_batch(toks, beam_size=beam, max_batch_size=batch, max_decoding_length=steps,
                              min_decoding_length=steps, length_penalty=1.0, return_scores=False)
        return [len(x.hypotheses[0]) for x in r]
    return go


def run_clgraph(hf, src, batch, beam, steps, threads, int8):
    os.environ["CLGRAPH_THREADS"] = str(threads)
    import clgraph
    # int8: the directory `clgraph quantize --to int8` wrote (as CTranslate2 reads its converted int8 model)
    if int8 and not os.path.exists(os.path.join(hf + "_int8", "model.safetensors")):
        clgraph.quantize(hf, hf + "_int8", to="int8")
    t = clgraph.Translator(hf + "_int8" if int8 else hf, intra_threads=threads)

    def go():
        # max_decoding_length counts the EOS: `steps` decoder steps, as CTranslate2's
        r = t.translate_batch(src, beam_size=beam, max_batch_size=batch, max_decoding_length=steps,
                              min_decoding_length=steps, alpha=1.0)
        return [len(x.hypotheses[0]) for x in r]
    return go


def one_engine(args):
    """Child process: one engine, one workload; prints tokens/s and peak RSS."""
    hf, ct2 = args.hf, args.ct2
    V = BASE["vocab_size"] if not args.small else 1000
    n = args.batch if args.batch > 1 else args.sentences_b1
    src = sources(n, V)
    go = (run_ct2(ct2, src, args.batch, args.beam, args.steps, args.threads, args.int8) if args.engine == "ct2"
          else run_clgraph(hf, src, args.batch, args.beam, args.steps, args.threads, args.int8))
    go()  # warm
    best = None
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        lens = go()
        dt = time.perf_counter() - t0
        best = dt if best is None or dt < best else best
    if min(lens) < args.steps - 1:
        sys.exit(f"{args.engine}: a hypothesis of {min(lens)} tokens, fewer than the {args.steps} steps")
    ntok = len(lens) * args.steps
    with open("/proc/self/status") as f:  # ru_maxrss survives exec: the parent's torch would count
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024.0
    print(json.dumps({"tok_s": ntok / best, "tokens": ntok, "seconds": best, "rss_mb": rss}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/marian_base")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sentences-b1", type=int, default=8, dest="sentences_b1")
    ap.add_argument("--small", action="store_true", help="a tiny model, to try the script")
    ap.add_argument("--dtypes", default="fp32,int8", help="fp32, int8 or both")
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--int8", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--beam", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--hf", help=argparse.SUPPRESS)
    ap.add_argument("--ct2", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.engine:
        return one_engine(args)
    hf, ct2 = make_model(args.work, args.small)
    rows = []
    for dtype in args.dtypes.split(","):
        for name, batch, beam in WORKLOADS:
            got = {}
            for engine in ("ct2", "clgraph"):  # interleaved: one workload, both engines
                cmd = [sys.executable, __file__, "--engine", engine, "--batch", str(batch), "--beam", str(beam),
                       "--hf", hf, "--ct2", ct2, "--threads", str(args.threads), "--steps", str(args.steps),
                       "--rounds", str(args.rounds), "--sentences-b1", str(args.sentences_b1)]
                cmd += (["--small"] if args.small else []) + (["--int8"] if dtype == "int8" else [])
                out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                got[engine] = json.loads(out.strip().splitlines()[-1])
            rows.append((f"{dtype} {name}", got))
            print(dtype, name, json.dumps(got), file=sys.stderr)
    print(f"{args.threads} threads, {args.steps} tokens per hypothesis, best of {args.rounds}; "
          f"load average {os.getloadavg()[0]:.2f}\n")
    print("| workload | CTranslate2 tok/s | clgraph tok/s | ratio | CTranslate2 peak RSS MB | clgraph peak RSS MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, g in rows:
        c, k = g["ct2"], g["clgraph"]
        print(f"| {name} | {c['tok_s']:.0f} | {k['tok_s']:.0f} | {k['tok_s'] / c['tok_s']:.2f} | "
              f"{c['rss_mb']:.0f} | {k['rss_mb']:.0f} |")


if __name__ == "__main__":
    main()
