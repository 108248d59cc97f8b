"""PAR-Word2Vec (Moon et al.): skip-gram negative sampling with decoupled Attraction and Repulsion.

Each (subsampled) sentence is trained in two phases (the paper's Algorithms 2-4, CPU version):

1. **Attraction** (Algorithm 3): for every center word, with the window shrunk by a random ``b`` in
   [0, window) as word2vec.c does, every context word's *input* vector is pulled towards the center's
   *output* vector: the positive (label 1) half of classic SGNS and nothing else.  Each pair is
   :func:`parvec.kernels.classic.classic_update` with the center as the only target, a center's pairs in
   context order (``tests/kernels/test_par.py`` checks this against classic's own function).
2. **Repulsion** (Algorithm 4): the sentence is cut into minibatches of ``B`` consecutive words
   (``par_batch``; 0 = the whole sentence is one batch; the last batch may be shorter, and is not
   dropped as a literal ``L / B`` would).  All words of a batch share ``H`` negatives drawn from the
   unigram^0.75 distribution, where

   - ``C_rep`` is drawn per batch as in Algorithm 4 lines 5-9: uniform in [0, C) when the batch's
     *first* word lies within ``C`` (= ``window``) words of either end of the sentence
     (``min_pos <= C - 1`` or ``L - 1 - min_pos <= C - 1``, L = subsampled sentence length), else
     uniform in [0, 2C).  (With ``par_batch=0`` the single batch starts at position 0, so it always
     takes the edge rule.  Whole-sentence batches suit short sentences -- the paper's 1B-Word lines,
     random walks; on text8-style lines cut at 10,000 tokens, each negative's output row takes
     thousands of simultaneous gradient terms and training diverges: docs/par_word2vec.md.)
   - ``H = round(par_h_factor * T * C_rep)`` with ``T = negative`` (round half up).  ``par_h_factor=1``
     is the paper's ``H = T * C_rep``.  A middle batch then averages ``T(C - 1/2)`` negatives per word,
     where classic SGNS gives a word ``T(C + 1)`` (it is the context of ``C + 1`` centers on average):
     ``par_h_factor = (C + 1) / (C - 1/2)`` would match classic's count.  ``C_rep = 0`` means no
     repulsion for that batch, as in the paper.

   The update is the three small matrix products of Algorithm 4: with ``M_in`` (B x D) the batch words'
   *input* vectors and ``M_out`` (H x D) the negatives' *output* vectors, both copied before any write,

       G = -sigmoid(M_out M_in^T) * alpha        (H x B; label 0)
       W_out[negs]  += G M_in                    (H x D)
       W_in[words]  += G^T M_out                 (B x D)

   i.e. one simultaneous gradient step of ``sum log sigmoid(-<out_h, in_b>)`` over all (h, b) pairs.
   A negative is not skipped when it equals a batch word (the paper does not; there is no single
   positive target to compare with).

The learning rate follows the contract: linear over the chunk's raw words, taken at each center word
(attraction) and at each batch's first word (repulsion), the same interpolation as classic.  The random
stream (subsampling, window shrinks, C_rep, negatives) comes from the chunk's seed only.

**Loss.**  ``loss`` sums the SGNS terms actually optimised: ``-log sigmoid(f)`` for every positive pair
and ``-log sigmoid(-f)`` for every (batch word, shared negative) pair, with classic's clamp of ``f`` to
+-20; the trainer divides it by the positive pairs, so it is "per positive pair" as classic's is (with
``T * E[C_rep] / (C + 1)`` negative terms per pair instead of classic's ``T``: 0.75 T for window 5).

**Sigmoid.**  Gradients saturate beyond +-MAX_EXP as in classic; inside, ``sigmoid(f) = (1 + tanh(f/2))/2``
with Eigen's [13/6] rational tanh (max error 3.4e-7), which LLVM vectorises (no exp/log call per pair).
The per-pair log of the loss is deferred: ``log(1 + e^-|f|) = log 2 - log(1 + |tanh(f/2)|)``, so one
``log`` of a product per row (repulsion) or per center (attraction) replaces one per pair.

**Performance** (measurements in docs/par_word2vec.md):

- The repulsion products are sgemm calls (numba's ``np.dot`` with an output array -> scipy's BLAS), on
  copies of the rows in the thread-local ``work`` buffer; each delta is added to the shared matrices
  once.  Hand-written 4 x 4 register-tiled loops took 1.5x as long.
- Attraction is a chain of dependent latencies (dot -> sigmoid -> update -> next dot), so the two
  halves of a long sentence are trained as two interleaved chains (:func:`attract_two_centers`).
- Dimensions 100 and 128 get their own inlined copies of both phases with the dimension as a
  constant (loops without remainder code); other dimensions run the same code with a run-time one.
- Rows are prefetched (``llvm.prefetch``): the rows the centers a few words ahead will touch, and the
  next batch's rows (its C_rep and negatives are drawn one batch ahead, same stream order).
- The kernel works on owner-less views of its arrays (:func:`parvec.kernels.hogbatch.borrowed`): numba
  would otherwise update the shared matrices' reference count atomically at every inlined call, a cache
  line both threads write.

Example:
    >>> from parvec.config import TrainConfig
    >>> kp, work_floats = params(TrainConfig(algo="par", par_batch=16))
    >>> kp.window, kp.negative, kp.batch
    (5, 5, 16)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from parvec.kernels.classic import MAX_EXP
from parvec.kernels.fastmath import FASTMATH
from parvec.kernels.hogbatch import borrowed
from parvec.kernels.params import ChunkRates, KernelParams
from parvec.sampling import draw_noise, rng_below, rng_next, subsample_sentence

if TYPE_CHECKING:
    from parvec.config import TrainConfig

TILE = 64  # at most this many batch words per set of products (bounds the scratch for G)
# OpenBLAS runs a gemm on one thread when M * N * K stays below 2 * 65536 * 4; tiles keep M * N * K
# under 65536 * 4 so a product never wakes BLAS threads to compete with the trainer's (checked with
# scipy's OpenBLAS 0.3: 288,000 ran serially, 614,400 used a second thread).
BLAS_SERIAL_MNK = 65536 * 4
LN2 = np.float32(0.6931471805599453)
LOSS_CLAMP = np.float32(20.0)  # classic clamps f to +-20 for the loss
PREFETCH_AHEAD = 4  # attraction: prefetch the rows of the center this many words ahead

# Eigen's rational approximation of tanh on [-7.9, 7.9] (numerator odd, degree 13; denominator even, 6).
_A1 = np.float32(4.89352455891786e-03)
_A3 = np.float32(6.37261928875436e-04)
_A5 = np.float32(1.48572235717979e-05)
_A7 = np.float32(5.12229709037114e-08)
_A9 = np.float32(-8.60467152213735e-11)
_A11 = np.float32(2.00018790482477e-13)
_A13 = np.float32(-2.76076847742355e-16)
_B0 = np.float32(4.89352518554385e-03)
_B2 = np.float32(2.26843463243900e-03)
_B4 = np.float32(1.18534705686654e-04)
_B6 = np.float32(1.19825839466702e-06)
_TANH_CLAMP = np.float32(7.90531110763549805)


@intrinsic
def _prefetch_row(typingctx, arr, row):
    """Prefetch the cache lines of ``arr[row, :]`` (a hint: never faults, changes no values)."""
    if not isinstance(arr, types.Array) or arr.ndim != 2 or not isinstance(row, types.Integer):
        return None
    sig = types.void(arr, row)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        r = context.cast(builder, args[1], signature.args[1], types.intp)
        shape = cgutils.unpack_tuple(builder, ary.shape)
        ptr = cgutils.get_item_pointer2(context, builder, ary.data, shape, cgutils.unpack_tuple(builder, ary.strides),
                                        aryty.layout, [r, zero], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        base = builder.bitcast(ptr, i8p)
        itemsize = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(aryty.dtype)))
        nbytes = builder.mul(shape[1], itemsize)
        # One hint per 64-byte line, plus the row's last byte: rows need not start on a line.
        with cgutils.for_range_slice(builder, zero, nbytes, context.get_constant(types.intp, 64)) as (off, _):
            builder.call(fn, [builder.gep(base, [off]), i32(0), i32(3), i32(1)])
        last = builder.gep(base, [builder.sub(nbytes, context.get_constant(types.intp, 1))])
        builder.call(fn, [last, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(inline="always")
def _tanh(x):
    x = min(max(x, -_TANH_CLAMP), _TANH_CLAMP)
    x2 = x * x
    p = _A13
    p = p * x2 + _A11
    p = p * x2 + _A9
    p = p * x2 + _A7
    p = p * x2 + _A5
    p = p * x2 + _A3
    p = p * x2 + _A1
    p = p * x
    q = _B6
    q = q * x2 + _B4
    q = q * x2 + _B2
    q = q * x2 + _B0
    return p / q


@njit(inline="always")
def _sigmoid(f, t):
    """sigmoid(f) from ``t = tanh(f/2)``, saturated beyond +-MAX_EXP as classic's gradient is."""
    sig = np.float32(0.5) + np.float32(0.5) * t
    sig = np.float32(1.0) if f > MAX_EXP else sig
    return np.float32(0.0) if f < -MAX_EXP else sig


