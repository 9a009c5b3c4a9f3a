"""clgraph.Translator: seq2seq translation with the calls of CTranslate2's Translator."""
from __future__ import annotations

import itertools
import os
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Union

import numpy as np

from . import _clgraph

# cg_s2s_get_info's codes (include/clgraph/seq2seq.h)
_FAMILY_TRANSFORMER = 2
_TOKENS_CHARS = 1
# CTranslate2's compute types -> the dtype the products read weights in
# (cg_s2s_load_options.weights_dtype); "default": as stored
_COMPUTE = {"default": None, "auto": None, "float32": "f32", "float": "f32", "bfloat16": "bf16",
            "float16": "f16", "int8": "i8", "int8_float32": "i8", "int8_float16": "i8", "int8_bfloat16": "i8"}


class TranslationResult:
    """The hypotheses of one source, best first, in the form the source came
    in (a string, a list of tokens, or a list of ids); their scores when
    asked (greedy: the sum of log-probabilities, EOS included; beam: that sum
    over the length penalty, ((5 + len) / 6) ** alpha for the RNN family,
    len ** alpha for a Transformer as transformers divides it); and the
    attention of each (an ndarray [target steps, source tokens]) when asked
    (a Transformer's: its last layer's, over the source tokens given)."""

    __slots__ = ("hypotheses", "scores", "attention")

    def __init__(self, hypotheses, scores, attention):
        self.hypotheses = hypotheses
        self.scores = scores
        self.attention = attention

    def __getitem__(self, key):  # result["hypotheses"], as older CTranslate2 results allow
        return getattr(self, key)

    def __repr__(self):
        return f"TranslationResult(hypotheses={self.hypotheses!r}, scores={self.scores!r})"


