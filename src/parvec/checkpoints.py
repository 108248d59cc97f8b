"""Checkpoint directories: where a run's checkpoints live, which is the latest, which to keep.

A checkpoint directory (``--checkpoint-dir DIR``, ``Word2Vec(checkpoint_dir=DIR)``) holds

- ``DIR/checkpoint``: the model after the last complete epoch (replaced after every epoch);
- ``DIR/mid-eEEEE-cCCCCCCCCC``: mid-epoch checkpoints (``checkpoint_every``), the model after the first
  ``CCCCCCCCC`` chunks of epoch ``EEEE`` (counted from 1); only the last two of a run are kept.

A column-sharded run (``parvec train --mode sharded``) writes the same directories, whose ``model.json`` names the
shards' snapshots (``DIR/shards/shard-S-of-N/snap-K``) instead of holding the arrays; the shards keep only their
newest snapshots, so only the run's newest checkpoint is kept (``Checkpointer(..., only_latest=True)``).

Each is a model directory (:mod:`parvec.model_io`) written to a temporary directory and renamed into
place, so a killed run leaves either the old or the new one, never half of one.  Its ``model.json`` holds
the run's identity (``run_id``), the exact ``position`` to resume from, when it was written, and a CRC-32
of each array, so a damaged copy is named as such instead of resuming from wrong vectors.

This module knows where checkpoints are, not what a model is: loading for resume takes the loader
(``Word2Vec.load`` passes its own; :func:`parvec.model_io.load` reads the arrays and metadata alone), and
:class:`Checkpointer`, which writes a run's checkpoints (for ``Word2Vec`` and node2vec/DeepWalk alike), takes a
function that describes the model as a :class:`parvec.model_io.SavedModel`.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from parvec import model_io, storage
from parvec.engine import Position
from parvec.errors import CheckpointError, ParvecError
from parvec.fileio import WriteError

T = TypeVar("T")
log = logging.getLogger(__name__)
EPOCH_END = "checkpoint"
_MID = re.compile(r"^mid-e(\d{4,})-c(\d{9,})$")


def mid_name(epoch: int, chunks_done: int) -> str:
    """The directory name of a mid-epoch checkpoint (``epoch`` counted from 0, shown from 1).

    Example:
        >>> mid_name(0, 12)
        'mid-e0001-c000000012'
    """
    return f"mid-e{epoch + 1:04d}-c{chunks_done:09d}"


@dataclass
class Found:
    """A checkpoint seen in a directory: its path, its place in the run (epochs done, chunks of the next
    epoch done) and what its ``model.json`` says (None when unreadable)."""

    path: Path
    epoch: int
    chunks_done: int
    meta: dict[str, Any] | None

    @property
    def key(self) -> tuple[int, int]:
        return (self.epoch, self.chunks_done)

    def describe(self) -> str:
        """Where in the run this checkpoint is, in words."""
        if self.chunks_done == 0:
            return f"after epoch {self.epoch}"
        return f"epoch {self.epoch + 1}, {self.chunks_done} chunks in"


def list_checkpoints(directory: str | Path, run_id: str | None = None) -> list[Found]:
    """The checkpoints in ``directory`` (of run ``run_id`` when given), oldest first.

    Example:
        >>> list_checkpoints("no/such/dir")
        []
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for child in directory.iterdir():
        m = _MID.match(child.name)
        if not child.is_dir() or not (m or child.name == EPOCH_END):
            continue
        meta = model_io.read_meta(child)
        if m:
            epoch, chunks = int(m.group(1)) - 1, int(m.group(2))
        else:
            if meta is None:  # unreadable: no place in the order
                continue
            try:
                epoch, chunks = int(meta.get("epochs_trained", 0) or 0), 0
            except (AttributeError, TypeError, ValueError):  # unreadable or damaged: no place in the order
                continue
        if run_id is not None and (meta is None or meta.get("run_id") != run_id):
            continue
        found.append(Found(child, epoch, chunks, meta))
    return sorted(found, key=lambda f: (f.key, f.path.name == EPOCH_END))


def latest_checkpoint(directory: str | Path) -> Path | None:
    """The newest checkpoint of the newest run in a checkpoint directory (None if none).  A mid-epoch one
    whose ``model.json`` does not read still counts (resuming from it then fails, naming it and the
    previous intact one) rather than being passed over in silence.

    Example:
        >>> latest_checkpoint("no/such/dir") is None
        True
    """
    found = list_checkpoints(directory)
    readable = [f for f in found if f.meta is not None]
    if not found:
        return None
    newest = max(readable, key=lambda f: float((f.meta or {}).get("saved_at") or 0.0)) if readable else None
    run = (newest.meta or {}).get("run_id") if newest is not None else None
    same = [f for f in found if f.meta is None or f.meta.get("run_id") == run]
    return same[-1].path


