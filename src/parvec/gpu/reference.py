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
once (the kernel keeps them in registers) and for each context position ``j`` in window order::

    f_k   = <ring[j], out_k>                   for every output k  (one block reduction for all k)
    g_k   = (label_k - sigmoid(f_k)) * alpha
    ring[j] += sum_k g_k out_k                 (out_k before this step)
    out_k   += g_k ring[j]                     (ring[j] before this step)

which is word2vec.c's order for one context word (its gradient summed over the outputs and applied after
them; each output updated at once) with the negatives shared per center; then every output row's change is
added to ``w_out``.  Output rows are added as changes, not overwritten, so two copies of a word (a negative
drawn twice, a word twice in the window) both count and concurrent blocks lose nothing but races.

**PAR order** (:func:`par_sentence`).  Attraction is the FULL-W2V pass with no negatives (each center's
output row against its contexts, label 1: Moon et al.'s Algorithm 3 with the ring).  Then repulsion,
Algorithm 4: for each minibatch of ``B`` consecutive words, ``C_rep`` by the rule of
:func:`parvec.gpu.rng.par_c_rep`, ``H = round(h_factor * negative * C_rep)`` shared negatives, and the three
products from the rows as they are before the minibatch: ``G = -sigmoid(M_out M_in^T) alpha``,
``w_out[negs] += G M_in``, ``w_in[words] += G^T M_out``.

Example:
    >>> words, pairs, loss = train_launch_reference("full-w2v", w_in, w_out, tokens, cut, launch, keep, prob,
    ...                                             alias, config)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
from numba import njit

from parvec.config import TrainConfig
from parvec.gpu.plan import DEFAULT_WORDS_PER_LAUNCH, GPU_MAX_SENTENCE, Launch, epoch_launches
from parvec.gpu.rng import keeps_token, negative_sample, par_c_rep, window_shrink
from parvec.gpu.sgns import pair_error, pair_loss
from parvec.kernels.par import shared_negatives
from parvec.sampling import keep_probabilities, word_noise_tables
from parvec.schedule import Schedule

_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)


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


@njit(cache=True, fastmath=True)
def full_w2v_sentence(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, n: int, key: np.uint64,
                      sentence: int, alpha: np.float32, window: int, negative: int, prob: np.ndarray,
                      alias: np.ndarray, negs: np.ndarray, neg_row: int, with_loss: bool) -> tuple[int, float]:
    """One sentence (``sent[:n]``, already subsampled) in the FULL-W2V kernel's order; returns (pairs, loss).

    ``negative`` = 0 is PAR's attraction.  With ``negs`` non-empty (test mode), negative ``k`` of the center at
    position ``i`` is ``negs[neg_row + i, k]`` instead of a draw.

    Example:
        >>> full_w2v_sentence(w_in, w_out, sent, n, key, 0, np.float32(0.025), 5, 5, prob, alias,
        ...                   np.zeros((0, 5), np.int32), 0, True)  # doctest: +SKIP
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
    acc = np.zeros(dim, dtype=np.float32)
    pairs = 0
    loss = 0.0
    for p in range(min(window + 1, n)):
        slot = p % ring_size
        for d in range(dim):
            ring[slot, d] = w_in[sent[p], d]
            orig[slot, d] = ring[slot, d]
    for i in range(n):
        if i > 0 and i + window < n:  # the position entering the window
            slot = (i + window) % ring_size
            for d in range(dim):
                ring[slot, d] = w_in[sent[i + window], d]
                orig[slot, d] = ring[slot, d]
        b = window_shrink(key, sentence, i, window)
        lo = max(0, i - window + b)
        hi = min(n, i + window - b + 1)
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
        for k in range(n_out):
            for d in range(dim):
                cur[k, d] = w_out[outs[k], d]
                cur0[k, d] = cur[k, d]
        for j in range(lo, hi):
            if j == i:
                continue
            slot = j % ring_size
            for k in range(n_out):
                g[k] = _ZERO
                if valid[k]:
                    f = _ZERO
                    for d in range(dim):
                        f += ring[slot, d] * cur[k, d]
                    label = _ONE if k == 0 else _ZERO
                    g[k] = pair_error(f, label) * alpha
                    if with_loss:
                        loss += pair_loss(f, label)
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
        for k in range(n_out):
            if valid[k]:
                for d in range(dim):
                    w_out[outs[k], d] += cur[k, d] - cur0[k, d]
        if i - window >= 0:  # the position leaving the window
            slot = (i - window) % ring_size
            for d in range(dim):
                w_in[sent[i - window], d] += ring[slot, d] - orig[slot, d]
    for p in range(max(0, n - window), n):
        slot = p % ring_size
        for d in range(dim):
            w_in[sent[p], d] += ring[slot, d] - orig[slot, d]
    return pairs, loss


@njit(cache=True, fastmath=True)
def par_repulsion(w_in: np.ndarray, w_out: np.ndarray, sent: np.ndarray, n: int, key: np.uint64, sentence: int,
                  alpha: np.float32, window: int, negative: int, batch: int, h_factor: float, h_max: int,
                  prob: np.ndarray, alias: np.ndarray, negs: np.ndarray, neg_row: int, with_loss: bool) -> float:
    """PAR's repulsion of one subsampled sentence in the GPU kernel's order; returns the loss.

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
    gm = np.zeros((h_max, batch), dtype=np.float32)
    for min_pos in range(0, n, batch):
        c_rep = par_c_rep(key, sentence, min_pos, n, window)
        nh = min(int(h_factor * negative * c_rep + 0.5), h_max)
        nb = min(batch, n - min_pos)
        if nh == 0:
            continue
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
        for h in range(nh):
            for b in range(nb):
                f = _ZERO
                for d in range(dim):
                    f += m_out[h, d] * m_in[b, d]
                gm[h, b] = pair_error(f, _ZERO) * alpha
                if with_loss:
                    loss += pair_loss(f, _ZERO)
        for h in range(nh):
            for d in range(dim):
                acc = _ZERO
                for b in range(nb):
                    acc += gm[h, b] * m_in[b, d]
                w_out[nid[h], d] += acc
        for b in range(nb):
            for d in range(dim):
                acc = _ZERO
                for h in range(nh):
                    acc += gm[h, b] * m_out[h, d]
                w_in[sent[min_pos + b], d] += acc
    return loss


