"""A shard's adjust for the rows that many of a minibatch's updates hit: combined, and stepped by a line search.

With split calls a minibatch's coefficients all come from one state of the vectors, read before the adjusts of
the other minibatches in flight.  Most rows take one or two of a minibatch's updates; the most frequent words'
rows take thousands (``the`` is the center or a negative of ~17,000 of the ~200,000 pairs of a minibatch of
32,768 input words at sample 1e-4).  Applied batch by batch like the other rows, such a row's updates compound:
an input row that took ``g * v(the)`` feeds ``v(the)``'s next update, whose coefficient never shrinks because
it was computed before either moved, and one minibatch of 65,536 words in flight took ``|v(the)|`` from 0 to
1,500 (docs/benchmarks/clusters.md, "Words in flight").  :func:`adjust_window_rows_combined` therefore splits a
minibatch's rows in two:

* a row with at most ``hot`` updates in the minibatch is updated batch by batch, as
  :func:`parvec.kernels.sharded.adjust_window_rows` updates every row (a minibatch with no row over ``hot`` is
  applied exactly as there, bit for bit);
* a row with more has its updates summed from the call's start (every product of the minibatch reads it as it
  was when the call began) and applied once, scaled by the step that minimises the logistic loss's quadratic
  model along the summed update: for a row ``r`` with summed update ``D`` from pairs with partner rows ``p_i``
  and coefficients ``c_i = alpha (label_i - sigmoid(x_i))``, the loss along ``t D`` is
  ``-t |D|^2 / alpha + t^2 / 2 sum_i sigmoid'(x_i) (p_i . D)^2`` to second order, minimised at
  ``t* = |D|^2 / (alpha sum_i sigmoid'(x_i) (p_i . D)^2)``; since ``alpha sigmoid'(x_i) <= |c_i|``, the step
  ``min(1, tau |D|^2 / sum_i |c_i| (p_i . D)^2)`` of the summed update is taken (``tau`` = :data:`STEP_SCALE`).
  A row whose updates are small against its curvature keeps its whole sum (the scale is 1); a frequent row's
  step is the one its own pairs support, not thousands of steps summed from one stale state.

Each shard computes the norms and products over its own columns, so each shard's step is its columns' line
search: deterministic from the shard's state and the call, so a restored shard replays it to the bit.

Example:
    >>> adjust_window_rows_combined(w_in, w_out, ins, outs, first, coef, 16, STEP_SCALE)  # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np
from numba import njit

from parvec.kernels.fastmath import FASTMATH
from parvec.kernels.hogbatch import batch_apply
from parvec.kernels.sharded import HEAD_ROWS, batch_stride

__all__ = ["STEP_SCALE", "adjust_window_rows_combined", "combined_step", "combined_threshold", "hot_slots"]

# The multiple of the line search's step that a frequent row takes over all the minibatches in flight and all
# the shards (docs/benchmarks/clusters.md, "Words in flight").
STEP_SCALE = 4.0


def combined_threshold(update_cap: int, lanes: int) -> int:
    """The updates from one minibatch above which a shard combines a row, with ``lanes`` minibatches in flight:
    ``update_cap / lanes`` (at least 1; 0 stays 0, nothing combined).  A row's stale updates add up over every
    minibatch in flight, so a row with 10 updates in each of 16 minibatches in flight is as stale as one with 160
    in one.

    Example:
        >>> combined_threshold(16, 1), combined_threshold(16, 2), combined_threshold(16, 64), combined_threshold(0, 4)
        (16, 8, 1, 0)
    """
    if update_cap <= 0:
        return 0
    return max(1, update_cap // max(1, lanes))


def combined_step(lanes: int, shards: int, scale: float = STEP_SCALE) -> float:
    """The step scale one shard of ``shards`` takes with ``lanes`` minibatches in flight: ``scale / (lanes x
    shards)``.  Every minibatch in flight steps a frequent row from nearly the same state, so their steps add up;
    and a shard's line search over its own columns takes about ``shards`` times the whole row's step when the
    columns agree, as a frequent row's drift does.

    Example:
        >>> combined_step(2, 1), combined_step(8, 2)
        (2.0, 0.25)
    """
    return scale / (max(1, lanes) * max(1, shards))


@njit(nogil=True, cache=True)
def hot_slots(rows, hot, slots):
    """Number the distinct values of ``rows`` that occur more than ``hot`` times: ``slots[i]`` = the number of
    ``rows[i]`` (0, 1, ... in order of first appearance among the ids below :data:`HEAD_ROWS`, then the larger
    ids in increasing order), -1 for a value that occurs at most ``hot`` times.  Returns ``(k, of)``: how many
    were numbered and ``of[s]`` the value numbered ``s``.

    Example:
        >>> slots = np.empty(6, np.int64)
        >>> k, of = hot_slots(np.array([3, 70000, 3, 3, 70000, 1]), 1, slots)
        >>> k, of[:k].tolist(), slots.tolist()
        (2, [3, 70000], [0, 1, 0, 0, 1, -1])
    """
    # one dense table for the ids below HEAD_ROWS: their counts, then -(slot + 1) once numbered
    n = len(rows)
    head = np.zeros(HEAD_ROWS, dtype=np.int64)
    tail = np.empty(n, dtype=np.int64)
    nt = 0
    for i in range(n):
        r = rows[i]
        if r < HEAD_ROWS:
            head[r] += 1
        else:
            tail[nt] = i
            nt += 1
    of = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        r = rows[i]
        if r >= HEAD_ROWS:
            continue
        h = head[r]
        if h < 0:
            slots[i] = -h - 1
        elif h > hot:
            head[r] = -(k + 1)
            of[k] = r
            slots[i] = k
            k += 1
        else:
            slots[i] = -1
    if nt:  # the larger ids (rare words) grouped by sorting
        keys = np.empty(nt, dtype=np.int64)
        for q in range(nt):
            keys[q] = rows[tail[q]]
        order = np.argsort(keys, kind="mergesort")
        j = 0
        while j < nt:
            e = j
            while e < nt and keys[order[e]] == keys[order[j]]:
                e += 1
            s = -1
            if e - j > hot:
                s = k
                of[k] = keys[order[j]]
                k += 1
            for q in range(j, e):
                slots[tail[order[q]]] = s
            j = e
    return k, of


@njit(inline="always")
def _batch_hot(si, so, lo, hi, m, stride):
    # whether window batch m has a row over the threshold
    for a in range(lo, hi):
        if si[a] >= 0:
            return True
    for b in range(stride):
        if so[m * stride + b] >= 0:
            return True
    return False


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def _apply_deferring(w_in, w_out, ins, outs, first, coef, si, so, d_in, d_out, stride):
    # batch by batch as batch_apply, except that a row with a slot takes its update into d_in / d_out (it keeps
    # the call's starting value for every product of the minibatch)
    dim = w_in.shape[1]
    do = np.empty((stride, dim), dtype=np.float32)
    di = np.empty(dim, dtype=np.float32)
    for m in range(len(first) - 1):
        lo, hi = first[m], first[m + 1]
        outs_m = outs[m * stride:(m + 1) * stride]
        if not _batch_hot(si, so, lo, hi, m, stride):
            batch_apply(w_in, w_out, ins, lo, hi - lo, outs_m, stride, coef[lo * stride:], do, dim)
            continue
        for b in range(stride):
            for d in range(dim):
                do[b, d] = 0.0
            for a in range(lo, hi):
                g = coef[a * stride + b]
                ra = ins[a]
                for d in range(dim):
                    do[b, d] += g * w_in[ra, d]
        for a in range(lo, hi):
            for d in range(dim):
                di[d] = 0.0
            for b in range(stride):
                g = coef[a * stride + b]
                rb = outs_m[b]
                for d in range(dim):
                    di[d] += g * w_out[rb, d]
            s = si[a]
            if s >= 0:
                for d in range(dim):
                    d_in[s, d] += di[d]
            else:
                ra = ins[a]
                for d in range(dim):
                    w_in[ra, d] += di[d]
        for b in range(stride):
            s = so[m * stride + b]
            if s >= 0:
                for d in range(dim):
                    d_out[s, d] += do[b, d]
            else:
                rb = outs_m[b]
                for d in range(dim):
                    w_out[rb, d] += do[b, d]


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def _curvature(w_in, w_out, ins, outs, first, coef, si, so, d_in, d_out, stride, bounds):
    # sum_i |c_i| (p_i . D)^2 of each slotted row, per column group: its pairs' partner rows against its update
    groups = len(bounds) - 1
    b_in = np.zeros((d_in.shape[0], groups), dtype=np.float64)
    b_out = np.zeros((d_out.shape[0], groups), dtype=np.float64)
    for m in range(len(first) - 1):
        for a in range(first[m], first[m + 1]):
            sa = si[a]
            ra = ins[a]
            for b in range(stride):
                sb = so[m * stride + b]
                if sa < 0 and sb < 0:
                    continue
                c = abs(coef[a * stride + b])
                rb = outs[m * stride + b]
                for q in range(groups):
                    if sa >= 0:
                        x = np.float32(0.0)
                        for d in range(bounds[q], bounds[q + 1]):
                            x += w_out[rb, d] * d_in[sa, d]
                        b_in[sa, q] += c * x * x
                    if sb >= 0:
                        x = np.float32(0.0)
                        for d in range(bounds[q], bounds[q + 1]):
                            x += w_in[ra, d] * d_out[sb, d]
                        b_out[sb, q] += c * x * x
    return b_in, b_out


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def _step_rows(w, of, delta, curv, tau, bounds):
    # each slotted row += min(1, tau |D|^2 / curv) D, per column group; returns how many groups took less
    scaled = 0
    for s in range(delta.shape[0]):
        r = of[s]
        for q in range(len(bounds) - 1):
            a2 = np.float32(0.0)
            for d in range(bounds[q], bounds[q + 1]):
                a2 += delta[s, d] * delta[s, d]
            sc = np.float32(1.0)
            if curv[s, q] > tau * a2:
                sc = np.float32(tau * a2 / curv[s, q])
                scaled += 1
            for d in range(bounds[q], bounds[q + 1]):
                w[r, d] += sc * delta[s, d]
    return scaled


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def adjust_window_rows_combined(w_in, w_out, ins, outs, first, coef, hot, tau, bounds):
    """:func:`parvec.kernels.sharded.adjust_window_rows` with the rows that take more than ``hot`` of the
    minibatch's updates combined: summed from the call's start and applied once, scaled by ``tau`` times the line
    search's step (the module's docstring); the other rows batch by batch.  A minibatch with no such row is
    applied as ``adjust_window_rows`` applies it, to the bit.  Returns how many rows took less than their sum.

    Example:
        >>> adjust_window_rows_combined(w_in, w_out, ins, outs, first, coef, 16, STEP_SCALE)  # doctest: +SKIP
    """
    n_in = len(first) - 1
    stride = batch_stride(outs, first)
    n_pairs = first[n_in] if n_in else 0
    si = np.empty(n_pairs, dtype=np.int64)
    so = np.empty(n_in * stride, dtype=np.int64)
    ki, of_in = hot_slots(ins[:n_pairs], hot, si)
    ko, of_out = hot_slots(outs[:n_in * stride], hot, so)
    dim = w_in.shape[1]
    d_in = np.zeros((ki, dim), dtype=np.float32)
    d_out = np.zeros((ko, dim), dtype=np.float32)
    _apply_deferring(w_in, w_out, ins, outs, first, coef, si, so, d_in, d_out, stride)
    if ki == 0 and ko == 0:
        return 0
    b_in, b_out = _curvature(w_in, w_out, ins, outs, first, coef, si, so, d_in, d_out, stride, bounds)
    t = np.float32(tau)
    return _step_rows(w_in, of_in, d_in, b_in, t, bounds) + _step_rows(w_out, of_out, d_out, b_out, t, bounds)
