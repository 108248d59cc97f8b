"""The records of a sharded run's snapshots (:mod:`parvec.distributed.snapshots`): a snapshot's place and files
(:class:`Snapshot`, :class:`ShardFiles`, :class:`EpochFigures`), what taking one cost (:class:`SnapshotCost`), a
client lost with a unit in flight (:class:`ClientFailure`) and the report's figures of the snapshots and faults
(:class:`SnapshotFigures`).  Each is frozen and has ``to_json``/``from_json``: the JSON is what ``manifest.json``,
a sharded checkpoint's ``model.json`` and the ``--report`` file hold, key for key.

Example:
    >>> snap = Snapshot.from_json({"id": None, "epoch": 0, "units_done": 0, "words_done": 0, "queue": [0, 1],
    ...                            "total": {"acks": [0]}, "epochs": [], "time": 0.0})
    >>> snap.id, snap.queue, snap.to_json()["total"]["words"]
    (None, (0, 1), 0)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from parvec.distributed.units import UnitStats
from parvec.engine import Position
from parvec.errors import ParvecError
from parvec.schedule import Schedule

__all__ = ["CheckpointRestored", "ClientFailure", "EpochFigures", "ShardFiles", "ShardRestored", "ShardSnapshot",
           "Snapshot", "SnapshotCost", "SnapshotFigures", "SnapshotPlan"]

JSON = dict[str, Any]  # a record's JSON object, as json.dump writes it


@dataclass(frozen=True)
class ShardFiles:
    """One shard's files of a snapshot: their ``directory``, the columns' ``shape`` (words x columns), each
    file's CRC-32 (``crc32``: ``in``, ``out``), the ``columns`` of the model they hold (None where a record
    did not say) and the Ray ``node`` whose disk holds them (the shard's; None where not known: not in the JSON,
    a task that reads them is placed there).

    Example:
        >>> f = ShardFiles.from_json({"directory": "/s/snap-1", "shape": [10, 4], "crc32": {"in": 1, "out": 2},
        ...                           "columns": [0, 4]})
        >>> f.shape, f.with_directory("snap-1").to_json()["directory"]
        ((10, 4), 'snap-1')
    """

    directory: str
    shape: tuple[int, ...]
    crc32: Mapping[str, int] | None = None
    columns: tuple[int, int] | None = None
    node: str | None = field(default=None, compare=False)

    def with_directory(self, directory: str) -> ShardFiles:
        """The same files, at ``directory`` (made absolute or relative to a checkpoint)."""
        return ShardFiles(directory, self.shape, self.crc32, self.columns, self.node)

    def to_json(self) -> JSON:
        """The record as a snapshot's ``files`` entry holds it."""
        out: JSON = {"directory": self.directory, "shape": list(self.shape)}
        if self.crc32 is not None:
            out["crc32"] = dict(self.crc32)
        if self.columns is not None:
            out["columns"] = list(self.columns)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ShardFiles:
        """The record :meth:`to_json` (or an older checkpoint) wrote."""
        columns = d.get("columns")
        crc = d.get("crc32")
        return cls(str(d["directory"]), tuple(int(x) for x in d.get("shape", ())),
                   dict(crc) if crc is not None else None,
                   (int(columns[0]), int(columns[1])) if columns is not None else None)


@dataclass(frozen=True)
class ShardSnapshot:
    """A shard's answer to writing a snapshot: its seconds, the bytes written, its process, and its files
    (:class:`ShardFiles`, without the columns: the driver knows them).

    Example:
        >>> ShardSnapshot(0.5, 800, 42, ShardFiles("/s/snap-1", (10, 4), {"in": 1, "out": 2})).files.shape
        (10, 4)
    """

    seconds: float
    bytes: int
    pid: int
    files: ShardFiles


@dataclass(frozen=True)
class ShardRestored:
    """A shard's answer to restoring a snapshot: its seconds and its process.

    Example:
        >>> ShardRestored(0.25, 42).seconds
        0.25
    """

    seconds: float
    pid: int


@dataclass(frozen=True)
class EpochFigures:
    """A finished epoch's figures, kept in every snapshot (a resumed run's report): its number (1-based), words,
    pairs and summed loss.

    Example:
        >>> EpochFigures(1, 100, 500, 2.5).to_json()
        {'epoch': 1, 'words': 100, 'pairs': 500, 'loss': 2.5}
    """

    epoch: int
    words: int
    pairs: int
    loss: float

    def to_json(self) -> JSON:
        """The record as a snapshot's ``epochs`` entry holds it."""
        return {"epoch": self.epoch, "words": self.words, "pairs": self.pairs, "loss": self.loss}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> EpochFigures:
        """The record :meth:`to_json` wrote."""
        return cls(d["epoch"], d["words"], d["pairs"], d["loss"])


_COMPLETE = ("shards", "directory", "files", "words_per_epoch", "units", "units_crc32")


