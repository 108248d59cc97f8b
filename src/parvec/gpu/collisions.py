"""What FULL-W2V's concurrent blocks collide on in the Hogwild model, and the writers' scale that undoes it.

:func:`parvec.gpu.reference.hogwild_train` runs the resident sentences' centers in lockstep: in a tick every
center reads its outputs' rows (the center's own output row, label 1, and its negatives') and, at once, writes
their changes back; an input row is read when its position enters a block's ring and written ``2 window + 1``
centers later, when it leaves.  A read *collides* when another block writes the same row before this block's
write: for an output row, another block holding it in the same tick; for an input row, another block holding it
in its ring when this block adds its change back.  :func:`count_outputs` counts the blocks holding each output
row in a tick (a block counts once, however many of its outputs name the row), :func:`record_outputs` and
:func:`record_inputs` tally the collisions in a table of ``[kind, frequency bucket, field]`` (kinds
:data:`OUT_POSITIVE`, :data:`OUT_NEGATIVE`, :data:`INPUT`; fields: rows written, rows written that another block
held, the other blocks summed), and :func:`writers_scale` is the concurrent-writers scale of the option
``gpu_writers_cap``: each block's change of an output row times ``min(1, cap / c)``, ``c`` the blocks holding that
row at once that have not yet written it, this one included (:func:`scaled_output_writes`), and each change of an
input row leaving a block's ring the same way, ``c`` the other blocks' copies of the row in their rings plus one
(:func:`scaled_ring_flushes`); 1 when a block runs alone, so the sequential order is unchanged.  The model can
also scale by ``(cap / c) ** p`` and leave the input rows whole, the alternatives docs/gpu.md measures.

Example:
    >>> buckets = frequency_buckets(np.array([50, 40, 30, 3]), (1, 2))
    >>> buckets.tolist()
    [0, 1, 2, 2]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from parvec.kernels.fastmath import FASTMATH

OUT_POSITIVE, OUT_NEGATIVE, INPUT = 0, 1, 2
KINDS = ("output rows, positive (the center's)", "output rows, negatives", "input rows (contexts, the ring)")
BUCKETS = (10, 100)  # frequency ranks: the top 10 words, the next 90, the rest
_ONE = np.float32(1.0)


def frequency_buckets(counts: np.ndarray, edges: tuple[int, ...] = BUCKETS) -> np.ndarray:
    """Each word's frequency bucket: 0 for the ``edges[0]`` most frequent words, 1 for the next up to
    ``edges[1]``, .., ``len(edges)`` for the rest (ties by word index).

    Example:
        >>> frequency_buckets(np.array([1, 9, 5]), (1,)).tolist()
        [1, 0, 1]
    """
    rank = np.empty(len(counts), dtype=np.int64)
    rank[np.argsort(-np.asarray(counts), kind="stable")] = np.arange(len(counts))
    return np.searchsorted(np.asarray(edges), rank, side="right").astype(np.int64)


def empty_table(n_buckets: int = len(BUCKETS) + 1) -> np.ndarray:
    """A zeroed collision table: ``[kind, bucket, field]`` int64.

    Example:
        >>> empty_table().shape
        (3, 3, 3)
    """
    return np.zeros((len(KINDS), n_buckets, 3), dtype=np.int64)


@njit(inline="always")
def _first(outs: np.ndarray, valid: np.ndarray, k: int) -> bool:
    """Whether output ``k`` is valid and the first of its block's outputs naming its row."""
    if not valid[k]:
        return False
    for j in range(k):
        if valid[j] and outs[j] == outs[k]:
            return False
    return True


@njit(cache=True)
def count_outputs(steps: np.ndarray, outs: np.ndarray, valid: np.ndarray, cnt: np.ndarray, sign: int) -> None:
    """Adds ``sign`` to ``cnt[row]`` for every output row held by a block whose step is in ``steps`` (once per
    block and row).

    Example:
        >>> count_outputs(starts, outs, valid, cnt, 1)  # doctest: +SKIP
    """
    for q in range(len(steps)):
        if steps[q]:
            for k in range(outs.shape[1]):
                if _first(outs[q], valid[q], k):
                    cnt[outs[q, k]] += sign


