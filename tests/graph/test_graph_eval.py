"""Node classification, link prediction, labels, and end-to-end node2vec quality on karate."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from parvec.errors import ParvecError
from parvec.graph.evaluation import (
    Labels,
    _top_k_predictions,
    align_labels,
    link_prediction,
    node_classification,
    read_labels,
    sample_non_edges,
    split_edges,
)
from parvec.graph.graph_io import Graph, read_graph
from parvec.graph.node2vec import DeepWalk, Node2Vec

HAVE_TRAINER = importlib.util.find_spec("parvec.trainer") is not None
needs_trainer = pytest.mark.skipif(not HAVE_TRAINER, reason="parvec.trainer not available yet")


def planted_partition(n_per: int = 30, p_in: float = 0.3, p_out: float = 0.01, seed: int = 0) -> Graph:
    rng = np.random.default_rng(seed)
    n = 2 * n_per
    a = rng.random((n, n))
    same = (np.arange(n)[:, None] // n_per) == (np.arange(n)[None, :] // n_per)
    adj = np.triu(np.where(same, a < p_in, a < p_out), 1)
    src, dst = np.nonzero(adj)
    return Graph.from_edges(src, dst, n_nodes=n)


# ---------------------------------------------------------------------------------- labels
def test_read_labels_multilabel_and_errors(tmp_path):
    p = tmp_path / "g.labels"
    p.write_text("# node label\na 1\nb 2\na 10\nc 2 1\n\n", encoding="utf-8")
    lab = read_labels(p)
    assert lab.node_ids == ["a", "b", "c"] and lab.label_names == ["1", "2", "10"]
    assert lab.matrix.toarray().tolist() == [[1, 0, 1], [0, 1, 0], [1, 1, 0]]
    assert lab.multilabel
    bad = tmp_path / "bad.labels"
    bad.write_text("a 1\nb\n", encoding="utf-8")
    with pytest.raises(ParvecError, match=r"bad\.labels:2: expected 'node label"):
        read_labels(bad)
    with pytest.raises(ParvecError, match="no such file"):
        read_labels(tmp_path / "none.labels")
    with pytest.raises(ParvecError, match="none of the 3 labelled nodes"):
        align_labels(["x", "y"], lab)


def test_top_k_uses_true_label_count():
    scores = np.array([[0.1, 0.9, 0.5], [0.8, 0.7, 0.1]])
    pred = _top_k_predictions(scores, np.array([2, 1]))
    assert pred.tolist() == [[0, 1, 1], [1, 0, 0]]


# ---------------------------------------------------------------------------------- classification
def test_node_classification_separable_vs_random():
    rng = np.random.default_rng(0)
    y = np.zeros((200, 3), dtype=int)
    cls = rng.integers(0, 3, 200)
    y[np.arange(200), cls] = 1
    y[np.arange(40), (cls[:40] + 1) % 3] = 1  # some nodes have two labels
    centres = rng.standard_normal((3, 8)) * 4
    x = y @ centres + 0.3 * rng.standard_normal((200, 8))
    good = node_classification(x, y, train_fractions=[0.3, 0.7], repeats=3, seed=1)
    assert [r["train_fraction"] for r in good["results"]] == [0.3, 0.7]
    assert all(r["micro_f1_mean"] > 0.9 and r["macro_f1_mean"] > 0.9 for r in good["results"])
    noise = node_classification(rng.standard_normal((200, 8)), y, train_fractions=[0.5], repeats=3)
    assert noise["results"][0]["micro_f1_mean"] < 0.6
    assert len(good["results"][0]["micro_f1"]) == 3
    again = node_classification(x, y, train_fractions=[0.3], repeats=3, seed=1)
    assert again["results"][0]["micro_f1"] == good["results"][0]["micro_f1"]  # seeded splits


def test_node_classification_rejects_unlabelled_rows():
    with pytest.raises(ParvecError, match="no label"):
        node_classification(np.zeros((3, 2)), np.array([[1], [0], [1]]))


# ---------------------------------------------------------------------------------- link prediction
def test_split_edges_keeps_connectivity_and_hides_the_fraction():
    g = planted_partition(seed=1)
    n_comp, _ = connected_components(g.to_scipy(), directed=False)
    split = split_edges(g, 0.5, seed=3)
    r = split.residual
    assert connected_components(r.to_scipy(), directed=False)[0] == n_comp
    assert len(split.hidden) == round(0.5 * g.n_edges)
    assert r.n_edges + len(split.hidden) == g.n_edges
    for u, v in split.hidden.tolist():
        assert g.has_edge(u, v) and not r.has_edge(u, v) and not r.has_edge(v, u)
    assert r.node_ids == g.node_ids
    assert np.array_equal(split_edges(g, 0.5, seed=3).hidden, split.hidden)


def test_split_edges_on_a_tree_has_nothing_to_hide():
    with pytest.raises(ParvecError, match="nothing to hide"):
        split_edges(Graph.from_edges([0, 1], [1, 2], n_nodes=3), 0.5)


def test_sample_non_edges_are_distinct_non_edges():
    g = planted_partition(seed=2)
    pairs = sample_non_edges(g, 500, np.random.default_rng(0))
    assert len(pairs) == 500
    assert all(a != b and not g.has_edge(a, b) for a, b in pairs.tolist())
    keys = {tuple(sorted(p)) for p in pairs.tolist()}
    assert len(keys) == 500
    complete = Graph.from_edges(*np.triu_indices(4, 1), n_nodes=4)
    with pytest.raises(ParvecError, match="non-edges"):
        sample_non_edges(complete, 1, np.random.default_rng(0))


def test_link_prediction_oracle_vs_random_embedding():
    g = planted_partition(n_per=40, p_in=0.4, p_out=0.01, seed=4)
    oracle = np.repeat(np.eye(2), 40, axis=0) + 0.01  # community indicator: same-community pairs score high
    good = link_prediction(g, lambda r: oracle, fraction=0.5, seed=0)
    # within-community non-edges are indistinguishable for this oracle, which caps its AUC near 0.8
    assert good["roc_auc"] > 0.75
    rng = np.random.default_rng(0)
    bad = link_prediction(g, lambda r: rng.standard_normal((r.n_nodes, 8)), fraction=0.5, seed=0)
    assert bad["roc_auc"] < 0.65
    assert good["n_test_pairs"] == 2 * good["n_hidden"]


@needs_trainer
def test_link_prediction_with_node2vec():
    g = planted_partition(n_per=40, p_in=0.4, p_out=0.01, seed=4)

    def embed(residual):
        return Node2Vec(
            residual, dimensions=16, walk_length=20, num_walks=10, window=5, epochs=3, workers=1, seed=2,
            algo="classic",
        ).fit_vectors()  # fmt: skip

    assert link_prediction(g, embed, fraction=0.3, seed=1)["roc_auc"] > 0.75


# ---------------------------------------------------------------------------------- karate
@needs_trainer
@pytest.mark.parametrize(("p", "q"), [(1.0, 1.0), (0.25, 4.0), (4.0, 0.25)])
def test_karate_factions_separate(shared_data, p, q):
    g = read_graph(shared_data / "graphs/karate/karate.edgelist")
    lab = read_labels(shared_data / "graphs/karate/karate.labels")
    rows, y = align_labels(g.node_ids, lab)
    y = y.toarray()[:, 1]
    # sample=0: on a 14k-token corpus gensim's default 1e-3 would drop ~80% of the walk tokens
    model = Node2Vec(
        g, dimensions=16, walk_length=20, num_walks=20, window=5, epochs=3, p=p, q=q, workers=1, seed=5,
        algo="classic", sample=0,
    )  # fmt: skip
    x = model.fit_vectors()[rows]
    # nearest-centroid on held-out nodes, several random halves: chance is 0.5
    rng = np.random.default_rng(0)
    accs = []
    for _ in range(10):
        perm = rng.permutation(len(y))
        tr, te = perm[:17], perm[17:]
        xn = x / np.linalg.norm(x, axis=1, keepdims=True)
        centroids = np.stack([xn[tr][y[tr] == c].mean(axis=0) for c in (0, 1)])
        pred = np.argmax(xn[te] @ centroids.T, axis=1)
        accs.append(np.mean(pred == y[te]))
    assert np.mean(accs) > 0.85, accs


@needs_trainer
def test_fit_returns_keyed_vectors_by_original_ids():
    g = Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 0], n_nodes=4, node_ids=["ann", "bo", "cy", "di"])
    kv = DeepWalk(g, dimensions=8, walk_length=10, num_walks=5, window=3, workers=1, algo="classic").fit()
    assert sorted(kv.index_to_key) == ["ann", "bo", "cy", "di"]
    assert kv["cy"].shape == (8,)
    assert np.all(np.diff(kv.counts) <= 0)  # most frequent node first
    assert int(kv.counts.sum()) == 4 * 5 * 10 and kv.vectors.shape == (4, 8)


def test_labels_from_pairs_dedupes():
    lab = Labels.from_pairs([("a", "x"), ("a", "x"), ("b", "y")])
    assert sp.issparse(lab.matrix) and lab.matrix.toarray().tolist() == [[1, 0], [0, 1]]
    assert not lab.multilabel
