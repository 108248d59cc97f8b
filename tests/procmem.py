"""Run a command and measure the memory of its whole process tree from ``/proc`` (Linux; no psutil).

``run_measured(argv)`` samples every process descended from the command every ``interval`` seconds and
returns the peak over time of the summed proportional set sizes (PSS: a page shared by k processes counts
1/k in each, so the sum is the physical memory the tree holds), each process's own peaks, and the sum of
the processes' peak RSS (which counts a shared page once per process that maps it).
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


def pss_readable() -> bool:
    """Whether this kernel gives ``/proc/PID/smaps_rollup`` (Linux 4.14+) for our own processes.

    Example:
        >>> isinstance(pss_readable(), bool)
        True
    """
    return Path(f"/proc/{os.getpid()}/smaps_rollup").is_file()


def _tree(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        kids.setdefault(int(stat[stat.rfind(")") + 2:].split()[1]), []).append(int(d))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def _sample(pid: int) -> dict[str, int | str] | None:
    rec: dict[str, int | str] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "VmRSS"):
                    rec[key] = int(value.split()[0]) * 1024
        with open(f"/proc/{pid}/smaps_rollup") as f:
            rec["Pss"] = next((int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:")), 0)
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            rec["cmd"] = f.read().replace(b"\0", b" ").decode(errors="replace")[:120]
    except OSError:
        return None
    return rec


@dataclass
class Measured:
    """What :func:`run_measured` saw."""

    returncode: int
    stdout: str
    stderr: str
    peak_pss_sum: int = 0  # max over samples of the summed PSS of every process of the tree
    sum_of_peak_rss: int = 0  # each process's VmHWM, summed
    processes: dict[int, dict[str, int | str]] = field(default_factory=dict)


def run_measured(argv: list[str], env: dict[str, str] | None = None, interval: float = 0.05,
                 timeout: float = 900.0) -> Measured:
    """Run ``argv`` to its end, sampling its process tree's memory.

    Example:
        >>> run_measured(["true"]).returncode
        0
    """
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    m = Measured(0, "", "")
    deadline = time.monotonic() + timeout
    import threading

    out: dict[str, str] = {}
    readers = [threading.Thread(target=lambda k=k, s=s: out.__setitem__(k, s.read()), daemon=True)
               for k, s in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    for r in readers:
        r.start()
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            break
        total = 0
        for pid in _tree(proc.pid):
            rec = _sample(pid)
            if rec is None:
                continue
            seen = m.processes.setdefault(pid, {"cmd": rec["cmd"], "hwm": 0, "pss": 0})
            seen["hwm"] = max(int(seen["hwm"]), int(rec.get("VmHWM", 0)))
            seen["pss"] = max(int(seen["pss"]), int(rec.get("Pss", 0)))
            total += int(rec.get("Pss", 0))
        m.peak_pss_sum = max(m.peak_pss_sum, total)
        time.sleep(interval)
    m.returncode = proc.wait()
    for r in readers:
        r.join()
    m.stdout, m.stderr = out.get("stdout", ""), out.get("stderr", "")
    m.sum_of_peak_rss = sum(int(p["hwm"]) for p in m.processes.values())
    return m
