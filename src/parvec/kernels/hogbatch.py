"""Ji et al.'s HogBatch: skip-gram negative sampling as small matrix products, Hogwild across threads.

For each center (target) word of a subsampled sentence the window shrinks by a random ``b`` in
[0, window), as in word2vec.c; its context words form a batch of *inputs* (rows of ``w_in``; at most
``batch_size`` per batch, more contexts make several batches) that share one set of ``negative``
noise words.  The *outputs* are [center, negatives] (rows of ``w_out``), labels [1, 0, ..., 0] -- the
orientation of word2vec.c's skip-gram and of pWord2Vec.  With ``I`` the inputs' rows and ``O`` the
outputs' rows:

    G = (labels - sigmoid(I O^T)) * alpha          # scores, then errors; sigmoid saturates at +-6
    I += G O      O += G^T I                       # both from the values read before the update

then the deltas are added to the shared matrices (Hogwild: other threads may write the same rows).
A negative equal to the center is skipped (as word2vec.c and the classic kernel do), so a batch can
have fewer than ``negative`` negatives; duplicated negatives (or contexts) are separate rows whose
deltas all land, which is what pWord2Vec's duplicate counting computes too.  The loss and the
learning-rate interpolation are the classic kernel's; ``pairs`` counts positive (context, center)
pairs and ``words_done`` raw words, as there.

With one context and distinct negatives this is exactly :func:`parvec.kernels.classic.classic_update`
(the tests check it).  Why the code looks the way it does (measured; docs/hogbatch_roofline.md has the
numbers and the roofline):

- **No BLAS.**  The matrices are tiny (6 x 6 x 100 for window 5, negative 5); the products are plain
  loops LLVM vectorises, reading the weight rows in place: the deltas go to a small thread-local
  buffer (only ``G^T I`` needs one: ``I += G O`` is written straight into ``w_in`` once ``G^T I`` has
  read the input rows) and are added once per row.
- **Compile-time dimensions.**  The batch code is compiled once per common dimension (100, 300) with
  the dimension as a constant (loops unrolled, no remainder bookkeeping; a few % faster in a full run);
  other dimensions run the same code with a run-time dimension.
- **Output blocks of 6/3/1 and input blocks of 4/2/1**, so each input row meets six output rows per
  pass (negative 5 gives one block of six).
- **Vectorised sigmoid and loss.**  ``np.exp``/``np.log`` are scalar libm calls in numba (no SVML
  here); a float32 Cephes exp/log through bit casts vectorises, matches the exact sigmoid to ~1e-7,
  and :func:`sgns_block` keeps :func:`parvec.kernels.classic.sgns_step`'s saturation exactly.
  ``error_model="numpy"`` drops the division-by-zero branch that otherwise blocks vectorisation.
- **Prefetch ahead.**  Negatives are drawn two centers before they train (same random stream order)
  and their alias-table entries prefetched; one center before, they are resolved and their output
  rows, the center's output row and the input row entering the window are prefetched.  The alias
  lookup is branch-free: a branch on a cache-missing load mispredicts half the time.
- **No array slicing in the loops**: every slice of a numba array is an atomic reference-count
  increment/decrement on the parent array, and ``w_in``/``w_out`` are shared by all threads.
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
from parvec.kernels.params import KernelParams
from parvec.sampling import rng_below, rng_next, rng_uniform, subsample_sentence

if TYPE_CHECKING:
    from parvec.config import TrainConfig

_MAX_EXP32 = np.float32(MAX_EXP)
# Dimensions whose batch code is compiled with the dimension as a constant (each adds a copy of the batch
# code to the one-time, cached compilation of every kernel that trains batches); any other dimension runs
# the same code with a run-time dimension.
SPECIALISED_DIMS = (100, 300)


# --------------------------------------------------------------------------- LLVM helpers
@intrinsic
def _prefetch(typingctx, arr, byte_offset):
    """Prefetch the cache line at ``arr``'s data pointer + ``byte_offset`` into L1 (never faults)."""

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, value=args[0])
        base = builder.ptrtoint(ary.data, cgutils.intp_t)
        addr = builder.inttoptr(builder.add(base, args[1]), ir.PointerType())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ir.PointerType(), i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [addr, i32(0), i32(3), i32(1)])  # read, high locality, data cache
        return context.get_dummy_value()

    return types.void(arr, types.intp), codegen