@dataclass(frozen=True)
class Snapshot:
    """A snapshot's record: its ``id`` (None: the model the run started from, which every shard regenerates),
    its place (``epoch`` 0-based, ``units_done`` and ``words_done`` of it, the ``queue`` of units still to train,
    the epoch's running figures ``total``, the finished epochs' figures ``epochs``), the wall-clock ``time``; and,
    for a snapshot the shards wrote, their count, ``directory``, each shard's ``files`` and the units it was cut
    into (``words_per_epoch``, ``units``, ``units_crc32``: :func:`parvec.distributed.units.units_crc32`).

    ``total`` is a copy kept with the record: read it through :meth:`running_total` to change it.

    Example:
        >>> Snapshot(None, 0, 0, 0, (0, 1), UnitStats(acks=[0]), (), 0.0).complete
        False
    """

    id: int | None
    epoch: int
    units_done: int
    words_done: int
    queue: tuple[int, ...]
    total: UnitStats
    epochs: tuple[EpochFigures, ...]
    time: float
    shards: int | None = None
    directory: str | None = None
    files: tuple[ShardFiles, ...] | None = None
    words_per_epoch: int | None = None
    units: int | None = None
    units_crc32: int | None = None

    @property
    def complete(self) -> bool:
        """Whether the shards wrote it (it names their files and the units of work)."""
        return self.id is not None and self.files is not None and self.units is not None

    @property
    def completed_epoch(self) -> int:
        """The epoch this snapshot counts as (1-based): the one it is inside, or the one whose end it is."""
        return self.epoch + 1 if self.units_done or self.id is None else self.epoch

    def position(self, schedule: Schedule | None = None) -> Position | None:
        """A mid-epoch snapshot's place as a :class:`parvec.engine.Position` (units for chunks), None for one at an
        epoch's start; ``schedule`` gives the learning rate there (informational).

        Example:
            >>> Snapshot(None, 0, 0, 0, (), UnitStats(), (), 0.0).position() is None
            True
        """
        if not self.units_done:
            return None
        epoch = int(self.epoch)
        figures = list(self.epochs)[:epoch]
        if len(figures) != epoch:
            raise ParvecError(f"the snapshot in epoch {epoch + 1} has the figures of {len(figures)} earlier epochs")
        total = self.total
        words_done = int(self.words_done)
        alpha = schedule.alpha_at(schedule.position(epoch, words_done)) if schedule is not None else 0.0
        return Position(epoch, int(self.units_done), words_done,
                        [int(f.words) for f in figures] + [int(total.words)],
                        [int(f.pairs) for f in figures] + [int(total.pairs)],
                        [float(f.loss) for f in figures] + [float(total.loss)], alpha)

    def describe(self) -> str:
        """The snapshot in words, for the fault lines.

        Example:
            >>> Snapshot(3, 2, 0, 0, (), UnitStats(), (), 0.0).describe()
            "the snapshot of epoch 2's end"
        """
        if self.id is None:
            return f"the model the run started from (epoch {self.epoch + 1} unit 0)"
        if self.units_done == 0 and self.epoch > 0:
            return f"the snapshot of epoch {self.epoch}'s end"
        return f"the snapshot of epoch {self.epoch + 1} unit {self.units_done}"

    def running_total(self) -> UnitStats:
        """A copy of the epoch's figures at this snapshot, to add to."""
        t = self.total
        return UnitStats(**{**t.__dict__, "acks": list(t.acks)})

    def to_json(self) -> JSON:
        """The record as ``manifest.json`` holds it (the parts a snapshot has, in their order)."""
        out: JSON = {"id": self.id, "epoch": self.epoch, "units_done": self.units_done, "words_done": self.words_done,
                     "queue": list(self.queue), "total": self.total.to_dict(),
                     "epochs": [e.to_json() for e in self.epochs], "time": self.time}
        for key in _COMPLETE:
            value = getattr(self, key)
            if value is not None:
                out[key] = [f.to_json() for f in value] if key == "files" else value
        return out

    def files_json(self, relative_to: str | os.PathLike[str]) -> list[JSON]:
        """Each shard's files as a checkpoint in ``relative_to`` names them (its ``files``: each directory relative
        to the checkpoint's).

        Example:
            >>> f = ShardFiles("/ck/shards/shard-0-of-1/snap-2", (4, 8))
            >>> Snapshot(2, 1, 0, 0, (), UnitStats(), (), 0.0, files=(f,)).files_json("/ck/checkpoint")
            [{'directory': '../shards/shard-0-of-1/snap-2', 'shape': [4, 8]}]
        """
        return [f.with_directory(os.path.relpath(f.directory, relative_to)).to_json() for f in self.files or ()]

    def checkpoint_state(self) -> JSON:
        """What a sharded checkpoint records of the snapshot (``sharded["snapshot"]``; its files go beside it)."""
        d = self.to_json()
        return {k: d[k] for k in ("id", "epoch", "units_done", "words_done", "total", "epochs", "units",
                                  "units_crc32", "words_per_epoch", "time", "queue")}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Snapshot:
        """The record :meth:`to_json` (``manifest.json``) or :meth:`checkpoint_state` with its files wrote; a
        checkpoint that recorded no ``queue`` still had every unit after ``units_done`` to train."""
        queue = d.get("queue")
        if queue is None:
            queue = range(int(d["units_done"]), int(d["units"]))
        files = d.get("files")
        return cls(d["id"], d["epoch"], d["units_done"], d["words_done"], tuple(queue),
                   UnitStats.from_dict(dict(d["total"])), tuple(EpochFigures.from_json(e) for e in d.get("epochs", [])),
                   d.get("time", 0.0), d.get("shards"), d.get("directory"),
                   tuple(ShardFiles.from_json(f) for f in files) if files is not None else None,
                   d.get("words_per_epoch"), d.get("units"), d.get("units_crc32"))


