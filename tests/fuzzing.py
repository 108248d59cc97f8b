"""Shared settings of the fuzz tests (test_fuzz_*.py in tests/, tests/corpus/ and tests/graph/).

A short, derandomised run (the same examples every time) is part of the suite.  For a long random run set
``PARVEC_FUZZ_EXAMPLES``, e.g. ``PARVEC_FUZZ_EXAMPLES=20000 nice -n 19 pytest -q tests/graph/test_fuzz_graph.py``.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from types import FrameType
from typing import NoReturn

from hypothesis import HealthCheck, settings

LONG_RUN = int(os.environ.get("PARVEC_FUZZ_EXAMPLES", "0"))


def fuzz_settings(short: int = 60) -> settings:
    """``short`` examples in CI (derandomised), ``$PARVEC_FUZZ_EXAMPLES`` random ones when set."""
    return settings(
        max_examples=LONG_RUN or short,
        deadline=None,
        derandomize=not LONG_RUN,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                               HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


@contextlib.contextmanager
def no_hang(seconds: int = 20) -> Iterator[None]:
    """Fail (instead of hanging) if the block takes longer than ``seconds``."""

    def alarm(signum: int, frame: FrameType | None) -> NoReturn:
        raise AssertionError(f"reader hung for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
