"""The report of a ``--mode sharded`` run records the shards, clients and threads it ran with in its ``cluster``
block (they were ``null`` there when left to parvec), its parameters each client's threads, and ``parvec report``
labels it ``sharded×N``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from parvec.cli import main
from parvec.report import read_run

pytestmark = pytest.mark.ray


def test_a_sharded_runs_report_names_its_shards(ray_session, tmp_path, capsys, monkeypatch):
    # A machine of 4 cores: --threads left out is 4 for a run in this process, but a sharded client runs 1 thread.
    from parvec.cli import train_flags

    monkeypatch.setattr(train_flags, "default_threads", lambda: 4)
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(80)]
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(rng.choice(words, 20)) for _ in range(300)) + "\n")
    report = tmp_path / "r.json"
    assert main(["train", str(corpus), "-o", str(tmp_path / "v.txt"), "--cluster", "local:2", "--mode", "sharded",
                 "--dim", "8", "--epochs", "1", "--min-count", "1", "--no-cache", "--no-progress", "--report",
                 str(report)]) == 0
    capsys.readouterr()
    data = json.loads(report.read_text())
    cluster = data["cluster"]
    assert cluster["shards"] == data["shards"] == 1  # left to parvec: one shard on local:N
    assert cluster["clients"] == data["clients"] and cluster["threads_per_actor"] == data["client_threads"] == 1
    assert read_run(report).label == "sharded 1t d8 sharded×1"
    # The parameters' threads are what the label says (each client's), not this machine's cores.
    assert data["parameters"]["threads"] == 1 and data["parameters"]["algo"] == "sharded"
    assert main(["report", str(report), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "sharded×1" in html and "×?" not in html
    assert "<tr><th>threads</th><td>1</td></tr>" in html
