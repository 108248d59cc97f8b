"""Where the project's shared data set is (``../shared/data`` beside the checkout, or ``$PARVEC_SHARED_DATA``) and
how a test that needs it skips when it is absent: a fresh clone without it passes, each such test saying which
file it needs and where it comes from.  ``$PARVEC_REQUIRE_SHARED_DATA=1`` makes them fail instead (for CI).

A module of its own (not conftest.py, which tests/gpu and tests/distributed have too): ``from shared_files import
needs_shared``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PARVEC_SHARED_DATA", REPO.parent / "shared" / "data"))
# Set (CI may) to make a test that needs the shared data fail instead of skip when it is absent.
REQUIRE_SHARED = os.environ.get("PARVEC_REQUIRE_SHARED_DATA", "") not in ("", "0")


def shared_skip_reason(path: Path) -> str:
    """Why a test that needs the shared data (the Wikipedia corpus, evaluation sets, graphs) skips.

    Example:
        >>> shared_skip_reason(Path("/x/shared/data/graphs/karate"))[:30]
        'needs /x/shared/data/graphs/ka'
    """
    return (f"needs {path}, from the project's shared data set (not part of parvec: ../shared/data beside the "
            "checkout, as CI has it, or $PARVEC_SHARED_DATA; provenance in its PROVENANCE.md), which is absent")


def needs_shared(path: Path) -> pytest.MarkDecorator:
    """A mark: skip the test (with :func:`shared_skip_reason`) when ``path`` of the shared data is absent; with
    ``$PARVEC_REQUIRE_SHARED_DATA`` set the test runs, and fails on the missing file.

    Example:
        >>> needs_shared(SHARED_DATA / "eval").name
        'skipif'
    """
    return pytest.mark.skipif(not path.exists() and not REQUIRE_SHARED, reason=shared_skip_reason(path))
