"""PAR-Word2Vec kernel (parvec.kernels.par): each phase against a reference, the C_rep rule, determinism
and a real-text smoke test of the trained vectors."""

from __future__ import annotations

import lzma
import math
from pathlib import Path

import numpy as np
import pytest
from related_words import par_probes_pass

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.kernels import par
from parvec.kernels.classic import classic_update
from parvec.kernels.params import ChunkRates
from parvec.sampling import alias_table, draw_noise, noise_distribution, rng_below, rng_next
from parvec.trainer import Trainer

REPO = Path(__file__).resolve().parents[2]
DEMO_CORPUS = REPO / "src" / "parvec" / "data" / "demo_corpus.txt.xz"
SHARED_CORPUS = REPO.parent / "shared" / "data" / "corpus" / "enwiki2015_text8style_100M.txt.xz"


def _vectors(rng, v, dim, scale=0.3):
    w_in = (rng.standard_normal((v, dim)) * scale).astype(np.float32)
    w_out = (rng.standard_normal((v, dim)) * scale).astype(np.float32)
    return w_in, w_out


def repulsion_reference(w_in, w_out, words, negs, alpha):
    """Algorithm 4's three products in float64 numpy, with classic's saturation at +-MAX_EXP."""
    m_in = w_in[words].astype(np.float64)
    m_out = w_out[negs].astype(np.float64)
    f = m_out @ m_in.T
    sig = 1.0 / (1.0 + np.exp(-f))
    sig[f > 6] = 1.0
    sig[f < -6] = 0.0
    g = -sig * alpha
    loss = np.logaddexp(0.0, np.clip(f, -20, 20)).sum()  # -log sigmoid(-f)
    new_in = w_in.astype(np.float64)
    new_out = w_out.astype(np.float64)
    np.add.at(new_out, negs, g @ m_in)
    np.add.at(new_in, words, g.T @ m_out)
    return new_in, new_out, loss


@pytest.mark.parametrize(
    ("dim", "batch", "h"),
    # (16, 150, 9): several tiles; (300, 40, 75): tiles cut to keep BLAS serial
    [(100, 24, 22), (128, 24, 45), (37, 7, 3), (16, 150, 9), (300, 40, 75), (100, 1, 1), (8, 5, 17)],
)
def test_repulsion_matches_numpy_reference(dim, batch, h):
    rng = np.random.default_rng(dim * 1000 + batch)
    v = 40  # small vocabulary: repeated words and negatives must accumulate
    w_in, w_out = _vectors(rng, v, dim)
    words = rng.integers(0, v, batch).astype(np.int32)
    negs = rng.integers(0, v, h).astype(np.int32)
    negs[-1] = words[0]  # a negative equal to a batch word is not skipped
    want_in, want_out, want_loss = repulsion_reference(w_in, w_out, words, negs, 0.025)
    work = np.full(par.repulsion_work_floats(batch, h, dim), np.nan, np.float32)  # contents must not matter
    loss = par.repulsion_update(w_in, w_out, words, negs, np.float32(0.025), work)
    np.testing.assert_allclose(w_in, want_in, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_out, want_out, rtol=1e-5, atol=1e-6)
    assert loss == pytest.approx(want_loss, rel=1e-5)


def test_repulsion_saturates_like_classic():
    # Scores beyond +-6 (classic's MAX_EXP) give gradient -alpha (f > 6) and 0 (f < -6).
    dim = 16
    w_in = np.zeros((3, dim), np.float32)
    w_out = np.zeros((3, dim), np.float32)
    w_in[0, 0] = 1.0
    w_out[1, 0] = 7.0
    w_out[2, 0] = -7.0
    work = np.zeros(par.repulsion_work_floats(1, 2, dim), np.float32)
    par.repulsion_update(w_in, w_out, np.array([0], np.int32), np.array([1, 2], np.int32), np.float32(0.1), work)
    assert w_in[0, 0] == pytest.approx(1.0 - 0.1 * 7.0)
    assert w_out[1, 0] == pytest.approx(7.0 - 0.1)
    assert w_out[2, 0] == -7.0


