"""Hierarchical softmax: word2vec.c's Huffman tree, the HS update against numpy, training, CLI, save/load."""

from __future__ import annotations

import heapq
import json
from pathlib import Path

import numpy as np
import pytest
from related_words import assert_learns_related_words

from parvec.cli import main
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.errors import ParvecError
from parvec.huffman import build_huffman_tree
from parvec.kernels.hs import hs_update
from parvec.trainer import Trainer
from parvec.word2vec import Word2Vec

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "src" / "parvec" / "data" / "demo_corpus.txt.xz"


# ---------------------------------------------------------------- the Huffman tree
def test_huffman_tree_of_a_hand_built_example():
    # word2vec.c's CreateBinaryTree by hand for counts 5 4 3 2 2 1 (inner node a = position 6 + a):
    #   node0 = {w5 (1): 0, w4 (2): 1} = 3;  node1 = {w3 (2): 0, node0 (3): 1} = 5, w2 (3) loses the tie to node0;
    #   node2 = {w2 (3): 0, w1 (4): 1} = 7;  node3 = {node1 (5): 0, w0 (5): 1} = 10, node1 wins the tie;
    #   node4 = root = {node2 (7): 0, node3 (10): 1}.
    t = build_huffman_tree(np.array([5, 4, 3, 2, 2, 1]))
    assert [t.code_of(w) for w in range(6)] == [[1, 1], [0, 1], [0, 0], [1, 0, 0], [1, 0, 1, 1], [1, 0, 1, 0]]
    assert [t.points_of(w) for w in range(6)] == [[4, 3], [4, 2], [4, 2], [4, 3, 1], [4, 3, 1, 0], [4, 3, 1, 0]]
    assert t.code_len.tolist() == [2, 2, 2, 3, 4, 4] and t.n_inner == 5
    assert t.codes.dtype == np.uint8 and t.points.dtype == np.int32 and t.codes.shape == (6, 4)
    assert t.points[0, 2:].tolist() == [-1, -1]  # padding


def _word2vec_c_tree(counts):
    """A line-by-line transcription of word2vec.c's CreateBinaryTree (sentinel 1e15, point/code arrays)."""
    v = len(counts)
    count = list(counts) + [int(1e15)] * v
    binary = [0] * (2 * v)
    parent = [0] * (2 * v)
    pos1, pos2 = v - 1, v
    for a in range(v - 1):
        mins = []
        for _ in range(2):
            if pos1 >= 0 and count[pos1] < count[pos2]:
                mins.append(pos1)
                pos1 -= 1
            else:
                mins.append(pos2)
                pos2 += 1
        count[v + a] = count[mins[0]] + count[mins[1]]
        parent[mins[0]] = parent[mins[1]] = v + a
        binary[mins[1]] = 1
    codes, points = [], []
    for a in range(v):
        code, point, b = [], [], a
        while True:
            code.append(binary[b])
            point.append(b)
            b = parent[b]
            if b == 2 * v - 2:
                break
        n = len(code)
        vcode = [0] * n
        vpoint = [0] * (n + 1)
        vpoint[0] = v - 2
        for b in range(n):
            vcode[n - b - 1] = code[b]
            vpoint[n - b] = point[b] - v
        codes.append(vcode)
        points.append(vpoint[:n])
    return codes, points


