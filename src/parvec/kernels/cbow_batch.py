"""Fast CBOW with negative sampling: consecutive centers share their negatives, updates as small products.

The batched counterpart of :mod:`parvec.kernels.cbow` in the spirit of HogBatch (Ji et al.) and PAR
(Moon et al.).  Centers of a subsampled sentence are taken ``B`` at a time (``batch_size``; centers
with no context word are passed over, as in word2vec.c).  Each center ``a`` shrinks its window by a
random ``b`` as in word2vec.c and combines its ``cw_a`` context rows into ``h_a`` (mean or sum, as
``cbow_mean``), the rows of a ``B x d`` block ``H``.  The batch draws ``K = negative`` noise words
once; the output block ``O`` holds the ``B`` centers' rows then the ``K`` negatives' rows.  With
scores ``F = H O^T`` masked so each ``h_a`` only meets its own center (label 1) and the shared
negatives (label 0; a negative equal to center ``a`` is masked for ``a``, as word2vec.c skips it):

    G = (labels - sigmoid(F)) * alpha * mask         # B x (B + K), sigmoid saturating at +-6
    E = G O          (the error of each h_a)         O += G^T H
    every context row of center a += E_a   (cbow_mean)   or   E_a / cw_a   (sum)

all from the values read before the batch's update (then added Hogwild).  Only the ``B (1 + K)``
unmasked scores are computed.  With ``B = 1`` this is exactly word2vec.c's CBOW step
(:func:`parvec.kernels.cbow.cbow_update`; the tests check both against numpy).  The error
propagation is gensim's (see :mod:`parvec.kernels.cbow`): full ``E_a`` to each context row with the
mean, ``E_a / cw_a`` with the sum.

Why it is faster than the classic loop: a batch draws ``K`` negatives instead of ``B K``, their rows
are read (cache misses) once and written once per batch instead of once per center, and the
scores and updates run as blocked loops over the ``1 + K`` rows (one pass over ``h_a`` meets all of
them).  The code follows :mod:`parvec.kernels.hogbatch`'s measured choices: no BLAS, the dimension a
compile-time constant for 100 and 300, the vectorised sigmoid/loss (:func:`sgns_block`), the
branch-free alias draw, rows prefetched before they are needed (the batch's negatives and centers'
output rows while ``H`` is built), no array slicing inside the loops.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from parvec.kernels.hogbatch import _draw_negative, _prefetch_row, sgns_block
from parvec.sampling import rng_below, rng_next, subsample_sentence

DEFAULT_BATCH = 16  # centers per shared set of negatives (measured: docs/architecture.md, "CBOW")
_MASKED = np.float32(-30.0)  # a masked score: beyond -MAX_EXP, so its gradient is exactly 0


@njit(inline="always")
def _batch(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, dim, with_loss):
    """One batch: centers ``sent[pos[a]]`` with contexts ``sent[lo[a]:hi[a]]`` (all but ``pos[a]``),
    ``a < nb``, against their own output rows and the shared negatives ``negs[:n_neg]``.

    ``H``, ``E`` (>= nb x dim), ``do`` (>= n_neg x dim), ``g`` and ``lab`` (>= nb (1 + n_neg), ``lab``
    holding [1, 0, ..., 0] per center) are scratch; ``dim`` is a literal at the specialised call sites.
    Returns the loss.
    """
    n_out = n_neg + 1
    # H: each center's hidden vector from the input rows as they are now.
    for a in range(nb):
        for d in range(dim):
            H[a, d] = 0.0
        p = pos[a]
        for j in range(lo[a], hi[a]):
            if j != p:
                r = sent[j]
                for d in range(dim):
                    H[a, d] += w_in[r, d]
        if mean:
            inv = np.float32(1.0) / np.float32(hi[a] - lo[a] - 1)
            for d in range(dim):
                H[a, d] *= inv
    # Scores: h_a against its center's row and the negatives' rows, one pass per block of rows.
    for a in range(nb):
        t = sent[pos[a]]
        o = a * n_out
        k = 0
        if n_neg >= 5:  # the center and five negatives in one pass
            r1 = negs[0]
            r2 = negs[1]
            r3 = negs[2]
            r4 = negs[3]
            r5 = negs[4]
            s0 = np.float32(0.0)
            s1 = np.float32(0.0)
            s2 = np.float32(0.0)
            s3 = np.float32(0.0)
            s4 = np.float32(0.0)
            s5 = np.float32(0.0)
            for d in range(dim):
                x = H[a, d]
                s0 += x * w_out[t, d]
                s1 += x * w_out[r1, d]
                s2 += x * w_out[r2, d]
                s3 += x * w_out[r3, d]
                s4 += x * w_out[r4, d]
                s5 += x * w_out[r5, d]
            g[o] = s0
            g[o + 1] = s1
            g[o + 2] = s2
            g[o + 3] = s3
            g[o + 4] = s4
            g[o + 5] = s5
            k = 5
        else:
            s0 = np.float32(0.0)
            for d in range(dim):
                s0 += H[a, d] * w_out[t, d]
            g[o] = s0
        while k + 3 <= n_neg:
            r1 = negs[k]
            r2 = negs[k + 1]
            r3 = negs[k + 2]
            s1 = np.float32(0.0)
            s2 = np.float32(0.0)
            s3 = np.float32(0.0)
            for d in range(dim):
                x = H[a, d]
                s1 += x * w_out[r1, d]
                s2 += x * w_out[r2, d]
                s3 += x * w_out[r3, d]
            g[o + 1 + k] = s1
            g[o + 2 + k] = s2
            g[o + 3 + k] = s3
            k += 3
        while k < n_neg:
            r1 = negs[k]
            s1 = np.float32(0.0)
            for d in range(dim):
                s1 += H[a, d] * w_out[r1, d]
            g[o + 1 + k] = s1
            k += 1
        for k in range(n_neg):  # a negative equal to this center: masked (word2vec.c skips it)
            if negs[k] == t:
                g[o + 1 + k] = _MASKED
    loss = sgns_block(g, lab, nb * n_out, alpha, with_loss)
    # E_a = sum_b G[a, b] O_b and the negatives' deltas do_k = sum_a G[a, k] h_a, before any row changes.
    for k in range(n_neg):
        for d in range(dim):
            do[k, d] = 0.0
    for a in range(nb):
        t = sent[pos[a]]
        o = a * n_out
        g0 = g[o]
        for d in range(dim):
            E[a, d] = g0 * w_out[t, d]
        k = 0
        while k + 5 <= n_neg:
            r1 = negs[k]
            r2 = negs[k + 1]
            r3 = negs[k + 2]
            r4 = negs[k + 3]
            r5 = negs[k + 4]
            g1 = g[o + 1 + k]
            g2 = g[o + 2 + k]
            g3 = g[o + 3 + k]
            g4 = g[o + 4 + k]
            g5 = g[o + 5 + k]
            for d in range(dim):
                x = H[a, d]
                E[a, d] += (g1 * w_out[r1, d] + g2 * w_out[r2, d] + g3 * w_out[r3, d] + g4 * w_out[r4, d]
                            + g5 * w_out[r5, d])
                do[k, d] += g1 * x
                do[k + 1, d] += g2 * x
                do[k + 2, d] += g3 * x
                do[k + 3, d] += g4 * x
                do[k + 4, d] += g5 * x
            k += 5
        while k < n_neg:
            r1 = negs[k]
            g1 = g[o + 1 + k]
            for d in range(dim):
                E[a, d] += g1 * w_out[r1, d]
                do[k, d] += g1 * H[a, d]
            k += 1
    # The output rows: each center's own, then the shared negatives'.
    for a in range(nb):
        t = sent[pos[a]]
        g0 = g[a * n_out]
        for d in range(dim):
            w_out[t, d] += g0 * H[a, d]
    for k in range(n_neg):
        r = negs[k]
        for d in range(dim):
            w_out[r, d] += do[k, d]
    # The input rows: every context row of center a gets E_a (mean) or E_a / cw_a (sum).
    for a in range(nb):
        p = pos[a]
        if not mean:
            inv = np.float32(1.0) / np.float32(hi[a] - lo[a] - 1)
            for d in range(dim):
                E[a, d] *= inv
        for j in range(lo[a], hi[a]):
            if j != p:
                r = sent[j]
                for d in range(dim):
                    w_in[r, d] += E[a, d]
    return loss


# One compiled copy per specialised dimension (hogbatch's SPECIALISED_DIMS), called rather than inlined.
@njit(nogil=True, fastmath=True, cache=True, error_model="numpy")
def _batch_100(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, with_loss):
    return _batch(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, 100, with_loss)


@njit(nogil=True, fastmath=True, cache=True, error_model="numpy")
def _batch_300(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, with_loss):
    return _batch(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, 300, with_loss)


@njit(nogil=True, fastmath=True, cache=True, error_model="numpy")
def _batch_dyn(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, with_loss):
    return _batch(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, w_in.shape[1],
                  with_loss)


@njit(inline="always")
def _batch_any_dim(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, with_loss):
    dim = w_in.shape[1]
    if dim == 100:
        return _batch_100(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, with_loss)
    if dim == 300:
        return _batch_300(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, with_loss)
    return _batch_dyn(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, H, E, do, g, lab, with_loss)


def work_floats(batch: int, negative: int, dim: int) -> int:
    """Scratch floats a batch of ``batch`` centers with ``negative`` shared negatives needs.

    Example:
        >>> work_floats(16, 5, 100)
        3892
    """
    return (2 * batch + negative) * dim + 2 * batch * (negative + 1)


@njit(inline="always")
def _scratch(work, batch, negative, dim):
    # work = [H: batch x dim | E: batch x dim | do: negative x dim | g: batch (1 + negative) | lab: same]
    n_out = negative + 1
    a = batch * dim
    b = 2 * batch * dim
    c = b + negative * dim
    H = work[:a].reshape((batch, dim))
    E = work[a:b].reshape((batch, dim))
    do = work[b:c].reshape((negative, dim))
    g = work[c:c + batch * n_out]
    lab = work[c + batch * n_out:c + 2 * batch * n_out]
    for i in range(batch):
        lab[i * n_out] = 1.0
        for k in range(1, n_out):
            lab[i * n_out + k] = 0.0
    return H, E, do, g, lab


@njit(nogil=True, fastmath=True, cache=True, error_model="numpy")
def cbow_batch_update(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, pos: np.ndarray, lo: np.ndarray,
                      hi: np.ndarray, negs: np.ndarray, alpha: np.float32, cbow_mean: bool,
                      work: np.ndarray) -> float:
    """One batch update: centers ``sent[pos[a]]``, contexts ``sent[lo[a]:hi[a]]`` but ``pos[a]``, shared
    negatives ``negs``.

    The code :func:`train_chunk` runs for each batch; returns the batch's loss.  ``work`` needs
    ``work_floats(len(pos), len(negs), dim)`` floats; every center needs a context word.

    Example:
        >>> cbow_batch_update(w_in, w_out, np.array([4, 8, 2, 9]), np.array([1, 2]), np.array([0, 0]),
        ...                   np.array([3, 4]), np.array([7, 5]), np.float32(0.05), True,
        ...                   np.zeros(work_floats(2, 2, w_in.shape[1]), np.float32))  # doctest: +SKIP
    """
    nb = len(pos)
    n_neg = len(negs)
    H, E, do, g, lab = _scratch(work, nb, n_neg, w_in.shape[1])
    # Run-time typed like train_chunk's values, so both run the same compiled batch code.
    return _batch_any_dim(w_in, w_out, sent, pos, lo, hi, np.int64(nb), negs, np.int64(n_neg), alpha,
                          np.bool_(cbow_mean), H, E, do, g, lab, np.bool_(True))


@njit(nogil=True, fastmath=True, cache=True, error_model="numpy")
def train_chunk(w_in, w_out, tokens, offsets, s_lo, s_hi, keep, noise_prob, noise_alias,
                iparams, fparams, seed, sent_buf, work):
    """Train sentences ``s_lo..s_hi`` (see docs/architecture.md for the contract).

    ``iparams`` = [window, negative, batch_size (>= 1), cbow_mean (0/1), compute_loss (0/1)].
    """
    window = iparams[0]
    negative = iparams[1]
    batch = iparams[2]
    mean = iparams[3] != 0
    with_loss = iparams[4] != 0
    alpha0 = fparams[0]
    alpha1 = fparams[1]
    state = seed
    chunk_words = max(offsets[s_hi] - offsets[s_lo], 1)
    done = 0
    pairs = 0
    loss = 0.0
    pos = np.empty(batch, dtype=np.int64)
    lo = np.empty(batch, dtype=np.int64)
    hi = np.empty(batch, dtype=np.int64)
    negs = np.empty(negative, dtype=np.int64)
    H, E, do, g, lab = _scratch(work, batch, negative, w_in.shape[1])
    for s in range(s_lo, s_hi):
        start = offsets[s]
        end = offsets[s + 1]
        n, state = subsample_sentence(tokens, start, end, keep, state, sent_buf)
        raw_len = end - start
        i = 0
        while i < n:
            # Linear decay by raw words processed, at the batch's first center.
            frac = (done + i * raw_len / n) / chunk_words
            alpha = np.float32(alpha0 + (alpha1 - alpha0) * frac)
            nb = 0
            while nb < batch and i < n:
                state = rng_next(state)
                b = rng_below(state, window)
                lo_i = max(0, i - window + b)
                hi_i = min(n, i + window - b + 1)
                if hi_i - lo_i >= 2:  # a center without context trains nothing (word2vec.c: cw == 0)
                    pos[nb] = i
                    lo[nb] = lo_i
                    hi[nb] = hi_i
                    nb += 1
                i += 1
            if nb == 0:
                continue
            for k in range(negative):
                state = rng_next(state)
                t = _draw_negative(state, noise_prob, noise_alias)
                negs[k] = t
                _prefetch_row(w_out, t)
            for a in range(nb):
                _prefetch_row(w_out, sent_buf[pos[a]])
            loss += _batch_any_dim(w_in, w_out, sent_buf, pos, lo, hi, np.int64(nb), negs, negative, alpha, mean,
                                   H, E, do, g, lab, with_loss)
            pairs += nb
        done += raw_len
    return done, pairs, loss


def params(config) -> tuple[np.ndarray, np.ndarray, int]:
    """(iparams, extra fparams, work size in floats) for :func:`train_chunk`.

    ``batch_size`` (0 = :data:`DEFAULT_BATCH`) is the number of centers sharing one set of negatives.

    Example:
        >>> from parvec.config import TrainConfig
        >>> params(TrainConfig(sg=False, window=5, negative=5, batch_size=0))[0].tolist()
        [5, 5, 16, 1, 1]
    """
    batch = config.batch_size or DEFAULT_BATCH
    iparams = np.array([config.window, config.negative, batch, int(bool(config.cbow_mean)),
                        int(bool(config.compute_loss))], dtype=np.int64)
    return iparams, np.zeros(0, dtype=np.float64), work_floats(batch, config.negative, config.dim)
