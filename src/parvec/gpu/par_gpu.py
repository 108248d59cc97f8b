"""PAR-Word2Vec's GPU kernel (Moon et al., section V-B): per sentence, attraction then repulsion.

One thread block per sentence (the paper gives each block a run of sentences; one per block is the FULL-W2V
kernel's grid, so both share the driver), threads over the dimensions:

1. subsampling into shared memory, as :mod:`parvec.gpu.full_w2v`;
2. **attraction** (Algorithm 3): every center's output row against its context words' input rows, label 1
   only -- the FULL-W2V window pass with no negatives, so the context rows stay in the shared-memory ring
   and the center's output row in registers;
3. a barrier, then **repulsion** (Algorithm 6) minibatch by minibatch: ``C_rep`` and ``H`` shared negatives
   from the counter-based RNG, then the three products.  The paper stages ``M_in`` (B x K) and ``M_out``
   (H x K) whole in shared memory; here they are staged :data:`CHUNK` dimensions at a time (so K = 300
   fits), in two passes: scores ``G = M_out M_in^T`` accumulated over the chunks, ``G <- -sigmoid(G) alpha``,
   then per chunk ``w_out[negs] += G M_in`` and ``w_in[words] += G^T M_out`` added atomically -- every
   product from the rows as they were before the minibatch, as in the paper and the CPU kernel.

The exact order is :func:`parvec.gpu.reference.par_repulsion` and the tests check the kernel against it.

Example:
    >>> kernel = make_kernel(64, 128, 5, 5, 24, 45, "tree")  # doctest: +SKIP
"""

from __future__ import annotations

import functools

from numba import cuda, float32, float64, int32, int64

from parvec.errors import ParvecError
from parvec.gpu.blocks import SHARED_LIMIT, draw_negative, make_window_pass, subsample_block
from parvec.gpu.plan import GPU_MAX_SENTENCE
from parvec.gpu.rng import par_c_rep
from parvec.gpu.sgns import pair_error, pair_loss

CHUNK = 32  # dimensions of M_in and M_out staged in shared memory at a time


def buffer_floats(dim: int, window: int, batch: int, h_max: int) -> int:
    """Floats of the block's shared buffer: the attraction ring, or the repulsion's staged chunks and scores,
    whichever is larger (the phases take turns).

    Example:
        >>> buffer_floats(128, 5, 24, 45)
        3288
    """
    chunk = min(CHUNK, dim)
    return max(2 * (2 * window + 1) * dim, (batch + h_max) * chunk + h_max * batch)


