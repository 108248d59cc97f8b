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
