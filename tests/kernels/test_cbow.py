"""CBOW with negative sampling: both kernels against numpy references, mean vs sum, determinism, quality,
the Word2Vec API (gensim round trip, save/load), the CLI, and the configuration rules (alpha, algorithms)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from related_words import assert_learns_related_words

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.errors import ParvecError
from parvec.kernels import get_algorithm
from parvec.kernels.cbow import cbow_update
from parvec.kernels.cbow_batch import cbow_batch_update, params, work_floats
from parvec.trainer import Trainer
from parvec.word2vec import Word2Vec

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "src" / "parvec" / "data" / "demo_corpus.txt.xz"


def _sig_loss(f, label):
    """word2vec.c's saturated sigmoid for the gradient; the exact one for the loss."""
    sig = 1.0 if f > 6 else 0.0 if f < -6 else 1 / (1 + np.exp(-f))
    fc = min(max(f, -20.0), 20.0)
    return sig, np.log1p(np.exp(-fc)) + (1 - label) * fc


def numpy_cbow_reference(w_in, w_out, ctx, targets, labels, alpha, mean):
    """word2vec.c's CBOW step by hand (float64): h from the context rows, targets one after another, each
    output row updated at once; the error to every context row, whole (mean) or over cw (sum, gensim)."""
    w_in = w_in.astype(np.float64)
    w_out = w_out.astype(np.float64)
    h = w_in[ctx].sum(axis=0) / (len(ctx) if mean else 1)
    e = np.zeros(w_in.shape[1])
    loss = 0.0
    for t, label in zip(targets, labels, strict=True):
        sig, pair_loss = _sig_loss(h @ w_out[t], label)
        g = (label - sig) * alpha
        e += g * w_out[t]
        w_out[t] += g * h
        loss += pair_loss
    np.add.at(w_in, ctx, e if mean else e / len(ctx))
    return w_in, w_out, loss


def numpy_batch_reference(w_in, w_out, sent, pos, lo, hi, negs, alpha, mean):
    """The batched kernel by hand (float64): centers in order, each against its own output row (label 1)
    and the shared negatives (label 0; a negative equal to the center is masked); the inputs and the
    center's row updated at once, the negatives' deltas summed and added at the end of the batch."""
    w_in = w_in.astype(np.float64)
    w_out = w_out.astype(np.float64)
    do = np.zeros((len(negs), w_in.shape[1]))
    loss = 0.0
    for a in range(len(pos)):
        ctx = [sent[j] for j in range(lo[a], hi[a]) if j != pos[a]]
        h = w_in[ctx].sum(axis=0) / (len(ctx) if mean else 1)
        t = sent[pos[a]]
        rows = np.concatenate([[t], negs])
        labels = np.zeros(len(rows))
        labels[0] = 1
        unmasked = np.concatenate([[True], negs != t])
        g = np.zeros(len(rows))
        for b in np.flatnonzero(unmasked):
            sig, pair_loss = _sig_loss(h @ w_out[rows[b]], labels[b])
            g[b] = (labels[b] - sig) * alpha
            loss += pair_loss
        e = g @ w_out[rows]
        do += np.outer(g[1:], h)
        w_out[t] += g[0] * h
        np.add.at(w_in, ctx, e if mean else e / len(ctx))
    np.add.at(w_out, negs, do)
    return w_in, w_out, loss


def _weights(dim, seed, n=40):
    rng = np.random.default_rng(seed)
    scale = 2.0 / np.sqrt(dim) ** 0.5  # some scores beyond +-6: the saturated branches run too
    return (rng.normal(0, scale, (n, dim)).astype(np.float32), rng.normal(0, scale, (n, dim)).astype(np.float32))


@pytest.mark.parametrize("mean", [True, False])
def test_classic_update_equals_numpy_reference(mean):
    w_in, w_out = _weights(16, 0)
    ctx = np.array([1, 2, 5, 2], dtype=np.int64)  # a context word twice in the window
    targets = np.array([3, 7, 8, 7], dtype=np.int64)  # center, then negatives (one drawn twice)
    labels = np.array([1, 0, 0, 0], dtype=np.float32)
    ref_in, ref_out, ref_loss = numpy_cbow_reference(w_in, w_out, ctx, targets, labels, 0.05, mean)
    before = w_in.copy()
    loss = cbow_update(w_in, w_out, ctx, targets, labels, np.float32(0.05), mean, np.zeros(32, np.float32))
    np.testing.assert_allclose(w_in, ref_in, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_out, ref_out, rtol=1e-5, atol=1e-6)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    assert not np.allclose(w_in[[1, 2, 5]], before[[1, 2, 5]])  # every context row moved
    np.testing.assert_array_equal(w_in[0], before[0])  # no other


