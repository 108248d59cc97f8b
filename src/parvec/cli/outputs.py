"""What the CLI writes, made safe: no output over an input, outputs reserved before the run, tolerant stdio.

Every command that writes files checks its paths first (:func:`check_paths`, :mod:`parvec.cli.paths`: no output
over one of the run's inputs or another output), then reserves its outputs in an :class:`OutputPlan`: each
output's temporary file (or directory) is created in its target directory before the run starts, so an
unwritable path fails at once instead of after hours of training; at the end the results are written into the
temporaries and renamed into place, and on any failure the temporaries are removed and existing files are left
untouched.  Standard output and error are :class:`TolerantStream` wrappers (:mod:`parvec.cli.streams`).

``-o -`` writes the vectors to standard output, as ``-`` reads standard input (word2vec text unless binary is
asked for, which is refused when standard output is a terminal): they are written to a temporary file in
``$TMPDIR`` and copied to standard output once the run succeeded, so a failed run prints no partial vectors.
``-`` for any other output is refused (``./-`` names a file called ``-``).  A temporary that a killed run left
beside an output is removed by the next run writing that output once its process is gone
(:func:`parvec.fileio.remove_stale_temporaries`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parvec.cli.paths import STDOUT, is_stdout, refuse_stdout
from parvec.cli.streams import TolerantStream, binary_buffer
from parvec.errors import ParvecError
from parvec.fileio import remove_stale_temporaries, temporary_prefix

__all__ = ["OutputPlan", "PendingDirectory", "PendingFile", "PendingStdout", "committed_outputs",
           "discard_open_plans"]

_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once at import, before any threads start.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def _writable_dir(label: str, path: Path) -> Path:
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise ParvecError(f"{label} {path}: cannot write: the directory {directory} {what}")
    return directory


def _is_model_dir(path: Path) -> bool:
    return (path / "model.json").is_file() or not any(path.iterdir())


class _Pending:
    label: str
    target: Path
    written = False
    plan: OutputPlan | None = None  # the plan it belongs to: says where the trained model is when a write fails

    def _write(self, writer: Callable[[Path], Any], tmp: Path) -> None:
        """``writer(tmp)``; a failed write (a full disk) names this output, the reason, and where a checkpoint
        of the run keeps the trained model (:meth:`OutputPlan.recovery_note`)."""
        from parvec.fileio import WriteError, write_reason

        try:
            writer(tmp)
        except (WriteError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno not in _DISK_FULL and (exc.errno is None or
                                                                            exc.filename is not None):
                raise  # not a system error of writing this output (a file read, another failure)
            note = self.plan.recovery_note() if self.plan is not None else ""
            reason = write_reason(exc)
            raise WriteError(f"{self.label} {self.target}: cannot write: {reason}{note}", self.target,
                             exc.errno, reason) from None
        self.written = True

    def discard(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def commit(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class PendingFile(_Pending):
    """An output file whose temporary already exists beside its target (see :meth:`OutputPlan.file`)."""

    def __init__(self, label: str, path: str | os.PathLike[str], npy: bool = False) -> None:
        from parvec.formats import npy_paths

        refuse_stdout(label, path)
        self.label, self.target, self.npy = label, Path(path), npy
        directory = _writable_dir(label, self.target)
        if self.target.is_dir():
            raise ParvecError(f"{label} {self.target}: cannot write: it is a directory")
        for final in (npy_paths(self.target) if npy else (self.target,)):
            remove_stale_temporaries(directory, final.name)  # what a killed run writing it left
        try:
            # The target's name ends the temporary's, so a writer choosing by extension (.gz, .npy) still can.
            fd, name = tempfile.mkstemp(dir=directory, prefix=temporary_prefix(), suffix="." + self.target.name)
        except OSError as exc:
            raise ParvecError(f"{label} {self.target}: cannot write in {directory}: {exc.strerror or exc}") from None
        os.close(fd)
        self.tmp = Path(name)
        # mkstemp makes 0600; keep the mode a plain open() would give (or the replaced file's).
        mode = self.target.stat().st_mode & 0o7777 if self.target.is_file() else 0o666 & ~_UMASK
        os.chmod(self.tmp, mode)

    def _pairs(self) -> list[tuple[Path, Path]]:
        if not self.npy:
            return [(self.tmp, self.target)]
        from parvec.formats import npy_paths

        return list(zip(npy_paths(self.tmp), npy_paths(self.target), strict=True))

    def write(self, writer: Callable[[Path], Any]) -> None:
        """Call ``writer(temporary path)``; the result is renamed onto the target by :meth:`OutputPlan.commit`.
        A write that fails raises :class:`parvec.fileio.WriteError` naming the target (the temporary is
        removed when the plan is discarded)."""
        self._write(writer, self.tmp)

    def commit(self) -> None:
        for tmp, final in self._pairs():
            if tmp.exists():
                os.replace(tmp, final)
            elif self.npy and final.name.endswith(".counts.npy") and final.exists():
                final.unlink()  # a counts file from an earlier save would no longer match the vectors
        with contextlib.suppress(FileNotFoundError):
            self.tmp.unlink()  # the placeholder, when the writer wrote beside it (PREFIX.npy.npy)

    def discard(self) -> None:
        for tmp, _ in self._pairs():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        with contextlib.suppress(FileNotFoundError):
            self.tmp.unlink()


class PendingDirectory(_Pending):
    """An output directory (a saved model) whose temporary directory already exists beside its target."""

    def __init__(self, label: str, path: str | os.PathLike[str]) -> None:
        refuse_stdout(label, path)
        self.label, self.target = label, Path(path)
        directory = _writable_dir(label, self.target)
        if self.target.exists() and not self.target.is_dir():
            raise ParvecError(f"{label} {self.target}: exists and is not a directory")
        if self.target.is_dir() and not _is_model_dir(self.target):
            raise ParvecError(f"{label} {self.target}: exists and is not a parvec model directory (no model.json); "
                              "refusing to replace it: choose a new or empty directory")
        remove_stale_temporaries(directory, self.target.name)
        try:
            self.tmp = Path(tempfile.mkdtemp(dir=directory, prefix=temporary_prefix(), suffix="." + self.target.name))
        except OSError as exc:
            raise ParvecError(f"{label} {self.target}: cannot write in {directory}: {exc.strerror or exc}") from None

    def write(self, writer: Callable[[Path], Any]) -> None:
        """Call ``writer(temporary directory)``; renamed onto the target by :meth:`OutputPlan.commit`."""
        self._write(writer, self.tmp)

    def commit(self) -> None:
        old = None
        if self.target.exists():
            old = Path(tempfile.mkdtemp(dir=self.target.parent, prefix=temporary_prefix(),
                                        suffix=f".{self.target.name}.old"))
            os.replace(self.target, old / "x")
        os.replace(self.tmp, self.target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def discard(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


class PendingStdout(_Pending):
    """``-o -``: the vectors, written to a temporary file in ``$TMPDIR`` during the run and copied to standard
    output by :meth:`OutputPlan.commit` once every output is in place (a failed run prints no partial vectors).
    Binary vectors to a terminal are refused before the run."""

    def __init__(self, label: str, binary: bool = False) -> None:
        self.label, self.target = label, Path(STDOUT)
        stream = sys.stdout
        if binary and stream is not None and stream.isatty():
            raise ParvecError(f"{label} -: binary vectors would be written to a terminal: redirect standard output "
                              "(> vectors.bin) or write the text format")
        directory = Path(tempfile.gettempdir())
        remove_stale_temporaries(directory, "stdout")
        try:
            fd, name = tempfile.mkstemp(dir=directory, prefix=temporary_prefix(), suffix=".stdout")
        except OSError as exc:
            raise ParvecError(f"{label} -: cannot stage the vectors in {directory} ($TMPDIR): "
                              f"{exc.strerror or exc}") from None
        os.close(fd)
        self.tmp = Path(name)

    def write(self, writer: Callable[[Path], Any]) -> None:
        """Call ``writer(temporary path)``; copied to standard output by :meth:`OutputPlan.commit`."""
        from parvec.fileio import WriteError

        try:
            self._write(writer, self.tmp)
        except WriteError as exc:  # say where the vectors were staged: a full $TMPDIR is the likely cause
            raise WriteError(f"{exc} (standard output's vectors are staged in {self.tmp.parent}: set TMPDIR to "
                             "a directory with room)", exc.path, exc.errno, exc.reason) from None

    def commit(self) -> None:
        """Copy the staged vectors to standard output, then remove them.  A reader that left (EPIPE) or another
        failure of standard output is recorded on the stream (exit 141, or 2 with a message: ``parvec.cli.main``)."""
        try:
            stream = sys.stdout
            stream.flush()
            raw = binary_buffer(stream)
            with open(self.tmp, "rb") as f:
                if raw is not None:
                    shutil.copyfileobj(f, raw, 1 << 20)
                    raw.flush()
                else:  # a text-only stream (a test's capture): the text format
                    for block in iter(lambda: f.read(1 << 20), b""):
                        stream.write(block.decode("utf-8"))
                    stream.flush()
        except OSError as exc:
            if not isinstance(stream, TolerantStream):
                raise
            stream.fail(exc)
        finally:
            self.discard()

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.tmp.unlink()


_OPEN_PLANS: list[OutputPlan] = []
_COMMITTED: list[str] = []  # the outputs this process renamed into place (committed_outputs)


class OutputPlan:
    """The outputs of one run, reserved before it starts and renamed into place together at its end.

    Use it as a context manager: leaving the block by an exception removes every temporary (and a
    checkpoint directory made for the run and still empty); existing files are untouched.  Plans
    not closed that way are cleaned up by :func:`discard_open_plans`, which ``parvec``'s ``main`` calls.

    Example:
        >>> with OutputPlan() as plan:  # doctest: +SKIP
        ...     vec = plan.file("-o", "vec.txt")        # fails here, before training, if vec.txt cannot be written
        ...     kv = train(...)
        ...     vec.write(kv.save_word2vec_format)
        ...     plan.commit()
    """

    def __init__(self) -> None:
        self._pending: list[_Pending] = []
        self._made_dirs: list[Path] = []
        self._checkpoint_dirs: list[Path] = []
        self._started = time.time()
        self.committed = False
        _OPEN_PLANS.append(self)

    def recovery_note(self) -> str:
        """When an output cannot be written after training: where the trained model still is (the latest
        checkpoint this run wrote, in its ``--checkpoint-dir``) and how ``--resume`` writes the outputs from it;
        or that there is none.  Empty before the run wrote any checkpoint and without a checkpoint directory.

        Example:
            >>> OutputPlan().recovery_note()
            ''
        """
        from parvec.checkpoints import latest_checkpoint, list_checkpoints

        for directory in self._checkpoint_dirs:
            latest = latest_checkpoint(directory)
            found = next((f for f in list_checkpoints(directory) if latest is not None and f.path == latest), None)
            if found is None or found.meta is None or float(found.meta.get("saved_at") or 0) < self._started:
                continue  # none, or another (earlier) run's
            epochs = (found.meta.get("config") or {}).get("epochs")
            done = found.chunks_done == 0 and epochs is not None and found.epoch >= int(epochs)
            where = found.describe() + (f" of {epochs}" if epochs and not found.chunks_done else "")
            what, then = (("holds the trained model", "writes the outputs without training again") if done else
                          ("holds the run so far", "finishes the training and writes the outputs"))
            return (f"; the checkpoint {found.path} ({where}) {what}: free space, then run the same command with "
                    f"--resume {directory}, which {then}")
        return ""

    def __enter__(self) -> OutputPlan:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None or not self.committed:
            self.discard()
        self._close()

    def _close(self) -> None:
        with contextlib.suppress(ValueError):
            _OPEN_PLANS.remove(self)

    def file(self, label: str, path: str | os.PathLike[str], npy: bool = False, stdout: bool = False,
             binary: bool = False) -> PendingFile | PendingStdout:
        """Reserve an output file now (its temporary is created beside it); :class:`ParvecError` if it cannot be.

        With ``stdout=True`` the path ``-`` is standard output (:class:`PendingStdout`; ``binary``: binary vectors,
        refused to a terminal); otherwise ``-`` is refused."""
        from parvec.interrupts import deferred_signals

        with deferred_signals():  # the temporary exists only once the plan knows it: a stop then removes it
            pending: PendingFile | PendingStdout
            if stdout and is_stdout(path):
                pending = PendingStdout(label, binary=binary)
            else:
                pending = PendingFile(label, path, npy=npy)
            pending.plan = self
            self._pending.append(pending)
        return pending

    def directory(self, label: str, path: str | os.PathLike[str]) -> PendingDirectory:
        """Reserve an output directory (a saved model) now; it replaces only an earlier model or an empty directory."""
        from parvec.interrupts import deferred_signals

        with deferred_signals():  # as file()
            pending = PendingDirectory(label, path)
            pending.plan = self
            self._pending.append(pending)
        return pending

    def checkpoint_dir(self, label: str, path: str | os.PathLike[str], entry: str | None = None) -> Path:
        """Make sure a directory written during the run exists and is writable: created when its parent exists.

        ``entry`` names what the run will replace inside it (a model directory): it must be absent, an
        earlier model or empty.

        Example:
            >>> OutputPlan().checkpoint_dir("--checkpoint-dir", "no/such/parent/ck")
            Traceback (most recent call last):
            ...
            parvec.errors.ParvecError: --checkpoint-dir no/such/parent/ck: the directory no/such/parent does not \
