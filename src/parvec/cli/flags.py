"""Which flags a command line gave (not left at their defaults), known from its one parse: ``parvec train
--resume`` refuses those that contradict its checkpoint, and sharded mode gives a client one thread unless
``--threads`` was given.

Every sub-command's parser is a :class:`CommandParser` (``build_parser``'s ``parser_class``): it parses into a
namespace whose every flag starts unset, so what the parse set was given; the others then take their defaults
exactly as argparse gives them, and the namespace records the given ones as ``given_flags``.

Example:
    >>> p = argparse.ArgumentParser(); sub = p.add_subparsers(dest="command", parser_class=CommandParser)
    >>> t = sub.add_parser("t"); _ = t.add_argument("--dim", type=int, default=100)
    >>> ns = p.parse_args(["t", "--dim", "100"]); ns.dim, sorted(explicit_flags(ns))
    (100, ['dim'])
    >>> sorted(explicit_flags(p.parse_args(["t"])))
    []
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

__all__ = ["CommandParser", "explicit_flags"]

GIVEN = "given_flags"  # the namespace's record of the flags given


class _Unset:
    """A flag not given: the value every flag starts from in :meth:`CommandParser.parse_known_args`."""

    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()


class CommandParser(argparse.ArgumentParser):
    """A sub-command's parser that records which flags its command line gave (module docstring)."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        """Parse ``args``; the namespace's ``given_flags`` holds the destinations the command line set."""
        dests = [a for a in self._actions if a.dest not in (argparse.SUPPRESS, "help")]
        start = namespace if namespace is not None else argparse.Namespace()
        unset = [a for a in dests if a.dest not in vars(start)]
        for action in unset:
            setattr(start, action.dest, _UNSET)
        parsed, rest = super().parse_known_args(args, start)
        given = set(vars(parsed).get(GIVEN, ()))
        for action in unset:
            if vars(parsed)[action.dest] is not _UNSET:
                given.add(action.dest)
            elif action.default is argparse.SUPPRESS:
                delattr(parsed, action.dest)
            else:  # argparse's own default: a string default goes through the flag's type, as argparse does
                default = action.default
                if isinstance(default, str):
                    default = self._get_value(action, default)
                setattr(parsed, action.dest, default)
        setattr(parsed, GIVEN, frozenset(given))
        return parsed, rest


def explicit_flags(args: argparse.Namespace, command: str | None = None) -> frozenset[str]:
    """The destinations of the flags given on the command line (not left at their defaults), as the one parse
    of a :class:`CommandParser` recorded them; none for a namespace built otherwise.  ``command`` is kept for
    the callers that name theirs.

    Example:
        >>> from parvec.cli import build_parser
        >>> sorted(explicit_flags(build_parser().parse_args(["train", "c.txt", "--dim", "50", "-o", "v.txt"])))
        ['dim', 'input', 'output']
    """
    given: Any = vars(args).get(GIVEN, frozenset())
    return frozenset(given)
