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

    Example:
        >>> main(["--help"])  # doctest: +SKIP
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        # word2vec.c style: `parvec -train corpus.txt -output vec.txt ...` means `parvec train ...`
        argv = ["train", *argv]
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ParvecError as exc:
        print(f"parvec: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("parvec: interrupted; no output was written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
