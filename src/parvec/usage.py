"""CPU time of a run: this process and every process it started on this machine, from their own accounting.

A run on one machine is one process (its threads included); a ``--cluster local:N`` run starts a private Ray
whose processes (GCS, raylet, agents) and actors (replicas, shards, clients, the sync board) are this process's
descendants, so the same snapshot counts them.  The processes of a remote cluster (``ray://``, ``auto``) run on
other machines and are not counted (the report says which processes it counted).

Example:
    >>> before = cpu_snapshot()
    >>> _ = sum(i * i for i in range(200_000))
    >>> cpu_seconds(before, cpu_snapshot()) > 0
    True
"""

from __future__ import annotations

import os
import resource
from typing import Any

__all__ = ["cpu_seconds", "cpu_snapshot"]


def _psutil() -> Any:
    try:
        import psutil
    except ImportError:  # the core install has no psutil: this process alone (it starts no others then)
        return None
    return psutil


def cpu_snapshot() -> dict[int, float]:
    """CPU seconds (user + system) used so far by this process and each of its descendants, by process id.

    Example:
        >>> os.getpid() in cpu_snapshot()
        True
    """
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out = {os.getpid(): usage.ru_utime + usage.ru_stime}
    psutil = _psutil()
    if psutil is None:
        return out
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return out
    for child in children:
        try:
            times = child.cpu_times()
        except psutil.Error:  # gone since the listing
            continue
        out[child.pid] = float(times.user + times.system)
    return out


def cpu_seconds(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds used between two snapshots, summed over the processes of the second (one started in between
    counts whole).

    Example:
        >>> cpu_seconds({1: 2.0}, {1: 5.0, 7: 1.5})
        4.5
    """
    return float(sum(max(0.0, t - before.get(pid, 0.0)) for pid, t in after.items()))
