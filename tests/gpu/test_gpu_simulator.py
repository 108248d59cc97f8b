"""The GPU kernels and driver under numba's CUDA simulator, against the CPU references.

numba decides simulator or hardware when ``numba.cuda`` is first imported, long before these tests run, so
one subprocess with NUMBA_ENABLE_CUDASIM=1 runs every case of tests/gpu/sim_cases.py (the simulator's cost
is paid once; tests/gpu/conftest.py starts it) and these tests check what it wrote:

- each kernel (FULL-W2V, PAR) equals :mod:`parvec.gpu.reference` to 1e-5 on both matrices, with the same
  per-sentence loss and positive pairs: V = 40, d in {8, 33}, window 2, negative 2; one-word sentences,
  sentences shorter than the window, longer than the ring / the block's 8 threads / PAR's minibatch /
  one 32-dimension chunk; several sentences in one launch; negatives drawn on the device with
  subsampling; repeated words and negatives; 32 threads per block; the shuffle reduction with one and two
  warps (tests/gpu/sim_shuffle.py gives the simulator warp shuffles); window 5 and negative 5; the writers'
  cap (``gpu_writers_cap``), whose scale a block running alone sees as 1, its counts all back to zero after;
- ``Word2Vec(sentences=..., device="cuda")`` (full-w2v, the default there, and par) gives finite vectors
  equal to the reference driver's; the driver's resident and streamed corpus paths agree with each other
  and with the reference over several launches and epochs; a run resumed after epoch 1 ends where the
  uninterrupted one does; node2vec walks fed as parts; ``parvec train --device cuda --report``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sim_cases import CASE_NAMES, CASES

TOL = 1e-5


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def test_every_case_ran(sim_run):
    summary = _summary(sim_run)
    assert summary["errors"] == {}, "\n".join(f"{k}:\n{v}" for k, v in summary["errors"].items())
    assert sorted(summary["cases"]) == sorted(CASE_NAMES)


def test_simulator_shared_arrays_are_one_per_block(sim_run):
    # numba's simulator can hand two threads of a block different shared arrays (CI read a row index of
    # 1207961264); parvec.gpu guards it, and 2000 launches at a 1 us switch interval must all agree
    assert _summary(sim_run)["shared-array-race-launches"] == 0


@pytest.mark.parametrize("name", CASE_NAMES)
def test_kernel_equals_reference(sim_run, name):
    case = next(c for c in CASES if c.name == name)
    path = sim_run / f"{name}.npz"
    if not path.exists():
        pytest.fail(_summary(sim_run)["errors"].get(name, "no result"))
    r = np.load(path)
    for m in ("w_in", "w_out"):
        np.testing.assert_allclose(r[f"got_{m}"], r[f"ref_{m}"], rtol=0, atol=TOL, err_msg=m)
    np.testing.assert_array_equal(r["got_pairs"], r["ref_pairs"])
    np.testing.assert_allclose(r["got_loss"], r["ref_loss"], rtol=1e-5, atol=1e-6)
    if case.writers > 0:  # every row a block held (its outputs once, its ring's copies) is counted down again
        assert r["got_busy"].shape == (2, len(r["ref_w_out"])) and (r["got_busy"] == case.holders).all()
    if case.lengths == (1,) and case.algo == "full-w2v":
        # a one-word sentence has no context: nothing trains (PAR still repels it from its negatives)
        assert r["ref_pairs"].tolist() == [0] and r["got_loss"].tolist() == [0.0]
        np.testing.assert_array_equal(r["got_w_in"], r["ref_w_in0"])
        np.testing.assert_array_equal(r["got_w_out"], r["ref_w_out0"])
        return
    # not vacuous: both matrices moved well beyond the tolerance, and every sentence with a pair has a loss
    assert np.abs(r["ref_w_in"] - r["ref_w_in0"]).max() > 1e-3
    assert np.abs(r["ref_w_out"] - r["ref_w_out0"]).max() > 1e-3
    assert (r["ref_loss"][r["ref_pairs"] > 0] > 0).all()


def _e2e(sim_run: Path) -> tuple[dict, dict]:
    summary = _summary(sim_run)
    if "e2e" not in summary:
        pytest.fail(summary["errors"].get("e2e", "no end-to-end result"))
    return summary["e2e"], dict(np.load(sim_run / "e2e.npz"))


@pytest.mark.parametrize("algo", ["full-w2v", "par"])
def test_word2vec_on_cuda_equals_reference_driver(sim_run, algo):
    e2e, a = _e2e(sim_run)
    assert e2e[f"w2v-{algo}-algo"] == algo  # full-w2v is the default with device="cuda"
    w = a[f"w2v-{algo}-w_in"]
    assert np.isfinite(w).all() and np.isfinite(a[f"w2v-{algo}-w_out"]).all()
    np.testing.assert_allclose(w, a[f"w2v-{algo}-ref-w_in"], rtol=0, atol=TOL)
    np.testing.assert_allclose(a[f"w2v-{algo}-w_out"], a[f"w2v-{algo}-ref-w_out"], rtol=0, atol=TOL)
    np.testing.assert_allclose(e2e[f"w2v-{algo}-loss"], e2e[f"w2v-{algo}-ref-loss"], rtol=1e-5)
    assert np.abs(a[f"w2v-{algo}-w_out"]).max() > 1e-3  # trained (the output vectors start at zero)
    report = e2e[f"w2v-{algo}-report"]["gpu"]
    assert report["kernel"] == algo and report["launches"] == 2 and report["device"]["simulator"]


@pytest.mark.parametrize("algo", ["full-w2v", "par"])
def test_driver_resident_streamed_resumed_equal_reference(sim_run, algo):
    e2e, a = _e2e(sim_run)
    assert e2e[f"driver-{algo}-resident-corpus"] == ["resident"]
    assert e2e[f"driver-{algo}-streamed-corpus"] == ["streamed"]
    assert e2e[f"driver-{algo}-resident-launches"] == e2e[f"driver-{algo}-streamed-launches"] >= 4
    assert e2e[f"driver-{algo}-resident-words"] == 2 * e2e["corpus-tokens"]
    for run in ("resident", "streamed", "resumed"):
        for m in ("w_in", "w_out"):
            np.testing.assert_allclose(a[f"driver-{algo}-{run}-{m}"], a[f"driver-{algo}-ref-{m}"], rtol=0, atol=TOL,
                                       err_msg=f"{run} {m}")
    np.testing.assert_allclose(e2e[f"driver-{algo}-resident-loss"], e2e[f"driver-{algo}-ref-loss"], rtol=1e-5)
    np.testing.assert_allclose(e2e[f"driver-{algo}-resumed-loss"], e2e[f"driver-{algo}-ref-loss"][1:], rtol=1e-5)


def test_driver_with_the_writers_cap_equals_reference(sim_run):
    # the simulator runs one block at a time: each holds its rows alone, the cap scales nothing
    _, a = _e2e(sim_run)
    for m in ("w_in", "w_out"):
        np.testing.assert_allclose(a[f"driver-writers-{m}"], a[f"driver-full-w2v-ref-{m}"], rtol=0, atol=TOL, err_msg=m)


def test_mid_epoch_checkpoint_on_the_gpu_and_a_resumed_run_end_where_the_uninterrupted_one_does(sim_run):
    # The GPU driver's unit is a kernel launch: checkpoints are taken between launches (the launches in flight
    # finished, the vectors copied back) and a resumed epoch skips the launches done (parvec.engine).
    e2e, a = _e2e(sim_run)
    mids = e2e["gpu-mid-checkpoints"]
    assert mids and all(chunks > 0 for _, chunks in mids), mids
    assert e2e["gpu-mid-report"]["mid_epoch_checkpoints"] >= 2, e2e["gpu-mid-report"]
    pos = e2e["gpu-resumed-position"]
    assert pos is not None and pos["chunks_done"] > 0 and 0 < pos["words_done"]
    for m in ("w_in", "w_out"):
        np.testing.assert_allclose(a[f"gpu-resumed-{m}"], a[f"gpu-full-{m}"], rtol=0, atol=TOL, err_msg=m)
    assert np.abs(a["gpu-full-w_out"]).max() > 1e-3  # it trained
    np.testing.assert_allclose(e2e["gpu-resumed-loss"][-1], e2e["gpu-full-loss"][-1], rtol=1e-5)


def test_node2vec_walks_as_parts_equal_reference(sim_run):
    e2e, a = _e2e(sim_run)
    assert e2e["walks-corpus"] == ["streamed"]
    assert e2e["walks-words"] == 2 * e2e["walks-words-per-epoch"]
    for m in ("w_in", "w_out"):
        np.testing.assert_allclose(a[f"walks-{m}"], a[f"walks-ref-{m}"], rtol=0, atol=TOL, err_msg=m)
    assert np.abs(a["walks-w_out"]).max() > 1e-3
    np.testing.assert_allclose(e2e["walks-loss"], e2e["walks-ref-loss"], rtol=1e-5)


def test_cli_train_on_cuda_writes_vectors_and_gpu_report(sim_run):
    e2e, _ = _e2e(sim_run)
    assert e2e["cli-rc"] == 0
    report = json.loads((sim_run / "report.json").read_text(encoding="utf-8"))
    assert report["device"] == "cuda" and report["parameters"]["algo"] == "full-w2v"
    assert report["gpu"]["kernel"] == "full-w2v" and report["gpu"]["launches"] == 2
    lines = (sim_run / "vectors.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0].split() == ["20", "8"] and len(lines) == 21
    assert np.isfinite(np.array([x.split()[1:] for x in lines[1:]], dtype=np.float64)).all()


def test_a_run_without_pairs_is_an_error(sim_run):
    e2e, _ = _e2e(sim_run)
    assert e2e["no-pairs-error"] and "made no (context, center) pair" in e2e["no-pairs-error"]
    assert "no sentence holds two in-vocabulary words" in e2e["no-pairs-error"]
