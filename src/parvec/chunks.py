"""How an encoded corpus is cut into the units a driver trains: sentences longer than ``max_sentence_length``
split into pieces (:func:`split_long_sentences`, as word2vec.c cuts them), the pieces grouped into chunks of about
``chunk_words`` tokens on sentence boundaries (:func:`chunk_bounds`: the CPU driver's chunks, the replicas'
shares, the sharded mode's units), and the error of a resumed run whose corpus does not cut into the units its
checkpoint trained (:func:`resume_mismatch`).

A corpus *part* (:data:`Part`) is ``(tokens int32, offsets int64)``: the whole encoded corpus, one byte range of
it, or one batch of graph walks.

Example:
    >>> chunk_bounds(split_long_sentences(np.array([0, 5, 6]), 2), 4).tolist()
    [0, 2, 4]
"""

from __future__ import annotations

import numpy as np

from parvec.errors import ParvecError

__all__ = ["Part", "chunk_bounds", "resume_mismatch", "split_long_sentences"]

Part = tuple[np.ndarray, np.ndarray]  # (tokens int32, offsets int64): a corpus part


def split_long_sentences(offsets: np.ndarray, max_len: int) -> np.ndarray:
    """Offsets with every sentence longer than ``max_len`` cut into consecutive pieces.

    Example:
        >>> split_long_sentences(np.array([0, 5, 6]), 2).tolist()
        [0, 2, 4, 5, 6]
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    if len(lengths) == 0 or lengths.max() <= max_len:
        return offsets
    pieces = np.maximum(1, -(-lengths // max_len))
    starts = np.repeat(offsets[:-1], pieces)
    within = np.arange(len(starts)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    cut = starts + within * max_len
    return np.concatenate([cut, offsets[-1:]]).astype(np.int64)


def chunk_bounds(offsets: np.ndarray, chunk_words: int) -> np.ndarray:
    """Sentence indices that cut the corpus into chunks of about ``chunk_words`` tokens.

    Example:
        >>> chunk_bounds(np.array([0, 3, 6, 9, 12]), 6).tolist()
        [0, 2, 4]
    """
    n_sent = len(offsets) - 1
    if n_sent <= 0:
        return np.zeros(1, dtype=np.int64)
    chunk_of = offsets[:-1] // chunk_words
    starts = np.flatnonzero(np.diff(chunk_of)) + 1
    return np.concatenate([[0], starts, [n_sent]]).astype(np.int64)


def resume_mismatch(epoch: int, units: int, position: int | None = None, expected: int | None = None,
                    what: str = "chunks") -> ParvecError:
    """The corpus a run resumes on does not hold the units its checkpoint trained: fewer of them, or other
    words in them.

    Example:
        >>> str(resume_mismatch(0, 3))[:43]
        'the corpus does not match the checkpoint: e'
    """
    if position is None:
        return ParvecError(f"the corpus does not match the checkpoint: epoch {epoch + 1} has fewer than the "
                           f"{units} {what} the checkpoint trained")
    return ParvecError(f"the corpus does not match the checkpoint: its first {units} {what} of epoch {epoch + 1} "
                       f"hold {position} words, the checkpoint's {expected}")
