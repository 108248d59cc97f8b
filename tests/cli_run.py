"""Run the ``parvec`` CLI in-process for a test: ``run(argv, capsys) -> (exit code, stdout, stderr)``."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from parvec.cli import main


def run(argv: Sequence[object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Call ``parvec`` with ``argv`` (any values, made strings) and return its exit code and what it printed.

    Example:
        >>> code, out, err = run(["train", "c.txt", "-o", "v.txt"], capsys)  # doctest: +SKIP
    """
    code = main([str(x) for x in argv])
    out = capsys.readouterr()
    return code, out.out, out.err
