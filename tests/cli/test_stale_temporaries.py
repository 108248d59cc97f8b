"""A run killed with SIGKILL leaves its reserved output's temporary (``.parvec-PID@HOST-XXXXXXXX.NAME``) beside
``-o``; the next run writing that output removes it, but only parvec's own, and only when the process named in it
is gone (not another live run's, not another machine's): at once when no process has that number here (a
``--resume`` right after the kill), once a minute old when the number names a later process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

from parvec.fileio import STALE_AFTER_S, _host_tag, atomic_output, remove_stale_temporaries

FAST = ["--dim", "8", "--epochs", "1", "--threads", "1", "--min-count", "1", "--algo", "classic", "--no-cache",
        "--no-progress"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def _temporary(directory: Path, pid: int, target: str, host: str | None = None, age: float = 2 * STALE_AFTER_S,
               suffix: str = "") -> Path:
    _temporary.made += 1  # tempfile's eight random characters, one set per file
    path = directory / f".parvec-{pid}@{host or _host_tag()}-abcd{_temporary.made:04d}.{target}{suffix}"
    path.write_bytes(b"")
    _age(path, age)
    return path


_temporary.made = 0


def test_only_temporaries_of_this_output_whose_process_is_gone_are_removed(tmp_path):
    from parvec.fileio import _process_started_at

    if not _process_started_at(1) or _process_started_at(1) > time.time() - 3 * STALE_AFTER_S:
        pytest.skip("this machine's process 1 started too recently to stand for a live owner")
    dead = _dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = _temporary(tmp_path, dead, "v.txt")
        stale_inner = _temporary(tmp_path, dead, "v.txt", suffix=".tmp")  # atomic_output's own
        fresh = _temporary(tmp_path, dead, "v.txt", age=0)  # no process has the number: gone, whatever the age
        reused = _temporary(tmp_path, live.pid, "v.txt", age=3600)  # the number now names a later process
        live_start = _process_started_at(live.pid)
        kept = {
            # written 10 s before the process that has the number now started, under a minute ago: left a while
            "reused, young": _temporary(tmp_path, live.pid, "v.txt", age=time.time() - live_start + 10),
            "live owner": _temporary(tmp_path, 1, "v.txt"),  # init: running since before the file was written
            "another machine": _temporary(tmp_path, dead, "v.txt", host="elsewhere"),
            "another output": _temporary(tmp_path, dead, "w.txt"),
        }
        not_ours = tmp_path / ".v.txt.abcd1234.tmp"
        not_ours.write_bytes(b"")
        _age(not_ours, 3600)
        removed = remove_stale_temporaries(tmp_path, "v.txt")
        assert sorted(removed) == sorted([stale, stale_inner, fresh, reused])
        assert [k for k, p in kept.items() if not p.exists()] == [] and not_ours.exists()
    finally:
        live.kill()
        live.wait()


def test_atomic_output_removes_a_killed_writers_temporary(tmp_path):
    stale = _temporary(tmp_path, _dead_pid(), "out.txt", suffix=".tmp")
    with atomic_output(tmp_path / "out.txt", "w") as f:
        f.write("x\n")
    assert not stale.exists() and (tmp_path / "out.txt").read_text() == "x\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(200)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(" ".join(rng.choice(words, 20)) for _ in range(5000)) + "\n")
    return path


def test_a_run_after_a_killed_one_removes_its_temporary(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(out / "v.txt"),
                             "--epochs", "1000", "--dim", "8", "--threads", "1", "--no-cache", "--no-progress"],
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not any(n.startswith(".parvec-") for n in os.listdir(out)) and time.monotonic() < deadline:
            assert proc.poll() is None, "the run ended before its output was reserved"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = [p for p in out.iterdir() if p.name.startswith(".parvec-")]
    assert len(left) == 1 and left[0].name.startswith(f".parvec-{proc.pid}@")
    # at once, the file seconds old: the killed process is gone from this machine, so its temporary goes
    code, _, err = run(["train", corpus, "-o", out / "v.txt", *FAST], capsys)
    assert code == 0, err
    assert sorted(os.listdir(out)) == ["v.txt"]
