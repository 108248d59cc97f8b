"""A model of the sharded mode's staleness that runs in one process, deterministically.

A sharded run with split calls (``shard_calls="split"``, every model larger than one shard) has many minibatches
in flight: each client thread sends one call per minibatch that adjusts its previous minibatch and computes the
dot products of its next one (:class:`parvec.distributed.units.UnitRunner`), so a minibatch's dot products (and
with them its coefficients) are read while the other threads' minibatches are still between their dot products
and their adjusts.  :func:`stale_train` reproduces that with ``threads`` *lanes*: the epoch's units dealt to the
lanes in turn (unit ``u`` to lane ``u % threads``, as the driver hands them out to client threads of equal speed),
and the lanes' calls taken round-robin, one call each per tick.  Lane ``t``'s dot products therefore miss the
adjusts of the other ``threads - 1`` lanes' minibatches and of its own minibatch's inputs: ``threads x
minibatch_words`` input words in flight, as a real run with ``clients x threads_per_client = threads`` has.

Everything else is the real run's: the minibatches (:meth:`UnitRunner.minibatches`: subsampling, window shrinks,
interleaved lanes, seeds, learning rates), the shard kernels (:class:`parvec.distributed.shard_kernels.LocalStep`,
whole matrices: the rounding of ``S`` partial sums aside, what ``S`` shards compute) and the client's coefficients
(:func:`parvec.kernels.sharded.coefficients`).  With ``threads=1`` it is
:func:`parvec.distributed.shard_kernels.reference_train` to the bit, which is what a real run with one client
thread computes.

Example:
    >>> run = stale_train(TrainConfig(dim=16), tables, [(tokens, offsets)], minibatch_words=512,
    ...                   threads=16)  # doctest: +SKIP
    >>> run.loss_per_epoch, run.diverged  # doctest: +SKIP
    ([2.61], False)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from parvec.chunks import Part
from parvec.config import TrainConfig
from parvec.distributed.shard_kernels import LocalStep
from parvec.distributed.sharded_settings import UPDATE_CAP
from parvec.distributed.units import (
    DEFAULT_UNIT_WORDS,
    SamplingTables,
    Unit,
    UnitRunner,
    plan_units,
    prepare_part,
)
from parvec.distributed.wire import Minibatch
from parvec.errors import ParvecError
from parvec.kernels import sharded as K
from parvec.model_tables import init_input_vectors
from parvec.sampling import chunk_seed
from parvec.schedule import Schedule

__all__ = ["StaleRun", "stale_train"]


@dataclass
class StaleRun:
    """What :func:`stale_train` trained: the matrices, the loss of each epoch (per pair, as the real run
    reports it), and whether (and where) the loss stopped being finite.

    Example:
        >>> StaleRun(np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32)).diverged
        False
    """

    w_in: np.ndarray
    w_out: np.ndarray
    loss_per_epoch: list[float] = field(default_factory=list)
    words: int = 0
    pairs: int = 0
    minibatches: int = 0
    seconds: float = 0.0
    diverged_at: tuple[int, int] | None = None  # (epoch, minibatch of the epoch) whose loss was not finite

    @property
    def diverged(self) -> bool:
        """Whether the loss (or the vectors) stopped being finite."""
        return self.diverged_at is not None or not (np.isfinite(self.w_in).all() and np.isfinite(self.w_out).all())


class _Lane:
    """One client thread: its units' minibatches in order, and the minibatch whose adjust it has yet to send."""

    def __init__(self, runner: UnitRunner, batches: Iterator[Minibatch]) -> None:
        self.runner = runner
        self.batches = batches
        self.nxt: Minibatch | None = next(batches, None)
        self.pending: tuple[Minibatch, np.ndarray] | None = None

    @property
    def done(self) -> bool:
        return self.nxt is None and self.pending is None


def _lane_batches(runner: UnitRunner, prepared: Sequence[Part], units: Sequence[Unit], epoch: int,
                  schedule: Schedule, seed: int) -> Iterator[Minibatch]:
    # a client thread's minibatches over its units, each unit's stream and learning rates as UnitRunner.run's
    for unit in units:
        tokens, offsets = prepared[unit.part]
        a0, a1 = schedule.span(epoch, unit.base, unit.words)
        yield from runner.minibatches(tokens, offsets, unit.s_lo, unit.s_hi, int(chunk_seed(seed, epoch, unit.index)),
                                      a0, a1, unit.words)


