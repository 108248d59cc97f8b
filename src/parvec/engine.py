"""The run engine: the one epoch loop that every training mode drives.

A training run is the same whatever trains it: epochs ``start_epoch .. epochs-1`` (the first one possibly
resumed from a mid-epoch checkpoint), each trained by a *driver*, then checked (a loss or vectors that are no
longer finite stop the run), counted (:class:`TrainStats`), reported (the progress bar, the report's time
series) and handed to the epoch-end callbacks (the model's bookkeeping, its epoch-end checkpoint, the user's
callbacks); between chunks, mid-epoch checkpoints when they are due; at the end, a run that trained no pair
is refused.  :class:`RunEngine` owns all of that, once.  A :class:`Driver` only trains *this epoch's units*:

- :class:`parvec.trainer.CpuDriver`: this machine's threads over chunks of sentences (every CPU kernel);
- :class:`parvec.gpu.driver.GpuDriver`: kernel launches on a CUDA GPU;
- :class:`parvec.distributed.replicas.ReplicaDriver`: data-parallel replicas on a Ray cluster;
- :class:`parvec.distributed.sharded.ShardedDriver`: column-sharded parameter servers on a Ray cluster.

What each mode can do (hierarchical softmax, CBOW, mid-epoch checkpoints, ...) is one table,
:mod:`parvec.capabilities`, which words every refusal.  The learning rate is :class:`parvec.schedule.Schedule`.

A driver sees its epoch through an :class:`EpochContext`: the rate at a point of the epoch
(``alpha_at(words_before)``), where to report its running counters (``progress``), whether a checkpoint is
due at this unit boundary (``checkpoint_due``) and where to hand a consistent state (``checkpoint``: every
unit handed out trained, the vectors in the host arrays), and, for a resumed first epoch, what was done
before (``resume``: the units to skip and the counters to continue from).

Example:
    >>> from parvec.config import TrainConfig
    >>> from parvec.schedule import Schedule
    >>> class Once(DriverBase):  # a driver that trains nothing but says it trained 10 words and 4 pairs
    ...     mode, label = "cpu", "demo"
    ...     def prepare(self, start_epoch, epochs): pass
    ...     def train_epoch(self, ctx): return EpochResult(words=10, pairs=4, loss=2.0)
    ...     def vectors_finite(self): return True
    ...     def finish(self): pass
    >>> cfg = TrainConfig(epochs=2, progress=False)
    >>> stats = RunEngine(Once(), cfg, Schedule.of(cfg, 10)).run()
    >>> stats.words, stats.loss_per_epoch
    (20, [0.5, 0.5])
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from parvec.config import TrainConfig
from parvec.errors import ParvecError
from parvec.interrupts import raise_if_stop_requested
from parvec.runlog import Totals
from parvec.schedule import Schedule
from parvec.usage import cpu_by_role, cpu_seconds, cpu_snapshot

__all__ = ["CorpusDriver", "Diverged", "Driver", "DriverBase", "DriverReport", "EpochContext", "EpochResult", "NoPairs",
           "PartsDriver", "Position", "Resume", "RunEngine", "SelfRunning", "TrainStats", "parse_interval"]


# ---------------------------------------------------------------------------------------------- what a run did
@dataclass
class TrainStats:
    """What a training run did.  ``words`` counts raw (pre-subsampling) in-vocabulary words, as
    word2vec.c does; ``pairs`` the positive (context, center) pairs trained; ``loss_per_epoch`` is the
    epoch's summed SGNS loss over its ``pairs_per_epoch``: the mean loss per positive pair, its
    negatives' terms included, each term taken just before the update it drives (docs/training.md).

    Example:
        >>> TrainStats(words=10, seconds=2.0).words_per_sec
        5.0
    """

    words: int = 0
    pairs: int = 0
    seconds: float = 0.0
    epochs: int = 0
    loss_per_epoch: list[float] = field(default_factory=list)
    words_per_epoch: list[int] = field(default_factory=list)
    pairs_per_epoch: list[int] = field(default_factory=list)
    # CPU seconds (user + system) the training took in this process and every process it started on this
    # machine (a local Ray's processes and actors: parvec.usage), and how many processes that was
    cpu_seconds: float = 0.0
    cpu_processes: int = 0
    cpu_by_process: dict[str, float] = field(default_factory=dict)  # the same by kind of process (parvec.usage)

    @property
    def words_per_sec(self) -> float:
        return self.words / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, object]:
        """The figures as a JSON object."""
        return {
            "words": self.words,
            "pairs": self.pairs,
            "seconds": self.seconds,
            "epochs": self.epochs,
            "words_per_sec": self.words_per_sec,
            "loss_per_epoch": self.loss_per_epoch,
            "pairs_per_epoch": self.pairs_per_epoch,
            "cpu_seconds": self.cpu_seconds,
        }


@dataclass
class Position:
    """Where a run stands at a unit boundary: what a mid-epoch checkpoint saves and a resume restarts from.

    ``epoch`` is the epoch in progress (counted from 0, within the call); its first ``chunks_done`` units
    (chunks on the CPU, launches on a GPU) are trained, ``words_done`` raw tokens (the schedule position inside
    the epoch).  ``words``, ``pairs`` and ``losses`` are the counters of epochs ``0 .. epoch`` (the last one
    partial), so the resumed run reports whole-epoch losses.

    Example:
        >>> pos = Position(epoch=1, chunks_done=3, words_done=30000, words=[9, 3], pairs=[8, 2], losses=[1.0, 0.5])
        >>> Position.from_json(pos.to_json()) == pos
        True
    """

    epoch: int
    chunks_done: int
    words_done: int
    words: list[int] = field(default_factory=list)
    pairs: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    alpha: float = 0.0  # the learning rate at this point (informational)

    def to_json(self) -> dict[str, object]:
        """The position as ``model.json`` records it."""
        return {"epoch": self.epoch, "chunks_done": self.chunks_done, "words_done": self.words_done,
                "words": list(self.words), "pairs": list(self.pairs), "losses": list(self.losses),
                "alpha": self.alpha}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Position:
        """Inverse of :meth:`to_json`; KeyError/TypeError/ValueError on a missing, mistyped or inconsistent field."""
        pos = cls(epoch=int(d["epoch"]), chunks_done=int(d["chunks_done"]), words_done=int(d["words_done"]),
                  words=[int(x) for x in d["words"]], pairs=[int(x) for x in d["pairs"]],
                  losses=[float(x) for x in d["losses"]], alpha=float(d.get("alpha", 0.0)))
        if (pos.epoch < 0 or pos.chunks_done < 0 or pos.words_done < 0
                or not len(pos.words) == len(pos.pairs) == len(pos.losses) == pos.epoch + 1):
            raise ValueError("inconsistent position fields")
        return pos


def parse_interval(value: str | int | float) -> tuple[str, float]:
    """``checkpoint_every``: ``("seconds", s)`` for a duration (``30s``, ``10m``, ``2h``, ``1d``) or
    ``("words", n)`` for a word count (``2000000``, ``500k``, ``50M``, ``1G``).  Lower-case ``m`` is
    minutes, upper-case ``M`` millions of words.

    Example:
        >>> parse_interval("10m"), parse_interval("50M"), parse_interval(2000)
        (('seconds', 600.0), ('words', 50000000.0), ('words', 2000.0))
    """
    units = {"s": ("seconds", 1), "m": ("seconds", 60), "h": ("seconds", 3600), "d": ("seconds", 86400),
             "k": ("words", 10**3), "K": ("words", 10**3), "M": ("words", 10**6), "G": ("words", 10**9),
             "B": ("words", 10**9)}
    bad = ParvecError(f"checkpoint interval must be a duration (30s, 10m, 2h) or a word count (2000000, 500k, "
                      f"50M), got {value!r}")
    if isinstance(value, bool):
        raise bad
    if isinstance(value, int | float):
        kind, amount = "words", float(value)
    else:
        text = str(value).strip()
        kind, scale = units.get(text[-1:], ("words", 1)) if text else ("words", 1)
        number = text[:-1] if text[-1:] in units else text
        try:
            amount = float(number) * scale
        except ValueError:
            raise bad from None
    if not (math.isfinite(amount) and amount > 0):
        raise bad
    return kind, amount


# ---------------------------------------------------------------------------------------------- the contract
@dataclass
class EpochResult:
    """What a driver trained in one epoch: ``words`` raw words trained by this call; ``pairs`` and ``loss``
    the epoch's positive pairs and summed loss (for a resumed epoch, with those before the checkpoint, which
    :attr:`Resume.pairs`/:attr:`Resume.loss` gave it); ``longest`` the longest sentence it trained (for the
    no-pairs error).

    Example:
        >>> EpochResult(words=100, pairs=40, loss=90.0).pairs
        40
    """

    words: int
    pairs: int
    loss: float
    longest: int = 0


@dataclass(frozen=True)
class Resume:
    """The first epoch of a resumed call: its first ``units_done`` units (``words_done`` raw words, the
    schedule position) were trained before the checkpoint, with ``words`` raw words counted, ``pairs`` pairs
    and ``loss``: the driver skips those units and continues the counters (so a one-thread run sums its loss
    in the order an uninterrupted one does).

    Example:
        >>> Resume(units_done=3, words_done=30000, words=30000, pairs=12000, loss=28000.0).units_done
        3
    """

    units_done: int
    words_done: int
    words: int
    pairs: int
    loss: float


class Diverged(Exception):
    """Raised by a driver whose loss or vectors stopped being finite in ``epoch``; the engine turns it into the
    one divergence error (:meth:`RunEngine.diverged`).

    Example:
        >>> Diverged(0, "the loss became nan").what
        'the loss became nan'
    """

    def __init__(self, epoch: int, what: str) -> None:
        super().__init__(epoch, what)
        self.epoch = epoch
        self.what = what


class NoPairs(ParvecError):
    """A run that trained no (context, center) pair: its vectors would be their random initial values."""


class EpochContext(Protocol):
    """What a driver's :meth:`Driver.train_epoch` sees of the run (module docstring)."""

    epoch: int
    resume: Resume | None
    schedule: Schedule  # the run's (drivers whose workers compute rates themselves send it to them)

    def alpha_at(self, words_before: float) -> float:
        """The learning rate at the point ``words_before`` raw words into this epoch's units."""

    def progress(self, words: int, pairs: int, loss: float) -> None:
        """This epoch's running counters (as :class:`EpochResult` counts them), a few times a second."""

    checkpoint_every: tuple[str, float] | None  # the mid-epoch interval (parse_interval), None without

    def checkpoint_due(self, words_handed: int) -> bool:
        """At a unit boundary, with ``words_handed`` raw words handed out in this call's epoch so far."""

    def checkpoint(self, units_done: int, words_done: int, words: int, pairs: int, loss: float) -> None:
        """A consistent state (every unit handed out trained, the vectors in the host arrays)."""


