"""The shard side of the sharded algorithm, and the whole algorithm in one process (the reference).

- :class:`ShardKernels`: a shard's kernels over its columns for one ``negatives_per`` choice ("window": the
  negatives shared by an input word's context words; "pair": the paper's, per (input, positive) pair): drawing a
  minibatch's rows, their partial dot products, the adjust with the client's coefficients, and (fused calls) the
  whole minibatch trained in the shard.
- :class:`LocalStep`: those kernels on the whole matrices in this process, a :class:`~parvec.distributed.units.Step`
  that answers right away (the reference and the tests).
- :func:`reference_train`: the same units and minibatches as ``S`` shards with one client thread compute, up to
  the rounding of summing ``S`` partial dot products.

Example:
    >>> ShardKernels("window").dotprod.__name__
    'dotprod_window'
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from parvec.chunks import Part
from parvec.config import TrainConfig
from parvec.distributed.sharded_settings import NEGATIVES_PER, UPDATE_CAP, check_wire
from parvec.distributed.units import (
    DEFAULT_MINIBATCH_WORDS,
    DEFAULT_UNIT_WORDS,
    SamplingTables,
    Step,
    UnitRunner,
    UnitStats,
    plan_units,
    prepare_part,
)
from parvec.distributed.wire import Minibatch, call_bytes, from_wire, to_half, to_wire, train_call_bytes
from parvec.engine import TrainStats
from parvec.errors import ParvecError
from parvec.kernels import sharded as K
from parvec.kernels.sharded_combine import (
    STEP_SCALE,
    adjust_window_rows_combined,
    combined_step,
    combined_threshold,
)
from parvec.model_tables import init_half_width, init_input_vectors
from parvec.schedule import Schedule

__all__ = ["LocalStep", "ShardKernels", "reference_train", "shard_kernels"]


class ShardKernels:
    """The shard side of one ``negatives_per`` algorithm: "window" (parvec's default: the negatives shared by an
    input word's context words, :func:`parvec.kernels.sharded.window_rows`) or "pair" (the paper's, per (input,
    positive) pair).  ``rows`` draws a minibatch's rows, ``dotprod_rows``/``adjust_rows`` use them (a shard keeps
    them from a minibatch's dot products to its adjust); ``dotprod``/``adjust`` draw them for themselves.

    Example:
        >>> ShardKernels("window").dotprod.__name__
        'dotprod_window'
    """

    def __init__(self, negatives_per: str, window: int = 5, negative: int = 5, update_cap: int = 0,
                 step_scale: float = STEP_SCALE, column_groups: int = 1) -> None:
        if negatives_per not in NEGATIVES_PER:
            raise ParvecError(f"negatives_per must be one of {', '.join(NEGATIVES_PER)}; got {negatives_per!r}")
        if not isinstance(update_cap, int) or update_cap < 0:
            raise ParvecError(f"update_cap must be a non-negative integer, got {update_cap!r}")
        self.by_window = negatives_per == "window"
        self.window, self.negative = window, negative
        # window batches only: the rows with more than update_cap of a minibatch's updates combined and stepped by
        # a line search (0: every row batch by batch, as the paper's adjust); step_scale: its multiple of the
        # line search's step; column_groups: the shards whose columns each take their own step (a shard: 1)
        self.update_cap = update_cap if self.by_window else 0
        self.step_scale = float(step_scale)
        self.column_groups = column_groups
        self._bounds = np.zeros(0, dtype=np.int64)
        self.dotprod, self.adjust = (K.dotprod_window, K.adjust_window) if self.by_window else (K.dotprod, K.adjust)
        if self.update_cap:
            self.adjust = self._adjust_window_capped

    def _adjust_window_capped(self, w_in: np.ndarray, w_out: np.ndarray, seq: np.ndarray, seg: np.ndarray,
                              shrink: np.ndarray, window: int, negative: int, noise_prob: np.ndarray,
                              noise_alias: np.ndarray, seed: np.uint64, coef: np.ndarray) -> None:
        # K.adjust_window's signature, the rows drawn again, the capped update
        kept = self.rows(seq, seg, shrink, len(coef) // (1 + negative), seed, noise_prob, noise_alias)
        self._combined(w_in, w_out, kept, coef)

    def _combined(self, w_in: np.ndarray, w_out: np.ndarray, kept: tuple[np.ndarray, ...], coef: np.ndarray) -> None:
        # the adjust of split calls: frequent rows combined (parvec.kernels.sharded_combine)
        dim = w_in.shape[1]
        if len(self._bounds) == 0 or self._bounds[-1] != dim:
            g = self.column_groups
            self._bounds = np.array([K.column_range(q, g, dim)[0] for q in range(g)] + [dim], dtype=np.int64)
        adjust_window_rows_combined(w_in, w_out, *kept, coef, self.update_cap, self.step_scale, self._bounds)

    def rows(self, seq: np.ndarray, seg: np.ndarray, shrink: np.ndarray, pairs: int, seed: np.uint64,
             noise_prob: np.ndarray, noise_alias: np.ndarray) -> tuple[np.ndarray, ...]:
        """The rows of a minibatch of ``pairs`` pairs, in the kernels' order (window: each pair's context word,
        each input's center and negatives, each input's first pair; pair: each pair's input word, its positive
        and negatives)."""
        stride = 1 + self.negative
        kept: tuple[np.ndarray, ...]
        if self.by_window:
            n_in = len(shrink)
            kept = (np.empty(pairs, np.int64), np.empty(n_in * stride, np.int64), np.empty(n_in + 1, np.int64))
            K.window_rows(seq, seg, shrink, self.window, self.negative, noise_prob, noise_alias, seed, *kept)
        else:
            kept = (np.empty(pairs, np.int64), np.empty(pairs * stride, np.int64))
            K.pair_rows(seq, seg, shrink, self.window, self.negative, noise_prob, noise_alias, seed, *kept)
        return kept

    def dotprod_rows(self, w_in: np.ndarray, w_out: np.ndarray, kept: tuple[np.ndarray, ...], out: np.ndarray) -> None:
        """The partial dot products of the minibatch whose rows :meth:`rows` drew."""
        if self.by_window:
            K.dotprod_window_rows(w_in, w_out, *kept, out)
        else:
            K.dotprod_rows(w_in, w_out, *kept, len(kept[0]), out)

    def adjust_rows(self, w_in: np.ndarray, w_out: np.ndarray, kept: tuple[np.ndarray, ...], seg: np.ndarray,
                    shrink: np.ndarray, coef: np.ndarray) -> None:
        """The minibatch's updates (``coef``) given the rows :meth:`rows` drew."""
        if self.update_cap:
            self._combined(w_in, w_out, kept, coef)
        elif self.by_window:
            K.adjust_window_rows(w_in, w_out, *kept, coef)
        else:
            K.adjust_rows(w_in, w_out, seg, shrink, self.window, *kept, len(kept[0]), coef)

    def train_rows(self, w_in: np.ndarray, w_out: np.ndarray, kept: tuple[np.ndarray, ...], seg: np.ndarray,
                   shrink: np.ndarray, alpha: np.ndarray, n_ctx: np.ndarray) -> float:
        """Train the minibatch whose rows :meth:`rows` drew whole (one shard holds every column): window batches
        as hogbatch trains them (:func:`parvec.kernels.sharded.train_window_rows`); per pair, the dot products,
        the coefficients and the paper's adjust from the call's start.  Returns its SGNS loss."""
        if self.by_window:
            return float(K.train_window_rows(w_in, w_out, *kept, alpha))
        f = np.empty(len(kept[1]), dtype=np.float32)
        K.dotprod_rows(w_in, w_out, *kept, len(kept[0]), f)
        loss = K.coefficients(f, n_ctx, alpha, self.negative, f)
        K.adjust_rows(w_in, w_out, seg, shrink, self.window, *kept, len(kept[0]), f)
        return float(loss)