@njit(cache=True)
def _train_launch(algo_par: bool, w_in, w_out, tokens, offsets, s_lo, s_hi, sentence_base, key, alpha0, alpha1,
                  words, keep, prob, alias, window, negative, batch, h_factor, h_max, negs, neg_base, with_loss,
                  out_loss, out_pairs):
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
            p, loss = full_w2v_sentence(w_in, w_out, sent, n, key, sentence, alpha, window, 0, prob, alias,
                                        negs[:0], 0, with_loss)
            loss += par_repulsion(w_in, w_out, sent, n, key, sentence, alpha, window, negative, batch, h_factor,
                                  h_max, prob, alias, negs, neg_row, with_loss)
        else:
            p, loss = full_w2v_sentence(w_in, w_out, sent, n, key, sentence, alpha, window, negative, prob, alias,
                                        negs, neg_row, with_loss)
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


def train_launch_reference(algo: str, w_in: np.ndarray, w_out: np.ndarray, tokens: np.ndarray, offsets: np.ndarray,
                           launch: Launch, keep: np.ndarray, prob: np.ndarray, alias: np.ndarray,
                           config: TrainConfig, negs: np.ndarray | None = None,
                           neg_base: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Train one launch's sentences in order, as the kernel of ``algo`` does; returns per-sentence
    (loss float64, pairs int64), the arrays the kernel fills.

    ``negs`` (test mode) gives the negatives: rows indexed by token position minus ``neg_base`` (the
    sentence start plus the center's subsampled position; for PAR the minibatch's first position).

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
    _train_launch(is_par, w_in, w_out, tokens, np.asarray(offsets, dtype=np.int64), launch.s_lo, launch.s_hi,
                  launch.sentence_base, launch.key, launch.alpha0, launch.alpha1, launch.words, keep, prob, alias,
                  config.window, config.negative, batch, float(config.par_h_factor), h_max,
                  np.ascontiguousarray(negs, dtype=np.int32), int(neg_base), bool(config.compute_loss),
                  out_loss, out_pairs)
    return out_loss, out_pairs


def reference_train(config: TrainConfig, counts: np.ndarray, w_in: np.ndarray, w_out: np.ndarray,
                    make_parts: Callable[[int], Iterable[tuple[np.ndarray, np.ndarray]]], words_per_epoch: int,
                    epochs: int | None = None, start_epoch: int = 0,
                    words_per_launch: int = DEFAULT_WORDS_PER_LAUNCH) -> list[float]:
    """What the GPU driver trains, on the CPU: the same plan, launch after launch, sentence after sentence.

    Trains ``w_in``/``w_out`` in place and returns the loss per positive pair of each epoch.

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
                                                         alias, config)
            loss += float(out_loss.sum())
            pairs += int(out_pairs.sum())
        losses.append(loss / pairs if pairs else float("nan"))
    return losses