@pytest.mark.parametrize("dim", [100, 13])
def test_attraction_matches_classic_positive_only_update(dim):
    rng = np.random.default_rng(dim)
    v = 12
    w_in, w_out = _vectors(rng, v, dim)
    sent = np.array([3, 5, 7, 5, 2, 9, 7, 1, 5, 11], dtype=np.int32)  # repeats, and the center as context
    alpha = np.float32(0.05)
    ref_in, ref_out = w_in.copy(), w_out.copy()
    co = np.zeros(dim, np.float32)
    loss = ref_loss = 0.0
    for i, lo, hi in [(4, 0, 9), (8, 3, 10), (0, 0, 3), (3, 3, 4)]:
        loss += par.attract_center(w_in, w_out, sent, i, lo, hi, alpha, co)
        for j in range(lo, hi):
            if j != i:
                ref_loss += classic_update(ref_in, ref_out, sent[j], np.array([sent[i]]),
                                           np.array([1.0], np.float32), alpha, np.zeros(dim, np.float32))
    np.testing.assert_allclose(w_in, ref_in, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_out, ref_out, rtol=1e-5, atol=1e-6)
    assert loss == pytest.approx(ref_loss, rel=1e-5)


def _classic_replay(w_in, w_out, sent, i, lo, hi, alpha):
    loss = 0.0
    for j in range(lo, hi):
        if j != i:
            loss += classic_update(w_in, w_out, sent[j], np.array([sent[i]]), np.array([1.0], np.float32),
                                   alpha, np.zeros(w_in.shape[1], np.float32))
    return loss


def test_two_chain_attraction_matches_classic():
    # Two centers with windows of unequal length and no shared rows: each equals its classic replay.
    rng = np.random.default_rng(5)
    dim, v = 100, 30
    w_in, w_out = _vectors(rng, v, dim)
    sent = rng.permutation(v)[:25].astype(np.int32)
    ref_in, ref_out = w_in.copy(), w_out.copy()
    a, b = np.float32(0.05), np.float32(0.03)
    loss = par.attract_two_centers(w_in, w_out, sent, 4, 0, 9, a, 17, 15, 20, b, np.zeros(3 * dim, np.float32))
    ref_loss = _classic_replay(ref_in, ref_out, sent, 4, 0, 9, a)
    ref_loss += _classic_replay(ref_in, ref_out, sent, 17, 15, 20, b)
    np.testing.assert_allclose(w_in, ref_in, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_out, ref_out, rtol=1e-5, atol=1e-6)
    assert loss == pytest.approx(ref_loss, rel=1e-5)