@njit(nogil=True, cache=True, error_model="numpy")
def draw_c_rep(state: np.uint64, min_pos: int, n: int, window: int) -> tuple[np.uint64, int]:
    """Algorithm 4, lines 5-9: ``C_rep`` of the batch starting at ``min_pos`` of an ``n``-word sentence.

    Uniform in [0, window) when the batch's first word is within ``window`` words of either end of the
    sentence, else uniform in [0, 2 * window).  Returns the advanced RNG state and ``C_rep``.

    Example:
        >>> state, c_rep = draw_c_rep(np.uint64(12345), 0, 100, 5)
        >>> 0 <= c_rep < 5
        True
    """
    state = rng_next(state)
    if min_pos <= window - 1 or n - 1 - min_pos <= window - 1:
        return state, rng_below(state, window)
    return state, rng_below(state, 2 * window)


@njit(nogil=True, cache=True, error_model="numpy")
def shared_negatives(c_rep: int, negative: int, h_factor: float) -> np.int64:
    """``H``, the number of negatives a batch shares: ``round(h_factor * negative * c_rep)``.

    Example:
        >>> shared_negatives(7, 5, 1.0), shared_negatives(7, 5, 1.2)
        (35, 42)
    """
    return np.int64(h_factor * negative * c_rep + 0.5)


