"""parvec.usage: a run's CPU seconds, from the processes' own accounting, in the stats and the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from parvec.usage import cpu_seconds, cpu_snapshot


def test_a_child_process_is_counted():
    before = cpu_snapshot()
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.4: pass\ntime.sleep(30)"])
    try:
        deadline = time.time() + 20
        while time.time() < deadline:  # until the child has burnt its 0.4 s of CPU
            snap = cpu_snapshot()
            if snap.get(child.pid, (0.0, ""))[0] >= 0.4:
                break
            time.sleep(0.05)
        assert child.pid in snap and snap[child.pid][0] >= 0.4
        assert cpu_seconds(before, snap) >= 0.4
        assert snap[child.pid][1] == "python3" or "python" in snap[child.pid][1]
    finally:
        child.kill()
        child.wait()


def test_idle_time_is_not_counted():
    before = cpu_snapshot()
    time.sleep(0.3)
    assert cpu_seconds(before, cpu_snapshot()) < 0.2


def test_the_train_report_carries_the_cost(tmp_path, demo_slice):
    from parvec.cli import main

    report = tmp_path / "run.json"
    code = main(["train", str(demo_slice), "-o", str(tmp_path / "v.txt"), "--dim", "16", "--epochs", "1",
                 "--threads", "1", "--no-cache", "--report", str(report), "--no-progress"])
    assert code == 0
    rep = json.loads(report.read_text())
    # one process, one training thread: its CPU time is about its training time, never above all the cores'
    assert 0 < rep["cpu_seconds"] <= rep["training_seconds"] * (os.cpu_count() or 1) + 0.5
    assert rep["cpu_seconds_per_word"] == rep["cpu_seconds"] / rep["words_trained"]
    assert rep["cpu_processes"] >= 1
    # by kind of process: this one, and any other process below it (in this test session, its own local Ray's)
    by = rep["cpu_seconds_by_process"]
    assert 0 < by["this process"] <= rep["cpu_seconds"] + 0.01
    assert sum(by.values()) == pytest.approx(rep["cpu_seconds"], abs=0.01 * len(by))
