"""The reference the hashed encoders are checked against: a byte range encoded by the one-process rules
(:func:`parvec.corpus.encode_sentences` over :class:`parvec.corpus.RangeSentences`, a Python dict of the
vocabulary), what the sharded pipeline's encoder actors did before the hashed lookup."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from parvec.corpus import NoTokensError, RangeSentences, ReadOptions, encode_sentences
from parvec.vocab import Vocab


def python_encode_range(path: str | Path, start: int, end: int | None, options: ReadOptions,
                        vocab: Vocab) -> tuple[np.ndarray, np.ndarray, int]:
    """``(tokens int32, offsets int64, raw words)`` of bytes ``[start, end)`` of ``path``, encoded with ``vocab``."""
    sentences = RangeSentences(path, start, end, options)
    try:
        enc = encode_sentences(sentences, options, vocab, source=f"{path}[{start}:{end}]")
        return enc.tokens, enc.offsets, enc.raw_words
    except NoTokensError:  # a range without an in-vocabulary token
        return np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64), sum(len(s) for s in sentences)
