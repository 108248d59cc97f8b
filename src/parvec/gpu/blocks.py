"""Device code both GPU kernels are built from: subsampling into shared memory, block reductions, and the
FULL-W2V window pass (which, with no negatives, is PAR's attraction).

A block trains one sentence; its ``T`` threads split the vector's ``D`` dimensions, thread ``t`` owning
dimensions ``t, t + T, t + 2T, ..`` (``P = ceil(D / T)`` of them).  Each thread reads and writes only its
own dimensions of every row, so rows need no barrier: the only barriers are in the reductions (a dot
product sums over all threads) and around the sentence's token buffer.

Everything here is generated per set of compile-time constants (``T``, ``P``, ``D``, window, outputs) by
small factories, so shared arrays have constant shapes and the per-thread arrays (the output rows'
values) have constant sizes and loops the compiler can unroll into registers.

Reductions: :func:`make_reduce` builds either a shared-memory tree (log2 T barriers; runs under numba's
CUDA simulator) or a warp-shuffle butterfly with one barrier across warps (the driver's default on a GPU,
faster on an H200: docs/gpu.md; numba's simulator has no shuffles, the tests give it one:
tests/gpu/sim_shuffle.py).

Kernels are compiled by :func:`kernel_jit`: fast math and launch bounds (:func:`min_blocks_per_sm`) that keep
the blocks per SM -- the sentences in flight -- at most what they were.

Example:
    >>> window_pass = make_window_pass(64, 2, 128, 5, 6, "tree")  # doctest: +SKIP
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda, float32, float64, int32, int64

from parvec.gpu.rng import keeps_token, negative_pick, window_shrink
from parvec.gpu.sgns import pair_error, pair_error_loss

REDUCTIONS = ("tree", "shuffle")
SHARED_LIMIT = 48 * 1024  # bytes of static shared memory one block may use


@cuda.jit(device=True, fastmath=True)
def draw_negative(key, sentence, position, k, prob, alias):
    """:func:`parvec.gpu.rng.negative_sample` for kernels: the same draw, with the table lookups in device
    code (numba's simulator cannot pass its device arrays to a CPU-compiled function)."""
    j, coin = negative_pick(key, sentence, position, k, len(prob))
    if coin < prob[j]:
        return int64(j)
    return int64(alias[j])


@cuda.jit(device=True, fastmath=True)
def subsample_block(tokens, start, raw, keep, key, sentence, sent, cnt):
    """Copy the kept tokens of ``tokens[start:start + raw]`` into the shared ``sent``; returns how many.

    Thread ``t`` takes a contiguous slice of the sentence: it counts its kept tokens (``cnt[t]``, shared),
    then writes them after the counts of the threads before it, so the order is the sentence's.  The keep
    draws are :func:`parvec.gpu.rng.keeps_token` on raw positions, as the reference's.  Two barriers.
    """
    t = cuda.threadIdx.x
    n_threads = cuda.blockDim.x
    per = (raw + n_threads - 1) // n_threads
    lo = min(t * per, raw)
    hi = min(lo + per, raw)
    c = 0
    for p in range(lo, hi):
        if keeps_token(key, sentence, p, keep[tokens[start + p]]):
            c += 1
    cnt[t] = c
    cuda.syncthreads()
    base = 0
    total = 0
    for u in range(n_threads):
        v = cnt[u]
        if u < t:
            base += v
        total += v
    for p in range(lo, hi):
        w = tokens[start + p]
        if keeps_token(key, sentence, p, keep[w]):
            sent[base] = w
            base += 1
    cuda.syncthreads()
    return total


@functools.cache
def make_reduce(n_threads: int, n_values: int, kind: str):
    """A device function ``reduce(part, red, parity)``: every thread's ``part[:n_values]`` is replaced by
    its sum over the block.  ``red`` is a shared ``(2, n_values, n_threads)`` float32 array used by
    alternate calls (``parity`` 0/1), so a call need not wait for every thread to read the last result.

    ``kind`` "tree": halving steps in shared memory, one barrier each (1 + log2 T barriers).  "shuffle":
    a butterfly of ``shfl_xor`` inside each warp, then one barrier to add the warps' sums (none when the
    block is one warp); needs ``n_threads`` a multiple of 32.

    Example:
        >>> reduce = make_reduce(64, 6, "tree")  # doctest: +SKIP
    """
    T = n_threads
    K = n_values
    if kind == "tree":

        @cuda.jit(device=True, fastmath=True)
        def reduce_tree(part, red, parity):
            t = cuda.threadIdx.x
            for k in range(K):
                red[parity, k, t] = part[k]
            cuda.syncthreads()
            s = T // 2
            while s > 0:
                if t < s:
                    for k in range(K):
                        red[parity, k, t] += red[parity, k, t + s]
                cuda.syncthreads()
                s //= 2
            for k in range(K):
                part[k] = red[parity, k, 0]

        return reduce_tree
    if kind != "shuffle":
        raise ValueError(f"reduction must be one of {', '.join(REDUCTIONS)}, got {kind!r}")
    if T % 32:
        raise ValueError(f"the shuffle reduction needs a multiple of 32 threads, got {T}")
    WARPS = T // 32
    FULL = 0xFFFFFFFF

    @cuda.jit(device=True, fastmath=True)
    def reduce_shuffle(part, red, parity):
        t = cuda.threadIdx.x
        for k in range(K):
            v = part[k]
            v += cuda.shfl_xor_sync(FULL, v, 16)
            v += cuda.shfl_xor_sync(FULL, v, 8)
            v += cuda.shfl_xor_sync(FULL, v, 4)
            v += cuda.shfl_xor_sync(FULL, v, 2)
            v += cuda.shfl_xor_sync(FULL, v, 1)
            part[k] = v
        if WARPS > 1:
            if t % 32 == 0:
                for k in range(K):
                    red[parity, k, t // 32] = part[k]
            cuda.syncthreads()
            for k in range(K):
                v = float32(0.0)
                for w in range(WARPS):
                    v += red[parity, k, w]
                part[k] = v

    return reduce_shuffle


@cuda.jit(device=True, fastmath=True)
def _no_repel(w_in, w_out, sent, n, i, m, key, sentence, alpha, prob, alias, negs, neg_row, with_loss, rbuf, nid,
              h_factor, lag):
    """FULL-W2V's (empty) step after each center: PAR's kernel repels its minibatches there."""
    return m, 0.0


@functools.cache
def make_window_pass(n_threads: int, per_thread: int, dim: int, window: int, n_out: int, reduction: str,
                     repel=None, window_order: bool = False, writers_cap: int = 0):
    """The FULL-W2V pass over one subsampled sentence (``n_out - 1`` negatives per center; ``n_out = 1`` is
    PAR's attraction), in the order :func:`parvec.gpu.reference.full_w2v_sentence` documents.

    ``window_pass(w_in, w_out, sent, n, key, sentence, alpha, prob, alias, negs, neg_row, with_loss, buf, red,
    rbuf, nid, h_factor, lag, busy) -> (pairs, loss)``; ``buf`` is shared float32 holding the ring (``2 window + 1``
    rows) and the rows' values when they entered it (for the change written back); ``negs`` (rows > 0: test
    mode) gives the negatives.  The outputs' rows live in per-thread arrays (registers), each read once per
    center and added back once.  ``window_order`` (FULL-W2V): HogBatch's update -- every (context, output)
    gradient from the values before the center, into the shared ``rbuf`` (``2 window x n_out`` floats), then
    both updates (:func:`parvec.gpu.reference.center_train_window`); otherwise context by context (PAR's
    attraction).  ``repel`` (PAR) is called after every center with ``rbuf, nid, h_factor, lag`` and returns
    (next minibatch, loss); without it ``nid``, ``h_factor`` and ``lag`` are unused.  ``loss`` is
    this thread's share: thread ``k`` takes output ``k``'s terms (from the exponential the gradient already
    has), so the logarithms of a context word run side by side, off the other threads' path.

    ``writers_cap`` > 0 (FULL-W2V's ``gpu_writers_cap``, :mod:`parvec.gpu.collisions`): ``busy`` is a global
    int32 array of ``2 x V`` counts, zero between launches: ``busy[0, row]``, the blocks holding output row ``row``
    (a block counts itself once when it reads a center's outputs), and ``busy[1, row]``, the copies of input row
    ``row`` in the blocks' rings (counted up when a copy is stored in a ring).  When the center adds its outputs'
    changes back, thread 0 counts each output row down (atomically) and the row's change is scaled by
    ``min(1, writers_cap / c)``, ``c`` the holders the count had, this block included; when a ring row is added
    back, thread 0 counts its copy down and the change is scaled the same way, ``c`` the other blocks' copies plus
    one (this block's copies still in its ring are not others') -- what :func:`parvec.gpu.reference.hogwild_train`
    models; alone, a block always sees ``c = 1``.  The scales pass through the tail of ``rbuf`` between
    barriers.  Otherwise ``busy`` is unused.

    Per center, the next center's negatives are drawn (hash and alias table) and, without ``repel``, the
    input row entering the ring next is read into registers while this center trains; the row is stored
    after this center's leaving row is added back (plus that row's change when it is the same word, so the
    ring holds what a read after the write gives).  Each context's ring values are read from shared memory
    once.  Index arithmetic is unsigned (no negative-index wraparound) and, when every thread owns ``P``
    dimensions, free of bound checks.

    Example:
        >>> window_pass = make_window_pass(64, 2, 128, 5, 6, "tree")  # doctest: +SKIP
    """
    T = n_threads
    P = per_thread
    D = dim
    W = window
    NO = n_out
    RING = 2 * W + 1
    EXACT = D == P * T  # every thread owns P dimensions: no bound checks
    ROUNDS = -(-NO // T)  # outputs whose loss one thread takes
    PREFETCH = repel is None  # PAR's repulsion writes w_in between centers: its entering row is read in place
    # with the shuffle reduction each lane computes one output's gradient and the warp shares them (one exponential
    # and division per thread instead of n_out); with the tree every thread computes all of them
    WINDOW = window_order
    BROADCAST = reduction == "shuffle" and T % 32 == 0 and NO <= 32
    FULL = 0xFFFFFFFF
    reduce = make_reduce(T, NO, reduction)
    after_center = _no_repel if repel is None else repel
    U = np.uint64
    UD = U(D)
    UT = U(T)
    UORIG = U(RING * D)
    URINGD = U(RING * D)
    URING = U(RING)
    UZERO = U(0)
    ONE = float32(1.0)
    ZERO = float32(0.0)
    WRITERS = writers_cap > 0
    CAP = int32(max(writers_cap, 1))
    SC = 2 * W * NO - NO  # rbuf's tail: the outputs' scales, and before them the scale of a ring row added back
    SI = SC - 1

    @cuda.jit(device=True, fastmath=True)
    def scale_of(c):
        if c <= CAP:
            return ONE
        return float32(CAP) / float32(c)

    @cuda.jit(device=True, fastmath=True)
    def writer_scales(busy, outs, valid, rbuf):
        # thread 0: the scales of this center's output rows into rbuf's tail (docstring); their counts go down
        if cuda.threadIdx.x == 0:
            for k in range(NO):
                sc = ONE
                if valid[k] != 0:
                    first = k
                    for j in range(k):
                        if first == k and valid[j] != 0 and outs[j] == outs[k]:
                            first = j
                    if first == k:
                        sc = scale_of(cuda.atomic.add(busy, (0, U(outs[k])), -1))
                    else:
                        sc = rbuf[SC + first]
                rbuf[SC + k] = sc

    @cuda.jit(device=True, fastmath=True)
    def load_row(w_in, row, base, buf, busy):
        t = U(cuda.threadIdx.x)
        for q in range(P):
            d = t + U(q) * UT
            if EXACT or d < UD:
                v = w_in[row, d]
                buf[base + d] = v
                buf[UORIG + base + d] = v
        if WRITERS and t == UZERO:  # one more copy of the row in a ring
            cuda.atomic.add(busy, (1, row), 1)

    @cuda.jit(device=True, fastmath=True)
    def ring_scale(busy, sent, p, held_hi, rbuf):
        # thread 0: the scale of ring position p's change into rbuf[SI], its copy counted down; every thread
        # reads it after the barrier (and rbuf[SI] is not written again before the next barrier)
        if cuda.threadIdx.x == 0:
            r = sent[p]
            own = 0  # this block's copies still in its ring (positions p .. held_hi - 1): not other blocks'
            for j in range(p, held_hi):
                if sent[j] == r:
                    own += 1
            rbuf[SI] = scale_of(cuda.atomic.add(busy, (1, U(r)), -1) - own + 1)
        cuda.syncthreads()

    @cuda.jit(device=True, fastmath=True)
    def flush_row(w_in, row, base, buf, sc):
        t = U(cuda.threadIdx.x)
        for q in range(P):
            d = t + U(q) * UT
            if EXACT or d < UD:
                if WRITERS:
                    cuda.atomic.add(w_in, (row, d), (buf[base + d] - buf[UORIG + base + d]) * sc)
                else:
                    cuda.atomic.add(w_in, (row, d), buf[base + d] - buf[UORIG + base + d])

    @cuda.jit(device=True, fastmath=True)
    def draw_outputs(negs, neg_row, i, key, sentence, prob, alias, nxt):
        use_negs = negs.shape[0] > 0
        for k in range(1, NO):
            if use_negs:
                nxt[k] = negs[neg_row + i, k - 1]
            else:
                nxt[k] = int32(draw_negative(key, sentence, i, k - 1, prob, alias))

    @cuda.jit(device=True, fastmath=True)
    def window_pass(w_in, w_out, sent, n, key, sentence, alpha, prob, alias, negs, neg_row, with_loss, buf, red,
                    rbuf, nid, h_factor, lag, busy):
        ti = cuda.threadIdx.x
        t = U(ti)
        cur = cuda.local.array((NO, P), float32)
        cur0 = cuda.local.array((NO, P), float32)
        part = cuda.local.array(NO, float32)
        grad = cuda.local.array(NO, float32)
        outs = cuda.local.array(NO, int32)
        nxt = cuda.local.array(NO, int32)
        valid = cuda.local.array(NO, int32)
        xs = cuda.local.array(P, float32)
        pre = cuda.local.array(P, float32)
        pairs = 0
        loss = 0.0
        parity = 0
        m = 0  # PAR: the next minibatch to repel
        for p in range(min(W + 1, n)):
            load_row(w_in, U(sent[p]), U(p) * UD, buf, busy)
        draw_outputs(negs, neg_row, 0, key, sentence, prob, alias, nxt)
        enter = U(W) * UD  # ring offset of the row entering at the next center (position i + 1 + W)
        for i in range(n):
            enter += UD
            if enter == URINGD:
                enter = UZERO
            if not PREFETCH and i > 0 and i + W < n:  # the position entering the window, read now
                load_row(w_in, U(sent[i + W]), U(i + W) % URING * UD, buf, busy)
            center = sent[i]
            outs[0] = center
            valid[0] = 1
            for k in range(1, NO):
                outs[k] = nxt[k]
                valid[k] = 1 if nxt[k] != center else 0
            for k in range(NO):
                row = U(outs[k])
                for q in range(P):
                    d = t + U(q) * UT
                    v = ZERO
                    if EXACT or d < UD:
                        v = w_out[row, d]
                    cur[k, q] = v
                    cur0[k, q] = v
            if WRITERS and ti == 0:  # this block holds its outputs' rows (each once)
                for k in range(NO):
                    first = valid[k] != 0
                    for j in range(k):
                        if valid[j] != 0 and outs[j] == outs[k]:
                            first = False
                    if first:
                        cuda.atomic.add(busy, (0, U(outs[k])), 1)
            # while this center trains: the next center's negatives, and the row entering at the next center
            if i + 1 < n:
                draw_outputs(negs, neg_row, i + 1, key, sentence, prob, alias, nxt)
            if PREFETCH and i + 1 + W < n:
                row = U(sent[i + 1 + W])
                for q in range(P):
                    d = t + U(q) * UT
                    if EXACT or d < UD:
                        pre[q] = w_in[row, d]
            b = window_shrink(key, sentence, i, W)
            lo = max(0, i - W + b)
            hi = min(n, i + W - b + 1)
            jb = U(lo) % URING * UD  # ring offset of context position j
            closs = ZERO  # this center's loss terms taken by this thread
            c = 0  # the context's index in the window
            for j in range(lo, hi):
                if j != i:
                    for q in range(P):
                        d = t + U(q) * UT
                        x = ZERO
                        if EXACT or d < UD:
                            x = buf[jb + d]
                        xs[q] = x
                    for k in range(NO):
                        acc = ZERO
                        for q in range(P):
                            acc += xs[q] * cur[k, q]
                        part[k] = acc
                    reduce(part, red, parity)
                    parity = 1 - parity
                    if WINDOW:  # thread k: output k's gradient (and loss term) into the shared rbuf; updates below
                        for r in range(ROUNDS):
                            kk = ti + r * T
                            f = ZERO
                            v = 0
                            for k in range(NO):  # blended, not selected (a select chain becomes part[kk], on the stack)
                                on = 1 if kk == k else 0
                                f += part[k] * float32(on)
                                v += valid[k] * on
                            if kk < NO:
                                err, lg, lin = pair_error_loss(f, ONE if kk == 0 else ZERO)
                                rbuf[c * NO + kk] = err * alpha if v != 0 else ZERO
                                if with_loss and v != 0:
                                    closs += lg + lin
                    elif BROADCAST:  # lane k computes output k's gradient (and loss) and hands it to the warp
                        lane = ti % 32
                        f = ZERO
                        v = 0
                        for k in range(NO):  # blended, not selected: a select chain becomes part[lane], on the stack
                            on = 1 if lane == k else 0
                            f += part[k] * float32(on)
                            v += valid[k] * on
                        err, lg, lin = pair_error_loss(f, ONE if lane == 0 else ZERO)
                        own = err * alpha if v != 0 else ZERO
                        for k in range(NO):
                            grad[k] = cuda.shfl_sync(FULL, own, k)
                        if with_loss and ti < NO and v != 0:  # warp 0's lanes take the loss terms
                            closs += lg + lin
                    else:
                        for k in range(NO):
                            grad[k] = pair_error(part[k], ONE if k == 0 else ZERO) * alpha if valid[k] != 0 else ZERO
                        if with_loss:  # thread k: output k's term (the logarithms of all outputs side by side)
                            for r in range(ROUNDS):
                                f = ZERO
                                v = 0
                                for k in range(NO):
                                    if ti == k - r * T:
                                        f = part[k]
                                        v = valid[k]
                                if v != 0:
                                    _, lg, lin = pair_error_loss(f, ONE if ti + r * T == 0 else ZERO)
                                    closs += lg + lin
                    if not WINDOW:
                        for q in range(P):
                            d = t + U(q) * UT
                            if EXACT or d < UD:
                                x = xs[q]
                                acc = ZERO
                                for k in range(NO):
                                    acc += grad[k] * cur[k, q]
                                    cur[k, q] += grad[k] * x
                                buf[jb + d] = x + acc
                    pairs += 1
                    c += 1
                jb += UD
                if jb == URINGD:
                    jb = UZERO
            if WINDOW and c > 0:  # HogBatch's update: every gradient from the values before the center
                cuda.syncthreads()  # the gradients are in rbuf
                jb = U(lo) % URING * UD
                c = 0
                for j in range(lo, hi):
                    if j != i:
                        for q in range(P):
                            d = t + U(q) * UT
                            if EXACT or d < UD:
                                x = buf[jb + d]
                                acc = ZERO
                                for k in range(NO):
                                    gk = rbuf[c * NO + k]
                                    cur[k, q] += gk * x
                                    acc += gk * cur0[k, q]
                                buf[jb + d] = x + acc
                        c += 1
                    jb += UD
                    if jb == URINGD:
                        jb = UZERO
            loss += float64(closs)
            if WRITERS:  # the writers' scales (make_window_pass's docstring) into rbuf's tail
                cuda.syncthreads()  # every thread is done with this center's gradients
                writer_scales(busy, outs, valid, rbuf)
                cuda.syncthreads()
            for k in range(NO):
                if valid[k] != 0:
                    row = U(outs[k])
                    sc = rbuf[SC + k] if WRITERS else ONE
                    for q in range(P):
                        d = t + U(q) * UT
                        if EXACT or d < UD:
                            if WRITERS:
                                cuda.atomic.add(w_out, (row, d), (cur[k, q] - cur0[k, q]) * sc)
                            else:
                                cuda.atomic.add(w_out, (row, d), cur[k, q] - cur0[k, q])
            held_hi = min(n, i + W + 1)  # the ring holds positions i - W .. held_hi - 1
            sc = ONE
            if i - W >= 0:  # the position leaving the window; its slot is the one entering next
                if WRITERS:
                    ring_scale(busy, sent, i - W, held_hi, rbuf)
                    sc = rbuf[SI]
                flush_row(w_in, U(sent[i - W]), enter, buf, sc)
            if i == n - 1:  # the last center: every row left in the ring goes back
                for p in range(max(0, n - W), n):
                    sl = ONE
                    if WRITERS:
                        cuda.syncthreads()  # every thread has read rbuf[SI]
                        ring_scale(busy, sent, p, held_hi, rbuf)
                        sl = rbuf[SI]
                    flush_row(w_in, U(sent[p]), U(p) % URING * UD, buf, sl)
            if PREFETCH and i + 1 + W < n:
                same = i - W >= 0 and sent[i - W] == sent[i + 1 + W]
                for q in range(P):
                    d = t + U(q) * UT
                    if EXACT or d < UD:
                        v = pre[q]
                        if same:  # the row just added back: what a read after that add gives
                            if WRITERS:
                                v = v + (buf[enter + d] - buf[UORIG + enter + d]) * sc
                            else:
                                v = v + (buf[enter + d] - buf[UORIG + enter + d])
                        buf[enter + d] = v
                        buf[UORIG + enter + d] = v
                if WRITERS and ti == 0:  # one more copy of the row in the ring
                    cuda.atomic.add(busy, (1, U(sent[i + 1 + W])), 1)
            m, rl = after_center(w_in, w_out, sent, n, i, m, key, sentence, alpha, prob, alias, negs, neg_row,
                                 with_loss, rbuf, nid, h_factor, lag)
            loss += rl
        return pairs, loss

    return window_pass


def default_reduction(n_threads: int, simulator: bool) -> str:
    """The reduction a run uses unless told: ``shuffle`` on a GPU (1.2-1.4x the tree's words/s for full-w2v on an
    H200: docs/gpu.md), ``tree`` under numba's simulator (no shuffles there) or for blocks that are not whole
    warps.

    Example:
        >>> default_reduction(64, False), default_reduction(64, True), default_reduction(16, False)
        ('shuffle', 'tree', 'tree')
    """
    return "tree" if simulator or n_threads % 32 else "shuffle"


def threads_for(dim: int, algo: str = "full-w2v") -> int:
    """The default threads per block for a dimension, within [32, 256].  FULL-W2V: the power of two nearest
    ``dim / 2`` from above (about two dimensions per thread; on an H200 at d 128, 64 threads beat 32 and 128:
    docs/gpu.md).  PAR: the power of two from ``dim`` (a thread per dimension; at d 128 on the H200, 128
    threads ran PAR 1.5x faster than 64).

    Example:
        >>> threads_for(100), threads_for(128), threads_for(300), threads_for(8)
        (64, 64, 256, 32)
        >>> threads_for(50, "par"), threads_for(100, "par"), threads_for(128, "par"), threads_for(300, "par")
        (64, 128, 128, 256)
    """
    t = 32
    if algo == "par":
        while t < 256 and t < dim:
            t *= 2
        return t
    while t < 256 and 2 * t < dim:
        t *= 2
    return t


# Blocks per SM the kernels are compiled for (launch bounds: ptxas keeps registers within what that many blocks
# of T threads leave, 65,536 / (blocks x T)), by threads per block.  At most the residency the kernels had before
# the loss moved to the lanes (FULL-W2V on sm_90: 14 blocks of 32 threads, 10 of 64, 7 of 128, 2-3 of 256), one
# fewer where ptxas would spill at that bound (128 threads: 16-24 bytes at 7; 256: 8-28 bytes at 3).  Left alone,
# ptxas spends up to 30 registers more on the same code and fits fewer blocks.  Never more than shared memory
# allows (min_blocks_per_sm).
RESIDENT_BLOCKS = {32: 14, 64: 10, 128: 6, 256: 2}
SM_SHARED_BYTES = 228 * 1024  # an sm_90 SM's shared memory
BLOCK_RESERVED_BYTES = 1024  # shared memory the runtime reserves per block


def kernel_jit(n_threads: int, shared_bytes: int):
    """``cuda.jit`` for a kernel of ``n_threads`` threads using ``shared_bytes`` of shared memory: fast math and
    launch bounds of :func:`min_blocks_per_sm` blocks per SM (numba's simulator takes no launch bounds).

    Example:
        >>> jit = kernel_jit(64, 18592)  # doctest: +SKIP
    """
    from numba import config

    if config.ENABLE_CUDASIM:
        return cuda.jit(fastmath=True)
    return cuda.jit(fastmath=True, launch_bounds=(n_threads, min_blocks_per_sm(n_threads, shared_bytes)))


def residency_pad_bytes(n_threads: int, shared_bytes: int) -> int:
    """Shared memory to add to a block of ``shared_bytes`` so that no more than :func:`min_blocks_per_sm` of them
    fit on an SM: launch bounds set the fewest blocks, and a kernel that ptxas fits in fewer registers than the
    bound would otherwise hold more -- more sentences in flight, which costs quality (docs/gpu.md).  0 when
    shared memory already limits it, or when the pad would pass the 48 KB a block may use.

    Example:
        >>> residency_pad_bytes(64, 18832), residency_pad_bytes(64, 29364)
        (1376, 0)
    """
    target = min_blocks_per_sm(n_threads, shared_bytes)
    need = SM_SHARED_BYTES // (target + 1) - BLOCK_RESERVED_BYTES + 1  # one block more no longer fits
    pad = -(-max(0, need - shared_bytes) // 16) * 16
    return pad if shared_bytes + pad <= SHARED_LIMIT else 0


def min_blocks_per_sm(n_threads: int, shared_bytes: int) -> int:
    """The minimum blocks per SM a kernel is compiled for (its launch bounds): :data:`RESIDENT_BLOCKS` for the
    block size, at most what shared memory holds.

    Example:
        >>> min_blocks_per_sm(64, 18592), min_blocks_per_sm(64, 29364), min_blocks_per_sm(128, 30132)
        (10, 7, 6)
        >>> min_blocks_per_sm(1024, 100)
        1
    """
    by_smem = SM_SHARED_BYTES // (shared_bytes + BLOCK_RESERVED_BYTES)
    return max(1, min(RESIDENT_BLOCKS.get(n_threads, 1), by_smem))
