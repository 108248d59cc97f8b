"""Property-based fuzzing of the graph readers users feed files to: edge lists under every option
of :func:`parvec.graph.graph_io.read_edgelist` (weighted, directed, delimiter, implicit ids) and the label
files of :func:`parvec.graph.evaluation.read_labels`.

Outcomes allowed: the graph (or labels) a simple line-by-line reference gives -- the rules of graph_io's
docstring: ``#`` comments, blank lines skipped, 2 or 3 columns, last weight wins, ``u v`` = ``v u`` when
undirected, self-loops once, a final weight of 0 drops the edge -- or a :class:`ParvecError`, and then only
where the reference refuses the file too.  Settings: tests/fuzzing.py (``PARVEC_FUZZ_EXAMPLES``).
"""

from __future__ import annotations

import math

import numpy as np
from fuzzing import fuzz_settings, no_hang
from hypothesis import given
from hypothesis import strategies as st

from parvec.errors import ParvecError
from parvec.graph.evaluation import Labels, read_labels
from parvec.graph.graph_io import read_edgelist

IDS = st.one_of(st.integers(0, 12).map(str), st.sampled_from(["a", "b", "node_1", "07", "-3", "1e3", "é", "x.y"]))
WEIGHTS = st.one_of(
    st.sampled_from(["1", "0", "2.5", "-1", "nan", "inf", "1e400", "0.0", "1e-30", "3", "abc", "1_0", "٣"]),
    st.floats(0, 100, allow_nan=False).map(repr),
)
JUNK = st.sampled_from(["", " ", "#", "# comment", "\t", "\r", "\x00", "\ufeff", "a b c d", "\xa0", "\x0b"])


@st.composite
def edge_files(draw):
    delimiter = draw(st.sampled_from([None, None, ",", "\t", ";", " "]))
    sep = delimiter or draw(st.sampled_from([" ", "\t", "  "]))
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.integers(0, 9))
        if kind < 7:
            cols = [draw(IDS), draw(IDS)] + ([draw(WEIGHTS)] if draw(st.booleans()) else [])
            line = sep.join(cols)
            if draw(st.integers(0, 5)) == 0:
                line += draw(st.sampled_from([" # c", "#x", " ", "\t"]))
        else:
            line = draw(JUNK)
        lines.append(line)
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = newline.join(lines) + (newline if draw(st.booleans()) else "")
    data = text.encode("utf-8")
    if draw(st.integers(0, 8)) == 0:
        data = draw(st.sampled_from([b"\xef\xbb\xbf", b"\xff", b"\x00"])) + data
    return data, delimiter


