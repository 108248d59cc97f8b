"""Misusing the graph API and commands: clear errors (ParvecError, exit 2) naming the file, line or parameter,
and warnings with counts where the result still means something."""

from __future__ import annotations

import json
import logging
import re

import numpy as np
import pytest

from parvec.cli import main
from parvec.errors import ParvecError
from parvec.formats import read_word2vec, write_word2vec
from parvec.graph.evaluation import align_labels, link_prediction, node_classification, read_labels, split_edges
from parvec.graph.graph_io import Graph, read_edgelist
from parvec.graph.node2vec import DeepWalk, Node2Vec
from parvec.model_tables import init_input_vectors

FAST = ["--dimensions", "8", "--walk-length", "10", "--num-walks", "4", "--window-size", "3", "--workers", "1",
        "--algo", "classic", "--quiet"]  # fmt: skip
SMALL = dict(dimensions=8, walk_length=10, num_walks=4, window=3, workers=1, algo="classic", seed=3)


def write(tmp_path, name: str, text: str | bytes):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def two_groups(n: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Vectors of two separable groups and their one-hot labels (first half class 0)."""
    rng = np.random.default_rng(seed)
    y = np.zeros((n, 2), dtype=int)
    y[: n // 2, 0] = 1
    y[n // 2 :, 1] = 1
    x = (y[:, :1] - y[:, 1:]) * 3.0 + 0.3 * rng.standard_normal((n, 4))
    return x, y


@pytest.fixture()
def emb(tmp_path):
    x, _ = two_groups()
    path = tmp_path / "nodes.emb"
    write_word2vec(path, x.astype(np.float32), [f"n{i}" for i in range(len(x))])
    return path


def group_labels(extra: str = "") -> str:
    return "".join(f"n{i} {'a' if i < 10 else 'b'}\n" for i in range(20)) + extra


def warnings_text(caplog) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


# ------------------------------------------------------------------ item 6: node classification
def test_node_eval_single_class_exits_2_naming_the_label_file(tmp_path, emb, capsys):
    labels = write(tmp_path, "single.labels", "".join(f"n{i} only\n" for i in range(20)))
    assert main(["node-eval", str(emb), "--labels", str(labels), "--repeats", "2"]) == 2
    err = capsys.readouterr().err
    assert f"{labels}: " in err and "nothing to classify" in err and "'only'" in err
    assert "Traceback" not in err


def test_node_classification_refuses_labels_that_tell_no_node_apart():
    x, _ = two_groups()
    with pytest.raises(ParvecError, match=r"groups\.txt: .*single label 'x'.*nothing to classify"):
        node_classification(x, np.ones((20, 1)), [0.5], repeats=2, source="groups.txt", label_names=["x"])
    with pytest.raises(ParvecError, match=r"labels: every labelled node has every one of the 3 labels"):
        node_classification(x, np.ones((20, 3)), [0.5], repeats=2)


def test_labels_on_one_node_or_on_every_node_warn_with_counts(caplog):
    x, y = two_groups()
    lone = np.zeros((20, 2), dtype=int)
    lone[3, 0] = 1  # label 'c' on node 3 only
    lone[:, 1] = 1  # label 'all' on every node
    with caplog.at_level(logging.WARNING):
        r = node_classification(x, np.hstack([y, lone]), [0.5], repeats=2, label_names=["a", "b", "c", "all"])
    text = warnings_text(caplog)
    assert "1 of the 4 labels is held by a single node ('c')" in text
    assert "1 of the 4 labels is held by every labelled node ('all')" in text
    assert r["n_labels"] == 4 and len(r["results"]) == 1


def test_small_training_fraction_warns_about_labels_without_a_training_example(caplog):
    x, y = two_groups()
    with caplog.at_level(logging.WARNING):
        r = node_classification(x, y, [0.05, 0.5], repeats=5)
    text = warnings_text(caplog)
    # 0.05 of 20 nodes is one training node: one of the two labels is missing from every split
    assert "train fraction 0.05 (1 of 20 nodes): 5 of 5 splits had up to 1 of the 2 labels without a training" in text
    assert "train fraction 0.5" not in text
    assert [q["train_fraction"] for q in r["results"]] == [0.05, 0.5]


def test_node_classification_rejects_bad_vectors_and_parameters():
    x, y = two_groups()
    bad = x.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ParvecError, match=r"vectors: 1 of the 20 vectors hold NaN or inf"):
        node_classification(bad, y, [0.5], repeats=1)
    with pytest.raises(ParvecError, match=r"C must be a positive number, got 0"):
        node_classification(x, y, [0.5], repeats=1, C=0)
    with pytest.raises(ParvecError, match=r"workers must be a positive integer, got 0"):
        node_classification(x, y, [0.5], repeats=1, workers=0)


def test_node_eval_warns_how_many_labelled_nodes_have_no_vector(tmp_path, emb, capsys, caplog):
    labels = write(tmp_path, "g.labels", group_labels("ghost1 a\nghost2 b\n"))
    assert main(["node-eval", str(emb), "--labels", str(labels), "--repeats", "2", "--train-fractions", "0.5",
                 "--json"]) == 0  # fmt: skip
    out, err = capsys.readouterr()
    assert json.loads(out)["n_labelled_without_vector"] == 2
    assert "parvec: warning: " in err and "2 of the 22 labelled nodes have no vector" in err and "'ghost1'" in err
    with caplog.at_level(logging.WARNING):
        rows, _ = align_labels([f"n{i}" for i in range(20)], read_labels(labels), source="g.labels")
    assert len(rows) == 20 and "g.labels: 2 of the 22 labelled nodes have no vector" in warnings_text(caplog)


def test_node_eval_with_no_labelled_node_having_a_vector(tmp_path, emb, capsys):
    labels = write(tmp_path, "other.labels", "x a\ny b\n")
    assert main(["node-eval", str(emb), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err
    assert f"{labels}: none of the 2 labelled nodes has a vector" in err
    assert "labels name nodes like 'x', the vectors are keyed like 'n0'" in err


def test_node_eval_names_a_malformed_label_line(tmp_path, emb, capsys):
    one = write(tmp_path, "short.labels", "n0 a\nn1\n")
    assert main(["node-eval", str(emb), "--labels", str(one)]) == 2
    assert f"{one}:2: expected 'node label [label ...]', got 'n1'" in capsys.readouterr().err
    binary = write(tmp_path, "latin.labels", b"n0 a\nn1 b\nn2 caf\xe9\n")
    assert main(["node-eval", str(emb), "--labels", str(binary)]) == 2
    assert f"{binary}:3: not UTF-8 text" in capsys.readouterr().err


# ------------------------------------------------------------------ item 6: link prediction
def test_link_eval_on_a_tree_names_the_graph(tmp_path, capsys):
    tree = write(tmp_path, "tree.txt", "a b\nb c\nc d\n")
    assert main(["link-eval", str(tree), *FAST]) == 2
    err = capsys.readouterr().err
    assert f"{tree}: all 3 edges are needed to keep the graph connected" in err and "nothing to hide" in err


def test_link_eval_fraction_too_small_says_so(tmp_path, capsys):
    triangle = write(tmp_path, "tri.txt", "a b\nb c\nc a\n")
    assert main(["link-eval", str(triangle), "--fraction", "0.1", *FAST]) == 2
    err = capsys.readouterr().err
    assert f"{triangle}: hiding fraction 0.1 of 3 edges rounds to none" in err and "--fraction" in err


def test_link_eval_on_a_dense_graph_runs_out_of_non_edges(tmp_path, capsys):
    k5 = write(tmp_path, "k5.txt", "".join(f"{u} {v}\n" for u in range(5) for v in range(u + 1, 5)))
    assert main(["link-eval", str(k5), *FAST]) == 2
    err = capsys.readouterr().err
    assert f"{k5}: link prediction needs 10 non-edges" in err and "has only 0" in err


def test_split_edges_warns_when_it_hides_fewer_edges_than_asked(caplog):
    # a square (one edge outside any spanning tree) with a 3-edge tail: 7 edges, half is 4, only 1 can go
    g = Graph.from_edges([0, 1, 2, 3, 3, 4, 5], [1, 2, 3, 0, 4, 5, 6], n_nodes=7)
    with caplog.at_level(logging.WARNING):
        split = split_edges(g, 0.5, seed=0)
    assert len(split.hidden) == 1
    assert "hid 1 of the 4 edges asked for (fraction 0.5 of 7)" in warnings_text(caplog)


def test_link_prediction_refuses_non_finite_vectors():
    g = Graph.from_edges([0, 1, 2, 0, 2], [1, 2, 3, 2, 4], n_nodes=6)
    with pytest.raises(ParvecError, match="embed returned vectors holding NaN or inf"):
        link_prediction(g, lambda r: np.full((r.n_nodes, 4), np.nan), fraction=0.3)


# ------------------------------------------------------------------ item 8: untrained output
@pytest.mark.parametrize(
    ("name", "text", "flags"),
    [
        ("zero.txt", "a b 0\nb c 0\n", ["--weighted"]),
        ("loops.txt", "a a\nb b\nc c\n", []),
    ],
)
@pytest.mark.parametrize("command", ["node2vec", "deepwalk"])
def test_graph_without_an_edge_between_two_nodes_is_refused(tmp_path, capsys, name, text, flags, command):
    graph = write(tmp_path, name, text)
    out = tmp_path / "out.emb"
    assert main([command, str(graph), "-o", str(out), *flags, *FAST]) == 2
    err = capsys.readouterr().err
    assert f"{graph}: no edge joins two different nodes" in err and "nothing to learn" in err
    assert not out.exists()


def test_walk_length_one_is_refused(tmp_path, capsys):
    graph = write(tmp_path, "g.txt", "a b\nb c\n")
    out = tmp_path / "out.emb"
    assert main(["node2vec", str(graph), "-o", str(out), *FAST, "--walk-length", "1"]) == 2
    assert "walk_length (--walk-length) is 1" in capsys.readouterr().err and not out.exists()
    with pytest.raises(ParvecError, match=r"walk_length \(--walk-length\) is 1"):
        DeepWalk(Graph.from_edges([0], [1], n_nodes=2), walk_length=1)


@pytest.mark.parametrize("algo", ["classic", "hogbatch", "par"])
def test_nodes_that_train_nothing_are_counted_and_keep_their_initial_vectors(caplog, algo):
    # 0-1-2 triangle, node 3 isolated, node 4 with only a self-loop, 5 a leaf of 2
    g = Graph.from_edges([0, 1, 2, 4, 2], [1, 2, 0, 4, 5], n_nodes=6, node_ids=list("abcdef"))
    model = Node2Vec(g, **{**SMALL, "algo": algo})
    with caplog.at_level(logging.WARNING):
        vectors = model.fit_vectors()
    text = warnings_text(caplog)
    assert "2 of 6 nodes never share a walk with another node (e.g. 'd', 'e')" in text
    assert "random initial" in text
    assert model.paired.tolist() == [True, True, True, False, False, True]
    init = init_input_vectors(6, 8, SMALL["seed"])
    rank = model.ranking.rank
    assert np.array_equal(vectors[3], init[rank[3]])  # isolated: exactly its initial vector
    assert np.array_equal(vectors[4], init[rank[4]])  # self-loop only: put back to its initial vector
    assert not np.array_equal(vectors[0], init[rank[0]])  # trained


def test_node2vec_command_warns_about_isolated_nodes_and_writes(tmp_path, capsys):
    graph = write(tmp_path, "g.txt", "0 1\n1 2\n2 0\n0 4\n")  # node 3 is never mentioned
    out = tmp_path / "out.emb"
    assert main(["node2vec", str(graph), "-o", str(out), "--implicit-ids", *FAST]) == 0
    err = capsys.readouterr().err
    assert "parvec: warning: " in err and "1 of 5 nodes never share a walk with another node (e.g. '3')" in err
    assert sorted(read_word2vec(out)[1]) == ["0", "1", "2", "3", "4"]


# ------------------------------------------------------------------ item 9: edge lists
@pytest.mark.parametrize(
    ("text", "options", "token"),
    [
        ("a b\nb c heavy\n", {}, "heavy"),
        ("1 2\n2 3 x\n", {}, "x"),  # the integer reader
        ("1 2\n2 3 x\n", {"implicit_ids": True}, "x"),
        ("a,b\nb,c,heavy\n", {"delimiter": ","}, "heavy"),
        ("a\tb\nb\tc\t?\n", {"delimiter": "\t"}, "?"),
    ],
)
def test_unweighted_third_column_must_be_a_number(tmp_path, text, options, token):
    p = write(tmp_path, "graph.txt", text)
    with pytest.raises(ParvecError, match=rf"graph\.txt:2: third column '{re.escape(token)}' is not a number"):
        read_edgelist(p, **options)


def test_unweighted_read_warns_that_it_ignores_weights(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        g = read_edgelist(write(tmp_path, "graph.txt", "a b 2\nb c 3\nc d\n"))
    assert g.data is None and g.n_edges == 3
    assert "graph.txt: 2 of 3 edge lines have a weight column, ignored by an unweighted read" in warnings_text(caplog)


@pytest.mark.parametrize(
    ("text", "options", "line", "fragment"),
    [
        ("a\tb\t1\nb\tc\n", {"delimiter": "\t", "weighted": True}, 2, "weighted graph needs 'u v w'"),
        ("a,b,1\nb,c,inf\n", {"delimiter": ",", "weighted": True}, 2, "finite and >= 0, got 'inf'"),
        ("0 1 1\n1 2 -0.5\n", {"weighted": True, "implicit_ids": True}, 2, "finite and >= 0, got '-0.5'"),
        ("a,b\nc\n", {"delimiter": ","}, 2, "expected 'u v' or 'u v w', got 'c'"),
        ("a\tb\nc d\n", {"delimiter": "\t"}, 2, r"got 'c d' \(columns separated by '\\t'\)"),
        ("a b\nc d\ne \xff\n".encode("latin-1"), {}, 3, "not UTF-8 text"),
    ],
)
def test_edge_list_errors_name_the_line_with_every_option(tmp_path, text, options, line, fragment):
    p = write(tmp_path, "graph.txt", text)
    with pytest.raises(ParvecError, match=rf"graph\.txt:{line}: .*{fragment}"):
        read_edgelist(p, **options)


def test_node2vec_command_names_the_bad_third_column(tmp_path, capsys):
    graph = write(tmp_path, "adj.txt", "a b\nb c d\n")  # an adjacency-list line, not an edge
    assert main(["node2vec", str(graph), "-o", str(tmp_path / "x.emb"), *FAST]) == 2
    assert f"{graph}:2: third column 'd' is not a number" in capsys.readouterr().err


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ids", [("a", "b", "c"), ("1", "2", "3")])
def test_a_utf8_bom_is_not_part_of_the_first_node_id(tmp_path, weighted, ids):
    from parvec.graph.graph_io import read_graph

    a, b, c = ids
    path = tmp_path / "bom.edgelist"
    rows = [f"{a} {b} 1.0", f"{b} {c} 2.0", f"{c} {a} 1.5"] if weighted else [f"{a} {b}", f"{b} {c}", f"{c} {a}"]
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(rows).encode() + b"\n")
    graph = read_graph(path, weighted=weighted)
    assert sorted(graph.node_ids) == sorted(ids)
    assert graph.n_edges == 3


def test_a_utf8_bom_is_not_part_of_the_first_labelled_node(tmp_path):
    from parvec.graph.evaluation import read_labels

    path = tmp_path / "bom.labels"
    path.write_bytes(b"\xef\xbb\xbf" + b"a x\nb y\n")
    labels = read_labels(path)
    assert labels.node_ids == ["a", "b"]


@pytest.mark.parametrize("workers", [0, -1])
def test_node2vec_workers_zero_is_refused_not_all_cores(workers, capsys, tmp_path):
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], node_ids=["a", "b", "c"])
    with pytest.raises(ParvecError, match="workers must be a positive integer"):
        Node2Vec(g, workers=workers)
    path = tmp_path / "g.edgelist"
    path.write_text("a b\nb c\nc a\n")
    with pytest.raises(SystemExit) as stop:  # refused by the flag's parser, as train's --threads 0 is
        main(["node2vec", str(path), "-o", str(tmp_path / "v.txt"), "--workers", str(workers)])
    assert stop.value.code == 2
    assert "--workers: must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "v.txt").exists()


def test_node2vec_on_cuda_without_a_gpu_names_what_is_missing(tmp_path):
    from numba import cuda

    if cuda.is_available():
        pytest.skip("a CUDA device is present: the hardware tests cover device='cuda'")
    g = Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 0], node_ids=["a", "b", "c", "d"])
    with pytest.raises(ParvecError, match="(?i)cuda|gpu"):
        Node2Vec(g, walk_length=5, num_walks=2, workers=1, device="cuda").fit()
