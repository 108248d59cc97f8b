"""One local Ray for the whole test session (CI has 2 cores), shared by every cluster test.

The fixture starts Ray only when no Ray is initialised in this process, the way parvec starts a private local
Ray (``Cluster("local:2").session()``: listening on 127.0.0.1 only, usage statistics off, workers at niceness 0),
and stops only the Ray it started (an already initialised Ray is used and left running).  A parvec driver
entering ``Cluster.session()`` inside a test finds Ray initialised and leaves it running.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


@pytest.fixture(scope="session")
def ray_session() -> Iterator[ModuleType]:
    """The ``ray`` module with the session's local Ray running (num_cpus=2, 127.0.0.1)."""
    pytest.importorskip("ray")  # [dev] carries Ray: a skip here in CI is a gap, not a pass
    from parvec.distributed.cluster import Cluster

    with Cluster("local:2").session() as ray:
        yield ray
