"""Column-sharded skip-gram with negative sampling (Ordentlich et al., "Network-efficient distributed
word2vec training system for large vocabularies", CIKM 2016, Figures 5-7): the numba kernels.

Shard ``s`` of ``S`` holds columns ``[s*d//S, (s+1)*d//S)`` of *both* matrices for every word.  A
*minibatch* is a run of input (center) words with their context (positive output) words; each
(input, positive) pair gets ``negative`` noise words drawn from a seed, so every shard draws the same
ones from the same alias table.  Three kernels make one minibatch SGD step:

- :func:`dotprod` (shard side): the shard's partial dot products ``u_s(input) . v_s(output)`` for every
  (input, positive) pair and its negatives, in the order ``[pos, neg_1 .. neg_N]`` per pair.
- :func:`coefficients` (client side): from the summed partials, the gradient coefficients
  ``alpha * (label - sigmoid(f))`` (word2vec.c's saturation at +-6, as :func:`parvec.kernels.classic.sgns_step`)
  and the SGNS loss.
- :func:`adjust` (shard side): regenerates the same negatives and applies ``u += sum coef * v`` and
  ``v += coef * u`` to its columns, every product reading the vectors *as they were at the start of the
  call* (the paper's detail): the input deltas are gathered first (reading ``v``), then ``v`` is updated
  (reading ``u``, not yet changed), then the input deltas are added.

parvec's default shares the negatives per window instead (``negatives_per="window"``: :func:`window_rows`,
:func:`dotprod_window_rows`, :func:`adjust_window_rows`, below): each input word's context words share its
negatives, Ji et al.'s batches; the same dot products in the same layout, a third of the rows.

Only indices, seeds and scalars cross between client and shards: a minibatch is sent as the kept-word
runs it covers (``seq``), one row per run (``seg``) and the window shrink of each input (``shrink``);
the shard rebuilds the pairs from them.

The orientation is the paper's: the input vector ``u`` (``w_in``, the exported vectors) of the center word
against the output vectors ``v`` (``w_out``) of its context words and their negatives.  A negative equal
to its positive output word is drawn again (the paper's "N negative word indices != w_O"), so every pair
has exactly ``negative`` negatives and the client knows the layout of what comes back.

Minibatch formation (client side) follows word2vec.c: a unit's sentences are subsampled first
(:func:`subsample_unit`, with :func:`parvec.sampling.subsample_sentence`: a per-word keep table, or
the head of one over the first ids, every later word kept), then each kept word's window
shrinks by ``b`` in ``[0, window)``; the random stream comes from (seed, epoch, unit) exactly as the
one-process trainer's.  :func:`form_interleaved` then takes each minibatch's inputs from lanes far apart in
the unit (the paper's interleaved minibatch formation) or, with one lane, contiguously.

:func:`init_columns` generates columns ``[lo, hi)`` of word2vec.c's initial input vectors
(:func:`parvec.model_tables.init_input_vectors`) without the other columns: its LCG jumps over them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from parvec.countclasses import draw_class_noise
from parvec.kernels.fastmath import FASTMATH
from parvec.kernels.hogbatch import batch_apply, batch_scores, borrowed, prefetch_row, sgns_block, train_batch
from parvec.sampling import draw_noise, rng_below, rng_next, subsample_sentence

_M64 = (1 << 64) - 1
_LCG_MUL = 25214903917
_LCG_INC = 11
# Draws of a negative equal to its positive output before giving up on the alias table (then the next id).
_MAX_REDRAWS = 64

# seg columns: where a run starts in seq, its length, its first input and one past its last input
# (both relative to the run's start).
SEG_START, SEG_LEN, SEG_IN_LO, SEG_IN_HI = 0, 1, 2, 3


# --------------------------------------------------------------------------- initial vectors
def lcg_jump(steps: int) -> tuple[int, int]:
    """``(A, C)`` with ``state_after(steps) = A * state + C (mod 2**64)`` for word2vec.c's LCG.

    Example:
        >>> a, c = lcg_jump(2)
        >>> (a * 7 + c) % 2**64 == ((7 * 25214903917 + 11) * 25214903917 + 11) % 2**64
        True
    """
    a, c = 1, 0  # the identity map
    mul, inc = _LCG_MUL, _LCG_INC  # the map for 2^k steps, squared as k grows
    while steps:
        if steps & 1:
            a, c = (a * mul) & _M64, (c * mul + inc) & _M64
        mul, inc = (mul * mul) & _M64, (inc * mul + inc) & _M64
        steps >>= 1
    return a, c


@njit(nogil=True, cache=True)
def _init_columns(n, dim, lo, hi, state, row_a, row_c, out):
    mul = np.uint64(_LCG_MUL)
    inc = np.uint64(_LCG_INC)
    for a in range(n):
        s0 = state
        for b in range(hi - lo):
            state = state * mul + inc
            out[a, b] = (np.float32(state & np.uint64(0xFFFF)) / np.float32(65536.0) - np.float32(0.5)) / dim
        state = s0 * row_a + row_c  # the start of the next row's block, dim steps after this row's
    return out


def init_columns(n: int, dim: int, lo: int, hi: int, seed: int = 1, out: np.ndarray | None = None) -> np.ndarray:
    """Columns ``[lo, hi)`` of :func:`parvec.model_tables.init_input_vectors` ``(n, dim, seed)``, bit for bit,
    in ``n * (hi - lo)`` floats of memory (written into ``out``, a C-contiguous float32 ``(n, hi - lo)`` array,
    when given: a shard restoring its initial columns allocates nothing).

    Example:
        >>> from parvec.model_tables import init_input_vectors
        >>> bool((init_columns(5, 8, 2, 5) == init_input_vectors(5, 8)[:, 2:5]).all())
        True
    """
    if not 0 <= lo <= hi <= dim:
        raise ValueError(f"columns [{lo}, {hi}) are not inside [0, {dim})")
    a, c = lcg_jump(lo)
    state = (a * (seed & _M64) + c) & _M64  # the state just before element (0, lo)
    row_a, row_c = lcg_jump(dim)
    if out is None:
        out = np.empty((n, hi - lo), dtype=np.float32)
    elif out.shape != (n, hi - lo) or out.dtype != np.float32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float32 array of shape {(n, hi - lo)}")
    return _init_columns(n, dim, lo, hi, np.uint64(state), np.uint64(row_a), np.uint64(row_c), out)


def column_range(shard: int, shards: int, dim: int) -> tuple[int, int]:
    """The columns ``[lo, hi)`` shard ``shard`` of ``shards`` holds: ``[s*d//S, (s+1)*d//S)``.

    Example:
        >>> [column_range(s, 3, 10) for s in range(3)]
        [(0, 3), (3, 6), (6, 10)]
    """
    return shard * dim // shards, (shard + 1) * dim // shards


# --------------------------------------------------------------------------- negatives
@njit(inline="always")
def _negative(state, positive, noise_prob, noise_alias):
    """The next negative for output word ``positive``: drawn again while equal to it.

    ``(noise_prob, noise_alias)`` is either a per-word alias table (:func:`parvec.sampling.word_noise_tables`:
    both of the vocabulary's length) or a table over count classes (:func:`parvec.countclasses.noise_tables`:
    ``noise_alias`` holds ``2K + 1`` entries for ``K`` classes, never ``K``), told apart by their lengths; both
    use one random state per draw, so the stream advances alike."""
    per_word = len(noise_alias) == len(noise_prob)
    n_words = len(noise_prob) if per_word else np.int64(noise_alias[len(noise_alias) - 1])
    for _ in range(_MAX_REDRAWS):
        state = rng_next(state)
        if per_word:
            t = draw_noise(state, noise_prob, noise_alias)
        else:
            t = draw_class_noise(state, noise_prob, noise_alias)
        if t != positive:
            return state, t
    # The noise distribution is (almost) all on ``positive``: take the next id (never equal to it).
    return state, (positive + 1) % n_words


@njit(nogil=True, cache=True)
def minibatch_negatives(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed):
    """The negatives :func:`dotprod` and :func:`adjust` draw for a minibatch: int64[pairs, negative].

    Example:
        >>> negs = minibatch_negatives(seq, seg, shrink, 5, 5, prob, alias, np.uint64(7))  # doctest: +SKIP
    """
    n_pairs = count_pairs(seg, shrink, window)
    out = np.empty((n_pairs, negative), dtype=np.int64)
    state = seed
    p = 0
    m = 0
    for g in range(seg.shape[0]):
        base = seg[g, SEG_START]
        n = seg[g, SEG_LEN]
        for i in range(seg[g, SEG_IN_LO], seg[g, SEG_IN_HI]):
            r = np.int64(shrink[m])
            m += 1
            for j in range(max(0, i - window + r), min(n, i + window - r + 1)):
                if j == i:
                    continue
                ctx = seq[base + j]
                for k in range(negative):
                    state, t = _negative(state, ctx, noise_prob, noise_alias)
                    out[p, k] = t
                p += 1
    return out


@njit(nogil=True, cache=True)
def count_pairs(seg, shrink, window):
    """The (input, positive) pairs of a minibatch.

    Example:
        >>> count_pairs(np.array([[0, 3, 0, 3]], np.int32), np.zeros(3, np.uint16), 1)
        4
    """
    total = 0
    m = 0
    for g in range(seg.shape[0]):
        n = seg[g, SEG_LEN]
        for i in range(seg[g, SEG_IN_LO], seg[g, SEG_IN_HI]):
            r = np.int64(shrink[m])
            m += 1
            total += min(n, i + window - r + 1) - max(0, i - window + r) - 1
    return total


# --------------------------------------------------------------------------- shard side
# Pairs ahead whose output rows are prefetched: each pair touches 1 + negative random rows of w_out.
_AHEAD = 2


@njit(inline="always")
def _pairs_and_negatives(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, centers, outs):
    """Fill ``centers[p]`` (the input row) and ``outs[p * (1 + negative) + k]`` (the positive, then its
    negatives) for every pair of the minibatch, in the order of the partial dot products; returns the pairs."""
    state = seed
    p = 0
    m = 0
    stride = 1 + negative
    for g in range(seg.shape[0]):
        base = seg[g, SEG_START]
        n = seg[g, SEG_LEN]
        for i in range(seg[g, SEG_IN_LO], seg[g, SEG_IN_HI]):
            center = seq[base + i]
            r = np.int64(shrink[m])
            m += 1
            for j in range(max(0, i - window + r), min(n, i + window - r + 1)):
                if j == i:
                    continue
                ctx = seq[base + j]
                centers[p] = center
                outs[p * stride] = ctx
                for k in range(negative):
                    state, t = _negative(state, ctx, noise_prob, noise_alias)
                    outs[p * stride + 1 + k] = t
                p += 1
    return p


@njit(inline="always")
def _prefetch_pair(w_out, outs, q, stride):
    for k in range(stride):
        prefetch_row(w_out, outs[q + k])


@njit(nogil=True, cache=True)
def pair_rows(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, centers, outs):
    """The rows a minibatch touches, in :func:`dotprod`'s order: ``centers[p]`` (pair ``p``'s input row) and
    ``outs[p * (1 + negative) + k]`` (its positive, then its negatives, drawn from ``seed``); returns the pairs.

    :func:`dotprod` and :func:`adjust` draw them for themselves; a shard that keeps them from a minibatch's
    dot products passes them to :func:`adjust_rows` instead of drawing the same negatives again.

    Example:
        >>> n = pair_rows(seq, seg, shrink, 5, 5, prob, alias, np.uint64(7), centers, outs)  # doctest: +SKIP
    """
    return _pairs_and_negatives(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, centers, outs)


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def dotprod_rows(w_in, w_out, centers, outs, n_pairs, out):
    """Partial dot products of pairs ``0 .. n_pairs`` given their rows (:func:`pair_rows`); returns how many
    were written (``out``'s layout is :func:`dotprod`'s).

    Example:
        >>> dotprod_rows(w_in, w_out, centers, outs, n_pairs, out)  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    stride = len(out) // n_pairs if n_pairs else 1  # out holds exactly n_pairs x (1 + negative)
    for p in range(min(_AHEAD, n_pairs)):
        _prefetch_pair(w_out, outs, p * stride, stride)
    for p in range(n_pairs):
        if p + _AHEAD < n_pairs:
            _prefetch_pair(w_out, outs, (p + _AHEAD) * stride, stride)
        center = centers[p]
        for k in range(stride):
            t = outs[p * stride + k]
            f = np.float32(0.0)
            for c in range(dim):
                f += w_in[center, c] * w_out[t, c]
            out[p * stride + k] = f
    return n_pairs * stride


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def dotprod(w_in, w_out, seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, out):
    """Partial dot products of this shard's columns (paper Figure 5); returns how many were written.

    ``out[p * (1 + negative)]`` is pair ``p``'s positive, the next ``negative`` its negatives.

    Example:
        >>> k = dotprod(w_in, w_out, seq, seg, shrink, 5, 5, prob, alias, np.uint64(7), out)  # doctest: +SKIP
    """
    stride = 1 + negative
    n_pairs = len(out) // stride
    centers = np.empty(max(1, n_pairs), dtype=np.int64)
    outs = np.empty(max(1, n_pairs * stride), dtype=np.int64)
    n_pairs = _pairs_and_negatives(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, centers, outs)
    return dotprod_rows(w_in, w_out, centers, outs, n_pairs, out[: n_pairs * stride])


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def adjust_rows(w_in, w_out, seg, shrink, window, centers, outs, n_pairs, coef):
    """:func:`adjust` given the minibatch's rows (:func:`pair_rows`, the same seed); returns the pairs updated.

    Example:
        >>> adjust_rows(w_in, w_out, seg, shrink, 5, centers, outs, n_pairs, coef)  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    stride = len(coef) // n_pairs if n_pairs else 1  # coef holds exactly n_pairs x (1 + negative)
    n_in = len(shrink)
    du = np.zeros((max(1, n_in), dim), dtype=np.float32)
    first = np.empty(max(1, n_in + 1), dtype=np.int64)  # each input's first pair
    # Inputs own consecutive pairs: input m's pairs are first[m] .. first[m + 1].
    m = 0
    p = 0
    for g in range(seg.shape[0]):
        n = seg[g, SEG_LEN]
        for i in range(seg[g, SEG_IN_LO], seg[g, SEG_IN_HI]):
            r = np.int64(shrink[m])
            first[m] = p
            p += min(n, i + window - r + 1) - max(0, i - window + r) - 1
            m += 1
    first[n_in] = p
    # 1. du[m] = sum over m's pairs of coef * v(output), reading v before any change.
    for q in range(min(_AHEAD, n_pairs)):
        _prefetch_pair(w_out, outs, q * stride, stride)
    for m in range(n_in):
        for q in range(first[m], first[m + 1]):
            if q + _AHEAD < n_pairs:
                _prefetch_pair(w_out, outs, (q + _AHEAD) * stride, stride)
            for k in range(stride):
                gk = coef[q * stride + k]
                t = outs[q * stride + k]
                for c in range(dim):
                    du[m, c] += gk * w_out[t, c]
    # 2. v(output) += coef * u(center), reading u before any change.
    for q in range(min(_AHEAD, n_pairs)):
        _prefetch_pair(w_out, outs, q * stride, stride)
    for q in range(n_pairs):
        if q + _AHEAD < n_pairs:
            _prefetch_pair(w_out, outs, (q + _AHEAD) * stride, stride)
        center = centers[q]
        for k in range(stride):
            gk = coef[q * stride + k]
            t = outs[q * stride + k]
            for c in range(dim):
                w_out[t, c] += gk * w_in[center, c]
    # 3. u(center) += du.
    for m in range(n_in):
        if first[m + 1] > first[m]:
            center = centers[first[m]]
            for c in range(dim):
                w_in[center, c] += du[m, c]
    return n_pairs


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def adjust(w_in, w_out, seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, coef):
    """Apply a minibatch's updates to this shard's columns (paper Figure 6); returns the pairs updated.

    ``coef`` has :func:`dotprod`'s layout.  Every product reads the vectors as they were when the call
    started: input deltas are gathered first, output rows updated next (reading the unchanged input
    rows), input deltas added last.

    Example:
        >>> adjust(w_in, w_out, seq, seg, shrink, 5, 5, prob, alias, np.uint64(7), coef)  # doctest: +SKIP
    """
    stride = 1 + negative
    n_pairs = len(coef) // stride
    centers = np.empty(max(1, n_pairs), dtype=np.int64)
    outs = np.empty(max(1, n_pairs * stride), dtype=np.int64)
    n_pairs = _pairs_and_negatives(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, centers, outs)
    return adjust_rows(w_in, w_out, seg, shrink, window, centers, outs, n_pairs, coef[: n_pairs * stride])


# --------------------------------------------------------------------------- window batches (Ji et al.)
# ``negatives_per="window"``: each input word of a minibatch (a center) is one batch in Ji et al.'s sense (HogBatch,
# parvec.kernels.hogbatch): its context words are the batch's inputs (rows of w_in) and the center with
# ``negative`` noise words drawn once for the batch (never the center) its shared outputs (rows of w_out) --
# word2vec.c's orientation, in which the context word's input vector meets the center's output vector.
# Every (context, center) pair still meets ``negative`` negatives, so the dot products, their layout
# (``p * (1 + negative) + k``, pair ``p``'s positive then its negatives) and the client are the per-pair
# algorithm's; a center's batch touches ``contexts + 1 + negative`` rows instead of ``contexts x
# (2 + negative)`` and draws ``negative`` negatives instead of ``contexts x negative``.
@njit(inline="always")
def _window_rows(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, ins, outs, first):
    state = seed
    p = 0
    m = 0
    stride = 1 + negative
    for g in range(seg.shape[0]):
        base = seg[g, SEG_START]
        n = seg[g, SEG_LEN]
        for i in range(seg[g, SEG_IN_LO], seg[g, SEG_IN_HI]):
            center = seq[base + i]
            r = np.int64(shrink[m])
            first[m] = p
            for j in range(max(0, i - window + r), min(n, i + window - r + 1)):
                if j == i:
                    continue
                ins[p] = seq[base + j]
                p += 1
            outs[m * stride] = center
            for k in range(negative):
                state, t = _negative(state, center, noise_prob, noise_alias)
                outs[m * stride + 1 + k] = t
            m += 1
    first[m] = p
    return p


@njit(nogil=True, cache=True)
def window_rows(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, ins, outs, first):
    """The rows a minibatch's window batches touch: ``ins[p]`` (pair ``p``'s context word, a row of w_in),
    ``outs[m * (1 + negative) + k]`` (input ``m``'s center, then its negatives drawn from ``seed``: rows of
    w_out) and ``first[m]`` (input ``m``'s first pair; ``len(shrink) + 1`` entries); returns the pairs.

    Example:
        >>> n = window_rows(seq, seg, shrink, 5, 5, prob, alias, np.uint64(7), ins, outs, first)  # doctest: +SKIP
    """
    return _window_rows(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, ins, outs, first)


@njit(inline="always")
def _prefetch_batch(w_in, w_out, ins, outs, first, m, stride):
    # window batch m's rows on their way into cache; nothing past the last batch
    if m >= len(first) - 1:
        return
    for k in range(stride):
        prefetch_row(w_out, outs[m * stride + k])
    for p in range(first[m], first[m + 1]):
        prefetch_row(w_in, ins[p])


@njit(inline="always")
def batch_stride(outs, first):
    """The rows per input word's outputs (its center and negatives) in :func:`window_rows`' layout.

    Example:
        >>> batch_stride(np.zeros(12, np.int64), np.array([0, 2, 5]))
        6
    """
    n_in = len(first) - 1
    return len(outs) // n_in if n_in else 1


@njit(inline="always")
def _positive_labels(most, stride):
    # labels of up to ``most`` contexts against [center, negatives...]: 1 for the center, 0 for the negatives
    lab = np.zeros(max(1, most * stride), dtype=np.float32)
    for p in range(most):
        lab[p * stride] = 1.0
    return lab


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def dotprod_window_rows(w_in, w_out, ins, outs, first, out):
    """Partial dot products of a minibatch's window batches given their rows (:func:`window_rows`), in
    :func:`dotprod`'s layout; returns how many were written.

    Example:
        >>> dotprod_window_rows(w_in, w_out, ins, outs, first, out)  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    n_in = len(first) - 1
    stride = batch_stride(outs, first)
    _prefetch_batch(w_in, w_out, ins, outs, first, 0, stride)
    for m in range(n_in):
        _prefetch_batch(w_in, w_out, ins, outs, first, m + 1, stride)
        # the batch's contexts against its center and negatives: hogbatch's scores, in dotprod's layout
        lo = first[m]
        batch_scores(w_in, w_out, ins, lo, first[m + 1] - lo, outs[m * stride:(m + 1) * stride], stride,
                     out[lo * stride:], dim)
    return first[n_in] * stride


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def adjust_window_rows(w_in, w_out, ins, outs, first, coef):
    """Apply a minibatch's window-batch updates given their rows (:func:`window_rows`); ``coef`` has
    :func:`dotprod`'s layout.  Batch by batch with hogbatch's own update (:func:`parvec.kernels.hogbatch.
    batch_apply`): within an input word's batch every product reads the rows as they were when the batch
    started, and a batch sees the batches before it.  One visit per row while it is in cache, where
    applying the whole minibatch from the call's start would take three passes over rows no longer cached.
    Returns the pairs updated.

    Example:
        >>> adjust_window_rows(w_in, w_out, ins, outs, first, coef)  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    n_in = len(first) - 1
    stride = batch_stride(outs, first)
    do = np.empty((stride, dim), dtype=np.float32)
    _prefetch_batch(w_in, w_out, ins, outs, first, 0, stride)
    for m in range(n_in):
        _prefetch_batch(w_in, w_out, ins, outs, first, m + 1, stride)
        # the batch's contexts and its center and negatives, with their coefficients: hogbatch's update
        lo = first[m]
        batch_apply(w_in, w_out, ins, lo, first[m + 1] - lo, outs[m * stride:(m + 1) * stride], stride,
                    coef[lo * stride:], do, dim)
    return first[n_in] if n_in else 0


# --------------------------------------------------------------------------- rows many updates hit (split calls)
HEAD_ROWS = 1 << 16  # row ids counted in a dense table (parvec.kernels.sharded_combine); the rest by sorting


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def train_window_rows(w_in, w_out, ins, outs, first, alpha_in):
    """Train a minibatch's window batches whole, given their rows (:func:`window_rows`): for each input word its
    contexts' scores against its center and negatives, the coefficients ``alpha * (label - sigmoid)`` and the
    update, batch by batch with hogbatch's own step (:func:`parvec.kernels.hogbatch.train_batch`, its copies
    compiled for d 100 and 300 included).  The one-shard
    call (``shard_calls="fused"``): a shard holding every column has the whole dot products itself, so no partial
    sums go to the client and no coefficients come back.  ``alpha_in[m]``: input ``m``'s learning rate.  Returns
    the minibatch's SGNS loss, as :func:`coefficients` reports it.

    Example:
        >>> loss = train_window_rows(w_in, w_out, ins, outs, first, alpha_in)  # doctest: +SKIP
    """
    w_in, w_out = borrowed(w_in), borrowed(w_out)  # shared by the shard's threads: no atomic reference counts
    n_in = len(first) - 1
    stride = batch_stride(outs, first)
    most = 0
    for m in range(n_in):
        most = max(most, first[m + 1] - first[m])
    lab = _positive_labels(most, stride)
    g = np.empty(len(lab), dtype=np.float32)
    do = np.empty((stride, w_in.shape[1]), dtype=np.float32)
    loss = 0.0
    _prefetch_batch(w_in, w_out, ins, outs, first, 0, stride)
    for m in range(n_in):
        _prefetch_batch(w_in, w_out, ins, outs, first, m + 1, stride)
        lo = first[m]
        if first[m + 1] > lo:
            loss += train_batch(w_in, w_out, ins, lo, first[m + 1] - lo, outs[m * stride:(m + 1) * stride], stride,
                                np.float32(alpha_in[m]), do, g, lab, True)
    return loss


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def dotprod_window(w_in, w_out, seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, out):
    """:func:`dotprod` with window batches (``negatives_per="window"``): the negatives are drawn per input word and
    shared by its context words (:func:`window_rows`); the same layout.  Returns how many were written.

    Example:
        >>> k = dotprod_window(w_in, w_out, seq, seg, shrink, 5, 5, prob, alias, np.uint64(7), out)  # doctest: +SKIP
    """
    stride = 1 + negative
    n_in = len(shrink)
    ins = np.empty(max(1, len(out) // stride), dtype=np.int64)
    outs = np.empty(max(1, n_in * stride), dtype=np.int64)
    first = np.empty(n_in + 1, dtype=np.int64)
    n_pairs = _window_rows(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, ins, outs, first)
    return dotprod_window_rows(w_in, w_out, ins, outs[: n_in * stride], first, out[: n_pairs * stride])


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def adjust_window(w_in, w_out, seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, coef):
    """:func:`adjust` with window batches (:func:`dotprod_window`'s rows, drawn again from ``seed``).

    Example:
        >>> adjust_window(w_in, w_out, seq, seg, shrink, 5, 5, prob, alias, np.uint64(7), coef)  # doctest: +SKIP
    """
    stride = 1 + negative
    n_in = len(shrink)
    ins = np.empty(max(1, len(coef) // stride), dtype=np.int64)
    outs = np.empty(max(1, n_in * stride), dtype=np.int64)
    first = np.empty(n_in + 1, dtype=np.int64)
    n_pairs = _window_rows(seq, seg, shrink, window, negative, noise_prob, noise_alias, seed, ins, outs, first)
    return adjust_window_rows(w_in, w_out, ins, outs[: n_in * stride], first, coef[: n_pairs * stride])


# --------------------------------------------------------------------------- float16 on the wire
# numpy's float16 casts run ~2.5 ns a value (a call's ~75,000 dot products: ~0.2 ms each way, per side), which
# cost more than the bytes they saved; these run ten times faster, bit for bit the same.
_HALF_POW2 = np.array([2.0 ** -24] + [2.0 ** (e - 25) for e in range(1, 32)], dtype=np.float32)


@njit(nogil=True, cache=True)
def float_to_half(src, bits, out):
    """``src`` (float32) rounded to IEEE half precision, nearest even, as numpy's ``astype(np.float16)`` rounds
    it (overflow to infinity, subnormals kept), written as raw bits to ``out`` (uint16); ``bits`` is ``src``
    viewed as uint32.  Returns ``out``.

    Example:
        >>> x = np.array([1.0, -0.1, 70000.0], np.float32)
        >>> float_to_half(x, x.view(np.uint32), np.empty(3, np.uint16)).view(np.float16).tolist()
        [1.0, -0.0999755859375, inf]
    """
    for i in range(src.shape[0]):
        u = np.uint32(bits[i])
        sign = (u >> np.uint32(16)) & np.uint32(0x8000)
        u &= np.uint32(0x7FFFFFFF)
        if u >= np.uint32(143 << 23):  # 65536 or more: infinity; or NaN
            o = np.uint32(0x7E00) if u > np.uint32(255 << 23) else np.uint32(0x7C00)
        elif u < np.uint32(113 << 23):  # below 2**-14: a half subnormal (or zero), exact in float64 then rounded
            o = np.uint32(np.rint(np.float64(abs(src[i])) * 16777216.0))
        else:  # rebias the exponent, round the 13 dropped bits to nearest even (a carry may reach infinity)
            o = (u + np.uint32(0xC8000FFF) + ((u >> np.uint32(13)) & np.uint32(1))) >> np.uint32(13)
        out[i] = np.uint16(o | sign)
    return out


@njit(nogil=True, cache=True)
def half_to_float(src, scale, out, accumulate):
    """IEEE half precision bits ``src`` (uint16) as float32 times ``scale``, written to ``out`` or, with
    ``accumulate``, added to it (a client summing its shards' partial dot products).  Returns ``out``.

    Example:
        >>> h = np.array([1.0, -0.5], np.float16).view(np.uint16)
        >>> half_to_float(h, np.float32(2.0), np.zeros(2, np.float32), False).tolist()
        [2.0, -1.0]
    """
    for i in range(src.shape[0]):
        h = np.int32(src[i])
        e = (h >> 10) & 31
        m = (h & 1023) | (np.int32(1024) if e != 0 else np.int32(0))
        v = np.float32(m) * _HALF_POW2[e]
        if e == 31:  # infinity (no mantissa) or NaN
            v = np.float32(np.inf) if m == 1024 else np.float32(np.nan)
        v = (-v if h & 0x8000 else v) * scale
        if accumulate:
            out[i] += v
        else:
            out[i] = v
    return out


# --------------------------------------------------------------------------- client side
@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def coefficients(f, n_ctx, alpha_in, negative, coef):
    """Gradient coefficients ``alpha * (label - sigmoid(f))`` from the summed dot products; returns the
    minibatch's SGNS loss (each positive's and its negatives' terms, as the one-process kernels report).

    ``n_ctx[m]`` is input ``m``'s number of positives and ``alpha_in[m]`` its learning rate.  The sigmoid,
    its saturation at +-6 and the loss are :func:`parvec.kernels.hogbatch.sgns_block`'s (vectorised).

    Example:
        >>> loss = coefficients(f, n_ctx, alpha_in, 5, coef)  # doctest: +SKIP
    """
    stride = 1 + negative
    most = 0
    for m in range(len(n_ctx)):
        most = max(most, n_ctx[m])
    lab = _positive_labels(most, stride)
    loss = 0.0
    k = 0
    for m in range(len(n_ctx)):
        n = n_ctx[m] * stride
        for j in range(n):
            coef[k + j] = f[k + j]
        loss += sgns_block(coef[k:k + n], lab, n, np.float32(alpha_in[m]), True)
        k += n
    return loss


@njit(nogil=True, cache=True)
def subsample_unit(tokens, offsets, s_lo, s_hi, keep, window, state, kept, sent_off, shrink, pos):
    """Subsample sentences ``s_lo .. s_hi`` once and draw every kept word's window shrink, in word2vec.c's
    order (a sentence's subsampling, then its words' shrinks, then the next sentence).

    ``keep`` is the keep probabilities of the first ``len(keep)`` ids (every later id is always kept): a whole
    per-word table, or its head (:func:`parvec.countclasses.keep_head`), which keeps the same words with the same
    random stream.  Writes the kept words of the sentences with at least two of them (the others train nothing) into
    ``kept``, their starts into ``sent_off`` (one more entry than sentences), each kept word's shrink and its
    position in raw words from ``s_lo`` (for the learning rate).  Capacity: ``offsets[s_hi] - offsets[s_lo]``
    words, that plus one sentence starts.  Returns ``(kept words, sentences, RNG state)``.

    Example:
        >>> n, n_sent, state = subsample_unit(tokens, offsets, 0, 3, keep, 5, state, kept, sent_off,
        ...                                    shrink, pos)  # doctest: +SKIP
    """
    n_kept = 0
    n_sent = 0
    before = 0
    sent_off[0] = 0
    for s in range(s_lo, s_hi):
        start = offsets[s]
        end = offsets[s + 1]
        raw_len = end - start
        n, state = subsample_sentence(tokens, start, end, keep, state, kept[n_kept:])
        if n >= 2:
            for j in range(n):
                state = rng_next(state)
                shrink[n_kept + j] = rng_below(state, window)
                pos[n_kept + j] = before + j * raw_len / n
            n_kept += n
            n_sent += 1
            sent_off[n_sent] = n_kept
        before += raw_len
    return n_kept, n_sent, state


@njit(nogil=True, cache=True)
def lane_bounds(n_kept, lanes):
    """Where each of ``lanes`` interleaved lanes of ``n_kept`` kept words starts (``lanes + 1`` entries).

    Example:
        >>> lane_bounds(10, 3).tolist()
        [0, 3, 6, 10]
    """
    lanes = max(1, min(lanes, n_kept))
    out = np.empty(lanes + 1, dtype=np.int64)
    for lane in range(lanes + 1):
        out[lane] = lane * n_kept // lanes
    return out


@njit(nogil=True, cache=True)
def form_interleaved(kept, sent_off, n_sent, shrink_all, pos_all, lanes, per_lane, index, window,
                     seq, seg, shrink, n_ctx, pos):
    """Minibatch ``index`` of a subsampled unit (:func:`subsample_unit`): the next ``per_lane`` inputs of
    every lane (``lanes`` from :func:`lane_bounds`), so a minibatch's inputs lie far apart in the corpus.

    This is the paper's *interleaved minibatch formation* (Ordentlich et al., section 5): neighbouring
    words of a sentence go to successive minibatches and learn from each other within an epoch, and a
    burst of one word (a table, markup: "em width one em em height ...") is spread over many minibatches
    instead of being summed a hundred times from one stale state.  With one lane it is the contiguous
    formation: minibatch ``index`` is kept words ``[index * per_lane, (index + 1) * per_lane)``.

    Outputs: ``seq`` (the runs' kept words with their windows' context words: capacity
    ``inputs * (2 * window + 1)``), ``seg`` (one row per run: a lane's run is split at sentence ends;
    capacity ``inputs`` x 4), ``shrink``, ``n_ctx`` (positives per input) and ``pos`` (each input's raw
    position in the unit).  Returns ``(inputs, seq length, runs, pairs)``; ``inputs == 0`` when no lane has
    words left.

    Example:
        >>> m, n_seq, n_seg, pairs = form_interleaved(kept, sent_off, n_sent, shrink_all, pos_all,
        ...     lane_bounds(n, 256), 1, 0, 5, seq, seg, shrink, n_ctx, pos)  # doctest: +SKIP
    """
    m = 0
    n_seq = 0
    n_seg = 0
    pairs = 0
    s = 0  # the sentence of the current position (lanes are visited in corpus order)
    for lane in range(len(lanes) - 1):
        a = lanes[lane] + index * per_lane
        b = min(lanes[lane + 1], a + per_lane)
        while a < b:
            while sent_off[s + 1] <= a:
                s += 1
            so = sent_off[s]
            se = sent_off[s + 1]
            e = min(b, se)
            lo = max(so, a - window)
            hi = min(se, e + window)
            seg[n_seg, SEG_START] = n_seq
            seg[n_seg, SEG_LEN] = hi - lo
            seg[n_seg, SEG_IN_LO] = a - lo
            seg[n_seg, SEG_IN_HI] = e - lo
            n_seg += 1
            for j in range(lo, hi):
                seq[n_seq] = kept[j]
                n_seq += 1
            n = se - so
            for j in range(a, e):
                r = np.int64(shrink_all[j])
                jj = j - so
                c = min(n, jj + window - r + 1) - max(0, jj - window + r) - 1
                shrink[m] = r
                n_ctx[m] = c
                pos[m] = pos_all[j]
                pairs += c
                m += 1
            a = e
    return m, n_seq, n_seg, pairs
