"""Nearest words of a sharded model computed on the cluster: ``parvec similar MODEL WORD --cluster SPEC``.

The model's vectors stay in its shards' column files (the sharded model format,
:mod:`parvec.sharded_vectors`).  The rows are cut into blocks; for each block a Ray task per shard computes that
shard's **partial dot products** with the query's same columns and its **partial squared norms**
(:func:`parvec.sharded_vectors.partial_scores`), and a task per block sums the shards' parts and keeps the block's
best words (:func:`parvec.sharded_vectors.top_of_block`).  The partial sums go from task to task through Ray's
object store; this process receives the query words' rows (to form the query) and ``topn`` candidates per block,
never the matrix.  The ranking is the gathered vectors' (:class:`parvec.keyedvectors.KeyedVectors`).

Example:
    >>> with Cluster("local:2").session() as ray:  # doctest: +SKIP
    ...     cluster_most_similar(ray, "model", ["king"], topn=3)
    [('queen', 0.71), ('prince', 0.66), ('monarch', 0.64)]
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from parvec.errors import ParvecError
from parvec.sharded_vectors import BLOCK_ROWS, ShardedKeyedVectors, merge_top, partial_scores, top_of_block

__all__ = ["cluster_most_similar"]


def _partial(path: str, query: np.ndarray, lo: int, hi: int, model: str) -> tuple[np.ndarray, np.ndarray]:
    # Task: one shard's partial dot products and squared norms of rows lo..hi-1 (its in.npy memory-mapped); a row
    # holding NaN or an infinity is the model's damage, named, never a score.
    dots, sq = partial_scores(np.load(path, mmap_mode="r"), query, lo, hi)
    finite = np.isfinite(sq)
    if not finite.all():
        row = lo + int(np.flatnonzero(~finite)[0])
        raise ParvecError(f"{model}: the model is damaged: row {row} holds NaN or infinite values in {path}; "
                          f"`parvec verify {model}` checks every file against model.json's CRC-32s")
    return dots, sq


def _reduce(lo: int, k: int, *partials: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    # Task: the shards' parts of one block summed, its best k rows.
    dots = np.sum([p[0] for p in partials], axis=0)
    sq = np.sum([p[1] for p in partials], axis=0)
    return top_of_block(dots, sq, lo, k)


def cluster_most_similar(ray: Any, model: ShardedKeyedVectors | str | os.PathLike[str], positive: Any = None,
                         negative: Any = None, topn: int = 10, timeout_s: float = 300.0) -> list[tuple[str, float]]:
    """The ``topn`` words of the sharded model ``model`` (opened, or its directory) closest to ``positive`` minus
    ``negative`` (3CosAdd, the query's words left out), computed by Ray tasks from the shards' partial dot products
    and norms (module docstring).

    Example:
        >>> cluster_most_similar(ray, "model", ["paris", "germany"], ["france"], topn=1)  # doctest: +SKIP
        [('berlin', 0.74)]
    """
    kv = model if isinstance(model, ShardedKeyedVectors) else ShardedKeyedVectors.open(model)
    query, exclude = kv.query(positive, negative)
    n = len(kv)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    block = max(BLOCK_ROWS, -(-n // (4 * cpus)))
    k = topn + len(exclude)
    partial = ray.remote(num_cpus=1, max_retries=2)(_partial)
    reduce = ray.remote(num_cpus=1, max_retries=2)(_reduce)
    refs = []
    for r_lo in range(0, n, block):
        r_hi = min(n, r_lo + block)
        parts = [partial.remote(str(c.file), query[c.lo:c.hi].astype(np.float64), r_lo, r_hi, str(kv.path))
                 for c in kv.columns]
        refs.append(reduce.remote(r_lo, k, *parts))
    try:
        found = ray.get(refs, timeout=timeout_s * max(1, len(refs)))
    except ray.exceptions.RayError as exc:
        cause = getattr(exc, "cause", exc)
        if isinstance(cause, ParvecError):
            raise ParvecError(str(cause)) from None
        raise ParvecError(f"the query on the cluster failed: {cause}") from None
    return [(kv.index_to_key[i], cos) for i, cos in merge_top(list(found), topn, exclude)]
