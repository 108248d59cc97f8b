"""Cluster runs and their memory, on the session's local Ray: the summary line says what ran (replicas and syncs,
shards and clients), and ``--mode sharded`` refuses a run that does not fit before its shards start.  (The
estimate against a measured run: test_cluster_memory_peak.py, whose runs start their own Ray.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from topic_corpus import write_token_lines

from parvec import resources
from parvec.cli import main

REPO = Path(__file__).resolve().parents[2]

GiB = 1 << 30


@pytest.mark.ray
def test_replicas_summary_line_says_replicas_threads_and_syncs(ray_session, demo_tokens, tmp_path, capsys):
    corpus = write_token_lines(tmp_path / "c.txt", demo_tokens, 60_000)
    report = tmp_path / "r.json"
    code = main(["train", str(corpus), "-o", str(tmp_path / "v.txt"), "--cluster", "local:2", "--threads", "1",
                 "--dim", "16", "--epochs", "2", "--sync-words", "10000", "--report", str(report), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    rep = json.loads(report.read_text())
    line = next(x for x in err.splitlines() if x.startswith("trained "))
    m = re.search(r"\(2 epochs, hogbatch, 2 replicas x 1 thread, ([\d,]+) syncs \(([\d,]+) overlapped\), "
                  r"([\d.]+ [KMG]?i?B) synced\)", line)
    assert m, line
    assert int(m.group(1).replace(",", "")) == rep["syncs"] > 0
    assert int(m.group(2).replace(",", "")) == rep["syncs_overlapped"] > 0
    memory = next(x for x in err.splitlines() if x.startswith("memory: "))
    assert "every process on this machine" in memory and "2 replicas x" in memory
    assert rep["memory_estimate"]["parts"][1]["name"] == "replica" and rep["memory_estimate"]["fits"]


@pytest.mark.ray
def test_sharded_summary_line_and_refusal_before_the_shards_start(ray_session, demo_tokens, tmp_path, capsys,
                                                                  monkeypatch):
    corpus = write_token_lines(tmp_path / "c.txt", demo_tokens, 60_000)
    code = main(["train", str(corpus), "-o", str(tmp_path / "v.txt"), "--cluster", "local:2", "--mode", "sharded",
                 "--threads", "1", "--dim", "16", "--epochs", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    # one shard by default on local:N (one machine), whose calls train each minibatch whole (fused calls)
    assert re.search(r"^trained .*\(1 epoch, sharded: 1 shard, 2 clients x 1 thread, [\d,]+ minibatches of "
                     r"8,192 input words \(fused calls: trained whole in the shard\), [\d.]+ [KMG]iB sent, "
                     r"[\d.]+ B received\)", err, re.M), err  # one loss (8 bytes) back per call
    assert re.search(r"^memory: .* shard [\d.]+ [KMG]iB .* 2 clients x ", err, re.M), err

    # Too big for the memory left: refused after counting, before a shard or client actor starts.
    from parvec.distributed import sharded

    def no_actors(*args, **kwargs):
        raise AssertionError("the shards were started: the memory check did not refuse first")

    monkeypatch.setattr(sharded.ShardedRun, "__init__", no_actors)
    monkeypatch.setattr(resources, "available_memory", lambda: GiB)
    out = tmp_path / "big.txt"
    # (8,557 words x dim 12,000: 783 MiB of columns in both matrices; the other processes hold no per-word table)
    code = main(["train", str(corpus), "-o", str(out), "--cluster", "local:2", "--mode", "sharded", "--threads", "1",
                 "--dim", "12000", "--min-count", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert re.search(r"^parvec: error: --cluster local:2 \(sharded\) needs about .* but 1\.0 GiB is available: "
                     r".*, shard [\d.]+ [KMG]iB .*use more shards", err, re.M), err
    assert not out.exists()
