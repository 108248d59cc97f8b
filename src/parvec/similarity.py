"""The arithmetic of similarity queries, shared by :class:`parvec.keyedvectors.KeyedVectors` (a matrix in memory)
and :class:`parvec.sharded_vectors.ShardedKeyedVectors` (a sharded model's rows, a block at a time): forming a
query from keys and vectors (:func:`cosadd_query`), scaling rows to unit length (:func:`unit_rows`) and 3CosMul's
scores (:func:`cosmul_scores`).  A row's result depends on that row alone, so both answer alike.

Example:
    >>> unit_rows(np.array([[3, 4]], dtype=np.float32)).tolist()
    [[0.6000000238418579, 0.800000011920929]]
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any, Protocol

import numpy as np

__all__ = ["as_query_list", "cosadd_query", "cosmul_query", "cosmul_scores", "indexed_answer", "unit_rows",
           "unit_vector"]


def as_query_list(items: Any) -> list[Any]:
    """The terms of a query: None -> [], a single key or vector -> [it], anything else -> list(items).

    Example:
        >>> as_query_list("king"), as_query_list(None), as_query_list(("a", "b"))
        (['king'], [], ['a', 'b'])
    """
    if items is None:
        return []
    if isinstance(items, str | Integral) or (isinstance(items, np.ndarray) and items.ndim == 1):
        return [items]
    return list(items)


def _with_weights(items: list[Any], weight: float) -> list[tuple[Any, float]]:
    # gensim accepts (key, weight) pairs next to plain keys and vectors.
    return [(it, weight) if isinstance(it, str | Integral | np.ndarray) else tuple(it) for it in items]


def unit_vector(v: np.ndarray) -> np.ndarray:
    """``v`` scaled to unit length (a zero vector stays zero).

    Example:
        >>> unit_vector(np.array([3.0, 4.0])).tolist()
        [0.6, 0.8]
    """
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def unit_rows(rows: np.ndarray, norms: np.ndarray | None = None) -> np.ndarray:
    """The rows of ``rows`` (``[n, dim]``) scaled to unit length, in their dtype (all-zero rows stay zero);
    ``norms`` are their L2 norms when already known.  A row's result depends on that row alone, so a block of
    rows gives the same values as the whole matrix (what :class:`parvec.sharded_vectors.ShardedKeyedVectors`
    relies on to answer as the gathered vectors do).

    Example:
        >>> unit_rows(np.array([[3, 4], [0, 0]], dtype=np.float32)).tolist()
        [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    if norms is None:
        norms = np.linalg.norm(rows, axis=1)
    safe = np.where(norms > 0, norms, 1).astype(rows.dtype)
    unit: np.ndarray = rows / safe[:, None]
    return unit


def cosmul_scores(normed: np.ndarray, positive: Sequence[np.ndarray], negative: Sequence[np.ndarray]) -> np.ndarray:
    """3CosMul of unit rows ``normed`` for unit query vectors: ``prod((1+cos(x,p))/2) / (prod((1+cos(x,n))/2) +
    1e-6)``, in ``normed``'s dtype (:meth:`parvec.keyedvectors.KeyedVectors.most_similar_cosmul`; a block of rows at a
    time for a sharded model).

    Example:
        >>> cosmul_scores(np.eye(2, dtype=np.float32), [np.array([1, 0], np.float32)], []).round(3).tolist()
        [1.0, 0.5]
    """
    dists = np.ones(len(normed), dtype=np.float64)
    for v in positive:
        dists *= (1.0 + normed @ v) / 2.0
    denom = np.ones(len(normed), dtype=np.float64)
    for v in negative:
        denom *= (1.0 + normed @ v) / 2.0
    return (dists / (denom + 1e-6)).astype(normed.dtype)


class _Lookup(Protocol):
    def get_index(self, key: Any, default: int | None = None) -> int: ...

    def get_vector(self, key: Any, norm: bool = False) -> np.ndarray: ...


def cosadd_query(kv: _Lookup, positive: Any, negative: Any, dtype: Any = np.float32) -> tuple[np.ndarray, set[int]]:
    """The query of :meth:`parvec.keyedvectors.KeyedVectors.most_similar` (3CosAdd): the unit mean of ``positive``
    minus ``negative`` (keys unit-normalised, raw vectors as given, ``(term, weight)`` pairs weighted), in ``dtype``,
    and the rows of the keys in it (left out of the answer).  ``kv`` is any set of vectors with ``get_index`` and
    ``get_vector``.

    Example:
        >>> from parvec.keyedvectors import KeyedVectors
        >>> kv = KeyedVectors(np.array([[2, 0], [0, 1]], dtype=np.float32), ["a", "b"])
        >>> q, exclude = cosadd_query(kv, ["a", "b"], None); [round(float(x), 4) for x in q], exclude
        ([0.7071, 0.7071], {0, 1})
    """
    terms = _with_weights(as_query_list(positive), 1.0) + _with_weights(as_query_list(negative), -1.0)
    if not terms:
        raise ValueError("cannot compute similarity with no input")
    exclude: set[int] = set()
    parts = []
    for term, weight in terms:
        if isinstance(term, np.ndarray):
            parts.append(weight * np.asarray(term, dtype=np.float64))
        else:
            parts.append(weight * kv.get_vector(term, norm=True).astype(np.float64))
            exclude.add(kv.get_index(term))
    return unit_vector(np.mean(parts, axis=0)).astype(dtype), exclude


def cosmul_query(kv: _Lookup, positive: Any, negative: Any,
                 dtype: Any = np.float32) -> tuple[list[np.ndarray], list[np.ndarray], set[int]]:
    """The terms of :meth:`parvec.keyedvectors.KeyedVectors.most_similar_cosmul` (3CosMul): the unit vectors of
    ``positive`` and of ``negative`` (keys from ``kv``, raw vectors normalised), in ``dtype``, and the rows of the
    keys in them (left out of the answer).

    Example:
        >>> from parvec.keyedvectors import KeyedVectors
        >>> kv = KeyedVectors(np.array([[2, 0], [0, 1]], dtype=np.float32), ["a", "b"])
        >>> pos, neg, exclude = cosmul_query(kv, ["a"], "b"); pos[0].tolist(), neg[0].tolist(), exclude
        ([1.0, 0.0], [0.0, 1.0], {0, 1})
    """
    pos, neg = as_query_list(positive), as_query_list(negative)
    if not pos:
        raise ValueError("cannot compute similarity with no input")
    exclude: set[int] = set()

    def unit_term(term: Any) -> np.ndarray:
        if isinstance(term, np.ndarray):
            return unit_vector(np.asarray(term, dtype=np.float64)).astype(dtype)
        exclude.add(kv.get_index(term))
        return kv.get_vector(term, norm=True)

    return [unit_term(t) for t in pos], [unit_term(t) for t in neg], exclude


def indexed_answer(indexer: Any, keys_of: Any, query: np.ndarray, topn: int,
                   exclude: set[int]) -> list[tuple[str, float]]:
    """``most_similar(..., indexer=indexer)``'s answer: the ``topn`` keys an approximate index (gensim's indexer
    shape: ``indexer.most_similar(vector, num_neighbors)``, e.g. :class:`parvec.ann.HnswIndexer`) finds nearest
    ``query``, the rows ``exclude`` (the query's words; ``keys_of`` names them) left out.

    Example:
        >>> class Exact:
        ...     def most_similar(self, v, k): return [("a", 1.0), ("b", 0.5)][:k]
        >>> indexed_answer(Exact(), lambda ids: ["a" for _ in ids], np.zeros(2), 1, {0})
        [('b', 0.5)]
    """
    left_out = set(keys_of(sorted(exclude))) if exclude else set()
    found = indexer.most_similar(query, int(topn) + len(exclude))
    return [(key, float(score)) for key, score in found if key not in left_out][:int(topn)]
