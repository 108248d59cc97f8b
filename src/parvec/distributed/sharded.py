"""Column-sharded parameter servers on Ray (Ordentlich et al., CIKM 2016): the sharded driver, ``Cluster(mode=
"sharded")``.

The pieces, one module each:

- :mod:`~parvec.distributed.sharded_settings`: the run's settings (:class:`ShardedSettings`), typed and checked;
- :mod:`~parvec.distributed.shard_actor`: the **shards** (``S`` Ray actors), each a column block of both matrices;
- :mod:`~parvec.distributed.client_actor`: the **clients** (``C`` Ray actors, ``threads_per_actor`` threads each)
  that train units of the encoded corpus against the shards (:mod:`~parvec.distributed.units`, the minibatch
  loop; :mod:`~parvec.distributed.wire`, what travels);
- :mod:`~parvec.distributed.sharded_start`: the actors started and supervised through their start;
- :mod:`~parvec.distributed.snapshots`: consistent snapshots of the shards, their checkpoints, and the recovery
  from them when a shard or client is lost.

This module drives (:class:`ShardedRun`): it hands out units (each epoch's units in corpus order; an epoch ends
when all are trained and its snapshot is complete), keeps the learning-rate schedule by global words (through the
run engine, :mod:`parvec.engine`), gathers or streams the model back from the shards in row blocks, and reports.
Every wait has a time-out (``Cluster.timeout_s``).

:class:`ShardedDriver` is the driver the :class:`~parvec.word2vec.Word2Vec` API uses (the model fits in the
driver there: it is sent to the shards at the start and gathered back into ``w_in``/``w_out``);
:mod:`parvec.distributed.pipeline` is the four-step pipeline of ``parvec train --mode sharded``, which never
holds the model in one process.
"""

from __future__ import annotations

import collections
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parvec.chunks import split_long_sentences
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.distributed.cluster import Cluster
from parvec.distributed.sharded_report import ClientInfo, ShardedReport
from parvec.distributed.sharded_settings import (
    ROW_BLOCK_BYTES,
    SNAPSHOT_BYTES_PER_S,
    ShardedSettings,
    actor_budget,
    cluster_cpus,
    resolve,
    snapshot_interval,
)
from parvec.distributed.sharded_start import ShardedActors, start_actors
from parvec.distributed.snapshot_files import snapshot_dir
from parvec.distributed.snapshot_records import ClientFailure, SnapshotPlan
from parvec.distributed.snapshots import Snapshot, SnapshotCoordinator, check_resume
from parvec.distributed.supervise import ActorLost, cause, first_line
from parvec.distributed.units import SamplingTables, Unit, UnitStats, plan_units, units_crc32
from parvec.distributed.wire import ShardLost
from parvec.engine import DriverBase, EpochContext, EpochResult, Position, RunEngine, TrainStats
from parvec.errors import ParvecError
from parvec.kernels import sharded as K
from parvec.schedule import Schedule

# The names the command line (parvec.cli.sharded) and the fault tests import from here.
__all__ = ["ShardedDriver", "ShardedRun", "ShardedRunDriver", "actor_budget", "cluster_cpus", "resolve",
           "snapshot_dir"]