def _heapq_huffman_cost(counts):
    heap = [int(c) for c in counts]
    heapq.heapify(heap)
    cost = 0
    while len(heap) > 1:
        s = heapq.heappop(heap) + heapq.heappop(heap)
        cost += s
        heapq.heappush(heap, s)
    return cost


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_huffman_tree_matches_word2vec_c_and_is_an_optimal_prefix_code(seed):
    rng = np.random.default_rng(seed)
    # Zipf-like counts with many ties (what real vocabularies have), sorted descending as parvec's Vocab.
    counts = np.sort((2000 / np.arange(1, 301) ** rng.uniform(0.8, 1.2)).astype(np.int64) + 1)[::-1]
    t = build_huffman_tree(counts)
    ref_codes, ref_points = _word2vec_c_tree(counts.tolist())
    assert [t.code_of(w) for w in range(len(counts))] == ref_codes
    assert [t.points_of(w) for w in range(len(counts))] == ref_points
    codes = ["".join(map(str, c)) for c in ref_codes]
    # Prefix-free; Kraft's sum is exactly 1 (a full binary tree); optimal expected length (Huffman's cost).
    ordered = sorted(codes)
    assert all(not b.startswith(a) for a, b in zip(ordered, ordered[1:], strict=False))
    assert sum(2.0 ** -len(c) for c in codes) == pytest.approx(1.0, abs=1e-12)
    assert int((counts * t.code_len).sum()) == _heapq_huffman_cost(counts)
    # Paths start at the root (V-2), stay in syn1's rows, and a code prefix always names the same node.
    assert (t.points[:, 0] == len(counts) - 2).all()
    node_of: dict[str, int] = {}
    for w in range(len(counts)):
        for d, p in enumerate(t.points_of(w)):
            assert 0 <= p < t.n_inner
            assert node_of.setdefault(codes[w][:d], p) == p


def test_huffman_tree_of_an_unsorted_vocabulary_ranks_by_count_first():
    counts = np.array([3, 9, 1, 5, 2])
    order = np.argsort(-counts, kind="stable")
    t, ts = build_huffman_tree(counts), build_huffman_tree(counts[order])
    for rank, w in enumerate(order):
        assert t.code_of(w) == ts.code_of(rank) and t.points_of(w) == ts.points_of(rank)


def test_huffman_code_longer_than_word2vec_c_allows_is_a_clear_error():
    fib = [1, 1]
    while len(fib) < 45:
        fib.append(fib[-1] + fib[-2])
    counts = np.array(fib[::-1])  # Fibonacci counts: a chain, the rarest code is 44 long
    with pytest.raises(ParvecError, match="MAX_CODE_LENGTH of 40"):
        build_huffman_tree(counts)
    assert build_huffman_tree(counts, max_code_length=64).code_len.max() == 44
    with pytest.raises(ParvecError, match="at least 2 words"):
        build_huffman_tree(np.array([7]))


# ---------------------------------------------------------------- one update against numpy
def numpy_hs_reference(w_in, w_out, syn1, tree, ctx_words, cbow_mean, word, negatives, alpha):
    """word2vec.c's update for one example in float64, exact sigmoids (the kernel's table is within 4e-4)."""
    w_in, w_out, syn1 = (a.astype(np.float64) for a in (w_in, w_out, syn1))
    h = w_in[ctx_words].sum(axis=0)
    if cbow_mean and len(ctx_words) > 1:
        h /= len(ctx_words)
    neu1e = np.zeros_like(h)
    loss = 0.0
    for code, p in zip(tree.code_of(word), tree.points_of(word), strict=True):
        f = h @ syn1[p]
        loss += np.log1p(np.exp(-f if code == 0 else f))
        if abs(f) >= 6:
            continue  # word2vec.c skips the decision
        g = (1 - code - 1 / (1 + np.exp(-f))) * alpha
        neu1e += g * syn1[p]
        syn1[p] += g * h
    if len(negatives):
        for t, label in [(word, 1)] + [(n, 0) for n in negatives if n != word]:
            f = h @ w_out[t]
            sig = 1.0 if f > 6 else 0.0 if f < -6 else 1 / (1 + np.exp(-f))
            g = (label - sig) * alpha
            loss += np.log1p(np.exp(-f)) + (1 - label) * f
            neu1e += g * w_out[t]
            w_out[t] += g * h
    if not cbow_mean and len(ctx_words) > 1:
        neu1e /= len(ctx_words)
    for c in ctx_words:
        w_in[c] += neu1e
    return w_in, w_out, syn1, loss