class DriverReport(Protocol):
    """A driver's figures of its last run (:meth:`Driver.report`): a cluster's
    (:class:`parvec.distributed.replicas.ReplicasReport`, :class:`parvec.distributed.sharded_report.ShardedReport`)
    or a GPU's (:class:`parvec.gpu.driver.GpuReport`); :meth:`to_json` gives their ``--report`` keys."""

    def to_json(self) -> dict[str, Any]: ...


class Driver(Protocol):
    """What trains a run's units: ``prepare`` (before the clock: compile, start actors, copy to a device),
    ``train_epoch`` (train this epoch's units; :class:`EpochResult`), ``vectors_finite`` (after an epoch),
    ``finish`` (after the last epoch or an error: stop actors, free devices), ``report`` (its figures for
    ``--report``, read after the run: a :class:`DriverReport`, or None).  ``mode`` names the row of
    :mod:`parvec.capabilities`, ``label`` the progress bar; ``error_label`` and ``divergence_hint`` (what else to
    lower, or None) word the divergence error.
    ``actor_threads``: the threads each of a cluster's actors runs, once prepared (fitted to its CPUs when not
    given; None for a driver without actors), which a checkpoint records as where it trained.
    :class:`DriverBase` gives every member but the four methods of training a default."""

    mode: str
    actor_threads: int | None

    @property
    def label(self) -> str: ...

    @property
    def error_label(self) -> str: ...

    @property
    def divergence_hint(self) -> str | None: ...

    def prepare(self, start_epoch: int, epochs: int) -> None: ...

    def train_epoch(self, ctx: EpochContext) -> EpochResult: ...

    def vectors_finite(self) -> bool: ...

    def finish(self) -> None: ...

    def report(self) -> DriverReport | None: ...