def prune_mid_checkpoints(directory: str | Path, run_id: str, keep: int = 2, but: Path | None = None) -> list[Path]:
    """Remove all but the last ``keep`` mid-epoch checkpoints of run ``run_id`` (epoch-end checkpoints and
    other runs' checkpoints stay); returns what was removed.  With ``but`` (the checkpoint just written) and
    ``keep=0``, every other checkpoint of the run goes, the epoch-end one too (a sharded run's).

    Example:
        >>> prune_mid_checkpoints("no/such/dir", "r")
        []
    """
    found = list_checkpoints(directory, run_id)
    if but is not None and keep == 0:
        old = [f for f in found if f.path.name != but.name]
    else:
        mids = [f for f in found if f.path.name != EPOCH_END]
        old = mids[: max(0, len(mids) - keep)]
    removed = []
    for f in old:
        shutil.rmtree(f.path, ignore_errors=True)
        removed.append(f.path)
    return removed


def previous_checkpoint(path: str | Path,
                        load: Callable[[Path, str | None], Any] = model_io.load) -> Found | None:
    """The newest checkpoint beside ``path`` (same directory), before it in the run when its place is
    known, that ``load`` reads whole: what to offer when ``path`` is damaged.

    Example:
        >>> previous_checkpoint("no/such/dir/checkpoint") is None
        True
    """
    path = Path(path)
    try:
        resolved = path.resolve()
    except OSError:
        resolved = path
    found = list_checkpoints(path.parent)
    me = next((f for f in found if f.path.resolve() == resolved), None)
    for f in reversed(found):
        if f.path.resolve() == resolved or f.meta is None or (me is not None and f.key >= me.key):
            continue
        try:
            load(f.path, None)
        except ParvecError:
            continue
        return f
    return None


def find_for_resume(path: str | os.PathLike[str]) -> tuple[Path, str | None]:
    """What ``--resume path`` reads: ``path`` itself, or the latest checkpoint in it when it is a checkpoint
    directory; returns ``(that path, a note to show or None)`` without reading the model.

    Example:
        >>> find_for_resume("no/such/dir")
        (PosixPath('no/such/dir'), None)
    """
    path = Path(path)
    note = None
    if path.is_dir() and not (path / model_io.MODEL_JSON).exists():
        latest = latest_checkpoint(path)
        if latest is not None:
            note = f"--resume {path}: its latest checkpoint is {latest}"
            if (path / EPOCH_END).is_dir() and model_io.read_meta(path / EPOCH_END) is None:
                note += f" ({path / EPOCH_END} has no readable model.json and was passed over)"
            path = latest
    return path, note


def load_for_resume(path: str | os.PathLike[str], load: Callable[[Path, str | None], T],
                    mmap: str | None = None) -> tuple[T, Path, str | None]:
    """Load the model or checkpoint to resume with ``load(path, mmap)``: ``path`` itself, or the latest checkpoint
    in it when it is a checkpoint directory.  Returns ``(what load returned, the path loaded, a note to show or
    None)``; a damaged one raises :class:`parvec.errors.CheckpointError` that names the previous intact
    checkpoint (one that ``load`` reads whole), if any.  :func:`parvec.word2vec.load_for_resume` passes
    ``Word2Vec``'s loader; :func:`parvec.model_io.load` gives the arrays and metadata.

    Example:
        >>> saved, where, note = load_for_resume("ck", model_io.load)  # doctest: +SKIP
        >>> where.name, saved.position.chunks_done  # doctest: +SKIP
        ('mid-e0002-c000000040', 40)
    """
    path, note = find_for_resume(path)
    try:
        return load(path, mmap), path, note
    except CheckpointError as exc:
        prev = previous_checkpoint(path, load)
        offer = (f"; the previous checkpoint {prev.path} ({prev.describe()}) is intact: --resume {prev.path}"
                 if prev is not None else "; there is no other intact checkpoint beside it")
        raise CheckpointError(f"{exc}{offer}") from None


@dataclass
class CheckpointCounts:
    """What a run's checkpoints cost: those written mid-epoch and at epochs' ends, their seconds, and those that
    could not be written (the report's ``checkpoints`` entry, :meth:`to_json`).

    Example:
        >>> counts = CheckpointCounts(); counts.epoch_end_checkpoints += 1; counts.written
        1
    """

    mid_epoch_checkpoints: int = 0
    epoch_end_checkpoints: int = 0
    checkpoint_seconds: float = 0.0
    failed_checkpoints: int = 0

    @property
    def written(self) -> int:
        """The checkpoints written, mid-epoch and at epochs' ends."""
        return self.mid_epoch_checkpoints + self.epoch_end_checkpoints

    def to_json(self) -> dict[str, int | float]:
        """The counts by name, as the report writes them.

        Example:
            >>> CheckpointCounts(failed_checkpoints=1).to_json()["failed_checkpoints"]
            1
        """
        return {"mid_epoch_checkpoints": self.mid_epoch_checkpoints,
                "epoch_end_checkpoints": self.epoch_end_checkpoints, "checkpoint_seconds": self.checkpoint_seconds,
                "failed_checkpoints": self.failed_checkpoints}


