"""Fast CBOW with negative sampling: consecutive centers share their negatives, updates as small products.

The batched counterpart of :mod:`parvec.kernels.cbow` in the spirit of HogBatch (Ji et al.) and PAR
(Moon et al.).  Centers of a subsampled sentence are taken ``B`` at a time (``batch_size``, default
8; centers with no context word are passed over, as in word2vec.c), and the batch draws ``K =
negative`` noise words once.  Each center ``a``, in order, shrinks its window by a random ``b`` as in
word2vec.c, combines its ``cw_a`` context rows as they are now into ``h_a`` (mean or sum, as
``cbow_mean``) and scores it against its own output row (label 1) and the ``K`` shared negatives'
rows (label 0; a negative equal to center ``a`` is masked for ``a``, as word2vec.c skips it):

    g_a = (labels - sigmoid(O_a h_a)) * alpha * mask_a      # O_a = [center row; negatives' rows]
    e_a = g_a O_a;   center row += g_a[0] h_a;   do += g_a[1:] (x) h_a
    every context row of center a += e_a   (cbow_mean)   or   e_a / cw_a   (sum)

and at the end of the batch the negatives' rows get ``do`` (summed over the batch: ``G^T H``).  The
inputs and the center's row are updated at once: a version that also deferred the input rows to the
end of the batch (one ``B x (B + K)`` product) lost the demo corpus's related-words check, since
consecutive CBOW windows overlap and each context row would get up to ``2 window`` whole errors
computed from the same stale ``h``.  With ``B = 1`` this is exactly word2vec.c's CBOW step
(:func:`parvec.kernels.cbow.cbow_update`; the tests check both against numpy).  The error propagation
is gensim's (see :mod:`parvec.kernels.cbow`).

Why it is faster than the classic loop: a batch draws ``K`` negatives instead of ``B K``, their rows
are read (cache misses) once and written once per batch instead of once per center, and the
scores and updates run as blocked loops over the ``1 + K`` rows (one pass over ``h_a`` meets all of
them).  The code follows :mod:`parvec.kernels.hogbatch`'s measured choices: no BLAS, the dimension a
compile-time constant for 100 and 300, the vectorised sigmoid/loss (:func:`sgns_block`), the
branch-free alias draw, rows prefetched before they are needed (the batch's negatives and centers'
output rows), no array slicing inside the loops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from parvec.kernels.fastmath import FASTMATH
from parvec.kernels.hogbatch import borrowed, draw_negative, prefetch_row, sgns_block
from parvec.kernels.params import KernelParams
from parvec.sampling import rng_below, rng_next, subsample_sentence, word_rate

if TYPE_CHECKING:
    from parvec.config import TrainConfig

DEFAULT_BATCH = 8  # centers per shared set of negatives (measured: README.md, "CBOW")
_MASKED = np.float32(-30.0)  # a masked score: beyond -MAX_EXP, so its gradient is exactly 0


@njit(inline="always")
def _batch(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, dim, with_loss):
    """One batch: centers ``sent[pos[a]]`` with contexts ``sent[lo[a]:hi[a]]`` (all but ``pos[a]``),
    ``a < nb`` in order, against their own output rows and the shared negatives ``negs[:n_neg]``.

    ``h``, ``e`` (>= dim), ``do`` (>= n_neg x dim), ``g`` and ``lab`` (>= 1 + n_neg, ``lab`` holding
    [1, 0, ..., 0]) are scratch; ``dim`` is a literal at the specialised call sites.  Returns the loss.
    """
    n_out = n_neg + 1
    loss = 0.0
    for k in range(n_neg):
        for d in range(dim):
            do[k, d] = 0.0
    for a in range(nb):
        p = pos[a]
        t = sent[p]
        # h: the center's hidden vector from its context rows as they are now.
        for d in range(dim):
            h[d] = 0.0
        for j in range(lo[a], hi[a]):
            if j != p:
                r = sent[j]
                for d in range(dim):
                    h[d] += w_in[r, d]
        inv = np.float32(1.0) / np.float32(hi[a] - lo[a] - 1)
        if mean:
            for d in range(dim):
                h[d] *= inv
        # Scores: h against the center's row and the negatives' rows, one pass per block of rows.
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
                x = h[d]
                s0 += x * w_out[t, d]
                s1 += x * w_out[r1, d]
                s2 += x * w_out[r2, d]
                s3 += x * w_out[r3, d]
                s4 += x * w_out[r4, d]
                s5 += x * w_out[r5, d]
            g[0] = s0
            g[1] = s1
            g[2] = s2
            g[3] = s3
            g[4] = s4
            g[5] = s5
            k = 5
        else:
            s0 = np.float32(0.0)
            for d in range(dim):
                s0 += h[d] * w_out[t, d]
            g[0] = s0
        while k + 3 <= n_neg:
            r1 = negs[k]
            r2 = negs[k + 1]
            r3 = negs[k + 2]
            s1 = np.float32(0.0)
            s2 = np.float32(0.0)
            s3 = np.float32(0.0)
            for d in range(dim):
                x = h[d]
                s1 += x * w_out[r1, d]
                s2 += x * w_out[r2, d]
                s3 += x * w_out[r3, d]
            g[1 + k] = s1
            g[2 + k] = s2
            g[3 + k] = s3
            k += 3
        while k < n_neg:
            r1 = negs[k]
            s1 = np.float32(0.0)
            for d in range(dim):
                s1 += h[d] * w_out[r1, d]
            g[1 + k] = s1
            k += 1
        for k in range(n_neg):  # a negative equal to this center: masked (word2vec.c skips it)
            if negs[k] == t:
                g[1 + k] = _MASKED
        loss += sgns_block(g, lab, n_out, alpha, with_loss)
        # e = G O (the rows as read now; the negatives' deltas wait in do), do_k += G_k h.
        g0 = g[0]
        for d in range(dim):
            e[d] = g0 * w_out[t, d]
        k = 0
        while k + 5 <= n_neg:
            r1 = negs[k]
            r2 = negs[k + 1]
            r3 = negs[k + 2]
            r4 = negs[k + 3]
            r5 = negs[k + 4]
            g1 = g[1 + k]
            g2 = g[2 + k]
            g3 = g[3 + k]
            g4 = g[4 + k]
            g5 = g[5 + k]
            for d in range(dim):
                x = h[d]
                e[d] += (g1 * w_out[r1, d] + g2 * w_out[r2, d] + g3 * w_out[r3, d] + g4 * w_out[r4, d]
                         + g5 * w_out[r5, d])
                do[k, d] += g1 * x
                do[k + 1, d] += g2 * x
                do[k + 2, d] += g3 * x
                do[k + 3, d] += g4 * x
                do[k + 4, d] += g5 * x
            k += 5
        while k < n_neg:
            r1 = negs[k]
            g1 = g[1 + k]
            for d in range(dim):
                e[d] += g1 * w_out[r1, d]
                do[k, d] += g1 * h[d]
            k += 1
        # The center's output row now; every context row gets e (mean) or e / cw (sum) now.
        for d in range(dim):
            w_out[t, d] += g0 * h[d]
        if not mean:
            for d in range(dim):
                e[d] *= inv
        for j in range(lo[a], hi[a]):
            if j != p:
                r = sent[j]
                for d in range(dim):
                    w_in[r, d] += e[d]
    # The shared negatives' rows once per batch.
    for k in range(n_neg):
        r = negs[k]
        for d in range(dim):
            w_out[r, d] += do[k, d]
    return loss


# One copy per specialised dimension (hogbatch's SPECIALISED_DIMS), inlined into the kernels rather than called:
# a kernel calling a separately compiled numba function runs other machine code for it compiled in this process
# than loaded from numba's cache (see hogbatch's _batch_100).
@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy", inline="always")
def _batch_100(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, with_loss):
    return _batch(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, 100, with_loss)


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy", inline="always")
def _batch_300(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, with_loss):
    return _batch(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, 300, with_loss)


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy", inline="always")
def _batch_dyn(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, with_loss):
    return _batch(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, w_in.shape[1],
                  with_loss)


@njit(inline="always")
def _batch_any_dim(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, with_loss):
    dim = w_in.shape[1]
    if dim == 100:
        return _batch_100(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, with_loss)
    if dim == 300:
        return _batch_300(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, with_loss)
    return _batch_dyn(w_in, w_out, sent, pos, lo, hi, nb, negs, n_neg, alpha, mean, h, e, do, g, lab, with_loss)


def work_floats(batch: int, negative: int, dim: int) -> int:
    """Scratch floats a batch with ``negative`` shared negatives needs (any number of centers).

    Example:
        >>> work_floats(16, 5, 100)
        712
    """
    return (2 + negative) * dim + 2 * (negative + 1)


@njit(inline="always")
def _scratch(work, negative, dim):
    # work = [h: dim | e: dim | do: negative x dim | g: 1 + negative | lab: 1 + negative]
    n_out = negative + 1
    c = (2 + negative) * dim
    h = work[:dim]
    e = work[dim:2 * dim]
    do = work[2 * dim:c].reshape((negative, dim))
    g = work[c:c + n_out]
    lab = work[c + n_out:c + 2 * n_out]
    lab[0] = 1.0
    for k in range(1, n_out):
        lab[k] = 0.0
    return h, e, do, g, lab


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
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
    h, e, do, g, lab = _scratch(work, n_neg, w_in.shape[1])
    # Run-time typed like train_chunk's values, so both run the same compiled batch code.
    return _batch_any_dim(w_in, w_out, sent, pos, lo, hi, np.int64(nb), negs, np.int64(n_neg), alpha,
                          np.bool_(cbow_mean), h, e, do, g, lab, np.bool_(True))


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def train_chunk(w_in, w_out, tokens, offsets, s_lo, s_hi, keep, noise_prob, noise_alias,
                params, rates, seed, sent_buf, work):
    """Train sentences ``s_lo..s_hi`` (see docs/architecture.md for the contract).

    Reads ``params.window``, ``params.negative``, ``params.batch`` (>= 1), ``params.cbow_mean`` and
    ``params.compute_loss``.
    """
    # Owner-less views: no atomic reference counting on the shared arrays per batch (the batch code is inlined).
    w_in, w_out, noise_prob, noise_alias = borrowed(w_in), borrowed(w_out), borrowed(noise_prob), borrowed(noise_alias)
    sent_buf, work = borrowed(sent_buf), borrowed(work)
    window = params.window
    negative = params.negative
    batch = params.batch
    mean = params.cbow_mean
    with_loss = params.compute_loss
    alpha0 = rates.alpha0
    alpha1 = rates.alpha1
    state = seed
    chunk_words = max(offsets[s_hi] - offsets[s_lo], 1)
    done = 0
    pairs = 0
    loss = 0.0
    pos = np.empty(batch, dtype=np.int64)
    lo = np.empty(batch, dtype=np.int64)
    hi = np.empty(batch, dtype=np.int64)
    negs = np.empty(negative, dtype=np.int64)
    h, e, do, g, lab = _scratch(work, negative, w_in.shape[1])
    for s in range(s_lo, s_hi):
        start = offsets[s]
        end = offsets[s + 1]
        n, state = subsample_sentence(tokens, start, end, keep, state, sent_buf)
        raw_len = end - start
        i = 0
        while i < n:
            # Linear decay by raw words processed, at the batch's first center.
            alpha = word_rate(alpha0, alpha1, done, i, raw_len, n, chunk_words)
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
                t = draw_negative(state, noise_prob, noise_alias)
                negs[k] = t
                prefetch_row(w_out, t)
            for a in range(nb):
                prefetch_row(w_out, sent_buf[pos[a]])
            loss += _batch_any_dim(w_in, w_out, sent_buf, pos, lo, hi, np.int64(nb), negs, negative, alpha, mean,
                                   h, e, do, g, lab, with_loss)
            pairs += nb
        done += raw_len
    return done, pairs, loss


def params(config: TrainConfig) -> tuple[KernelParams, int]:
    """(the kernel's parameters, its work size in floats) for :func:`train_chunk`.

    ``batch`` is ``batch_size`` (0 = :data:`DEFAULT_BATCH`), the number of centers sharing one set of negatives.

    Example:
        >>> from parvec.config import TrainConfig
        >>> kp, _ = params(TrainConfig(sg=False, window=5, negative=5, batch_size=0))
        >>> kp.window, kp.negative, kp.batch, kp.cbow_mean, kp.compute_loss
        (5, 5, 8, True, True)
    """
    batch = config.batch_size or DEFAULT_BATCH
    return KernelParams.of(config, batch=batch), work_floats(batch, config.negative, config.dim)
