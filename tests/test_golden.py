"""Every training mode's vectors are bit-identical to the recorded ones, on every x86-64 CPU.

``tests/golden/vectors.json`` holds the SHA-256 of each mode's input and output vectors
(``tests/golden/make_golden.py``: one thread, a fixed 40k-token slice of the demo corpus or a fixed graph,
compiled for a fixed instruction set so that the bits do not depend on the CPU).  One fresh process trains every
mode again; each mode is its own test.

Where the recorded bits come from: commit c9b23cc, before the run engine, trained them all.  The modes whose kernels
then held a reciprocal *estimate* (``rcpps`` and a Newton step for the sigmoid's ``1 / (1 + e)``, which
``fastmath=True`` allowed: hogbatch, par, cbow_hogbatch, and node2vec, deepwalk, replicas_local1 and sharded_s1,
which train with hogbatch's batch step) gave other bits on Intel than on the AMD CPU that recorded them.  Since the
kernels compile with :data:`parvec.kernels.fastmath.FASTMATH` (no ``arcp``/``afn``), these modes and
hs_cbow_negative were recorded again, and nothing else changed: in the baseline assembly of the affected kernels the
only instructions that differ are ``rcpps`` with its Newton step (``mulps``/``subps``/``mulps``/``addps``) becoming
``divps`` (hogbatch's and cbow_batch's batch steps, par's ``train_chunk``), and in hs's ``train_chunk`` CBOW's mean
``h /= n``, which ``arcp`` had compiled as a multiplication by ``1 / n``, becoming a division (word2vec.c's
``neu1[c] /= cw``); classic, cbow_classic and hs_skipgram kept their bits.  Then CBOW's input vectors started from
gensim 4's range, uniform in [-1, 1)/dim (twice word2vec.c's values, the same random stream): cbow_classic,
cbow_hogbatch and hs_cbow_negative were recorded again, the skip-gram modes kept their bits.  Every compiled
kernel's assembly is scanned for estimate instructions
(``test_no_kernel_contains_a_reciprocal_or_square_root_estimate``), so a kernel that would train other bits on
another vendor fails on any machine.

What each check guarantees:

- Modes without BLAS: the same bits on every x86-64 CPU (numba and numpy compiled for x86-64's baseline).
- Modes through BLAS (``make_golden.BLAS_MODES``, PAR's sgemm): OpenBLAS is pinned to one thread and its Haswell
  kernels, so where the OpenBLAS build is the recorded one (``vectors.json``'s ``"blas"``) the bits are the golden
  ones on every CPU with AVX2 or AVX-512.  With another OpenBLAS build (another scipy) the sgemm may sum in another
  order: then the check is what that can guarantee, identical bits run to run on this machine and the vectors
  within 1e-4 (relative to the largest entry) of the golden ones (``tests/golden/MODE.npz``; OpenBLAS's kernels
  differ by ~2e-6).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))
import make_golden  # noqa: E402

EXPECTED = json.loads((GOLDEN / "vectors.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    pytest.importorskip("ray")  # [dev] carries Ray: the two cluster modes are part of the check
    tmp = tmp_path_factory.mktemp("golden")
    prints = make_golden.run_golden(tmp / "vectors.json", list(make_golden.MODES), tmp / "numba", arrays=tmp,
                                    asm=tmp / "asm.json")
    prints["arrays"] = tmp
    prints["asm"] = json.loads((tmp / "asm.json").read_text(encoding="utf-8"))
    return prints


def _assert_same_bits(got: dict, want: dict, key: str) -> None:
    assert got["shape"] == want["shape"], key
    assert got["sha256"] == want["sha256"], (
        f"{key}: the vectors differ from the code before the refactor (sum {got['sum']!r} vs {want['sum']!r}, "
        f"sum of |x| {got['abs_sum']!r} vs {want['abs_sum']!r})")


@pytest.mark.parametrize("mode", list(make_golden.MODES))
def test_vectors_bit_identical_to_before_the_run_engine(trained: dict, mode: str) -> None:
    if mode in make_golden.BLAS_MODES and trained["blas"] != EXPECTED["blas"]:
        # another OpenBLAS build: the same bits run to run here, and within the tolerance of the golden vectors
        golden = np.load(GOLDEN / f"{mode}.npz")
        with np.load(Path(trained["arrays"]) / f"{mode}.npz") as now:
            for side in ("in", "out"):
                _assert_same_bits(trained[f"{mode}#2/{side}"], trained[f"{mode}/{side}"], f"{mode}/{side} run twice")
                gap = float(np.abs(now[side] - golden[side]).max())
                assert gap <= 1e-4 * float(np.abs(golden[side]).max()), (
                    f"{mode}/{side}: {gap:.3g} from the golden vectors with BLAS {trained['blas']} (recorded: "
                    f"{EXPECTED['blas']})")
        return
    for side in ("in", "out"):
        _assert_same_bits(trained[f"{mode}/{side}"], EXPECTED[f"{mode}/{side}"], f"{mode}/{side}")


def test_blas_modes_repeat_bit_for_bit(trained: dict) -> None:
    # PAR through the pinned OpenBLAS: two runs in one process give the same bits (what "same machine" guarantees)
    for mode in make_golden.BLAS_MODES:
        for side in ("in", "out"):
            _assert_same_bits(trained[f"{mode}#2/{side}"], trained[f"{mode}/{side}"], f"{mode}/{side} run twice")


def test_golden_run_pins_the_blas_kernels(trained: dict) -> None:
    # the pin took: every OpenBLAS the run loaded used the Haswell kernels, whatever this CPU is
    assert trained["blas"] and all(v.endswith(" Haswell") for v in trained["blas"].values()), trained["blas"]


# The kernels the estimate instructions were in (the batch code is inlined into them), and one of each other
# kind: the golden run must have compiled (not loaded from numba's cache) and read them, or an empty list of
# estimates proves nothing.
MUST_SCAN = {"parvec.kernels.hogbatch.train_chunk",
             "parvec.kernels.par.train_chunk", "parvec.kernels.classic.train_chunk", "parvec.kernels.cbow.train_chunk",
             "parvec.kernels.cbow_batch.train_chunk",
             "parvec.kernels.hs.train_chunk", "parvec.kernels.sharded.coefficients",
             "parvec.kernels.sharded.train_window_rows", "parvec.kernels.sharded.dotprod_window_rows",
             "parvec.kernels.sharded.adjust_window_rows", "parvec.kernels.sharded.dotprod_rows",
             "parvec.kernels.sharded.adjust_rows", "parvec.kernels.sharded_combine.adjust_window_rows_combined",
             "parvec.graph.walks._walk_kernel"}


def test_no_kernel_contains_a_reciprocal_or_square_root_estimate(trained: dict) -> None:
    # rcpps/vrcp14ps/rsqrtps return implementation-specific bits: Intel and AMD would train different vectors
    asm = trained["asm"]
    assert MUST_SCAN <= set(asm["scanned"]), f"not compiled in the golden run: {MUST_SCAN - set(asm['scanned'])}"
    assert asm["estimates"] == {}, f"estimate instructions in the kernels' assembly: {asm['estimates']}"


def test_every_mode_of_the_issue_is_covered() -> None:
    # classic, hogbatch, par, CBOW, HS, node2vec, --cluster local:1 and sharded S=1.
    assert {"classic", "hogbatch", "par", "cbow_classic", "hs_skipgram", "node2vec", "replicas_local1",
            "sharded_s1"} <= set(make_golden.MODES)
    assert set(EXPECTED) == {f"{m}/{s}" for m in make_golden.MODES for s in ("in", "out")} | {"blas"}
