"""The ``parvec`` command line: a thin layer over the Python API.

Each group of sub-commands lives in its own module exposing ``register(subparsers)``; every
sub-command's function takes the parsed ``argparse.Namespace`` and returns an exit code.
User errors (:class:`parvec.errors.ParvecError`) print one line and exit with code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from parvec.errors import ParvecError

# Modules that add sub-commands; each has register(subparsers).
_COMMAND_MODULES = ("parvec.cli.train", "parvec.cli.vectors", "parvec.cli.graph", "parvec.cli.demo",
                    "parvec.cli.report")


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
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
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
    status is 0 only when the outputs were written: 2 for an error, 130 when interrupted, and 141
    when a command's results on standard output could not all be written because the reader left.

    Example:
        >>> main(["--help"])  # doctest: +SKIP
    """
    from parvec.cli.outputs import discard_open_plans, exit_code_for_stdout, tolerant_std_streams

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        # word2vec.c style: `parvec -train corpus.txt -output vec.txt ...` means `parvec train ...`
        argv = ["train", *argv]
    with tolerant_std_streams() as (stdout, _stderr):
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
    parser = build_parser()
    args = parser.parse_args(argv)
    args._argv = argv  # which flags were given (not defaulted): `parvec train --resume` checks them
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ParvecError as exc:
        print(f"parvec: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        checkpoints = getattr(args, "checkpoint_dir", None)
        kept = f" (checkpoints in {checkpoints} are kept: --resume {checkpoints})" if checkpoints else ""
        print(f"parvec: interrupted; no output was written{kept}", file=sys.stderr)
        return 130
    except OSError as exc:  # a file the run reads or writes failed in a way no check foresaw
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"parvec: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
