"""What the CLI writes, made safe: no output over an input, outputs reserved before the run, tolerant stdio.

Three things every command that writes files shares:

* :func:`check_paths` refuses, before anything is read, an output that is one of the run's inputs
  (the corpus, a resumed model's files, a graph...) or another output, comparing resolved paths and
  the files' device and inode, so another spelling, a symbolic link or a hard link is caught too.
* :class:`OutputPlan` creates each output's temporary file (or directory) in its target directory
  before the run starts, so an unwritable path fails at once instead of after hours of training; at
  the end the results are written into the temporaries and renamed into place, and on any failure
  the temporaries are removed and existing files are left untouched.
* :class:`TolerantStream` wraps standard output and error: once a write fails (the reader of a pipe
  went away: ``parvec train ... 2>&1 | head -1``), further writes go nowhere instead of stopping the
  run, so training and the outputs proceed and the exit status says whether they were written.

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
import io
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from parvec.errors import ParvecError
from parvec.fileio import remove_stale_temporaries, temporary_prefix

__all__ = [
    "OutputPlan",
    "TolerantStream",
    "Use",
    "check_paths",
    "committed_outputs",
    "tolerant_std_streams",
    "vector_outputs",
]

STDOUT = "-"  # as an output name: standard output (-o - only)
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once at import, before any threads start.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


# ---------------------------------------------------------------------- inputs against outputs
@dataclass(frozen=True)
class Use:
    """One path a run reads or writes, and how the user named it.

    ``label`` says where it came from (``"-o"``, ``"--report"``, ``"the training corpus"``); ``given``
    is the path the user typed when ``path`` is a file derived from it (``v.vocab.txt`` of ``-o v.npy``,
    the files of ``--resume DIR``); ``tree`` marks a directory used as a whole: an input directory
    whose files are read, or an output directory that is replaced (``--save-model``).

    Example:
        >>> Use("-o", Path("v.vocab.txt"), given=Path("v.npy")).describe()
        '-o v.npy (file v.vocab.txt)'
    """

    label: str
    path: Path
    tree: bool = False
    given: Path | None = None

    def describe(self) -> str:
        """The label and the path as given, e.g. ``--report run.json``."""
        if self.given is None or self.given == self.path:
            return f"{self.label} {self.path}"
        return f"{self.label} {self.given} ({'directory' if self.tree else 'file'} {self.path})"


def is_stdout(path: str | os.PathLike[str] | None) -> bool:
    """Whether an output named ``path`` is standard output (``-``, not ``./-``).

    Example:
        >>> is_stdout("-"), is_stdout("./-"), is_stdout(None)
        (True, False, False)
    """
    return path is not None and os.fspath(path) == STDOUT


def output_name(path: str | os.PathLike[str] | None) -> str:
    """How the console lines name an output: ``standard output`` for ``-``, else the path as given.

    Example:
        >>> output_name("-"), output_name("v.txt")
        ('standard output', 'v.txt')
    """
    return "standard output" if is_stdout(path) else str(path)


def _refuse_stdout(label: str, path: str | os.PathLike[str]) -> None:
    if is_stdout(path):
        raise ParvecError(f"{label} -: '-' (standard output) is only for the vectors of -o; give a file name "
                          "(./- for a file named '-')")


def vector_outputs(label: str, path: str | os.PathLike[str], npy: bool | None = None) -> list[Use]:
    """The files a vector output writes: one word2vec file, or a ``.npy`` with its ``.vocab.txt``/``.counts.npy``.

    Example:
        >>> [str(u.path) for u in vector_outputs("-o", "out/v.npy")]
        ['out/v.npy', 'out/v.vocab.txt', 'out/v.counts.npy']
    """
    from parvec.formats import npy_paths

    if is_stdout(path):
        return []  # nothing on disk: no input can be overwritten
    path = Path(path)
    if npy is None:
        npy = str(path).endswith(".npy")
    if not npy:
        return [Use(label, path)]
    return [Use(label, p, given=path) for p in npy_paths(path)]


def directory_inputs(label: str, path: str | os.PathLike[str]) -> list[Use]:
    """An input directory (a model to resume) and the files in it, each an input.

    Example:
        >>> directory_inputs("--resume", "no/such/dir")
        [Use(label='--resume', path=PosixPath('no/such/dir'), tree=True, given=None)]
    """
    path = Path(path)
    uses = [Use(label, path, tree=True)]
    if path.is_dir():
        for root, _dirs, files in os.walk(path):
            uses.extend(Use(label, Path(root) / name, given=path) for name in sorted(files))
    return uses


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _same_file(a: Path, b: Path) -> bool:
    if _real(a) == _real(b):
        return True
    try:
        return os.path.samefile(a, b)  # another name of the same file: a hard link, a bind mount
    except OSError:
        return False


def _inside(child: Path, directory: Path) -> bool:
    """``child`` is ``directory`` or lies under it (by resolved path, or by the inode of an ancestor)."""
    real_child, real_dir = _real(child), _real(directory)
    if real_child == real_dir or real_dir in real_child.parents:
        return True
    try:
        target = os.stat(directory)
    except OSError:
        return False
    for ancestor in (real_child, *real_child.parents):
        try:
            st = os.stat(ancestor)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
            return True
    return False


def _conflict(out: Use, other: Use) -> str | None:
    """Why writing ``out`` would destroy ``other`` (an input or another output), or None."""
    if out.tree and _inside(other.path, out.path):
        if _real(other.path) == _real(out.path):
            return "is the same path as"
        return "would replace the directory holding"
    if other.tree:
        # A file written inside an input directory only matters when it is one of its files (listed
        # separately); an output directory holding this output replaces it.
        if _same_file(out.path, other.path):
            return "is the same path as"
        return None
    if _same_file(out.path, other.path):
        return "is" if _real(out.path) == _real(other.path) else "is the same file (another name for it) as"
    return None


def check_paths(inputs: Iterable[Use], outputs: Iterable[Use]) -> None:
    """Refuse an output that is one of the inputs, or another output, before anything is read.

    Paths are compared resolved (``./a/../b``, symbolic links) and by device and inode (hard links).
    An output directory (``tree=True``, replaced as a whole) must not hold an input or another output.

    Example:
        >>> check_paths([Use("the training corpus", Path("corpus.txt"))], [Use("-o", Path("corpus.txt"))])
        Traceback (most recent call last):
        ...
        parvec.errors.ParvecError: -o corpus.txt is the training corpus corpus.txt: refusing to overwrite \
