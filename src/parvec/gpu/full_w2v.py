"""FULL-W2V (Randall, Allen and Ge, ICS'21) as a numba-cuda kernel: one thread block per sentence.

Per block (see :mod:`parvec.gpu.blocks` for the thread layout and :mod:`parvec.gpu.reference` for the exact
update order, which the tests check this kernel against):

1. the sentence (at most :data:`parvec.gpu.plan.GPU_MAX_SENTENCE` tokens) is subsampled into shared memory
   with counter-based random numbers (:mod:`parvec.gpu.rng`);
2. the centers are walked in order.  The input rows of the positions within ``window`` of the center live
   in a shared-memory ring of ``2 window + 1`` rows: each row is read from global memory once per
   sentence, when its position enters the window, and its change is added back once, when it leaves
   (the paper's *lifetime reuse of context words*);
3. the center's and its negatives' output rows are read into registers once per center and reused over
   the whole window (the paper's *independence of negative samples*: ``negative`` negatives per center,
   shared by its context words), then their changes are added back atomically;
4. per context word a single block reduction gives the ``negative + 1`` dot products at once.

Departures from the paper, for the CPU kernels' quality: word2vec.c's random window shrink per center
(the paper fixes the width to ``ceil(window / 2)``), sentence boundaries kept (the paper joins sentences),
and changes added with atomics rather than rows overwritten (a block never erases another's update).

Example:
    >>> kernel = make_kernel(64, 128, 5, 5, "tree")  # doctest: +SKIP
    >>> kernel[n_sentences, 64](w_in, w_out, tokens, offsets, 0, 0, key, 0.025, 0.024, words, keep, prob,
    ...                         alias, negs, 0, True, out_loss, out_pairs)  # doctest: +SKIP
"""

from __future__ import annotations

import functools

from numba import cuda, float32, float64, int32

from parvec.errors import ParvecError
from parvec.gpu.blocks import SHARED_LIMIT, kernel_jit, make_window_pass, residency_pad_bytes, subsample_block
from parvec.gpu.plan import GPU_MAX_SENTENCE


def shared_bytes(n_threads: int, dim: int, window: int, negative: int) -> int:
    """Static shared memory of one FULL-W2V block: the ring and its entry values (2 x (2 window + 1) rows),
    the reduction buffers, the sentence's tokens (and :func:`token_pad`), the subsampling counts and a center's
    gradients (ptxas reports exactly this, less the unused reduction buffer of a one-warp block with the shuffle
    reduction).

    Example:
        >>> shared_bytes(64, 128, 5, 5)
        20208
    """
    return _base_bytes(n_threads, dim, window, negative) + token_pad(n_threads, dim, window, negative) * 4


def _base_bytes(n_threads: int, dim: int, window: int, negative: int) -> int:
    ring = 2 * (2 * window + 1) * dim
    gradients = 2 * window * (negative + 1)  # a center's (context, output) gradients (the window order)
    return 4 * (ring + 2 * (negative + 1) * n_threads + GPU_MAX_SENTENCE + n_threads + gradients)


def token_pad(n_threads: int, dim: int, window: int, negative: int) -> int:
    """Extra int32 slots of the block's token buffer: :func:`parvec.gpu.blocks.residency_pad_bytes`, so the blocks
    per SM stay what the launch bounds say.

    Example:
        >>> token_pad(64, 128, 5, 5)
        344
    """
    return residency_pad_bytes(n_threads, _base_bytes(n_threads, dim, window, negative)) // 4


def check_shared(n_threads: int, dim: int, window: int, negative: int) -> None:
    """:class:`ParvecError` naming what to lower when a block would need more than 48 KB of shared memory.

    Example:
        >>> check_shared(64, 128, 5, 5)
    """
    need = shared_bytes(n_threads, dim, window, negative)
    if need > SHARED_LIMIT:
        raise ParvecError(
            f"full-w2v on cuda keeps 2 x (2 window + 1) rows of the vectors in a block's shared memory: window "
            f"{window} at dim {dim} needs {need / 1024:.1f} KB, more than the {SHARED_LIMIT // 1024} KB a block may "
            "use; lower --window or --dim, or use --algo par")


