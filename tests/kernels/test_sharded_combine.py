"""The shards' combined adjust of frequent rows (parvec.kernels.sharded_combine) against numpy references."""

from __future__ import annotations

import numpy as np
import pytest

from parvec.kernels import sharded as K
from parvec.kernels.sharded_combine import adjust_window_rows_combined, combined_step, hot_slots

WHOLE = np.array([0, 8], dtype=np.int64)


def _one_row_in_many_batches(n_batches: int, dim: int = 8, seed: int = 3):
    # n_batches window batches, each one distinct context row (1 .. n) against output rows [0, n+1 .. ]: output
    # row 0 is the center of every batch, the other rows occur once
    rng = np.random.default_rng(seed)
    rows = 2 * n_batches + 2
    w_in = rng.normal(0, 0.3, (rows, dim)).astype(np.float32)
    w_out = rng.normal(0, 0.3, (rows, dim)).astype(np.float32)
    ins = np.arange(1, n_batches + 1, dtype=np.int64)
    outs = np.empty(n_batches * 2, dtype=np.int64)
    outs[0::2] = 0
    outs[1::2] = np.arange(n_batches + 1, 2 * n_batches + 1)
    first = np.arange(n_batches + 1, dtype=np.int64)
    coef = rng.uniform(0.005, 0.02, 2 * n_batches).astype(np.float32)
    return w_in, w_out, ins, outs, first, coef


def test_hot_slots_number_the_rows_over_the_threshold_head_and_tail():
    big = K.HEAD_ROWS + 7
    rows = np.array([5, big, 5, big, K.HEAD_ROWS + 9, 0, 5, big + 1, big + 1, 2, 2], dtype=np.int64)
    slots = np.empty(len(rows), np.int64)
    k, of = hot_slots(rows, 1, slots)
    assert k == 4 and of[:k].tolist() == [5, 2, big, big + 1]
    assert slots.tolist() == [0, 2, 0, 2, -1, -1, 0, 3, 3, 1, 1]
    k, _ = hot_slots(rows, 2, slots)
    assert k == 1 and slots.tolist() == [0, -1, 0, -1, -1, -1, 0, -1, -1, -1, -1]


def test_a_minibatch_within_the_threshold_is_adjusted_as_without_it_to_the_bit():
    w_in, w_out, ins, outs, first, coef = _one_row_in_many_batches(16)
    s_in, s_out = w_in.copy(), w_out.copy()
    K.adjust_window_rows(s_in, s_out, ins, outs, first, coef)
    assert adjust_window_rows_combined(w_in, w_out, ins, outs, first, coef, 16, 4.0, WHOLE) == 0
    assert np.array_equal(w_in, s_in) and np.array_equal(w_out, s_out)


def _line_search_reference(w_in, w_out, ins, outs, first, coef, tau, bounds):
    # output row 0 (the only row over the threshold): its summed update D from the call's start, every other row
    # batch by batch reading row 0 as it was; row 0 += min(1, tau |D|^2 / sum |c| (p . D)^2) D per column group
    r_in, r_out = w_in.astype(np.float64), w_out.astype(np.float64)
    start0 = r_out[0].copy()
    d = np.zeros(w_in.shape[1])
    for m in range(len(first) - 1):
        a = ins[first[m]]
        o = outs[2 * m:2 * m + 2]
        g = coef[2 * m:2 * m + 2]
        d += g[0] * r_in[a]
        r_out[o[1]] += g[1] * r_in[a]
        r_in[a] += g[0] * start0 + g[1] * w_out[o[1]]
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        curv = sum(abs(coef[2 * m]) * (r_in[ins[first[m]], lo:hi] @ d[lo:hi]) ** 2 for m in range(len(first) - 1))
        step = min(1.0, tau * (d[lo:hi] @ d[lo:hi]) / curv)
        r_out[0, lo:hi] = start0[lo:hi] + step * d[lo:hi]
    return r_in, r_out


@pytest.mark.parametrize("bounds", [WHOLE, np.array([0, 3, 8], dtype=np.int64)])
def test_a_frequent_row_takes_the_line_search_step_of_its_summed_update(bounds):
    w_in, w_out, ins, outs, first, coef = _one_row_in_many_batches(400)
    w_in *= 10  # partner rows long enough that the step is cut
    r_in, r_out = _line_search_reference(w_in, w_out, ins, outs, first, coef, 2.0, bounds)
    scaled = adjust_window_rows_combined(w_in, w_out, ins, outs, first, coef, 16, 2.0, bounds)
    assert scaled == len(bounds) - 1
    np.testing.assert_allclose(w_out, r_out, rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(w_in, r_in, rtol=2e-4, atol=1e-5)


def test_stale_updates_applied_batch_by_batch_compound_and_combined_ones_do_not():
    # one output row is the center of 3,000 batches whose contexts are 30 rows (100 batches each), every coefficient
    # from one stale state: batch by batch, each context takes g * v, and v takes g * (the grown contexts), so both
    # run away; combined, v moves once from the call's start and the contexts read it as it was
    rng = np.random.default_rng(7)
    n_b, dim = 3000, 16
    w_in = rng.normal(0, 0.05, (40, dim)).astype(np.float32)
    w_out = rng.normal(0, 0.05, (n_b + 2, dim)).astype(np.float32)
    ins = (np.arange(n_b) % 30 + 1).astype(np.int64)
    outs = np.empty(2 * n_b, np.int64)
    outs[0::2] = 0
    outs[1::2] = np.arange(2, n_b + 2)
    first = np.arange(n_b + 1, dtype=np.int64)
    coef = np.full(2 * n_b, 0.0125, np.float32)
    s_in, s_out = w_in.copy(), w_out.copy()
    K.adjust_window_rows(s_in, s_out, ins, outs, first, coef)
    c_in, c_out = w_in.copy(), w_out.copy()
    adjust_window_rows_combined(c_in, c_out, ins, outs, first, coef, 16, 2.0, np.array([0, dim], np.int64))
    summed = (coef[0::2, None] * w_in[ins]).sum(0)  # row 0's updates, every one from the call's start
    assert np.linalg.norm(s_out[0] - w_out[0]) > 10 * np.linalg.norm(summed)  # the compounding
    assert np.linalg.norm(c_out[0] - w_out[0]) <= np.linalg.norm(summed) * 1.0001
    assert np.abs(c_in).max() < 1.0 < np.abs(s_in).max()


def test_the_step_is_shared_by_the_minibatches_in_flight_and_the_shards():
    assert combined_step(1, 1) == 4.0
    assert combined_step(2, 1) == 2.0 and combined_step(2, 2) == 1.0
    assert combined_step(0, 0) == 4.0
