"""Sampling tables over count classes (parvec.countclasses) against the per-word tables of parvec.sampling."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from scipy.stats import chi2_contingency, chisquare

from parvec.countclasses import (
    CountClasses,
    class_of,
    draw_class_noise,
    keep_by_class,
    keep_head,
    noise_tables,
    word_probabilities,
)
from parvec.sampling import keep_probabilities, noise_distribution, rng_next, subsample_sentence


def zipf_counts(vocab: int, extra: int, seed: int = 1) -> np.ndarray:
    """Sorted per-word counts of a Zipf corpus (s = 1) where every word occurs at least once."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1)
    counts = 1 + rng.multinomial(extra, p / p.sum())
    return np.sort(counts)[::-1].astype(np.int64)


@njit
def _draws(prob, ranges, seed, n, out):
    state = np.uint64(seed)
    for i in range(n):
        state = rng_next(state)
        out[i] = draw_class_noise(state, prob, ranges)
    return out


@njit
def _subsample_both(tokens, offsets, keep, head, seed, a, b):
    s1 = np.uint64(seed)
    s2 = np.uint64(seed)
    total = 0
    for s in range(len(offsets) - 1):
        n1, s1 = subsample_sentence(tokens, offsets[s], offsets[s + 1], keep, s1, a)
        n2, s2 = subsample_sentence(tokens, offsets[s], offsets[s + 1], head, s2, b)
        if n1 != n2 or s1 != s2:
            return -1
        for i in range(n1):
            if a[i] != b[i]:
                return -1
        total += n1
    return total


@njit
def _classes_of(words, ranges, out):
    for i in range(len(words)):
        out[i] = class_of(words[i], ranges)
    return out


def test_classes_of_counts_and_histogram_agree():
    counts = zipf_counts(5000, 50_000)
    classes = CountClasses.from_counts(counts)
    assert np.array_equal(classes.expand(), counts)
    assert classes.total == int(counts.sum()) and classes.n_words == len(counts)
    assert np.all(np.diff(classes.values) < 0)
    # The same classes from an unordered histogram with repeated values (per-reducer tables summed).
    values, sizes = np.unique(counts, return_counts=True)
    half = sizes // 2
    shuffled = np.random.default_rng(0).permutation(2 * len(values))
    hist_v = np.concatenate((values, values))[shuffled]
    hist_s = np.concatenate((half, sizes - half))[shuffled]
    other = CountClasses.from_histogram(hist_v, hist_s)
    assert np.array_equal(other.values, classes.values) and np.array_equal(other.first, classes.first)
    ids = np.random.default_rng(1).integers(0, len(counts), 1000)
    assert np.array_equal(classes.counts_of(ids), counts[ids])


def test_unsorted_or_negative_counts_are_refused():
    with pytest.raises(ValueError, match="non-increasing"):
        CountClasses.from_counts(np.array([1, 2]))
    with pytest.raises(ValueError, match="non-negative"):
        CountClasses.from_histogram(np.array([-1]), np.array([2]))


def test_class_of_is_a_binary_search_over_the_classes():
    counts = zipf_counts(3000, 30_000)
    classes = CountClasses.from_counts(counts)
    _, ranges = noise_tables(classes)
    words = np.arange(len(counts), dtype=np.int64)
    got = _classes_of(words, ranges, np.empty(len(words), np.int64))
    assert np.array_equal(classes.values[got], counts)


def test_class_noise_probabilities_are_the_per_word_distribution():
    """Exactly computed word probabilities of the class draw against unigram^0.75, within the alias table's
    quantisation (the 24-bit coin and the 32-bit column of each class it touches)."""
    counts = zipf_counts(200_000, 2_000_000)
    classes = CountClasses.from_counts(counts)
    prob, ranges = noise_tables(classes)
    got = word_probabilities(prob, ranges)
    want = noise_distribution(counts, 0.75)
    k = classes.n_classes
    assert abs(got.sum() - 1.0) < 1e-12
    aliased_in = np.bincount(ranges[:k], weights=(prob < 1.0).astype(float), minlength=k)
    bound_class = (1 + aliased_in) * (2.0**-23 / k + 2.0**-32)
    err_class = np.abs(np.add.reduceat(got - want, classes.first[:-1]))
    assert np.all(err_class <= bound_class), float((err_class / bound_class).max())
    # Relative to the word probabilities: the frequent words (most of the draws) to 1e-5.
    assert np.all(np.abs(got[:1000] / want[:1000] - 1) < 1e-5)


