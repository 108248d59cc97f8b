"""PAR-Word2Vec's GPU kernel (Moon et al., section V-B): per sentence, attraction with the repulsion of each
minibatch interleaved.

One thread block per sentence (the paper gives each block a run of sentences; one per block is the FULL-W2V
kernel's grid, so both share the driver), threads over the dimensions:

1. subsampling into shared memory, as :mod:`parvec.gpu.full_w2v`;
2. **attraction** (Algorithm 3): every center's output row against its context words' input rows, label 1
   only -- the FULL-W2V window pass with no negatives, so the context rows stay in the shared-memory ring
   and the center's output row in registers;
3. **repulsion** (Algorithm 6) of minibatch ``m`` (words ``m B .. m B + B - 1``) right after the attraction
   of the center ``lag = window + sentence % B`` positions past its last word (so its words' rows have left
   the ring), the minibatches still waiting after the last center in order: ``C_rep`` and ``H`` shared
   negatives from the counter-based RNG, then the three products.  The paper stages ``M_in`` (B x K) and
   ``M_out`` (H x K) whole in shared memory; here they are staged :data:`CHUNK` dimensions at a time (so
   K = 300 fits), in two passes: scores ``G = M_out M_in^T`` accumulated over the chunks, ``G <-
   -sigmoid(G) alpha``, then per chunk ``w_out[negs] += G M_in`` and ``w_in[words] += G^T M_out`` added
   atomically -- every product from the rows as they were before the minibatch, as in the paper and the CPU
   kernel.  A chunk's dimensions are spread over the threads a lane per dimension (rows side by side), the
   scores a thread per (negative, word): no division in the loops.

Why interleaved and staggered (the order until then was the whole sentence's attraction, then its
repulsion): a launch's blocks start together and run at the same pace, so in that order every block was in
attraction (which alone collapses the vectors) and then every block in repulsion at once, where the hot
negatives' rows took hundreds of stale summed updates together; on the 2M-token demo corpus the loss rose
over the epochs (an H200, and :func:`parvec.gpu.reference.hogwild_train`, the CPU model of the GPU's
Hogwild, which shows the interleaved, staggered order training as the sequential one does: docs/gpu.md).

The exact order is :func:`parvec.gpu.reference.par_sentence` and the tests check the kernel against it.

Example:
    >>> kernel = make_kernel(64, 128, 5, 5, 24, 45, "tree")  # doctest: +SKIP
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda, float32, float64, int32, int64

from parvec.errors import ParvecError
from parvec.gpu.blocks import (
    SHARED_LIMIT,
    draw_negative,
    kernel_jit,
    make_window_pass,
    residency_pad_bytes,
    subsample_block,
)
from parvec.gpu.plan import GPU_MAX_SENTENCE
from parvec.gpu.rng import par_c_rep
from parvec.gpu.sgns import pair_error_loss

CHUNK = 32  # dimensions of M_in and M_out staged in shared memory at a time


def ring_floats(dim: int, window: int) -> int:
    """Floats of the attraction ring: ``2 window + 1`` rows and their values when they entered it.

    Example:
        >>> ring_floats(128, 5)
        2816
    """
    return 2 * (2 * window + 1) * dim


def buffer_floats(dim: int, window: int, batch: int, h_max: int) -> int:
    """Floats of the block's shared buffers: the attraction ring and the repulsion's staged chunks and scores
    (both live: the phases interleave).

    Example:
        >>> buffer_floats(128, 5, 24, 45)
        6104
    """
    chunk = min(CHUNK, dim)
    return ring_floats(dim, window) + (batch + h_max) * chunk + h_max * batch


def shared_bytes(n_threads: int, dim: int, window: int, batch: int, h_max: int) -> int:
    """Static shared memory of one PAR block (buffers, reduction, tokens and :func:`token_pad`, counts, negatives).

    Example:
        >>> shared_bytes(64, 128, 5, 24, 45), shared_bytes(128, 128, 5, 24, 45)
        (29364, 32340)
    """
    return _base_bytes(n_threads, dim, window, batch, h_max) + token_pad(n_threads, dim, window, batch, h_max) * 4


def _base_bytes(n_threads: int, dim: int, window: int, batch: int, h_max: int) -> int:
    return 4 * (buffer_floats(dim, window, batch, h_max) + 2 * n_threads + GPU_MAX_SENTENCE + n_threads + h_max)


def token_pad(n_threads: int, dim: int, window: int, batch: int, h_max: int) -> int:
    """Extra int32 slots of the block's token buffer (:func:`parvec.gpu.full_w2v.token_pad`'s reason).

    Example:
        >>> token_pad(128, 128, 5, 24, 45), token_pad(64, 128, 5, 24, 45)
        (552, 0)
    """
    return residency_pad_bytes(n_threads, _base_bytes(n_threads, dim, window, batch, h_max)) // 4


def check_shared(n_threads: int, dim: int, window: int, batch: int, h_max: int) -> None:
    """:class:`ParvecError` naming what to lower when a block would need more than 48 KB of shared memory.

    Example:
        >>> check_shared(64, 128, 5, 24, 45)
    """
    need = shared_bytes(n_threads, dim, window, batch, h_max)
    if need > SHARED_LIMIT:
        raise ParvecError(
            f"par on cuda needs {need / 1024:.1f} KB of shared memory per block (window {window}, dim {dim}, "
            f"par_batch {batch}, up to {h_max} shared negatives), more than the {SHARED_LIMIT // 1024} KB a block "
            "may use; lower --par-batch, --negative or --window (or --dim)")


@functools.cache
def make_repulsion(n_threads: int, dim: int, batch: int, h_max: int, window: int, negative: int):
    """PAR's step after each center, for :func:`parvec.gpu.blocks.make_window_pass`: ``repel(w_in, w_out, sent,
    n, i, m, key, sentence, alpha, prob, alias, negs, neg_row, with_loss, rbuf, nid, h_factor, lag) -> (m,
    loss)`` repels every minibatch from ``m`` on that is due after center ``i`` (module docstring) and returns
    the next one and this thread's share of the loss.

    Example:
        >>> repel = make_repulsion(64, 128, 24, 45, 5, 5)  # doctest: +SKIP
    """
    T = n_threads
    D = dim
    B = batch
    HMAX = h_max
    W = window
    NEG = negative
    DC = min(CHUNK, dim)
    OUT = B * DC  # the staged M_out chunk after the M_in chunk
    G = (B + HMAX) * DC  # the scores, then the gradients: G[h * B + b]
    LANES = min(T, DC)  # threads along a staged row's dimensions
    ROWS = T // LANES  # rows staged side by side
    STEP_H = T // B  # the (negative, word) walk of the scores: T pairs further on
    STEP_B = T % B
    U = np.uint64
    ZERO = float32(0.0)

    @cuda.jit(device=True, fastmath=True)
    def stage(w_in, w_out, sent, min_pos, nb, nh, c0, cw, rbuf, nid):
        t = cuda.threadIdx.x
        r0 = t // LANES
        c = t - r0 * LANES
        if r0 < ROWS:
            while c < cw:
                r = r0
                while r < nb:
                    rbuf[U(r * DC + c)] = w_in[U(sent[min_pos + r]), U(c0 + c)]
                    r += ROWS
                r = r0
                while r < nh:
                    rbuf[U(OUT + r * DC + c)] = w_out[U(nid[r]), U(c0 + c)]
                    r += ROWS
                c += LANES

    @cuda.jit(device=True, fastmath=True)
    def minibatch(w_in, w_out, sent, n, min_pos, key, sentence, alpha, prob, alias, negs, neg_row, with_loss, rbuf,
                  nid, h_factor):
        t = cuda.threadIdx.x
        loss = 0.0
        c_rep = par_c_rep(key, sentence, min_pos, n, W)
        nh = min(int64(h_factor * NEG * c_rep + 0.5), HMAX)
        nb = min(B, n - min_pos)
        if nh == 0:
            return loss
        h = t
        while h < nh:
            if negs.shape[0] > 0:
                nid[h] = negs[neg_row + min_pos, h]
            else:
                nid[h] = int32(draw_negative(key, sentence, min_pos, h, prob, alias))
            h += T
        p = t
        while p < nh * B:
            rbuf[U(G + p)] = ZERO
            p += T
        cuda.syncthreads()  # the negatives drawn, and the last center's rows added back (every thread's dimensions)
        h0 = t // B
        b0 = t - h0 * B
        # Scores G[h, b] = <w_out[neg h], w_in[word b]>, a chunk of dimensions at a time.
        for c0 in range(0, D, DC):
            cw = min(DC, D - c0)
            stage(w_in, w_out, sent, min_pos, nb, nh, c0, cw, rbuf, nid)
            cuda.syncthreads()
            h = h0
            b = b0
            while h < nh:
                if b < nb:
                    acc = ZERO
                    for c in range(cw):
                        acc += rbuf[U(OUT + h * DC + c)] * rbuf[U(b * DC + c)]
                    rbuf[U(G + h * B + b)] += acc
                h += STEP_H
                b += STEP_B
                if b >= B:
                    b -= B
                    h += 1
            cuda.syncthreads()
        h = h0
        b = b0
        while h < nh:
            if b < nb:
                f = rbuf[U(G + h * B + b)]
                err, lg, lin = pair_error_loss(f, ZERO)
                rbuf[U(G + h * B + b)] = err * alpha
                if with_loss:
                    loss += float64(lg) + float64(lin)
            h += STEP_H
            b += STEP_B
            if b >= B:
                b -= B
                h += 1
        cuda.syncthreads()
        # w_out[negs] += G M_in and w_in[words] += G^T M_out, chunk by chunk, from the unchanged rows.
        r0 = t // LANES
        c1 = t - r0 * LANES
        for c0 in range(0, D, DC):
            cw = min(DC, D - c0)
            stage(w_in, w_out, sent, min_pos, nb, nh, c0, cw, rbuf, nid)
            cuda.syncthreads()
            if r0 < ROWS:
                c = c1
                while c < cw:
                    r = r0
                    while r < nh:
                        acc = ZERO
                        for bb in range(nb):
                            acc += rbuf[U(G + r * B + bb)] * rbuf[U(bb * DC + c)]
                        cuda.atomic.add(w_out, (U(nid[r]), U(c0 + c)), acc)
                        r += ROWS
                    r = r0
                    while r < nb:
                        acc = ZERO
                        for hh in range(nh):
                            acc += rbuf[U(G + hh * B + r)] * rbuf[U(OUT + hh * DC + c)]
                        cuda.atomic.add(w_in, (U(sent[min_pos + r]), U(c0 + c)), acc)
                        r += ROWS
                    c += LANES
            cuda.syncthreads()
        return loss

    @cuda.jit(device=True, fastmath=True)
    def repel(w_in, w_out, sent, n, i, m, key, sentence, alpha, prob, alias, negs, neg_row, with_loss, rbuf, nid,
              h_factor, lag):
        loss = 0.0
        while m * B < n and min(n - 1, min(m * B + B, n) - 1 + lag) == i:
            loss += minibatch(w_in, w_out, sent, n, m * B, key, sentence, alpha, prob, alias, negs, neg_row,
                              with_loss, rbuf, nid, h_factor)
            m += 1
        return m, loss

    return repel


@functools.cache
def make_kernel(n_threads: int, dim: int, window: int, negative: int, batch: int, h_max: int,
                reduction: str = "tree"):
    """The PAR kernel; launched and parameterised as :func:`parvec.gpu.full_w2v.make_kernel`'s, plus
    ``h_factor`` after ``neg_base``.  ``negs`` (test mode) holds the negatives of the minibatch starting at
    token position ``p`` in row ``p - neg_base`` (``h_max`` columns).

    Example:
        >>> kernel = make_kernel(64, 128, 5, 5, 24, 45, "tree")  # doctest: +SKIP
    """
    check_shared(n_threads, dim, window, batch, h_max)
    T = n_threads
    P = -(-dim // T)
    B = batch
    W = window
    RING = ring_floats(dim, window)
    HMAX = max(h_max, 1)
    RBUF = buffer_floats(dim, window, batch, HMAX) - RING
    MAXLEN = GPU_MAX_SENTENCE
    TOKENS = MAXLEN + token_pad(n_threads, dim, window, batch, HMAX)
    attraction = make_window_pass(T, P, dim, window, 1, reduction, make_repulsion(T, dim, batch, HMAX, window,
                                                                                   negative))

    @kernel_jit(T, shared_bytes(T, dim, window, batch, HMAX))
    def par_kernel(w_in, w_out, tokens, offsets, s_lo, sentence_base, key, alpha0, alpha1, words, keep, prob,
                   alias, negs, neg_base, h_factor, with_loss, out_loss, out_pairs):
        blk = cuda.blockIdx.x
        t = cuda.threadIdx.x
        s = s_lo + blk
        start = offsets[s]
        raw = min(offsets[s + 1] - start, MAXLEN)
        sentence = sentence_base + blk
        frac = float64(offsets[s] - offsets[s_lo]) / float64(max(words, 1))
        alpha = float32(alpha0 + (alpha1 - alpha0) * frac)
        buf = cuda.shared.array(RING, float32)
        rbuf = cuda.shared.array(RBUF, float32)
        sent = cuda.shared.array(TOKENS, int32)
        cnt = cuda.shared.array(T, int32)
        red = cuda.shared.array((2, 1, T), float32)
        nid = cuda.shared.array(HMAX, int32)
        n = subsample_block(tokens, start, raw, keep, key, sentence, sent, cnt)
        lag = W + sentence % B  # parvec.gpu.reference.par_order: the blocks of a launch repel at B moments
        pairs, loss = attraction(w_in, w_out, sent, n, key, sentence, alpha, prob, alias, negs, start - neg_base,
                                 with_loss, buf, red, rbuf, nid, h_factor, lag, nid)
        if t == 0:
            out_loss[blk] = loss
            out_pairs[blk] = pairs
        cuda.syncthreads()
        if t != 0 and loss != 0.0:
            cuda.atomic.add(out_loss, blk, loss)

    return par_kernel
