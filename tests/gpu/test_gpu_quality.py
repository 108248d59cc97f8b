"""The FULL-W2V update order trains vectors as good as CPU HogBatch, known before any GPU runs it.

:func:`parvec.gpu.reference.reference_train` is the GPU driver's plan (sentences cut to 1,000 tokens,
launches, the rate per sentence, negatives shared per center, the ring of context rows) run on the CPU, one
sentence after another.  It must pass tests/test_hogbatch.py's related-words test on the demo corpus, with
the same settings (dim 100, 2 epochs, sample 1e-3, window 5, negative 5).  A GPU runs the same update order
with thousands of sentences at once (Hogwild), which this cannot show: benchmarks/bench_gpu.py measures the
quality of hardware runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.gpu.reference import reference_train
from parvec.trainer import init_input_vectors

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "src" / "parvec" / "data" / "demo_corpus.txt.xz"


def test_full_w2v_order_learns_related_words_like_hogbatch():
    if not DEMO_CORPUS.exists():
        pytest.skip("the demo corpus is not shipped in this checkout")
    corpus = EncodedCorpus.from_file(DEMO_CORPUS, ReadOptions(min_count=5))  # 2M tokens
    cfg = TrainConfig(device="cuda", algo="full-w2v", dim=100, epochs=2, sample=1e-3, seed=1)
    n = len(corpus.vocab)
    w_in, w_out = init_input_vectors(n, cfg.dim, cfg.seed), np.zeros((n, cfg.dim), np.float32)
    losses = reference_train(cfg, corpus.vocab.counts, w_in, w_out, lambda epoch: [(corpus.tokens, corpus.offsets)],
                             corpus.n_tokens)
    assert losses[-1] < losses[0]
    w = w_in / np.linalg.norm(w_in, axis=1, keepdims=True)
    idx = corpus.vocab.index

    def top(word, k=10):
        sims = w @ w[idx[word]]
        return set(corpus.vocab.words[i] for i in np.argsort(-sims)[1 : k + 1])

    # tests/test_hogbatch.py::test_hogbatch_learns_related_words_on_real_text, unchanged
    numbers = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
    months = {"january", "february", "march", "april", "may", "june", "july", "august", "september",
              "october", "november", "december"}
    countries = {"germany", "spain", "italy", "austria", "poland", "portugal", "russia", "sweden",
                 "belgium", "hungary", "england", "britain", "netherlands", "denmark", "bulgaria"}
    assert top("king") & {"queen", "prince", "emperor"}, top("king")
    assert len(top("three") & numbers) >= 4, top("three")
    assert len(top("january") & months) >= 6, top("january")
    assert len(top("france") & countries) >= 4, top("france")
