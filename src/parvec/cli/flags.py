"""Which flags a command line gave (not left at their defaults): ``parvec train --resume`` refuses those that
contradict its checkpoint, and sharded mode gives a client one thread unless ``--threads`` was given."""

from __future__ import annotations

import argparse

_UNSET = object()


def explicit_flags(args: argparse.Namespace, command: str = "train") -> set[str]:
    """The destinations of the flags given on the command line of ``command`` (not left at their defaults).

    Example:
        >>> sorted(explicit_flags(argparse.Namespace(_argv=["train", "c.txt", "--dim", "50", "-o", "v.txt"])))
        ['dim', 'input', 'output']
    """
    argv = getattr(args, "_argv", None)
    if not argv or command not in argv:
        return set()
    from parvec.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices[command]
    # Every flag defaults to a sentinel: what parses to something else was given.
    dests = {a.dest for a in parser._actions if a.dest not in ("help", argparse.SUPPRESS)}
    parser.set_defaults(**dict.fromkeys(dests, _UNSET))
    ns, _ = parser.parse_known_args(argv[argv.index(command) + 1:])
    return {k for k, v in vars(ns).items() if v is not _UNSET and k in dests}
