"""CPU references of the GPU kernels: each kernel's own update order, as plain loops over numpy arrays.

The GPU kernels (:mod:`parvec.gpu.full_w2v`, :mod:`parvec.gpu.par_gpu`) train one sentence per thread
block with the threads spread over the vector's dimensions.  These functions do the same arithmetic one
sentence after the other in the same order, with the same random numbers (:mod:`parvec.gpu.rng`), the
same rates (:mod:`parvec.gpu.plan`) and the same windows, so a kernel run under numba's CUDA simulator
(which runs one block at a time, in block order) must equal them up to float rounding -- the tests check
1e-5 -- and a run on a GPU differs only where blocks that run at the same time touch the same rows
(Hogwild).  They are compiled with ``numba.njit`` so that the demo-corpus quality test runs in seconds;
the tiny-input equivalence tests run these very functions.

**FULL-W2V order** (:func:`full_w2v_sentence`).  The subsampled sentence is walked center by center.  A
*ring* of ``2 window + 1`` rows holds a private copy of the input row of every position within ``window``
of the center (a position's row is read when it enters the window and its change is added back to
``w_in`` once, when it leaves).  For center ``i`` (window shrunk by ``b``, word2vec.c's random window) the
outputs are ``[center, n_1 .. n_N]`` (labels 1, 0, ..; ``N`` negatives drawn for the center and shared by
its whole window; a negative equal to the center is skipped, as on the CPU).  The outputs' rows are read
once (the kernel keeps them in registers) and the center's window is trained in HogBatch's order
(:func:`center_train_window`): every gradient from the values before the center, for each context position
``j`` in window order and every output ``k``::

    f_jk  = <ring[j], out_k>                   (one block reduction per context word for all k)
    g_jk  = (label_k - sigmoid(f_jk)) * alpha

then both updates, from the same values::

    out_k   += sum_j g_jk ring[j]
    ring[j] += sum_k g_jk out_k

with the negatives shared per center; then every output row's change is added to ``w_out``.
:func:`center_train` trains context by context instead (word2vec.c's order for one context word: its gradient
summed over the outputs, applied before the next context word's scores): PAR's attraction, and FULL-W2V with
``full_w2v_pairs``.  Output rows are added as changes, not overwritten, so two copies of a word (a negative
drawn twice, a word twice in the window) both count and concurrent blocks lose nothing but races.

**PAR order** (:func:`par_sentence`).  Attraction is the FULL-W2V pass with no negatives (each center's
output row against its contexts, label 1: Moon et al.'s Algorithm 3 with the ring).  Repulsion, Algorithm 4,
for each minibatch of ``B`` consecutive words: ``C_rep`` by the rule of :func:`parvec.gpu.rng.par_c_rep`,
``H = round(h_factor * negative * C_rep)`` shared negatives, and the three products from the rows as they are
before the minibatch: ``G = -sigmoid(M_out M_in^T) alpha``, ``w_out[negs] += G M_in``, ``w_in[words] += G^T
M_out``.  Minibatch ``m`` of sentence ``s`` is repelled right after the attraction of the center ``window + s %
B`` positions past its last word (:func:`par_order`); ``par_phased`` keeps the phased order, the whole
sentence's attraction and then its repulsion.

Each center (and each minibatch) is three steps: what it reads from the shared matrices
(:func:`center_reads`, :func:`minibatch_reads`), what it computes on its private copies (:func:`center_train`,
:func:`minibatch_train`) and what it adds back (:func:`center_writes`, :func:`minibatch_writes`).  The
sequential references run them one after the other; :func:`hogwild_train`, the deterministic model of the
GPU's Hogwild, runs many sentences' steps in lockstep, every step's reads before any step's writes.

Example:
    >>> words, pairs, loss = train_launch_reference("full-w2v", w_in, w_out, tokens, cut, launch, keep, prob,
    ...                                             alias, config)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from parvec.config import TrainConfig
from parvec.gpu.collisions import (
    CollisionTable,
    add_change,
    count_outputs,
    empty_table,
    frequency_buckets,
    record_inputs,
    record_outputs,
    ring_enter,
    scaled_output_writes,
    scaled_ring_flushes,
)
from parvec.gpu.plan import (
    DEFAULT_WORDS_PER_LAUNCH,
    GPU_MAX_SENTENCE,
    Launch,
    default_words_per_launch,
    epoch_launches,
)
from parvec.gpu.rng import epoch_key, keeps_token, negative_sample, par_c_rep, window_shrink
from parvec.gpu.sgns import pair_error, pair_error_loss
from parvec.kernels.fastmath import FASTMATH
from parvec.kernels.par import shared_negatives
from parvec.sampling import keep_probabilities, word_noise_tables
from parvec.schedule import Schedule

_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)
PAR_PHASED = -1  # PAR's phased order: every center's attraction, then every minibatch's repulsion (par_sentence)


@njit(cache=True)
def subsample(tokens: np.ndarray, start: int, end: int, keep: np.ndarray, key: np.uint64, sentence: int,
              out: np.ndarray) -> int:
    """The kept tokens of ``tokens[start:end]`` into ``out``; returns how many (raw positions key the draws).

    Example:
        >>> subsample(np.arange(3, dtype=np.int32), 0, 3, np.ones(3, np.float32), np.uint64(1), 0,
        ...           np.empty(3, np.int32))
        3
    """
    n = 0
    for p in range(end - start):
        w = tokens[start + p]
        if keeps_token(key, sentence, p, keep[w]):
            out[n] = w
            n += 1
    return n


@njit(inline="always")
def _ring_load(w_in: np.ndarray, row: int, ring: np.ndarray, orig: np.ndarray, slot: int) -> None:
    for d in range(w_in.shape[1]):
        ring[slot, d] = w_in[row, d]
        orig[slot, d] = ring[slot, d]


@njit(cache=True, fastmath=FASTMATH)
def center_reads(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, n: int, i: int, key: np.uint64,
                 sentence: int, window: int, negative: int, prob: np.ndarray, alias: np.ndarray, negs: np.ndarray,
                 neg_row: int, ring: np.ndarray, orig: np.ndarray, cur: np.ndarray, cur0: np.ndarray,
                 outs: np.ndarray, valid: np.ndarray) -> None:
    """What center ``i`` of the FULL-W2V order reads from the shared matrices: the input row entering the ring
    (the first ``window + 1`` at ``i = 0``) and the outputs' rows (center and negatives) into ``cur``/``cur0``.

    Example:
        >>> center_reads(w_in, w_out, sent, n, 0, key, 0, 5, 5, prob, alias, negs, 0, ring, orig, cur, cur0,
        ...              outs, valid)  # doctest: +SKIP
    """
    ring_size = 2 * window + 1
    if i == 0:
        for p in range(min(window + 1, n)):
            _ring_load(w_in, sent[p], ring, orig, p % ring_size)
    elif i + window < n:  # the position entering the window
        _ring_load(w_in, sent[i + window], ring, orig, (i + window) % ring_size)
    center = sent[i]
    outs[0] = center
    valid[0] = True
    for k in range(negative):
        if negs.shape[0] > 0:
            t = np.int64(negs[neg_row + i, k])
        else:
            t = negative_sample(key, sentence, i, k, prob, alias)
        outs[k + 1] = t
        valid[k + 1] = t != center
    for k in range(negative + 1):
        for d in range(w_out.shape[1]):
            cur[k, d] = w_out[outs[k], d]
            cur0[k, d] = cur[k, d]


@njit(inline="always")
def _output_gradients(ring: np.ndarray, slot: int, cur: np.ndarray, valid: np.ndarray, alpha: np.float32,
                      n_out: int, with_loss: bool, g: np.ndarray) -> float:
    """The rate-scaled gradients ``g[k]`` of context ``ring[slot]`` against each output row ``cur[k]`` (the
    center first, label 1; invalid outputs 0); returns their loss (0 without ``with_loss``)."""
    loss = 0.0
    for k in range(n_out):
        g[k] = _ZERO
        if valid[k]:
            f = _ZERO
            for d in range(ring.shape[1]):
                f += ring[slot, d] * cur[k, d]
            label = _ONE if k == 0 else _ZERO
            if with_loss:
                err, lg, lin = pair_error_loss(f, label)
                loss += np.float64(lg) + np.float64(lin)
            else:
                err = pair_error(f, label)
            g[k] = err * alpha
    return loss


@njit(cache=True, fastmath=FASTMATH)
def center_train(n: int, i: int, key: np.uint64, sentence: int, alpha: np.float32, window: int, negative: int,
                 ring: np.ndarray, cur: np.ndarray, valid: np.ndarray, g: np.ndarray, acc: np.ndarray,
                 with_loss: bool) -> tuple[int, float]:
    """Center ``i``'s window on the block's private copies (the ring and the outputs' rows); returns
    (pairs, loss).  The order is the module docstring's.

    Example:
        >>> center_train(n, 0, key, 0, np.float32(0.025), 5, 5, ring, cur, valid, g, acc, True)  # doctest: +SKIP
    """
    dim = ring.shape[1]
    ring_size = 2 * window + 1
    n_out = negative + 1
    b = window_shrink(key, sentence, i, window)
    lo = max(0, i - window + b)
    hi = min(n, i + window - b + 1)
    pairs = 0
    loss = 0.0
    for j in range(lo, hi):
        if j == i:
            continue
        slot = j % ring_size
        loss += _output_gradients(ring, slot, cur, valid, alpha, n_out, with_loss, g)
        # ring[j] += sum_k g_k out_k and out_k += g_k ring[j], both from the values before this step
        # (the kernel's per-dimension order: the sum over k in k order; loops split so they vectorise).
        for d in range(dim):
            acc[d] = _ZERO
        for k in range(n_out):
            gk = g[k]
            for d in range(dim):
                acc[d] += gk * cur[k, d]
        for k in range(n_out):
            gk = g[k]
            for d in range(dim):
                cur[k, d] += gk * ring[slot, d]
        for d in range(dim):
            ring[slot, d] += acc[d]
        pairs += 1
    return pairs, loss


@njit(cache=True, fastmath=FASTMATH)
def center_train_window(n: int, i: int, key: np.uint64, sentence: int, alpha: np.float32, window: int,
                        negative: int, ring: np.ndarray, cur: np.ndarray, cur0: np.ndarray, valid: np.ndarray,
                        gw: np.ndarray, acc: np.ndarray, with_loss: bool) -> tuple[int, float]:
    """Center ``i``'s window in HogBatch's order (FULL-W2V's order: it scores like CPU hogbatch; the module
    docstring): every (context, output) gradient from the values before the center, then both updates.
    ``cur0`` holds the outputs' rows before the center (:func:`center_reads` fills it), ``gw`` at least
    ``2 window x (negative + 1)`` floats.  Returns (pairs, loss).

    Example:
        >>> center_train_window(n, 0, key, 0, np.float32(0.025), 5, 5, ring, cur, cur0, valid, gw, acc,
        ...                     True)  # doctest: +SKIP
    """
    dim = ring.shape[1]
    ring_size = 2 * window + 1
    n_out = negative + 1
    b = window_shrink(key, sentence, i, window)
    lo = max(0, i - window + b)
    hi = min(n, i + window - b + 1)
    pairs = 0
    loss = 0.0
    for j in range(lo, hi):
        if j == i:
            continue
        slot = j % ring_size
        loss += _output_gradients(ring, slot, cur, valid, alpha, n_out, with_loss, gw[pairs])
        pairs += 1
    c = 0
    for j in range(lo, hi):
        if j == i:
            continue
        slot = j % ring_size
        # out_k += g_ck ring[j] (context by context), ring[j] += sum_k g_ck out_k, both from the values before
        for k in range(n_out):
            gk = gw[c, k]
            for d in range(dim):
                cur[k, d] += gk * ring[slot, d]
        for d in range(dim):
            acc[d] = _ZERO
        for k in range(n_out):
            gk = gw[c, k]
            for d in range(dim):
                acc[d] += gk * cur0[k, d]
        for d in range(dim):
            ring[slot, d] += acc[d]
        c += 1
    return pairs, loss


@njit(cache=True, fastmath=FASTMATH)
def center_writes(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, n: int, i: int, window: int, negative: int,
                  ring: np.ndarray, orig: np.ndarray, cur: np.ndarray, cur0: np.ndarray, outs: np.ndarray,
                  valid: np.ndarray, scale: np.float32) -> None:
    """What center ``i`` adds to the shared matrices: its outputs' changes, the change of the input row leaving
    the ring (all the ring's rows after the last center), each times ``scale`` (1: the changes whole; see
    :func:`train_launch_reference`'s ``writers_scale``).

    Example:
        >>> center_writes(w_in, w_out, sent, n, 0, 5, 5, ring, orig, cur, cur0, outs, valid,
        ...               np.float32(1))  # doctest: +SKIP
    """
    ring_size = 2 * window + 1
    for k in range(negative + 1):
        if valid[k]:
            add_change(w_out, outs[k], cur, cur0, k, scale)
    if i - window >= 0:  # the position leaving the window
        add_change(w_in, sent[i - window], ring, orig, (i - window) % ring_size, scale)
    if i == n - 1:
        for p in range(max(0, n - window), n):
            add_change(w_in, sent[p], ring, orig, p % ring_size, scale)


@njit(cache=True, fastmath=FASTMATH)
def full_w2v_sentence(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, n: int, key: np.uint64,
                      sentence: int, alpha: np.float32, window: int, negative: int, prob: np.ndarray,
                      alias: np.ndarray, negs: np.ndarray, neg_row: int, with_loss: bool,
                      window_order: bool, scale: np.float32) -> tuple[int, float]:
    """One sentence (``sent[:n]``, already subsampled) in the FULL-W2V kernel's order; returns (pairs, loss).

    ``negative`` = 0 is PAR's attraction.  With ``negs`` non-empty (test mode), negative ``k`` of the center at
    position ``i`` is ``negs[neg_row + i, k]`` instead of a draw.  ``scale``: every change added back times it
    (:func:`center_writes`; 1 adds them whole).  Center by center: :func:`center_reads`,
    :func:`center_train_window` (``window_order``: FULL-W2V's) or :func:`center_train` (context by context:
    PAR's attraction, and FULL-W2V's per-pair order), :func:`center_writes` (the Hogwild model,
    :func:`hogwild_train`, runs the same three with other blocks' writes between them).

    Example:
        >>> full_w2v_sentence(w_in, w_out, sent, n, key, 0, np.float32(0.025), 5, 5, prob, alias,
        ...                   np.zeros((0, 5), np.int32), 0, True, True, np.float32(1))  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    ring_size = 2 * window + 1
    n_out = negative + 1
    ring = np.zeros((ring_size, dim), dtype=np.float32)
    orig = np.zeros((ring_size, dim), dtype=np.float32)
    cur = np.zeros((n_out, dim), dtype=np.float32)
    cur0 = np.zeros((n_out, dim), dtype=np.float32)
    outs = np.zeros(n_out, dtype=np.int64)
    valid = np.zeros(n_out, dtype=np.bool_)
    g = np.zeros(n_out, dtype=np.float32)
    gw = np.zeros((2 * window, n_out), dtype=np.float32)
    acc = np.zeros(dim, dtype=np.float32)
    pairs = 0
    loss = 0.0
    for i in range(n):
        center_reads(w_in, w_out, sent, n, i, key, sentence, window, negative, prob, alias, negs, neg_row, ring,
                     orig, cur, cur0, outs, valid)
        if window_order:
            p, lo = center_train_window(n, i, key, sentence, alpha, window, negative, ring, cur, cur0, valid, gw,
                                        acc, with_loss)
        else:
            p, lo = center_train(n, i, key, sentence, alpha, window, negative, ring, cur, valid, g, acc, with_loss)
        pairs += p
        loss += lo
        center_writes(w_in, w_out, sent, n, i, window, negative, ring, orig, cur, cur0, outs, valid, scale)
    return pairs, loss


@njit(cache=True, fastmath=FASTMATH)
def minibatch_reads(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, n: int, min_pos: int, key: np.uint64,
                    sentence: int, window: int, negative: int, batch: int, h_factor: float, h_max: int,
                    prob: np.ndarray, alias: np.ndarray, negs: np.ndarray, neg_row: int, nid: np.ndarray,
                    m_in: np.ndarray, m_out: np.ndarray) -> tuple[int, int]:
    """What PAR's repulsion minibatch at ``min_pos`` reads: its ``C_rep``, its shared negatives into ``nid``,
    the words' input rows into ``m_in`` and the negatives' output rows into ``m_out``; returns (words,
    negatives).

    Example:
        >>> nb, nh = minibatch_reads(w_in, w_out, sent, n, 0, key, 0, 5, 5, 24, 1.0, 45, prob, alias, negs, 0,
        ...                          nid, m_in, m_out)  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    c_rep = par_c_rep(key, sentence, min_pos, n, window)
    nh = min(int(h_factor * negative * c_rep + 0.5), h_max)
    nb = min(batch, n - min_pos)
    if nh == 0:
        return nb, 0
    for h in range(nh):
        if negs.shape[0] > 0:
            nid[h] = negs[neg_row + min_pos, h]
        else:
            nid[h] = negative_sample(key, sentence, min_pos, h, prob, alias)
    for b in range(nb):
        for d in range(dim):
            m_in[b, d] = w_in[sent[min_pos + b], d]
    for h in range(nh):
        for d in range(dim):
            m_out[h, d] = w_out[nid[h], d]
    return nb, nh


@njit(cache=True, fastmath=FASTMATH)
def minibatch_train(nb: int, nh: int, alpha: np.float32, m_in: np.ndarray, m_out: np.ndarray, gm: np.ndarray,
                    d_in: np.ndarray, d_out: np.ndarray, with_loss: bool) -> float:
    """The repulsion minibatch's changes from what :func:`minibatch_reads` read: ``G = -sigmoid(M_out M_in^T)
    alpha``, ``d_out = G M_in``, ``d_in = G^T M_out``; returns the loss.

    Example:
        >>> minibatch_train(nb, nh, np.float32(0.025), m_in, m_out, gm, d_in, d_out, True)  # doctest: +SKIP
    """
    dim = m_in.shape[1]
    loss = 0.0
    for h in range(nh):
        for b in range(nb):
            f = _ZERO
            for d in range(dim):
                f += m_out[h, d] * m_in[b, d]
            if with_loss:
                err, lg, lin = pair_error_loss(f, _ZERO)
                loss += np.float64(lg) + np.float64(lin)
            else:
                err = pair_error(f, _ZERO)
            gm[h, b] = err * alpha
    for h in range(nh):
        for d in range(dim):
            acc = _ZERO
            for b in range(nb):
                acc += gm[h, b] * m_in[b, d]
            d_out[h, d] = acc
    for b in range(nb):
        for d in range(dim):
            acc = _ZERO
            for h in range(nh):
                acc += gm[h, b] * m_out[h, d]
            d_in[b, d] = acc
    return loss


@njit(cache=True, fastmath=FASTMATH)
def minibatch_writes(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, min_pos: int, nb: int, nh: int,
                     nid: np.ndarray, d_in: np.ndarray, d_out: np.ndarray) -> None:
    """What the repulsion minibatch adds: ``w_out[negs] += d_out``, ``w_in[words] += d_in``.

    Example:
        >>> minibatch_writes(w_in, w_out, sent, 0, nb, nh, nid, d_in, d_out)  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    for h in range(nh):
        for d in range(dim):
            w_out[nid[h], d] += d_out[h, d]
    for b in range(nb):
        for d in range(dim):
            w_in[sent[min_pos + b], d] += d_in[b, d]


@njit(cache=True, fastmath=FASTMATH)
def par_repulsion(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, n: int, key: np.uint64, sentence: int,
                  alpha: np.float32, window: int, negative: int, batch: int, h_factor: float, h_max: int,
                  prob: np.ndarray, alias: np.ndarray, negs: np.ndarray, neg_row: int, with_loss: bool) -> float:
    """PAR's repulsion of one subsampled sentence in the GPU kernel's phased order; returns the loss.

    With ``negs`` non-empty (test mode), negative ``h`` of the minibatch starting at ``min_pos`` is
    ``negs[neg_row + min_pos, h]``.

    Example:
        >>> par_repulsion(w_in, w_out, sent, n, key, 0, np.float32(0.025), 5, 5, 24, 1.0, 45, prob, alias,
        ...               np.zeros((0, 45), np.int32), 0, True)  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    loss = 0.0
    nid = np.zeros(h_max, dtype=np.int64)
    m_in = np.zeros((batch, dim), dtype=np.float32)
    m_out = np.zeros((h_max, dim), dtype=np.float32)
    d_in = np.zeros((batch, dim), dtype=np.float32)
    d_out = np.zeros((h_max, dim), dtype=np.float32)
    gm = np.zeros((h_max, batch), dtype=np.float32)
    for min_pos in range(0, n, batch):
        nb, nh = minibatch_reads(w_in, w_out, sent, n, min_pos, key, sentence, window, negative, batch, h_factor,
                                 h_max, prob, alias, negs, neg_row, nid, m_in, m_out)
        if nh > 0:
            loss += minibatch_train(nb, nh, alpha, m_in, m_out, gm, d_in, d_out, with_loss)
            minibatch_writes(w_in, w_out, sent, min_pos, nb, nh, nid, d_in, d_out)
    return loss


@njit(inline="always")
def sentence_lag(lag: int, stagger: int, sentence: int) -> int:
    """PAR's interleaving lag for one sentence: ``lag + sentence % stagger`` (``lag < 0``: phased, kept)."""
    if lag < 0:
        return lag
    return lag + sentence % max(stagger, 1)


@njit(inline="always")
def _minibatch_ready(m: int, n: int, batch: int, lag: int) -> int:
    """The center after whose attraction PAR's minibatch ``m`` is repelled (interleaved order, ``lag >= 0``):
    ``lag`` centers past its last word, at most the sentence's last center."""
    return min(n - 1, min(m * batch + batch, n) - 1 + lag)


@njit(cache=True, fastmath=FASTMATH)
def par_sentence(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, n: int, key: np.uint64, sentence: int,
                 alpha: np.float32, window: int, negative: int, batch: int, h_factor: float, h_max: int,
                 prob: np.ndarray, alias: np.ndarray, negs: np.ndarray, neg_row: int, with_loss: bool,
                 lag: int) -> tuple[int, float]:
    """One subsampled sentence in the PAR kernel's order; returns (pairs, loss).

    ``lag < 0`` (:data:`PAR_PHASED`): the attraction of every center, then the repulsion of every minibatch.
    ``lag >= 0`` (interleaved): minibatch ``m`` is repelled right after the attraction of the center ``lag``
    positions past its last word (so with ``lag = window`` its words' rows have left the ring), the
    minibatches still waiting after the last center in order.

    Example:
        >>> par_sentence(w_in, w_out, sent, n, key, 0, np.float32(0.025), 5, 5, 24, 1.0, 45, prob, alias,
        ...              np.zeros((0, 45), np.int32), 0, True, 5)  # doctest: +SKIP
    """
    if lag < 0:
        pairs, loss = full_w2v_sentence(w_in, w_out, sent, n, key, sentence, alpha, window, 0, prob, alias,
                                        negs[:0], 0, with_loss, False, _ONE)
        return pairs, loss + par_repulsion(w_in, w_out, sent, n, key, sentence, alpha, window, negative, batch,
                                           h_factor, h_max, prob, alias, negs, neg_row, with_loss)
    dim = w_in.shape[1]
    ring_size = 2 * window + 1
    ring = np.zeros((ring_size, dim), dtype=np.float32)
    orig = np.zeros((ring_size, dim), dtype=np.float32)
    cur = np.zeros((1, dim), dtype=np.float32)
    cur0 = np.zeros((1, dim), dtype=np.float32)
    outs = np.zeros(1, dtype=np.int64)
    valid = np.zeros(1, dtype=np.bool_)
    g = np.zeros(1, dtype=np.float32)
    acc = np.zeros(dim, dtype=np.float32)
    nid = np.zeros(h_max, dtype=np.int64)
    m_in = np.zeros((batch, dim), dtype=np.float32)
    m_out = np.zeros((h_max, dim), dtype=np.float32)
    d_in = np.zeros((batch, dim), dtype=np.float32)
    d_out = np.zeros((h_max, dim), dtype=np.float32)
    gm = np.zeros((h_max, batch), dtype=np.float32)
    pairs = 0
    loss = 0.0
    m = 0
    for i in range(n):
        center_reads(w_in, w_out, sent, n, i, key, sentence, window, 0, prob, alias, negs[:0], 0, ring, orig, cur,
                     cur0, outs, valid)
        p, lo = center_train(n, i, key, sentence, alpha, window, 0, ring, cur, valid, g, acc, with_loss)
        pairs += p
        loss += lo
        center_writes(w_in, w_out, sent, n, i, window, 0, ring, orig, cur, cur0, outs, valid, _ONE)
        while m * batch < n and _minibatch_ready(m, n, batch, lag) == i:
            nb, nh = minibatch_reads(w_in, w_out, sent, n, m * batch, key, sentence, window, negative, batch,
                                     h_factor, h_max, prob, alias, negs, neg_row, nid, m_in, m_out)
            if nh > 0:
                loss += minibatch_train(nb, nh, alpha, m_in, m_out, gm, d_in, d_out, with_loss)
                minibatch_writes(w_in, w_out, sent, m * batch, nb, nh, nid, d_in, d_out)
            m += 1
    return pairs, loss


@njit(cache=True)
def _train_launch(algo_par: bool, w_in: np.ndarray, w_out: np.ndarray, tokens: np.ndarray, offsets: np.ndarray,
                  s_lo: int, s_hi: int, sentence_base: int, key: np.uint64, alpha0: float, alpha1: float, words: int,
                  keep: np.ndarray, prob: np.ndarray, alias: np.ndarray, window: int, negative: int, batch: int,
                  h_factor: float, h_max: int, negs: np.ndarray, neg_base: int, with_loss: bool,
                  out_loss: np.ndarray, out_pairs: np.ndarray, lag: int, stagger: int, window_order: bool,
                  scale: np.float32) -> None:
    sent = np.empty(GPU_MAX_SENTENCE, dtype=np.int32)
    for s in range(s_lo, s_hi):
        start = offsets[s]
        end = min(offsets[s + 1], start + GPU_MAX_SENTENCE)
        sentence = sentence_base + (s - s_lo)
        frac = np.float64(offsets[s] - offsets[s_lo]) / np.float64(max(words, 1))
        alpha = np.float32(alpha0 + (alpha1 - alpha0) * frac)
        n = subsample(tokens, start, end, keep, key, sentence, sent)
        neg_row = start - neg_base
        if algo_par:
            p, loss = par_sentence(w_in, w_out, sent, n, key, sentence, alpha, window, negative, batch, h_factor,
                                   h_max, prob, alias, negs, neg_row, with_loss, sentence_lag(lag, stagger, sentence))
        else:
            p, loss = full_w2v_sentence(w_in, w_out, sent, n, key, sentence, alpha, window, negative, prob, alias,
                                        negs, neg_row, with_loss, window_order, scale)
        out_loss[s - s_lo] = loss
        out_pairs[s - s_lo] = p


def par_batch_size(config: TrainConfig) -> int:
    """PAR's repulsion minibatch on the GPU: ``par_batch`` (0, the whole sentence, is refused: a block's
    shared memory holds the minibatch's scores).

    Example:
        >>> par_batch_size(TrainConfig(device="cuda", algo="par", par_batch=24))
        24
    """
    from parvec.errors import ParvecError

    if config.par_batch < 1:
        raise ParvecError("par on --device cuda needs a repulsion minibatch: par_batch must be >= 1 "
                          f"(got {config.par_batch}; 0 = whole sentences runs on the CPU only)")
    return min(config.par_batch, GPU_MAX_SENTENCE)


def par_h_max(config: TrainConfig) -> int:
    """The most negatives a PAR minibatch shares: ``round(h_factor * negative * (2 window - 1))``.

    Example:
        >>> par_h_max(TrainConfig(device="cuda", algo="par", window=5, negative=5))
        45
    """
    return int(shared_negatives(2 * config.window - 1, config.negative, config.par_h_factor))


def par_order(config: TrainConfig, phased: bool = False) -> tuple[int, int]:
    """(lag, stagger) of PAR's order on the GPU (:func:`par_sentence`, :func:`sentence_lag`): minibatch ``m`` of
    sentence ``s`` is repelled ``window + s % par_batch`` centers after its last word, so its words' rows have
    left the ring and the blocks of a launch, which start together, repel at ``par_batch`` different moments;
    ``phased``: the attraction of the whole sentence first (lag :data:`PAR_PHASED`), the order the Hogwild
    model shows diverging when a GPU's blocks run it in step.

    Example:
        >>> par_order(TrainConfig(device="cuda", algo="par", window=5, par_batch=24))
        (5, 24)
    """
    if phased:
        return PAR_PHASED, 1
    return int(config.window), par_batch_size(config)


def train_launch_reference(algo: str, w_in: np.ndarray, w_out: np.ndarray, tokens: np.ndarray, offsets: np.ndarray,
                           launch: Launch, keep: np.ndarray, prob: np.ndarray, alias: np.ndarray,
                           config: TrainConfig, negs: np.ndarray | None = None, neg_base: int = 0,
                           par_phased: bool = False, full_w2v_pairs: bool = False,
                           writers_scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Train one launch's sentences in order, as the kernel of ``algo`` does; returns per-sentence
    (loss float64, pairs int64), the arrays the kernel fills.

    ``negs`` (test mode) gives the negatives: rows indexed by token position minus ``neg_base`` (the
    sentence start plus the center's subsampled position; for PAR the minibatch's first position).
    ``par_phased``: PAR in its phased order (:func:`par_order`); ``full_w2v_pairs``: FULL-W2V in its per-pair order,
    context by context (:func:`center_train`).  ``writers_scale`` (FULL-W2V): every change a block adds back, of
    its outputs' rows and its ring's rows, times this: what the kernel with ``gpu_writers_cap`` ``cap`` adds when
    ``h`` other blocks hold each of those rows throughout (``min(1, cap / (h + 1))``; the simulator's tests give
    the kernel such holders).

    Example:
        >>> loss, pairs = train_launch_reference("full-w2v", w_in, w_out, tokens, cut, launch, keep, prob,
        ...                                      alias, config)  # doctest: +SKIP
    """
    n_blocks = launch.s_hi - launch.s_lo
    out_loss = np.zeros(n_blocks, dtype=np.float64)
    out_pairs = np.zeros(n_blocks, dtype=np.int64)
    is_par = algo == "par"
    batch = par_batch_size(config) if is_par else 1
    h_max = max(par_h_max(config), 1) if is_par else 1
    width = h_max if is_par else max(config.negative, 1)
    if negs is None:
        negs = np.zeros((0, width), dtype=np.int32)
    lag, stagger = par_order(config, par_phased) if is_par else (PAR_PHASED, 1)
    _train_launch(is_par, w_in, w_out, tokens, np.asarray(offsets, dtype=np.int64), launch.s_lo, launch.s_hi,
                  launch.sentence_base, launch.key, launch.alpha0, launch.alpha1, launch.words, keep, prob, alias,
                  config.window, config.negative, batch, float(config.par_h_factor), h_max,
                  np.ascontiguousarray(negs, dtype=np.int32), int(neg_base), bool(config.compute_loss),
                  out_loss, out_pairs, lag, stagger, not full_w2v_pairs, np.float32(writers_scale))
    return out_loss, out_pairs


def reference_train(config: TrainConfig, counts: np.ndarray, w_in: np.ndarray, w_out: np.ndarray,
                    make_parts: Callable[[int], Iterable[tuple[np.ndarray, np.ndarray]]], words_per_epoch: int,
                    epochs: int | None = None, start_epoch: int = 0,
                    words_per_launch: int = DEFAULT_WORDS_PER_LAUNCH, par_phased: bool = False,
                    full_w2v_pairs: bool = False) -> list[float]:
    """What the GPU driver trains, on the CPU: the same plan, launch after launch, sentence after sentence.

    Trains ``w_in``/``w_out`` in place and returns the loss per positive pair of each epoch (``par_phased``,
    ``full_w2v_pairs``: the orders the kernels do not run, :func:`train_launch_reference`).

    Example:
        >>> reference_train(config, corpus.vocab.counts, w_in, w_out,
        ...                 lambda e: [(corpus.tokens, corpus.offsets)], corpus.n_tokens)  # doctest: +SKIP
    """
    epochs = config.epochs if epochs is None else epochs
    schedule = Schedule.of(config, words_per_epoch, epochs)
    keep = keep_probabilities(counts, config.sample)
    prob, alias = word_noise_tables(counts, config.ns_exponent)
    losses = []
    for epoch in range(start_epoch, epochs):
        loss = 0.0
        pairs = 0
        for tokens, cut, launch in epoch_launches(config, make_parts(epoch), epoch, schedule, words_per_launch):
            out_loss, out_pairs = train_launch_reference(str(config.algo), w_in, w_out, tokens, cut, launch, keep, prob,
                                                         alias, config, par_phased=par_phased,
                                                         full_w2v_pairs=full_w2v_pairs)
            loss += float(out_loss.sum())
            pairs += int(out_pairs.sum())
        losses.append(loss / pairs if pairs else float("nan"))
    return losses


# ------------------------------------------------------------------------------------------ the Hogwild model
@njit(inline="always")
def _finish(s_launch: np.ndarray, s: int, remaining: np.ndarray, done: int) -> int:
    """Sentence ``s`` is done; returns how many launches from the first are now complete."""
    remaining[s_launch[s]] -= 1
    while done < len(remaining) and remaining[done] == 0:
        done += 1
    return done


@njit(inline="always")
def _take_steps(is_par: bool, lag: int, stagger: int, tokens: np.ndarray, s_start: np.ndarray, s_end: np.ndarray,
                s_id: np.ndarray, s_launch: np.ndarray, in_flight: int, rep_ticks: int, keep: np.ndarray,
                key: np.uint64, batch: int, sent: np.ndarray, slen: np.ndarray, sidx: np.ndarray, ci: np.ndarray,
                mi: np.ndarray, kind: np.ndarray, left: np.ndarray, starts: np.ndarray, remaining: np.ndarray,
                nxt: int, done: int) -> tuple[int, int, int]:
    # One tick's scheduling: an idle slot takes the next sentence the plan allows (launch k once launch
    # k - in_flight is done; a sentence subsampled to nothing is finished at once); a slot whose step has no ticks
    # left starts its next one (a center, or PAR's repulsion minibatch of rep_ticks).  Returns (slots with a
    # sentence, the next sentence, launches done).
    n_sent = len(s_start)
    active = 0
    for q in range(len(sidx)):
        starts[q] = False
        if sidx[q] < 0:
            while nxt < n_sent and s_launch[nxt] < done + in_flight:
                s = nxt
                nxt += 1
                n = subsample(tokens, s_start[s], s_end[s], keep, key, s_id[s], sent[q])
                if n == 0:
                    done = _finish(s_launch, s, remaining, done)
                    continue
                sidx[q] = s
                slen[q] = n
                ci[q] = 0
                mi[q] = 0
                left[q] = 0
                break
            if sidx[q] < 0:
                continue
        active += 1
        if left[q] > 0:
            continue
        starts[q] = True
        n = slen[q]
        kind[q] = 0
        left[q] = 1
        if is_par:
            nmb = (n + batch - 1) // batch
            if lag < 0:
                repel = ci[q] >= n
            else:
                repel = mi[q] < nmb and ci[q] > _minibatch_ready(mi[q], n, batch,
                                                                 sentence_lag(lag, stagger, s_id[sidx[q]]))
            if repel:
                kind[q] = 1
                left[q] = rep_ticks
    return active, nxt, done


@njit(cache=True, fastmath=FASTMATH)
def _write_steps(is_par: bool, w_in: np.ndarray, w_out: np.ndarray, s_launch: np.ndarray, window: int, n_neg: int,
                 batch: int, sent: np.ndarray, slen: np.ndarray, sidx: np.ndarray, ci: np.ndarray, mi: np.ndarray,
                 kind: np.ndarray, ends: np.ndarray, ring: np.ndarray, orig: np.ndarray, cur: np.ndarray,
                 cur0: np.ndarray, outs: np.ndarray, valid: np.ndarray, nid: np.ndarray, nbh: np.ndarray,
                 d_in: np.ndarray, d_out: np.ndarray, step_loss: np.ndarray, step_pairs: np.ndarray,
                 remaining: np.ndarray, done: int, loss: float, pairs: int, cnt: np.ndarray, power: float, cap: int,
                 novalid: np.ndarray, scl: np.ndarray, held: np.ndarray,
                 scale_inputs: bool) -> tuple[float, int, int]:
    # The steps ending this tick write their updates to the shared rows, slot after slot (the GPU's atomic adds),
    # and a slot whose sentence is trained frees itself.  Returns (loss, pairs, launches done).
    for q in range(len(sidx)):
        if not ends[q]:
            continue
        n = slen[q]
        loss += step_loss[q]
        pairs += step_pairs[q]
        if kind[q] == 1:
            if nbh[q, 1] > 0:
                minibatch_writes(w_in, w_out, sent[q], mi[q] * batch, nbh[q, 0], nbh[q, 1], nid[q], d_in[q],
                                 d_out[q])
            mi[q] += 1
        elif power > 0.0:  # the concurrent-writers scale on the outputs' changes (parvec.gpu.collisions)
            scaled_output_writes(w_out, outs[q], valid[q], cur[q], cur0[q], cnt, power, cap, scl)
            if scale_inputs:
                scaled_ring_flushes(w_in, sent[q], n, ci[q], window, ring[q], orig[q], held, power, cap)
            else:
                center_writes(w_in, w_out, sent[q], n, ci[q], window, n_neg, ring[q], orig[q], cur[q], cur0[q],
                              outs[q], novalid, _ONE)
            ci[q] += 1
        else:
            center_writes(w_in, w_out, sent[q], n, ci[q], window, n_neg, ring[q], orig[q], cur[q], cur0[q],
                          outs[q], valid[q], _ONE)
            ci[q] += 1
        if ci[q] >= n and (not is_par or mi[q] * batch >= n):
            done = _finish(s_launch, sidx[q], remaining, done)
            sidx[q] = -1
    return loss, pairs, done


def _hogwild_epoch_py(is_par: bool, window_order: bool, lag: int, stagger: int, w_in: np.ndarray, w_out: np.ndarray,
                      tokens: np.ndarray, s_start: np.ndarray, s_end: np.ndarray, s_id: np.ndarray,
                      s_alpha: np.ndarray, s_launch: np.ndarray, n_launches: int, n_slots: int, in_flight: int,
                      rep_ticks: int, keep: np.ndarray, prob: np.ndarray, alias: np.ndarray, key: np.uint64,
                      window: int, negative: int, batch: int, h_factor: float, h_max: int, with_loss: bool,
                      power: float, cap: int, scale_inputs: bool, collect: bool, bucket: np.ndarray,
                      table: np.ndarray) -> tuple[float, int, int, int]:
    dim = w_in.shape[1]
    ring_size = 2 * window + 1
    n_neg = 0 if is_par else negative
    n_out = n_neg + 1
    n_sent = len(s_start)
    sent = np.zeros((n_slots, GPU_MAX_SENTENCE), dtype=np.int32)
    slen = np.zeros(n_slots, dtype=np.int64)
    sidx = np.full(n_slots, -1, dtype=np.int64)  # the slot's sentence (row of the epoch's table), -1: none
    ci = np.zeros(n_slots, dtype=np.int64)  # its next center
    mi = np.zeros(n_slots, dtype=np.int64)  # PAR: its next minibatch
    kind = np.zeros(n_slots, dtype=np.int64)  # the step in progress: 0 a center, 1 a minibatch
    left = np.zeros(n_slots, dtype=np.int64)  # ticks left in that step (0: the next step starts this tick)
    starts = np.zeros(n_slots, dtype=np.bool_)
    ends = np.zeros(n_slots, dtype=np.bool_)
    ring = np.zeros((n_slots, ring_size, dim), dtype=np.float32)
    orig = np.zeros((n_slots, ring_size, dim), dtype=np.float32)
    cur = np.zeros((n_slots, n_out, dim), dtype=np.float32)
    cur0 = np.zeros((n_slots, n_out, dim), dtype=np.float32)
    outs = np.zeros((n_slots, n_out), dtype=np.int64)
    valid = np.zeros((n_slots, n_out), dtype=np.bool_)
    g = np.zeros((n_slots, n_out), dtype=np.float32)
    gw = np.zeros((n_slots, 2 * window, n_out), dtype=np.float32)
    acc = np.zeros((n_slots, dim), dtype=np.float32)
    step_loss = np.zeros(n_slots, dtype=np.float64)
    step_pairs = np.zeros(n_slots, dtype=np.int64)
    rb = n_slots if is_par else 1  # PAR's repulsion state per slot
    nid = np.zeros((rb, h_max), dtype=np.int64)
    m_in = np.zeros((rb, batch, dim), dtype=np.float32)
    m_out = np.zeros((rb, h_max, dim), dtype=np.float32)
    d_in = np.zeros((rb, batch, dim), dtype=np.float32)
    d_out = np.zeros((rb, h_max, dim), dtype=np.float32)
    gm = np.zeros((rb, h_max, batch), dtype=np.float32)
    nbh = np.zeros((rb, 2), dtype=np.int64)
    no_negs = np.zeros((0, max(h_max, negative, 1)), dtype=np.int32)
    track = not is_par and (power > 0.0 or collect)  # FULL-W2V: the blocks holding each row (collisions.py)
    n_rows = w_out.shape[0] if track else 1
    cnt = np.zeros(n_rows, dtype=np.int64)  # blocks holding each output row in this tick
    held = np.zeros(n_rows, dtype=np.int64)  # ring copies of each input row held by the blocks
    novalid = np.zeros(n_out, dtype=np.bool_)
    scl = np.zeros(n_out, dtype=np.float32)
    remaining = np.zeros(n_launches, dtype=np.int64)
    for s in range(n_sent):
        remaining[s_launch[s]] += 1
    done = 0
    nxt = 0
    loss = 0.0
    pairs = 0
    ticks = 0
    busy = 0  # slot-ticks with a sentence: busy / ticks is the mean concurrency
    while True:
        # Idle slots take the next sentences the plan allows (launch k once launch k - in_flight is done) ...
        active, nxt, done = _take_steps(is_par, lag, stagger, tokens, s_start, s_end, s_id, s_launch, in_flight,
                                        rep_ticks, keep, key, batch, sent, slen, sidx, ci, mi, kind, left, starts,
                                        remaining, nxt, done)
        if active == 0:
            if nxt >= n_sent:
                break
            continue
        ticks += 1
        busy += active
        # ... every step starting this tick reads the shared rows (nothing writes them meanwhile) ...
        for q in prange(n_slots):
            if not starts[q]:
                continue
            s = sidx[q]
            n = slen[q]
            if kind[q] == 1:
                nb, nh = minibatch_reads(w_in, w_out, sent[q], n, mi[q] * batch, key, s_id[s], window, negative,
                                         batch, h_factor, h_max, prob, alias, no_negs, 0, nid[q], m_in[q], m_out[q])
                nbh[q, 0] = nb
                nbh[q, 1] = nh
            else:
                center_reads(w_in, w_out, sent[q], n, ci[q], key, s_id[s], window, n_neg, prob, alias, no_negs, 0,
                             ring[q], orig[q], cur[q], cur0[q], outs[q], valid[q])
        if track:
            count_outputs(starts, outs, valid, cnt, 1)
            if collect:
                record_outputs(starts, outs, valid, cnt, bucket, table)
            if collect or scale_inputs:
                for q in range(n_slots):
                    if starts[q]:
                        ring_enter(sent[q], slen[q], ci[q], window, held)
        # ... every step ending this tick trains on its private copies ...
        for q in range(n_slots):
            ends[q] = False
            if sidx[q] >= 0:
                left[q] -= 1
                ends[q] = left[q] == 0
        for q in prange(n_slots):
            if not ends[q]:
                continue
            s = sidx[q]
            alpha = np.float32(s_alpha[s])
            if kind[q] == 1:
                step_pairs[q] = 0
                step_loss[q] = 0.0
                if nbh[q, 1] > 0:
                    step_loss[q] = minibatch_train(nbh[q, 0], nbh[q, 1], alpha, m_in[q], m_out[q], gm[q], d_in[q],
                                                   d_out[q], with_loss)
            else:
                if window_order and not is_par:
                    p, lo = center_train_window(slen[q], ci[q], key, s_id[s], alpha, window, n_neg, ring[q], cur[q],
                                                cur0[q], valid[q], gw[q], acc[q], with_loss)
                else:
                    p, lo = center_train(slen[q], ci[q], key, s_id[s], alpha, window, n_neg, ring[q], cur[q],
                                         valid[q], g[q], acc[q], with_loss)
                step_pairs[q] = p
                step_loss[q] = lo
        if collect and not is_par:
            for q in range(n_slots):
                if ends[q]:
                    record_inputs(sent[q], slen[q], ci[q], window, held, bucket, table, not scale_inputs)
        # ... and then writes, slot after slot (adds: the kernels' atomics).
        loss, pairs, done = _write_steps(is_par, w_in, w_out, s_launch, window, n_neg, batch, sent, slen, sidx, ci,
                                         mi, kind, ends, ring, orig, cur, cur0, outs, valid, nid, nbh, d_in, d_out,
                                         step_loss, step_pairs, remaining, done, loss, pairs, cnt, power, cap, novalid,
                                         scl, held, scale_inputs)
        if track and power == 0.0:  # (the scaled writes count their rows down themselves)
            count_outputs(ends, outs, valid, cnt, -1)
    return loss, pairs, ticks, busy


# Two compilations of the same loop: serial (cached) for few slots, where a parallel region per tick costs more
# than the tick's work, and parallel over the slots (not cached: numba's cache would not tell the two apart) for
# a GPU's thousand; the same results either way (the parallel loops write only each slot's own arrays).
_hogwild_epoch = njit(cache=True, fastmath=FASTMATH)(_hogwild_epoch_py)
_hogwild_epoch_parallel = njit(fastmath=FASTMATH, parallel=True)(_hogwild_epoch_py)
PARALLEL_SLOTS = 256  # the model runs its slots on every core from this many on


@dataclass
class HogwildStats:
    """What :func:`hogwild_train` measured: loss per positive pair per epoch, and the concurrency it ran at
    (``ticks`` lockstep steps, ``mean_in_flight`` sentences in flight on average)."""

    losses: list[float]
    ticks: list[int]
    mean_in_flight: list[float]
    collisions: CollisionTable | None = None


def _epoch_table(config: TrainConfig, parts: Iterable[tuple[np.ndarray, np.ndarray]], epoch: int,
                 schedule: Schedule, words_per_launch: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int] | None:
    """The epoch's sentences as the GPU plan orders them (:func:`parvec.gpu.plan.epoch_launches`): one token
    array and per sentence its bounds, RNG index, rate and launch."""
    arrays: list[np.ndarray] = []
    bases: dict[int, int] = {}
    starts, ends, ids, alphas, launch_of = [], [], [], [], []
    total = 0
    n_launches = 0
    for tokens, cut, launch in epoch_launches(config, parts, epoch, schedule, words_per_launch):
        if id(tokens) not in bases:
            bases[id(tokens)] = total
            arrays.append(tokens)
            total += len(tokens)
        base = bases[id(tokens)]
        lo, hi = launch.s_lo, launch.s_hi
        starts.append(cut[lo:hi] + base)
        ends.append(cut[lo + 1:hi + 1] + base)
        ids.append(launch.sentence_base + np.arange(hi - lo, dtype=np.int64))
        frac = (cut[lo:hi] - cut[lo]).astype(np.float64) / float(max(launch.words, 1))
        alphas.append((launch.alpha0 + (launch.alpha1 - launch.alpha0) * frac).astype(np.float32))
        launch_of.append(np.full(hi - lo, n_launches, dtype=np.int64))
        n_launches += 1
    if not arrays:
        return None
    tokens = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
    cat = np.concatenate
    return (np.ascontiguousarray(tokens, dtype=np.int32), cat(starts).astype(np.int64), cat(ends).astype(np.int64),
            cat(ids), cat(alphas), cat(launch_of), n_launches)


def hogwild_train(config: TrainConfig, counts: np.ndarray, w_in: np.ndarray, w_out: np.ndarray,
                  make_parts: Callable[[int], Iterable[tuple[np.ndarray, np.ndarray]]], words_per_epoch: int,
                  resident: int, epochs: int | None = None, start_epoch: int = 0, words_per_launch: int | None = None,
                  in_flight: int = 2, rep_ticks: int = 1, par_phased: bool = False, full_w2v_pairs: bool = False,
                  parallel: bool | None = None, writers_cap: int | None = None, writers_power: float = 1.0,
                  writers_inputs: bool = True, collisions: bool = False) -> HogwildStats:
    """A deterministic CPU model of the GPU's Hogwild: what the driver's plan trains when ``resident`` blocks
    run at once.

    The epoch's sentences are handed, in the plan's order, to ``resident`` slots (the thread blocks one GPU
    holds at a time: SMs x blocks per SM), and a slot that finishes takes the next sentence, as the block
    scheduler does; a sentence of launch ``k`` may start only once launch ``k - in_flight`` has finished (the
    driver keeps two launches in flight).  The slots advance in lockstep, one step per tick: a step is one
    center of the kernel's order (:func:`center_reads`, :func:`center_train_window` for FULL-W2V or
    :func:`center_train` for PAR's attraction, :func:`center_writes`) or one of
    PAR's repulsion minibatches (:func:`minibatch_reads`, :func:`minibatch_writes`; it lasts ``rep_ticks``
    ticks, reading at its first and writing at its last).  In each tick every step that starts reads the
    shared rows before any step that ends writes, so what a block reads misses the changes of every block
    in the middle of a step, exactly as on the GPU when blocks run at the same pace; the writes are added
    (the kernels' atomics).  The same arithmetic and random numbers as :func:`reference_train`, which this
    equals with ``resident = 1``.  Trains ``w_in``/``w_out`` in place.

    ``words_per_launch`` defaults to the driver's (:func:`parvec.gpu.plan.default_words_per_launch`);
    ``par_phased``, ``full_w2v_pairs``: the kernels' old orders (:func:`train_launch_reference`); ``parallel``:
    the slots' steps on every core (the same results; default: from :data:`PARALLEL_SLOTS` slots on, with more
    than one numba thread).  ``writers_cap``: FULL-W2V's concurrent-writers cap (default
    ``config.gpu_writers_cap``; 0 adds every block's change whole), each change of an output row times
    :func:`parvec.gpu.collisions.writers_scale`, ``(cap / c) ** writers_power`` above ``cap`` holders, and with
    ``writers_inputs`` (the default) each change of an input row leaving a ring the same way, ``c`` the other
    blocks' copies of the row plus one, as the kernel does with ``writers_power`` 1 (``writers_inputs=False``
    and other powers measure the alternatives, docs/gpu.md); ``collisions``:
    tally what the blocks collide on into ``stats.collisions`` (:class:`parvec.gpu.collisions.CollisionTable`;
    FULL-W2V only).

    Example:
        >>> stats = hogwild_train(config, corpus.vocab.counts, w_in, w_out,
        ...                       lambda e: [(corpus.tokens, corpus.offsets)], corpus.n_tokens, 1320)  # doctest: +SKIP
        >>> stats.losses  # doctest: +SKIP
    """
    if resident < 1 or in_flight < 1 or rep_ticks < 1:
        raise ValueError(f"resident, in_flight and rep_ticks must be >= 1, got {resident}, {in_flight}, {rep_ticks}")
    epochs = config.epochs if epochs is None else epochs
    schedule = Schedule.of(config, words_per_epoch, epochs)
    wpl = words_per_launch or default_words_per_launch(str(config.algo), words_per_epoch)
    keep = keep_probabilities(counts, config.sample)
    prob, alias = word_noise_tables(counts, config.ns_exponent)
    is_par = config.algo == "par"
    batch = par_batch_size(config) if is_par else 1
    h_max = max(par_h_max(config), 1) if is_par else 1
    lag, stagger = par_order(config, par_phased) if is_par else (PAR_PHASED, 1)
    cap = int(config.gpu_writers_cap if writers_cap is None else writers_cap)
    power = float(writers_power) if cap > 0 else 0.0
    collect = bool(collisions) and not is_par
    bucket = frequency_buckets(counts) if collect else np.zeros(1, dtype=np.int64)
    coll = empty_table()
    stats = HogwildStats([], [], [], CollisionTable(coll, 0) if collect else None)
    for epoch in range(start_epoch, epochs):
        table = _epoch_table(config, make_parts(epoch), epoch, schedule, wpl)
        if table is None:
            stats.losses.append(float("nan"))
            stats.ticks.append(0)
            stats.mean_in_flight.append(0.0)
            continue
        tokens, s_start, s_end, s_id, s_alpha, s_launch, n_launches = table
        if parallel is None:
            parallel = resident >= PARALLEL_SLOTS and numba.get_num_threads() > 1
        run = _hogwild_epoch_parallel if parallel else _hogwild_epoch
        loss, pairs, ticks, busy = run(
            is_par, not full_w2v_pairs, lag, stagger, w_in, w_out, tokens, s_start, s_end, s_id, s_alpha, s_launch,
            n_launches, int(resident), int(in_flight), int(rep_ticks), keep, prob, alias, epoch_key(config.seed, epoch),
            config.window, config.negative, batch, float(config.par_h_factor), h_max, bool(config.compute_loss),
            0.0 if is_par else power, max(cap, 1), bool(writers_inputs) and power > 0.0 and not is_par, collect, bucket,
            coll)
        if stats.collisions is not None:
            stats.collisions.ticks += int(ticks)
        stats.losses.append(loss / pairs if pairs else float("nan"))
        stats.ticks.append(int(ticks))
        stats.mean_in_flight.append(busy / ticks if ticks else 0.0)
    return stats
