"""One local Ray for the whole test session (CI has 2 cores), shared by every cluster test.

The fixture starts Ray only when no Ray is initialised in this process, binds it to 127.0.0.1 with usage
statistics off, and stops only the Ray it started.  A parvec driver entering ``Cluster.session()`` inside a
test finds Ray initialised and leaves it running.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


@pytest.fixture(scope="session")
def ray_session():
    """The ``ray`` module with the session's local Ray running (num_cpus=2, 127.0.0.1)."""
    ray = pytest.importorskip("ray")  # [dev] carries Ray: a skip here in CI is a gap, not a pass
    started = False
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
                 configure_logging=False)
        started = True
    yield ray
    if started:
        ray.shutdown()