@pytest.mark.parametrize(("ctx", "cbow_mean", "negatives"), [
    ([3], True, []),                      # skip-gram, HS alone
    ([3], True, [1, 6, 4]),               # skip-gram, HS + negative sampling (4 is the word: skipped)
    ([0, 3, 5, 2], True, []),             # CBOW, mean
    ([0, 3, 5, 2], False, []),            # CBOW, sum
    ([0, 3, 5, 3], True, [7, 1]),         # CBOW with a repeated context word, HS + NS
])
def test_one_hs_update_equals_numpy_reference(ctx, cbow_mean, negatives):
    rng = np.random.default_rng(len(ctx) + len(negatives))
    counts = np.array([30, 20, 12, 9, 7, 5, 3, 2])
    tree = build_huffman_tree(counts)
    w_in = rng.normal(0, 0.5, (8, 6)).astype(np.float32)
    w_out = rng.normal(0, 0.5, (8, 6)).astype(np.float32)
    syn1 = rng.normal(0, 0.5, (7, 6)).astype(np.float32)
    word = 4
    ref = numpy_hs_reference(w_in, w_out, syn1, tree, ctx, cbow_mean, word, negatives, 0.1)
    before = syn1.copy()
    loss = hs_update(w_in, w_out, syn1, tree.codes, tree.points, tree.code_len, np.array(ctx), cbow_mean, word,
                     np.array(negatives, dtype=np.int64), np.float32(0.1), np.zeros(12, np.float32))
    for got, want in zip((w_in, w_out, syn1), ref[:3], strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=3e-4)
    assert loss == pytest.approx(ref[3], rel=1e-3)
    # Only the inner nodes on the word's path moved, by a visible step.
    moved = np.flatnonzero(np.abs(syn1 - before).max(axis=1) > 1e-3).tolist()
    assert moved == sorted(tree.points_of(word))


def test_the_hs_update_is_a_gradient_step_on_the_hs_loss():
    # With HS alone, every decision uses a different syn1 row and h is updated at the end: the update is
    # exactly -alpha * grad of the summed log-loss.  Check the reference's gradient by finite differences.
    rng = np.random.default_rng(3)
    tree = build_huffman_tree(np.array([30, 20, 12, 9, 7, 5, 3, 2]))
    h = rng.normal(0, 0.3, 5)
    syn1 = rng.normal(0, 0.3, (7, 5))
    word = 6

    def hs_loss(h, syn1):
        return sum(np.log1p(np.exp(-(h @ syn1[p]) if c == 0 else h @ syn1[p]))
                   for c, p in zip(tree.code_of(word), tree.points_of(word), strict=True))

    w_in = h[None, :].astype(np.float32)
    new_h, _, new_syn1, _ = numpy_hs_reference(w_in, np.zeros((8, 5), np.float32), syn1.astype(np.float32), tree,
                                               [0], True, word, [], 1.0)
    eps = 1e-6
    h32, s32 = w_in[0].astype(np.float64), syn1.astype(np.float32).astype(np.float64)
    grad_h = np.array([(hs_loss(h32 + eps * e, s32) - hs_loss(h32 - eps * e, s32)) / (2 * eps) for e in np.eye(5)])
    np.testing.assert_allclose(new_h[0] - h32, -grad_h, atol=1e-6)
    p = tree.points_of(word)[1]
    grad_p = []
    for e in np.eye(5):
        plus, minus = s32.copy(), s32.copy()
        plus[p] += eps * e
        minus[p] -= eps * e
        grad_p.append((hs_loss(h32, plus) - hs_loss(h32, minus)) / (2 * eps))
    np.testing.assert_allclose(new_syn1[p] - s32[p], -np.array(grad_p), atol=1e-6)


def test_a_decision_beyond_max_exp_is_skipped_but_counted_in_the_loss():
    tree = build_huffman_tree(np.array([5, 3, 2]))  # word 0: code [1] at node 1
    w_in = np.full((3, 4), 2.0, np.float32)
    syn1 = np.full((2, 4), 1.0, np.float32)  # f = 8 > 6: word2vec.c skips
    before = w_in.copy(), syn1.copy()
    loss = hs_update(w_in, np.zeros((3, 4), np.float32), syn1, tree.codes, tree.points, tree.code_len,
                     np.array([1]), True, 0, np.zeros(0, np.int64), np.float32(0.1), np.zeros(8, np.float32))
    np.testing.assert_array_equal(w_in, before[0])
    np.testing.assert_array_equal(syn1, before[1])
    assert loss == pytest.approx(np.log1p(np.exp(8.0)), rel=1e-5)  # code 1 with f = 8: p = 1 - sigmoid(8)