class ShardedRun:
    """One sharded training run on a Ray session: shards, clients, units, epochs, snapshots and faults,
    gathering, the report.

    ``tables`` are the sampling tables (:class:`~parvec.distributed.units.SamplingTables`; per-word counts in id
    order give the per-word tables).  ``parts`` are the corpus parts as the clients get them
    (:class:`~parvec.distributed.client_actor.ClientSpec`); ``part_offsets`` their (unsplit) sentence offsets,
    from which the driver plans the units, or ``units``, the units planned where the parts were encoded (the
    driver then holds no sentence offset); ``client_parts``: each client prefers the units of its own parts (it
    then loads about ``1 / clients`` of the parts' offsets); ``memory``: the bytes a ``shard`` and a ``client`` ask
    of Ray's ``memory`` resource (:func:`parvec.distributed.memory.placement`); ``settings``: the run's settings as
    its owner resolved them (default: ``cluster``'s for ``config``); ``on_plan`` is told when the shards will
    snapshot and what one costs (:class:`~parvec.distributed.snapshot_records.SnapshotPlan`, before any actor
    starts).  ``init`` is None
    (word2vec.c's initial vectors, generated on the shards) or ``(w_in, w_out)`` to start from.  The shards keep
    their snapshots under ``checkpoint_dir`` (``Cluster.checkpoint_dir``; a temporary directory, removed at the
    end, otherwise), each on its own node's disk; each complete snapshot goes to ``on_snapshot(snapshot)``, which
    returns True when it saved a checkpoint naming it (:meth:`ShardedRunDriver.train_epoch` hands it to the run
    layer): the shards then keep that snapshot until a newer one is checkpointed.

    ``resume`` is such a record read back from a checkpoint: the shards start from it instead of the initial
    vectors, and training goes on from its place (:meth:`train` with ``start_epoch`` its epoch; the units it had
    done are not trained again).  The corpus must cut into the same units, else the run is refused.

    Example:
        >>> with cluster.session() as ray:  # doctest: +SKIP
        ...     run = ShardedRun(ray, cluster, config, counts, parts, part_offsets)
        ...     stats = run.train()
    """

    def __init__(self, ray: Any, cluster: Cluster, config: TrainConfig, tables: np.ndarray | SamplingTables,
                 parts: list[Any], part_offsets: Sequence[np.ndarray] = (),
                 init: tuple[np.ndarray, np.ndarray] | None = None,
                 checkpoint_dir: str | os.PathLike[str] | None = None, resume: Snapshot | None = None,
                 on_snapshot: Callable[[Snapshot], bool] | None = None, *, units: list[Unit] | None = None,
                 client_parts: bool = False, memory: dict[str, int] | None = None,
                 settings: ShardedSettings | None = None,
                 on_plan: Callable[[SnapshotPlan], None] | None = None) -> None:
        self.ray = ray
        self.cluster = cluster
        self.config = config.validate()
        self.settings = settings if settings is not None else ShardedSettings.of(cluster, self.config)
        if not isinstance(tables, SamplingTables):
            tables = SamplingTables.per_word(tables, self.config)
        self.tables = tables
        self.n_words = tables.n_words
        if self.n_words < 2:
            raise ParvecError("sharded training needs a vocabulary of at least two words (negatives must differ "
                              "from the positive word)")
        self.timeout_s = self.settings.timeout_s
        self.actors: ShardedActors | None = None
        self._temp_checkpoints: str | None = None
        self.checkpoint_dir = self._snapshot_directory(checkpoint_dir, resume is None)
        self.units = units if units is not None else plan_units(
            [split_long_sentences(np.asarray(o, dtype=np.int64), self.config.max_sentence_length)
             for o in part_offsets], self.settings.unit_words)
        self.client_parts = client_parts  # each client prefers the units of its own parts (part % clients)
        self.words_per_epoch = sum(u.words for u in self.units)
        if self.words_per_epoch <= 0:
            raise ParvecError("the corpus has no in-vocabulary tokens to train on")
        crc = units_crc32(self.units)
        if resume is not None:
            check_resume(resume, self.settings.shards, self.n_words, self.config.dim, self.units, crc)
        self.totals = UnitStats(acks=[0] * self.settings.shards)
        self.on_progress: Callable[..., None] | None = None
        self.position = (-1, 0)  # (epoch, units of it done): where the run is, for progress and tests
        width = -(-self.config.dim // self.settings.shards)
        self.shard_bytes = 2 * self.n_words * width * 4  # what one shard writes per snapshot
        interval = snapshot_interval(self.settings.checkpoint_interval_s, self.shard_bytes)
        self.snapshot_plan = SnapshotPlan(interval, self.shard_bytes, SNAPSHOT_BYTES_PER_S)
        if on_plan is not None:
            on_plan(self.snapshot_plan)
        self.snapshots = SnapshotCoordinator(self.settings.shards, interval, self.units,
                                             crc, self.config.dim, self.checkpoint_dir, resume, on_snapshot)
        try:
            self.actors = start_actors(ray, self.settings, self.config, tables, parts, init, self.checkpoint_dir,
                                       resume is not None, restore_args=self.snapshots.restore_args,
                                       faults=self.snapshots.faults, memory=memory)
            self.snapshots.actors = self.actors
        except BaseException:
            self.close()
            raise

    def _snapshot_directory(self, directory: str | os.PathLike[str] | None, new_run: bool) -> Path:
        # Where the shards keep their snapshots: the one given, the cluster's, else a temporary directory.
        if directory is None and self.cluster.checkpoint_dir is not None:
            directory = self.cluster.checkpoint_dir
        if directory is None:
            directory = self._temp_checkpoints = tempfile.mkdtemp(prefix="parvec-shard-checkpoints-")
        path = Path(directory).absolute()  # the shards' processes may run elsewhere
        try:
            path.mkdir(parents=True, exist_ok=True)
            if new_run:  # a new run starts from no snapshot
                (path / "manifest.json").unlink(missing_ok=True)
        except OSError as exc:
            raise ParvecError(f"{path}: cannot hold the shards' snapshots: {exc.strerror or exc}") from None
        return path

    @property
    def shards(self) -> list[Any]:
        """The shard actors' handles."""
        return self.actors.shards if self.actors is not None else []

    @property
    def clients(self) -> list[Any]:
        """The client actors' handles."""
        return self.actors.clients if self.actors is not None else []

    def close(self) -> None:
        """Stop the actors (the Ray session itself is the cluster's) and drop temporary snapshots."""
        if self.actors is not None:
            self.actors.close(drop_snapshots=self._temp_checkpoints is not None)
        if self._temp_checkpoints is not None:
            shutil.rmtree(self._temp_checkpoints, ignore_errors=True)
            self._temp_checkpoints = None

    # ------------------------------------------------------------ training
    def train(self, epochs: int | None = None, start_epoch: int = 0,
              on_epoch_end: Callable[[int, TrainStats], None] | None = None, resume_at: Position | None = None,
              schedule: Schedule | None = None) -> TrainStats:
        """Train epochs ``start_epoch .. epochs-1`` through the run engine (:mod:`parvec.engine`);
        ``on_epoch_end(epoch, stats)`` after each (the shards then hold the snapshot of that epoch's end).  A
        resumed run (``resume=``) passes its snapshot's epoch and, from a mid-epoch snapshot, its
        :class:`parvec.engine.Position` (``resume_at``: :meth:`resume_position`); ``schedule`` is the learning
        rate's (default: linear over ``epochs`` of this corpus).

        Example:
            >>> stats = run.train(epochs=5)  # doctest: +SKIP
        """
        cfg = self.config
        epochs = cfg.epochs if epochs is None else epochs
        schedule = schedule if schedule is not None else Schedule.of(cfg, self.words_per_epoch, epochs)
        engine = RunEngine(ShardedRunDriver(self), cfg, schedule, epochs=epochs, start_epoch=start_epoch,
                           resume_at=resume_at, on_epoch_end=on_epoch_end, on_progress=self.on_progress)
        self.stats = engine.run()
        return self.stats

    def resume_position(self, schedule: Schedule | None = None) -> Position | None:
        """Where the newest complete snapshot stands as a :class:`parvec.engine.Position` (its epoch, the units
        and words of it done, every epoch's figures up to it): what a checkpoint records and a resumed run's
        engine continues from; None at an epoch's start (nothing of the epoch done).

        Example:
            >>> run.resume_position().chunks_done  # doctest: +SKIP
            12
        """
        return self.snapshots.position(schedule)

    def train_epoch(self, ctx: EpochContext) -> UnitStats:
        """Hand out the epoch's units; at the epoch's end and every ``checkpoint_interval_s``, drain and snapshot;
        on a fault, restore the newest complete snapshot and re-queue the units trained since.  Returns once the
        snapshot of the epoch's end is complete."""
        return _Epoch(self, ctx).train()

    # ------------------------------------------------------------ the model back
    def row_blocks(self, block_rows: int | None = None) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
        """Yield ``(lo, hi, w_in rows, w_out rows)`` block by block, each assembled from the shards' column
        blocks; the next block is requested while the caller handles this one.  A shard lost meanwhile is
        restored from the snapshot of the last epoch's end (the model as trained) and the block asked again."""
        dim, snaps = self.config.dim, self.snapshots
        if block_rows is None:
            block_rows = max(1, ROW_BLOCK_BYTES // (4 * dim))
        starts = list(range(0, self.n_words, block_rows))

        def request(lo: int) -> list[Any]:
            hi = min(self.n_words, lo + block_rows)
            return [h.rows.remote(lo, hi) for h in self.shards]

        pending = request(starts[0]) if starts else []
        for k, lo in enumerate(starts):
            hi = min(self.n_words, lo + block_rows)
            while True:
                try:
                    parts = snaps.await_shards(pending, "reading the model from the shards")
                    break
                except ActorLost as fault:
                    snaps.recover_idle(fault)
                    pending = request(lo)
            pending = request(starts[k + 1]) if k + 1 < len(starts) else []
            w_in = np.empty((hi - lo, dim), dtype=np.float32)
            w_out = np.empty((hi - lo, dim), dtype=np.float32)
            for s, (a, b) in enumerate(parts):
                c_lo, c_hi = K.column_range(s, len(self.shards), dim)
                w_in[:, c_lo:c_hi] = a
                w_out[:, c_lo:c_hi] = b
            yield lo, hi, w_in, w_out

    def gather(self, w_in: np.ndarray, w_out: np.ndarray) -> None:
        """Copy the model from the shards into ``w_in``/``w_out`` (in place)."""
        for lo, hi, a, b in self.row_blocks():
            w_in[lo:hi] = a
            w_out[lo:hi] = b

    def report(self) -> ShardedReport:
        """The run's sharded figures (bytes per trained input word measured at the clients, memory, snapshots,
        faults: :class:`~parvec.distributed.sharded_report.ShardedReport`)."""
        infos = self.snapshots.shard_infos() if self.shards else []
        client_infos: list[ClientInfo] = []
        for c, h in enumerate(self.clients):
            if self.actors is not None and self.actors.alive[c]:
                with contextlib.suppress(Exception):
                    client_infos.append(self.ray.get(h.info.remote(), timeout=self.timeout_s))
        checkpoint_dir = None if self._temp_checkpoints is not None else str(self.checkpoint_dir)
        return ShardedReport.of(self.settings, self.config, self.totals, infos, client_infos,
                                self.snapshots.figures(), checkpoint_dir)


class _Epoch:
    """One epoch of a :class:`ShardedRun`: the units to hand out, those in flight on each client, the draining
    before a snapshot, the epoch's running figures."""

    def __init__(self, run: ShardedRun, ctx: EpochContext) -> None:
        self.run, self.ctx, self.snaps = run, ctx, run.snapshots
        self.queue, self.total = self.snaps.to_train()
        self.in_flight: dict[Any, tuple[int, Unit, float]] = {}
        self.busy = [0] * len(run.clients)
        self.draining_since: float | None = None
        self.interrupted: list[Unit] = []  # units a fault stopped
        run.position = (ctx.epoch, len(run.units) - len(self.queue))

    @property
    def number(self) -> int:
        """The epoch (0-based)."""
        return self.ctx.epoch

    @property
    def not_started(self) -> collections.deque[Unit]:
        """The units not handed out yet."""
        return self.queue

    def train(self) -> UnitStats:
        run, snaps, epoch = self.run, self.snaps, self.ctx.epoch
        last_progress = 0.0
        while True:
            fault: ActorLost | None = None
            self.interrupted = []
            try:
                if not self.queue and not self.in_flight:  # the epoch's end: what the next epoch starts from
                    snaps.take_epoch_end(epoch, self.total, self.draining_since)
                    return self.total
                self._snapshot_when_due()
                self._hand_out()
                self._collect()
            except ActorLost as lost:
                fault = lost
            if fault is not None:
                self.queue, self.total = snaps.recover(self, fault)
                self.draining_since = None
                run.position = (epoch, len(run.units) - len(self.queue))
                continue
            now = time.monotonic()
            for c, unit, started in self.in_flight.values():
                if now - started > run.timeout_s:
                    raise ParvecError(f"client {c} did not finish unit {unit.index} of epoch {epoch + 1} within "
                                      f"{run.timeout_s:g} s (Cluster.timeout_s)")
            if now - last_progress > 0.25 or not (self.queue or self.in_flight):
                last_progress = now
                self.ctx.progress(self.total.words, self.total.pairs, self.total.loss)

    def _snapshot_when_due(self) -> None:
        # Every checkpoint_interval_s: hand out nothing until the units in flight are done, then snapshot.
        if self.draining_since is None and self.queue and self.snaps.due():
            self.draining_since = time.monotonic()
        if self.draining_since is not None and not self.in_flight and self.queue:
            try:
                self.snaps.take(self.ctx.epoch, self.queue, self.total, self.draining_since)
            finally:
                self.draining_since = None

    def _hand_out(self) -> None:
        # Each live client gets units until its threads are busy.
        if self.draining_since is not None:
            return
        run, ctx = self.run, self.ctx
        assert run.actors is not None
        for c, client in enumerate(run.clients):
            while run.actors.alive[c] and self.busy[c] < run.settings.threads and self.queue:
                unit = self._take(c)
                self.in_flight[client.train_unit.remote(unit, ctx.epoch, ctx.schedule)] = (c, unit, time.monotonic())
                self.busy[c] += 1
                self.snaps.left_snapshot()
        if not self.in_flight and self.queue:
            raise ParvecError("every client was lost and none can be restarted: the run cannot continue")

    def _take(self, c: int) -> Unit:
        # The next unit for client c: in corpus order; with client_parts, the first of its own parts (part % C),
        # else (none of its own left) the queue's last, so a client loads few parts of others.
        run = self.run
        n = len(run.clients)
        if run.client_parts and n > 1:
            for i, unit in enumerate(self.queue):
                if unit.part % n == c:
                    del self.queue[i]
                    return unit
            return self.queue.pop()
        return self.queue.popleft()

    def _collect(self) -> None:
        # The units that ended in the next quarter second; a client or shard lost raises ActorLost.
        if not self.in_flight:
            return
        run, ray, epoch = self.run, self.run.ray, self.ctx.epoch
        ready, _ = ray.wait(list(self.in_flight), num_returns=1, timeout=0.25)
        for ref in ready:
            c, unit, _t = self.in_flight.pop(ref)
            self.busy[c] -= 1
            try:
                result = ray.get(ref, timeout=run.timeout_s)
            except ray.exceptions.RayActorError as exc:  # the client died
                self.snaps.client_failed(ClientFailure(c, epoch + 1, unit.index, first_line(exc)))
                self.interrupted.append(unit)
                raise ActorLost("client", c, first_line(exc)) from None
            except ShardLost as exc:  # a shard call of the unit failed: a shard was lost
                lost = cause(exc)
                shard = lost.args[0] if lost.args else -1
                detail = lost.args[1] if len(lost.args) > 1 else first_line(lost)
                self.interrupted.append(unit)
                self.snaps.minibatch_dropped()
                raise ActorLost("shard", int(shard), str(detail)) from None
            except ParvecError as exc:
                raise ParvecError(str(cause(exc))) from None
            except ray.exceptions.RayTaskError as exc:
                raise ParvecError(f"client {c} failed: {cause(exc)}") from None
            done: UnitStats = result
            self.total.add(done)
            run.totals.add(done)
            run.position = (epoch, run.position[1] + 1)

    def stop_in_flight(self, fault: ActorLost, timeout_s: float) -> list[Unit]:
        """Wait for every unit in flight to stop (the fenced shards refuse their next call); the units the fault
        interrupted (:class:`parvec.distributed.snapshots.EpochWork`), each trained again."""
        ray, epoch = self.run.ray, self.ctx.epoch
        deadline = time.monotonic() + timeout_s
        while self.in_flight:
            ready, _ = ray.wait(list(self.in_flight), num_returns=len(self.in_flight),
                                timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                raise ParvecError(f"after {fault.kind} {fault.index} was lost, the units in flight did not stop within "
                                  f"{timeout_s:g} s (Cluster.timeout_s)")
            for ref in ready:
                c, unit, _t = self.in_flight.pop(ref)
                self.busy[c] -= 1
                self.interrupted.append(unit)
                try:
                    ray.get(ref, timeout=timeout_s)
                except ray.exceptions.RayActorError as exc:
                    self.snaps.client_failed(ClientFailure(c, epoch + 1, unit.index, first_line(exc)))
                except ShardLost:
                    self.snaps.minibatch_dropped()
                except Exception:  # noqa: BLE001 - the unit is trained again whatever stopped it
                    pass
        return list(self.interrupted)


# --------------------------------------------------------------------------- the drivers
class ShardedRunDriver(DriverBase):
    """A :class:`ShardedRun`'s epochs as a :class:`parvec.engine.Driver` (the run's owner starts and closes it, and
    reads its figures: :meth:`ShardedRun.report`; this driver reports none of its own).

    ``gather_into`` (``(w_in, w_out)``): copy the model from the shards into these arrays after every epoch (the
    ``Word2Vec`` API, whose epoch callbacks and checkpoints read them); None leaves it on the shards (the CLI
    pipeline writes its outputs from the shards' files).  ``checkpoints``: every snapshot inside an epoch is handed
    to the engine as a mid-epoch checkpoint (``ctx.checkpoint``; the run layer writes it naming the snapshot); the
    snapshot of an epoch's end is the epoch-end checkpoint the run layer writes after the epoch.

    Example:
        >>> RunEngine(ShardedRunDriver(run), config, Schedule.of(config, run.words_per_epoch)).run()  # doctest: +SKIP
    """

    mode = "sharded"
    label = "sharded"
    error_label = "sharded"

    def __init__(self, run: ShardedRun | None = None, gather_into: tuple[np.ndarray, np.ndarray] | None = None,
                 checkpoints: bool = False) -> None:
        self.run = run
        self.gather_into = gather_into
        self.checkpoints = checkpoints

    @property
    def divergence_hint(self) -> str:
        """What else to lower when a sharded run diverges."""
        assert self.run is not None
        return f"minibatch_words (now {self.run.settings.minibatch_words})"

    def prepare(self, start_epoch: int, epochs: int) -> None:
        assert self.run is not None
        self.run.snapshots.begin(start_epoch)

    def train_epoch(self, ctx: EpochContext) -> EpochResult:
        assert self.run is not None
        carried = 0
        if ctx.resume is not None:  # a resumed epoch: the run's snapshot holds its first units, done before
            done = self.run.snapshots.units_done_in(ctx.epoch)
            if ctx.resume.units_done != done:
                raise ParvecError(f"the resumed position is {ctx.resume.units_done} units into epoch {ctx.epoch + 1} "
                                  f"but the shards' snapshot {done}")
            carried = ctx.resume.words
        if self.checkpoints:
            self.run.snapshots.on_snapshot = self._checkpoint(ctx, carried)
        total = self.run.train_epoch(ctx)
        if self.gather_into is not None:
            self.run.gather(*self.gather_into)
        # words: this call's (the units before a resumed snapshot were counted by the run that trained them)
        return EpochResult(words=total.words - carried, pairs=total.pairs, loss=total.loss)

    def _checkpoint(self, ctx: EpochContext, carried: int) -> Callable[[Snapshot], bool]:
        # A snapshot inside the epoch is a mid-epoch checkpoint (its words: this call's, the carried ones out).
        run = self.run
        assert run is not None

        def on_snapshot(snap: Snapshot) -> bool:
            if not snap.units_done or snap.epoch != ctx.epoch:  # an epoch's end: the run layer's, after it
                return False
            total = snap.total
            ctx.checkpoint(int(snap.units_done), int(snap.words_done), int(total.words) - carried,
                           int(total.pairs), float(total.loss))
            return run.snapshots.checkpointed == snap.id

        return on_snapshot

    def vectors_finite(self) -> bool:
        # The loss is checked by the engine; the vectors, when they are here.
        return self.gather_into is None or bool(np.isfinite(self.gather_into[0].sum()))

    def finish(self) -> None:
        pass

    def report(self) -> ShardedReport | None:
        """The run's sharded figures (:meth:`ShardedRun.report`), read while its actors run, as the run layer
        keeps a driver's figures."""
        return self.run.report() if self.run is not None else None


class ShardedDriver(ShardedRunDriver):
    """The sharded driver behind ``Word2Vec(..., cluster=Cluster(..., mode="sharded"))``.

    The model fits in the driver here: the shards start from ``w_in``/``w_out``'s column blocks and the trained
    model is gathered back into them after every epoch (the callbacks and checkpoints read it).  It enters the
    cluster's Ray session in :meth:`prepare` and leaves it in :meth:`finish`.  For models no process holds, use
    the CLI pipeline (``parvec train --cluster ... --mode sharded``, :mod:`parvec.distributed.pipeline`).

    Example:
        >>> driver = ShardedDriver(Cluster("local:4", mode="sharded", shards=2, clients=1), config, counts,
        ...                        w_in, w_out).use_corpus(corpus)  # doctest: +SKIP
        >>> stats = RunEngine(driver, config, Schedule.of(config, corpus.n_tokens)).run()  # doctest: +SKIP
    """

    def __init__(self, cluster: Cluster, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray,
                 w_out: np.ndarray) -> None:
        super().__init__(None, (w_in, w_out))
        self.cluster = cluster
        self.config = config.validate()
        self.settings = ShardedSettings.of(cluster, self.config)
        self.counts = np.asarray(counts, dtype=np.int64)
        n = len(self.counts)
        for name, w in (("w_in", w_in), ("w_out", w_out)):
            if w.shape != (n, config.dim) or w.dtype != np.float32:
                raise ParvecError(f"{name} must be float32 of shape ({n}, {config.dim})")
        self.w_in, self.w_out = w_in, w_out
        self.corpus: EncodedCorpus | None = None
        self._session: contextlib.ExitStack | None = None
        self._report: ShardedReport | None = None

    @property
    def divergence_hint(self) -> str:
        return f"minibatch_words (now {self.settings.minibatch_words})"

    def use_corpus(self, corpus: EncodedCorpus) -> ShardedDriver:
        """Train on ``corpus`` (put into Ray's object store when the run starts); returns self."""
        if len(corpus.vocab) != len(self.w_in):
            raise ParvecError(f"the corpus vocabulary has {len(corpus.vocab)} words but the model has "
                              f"{len(self.w_in)}")
        self.corpus = corpus
        return self

    def prepare(self, start_epoch: int, epochs: int) -> None:
        assert self.corpus is not None, "use_corpus() first"
        corpus = self.corpus
        self._session = contextlib.ExitStack()
        ray = self._session.enter_context(self.cluster.session())
        parts = [("refs", [ray.put(np.ascontiguousarray(corpus.tokens)),
                           ray.put(np.asarray(corpus.offsets, dtype=np.int64))])]
        self.run = ShardedRun(ray, self.cluster, self.config, self.counts, parts, [corpus.offsets],
                              init=(self.w_in, self.w_out), settings=self.settings)
        self._session.callback(self.run.close)
        super().prepare(start_epoch, epochs)

    def finish(self) -> None:
        if self._session is not None:
            try:
                if self.run is not None:
                    self._report = self.run.report()
            finally:
                self._session.close()
                self._session = None
                self.run = None

    def report(self) -> ShardedReport | None:
        """The last run's sharded figures (see :meth:`ShardedRun.report`)."""
        return self._report
