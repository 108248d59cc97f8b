"""``parvec train --device cuda`` under numba's CUDA simulator with its default settings: it says once that the
simulator is slow and for tests only, prints its progress, and trains with the simulator's small blocks and short
launches rather than the GPU's (with which a 20 KB corpus ran silent for 23 minutes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba_cuda", reason="the [gpu] extra (numba-cuda) runs the simulator")

REPO = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 900  # a hung run fails instead of stalling the suite; how long a run takes is not checked here


def test_simulator_run_says_it_is_slow_reports_progress_and_ends(tmp_path):
    words = [f"w{i % 37}" for i in range(300)]
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("\n".join(" ".join(words[i:i + 100]) for i in range(0, 300, 100)) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARVEC_GPU_")}  # the defaults, not a test's
    env |= {"NUMBA_ENABLE_CUDASIM": "1", "PARVEC_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), *filter(None, [env.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(tmp_path / "v.txt"),
                          "--device", "cuda", "--dim", "16", "--epochs", "2", "--min-count", "1", "--report",
                          str(tmp_path / "r.json")],
                         capture_output=True, text=True, env=env, timeout=HANG_GUARD_S)
    assert out.returncode == 0, out.stderr[-2000:]
    notes = [line for line in out.stderr.splitlines() if "simulator" in line and "tests only" in line]
    assert len(notes) == 1, out.stderr  # one line, once
    progress = re.findall(r"^CUDA simulator: epoch (\d)/2, ([\d,]+) of ([\d,]+) words", out.stderr, re.M)
    assert [p[0] for p in progress][-2:] == ["1", "2"] and progress[-1][1] == progress[-1][2], out.stderr
    gpu = json.loads((tmp_path / "r.json").read_text())["gpu"]
    assert gpu["threads_per_block"] <= 8 and gpu["words_per_launch"] <= 1000  # the simulator's small defaults
    assert re.search(r"^trained .*\(2 epochs, full-w2v on numba CUDA simulator, \d threads per block\)", out.stderr,
                     re.M), out.stderr  # the summary line says where it ran