@njit(cache=True)
def record_outputs(steps: np.ndarray, outs: np.ndarray, valid: np.ndarray, cnt: np.ndarray, bucket: np.ndarray,
                   table: np.ndarray) -> None:
    """Tallies the tick's output rows (``cnt`` from :func:`count_outputs`) into ``table``.

    Example:
        >>> record_outputs(starts, outs, valid, cnt, bucket, table)  # doctest: +SKIP
    """
    for q in range(len(steps)):
        if steps[q]:
            for k in range(outs.shape[1]):
                if _first(outs[q], valid[q], k):
                    r = outs[q, k]
                    kind = OUT_POSITIVE if k == 0 else OUT_NEGATIVE
                    b = bucket[r]
                    table[kind, b, 0] += 1
                    if cnt[r] > 1:
                        table[kind, b, 1] += 1
                        table[kind, b, 2] += cnt[r] - 1


@njit(cache=True)
def ring_enter(sent: np.ndarray, n: int, i: int, window: int, held: np.ndarray) -> None:
    """Counts the input rows entering a block's ring at center ``i`` as held.

    Example:
        >>> ring_enter(sent, n, 0, 5, held)  # doctest: +SKIP
    """
    if i == 0:
        for p in range(min(window + 1, n)):
            held[sent[p]] += 1
    elif i + window < n:
        held[sent[i + window]] += 1


@njit(inline="always")
def _record_leave(sent: np.ndarray, n: int, i: int, window: int, p: int, held: np.ndarray, bucket: np.ndarray,
                  table: np.ndarray) -> None:
    r = sent[p]
    own = 0
    for j in range(max(0, i - window), min(n, i + window + 1)):
        if sent[j] == r:
            own += 1
    other = held[r] - own
    b = bucket[r]
    table[INPUT, b, 0] += 1
    if other > 0:
        table[INPUT, b, 1] += 1
        table[INPUT, b, 2] += other


@njit(cache=True)
def record_inputs(sent: np.ndarray, n: int, i: int, window: int, held: np.ndarray, bucket: np.ndarray,
                  table: np.ndarray, release: bool) -> None:
    """Tallies the input rows leaving a block's ring after center ``i`` (another block holding the row in its
    ring then has read it before this change) into ``table``, and with ``release`` counts them as no longer held.

    Example:
        >>> record_inputs(sent, n, 5, 5, held, bucket, table, True)  # doctest: +SKIP
    """
    if i - window >= 0:
        _record_leave(sent, n, i, window, i - window, held, bucket, table)
    if i == n - 1:
        for p in range(max(0, n - window), n):
            _record_leave(sent, n, i, window, p, held, bucket, table)
    if not release:  # (scaled_ring_flushes counts them down)
        return
    if i - window >= 0:
        held[sent[i - window]] -= 1
    if i == n - 1:
        for p in range(max(0, n - window), n):
            held[sent[p]] -= 1


@njit(inline="always")
def writers_scale(c: int, power: float, cap: int) -> np.float32:
    """The concurrent-writers scale ``(cap / c) ** power`` of a row ``c`` blocks hold at once, 1 for ``c <= cap``.

    Example:
        >>> writers_scale(32, 1.0, 8)  # doctest: +SKIP
        0.25
    """
    if c <= cap or power == 0.0:
        return _ONE
    if power == 1.0:  # the kernel's (parvec.gpu.blocks.make_window_pass)
        return np.float32(cap) / np.float32(c)
    return np.float32((np.float64(cap) / np.float64(c)) ** power)


@njit(inline="always")
def add_change(rows: np.ndarray, row: int, new: np.ndarray, old: np.ndarray, k: int, scale: np.float32) -> None:
    """``rows[row] += (new[k] - old[k]) * scale``, the change whole (no multiply) when ``scale`` is 1: how the
    model adds a block's change of an output row or of a ring row back (:func:`parvec.gpu.reference.center_writes`).

    Example:
        >>> add_change(w_out, 3, cur, cur0, 0, np.float32(1))  # doctest: +SKIP
    """
    if scale == _ONE:
        for d in range(rows.shape[1]):
            rows[row, d] += new[k, d] - old[k, d]
    else:
        for d in range(rows.shape[1]):
            rows[row, d] += (new[k, d] - old[k, d]) * scale