class CorpusDriver(Driver, Protocol):
    """A :class:`Driver` over one model's arrays that trains an encoded corpus (``use_corpus``) or parts streamed
    per epoch (``bind``): what :mod:`parvec.drivers` makes for ``Word2Vec`` and ``Node2Vec``."""

    w_in: np.ndarray
    w_out: np.ndarray

    def use_corpus(self, corpus: Any) -> CorpusDriver: ...


class PartsDriver(CorpusDriver, Protocol):
    """A :class:`CorpusDriver` that also trains parts streamed per epoch (``bind(make_parts)``: graph walks)."""

    def bind(self, make_parts: Callable[[int], Any], repeats: bool = False) -> PartsDriver: ...


class DriverBase:
    """The defaults of the :class:`Driver` members that a driver need not word itself: ``label`` and
    ``error_label`` are the algorithm, no ``divergence_hint``, no ``report``, no ``actor_threads``;
    ``on_progress`` (a report's time series) and ``require_pairs`` serve a driver that runs itself
    (:class:`SelfRunning`).

    Example:
        >>> from parvec.config import TrainConfig
        >>> d = DriverBase(); d.config = TrainConfig(algo="classic")
        >>> d.label, d.error_label, d.divergence_hint, d.report()
        ('classic', 'classic', None, None)
    """

    mode: str = "cpu"
    config: TrainConfig
    actor_threads: int | None = None
    on_progress: Callable[..., None] | None = None
    require_pairs: bool = True

    @property
    def label(self) -> str:
        """The progress bar's name."""
        return str(self.config.algo)

    @property
    def error_label(self) -> str:
        """How the divergence error names what trained."""
        return str(self.config.algo)

    @property
    def divergence_hint(self) -> str | None:
        """What else to lower when the run diverges (None: the engine's own hint)."""
        return None

    def report(self) -> DriverReport | None:
        """The driver's figures of the last run, for ``--report`` (none here)."""
        return None


