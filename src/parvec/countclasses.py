"""Sampling tables over count classes: the noise distribution and subsampling in a few thousand entries.

The vocabulary is sorted by descending count, so the words of one count value (a *count class*) hold one
contiguous run of ids, and both sampling distributions depend only on a word's count:

- **Noise** (unigram^0.75): a class is drawn from a Walker/Vose alias table over the classes (weight
  ``size * count ** exponent``), then a uniform id inside its range.  The word probabilities are those of the
  per-word alias table (:func:`parvec.sampling.alias_table`) up to float rounding, in ``K`` entries for ``K``
  distinct counts (a few thousand for a Zipf vocabulary of millions of words) instead of 8 bytes a word.
- **Subsampling**: word2vec.c's keep probability is below 1 only for words of count above about
  ``2.6 * sample * total``, so at most ``1 / (2.6 * sample)`` words (the *head*, the first ids) need one;
  every other word is kept.  :func:`keep_head` holds those words' probabilities, bit for bit the ones of
  :func:`parvec.sampling.keep_probabilities` (one formula: :func:`parvec.sampling.keep_of_counts`), and
  :func:`parvec.sampling.subsample_sentence` subsamples with them as with the per-word table (a word past the
  head is kept without a random number: the same kept words, the same random stream).

The noise draw (:func:`draw_class_noise`) uses one random state, as :func:`parvec.sampling.draw_noise` does:
the class from its high 32 bits and its low 24 bits (the alias column and coin, as the per-word draw), the id
inside the class from a splitmix64 finalizer of the state (53 bits), so a kernel's random stream advances as
it does with the per-word table.  Its two arrays take the places of the per-word ``(noise_prob, noise_alias)``:
``prob`` (float32[K], the alias coins) and ``ranges`` (int64[2K+1]: the alias classes, then the classes' first
ids and the vocabulary size).

Example:
    >>> import numpy as np
    >>> classes = CountClasses.from_counts(np.array([9, 5, 5, 1, 1, 1]))
    >>> classes.values.tolist(), classes.first.tolist(), classes.sizes.tolist()
    ([9, 5, 1], [0, 1, 3, 6], [1, 2, 3])
    >>> prob, ranges = noise_tables(classes)
    >>> 0 <= int(draw_class_noise(np.uint64(12345), prob, ranges)) < 6
    True
    >>> keep_head(classes, 0.1).astype(float).round(4).tolist()  # only word 0 (count 9 of 22) is ever dropped
    [0.7389]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from parvec.sampling import alias_table, keep_of_counts, rng_below, rng_uniform

__all__ = [
    "CountClasses",
    "class_of",
    "draw_class_noise",
    "keep_by_class",
    "keep_head",
    "noise_tables",
    "word_probabilities",
]

_U53 = 1.0 / (1 << 53)


@dataclass(frozen=True)
class CountClasses:
    """The distinct counts of a vocabulary sorted by descending count: class ``k`` is the words of count
    ``values[k]``, ids ``first[k] .. first[k + 1] - 1``.

    Example:
        >>> c = CountClasses.from_histogram(np.array([1, 7, 3]), np.array([4, 1, 2]))
        >>> c.values.tolist(), c.first.tolist(), c.n_words, c.total
        ([7, 3, 1], [0, 1, 3, 7], 7, 17)
    """

    values: np.ndarray  # int64[K], strictly decreasing, all >= 0
    first: np.ndarray  # int64[K + 1], first[0] = 0, first[K] = number of words

    @classmethod
    def from_counts(cls, counts: np.ndarray) -> CountClasses:
        """The classes of per-word counts sorted non-increasingly (a :class:`parvec.vocab.Vocab`'s ``counts``).

        Example:
            >>> CountClasses.from_counts(np.array([3, 3, 2])).first.tolist()
            [0, 2, 3]
        """
        c = np.asarray(counts, dtype=np.int64)
        if c.ndim != 1:
            raise ValueError("counts must be one-dimensional")
        if len(c) and (np.any(np.diff(c) > 0) or c[-1] < 0):
            raise ValueError("counts must be non-negative and sorted in non-increasing order")
        starts = np.flatnonzero(np.diff(c)) + 1 if len(c) else np.zeros(0, np.int64)
        first = np.concatenate(([0], starts, [len(c)])).astype(np.int64) if len(c) else np.zeros(1, np.int64)
        return cls(c[first[:-1]].copy(), first)

    @classmethod
    def from_histogram(cls, values: np.ndarray, sizes: np.ndarray) -> CountClasses:
        """The classes from ``(count value, number of words)`` pairs in any order (a value may repeat: its
        sizes add up; values with no word are dropped) -- what a distributed count gives without per-word arrays.

        Example:
            >>> CountClasses.from_histogram(np.array([2, 5, 2]), np.array([1, 1, 3])).sizes.tolist()
            [1, 4]
        """
        v = np.asarray(values, dtype=np.int64)
        s = np.asarray(sizes, dtype=np.int64)
        if v.shape != s.shape or v.ndim != 1:
            raise ValueError("values and sizes must be one-dimensional and of one length")
        if len(v) and (v.min() < 0 or s.min() < 0):
            raise ValueError("count values and sizes must be non-negative")
        uniq, inverse = np.unique(v, return_inverse=True)
        total = np.zeros(len(uniq), dtype=np.int64)
        np.add.at(total, inverse, s)
        keep = total > 0
        uniq, total = uniq[keep][::-1], total[keep][::-1]
        first = np.zeros(len(uniq) + 1, dtype=np.int64)
        np.cumsum(total, out=first[1:])
        return cls(uniq.copy(), first)

    @property
    def sizes(self) -> np.ndarray:
        """Words per class (int64[K])."""
        return np.diff(self.first)

    @property
    def n_classes(self) -> int:
        """``K``, the number of distinct counts."""
        return len(self.values)

    @property
    def n_words(self) -> int:
        """The vocabulary size."""
        return int(self.first[-1])

    @property
    def total(self) -> int:
        """The sum of every word's count (word2vec.c's ``train_words``), exact."""
        return int(np.dot(self.values, self.sizes)) if self.n_classes else 0

    def counts_of(self, ids: np.ndarray) -> np.ndarray:
        """The counts of word ids (int64), by binary search over the classes.

        Example:
            >>> CountClasses.from_counts(np.array([4, 2, 2, 1])).counts_of(np.array([3, 0, 2])).tolist()
            [1, 4, 2]
        """
        return self.values[np.searchsorted(self.first, np.asarray(ids), side="right") - 1]

    def expand(self) -> np.ndarray:
        """Per-word counts (int64[V]): the inverse of :meth:`from_counts` (for checks and small vocabularies).

        Example:
            >>> CountClasses.from_histogram(np.array([1, 2]), np.array([2, 1])).expand().tolist()
            [2, 1, 1]
        """
        return np.repeat(self.values, self.sizes)

    def nbytes(self) -> int:
        """Bytes of the two arrays."""
        return int(self.values.nbytes + self.first.nbytes)


# --------------------------------------------------------------------------- noise
def noise_tables(classes: CountClasses, exponent: float = 0.75) -> tuple[np.ndarray, np.ndarray]:
    """The class alias table for :func:`draw_class_noise`: ``(prob float32[K], ranges int64[2K+1])``, where
    ``ranges[:K]`` are the alias classes and ``ranges[K:]`` the classes' first ids (``classes.first``).  Class
    ``k`` weighs ``size_k * count_k ** exponent``, so each word weighs ``count ** exponent`` as in
    :func:`parvec.sampling.noise_distribution`.

    Example:
        >>> prob, ranges = noise_tables(CountClasses.from_counts(np.array([16, 1, 1])), 0.5)
        >>> prob.astype(float).round(4).tolist(), ranges.tolist()  # class 1 (2/3 of a column) has class 0 as its alias
        ([1.0, 0.6667], [0, 0, 0, 1, 3])
    """
    if classes.n_classes == 0:
        raise ValueError("the noise distribution needs at least one word")
    weights = classes.sizes.astype(np.float64) * classes.values.astype(np.float64) ** exponent
    total = weights.sum()
    if not total > 0:
        raise ValueError("the noise distribution needs at least one positive count")
    prob, alias = alias_table(weights / total)
    return prob, np.concatenate((alias.astype(np.int64), classes.first)).astype(np.int64)


@njit(inline="always")
def _mix(state: np.uint64) -> np.uint64:
    """splitmix64's finalizer: 64 well-mixed bits from ``state`` (a bijection)."""
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def draw_class_noise(state: np.uint64, prob: np.ndarray, ranges: np.ndarray) -> np.int64:
    """One negative sample for the random state ``state`` from :func:`noise_tables`' arrays: the class by its
    alias column (high 32 bits) and coin (low 24 bits), as :func:`parvec.sampling.draw_noise` draws a word, then
    a uniform id inside the class from 53 bits of splitmix64's finalizer of ``state``.  Branch-free.

    Example:
        >>> from parvec.sampling import splitmix64
        >>> prob, ranges = noise_tables(CountClasses.from_counts(np.array([5, 1, 1])))
        >>> sorted({int(draw_class_noise(np.uint64(splitmix64(s)), prob, ranges)) for s in range(300)})
        [0, 1, 2]
    """
    k = len(prob)
    j = rng_below(state, k)
    alt = ranges[j]
    c = j if rng_uniform(state) < prob[j] else alt
    lo: np.int64 = ranges[k + c]  # ranges' elements (int64) are Any to mypy
    size: np.int64 = ranges[k + c + 1] - lo
    off = np.int64(np.float64(_mix(state) >> np.uint64(11)) * _U53 * np.float64(size))
    return lo + min(off, size - 1)