exist (the checkpoint directory is created only inside an existing one)
        """
        refuse_stdout(label, path)
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise ParvecError(f"{label} {path}: exists and is not a directory")
        if not path.exists():
            parent = path.parent if str(path.parent) else Path(".")
            if not parent.is_dir():
                raise ParvecError(f"{label} {path}: the directory {parent} does not exist (the checkpoint "
                                  "directory is created only inside an existing one)")
            try:
                path.mkdir()
            except OSError as exc:
                raise ParvecError(f"{label} {path}: cannot create it in {parent}: {exc.strerror or exc}") from None
            self._made_dirs.append(path)
        try:
            fd, probe = tempfile.mkstemp(dir=path, prefix=temporary_prefix(), suffix=".probe")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise ParvecError(f"{label} {path}: cannot write in it: {exc.strerror or exc}") from None
        if entry is not None:
            inner = path / entry
            if inner.exists() and not (inner.is_dir() and _is_model_dir(inner)):
                raise ParvecError(f"{label} {path}: {inner} exists and is not a parvec model directory; refusing to "
                                  "replace it")
        self._checkpoint_dirs.append(path)
        return path

    def commit(self) -> None:
        """Rename every written output into place (those never written are dropped).

        Ctrl-C and SIGTERM are held until the renames are done (:func:`parvec.interrupts.deferred_signals`): a
        run stopped at its end has written all its outputs or none, and :func:`committed_outputs` says which.
        """
        from parvec.fileio import WriteError, write_reason
        from parvec.interrupts import deferred_signals, raise_if_stop_requested

        raise_if_stop_requested()  # a run told to stop puts no output into place, even if the signal was swallowed
        streamed = [p for p in self._pending if isinstance(p, PendingStdout)]
        with deferred_signals():
            for pending in self._pending:
                if pending in streamed:
                    continue
                if pending.written:
                    try:
                        pending.commit()
                    except OSError as exc:
                        why = write_reason(exc)
                        raise WriteError(f"{pending.label} {pending.target}: cannot write: {why}"
                                         f"{self.recovery_note()}", pending.target, exc.errno, why) from None
                else:
                    pending.discard()
            self.committed = True
            _COMMITTED.extend(str(p.target) for p in self._pending if p.written and p not in streamed)
        # Standard output last, outside the held signals (a slow reader must not make Ctrl-C wait): the files are
        # in place; a stop while copying leaves the reader part of the vectors, as any stopped writer does.
        for pending in streamed:
            if pending.written:
                pending.commit()
                _COMMITTED.append("standard output")
            else:
                pending.discard()

    def discard(self) -> None:
        """Remove every temporary, and the directories made for this run that are still empty."""
        for pending in self._pending:
            with contextlib.suppress(OSError):
                pending.discard()
        for d in reversed(self._made_dirs):
            with contextlib.suppress(OSError):
                d.rmdir()  # only when empty: checkpoints already written stay
        self._made_dirs.clear()


def committed_outputs() -> list[str]:
    """The outputs this process has renamed into place so far (a run stopped after its last rename wrote them).

    Example:
        >>> isinstance(committed_outputs(), list)
        True
    """
    return list(_COMMITTED)


def discard_open_plans() -> None:
    """Discard the temporaries of every plan not committed yet (a command that failed or was interrupted).

    Example:
        >>> discard_open_plans()
    """
    while _OPEN_PLANS:
        plan = _OPEN_PLANS.pop()
        if not plan.committed:
            plan.discard()
