"""Exact nearest neighbours of many words at once: one pass over the matrix for a batch of queries.

``most_similar(word)`` reads the whole matrix for one word (a matrix-vector product: memory bound).  For many words
(the paper's use: the 30 nearest ads of each of millions of queries) :func:`top_k` reads the searched rows a block at
a time, once for the whole batch: each block of unit rows meets a chunk of unit queries in one matrix product
(numpy's BLAS, on every core), and a compiled kernel (:func:`_merge`, its queries spread over the cores) keeps each
query's best ``topn`` in a heap, passing over a score at one comparison unless it beats the query's worst kept one.
Memory: one block of rows, one chunk's scores and the heaps (12 bytes per query and neighbour), whatever the
number of rows.

The answers are ``most_similar(word, topn)``'s: cosines of unit rows, the query word left out, ordered by score and
ties by id (the scores come from a matrix product instead of a matrix-vector one, so they may differ from
``most_similar``'s in the last bit of float32).  :meth:`parvec.keyedvectors.KeyedVectors.most_similar_batch` and
:meth:`parvec.sharded_vectors.ShardedKeyedVectors.most_similar_batch` are its front ends, ``parvec neighbours`` the
command.

Example:
    >>> rows = np.array([[1, 0], [0.8, 0.6], [0, 1]], np.float32)
    >>> found = top_k(rows[[0]], lambda lo, hi: rows[lo:hi], 3, 2, np.array([0]))
    >>> found.ids.tolist(), found.scores.round(2).tolist()
    ([[1, 2]], [[0.8, 0.0]])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numba as nb
import numpy as np

from parvec.similarity import unit_rows

__all__ = ["BLOCK_ROWS", "QUERY_CHUNK", "TopK", "most_similar_batch", "neighbour_ids", "query_rows", "top_k"]

BLOCK_ROWS = 16384  # rows of the matrix scored at a time (at most)
QUERY_CHUNK = 1024  # queries meeting a block in one matrix product (at most): their scores are chunk x block floats
_NONE = np.iinfo(np.int64).max  # the id of an empty heap slot (worse than any row)


@dataclass(frozen=True)
class TopK:
    """Each query's best rows: ``ids`` (``[queries, topn]`` int64, -1 where fewer rows were searched) and their
    cosines ``scores`` (float32, NaN where the id is -1), best first, ties by id.

    Example:
        >>> TopK(np.array([[2, -1]]), np.array([[0.5, np.nan]], np.float32)).ids.shape
        (1, 2)
    """

    ids: np.ndarray
    scores: np.ndarray


@nb.njit(cache=True, nogil=True, parallel=True)
def _merge(scores: np.ndarray, lo: np.int64, exclude: np.ndarray, heap_s: np.ndarray,  # pragma: no cover - numba
           heap_i: np.ndarray, q0: np.int64) -> int:
    """Offer the scores of rows ``lo ..`` (``scores[r, j]``: query ``q0 + r``, row ``lo + j``) to each query's heap
    (``heap_s``/``heap_i``, root = its worst kept row: the lowest score, of equal scores the highest id); the row
    ``exclude[q]`` is passed over.  Returns how many scores were not numbers (a damaged row)."""
    n_q, n_rows = scores.shape
    k = heap_s.shape[1]
    bad = 0
    for r in nb.prange(n_q):
        q = q0 + r
        hs = heap_s[q]
        hi = heap_i[q]
        ex = exclude[q]
        for j in range(n_rows):
            s = scores[r, j]
            if s < hs[0]:
                continue
            if s != s:
                bad += 1
                continue
            row = lo + j
            if (s == hs[0] and row > hi[0]) or row == ex:
                continue
            # replace the root and sift it down: a child worse than the new entry moves up
            i = 0
            while True:
                c = 2 * i + 1
                if c >= k:
                    break
                if c + 1 < k and (hs[c + 1] < hs[c] or (hs[c + 1] == hs[c] and hi[c + 1] > hi[c])):
                    c += 1
                if hs[c] < s or (hs[c] == s and hi[c] > row):
                    hs[i] = hs[c]
                    hi[i] = hi[c]
                    i = c
                else:
                    break
            hs[i] = s
            hi[i] = row
    return bad


def query_rows(normed: np.ndarray) -> np.ndarray:
    """Unit query vectors from unit rows, formed as ``most_similar`` forms one word's query (scaled again in
    float64, then float32).

    Example:
        >>> query_rows(np.array([[0.6, 0.8]], np.float32)).dtype
        dtype('float32')
    """
    return unit_rows(np.asarray(normed, dtype=np.float64)).astype(np.float32)


def top_k(queries: np.ndarray, rows: Callable[[int, int], np.ndarray], n_rows: int, topn: int,
          exclude: np.ndarray | None = None) -> TopK:
    """The ``topn`` rows of ``0 .. n_rows-1`` with the highest dot product with each of ``queries`` (unit float32,
    ``[q, dim]``): ``rows(lo, hi)`` gives rows ``lo .. hi-1`` at unit length (float32), each read once;
    ``exclude[q]`` is a row left out of query ``q``'s answer (-1: none).  A score that is not a number (a row
    holding NaN or an infinity) raises ``ValueError`` naming the rows.

    Example:
        >>> rows = np.eye(3, dtype=np.float32)
        >>> top_k(rows, lambda lo, hi: rows[lo:hi], 3, 1).ids.tolist()
        [[0], [1], [2]]
    """
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    n_q = len(queries)
    k = max(1, int(topn))
    exclude = np.full(n_q, -1, np.int64) if exclude is None else np.asarray(exclude, dtype=np.int64)
    heap_s = np.full((n_q, k), -np.inf, dtype=np.float32)
    heap_i = np.full((n_q, k), _NONE, dtype=np.int64)
    for lo in range(0, n_rows, BLOCK_ROWS):
        hi = min(n_rows, lo + BLOCK_ROWS)
        block_t = np.ascontiguousarray(rows(lo, hi), dtype=np.float32).T
        for q0 in range(0, n_q, QUERY_CHUNK):
            scores = queries[q0:q0 + QUERY_CHUNK] @ block_t
            if _merge(scores, np.int64(lo), exclude, heap_s, heap_i, np.int64(q0)):
                raise ValueError(f"rows {lo}..{hi - 1} hold NaN or infinite values (a damaged vector)")
    order = np.lexsort((heap_i, -heap_s), axis=-1)
    ids = np.take_along_axis(heap_i, order, axis=-1)
    scores = np.take_along_axis(heap_s, order, axis=-1)
    empty = ids == _NONE
    ids[empty] = -1
    scores[empty] = np.nan
    return TopK(ids[:, :topn], scores[:, :topn])


class _Vectors(Protocol):
    def __len__(self) -> int: ...

    def get_index(self, key: Any, default: int | None = None) -> int: ...

    def get_rows(self, rows: Any, norm: bool = False) -> np.ndarray: ...

    def keys_of(self, ids: np.ndarray) -> list[str]: ...


def neighbour_ids(kv: _Vectors, ids: np.ndarray, topn: int, restrict_vocab: int | None = None,
                  candidates: np.ndarray | None = None) -> TopK:
    """The ``topn`` nearest rows of each row ``ids`` of ``kv`` (a :class:`parvec.keyedvectors.KeyedVectors` or a
    :class:`parvec.sharded_vectors.ShardedKeyedVectors`), each query's own row left out, among the first
    ``restrict_vocab`` rows, or among the rows ``candidates`` (ids): :func:`top_k` over ``kv.get_rows(..., norm=True)``,
    one pass over the searched rows.  Ids and scores as :class:`TopK` (row ids of ``kv``).

    Example:
        >>> from parvec.keyedvectors import KeyedVectors
        >>> kv = KeyedVectors(np.array([[1, 0], [0.8, 0.6], [0, 1]], np.float32), ["a", "b", "c"])
        >>> neighbour_ids(kv, np.array([0, 2]), 1).ids.tolist()
        [[1], [1]]
    """
    ids = np.asarray(ids, dtype=np.int64)
    searched = len(kv) if restrict_vocab is None else max(0, min(int(restrict_vocab), len(kv)))
    queries = query_rows(kv.get_rows(ids, norm=True))
    if candidates is None:
        return top_k(queries, lambda lo, hi: kv.get_rows(slice(lo, hi), norm=True), searched, topn, ids)
    cand = np.unique(np.asarray(candidates, dtype=np.int64))  # in id order: ties go by id
    cand = cand[cand < searched]
    exclude = np.full(len(ids), -1, dtype=np.int64)
    if len(cand):
        at = np.minimum(np.searchsorted(cand, ids), len(cand) - 1)
        exclude = np.where(cand[at] == ids, at, -1)
    found = top_k(queries, lambda lo, hi: kv.get_rows(cand[lo:hi], norm=True), len(cand), topn, exclude)
    mapped = np.full_like(found.ids, -1)
    ok = found.ids >= 0
    mapped[ok] = cand[found.ids[ok]]
    return TopK(mapped, found.scores)


def most_similar_batch(kv: _Vectors, words: Sequence[Any], topn: int = 10, restrict_vocab: int | None = None,
                       candidates: Sequence[Any] | None = None) -> list[list[tuple[str, float]]]:
    """``[kv.most_similar(w, topn=topn, restrict_vocab=...) for w in words]`` in one pass over the searched rows
    (:func:`neighbour_ids`); ``candidates`` (keys) limits the rows searched to theirs.  An unknown word raises
    ``KeyError`` naming it (as ``most_similar`` does).

    Example:
        >>> from parvec.keyedvectors import KeyedVectors
        >>> kv = KeyedVectors(np.array([[1, 0], [0.8, 0.6], [0, 1]], np.float32), ["a", "b", "c"])
        >>> [[w for w, _ in ns] for ns in most_similar_batch(kv, ["a", "c"], topn=1)]
        [['b'], ['b']]
    """
    if topn < 1 or not len(words):
        return [[] for _ in words]
    ids = np.array([kv.get_index(w) for w in words], dtype=np.int64)
    cand = None if candidates is None else np.array([kv.get_index(w) for w in candidates], dtype=np.int64)
    found = neighbour_ids(kv, ids, int(topn), restrict_vocab, cand)
    used = np.unique(found.ids[found.ids >= 0])
    names = dict(zip(used.tolist(), kv.keys_of(used), strict=True))
    return [[(names[i], float(s)) for i, s in zip(row_ids.tolist(), row_scores.tolist(), strict=True) if i >= 0]
            for row_ids, row_scores in zip(found.ids, found.scores, strict=True)]
