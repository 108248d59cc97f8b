"""What a cluster run prints is parvec's: no Ray notes (``Token authentication is enabled ...``), and when a
replica is lost, parvec's one line, not Ray's ``(raylet) A worker died ...`` in yellow escape codes on standard
output, where it corrupted the vectors of ``-o -``."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from child_signals import popen_kwargs

pytestmark = pytest.mark.ray

REPO = Path(__file__).resolve().parents[2]


def _kill_first_replica_training(root: int, done: threading.Event, killed: list) -> None:
    import psutil

    while not done.is_set():
        try:
            tree = psutil.Process(root).children(recursive=True)
        except psutil.Error:
            return
        for p in tree:
            try:
                if " ".join(p.cmdline()).startswith("ray::_Replica.train_epoch"):
                    time.sleep(0.5)
                    p.kill()
                    killed.append(p.pid)
                    return
            except psutil.Error:
                continue
        time.sleep(0.05)


def test_a_cluster_run_with_a_replica_lost_prints_parvecs_lines_only_and_clean_vectors(demo_slice, tmp_path):
    pytest.importorskip("psutil")
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
                        "RAY_USAGE_STATS_ENABLED": "0", "PARVEC_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("RAY_AUTH_MODE", None)  # Ray's default: token authentication, and its note on every start
    env.pop("RAY_COLOR_PREFIX", None)
    proc = subprocess.Popen([sys.executable, "-m", "parvec", "train", str(demo_slice), "-o", "-", "--cluster",
                             "local:2", "--epochs", "40", "--dim", "16", "--no-progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=tmp_path, **popen_kwargs())
    done, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_first_replica_training, args=(proc.pid, done, killed), daemon=True)
    killer.start()
    try:
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        done.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = stderr.decode()
    assert proc.returncode == 0, err[-3000:]
    assert killed, "no replica was killed: training ended first"
    lost = [line for line in err.splitlines() if " was lost in epoch " in line]
    assert len(lost) == 1 and lost[0].startswith("parvec: replica "), err[-3000:]
    for noise in ("\x1b[", "Token authentication", "(raylet)", "A worker died"):
        assert noise not in err, f"{noise!r} on standard error:\n{err[-3000:]}"
    lines = stdout.decode().splitlines()
    count, dim = map(int, lines[0].split())
    assert dim == 16 and len(lines) == count + 1
    assert all(len(line.split()) == 17 for line in lines[1:]), "something else was printed among the vectors"
