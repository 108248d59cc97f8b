"""word2vec.c's hierarchical softmax, skip-gram and CBOW, Hogwild (Mikolov et al.).

Hierarchical softmax replaces the output vectors by the inner nodes of a Huffman tree over the
vocabulary (:mod:`parvec.huffman`): predicting word ``w`` is ``code_len[w]`` binary decisions, the
``d``-th at inner node ``points[w, d]`` (row of ``syn1``) with label ``1 - codes[w, d]``.

- **Skip-gram** (``sg=1``): each context word's input vector is trained along the center's code path,
  then (``negative > 0``) against the center's output vector and ``negative`` noise words, as
  :mod:`parvec.kernels.classic`; the context row's update is accumulated over both and added once.
- **CBOW** (``sg=0``): the window's input vectors are averaged (``cbow_mean``; summed otherwise) into
  ``h``, ``h`` is trained along the center's code path and (``negative > 0``) against the center and
  ``negative`` noise words; the accumulated update is then added to every input vector of the window
  (with ``cbow_mean=0`` divided by the window's size first, as gensim).

As word2vec.c (and gensim), a hierarchical-softmax decision whose score is beyond +-6 (MAX_EXP) is
skipped: no update.  Negative sampling saturates there instead (:func:`parvec.kernels.classic.sgns_step`).
Inside, a decision's sigmoid (and loss) comes from a 4096-entry table (word2vec.c's has 1000), measured
faster than the exact functions; negative-sampling terms are those of the classic kernel (exact).  The
loss is every term's ``-log p`` (skipped decisions included, computed exactly), so a pair's loss is its
code path's plus its negatives'.
Window shrink, subsampling, noise draws and the learning-rate decay are those of the classic kernel.

The kernel follows the contract of docs/architecture.md and declares ``NEEDS_HS``: the trainer passes
``syn1, codes, points, code_len`` after the contract's arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit

from parvec.kernels.classic import MAX_EXP, sgns_step
from parvec.kernels.fastmath import FASTMATH
from parvec.kernels.params import KernelParams
from parvec.sampling import draw_noise, rng_next, shrunk_window, subsample_sentence, word_rate

if TYPE_CHECKING:
    from parvec.config import TrainConfig

NEEDS_HS = True  # the trainer appends (syn1, codes, points, code_len) to the kernel's arguments


# The sigmoid and -log(sigmoid) at the midpoints of TABLE_SIZE cells over [-MAX_EXP, MAX_EXP] (word2vec.c's
# expTable has 1000 cells): one lookup per decision instead of an exp and a log, measured 1.25x faster than
# the exact functions for both skip-gram and CBOW (docs/architecture.md); the error is under 4e-4.
TABLE_SIZE = 4096
_GRID = (np.arange(TABLE_SIZE, dtype=np.float64) + 0.5) / TABLE_SIZE * 2 * MAX_EXP - MAX_EXP
SIG_TABLE = (1.0 / (1.0 + np.exp(-_GRID))).astype(np.float32)
LOGSIG_TABLE = np.log1p(np.exp(-_GRID)).astype(np.float32)  # -log sigmoid


@njit(inline="always")
def hs_step(f: np.float32, code: np.uint8, compute_loss: bool) -> tuple[Any, Any]:  # (float32, float64)
    """(gradient factor ``1 - code - sigmoid(f)``, 0 beyond +-MAX_EXP; loss ``-log p``, 0 without
    ``compute_loss``) of one decision with score ``f``, ``p`` the probability of the label ``1 - code``.

    Inside +-MAX_EXP both come from the tables; beyond, the loss is computed exactly.
    """
    if f <= -MAX_EXP or f >= MAX_EXP:
        if not compute_loss:
            return np.float32(0.0), 0.0
        s = min(max(f, np.float32(-20.0)), np.float32(20.0))
        if code != 0:
            s = -s
        return np.float32(0.0), np.float64(np.log(np.float32(1.0) + np.exp(-s)))
    k = min(int((f + MAX_EXP) * (TABLE_SIZE / (2 * MAX_EXP))), TABLE_SIZE - 1)
    loss = 0.0
    if compute_loss:
        # -log(1 - sigmoid(f)) = -log sigmoid(-f): the mirrored cell
        loss = np.float64(LOGSIG_TABLE[k] if code == 0 else LOGSIG_TABLE[TABLE_SIZE - 1 - k])
    return np.float32(1.0) - np.float32(code) - SIG_TABLE[k], loss


@njit(inline="always")
def _hs_path(h, h_row, syn1, codes, points, n_code, word, alpha, neu1e, compute_loss):
    """Train ``h`` (row ``h_row`` of the 2-D array ``h``) along ``word``'s code path; returns the loss."""
    dim = h.shape[1]
    loss = 0.0
    for k in range(n_code):
        p = points[word, k]
        f = np.float32(0.0)
        for d in range(dim):
            f += h[h_row, d] * syn1[p, d]
        err, term = hs_step(f, codes[word, k], compute_loss)
        loss += term
        if err == 0.0:
            continue
        g = err * alpha
        for d in range(dim):
            neu1e[d] += g * syn1[p, d]
            syn1[p, d] += g * h[h_row, d]
    return loss