def shard_kernels(negatives_per: str, window: int = 5, negative: int = 5, update_cap: int = 0,
                  step_scale: float = STEP_SCALE, column_groups: int = 1) -> ShardKernels:
    """:class:`ShardKernels` of ``negatives_per`` (a ParvecError naming the choices otherwise).

    Example:
        >>> shard_kernels("pair").adjust.__name__
        'adjust'
    """
    return ShardKernels(negatives_per, window, negative, update_cap, step_scale, column_groups)


class LocalStep(Step):
    """The one-process step: the kernels on whole matrices, right away (the reference and tests).

    Example:
        >>> step = LocalStep(w_in, w_out, config, prob, alias)  # doctest: +SKIP
    """

    def __init__(self, w_in: np.ndarray, w_out: np.ndarray, config: TrainConfig, noise_prob: np.ndarray,
                 noise_alias: np.ndarray, negatives_per: str = "window", wire: str = "float32",
                 fused: bool = False, update_cap: int = UPDATE_CAP, shards: int = 1, lanes: int = 1) -> None:
        self.w_in, self.w_out = w_in, w_out
        self.window, self.negative = config.window, config.negative
        self.noise_prob, self.noise_alias = noise_prob, noise_alias
        # what `shards` shards compute on their columns with `lanes` minibatches in flight
        self.kernels = shard_kernels(negatives_per, config.window, config.negative,
                                     combined_threshold(update_cap, lanes), combined_step(lanes, shards), shards)
        self.wire = check_wire(wire)
        self.fused = fused

    def train(self, mb: Minibatch) -> Any:
        self.sent = train_call_bytes(mb)  # what the shard would receive
        kept = self.kernels.rows(mb.seq, mb.seg, mb.shrink, mb.pairs, mb.seed, self.noise_prob, self.noise_alias)
        loss = self.kernels.train_rows(self.w_in, self.w_out, kept, mb.seg, mb.shrink, mb.alpha, mb.n_ctx)
        return [np.array([loss], dtype=np.float64)]

    def submit(self, prev: tuple[Minibatch, np.ndarray] | None, nxt: Minibatch | None) -> Any:
        out = []
        self.sent = call_bytes(prev, nxt, self.wire)  # what a shard would receive
        if prev is not None:
            mb, coef = prev
            if self.wire != "float32":  # what a shard would apply
                coef = from_wire(*to_wire(coef, mb.alpha, self.wire))
            self.kernels.adjust(self.w_in, self.w_out, mb.seq, mb.seg, mb.shrink, self.window, self.negative,
                        self.noise_prob, self.noise_alias, mb.seed, coef)
        if nxt is not None:
            f = np.empty(nxt.pairs * (1 + self.negative), dtype=np.float32)
            self.kernels.dotprod(self.w_in, self.w_out, nxt.seq, nxt.seg, nxt.shrink, self.window, self.negative,
                         self.noise_prob, self.noise_alias, nxt.seed, f)
            out.append(to_half(f) if self.wire == "float16" else f)
        return out

    def result(self, handle: Any) -> list[np.ndarray]:
        answers: list[np.ndarray] = handle  # what submit returned: the answers themselves
        return answers


