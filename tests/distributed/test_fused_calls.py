"""Fused shard calls (``shard_calls="fused"``): one shard holds every column, so one call trains a minibatch whole.

The kernels against numpy references on tiny inputs, the call's wire format, and the one-process reference; the
Ray runs are in test_sharded.py and test_faults.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.distributed import Cluster
from parvec.distributed.shard_kernels import LocalStep, reference_train
from parvec.distributed.sharded_settings import FUSED_MINIBATCH_WORDS, check_shard_calls, resolve
from parvec.distributed.units import UnitRunner, plan_units
from parvec.distributed.wire import Minibatch, pack_train_call, train_call_bytes, unpack_train_call
from parvec.errors import ParvecError
from parvec.kernels import sharded as K
from parvec.model_tables import init_input_vectors
from parvec.sampling import keep_probabilities, word_noise_tables
from parvec.schedule import Schedule

_MAX_EXP = 6.0


def _form(tokens, offsets, vocab, window, inputs, seed=7):
    runner = UnitRunner(TrainConfig(window=window), np.ones(vocab, np.float32), inputs, interleave=False)
    return list(runner.minibatches(tokens, offsets, 0, len(offsets) - 1, seed, 0.025, 0.02, 30))


def _minibatch(rng, vocab=6, window=2, inputs=8, n=30) -> Minibatch:
    tokens = rng.integers(0, vocab, n).astype(np.int32)
    offsets = np.array([0, 11, n], dtype=np.int64)
    return _form(tokens, offsets, vocab, window, inputs)[0]


def _window_rows(mb, window, negative, prob, alias):
    n_in = len(mb.shrink)
    ins = np.empty(mb.pairs, np.int64)
    outs = np.empty(n_in * (1 + negative), np.int64)
    first = np.empty(n_in + 1, np.int64)
    assert K.window_rows(mb.seq, mb.seg, mb.shrink, window, negative, prob, alias, mb.seed, ins, outs,
                         first) == mb.pairs
    return ins, outs, first


def _numpy_fused(u, v, ins, outs, first, alpha):
    """Each input word's batch in order: its scores from the rows as they are now, word2vec.c's coefficients
    (saturated beyond +-6), then its update, every product reading the rows as they were at the batch's start."""
    stride = len(outs) // (len(first) - 1)
    loss = 0.0
    for m in range(len(first) - 1):
        ctx = ins[first[m]:first[m + 1]]
        rows = outs[m * stride:(m + 1) * stride]
        du, dv = np.zeros_like(u), np.zeros_like(v)
        for x in ctx:
            for b, t in enumerate(rows):
                f = u[x] @ v[t]
                label = 1.0 if b == 0 else 0.0
                sig = 1.0 if f > _MAX_EXP else 0.0 if f < -_MAX_EXP else 1.0 / (1.0 + np.exp(-f))
                loss += np.logaddexp(0, -f) if b == 0 else np.logaddexp(0, f)
                g = alpha[m] * (label - sig)
                du[x] += g * v[t]
                dv[t] += g * u[x]
        u, v = u + du, v + dv
    return u, v, loss


@pytest.mark.parametrize("negative", [5, 3])  # 5: hogbatch's six-row blocks; 3: the rows one by one
def test_a_fused_window_call_trains_each_batch_on_the_rows_as_they_are(negative):
    rng = np.random.default_rng(21)
    vocab, dim, window = 6, 8, 2  # few words: rows repeat inside a batch and across batches
    prob, alias = word_noise_tables(rng.integers(1, 9, vocab), TrainConfig().ns_exponent)
    w_in = (0.5 * rng.standard_normal((vocab, dim))).astype(np.float32)
    w_out = (0.5 * rng.standard_normal((vocab, dim))).astype(np.float32)
    mb = _minibatch(rng, vocab, window)
    alpha = np.linspace(0.05, 0.02, mb.inputs).astype(np.float32)  # each input its own rate
    ins, outs, first = _window_rows(mb, window, negative, prob, alias)
    assert mb.inputs > 2 and np.array_equal(np.diff(first), mb.n_ctx)
    u, v, loss = _numpy_fused(w_in.astype(np.float64), w_out.astype(np.float64), ins, outs, first, alpha)
    got = K.train_window_rows(w_in, w_out, ins, outs, first, alpha)
    assert got == pytest.approx(loss, rel=1e-5)
    np.testing.assert_allclose(w_in, u, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_out, v, rtol=1e-5, atol=1e-6)


def _steps(rng, negatives_per, vocab=6, dim=8):
    cfg = TrainConfig(dim=dim, window=2, negative=3)
    prob, alias = word_noise_tables(rng.integers(1, 9, vocab), cfg.ns_exponent)
    w_in = (0.5 * rng.standard_normal((vocab, dim))).astype(np.float32)
    w_out = (0.5 * rng.standard_normal((vocab, dim))).astype(np.float32)
    split = LocalStep(w_in.copy(), w_out.copy(), cfg, prob, alias, negatives_per)
    fused = LocalStep(w_in.copy(), w_out.copy(), cfg, prob, alias, negatives_per, fused=True)
    return split, fused


def _split_step(step: LocalStep, mb: Minibatch) -> float:
    f = step.result(step.submit(None, mb))[0]
    coef = np.empty_like(f)
    loss = K.coefficients(f, mb.n_ctx, mb.alpha, step.negative, coef)
    step.result(step.submit((mb, coef), None))
    return loss


