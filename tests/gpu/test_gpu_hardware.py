"""The GPU kernels on a real device (``-m gpu``; skipped without one): the simulator's equivalence cases at 1e-4
with both reductions at the cases' block size and at 64 and 256 threads, the defaults' sizes (window 5,
negative 5, 1,000-token sentences, d 100 / 128 / 300, PAR with more shared negatives than threads), the
additivity of concurrent blocks, and trained vectors that rank related words together.

Cases whose sentences share rows are launched one sentence at a time here: blocks that run at the same time
race on shared rows (Hogwild), which the sequential reference cannot follow.  Cases with disjoint sentences
run as one launch of several blocks.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from sim_cases import CASE_NAMES, CASES, PRODUCTION_CASES, case_inputs, run_kernel, run_reference

pytestmark = pytest.mark.gpu
TOL = 1e-4
DEMO_CORPUS = Path(__file__).resolve().parents[2] / "src" / "parvec" / "data" / "demo_corpus.txt.xz"


@pytest.fixture(scope="module", autouse=True)
def _gpu():
    from numba import config, cuda

    if config.ENABLE_CUDASIM or not cuda.is_available():
        pytest.skip("no CUDA device (numba.cuda.is_available() is false)")


def _check(got: dict, ref: dict) -> None:
    for m in ("w_in", "w_out"):
        np.testing.assert_allclose(got[m], ref[m], rtol=0, atol=TOL, err_msg=m)
    np.testing.assert_array_equal(got["pairs"], ref["pairs"])
    np.testing.assert_allclose(got["loss"], ref["loss"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("threads", ["case", 64, 256])
@pytest.mark.parametrize("reduction", ["tree", "shuffle"])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_kernel_equals_reference_on_gpu(name, reduction, threads):
    # 64 and 256 threads: the tree's 7 and 9 levels, the shuffle's two and eight warps added across a barrier
    case = next(c for c in CASES if c.name == name)
    if threads == "case":
        threads = case.threads if reduction == "tree" else max(32, case.threads)
    per_sentence = not case.independent
    ref = run_reference(case, per_sentence=per_sentence)
    _check(run_kernel(case, per_sentence=per_sentence, reduction=reduction, threads=threads), ref)


@pytest.mark.parametrize("reduction", ["tree", "shuffle"])
@pytest.mark.parametrize("case", PRODUCTION_CASES, ids=[c.name for c in PRODUCTION_CASES])
def test_production_sizes_equal_reference_on_gpu(case, reduction):
    # the default block size (parvec.gpu.blocks.threads_for), the sentences one launch each (they share rows)
    ref = run_reference(case, per_sentence=True)
    got = run_kernel(case, per_sentence=True, reduction=reduction)
    assert np.abs(ref["w_in"] - ref["w_in0"]).max() > 1e-2  # trained well beyond the tolerance
    _check(got, ref)


@pytest.mark.parametrize("reduction", ["tree", "shuffle"])
@pytest.mark.parametrize("algo", ["full-w2v", "par"])
def test_concurrent_blocks_add_up(algo, reduction):
    # K copies of one sentence in one launch, all resident at once and all updating the same rows: at a small rate
    # the change is the sum of each copy's change alone, so no block's update is lost or counted twice under real
    # concurrency (one copy lost is 1/K = 3% of the change).  What concurrency itself adds is second order, K x
    # alpha: 0.2-0.4% of the change in parvec.gpu.reference.hogwild_train with all K copies in step (a
    # vocabulary of equal counts, so no row is hot within a copy).  The copies draw their own windows and
    # negatives (the RNG keys on the sentence's index), so each copy's change is the reference's for that index.
    from parvec.gpu.plan import Launch
    from parvec.gpu.reference import train_launch_reference

    k_copies, alpha = 32, 1e-4
    case = dataclasses.replace(next(c for c in PRODUCTION_CASES if c.algo == algo and c.dim == 128), lengths=(300,),
                               alpha=alpha, sample=0.0, uniform=True)
    x = case_inputs(case)
    sent = x["tokens"]
    key = x["launch"].key
    total_in = np.zeros_like(x["w_in"])
    total_out = np.zeros_like(x["w_out"])
    for k in range(k_copies):  # each copy alone, from the same start
        w_in, w_out = x["w_in"].copy(), x["w_out"].copy()
        one = Launch(0, 0, 1, 7 + k, len(sent), alpha, alpha, key)
        train_launch_reference(algo, w_in, w_out, sent, np.array([0, len(sent)]), one, x["keep"], x["prob"],
                               x["alias"], x["config"])
        total_in += w_in - x["w_in"]
        total_out += w_out - x["w_out"]
    copies = dict(x, tokens=np.tile(sent, k_copies), offsets=np.arange(k_copies + 1, dtype=np.int64) * len(sent),
                  launch=Launch(0, 0, k_copies, 7, k_copies * len(sent), alpha, alpha, key))
    got = run_kernel(case, reduction=reduction, inputs=copies)
    for m, want in (("w_in", total_in), ("w_out", total_out)):
        scale = np.abs(want).max()
        assert scale > 1e-4, (m, scale)
        np.testing.assert_allclose(got[m] - x[m], want, rtol=0, atol=0.015 * scale, err_msg=m)


NUMBERS = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"}
COUNTRIES = {"germany", "spain", "italy", "austria", "poland", "portugal", "russia", "sweden", "belgium", "hungary",
             "england", "britain", "netherlands", "denmark", "bulgaria"}
# PAR's probes (tests/related_words.py: the CPU kernel passes these, not HogBatch's "king" probe, on 2M tokens,
# with 1,000-token sentences and two threads as here)
ROYAL = {"queen", "prince", "emperor", "sultan", "monarch", "throne", "kings", "ruler", "pope", "duke", "shah", "khan",
         "princess", "kingdom", "reign", "crown", "heir", "regent", "caliph", "tsar", "pharaoh", "son", "brother",
         "father", "bishop", "lord", "crowned", "succeeded", "dynasty", "edward", "henry", "philip", "charles",
         "louis", "castile", "aragon", "macedon"}
PAR_COUNTRIES = COUNTRIES | {"holland", "greece", "switzerland", "prussia", "bavaria", "europe", "paris", "french",
                             "norway", "ireland", "scotland"}


@pytest.mark.parametrize(("algo", "resident"), [("full-w2v", True), ("full-w2v", False), ("par", True)])
def test_gpu_learns_related_words(algo, resident):
    # The CPU kernels' related-words tests (tests/kernels/test_hogbatch.py; tests/kernels/test_par.py for par),
    # trained on the GPU; the streamed run goes through 100k-word launches.
    if not DEMO_CORPUS.exists():
        pytest.skip("the demo corpus is not shipped in this checkout")
    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.gpu.driver import GpuTrainer

    corpus = EncodedCorpus.from_file(DEMO_CORPUS, ReadOptions(min_count=5))
    if algo == "par":  # test_par.py's settings
        cfg = TrainConfig(device="cuda", algo="par", dim=50, epochs=3, sample=1e-3, seed=4, progress=False)
    else:
        cfg = TrainConfig(device="cuda", algo=algo, dim=100, epochs=2, sample=1e-3, seed=1, progress=False)
    trainer = GpuTrainer(cfg, corpus.vocab.counts, resident=resident, words_per_launch=None if resident else 100_000)
    stats = trainer.train(corpus)
    assert stats.words == cfg.epochs * corpus.n_tokens and np.isfinite(trainer.w_in).all()
    assert trainer.report().to_json()["gpu"]["corpus"] == (["resident"] if resident else ["streamed"])
    w = trainer.w_in / np.linalg.norm(trainer.w_in, axis=1, keepdims=True)
    idx = corpus.vocab.index

    def top(word, k=10):
        sims = w @ w[idx[word]]
        return set(corpus.vocab.words[i] for i in np.argsort(-sims)[1 : k + 1])

    # the probes first (what the vectors learnt), then the loss, as tests/kernels/test_par.py checks the CPU kernel
    if algo == "par":
        assert len(top("king") & ROYAL) >= 3, top("king")
        assert len(top("france") & PAR_COUNTRIES) >= 4, top("france")
        assert len(top("january") & MONTHS) >= 6, top("january")
    else:
        assert top("king") & {"queen", "prince", "emperor"}, top("king")
        assert len(top("three") & NUMBERS) >= 4, top("three")
        assert len(top("january") & MONTHS) >= 6, top("january")
        assert len(top("france") & COUNTRIES) >= 4, top("france")
    assert stats.loss_per_epoch[-1] < stats.loss_per_epoch[0], stats.loss_per_epoch
