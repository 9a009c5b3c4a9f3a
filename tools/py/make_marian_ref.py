#!/usr/bin/env python3
"""Writes tests/data/marian/VARIANT/: random MarianMT models as transformers'
save_pretrained writes them (config.json, model.safetensors; the tied
embeddings and the sinusoidal positions are not in the file), with a batch
of padded sources and teacher-forced targets and what MarianMTModel
computes of them (eager attention, float32): the encoder's output and the
logits of every target position. Needs torch and transformers (PyPI).

    python3 tools/py/make_marian_ref.py [OUT_ROOT]
"""
import os
import sys

import numpy as np
import torch
from transformers import (BartConfig, BartForConditionalGeneration, MarianConfig, MarianMTModel, MBartConfig,
                          MBartForConditionalGeneration)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "data", "marian")

VARIANTS = {
    # OPUS-MT's choices (swish, scaled embeddings), small
    "swish_scaled": dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                         decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                         activation_function="swish", scale_embedding=True),
    # transformers' defaults (gelu, unscaled), one layer each, other head counts
    "gelu": dict(d_model=24, encoder_layers=1, decoder_layers=3, encoder_attention_heads=2,
                 decoder_attention_heads=3, encoder_ffn_dim=40, decoder_ffn_dim=48, activation_function="gelu",
                 scale_embedding=False),
    # BART: learned positions (offset 2), a LayerNorm of the embeddings, post-LN
    "bart": dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                 decoder_attention_heads=2, encoder_ffn_dim=48, decoder_ffn_dim=64, activation_function="gelu",
                 scale_embedding=False),
    # mBART: as BART, pre-LN blocks and a final LayerNorm per side, scaled embeddings
    "mbart": dict(d_model=32, encoder_layers=2, decoder_layers=3, encoder_attention_heads=2,
                  decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=48, activation_function="relu",
                  scale_embedding=True),
}
MODELS = {"bart": (BartConfig, BartForConditionalGeneration), "mbart": (MBartConfig, MBartForConditionalGeneration)}


def main():
    for index, (name, kw) in enumerate(VARIANTS.items()):
        out = os.path.join(ROOT, name)
        os.makedirs(out, exist_ok=True)
        config_cls, model_cls = MODELS.get(name, (MarianConfig, MarianMTModel))
        cfg = config_cls(vocab_size=90, max_position_embeddings=64, pad_token_id=0, eos_token_id=1,
                         decoder_start_token_id=0, **kw)
        torch.manual_seed(11 + index)
        model = model_cls(cfg).eval()
        with torch.no_grad():
            model.final_logits_bias.copy_(torch.randn_like(model.final_logits_bias))
            if name in MODELS:  # learned positions, trained-looking rather than the init's 0.02
                for side in (model.model.encoder, model.model.decoder):
                    side.embed_positions.weight.normal_(0.0, 0.5)
            for n, p in model.named_parameters():  # larger than the init's 0.02, so the layers matter
                if "embed_positions" not in n:  # computed, not saved: left as transformers makes them
                    p.mul_(10.0) if p.dim() == 2 else p.add_(0.1 * torch.randn_like(p))
        model.config._attn_implementation = "eager"
        model.save_pretrained(out)
        rng = np.random.default_rng(3)
        B, S, T = 3, 9, 6
        src_len = np.array([9, 5, 7], np.int32)
        src = rng.integers(2, 90, (B, S)).astype(np.int32)
        for b in range(B):
            src[b, src_len[b] - 1] = 1  # EOS
            src[b, src_len[b]:] = 0  # pad
        tgt = rng.integers(2, 90, (B, T)).astype(np.int32)
        tgt[:, 0] = 0  # decoder_start_token_id
        mask = (np.arange(S)[None, :] < src_len[:, None]).astype(np.int64)
        with torch.no_grad():
            enc = model.model.encoder(input_ids=torch.tensor(src, dtype=torch.long),
                                      attention_mask=torch.tensor(mask)).last_hidden_state
            logits = model(input_ids=torch.tensor(src, dtype=torch.long), attention_mask=torch.tensor(mask),
                           decoder_input_ids=torch.tensor(tgt, dtype=torch.long)).logits
        for k, v in {"src": src, "src_len": src_len, "tgt": tgt, "enc": enc.numpy().astype(np.float32),
                     "logits": logits.numpy().astype(np.float32)}.items():
            np.save(os.path.join(out, k + ".npy"), v)
        for f in ("generation_config.json",):
            p = os.path.join(out, f)
            if os.path.exists(p):
                os.remove(p)
        print(out, sorted(os.listdir(out)), float(np.abs(logits.numpy()).max()))


if __name__ == "__main__":
    main()