@njit(inline="always")
def _ns_pair(h, h_row, w_out, target, label, alpha, neu1e, compute_loss):
    """One negative-sampling term of ``h`` against output row ``target``; returns the loss."""
    dim = h.shape[1]
    f = np.float32(0.0)
    for d in range(dim):
        f += h[h_row, d] * w_out[target, d]
    err, loss = sgns_step(f, label)
    g = err * alpha
    for d in range(dim):
        neu1e[d] += g * w_out[target, d]
        w_out[target, d] += g * h[h_row, d]
    return loss if compute_loss else 0.0


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def hs_update(w_in, w_out, syn1, codes, points, code_len, ctx_words, cbow_mean, word, negatives, alpha, work):
    """One training example with fixed negatives: exposed for tests, the exact update the kernel makes.

    Skip-gram is one context word (``ctx_words`` of length 1, ``cbow_mean`` ignored); CBOW the window's
    words.  ``negatives`` (possibly empty) are the noise words drawn (one equal to ``word`` is skipped).
    ``work`` holds at least ``2 * dim`` floats.  Returns the example's loss.

    Example:
        >>> hs_update(w_in, w_out, syn1, t.codes, t.points, t.code_len, np.array([3]), True, 7,
        ...           np.array([1, 9]), np.float32(0.025), np.zeros(2 * dim, np.float32))  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    neu1e = work[:dim]
    h = work[dim : 2 * dim].reshape((1, dim))
    n = len(ctx_words)
    for d in range(dim):
        neu1e[d] = 0.0
        h[0, d] = 0.0
    for c in range(n):
        for d in range(dim):
            h[0, d] += w_in[ctx_words[c], d]
    if n > 1 and cbow_mean:
        for d in range(dim):
            h[0, d] /= n
    loss = _hs_path(h, 0, syn1, codes, points, code_len[word], word, alpha, neu1e, True)
    if len(negatives) > 0:
        loss += _ns_pair(h, 0, w_out, word, np.float32(1.0), alpha, neu1e, True)
        for k in range(len(negatives)):
            if negatives[k] == word:
                continue
            loss += _ns_pair(h, 0, w_out, negatives[k], np.float32(0.0), alpha, neu1e, True)
    scale = np.float32(1.0) if (cbow_mean or n == 1) else np.float32(1.0 / n)
    for c in range(n):
        for d in range(dim):
            w_in[ctx_words[c], d] += scale * neu1e[d]
    return loss


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def train_chunk(w_in, w_out, tokens, offsets, s_lo, s_hi, keep, noise_prob, noise_alias,
                params, rates, seed, sent_buf, work, syn1, codes, points, code_len):
    """Train sentences ``s_lo..s_hi`` (docs/architecture.md; reads ``params.window``, ``params.negative``,
    ``params.sg``, ``params.cbow_mean`` and ``params.compute_loss``)."""
    window = params.window
    negative = params.negative
    sg = params.sg
    cbow_mean = params.cbow_mean
    compute_loss = params.compute_loss
    alpha0 = rates.alpha0
    alpha1 = rates.alpha1
    dim = w_in.shape[1]
    neu1e = work[:dim]
    h = work[dim : 2 * dim].reshape((1, dim))
    state = seed
    chunk_words = max(offsets[s_hi] - offsets[s_lo], 1)
    done = 0
    pairs = 0
    loss = 0.0
    one = np.float32(1.0)
    zero = np.float32(0.0)
    for s in range(s_lo, s_hi):
        start = offsets[s]
        end = offsets[s + 1]
        n, state = subsample_sentence(tokens, start, end, keep, state, sent_buf)
        raw_len = end - start
        for i in range(n):
            alpha = word_rate(alpha0, alpha1, done, i, raw_len, n, chunk_words)
            state, lo, hi = shrunk_window(state, i, n, window)
            center = sent_buf[i]
            n_code = code_len[center]
            if sg:
                for j in range(lo, hi):
                    if j == i:
                        continue
                    ctx = sent_buf[j]
                    for d in range(dim):
                        neu1e[d] = 0.0
                    loss += _hs_path(w_in, ctx, syn1, codes, points, n_code, center, alpha, neu1e, compute_loss)
                    if negative > 0:
                        loss += _ns_pair(w_in, ctx, w_out, center, one, alpha, neu1e, compute_loss)
                        for _ in range(negative):
                            state = rng_next(state)
                            target = draw_noise(state, noise_prob, noise_alias)
                            if target == center:
                                continue
                            loss += _ns_pair(w_in, ctx, w_out, target, zero, alpha, neu1e, compute_loss)
                    for d in range(dim):
                        w_in[ctx, d] += neu1e[d]
                    pairs += 1
            else:
                cw = hi - lo - 1
                if cw <= 0:
                    continue
                for d in range(dim):
                    neu1e[d] = 0.0
                    h[0, d] = 0.0
                for j in range(lo, hi):
                    if j == i:
                        continue
                    ctx = sent_buf[j]
                    for d in range(dim):
                        h[0, d] += w_in[ctx, d]
                if cbow_mean:
                    inv = np.float32(1.0) / np.float32(cw)
                    for d in range(dim):
                        h[0, d] *= inv
                loss += _hs_path(h, 0, syn1, codes, points, n_code, center, alpha, neu1e, compute_loss)
                if negative > 0:
                    loss += _ns_pair(h, 0, w_out, center, one, alpha, neu1e, compute_loss)
                    for _ in range(negative):
                        state = rng_next(state)
                        target = draw_noise(state, noise_prob, noise_alias)
                        if target == center:
                            continue
                        loss += _ns_pair(h, 0, w_out, target, zero, alpha, neu1e, compute_loss)
                if not cbow_mean:
                    inv = np.float32(1.0) / np.float32(cw)
                    for d in range(dim):
                        neu1e[d] *= inv
                for j in range(lo, hi):
                    if j == i:
                        continue
                    ctx = sent_buf[j]
                    for d in range(dim):
                        w_in[ctx, d] += neu1e[d]
                pairs += 1
        done += raw_len
    return done, pairs, loss


def params(config: TrainConfig) -> tuple[KernelParams, int]:
    """(the kernel's parameters, its work size in floats) for :func:`train_chunk`.

    Example:
        >>> from parvec.config import TrainConfig
        >>> kp, floats = params(TrainConfig(hs=True, negative=0, sg=False, dim=100))
        >>> kp.negative, kp.sg, kp.cbow_mean, floats
        (0, False, True, 200)
    """
    return KernelParams.of(config), 2 * config.dim