@njit(inline="always")
def _attraction_gradient(f, alpha):
    """Gradient and loss of one attraction pair with score ``f`` (classic's label-1 step).

    Returns ``(g, lin, fac)``: the pair's ``-log sigmoid(f)`` is split as ``lin`` (``max(-f, 0) + log 2``)
    and ``fac`` (``1 + |tanh(f/2)|``); the caller subtracts the log of the product of the ``fac`` once
    per center.
    """
    t = _tanh(np.float32(0.5) * f)
    g = (np.float32(1.0) - _sigmoid(f, t)) * alpha
    return g, min(max(-f, np.float32(0.0)), LOSS_CLAMP) + LN2, np.float32(1.0) + abs(t)


@njit(inline="always")
def _pull_together(w_in, ctx, co, g, dim):
    """Both rows of a pair move by ``g`` times the other's pre-update value."""
    for d in range(dim):
        c = co[d]
        co[d] = c + g * w_in[ctx, d]
        w_in[ctx, d] += g * c


@njit(inline="always")
def _positive_pair(w_in, ctx, co, alpha, dim):
    """One attraction pair (``co`` holds the center's output row); returns ``(lin, fac)``, see above."""
    f = np.float32(0.0)
    for d in range(dim):
        f += w_in[ctx, d] * co[d]
    g, lin, fac = _attraction_gradient(f, alpha)
    _pull_together(w_in, ctx, co, g, dim)
    return lin, fac


