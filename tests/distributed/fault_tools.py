"""Tools of the fault tests: Ray's processes found below a process by their titles (from /proc), and a thread that
SIGKILLs the first such process once a condition holds."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable


def processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process we can read."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out[int(entry)] = (ppid, cmd)
    return out


def descendants_titled(prefix: str, root: int | None = None) -> list[int]:
    """Processes below ``root`` (this process) whose title starts with ``prefix``: only our own Ray's."""
    root = os.getpid() if root is None else root
    procs = processes()
    found = []
    for pid, (_, cmd) in procs.items():
        if not cmd.startswith(prefix):
            continue
        p, seen = pid, 0
        while p in procs and p not in (0, 1) and seen < 64:
            p, seen = procs[p][0], seen + 1
            if p == root:
                found.append(pid)
                break
    return sorted(found)


class Killer:
    """A thread that SIGKILLs the first process below this one titled ``prefix`` once ``when()`` is true."""

    def __init__(self, prefix: str, when: Callable[[], bool] = lambda: True, timeout: float = 300.0,
                 root: int | None = None) -> None:
        self.prefix, self.when, self.timeout, self.root = prefix, when, timeout, root
        self.killed: list[int] = []
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.stop = threading.Event()
        self.thread.start()

    def _watch(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline and not self.stop.is_set():
            if self.when():
                pids = descendants_titled(self.prefix, self.root)
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    self.killed.append(pids[0])
                    return
            time.sleep(0.02)  # a scan of /proc costs a few ms of CPU: polled less often, it leaves Ray its CPU

    def join(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
