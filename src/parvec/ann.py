"""An approximate nearest-neighbour index for interactive queries: HNSW graphs by hnswlib (the ``[ann]`` extra).

``most_similar(word)`` reads every row (tens of milliseconds at a million words, minutes at hundreds of millions);
an HNSW graph (Malkov & Yashunin) answers from a few thousand of them.  hnswlib was chosen among faiss-cpu's HNSW,
usearch and Annoy by their build time, memory, recall@10 against the exact answer and queries per second on this
project's machine (``benchmarks/bench_ann.py``; the figures are in docs/benchmarks.md).

:func:`build_index` indexes a :class:`parvec.keyedvectors.KeyedVectors` or a sharded model's
:class:`parvec.sharded_vectors.ShardedKeyedVectors` (its unit rows, a block at a time), :func:`load_index` reads a
saved one back for the same vectors, and :class:`HnswIndexer` has gensim's indexer shape (``AnnoyIndexer``:
``most_similar(vector, num_neighbors)``), so ``kv.most_similar(word, topn=10, indexer=indexer)`` answers from the
index (the query's own words left out, as without it).  Scores are cosines (1 - hnswlib's inner-product distance).

Example:
    >>> indexer = build_index(kv)  # doctest: +SKIP
    >>> kv.most_similar("king", topn=3, indexer=indexer)  # doctest: +SKIP
    [('queen', 0.71), ('prince', 0.66), ('monarch', 0.64)]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from parvec.errors import ParvecError

__all__ = ["EXTRA", "HnswIndexer", "build_index", "load_index", "require_backend"]

EXTRA = "ann"
_BLOCK_ROWS = 65536  # rows added to the graph at a time


def require_backend() -> Any:
    """The ``hnswlib`` module; a :class:`parvec.errors.ParvecError` (exit 2) naming the ``[ann]`` extra when it is
    not installed.

    Example:
        >>> require_backend().__name__  # doctest: +SKIP
        'hnswlib'
    """
    try:
        import hnswlib
    except ImportError:
        raise ParvecError(f"the approximate index needs hnswlib, which is not installed: pip install "
                          f"'parvec[{EXTRA}]'") from None
    return hnswlib


class HnswIndexer:
    """An HNSW index of ``kv``'s unit rows (labels are row ids), with gensim's indexer surface:
    ``most_similar(vector, num_neighbors)`` gives ``[(key, cosine), ...]``, best first.  ``ef`` is the search's
    candidate list (higher: better recall, slower).

    Example:
        >>> HnswIndexer(index, kv).most_similar(kv["king"], 2)  # doctest: +SKIP
        [('king', 1.0), ('queen', 0.71)]
    """

    def __init__(self, index: Any, kv: Any, ef: int = 128) -> None:
        self.index, self.kv = index, kv
        self.ef = int(ef)

    @property
    def ef(self) -> int:
        """The search's candidate list."""
        return self._ef

    @ef.setter
    def ef(self, value: int) -> None:
        self._ef = int(value)
        self.index.set_ef(self._ef)

    def neighbour_ids(self, vector: np.ndarray, num_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """The ids and cosines of the ``num_neighbors`` rows the index finds nearest ``vector``, best first.

        Example:
            >>> indexer.neighbour_ids(kv["king"], 2)  # doctest: +SKIP
            (array([1234, 2045]), array([1.0, 0.71], dtype=float32))
        """
        v = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        norm = float(np.linalg.norm(v))
        k = max(1, min(int(num_neighbors), len(self.kv)))
        self.index.set_ef(max(self._ef, k))
        labels, distances = self.index.knn_query(v / norm if norm > 0 else v, k=k, num_threads=1)
        return labels[0].astype(np.int64), (1.0 - distances[0]).astype(np.float32)

    def most_similar(self, vector: np.ndarray, num_neighbors: int) -> list[tuple[str, float]]:
        """The ``num_neighbors`` keys nearest ``vector`` with their cosines (gensim's indexer interface).

        Example:
            >>> indexer.most_similar(kv["king"], 2)  # doctest: +SKIP
            [('king', 1.0), ('queen', 0.71)]
        """
        ids, scores = self.neighbour_ids(vector, num_neighbors)
        return list(zip(self.kv.keys_of(ids), scores.tolist(), strict=True))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to ``path`` (hnswlib's format).

        Example:
            >>> indexer.save("vectors.hnsw")  # doctest: +SKIP
        """
        self.index.save_index(str(path))


def build_index(kv: Any, m: int = 16, ef_construction: int = 100, ef: int = 128,
                threads: int | None = None) -> HnswIndexer:
    """An HNSW index of ``kv``'s unit rows (``m`` links a node, ``ef_construction`` candidates while building, on
    ``threads`` threads: every CPU by default), added a block of rows at a time (a sharded model's are assembled
    from its shards, never gathered whole).

    Example:
        >>> indexer = build_index(kv, m=16)  # doctest: +SKIP
    """
    hnswlib = require_backend()
    n = len(kv)
    if n == 0:
        raise ParvecError("cannot index an empty set of vectors")
    index = hnswlib.Index(space="ip", dim=int(kv.vector_size))
    index.init_index(max_elements=n, M=int(m), ef_construction=int(ef_construction), random_seed=100)
    for lo in range(0, n, _BLOCK_ROWS):
        hi = min(n, lo + _BLOCK_ROWS)
        rows = np.ascontiguousarray(kv.get_rows(slice(lo, hi), norm=True), dtype=np.float32)
        if not np.isfinite(rows).all():
            bad = lo + int(np.flatnonzero(~np.isfinite(rows).all(axis=1))[0])
            raise ParvecError(f"the vectors are damaged: row {bad} holds NaN or infinite values")
        index.add_items(rows, np.arange(lo, hi), num_threads=-1 if threads is None else int(threads))
    return HnswIndexer(index, kv, ef)


def load_index(path: str | os.PathLike[str], kv: Any, ef: int = 128) -> HnswIndexer:
    """The index ``parvec index`` (or :meth:`HnswIndexer.save`) wrote at ``path``, for the vectors ``kv`` it was
    built from; an index of another number of vectors or dimension is a :class:`parvec.errors.ParvecError`.

    Example:
        >>> indexer = load_index("vectors.hnsw", kv)  # doctest: +SKIP
    """
    hnswlib = require_backend()
    if not Path(path).is_file():
        raise ParvecError(f"{path}: no such index file")
    index = hnswlib.Index(space="ip", dim=int(kv.vector_size))
    try:
        index.load_index(str(path), max_elements=len(kv))
    except (RuntimeError, ValueError, MemoryError) as exc:
        raise ParvecError(f"{path}: not an index of these vectors ({len(kv):,} x {kv.vector_size}): {exc}") from None
    if index.get_current_count() != len(kv):
        raise ParvecError(f"{path}: an index of {index.get_current_count():,} vectors, not of these {len(kv):,}")
    return HnswIndexer(index, kv, ef)
