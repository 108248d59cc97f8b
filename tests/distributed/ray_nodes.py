"""Two Ray nodes on this machine for a test: a child Python process starts them with ``ray.cluster_utils`` (its own
Ray, not the session's), runs a body of code joined to them, and prints one JSON line, which the test gets back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any


def on_two_nodes(head: str, node: str, body: str, timeout: float = 300) -> dict[str, Any]:
    """Run ``body`` (Python, indented by 4, ending with ``print(json.dumps(...))``; ``json``, ``os``, ``ray`` and
    ``parvec`` imported) joined to a head node made with ``head_node_args={head}`` and a second node made with
    ``add_node({node})``, and return what it printed last, parsed; the child must exit 0."""
    script = textwrap.dedent("""
        import json, os
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
        import ray
        from ray.cluster_utils import Cluster as RayCluster
        import parvec

        nodes = RayCluster(initialize_head=True, head_node_args={{{head}, "include_dashboard": False}})
        nodes.add_node({node})
        ray.init(address=nodes.address)
        try:
        {body}
        finally:
            ray.shutdown()
            nodes.shutdown()
    """).format(head=head, node=node, body=textwrap.indent(textwrap.dedent(body), "    "))
    # Both nodes on 127.0.0.1: without this Ray's multi-node mode swaps the loopback for the host's address.
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result