@dataclass(frozen=True)
class SnapshotPlan:
    """When a run's shards snapshot and what one costs: every epoch's end and every ``interval_s`` seconds
    (:func:`parvec.distributed.sharded_settings.snapshot_interval`), each shard writing ``shard_bytes`` at about
    ``bytes_per_s``.  The run hands it to its owner before any actor starts (the command line words it).

    Example:
        >>> SnapshotPlan(60.0, 500_000_000, 250e6).write_seconds
        2.0
    """

    interval_s: float
    shard_bytes: int
    bytes_per_s: float

    @property
    def write_seconds(self) -> float:
        """About how long one shard takes to write its snapshot."""
        return self.shard_bytes / self.bytes_per_s


@dataclass(frozen=True)
class CheckpointRestored:
    """A resumed run's shards restored their columns from the checkpoint's snapshot ``snapshot_id`` (``shards``
    of them, every file's CRC-32 checked): what the run tells its owner once its actors have started.

    Example:
        >>> CheckpointRestored(4, 2).shards
        2
    """

    snapshot_id: int | None
    shards: int


@dataclass(frozen=True)
class SnapshotCost:
    """What taking one snapshot cost: the epoch (1-based) and units done it was taken at, its seconds, the
    seconds spent draining the units in flight before it, the bytes the shards wrote, the slowest shard's seconds.

    Example:
        >>> SnapshotCost(1, 4, 0.5, 0.1, 800, 0.4).bytes
        800
    """

    epoch: int
    units_done: int
    seconds: float
    drain_seconds: float
    bytes: int
    shard_seconds_max: float


@dataclass(frozen=True)
class ClientFailure:
    """A client lost with a unit in flight: which, in which epoch (1-based), the unit, the error seen.

    Example:
        >>> ClientFailure(1, 2, 7, "RayActorError").to_json()
        {'client': 1, 'epoch': 2, 'unit': 7, 'error': 'RayActorError'}
    """

    client: int
    epoch: int
    unit: int
    error: str

    def to_json(self) -> JSON:
        """The report's record."""
        return {"client": self.client, "epoch": self.epoch, "unit": self.unit, "error": self.error}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ClientFailure:
        """The record :meth:`to_json` wrote."""
        return cls(int(d["client"]), int(d["epoch"]), int(d["unit"]), str(d["error"]))


@dataclass(frozen=True)
class SnapshotFigures:
    """A sharded run's report figures of its snapshots and faults: each fault's record (``faults``: the
    report's, :class:`parvec.distributed.supervise.FaultRecord`), the units and words trained again, the
    minibatches a fault stopped, the clients lost with a unit in flight; the snapshots taken and their interval.

    Example:
        >>> SnapshotFigures((), 0, 0, 0, (), (), 60.0).to_json()["snapshots"]
        0
    """

    faults: tuple[JSON, ...]
    requeued_units: int
    requeued_words: int
    dropped_minibatches: int
    client_failures: tuple[ClientFailure, ...]
    log: tuple[SnapshotCost, ...]
    interval_s: float

    def to_json(self) -> JSON:
        """The report's keys (the ``--report`` file's, in its order)."""
        log = self.log
        return {
            # Faults: each lost shard or client, the snapshot every shard restored, the words trained again.
            "faults": [dict(f) for f in self.faults],
            "words_retrained": sum(f["words_retrained"] for f in self.faults),
            "requeued_units": self.requeued_units, "requeued_words": self.requeued_words,
            "dropped_minibatches": self.dropped_minibatches,
            "client_failures": [c.to_json() for c in self.client_failures],
            # Consistent snapshots (every epoch's end and every checkpoint_interval_s): how many, their cost.
            "snapshots": len(log), "snapshot_interval_s": self.interval_s,
            "snapshot_seconds": sum(x.seconds for x in log),
            "snapshot_drain_seconds": sum(x.drain_seconds for x in log),
            "snapshot_bytes": log[-1].bytes if log else 0,
            "snapshot_shard_seconds_max": max((x.shard_seconds_max for x in log), default=0.0),
        }
