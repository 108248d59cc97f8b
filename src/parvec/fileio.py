"""General file I/O: the one place where parvec opens the files it reads and writes.

Writing: every output, saved model, checkpoint and work file is opened by :func:`output_file` (or written
by :func:`write_array`/:func:`save_array`), so a write that fails -- a full disk, a quota, an I/O error --
raises :class:`WriteError` naming the file and the cause in words (``no space left on device``) instead of
numpy's short-write message.  Outputs are written through :func:`atomic_output`: a temporary file in the
same directory, flushed, fsynced and renamed onto the target, so an interrupted run never leaves a
half-written file.

Reading: :func:`check_input` refuses, naming it, an input that is missing, a directory, unreadable or
empty; :func:`open_input` opens it, decompressing ``.gz``/``.bz2``/``.xz`` by extension
(:func:`is_compressed`).  ``-`` (:data:`STDIN`) is standard input, and it, a FIFO and bash's ``<(...)`` are
streams (:func:`is_stream`), which readers that read their input once accept (``allow_stream=True``).

The file formats themselves are elsewhere: word vectors in :mod:`parvec.formats`, the encoded corpus in
:mod:`parvec.corpus`.

Example:
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "out.txt.gz"
    >>> with atomic_output(path, "w", compress=True) as f:
    ...     _ = f.write("hello\\n")
    >>> with open_input(path) as f:
    ...     f.read()
    b'hello\\n'
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import io
import lzma
import os
import re
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

from parvec.errors import ParvecError

__all__ = [
    "READ_ERRORS",
    "STALE_AFTER_S",
    "TEMP_PREFIX",
    "fsync_dir",
    "STDIN",
    "PathLike",
    "WriteError",
    "atomic_output",
    "check_input",
    "is_compressed",
    "is_stream",
    "open_input",
    "output_file",
    "remove_stale_temporaries",
    "save_array",
    "temporary_prefix",
    "write_array",
    "write_failure",
    "write_reason",
]

PathLike = str | os.PathLike[str]

_COMPRESSED: dict[str, Callable[..., IO[Any]]] = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open,
                                                  ".lzma": lzma.open}
# What reading a (possibly compressed) input can raise besides ParvecError: the system's errors, a truncated
# or damaged compressed stream.
READ_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once at import, before any threads write files.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


# ---------------------------------------------------------------------- temporary files beside an output
# Every temporary file or directory parvec creates beside a target (atomic_output, the CLI's reserved outputs)
# is named .parvec-PID@HOST-XXXXXXXX.<target name>[.tmp|.old]: a run killed with SIGKILL (or a power cut)
# leaves it behind, and the owner in its name lets a later run writing the same target remove it once that
# process is gone (remove_stale_temporaries).
TEMP_PREFIX = ".parvec-"
STALE_AFTER_S = 60.0  # a temporary whose process number now names a later process is removed once this old
_TEMP_NAME = re.compile(r"^\.parvec-(\d+)@([A-Za-z0-9-]*)-[a-z0-9_]{8}\.(.+)$")


def _host_tag() -> str:
    import socket

    return re.sub(r"[^A-Za-z0-9-]", "", socket.gethostname())[:12] or "host"


def temporary_prefix() -> str:
    """The start of the name of every temporary file parvec creates beside a target: ``.parvec-PID@HOST-``
    (then ``tempfile``'s eight random characters and ``.TARGET``).

    Example:
        >>> temporary_prefix().startswith(f".parvec-{os.getpid()}@")
        True
    """
    return f"{TEMP_PREFIX}{os.getpid()}@{_host_tag()}-"


def _temporary_of(name: str, target: str) -> tuple[int, str] | None:
    """``(pid, host)`` of a parvec temporary named ``name`` made for ``target``: ``.parvec-PID@HOST-X.TARGET``,
    with ``.tmp`` or ``.old`` after it, or an :func:`atomic_output` temporary of such a temporary; else None.

    Example:
        >>> _temporary_of(".parvec-42@h-abcd_123.v.txt", "v.txt"), _temporary_of(".parvec-42@h-abcd_123.w.txt", "v.txt")
        ((42, 'h'), None)
    """
    m = _TEMP_NAME.match(name)
    if m is None:
        return None
    owner, rest = (int(m.group(1)), m.group(2)), m.group(3)
    for core in (rest, rest.removesuffix(".tmp") if rest.endswith(".tmp") else None,
                 rest.removesuffix(".old") if rest.endswith(".old") else None):
        if core is not None and (core == target or _temporary_of(core, target) is not None):
            return owner
    return None


def _process_started_at(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch, from /proc), None if there is no such process.
    Raises OSError where /proc cannot tell (another system)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except FileNotFoundError:
        return None
    with open("/proc/stat", "rb") as f:
        btime = next(int(line.split()[1]) for line in f if line.startswith(b"btime"))
    return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat: the start time, in ticks


def _owner(pid: int, host: str, modified: float) -> str:
    """What became of the process that made a temporary: ``"gone"`` (``pid`` does not run on this machine),
    ``"reused"`` (it runs a process started after the file was last written: the number was reused), else
    ``"unknown"`` (it may still run: this process, another machine's, or /proc cannot tell)."""
    if host != _host_tag() or pid == os.getpid():
        return "unknown"  # another machine's (a shared file system), or this process's own
    try:
        started = _process_started_at(pid)
    except (OSError, ValueError, StopIteration, IndexError):
        return "unknown"
    if started is None:
        return "gone"
    return "reused" if started > modified + 1.0 else "unknown"  # btime has one-second resolution


def remove_stale_temporaries(directory: PathLike, target: str, min_age_s: float = STALE_AFTER_S) -> list[Path]:
    """Remove the temporaries that killed parvec runs left in ``directory`` for the output named ``target``:
    only parvec's (``.parvec-PID@HOST-XXXXXXXX.TARGET`` and the ``.tmp``/``.old`` ones made with them), and only
    when the process named in them is gone from this machine: at once, whatever their age, when no process PID
    runs here (a ``--resume`` right after ``kill -9`` removes what the killed run left); not written for
    ``min_age_s`` seconds when PID now names a later process.  Returns what was removed; what cannot be removed
    is left.

    Example:
        >>> remove_stale_temporaries(tempfile.gettempdir(), "no-such-output.txt")
        []
    """
    import shutil
    import time

    removed: list[Path] = []
    try:
        entries = [e for e in os.scandir(directory) if e.name.startswith(TEMP_PREFIX)]
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        owner = _temporary_of(entry.name, target)
        if owner is None:
            continue
        try:
            modified = entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        fate = _owner(*owner, modified)
        if fate == "unknown" or (fate == "reused" and now - modified < min_age_s):
            continue
        path = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:
            continue
        removed.append(path)
    return removed


# ---------------------------------------------------------------------- writing files
# errno -> what a write failure says: a full disk, a quota, a file-size limit first.
_WRITE_REASONS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large for the file system (or over the RLIMIT_FSIZE limit)",
}
_NPY_WRITE_BLOCK = 1 << 24  # bytes of an array written per call


class WriteError(ParvecError):
    """A file parvec writes could not be written (a full disk, a quota, an I/O error): the message names the
    file and why (``no space left on device``); ``path`` is that file and ``errno`` the system's error number.

    Example:
        >>> str(write_failure("out/v.txt", OSError(errno.ENOSPC, "No space left on device")))
        'out/v.txt: cannot write: no space left on device'
    """

    def __init__(self, message: str, path: PathLike | None = None, errno_: int | None = None,
                 reason: str = "") -> None:
        super().__init__(message)
        self.path = None if path is None else Path(path)
        self.errno = errno_
        self.reason = reason


def write_reason(exc: OSError | WriteError) -> str:
    """What a failed write says about its cause, in words (``no space left on device``).

    Example:
        >>> write_reason(OSError(errno.EDQUOT, "Disk quota exceeded"))
        'disk quota exceeded'
    """
    if isinstance(exc, WriteError):
        return exc.reason or str(exc)
    if exc.errno in _WRITE_REASONS:
        return _WRITE_REASONS[exc.errno]
    text = exc.strerror or str(exc)
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def write_failure(path: PathLike, exc: OSError, what: str | None = None) -> WriteError:
    """The :class:`WriteError` for ``exc`` raised while writing ``path`` (``what``: the file inside it, when
    ``path`` is a directory being written).

    Example:
        >>> str(write_failure("ck/checkpoint", OSError(errno.ENOSPC, "x"), what="vectors.npy"))
        'ck/checkpoint: cannot write vectors.npy: no space left on device'
    """
    reason = write_reason(exc)
    return WriteError(f"{path}: cannot write{' ' + what if what else ''}: {reason}", path,
                      exc.errno if not isinstance(exc, WriteError) else exc.errno, reason)


def output_file(path: PathLike | None = None, fd: int | None = None) -> IO[bytes]:
    """Open a file parvec writes (``path``, or the descriptor ``fd`` of one just created) for binary writing.
    Outputs, saved models and checkpoints are opened here: one place where a write that fails (a full disk)
    raises an :class:`OSError` carrying its ``errno``.

    Example:
        >>> with output_file("out.bin") as f:  # doctest: +SKIP
        ...     f.write(b"data")
    """
    if fd is not None:
        return os.fdopen(fd, "wb")
    return open(path, "wb")  # type: ignore[arg-type]  # noqa: SIM115 - returned to the caller


def write_array(f: IO[bytes], a: np.ndarray) -> None:
    """Write ``a`` as a ``.npy`` into the open file ``f`` (what ``np.save(f, a)`` writes), with ``f.write`` calls:
    numpy's own writer (``tofile``) reports a short write on a full disk as "N requested and M written", without
    the cause; ``f.write`` raises the system's error (``ENOSPC``).

    Example:
        >>> import io
        >>> buf = io.BytesIO(); write_array(buf, np.arange(3)); _ = buf.seek(0); np.load(buf).tolist()
        [0, 1, 2]
    """
    a = np.asanyarray(a)
    if a.dtype.hasobject:
        raise ValueError("write_array: object arrays are not written")
    np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(a))
    data = a if a.flags.c_contiguous or not a.flags.f_contiguous else a.T
    flat = np.ascontiguousarray(data).reshape(-1).data.cast("B")
    for start in range(0, len(flat), _NPY_WRITE_BLOCK):
        f.write(flat[start : start + _NPY_WRITE_BLOCK])


