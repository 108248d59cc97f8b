"""Consistent snapshots of a sharded run's shards, coordinated by the driver, and the recovery from them.

At every epoch's end and every ``checkpoint_interval_s`` the driver stops handing out units, lets the units in
flight finish, and tells every shard to write its columns tagged with a snapshot id (:meth:`SnapshotCoordinator.
take`); once all have answered the snapshot is complete: its record (its position: epoch, units done, the units
still to train and the epoch's running figures; each shard's files and their CRC-32s) goes to ``manifest.json``
and to ``on_snapshot`` (which checkpoints it: :class:`parvec.distributed.pipeline.ShardCheckpoints`).  The model
the run starts from is snapshot "None" (the shards regenerate it); a resumed run starts from its checkpoint's
record (:func:`check_resume` refuses one this run cannot continue).

When a shard or a client is lost (:meth:`SnapshotCoordinator.recover`), the driver fences the shards (the units
in flight stop at their next call), waits for Ray to restart the lost actors, has every shard restore the newest
complete snapshot, re-queues every unit trained since it, and goes on: with one client thread the run is bit for
bit the run without the fault.  One line per fault goes to standard error and one record to the report
(:class:`parvec.distributed.supervise.FaultRecord`).  A shard that cannot come back, or a snapshot that cannot be
written or read, ends the run with a :class:`ParvecError` naming the shard.

Example:
    >>> snapshot_position({"epoch": 0, "units_done": 0}) is None
    True
"""

from __future__ import annotations

import collections
import copy
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from parvec.distributed.sharded_start import ShardedActors
from parvec.distributed.supervise import ActorLost, FaultRecord, await_calls, await_restart, first_line, report_fault
from parvec.distributed.units import Unit, UnitStats
from parvec.distributed.wire import ShardLost
from parvec.engine import Position
from parvec.errors import ParvecError
from parvec.fileio import atomic_output
from parvec.kernels import sharded as K
from parvec.schedule import Schedule

__all__ = ["SnapshotCoordinator", "check_resume", "describe_snapshot", "report_figures", "snapshot_position"]

Snapshot = dict[str, Any]  # a snapshot's record (module docstring); JSON in manifest.json and checkpoints


def check_resume(snap: Snapshot, shards: int, n_words: int, dim: int, units: Sequence[Unit], crc: int) -> None:
    """Refuse a snapshot record that this run cannot continue (another shard count, vocabulary, dimension or cut
    of the corpus into units: ``crc``, :func:`parvec.distributed.units.units_crc32`), naming what differs.

    Example:
        >>> check_resume({"id": 1, "files": []}, 2, 10, 4, [], 0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        parvec.errors.ParvecError: the checkpoint's snapshot holds 0 shards' columns but this run has 2 shards: ...
    """
    files = snap.get("files") or []
    if snap.get("id") is None or len(files) != shards:
        raise ParvecError(f"the checkpoint's snapshot holds {len(files)} shards' columns but this run has {shards} "
                          "shards: resume with the checkpoint's --shards")
    for s, f in enumerate(files):
        lo, hi = K.column_range(s, shards, dim)
        if list(f.get("shape", [])) != [n_words, hi - lo]:
            raise ParvecError(f"the checkpoint's snapshot of shard {s} holds columns of shape {f.get('shape')}, but "
                              f"this run's shard {s} holds {n_words} words x columns {lo}..{hi - 1}")
    if snap.get("units") != len(units) or snap.get("units_crc32") != crc:
        raise ParvecError(f"the corpus is cut into other units of work than the checkpoint's ({len(units)} units, the "
                          f"checkpoint's {snap.get('units')}): give the same input, the same --max-sentence-length "
                          "and the checkpoint's byte ranges")


def snapshot_position(snap: Snapshot, schedule: Schedule | None = None) -> Position | None:
    """A mid-epoch snapshot record's place as a :class:`parvec.engine.Position` (units for chunks), None for one
    at an epoch's start; ``schedule`` gives the learning rate there (informational).

    Example:
        >>> snapshot_position({"epoch": 0, "units_done": 0}) is None
        True
    """
    if not snap.get("units_done"):
        return None
    epoch = int(snap["epoch"])
    figures = list(snap.get("epochs", []))[:epoch]
    if len(figures) != epoch:
        raise ParvecError(f"the snapshot in epoch {epoch + 1} has the figures of {len(figures)} earlier epochs")
    total = snap["total"]
    words_done = int(snap["words_done"])
    alpha = schedule.alpha_at(schedule.position(epoch, words_done)) if schedule is not None else 0.0
    return Position(epoch, int(snap["units_done"]), words_done,
                    [int(f["words"]) for f in figures] + [int(total["words"])],
                    [int(f["pairs"]) for f in figures] + [int(total["pairs"])],
                    [float(f["loss"]) for f in figures] + [float(total["loss"])], alpha)