def test_two_chain_attraction_same_center_adds_both_deltas():
    # The same word as both centers: each window trains its own copy of the output row and the row
    # receives the sum of both deltas (nothing lost), as if each window had started from it.
    rng = np.random.default_rng(6)
    dim, v = 20, 30
    w_in, w_out = _vectors(rng, v, dim)
    sent = rng.permutation(v)[:25].astype(np.int32)
    sent[17] = sent[4]
    alpha = np.float32(0.05)
    ref_a = (w_in.copy(), w_out.copy())
    ref_b = (w_in.copy(), w_out.copy())
    _classic_replay(*ref_a, sent, 4, 1, 8, alpha)
    _classic_replay(*ref_b, sent, 17, 14, 21, alpha)
    start_out = w_out.copy()
    par.attract_two_centers(w_in, w_out, sent, 4, 1, 8, alpha, 17, 14, 21, alpha, np.zeros(3 * dim, np.float32))
    c = sent[4]
    np.testing.assert_allclose(w_out[c], ref_a[1][c] + ref_b[1][c] - start_out[c], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_in[sent[1:8]], ref_a[0][sent[1:8]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_in[sent[14:21]], ref_b[0][sent[14:21]], rtol=1e-5, atol=1e-6)


def test_c_rep_edges_and_middle():
    window, n = 5, 100
    edge_positions = [0, window - 1, n - window, n - 1]  # first word within `window` of either end
    middle_positions = [window, 48, n - 1 - window]
    state = np.uint64(0x9E3779B97F4A7C15)
    for positions, bound in ((edge_positions, window), (middle_positions, 2 * window)):
        for pos in positions:
            draws = []
            for _ in range(400):
                state, c_rep = par.draw_c_rep(state, pos, n, window)
                state = np.uint64(state)  # numba returns a Python int; keep the unsigned type
                draws.append(c_rep)
            # every value of [0, bound) and nothing else: edges < C, middle up to 2C - 1
            assert sorted(set(draws)) == list(range(bound)), (pos, bound)
    # A sentence shorter than the window is all edge.
    for _ in range(100):
        state, c_rep = par.draw_c_rep(state, 2, 4, window)
        state = np.uint64(state)
        assert c_rep < window


def test_shared_negatives_rule():
    assert par.shared_negatives(0, 5, 1.0) == 0
    assert par.shared_negatives(9, 5, 1.0) == 45  # the paper: H = T * C_rep
    assert par.shared_negatives(9, 5, 1.2) == 54
    assert par.shared_negatives(3, 5, 0.5) == 8  # 7.5 rounds up
    kp, _ = par.params(TrainConfig(algo="par", window=8, negative=5, par_h_factor=1.0))
    assert kp.h_max == 75  # room for the largest draw, C_rep = 2C - 1
    assert kp.h_factor == 1.0


def _expected_negative_terms(n_words, window, negative, h_factor, batch, seed):
    """Replay train_chunk's random stream for one sentence (no subsampling): sum of H * |batch|."""
    state = np.uint64(seed)  # (numba returns states as Python ints: re-wrap them as uint64)
    for _ in range(n_words):  # one draw per center for the window shrink
        state = np.uint64(rng_next(state))
    bsz = batch if batch > 0 else n_words
    terms = 0
    for min_pos in range(0, n_words, bsz):
        state, c_rep = par.draw_c_rep(state, min_pos, n_words, window)
        state = np.uint64(state)
        h = par.shared_negatives(c_rep, negative, h_factor)
        for _ in range(h):
            state = np.uint64(rng_next(state))
        terms += h * min(bsz, n_words - min_pos)
    return terms


@pytest.mark.parametrize(("batch", "h_factor"), [(24, 1.0), (7, 1.3), (0, 1.0), (500, 0.6)])
def test_train_chunk_uses_rule_per_batch(batch, h_factor):
    # With all-zero vectors every score is 0 and stays 0, so each optimised term costs exactly log 2:
    # loss / log 2 counts the positive pairs plus the (batch word, negative) pairs of every batch.
    n_words, window, negative, dim, v = 203, 5, 5, 16, 50
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, v, n_words).astype(np.int32)
    offsets = np.array([0, n_words], dtype=np.int64)
    cfg = TrainConfig(algo="par", dim=dim, window=window, negative=negative, par_batch=batch,
                      par_h_factor=h_factor)
    kp, floats = par.params(cfg)
    prob, alias = alias_table(noise_distribution(np.arange(v, 0, -1)))
    w_in = np.zeros((v, dim), np.float32)
    w_out = np.zeros((v, dim), np.float32)
    seed = 987654321
    done, pairs, loss = par.train_chunk(
        w_in, w_out, tokens, offsets, 0, 1, np.ones(v, np.float32), prob, alias, kp,
        ChunkRates.of(0.025, 0.025), np.uint64(seed), np.empty(n_words, np.int32),
        np.zeros(floats, np.float32))
    assert done == n_words
    negative_terms = _expected_negative_terms(n_words, window, negative, h_factor, batch, seed)
    assert negative_terms > 0
    assert loss / math.log(2.0) == pytest.approx(pairs + negative_terms, rel=1e-6)


def _u64(x):
    return np.uint64(x)  # numba hands uint64 states back as Python ints


@pytest.mark.parametrize(("dim", "n_words"), [(100, 61), (128, 40), (24, 13)])
def test_train_chunk_is_attraction_then_repulsion(dim, n_words):
    # train_chunk = the exposed phase functions applied in the documented order with the documented
    # random stream (no subsampling, constant learning rate): two interleaved chains over the sentence's
    # halves (one chain when it is short), then the minibatches with negatives drawn one batch ahead.
    window, negative, batch, v = 5, 5, 8, 40
    rng = np.random.default_rng(dim + n_words)
    tokens = rng.integers(0, v, n_words).astype(np.int32)
    w_in, w_out = _vectors(rng, v, dim, scale=0.1)
    prob, alias = alias_table(noise_distribution(np.arange(v, 0, -1)))
    cfg = TrainConfig(algo="par", dim=dim, window=window, negative=negative, par_batch=batch)
    kp, floats = par.params(cfg)
    alpha = np.float32(0.025)
    seed = 4242
    got_in, got_out = w_in.copy(), w_out.copy()
    _, pairs, loss = par.train_chunk(
        got_in, got_out, tokens, np.array([0, n_words], np.int64), 0, 1, np.ones(v, np.float32), prob, alias,
        kp, ChunkRates.of(alpha, alpha), np.uint64(seed), np.empty(n_words, np.int32),
        np.zeros(floats, np.float32))

    state, want_loss, want_pairs, n = _u64(seed), 0.0, 0, n_words
    scratch = np.zeros(3 * dim, np.float32)
    first_single = 0
    if n >= 4 * window + 2:
        half = n // 2
        for ia in range(half):
            ib = half + ia
            state = _u64(rng_next(state))
            ba = rng_below(state, window)
            state = _u64(rng_next(state))
            bb = rng_below(state, window)
            lo_a, hi_a = max(0, ia - window + ba), ia + window - ba + 1
            lo_b, hi_b = ib - window + bb, min(n, ib + window - bb + 1)
            want_loss += par.attract_two_centers(w_in, w_out, tokens, ia, lo_a, hi_a, alpha, ib, lo_b, hi_b,
                                                 alpha, scratch)
            want_pairs += hi_a - lo_a + hi_b - lo_b - 2
        first_single = 2 * half
    for i in range(first_single, n):
        state = _u64(rng_next(state))
        b = rng_below(state, window)
        lo, hi = max(0, i - window + b), min(n, i + window - b + 1)
        want_loss += par.attract_center(w_in, w_out, tokens, i, lo, hi, alpha, scratch)
        want_pairs += hi - lo - 1
    plans = []
    for min_pos in range(0, n, batch):
        state, c_rep = par.draw_c_rep(state, min_pos, n, window)
        state = _u64(state)
        negs = []
        for _ in range(par.shared_negatives(c_rep, negative, 1.0)):
            state = _u64(rng_next(state))
            negs.append(draw_noise(state, prob, alias))
        plans.append((min_pos, np.array(negs, np.int32)))
    work = np.zeros(par.repulsion_work_floats(batch, 45, dim), np.float32)
    for min_pos, negs in plans:
        want_loss += par.repulsion_update(w_in, w_out, tokens[min_pos:min_pos + batch], negs, alpha, work)
    assert pairs == want_pairs
    np.testing.assert_allclose(got_in, w_in, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_out, w_out, rtol=1e-5, atol=1e-6)
    assert loss == pytest.approx(want_loss, rel=1e-5)