@njit(inline="always")
def _attract_run(w_in, sent, lo, hi, skip, co, alpha, dim):
    """Pairs of ``sent[lo:hi]`` (position ``skip``, the center, excluded) with the output row ``co``, in
    order; returns (sum of ``lin``, product of ``fac``) as :func:`_attraction_gradient` splits them."""
    loss = 0.0
    prod = 1.0
    for j in range(lo, hi):
        if j != skip:
            lin, fac = _positive_pair(w_in, sent[j], co, alpha, dim)
            loss += lin
            prod *= fac
    return loss, prod


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy", inline="always")
def attract_center(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, i: int, lo: int, hi: int,
                   alpha: np.float32, co: np.ndarray) -> float:
    """Attraction for the center ``sent[i]`` and its context words ``sent[lo:hi]`` (``i`` excluded).

    Pair by pair, in context order, exactly :func:`parvec.kernels.classic.classic_update` with the center
    as the only (label 1) target.  The center's output row lives in ``co`` (>= dim floats of scratch)
    while its window is trained, and is written back once.  Returns the summed ``-log sigmoid(f)``.

    Example:
        >>> attract_center(w_in, w_out, sent, 5, 3, 8, np.float32(0.025), scratch)  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    center = sent[i]
    for d in range(dim):
        co[d] = w_out[center, d]
    loss, prod = _attract_run(w_in, sent, lo, hi, i, co, alpha, dim)  # one log per center, not per pair
    for d in range(dim):
        w_out[center, d] = co[d]
    return loss - np.log(prod)


@njit(inline="always")
def _attract_two(w_in, w_out, sent, ia, loa, hia, alpha_a, ib, lob, hib, alpha_b, work, dim):
    zero = np.float32(0.0)
    co_a = work[:dim]
    co_b = work[dim:2 * dim]
    c0_b = work[2 * dim:3 * dim]
    ca = sent[ia]
    cb = sent[ib]
    for d in range(dim):
        co_a[d] = w_out[ca, d]
        co_b[d] = w_out[cb, d]
        c0_b[d] = co_b[d]
    loss = 0.0
    prod = 1.0
    ja = loa
    jb = lob
    while True:
        if ja == ia:
            ja += 1
        if jb == ib:
            jb += 1
        if ja >= hia or jb >= hib:
            break
        xa = sent[ja]
        xb = sent[jb]
        fa = zero
        fb = zero
        for d in range(dim):
            fa += w_in[xa, d] * co_a[d]
            fb += w_in[xb, d] * co_b[d]
        ga, lin_a, fac_a = _attraction_gradient(fa, alpha_a)
        gb, lin_b, fac_b = _attraction_gradient(fb, alpha_b)
        loss += lin_a + lin_b
        prod *= fac_a * fac_b
        # One after the other: if xa == xb the second update reads the first one's result.
        _pull_together(w_in, xa, co_a, ga, dim)
        _pull_together(w_in, xb, co_b, gb, dim)
        ja += 1
        jb += 1
    # Whichever window still has pairs finishes them as one chain.
    la, pa = _attract_run(w_in, sent, ja, hia, ia, co_a, alpha_a, dim)
    lb, pb = _attract_run(w_in, sent, jb, hib, ib, co_b, alpha_b, dim)
    loss += la + lb
    prod *= pa * pb
    # Write back without a branch (a branch here makes numba keep an atomic reference-count update of
    # w_out per call, a cache line the threads would fight over).  B's row gets B's result plus
    # whatever changed since B read it: nothing, or A's delta when both centers are the same word.
    for d in range(dim):
        w_out[ca, d] = co_a[d]
    for d in range(dim):
        w_out[cb, d] = co_b[d] + (w_out[cb, d] - c0_b[d])
    return loss - np.log(prod)


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy", inline="always")
def attract_two_centers(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, ia: int, loa: int, hia: int,
                        alpha_a: np.float32, ib: int, lob: int, hib: int, alpha_b: np.float32,
                        work: np.ndarray) -> float:
    """:func:`attract_center` for two centers at once, their pairs interleaved.

    Each center's pairs run in its own context order, so when the two windows share no rows the result
    is that of two :func:`attract_center` calls; interleaving two independent dependency chains (dot ->
    sigmoid -> update -> next dot) lets the core overlap their latencies.  The caller picks centers far
    apart; should they still share a word, nothing is lost: input rows are updated in place one pair
    after the other, and two equal centers add both deltas to the output row.  ``work`` holds
    3 x dim floats.  Returns the summed ``-log sigmoid(f)`` of both windows.

    Example:
        >>> attract_two_centers(w_in, w_out, sent, 5, 3, 8, np.float32(0.025),
        ...                     505, 501, 510, np.float32(0.025), scratch)  # doctest: +SKIP
    """
    return _attract_two(w_in, w_out, sent, ia, loa, hia, alpha_a, ib, lob, hib, alpha_b, work,
                        w_in.shape[1])


def repulsion_work_floats(batch: int, h: int, dim: int) -> int:
    """Scratch floats :func:`repulsion_update` needs for up to ``batch`` words and ``h`` negatives.

    Example:
        >>> repulsion_work_floats(24, 45, 100)
        14880
    """
    tile = min(batch, TILE)
    return (batch + 2 * h + tile) * dim + h * tile


@njit(inline="always")
def _repulsion(w_in, w_out, words, negs, alpha, work, dim):
    nb = len(words)
    nh = len(negs)
    if nb == 0 or nh == 0:
        return 0.0
    tile = max(1, min(nb, TILE, BLAS_SERIAL_MNK // (nh * dim)))
    off = 0
    m_in = work[off:off + nb * dim].reshape((nb, dim))
    off += nb * dim
    m_out = work[off:off + nh * dim].reshape((nh, dim))
    off += nh * dim
    d_out = work[off:off + nh * dim].reshape((nh, dim))
    off += nh * dim
    d_in = work[off:off + tile * dim].reshape((tile, dim))
    off += tile * dim
    g_buf = work[off:off + nh * tile]
    zero = np.float32(0.0)
    one = np.float32(1.0)
    half = np.float32(0.5)
    a = np.float32(alpha)
    # Copy first (the paper's memcpy into M_in, M_out): all products read pre-update rows.
    for b in range(nb):
        w = words[b]
        for d in range(dim):
            m_in[b, d] = w_in[w, d]
    for h in range(nh):
        w = negs[h]
        for d in range(dim):
            m_out[h, d] = w_out[w, d]
    loss = 0.0
    for b0 in range(0, nb, tile):
        bt = min(tile, nb - b0)
        m_in_t = m_in[b0:b0 + bt]
        g = g_buf[:nh * bt].reshape((nh, bt))
        np.dot(m_out, m_in_t.T, g)  # scores, H x B
        for h in range(nh):  # gradient in place; vectorised (no exp/log per element)
            prod = one  # prod of (1 + |tanh(f/2)|) over <= TILE terms: < 2**64, no overflow
            pos = zero
            for b in range(bt):
                f = g[h, b]
                t = _tanh(half * f)
                g[h, b] = -_sigmoid(f, t) * a
                # -log sigmoid(-f) = max(f, 0) + log 2 - log(1 + |tanh(f/2)|)
                pos += min(max(f, zero), LOSS_CLAMP)
                prod *= one + abs(t)
            loss += pos + bt * LN2 - np.log(prod)
        d_in_t = d_in[:bt]
        np.dot(g.T, m_out, d_in_t)  # input deltas, B x D
        np.dot(g, m_in_t, d_out)  # output deltas, H x D
        for b in range(bt):  # each delta is added once, to the shared matrices
            w = words[b0 + b]
            for d in range(dim):
                w_in[w, d] += d_in_t[b, d]
        for h in range(nh):
            w = negs[h]
            for d in range(dim):
                w_out[w, d] += d_out[h, d]
    return loss


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy", inline="always")
def repulsion_update(w_in: np.ndarray, w_out: np.ndarray, words: np.ndarray, negs: np.ndarray,
                     alpha: np.float32, work: np.ndarray) -> float:
    """Repulsion of one minibatch: ``words`` (B) against the shared negatives ``negs`` (H), label 0.

    Algorithm 4's three products: ``M_in = w_in[words]`` and ``M_out = w_out[negs]`` are copied into
    ``work`` (at least :func:`repulsion_work_floats` floats; its contents do not matter) before anything
    is written, then ``G = -sigmoid(M_out M_in^T) * alpha``, ``w_out[negs] += G M_in`` and
    ``w_in[words] += G^T M_out`` (repeated indices accumulate).  The products are sgemm calls
    (numba's ``np.dot`` -> BLAS), on tiles of words small enough that OpenBLAS never wakes its own
    threads.  Returns the summed ``-log sigmoid(-f)`` of the H x B pairs.

    Example:
        >>> loss = repulsion_update(w_in, w_out, np.array([3, 8], np.int32), np.array([1, 9, 4], np.int32),
        ...                         np.float32(0.025), np.zeros(10000, np.float32))  # doctest: +SKIP
    """
    return _repulsion(w_in, w_out, words, negs, alpha, work, w_in.shape[1])


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def train_chunk(w_in: np.ndarray, w_out: np.ndarray, tokens: np.ndarray, offsets: np.ndarray, s_lo: int,
                s_hi: int, keep: np.ndarray, noise_prob: np.ndarray, noise_alias: np.ndarray,
                params: KernelParams, rates: ChunkRates, seed: np.uint64, sent_buf: np.ndarray,
                work: np.ndarray) -> tuple[int, int, float]:
    """Train sentences ``s_lo..s_hi`` (see docs/architecture.md for the contract).

    Reads ``params.window``, ``params.negative``, ``params.batch`` (``par_batch``), ``params.h_max`` and
    ``params.h_factor`` as :func:`params` builds them; returns (raw words, positive pairs, summed loss).

    Example:
        >>> kp, floats = params(config)  # doctest: +SKIP
        >>> train_chunk(w_in, w_out, tokens, offsets, 0, len(offsets) - 1, keep, prob, alias, kp,
        ...             ChunkRates.of(0.025, 0.025), np.uint64(1),
        ...             np.empty(config.max_sentence_length, np.int32), np.zeros(floats, np.float32))  # doctest: +SKIP
    """
    window = params.window
    negative = params.negative
    batch = params.batch
    h_max = params.h_max
    alpha0 = rates.alpha0
    alpha1 = rates.alpha1
    h_factor = params.h_factor
    # Owner-less views: no atomic reference counting on the shared matrices per center or batch.
    w_in = borrowed(w_in)
    w_out = borrowed(w_out)
    sent_buf = borrowed(sent_buf)
    work = borrowed(work)
    dim = w_in.shape[1]
    co = work[:3 * dim]  # the attraction's center rows
    negs_a = work[3 * dim:3 * dim + h_max].view(np.int32)  # this batch's negatives
    negs_b = work[3 * dim + h_max:3 * dim + 2 * h_max].view(np.int32)  # the next batch's
    rwork = work[3 * dim + 2 * h_max:]
    state = seed
    chunk_words = max(offsets[s_hi] - offsets[s_lo], 1)
    done = 0
    pairs = 0
    loss = 0.0
    for s in range(s_lo, s_hi):
        start = offsets[s]
        end = offsets[s + 1]
        n, state = subsample_sentence(tokens, start, end, keep, state, sent_buf)
        raw_len = end - start
        # Attraction (Algorithm 3), classic's learning-rate interpolation over the sentence.
        a_first = alpha0 + (alpha1 - alpha0) * done / chunk_words
        a_step = (alpha1 - alpha0) * raw_len / max(n, 1) / chunk_words
        if n >= 4 * window + 2:
            # Two chains, the sentence's halves: centers i and i + n//2 are trained together.  Their
            # windows are >= 2 * window + 1 positions apart, so they share rows only through repeated
            # words.  Window shrinks are drawn for the pair of centers in that order.
            half_n = n // 2
            for step in range(half_n):
                ia = step
                ib = half_n + step
                if ib + PREFETCH_AHEAD < n:  # hide the miss latency of rows the next centers touch
                    _prefetch_row(w_out, sent_buf[ia + PREFETCH_AHEAD])
                    _prefetch_row(w_out, sent_buf[ib + PREFETCH_AHEAD])
                    _prefetch_row(w_in, sent_buf[ia + PREFETCH_AHEAD + window])
                    if ib + PREFETCH_AHEAD + window < n:
                        _prefetch_row(w_in, sent_buf[ib + PREFETCH_AHEAD + window])
                state = rng_next(state)
                ba = rng_below(state, window)
                state = rng_next(state)
                bb = rng_below(state, window)
                loa = max(0, ia - window + ba)
                hia = ia + window - ba + 1
                lob = ib - window + bb
                hib = min(n, ib + window - bb + 1)
                aa = np.float32(a_first + a_step * ia)
                ab = np.float32(a_first + a_step * ib)
                # Common dimensions get code with a constant trip count (no loop remainders).
                if dim == 100:
                    loss += _attract_two(w_in, w_out, sent_buf, ia, loa, hia, aa, ib, lob, hib, ab, co, 100)
                elif dim == 128:
                    loss += _attract_two(w_in, w_out, sent_buf, ia, loa, hia, aa, ib, lob, hib, ab, co, 128)
                else:
                    loss += _attract_two(w_in, w_out, sent_buf, ia, loa, hia, aa, ib, lob, hib, ab, co, dim)
                pairs += hia - loa + hib - lob - 2
            first_single = 2 * half_n
        else:
            first_single = 0
        for i in range(first_single, n):  # short sentences (and an odd one's last center): one chain
            if i + PREFETCH_AHEAD < n:
                _prefetch_row(w_out, sent_buf[i + PREFETCH_AHEAD])
                if i + PREFETCH_AHEAD + window < n:
                    _prefetch_row(w_in, sent_buf[i + PREFETCH_AHEAD + window])
            state = rng_next(state)
            b = rng_below(state, window)
            lo = max(0, i - window + b)
            hi = min(n, i + window - b + 1)
            loss += attract_center(w_in, w_out, sent_buf, i, lo, hi, np.float32(a_first + a_step * i), co)
            pairs += hi - lo - 1
        # Repulsion (Algorithm 4).  Each batch's C_rep and negatives are drawn one batch ahead (the
        # random stream is consumed in the same order) so that its rows can be prefetched.
        bsz = batch if batch > 0 else max(n, 1)
        nh = 0
        if n > 0:
            state, c_rep = draw_c_rep(state, 0, n, window)
            nh = shared_negatives(c_rep, negative, h_factor)
            for k in range(nh):
                state = rng_next(state)
                negs_a[k] = draw_noise(state, noise_prob, noise_alias)
        for min_pos in range(0, n, bsz):
            nxt = min_pos + bsz
            nh_next = 0
            if nxt < n:
                state, c_rep = draw_c_rep(state, nxt, n, window)
                nh_next = shared_negatives(c_rep, negative, h_factor)
                for k in range(nh_next):
                    state = rng_next(state)
                    w = draw_noise(state, noise_prob, noise_alias)
                    negs_b[k] = w
                    _prefetch_row(w_out, w)
                for k in range(nxt, min(nxt + bsz, n)):
                    _prefetch_row(w_in, sent_buf[k])
            frac = (done + min_pos * raw_len / n) / chunk_words
            alpha = np.float32(alpha0 + (alpha1 - alpha0) * frac)
            words = sent_buf[min_pos:min(nxt, n)]
            if dim == 100:
                loss += _repulsion(w_in, w_out, words, negs_a[:nh], alpha, rwork, 100)
            elif dim == 128:
                loss += _repulsion(w_in, w_out, words, negs_a[:nh], alpha, rwork, 128)
            else:
                loss += _repulsion(w_in, w_out, words, negs_a[:nh], alpha, rwork, dim)
            negs_a, negs_b = negs_b, negs_a
            nh = nh_next
        done += raw_len
    return done, pairs, loss


def params(config: TrainConfig) -> tuple[KernelParams, int]:
    """(the kernel's parameters, its work size in floats) for :func:`train_chunk`: ``batch`` is ``par_batch``,
    ``h_max`` the most shared negatives a batch can draw, ``h_factor`` ``par_h_factor``.

    Example:
        >>> from parvec.config import TrainConfig
        >>> kp, floats = params(TrainConfig(algo="par", window=8, par_h_factor=1.2))
        >>> kp.window, kp.negative, kp.batch, kp.h_max, kp.h_factor
        (8, 5, 24, 90, 1.2)
    """
    h_max = int(shared_negatives(2 * config.window - 1, config.negative, config.par_h_factor))
    batch = min(config.par_batch, config.max_sentence_length) if config.par_batch > 0 else config.max_sentence_length
    floats = 3 * config.dim + 2 * h_max + repulsion_work_floats(batch, h_max, config.dim)
    return KernelParams.of(config, batch=config.par_batch, h_max=h_max, h_factor=config.par_h_factor), floats
