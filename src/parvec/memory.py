"""This process's peak memory: the one reading every report uses (the CLI's ``peak_memory_bytes``, the
shard and client actors' ``peak_rss_bytes``).

It is the kernel's high-water mark of resident memory (``getrusage``'s ``ru_maxrss``, the ``VmHWM`` of
``/proc/self/status``): numpy and numba allocations count, pages of memory-mapped files count while they
are resident.  :mod:`parvec.distributed.memory` estimates what a cluster run *will* take; this measures
what a process *took*.

Example:
    >>> peak_memory_bytes() > 0
    True
"""

from __future__ import annotations

import resource
import sys

# ru_maxrss is in kibibytes on Linux and the BSDs, in bytes on macOS.
_RU_MAXRSS_UNIT = 1 if sys.platform == "darwin" else 1024


def peak_memory_bytes() -> int:
    """Peak resident memory of this process so far, in bytes (``ru_maxrss``).

    Safe to call from any process (the driver, a Ray actor): it reads only this process's counters.

    Example:
        >>> peak_memory_bytes() >= 1 << 20  # a Python process holds more than a MiB
        True
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * _RU_MAXRSS_UNIT
