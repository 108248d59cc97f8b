"""The FULL-W2V update order trains vectors as good as CPU HogBatch, known before any GPU runs it.

:func:`parvec.gpu.reference.reference_train` is the GPU driver's plan (sentences cut to 1,000 tokens,
launches, the rate per sentence, negatives shared per center, the ring of context rows) run on the CPU, one
sentence after another.  It must pass tests/kernels/test_hogbatch.py's related-words test on the demo corpus, with
the same settings (dim 100, 2 epochs, sample 1e-3, window 5, negative 5).  A GPU runs the same update order
with thousands of sentences at once (Hogwild), which this cannot show: benchmarks/bench_gpu.py measures the
quality of hardware runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from related_words import assert_learns_related_words

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.gpu.reference import reference_train
from parvec.model_tables import init_input_vectors

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
    assert_learns_related_words(w_in, corpus.vocab)  # the test CPU hogbatch passes (tests/related_words.py)