an input; choose another path
    """
    inputs, outputs = list(inputs), list(outputs)
    for i, out in enumerate(outputs):
        for inp in inputs:
            why = _conflict(out, inp)
            if why is not None:
                raise ParvecError(f"{out.describe()} {why} {inp.describe()}: refusing to overwrite an input; "
                                  "choose another path")
        for other in outputs[:i] + outputs[i + 1:]:
            if other.label == out.label:
                continue  # the files of one flag (a .npy output's vectors and vocabulary)
            why = _conflict(out, other)
            if why is not None:
                raise ParvecError(f"{out.describe()} {why} {other.describe()}: two outputs cannot share a path; "
                                  "choose another path")


# ---------------------------------------------------------------------- outputs reserved before the run
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

        _refuse_stdout(label, path)
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
        _refuse_stdout(label, path)
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
            raw = getattr(stream, "buffer", None)
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
            stream._fail(exc)
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
        _refuse_stdout(label, path)
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


# ---------------------------------------------------------------------- standard streams
class TolerantStream(io.TextIOBase):
    """A text stream that stops writing, quietly, after its first failed write.

    ``parvec train ... 2>&1 | head -1``: once ``head`` exits, every write to the pipe fails with EPIPE
    (Python ignores SIGPIPE).  This wrapper records the first failure in :attr:`failed` and drops
    everything after it, so neither a progress bar nor a summary line can stop the run.  With
    ``redirect`` (the real stdout/stderr) the file descriptor is pointed at ``/dev/null`` so the
    interpreter's last flush, and any C-level writer, stay quiet too.

    Example:
        >>> s = TolerantStream(io.StringIO(), redirect=False)
        >>> s.write("hello\\n"), s.failed
        (6, None)
    """

    def __init__(self, stream: IO[str], redirect: bool = True) -> None:
        super().__init__()
        self.stream = stream
        self.redirect = redirect
        self.failed: OSError | None = None

    def _fail(self, exc: OSError) -> None:
        self.failed = exc
        if self.redirect:
            with contextlib.suppress(Exception):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.stream.fileno())
                os.close(devnull)

    def write(self, s: str) -> int:
        if self.failed is None:
            try:
                self.stream.write(s)
            except OSError as exc:
                self._fail(exc)
        return len(s)

    def flush(self) -> None:
        if self.failed is None:
            try:
                self.stream.flush()
            except OSError as exc:
                self._fail(exc)
            except ValueError:  # flushing a closed file
                pass

    def isatty(self) -> bool:
        if self.failed is not None:
            return False
        try:
            return self.stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.stream, "errors", None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def tolerant_std_streams() -> Iterator[tuple[TolerantStream, TolerantStream]]:
    """Replace ``sys.stdout`` and ``sys.stderr`` by :class:`TolerantStream` wrappers for the block.

    Yields ``(stdout, stderr)``; after the block both are flushed (so :attr:`TolerantStream.failed`
    reports a failure of buffered output too) and the originals put back.

    Example:
        >>> with tolerant_std_streams() as (out, err):  # doctest: +SKIP
        ...     print("results")
        >>> out.failed is None  # doctest: +SKIP
        True
    """
    old_out, old_err = sys.stdout, sys.stderr
    real = (sys.__stdout__, sys.__stderr__)
    out = TolerantStream(old_out, redirect=old_out in real)
    err = TolerantStream(old_err, redirect=old_err in real)
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = old_out, old_err


def exit_code_for_stdout(failed: OSError | None) -> tuple[int, str | None]:
    """The exit status for a command whose standard output failed, and the message to print, if any.

    A reader that went away (EPIPE) gets 141, what a shell reports for a tool stopped by SIGPIPE, and
    no message; another failure (a full disk) is an error, exit 2.

    Example:
        >>> exit_code_for_stdout(BrokenPipeError(errno.EPIPE, "Broken pipe"))
        (141, None)
    """
    if failed is None:
        return 0, None
    if failed.errno == errno.EPIPE:
        return 141, None
    return 2, f"parvec: error: cannot write to standard output: {failed.strerror or failed}"