# ---------------------------------------------------------------------------------------------- the engine
class _Epoch:
    """The engine's :class:`EpochContext` for one epoch."""

    def __init__(self, engine: RunEngine, epoch: int, resume: Resume | None) -> None:
        self.engine = engine
        self.epoch = epoch
        self.resume = resume
        self.schedule = engine.schedule
        self.checkpoint_every = engine.checkpoint_every

    def alpha_at(self, words_before: float) -> float:
        return self.engine.schedule.alpha_at(self.engine.schedule.position(self.epoch, 0) + words_before)

    def progress(self, words: int, pairs: int, loss: float) -> None:
        self.engine._progress(self.epoch, words, pairs, loss)

    def checkpoint_due(self, words_handed: int) -> bool:
        return self.engine._checkpoint_due(words_handed)

    def checkpoint(self, units_done: int, words_done: int, words: int, pairs: int, loss: float) -> None:
        self.engine._checkpoint(self.epoch, units_done, words_done, words, pairs, loss)


class RunEngine:
    """Runs epochs ``start_epoch .. epochs-1`` of ``driver`` (module docstring) and returns :class:`TrainStats`.

    - ``schedule``: the learning rate (:class:`parvec.schedule.Schedule`; its ``words_per_epoch`` is what one
      epoch's units hold);
    - ``resume_at``: a :class:`Position` in epoch ``start_epoch`` to continue from (a mid-epoch checkpoint);
    - ``on_epoch_end(epoch, stats)``: after each epoch's checks (stats of this call so far, seconds included);
    - ``checkpoint_every`` (from :func:`parse_interval`) and ``on_checkpoint(position)``: mid-epoch checkpoints,
      taken by the driver at the first unit boundary after the interval (the clock restarts at each one and at
      every epoch's end);
    - ``on_progress(totals, force=False)``: the running totals of the call (:class:`parvec.runlog.Totals`) a few
      times a second and once at the end (a report's time series);
    - ``require_pairs``: refuse a run that trained no pair (a driver training one share of a run says False);
    - ``progress_bar``: True/False, or None for "when stderr is a terminal" (``config.progress``).

    Example:
        >>> stats = RunEngine(driver, config, Schedule.of(config, corpus.n_tokens)).run()  # doctest: +SKIP
    """

    def __init__(self, driver: Driver, config: TrainConfig, schedule: Schedule, *, epochs: int | None = None,
                 start_epoch: int = 0, resume_at: Position | None = None,
                 on_epoch_end: Callable[[int, TrainStats], None] | None = None,
                 checkpoint_every: tuple[str, float] | None = None,
                 on_checkpoint: Callable[[Position], object] | None = None,
                 on_progress: Callable[..., None] | None = None, require_pairs: bool = True,
                 progress_bar: bool | None = None) -> None:
        epochs = config.epochs if epochs is None else epochs
        if not 0 <= start_epoch < epochs:
            raise ParvecError(f"start_epoch must be in [0, {epochs}), got {start_epoch}")
        if schedule.words_per_epoch <= 0:
            raise ParvecError("the corpus has no in-vocabulary tokens to train on")
        if resume_at is not None and resume_at.epoch != start_epoch:
            raise ParvecError(f"resume_at is in epoch {resume_at.epoch} but start_epoch is {start_epoch}")
        self.driver, self.config, self.schedule = driver, config, schedule
        self.epochs, self.start_epoch, self.resume_at = epochs, start_epoch, resume_at
        self.on_epoch_end, self.on_progress, self.require_pairs = on_epoch_end, on_progress, require_pairs
        self.checkpoint_every = checkpoint_every if on_checkpoint is not None else None
        self.on_checkpoint = on_checkpoint
        self.progress_bar = config.progress if progress_bar is None else progress_bar
        # Per epoch: this call's raw words; the epoch's pairs and summed loss (with a resumed epoch's carried
        # counters); the counters carried from the checkpoint this call resumes from.
        self.words = np.zeros(epochs, dtype=np.int64)
        self.pairs = np.zeros(epochs, dtype=np.int64)
        self.losses = np.zeros(epochs, dtype=np.float64)
        self.carried_words = np.zeros(epochs, dtype=np.int64)
        self.carried_pairs = np.zeros(epochs, dtype=np.int64)
        if resume_at is not None:
            n = min(epochs, resume_at.epoch + 1)
            self.carried_words[:n] = resume_at.words[:n]
            self.carried_pairs[:n] = resume_at.pairs[:n]
            self.pairs[:n] = resume_at.pairs[:n]
            self.losses[:n] = resume_at.losses[:n]
        self.longest = 0
        self._start = 0.0
        self._bar: Any = None
        self._clock = (0.0, 0)  # (time of the last checkpoint or epoch end, words handed out then)
        self._current = (start_epoch, 0, 0, 0.0)  # (epoch, words, pairs, loss) the driver last reported

    # ------------------------------------------------------------------ the loop
    def run(self) -> TrainStats:
        """Train the epochs; the vectors end in the driver's (the model's) arrays."""
        driver = self.driver
        try:
            driver.prepare(self.start_epoch, self.epochs)  # compile, start actors: before the clock starts
            self._bar = self._make_bar()
            self._start = time.perf_counter()
            self._clock = (self._start, 0)
            cpu_before = cpu_snapshot()
            self._emit()  # the curves start at word 0, at the starting learning rate
            for epoch in range(self.start_epoch, self.epochs):
                raise_if_stop_requested()  # a stop signal whose KeyboardInterrupt a finalizer swallowed
                self._train_one(epoch)
            # the clock and the CPU stop here: finish() (stopping a cluster's processes, a report) is not training
            seconds = time.perf_counter() - self._start
            cpu_after = cpu_snapshot()
        except Diverged as exc:
            raise self.diverged(exc.epoch, exc.what) from None
        except KeyboardInterrupt:
            raise
        finally:
            if self._bar is not None:
                self._update_bar()
                self._bar.close()
            driver.finish()
        stats = self.stats(self.epochs, seconds)
        stats.cpu_by_process = {k: round(v, 3) for k, v in cpu_by_role(cpu_before, cpu_after).items()}
        stats.cpu_seconds, stats.cpu_processes = cpu_seconds(cpu_before, cpu_after), len(cpu_after)
        self._emit(force=True)
        if stats.pairs == 0 and self.require_pairs:  # the vectors are the random initial ones: never hand them back
            raise self.no_pairs(stats)
        return stats

    def _train_one(self, epoch: int) -> None:
        resume = None
        if self.resume_at is not None and epoch == self.start_epoch:
            at = self.resume_at
            resume = Resume(at.chunks_done, at.words_done, int(at.words[epoch]), int(at.pairs[epoch]),
                            float(at.losses[epoch]))
        result = self.driver.train_epoch(_Epoch(self, epoch, resume))
        self.words[epoch] = result.words
        self.pairs[epoch] = result.pairs
        self.losses[epoch] = result.loss
        self.longest = max(self.longest, result.longest)
        self._current = (epoch, 0, 0, 0.0)
        if not math.isfinite(result.loss):
            raise Diverged(epoch, f"the loss became {result.loss}")
        if not self.driver.vectors_finite():  # ~1 ms per 10^6 floats: catches --no-loss runs
            raise Diverged(epoch, "the input vectors hold NaN or inf")
        self._emit()
        if self.on_epoch_end is not None:
            self.on_epoch_end(epoch, self.stats(epoch + 1, time.perf_counter() - self._start))
        self._clock = (time.perf_counter(), 0)  # an epoch-end checkpoint restarts the checkpoint clock

    # ------------------------------------------------------------------ counters
    def stats(self, end: int, seconds: float) -> TrainStats:
        """The statistics of this call's epochs ``start_epoch .. end-1`` (``words``/``pairs``: this call's;
        the per-epoch figures include what a resumed checkpoint had done)."""
        first = self.start_epoch
        w, p, loss = self.words[first:end], self.pairs[first:end], self.losses[first:end]
        return TrainStats(
            words=int(w.sum()), pairs=int(p.sum() - self.carried_pairs[first:end].sum()), seconds=seconds,
            epochs=end - first,
            loss_per_epoch=[float(lv / pv) if pv else float("nan") for lv, pv in zip(loss, p, strict=True)],
            words_per_epoch=[int(x) for x in w + self.carried_words[first:end]],
            pairs_per_epoch=[int(x) for x in p])

    def _totals(self) -> Totals:
        # The running totals of this call, for on_progress and the bar: finished epochs plus the one in progress.
        epoch, words, pairs, loss = self._current
        done = int(self.words.sum()) + words
        all_pairs = int(self.pairs.sum()) + pairs
        per_epoch = self.pairs.copy()
        per_epoch[epoch] += pairs
        current = np.flatnonzero(per_epoch)
        before = self.schedule.position(self.start_epoch, self.resume_at.words_done if self.resume_at else 0)
        return Totals(t=time.perf_counter() - self._start, words=done, pairs=all_pairs,
                      loss_sum=float(self.losses.sum()) + loss, lr=self.schedule.alpha_at(done + before),
                      epoch=int(current[-1]) if len(current) else 0)

    def _progress(self, epoch: int, words: int, pairs: int, loss: float) -> None:
        # The driver's running counters of the epoch in progress (pairs and loss: the epoch's, with what a
        # resumed epoch carried, which the engine holds too until the epoch ends).
        carried_pairs = int(self.pairs[epoch])
        carried_loss = float(self.losses[epoch])
        self._current = (epoch, int(words), int(pairs) - carried_pairs, float(loss) - carried_loss)
        self._update_bar()
        self._emit()

    def _emit(self, force: bool = False) -> None:
        if self.on_progress is None:
            return
        if force:
            self.on_progress(self._totals(), force=True)
        else:
            self.on_progress(self._totals())

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint_due(self, words_handed: int) -> bool:
        if self.checkpoint_every is None:
            return False
        kind, amount = self.checkpoint_every
        if kind == "words":
            return words_handed - self._clock[1] >= amount
        return time.perf_counter() - self._clock[0] >= amount

    def _checkpoint(self, epoch: int, units_done: int, words_done: int, words: int, pairs: int, loss: float) -> None:
        # Every unit handed out is trained: the units done are the epoch's first `units_done`, and the
        # counters are final for them.  words: this call's in this epoch; pairs/loss: the epoch's.  Without
        # on_checkpoint (no checkpoint directory) nothing is written.
        if self.on_checkpoint is None:
            return
        w = self.words + self.carried_words
        w[epoch] = words + self.carried_words[epoch]
        p, lo = self.pairs.copy(), self.losses.copy()
        p[epoch], lo[epoch] = pairs, loss
        self.on_checkpoint(Position(epoch, units_done, words_done, [int(x) for x in w[: epoch + 1]],
                                    [int(x) for x in p[: epoch + 1]], [float(x) for x in lo[: epoch + 1]],
                                    self.schedule.alpha_at(self.schedule.position(epoch, words_done))))
        self._clock = (time.perf_counter(), self._handed(epoch, words_done))

    def _handed(self, epoch: int, words_done: int) -> int:
        # The words handed out in this call's epoch at a checkpoint: its position, less the resumed prefix.
        if self.resume_at is not None and epoch == self.start_epoch:
            return words_done - self.resume_at.words_done
        return words_done

    # ------------------------------------------------------------------ the progress bar
    def _make_bar(self) -> Any:
        show = self.progress_bar
        if show is None:
            show = sys.stderr.isatty()
        if not show:
            return None
        from tqdm import tqdm

        todo = self.schedule.words_per_epoch * (self.epochs - self.start_epoch)
        todo -= self.resume_at.words_done if self.resume_at is not None else 0
        return tqdm(total=todo, unit="w", unit_scale=True, dynamic_ncols=True, file=sys.stderr,
                    desc=self.driver.label, smoothing=0.1)

    def _update_bar(self) -> None:
        bar = self._bar
        if bar is None:
            return
        totals = self._totals()
        bar.update(totals.words - bar.n)  # the rate shown is for the words of this run
        epoch, _, pairs, loss = self._current
        epoch_pairs = int(self.pairs[epoch]) + pairs
        shown = (float(self.losses[epoch]) + loss) / epoch_pairs if epoch_pairs else float("nan")
        bar.set_postfix(lr=f"{totals.lr:.5f}", loss=f"{shown:.4f}", refresh=False)

    # ------------------------------------------------------------------ the errors, worded once
    def diverged(self, epoch: int, what: str) -> ParvecError:
        """A run whose loss or vectors are no longer finite: stop rather than hand back NaN vectors."""
        cfg = self.config
        hint = f"lower alpha (now {cfg.alpha})"
        extra = self.driver.divergence_hint
        if extra is not None:
            hint += f" or {extra}"
        elif cfg.algo == "par":
            b = "whole sentences" if cfg.par_batch == 0 else str(cfg.par_batch)
            hint += (f" or par_batch (now {b}; long lines put thousands of gradient terms on each shared"
                     " negative, keep it in the tens)")
        return ParvecError(f"training diverged in epoch {epoch + 1} ({self.driver.error_label}): {what}; {hint}")

    def no_pairs(self, stats: TrainStats) -> NoPairs:
        """A run that trained no pair: say which of the two ways of missing one happened.  A pair needs two
        kept in-vocabulary words in one sentence (any two neighbours are within the shrunk window, which is
        never below 1)."""
        what = (f"training made no (context, center) pair in {stats.epochs} epoch(s) over {stats.words} words, so "
                "the vectors would be their random initial values: ")
        if 0 < self.longest <= 1:
            return NoPairs(what + "no sentence holds two in-vocabulary words (every line is one word once words "
                           "under min_count are removed); lower --min-count, or put the words that belong "
                           "together on one line")
        longest = f" (the longest has {self.longest})" if self.longest else ""
        return NoPairs(what + f"subsampling (sample={self.config.sample:g}) left no sentence with two "
                       f"words{longest}; lower --sample (0 turns it off) or --min-count, or use a larger corpus")