# ---------------------------------------------------------------- training
@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    rng = np.random.default_rng(0)
    a, b = [f"a{i}" for i in range(20)], [f"b{i}" for i in range(20)]
    path = tmp_path_factory.mktemp("hs") / "topics.txt"
    path.write_text("\n".join(" ".join(rng.choice(a if i % 2 else b, 12)) for i in range(600)) + "\n")
    return path


def _train(corpus, **kw):
    cfg = TrainConfig(**({"algo": "classic", "dim": 16, "epochs": 2, "threads": 1, "hs": True, "negative": 0,
                          "progress": False, "sample": 0.0} | kw))
    trainer = Trainer(cfg, corpus.vocab.counts)
    return trainer, trainer.train(corpus)


@pytest.mark.parametrize("sg", [True, False])
@pytest.mark.parametrize("negative", [0, 3])
def test_hs_training_is_deterministic_on_one_thread_and_learns_the_topics(small_corpus, sg, negative):
    corpus = EncodedCorpus.from_file(small_corpus, ReadOptions(min_count=1))
    (a, sa), (b, sb) = _train(corpus, sg=sg, negative=negative, seed=5), _train(corpus, sg=sg, negative=negative,
                                                                              seed=5)
    np.testing.assert_array_equal(a.w_in, b.w_in)
    np.testing.assert_array_equal(a.syn1, b.syn1)
    assert sa.loss_per_epoch == sb.loss_per_epoch and np.isfinite(sa.loss_per_epoch).all()
    assert np.abs(a.syn1).max() > 0  # the tree's nodes were trained
    assert (np.abs(a.w_out).max() > 0) == (negative > 0)  # syn1neg only with negatives
    c, _ = _train(corpus, sg=sg, negative=negative, seed=6)
    assert not np.array_equal(a.w_in, c.w_in)
    w = a.w_in / np.linalg.norm(a.w_in, axis=1, keepdims=True)
    topic = np.array([word.startswith("a") for word in corpus.vocab.words])
    sims = w @ w.T
    same = sims[topic][:, topic].mean() + sims[~topic][:, ~topic].mean()
    assert same / 2 > sims[topic][:, ~topic].mean() + 0.3


def test_hs_loss_is_the_code_paths_log_loss_and_adds_the_negatives(small_corpus):
    corpus = EncodedCorpus.from_file(small_corpus, ReadOptions(min_count=1))
    _, hs_only = _train(corpus, epochs=1, alpha=1e-9)  # untrained: every decision has p = 1/2
    mean_code = (corpus.vocab.counts * build_huffman_tree(corpus.vocab.counts).code_len).sum() / corpus.vocab.total
    assert hs_only.loss_per_epoch[0] == pytest.approx(mean_code * np.log(2), rel=0.02)
    _, both = _train(corpus, epochs=1, alpha=1e-9, negative=4)
    # plus the positive's and 4 negatives' log 2 each (fewer when a noise word is the center)
    assert both.loss_per_epoch[0] - hs_only.loss_per_epoch[0] == pytest.approx(5 * np.log(2), rel=0.05)


@pytest.mark.parametrize("sg", [True, False])
def test_hs_learns_related_words_on_real_text(sg):
    if not DEMO_CORPUS.exists():
        pytest.skip("the demo corpus is not shipped in this checkout")
    corpus = EncodedCorpus.from_file(DEMO_CORPUS, ReadOptions(min_count=5))  # 2M tokens
    epochs = 2 if sg else 3  # CBOW trains one example per center word: a pass is cheaper and teaches less
    trainer, stats = _train(corpus, sg=sg, dim=50, epochs=epochs, threads=1, sample=1e-4, alpha=0.025 if sg else 0.05)
    assert stats.words == epochs * corpus.n_tokens
    assert_learns_related_words(trainer.w_in, corpus.vocab)