@pytest.mark.parametrize("negatives_per", ["window", "pair"])
def test_a_fused_call_trains_what_the_split_calls_train_when_nothing_came_between(negatives_per):
    # Split, a minibatch's coefficients come from its dot products a call earlier; with nothing trained in
    # between they are the rows' own, so one fused call trains the same: per pair for any minibatch (the paper's
    # adjust reads the rows as they were at the call's start either way), per window for one input word (one
    # batch: later batches see the earlier ones' updates only when fused).
    rng = np.random.default_rng(22)
    mb = _minibatch(rng, inputs=1 if negatives_per == "window" else 8)
    split, fused = _steps(rng, negatives_per)
    loss = _split_step(split, mb)
    assert fused.fused and fused.result(fused.train(mb))[0][0] == pytest.approx(loss, rel=1e-6)
    np.testing.assert_allclose(fused.w_in, split.w_in, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(fused.w_out, split.w_out, rtol=1e-6, atol=1e-7)
    assert not np.allclose(fused.w_in, init_input_vectors(6, 8, 1))  # it trained


def test_a_fused_window_minibatch_of_several_batches_sees_its_earlier_batches():
    rng = np.random.default_rng(23)
    mb = _minibatch(rng, inputs=8)
    split, fused = _steps(rng, "window")
    _split_step(split, mb)
    fused.result(fused.train(mb))
    assert not np.allclose(fused.w_in, split.w_in, atol=1e-6)  # the scores of later batches differ


def test_pack_and_unpack_a_fused_call():
    rng = np.random.default_rng(24)
    mb = _minibatch(rng, inputs=5)
    buf = pack_train_call(mb)
    assert buf.dtype == np.uint8 and buf.nbytes % 8 == 0 and buf.nbytes == train_call_bytes(mb)
    seq, seg, shrink, seed, alpha, n_ctx = unpack_train_call(buf)
    assert np.array_equal(seq, mb.seq) and np.array_equal(seg, mb.seg) and np.array_equal(shrink, mb.shrink)
    assert seed == mb.seed and np.array_equal(alpha, mb.alpha) and np.array_equal(n_ctx, mb.n_ctx)
    # Only indices and one rate per input travel: no float per pair (a split call carries 1 + n per pair).
    assert buf.nbytes < 4 * mb.pairs * 4


def test_fused_calls_learn_topics_and_match_the_fused_reference():
    # Two topics whose words never meet: after training a word's nearest neighbour is from its own topic, and
    # the runner's fused calls are the reference's.
    rng = np.random.default_rng(8)
    topics = [[f"a{i}" for i in range(8)], [f"b{i}" for i in range(8)]]
    corpus = EncodedCorpus.from_sentences([list(rng.choice(topics[k % 2], 12)) for k in range(400)], min_count=1)
    cfg = TrainConfig(dim=16, window=3, negative=5, epochs=5, sample=0, seed=2, alpha=0.05)
    counts = corpus.vocab.counts
    w_in, w_out, stats = reference_train(cfg, counts, [(corpus.tokens, corpus.offsets)], minibatch_words=64,
                                         unit_words=2000, fused=True)
    assert stats.loss_per_epoch[-1] < stats.loss_per_epoch[0]
    unit = w_in / np.linalg.norm(w_in, axis=1, keepdims=True)
    sim = unit @ unit.T
    np.fill_diagonal(sim, -2)
    topic = np.array([w[0] for w in corpus.vocab.words])
    assert np.mean(topic[sim.argmax(axis=1)] == topic) == 1.0
    split_in, _, _ = reference_train(cfg, counts, [(corpus.tokens, corpus.offsets)], minibatch_words=64,
                                     unit_words=2000)
    assert not np.allclose(split_in, w_in, atol=1e-4)  # another schedule of updates, not the split one renamed
    # The runner with a fused LocalStep, unit by unit: the reference's vectors.
    prob, alias = word_noise_tables(counts, cfg.ns_exponent)
    units = plan_units([corpus.offsets], 2000)
    schedule = Schedule.of(cfg, sum(u.words for u in units), cfg.epochs)
    step = LocalStep(init_input_vectors(len(counts), 16, 2), np.zeros((len(counts), 16), np.float32), cfg, prob,
                     alias, fused=True)
    runner = UnitRunner(cfg, keep_probabilities(counts, cfg.sample), 64)
    for epoch in range(cfg.epochs):
        for u in units:
            s = runner.run(corpus.tokens, corpus.offsets, u, epoch, schedule, step)
            assert s.minibatches == s.acks[0] > 0 and s.bytes_received == 8 * s.minibatches
    assert np.array_equal(step.w_in, w_in) and np.array_equal(step.w_out, w_out)


def test_one_shard_fuses_its_calls_and_sizes_them_by_default():
    def st(**kw):
        return resolve(Cluster("local:2", mode="sharded", **kw), TrainConfig(sample=1e-3))

    fused = st()
    assert (fused.shards, fused.shard_calls, fused.minibatch_words) == (1, "fused", FUSED_MINIBATCH_WORDS)
    assert st(minibatch_words=512).minibatch_words == 512  # a given size is kept
    split = st(shard_calls="split")
    assert (split.shard_calls, split.minibatch_words) == ("split", 512)  # the in-flight rule: 1024 / 2
    two = st(shards=2)  # several shards hold parts of each dot product: always split
    assert (two.shard_calls, two.minibatch_words) == ("split", 512)
    with pytest.raises(ParvecError, match="shard_calls must be one of fused, split; got 'whole'"):
        st(shard_calls="whole")
    assert check_shard_calls("split") == "split"
