"""CPU time of a run: this process and every process it started on this machine, from their own accounting.

A run on one machine is one process (its threads included); a ``--cluster local:N`` run starts a private Ray
whose processes (GCS, raylet, agents) and actors (replicas, shards, clients, the sync board) are this process's
descendants, so the same snapshot counts them (so is any other process a program runs below itself: its own
Ray session's, in a test suite; ``cpu_seconds_by_process`` tells them apart).  The processes of a remote
cluster (``ray://``, ``auto``) run on other machines and are not counted.

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

__all__ = ["cpu_by_role", "cpu_seconds", "cpu_snapshot", "own_cpu_seconds", "process_role"]


def _psutil() -> Any:
    try:
        import psutil
    except ImportError:  # the core install has no psutil: this process alone (it starts no others then)
        return None
    return psutil


def own_cpu_seconds() -> float:
    """CPU seconds (user + system) this process alone has used so far (a shard or client actor's own figure).

    Example:
        >>> own_cpu_seconds() > 0
        True
    """
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_snapshot() -> dict[int, tuple[float, str]]:
    """CPU seconds (user + system) used so far by this process and each of its descendants, with a name for
    each (:func:`process_role`), by process id.

    Example:
        >>> cpu_snapshot()[os.getpid()][1]
        'this process'
    """
    out = {os.getpid(): (own_cpu_seconds(), "this process")}
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
            cmdline = child.cmdline()
            name = child.name()
        except psutil.Error:  # gone since the listing
            continue
        out[child.pid] = (float(times.user + times.system), process_role(name, cmdline))
    return out


def process_role(name: str, cmdline: list[str]) -> str:
    """What a process of a run is, from its name and command line: a Ray actor's class (``ray::_Replica``),
    Ray's own servers (``gcs_server``, ``raylet``) and Python helpers (``ray: dashboard agent``, ...), else its name.

    Example:
        >>> process_role("ray::_Replica.tr", ["ray::_Replica.train_epoch"])
        'ray::_Replica'
        >>> process_role("python", ["/usr/bin/python", "-u", "/x/ray/dashboard/agent.py", "--node-ip"])
        'ray: dashboard agent'
        >>> process_role("raylet", ["/x/raylet", "--raylet_socket_name=..."])
        'raylet'
    """
    title = cmdline[0] if cmdline else name
    if title.startswith("ray::"):
        return title.split(".", 1)[0].split(" ", 1)[0]
    for arg in cmdline[:4]:
        base = os.path.basename(arg)
        if base.endswith(".py"):
            words = base[:-3].replace("_", " ")
            parent = os.path.basename(os.path.dirname(arg))
            return f"ray: {parent} {words}" if "ray" in arg else words
    return os.path.basename(title) or name


def cpu_seconds(before: dict[int, tuple[float, str]], after: dict[int, tuple[float, str]]) -> float:
    """CPU seconds used between two snapshots, summed over the processes of the second (one started in between
    counts whole).

    Example:
        >>> cpu_seconds({1: (2.0, "a")}, {1: (5.0, "a"), 7: (1.5, "b")})
        4.5
    """
    return float(sum(cpu_by_role(before, after).values()))


def cpu_by_role(before: dict[int, tuple[float, str]], after: dict[int, tuple[float, str]]) -> dict[str, float]:
    """CPU seconds used between two snapshots by each kind of process (:func:`process_role`), largest first.

    Example:
        >>> cpu_by_role({1: (2.0, "this process")}, {1: (5.0, "this process"), 7: (1.5, "raylet")})
        {'this process': 3.0, 'raylet': 1.5}
    """
    out: dict[str, float] = {}
    for pid, (t, role) in after.items():
        out[role] = out.get(role, 0.0) + max(0.0, t - before.get(pid, (0.0, role))[0])
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))
