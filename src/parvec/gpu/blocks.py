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
CUDA simulator) or a warp-shuffle butterfly with one barrier across warps (hardware only: the simulator
has no shuffles).  Which is faster is for a GPU to tell (``benchmarks/bench_gpu.py`` runs both).

Example:
    >>> window_pass = make_window_pass(64, 2, 128, 5, 6, "tree")  # doctest: +SKIP
"""

from __future__ import annotations

import functools

from numba import cuda, float32, int32, int64

from parvec.gpu.rng import keeps_token, negative_pick, window_shrink
from parvec.gpu.sgns import pair_error, pair_loss

REDUCTIONS = ("tree", "shuffle")
SHARED_LIMIT = 48 * 1024  # bytes of static shared memory one block may use


@cuda.jit(device=True)
def draw_negative(key, sentence, position, k, prob, alias):
    """:func:`parvec.gpu.rng.negative_sample` for kernels: the same draw, with the table lookups in device
    code (numba's simulator cannot pass its device arrays to a CPU-compiled function)."""
    j, coin = negative_pick(key, sentence, position, k, len(prob))
    if coin < prob[j]:
        return int64(j)
    return int64(alias[j])


@cuda.jit(device=True)
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

        @cuda.jit(device=True)
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

    @cuda.jit(device=True)
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


@functools.cache
def make_window_pass(n_threads: int, per_thread: int, dim: int, window: int, n_out: int, reduction: str):
    """The FULL-W2V pass over one subsampled sentence (``n_out - 1`` negatives per center; ``n_out = 1`` is
    PAR's attraction), in the order :func:`parvec.gpu.reference.full_w2v_sentence` documents.

    ``window_pass(w_in, w_out, sent, n, key, sentence, alpha, prob, alias, negs, neg_row, with_loss, buf,
    red) -> (pairs, loss)``; ``buf`` is shared float32 holding the ring (``2 window + 1`` rows) and the
    rows' values when they entered it (for the change written back); ``negs`` (rows > 0: test mode) gives
    the negatives.  The outputs' rows live in per-thread arrays (registers), each read once per center
    and added back once.  ``loss`` is thread 0's (the others return 0).

    Example:
        >>> window_pass = make_window_pass(64, 2, 128, 5, 6, "tree")  # doctest: +SKIP
    """
    T = n_threads
    P = per_thread
    D = dim
    W = window
    NO = n_out
    RING = 2 * W + 1
    ORIG = RING * D
    reduce = make_reduce(T, NO, reduction)

    @cuda.jit(device=True)
    def load_row(w_in, row, slot, buf):
        t = cuda.threadIdx.x
        for q in range(P):
            d = t + q * T
            if d < D:
                v = w_in[row, d]
                buf[slot * D + d] = v
                buf[ORIG + slot * D + d] = v

    @cuda.jit(device=True)
    def flush_row(w_in, row, slot, buf):
        t = cuda.threadIdx.x
        for q in range(P):
            d = t + q * T
            if d < D:
                cuda.atomic.add(w_in, (row, d), buf[slot * D + d] - buf[ORIG + slot * D + d])

    @cuda.jit(device=True)
    def window_pass(w_in, w_out, sent, n, key, sentence, alpha, prob, alias, negs, neg_row, with_loss, buf, red):
        t = cuda.threadIdx.x
        cur = cuda.local.array((NO, P), float32)
        cur0 = cuda.local.array((NO, P), float32)
        part = cuda.local.array(NO, float32)
        grad = cuda.local.array(NO, float32)
        outs = cuda.local.array(NO, int64)
        valid = cuda.local.array(NO, int32)
        use_negs = negs.shape[0] > 0
        pairs = 0
        loss = 0.0
        parity = 0
        for p in range(min(W + 1, n)):
            load_row(w_in, sent[p], p % RING, buf)
        for i in range(n):
            if i > 0 and i + W < n:  # the position entering the window
                load_row(w_in, sent[i + W], (i + W) % RING, buf)
            b = window_shrink(key, sentence, i, W)
            lo = max(0, i - W + b)
            hi = min(n, i + W - b + 1)
            center = int64(sent[i])
            outs[0] = center
            valid[0] = 1
            for k in range(1, NO):
                if use_negs:
                    o = int64(negs[neg_row + i, k - 1])
                else:
                    o = draw_negative(key, sentence, i, k - 1, prob, alias)
                outs[k] = o
                valid[k] = 1 if o != center else 0
            for k in range(NO):
                for q in range(P):
                    d = t + q * T
                    v = float32(0.0)
                    if d < D:
                        v = w_out[outs[k], d]
                    cur[k, q] = v
                    cur0[k, q] = v
            for j in range(lo, hi):
                if j == i:
                    continue
                slot = j % RING
                for k in range(NO):
                    acc = float32(0.0)
                    for q in range(P):
                        d = t + q * T
                        if d < D:
                            acc += buf[slot * D + d] * cur[k, q]
                    part[k] = acc
                reduce(part, red, parity)
                parity = 1 - parity
                for k in range(NO):
                    grad[k] = float32(0.0)
                    if valid[k] != 0:
                        label = float32(1.0) if k == 0 else float32(0.0)
                        grad[k] = pair_error(part[k], label) * alpha
                        if with_loss and t == 0:
                            loss += pair_loss(part[k], label)
                for q in range(P):
                    d = t + q * T
                    if d < D:
                        x = buf[slot * D + d]
                        acc = float32(0.0)
                        for k in range(NO):
                            acc += grad[k] * cur[k, q]
                            cur[k, q] += grad[k] * x
                        buf[slot * D + d] = x + acc
                pairs += 1
            for k in range(NO):
                if valid[k] != 0:
                    for q in range(P):
                        d = t + q * T
                        if d < D:
                            cuda.atomic.add(w_out, (outs[k], d), cur[k, q] - cur0[k, q])
            if i - W >= 0:  # the position leaving the window
                flush_row(w_in, sent[i - W], (i - W) % RING, buf)
        for p in range(max(0, n - W), n):
            flush_row(w_in, sent[p], p % RING, buf)
        return pairs, loss

    return window_pass


def threads_for(dim: int) -> int:
    """The default threads per block for a dimension: the power of two nearest ``dim / 2`` from above,
    within [32, 256] (about two dimensions per thread).  A guess until a GPU measures it
    (``benchmarks/bench_gpu.py --threads-per-block``).

    Example:
        >>> threads_for(100), threads_for(128), threads_for(300), threads_for(8)
        (64, 64, 256, 32)
    """
    t = 32
    while t < 256 and 2 * t < dim:
        t *= 2
    return t