@pytest.fixture(scope="module")
def text_corpus() -> EncodedCorpus:
    """~2M tokens of Wikipedia: the shipped demo corpus, else the head of the shared corpus."""
    if DEMO_CORPUS.is_file():
        with lzma.open(DEMO_CORPUS, "rt", encoding="utf-8") as f:
            words = f.read().split()
    elif SHARED_CORPUS.is_file():
        with lzma.open(SHARED_CORPUS, "rt", encoding="utf-8") as f:
            words = f.read(12_000_000).split()[:2_000_000]
    else:
        pytest.skip("no demo corpus and no shared corpus")
    return EncodedCorpus.from_sentences([words[i:i + 10000] for i in range(0, len(words), 10000)], min_count=5)


def test_threads1_same_seed_identical(text_corpus):
    part = EncodedCorpus.from_arrays(text_corpus.tokens[:300_000], None, text_corpus.vocab)
    results = []
    for _ in range(2):
        trainer = Trainer(TrainConfig(algo="par", dim=32, epochs=1, threads=1, seed=7, progress=False),
                          text_corpus.vocab.counts)
        stats = trainer.train(part)
        results.append((trainer.w_in.copy(), trainer.w_out.copy(), stats.loss_per_epoch))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0][2] == results[1][2]
    assert 0 < results[0][2][0] < 10


@pytest.fixture(scope="module")
def gpu_like_corpus(text_corpus) -> EncodedCorpus:
    """The same tokens in sentences of 1,000 (what the GPU driver cuts every sentence to)."""
    n = text_corpus.n_tokens
    return EncodedCorpus.from_arrays(text_corpus.tokens, np.append(np.arange(0, n, 1000), n), text_corpus.vocab)


@pytest.mark.parametrize(("h_factor", "should_pass"), [(1.0, True), (1e-9, False)])
def test_real_text_ranks_related_words(gpu_like_corpus, h_factor, should_pass):
    # The CPU side of tests/gpu/test_gpu_hardware.py's PAR test, under the same conditions: 1,000-token sentences
    # and two threads (Hogwild), the probes first, then the loss, which must end below where it started (a loss
    # that rises over the epochs is how PAR diverged on a GPU).  par_h_factor=1e-9 draws no negatives (attraction
    # only): the vectors collapse, the probes must fail.
    from parvec.keyedvectors import KeyedVectors

    cfg = TrainConfig(algo="par", dim=50, epochs=3, sample=1e-3, threads=2, seed=4, progress=False,
                      par_h_factor=h_factor)
    trainer = Trainer(cfg, gpu_like_corpus.vocab.counts)
    stats = trainer.train(gpu_like_corpus)
    probes = par_probes_pass(KeyedVectors(trainer.w_in, list(gpu_like_corpus.vocab.words)))
    if should_pass:
        assert all(probes.values()), probes
        assert stats.loss_per_epoch[-1] < stats.loss_per_epoch[0], stats.loss_per_epoch
    else:
        assert not any(probes.values()), probes