def test_hs_configuration_errors():
    with pytest.raises(ParvecError, match="negative=0 only with hierarchical softmax"):
        TrainConfig(negative=0).validate()
    TrainConfig(negative=0, hs=True).validate()
    TrainConfig(negative=0, hs=True, sg=False).validate()
    with pytest.raises(ParvecError, match="algo 'par'"):
        TrainConfig(hs=True, algo="par").validate()
    with pytest.raises(ParvecError, match=r"hierarchical softmax .* not available on the GPU .* runs on the CPU"):
        TrainConfig(hs=True, device="cuda").validate()
    with pytest.raises(ParvecError, match="at least 2 words"):
        Trainer(TrainConfig(hs=True, negative=0), np.array([4]))
    with pytest.raises(ParvecError, match="syn1 must be"):
        Trainer(TrainConfig(hs=True, dim=4), np.array([4, 2, 1]), syn1=np.zeros((3, 4), np.float32))
    with pytest.raises(ParvecError, match=r"hierarchical softmax .* not available on a cluster's replicas"):
        Word2Vec(hs=1, cluster="local:2")


# ---------------------------------------------------------------- model, CLI, gensim
def _sentences(seed=0):
    rng = np.random.default_rng(seed)
    a, b = [f"a{i}" for i in range(15)], [f"b{i}" for i in range(15)]
    return [list(rng.choice(a if i % 2 else b, 10)) for i in range(300)]


