"""Signals that must not cut a section in the middle (:func:`deferred_signals`), and signals that must not be lost
(:func:`note_stop`, :func:`raise_if_stop_requested`).

Used where an interruption half-way would do harm: Ray's start and stop (a Ctrl-C inside ``ray.init`` orphaned
its C++ core worker, which crashed the process at exit: :mod:`parvec.distributed.cluster`), and the renames that
put a run's outputs into place (:meth:`parvec.cli.outputs.OutputPlan.commit`: all of them, or none).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["clear_stop", "deferred_signals", "note_stop", "raise_if_stop_requested"]

# The stop signals the command's handlers received (parvec.cli): kept, so that a run whose KeyboardInterrupt was
# swallowed still stops.
_STOP_REQUESTED: list[int] = []


def note_stop(signum: int) -> None:
    """Record a stop signal (SIGINT, SIGTERM) as its handler raises: Python raises the handler's exception at the
    next bytecode of the main thread, and when that is inside an object's finalizer (``__del__``, run by the
    garbage collector at any point) the exception is printed as "Exception ignored" and dropped, so the run went on
    and wrote its outputs.  :func:`raise_if_stop_requested` at the run's checkpoints stops it all the same.

    Example:
        >>> note_stop(15); clear_stop()
    """
    _STOP_REQUESTED.append(signum)


def clear_stop() -> None:
    """Forget the recorded stop signals (a new command starts).

    Example:
        >>> clear_stop()
    """
    _STOP_REQUESTED.clear()


def raise_if_stop_requested() -> None:
    """Raise ``KeyboardInterrupt`` when a stop signal was received (:func:`note_stop`) whose exception did not stop
    the run: called between epochs and before the outputs are put into place.

    Example:
        >>> raise_if_stop_requested()  # nothing received: nothing happens
    """
    if _STOP_REQUESTED:
        raise KeyboardInterrupt()


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the block and deliver them right after it, to the handlers of before.

    For the sections of Ray that must not be cut in the middle: its start (``ray.init``) and its stop.  A
    signal arriving in the block is remembered and raised again once the block is over (Ctrl-C then raises
    ``KeyboardInterrupt`` there); handlers Ray installs in the block are dropped, the ones the process had
    are put back (re-installed, so a C-level handler Ray's core set for SIGTERM is replaced as well).
    Outside the main thread, where Python runs no signal handlers, it does nothing.

    Example:
        >>> with deferred_signals():
        ...     pass  # a Ctrl-C here is raised when the block ends
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # A handler installed outside Python (getsignal gives None) could not be put back: such a signal is left alone.
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    previous = {signum: handler for signum, handler in previous.items() if handler is not None}
    signums = tuple(previous)
    held: list[int] = []
    set_handler = signal.signal

    def hold(signum: int, frame: Any) -> None:
        held.append(signum)

    def keep_holding(signum: int, handler: Any) -> Any:
        # ray.init sets a SIGTERM handler of its own (sys.exit): the block keeps holding, the old one comes back.
        if signum in previous:
            return previous[signal.Signals(signum)]
        return set_handler(signum, handler)

    for signum in signums:
        set_handler(signum, hold)
    signal.signal = keep_holding  # type: ignore[assignment]
    try:
        yield
    finally:
        signal.signal = set_handler
        for signum in signums:
            set_handler(signum, previous[signum])
        if held:
            # SIGTERM wins over SIGINT: the run was asked to stop by its supervisor.
            signal.raise_signal(signal.SIGTERM if signal.SIGTERM in held else signal.SIGINT)