def describe_snapshot(snap: Snapshot) -> str:
    """A snapshot in words, for the fault lines.

    Example:
        >>> describe_snapshot({"id": 3, "epoch": 2, "units_done": 0})
        "the snapshot of epoch 2's end"
    """
    if snap["id"] is None:
        return f"the model the run started from (epoch {snap['epoch'] + 1} unit 0)"
    if snap["units_done"] == 0 and snap["epoch"] > 0:
        return f"the snapshot of epoch {snap['epoch']}'s end"
    return f"the snapshot of epoch {snap['epoch'] + 1} unit {snap['units_done']}"


class SnapshotCoordinator:
    """The snapshots of one sharded run (module docstring): their ids, the newest complete one, the one the newest
    checkpoint names (kept by the shards), the finished epochs' figures, and the recovery from them.  It works on
    the run's ``actors`` (set once they have started); ``units`` are the run's units in order.

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
        self.epoch_figures: list[dict[str, Any]] = []
        self.log: list[dict[str, Any]] = []  # each snapshot taken: its epoch, seconds, bytes
        self.newest: Snapshot = self.initial(0)
        self.next_id = 1
        self.checkpointed: int | None = None  # the snapshot the newest checkpoint names (kept by the shards)
        if resume is not None:
            self.newest = copy.deepcopy(resume)
            self.next_id = int(resume["id"]) + 1
            self.checkpointed = int(resume["id"])
            self.epoch_figures = list(resume.get("epochs", []))
        self.at_snapshot = True  # the shards hold exactly the newest complete snapshot (no unit since)
        self.last_t = time.monotonic()
        # The figures of the faults (report keys): units and words trained again, unit attempts a fault stopped.
        self.faults: list[dict[str, Any]] = []
        self.requeued_units = self.requeued_words = self.dropped = 0
        self.client_failures: list[dict[str, Any]] = []

    @property
    def _actors(self) -> ShardedActors:
        assert self.actors is not None, "the run's actors have not started"
        return self.actors

    # ------------------------------------------------------------ positions
    def initial(self, epoch: int, snap_id: int | None = None, files: list[dict[str, Any]] | None = None) -> Snapshot:
        """The state at the start of ``epoch``: snapshot None is the model the run starts from, which every shard
        regenerates (nothing on disk); after an earlier call (or resumed), the newest snapshot (its end)."""
        snap = {"id": snap_id, "epoch": epoch, "units_done": 0, "words_done": 0, "queue": [u.index for u in self.units],
                "total": UnitStats(acks=[0] * self.shards).to_dict(), "epochs": list(self.epoch_figures),
                "time": time.time()}
        if files is not None:
            snap["files"] = files
        return snap

    def begin(self, start_epoch: int) -> None:
        """Before the first epoch of a call: what the shards hold now is the model the run started from, or
        (after an earlier call) the newest snapshot."""
        snap = self.newest
        if snap["epoch"] != start_epoch or snap["units_done"] == 0:  # a resumed snapshot in start_epoch stays
            self.newest = self.initial(start_epoch, snap["id"], snap.get("files"))
        self.last_t = time.monotonic()

    def units_done_in(self, epoch: int) -> int:
        """The units of ``epoch`` the newest snapshot holds trained (a resumed epoch's first units)."""
        return int(self.newest["units_done"]) if self.newest["epoch"] == epoch else 0

    def position(self, schedule: Schedule | None = None) -> Position | None:
        """Where the newest complete snapshot stands (:func:`snapshot_position`)."""
        return snapshot_position(self.newest, schedule)

    def to_train(self, snap: Snapshot | None = None) -> tuple[collections.deque[Unit], UnitStats]:
        """The units still to train at a snapshot (default: the newest), in order, and the epoch's figures then."""
        snap = self.newest if snap is None else snap
        return (collections.deque(self.units[i] for i in snap["queue"]),
                UnitStats.from_dict(copy.deepcopy(snap["total"])))

    def due(self) -> bool:
        """Whether ``checkpoint_interval_s`` has passed since the newest snapshot."""
        return time.monotonic() - self.last_t >= self.interval_s

    def restore_args(self, s: int) -> tuple[Any, ...]:
        """What shard ``s`` restores the newest complete snapshot from: its id, its directory and the files'
        CRC-32s."""
        snap = self.newest
        files = snap.get("files")
        if snap["id"] is None or not files:
            return (snap["id"],)
        return (snap["id"], files[s]["directory"], files[s]["crc32"])

    # ------------------------------------------------------------ taking one
    def take(self, epoch: int, queue: collections.deque[Unit], total: UnitStats, draining_since: float | None,
             epochs: list[dict[str, Any]] | None = None) -> None:
        """Every shard writes its columns (no unit in flight: the state is one all shards agree on); the snapshot
        counts once all have answered and the manifest names it.  ``epochs``: the finished epochs' figures, with
        this one's at an epoch's end.  A shard lost meanwhile raises :class:`ActorLost`."""
        actors = self._actors
        t0 = time.monotonic()
        snap_id = self.next_id
        self.next_id += 1
        keep = [self.newest["id"], self.checkpointed]
        results = self.await_shards([h.snapshot.remote(snap_id, keep) for h in actors.shards], "writing a snapshot")
        units_done = len(self.units) - len(queue)
        n = len(actors.shards)
        snap: Snapshot = {"id": snap_id, "epoch": epoch, "units_done": units_done,
                "words_done": self.words_per_epoch - sum(u.words for u in queue) if queue else 0,
                "queue": [u.index for u in queue], "total": copy.deepcopy(total.to_dict()),
                "epochs": list(self.epoch_figures if epochs is None else epochs), "time": time.time(),
                "shards": n, "directory": str(self.directory),
                "files": [{"directory": r["directory"], "shape": r["shape"], "crc32": r["crc32"],
                           "columns": list(K.column_range(s, n, self.dim))} for s, r in enumerate(results)],
                "words_per_epoch": self.words_per_epoch, "units": len(self.units), "units_crc32": self.units_crc32}
        try:
            with atomic_output(self.directory / "manifest.json", "w") as f:
                json.dump(snap, f)
        except (OSError, ParvecError) as exc:
            raise ParvecError(f"{self.directory}: cannot write the snapshot manifest: {exc}") from None
        self.newest = snap
        self.epoch_figures = list(snap["epochs"])
        self.at_snapshot = True
        if self.on_snapshot is not None and self.on_snapshot(copy.deepcopy(snap)):
            self.checkpointed = snap_id
        now = time.monotonic()
        self.last_t = now
        self.log.append({"epoch": epoch + 1 if snap["units_done"] else epoch, "units_done": snap["units_done"],
                         "seconds": now - t0, "drain_seconds": t0 - draining_since if draining_since else 0.0,
                         "bytes": int(sum(r["bytes"] for r in results)),
                         "shard_seconds_max": max(r["seconds"] for r in results)})

    def take_epoch_end(self, epoch: int, total: UnitStats, draining_since: float | None) -> None:
        """The snapshot of ``epoch``'s end: the one the next epoch (or the export) starts from."""
        figures = {"epoch": epoch + 1, "words": total.words, "pairs": total.pairs, "loss": total.loss}
        self.take(epoch + 1, collections.deque(self.units), UnitStats(acks=[0] * len(self._actors.shards)),
                  draining_since, [*self.epoch_figures, figures])

    def await_shards(self, refs: list[Any], what: str) -> list[Any]:
        """The answers of one call per shard (:func:`parvec.distributed.supervise.await_calls`)."""
        actors = self._actors
        return await_calls(actors.ray, refs, kind="shard", what=what, timeout_s=actors.settings.timeout_s,
                           lost=(ShardLost,))

    def restore_all(self, what: str) -> list[Any]:
        """Every shard restores the newest complete snapshot; their answers (seconds each)."""
        shards = self._actors.shards
        return self.await_shards([h.restore.remote(*self.restore_args(s)) for s, h in enumerate(shards)], what)

    def shard_infos(self) -> list[dict[str, Any]]:
        """Every shard's ``info()``; a shard lost meanwhile is restored from the newest snapshot first (between
        epochs or after training: nothing is retrained)."""
        while True:
            try:
                return self.await_shards([h.info.remote() for h in self._actors.shards], "reading the shards' figures")
            except ActorLost as fault:
                self.recover_idle(fault)

    # ------------------------------------------------------------ recovering from one
    def recover(self, epoch: int, fault: ActorLost, queue: collections.deque[Unit],
                in_flight: dict[Any, tuple[int, Unit, float]], busy: list[int],
                interrupted: list[Unit]) -> tuple[collections.deque[Unit], UnitStats]:
        """Stop the units in flight, bring every shard and client back, restore the newest complete snapshot on
        every shard, and return the units to train again (every unit since the snapshot: those done and those the
        fault interrupted) with the epoch's figures at the snapshot.  One line and one report record say so."""
        t0 = time.monotonic()
        not_started = {u.index for u in queue}
        fences = [h.fence.remote() for h in self._actors.shards]  # the units in flight stop at their next shard call
        self._stop_in_flight(epoch, fault, in_flight, busy, interrupted)
        lost_shards, restored = self._restore_shards(epoch, fences)
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
        where = describe_snapshot(snap)
        details = {"snapshot": {"id": snap["id"], "epoch": snap["epoch"] + 1 if snap["units_done"] or snap["id"] is None
                                else snap["epoch"], "units_done": snap["units_done"], "description": where},
                   "restore_seconds_max": max(r["seconds"] for r in restored)}
        record = FaultRecord(lost[0][0], lost[0][1], "gather" if idle else "train", epoch + 1,
                             [f"{k} {i}" for k, i in lost], why, restored=where, words_retrained=words,
                             units_retrained=len(again), recovery_seconds=seconds, details=details)
        report_fault(self.faults, record, f"{names} {'was' if len(lost) == 1 else 'were'} lost "
                     f"{f'after epoch {epoch + 1}' if idle else f'in epoch {epoch + 1}'} ({why[:200]}); every shard "
                     f"restored {where}; {words:,} words retrained [recovered in {seconds:.1f} s]")
        return queue, total

    def _stop_in_flight(self, epoch: int, fault: ActorLost, in_flight: dict[Any, tuple[int, Unit, float]],
                        busy: list[int], interrupted: list[Unit]) -> None:
        # Wait for every unit in flight to stop (the fenced shards refuse their next call); each is trained again.
        ray, timeout = self._actors.ray, self._actors.settings.timeout_s
        deadline = time.monotonic() + timeout
        while in_flight:
            ready, _ = ray.wait(list(in_flight), num_returns=len(in_flight),
                                timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                raise ParvecError(f"after {fault.kind} {fault.index} was lost, the units in flight did not stop within "
                                  f"{timeout:g} s (Cluster.timeout_s)")
            for ref in ready:
                c, unit, _t = in_flight.pop(ref)
                busy[c] -= 1
                interrupted.append(unit)
                try:
                    ray.get(ref, timeout=timeout)
                except ray.exceptions.RayActorError as exc:
                    self.client_failures.append({"client": c, "epoch": epoch + 1, "unit": unit.index,
                                                 "error": first_line(exc)})
                except ShardLost:
                    self.dropped += 1
                except Exception:  # noqa: BLE001 - the unit is trained again whatever stopped it
                    pass

    def _restore_shards(self, epoch: int, fences: list[Any]) -> tuple[dict[int, str], list[Any]]:
        # Every shard back and restored (again, should another be lost meanwhile); the shards Ray restarted.
        actors = self._actors
        ray, st = actors.ray, actors.settings
        lost_shards: dict[int, str] = {}
        for _attempt in range(len(actors.shards) * (st.max_restarts + 1) + 1):
            self._shards_back(epoch)
            ray.wait(fences, num_returns=len(fences), timeout=st.timeout_s)  # no fence may land after the restore
            infos = self.await_shards([h.info.remote() for h in actors.shards], "reading the shards' state")
            for s, info in enumerate(infos):
                if info["pid"] != actors.shard_pids[s]:
                    lost_shards[s] = f"its process {actors.shard_pids[s]} died; Ray restarted it as {info['pid']}"
                    actors.shard_pids[s] = info["pid"]
            try:
                return lost_shards, self.restore_all(f"restoring {describe_snapshot(self.newest)}")
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
        epoch = self.newest["epoch"]
        queue, _ = self.to_train()
        self.recover(max(epoch - 1, 0) if not self.newest["units_done"] else epoch, fault, queue, {},
                     [0] * len(self._actors.clients), [])


def report_figures(snaps: SnapshotCoordinator) -> dict[str, Any]:
    """A sharded run's report keys of its snapshots and faults (:meth:`SnapshotCoordinator.recover`'s records).

    Example:
        >>> report_figures(run.snapshots)["snapshots"]  # doctest: +SKIP
        4
    """
    log = snaps.log
    return {
        # Faults: each lost shard or client, the snapshot every shard restored, the words trained again.
        "faults": snaps.faults,
        "words_retrained": sum(f["words_retrained"] for f in snaps.faults),
        "requeued_units": snaps.requeued_units, "requeued_words": snaps.requeued_words,
        "dropped_minibatches": snaps.dropped, "client_failures": snaps.client_failures,
        # Consistent snapshots (every epoch's end and every checkpoint_interval_s): how many, their cost.
        "snapshots": len(log), "snapshot_interval_s": snaps.interval_s,
        "snapshot_seconds": sum(x["seconds"] for x in log),
        "snapshot_drain_seconds": sum(x["drain_seconds"] for x in log),
        "snapshot_bytes": log[-1]["bytes"] if log else 0,
        "snapshot_shard_seconds_max": max((x["shard_seconds_max"] for x in log), default=0.0),
    }
