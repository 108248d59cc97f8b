"""Counter-based random numbers for the GPU kernels and their CPU references.

A GPU kernel has no sequential random stream: thousands of blocks train sentences at once, in no fixed
order.  Every random choice is therefore a pure function of *where* it is made:

    h = counter_hash(key, sentence, position, stream)      key = epoch_key(seed, epoch)

two rounds of the splitmix64 finaliser over (key, sentence) and then (position, stream).  ``sentence`` is
the sentence's index in the epoch (after long sentences are cut), ``position`` a token position in it and
``stream`` says what the number is for (:data:`STREAM_SUBSAMPLE` on raw positions, :data:`STREAM_SHRINK`
and the negatives on subsampled positions, :data:`STREAM_CREP` on PAR's minibatch starts).  A run is
therefore reproducible whatever the scheduling, and a numpy reference draws exactly what a kernel draws.

The functions are ``numba.njit`` functions: the CPU references call them compiled, and numba-cuda
compiles the same functions as device functions when a CUDA kernel calls them (under the simulator the
kernel calls the CPU-compiled ones).  The mapping from a hash to numbers is the CPU kernels' (``rng_below``
takes the high 32 bits, the uniform coin the low 24, :func:`alias_draw` is ``draw_noise``'s alias lookup).

Example:
    >>> key = epoch_key(1, 0)
    >>> counter_hash(key, 3, 7, STREAM_SHRINK) == counter_hash(key, 3, 7, STREAM_SHRINK)
    True
"""

from __future__ import annotations

import numpy as np
from numba import njit

from parvec.sampling import splitmix64

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_S40 = np.uint64(40)
_S20 = np.uint64(20)
_LOW24 = np.uint64(0xFFFFFF)
_ONE = np.uint64(1)
_INV24 = np.float32(1.0 / (1 << 24))

# What a random number is for; the stream is part of the counter, so the uses never share a number.
STREAM_SUBSAMPLE = 0  # keep/drop of the raw token at a position
STREAM_SHRINK = 1  # the window shrink b of the center at a (subsampled) position
STREAM_CREP = 2  # PAR: C_rep of the minibatch starting at a position
STREAM_NEGATIVE = 3  # negative k of a center (FULL-W2V) or minibatch (PAR) is stream STREAM_NEGATIVE + k
MAX_STREAM = (1 << 20) - 1  # streams are packed beside the position in one 64-bit counter


def epoch_key(seed: int, epoch: int) -> np.uint64:
    """The key of one epoch's random numbers: splitmix64 of (seed, epoch), as the CPU trainer derives its
    chunk seeds.

    Example:
        >>> bool(epoch_key(1, 0) != epoch_key(1, 1))
        True
    """
    return np.uint64(splitmix64(splitmix64(int(seed)) ^ int(epoch)))


@njit(inline="always")
def mix64(z: np.uint64) -> np.uint64:
    """The splitmix64 finaliser: a bijection of 64-bit integers that mixes every input bit into every output
    bit.

    Example:
        >>> int(mix64(np.uint64(1))) != int(mix64(np.uint64(2)))
        True
    """
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@njit(inline="always")
def counter_hash(key: np.uint64, sentence: int, position: int, stream: int) -> np.uint64:
    """The 64 random bits of (key, sentence, position, stream).

    Example:
        >>> counter_hash(np.uint64(5), 0, 1, 0) != counter_hash(np.uint64(5), 0, 1, 1)
        True
    """
    x = mix64(key + (np.uint64(sentence) + _ONE) * GOLDEN)
    return mix64((x ^ ((np.uint64(position) << _S20) | np.uint64(stream))) + GOLDEN)


@njit(inline="always")
def hash_below(h: np.uint64, n: int) -> np.int64:
    """An integer in [0, n) from the high 32 bits of ``h`` (multiply-shift, as ``parvec.sampling.rng_below``).

    Example:
        >>> 0 <= hash_below(np.uint64(2**63), 10) < 10
        True
    """
    return np.int64(((h >> _S32) * np.uint64(n)) >> _S32)


@njit(inline="always")
def hash_coin(h: np.uint64) -> np.float32:
    """A float32 in [0, 1) from the low 24 bits of ``h`` (as ``parvec.sampling.rng_uniform``).

    Example:
        >>> 0.0 <= hash_coin(np.uint64(12345)) < 1.0
        True
    """
    return np.float32(h & _LOW24) * _INV24


