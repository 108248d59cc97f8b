"""A sharded model's vectors, queried where they lie: memory-mapped column blocks, no gathered or normalised copy.

A model saved by ``parvec train --mode sharded --save-model DIR`` (the sharded model format,
:mod:`parvec.model_io`) is each shard's columns of the input vectors (``shards/shard-S-of-N/in.npy``) and the
vocabulary's partitions (:mod:`parvec.vocab_parts`).  :class:`ShardedKeyedVectors` opens it lazily
(:meth:`parvec.keyedvectors.KeyedVectors.load_sharded`): a word's vector is its row read from every shard's
columns, and :meth:`ShardedKeyedVectors.most_similar` computes the cosine of every row block by block from the
shards' **partial dot products and partial squared norms** (the row block's columns of each shard against the
query's same columns, summed), keeping the best ``topn`` of each block: memory of one block, whatever the
vocabulary.  The results are :class:`parvec.keyedvectors.KeyedVectors`' on the gathered vectors (the same ranking;
the cosines to float32 rounding).  :func:`partial_scores` is one shard's part of a block, which a cluster query
(:mod:`parvec.distributed.sharded_query`) runs as Ray tasks on the shards' nodes.

Example:
    >>> kv = KeyedVectors.load_sharded("model")  # doctest: +SKIP
    >>> kv.most_similar("king", topn=3)  # doctest: +SKIP
    [('queen', 0.71), ('prince', 0.66), ('monarch', 0.64)]
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np

from parvec.errors import ParvecError
from parvec.vocab_parts import WordParts

__all__ = ["BLOCK_ROWS", "ShardedKeyedVectors", "merge_top", "partial_scores", "top_of_block"]

BLOCK_ROWS = 1 << 16  # rows scored at a time


def partial_scores(columns: np.ndarray, query: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """One shard's part of rows ``lo .. hi-1``: their dot products with the query's same columns and their squared
    norms over those columns (float64), to be summed over the shards.

    Example:
        >>> partial_scores(np.array([[3.0, 0.0], [0.0, 2.0]], np.float32), np.array([1.0, 1.0]), 0, 2)
        (array([3., 2.]), array([9., 4.]))
    """
    block = np.asarray(columns[lo:hi], dtype=np.float64)
    return block @ query, np.einsum("ij,ij->i", block, block)


def top_of_block(dots: np.ndarray, sq_norms: np.ndarray, lo: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows of a block by cosine (``dots / norm``; a zero row scores 0): ``(ids, cosines)``.

    Example:
        >>> top_of_block(np.array([1.0, 3.0, 2.0]), np.array([1.0, 9.0, 16.0]), 10, 2)
        (array([10, 11]), array([1., 1.]))
    """
    norms = np.sqrt(sq_norms)
    cos = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    k = min(k, len(cos))
    idx = np.argpartition(-cos, k - 1)[:k] if k < len(cos) else np.arange(len(cos))
    return idx + lo, cos[idx]


def merge_top(found: list[tuple[np.ndarray, np.ndarray]], topn: int, exclude: set[int]) -> list[tuple[int, float]]:
    """The best ``topn`` of every block's candidates, by cosine, ties by id (as
    :class:`parvec.keyedvectors.KeyedVectors` orders them), ``exclude`` left out.

    Example:
        >>> merge_top([(np.array([4, 7]), np.array([0.5, 0.9]))], 1, set())
        [(7, 0.9)]
    """
    ids = np.concatenate([f[0] for f in found]) if found else np.zeros(0, np.int64)
    cos = np.concatenate([f[1] for f in found]) if found else np.zeros(0)
    order = np.lexsort((ids, -cos))
    out = [(int(ids[i]), float(cos[i])) for i in order.tolist() if int(ids[i]) not in exclude]
    return out[:topn]


class _Words(Sequence[str]):
    """``index_to_key`` of a sharded model: words read from the partitions when asked."""

    def __init__(self, parts: WordParts) -> None:
        self.parts = parts

    def __len__(self) -> int:
        return self.parts.n_words

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            lo, hi, step = i.indices(len(self))
            words = [w.decode("utf-8") for w in self.parts.words_between(lo, hi)] if hi > lo else []
            return words[::step]
        i = int(i) + (len(self) if int(i) < 0 else 0)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.parts.word(i)

    def __iter__(self) -> Iterator[str]:
        for lo in range(0, len(self), BLOCK_ROWS):
            yield from (w.decode("utf-8") for w in self.parts.words_between(lo, min(len(self), lo + BLOCK_ROWS)))


