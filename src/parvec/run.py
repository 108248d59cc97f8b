"""The run layer: what keeps a training run, between the front ends and the run engine.

A front end (:class:`parvec.word2vec.Word2Vec`, :class:`parvec.graph.node2vec.Node2Vec`, the ``parvec``
commands) says *what* to train: a driver over its arrays (:mod:`parvec.drivers`), the learning-rate schedule
and, for its checkpoints, how to describe the model as a :class:`parvec.model_io.SavedModel`.  A :class:`Run`
says how the run is *kept*, once for all of them:

- :class:`RunOptions`: the checkpoint directory, interval and what a checkpoint that cannot be written does,
  the report's time series (a :class:`parvec.runlog.RunLog`), scoring after every epoch, and the console
  callback told of every checkpoint written;
- :class:`RunState`: what a run carries across calls and across a resume (its id, the epochs trained, the
  mid-epoch position, the schedule's anchor, the checkpoint and driver figures of the last call);
- :class:`Run`: where a run starts, new or from a saved state (:meth:`Run.start`, one rule for every front end),
  and one call of :class:`parvec.engine.RunEngine` with the checkpoints written
  (:class:`parvec.checkpoints.Checkpointer`), the report's per-epoch records, whose learning rate is the
  engine's schedule's (nothing else computes it), the scores and their seconds taken off the clock, and the
  state kept;
- the resume rules every front end shares: :func:`resume_epochs` (another number of epochs applies from the
  checkpoint on, through the schedule's anchor), :func:`check_resume_corpus`, :func:`graph_run_refusal`.

Example:
    >>> from parvec.config import TrainConfig
    >>> from parvec.schedule import Schedule
    >>> cfg = TrainConfig(epochs=2, alpha=0.025, min_alpha=0.0, progress=False)
    >>> resume_epochs(cfg, RunState(epochs_trained=1), 4, words_per_epoch=100)
    4
    >>> RunOptions(checkpoint_every="10m").interval
    ('seconds', 600.0)
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from parvec.checkpoints import CheckpointCounts, Checkpointer
from parvec.config import TrainConfig
from parvec.engine import Driver, DriverReport, Position, RunEngine, TrainStats, parse_interval
from parvec.errors import ParvecError
from parvec.schedule import Schedule

if TYPE_CHECKING:
    from parvec.cluster_record import ClusterRecord
    from parvec.corpus import EncodedCorpus
    from parvec.model_io import SavedModel
    from parvec.runlog import RunLog
    from parvec.vocab import Vocab

__all__ = ["CHECKPOINT_ERRORS", "Kept", "KeptRun", "Run", "RunOptions", "RunState", "Start", "check_resume_corpus",
           "graph_run_refusal", "resume_epochs"]

CHECKPOINT_ERRORS = ("stop", "continue")
CheckpointSaved = Callable[[Path, Position | None, float], None]


@dataclass
class RunOptions:
    """How a run is kept (module docstring).  ``checkpoint_dir``: ``DIR/checkpoint`` after every epoch;
    ``checkpoint_every``: also mid-epoch, every this long (``"10m"``) or this many words (``"50M"``);
    ``on_checkpoint_error``: ``"stop"`` (the default) or ``"continue"`` when a checkpoint cannot be written;
    ``run_log``: the report's time series and per-epoch records; ``eval_every_epoch``: score after every epoch
    (the front end says how); ``on_checkpoint_saved(path, position or None, seconds)``: told of each checkpoint.

    Example:
        >>> RunOptions(on_checkpoint_error="ignore")
        Traceback (most recent call last):
        ...
        parvec.errors.ParvecError: on_checkpoint_error must be 'stop' or 'continue', got 'ignore'
    """

    checkpoint_dir: str | os.PathLike[str] | None = None
    checkpoint_every: str | int | None = None
    on_checkpoint_error: str = "stop"
    run_log: RunLog | None = None
    eval_every_epoch: bool = False
    on_checkpoint_saved: CheckpointSaved | None = None

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> RunOptions:
        """Refuse an unknown ``on_checkpoint_error`` or an unreadable interval; returns self."""
        if self.on_checkpoint_error not in CHECKPOINT_ERRORS:
            raise ParvecError(f"on_checkpoint_error must be 'stop' or 'continue', got {self.on_checkpoint_error!r}")
        _ = self.interval
        return self

    def check_checkpoints(self, continues: bool, epochs_trained: int) -> None:
        """Mid-epoch checkpoints need a checkpoint directory and a run trained from its start (``continues``: a
        resumed run; else ``epochs_trained`` must be 0).

        Example:
            >>> RunOptions(checkpoint_every="10m").check_checkpoints(False, 0)
            Traceback (most recent call last):
            ...
            parvec.errors.ParvecError: checkpoint_every needs checkpoint_dir (--checkpoint-every needs --checkpoint-dir)
        """
        if self.interval is None:
            return
        if self.checkpoint_dir is None:
            raise ParvecError("checkpoint_every needs checkpoint_dir (--checkpoint-every needs --checkpoint-dir)")
        if not continues and epochs_trained:
            raise ParvecError(f"checkpoint_every: mid-epoch checkpoints belong to a run trained from its start (a "
                              f"fresh model, or resume=True); this model has trained {epochs_trained} epochs")

    @property
    def interval(self) -> tuple[str, float] | None:
        """``checkpoint_every`` parsed (:func:`parvec.engine.parse_interval`), None without."""
        return None if self.checkpoint_every is None else parse_interval(self.checkpoint_every)


@dataclass
class RunState:
    """What a run carries across calls and resumes: ``run_id`` (its checkpoints share it), ``epochs_trained``,
    ``position`` (a loaded mid-epoch checkpoint's place), ``schedule_anchor`` (``(words, alpha)`` where a resumed
    run changed its epochs), the loaded checkpoint's ``saved_checkpoint_every`` and ``saved_at``, ``graph_run``
    (a node2vec/DeepWalk run's identity), ``saved_cluster`` (where it trained, and whether model.json said:
    ``saved_cluster_recorded``), and the last call's ``checkpoint_report``, driver figures ``driver_report`` (as
    JSON: ``run_report``) and
    ``actor_threads`` (the threads each of its cluster's actors ran, fitted to the CPUs when not given: recorded as
    where it trained).

    Example:
        >>> RunState().fresh().run_id is not None
        True
    """

    run_id: str | None = None
    epochs_trained: int = 0
    position: Position | None = None
    schedule_anchor: tuple[float, float] | None = None
    saved_checkpoint_every: str | None = None
    saved_at: float | None = None
    graph_run: dict[str, Any] | None = None
    saved_cluster: ClusterRecord | None = None
    saved_cluster_recorded: bool = False
    checkpoint_report: CheckpointCounts = field(default_factory=CheckpointCounts)
    driver_report: DriverReport | None = None
    actor_threads: int | None = None

    @property
    def run_report(self) -> dict[str, Any]:
        """The last call's driver figures (:attr:`driver_report`) as the report's keys; empty without any."""
        return self.driver_report.to_json() if self.driver_report is not None else {}

    @classmethod
    def from_saved(cls, saved: SavedModel) -> RunState:
        """The state a model directory or checkpoint records (:func:`parvec.model_io.load`)."""
        return cls(run_id=saved.run_id, epochs_trained=saved.epochs_trained, position=saved.position,
                   schedule_anchor=saved.schedule_anchor, saved_checkpoint_every=saved.checkpoint_every,
                   saved_at=saved.saved_at, graph_run=saved.graph_run, saved_cluster=saved.cluster,
                   saved_cluster_recorded=saved.cluster_recorded)

    def fresh(self) -> RunState:
        """A new run begins: a new id, no anchor; returns self."""
        self.run_id = uuid.uuid4().hex
        self.schedule_anchor = None
        return self


class Kept:
    """A front end's attribute kept in its run's options or state (``checkpoint_dir = Kept("run_options")``): read
    and set there, so ``model.checkpoint_dir = ...`` and ``model.run_id`` keep working on the gensim-shaped model.

    Example:
        >>> class M:
        ...     run_id = Kept("state")
        ...     def __init__(self): self.state = RunState(run_id="r1")
        >>> M().run_id
        'r1'
    """

    def __init__(self, holder: str) -> None:
        self.holder = holder
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(getattr(obj, self.holder), self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(getattr(obj, self.holder), self.name, value)


class KeptRun:
    """The run's options (``run_options``, :class:`RunOptions`) and state (``state``, :class:`RunState`) as a
    front end's attributes (``model.checkpoint_dir``, ``model.run_id``, ...), read and set there: the base of
    :class:`parvec.word2vec.Word2Vec` and :class:`parvec.graph.node2vec.Node2Vec`.

    Example:
        >>> class Model(KeptRun):
        ...     def __init__(self): self.run_options, self.state = RunOptions(checkpoint_dir="ck"), RunState()
        >>> Model().checkpoint_dir
        'ck'
    """

    run_options: RunOptions
    state: RunState
    checkpoint_dir = Kept("run_options")
    checkpoint_every = Kept("run_options")  # a duration ("10m") or words ("50M")
    on_checkpoint_error = Kept("run_options")  # "stop" or "continue" (docs/long_runs.md)
    run_log = Kept("run_options")  # a parvec.runlog.RunLog: the report's time series and epoch records
    eval_every_epoch = Kept("run_options")
    on_checkpoint_saved = Kept("run_options")
    run_id = Kept("state")
    epochs_trained = Kept("state")
    position = Kept("state")  # a loaded mid-epoch checkpoint's
    schedule_anchor = Kept("state")
    saved_checkpoint_every = Kept("state")
    saved_at = Kept("state")
    graph_run = Kept("state")  # a node2vec/DeepWalk checkpoint's identity (resumed by Node2Vec.from_checkpoint)
    saved_cluster = Kept("state")  # where the checkpoint trained: train(resume=True) trains there again
    saved_cluster_recorded = Kept("state")
    checkpoint_report = Kept("state")  # the last call's checkpoints: counts and seconds
    driver_report = Kept("state")  # the last call's driver figures (cluster, GPU), for --report
    run_report = Kept("state")  # the same, as the report's keys


@dataclass(frozen=True)
class Start:
    """Where a call of the run engine starts (:meth:`Run.start`): ``epoch``, the first epoch it trains; ``at``, the
    place inside it a mid-epoch checkpoint recorded (None: the epoch's start); ``epochs``, the run's epochs in all.

    Example:
        >>> Start(epoch=2, at=None, epochs=2).done
        True
    """

    epoch: int
    at: Position | None
    epochs: int

    @property
    def done(self) -> bool:
        """Every epoch was trained before this call (a checkpoint of the run's last epoch's end)."""
        return self.epoch >= self.epochs


class Run:
    """One call of the run engine, kept (module docstring): epochs ``start_epoch .. schedule.epochs-1`` of
    ``driver`` (continuing ``resume_at`` in the first), ``base_epochs`` trained by earlier calls (the report's
    epochs count on from them).  ``describe(position, epochs_trained)`` gives the model to checkpoint (None:
    no checkpoints), ``score()`` the per-epoch scores (recorded with a run log),
    ``on_epoch_end(epoch, stats)`` the front end's own work after each epoch's checkpoint.  ``only_latest``: each
    checkpoint written removes the run's others (a sharded run's checkpoints name shard snapshots that the shards
    remove once a newer one is checkpointed).

    Example:
        >>> stats = Run(driver, config, schedule, RunOptions(), RunState().fresh()).execute()  # doctest: +SKIP
    """

    def __init__(self, driver: Driver, config: TrainConfig, schedule: Schedule, options: RunOptions,
                 state: RunState, *, describe: Callable[[Position | None, int], SavedModel] | None = None,
                 start_epoch: int = 0, resume_at: Position | None = None, base_epochs: int = 0,
                 score: Callable[[], dict[str, float | None]] | None = None,
                 on_epoch_end: Callable[[int, TrainStats], None] | None = None, only_latest: bool = False) -> None:
        self.driver, self.config, self.schedule = driver, config, schedule
        self.options, self.state, self.describe = options.check(), state, describe
        self.start_epoch, self.resume_at, self.base_epochs = start_epoch, resume_at, base_epochs
        self.score = score
        self.on_epoch_end = on_epoch_end
        self.only_latest = only_latest
        self.eval_seconds = 0.0  # the per-epoch scoring's, taken off the training's seconds

    @staticmethod
    def start(config: TrainConfig, state: RunState, *, resume: bool, epochs: int | None,
              words_per_epoch: int) -> Start:
        """Where a run starts, the one rule of every front end (:class:`parvec.word2vec.Word2Vec`,
        :class:`parvec.graph.node2vec.Node2Vec`, the sharded pipeline): ``resume``, from the saved ``state`` (a
        loaded checkpoint's epochs and mid-epoch position; ``epochs``, when given otherwise than ``config.epochs``,
        apply from the checkpoint on: :func:`resume_epochs`), keeping its run id (a new one when it recorded none);
        else a new run (:meth:`RunState.fresh`) of ``epochs`` (default ``config.epochs``) from the start.
        ``words_per_epoch``: the corpus's tokens, the schedule's unit.

        Example:
            >>> cfg, state = TrainConfig(epochs=2, alpha=0.025, min_alpha=0.0), RunState(epochs_trained=1, run_id="r")
            >>> Run.start(cfg, state, resume=True, epochs=None, words_per_epoch=100), state.run_id
            (Start(epoch=1, at=None, epochs=2), 'r')
            >>> Run.start(cfg, state, resume=False, epochs=3, words_per_epoch=100).epochs, state.run_id != "r"
            (3, True)
        """
        if not resume:
            state.fresh()
            return Start(0, None, config.epochs if epochs is None else epochs)
        total = resume_epochs(config, state, epochs, words_per_epoch)
        if state.run_id is None:  # a checkpoint that recorded none: its run goes on under a new id, its anchor kept
            state.run_id = uuid.uuid4().hex
        return Start(state.epochs_trained, state.position, total)

    def execute(self) -> TrainStats:
        """Train, checkpoint and record; returns the engine's statistics (scoring's seconds taken off)."""
        options, state, run_log = self.options, self.state, self.options.run_log
        state.checkpoint_report = CheckpointCounts()
        if self.start_epoch >= self.schedule.epochs:  # resumed from the last epoch's end: nothing is left to train
            return TrainStats()
        state.actor_threads = None  # the driver's, once prepared (_describe)
        if run_log is not None:
            run_log.new_call()
        checkpointer = self._checkpointer()
        started = time.perf_counter()

        def epoch_end(epoch: int, stats: TrainStats) -> None:
            state.epochs_trained = self.base_epochs + epoch + 1
            if run_log is not None:
                self._record(run_log, epoch, stats, started)
            if checkpointer is not None:
                checkpointer.epoch_end(state.epochs_trained)
            if self.on_epoch_end is not None:
                self.on_epoch_end(epoch, stats)

        engine = RunEngine(self.driver, self.config, self.schedule, epochs=self.schedule.epochs,
                           start_epoch=self.start_epoch, resume_at=self.resume_at, on_epoch_end=epoch_end,
                           checkpoint_every=options.interval,
                           on_checkpoint=checkpointer.mid_epoch if checkpointer is not None else None,
                           on_progress=run_log.progress if run_log is not None else None)
        stats = engine.run()
        state.position = None
        state.epochs_trained = self.base_epochs + self.schedule.epochs
        if self.eval_seconds:  # words/s is training's, not the per-epoch scoring's
            stats.seconds = max(0.0, stats.seconds - self.eval_seconds)
        state.driver_report = self.driver.report()
        state.actor_threads = self.driver.actor_threads
        return stats

    def _describe(self, position: Position | None, epochs_trained: int) -> SavedModel:
        # The model to checkpoint, recording the threads the cluster's actors run (prepared by now).
        assert self.describe is not None
        self.state.actor_threads = self.driver.actor_threads
        return self.describe(position, epochs_trained)

    def _record(self, run_log: RunLog, epoch: int, stats: TrainStats, started: float) -> None:
        # The report's record of one epoch: its words, loss, seconds, the schedule's rate at its end, the scores.
        scores, t_eval = None, None
        if self.score is not None:
            t0 = time.perf_counter()
            scores = self.score()
            t_eval = time.perf_counter() - t0
            self.eval_seconds += t_eval
            run_log.pause(t_eval)
        run_log.epoch_end(epoch=self.base_epochs + epoch,
                          words=stats.words_per_epoch[-1] if stats.words_per_epoch else 0,
                          loss=stats.loss_per_epoch[-1] if stats.loss_per_epoch else None,
                          seconds=time.perf_counter() - started - self.eval_seconds,
                          lr=self.schedule.epoch_end_alpha(epoch), scores=scores, eval_seconds=t_eval)

    def _checkpointer(self) -> Checkpointer | None:
        # The writer of this run's checkpoints (None without a directory): it counts into the state's
        # checkpoint_report and pauses the report's clock while it writes.
        options, run_log = self.options, self.options.run_log
        if options.checkpoint_dir is None or self.describe is None:
            return None

        def saved(path: Path, position: Position | None, seconds: float) -> None:
            if run_log is not None:
                run_log.pause(seconds)
            if options.on_checkpoint_saved is not None:
                options.on_checkpoint_saved(path, position, seconds)

        return Checkpointer(Path(options.checkpoint_dir), self._describe, self.state.run_id or uuid.uuid4().hex,
                            on_error=options.on_checkpoint_error, report=self.state.checkpoint_report,
                            on_saved=saved, only_latest=self.only_latest)


# ---------------------------------------------------------------------------------------------- resuming
def resume_epochs(config: TrainConfig, state: RunState, epochs: int | None, words_per_epoch: int) -> int:
    """The epochs a resumed run finishes: ``config.epochs``, or ``epochs`` when given otherwise, which then apply
    from the checkpoint on (the learning rate decays linearly from its value there to the final rate at the new
    end: ``state.schedule_anchor``; ``config.epochs`` becomes ``epochs``).  Fewer than the epochs begun are
    refused.

    Example:
        >>> cfg = TrainConfig(epochs=2, alpha=0.025, min_alpha=0.0)
        >>> state = RunState(epochs_trained=1)
        >>> resume_epochs(cfg, state, 4, 100), cfg.epochs, state.schedule_anchor
        (4, 4, (100.0, 0.0125))
    """
    if epochs is None or epochs == config.epochs:
        return config.epochs
    at = state.position
    begun = state.epochs_trained + (1 if at is not None else 0)
    if isinstance(epochs, bool) or not isinstance(epochs, int | np.integer) or epochs < max(begun, 1):
        raise ParvecError(f"cannot resume with epochs={epochs}: the checkpoint has already "
                          f"{'begun' if at is not None else 'done'} {begun} epoch(s) of {config.epochs}")
    words = state.epochs_trained * words_per_epoch + (at.words_done if at is not None else 0)
    schedule = Schedule.of(config, words_per_epoch, anchor=state.schedule_anchor)
    state.schedule_anchor = schedule.resumed_with(int(epochs), words).anchor
    config.epochs = int(epochs)
    return int(epochs)


def check_resume_corpus(vocab: Vocab, corpus_words: int, encoded: EncodedCorpus) -> None:
    """Refuse to resume on a corpus other than the checkpoint's: its vocabulary (words and counts) and token
    count are the corpus's fingerprint.

    Example:
        >>> check_resume_corpus(model.vocab, model.corpus_words, encoded)  # doctest: +SKIP
    """
    mine, theirs = vocab, encoded.vocab
    if mine.words != theirs.words or not np.array_equal(mine.counts, theirs.counts):
        if len(mine) != len(theirs):
            what = f"{len(theirs):,} words, the checkpoint's {len(mine):,}"
        else:
            i = next((i for i, (a, b, ca, cb) in enumerate(zip(mine.words, theirs.words, mine.counts.tolist(),
                                                                 theirs.counts.tolist(), strict=True))
                      if a != b or ca != cb), 0)
            what = (f"word {i + 1} is {theirs.words[i]!r} (count {int(theirs.counts[i])}), the checkpoint's "
                    f"{mine.words[i]!r} (count {int(mine.counts[i])})")
        raise ParvecError(f"cannot resume: this corpus is not the one the checkpoint was trained on (its "
                          f"vocabulary has {what}); give the same corpus and the same --min-count, "
                          "--max-vocab-size, --max-final-vocab, --lowercase")
    if corpus_words and encoded.n_tokens != corpus_words:
        raise ParvecError(f"cannot resume: this corpus has {encoded.n_tokens:,} in-vocabulary tokens, the one "
                          f"the checkpoint was trained on {corpus_words:,}; give the same corpus")


def graph_run_refusal(graph_run: dict[str, Any] | None, path: str | os.PathLike[str] | None = None) -> str:
    """Why a checkpoint of a graph run cannot be resumed as a word2vec run, and how to resume it.

    Example:
        >>> graph_run_refusal({"command": "deepwalk", "graph": {"source": "g.txt"}}, "ck").split(": ")[1]
        'resume it with `parvec deepwalk g.txt -o OUT --resume ck` (Python'
    """
    run = graph_run or {}
    command = run.get("command") if run.get("command") in ("node2vec", "deepwalk") else "node2vec"
    graph = (run.get("graph") or {}).get("source") or "GRAPH"
    where = str(path) if path is not None else "this model"
    python = "DeepWalk" if command == "deepwalk" else "Node2Vec"
    return (f"{where} is a checkpoint of a `parvec {command}` run on {graph}: resume it with `parvec {command} "
            f"{graph} -o OUT --resume {path if path is not None else 'DIR'}` (Python: {python}.from_checkpoint)")