@intrinsic
def borrowed(typingctx, arr):
    """The same array view without an owner (null meminfo): numba's reference counting on it is a null
    check instead of an atomic update of the owner's count.

    Slicing an array or handing it to an inlined helper makes numba increment and decrement its
    owner's count; on ``w_in``/``w_out``, shared by all threads, that is a cache line the threads
    fight over, once per center or batch.  A borrowed view is safe only while the caller keeps the
    real array alive (a kernel's own arguments, for the duration of the kernel).  The kernels that train
    batches (:func:`train_chunk`, PAR's, the fast CBOW's, the sharded fused call) borrow their matrices.

    Example:
        >>> w = borrowed(w_in)  # inside a kernel  # doctest: +SKIP
    """
    if not isinstance(arr, types.Array):
        return None
    sig = arr(arr)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        src = context.make_array(aryty)(context, builder, args[0])
        dst = context.make_array(aryty)(context, builder)
        dst.data = src.data
        dst.shape = src.shape
        dst.strides = src.strides
        dst.itemsize = src.itemsize
        dst.nitems = src.nitems
        dst.meminfo = cgutils.get_null_value(dst.meminfo.type)
        dst.parent = cgutils.get_null_value(dst.parent.type)
        return dst._getvalue()

    return sig, codegen


@intrinsic
def _f32_bits(typingctx, x):
    """The IEEE bits of a float32 as int32 (a bit cast, vectorisable)."""

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.int32(types.float32), codegen


@intrinsic
def _bits_f32(typingctx, x):
    """The float32 with the given IEEE bits (a bit cast, vectorisable)."""

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@njit(inline="always")
def exp32(x: np.float32) -> np.float32:
    """float32 exp (Cephes expf, ~1 ulp) built from arithmetic only, so loops over it vectorise.

    Example:
        >>> float(exp32(np.float32(1.0)))  # doctest: +ELLIPSIS
        2.71828...
    """
    x = min(max(x, np.float32(-87.0)), np.float32(87.0))
    # x = n ln2 + r with |r| <= ln2 / 2; ln2 split in two parts keeps r exact.
    fx = np.floor(x * np.float32(1.44269504088896341) + np.float32(0.5))
    r = x - fx * np.float32(0.693359375) + fx * np.float32(2.12194440e-4)
    y = np.float32(1.9875691500e-4)
    y = y * r + np.float32(1.3981999507e-3)
    y = y * r + np.float32(8.3334519073e-3)
    y = y * r + np.float32(4.1665795894e-2)
    y = y * r + np.float32(1.6666665459e-1)
    y = y * r + np.float32(5.0000001201e-1)
    y = y * (r * r) + r + np.float32(1.0)
    return y * _bits_f32((np.int32(fx) + np.int32(127)) << np.int32(23))  # times 2^n


@njit(inline="always")
def log32(x: np.float32) -> np.float32:
    """float32 natural log of a normal positive number (Cephes logf, ~1 ulp), vectorisable.

    Example:
        >>> float(log32(np.float32(np.e)))  # doctest: +ELLIPSIS
        1.0...
    """
    bits = _f32_bits(x)
    e = ((bits >> np.int32(23)) & np.int32(0xFF)) - np.int32(126)
    m = _bits_f32((bits & np.int32(0x007FFFFF)) | np.int32(0x3F000000))  # x = m 2^e, m in [0.5, 1)
    small = m < np.float32(0.707106781186547524)
    e = e - np.int32(1) if small else e
    m = (m + m if small else m) - np.float32(1.0)  # now log(x) = log(1 + m) + e ln2, |m| < 0.42
    fe = np.float32(e)
    z = m * m
    y = np.float32(7.0376836292e-2)
    y = y * m - np.float32(1.1514610310e-1)
    y = y * m + np.float32(1.1676998740e-1)
    y = y * m - np.float32(1.2420140846e-1)
    y = y * m + np.float32(1.4249322787e-1)
    y = y * m - np.float32(1.6668057665e-1)
    y = y * m + np.float32(2.0000714765e-1)
    y = y * m - np.float32(2.4999993993e-1)
    y = y * m + np.float32(3.3333331174e-1)
    y = y * m * z - fe * np.float32(2.12194440e-4) - np.float32(0.5) * z
    return m + y + fe * np.float32(0.693359375)