def test_class_noise_draws_follow_the_distribution():
    """Chi-square of 4M xorshift-driven draws against the exact word probabilities (one class of 700 words
    tests the uniform draw inside a class)."""
    counts = np.concatenate((np.arange(300, 100, -1), np.full(700, 50), np.full(100, 3))).astype(np.int64)
    prob, ranges = noise_tables(CountClasses.from_counts(counts))
    n = 4_000_000
    draws = _draws(prob, ranges, 0x1234567, n, np.empty(n, np.int64))
    observed = np.bincount(draws, minlength=len(counts))
    expected = word_probabilities(prob, ranges) * n
    assert chisquare(observed, expected).pvalue > 1e-4


def test_class_noise_id_inside_a_class_is_independent_of_the_next_draw():
    """The id inside a class (from splitmix64 of the state) against the next draw's class (from the next
    xorshift state): a contingency table with no dependence."""
    counts = np.concatenate((np.full(4, 1000), np.full(4000, 100))).astype(np.int64)
    prob, ranges = noise_tables(CountClasses.from_counts(counts))
    n = 2_000_000
    draws = _draws(prob, ranges, 99, n, np.empty(n, np.int64))
    in_class = draws[:-1] >= 4
    offset_bucket = (draws[:-1][in_class] - 4) * 8 // 4000
    next_class = (draws[1:][in_class] >= 4).astype(np.int64)
    table = np.zeros((8, 2), dtype=np.int64)
    np.add.at(table, (offset_bucket, next_class), 1)
    assert chi2_contingency(table).pvalue > 1e-4


@pytest.mark.parametrize("sample", [1e-2, 1e-3, 1e-4, 1e-5, 0.0])
def test_keep_head_is_the_per_word_keep_table(sample):
    counts = zipf_counts(100_000, 3_000_000)
    classes = CountClasses.from_counts(counts)
    want = keep_probabilities(counts, sample)
    head = keep_head(classes, sample)
    assert head.dtype == np.float32
    assert np.array_equal(head, want[: len(head)])  # bit for bit
    assert np.all(want[len(head):] == 1.0)
    per_class = keep_by_class(classes, sample)
    assert np.array_equal(np.repeat(per_class, classes.sizes), want)
    if sample > 0:
        assert len(head) <= 1 / (2 * sample)


def test_subsampling_with_the_head_table_is_the_per_word_subsampling():
    counts = zipf_counts(20_000, 500_000)
    classes = CountClasses.from_counts(counts)
    rng = np.random.default_rng(5)
    p = counts / counts.sum()
    tokens = rng.choice(len(counts), size=200_000, p=p).astype(np.int32)
    offsets = np.arange(0, len(tokens) + 1, 1000, dtype=np.int64)
    for sample in (1e-3, 1e-4):
        keep = keep_probabilities(counts, sample)
        head = keep_head(classes, sample)
        a, b = np.empty(1000, np.int32), np.empty(1000, np.int32)
        kept = _subsample_both(tokens, offsets, keep, head, 77, a, b)
        assert 0 < kept < len(tokens)


def test_zipf_vocabulary_of_millions_has_a_few_thousand_classes():
    counts = zipf_counts(2_000_000, 16_000_000)
    classes = CountClasses.from_counts(counts)
    prob, ranges = noise_tables(classes)
    assert classes.n_classes < 5000
    assert prob.nbytes + ranges.nbytes < 100_000  # against 8 bytes a word (16 MB) for the per-word table
    assert len(keep_head(classes, 1e-3)) <= 500
