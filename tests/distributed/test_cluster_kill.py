"""``kill -9`` of a ``parvec train --cluster local:2`` run: every process of its private Ray ends within seconds
(Ray's agents lived 60-90 s: their raylet died by Ray's fate-sharing and they waited on the dead GCS), and the
next run writing the same output removes the temporary the killed one left beside ``-o`` once it is a minute
old."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from child_signals import popen_kwargs

pytestmark = pytest.mark.ray

REPO = Path(__file__).resolve().parents[2]


def _titles(pid: int) -> dict[int, str]:
    import psutil

    found = {}
    try:
        for p in psutil.Process(pid).children(recursive=True):
            try:
                found[p.pid] = p.name()
            except psutil.Error:
                continue
    except psutil.Error:
        pass
    return found


def _running(pids) -> list[int]:
    import psutil

    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.Error:
            continue
    return alive


def test_kill_9_of_the_driver_takes_its_local_ray_with_it(demo_slice, tmp_path):
    pytest.importorskip("psutil")
    out = tmp_path / "out"
    out.mkdir()
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
                        "RAY_USAGE_STATS_ENABLED": "0", "PARVEC_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "parvec", "train", str(demo_slice), "-o", str(out / "v.txt"),
                             "--cluster", "local:2", "--epochs", "60", "--no-progress"], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, env=env, **popen_kwargs())
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # the replicas training: every kind of Ray process is up
            assert proc.poll() is None, "the run ended before it trained:\n" + "".join(lines[-20:])
            seen |= _titles(proc.pid)
            if any(t.startswith("ray::_Replica") for t in seen.values()) and any(
                    "Agent" in t for t in seen.values()):
                break
            time.sleep(0.1)
        else:
            pytest.fail("no replica training within 240 s:\n" + "".join(lines[-20:]))
        seen |= _titles(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 20  # they lived 60-90 s
    left = _running(seen)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = _running(left)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"processes of the killed run's Ray still running 20 s later: {[seen[p] for p in left]}"
    temporaries = [p for p in out.iterdir() if p.name.startswith(".parvec-")]
    assert [p.name.split("@")[0] for p in temporaries] == [f".parvec-{proc.pid}"]  # the killed run's