def stale_train(
    config: TrainConfig,
    tables: SamplingTables,
    parts: Sequence[Part],
    minibatch_words: int,
    threads: int = 1,
    unit_words: int = DEFAULT_UNIT_WORDS,
    interleave: bool = True,
    negatives_per: str = "window",
    epochs: int | None = None,
    w_in: np.ndarray | None = None,
    w_out: np.ndarray | None = None,
    trace: Callable[[int, Minibatch, np.ndarray, float], None] | None = None,
    update_cap: int = UPDATE_CAP,
    shards: int = 1,
) -> StaleRun:
    """Train as a sharded run with split calls and ``threads`` client threads computes, in this process: each
    minibatch's dot products read the vectors without the adjusts of the other ``threads - 1`` threads' minibatches
    in flight (the module's docstring).  ``parts`` are ``(tokens, offsets)``; ``tables`` what the run samples with
    (:meth:`SamplingTables.of_classes` as ``parvec train --mode sharded``).  Stops at the first minibatch whose
    loss is not finite (``diverged_at``).  ``trace(epoch, minibatch, coef, loss)``, when given, sees each minibatch
    between its dot products and its adjust.  ``update_cap``: the number of a minibatch's updates above which the
shards combine a row's updates (:func:`parvec.kernels.sharded_combine.adjust_window_rows_combined`; the sharded
default; 0: every row batch by batch); ``shards``: the shards whose columns each take their own combined step.

    Example:
        >>> run = stale_train(TrainConfig(dim=16), SamplingTables.per_word(counts, TrainConfig()),
        ...                   [(tokens, offsets)], minibatch_words=256, threads=4)  # doctest: +SKIP
    """
    if threads < 1:
        raise ParvecError(f"threads must be a positive integer, got {threads}")
    config = config.validate()
    n = tables.n_words
    w_in = init_input_vectors(n, config.dim, config.seed) if w_in is None else w_in
    w_out = np.zeros((n, config.dim), dtype=np.float32) if w_out is None else w_out
    prepared = [prepare_part(t, o, config.max_sentence_length) for t, o in parts]
    units = plan_units([o for _, o in prepared], unit_words)
    epochs = config.epochs if epochs is None else epochs
    schedule = Schedule.of(config, sum(u.words for u in units), epochs)
    step = LocalStep(w_in, w_out, config, tables.noise_prob, tables.noise_alias, negatives_per,
                     update_cap=update_cap, shards=shards, lanes=threads)
    runners = [UnitRunner(config, tables.keep, minibatch_words, interleave) for _ in range(threads)]
    run = StaleRun(w_in, w_out)
    t0 = time.perf_counter()
    for epoch in range(epochs):
        lanes = [_Lane(r, _lane_batches(r, prepared, units[t::threads], epoch, schedule, config.seed))
                 for t, r in enumerate(runners)]
        loss, pairs, index = 0.0, 0, 0
        while run.diverged_at is None and not all(lane.done for lane in lanes):
            for lane in lanes:  # one call per client thread per tick
                if lane.done:
                    continue
                partials = step.result(step.submit(lane.pending, lane.nxt))
                lane.pending = None
                if lane.nxt is None:
                    continue
                mb = lane.nxt
                coef = np.empty(mb.pairs * (1 + config.negative), dtype=np.float32)
                mb_loss = float(K.coefficients(partials[0], mb.n_ctx, mb.alpha, config.negative, coef))
                if not np.isfinite(mb_loss):
                    run.diverged_at = (epoch, index)
                    break
                if trace is not None:
                    trace(epoch, mb, coef, mb_loss)
                loss += mb_loss
                pairs += mb.pairs
                index += 1
                lane.pending = (mb, coef)
                lane.nxt = next(lane.batches, None)
        run.words += sum(u.words for u in units)
        run.pairs += pairs
        run.minibatches += index
        run.loss_per_epoch.append(loss / pairs if pairs and run.diverged_at is None else float("nan"))
        if run.diverged_at is not None:
            break
    run.seconds = time.perf_counter() - t0
    return run