@pytest.mark.parametrize("sg", [1, 0])
def test_model_save_load_and_continue_training(tmp_path, sg):
    model = Word2Vec(sentences=_sentences(), vector_size=12, min_count=1, epochs=2, workers=1, hs=1, negative=0,
                     sg=sg, seed=3)
    assert model.syn1 is not None and model.syn1.shape == (len(model.vocab) - 1, 12) and np.abs(model.syn1).max() > 0
    model.save(tmp_path / "m")
    back = Word2Vec.load(tmp_path / "m")
    assert back.config.hs and back.config.negative == 0 and back.config.sg == bool(sg)
    np.testing.assert_array_equal(back.syn1, model.syn1)
    np.testing.assert_array_equal(back.wv.vectors, model.wv.vectors)
    # Continued training from the loaded model is the same as from the one in memory (same tree, same syn1).
    more = _sentences(seed=1)
    model.train(sentences=more, epochs=1)
    back.train(sentences=more, epochs=1)
    np.testing.assert_array_equal(back.syn1, model.syn1)
    np.testing.assert_array_equal(back.wv.vectors, model.wv.vectors)
    # A changed vocabulary count changes the tree: refused rather than training the wrong nodes.
    vocab = json.loads((tmp_path / "m" / "vocab.json").read_text())
    vocab["counts"][-1] += 1000
    (tmp_path / "m" / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(ParvecError, match="vocab.json.*checksum does not match"):  # vocab.json's CRC-32
        Word2Vec.load(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    del meta["vocab_crc32"]  # as a model saved before the checksum: the tree's fingerprint still refuses it
    (tmp_path / "m" / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ParvecError, match="Huffman tree rebuilt"):
        Word2Vec.load(tmp_path / "m")
    (tmp_path / "m" / "syn1.npy").unlink()
    with pytest.raises(ParvecError, match="no syn1.npy"):
        Word2Vec.load(tmp_path / "m")


def test_cli_hs_negative_0_end_to_end_and_gensim_reads_the_vectors(small_corpus, tmp_path, capsys):
    from gensim.models import KeyedVectors as GensimKV

    out, model_dir = tmp_path / "v.bin", tmp_path / "model"
    code = main([str(x) for x in ["-train", small_corpus, "-output", out, "-size", 12, "-window", 3, "-negative", 0,
                                  "-hs", 1, "-min-count", 1, "-iter", 2, "-threads", 1, "-binary", 1, "--no-cache",
                                  "--save-model", model_dir]])
    err = capsys.readouterr().err
    assert code == 0, err
    losses = [float(x) for x in err.split("loss per epoch: ")[1].split("\n")[0].split(", ")]
    assert len(losses) == 2 and all(0 < x < 20 for x in losses)
    kv = GensimKV.load_word2vec_format(str(out), binary=True)
    model = Word2Vec.load(model_dir)
    assert model.config.hs and model.syn1 is not None
    assert kv.index_to_key == model.wv.index_to_key
    np.testing.assert_array_equal(kv.vectors, model.wv.vectors)
    assert kv.most_similar("a1", topn=5)[0][0].startswith("a")
    # CBOW with hierarchical softmax, parvec's flags
    code = main([str(x) for x in ["train", small_corpus, "-o", tmp_path / "c.txt", "--dim", 8, "--hs", "-cbow", 1,
                                  "--negative", 0, "--min-count", 1, "--epochs", 1, "--threads", 1, "--no-cache"]])
    assert code == 0, capsys.readouterr().err
    assert GensimKV.load_word2vec_format(str(tmp_path / "c.txt")).vectors.shape[1] == 8


@pytest.mark.parametrize("sg", [1, 0])
def test_vocabulary_growth_rebuilds_the_tree_and_grows_syn1_as_gensim(tmp_path, sg):
    from gensim.models import Word2Vec as GensimW2V

    first = _sentences()
    rng = np.random.default_rng(7)
    c = [f"c{i}" for i in range(12)]
    # New words (a topic of their own) and known ones, whose counts the update raises.
    second = [list(rng.choice(c, 10)) for _ in range(300)] + _sentences(seed=2)[:100]
    kw = dict(vector_size=12, min_count=1, epochs=3, hs=1, negative=0, sg=sg, seed=3)
    model = Word2Vec(sentences=first, workers=1, **kw)
    n_old, old_syn1, old_in = len(model.wv), model.syn1.copy(), model.wv.vectors.copy()
    enc = model.build_vocab(second, update=True)
    n = len(model.wv)
    assert n == n_old + len(c)
    # syn1: one row per inner node of the tree over the grown vocabulary; old rows kept, new ones zero.
    assert model.syn1.shape == (n - 1, 12) and model.syn1.dtype == np.float32 and model.syn1.flags.c_contiguous
    np.testing.assert_array_equal(model.syn1[: n_old - 1], old_syn1)
    np.testing.assert_array_equal(model.syn1[n_old - 1 :], 0)
    # gensim grows its syn1 by the same number of zero rows (its syn1 has V rows, one never used).
    g = GensimW2V(sentences=first, workers=1, **kw)
    g_rows = g.syn1.shape[0]
    g.build_vocab(second, update=True)
    assert g.syn1.shape[0] - g_rows == n - n_old and len(g.wv) == n
    # The tree the trainer uses is rebuilt over every word with the grown counts: an optimal prefix code.
    tree = model._make_driver().tree
    counts = model.vocab.counts
    assert len(tree.code_len) == n and (tree.code_len > 0).all() and tree.n_inner == n - 1
    assert int((counts * tree.code_len).sum()) == _heapq_huffman_cost(counts)
    assert all(0 <= p < n - 1 for w in range(n) for p in tree.points_of(w))
    assert tree.fingerprint() != build_huffman_tree(counts[:n_old]).fingerprint()
    # Training after the update runs on the new words: their vectors move, the rebuilt tree's new rows learn,
    # and they rank with their own topic.
    new_before = model.wv.vectors[n_old:].copy()
    stats = model.train(corpus=enc, epochs=3)
    assert all(np.isfinite(x) and x > 0 for x in stats.loss_per_epoch)
    assert np.abs(model.wv.vectors[n_old:] - new_before).max() > 1e-3
    assert np.abs(model.syn1[n_old - 1 :]).max() > 0
    assert not np.array_equal(model.wv.vectors[:n_old], old_in)
    assert model.wv.most_similar("c1", topn=3)[0][0].startswith("c")
    # Saved and loaded, the grown model keeps its tree and syn1 and continues training identically.
    model.save(tmp_path / "m")
    back = Word2Vec.load(tmp_path / "m")
    np.testing.assert_array_equal(back.syn1, model.syn1)
    assert back._make_driver().tree.fingerprint() == tree.fingerprint()
    model.train(sentences=second, epochs=1)
    back.train(sentences=second, epochs=1)
    np.testing.assert_array_equal(back.syn1, model.syn1)
    np.testing.assert_array_equal(back.wv.vectors, model.wv.vectors)