def reference_edges(data: bytes, weighted: bool, directed: bool, delimiter: str | None):
    """{(u, v): weight} (undirected: u <= v by first appearance) and the node ids, or None if refused."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    edges: dict[tuple[str, str], float] = {}
    nodes: dict[str, None] = {}
    for raw in text.split("\n"):
        line = raw.split("#", 1)[0]
        if not line.strip():
            continue
        parts = [t.strip() for t in line.split(delimiter)] if delimiter else line.split()
        if len(parts) not in (2, 3) or not all(parts) or (weighted and len(parts) != 3):
            return None
        w = 1.0
        if len(parts) == 3:
            try:
                w = float(parts[2])
            except ValueError:
                return None
            if weighted and (not math.isfinite(w) or w < 0):
                return None
        u, v = parts[0], parts[1]
        nodes.setdefault(u)
        nodes.setdefault(v)
        key = (u, v) if directed or list(nodes).index(u) <= list(nodes).index(v) else (v, u)
        edges[key] = w if weighted else 1.0
    if not nodes:
        return None
    return {k: w for k, w in edges.items() if w != 0}, list(nodes)


def graph_edges(g, directed: bool) -> dict[tuple[str, str], float]:
    ids = g.node_ids
    order = {n: i for i, n in enumerate(ids)}
    out: dict[tuple[str, str], float] = {}
    for i in range(g.n_nodes):
        for k in range(g.indptr[i], g.indptr[i + 1]):
            u, v = ids[i], ids[g.indices[k]]
            if not directed and order[u] > order[v]:
                continue
            out[(u, v)] = float(g.data[k]) if g.data is not None else 1.0
    return out


def check_csr(g) -> None:
    assert g.indptr[0] == 0 and np.all(np.diff(g.indptr) >= 0) and g.indptr[-1] == len(g.indices)
    assert len(g.indices) == 0 or (g.indices.min() >= 0 and g.indices.max() < g.n_nodes)
    for i in range(g.n_nodes):  # neighbours sorted ascending, no duplicates
        row = g.indices[g.indptr[i] : g.indptr[i + 1]]
        assert np.all(np.diff(row) > 0)
    if g.data is not None:
        assert np.all(np.isfinite(g.data)) and np.all(g.data > 0)
    assert len(g.node_ids) == g.n_nodes


@fuzz_settings(150)
@given(file=edge_files(), weighted=st.booleans(), directed=st.booleans())
def test_edge_lists_read_like_the_reference(tmp_path_factory, file, weighted, directed):
    data, delimiter = file
    p = tmp_path_factory.mktemp("g") / "g.edgelist"
    p.write_bytes(data)
    try:
        with no_hang():
            g = read_edgelist(p, weighted=weighted, directed=directed, delimiter=delimiter)
    except ParvecError as exc:
        assert reference_edges(data, weighted, directed, delimiter) is None, f"refused a good file: {exc}"
        return
    ref = reference_edges(data, weighted, directed, delimiter)
    assert ref is not None, "read a file the reference refuses"
    edges, nodes = ref
    check_csr(g)
    assert g.node_ids == nodes
    got = graph_edges(g, directed)
    assert got.keys() == edges.keys()
    for k, w in edges.items():
        assert got[k] == np.float32(w), (k, got[k], w)


@fuzz_settings(100)
@given(file=edge_files(), weighted=st.booleans(), directed=st.booleans())
def test_implicit_ids_read_like_the_reference_or_refuse(tmp_path_factory, file, weighted, directed):
    data, delimiter = file
    p = tmp_path_factory.mktemp("g") / "g.edgelist"
    p.write_bytes(data)
    try:
        with no_hang():
            g = read_edgelist(p, weighted=weighted, directed=directed, delimiter=delimiter, implicit_ids=True)
    except ParvecError:
        return
    ref = reference_edges(data, weighted, directed, delimiter)
    assert ref is not None, "read a file the reference refuses"
    edges, nodes = ref
    assert all(n.isdigit() and str(int(n)) == n for n in nodes) or all(
        n.lstrip("+").isdigit() for n in nodes
    ), nodes
    check_csr(g)
    assert g.n_nodes == max(int(n) for n in nodes) + 1
    got = {(str(int(u)), str(int(v))): w for (u, v), w in graph_edges(g, True).items()}
    if not directed:  # compare as unordered pairs
        got = {tuple(sorted(k)): w for k, w in got.items()}
        edges = {tuple(sorted((str(int(u)), str(int(v))))): w for (u, v), w in edges.items()}
    else:
        edges = {(str(int(u)), str(int(v))): w for (u, v), w in edges.items()}
    assert got.keys() == edges.keys()


# ---------------------------------------------------------------------- labels
@st.composite
def label_files(draw):
    delimiter = draw(st.sampled_from([None, None, ",", "\t"]))
    sep = delimiter or " "
    lines = []
    for _ in range(draw(st.integers(0, 10))):
        if draw(st.integers(0, 6)) == 0:
            lines.append(draw(JUNK))
        else:
            lines.append(sep.join([draw(IDS)] + draw(st.lists(IDS, min_size=0, max_size=3))))
    text = draw(st.sampled_from(["\n", "\r\n"])).join(lines)
    data = text.encode()
    if draw(st.integers(0, 8)) == 0:
        data = draw(st.sampled_from([b"\xef\xbb\xbf", b"\xff", b"\x00"])) + data
    return data, delimiter


def reference_labels(data: bytes, delimiter: str | None):
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    pairs = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = raw.split("#", 1)[0]
        if not line.strip():
            continue
        parts = [t.strip() for t in line.split(delimiter)] if delimiter else line.split()
        parts = [t for t in parts if t]
        if len(parts) < 2:
            return None
        pairs += [(parts[0], lab) for lab in parts[1:]]
    return Labels.from_pairs(pairs) if pairs else None


@fuzz_settings(150)
@given(file=label_files())
def test_label_files_read_like_the_reference(tmp_path_factory, file):
    data, delimiter = file
    p = tmp_path_factory.mktemp("l") / "x.labels"
    p.write_bytes(data)
    try:
        with no_hang():
            got = read_labels(p, delimiter=delimiter)
    except ParvecError as exc:
        assert reference_labels(data, delimiter) is None, f"refused a good file: {exc}"
        return
    ref = reference_labels(data, delimiter)
    assert ref is not None, "read a file the reference refuses"
    assert got.node_ids == ref.node_ids and got.label_names == ref.label_names
    assert (got.matrix != ref.matrix).nnz == 0


# ---------------------------------------------------------------------- regressions (crashes fuzzing found)
def test_regression_a_blank_weighted_file_with_a_delimiter_is_a_parvec_error(tmp_path):
    # Found by test_edge_lists_read_like_the_reference: b"\n" with delimiter="," and weighted=True raised
    # IndexError (arr[:, 2] of numpy's empty (0, 2) block) in the string fast path.
    p = tmp_path / "g.edgelist"
    p.write_bytes(b"\n")
    for implicit in (False, True):
        try:
            read_edgelist(p, weighted=True, delimiter=",", implicit_ids=implicit)
        except ParvecError as exc:
            assert "no edges" in str(exc)
        else:
            raise AssertionError("an empty edge list was read")
    p.write_bytes(b"# only\n\n0,1,2.5\n")  # blank/comment lines before the edges: read, not refused
    assert read_edgelist(p, weighted=True, delimiter=",").n_edges == 1


def test_regression_implicit_ids_refuse_a_float_id(tmp_path):
    # Found by test_implicit_ids_read_like_the_reference_or_refuse: "0 1e3" was read as an edge to node
    # 1000 (numpy parsed ids as floats); ids must be integers, and the error names the line.
    p = tmp_path / "g.edgelist"
    for text in ("0 1e3\n", "0 1\n2.0 1\n"):
        p.write_text(text)
        try:
            read_edgelist(p, implicit_ids=True)
        except ParvecError as exc:
            assert "is not an integer" in str(exc) and ":" in str(exc)
        else:
            raise AssertionError(f"{text!r} was read with implicit ids")
