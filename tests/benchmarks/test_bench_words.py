"""The word benchmark's multi-seed quality summary (benchmarks/bench_words.py --quality-seeds)."""

from __future__ import annotations

import pytest
from benchmark_modules import load


@pytest.fixture(scope="module")
def bench_words():
    return load("bench_words")


def _q(ws: float, simlex: float, analogy_percent: float) -> dict:
    return {"ws353": {"spearman": ws}, "simlex": {"spearman": simlex},
            "analogies": {"3cosadd": analogy_percent / 100}}


def test_seed_table_means_sd_and_gaps_to_classic(bench_words):
    per_seed = {
        "classic": {1: _q(0.660, 0.320, 36.0), 2: _q(0.670, 0.300, 35.0)},
        "par": {1: _q(0.680, 0.290, 35.5), 2: _q(0.672, 0.306, 34.0)},
    }
    table = bench_words.seed_table(per_seed, [1, 2])
    lines = table.splitlines()
    par_row = next(line for line in lines if line.startswith("| par |"))
    # Each seed's scores, then mean (sd): WS 0.676 (0.006), SimLex 0.298 (0.011), analogy 34.8 (1.1).
    assert "0.680 / 0.290 / 35.5" in par_row and "0.672 / 0.306 / 34.0" in par_row
    assert par_row.endswith("| 0.676 (0.006) / 0.298 (0.011) / 34.8 (1.1) |")
    gap = next(line for line in lines if line.startswith("- par:"))
    # Means: WS +0.011, SimLex -0.012, analogy -0.8; widest same-seed gaps: +0.020, -0.030, -1.0.
    assert gap == "- par: WS-353 +0.011 (widest +0.020); SimLex-999 -0.012 (widest -0.030); analogy -0.8 (widest -1.0)"
    assert not any(line.startswith("- classic:") for line in lines)


def test_seed_table_without_classic_has_no_gap_lines(bench_words):
    table = bench_words.seed_table({"par": {3: _q(0.6, 0.3, 30.0), 4: _q(0.62, 0.32, 31.0)}}, [3, 4])
    assert "| seed 3 | seed 4 |" in table
    assert "Gap to classic" not in table