@njit(inline="always")
def sgns_block(g, lab, n, alpha, with_loss):
    """Turn scores ``g[:n]`` into ``(lab - sigmoid(g)) * alpha`` in place; return the summed loss.

    The same quantities as :func:`parvec.kernels.classic.sgns_step` per element (saturation beyond
    +-MAX_EXP for the gradient, exact sigmoid for the loss), as one loop LLVM vectorises.
    """
    loss = 0.0
    for k in range(n):
        f = g[k]
        label = lab[k]
        fc = min(max(f, np.float32(-20.0)), np.float32(20.0))
        e = exp32(-fc)
        sig = np.float32(1.0) / (np.float32(1.0) + e)
        sig = np.float32(1.0) if f > _MAX_EXP32 else sig
        sig = np.float32(0.0) if f < -_MAX_EXP32 else sig
        if with_loss:
            # -log(sigmoid(f)) = log(1 + e^-f);  -log(1 - sigmoid(f)) = f + log(1 + e^-f)
            loss += log32(np.float32(1.0) + e) + (np.float32(1.0) - label) * fc
        g[k] = (label - sig) * alpha
    return loss


# --------------------------------------------------------------------------- the batch update
@njit(inline="always")
def batch_scores(w_in, w_out, ctx, c0, n_in, outs, n_out, g, dim):
    """``g[a * n_out + b] = <w_in[ctx[c0 + a]], w_out[outs[b]]>``: one input row against blocks of six (then
    three, then single) output rows per pass over the columns.  HogBatch's scores; the sharded kernels' window
    batches (:func:`parvec.kernels.sharded.dotprod_window_rows`) compute theirs with it too.

    Example:
        >>> g = np.empty(2, np.float32)
        >>> batch_scores(np.ones((1, 3), np.float32), np.ones((2, 3), np.float32), np.zeros(1, np.int64), 0, 1,
        ...              np.array([0, 1]), 2, g, 3); g.tolist()  # doctest: +SKIP
        [3.0, 3.0]
    """
    n6 = n_out - n_out % 6
    n3 = n_out - n_out % 3
    # Scores g[a, b] = <w_in[ctx[a]], w_out[outs[b]]>: one input row against blocks of output rows.
    for a in range(n_in):
        ra = ctx[c0 + a]
        for b in range(0, n6, 6):
            r0 = outs[b]
            r1 = outs[b + 1]
            r2 = outs[b + 2]
            r3 = outs[b + 3]
            r4 = outs[b + 4]
            r5 = outs[b + 5]
            s0 = np.float32(0.0)
            s1 = np.float32(0.0)
            s2 = np.float32(0.0)
            s3 = np.float32(0.0)
            s4 = np.float32(0.0)
            s5 = np.float32(0.0)
            for d in range(dim):
                x = w_in[ra, d]
                s0 += x * w_out[r0, d]
                s1 += x * w_out[r1, d]
                s2 += x * w_out[r2, d]
                s3 += x * w_out[r3, d]
                s4 += x * w_out[r4, d]
                s5 += x * w_out[r5, d]
            o = a * n_out + b
            g[o] = s0
            g[o + 1] = s1
            g[o + 2] = s2
            g[o + 3] = s3
            g[o + 4] = s4
            g[o + 5] = s5
        for b in range(n6, n3, 3):
            r0 = outs[b]
            r1 = outs[b + 1]
            r2 = outs[b + 2]
            s0 = np.float32(0.0)
            s1 = np.float32(0.0)
            s2 = np.float32(0.0)
            for d in range(dim):
                x = w_in[ra, d]
                s0 += x * w_out[r0, d]
                s1 += x * w_out[r1, d]
                s2 += x * w_out[r2, d]
            o = a * n_out + b
            g[o] = s0
            g[o + 1] = s1
            g[o + 2] = s2
        for b in range(n3, n_out):
            rb = outs[b]
            s0 = np.float32(0.0)
            for d in range(dim):
                s0 += w_in[ra, d] * w_out[rb, d]
            g[a * n_out + b] = s0


