"""Noise distribution, subsampling and the seeded random streams."""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy import stats

from parvec.sampling import (
    alias_table,
    chunk_seed,
    draw_noise,
    keep_probabilities,
    noise_distribution,
    rng_next,
)


@njit(cache=True)
def _draw_many(state, prob, alias, n):
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        state = rng_next(state)
        out[i] = draw_noise(state, prob, alias)
    return out


def test_alias_draws_follow_unigram_to_the_three_quarters():
    counts = np.array([1000, 300, 120, 50, 9, 1, 1], dtype=np.int64)
    p = noise_distribution(counts, 0.75)
    np.testing.assert_allclose(p, counts**0.75 / (counts**0.75).sum())
    prob, alias = alias_table(p)
    draws = _draw_many(chunk_seed(7, 0, 0), prob, alias, 400_000)
    observed = np.bincount(draws, minlength=len(counts))
    assert stats.chisquare(observed, p * len(draws)).pvalue > 1e-3


def _vose_in_python(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Vose's pairing as plain Python lists (the stacks' pop order: lowest index first), the reference the compiled
    # loop must equal bit for bit: the noise draws, and so every mode's vectors, depend on the table's exact bits.
    scaled = p * len(p) / p.sum()
    prob, alias = np.ones(len(p)), np.arange(len(p), dtype=np.int32)
    small = list(np.flatnonzero(scaled < 1.0)[::-1])
    large = list(np.flatnonzero(scaled >= 1.0)[::-1])
    while small and large:
        s, g = small.pop(), large.pop()
        prob[s], alias[s] = scaled[s], g
        scaled[g] = scaled[g] + scaled[s] - 1.0
        (small if scaled[g] < 1.0 else large).append(g)
    return prob.astype(np.float32), alias


def test_the_compiled_alias_table_is_vose_in_python_bit_for_bit():
    rng = np.random.default_rng(5)
    zipf = noise_distribution(np.sort(rng.zipf(1.3, 20_000))[::-1].astype(np.int64), 0.75)
    cases = [zipf, rng.random(1000), np.full(7, 1 / 7), np.array([1.0]), np.array([0.9, 0.1]),
             noise_distribution(np.array([1000, 300, 120, 50, 9, 1, 1]), 0.75)]
    for p in cases:
        want_prob, want_alias = _vose_in_python(np.asarray(p, dtype=np.float64))
        prob, alias = alias_table(p)
        assert prob.dtype == np.float32 and alias.dtype == np.int32
        assert np.array_equal(prob, want_prob) and np.array_equal(alias, want_alias)


def test_keep_probability_is_word2vec_c_formula():
    counts = np.array([10_000, 100, 1], dtype=np.int64)
    sample = 1e-3
    t = sample * counts.sum()
    expected = np.minimum(1.0, (np.sqrt(counts / t) + 1) * t / counts)
    np.testing.assert_allclose(keep_probabilities(counts, sample), expected, rtol=1e-6)
    assert keep_probabilities(counts, 0.0).tolist() == [1.0, 1.0, 1.0]


def test_chunk_seeds_differ_and_repeat():
    seeds = {int(chunk_seed(1, e, c)) for e in range(3) for c in range(100)}
    assert len(seeds) == 300
    assert chunk_seed(5, 2, 9) == chunk_seed(5, 2, 9)
    assert chunk_seed(5, 2, 9) != chunk_seed(6, 2, 9)
