"""A ``parvec train --mode sharded`` process (its own local Ray, not the session's: this file is scheduled apart
from the tests that share the session's Ray) with a shard killed (kill -9) mid-run: it recovers, says so on the
console, and Ray's restart warnings stay off it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fault_tools import Killer, descendants_titled
from topic_corpus import three_topic_sentences

REPO = Path(__file__).resolve().parents[2]


def _parvec(*argv: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), RAY_USAGE_STATS_ENABLED="0")
    return subprocess.Popen([sys.executable, "-m", "parvec", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


@pytest.mark.ray
def test_cli_sharded_run_with_a_shard_killed_recovers_and_says_so_without_ray_restart_warnings(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(s) for s in three_topic_sentences(4000, seed=13)) + "\n", encoding="utf-8")
    out, report = tmp_path / "v.txt", tmp_path / "r.json"
    proc = _parvec("train", str(corpus), "-o", str(out), "--report", str(report), "--cluster", "local:2", "--mode",
                   "sharded", "--shards", "2", "--clients", "1", "--threads", "1", "--minibatch-words", "128", "--dim",
                   "16", "--epochs", "4", "--min-count", "1", "--no-cache", "--checkpoint-dir", str(tmp_path / "ck"))
    # Once the client trains (past its warm-up), kill a shard process of this run's private Ray.
    killer = Killer("ray::ShardActor", when=lambda: bool(descendants_titled("ray::ClientActor.train_unit", proc.pid)),
                    root=proc.pid, timeout=400)
    try:
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
        killer.join()
    assert killer.killed, "no shard was killed: training ended first"
    assert proc.returncode == 0, stderr[-3000:]
    assert "parvec: starting 2 shards and 1 client x 1 thread (Ray actors, one process each) on 2 CPUs" in stderr
    lost = [x for x in stderr.splitlines() if " of 2 was lost in epoch " in x]
    assert len(lost) == 1 and lost[0].startswith("parvec: shard "), stderr[-3000:]
    assert "every shard restored " in lost[0]
    assert "1 fault recovered" in stderr
    # Ray's "constructor arguments in the object store and max_restarts > 0" error line: gone.
    assert "max_restarts" not in stderr and "constructor arguments in the object store" not in stderr
    rep = json.loads(report.read_text())
    assert [f["kind"] for f in rep["faults"]] == ["shard"] and rep["words_retrained"] > 0
    assert "lost_updates_minibatches" not in rep and rep["words_trained"] == 4 * 80_000
    assert rep["snapshots"] >= 4 and (tmp_path / "ck" / "shards" / "manifest.json").exists()
    assert out.exists()