def save_array(path: PathLike, a: np.ndarray) -> None:
    """``np.save(path, a)`` (not atomic: for work files), with a write failure raised as :class:`WriteError`
    naming ``path`` and the cause (``no space left on device``).

    Example:
        >>> save_array("work/tokens_0.npy", np.zeros(3, np.int32))  # doctest: +SKIP
    """
    try:
        with output_file(path) as f:
            write_array(f, a)
    except OSError as exc:
        raise write_failure(path, exc) from None


@contextlib.contextmanager
def atomic_output(
    path: PathLike, mode: str = "wb", *, compress: bool = False, encoding: str = "utf-8"
) -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it only appears, complete, when the block succeeds.

    Data goes to a temporary file in the same directory (``.parvec-PID@HOST-XXXX.NAME.tmp``), which is flushed,
    fsynced and moved onto ``path`` with :func:`os.replace` when the ``with`` block ends without an
    exception.  On any exception (including ``KeyboardInterrupt``) the temporary file is removed and
    an existing ``path`` is left untouched.  ``mode`` is ``"wb"`` (bytes) or ``"w"``/``"wt"`` (text,
    ``encoding``, ``\\n`` newlines).  With ``compress=True`` a ``.gz``/``.bz2``/``.xz`` path is
    compressed by its extension.  A missing directory raises :class:`ParvecError` naming it.

    Example:
        >>> with atomic_output("vectors.txt", "w") as f:  # doctest: +SKIP
        ...     f.write("1 2\\nword 0.5 0.25 \\n")
    """
    if mode not in ("wb", "w", "wt"):
        raise ValueError(f"atomic_output: mode must be 'wb', 'w' or 'wt', got {mode!r}")
    target = Path(path)
    directory = target.parent
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise ParvecError(f"{target}: cannot write: output directory {directory} {what}")
    if target.is_dir():
        raise ParvecError(f"{target}: cannot write: it is a directory")
    remove_stale_temporaries(directory, target.name)  # what a killed run writing this target left
    try:
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=temporary_prefix(), suffix=f".{target.name}.tmp")
    except OSError as exc:
        raise write_failure(target, exc) from None
    tmp = Path(tmp_name)
    raw = output_file(fd=fd)
    stream: IO[Any] = raw
    layers: list[IO[Any]] = []  # wrappers to close (outermost first) before the raw file
    try:
        opener = _COMPRESSED.get(target.suffix.lower()) if compress else None
        if opener is gzip.open:
            # mtime=0 and no file name: identical content gives identical bytes.
            stream = cast(IO[Any], gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0))
            layers.append(stream)
        elif opener is not None:
            stream = opener(raw, "wb")
            layers.append(stream)
        if mode != "wb":
            stream = io.TextIOWrapper(stream, encoding=encoding, newline="\n")
            layers.insert(0, stream)
        try:
            yield stream
        except OSError as exc:
            # A write into this file failed (a system error naming no other file): say which file and why.
            if exc.errno in _WRITE_REASONS or (exc.errno is not None and exc.filename is None):
                raise write_failure(target, exc) from None
            raise
        try:
            for layer in layers:
                if isinstance(layer, io.TextIOWrapper):
                    layer.flush()
                    layer.detach()  # keep the layers below open; they are closed next
                else:
                    layer.close()
            raw.flush()
            os.fsync(raw.fileno())
            raw.close()
            existing_mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_UMASK
            os.chmod(tmp, existing_mode)  # mkstemp makes 0600; keep what a plain open() would give
            os.replace(tmp, target)
        except OSError as exc:
            raise write_failure(target, exc) from None
    except BaseException:
        for layer in layers:  # release the wrappers first so none flushes into a closed file later
            with contextlib.suppress(Exception):
                layer.detach() if isinstance(layer, io.TextIOWrapper) else layer.close()
        with contextlib.suppress(Exception):
            raw.close()
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


# ---------------------------------------------------------------------- reading helpers
STDIN = "-"  # as an input name: standard input


def is_stream(path: PathLike) -> bool:
    """True for ``-`` (standard input) and for inputs that are not regular files: a FIFO, bash's ``<(...)``
    (``/dev/fd/N``, a pipe), a character device.  A stream can be read only once, from its start.

    Example:
        >>> is_stream("-"), is_stream("corpus.txt")  # doctest: +SKIP
        (True, False)
    """
    if os.fspath(path) == STDIN:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_input(path: PathLike, *, allow_stream: bool = False) -> Path:
    """Raise :class:`ParvecError` naming ``path`` if it is missing, a directory, unreadable or empty.

    With ``allow_stream=True`` (readers that read their input once, from its start), ``-`` means standard
    input and a FIFO or ``<(...)`` pipe is accepted (whether it is empty shows only when it is read);
    otherwise they are refused with a message saying why, never read as an empty file.

    Example:
        >>> check_input("corpus.txt")  # doctest: +SKIP
        PosixPath('corpus.txt')
    """
    if os.fspath(path) == STDIN:
        if not allow_stream:
            raise ParvecError("standard input ('-') cannot be read here: give a file name")
        try:
            os.fstat(0)
        except OSError:
            raise ParvecError("standard input ('-') is closed") from None
        if os.isatty(0):
            raise ParvecError(
                "standard input is a terminal: pipe the corpus in (e.g. `xzcat corpus.txt.xz | parvec train - "
                "-o vectors.txt`) or give a file name"
            )
        return Path(STDIN)
    p = Path(path)
    if not p.exists():
        raise ParvecError(f"{p}: no such file")
    if p.is_dir():
        raise ParvecError(f"{p}: is a directory, expected a file")
    if not os.access(p, os.R_OK):
        raise ParvecError(f"{p}: not readable (permission denied)")
    st = p.stat()
    if not stat.S_ISREG(st.st_mode):
        if allow_stream:
            return p
        kind = "a pipe (FIFO)" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device"
        raise ParvecError(f"{p}: is {kind}, not a regular file: this reader reads its input more than once; "
                          "give a file")  # fmt: skip
    if st.st_size == 0:
        raise ParvecError(f"{p}: the file is empty")
    return p


_STREAM_MAGIC: tuple[tuple[bytes | re.Pattern[bytes], Callable[..., IO[Any]]], ...] = (
    (b"\x1f\x8b", gzip.open), (b"\xfd7zXZ\x00", lzma.open), (re.compile(rb"BZh[1-9]1AY&SY"), bz2.open))


def open_input(path: PathLike, *, allow_stream: bool = False) -> IO[bytes]:
    """Open ``path`` for binary reading, decompressing ``.gz``/``.bz2``/``.xz`` by extension.

    A missing, unreadable or empty file raises :class:`ParvecError` naming it.  With ``allow_stream=True``,
    ``-`` opens standard input (left open when the returned file is closed; gzip, xz or bzip2 data is
    recognised by its magic bytes and decompressed) and a FIFO or ``<(...)`` pipe is opened as a stream.

    Example:
        >>> with open_input("vectors.txt.gz") as f:  # doctest: +SKIP
        ...     header = f.readline()
    """
    p = check_input(path, allow_stream=allow_stream)
    if os.fspath(path) == STDIN:
        stdin = open(0, "rb", closefd=False)  # noqa: SIM115 - returned to the caller
        head = stdin.peek(16)[:16]
        for magic, opener in _STREAM_MAGIC:
            if head.startswith(magic) if isinstance(magic, bytes) else magic.match(head):
                return opener(stdin, "rb")
        return stdin
    decompress = _COMPRESSED.get(p.suffix.lower())
    if decompress is not None:
        return decompress(p, "rb")
    return open(p, "rb")


def is_compressed(path: PathLike) -> bool:
    """Whether :func:`open_input` decompresses ``path``: its name ends ``.gz``, ``.bz2``, ``.xz`` or ``.lzma``
    (in any case).

    Example:
        >>> is_compressed("corpus.txt.XZ"), is_compressed("corpus.txt")
        (True, False)
    """
    return Path(path).suffix.lower() in _COMPRESSED


def fsync_dir(path: PathLike) -> None:
    """Make a rename inside the directory ``path`` durable (best effort: some file systems cannot open or sync
    a directory, which is then left as it is).

    Example:
        >>> import tempfile; fsync_dir(tempfile.gettempdir())
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