@njit(inline="always")
def hash_uniform(h: np.uint64) -> np.float32:
    """A float32 in [0, 1) from the high 24 bits of ``h`` (subsampling's coin).

    Example:
        >>> 0.0 <= hash_uniform(np.uint64(2**64 - 1)) < 1.0
        True
    """
    return np.float32(h >> _S40) * _INV24


@njit(inline="always")
def alias_draw(h: np.uint64, prob: np.ndarray, alias: np.ndarray) -> np.int64:
    """One draw from an alias table (``parvec.sampling.alias_table``): column from the high bits, coin from
    the low bits, as ``parvec.sampling.draw_noise``.

    Example:
        >>> prob, alias = np.ones(4, np.float32), np.arange(4, dtype=np.int32)
        >>> 0 <= alias_draw(np.uint64(99), prob, alias) < 4
        True
    """
    j = hash_below(h, len(prob))
    if hash_coin(h) < prob[j]:
        return j
    return np.int64(alias[j])


@njit(inline="always")
def keeps_token(key: np.uint64, sentence: int, position: int, keep_p: np.float32) -> bool:
    """Subsampling: whether the raw token at ``position`` (keep probability ``keep_p``) is kept.  Words with
    ``keep_p >= 1`` are always kept, as in the CPU kernels.

    Example:
        >>> keeps_token(np.uint64(1), 0, 0, np.float32(1.0))
        True
    """
    if keep_p >= np.float32(1.0):
        return True
    return hash_uniform(counter_hash(key, sentence, position, STREAM_SUBSAMPLE)) < keep_p


@njit(inline="always")
def window_shrink(key: np.uint64, sentence: int, position: int, window: int) -> np.int64:
    """The center at ``position`` trains contexts within ``window - b`` words, ``b`` uniform in [0, window)
    (word2vec.c's random window).

    Example:
        >>> 0 <= window_shrink(np.uint64(1), 0, 4, 5) < 5
        True
    """
    return hash_below(counter_hash(key, sentence, position, STREAM_SHRINK), window)


@njit(inline="always")
def negative_pick(key: np.uint64, sentence: int, position: int, k: int, n: int) -> tuple[np.int64, np.float32]:
    """Negative ``k`` at ``position`` before the alias lookup: (column in [0, n), coin in [0, 1)); the draw
    is the column if the coin is below the column's probability, else the column's alias.  Kernels look the
    table up themselves (under numba's simulator their arrays cannot be passed to a compiled function).

    Example:
        >>> j, coin = negative_pick(np.uint64(1), 0, 0, 0, 10)
        >>> 0 <= j < 10 and 0.0 <= coin < 1.0
        True
    """
    h = counter_hash(key, sentence, position, STREAM_NEGATIVE + k)
    return hash_below(h, n), hash_coin(h)


@njit(inline="always")
def negative_sample(key: np.uint64, sentence: int, position: int, k: int, prob: np.ndarray,
                    alias: np.ndarray) -> np.int64:
    """Negative ``k`` of the center (or PAR minibatch) at ``position``, from the alias table.

    Example:
        >>> prob, alias = np.ones(4, np.float32), np.arange(4, dtype=np.int32)
        >>> 0 <= negative_sample(np.uint64(1), 0, 0, 2, prob, alias) < 4
        True
    """
    j, coin = negative_pick(key, sentence, position, k, len(prob))
    if coin < prob[j]:
        return j
    return np.int64(alias[j])


@njit(inline="always")
def par_c_rep(key: np.uint64, sentence: int, min_pos: int, n: int, window: int) -> np.int64:
    """PAR's ``C_rep`` for the minibatch starting at ``min_pos`` of an ``n``-word sentence (Algorithm 4,
    lines 5-9): uniform in [0, window) near either end of the sentence, else in [0, 2 window).

    Example:
        >>> 0 <= par_c_rep(np.uint64(1), 0, 0, 100, 5) < 5
        True
    """
    h = counter_hash(key, sentence, min_pos, STREAM_CREP)
    if min_pos <= window - 1 or n - 1 - min_pos <= window - 1:
        return hash_below(h, window)
    return hash_below(h, 2 * window)
