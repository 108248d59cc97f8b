"""word2vec.c's CBOW with negative sampling (``-cbow 1``), Hogwild: the reference CBOW kernel.

For each center word of a subsampled sentence the window shrinks by a random ``b`` in [0, window), as
for skip-gram; the ``cw`` context words' *input* vectors are combined into one hidden vector ``h``,
which is trained against the center's *output* vector (label 1) and ``negative`` noise words' output
vectors (label 0; a noise word equal to the center is skipped).  Output rows are updated right away
(``w_out[t] += g h``); the error ``e = sum_t g_t w_out[t]`` (each term read before its row's update)
goes back to every context row.  How ``h`` and ``e`` relate, in gensim's two modes (word2vec.c has
only the first):

- ``cbow_mean=True`` (word2vec.c, gensim's default): ``h`` is the mean of the context rows and each
  context row gets the whole ``e`` (not ``e / cw``, which the mean's exact gradient would be).
- ``cbow_mean=False``: ``h`` is the sum of the context rows and each context row gets ``e / cw``
  (gensim's ``fast_sentence_cbow_neg``: "divide error over summed window vectors").

A center with no context word left (a one-word sentence after subsampling) trains nothing and draws no
negatives, as in word2vec.c.  Dot products beyond +-6 saturate the gradient (word2vec.c's MAX_EXP);
inside, the sigmoid is exact (:func:`parvec.kernels.classic.sgns_step`).  ``pairs`` counts the centers
trained (one positive example each), so the loss per pair is the loss per prediction.

The random stream follows :mod:`parvec.kernels.classic`: per center the window shrink, then its
negatives, from the chunk's xorshift state; negatives come from the shared alias table.
:mod:`parvec.kernels.cbow_batch` is the fast CBOW kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from parvec.kernels.classic import sgns_step
from parvec.kernels.fastmath import FASTMATH
from parvec.kernels.params import KernelParams
from parvec.sampling import draw_noise, rng_next, shrunk_window, subsample_sentence, word_rate

if TYPE_CHECKING:
    from parvec.config import TrainConfig


@njit(inline="always")
def _cbow_step(w_in, w_out, ctx, lo, hi, skip, targets, n_targets, labels, alpha, mean, neu1, neu1e):
    """Rows ``ctx[lo:hi]`` (all but index ``skip``) against output rows ``targets[:n_targets]``.

    Returns the loss; does nothing (and returns 0) without a context row.
    """
    dim = w_in.shape[1]
    cw = 0
    for d in range(dim):
        neu1[d] = 0.0
        neu1e[d] = 0.0
    for j in range(lo, hi):
        if j == skip:
            continue
        r = ctx[j]
        for d in range(dim):
            neu1[d] += w_in[r, d]
        cw += 1
    if cw == 0:
        return 0.0
    inv = np.float32(1.0) / np.float32(cw)
    if mean:
        for d in range(dim):
            neu1[d] *= inv
    loss = 0.0
    for k in range(n_targets):
        t = targets[k]
        f = np.float32(0.0)
        for d in range(dim):
            f += neu1[d] * w_out[t, d]
        err, pair_loss = sgns_step(f, labels[k])
        loss += pair_loss
        g = err * alpha
        for d in range(dim):
            neu1e[d] += g * w_out[t, d]
            w_out[t, d] += g * neu1[d]
    if not mean:  # gensim: the summed window's error is divided over its cw rows
        for d in range(dim):
            neu1e[d] *= inv
    for j in range(lo, hi):
        if j == skip:
            continue
        r = ctx[j]
        for d in range(dim):
            w_in[r, d] += neu1e[d]
    return loss


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def cbow_update(w_in: np.ndarray, w_out: np.ndarray, ctx: np.ndarray, targets: np.ndarray,
                labels: np.ndarray, alpha: np.float32, cbow_mean: bool, work: np.ndarray) -> float:
    """One CBOW update: context rows ``ctx`` against ``targets`` (center first, then negatives).

    Exposed for tests: it is the exact update :func:`train_chunk` performs for one center.  ``work``
    needs ``2 * dim`` floats.  Returns the loss.

    Example:
        >>> cbow_update(w_in, w_out, np.array([3, 5, 8]), np.array([7, 1, 9]),
        ...             np.array([1, 0, 0], np.float32), np.float32(0.05), True,
        ...             np.zeros(2 * w_in.shape[1], np.float32))  # doctest: +SKIP
    """
    dim = w_in.shape[1]
    return _cbow_step(w_in, w_out, ctx, 0, len(ctx), -1, targets, len(targets), labels, alpha, cbow_mean,
                      work[:dim], work[dim:2 * dim])


@njit(nogil=True, fastmath=FASTMATH, cache=True, error_model="numpy")
def train_chunk(w_in, w_out, tokens, offsets, s_lo, s_hi, keep, noise_prob, noise_alias,
                params, rates, seed, sent_buf, work):
    """Train sentences ``s_lo..s_hi`` (see docs/architecture.md for the contract).

    Reads ``params.window``, ``params.negative`` and ``params.cbow_mean``.
    """
    window = params.window
    negative = params.negative
    mean = params.cbow_mean
    alpha0 = rates.alpha0
    alpha1 = rates.alpha1
    dim = w_in.shape[1]
    neu1 = work[:dim]
    neu1e = work[dim:2 * dim]
    targets = np.empty(negative + 1, dtype=np.int64)
    labels = np.zeros(negative + 1, dtype=np.float32)
    labels[0] = 1.0
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
        for i in range(n):
            alpha = word_rate(alpha0, alpha1, done, i, raw_len, n, chunk_words)
            state, lo, hi = shrunk_window(state, i, n, window)
            center = sent_buf[i]
            if hi - lo < 2:  # no context word: word2vec.c trains nothing (cw == 0)
                continue
            targets[0] = center
            n_t = 1
            for _ in range(negative):
                state = rng_next(state)
                t = draw_noise(state, noise_prob, noise_alias)
                if t != center:
                    targets[n_t] = t
                    n_t += 1
            loss += _cbow_step(w_in, w_out, sent_buf, lo, hi, i, targets, n_t, labels, alpha, mean, neu1, neu1e)
            pairs += 1
        done += raw_len
    return done, pairs, loss


def params(config: TrainConfig) -> tuple[KernelParams, int]:
    """(the kernel's parameters, its work size in floats) for :func:`train_chunk`.

    Example:
        >>> from parvec.config import TrainConfig
        >>> kp, _ = params(TrainConfig(sg=False, window=5, negative=5))
        >>> kp.window, kp.negative, kp.cbow_mean
        (5, 5, True)
    """
    return KernelParams.of(config), 2 * config.dim
