"""Signals for the tests that stop a ``parvec`` process: a test run in the background (``pytest &`` in a script,
as a CI job may be) ignores SIGINT, and a child inherits that (``SIG_IGN`` survives exec), so the child could not
be interrupted.  ``popen_kwargs()`` gives a child SIGINT's default action back; ``default_sigint()`` does the same
for this process for a block."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Python then installs its KeyboardInterrupt handler at start


def popen_kwargs() -> dict[str, Any]:
    """Keyword arguments for ``subprocess.Popen``/``run`` whose child starts with SIGINT at its default action.

    Example:
        >>> sorted(popen_kwargs())
        ['preexec_fn']
    """
    return {"preexec_fn": _sigint_default}


@contextlib.contextmanager
def default_sigint() -> Iterator[None]:
    """This process raises ``KeyboardInterrupt`` on SIGINT for the block (as an interactive Python does)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
