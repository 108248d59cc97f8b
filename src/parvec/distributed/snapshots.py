"""Consistent snapshots of a sharded run's shards, coordinated by the driver, and the recovery from them.

At every epoch's end and every ``checkpoint_interval_s`` the driver stops handing out units, lets the units in
flight finish, and tells every shard to write its columns tagged with a snapshot id (:meth:`SnapshotCoordinator.
take`); once all have answered the snapshot is complete: its record (its position: epoch, units done, the units
still to train and the epoch's running figures; each shard's files and their CRC-32s) goes to ``manifest.json``
and to ``on_snapshot`` (:class:`parvec.distributed.sharded.ShardedRunDriver` hands it to the run layer, which
writes the checkpoint :meth:`parvec.distributed.pipeline.ShardedWord2Vec.saved_model` describes).  The model
the run starts from is snapshot "None" (the shards regenerate it); a resumed run starts from its checkpoint's
record (:func:`check_resume` refuses one this run cannot continue).

When a shard or a client is lost (:meth:`SnapshotCoordinator.recover`), the driver fences the shards (the units
in flight stop at their next call), waits for Ray to restart the lost actors, has every shard restore the newest
complete snapshot, re-queues every unit trained since it, and goes on: with one client thread the run is bit for
bit the run without the fault.  The epoch that was training (:class:`EpochWork`) stops its units in flight and
takes back the units to train again.  One line per fault goes to standard error and one record to the report
(:class:`parvec.distributed.supervise.FaultRecord`).  The records (:class:`Snapshot` and the others) are in
:mod:`parvec.distributed.snapshot_records`.  A shard that cannot come back, or a snapshot that cannot be
written or read, ends the run with a :class:`ParvecError` naming the shard.

Example:
    >>> snaps = SnapshotCoordinator(2, 60.0, units, units_crc32(units), 100, Path("ck"))  # doctest: +SKIP
    >>> snaps.newest.describe()  # doctest: +SKIP
    'the model the run started from (epoch 1 unit 0)'
"""

from __future__ import annotations

import collections
import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from parvec.distributed.sharded_report import ShardInfo
from parvec.distributed.sharded_start import ShardedActors
from parvec.distributed.snapshot_records import (
    ClientFailure,
    EpochFigures,
    ShardFiles,
    ShardRestored,
    ShardSnapshot,
    Snapshot,
    SnapshotCost,
    SnapshotFigures,
)
from parvec.distributed.supervise import ActorLost, FaultRecord, await_calls, await_restart, report_fault
from parvec.distributed.units import Unit, UnitStats
from parvec.distributed.wire import ShardLost
from parvec.engine import Position
from parvec.errors import ParvecError
from parvec.fileio import atomic_output
from parvec.kernels import sharded as K
from parvec.schedule import Schedule

__all__ = ["EpochWork", "IdleEpoch", "Snapshot", "SnapshotCoordinator", "check_resume"]


def check_resume(snap: Snapshot, shards: int, n_words: int, dim: int, units: Sequence[Unit], crc: int) -> None:
    """Refuse a snapshot record that this run cannot continue (another shard count, vocabulary, dimension or cut
    of the corpus into units: ``crc``, :func:`parvec.distributed.units.units_crc32`), naming what differs.

    Example:
        >>> one = Snapshot(1, 0, 0, 0, (), UnitStats(), (), 0.0, files=())
        >>> check_resume(one, 2, 10, 4, [], 0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        parvec.errors.ParvecError: the checkpoint's snapshot holds 0 shards' columns but this run has 2 shards: ...
    """
    files = snap.files or ()
    if snap.id is None or len(files) != shards:
        raise ParvecError(f"the checkpoint's snapshot holds {len(files)} shards' columns but this run has {shards} "
                          "shards: resume with the checkpoint's --shards")
    for s, f in enumerate(files):
        lo, hi = K.column_range(s, shards, dim)
        if list(f.shape) != [n_words, hi - lo]:
            raise ParvecError(f"the checkpoint's snapshot of shard {s} holds columns of shape {list(f.shape)}, but "
                              f"this run's shard {s} holds {n_words} words x columns {lo}..{hi - 1}")
    if snap.units != len(units) or snap.units_crc32 != crc:
        raise ParvecError(f"the corpus is cut into other units of work than the checkpoint's ({len(units)} units, the "
                          f"checkpoint's {snap.units}): give the same input, the same --max-sentence-length "
                          "and the checkpoint's byte ranges")


