"""Every training mode's vectors are bit-identical to those of the code before the run engine (issue 22).

``tests/golden/vectors.json`` holds the SHA-256 of each mode's input and output vectors as commit c9b23cc trained
them (``tests/golden/make_golden.py``: one thread, a fixed 40k-token slice of the demo corpus or a fixed graph,
compiled for a fixed instruction set so that the bits do not depend on the CPU).  One fresh process trains every
mode again; each mode is its own test.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))
import make_golden  # noqa: E402

EXPECTED = json.loads((GOLDEN / "vectors.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    pytest.importorskip("ray")  # [dev] carries Ray: the two cluster modes are part of the check
    tmp = tmp_path_factory.mktemp("golden")
    return make_golden.run_golden(tmp / "vectors.json", list(make_golden.MODES), tmp / "numba")


@pytest.mark.parametrize("mode", list(make_golden.MODES))
def test_vectors_bit_identical_to_before_the_run_engine(trained: dict, mode: str) -> None:
    for side in ("in", "out"):
        key = f"{mode}/{side}"
        got, want = trained[key], EXPECTED[key]
        assert got["shape"] == want["shape"], key
        assert got["sha256"] == want["sha256"], (
            f"{key}: the vectors differ from the code before the refactor (sum {got['sum']!r} vs {want['sum']!r}, "
            f"sum of |x| {got['abs_sum']!r} vs {want['abs_sum']!r})")


def test_every_mode_of_the_issue_is_covered() -> None:
    # classic, hogbatch, par, CBOW, HS, node2vec, --cluster local:1 and sharded S=1 (issue 22's list).
    assert {"classic", "hogbatch", "par", "cbow_classic", "hs_skipgram", "node2vec", "replicas_local1",
            "sharded_s1"} <= set(make_golden.MODES)
    assert set(EXPECTED) == {f"{m}/{s}" for m in make_golden.MODES for s in ("in", "out")}