class Translator:
    """A translation model directory loaded on a device: the RNN family's
    (docs/seq2seq.md) or a MarianMT-layout Transformer's (docs/transformer.md,
    told apart by config.json's model_type).

    ``Translator(model_dir, device="cpu", compute_type="default", place=None,
    plugins=(), intra_threads=0)``: `compute_type` is the dtype the matrix
    products read their weights in, as CTranslate2 names it (``"int8"``,
    ``"bfloat16"``, ``"float16"``, ``"float32"``; ``"default"``: as stored,
    e.g. by ``clgraph.quantize``). One translation runs at a time per
    Translator (calls from several threads queue); for parallel ones make one
    Translator per thread.
    """

    def __init__(self, model_dir: Union[str, os.PathLike], device: str = "cpu", compute_type: str = "default",
                 place: Optional[str] = None, plugins: Sequence[str] = (), intra_threads: int = 0):
        if compute_type not in _COMPUTE:
            raise _clgraph.InvalidInput(f"compute_type '{compute_type}' is not one of " + ", ".join(_COMPUTE))
        dt = _COMPUTE[compute_type]
        code = _clgraph.dtypes()[dt][0] if dt else 0
        self.model_dir = os.fspath(model_dir)
        self.device = device
        self.compute_type = compute_type
        self._c = _clgraph.Translator(self.model_dir, device, place, [os.fspath(p) for p in plugins],
                                      int(intra_threads), code)
        # what the library read from the directory (cg_s2s_get_info)
        family, tokenizer, unk, _, _ = self._c.info()
        self.transformer = family == _FAMILY_TRANSFORMER
        self._chars = tokenizer == _TOKENS_CHARS
        self._src_tokens = self._c.vocab(False)
        self._src_ids = {tok: i for i, tok in enumerate(self._src_tokens)}
        self._unk = max(unk, 0)
        self._tgt_tokens = self._c.vocab(True)

    # -- tokens ----------------------------------------------------------
    def tokenize(self, text: str) -> List[str]:
        """The source tokens of `text` by the model's tokenizer (chars or
        words; a Transformer's: source.spm's pieces, without EOS)."""
        if self.transformer:
            return [self._src_tokens[i] for i in self._c.tokenize(text)]
        return list(text) if self._chars else text.split()

    def _ids(self, source) -> List[int]:
        if isinstance(source, str):
            return self._c.tokenize(source)
        if all(isinstance(t, (int, np.integer)) for t in source):
            return [int(t) for t in source]
        return [self._src_ids.get(t, self._unk) for t in source]

    def _form(self, source, ids: List[int]):
        if isinstance(source, str):
            return self._c.detokenize(ids)
        if len(source) and all(isinstance(t, (int, np.integer)) for t in source):
            return ids
        return [self._tgt_tokens[i] if 0 <= i < len(self._tgt_tokens) else str(i) for i in ids]

    # -- translating -----------------------------------------------------
    def translate_batch(self, source: Sequence[Union[str, Sequence[str], Sequence[int]]],
                        beam_size: Optional[int] = None, num_hypotheses: int = 1, alpha: Optional[float] = None,
                        max_decoding_length: int = 0,
                        min_decoding_length: int = 0, return_scores: bool = True, return_attention: bool = False,
                        max_batch_size: int = 0, batch_type: str = "examples", attention_head: int = 0,
                        **kwargs: Any) -> List[TranslationResult]:
        """Translates `source` (strings, token lists or id lists) into one
        TranslationResult each, in order. Sources are sorted by length and
        decoded `max_batch_size` at a time (examples, or tokens with
        ``batch_type="tokens"``; 0: 32 sentences); a sentence's result does
        not depend on its batch. `beam_size` 1 is greedy; `alpha` is the
        length penalty's exponent: GNMT's ((5 + len) / 6) ** alpha for the
        RNN family (0: raw scores), transformers' len ** alpha for a
        Transformer (which also takes it as `length_penalty=`);
        `max_decoding_length` counts EOS. Left out (None, 0), they are the
        model's: greedy, no penalty and 2 x source + 10 for the RNN family;
        generation_config.json's num_beams, length_penalty and max_length - 1
        for a Transformer. A Transformer's attention is its last decoder
        layer's, averaged over the heads (`attention_head` 0) or of head N
        (1-based)."""
        if "length_penalty" in kwargs:
            if not self.transformer:
                raise TypeError("clgraph's beam search normalises with GNMT's penalty ((5 + len) / 6) ** alpha: "
                                "give alpha= (docs/seq2seq.md)")
            if alpha is not None:
                raise TypeError("give alpha= or length_penalty=, not both")
            alpha = kwargs.pop("length_penalty")
        if kwargs:
            raise TypeError(f"translate_batch() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if batch_type not in ("examples", "tokens"):
            raise _clgraph.InvalidInput(f"batch_type must be 'examples' or 'tokens', not '{batch_type}'")
        ids = [self._ids(s) for s in source]
        opts = (int(beam_size or 0), int(num_hypotheses), float(alpha or 0.0), int(max_decoding_length),
                int(min_decoding_length))
        flags = 0 if alpha is None else 1  # CG_S2S_ALPHA_SET
        raw = [None] * len(ids)
        for batch in self._batches(ids, max_batch_size, batch_type):
            out = self._c.translate([ids[i] for i in batch], *opts, len(batch), bool(return_attention), flags,
                                    int(attention_head))
            for i, r in zip(batch, out):
                raw[i] = r
        return [self._result(s, r, return_scores, return_attention) for s, r in zip(source, raw)]

    @staticmethod
    def _batches(ids, max_batch_size, batch_type):
        """Indices sorted by length (longest first, stable), cut into batches."""
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        size = max_batch_size if max_batch_size > 0 else 32
        batch, tokens = [], 0
        for i in order:
            n = len(ids[i]) if batch_type == "tokens" else 1
            if batch and tokens + n > size:
                yield batch
                batch, tokens = [], 0
            batch.append(i)
            tokens += n
        if batch:
            yield batch

    def _result(self, source, raw, return_scores, return_attention) -> TranslationResult:
        src_len, hyps = raw
        attention = []
        if return_attention:
            for _ids, _score, att, steps in hyps:
                attention.append(np.frombuffer(att, np.float32).reshape(steps, src_len))
        return TranslationResult([self._form(source, h[0]) for h in hyps],
                                 [h[1] for h in hyps] if return_scores else [], attention)

    def translate_iterable(self, source: Iterable[Union[str, Sequence[str], Sequence[int]]], max_batch_size: int = 32,
                           batch_type: str = "examples", read_batch_size: int = 0,
                           **kwargs: Any) -> Iterator[TranslationResult]:
        """Translates a stream of sources, yielding results in input order
        while reading at most `read_batch_size` sources ahead (0: 16 batches):
        memory stays bounded however long the stream. Ctrl-C stops it within
        a batch."""
        ahead = read_batch_size if read_batch_size > 0 else 16 * max(max_batch_size, 1)
        it = iter(source)
        while True:
            chunk = list(itertools.islice(it, ahead))
            if not chunk:
                return
            yield from self.translate_batch(chunk, max_batch_size=max_batch_size, batch_type=batch_type, **kwargs)

    def stats(self) -> dict:
        """The encoder's and decoder's plan totals (runs, kernel launches, allocations...)."""
        enc, dec = self._c.stats()
        return {"encoder": enc, "decoder": dec}
