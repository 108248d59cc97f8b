"""The ``parvec`` command line: a thin layer over the Python API.

Each group of sub-commands lives in its own module exposing ``register(subparsers)``; every
sub-command's function takes the parsed ``argparse.Namespace`` and returns an exit code.
User errors (:class:`parvec.errors.ParvecError`) print one line and exit with code 2.  Ctrl-C (SIGINT) and
SIGTERM stop a command the same way: the signal becomes an exception in the main thread, every ``finally``
and output plan cleans up as the run unwinds (temporary outputs removed, a Ray started for the run stopped),
and one line says so: exit 130 (``interrupted``) or 143 (``terminated``), as a shell reports a process
stopped by those signals.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from parvec.errors import ParvecError


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread: a subclass of ``KeyboardInterrupt``, so whatever stops cleanly on
    Ctrl-C (the trainer's threads, output plans, a Ray session) stops the same way on SIGTERM.

    Example:
        >>> isinstance(Terminated(), KeyboardInterrupt)
        True
    """


_SIGNAL_SEEN: list[int] = []  # the signals this run received, in order (Ray may re-raise an interrupt as its own)


def _on_sigterm(signum: int, frame: object) -> None:
    from parvec.interrupts import note_stop

    _SIGNAL_SEEN.append(signum)
    note_stop(signum)  # if a finalizer swallows the exception, the run still stops (raise_if_stop_requested)
    raise Terminated()


def _on_sigint(signum: int, frame: object) -> None:
    from parvec.interrupts import note_stop

    _SIGNAL_SEEN.append(signum)
    note_stop(signum)
    raise KeyboardInterrupt()


@contextlib.contextmanager
def _signals_unwind() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` and SIGINT ``KeyboardInterrupt`` in the main thread for the block.

    A signal ignored when ``parvec`` started (``nohup``-style, ``SIG_IGN``) stays ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[signal.Signals, Any] = {}
    for signum, handler in ((signal.SIGTERM, _on_sigterm), (signal.SIGINT, _on_sigint)):
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, handler)
    _SIGNAL_SEEN.clear()
    from parvec.interrupts import clear_stop

    clear_stop()
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _warnings_to_stderr() -> Iterator[None]:
    """parvec's logged warnings (``logging.getLogger("parvec")``) reach stderr as ``parvec: warning: ...`` lines
    for the command, on the stream of this run (pytest's capture, a wrapper), whatever the command."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("parvec: warning: %(message)s"))
    logger = logging.getLogger("parvec")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


# Modules that add sub-commands; each has register(subparsers).
_COMMAND_MODULES = ("parvec.cli.train", "parvec.cli.vectors", "parvec.cli.queries", "parvec.cli.graph",
                    "parvec.cli.demo", "parvec.cli.report")


def build_parser() -> argparse.ArgumentParser:
    """Build the ``parvec`` argument parser with every sub-command registered.

    Example:
        >>> build_parser().prog
        'parvec'
    """
    parser = argparse.ArgumentParser(
        prog="parvec",
        description="Fast word2vec (skip-gram, negative sampling) and node2vec/DeepWalk embeddings.",
    )
    from parvec import __version__

    parser.add_argument("--version", action="version", version=f"parvec {__version__}",
                        help="print parvec's version and exit")
    from parvec.cli.flags import CommandParser

    # Each command's parser records which flags its command line gave (parvec.cli.flags).
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a group still being written must not break the others
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``parvec`` command; returns the process exit code.

    Standard output and error are wrapped for the run (:func:`parvec.cli.outputs.tolerant_std_streams`):
    a closed pipe (``parvec train ... 2>&1 | head -1``) never stops a run or hides a failure.  The
    status is 0 only when the outputs were written: 2 for an error, 130 when interrupted (Ctrl-C), 143
    when terminated (SIGTERM), and 141 when a command's results on standard output could not all be
    written because the reader left.

    Example:
        >>> main(["--help"])  # doctest: +SKIP
    """
    from parvec.cli.outputs import discard_open_plans
    from parvec.cli.streams import exit_code_for_stdout, tolerant_std_streams
    from parvec.distributed.cluster import new_command_warnings

    argv = list(sys.argv[1:] if argv is None else argv)
    new_command_warnings()
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        # word2vec.c style: `parvec -train corpus.txt -output vec.txt ...` means `parvec train ...`
        argv = ["train", *argv]
    with tolerant_std_streams() as (stdout, _stderr), _signals_unwind():
        try:
            code = _run(argv)
        except SystemExit as exc:  # argparse: --help (0) or a bad flag (2)
            if exc.code in (0, None):
                stdout.flush()
                if stdout.failed is not None:
                    raise SystemExit(exit_code_for_stdout(stdout.failed)[0]) from None
            raise
        finally:
            discard_open_plans()  # a command that failed leaves no temporary output behind
        stdout.flush()
        if code == 0 and stdout.failed is not None:
            code, message = exit_code_for_stdout(stdout.failed)
            if message:
                print(message, file=sys.stderr)
    return code


def _run(argv: list[str]) -> int:
    from parvec.cli.outputs import committed_outputs, discard_open_plans

    already = len(committed_outputs())  # an earlier command of this process (tests call main repeatedly)
    started = time.time()  # a checkpoint saved since is this run's (the line of an interrupted run)
    from parvec.cli.resume import forget_checkpoint_places

    forget_checkpoint_places()
    parser = build_parser()
    args = parser.parse_args(argv)
    if vars(args).get("func") is None:
        parser.print_help()
        return 2
    try:
        with _warnings_to_stderr():
            return int(args.func(args) or 0)
    except ParvecError as exc:
        print(f"parvec: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
        discard_open_plans()  # before the line: no temporary output is left once it is printed
        from parvec.cli.resume import checkpoint_places, kept_checkpoints

        directory, resumed = checkpoint_places(vars(args).get("checkpoint_dir"), vars(args).get("resume"))
        kept = kept_checkpoints(directory, started, resumed)
        terminated = isinstance(exc, Terminated) or signal.SIGTERM in _SIGNAL_SEEN
        written = committed_outputs()[already:]  # the renames are never cut half-way (OutputPlan.commit)
        what = (f"after its outputs were written ({', '.join(written)})" if written else
                f"no output was written{kept}")
        print(f"parvec: {'terminated' if terminated else 'interrupted'}; {what}", file=sys.stderr)
        # The signal's exception can land inside a library's constructor (llvmlite's OutputString while numba
        # compiles): the half-built object's finalizer then fails as the process exits and Python prints
        # "Exception ignored in ..." with a traceback after the line above. The run is over; say nothing more.
        sys.unraisablehook = lambda _unraisable: None
        return 143 if terminated else 130
    except OSError as exc:  # a file the run reads or writes failed in a way no check foresaw
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"parvec: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