def word_probabilities(prob: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """The exact probability of each word under :func:`draw_class_noise` for a uniformly random 64-bit state
    (the multiply-shift column and the 24-bit coin counted exactly; the 53-bit offset taken as uniform): float64[V].

    Example:
        >>> prob, ranges = noise_tables(CountClasses.from_counts(np.array([16, 1, 1])), 0.5)
        >>> word_probabilities(prob, ranges).round(3).tolist()
        [0.667, 0.167, 0.167]
    """
    k = len(prob)
    alias, first = ranges[:k], ranges[k:]
    # Column j takes the high 32 bits h with (h * k) >> 32 == j: ceil((j + 1) 2^32 / k) - ceil(j 2^32 / k) values.
    edges = -((-np.arange(k + 1, dtype=object) * (1 << 32)) // k)
    p_col = np.array([(int(edges[j + 1]) - int(edges[j])) / 2.0**32 for j in range(k)], dtype=np.float64)
    # The coin keeps column j when (low 24 bits) / 2^24 < prob[j] (float32 compare): ceil(prob * 2^24) of 2^24.
    p_keep = np.ceil(prob.astype(np.float64) * (1 << 24)) / float(1 << 24)
    p_class = p_col * p_keep
    np.add.at(p_class, alias, p_col * (1.0 - p_keep))
    return np.repeat(p_class / np.diff(first), np.diff(first))


# --------------------------------------------------------------------------- subsampling
def keep_by_class(classes: CountClasses, sample: float) -> np.ndarray:
    """word2vec.c's keep probability of each class (float32[K]): bit for bit what
    :func:`parvec.sampling.keep_probabilities` gives each of its words.

    Example:
        >>> keep_by_class(CountClasses.from_counts(np.array([1000, 1])), 1e-3).astype(float).round(4).tolist()
        [0.0326, 1.0]
    """
    return keep_of_counts(classes.values.astype(np.float64), float(classes.total), sample)


def keep_head(classes: CountClasses, sample: float) -> np.ndarray:
    """The keep probabilities of the first ids up to the last word whose probability is below 1 (float32[H]),
    for :func:`parvec.sampling.subsample_sentence`; every later word is always kept.  ``H`` is at most about
    ``1 / (2.6 * sample)`` words whatever the vocabulary (385 at sample 1e-3).

    Example:
        >>> keep_head(CountClasses.from_counts(np.array([1000, 1000, 1])), 1e-3).astype(float).round(4).tolist()
        [0.0467, 0.0467]
    """
    per_class = keep_by_class(classes, sample)
    below = np.flatnonzero(per_class < 1.0)
    if not len(below):
        return np.zeros(0, dtype=np.float32)
    last = int(below[-1])
    return np.repeat(per_class[: last + 1], classes.sizes[: last + 1]).astype(np.float32)


@njit(inline="always")
def class_of(word: int, ranges: np.ndarray) -> int:
    """The class of word id ``word`` by binary search over :func:`noise_tables`' first ids (``ranges[K:]``),
    for a per-class table (:func:`keep_by_class`, the counts) inside a kernel.

    Example:
        >>> _, ranges = noise_tables(CountClasses.from_counts(np.array([4, 2, 2, 1])))
        >>> [int(class_of(w, ranges)) for w in range(4)]
        [0, 1, 1, 2]
    """
    k = (len(ranges) - 1) // 2
    lo = 0
    hi = k  # the class is in [lo, hi): the last c with first[c] <= word
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if ranges[k + mid] <= word:
            lo = mid
        else:
            hi = mid
    return lo