def test_mean_and_sum_propagate_the_error_as_gensim():
    # The same rows and targets: with the mean each context row gets the whole error; with the sum, h is
    # cw times larger and each row gets error / cw (gensim's fast_sentence_cbow_neg).
    w_in, w_out = _weights(8, 3)
    w_in *= 0.01  # small scores: the sigmoid is ~linear, so the two modes' errors are comparable
    ctx = np.array([1, 2, 3, 4], dtype=np.int64)
    targets, labels = np.array([9], dtype=np.int64), np.array([1], dtype=np.float32)
    deltas = {}
    for mean in (True, False):
        a_in, a_out = w_in.copy(), w_out.copy()
        cbow_update(a_in, a_out, ctx, targets, labels, np.float32(0.05), mean, np.zeros(16, np.float32))
        deltas[mean] = a_in[ctx] - w_in[ctx]
        np.testing.assert_allclose(deltas[mean], deltas[mean][0:1].repeat(4, 0), rtol=1e-6)  # same delta each
    ratio = np.linalg.norm(deltas[True][0]) / np.linalg.norm(deltas[False][0])
    assert 3.5 < ratio < 4.5  # ~cw: the whole error vs error / 4


@pytest.mark.parametrize("dim", [100, 300, 37])  # 100, 300: constant-dimension copies; 37: the generic one
@pytest.mark.parametrize("mean", [True, False])
@pytest.mark.parametrize("n_neg", [5, 7, 3, 1])  # 5: one block with the center; 7: 5 + 1 + 1; 3; 1
def test_batch_update_equals_numpy_reference(dim, mean, n_neg):
    w_in, w_out = _weights(dim, dim + n_neg)
    rng = np.random.default_rng(n_neg)
    sent = rng.integers(0, 40, 20).astype(np.int32)
    pos = np.array([2, 3, 4, 7, 10], dtype=np.int64)
    lo = np.array([0, 1, 3, 5, 9], dtype=np.int64)  # windows overlap; center 4 has one context word
    hi = np.array([5, 6, 5, 10, 11], dtype=np.int64)
    negs = rng.integers(0, 40, n_neg).astype(np.int64)
    negs[0] = sent[3]  # a negative equal to one center: masked for that center only
    if n_neg > 1:
        negs[1] = negs[0]  # drawn twice: two rows whose deltas both land
    ref_in, ref_out, ref_loss = numpy_batch_reference(w_in, w_out, sent, pos, lo, hi, negs, 0.05, mean)
    work = np.zeros(work_floats(len(pos), n_neg, dim), np.float32)
    loss = cbow_batch_update(w_in, w_out, sent, pos, lo, hi, negs, np.float32(0.05), mean, work)
    np.testing.assert_allclose(w_in, ref_in, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(w_out, ref_out, rtol=2e-5, atol=2e-6)
    assert loss == pytest.approx(ref_loss, rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("mean", [True, False])
def test_one_center_batch_equals_the_classic_update(mean):
    w_in, w_out = _weights(100, 7)
    sent = np.array([4, 8, 2, 9, 11, 30], dtype=np.int32)
    negs = np.array([5, 17, 21, 33, 12], dtype=np.int64)  # distinct, none the center
    ref_in, ref_out = w_in.copy(), w_out.copy()
    ref_loss = cbow_update(ref_in, ref_out, np.array([4, 8, 9, 11, 30], np.int64), np.concatenate([[2], negs]),
                           np.array([1, 0, 0, 0, 0, 0], np.float32), np.float32(0.05), mean,
                           np.zeros(200, np.float32))
    loss = cbow_batch_update(w_in, w_out, sent, np.array([2]), np.array([0]), np.array([6]), negs,
                             np.float32(0.05), mean, np.zeros(work_floats(1, 5, 100), np.float32))
    np.testing.assert_allclose(w_in, ref_in, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_out, ref_out, rtol=1e-5, atol=1e-6)
    assert loss == pytest.approx(ref_loss, rel=1e-5)


def test_registry_and_config_resolve_algo_and_model():
    assert get_algorithm("classic", sg=False).module.__name__ == "parvec.kernels.cbow"
    assert get_algorithm("hogbatch", sg=False).kernel == "cbow-hogbatch"
    assert get_algorithm("hogbatch").module.__name__ == "parvec.kernels.hogbatch"
    with pytest.raises(ParvecError, match="skip-gram only"):
        get_algorithm("par", sg=False)
    with pytest.raises(ParvecError, match="par.*skip-gram only.*classic or hogbatch"):
        TrainConfig(algo="par", sg=False).validate()
    with pytest.raises(ParvecError, match=r"CBOW .* not available on the GPU .* runs on the CPU"):
        TrainConfig(sg=False, device="cuda").validate()
    # alpha: 0.05 for CBOW and 0.025 for skip-gram unless given; the number is what the config holds
    assert TrainConfig(sg=False).alpha == 0.05 and TrainConfig().alpha == 0.025
    assert TrainConfig(sg=False, alpha=0.01).alpha == 0.01
    assert TrainConfig(sg=False).to_dict()["alpha"] == 0.05
    kp = params(TrainConfig(sg=False, batch_size=3, cbow_mean=False, compute_loss=False))[0]
    assert (kp.window, kp.negative, kp.batch, kp.cbow_mean, kp.compute_loss) == (5, 5, 3, False, False)


def _train(corpus, **kw):
    cfg = TrainConfig(**{"sg": False, "dim": 32, "epochs": 1, "threads": 1, "sample": 1e-4, "progress": False, **kw})
    trainer = Trainer(cfg, corpus.vocab.counts)
    return trainer, trainer.train(corpus)


@pytest.mark.parametrize("algo", ["classic", "hogbatch"])
def test_one_thread_same_seed_same_vectors_and_mean_differs_from_sum(demo_slice, algo):
    corpus = EncodedCorpus.from_file(demo_slice, ReadOptions(min_count=5))
    a, stats = _train(corpus, algo=algo, seed=7)
    b, _ = _train(corpus, algo=algo, seed=7)
    c, _ = _train(corpus, algo=algo, seed=8)
    d, stats_d = _train(corpus, algo=algo, seed=7, cbow_mean=False)
    np.testing.assert_array_equal(a.w_in, b.w_in)
    np.testing.assert_array_equal(a.w_out, b.w_out)
    assert not np.array_equal(a.w_in, c.w_in)
    assert stats.words == corpus.n_tokens
    # one positive example per kept center that has a context word: fewer than the tokens, most of the kept
    assert 0.2 * corpus.n_tokens < stats.pairs < corpus.n_tokens
    assert stats_d.pairs == stats.pairs  # same random stream: the same centers train
    assert np.isfinite(d.w_in).all() and not np.allclose(d.w_in, a.w_in)
    assert np.isfinite(stats.loss_per_epoch[0]) and stats.loss_per_epoch[0] < np.log(2) * 6  # below chance


def test_fast_cbow_learns_related_words_on_real_text():
    if not DEMO_CORPUS.exists():
        pytest.skip("the demo corpus is not shipped in this checkout")
    corpus = EncodedCorpus.from_file(DEMO_CORPUS, ReadOptions(min_count=5))  # 2M tokens
    trainer, stats = _train(corpus, algo="hogbatch", dim=100, epochs=2, threads=2, sample=1e-3)
    assert trainer.config.alpha == 0.05
    assert stats.loss_per_epoch[-1] < stats.loss_per_epoch[0]
    assert_learns_related_words(trainer.w_in, corpus.vocab)


def topic_sentences(n=300, seed=0):
    rng = np.random.default_rng(seed)
    topics = [[f"a{i}" for i in range(8)], [f"b{i}" for i in range(8)]]
    return [list(rng.choice(topics[k % 2], 10)) for k in range(n)]


def test_word2vec_sg0_round_trips_through_gensim_and_save_load(tmp_path):
    from gensim.models import KeyedVectors as GensimKV

    model = Word2Vec(sentences=topic_sentences(), sg=0, vector_size=16, min_count=1, epochs=3, workers=1,
                     sample=0)
    assert model.config.sg is False and model.config.cbow_mean is True and model.config.alpha == 0.05
    assert "sg=0" in repr(model)
    # the topics come apart: a word is nearer its own topic's words than the other's
    assert model.wv.similarity("a0", "a1") > model.wv.similarity("a0", "b1")
    model.wv.save_word2vec_format(str(tmp_path / "v.txt"))
    kv = GensimKV.load_word2vec_format(str(tmp_path / "v.txt"))
    np.testing.assert_allclose(kv["a3"], model.wv["a3"], atol=1e-6)
    model.save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    assert meta["config"]["sg"] is False and meta["config"]["alpha"] == 0.05
    loaded = Word2Vec.load(tmp_path / "m")
    assert loaded.config.sg is False and loaded.config.cbow_mean is True and loaded.config.alpha == 0.05
    before = loaded.wv.vectors.copy()
    loaded.train(sentences=topic_sentences(seed=1), epochs=1)  # continues training CBOW
    assert not np.array_equal(before, loaded.wv.vectors)
    summed = Word2Vec(sentences=topic_sentences(), sg=0, cbow_mean=0, alpha=0.01, vector_size=16, min_count=1,
                      epochs=1, workers=1, algo="classic")
    assert summed.config.cbow_mean is False and summed.config.alpha == 0.01


def test_word2vec_refuses_bad_model_flags():
    with pytest.raises(ParvecError, match="sg must be 0 or 1"):
        Word2Vec(sg=2)
    with pytest.raises(ParvecError, match="cbow_mean must be 0 or 1"):
        Word2Vec(sg=0, cbow_mean=3)
    with pytest.raises(ParvecError, match="skip-gram only"):
        Word2Vec(sg=0, algo="par")


@pytest.fixture
def tiny_corpus(tmp_path):
    rng = np.random.default_rng(0)
    topics = ([f"a{i}" for i in range(20)], [f"b{i}" for i in range(20)])
    path = tmp_path / "tiny.txt"
    path.write_text("\n".join(" ".join(rng.choice(topics[i % 2], 12)) for i in range(600)) + "\n")
    return path




def test_cli_cbow_trains_and_writes_vectors(tiny_corpus, tmp_path, capsys):
    out, report = tmp_path / "vec.txt", tmp_path / "r.json"
    code, _, err = run(["-train", tiny_corpus, "-output", out, "-cbow", 1, "-size", 8, "-min-count", 1, "-iter", 2,
                        "-threads", 1, "--no-cache", "--report", report], capsys)
    assert code == 0, err
    assert "CBOW (mean) classic, alpha 0.05" in err  # word2vec.c's loop unless --algo hogbatch
    lines = out.read_text().splitlines()
    assert lines[0] == "40 8" and len(lines) == 41
    params_ = json.loads(report.read_text())["parameters"]
    assert params_["sg"] is False and params_["alpha"] == 0.05 and params_["algo"] == "classic"
    # --cbow (parvec's style), classic, the sum, an explicit alpha
    code, _, err = run(["train", tiny_corpus, "-o", tmp_path / "v2.txt", "--cbow", "--cbow-mean", 0, "--algo",
                        "classic", "--alpha", "0.02", "--dim", 8, "--min-count", 1, "--epochs", 1, "--threads", 1,
                        "--no-cache"], capsys)
    assert code == 0, err
    assert "CBOW (sum) classic, alpha 0.02" in err
    code, _, err = run(["train", tiny_corpus, "-o", tmp_path / "v3.txt", "--cbow", "--algo", "par", "--no-cache"],
                       capsys)
    assert code == 2 and "skip-gram only" in err and not (tmp_path / "v3.txt").exists()


def test_cbow_starts_from_gensims_range_and_skipgram_from_word2vec_c():
    # CBOW's input vectors start uniform in [-1, 1) / dim (gensim 4's prep_vectors), skip-gram's in
    # [-0.5, 0.5) / dim (word2vec.c): with the narrower start CBOW trailed gensim sg=0 by 0.02-0.03 WS-353 on
    # a 3M-token corpus (docs/benchmarks.md, CBOW).  The same random stream: CBOW's values are exactly twice.
    from gensim.models.keyedvectors import prep_vectors

    from parvec.model_tables import ModelTables, init_input_vectors

    n, dim = 4000, 50
    counts = np.arange(n, 0, -1)
    sg = ModelTables(TrainConfig(sg=True, dim=dim), counts).w_in
    cbow = ModelTables(TrainConfig(sg=False, dim=dim), counts).w_in
    hs_cbow = ModelTables(TrainConfig(sg=False, hs=True, negative=0, dim=dim), counts).w_in
    assert np.array_equal(sg, init_input_vectors(n, dim, 1))  # word2vec.c's, unchanged
    assert np.array_equal(cbow, 2 * sg) and np.array_equal(hs_cbow, cbow)
    gensim_start = prep_vectors((n, dim), seed=1)
    for ours, ref in ((cbow, gensim_start), (2 * sg, gensim_start)):
        assert ours.min() >= -1 / dim and ours.max() < 1 / dim
        assert abs(ours.max() - ref.max()) < 1e-3 / dim and abs(ours.min() - ref.min()) < 1e-3 / dim
        assert ours.std() == pytest.approx(ref.std(), rel=0.01)  # 1 / (dim sqrt 3), both
    assert sg.std() == pytest.approx(gensim_start.std() / 2, rel=0.01)


def test_cbow_model_and_grown_vocabulary_start_from_gensims_range():
    # The Word2Vec API's vectors before training, and the rows of words a vocabulary update adds, are the
    # trainer's: CBOW's twice word2vec.c's, skip-gram's word2vec.c's.
    from parvec.model_tables import init_input_vectors

    sentences = [s.split() for s in ("a b c d e f", "b c d e a", "x y z a b c", "q r s t u v w")]
    for sg, factor in ((0, 2), (1, 1)):
        model = Word2Vec(vector_size=8, min_count=1, sg=sg, seed=3)
        model.build_vocab(sentences[:2])
        n_old = len(model.wv)
        assert np.array_equal(model.wv.vectors, factor * init_input_vectors(n_old, 8, 3)), sg
        model.build_vocab(sentences[2:], update=True)
        n = len(model.wv)
        assert n > n_old
        assert np.array_equal(model.wv.vectors[n_old:], factor * init_input_vectors(n, 8, 3)[n_old:]), sg