class Checkpointer:
    """Writes one run's checkpoints into its directory: ``DIR/checkpoint`` after every epoch (:meth:`epoch_end`)
    and ``DIR/mid-e*-c*`` at the run engine's mid-epoch points (:meth:`mid_epoch`, its ``on_checkpoint``), keeping
    the run's last two mid-epoch ones.

    ``describe(position, epochs_trained)`` returns the model to write (a :class:`parvec.model_io.SavedModel`:
    :class:`parvec.word2vec.Word2Vec` and :class:`parvec.graph.node2vec.Node2Vec` describe themselves).  A
    checkpoint that cannot be written (a full disk) leaves the previous ones as they were; ``on_error`` says what
    then: ``"stop"`` raises a :class:`parvec.fileio.WriteError` naming the previous intact checkpoint and how to
    resume from it, ``"continue"`` logs a warning and training goes on (the next checkpoint tries again).
    ``report`` (a :class:`CheckpointCounts`) counts the checkpoints written and failed and their seconds;
    ``on_saved(path, position, seconds)`` is called after each (the CLI prints a line; a report's time series
    pauses its clock).
    ``only_latest`` removes the run's other checkpoints (the epoch-end one too) after each one written: a sharded
    run's checkpoints name shard snapshots that the shards remove once newer ones are checkpointed.

    Example:
        >>> ck = Checkpointer("ck", lambda pos, epochs: saved_model, run_id="r1")  # doctest: +SKIP
        >>> ck.epoch_end(1)  # doctest: +SKIP
        True
    """

    def __init__(self, directory: str | Path, describe: Callable[[Position | None, int], model_io.SavedModel],
                 run_id: str, on_error: str = "stop", report: CheckpointCounts | None = None,
                 on_saved: Callable[[Path, Position | None, float], None] | None = None,
                 only_latest: bool = False) -> None:
        if on_error not in ("stop", "continue"):
            raise ParvecError(f"on_checkpoint_error must be 'stop' or 'continue', got {on_error!r}")
        self.directory = Path(directory)
        self.describe = describe
        self.run_id = run_id
        self.on_error = on_error
        self.report = report if report is not None else CheckpointCounts()
        self.on_saved = on_saved
        self.only_latest = only_latest

    def mid_epoch(self, position: Position) -> bool:
        """A mid-epoch checkpoint at ``position`` (the engine calls it with every unit handed out trained); False
        when it could not be written and training goes on."""
        path = self.directory / mid_name(position.epoch, position.chunks_done)
        saved = self._save(path, position, position.epoch)
        if saved:
            prune_mid_checkpoints(self.directory, self.run_id, keep=0 if self.only_latest else 2, but=path)
        return saved

    def epoch_end(self, epochs_trained: int) -> bool:
        """The checkpoint after ``epochs_trained`` epochs; False when it could not be written and training goes on."""
        path = self.directory / EPOCH_END
        saved = self._save(path, None, epochs_trained)
        if saved and self.only_latest:
            prune_mid_checkpoints(self.directory, self.run_id, keep=0, but=path)
        return saved

    def _save(self, path: Path, position: Position | None, epochs_trained: int) -> bool:
        t0 = time.perf_counter()
        try:
            model_io.save(path, self.describe(position, epochs_trained))
        except WriteError as exc:
            kept = [f for f in list_checkpoints(path.parent, self.run_id) if f.meta is not None]
            prev = (f"the previous checkpoint {kept[-1].path} ({kept[-1].describe()}) is intact" if kept
                    else "this run has no earlier checkpoint")
            self.report.failed_checkpoints += 1
            if self.on_error == "continue":
                log.warning("checkpoint %s; %s; training continues (--on-checkpoint-error continue) and the next "
                            "checkpoint tries again", exc, prev)
                return False
            resume = f": free space, then resume from it with --resume {path.parent}" if kept else ""
            raise WriteError(f"checkpoint {exc}; training stopped (--on-checkpoint-error stop, the default; "
                             f"'continue' trains on without it); {prev}{resume}", exc.path, exc.errno,
                             exc.reason) from None
        storage.synced(self.directory)  # a --checkpoint-dir URL: this checkpoint uploaded (parvec.storage.mirror)
        seconds = time.perf_counter() - t0
        if position is not None:
            self.report.mid_epoch_checkpoints += 1
        else:
            self.report.epoch_end_checkpoints += 1
        self.report.checkpoint_seconds += seconds
        if self.on_saved is not None:
            self.on_saved(path, position, seconds)
        return True
