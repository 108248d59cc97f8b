"""Checkpoint directories: where a run's checkpoints live, which is the latest, which to keep.

A checkpoint directory (``--checkpoint-dir DIR``, ``Word2Vec(checkpoint_dir=DIR)``) holds

- ``DIR/checkpoint``: the model after the last complete epoch (replaced after every epoch);
- ``DIR/mid-eEEEE-cCCCCCCCCC``: mid-epoch checkpoints (``checkpoint_every``), the model after the first
  ``CCCCCCCCC`` chunks of epoch ``EEEE`` (counted from 1); only the last two of a run are kept.

Each is a model directory (:meth:`parvec.Word2Vec.save`) written to a temporary directory and renamed into
place, so a killed run leaves either the old or the new one, never half of one.  Its ``model.json`` holds
the run's identity (``run_id``), the exact ``position`` to resume from, when it was written, and a CRC-32
of each array, so a damaged copy is named as such instead of resuming from wrong vectors.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((path / "model.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return meta if isinstance(meta, dict) else None


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
        meta = _read_meta(child)
        if m:
            epoch, chunks = int(m.group(1)) - 1, int(m.group(2))
        else:
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
    run = max(readable, key=lambda f: float(f.meta.get("saved_at") or 0.0)).meta.get("run_id") if readable else None
    same = [f for f in found if f.meta is None or f.meta.get("run_id") == run]
    return same[-1].path


def prune_mid_checkpoints(directory: str | Path, run_id: str, keep: int = 2) -> list[Path]:
    """Remove all but the last ``keep`` mid-epoch checkpoints of run ``run_id`` (epoch-end checkpoints and
    other runs' checkpoints stay); returns what was removed.

    Example:
        >>> prune_mid_checkpoints("no/such/dir", "r")
        []
    """
    mids = [f for f in list_checkpoints(directory, run_id) if f.path.name != EPOCH_END]
    removed = []
    for f in mids[: max(0, len(mids) - keep)]:
        shutil.rmtree(f.path, ignore_errors=True)
        removed.append(f.path)
    return removed


def previous_checkpoint(path: str | Path) -> Found | None:
    """The newest checkpoint beside ``path`` (same directory), before it in the run when its place is
    known, that loads whole: what to offer when ``path`` is damaged.

    Example:
        >>> previous_checkpoint("no/such/dir/checkpoint") is None
        True
    """
    from parvec.errors import ParvecError
    from parvec.word2vec import Word2Vec

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
            Word2Vec._load(f.path)
        except ParvecError:
            continue
        return f
    return None


def load_for_resume(path: str | Path, mmap: str | None = None) -> tuple[Any, Path, str | None]:
    """Load the model or checkpoint to resume: ``path`` itself, or the latest checkpoint in it when it is a
    checkpoint directory.  Returns ``(model, the path loaded, a note to show or None)``; a damaged one
    raises :class:`parvec.errors.CheckpointError` that names the previous intact checkpoint, if any.

    Example:
        >>> model, where, note = load_for_resume("ck")  # doctest: +SKIP
    """
    from parvec.errors import CheckpointError
    from parvec.word2vec import Word2Vec

    path = Path(path)
    note = None
    if path.is_dir() and not (path / "model.json").exists():
        latest = latest_checkpoint(path)
        if latest is not None:
            note = f"--resume {path}: its latest checkpoint is {latest}"
            if (path / EPOCH_END).is_dir() and _read_meta(path / EPOCH_END) is None:
                note += f" ({path / EPOCH_END} has no readable model.json and was passed over)"
            path = latest
    try:
        return Word2Vec._load(path, mmap=mmap), path, note
    except CheckpointError as exc:
        prev = previous_checkpoint(path)
        offer = (f"; the previous checkpoint {prev.path} ({prev.describe()}) is intact: --resume {prev.path}"
                 if prev is not None else "; there is no other intact checkpoint beside it")
        raise CheckpointError(f"{exc}{offer}") from None