@functools.cache
def make_kernel(n_threads: int, dim: int, window: int, negative: int, reduction: str = "tree",
                writers_cap: int = 0):
    """The FULL-W2V kernel for ``n_threads`` threads per block (a power of two), ``dim``, ``window`` and
    ``negative``, with the ``reduction`` of :func:`parvec.gpu.blocks.make_reduce`.

    Launch it with one block per sentence: ``kernel[n_blocks, n_threads](w_in, w_out, tokens, offsets, s_lo,
    sentence_base, key, alpha0, alpha1, words, keep, prob, alias, negs, neg_base, with_loss, out_loss,
    out_pairs)``; block ``b`` trains sentence ``s_lo + b`` (epoch-wide index ``sentence_base + b``) at the
    rate interpolated between ``alpha0`` and ``alpha1`` at its first word, and writes its loss and positive
    pairs to ``out_loss[b]``/``out_pairs[b]``.  ``negs`` with rows (test mode) gives the negatives of the
    center at token position ``p`` (sentence start + subsampled position) in row ``p - neg_base``.
    ``writers_cap`` > 0 (``TrainConfig.gpu_writers_cap``): the kernel takes one more argument after
    ``out_pairs``, ``busy``, an int32 array of ``2 x V`` zeros (``V`` rows), and scales each block's change of an
    output row held by more than ``writers_cap`` blocks at once, and of an input row with more than
    ``writers_cap`` copies in the blocks' rings (:func:`parvec.gpu.blocks.make_window_pass`); the counts are zero
    again after the launch.

    Example:
        >>> kernel = make_kernel(64, 128, 5, 5, "tree")  # doctest: +SKIP
    """
    check_shared(n_threads, dim, window, negative)
    T = n_threads
    P = -(-dim // T)
    NO = negative + 1
    BUF = 2 * (2 * window + 1) * dim
    MAXLEN = GPU_MAX_SENTENCE
    TOKENS = MAXLEN + token_pad(n_threads, dim, window, negative)
    GW = 2 * window * NO
    window_pass = make_window_pass(T, P, dim, window, NO, reduction, None, True, int(writers_cap))

    @cuda.jit(device=True, fastmath=True)
    def train_block(w_in, w_out, tokens, offsets, s_lo, sentence_base, key, alpha0, alpha1, words, keep, prob,
                    alias, negs, neg_base, with_loss, out_loss, out_pairs, busy):
        blk = cuda.blockIdx.x
        s = s_lo + blk
        start = offsets[s]
        raw = min(offsets[s + 1] - start, MAXLEN)
        sentence = sentence_base + blk
        frac = float64(offsets[s] - offsets[s_lo]) / float64(max(words, 1))
        alpha = float32(alpha0 + (alpha1 - alpha0) * frac)
        buf = cuda.shared.array(BUF, float32)
        sent = cuda.shared.array(TOKENS, int32)
        cnt = cuda.shared.array(T, int32)
        red = cuda.shared.array((2, NO, T), float32)
        grads = cuda.shared.array(GW, float32)
        n = subsample_block(tokens, start, raw, keep, key, sentence, sent, cnt)
        pairs, loss = window_pass(w_in, w_out, sent, n, key, sentence, alpha, prob, alias, negs, start - neg_base,
                                  with_loss, buf, red, grads, cnt, 0.0, 0, busy)
        t = cuda.threadIdx.x
        if t == 0:
            out_loss[blk] = loss
            out_pairs[blk] = pairs
        cuda.syncthreads()
        if t != 0 and loss != 0.0:  # each thread's share of the loss (blocks.make_window_pass)
            cuda.atomic.add(out_loss, blk, loss)

    if writers_cap > 0:

        @kernel_jit(T, shared_bytes(T, dim, window, negative))
        def full_w2v_writers_kernel(w_in, w_out, tokens, offsets, s_lo, sentence_base, key, alpha0, alpha1, words,
                                    keep, prob, alias, negs, neg_base, with_loss, out_loss, out_pairs, busy):
            train_block(w_in, w_out, tokens, offsets, s_lo, sentence_base, key, alpha0, alpha1, words, keep, prob,
                        alias, negs, neg_base, with_loss, out_loss, out_pairs, busy)

        return full_w2v_writers_kernel

    @kernel_jit(T, shared_bytes(T, dim, window, negative))
    def full_w2v_kernel(w_in, w_out, tokens, offsets, s_lo, sentence_base, key, alpha0, alpha1, words, keep, prob,
                        alias, negs, neg_base, with_loss, out_loss, out_pairs):
        train_block(w_in, w_out, tokens, offsets, s_lo, sentence_base, key, alpha0, alpha1, words, keep, prob,
                    alias, negs, neg_base, with_loss, out_loss, out_pairs, out_pairs)

    return full_w2v_kernel
