"""Standard output and error that a closed pipe cannot stop: :class:`TolerantStream` wraps each for a command
(:func:`tolerant_std_streams`): once a write fails (the reader of a pipe went away: ``parvec train ... 2>&1 |
head -1``), further writes go nowhere instead of stopping the run, so training and the outputs proceed and the
exit status says whether they were written (:func:`exit_code_for_stdout`).

Example:
    >>> exit_code_for_stdout(None)
    (0, None)
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from typing import IO, Any

__all__ = ["TolerantStream", "binary_buffer", "exit_code_for_stdout", "tolerant_std_streams"]


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

    def fail(self, exc: OSError) -> None:
        """Record the first failed write (``exc``) and drop every write after it."""
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
                self.fail(exc)
        return len(s)

    def flush(self) -> None:
        if self.failed is None:
            try:
                self.stream.flush()
            except OSError as exc:
                self.fail(exc)
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

    # The wrapped stream may be any file object (a test's capture, a redirect's StringIO): what it lacks of the
    # text-stream protocol is looked up with a default, and the rest of its attributes are passed through.
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.stream, "errors", None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def binary_buffer(stream: IO[str]) -> IO[bytes] | None:
    """The bytes under a text stream (a :class:`TolerantStream`'s wrapped one), None for a text-only stream.

    Example:
        >>> binary_buffer(io.StringIO()) is None, binary_buffer(io.TextIOWrapper(io.BytesIO())) is not None
        (True, True)
    """
    if isinstance(stream, TolerantStream):
        stream = stream.stream
    return stream.buffer if isinstance(stream, io.TextIOWrapper) else None


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