class _RunsItself(Driver, Protocol):
    # What SelfRunning needs of the driver it is mixed into.
    config: TrainConfig
    stats: TrainStats
    on_progress: Callable[..., None] | None
    require_pairs: bool

    def use_corpus(self, corpus: Any) -> Any: ...

    def bind(self, make_parts: Callable[[int], Any], repeats: bool = False) -> Any: ...


class SelfRunning:
    """``train``/``train_parts`` for a driver that runs itself through the engine (:class:`parvec.trainer.Trainer`,
    :class:`parvec.gpu.driver.GpuTrainer`, the replicas driver's ``ReplicaTrainer``): the
    driver keeps ``stats`` (the last run's), ``on_progress`` (a report's time series) and ``require_pairs``
    (False for a share of a larger run).

    Example:
        >>> Trainer(TrainConfig(), corpus.vocab.counts).train(corpus).words  # doctest: +SKIP
    """

    stats: TrainStats
    on_progress: Callable[..., None] | None = None
    require_pairs: bool = True

    def train(self: _RunsItself, corpus: Any, epochs: int | None = None,
              on_epoch_end: Callable[[int, TrainStats], None] | None = None, start_epoch: int = 0,
              **checkpoints: Any) -> TrainStats:
        """Train on one encoded corpus for ``epochs`` (default ``config.epochs``); ``start_epoch`` > 0
        resumes a run whose first epochs are done (same schedule and random streams).  ``checkpoints``:
        ``checkpoint_every``, ``on_checkpoint``, ``resume_at``, ``schedule`` of :meth:`train_parts`.

        Example:
            >>> trainer.train(corpus, epochs=2).words_per_sec  # doctest: +SKIP
        """
        self.use_corpus(corpus)  # checks the vocabulary
        return _run_itself(self, corpus.n_tokens, epochs, on_epoch_end, start_epoch, **checkpoints)

    def train_parts(self: _RunsItself, make_parts: Callable[[int], Any], words_per_epoch: int,
                    epochs: int | None = None, on_epoch_end: Callable[[int, TrainStats], None] | None = None,
                    start_epoch: int = 0, repeats: bool = False, **checkpoints: Any) -> TrainStats:
        """Train on parts streamed per epoch: ``make_parts(epoch)`` yields ``(tokens, offsets)``.

        ``words_per_epoch`` (the total tokens the parts of one epoch hold) sets the learning-rate schedule
        (or ``schedule=``, e.g. an anchored one); parts beyond it train at the final rate.  Epochs
        ``start_epoch .. epochs-1`` run; ``on_epoch_end(epoch, stats)`` is called after each.  Mid-epoch
        checkpoints: ``checkpoint_every`` (from :func:`parse_interval`) and ``on_checkpoint(position)``, called
        with every worker idle (it may read or copy the vectors); ``resume_at`` (a :class:`Position` in epoch
        ``start_epoch``) continues from such a checkpoint.  ``repeats``: the parts are the same arrays every
        epoch (a GPU keeps them on the device).

        Example:
            >>> trainer.train_parts(lambda epoch: batches(epoch), words_per_epoch=n_tokens)  # doctest: +SKIP
        """
        self.bind(make_parts, repeats=repeats)
        return _run_itself(self, words_per_epoch, epochs, on_epoch_end, start_epoch, **checkpoints)


def _run_itself(driver: _RunsItself, words_per_epoch: int, epochs: int | None,
                on_epoch_end: Callable[[int, TrainStats], None] | None, start_epoch: int,
                schedule: Schedule | None = None, **checkpoints: Any) -> TrainStats:
    if words_per_epoch <= 0:
        raise ParvecError("the corpus has no in-vocabulary tokens to train on")
    epochs = driver.config.epochs if epochs is None else epochs
    engine = RunEngine(driver, driver.config, schedule or Schedule.of(driver.config, words_per_epoch, epochs),
                       epochs=epochs, start_epoch=start_epoch, on_epoch_end=on_epoch_end,
                       on_progress=driver.on_progress, require_pairs=driver.require_pairs, **checkpoints)
    driver.stats = engine.run()
    return driver.stats
