"""Reading graphs: edge lists (string and implicit IDs), .npz, .mat; duplicates, self-loops, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from parvec.errors import ParvecError
from parvec.graph.graph_io import Graph, read_edgelist, read_graph, read_mat, read_npz


def write(tmp_path: Path, text: str, name: str = "graph.txt") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def edge_set(g: Graph) -> set[tuple[str, str, float | None]]:
    src, dst, w = g.edge_list()
    ids = g.node_ids
    out = set()
    for k, (a, b) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        x, y = ids[a], ids[b]
        if not g.directed:
            x, y = min(x, y), max(x, y)
        out.add((x, y, None if w is None else float(w[k])))
    return out


def test_string_ids_round_trip_in_first_seen_order(tmp_path):
    g = read_edgelist(write(tmp_path, "alice bob\nbob carol\n# comment\n\ncarol alice  # trailing\ndave é\n"))
    assert g.node_ids == ["alice", "bob", "carol", "dave", "é"]
    assert edge_set(g) == {
        ("alice", "bob", None),
        ("bob", "carol", None),
        ("alice", "carol", None),
        ("dave", "é", None),
    }
    assert g.n_edges == 4 and g.nnz == 8 and not g.weighted
    # CSR invariants: rows sorted, dtypes as the kernels expect
    assert g.indptr.dtype == np.int64 and g.indices.dtype == np.int32
    for v in range(g.n_nodes):
        row = g.neighbors(v)
        assert np.all(np.diff(row) > 0)


def test_undirected_is_symmetric_directed_is_not(tmp_path):
    p = write(tmp_path, "0 1\n1 2\n")
    und = read_edgelist(p, implicit_ids=True)
    dire = read_edgelist(p, implicit_ids=True, directed=True)
    assert und.has_edge(1, 0) and und.has_edge(0, 1)
    assert dire.has_edge(0, 1) and not dire.has_edge(1, 0)
    assert dire.n_edges == 2 and und.n_edges == 2
    assert dire.degrees().tolist() == [1, 1, 0]


def test_duplicates_merged_last_weight_wins_and_self_loops_kept_once(tmp_path):
    p = write(tmp_path, "a b 1\nb a 3\na a 2\na a 5\nb c 0.5\n")
    g = read_edgelist(p, weighted=True)
    assert g.index["a"] == 0
    a, b, c = (g.index[x] for x in "abc")
    assert g.neighbors(a).tolist() == sorted([a, b])  # self-loop stored once, duplicate a-b merged
    w = dict(zip(g.neighbors(a).tolist(), g.weights(a).tolist(), strict=True))
    assert w == {a: 5.0, b: 3.0}
    assert g.weights(b)[g.neighbors(b).tolist().index(a)] == 3.0  # symmetric copy has the same weight
    assert g.n_self_loops == 1 and g.n_edges == 3
    # directed: a->b and b->a stay distinct edges
    gd = read_edgelist(p, weighted=True, directed=True)
    assert gd.n_edges == 4


def test_zero_weight_drops_edge_but_keeps_nodes(tmp_path):
    g = read_edgelist(write(tmp_path, "a b 1\nc d 0\n"), weighted=True)
    assert g.n_nodes == 4 and g.n_edges == 1
    assert g.degrees()[g.index["c"]] == 0


def test_unweighted_read_ignores_third_column_and_mixed_columns(tmp_path):
    g = read_edgelist(write(tmp_path, "a b 7\nb c\n"))
    assert g.data is None and g.n_edges == 2


def test_delimiters(tmp_path):
    g = read_edgelist(write(tmp_path, "New York\tBoston\t2\nBoston\tLos Angeles\t1\n"), delimiter="\t", weighted=True)
    assert g.node_ids == ["New York", "Boston", "Los Angeles"]
    g2 = read_edgelist(write(tmp_path, "x,y\ny,z\n", "c.csv"), delimiter=",")
    assert g2.node_ids == ["x", "y", "z"] and g2.n_edges == 2


@pytest.mark.parametrize(
    ("text", "weighted", "line", "fragment"),
    [
        ("a b\nc\n", False, 2, "expected 'u v' or 'u v w'"),
        ("a b\n\n# x\nc d e f\n", False, 4, "expected 'u v' or 'u v w'"),
        ("a b 1\nb c heavy\n", True, 2, "not a number"),
        ("a b 1\nb c -2\n", True, 2, "finite and >= 0"),
        ("a b 1\nb c nan\n", True, 2, "finite and >= 0"),
        ("a b 1\nb c\n", True, 2, "weighted graph needs 'u v w'"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, text, weighted, line, fragment):
    p = write(tmp_path, text)
    with pytest.raises(ParvecError, match=rf"graph\.txt:{line}: .*{fragment}"):
        read_edgelist(p, weighted=weighted)


def test_implicit_ids_errors_name_the_line(tmp_path):
    p = write(tmp_path, "0 1\n1 x\n")
    with pytest.raises(ParvecError, match=r"graph\.txt:2: node id 'x' is not an integer"):
        read_edgelist(p, implicit_ids=True)
    with pytest.raises(ParvecError, match=r"graph\.txt:1: .*out of range"):
        read_edgelist(write(tmp_path, "-1 2\n"), implicit_ids=True)


def test_empty_missing_and_directory(tmp_path):
    with pytest.raises(ParvecError, match="no edges"):
        read_edgelist(write(tmp_path, ""))
    with pytest.raises(ParvecError, match="no edges"):
        read_edgelist(write(tmp_path, "# only a comment\n\n"), implicit_ids=True)
    with pytest.raises(ParvecError, match="no such file"):
        read_graph(tmp_path / "missing.txt")
    with pytest.raises(ParvecError, match="is a directory"):
        read_graph(tmp_path)


def test_implicit_ids_equals_general_path(tmp_path):
    rng = np.random.default_rng(3)
    edges = rng.integers(0, 50, size=(300, 2))
    w = rng.random(300).round(3) + 0.1
    text = "".join(f"{a} {b} {c}\n" for (a, b), c in zip(edges.tolist(), w.tolist(), strict=True))
    p = write(tmp_path, "# header\n" + text)
    g1 = read_edgelist(p, weighted=True, implicit_ids=True)
    g2 = read_edgelist(p, weighted=True)
    assert g1.node_ids == [str(i) for i in range(int(edges.max()) + 1)]
    assert edge_set(g1) == edge_set(g2)


def test_implicit_ids_counts_unmentioned_nodes(tmp_path):
    g = read_edgelist(write(tmp_path, "0 4\n"), implicit_ids=True)
    assert g.n_nodes == 5 and g.degrees().tolist() == [1, 0, 0, 0, 1]


def test_npz_and_mat(tmp_path):
    a = sp.csr_matrix(np.array([[0, 2, 0], [0, 0, 1], [0, 0, 3]], dtype=np.float64))
    sp.save_npz(tmp_path / "g.npz", a)
    und = read_npz(tmp_path / "g.npz", weighted=True)
    assert und.to_scipy().toarray().tolist() == [[0, 2, 0], [2, 0, 1], [0, 1, 3]]  # max(A, A.T)
    dire = read_graph(tmp_path / "g.npz", directed=True)
    assert dire.data is None and dire.n_edges == 3 and not dire.has_edge(1, 0)
    np.savez(tmp_path / "pecan.npz", indptr=a.indptr, indices=a.indices, data=a.data, IDs=np.array(["x", "y", "z"]))
    assert read_graph(tmp_path / "pecan.npz", directed=True).node_ids == ["x", "y", "z"]
    scipy.io.savemat(tmp_path / "g.mat", {"network": a, "group": sp.eye(3)})
    gm = read_mat(tmp_path / "g.mat")
    assert gm.n_edges == 3 and gm.n_self_loops == 1
    with pytest.raises(ParvecError, match="no variable 'adj'"):
        read_graph(tmp_path / "g.mat", variable="adj")
    np.savez(tmp_path / "junk.npz", x=np.zeros(2))
    with pytest.raises(ParvecError, match="junk.npz"):
        read_graph(tmp_path / "junk.npz")


def test_from_edges_rejects_out_of_range():
    with pytest.raises(ValueError):
        Graph.from_edges([0], [3], n_nodes=2)


def test_real_graphs_match_published_counts(shared_data):
    graphs = shared_data / "graphs"
    k = read_graph(graphs / "karate/karate.edgelist")
    assert (k.n_nodes, k.n_edges) == (34, 78)
    ppi = read_graph(graphs / "ppi/ppi.edgelist", implicit_ids=True)
    assert (ppi.n_nodes, ppi.n_edges, ppi.n_self_loops, ppi.nnz) == (3890, 38739, 894, 76584)
    mat = read_graph(graphs / "ppi/Homo_sapiens.mat")
    assert np.array_equal(mat.indptr, ppi.indptr) and np.array_equal(mat.indices, ppi.indices)


def test_blogcatalog_reads_the_same_with_both_readers(shared_data):
    # How fast: benchmarks/bench_graphs.py --read-only (against networkx and PecanPy); here, what is read.
    path = shared_data / "graphs/blogcatalog/blogcatalog.edgelist"
    graphs = [read_graph(path, implicit_ids=implicit) for implicit in (True, False)]
    for g in graphs:
        assert (g.n_nodes, g.n_edges) == (10312, 333983)
    edges = []
    for g in graphs:  # the same edges by node ID, whatever the numbering
        rows = np.repeat(np.arange(g.n_nodes), np.diff(g.indptr))
        ids = np.array(g.node_ids, dtype=object)
        edges.append(sorted(zip(ids[rows].tolist(), ids[g.indices].tolist(), strict=True)))
    assert edges[0] == edges[1]


@pytest.mark.parametrize("weighted", [False, True])
def test_integer_reader_equals_string_reader_across_blocks(tmp_path, monkeypatch, weighted):
    from parvec.graph import graph_io

    rng = np.random.default_rng(5)
    edges = rng.integers(-20, 10**12, size=(400, 2))
    edges[::7] = edges[::7] % 30  # repeats, so first-seen numbering matters
    lines = [f"{a}\t{b} {c:.3f}\n" for (a, b), c in zip(edges.tolist(), (rng.random(400) + 0.1).tolist(), strict=True)]
    lines[48:64] = ["# a comment\n"] * 16  # a block of only comments
    p = write(tmp_path, "".join(lines))
    monkeypatch.setattr(graph_io, "BLOCK_LINES", 16)
    fast = graph_io._fast_integer(p, weighted, None)
    slow = graph_io._slow_parse(p, weighted, None, False)
    assert fast is not None
    assert fast[3] == slow[3]  # the same IDs, numbered in first-seen order
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    if weighted:
        np.testing.assert_array_equal(fast[2], slow[2])


@pytest.mark.parametrize("text", ["007 1\n1 7\n", "+7 1\n", "-0 1\n", "1.0 2\n", "1 2\n3 4 5 6\n"])
def test_integer_reader_leaves_non_canonical_ids_to_the_string_reader(tmp_path, text):
    from parvec.graph import graph_io

    p = write(tmp_path, text)
    assert graph_io._fast_integer(p, False, None) is None
    if text.startswith("007"):
        assert read_edgelist(p).node_ids == ["007", "1", "7"]