@njit(inline="always")
def _batch(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, dim, with_loss):
    """Rows ``ctx[c0:c0+n_in]`` of ``w_in`` against rows ``outs[:n_out]`` of ``w_out``.

    ``do`` (>= n_out x dim), ``g`` and ``lab`` (>= n_in * n_out, ``lab`` holding each output's label
    row by row) are scratch.  ``dim`` is a literal at the specialised call sites.  Returns the loss.
    """
    # Scores g[a, b] = <w_in[ctx[a]], w_out[outs[b]]>: one input row against blocks of output rows.
    batch_scores(w_in, w_out, ctx, c0, n_in, outs, n_out, g, dim)
    loss = sgns_block(g, lab, n_in * n_out, alpha, with_loss)
    batch_apply(w_in, w_out, ctx, c0, n_in, outs, n_out, g, do, dim)
    return loss


@njit(inline="always")
def batch_apply(w_in, w_out, ctx, c0, n_in, outs, n_out, g, do, dim):
    """Apply a batch's coefficients ``g[a * n_out + b]`` (``alpha * (label - sigmoid)``): input rows
    ``ctx[c0 + a]`` += sum_b g w_out[outs[b]] and output rows ``outs[b]`` += sum_a g w_in[ctx[c0 + a]], every
    product reading the rows as they were when the batch started (``do``, >= n_out x dim, holds the output
    deltas until the input rows are done).  HogBatch's update; the sharded kernels' window batches
    (:func:`parvec.kernels.sharded.adjust_window_rows`) apply theirs with it too.

    Example:
        >>> w_in, w_out = np.ones((1, 2), np.float32), np.ones((1, 2), np.float32)
        >>> batch_apply(w_in, w_out, np.zeros(1, np.int64), 0, 1, np.zeros(1, np.int64), 1,
        ...             np.full(1, 0.5, np.float32), np.empty((1, 2), np.float32), 2); w_in.tolist()  # doctest: +SKIP
        [[1.5, 1.5]]
    """
    n6 = n_out - n_out % 6
    n3 = n_out - n_out % 3
    # Output deltas do[b] = sum_a g[a, b] w_in[ctx[a]], before any input row changes.
    m4 = n_in - n_in % 4
    m2 = n_in - n_in % 2
    for b in range(n_out):
        for d in range(dim):
            do[b, d] = 0.0
        for a in range(0, m4, 4):
            r0 = ctx[c0 + a]
            r1 = ctx[c0 + a + 1]
            r2 = ctx[c0 + a + 2]
            r3 = ctx[c0 + a + 3]
            g0 = g[a * n_out + b]
            g1 = g[(a + 1) * n_out + b]
            g2 = g[(a + 2) * n_out + b]
            g3 = g[(a + 3) * n_out + b]
            for d in range(dim):
                do[b, d] += g0 * w_in[r0, d] + g1 * w_in[r1, d] + g2 * w_in[r2, d] + g3 * w_in[r3, d]
        for a in range(m4, m2, 2):
            r0 = ctx[c0 + a]
            r1 = ctx[c0 + a + 1]
            g0 = g[a * n_out + b]
            g1 = g[(a + 1) * n_out + b]
            for d in range(dim):
                do[b, d] += g0 * w_in[r0, d] + g1 * w_in[r1, d]
        for a in range(m2, n_in):
            ra = ctx[c0 + a]
            g0 = g[a * n_out + b]
            for d in range(dim):
                do[b, d] += g0 * w_in[ra, d]
    # Input rows += sum_b g[a, b] w_out[outs[b]], straight into w_in: the output rows are unchanged yet.
    for a in range(n_in):
        ra = ctx[c0 + a]
        for b in range(0, n6, 6):
            r0 = outs[b]
            r1 = outs[b + 1]
            r2 = outs[b + 2]
            r3 = outs[b + 3]
            r4 = outs[b + 4]
            r5 = outs[b + 5]
            o = a * n_out + b
            g0 = g[o]
            g1 = g[o + 1]
            g2 = g[o + 2]
            g3 = g[o + 3]
            g4 = g[o + 4]
            g5 = g[o + 5]
            for d in range(dim):
                w_in[ra, d] += (g0 * w_out[r0, d] + g1 * w_out[r1, d] + g2 * w_out[r2, d]
                                + g3 * w_out[r3, d] + g4 * w_out[r4, d] + g5 * w_out[r5, d])
        for b in range(n6, n3, 3):
            r0 = outs[b]
            r1 = outs[b + 1]
            r2 = outs[b + 2]
            o = a * n_out + b
            g0 = g[o]
            g1 = g[o + 1]
            g2 = g[o + 2]
            for d in range(dim):
                w_in[ra, d] += g0 * w_out[r0, d] + g1 * w_out[r1, d] + g2 * w_out[r2, d]
        for b in range(n3, n_out):
            rb = outs[b]
            g0 = g[a * n_out + b]
            for d in range(dim):
                w_in[ra, d] += g0 * w_out[rb, d]
    for b in range(n_out):
        rb = outs[b]
        for d in range(dim):
            w_out[rb, d] += do[b, d]


