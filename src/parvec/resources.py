"""This machine's resources as a process sees them: the memory it may still use, its CPUs, its data-segment cap.

One place reads the kernel's figures (``/proc/meminfo`` and ``/proc/self/status``, each read once per question),
sets the RLIMIT_DATA cap a shard process runs under, hands freed memory back to the OS (glibc ``malloc_trim``)
and counts the CPUs this process may run on; and one formatter says a number of bytes in words.  What a run
*took* is measured elsewhere: its peak memory in :mod:`parvec.memory`, its CPU seconds in :mod:`parvec.usage`.

Example:
    >>> human_bytes(3 * 2**20)
    '3.0 MiB'
    >>> cpu_count() >= 1
    True
"""

from __future__ import annotations

import functools
import os
import resource
from collections.abc import Callable

from parvec.errors import ParvecError

__all__ = ["available_memory", "cap_data_segment", "cpu_count", "human_bytes", "memory_budget", "meminfo",
           "release_freed_memory", "rlimit_headroom", "status_bytes", "vm_data_bytes"]


def _kib_fields(path: str, names: tuple[str, ...]) -> dict[str, int]:
    # The ``Name:   123 kB`` lines of a /proc file, in bytes, read once; {} where the file cannot be read.
    found: dict[str, int] = {}
    try:
        with open(path) as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in names:
                    found[name] = int(rest.split()[0]) * 1024
                    if len(found) == len(names):
                        break
    except (OSError, ValueError, IndexError):
        return {}
    return found


def meminfo(*names: str) -> dict[str, int]:
    """Fields of ``/proc/meminfo`` in bytes (``MemAvailable``, ``MemTotal``, ...), read in one pass; the
    fields the file lacks (or all, where it cannot be read) are left out.

    Example:
        >>> set(meminfo("MemTotal", "MemAvailable")) <= {"MemTotal", "MemAvailable"}
        True
    """
    return _kib_fields("/proc/meminfo", names)


def status_bytes(name: str) -> int | None:
    """One ``/proc/self/status`` field of this process in bytes (``VmData``, ``VmSize``, ...); None where unknown.

    Example:
        >>> status_bytes("VmData") is None or status_bytes("VmData") > 0
        True
    """
    return _kib_fields("/proc/self/status", (name,)).get(name)


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where unknown): what the machine can still give.

    Example:
        >>> available_memory() is None or available_memory() > 0
        True
    """
    return meminfo("MemAvailable").get("MemAvailable")


def vm_data_bytes() -> int | None:
    """This process's data segment now (``VmData``: private writable memory, what RLIMIT_DATA caps).

    Example:
        >>> vm_data_bytes() is None or vm_data_bytes() > 0
        True
    """
    return status_bytes("VmData")


def rlimit_headroom() -> int | None:
    """Bytes this process may still allocate under its RLIMIT_DATA/RLIMIT_AS caps (None: not capped).

    Example:
        >>> room = rlimit_headroom()
        >>> room is None or room >= 0
        True
    """
    room = None
    for limit, field_name in ((resource.RLIMIT_DATA, "VmData"), (resource.RLIMIT_AS, "VmSize")):
        soft = resource.getrlimit(limit)[0]
        if soft == resource.RLIM_INFINITY:
            continue
        used = status_bytes(field_name) or 0
        room = max(0, soft - used) if room is None else min(room, max(0, soft - used))
    return room


def memory_budget() -> int | None:
    """Bytes this process may still use: MemAvailable, capped by its RLIMIT_DATA/RLIMIT_AS headroom (None:
    neither is known).

    Example:
        >>> memory_budget() is None or memory_budget() >= 0
        True
    """
    budget = available_memory()
    room = rlimit_headroom()
    if room is not None:
        budget = room if budget is None else min(budget, room)
    return budget


def cap_data_segment(limit_bytes: int, what: str) -> None:
    """Cap this process's data segment (RLIMIT_DATA: every private writable mapping, numpy arrays included) at
    ``limit_bytes``; an allocation beyond it then fails with ``MemoryError``.  ``what`` names the process in the
    :class:`ParvecError` of a cap above the hard limit or below what the process already uses.

    Example:
        >>> cap_data_segment(64 * 2**30, "this test")  # doctest: +SKIP
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY and limit_bytes > hard:
        raise ParvecError(f"{what}: memory cap {limit_bytes} bytes is above the hard limit {hard}")
    now = vm_data_bytes()
    if now is not None and now >= limit_bytes:
        raise ParvecError(f"{what}: memory cap {limit_bytes / 2**30:.2f} GiB is below what the process already uses "
                          f"({now / 2**30:.2f} GiB); raise it")
    resource.setrlimit(resource.RLIMIT_DATA, (int(limit_bytes), hard))


def release_freed_memory() -> None:
    """Hand memory this process freed back to the OS (glibc ``malloc_trim``; a no-op elsewhere).

    glibc keeps freed blocks below the newest live allocation, so without this a parse's temporaries (string
    objects, edge keys) stay in the process's resident set during the walks and training.

    Example:
        >>> release_freed_memory()
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def cpu_count() -> int:
    """The number of CPUs this process may run on (its affinity mask; every CPU where there is none).

    Example:
        >>> cpu_count() >= 1
        True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def human_bytes(n: float | None) -> str:
    """Bytes in words: ``'512 B'``, ``'3.0 MiB'``, ``'3.4 GiB'`` (``'unknown'`` for None).

    Example:
        >>> human_bytes(512), human_bytes(3 * 2**20), human_bytes(3.44 * 2**30), human_bytes(None)
        ('512 B', '3.0 MiB', '3.4 GiB', 'unknown')
    """
    if n is None:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"
