"""The HogBatch kernel: its batch update against classic and a numpy reference, determinism, quality."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from related_words import assert_learns_related_words

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.kernels.classic import classic_update, sgns_step
from parvec.kernels.hogbatch import exp32, hogbatch_update, log32, params, sgns_block, work_floats
from parvec.sampling import alias_table, draw_noise, noise_distribution, rng_next
from parvec.trainer import Trainer

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "src" / "parvec" / "data" / "demo_corpus.txt.xz"


def numpy_batch_reference(w_in, w_out, inputs, outputs, labels, alpha):
    """The batched update by hand: scores, errors, both deltas from the pre-update rows (float64)."""
    w_in = w_in.astype(np.float64)
    w_out = w_out.astype(np.float64)
    x, y = w_in[inputs], w_out[outputs]
    f = x @ y.T
    sig = np.where(f > 6, 1.0, np.where(f < -6, 0.0, 1 / (1 + np.exp(-f))))
    g = (labels[None, :] - sig) * alpha
    fc = np.clip(f, -20, 20)  # the loss from the exact sigmoid, as classic computes it
    loss = np.sum(np.log1p(np.exp(-fc)) + (1 - labels[None, :]) * fc)
    np.add.at(w_in, inputs, g @ y)  # repeated rows get every delta
    np.add.at(w_out, outputs, g.T @ x)
    return w_in, w_out, loss


def _weights(dim, seed, scale=0.5, n=40):
    rng = np.random.default_rng(seed)
    # scale 0.5 puts some scores beyond +-6, so the saturated branches are exercised too
    return (rng.normal(0, scale, (n, dim)).astype(np.float32),
            rng.normal(0, scale, (n, dim)).astype(np.float32))


@pytest.mark.parametrize("dim", [100, 37])  # 100: a constant-dimension copy of the code; 37: the generic one
def test_one_context_equals_classic_update(dim):
    w_in, w_out = _weights(dim, 1, scale=0.15)
    outputs = np.array([4, 7, 1, 9, 12, 30], dtype=np.int64)  # center, then five distinct negatives
    labels = np.array([1, 0, 0, 0, 0, 0], dtype=np.float32)
    alpha = np.float32(0.05)
    ref_in, ref_out = w_in.copy(), w_out.copy()
    ref_loss = classic_update(ref_in, ref_out, 2, outputs, labels, alpha, np.zeros(dim, np.float32))
    work = np.zeros(work_floats(1, len(outputs), dim), np.float32)
    loss = hogbatch_update(w_in, w_out, np.array([2], np.int64), outputs, labels, alpha, work)
    np.testing.assert_allclose(w_in, ref_in, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_out, ref_out, rtol=1e-5, atol=1e-6)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    assert not np.array_equal(w_in[2], _weights(dim, 1, scale=0.15)[0][2])  # the row moved


@pytest.mark.parametrize("dim", [100, 300, 37])
@pytest.mark.parametrize("n_in", [1, 2, 3, 5, 6, 7, 10])
def test_batch_equals_numpy_reference(dim, n_in):
    w_in, w_out = _weights(dim, n_in, scale=2.0 / np.sqrt(dim) ** 0.5)
    rng = np.random.default_rng(100 + n_in)
    inputs = rng.integers(0, 40, n_in).astype(np.int64)
    inputs[-1] = inputs[0]  # a context word twice in the window
    outputs = np.array([3, 11, 11, 25, 38, 0], dtype=np.int64)  # a negative drawn twice
    labels = np.array([1, 0, 0, 0, 0, 0], dtype=np.float32)
    for n_out in (6, 5, 4, 1):  # one block of 6; 3 + 1 + 1; 3 + 1; 1 (a skipped negative changes n_out)
        a_in, a_out = w_in.copy(), w_out.copy()
        ref_in, ref_out, ref_loss = numpy_batch_reference(a_in, a_out, inputs, outputs[:n_out],
                                                          labels[:n_out], 0.05)
        work = np.zeros(work_floats(n_in, n_out, dim), np.float32)
        loss = hogbatch_update(a_in, a_out, inputs, outputs[:n_out], labels[:n_out], np.float32(0.05), work)
        np.testing.assert_allclose(a_in, ref_in, rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(a_out, ref_out, rtol=2e-5, atol=2e-6)
        assert loss == pytest.approx(ref_loss, rel=1e-5, abs=1e-6)


def test_vectorised_sigmoid_and_loss_match_sgns_step():
    from numba import njit

    @njit
    def reference(f, labels):
        out = np.empty((len(f), 2), np.float32)
        for k in range(len(f)):
            out[k, 0], out[k, 1] = sgns_step(f[k], labels[k])
        return out

    @njit(fastmath=True, error_model="numpy")
    def ours(f, labels):
        g = f.copy()
        losses = np.empty(len(f), np.float32)
        for k in range(len(f)):
            losses[k] = sgns_block(g[k:k + 1], labels[k:k + 1], 1, np.float32(1.0), True)
        return g, losses

    f = np.concatenate([np.linspace(-30, 30, 6001), [6.0, -6.0, 6.0001, -6.0001, 0.0]]).astype(np.float32)
    for label in (0.0, 1.0):
        labels = np.full(len(f), label, np.float32)
        ref = reference(f, labels)
        g, losses = ours(f, labels)
        np.testing.assert_allclose(g, ref[:, 0], rtol=0, atol=3e-7)
        # label 0, f ~ -17: log(1 + e^17) - 17 cancels; both round at 1 ulp of ~20 (1.9e-6)
        np.testing.assert_allclose(losses, ref[:, 1], rtol=2e-6, atol=2e-6)

    @njit(fastmath=True)
    def exp_log(x):
        e = np.empty_like(x)
        lg = np.empty_like(x)
        for k in range(len(x)):
            e[k] = exp32(x[k])
            lg[k] = log32(np.float32(1.0) + e[k])
        return e, lg

    x = np.linspace(-20, 20, 10001).astype(np.float32)
    e, lg = exp_log(x)
    np.testing.assert_allclose(e, np.exp(x.astype(np.float64)), rtol=3e-7)
    np.testing.assert_allclose(lg, np.log1p(np.exp(x.astype(np.float64))), rtol=3e-7, atol=1e-7)


def test_branch_free_negative_draw_equals_draw_noise():
    from numba import njit

    from parvec.kernels.hogbatch import draw_negative

    @njit
    def draws(prob, alias, n):
        state = np.uint64(12345)
        out = np.empty((n, 2), np.int64)
        for k in range(n):
            state = rng_next(state)
            out[k, 0] = draw_noise(state, prob, alias)
            out[k, 1] = draw_negative(state, prob, alias)
        return out

    prob, alias = alias_table(noise_distribution(np.arange(1000, 0, -1), 0.75))
    out = draws(prob, alias, 100_000)
    np.testing.assert_array_equal(out[:, 0], out[:, 1])


def test_params_default_batch_is_the_whole_window():
    kp, work = params(TrainConfig(window=5, negative=5, dim=100, batch_size=0))
    assert (kp.window, kp.negative, kp.batch, kp.compute_loss) == (5, 5, 11, True) and work == work_floats(11, 6, 100)
    kp = params(TrainConfig(window=5, batch_size=4, compute_loss=False))[0]
    assert (kp.window, kp.negative, kp.batch, kp.compute_loss) == (5, 5, 4, False)


def _train(corpus, **kw):
    cfg = TrainConfig(**{"algo": "hogbatch", "dim": 50, "epochs": 1, "threads": 1, "sample": 1e-4,
                         "progress": False, **kw})
    trainer = Trainer(cfg, corpus.vocab.counts)
    stats = trainer.train(corpus)
    return trainer, stats


def test_same_seed_same_vectors_different_seed_different(demo_slice):
    corpus = EncodedCorpus.from_file(demo_slice, ReadOptions(min_count=5))
    a, stats = _train(corpus, seed=7)
    b, _ = _train(corpus, seed=7)
    c, _ = _train(corpus, seed=8)
    np.testing.assert_array_equal(a.w_in, b.w_in)
    np.testing.assert_array_equal(a.w_out, b.w_out)
    assert not np.array_equal(a.w_in, c.w_in)
    assert stats.words == corpus.n_tokens
    # about 2 * mean(window - b) = 6 positive pairs per kept word; sample 1e-4 keeps part of the words
    assert 1.0 * corpus.n_tokens < stats.pairs < 6.0 * corpus.n_tokens
    # several batches per center (batch_size 2 < 2 * window; more negatives drawn, so another random
    # stream) and compute_loss=False still train
    d, stats_d = _train(corpus, seed=7, batch_size=2, compute_loss=False)
    assert abs(stats_d.pairs / stats.pairs - 1) < 0.02 and stats_d.loss_per_epoch == [0.0]
    assert np.isfinite(d.w_in).all() and not np.array_equal(d.w_in, a.w_in)


def test_hogbatch_learns_related_words_on_real_text():
    if not DEMO_CORPUS.exists():
        pytest.skip("the demo corpus is not shipped in this checkout")
    corpus = EncodedCorpus.from_file(DEMO_CORPUS, ReadOptions(min_count=5))  # 2M tokens
    trainer, stats = _train(corpus, dim=100, epochs=2, threads=2, sample=1e-3)
    assert stats.words == 2 * corpus.n_tokens
    assert stats.loss_per_epoch[-1] < stats.loss_per_epoch[0]
    assert_learns_related_words(trainer.w_in, corpus.vocab)