# One copy of the batch code per specialised dimension (keep in step with SPECIALISED_DIMS), inlined into
# each kernel that trains batches (train_chunk, hogbatch_update, the sharded train_window_rows).  Inlined,
# not called: a kernel calling a separately compiled numba function ran other machine code for it when the
# kernel was compiled in this process than when numba loaded it from its cache (a first run trained other
# bits than every later run: tests/kernels/test_compiled_once.py); inlined, a kernel is one compiled
# function, the same in both.  The kernels borrow their arrays (:func:`borrowed`), so the inlined calls
# touch no shared reference count; the price is a longer one-time (cached) compilation of those kernels.
@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy", inline="always")
def _batch_100(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, with_loss):
    return _batch(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, 100, with_loss)


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy", inline="always")
def _batch_300(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, with_loss):
    return _batch(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, 300, with_loss)


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy", inline="always")
def _batch_dyn(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, with_loss):
    return _batch(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, w_in.shape[1], with_loss)


@njit(inline="always")
def train_batch(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, with_loss):
    """One of Ji et al.'s batches trained whole: rows ``ctx[c0:c0+n_in]`` of ``w_in`` against rows
    ``outs[:n_out]`` of ``w_out``, with ``lab`` each output's label row by row (scratch ``do`` >= n_out x dim, ``g``
    and ``lab`` >= n_in * n_out); through the copy compiled for d 100 or 300 where it applies.  Returns the loss.
    HogBatch's step; a fused sharded call trains its window batches with it too
    (:func:`parvec.kernels.sharded.train_window_rows`).

    Example:
        >>> loss = train_batch(w_in, w_out, ctx, 0, 3, outs, 6, 0.025, do, g, lab, True)  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    if dim == 100:
        return _batch_100(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, with_loss)
    if dim == 300:
        return _batch_300(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, with_loss)
    return _batch_dyn(w_in, w_out, ctx, c0, n_in, outs, n_out, alpha, do, g, lab, with_loss)


@njit(inline="always")
def _scratch(work, max_in, max_out, dim):
    # work = [do: max_out x dim | g: max_in * max_out | lab: max_in * max_out]
    do = work[: max_out * dim].reshape((max_out, dim))
    g = work[max_out * dim: max_out * dim + max_in * max_out]
    lab = work[max_out * dim + max_in * max_out: max_out * dim + 2 * max_in * max_out]
    return do, g, lab


def work_floats(max_in: int, max_out: int, dim: int) -> int:
    """Scratch floats the batch update needs for ``max_in`` inputs and ``max_out`` outputs.

    Example:
        >>> work_floats(11, 6, 100)
        732
    """
    return max_out * dim + 2 * max_in * max_out


@njit(inline="always")
def _fill_labels(lab, labels, n_out, n_rows):
    for a in range(n_rows):
        for b in range(n_out):
            lab[a * n_out + b] = labels[b]


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def hogbatch_update(w_in: np.ndarray, w_out: np.ndarray, inputs: np.ndarray, outputs: np.ndarray,
                    labels: np.ndarray, alpha: np.float32, work: np.ndarray) -> float:
    """One HogBatch update: input rows ``inputs`` against output rows ``outputs`` (labels per output).

    The code :func:`train_chunk` runs for each batch; returns the batch's loss.  ``work`` needs
    ``work_floats(len(inputs), len(outputs), dim)`` floats.

    Example:
        >>> hogbatch_update(w_in, w_out, np.array([3, 4]), np.array([7, 1, 9]),
        ...                 np.array([1, 0, 0], np.float32), np.float32(0.025),
        ...                 np.zeros(work_floats(2, 3, w_in.shape[1]), np.float32))  # doctest: +SKIP
    """
    n_in = len(inputs)
    n_out = len(outputs)
    do, g, lab = _scratch(work, n_in, n_out, w_in.shape[1])
    _fill_labels(lab, labels, n_out, n_in)
    # np.int64(0) and np.bool_(True) are typed like train_chunk's run-time values (literals would compile
    # another copy of the batch code): both run the same machine code.
    return train_batch(w_in, w_out, inputs, np.int64(0), n_in, outputs, n_out, alpha, do, g, lab,
                          np.bool_(True))


# --------------------------------------------------------------------------- the training kernel
@njit(inline="always")
def prefetch_row(w, row):
    """Prefetch row ``row`` of the float32 matrix ``w`` into the CPU's caches (no effect on any value): the
    kernels call it for the rows they will train next.  Shared by the HogBatch, fast CBOW and sharded kernels.

    Example:
        >>> prefetch_row(np.zeros((4, 100), np.float32), 2)  # only a hint to the CPU
    """
    # A row of dim float32 spans ceil(4 dim / 64) + 1 cache lines at worst: touch each, then the last byte.
    stride = w.strides[0]
    nbytes = w.shape[1] * 4
    base = row * stride
    for o in range(0, nbytes, 64):
        _prefetch(w, base + o)
    _prefetch(w, base + nbytes - 1)


@njit(inline="always")
def draw_negative(state, noise_prob, noise_alias):
    """One negative sample from the alias table for the random state ``state``: the same word as
    :func:`parvec.sampling.draw_noise` gives for that state, without a branch.  Shared by the HogBatch and fast
    CBOW kernels.

    Example:
        >>> prob, alias = np.array([1.0, 0.0], np.float32), np.array([0, 0], np.int32)
        >>> int(draw_negative(np.uint64(0x9E3779B97F4A7C15), prob, alias))  # word 1 never drawn: its alias
        0
    """
    # parvec.sampling.draw_noise without its branch: the alias-table loads usually miss the cache and
    # a branch on them mispredicts half the time, serialising the misses.  Same result for each state.
    j = rng_below(state, len(noise_prob))
    alt = np.int64(noise_alias[j])
    return j if rng_uniform(state) < noise_prob[j] else alt


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def train_chunk(w_in, w_out, tokens, offsets, s_lo, s_hi, keep, noise_prob, noise_alias,
                params, rates, seed, sent_buf, work):
    """Train sentences ``s_lo..s_hi`` (see docs/architecture.md for the contract).

    Reads ``params.window``, ``params.negative``, ``params.batch`` (>= 1) and ``params.compute_loss``.
    """
    # Owner-less views: no atomic reference counting on the shared arrays per batch (the batch code is inlined).
    w_in, w_out, noise_prob, noise_alias = borrowed(w_in), borrowed(w_out), borrowed(noise_prob), borrowed(noise_alias)
    sent_buf, work = borrowed(sent_buf), borrowed(work)
    window = params.window
    negative = params.negative
    batch = params.batch
    with_loss = params.compute_loss
    alpha0 = rates.alpha0
    alpha1 = rates.alpha1
    state = seed
    chunk_words = max(offsets[s_hi] - offsets[s_lo], 1)
    done = 0
    pairs = 0
    loss = 0.0
    n_batches = (2 * window + batch - 1) // batch  # most batches one center can need
    ctx = np.empty(2 * window, dtype=np.int64)
    outs = np.empty(negative + 1, dtype=np.int64)
    # Per pipeline slot (center index & 3): window shrink, number of draws, their states, the negatives.
    shrink = np.zeros(4, dtype=np.int64)
    draws = np.zeros(4, dtype=np.int64)
    states = np.empty((4, n_batches * negative), dtype=np.uint64)
    negs = np.empty((4, n_batches * negative), dtype=np.int64)
    n_noise = len(noise_prob)
    labels = np.zeros(negative + 1, dtype=np.float32)
    labels[0] = 1.0
    do, g, lab = _scratch(work, batch, negative + 1, w_in.shape[1])
    lab_n_out = negative + 1
    _fill_labels(lab, labels, lab_n_out, batch)
    for s in range(s_lo, s_hi):
        start = offsets[s]
        end = offsets[s + 1]
        n, state = subsample_sentence(tokens, start, end, keep, state, sent_buf)
        raw_len = end - start
        for i in range(n + 2):
            # A three-stage software pipeline over centers hides the two dependent cache misses of a
            # negative (alias table, then its weight row).  Center i draws its window shrink and the
            # random states of its negatives and prefetches their alias-table entries; center i - 1
            # resolves its negatives and prefetches the rows it will touch; center i - 2 trains.  The
            # random stream is consumed in the same order as without the pipeline: shrink, then
            # negatives, center by center.
            if i < n:
                slot = i & 3
                state = rng_next(state)
                b = rng_below(state, window)
                shrink[slot] = b
                n_ctx = min(n, i + window - b + 1) - max(0, i - window + b) - 1
                n_draws = (n_ctx + batch - 1) // batch * negative
                draws[slot] = n_draws
                for k in range(n_draws):
                    state = rng_next(state)
                    states[slot, k] = state
                    j = rng_below(state, n_noise)
                    _prefetch(noise_prob, j * 4)
                    _prefetch(noise_alias, j * 4)
            if 1 <= i <= n:
                slot = (i - 1) & 3
                for k in range(draws[slot]):
                    t = draw_negative(states[slot, k], noise_prob, noise_alias)
                    negs[slot, k] = t
                    prefetch_row(w_out, t)
                prefetch_row(w_out, sent_buf[i - 1])
                if i - 1 + window < n:
                    prefetch_row(w_in, sent_buf[i - 1 + window])  # the word entering the window
            if i < 2:
                continue
            c = i - 2
            cur = c & 3
            # Linear decay by raw words processed, interpolated inside the sentence.
            frac = (done + c * raw_len / n) / chunk_words
            alpha = np.float32(alpha0 + (alpha1 - alpha0) * frac)
            b = shrink[cur]
            center = sent_buf[c]
            n_ctx = 0
            for j in range(max(0, c - window + b), min(n, c + window - b + 1)):
                if j != c:
                    ctx[n_ctx] = sent_buf[j]
                    n_ctx += 1
            pairs += n_ctx
            outs[0] = center
            k = 0
            for first in range(0, n_ctx, batch):
                n_out = np.int64(1)  # not a literal: one compiled signature for the batch code
                for _ in range(negative):
                    t = negs[cur, k]
                    k += 1
                    if t != center:
                        outs[n_out] = t
                        n_out += 1
                if n_out != lab_n_out:  # a skipped negative changes the label layout
                    lab_n_out = n_out
                    _fill_labels(lab, labels, n_out, batch)
                loss += train_batch(w_in, w_out, ctx, first, min(n_ctx - first, batch), outs, n_out,
                                       alpha, do, g, lab, with_loss)
        done += raw_len
    return done, pairs, loss


def params(config: TrainConfig) -> tuple[KernelParams, int]:
    """(the kernel's parameters, its work size in floats) for :func:`train_chunk`: ``batch`` is ``batch_size``,
    0 meaning the whole window (2 * window + 1).

    Example:
        >>> from parvec.config import TrainConfig
        >>> kp, _ = params(TrainConfig(window=5, negative=5, batch_size=0, dim=100))
        >>> kp.window, kp.negative, kp.batch, kp.compute_loss
        (5, 5, 11, True)
    """
    batch = config.batch_size or 2 * config.window + 1
    return KernelParams.of(config, batch=batch), work_floats(batch, config.negative + 1, config.dim)
