"""Random numbers, the noise distribution and subsampling, shared by every kernel.

- The RNG inside kernels is xorshift64 on a ``uint64`` state; one state per corpus chunk, derived from
  (seed, epoch, chunk index) by splitmix64, so the random choices never depend on thread scheduling.
- Negatives are drawn from unigram^0.75 with an alias table (Walker/Vose): O(1) per draw and O(V)
  memory, exact, where word2vec.c's 10^8-entry table costs 400 MB and quantises rare words.
- Subsampling keeps a word with word2vec.c's probability
  ``(sqrt(c / (s * T)) + 1) * (s * T) / c`` for count ``c``, threshold ``s`` and ``T`` total words.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_M64 = (1 << 64) - 1
U24 = 1.0 / (1 << 24)


def splitmix64(x: int) -> int:
    """One splitmix64 step (pure Python): a well-mixed 64-bit value from any integer.

    Example:
        >>> splitmix64(0) != splitmix64(1)
        True
    """
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def chunk_seed(seed: int, epoch: int, chunk: int) -> np.uint64:
    """The RNG state for one chunk of one epoch (never zero: xorshift's fixed point).

    Example:
        >>> chunk_seed(1, 0, 0) != chunk_seed(1, 0, 1)
        True
    """
    s = splitmix64(splitmix64(splitmix64(seed) ^ epoch) ^ chunk)
    return np.uint64(s or 0x9E3779B97F4A7C15)


@njit(inline="always")
def rng_next(state: np.uint64) -> np.uint64:
    """xorshift64 (13, 7, 17): the kernels' RNG step; use the result as the new state."""
    state ^= state << np.uint64(13)
    state ^= state >> np.uint64(7)
    state ^= state << np.uint64(17)
    return state


@njit(inline="always")
def rng_below(state: np.uint64, n: np.int64) -> np.int64:
    """An integer in [0, n) from the high 32 bits of ``state`` (multiply-shift, no modulo bias)."""
    return np.int64(((state >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(inline="always")
def shrunk_window(state: np.uint64, i: np.int64, n: np.int64, window: np.int64) -> tuple[np.uint64, int, int]:
    """word2vec.c's random window of position ``i`` in a sentence of ``n`` kept words: advance the stream,
    shrink the window by ``b`` in ``[0, window)``; returns ``(state, lo, hi)`` with context ``lo <= j < hi``."""
    state = rng_next(state)
    b = rng_below(state, window)
    return state, max(0, i - window + b), min(n, i + window - b + 1)


@njit(inline="always")
def word_rate(alpha0: float, alpha1: float, done: int, i: int, raw_len: int, n: int, chunk_words: int) -> np.float32:
    """The learning rate of kept word ``i`` of ``n`` in a sentence of ``raw_len`` raw words that starts
    ``done`` raw words into a chunk of ``chunk_words``: linear from ``alpha0`` to ``alpha1`` over the chunk,
    interpolated inside the sentence (the classic, CBOW and hierarchical-softmax kernels)."""
    frac = (done + i * raw_len / n) / chunk_words
    return np.float32(alpha0 + (alpha1 - alpha0) * frac)


@njit(inline="always")
def rng_uniform(state: np.uint64) -> np.float32:
    """A float in [0, 1) from the low 24 bits of ``state``."""
    return np.float32(np.float64(state & np.uint64(0xFFFFFF)) * U24)


@njit(inline="always")
def draw_noise(state: np.uint64, prob: np.ndarray, alias: np.ndarray) -> np.int64:
    """One negative sample from the alias table (column from the high bits, coin from the low)."""
    j: np.int64 = rng_below(state, len(prob))  # typed here: a jitted function is Any to mypy
    if rng_uniform(state) < prob[j]:
        return j
    return np.int64(alias[j])


@njit(inline="always")
def subsample_sentence(tokens: np.ndarray, start: int, end: int, keep: np.ndarray, state: np.uint64,
                       out: np.ndarray) -> tuple[int, np.uint64]:
    """Copy the kept words of ``tokens[start:end]`` into ``out``; returns (count kept, new RNG state).

    Subsampling comes first, as in word2vec.c, so windows then span the removed words.  Word ``w`` is kept with
    probability ``keep[w]``; a word past the table's end (``keep`` holding only the head of the vocabulary:
    :func:`parvec.countclasses.keep_head`) and a word whose probability is >= 1 are always kept and use no
    random number, so a head table and the whole vocabulary's give the same kept words and random stream.

    Example:
        >>> n, state = subsample_sentence(tokens, 0, 5, keep, np.uint64(1), buf)  # doctest: +SKIP
    """
    n = 0
    h = len(keep)
    for k in range(start, end):
        w = tokens[k]
        if w < h:
            p = keep[w]
            if p < 1.0:
                state = rng_next(state)
                if rng_uniform(state) >= p:
                    continue
        out[n] = w
        n += 1
    return n, state


def noise_distribution(counts: np.ndarray, exponent: float = 0.75) -> np.ndarray:
    """Probabilities proportional to ``counts ** exponent``.

    Example:
        >>> noise_distribution(np.array([16, 1]), 0.5).round(2).tolist()
        [0.8, 0.2]
    """
    weights = np.asarray(counts, dtype=np.float64) ** exponent
    total = weights.sum()
    if not total > 0:
        raise ValueError("the noise distribution needs at least one positive count")
    probabilities: np.ndarray = weights / total
    return probabilities


def alias_table(probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias method: ``(prob float32[V], alias int32[V])`` for :func:`draw_noise`.

    The pairing loop is compiled (:func:`_vose`; in Python it took 2.45 us a word, 25 s at 10M words); it pairs in
    the same order as that loop did, so the tables, and the draws from them, are bit for bit the same.

    Example:
        >>> prob, alias = alias_table(np.array([0.5, 0.5]))
        >>> prob.tolist(), alias.tolist()
        ([1.0, 1.0], [0, 1])
    """
    p = np.asarray(probabilities, dtype=np.float64)
    n = len(p)
    scaled = p * n / p.sum()
    prob = np.ones(n, dtype=np.float64)
    alias = np.arange(n, dtype=np.int32)
    _vose(scaled, prob, alias)
    # Leftovers are 1 up to rounding.
    return prob.astype(np.float32), alias


@njit(cache=True, nogil=True)
def _vose(scaled: np.ndarray, prob: np.ndarray, alias: np.ndarray) -> None:  # pragma: no cover - numba
    # Two stacks, each first filled with its indices in descending order (so the lowest pops first); each pairing
    # pops one of each and pushes the large one back on the stack its new weight belongs to.
    n = len(scaled)
    small = np.empty(n, np.int64)
    large = np.empty(n, np.int64)
    ns = 0
    nl = 0
    for i in range(n - 1, -1, -1):
        if scaled[i] < 1.0:
            small[ns] = i
            ns += 1
        else:
            large[nl] = i
            nl += 1
    while ns > 0 and nl > 0:
        ns -= 1
        s = small[ns]
        nl -= 1
        g = large[nl]
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] = scaled[g] + scaled[s] - 1.0
        if scaled[g] < 1.0:
            small[ns] = g
            ns += 1
        else:
            large[nl] = g
            nl += 1


def word_noise_tables(counts: np.ndarray, exponent: float = 0.75) -> tuple[np.ndarray, np.ndarray]:
    """The alias table every one-process kernel, GPU reference and shard draws negatives from: one entry per word,
    over ``max(count, 0) ** exponent`` (:func:`noise_distribution`, :func:`alias_table`).  The tables over count
    classes (:func:`parvec.countclasses.noise_tables`) draw the same distribution from a table per count value.

    Example:
        >>> prob, alias = word_noise_tables(np.array([3, 1]))
        >>> prob.dtype.name, alias.dtype.name
        ('float32', 'int32')
    """
    return alias_table(noise_distribution(np.maximum(np.asarray(counts, dtype=np.int64), 0), exponent))


def keep_probabilities(counts: np.ndarray, sample: float) -> np.ndarray:
    """word2vec.c's subsampling: the probability of keeping each word (capped at 1).

    Example:
        >>> keep_probabilities(np.array([1000, 1]), 1e-3).round(3).tolist()
        [0.032, 1.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    return keep_of_counts(counts, float(counts.sum()), sample)


def keep_of_counts(counts: np.ndarray, total: float, sample: float) -> np.ndarray:
    """word2vec.c's keep probability (float32, capped at 1) of a word of each count in ``counts`` (float64) in a
    corpus of ``total`` words: per word (:func:`keep_probabilities`) or per count class
    (:func:`parvec.countclasses.keep_by_class`), one formula, so the two agree bit for bit.

    Example:
        >>> keep_of_counts(np.array([1000.0, 1.0]), 1001.0, 1e-3).round(3).tolist()
        [0.032, 1.0]
    """
    if sample <= 0 or len(counts) == 0:
        return np.ones(len(counts), dtype=np.float32)
    threshold = sample * total
    keep = (np.sqrt(counts / threshold) + 1.0) * threshold / np.maximum(counts, 1.0)
    capped: np.ndarray = np.minimum(keep, 1.0)  # a ufunc's result is Any to mypy
    return capped.astype(np.float32)
