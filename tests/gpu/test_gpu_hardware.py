"""The GPU kernels on a real device (``-m gpu``; skipped without one): the simulator's equivalence cases at 1e-4
with both reductions, and trained vectors that rank related words together.

Cases whose sentences share rows are launched one sentence at a time here: blocks that run at the same time
race on shared rows (Hogwild), which the sequential reference cannot follow.  Cases with disjoint sentences
run as one launch of several blocks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sim_cases import CASE_NAMES, CASES, run_kernel, run_reference

pytestmark = pytest.mark.gpu
TOL = 1e-4
DEMO_CORPUS = Path(__file__).resolve().parents[2] / "src" / "parvec" / "data" / "demo_corpus.txt.xz"


@pytest.fixture(scope="module", autouse=True)
def _gpu():
    from numba import config, cuda

    if config.ENABLE_CUDASIM or not cuda.is_available():
        pytest.skip("no CUDA device (numba.cuda.is_available() is false)")


@pytest.mark.parametrize("reduction", ["tree", "shuffle"])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_kernel_equals_reference_on_gpu(name, reduction):
    case = next(c for c in CASES if c.name == name)
    threads = case.threads if reduction == "tree" else max(32, case.threads)
    per_sentence = not case.independent
    ref = run_reference(case, per_sentence=per_sentence)
    got = run_kernel(case, per_sentence=per_sentence, reduction=reduction, threads=threads)
    for m in ("w_in", "w_out"):
        np.testing.assert_allclose(got[m], ref[m], rtol=0, atol=TOL, err_msg=m)
    np.testing.assert_array_equal(got["pairs"], ref["pairs"])
    np.testing.assert_allclose(got["loss"], ref["loss"], rtol=1e-4, atol=1e-5)


NUMBERS = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"}
COUNTRIES = {"germany", "spain", "italy", "austria", "poland", "portugal", "russia", "sweden", "belgium", "hungary",
             "england", "britain", "netherlands", "denmark", "bulgaria"}
# tests/test_par.py's probes for PAR (the CPU kernel passes these, not HogBatch's "king" probe, on 2M tokens)
ROYAL = {"queen", "prince", "emperor", "sultan", "monarch", "throne", "kings", "ruler", "pope", "duke", "shah", "khan",
         "princess", "kingdom", "reign", "crown", "heir", "regent", "caliph", "tsar", "pharaoh", "son", "brother",
         "father", "bishop", "lord", "crowned", "succeeded", "dynasty", "edward", "henry", "philip", "charles",
         "louis", "castile", "aragon", "macedon"}
PAR_COUNTRIES = COUNTRIES | {"holland", "greece", "switzerland", "prussia", "bavaria", "europe", "paris", "french",
                             "norway", "ireland", "scotland"}


@pytest.mark.parametrize(("algo", "resident"), [("full-w2v", True), ("full-w2v", False), ("par", True)])
def test_gpu_learns_related_words(algo, resident):
    # The CPU kernels' related-words tests (tests/test_hogbatch.py; tests/test_par.py for par), trained on the
    # GPU; the streamed run goes through 100k-word launches.
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
    assert stats.loss_per_epoch[-1] < stats.loss_per_epoch[0]
    assert trainer.report()["gpu"]["corpus"] == (["resident"] if resident else ["streamed"])
    w = trainer.w_in / np.linalg.norm(trainer.w_in, axis=1, keepdims=True)
    idx = corpus.vocab.index

    def top(word, k=10):
        sims = w @ w[idx[word]]
        return set(corpus.vocab.words[i] for i in np.argsort(-sims)[1 : k + 1])

    if algo == "par":
        assert len(top("king") & ROYAL) >= 3, top("king")
        assert len(top("france") & PAR_COUNTRIES) >= 4, top("france")
        assert len(top("january") & MONTHS) >= 6, top("january")
        return
    assert top("king") & {"queen", "prince", "emperor"}, top("king")
    assert len(top("three") & NUMBERS) >= 4, top("three")
    assert len(top("january") & MONTHS) >= 6, top("january")
    assert len(top("france") & COUNTRIES) >= 4, top("france")