def shared_bytes(n_threads: int, dim: int, window: int, batch: int, h_max: int) -> int:
    """Static shared memory of one PAR block (buffer, reduction, tokens, counts, negatives).

    Example:
        >>> shared_bytes(64, 128, 5, 24, 45)
        18100
    """
    return 4 * (buffer_floats(dim, window, batch, h_max) + 2 * n_threads + GPU_MAX_SENTENCE + n_threads + h_max)


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
def make_repulsion(n_threads: int, dim: int, batch: int, h_max: int):
    """The repulsion device function: ``repulsion(w_in, w_out, sent, n, key, sentence, alpha, window, negative,
    h_factor, prob, alias, negs, neg_row, with_loss, buf, nid) -> loss`` (this thread's share of the loss).

    Example:
        >>> repulsion = make_repulsion(64, 128, 24, 45)  # doctest: +SKIP
    """
    T = n_threads
    D = dim
    B = batch
    HMAX = h_max
    DC = min(CHUNK, dim)
    OUT = B * DC  # staged M_out chunk after the M_in chunk
    G = (B + HMAX) * DC  # the scores, then the gradients

    @cuda.jit(device=True)
    def stage(w_in, w_out, sent, min_pos, nb, nh, c0, cw, buf, nid):
        t = cuda.threadIdx.x
        for e in range(t, nb * cw, T):
            b = e // cw
            c = e - b * cw
            buf[b * DC + c] = w_in[sent[min_pos + b], c0 + c]
        for e in range(t, nh * cw, T):
            h = e // cw
            c = e - h * cw
            buf[OUT + h * DC + c] = w_out[nid[h], c0 + c]

    @cuda.jit(device=True)
    def repulsion(w_in, w_out, sent, n, key, sentence, alpha, window, negative, h_factor, prob, alias, negs,
                  neg_row, with_loss, buf, nid):
        t = cuda.threadIdx.x
        use_negs = negs.shape[0] > 0
        loss = 0.0
        for min_pos in range(0, n, B):
            c_rep = par_c_rep(key, sentence, min_pos, n, window)
            nh = min(int64(h_factor * negative * c_rep + 0.5), HMAX)
            nb = min(B, n - min_pos)
            if nh == 0:
                continue
            for h in range(t, nh, T):
                if use_negs:
                    nid[h] = negs[neg_row + min_pos, h]
                else:
                    nid[h] = draw_negative(key, sentence, min_pos, h, prob, alias)
            for p in range(t, nh * nb, T):
                buf[G + p] = float32(0.0)
            cuda.syncthreads()
            # Scores G[h, b] = <w_out[neg h], w_in[word b]>, a chunk of dimensions at a time.
            for c0 in range(0, D, DC):
                cw = min(DC, D - c0)
                stage(w_in, w_out, sent, min_pos, nb, nh, c0, cw, buf, nid)
                cuda.syncthreads()
                for p in range(t, nh * nb, T):
                    h = p // nb
                    b = p - h * nb
                    acc = float32(0.0)
                    for c in range(cw):
                        acc += buf[OUT + h * DC + c] * buf[b * DC + c]
                    buf[G + p] += acc
                cuda.syncthreads()
            for p in range(t, nh * nb, T):
                f = buf[G + p]
                buf[G + p] = pair_error(f, float32(0.0)) * alpha
                if with_loss:
                    loss += pair_loss(f, float32(0.0))
            cuda.syncthreads()
            # w_out[negs] += G M_in and w_in[words] += G^T M_out, chunk by chunk, from the unchanged rows.
            for c0 in range(0, D, DC):
                cw = min(DC, D - c0)
                stage(w_in, w_out, sent, min_pos, nb, nh, c0, cw, buf, nid)
                cuda.syncthreads()
                for e in range(t, nh * cw, T):
                    h = e // cw
                    c = e - h * cw
                    acc = float32(0.0)
                    for b in range(nb):
                        acc += buf[G + h * nb + b] * buf[b * DC + c]
                    cuda.atomic.add(w_out, (nid[h], c0 + c), acc)
                for e in range(t, nb * cw, T):
                    b = e // cw
                    c = e - b * cw
                    acc = float32(0.0)
                    for h in range(nh):
                        acc += buf[G + h * nb + b] * buf[OUT + h * DC + c]
                    cuda.atomic.add(w_in, (sent[min_pos + b], c0 + c), acc)
                cuda.syncthreads()
        return loss

    return repulsion


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
    BUF = buffer_floats(dim, window, batch, h_max)
    HMAX = max(h_max, 1)
    MAXLEN = GPU_MAX_SENTENCE
    attraction = make_window_pass(T, P, dim, window, 1, reduction)
    repulsion = make_repulsion(T, dim, batch, HMAX)

    @cuda.jit(fastmath=True)
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
        buf = cuda.shared.array(BUF, float32)
        sent = cuda.shared.array(MAXLEN, int32)
        cnt = cuda.shared.array(T, int32)
        red = cuda.shared.array((2, 1, T), float32)
        nid = cuda.shared.array(HMAX, int32)
        n = subsample_block(tokens, start, raw, keep, key, sentence, sent, cnt)
        pairs, loss = attraction(w_in, w_out, sent, n, key, sentence, alpha, prob, alias, negs[:0], 0, with_loss,
                                 buf, red)
        cuda.syncthreads()  # the ring's rows are back in w_in before repulsion reads them
        loss += repulsion(w_in, w_out, sent, n, key, sentence, alpha, window, negative, h_factor, prob, alias, negs,
                          start - neg_base, with_loss, buf, nid)
        if t == 0:
            out_loss[blk] = loss
            out_pairs[blk] = pairs
        cuda.syncthreads()
        if t != 0 and loss != 0.0:
            cuda.atomic.add(out_loss, blk, loss)

    return par_kernel