@njit(cache=True, fastmath=FASTMATH)
def scaled_output_writes(w_out: np.ndarray, outs: np.ndarray, valid: np.ndarray, cur: np.ndarray, cur0: np.ndarray,
                         cnt: np.ndarray, power: float, cap: int, scale: np.ndarray) -> None:
    """A block's output rows' changes added to ``w_out``, each times :func:`writers_scale` of ``cnt[row]``, the
    blocks holding the row that have not yet written it (this one included), which then counts one fewer: what
    the kernel's atomic decrement of its per-row count returns.  In a tick of the model the blocks holding a row
    write it one after the other, so with ``c`` of them the scales are ``c ** -p, (c - 1) ** -p, .., 1``.
    ``scale``: scratch of ``len(outs)`` floats.

    Example:
        >>> scaled_output_writes(w_out, outs, valid, cur, cur0, cnt, 1.0, 8, scale)  # doctest: +SKIP
    """
    for k in range(outs.shape[0]):
        if valid[k]:
            first = k
            for j in range(k):
                if valid[j] and outs[j] == outs[k]:
                    first = j
                    break
            if first == k:  # the block's first output naming the row: the count's value, then one holder fewer
                scale[k] = writers_scale(cnt[outs[k]], power, cap)
                cnt[outs[k]] -= 1
            else:
                scale[k] = scale[first]
            add_change(w_out, outs[k], cur, cur0, k, scale[k])


@njit(inline="always")
def _scaled_flush(w_in: np.ndarray, sent: np.ndarray, p: int, hi: int, ring: np.ndarray, orig: np.ndarray,
                  held: np.ndarray, power: float, cap: int) -> None:
    r = sent[p]
    own = 0  # this block's copies of the row still in its ring (positions p .. hi - 1): one holder
    for j in range(p, hi):
        if sent[j] == r:
            own += 1
    s = writers_scale(held[r] - own + 1, power, cap)
    held[r] -= 1
    add_change(w_in, r, ring, orig, p % ring.shape[0], s)


@njit(cache=True, fastmath=FASTMATH)
def scaled_ring_flushes(w_in: np.ndarray, sent: np.ndarray, n: int, i: int, window: int, ring: np.ndarray,
                        orig: np.ndarray, held: np.ndarray, power: float, cap: int) -> None:
    """The input rows leaving a block's ring after center ``i`` (as
    :func:`parvec.gpu.reference.center_writes` adds them back), each change times :func:`writers_scale` of the
    other blocks' copies of the row in their rings plus one (``held[row]`` counts every copy not yet added back;
    this block's copies still in its ring are not others'), which then counts one copy fewer: what the kernel's
    atomic decrement of its per-row count returns.

    Example:
        >>> scaled_ring_flushes(w_in, sent, n, 5, 5, ring, orig, held, 1.0, 8)  # doctest: +SKIP
    """
    hi = min(n, i + window + 1)
    if i - window >= 0:
        _scaled_flush(w_in, sent, i - window, hi, ring, orig, held, power, cap)
    if i == n - 1:
        for p in range(max(0, n - window), n):
            _scaled_flush(w_in, sent, p, hi, ring, orig, held, power, cap)


@dataclass
class CollisionTable:
    """A model run's collisions (:func:`parvec.gpu.reference.hogwild_train` with ``collisions=True``), summed
    over its epochs: ``table[kind, bucket, field]`` as the module docstring says, and the lockstep ticks."""

    table: np.ndarray
    ticks: int

    def rows(self) -> list[dict[str, float | str]]:
        """Per kind and frequency bucket: rows written per tick, the share another block held, and the other
        blocks holding it on average when one did.

        Example:
            >>> CollisionTable(empty_table(), 1).rows()[0]["kind"]
            "output rows, positive (the center's)"
        """
        names = [f"top {BUCKETS[0]}"] + [f"{a + 1}-{b}" for a, b in zip(BUCKETS, BUCKETS[1:], strict=False)] + ["rest"]
        out: list[dict[str, float | str]] = []
        for k, kind in enumerate(KINDS):
            for b, name in enumerate(names):
                n, hit, others = (int(x) for x in self.table[k, b])
                out.append({"kind": kind, "ranks": name, "per_tick": n / max(self.ticks, 1),
                            "collided": hit / n if n else 0.0, "others_when_collided": others / hit if hit else 0.0})
        return out
