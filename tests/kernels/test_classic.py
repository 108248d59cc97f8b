"""The classic (word2vec.c) kernel: one update against a numpy reference, and training behaviour."""

from __future__ import annotations

import numpy as np

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.kernels.classic import classic_update
from parvec.trainer import Trainer


def numpy_sgns_reference(w_in, w_out, ctx, targets, labels, alpha):
    """word2vec.c's update for one context word, computed by hand in float64."""
    w_in = w_in.astype(np.float64)
    w_out = w_out.astype(np.float64)
    neu1e = np.zeros(w_in.shape[1])
    loss = 0.0
    for t, label in zip(targets, labels, strict=True):
        f = w_in[ctx] @ w_out[t]
        sig = 1.0 if f > 6 else 0.0 if f < -6 else 1 / (1 + np.exp(-f))
        g = (label - sig) * alpha
        neu1e += g * w_out[t]
        w_out[t] += g * w_in[ctx]
        p = 1 / (1 + np.exp(-f))
        loss += -np.log(p) if label == 1 else -np.log(1 - p)
    w_in[ctx] += neu1e
    return w_in, w_out, loss


def test_one_classic_update_equals_numpy_reference():
    rng = np.random.default_rng(0)
    w_in = rng.normal(0, 0.5, (10, 8)).astype(np.float32)
    w_out = rng.normal(0, 0.5, (10, 8)).astype(np.float32)
    targets = np.array([4, 7, 1, 9], dtype=np.int64)  # center first, then fixed negatives
    labels = np.array([1, 0, 0, 0], dtype=np.float32)
    ref_in, ref_out, ref_loss = numpy_sgns_reference(w_in, w_out, 2, targets, labels, 0.05)
    loss = classic_update(w_in, w_out, 2, targets, labels, np.float32(0.05), np.zeros(8, np.float32))
    np.testing.assert_allclose(w_in, ref_in, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_out, ref_out, rtol=1e-5, atol=1e-6)
    assert abs(loss - ref_loss) < 1e-4
    assert not np.allclose(w_in[2], rng.normal(0, 0.5, 8))  # the row moved


def test_saturation_beyond_max_exp_matches_word2vec_c():
    # A positive pair with score > 6: word2vec.c's gradient is exactly 0 (sigmoid taken as 1).
    w_in = np.full((2, 4), 2.0, np.float32)
    w_out = np.full((2, 4), 1.0, np.float32)  # dot = 8
    before = w_in.copy(), w_out.copy()
    classic_update(w_in, w_out, 0, np.array([1]), np.array([1], np.float32), np.float32(0.1),
                   np.zeros(4, np.float32))
    np.testing.assert_array_equal(w_in, before[0])
    np.testing.assert_array_equal(w_out, before[1])
    # A negative with score > 6: gradient -alpha exactly.
    classic_update(w_in, w_out, 0, np.array([1]), np.array([0], np.float32), np.float32(0.1),
                   np.zeros(4, np.float32))
    np.testing.assert_allclose(w_out[1], 1.0 - 0.1 * 2.0)


def test_classic_learns_related_words_on_real_text(demo_slice):
    corpus = EncodedCorpus.from_file(demo_slice, ReadOptions(min_count=5))
    cfg = TrainConfig(algo="classic", dim=50, epochs=3, threads=2, sample=1e-4, progress=False)
    trainer = Trainer(cfg, corpus.vocab.counts)
    stats = trainer.train(corpus)
    assert stats.words == 3 * corpus.n_tokens
    assert stats.loss_per_epoch[-1] < stats.loss_per_epoch[0]  # the loss goes down
    w = trainer.w_in / np.linalg.norm(trainer.w_in, axis=1, keepdims=True)
    idx = corpus.vocab.index

    def top(word, k=10):
        sims = w @ w[idx[word]]
        return [corpus.vocab.words[i] for i in np.argsort(-sims)[1 : k + 1]]

    numbers = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "zero"}
    assert len(numbers & set(top("three"))) >= 4
    # Related words rank near each other (short training on a small slice gives all vectors a large
    # common direction, in gensim too, so ranks are compared rather than raw cosines).
    related = [("king", "queen"), ("france", "germany"), ("war", "battle"), ("city", "town"),
               ("january", "february"), ("river", "lake")]

    def rank(a, b):
        sims = w @ w[idx[a]]
        return int(np.sum(sims > sims[idx[b]]))

    ranks = [rank(a, b) for a, b in related]
    assert np.median(ranks) < 0.05 * len(w), ranks  # top 5% of ~8,700 words; untrained vectors: ~50%


def test_a_diverging_classic_run_stops_with_the_divergence_error(tmp_path):
    # With fastmath, a NaN dot product made numba's Python error model raise ZeroDivisionError inside the
    # kernel (a traceback); the kernel now follows numpy's error model as hogbatch and par do, so the
    # trainer sees the NaN loss and says what to lower.
    import pytest

    from parvec.errors import ParvecError

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    lines = [" ".join(rng.choice(words, 20)) for _ in range(300)]
    path = tmp_path / "c.txt"
    path.write_text("\n".join(lines) + "\n")
    corpus = EncodedCorpus.from_file(path, ReadOptions(min_count=1))
    trainer = Trainer(TrainConfig(algo="classic", alpha=1e6, epochs=1, threads=1, progress=False, dim=16),
                      corpus.vocab.counts)
    with pytest.raises(ParvecError, match="diverged.*lower alpha"):
        trainer.train(corpus)
