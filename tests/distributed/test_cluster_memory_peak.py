"""The memory estimate of a real ``--cluster local:2`` run is not below what the run takes: every process of the
run, measured from /proc.  Each run is a ``parvec`` process that starts its own local Ray (not the session's, so
this file is scheduled on its own, beside the tests that share the session's Ray)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from procmem import pss_readable, run_measured
from topic_corpus import write_token_lines

REPO = Path(__file__).resolve().parents[2]

GiB = 1 << 30


@pytest.mark.ray
@pytest.mark.skipif(not pss_readable(), reason="needs /proc/PID/smaps_rollup (Linux 4.14+) to measure PSS")
@pytest.mark.parametrize("mode", ["replicas", "sharded"])
def test_estimate_is_not_below_the_measured_peak_of_a_local_cluster_run(mode, demo_tokens, tmp_path):
    # A model large enough to matter beside the processes' baselines: 12,022 words x dim 1500 (144 MB, twice).
    corpus = write_token_lines(tmp_path / "c.txt", demo_tokens, 100_000)
    report = tmp_path / "r.json"
    env = dict(os.environ, PARVEC_CACHE_DIR=str(tmp_path / "cache"), RAY_USAGE_STATS_ENABLED="0",
               PYTHONPATH=os.pathsep.join([str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    m = run_measured([sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(tmp_path / "v.txt"),
                      "--cluster", "local:2", "--mode", mode, "--threads", "1", "--dim", "1500", "--min-count", "1",
                      "--epochs", "1", "--report", str(report), "--no-progress"], env=env, timeout=600)
    assert m.returncode == 0, m.stderr[-3000:]
    estimate = json.loads(report.read_text())["memory_estimate"]["total_bytes"]
    measured = m.peak_pss_sum  # physical memory of the run's processes at their peak, shared pages once
    detail = (f"estimate {estimate / GiB:.2f} GiB, measured peak {measured / GiB:.2f} GiB (sum of the processes' "
              f"own peak RSS {m.sum_of_peak_rss / GiB:.2f} GiB, {len(m.processes)} processes)")
    print(detail)
    assert estimate >= 0.9 * measured, detail  # not below the real peak by much
    assert estimate <= 2.0 * measured, detail  # and not so high that runs which fit are refused