# --------------------------------------------------------------------------- the one-process reference
def reference_train(
    config: TrainConfig,
    counts: np.ndarray,
    parts: Sequence[Part],
    minibatch_words: int = DEFAULT_MINIBATCH_WORDS,
    unit_words: int = DEFAULT_UNIT_WORDS,
    w_in: np.ndarray | None = None,
    w_out: np.ndarray | None = None,
    epochs: int | None = None,
    interleave: bool = True,
    negatives_per: str = "window",
    wire: str = "float32",
    fused: bool = False,
    tables: SamplingTables | None = None,
    update_cap: int = UPDATE_CAP,
    shards: int = 1,
) -> tuple[np.ndarray, np.ndarray, TrainStats]:
    """The sharded minibatch algorithm in this process, one client thread, whole matrices (``negatives_per``:
    :func:`shard_kernels`; ``wire``: the floats rounded as :func:`to_wire` sends them; ``fused``: each minibatch
    trained whole in one call, as one shard with ``shard_calls="fused"`` trains it; ``update_cap``: the shards' cap on
    a row's updates from one minibatch, :data:`~parvec.distributed.sharded_settings.UPDATE_CAP` as a sharded run's
    default; ``shards``: the shards whose columns each take their own combined step; ``tables``: the sampling tables,
    default per word from ``counts``, :meth:`SamplingTables.of_classes` as ``parvec train --mode sharded`` draws).

    ``parts`` are ``(tokens, offsets)``; returns ``(w_in, w_out, stats)`` (trained in place when given).

    Example:
        >>> w_in, w_out, stats = reference_train(TrainConfig(dim=16), corpus.vocab.counts,
        ...                                      [(corpus.tokens, corpus.offsets)])  # doctest: +SKIP
    """
    config = config.validate()
    tables = tables if tables is not None else SamplingTables.per_word(counts, config)
    n = tables.n_words
    w_in = (init_input_vectors(n, config.dim, config.seed, half_width=init_half_width(config))
            if w_in is None else w_in)
    w_out = np.zeros((n, config.dim), dtype=np.float32) if w_out is None else w_out
    prob, alias = tables.noise_prob, tables.noise_alias
    prepared = [prepare_part(t, o, config.max_sentence_length) for t, o in parts]
    units = plan_units([o for _, o in prepared], unit_words)
    words_per_epoch = sum(u.words for u in units)
    epochs = config.epochs if epochs is None else epochs
    schedule = Schedule.of(config, words_per_epoch, epochs)
    runner = UnitRunner(config, tables.keep, minibatch_words, interleave)
    step = LocalStep(w_in, w_out, config, prob, alias, negatives_per, wire, fused, update_cap, shards)
    stats = TrainStats()
    t0 = time.perf_counter()
    for epoch in range(epochs):
        total = UnitStats(acks=[0])
        for unit in units:
            tokens, offsets = prepared[unit.part]
            total.add(runner.run(tokens, offsets, unit, epoch, schedule, step))
        stats.words += total.words
        stats.pairs += total.pairs
        stats.words_per_epoch.append(total.words)
        stats.pairs_per_epoch.append(total.pairs)
        stats.loss_per_epoch.append(total.loss / total.pairs if total.pairs else float("nan"))
    stats.epochs = epochs
    stats.seconds = time.perf_counter() - t0
    return w_in, w_out, stats