class EpochWork(Protocol):
    """The epoch a fault interrupts, as :meth:`SnapshotCoordinator.recover` sees it: its number (0-based), the
    units it had not handed out yet, and its units in flight, which it stops (:meth:`stop_in_flight`).

    Example:
        >>> IdleEpoch(0, ()).stop_in_flight(ActorLost("shard", 0, "died"), 5.0)
        []
    """

    @property
    def number(self) -> int: ...

    @property
    def not_started(self) -> Sequence[Unit]: ...

    def stop_in_flight(self, fault: ActorLost, timeout_s: float) -> list[Unit]:
        """Wait (at most ``timeout_s``) for every unit in flight to stop (the fenced shards refuse their next
        call); the units the fault interrupted, each to train again."""
        ...


@dataclass(frozen=True)
class IdleEpoch:
    """No epoch training (between epochs, or after training): nothing in flight, ``queue`` not handed out.

    Example:
        >>> IdleEpoch(2, ()).number
        2
    """

    number: int
    not_started: Sequence[Unit] = field(default=())

    def stop_in_flight(self, fault: ActorLost, timeout_s: float) -> list[Unit]:
        """Nothing is in flight: nothing interrupted."""
        return []


class SnapshotCoordinator:
    """The snapshots of one sharded run (module docstring): their ids, the newest complete one, the one the newest
    checkpoint names (kept by the shards), the finished epochs' figures, the faults' figures, and the recovery
    from them.  It works on the run's ``actors`` (set once they have started); ``units`` are the run's units in
    order.

    Example:
        >>> snaps = SnapshotCoordinator(2, 60.0, units, units_crc32(units), 100, Path("ck"))  # doctest: +SKIP
        >>> snaps.take(0, queue, total, None)  # doctest: +SKIP
    """

    def __init__(self, shards: int, interval_s: float, units: list[Unit], units_crc32: int, dim: int,
                 directory: Path, resume: Snapshot | None = None,
                 on_snapshot: Callable[[Snapshot], bool] | None = None) -> None:
        self.shards, self.interval_s = shards, interval_s
        self.units, self.units_crc32, self.dim, self.directory = units, units_crc32, dim, directory
        self.words_per_epoch = sum(u.words for u in units)
        self.on_snapshot = on_snapshot
        self.actors: ShardedActors | None = None
        # Finished epochs' figures (words, pairs, summed loss), kept in every snapshot: a resumed run's report.
        self.epoch_figures: tuple[EpochFigures, ...] = ()
        self.log: list[SnapshotCost] = []  # each snapshot taken: its epoch, seconds, bytes
        self.newest: Snapshot = self.initial(0)
        self.next_id = 1
        self.checkpointed: int | None = None  # the snapshot the newest checkpoint names (kept by the shards)
        if resume is not None:
            assert resume.id is not None, "a resumed run starts from a snapshot the shards wrote"
            self.newest = resume
            self.next_id = resume.id + 1
            self.checkpointed = resume.id
            self.epoch_figures = resume.epochs
        self.at_snapshot = True  # the shards hold exactly the newest complete snapshot (no unit since)
        self.last_t = time.monotonic()
        # The figures of the faults (report keys): units and words trained again, unit attempts a fault stopped.
        self.faults: list[FaultRecord] = []
        self.requeued_units = self.requeued_words = self.dropped = 0
        self.client_failures: list[ClientFailure] = []

    @property
    def _actors(self) -> ShardedActors:
        assert self.actors is not None, "the run's actors have not started"
        return self.actors

    # ------------------------------------------------------------ positions
    def initial(self, epoch: int, snap_id: int | None = None,
                files: tuple[ShardFiles, ...] | None = None) -> Snapshot:
        """The state at the start of ``epoch``: snapshot None is the model the run starts from, which every shard
        regenerates (nothing on disk); after an earlier call (or resumed), the newest snapshot (its end)."""
        return Snapshot(snap_id, epoch, 0, 0, tuple(u.index for u in self.units), UnitStats(acks=[0] * self.shards),
                        self.epoch_figures, time.time(), files=files)

    def begin(self, start_epoch: int) -> None:
        """Before the first epoch of a call: what the shards hold now is the model the run started from, or
        (after an earlier call) the newest snapshot."""
        snap = self.newest
        if snap.epoch != start_epoch or snap.units_done == 0:  # a resumed snapshot in start_epoch stays
            self.newest = self.initial(start_epoch, snap.id, snap.files)
        self.last_t = time.monotonic()

    def units_done_in(self, epoch: int) -> int:
        """The units of ``epoch`` the newest snapshot holds trained (a resumed epoch's first units)."""
        return int(self.newest.units_done) if self.newest.epoch == epoch else 0

    def position(self, schedule: Schedule | None = None) -> Position | None:
        """Where the newest complete snapshot stands (:meth:`Snapshot.position`)."""
        return self.newest.position(schedule)

    def to_train(self, snap: Snapshot | None = None) -> tuple[collections.deque[Unit], UnitStats]:
        """The units still to train at a snapshot (default: the newest), in order, and the epoch's figures then."""
        snap = self.newest if snap is None else snap
        return collections.deque(self.units[i] for i in snap.queue), snap.running_total()

    def due(self) -> bool:
        """Whether ``checkpoint_interval_s`` has passed since the newest snapshot."""
        return time.monotonic() - self.last_t >= self.interval_s

    def restore_args(self, s: int) -> tuple[Any, ...]:
        """What shard ``s`` restores the newest complete snapshot from: its id, its directory, the files' CRC-32s
        and, under a URL checkpoint directory, the directory's URL (where a node that does not hold it reads it)."""
        from parvec import storage

        snap = self.newest
        files = snap.files
        if snap.id is None or not files:
            return (snap.id,)
        crc = files[s].crc32
        return (snap.id, files[s].directory, dict(crc) if crc is not None else None,
                storage.url_of(files[s].directory))

    # ------------------------------------------------------------ the figures
    def left_snapshot(self) -> None:
        """A unit was handed out: the shards no longer hold exactly the newest snapshot."""
        self.at_snapshot = False

    def client_failed(self, failure: ClientFailure) -> None:
        """A client was lost with a unit in flight (the report's ``client_failures``)."""
        self.client_failures.append(failure)

    def minibatch_dropped(self) -> None:
        """A unit's shard call failed because a shard was lost (the report's ``dropped_minibatches``)."""
        self.dropped += 1

    def mark_checkpointed(self, snap_id: int) -> None:
        """A checkpoint naming snapshot ``snap_id`` was written: the shards keep it until a newer one is."""
        self.checkpointed = snap_id

    def figures(self) -> SnapshotFigures:
        """The report's figures of the snapshots taken and the faults recovered."""
        return SnapshotFigures(tuple(f.to_dict() for f in self.faults), self.requeued_units, self.requeued_words,
                               self.dropped, tuple(self.client_failures), tuple(self.log), self.interval_s)

    # ------------------------------------------------------------ taking one
    def take(self, epoch: int, queue: collections.deque[Unit], total: UnitStats, draining_since: float | None,
             epochs: tuple[EpochFigures, ...] | None = None) -> None:
        """Every shard writes its columns (no unit in flight: the state is one all shards agree on); the snapshot
        counts once all have answered and the manifest names it.  ``epochs``: the finished epochs' figures, with
        this one's at an epoch's end.  A shard lost meanwhile raises :class:`ActorLost`."""
        actors = self._actors
        t0 = time.monotonic()
        snap_id = self.next_id
        self.next_id += 1
        keep = [self.newest.id, self.checkpointed]
        results: list[ShardSnapshot] = self.await_shards([h.snapshot.remote(snap_id, keep) for h in actors.shards],
                                                          "writing a snapshot")
        n = len(actors.shards)
        snap = Snapshot(snap_id, epoch, len(self.units) - len(queue),
                        self.words_per_epoch - sum(u.words for u in queue) if queue else 0,
                        tuple(u.index for u in queue), dataclasses.replace(total, acks=list(total.acks)),
                        self.epoch_figures if epochs is None else epochs, time.time(), shards=n,
                        directory=str(self.directory),
                        files=tuple(dataclasses.replace(r.files, columns=K.column_range(s, n, self.dim))
                                    for s, r in enumerate(results)),
                        words_per_epoch=self.words_per_epoch, units=len(self.units), units_crc32=self.units_crc32)
        try:
            with atomic_output(self.directory / "manifest.json", "w") as f:
                json.dump(snap.to_json(), f)
        except (OSError, ParvecError) as exc:
            raise ParvecError(f"{self.directory}: cannot write the snapshot manifest: {exc}") from None
        self.newest = snap
        self.epoch_figures = snap.epochs
        self.at_snapshot = True
        if self.on_snapshot is not None and self.on_snapshot(snap):
            self.checkpointed = snap_id
        now = time.monotonic()
        self.last_t = now
        self.log.append(SnapshotCost(epoch + 1 if snap.units_done else epoch, snap.units_done, now - t0,
                                     t0 - draining_since if draining_since else 0.0,
                                     int(sum(r.bytes for r in results)), max(r.seconds for r in results)))

    def take_epoch_end(self, epoch: int, total: UnitStats, draining_since: float | None) -> None:
        """The snapshot of ``epoch``'s end: the one the next epoch (or the export) starts from."""
        figures = EpochFigures(epoch + 1, total.words, total.pairs, total.loss)
        self.take(epoch + 1, collections.deque(self.units), UnitStats(acks=[0] * len(self._actors.shards)),
                  draining_since, (*self.epoch_figures, figures))

    def await_shards(self, refs: list[Any], what: str) -> list[Any]:
        """The answers of one call per shard (:func:`parvec.distributed.supervise.await_calls`)."""
        actors = self._actors
        return await_calls(actors.ray, refs, kind="shard", what=what, timeout_s=actors.settings.timeout_s,
                           lost=(ShardLost,))

    def await_uploads(self, snap_id: int | None) -> None:
        """Wait until every shard has uploaded snapshot ``snap_id`` to the checkpoint URL (at once without one)."""
        if snap_id is not None:
            self.await_shards([h.uploaded.remote(snap_id) for h in self._actors.shards], "uploading the snapshot")

    def restore_all(self, what: str) -> list[ShardRestored]:
        """Every shard restores the newest complete snapshot; their answers (seconds each)."""
        shards = self._actors.shards
        return self.await_shards([h.restore.remote(*self.restore_args(s)) for s, h in enumerate(shards)], what)

    def shard_infos(self) -> list[ShardInfo]:
        """Every shard's ``info()``; a shard lost meanwhile is restored from the newest snapshot first (between
        epochs or after training: nothing is retrained)."""
        while True:
            try:
                return self.await_shards([h.info.remote() for h in self._actors.shards], "reading the shards' figures")
            except ActorLost as fault:
                self.recover_idle(fault)

    # ------------------------------------------------------------ recovering from one
    def recover(self, epoch: EpochWork, fault: ActorLost) -> tuple[collections.deque[Unit], UnitStats]:
        """Stop ``epoch``'s units in flight, bring every shard and client back, restore the newest complete
        snapshot on every shard, and return the units to train again (every unit since the snapshot: those done
        and those the fault interrupted) with the epoch's figures at the snapshot.  One line and one report record
        say so."""
        t0 = time.monotonic()
        number = epoch.number
        not_started = {u.index for u in epoch.not_started}
        fences = [h.fence.remote() for h in self._actors.shards]  # the units in flight stop at their next shard call
        interrupted = epoch.stop_in_flight(fault, self._actors.settings.timeout_s)
        lost_shards, restored = self._restore_shards(number, fences)
        lost_clients = self._clients_back()
        snap = self.newest
        queue, total = self.to_train(snap)
        again = [u for u in queue if u.index not in not_started]
        words = sum(u.words for u in again)
        self.requeued_units += len(again)
        self.requeued_words += words
        seconds = time.monotonic() - t0
        self.last_t = time.monotonic()
        self.at_snapshot = True
        lost = [("shard", s) for s in sorted(lost_shards)] + [("client", c) for c in sorted(lost_clients)]
        reasons = [lost_shards[s] for s in sorted(lost_shards)] + [lost_clients[c] for c in sorted(lost_clients)]
        if not lost:  # nothing restarted: a shard or client that did not answer for a while
            lost, reasons = [(fault.kind, fault.index)], [fault.detail]
        names = " and ".join(self._actors.what(k, i) for k, i in lost)
        why = "; ".join(reasons)
        idle = not interrupted and len(not_started) == len(self.units)  # between epochs or after training
        where = snap.describe()
        details = {"snapshot": {"id": snap.id, "epoch": snap.completed_epoch, "units_done": snap.units_done,
                                "description": where},
                   "restore_seconds_max": max(r.seconds for r in restored)}
        record = FaultRecord(lost[0][0], lost[0][1], "gather" if idle else "train", number + 1,
                             [f"{k} {i}" for k, i in lost], why, restored=where, words_retrained=words,
                             units_retrained=len(again), recovery_seconds=seconds, details=details)
        report_fault(self.faults, record, f"{names} {'was' if len(lost) == 1 else 'were'} lost "
                     f"{f'after epoch {number + 1}' if idle else f'in epoch {number + 1}'} ({why[:200]}); every "
                     f"shard restored {where}; {words:,} words retrained [recovered in {seconds:.1f} s]")
        return queue, total

    def _restore_shards(self, epoch: int, fences: list[Any]) -> tuple[dict[int, str], list[ShardRestored]]:
        # Every shard back and restored (again, should another be lost meanwhile); the shards Ray restarted.
        actors = self._actors
        ray, st = actors.ray, actors.settings
        lost_shards: dict[int, str] = {}
        for _attempt in range(len(actors.shards) * (st.max_restarts + 1) + 1):
            self._shards_back(epoch)
            ray.wait(fences, num_returns=len(fences), timeout=st.timeout_s)  # no fence may land after the restore
            infos = self.await_shards([h.info.remote() for h in actors.shards], "reading the shards' state")
            for s, info in enumerate(infos):
                if info.pid != actors.shard_pids[s]:
                    lost_shards[s] = f"its process {actors.shard_pids[s]} died; Ray restarted it as {info.pid}"
                    actors.shard_pids[s] = info.pid
            try:
                return lost_shards, self.restore_all(f"restoring {self.newest.describe()}")
            except ActorLost:  # another shard lost while restoring: bring it back and restore again
                fences = [h.fence.remote() for h in actors.shards]
        raise ParvecError("the shards kept failing while restoring a snapshot: the run cannot continue")

    def _shards_back(self, epoch: int) -> None:
        # Wait for every shard to answer; one that cannot come back ends the run, naming it.
        actors = self._actors
        st = actors.settings
        deadline = time.monotonic() + st.timeout_s
        for s, h in enumerate(actors.shards):
            if await_restart(actors.ray, h, deadline).back:
                continue
            if time.monotonic() < deadline:
                why = f"its restarts, Cluster.max_restarts={st.max_restarts}, are used up, or its node is gone"
            else:
                why = f"not back within {st.timeout_s:g} s, Cluster.timeout_s"
            raise ParvecError(f"shard {s} was lost and cannot be restarted ({why}) in epoch {epoch + 1}: the run "
                              "cannot continue without its columns")

    def _clients_back(self) -> dict[int, str]:
        # Every live client back; one that cannot come back is dropped (training goes on without it).
        actors = self._actors
        ray, st = actors.ray, actors.settings
        lost_clients: dict[int, str] = {}
        for c, h in enumerate(actors.clients):
            if not actors.alive[c]:
                continue
            if not await_restart(ray, h, time.monotonic() + st.timeout_s).back:
                actors.alive[c] = False
                lost_clients[c] = (f"its process {actors.client_pids[c]} died and cannot be restarted (Cluster."
                                   f"max_restarts={st.max_restarts}); training goes on without it")
                continue
            pid = ray.get(h.ping.remote(), timeout=st.timeout_s)
            if pid != actors.client_pids[c]:
                lost_clients[c] = f"its process {actors.client_pids[c]} died; Ray restarted it as {pid}"
                actors.client_pids[c] = pid
        if not any(actors.alive):
            raise ParvecError("every client was lost and none can be restarted: the run cannot continue")
        return lost_clients

    def recover_idle(self, fault: ActorLost) -> None:
        """A shard lost between epochs or after training (gathering, export): the newest complete snapshot is the
        model as trained, so restoring it loses nothing."""
        if not self.at_snapshot:
            raise ParvecError(f"{fault.kind} {fault.index} was lost while no snapshot held the shards' state "
                              f"({fault.detail}): the run cannot continue")
        snap = self.newest
        epoch = snap.epoch if snap.units_done else max(snap.epoch - 1, 0)
        self.recover(IdleEpoch(epoch, self.to_train()[0]), fault)