class ShardedKeyedVectors:
    """A sharded model's input vectors, memory-mapped column block by column block (module docstring): the query
    side of :class:`parvec.keyedvectors.KeyedVectors` (``most_similar``, ``similarity``, ``get_vector``,
    ``index_to_key``, ``get_index``, ``in``) without a copy of the matrix.

    Example:
        >>> kv = ShardedKeyedVectors.open("model")  # doctest: +SKIP
        >>> len(kv), kv.vector_size  # doctest: +SKIP
        (32000000, 8)
    """

    def __init__(self, columns: list[tuple[int, int, np.ndarray]], parts: WordParts, dim: int) -> None:
        self.columns = columns  # (first column, last + 1, memory map of the shard's in.npy)
        self.parts = parts
        self.dim = dim
        self.index_to_key = _Words(parts)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> ShardedKeyedVectors:
        """Open the sharded model directory ``path`` (its files memory-mapped; the shapes checked).

        Example:
            >>> ShardedKeyedVectors.open("not-a-model")  # doctest: +SKIP
            Traceback (most recent call last):
            parvec.errors.ParvecError: not-a-model: not a sharded model (no model.json naming shards and ...)
        """
        path = Path(path)
        try:
            meta = json.loads((path / "model.json").read_text(encoding="utf-8"))
            sharded = meta["sharded"]
            vocab = sharded["vocab"]
            dim = int(meta["config"]["dim"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ParvecError(f"{path}: not a sharded model (no model.json naming shards and vocabulary partitions: "
                              f"{exc})") from None
        parts = WordParts.open(path / vocab["directory"], vocab["parts"])
        columns = []
        for f in sharded["files"]:
            lo, hi = (int(x) for x in f["columns"])
            cols = np.load(Path(path) / f["directory"] / "in.npy", mmap_mode="r")
            if cols.shape != (parts.n_words, hi - lo):
                raise ParvecError(f"{path / f['directory'] / 'in.npy'}: shape {cols.shape}, model.json says "
                                  f"{(parts.n_words, hi - lo)}")
            columns.append((lo, hi, cols))
        return cls(columns, parts, dim)

    def __len__(self) -> int:
        return self.parts.n_words

    @property
    def vector_size(self) -> int:
        return self.dim

    def get_index(self, key: str | int, default: int | None = None) -> int:
        """The id of ``key`` (a word, or an id); ``default`` (else a KeyError) when it is not there."""
        if isinstance(key, Integral) and not isinstance(key, bool):
            if 0 <= int(key) < len(self):
                return int(key)
        elif isinstance(key, str):
            found = self.parts.index(key)
            if found is not None:
                return found
        if default is not None:
            return default
        raise KeyError(f"Key {key!r} not present")

    def has_index_for(self, key: object) -> bool:
        """Whether ``key`` is a word of the vocabulary."""
        return isinstance(key, str) and self.parts.index(key) is not None

    def __contains__(self, key: object) -> bool:
        return self.has_index_for(key)

    def get_vector(self, key: str | int, norm: bool = False) -> np.ndarray:
        """The vector of ``key``, assembled from its row in every shard's columns (unit length if ``norm``)."""
        i = self.get_index(key)
        v = np.empty(self.dim, dtype=np.float32)
        for lo, hi, cols in self.columns:
            v[lo:hi] = cols[i]
        if norm:
            n = float(np.linalg.norm(v))
            return v / n if n > 0 else v
        return v

    def __getitem__(self, key: str | int) -> np.ndarray:
        return self.get_vector(key)

    def similarity(self, w1: str, w2: str) -> float:
        """Cosine similarity of two words."""
        return float(np.dot(self.get_vector(w1, norm=True), self.get_vector(w2, norm=True)))

    def query(self, positive: Any = None, negative: Any = None) -> tuple[np.ndarray, set[int]]:
        """The unit query vector of ``positive`` minus ``negative`` (3CosAdd, as
        :meth:`parvec.keyedvectors.KeyedVectors.most_similar`) and the ids of the words in it."""
        def terms(items: Any, weight: float) -> list[tuple[Any, float]]:
            if items is None:
                return []
            items = [items] if isinstance(items, str | Integral | np.ndarray) else list(items)
            return [(it, weight) if isinstance(it, str | Integral | np.ndarray) else tuple(it) for it in items]

        parts, exclude = [], set()
        for term, weight in terms(positive, 1.0) + terms(negative, -1.0):
            if isinstance(term, np.ndarray):
                parts.append(weight * np.asarray(term, dtype=np.float64))
            else:
                parts.append(weight * self.get_vector(term, norm=True).astype(np.float64))
                exclude.add(self.get_index(term))
        if not parts:
            raise ValueError("cannot compute similarity with no input")
        mean = np.mean(parts, axis=0)
        n = float(np.linalg.norm(mean))
        return (mean / n if n > 0 else mean), exclude

    def most_similar(self, positive: Any = None, negative: Any = None, topn: int = 10,
                     restrict_vocab: int | None = None) -> list[tuple[str, float]]:
        """The ``topn`` words closest to ``positive`` minus ``negative``, from the shards' partial dot products and
        partial norms, one block of rows at a time (module docstring); the query's words left out."""
        if topn < 1:
            return []
        query, exclude = self.query(positive, negative)
        rows = len(self) if restrict_vocab is None else max(0, min(int(restrict_vocab), len(self)))
        found = []
        for lo in range(0, rows, BLOCK_ROWS):
            hi = min(rows, lo + BLOCK_ROWS)
            dots = np.zeros(hi - lo)
            sq = np.zeros(hi - lo)
            for c_lo, c_hi, cols in self.columns:
                d, s = partial_scores(cols, query[c_lo:c_hi], lo, hi)
                dots += d
                sq += s
            found.append(top_of_block(dots, sq, lo, topn + len(exclude)))
        return [(self.index_to_key[i], cos) for i, cos in merge_top(found, topn, exclude)]
