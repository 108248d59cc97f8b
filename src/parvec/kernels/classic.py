"""word2vec.c's skip-gram with negative sampling, Hogwild (Mikolov et al.; Ji et al. Algorithm 1).

For each center word of a subsampled sentence, the window shrinks by a random ``b`` in [0, window);
each context word's *input* vector is trained against the center's *output* vector (label 1) and
``negative`` noise words' output vectors (label 0).  A noise word equal to the center is skipped.
Output rows are updated right away; the context row's update is accumulated and added at the end of
its negatives, exactly as word2vec.c.  Dot products beyond +-6 saturate the sigmoid (word2vec.c's
MAX_EXP); inside, the sigmoid is computed exactly rather than from a 1000-entry table.

This is the quality reference; :mod:`parvec.kernels.hogbatch` and :mod:`parvec.kernels.par` are the
fast ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from parvec.kernels.fastmath import FASTMATH
from parvec.kernels.params import KernelParams
from parvec.sampling import draw_noise, rng_next, shrunk_window, subsample_sentence, word_rate

if TYPE_CHECKING:
    from parvec.config import TrainConfig

MAX_EXP = 6.0


@njit(inline="always")
def sgns_step(f: np.float32, label: np.float32) -> tuple[np.float32, np.float32]:
    """(gradient factor ``label - sigmoid(f)``, pair loss ``-log p``) of one dot product ``f``.

    The gradient saturates beyond +-MAX_EXP as word2vec.c's; the loss uses the exact sigmoid.
    """
    fc = min(max(f, np.float32(-20.0)), np.float32(20.0))
    e = np.exp(-fc)
    sig = np.float32(1.0) / (np.float32(1.0) + e)
    if f > MAX_EXP:
        sig = np.float32(1.0)
    elif f < -MAX_EXP:
        sig = np.float32(0.0)
    # -log(sigmoid(f)) = log(1 + e^-f);  -log(1 - sigmoid(f)) = f + log(1 + e^-f)
    loss = np.log(np.float32(1.0) + e) + (np.float32(1.0) - label) * fc
    return label - sig, loss


@njit(inline="always")
def _train_pair(w_in, w_out, ctx, target, label, alpha, neu1e):
    """One (input row ``ctx``, output row ``target``) update; returns the pair's loss."""
    dim = w_in.shape[1]
    f = np.float32(0.0)
    for d in range(dim):
        f += w_in[ctx, d] * w_out[target, d]
    err, loss = sgns_step(f, label)
    g = err * alpha
    for d in range(dim):
        neu1e[d] += g * w_out[target, d]
        w_out[target, d] += g * w_in[ctx, d]
    return loss


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def classic_update(w_in, w_out, ctx, targets, labels, alpha, neu1e):
    """One context word against a fixed list of targets (center first, then negatives).

    Exposed for tests: it is the exact update the training kernel performs for one context word.

    Example:
        >>> classic_update(w_in, w_out, 3, np.array([7, 1, 9]), np.array([1, 0, 0], np.float32),
        ...                np.float32(0.025), np.zeros(w_in.shape[1], np.float32))  # doctest: +SKIP
    """
    neu1e[:] = 0.0
    loss = 0.0
    for k in range(len(targets)):
        loss += _train_pair(w_in, w_out, ctx, targets[k], labels[k], alpha, neu1e)
    for d in range(w_in.shape[1]):
        w_in[ctx, d] += neu1e[d]
    return loss


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def train_chunk(w_in, w_out, tokens, offsets, s_lo, s_hi, keep, noise_prob, noise_alias,
                params, rates, seed, sent_buf, work):
    """Train sentences ``s_lo..s_hi`` (see docs/architecture.md for the contract; reads ``params.window`` and
    ``params.negative``)."""
    window = params.window
    negative = params.negative
    alpha0 = rates.alpha0
    alpha1 = rates.alpha1
    dim = w_in.shape[1]
    neu1e = work[:dim]
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
            for j in range(lo, hi):
                if j == i:
                    continue
                ctx = sent_buf[j]
                for d in range(dim):
                    neu1e[d] = 0.0
                loss += _train_pair(w_in, w_out, ctx, center, one, alpha, neu1e)
                for _ in range(negative):
                    state = rng_next(state)
                    target = draw_noise(state, noise_prob, noise_alias)
                    if target == center:
                        continue
                    loss += _train_pair(w_in, w_out, ctx, target, zero, alpha, neu1e)
                for d in range(dim):
                    w_in[ctx, d] += neu1e[d]
                pairs += 1
        done += raw_len
    return done, pairs, loss


def params(config: TrainConfig) -> tuple[KernelParams, int]:
    """(the kernel's parameters, its work size in floats) for :func:`train_chunk`.

    Example:
        >>> from parvec.config import TrainConfig
        >>> params(TrainConfig(window=8, negative=5, dim=100))[0][:2], params(TrainConfig(dim=100))[1]
        ((8, 5), 100)
    """
    return KernelParams.of(config), config.dim
