"""Graphs as CSR arrays, and the readers that build them (edge lists, ``.npz``, ``.mat``).

A :class:`Graph` is three numpy arrays, the layout the numba walk kernels read directly:
``indptr`` (int64, n+1), ``indices`` (int32, the out-neighbours of node ``i`` are
``indices[indptr[i]:indptr[i+1]]``, **sorted ascending** so membership is a binary search) and
``data`` (float32 edge weights, or ``None`` for an unweighted graph), plus ``node_ids``, the original
node IDs (strings) in dense-index order, and ``source``, the file it was read from (for messages).

How edge lists are read (decisions, matching node2vec's networkx reader and PecanPy):

* One edge per line: ``u v`` or ``u v w``, split on whitespace or on ``delimiter``; ``#`` starts a
  comment (so IDs cannot contain ``#``); blank lines are skipped. Weighted reading requires the third
  column; unweighted reading ignores it, with a warning counting the lines that have one, but it must
  still be a number (``a b c`` is more likely an adjacency-list line than an edge, and is refused).
* Node IDs are arbitrary strings, mapped once to dense ints in order of first appearance.  Files whose
  IDs are all integers in canonical form (SNAP style) are parsed by numpy as int64 in blocks of lines,
  with no Python object per edge (BlogCatalog: 0.4 s, 8 MB kept after reading); other files go through
  numpy's string parser block by block, then a dict.
  ``implicit_ids=True`` is the fast path for files already using ``0..n-1``: the file is parsed by
  numpy alone and the node count is ``max id + 1`` (ids never mentioned become isolated nodes).
* Undirected graphs store every edge in both directions.
* **Duplicate edges are merged**: one CSR entry per (u, v); with weights, the *last* weight given wins
  (networkx and PecanPy overwrite the same way). In an undirected graph ``u v`` and ``v u`` are the
  same edge.
* **Self-loops are kept**, as one entry ``u -> u`` (not two, even when undirected), as networkx and
  PecanPy do; a walk may stay on ``u`` for a step with probability proportional to that weight.
* Weights must be finite and non-negative; an edge whose final weight is 0 is dropped (no edge), as
  PecanPy drops non-positive weights. Its nodes still exist.
* Every problem is a :class:`parvec.errors.ParvecError` naming the file and line, e.g.
  ``graph.txt:12: expected 'u v' or 'u v w', got 'a'`` (and the token, for a bad weight or third column).
  The graph remembers the file it came from (``Graph.source``), so later errors can name it too.

Matrices (``.npz`` written by ``scipy.sparse.save_npz`` or PecanPy's CSR ``.npz`` with ``IDs``;
``.mat`` with the adjacency matrix in variable ``network``, as BlogCatalog and PPI ship) are read as
they are, with explicit zeros removed; an undirected read symmetrises with ``max(A, A.T)``.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

import numpy as np

from parvec.errors import ParvecError
from parvec.resources import release_freed_memory

if TYPE_CHECKING:
    import scipy.sparse

__all__ = ["Graph", "read_graph", "read_edgelist", "read_npz", "read_mat"]

log = logging.getLogger(__name__)


@dataclass
class Graph:
    """A graph in CSR form with its original node IDs.

    Example:
        >>> g = Graph.from_edges([0, 1], [1, 2], n_nodes=3)
        >>> g.n_nodes, g.n_edges, g.neighbors(1).tolist()
        (3, 2, [0, 2])
    """

    indptr: np.ndarray  # int64[n + 1]
    indices: np.ndarray  # int32[nnz], sorted within each row
    data: np.ndarray | None  # float32[nnz] or None when unweighted
    node_ids: list[str]
    directed: bool = False
    _index: dict[str, int] | None = field(default=None, repr=False, compare=False)
    source: str | None = field(default=None, repr=False, compare=False)  # the file it was read from

    def where(self) -> str:
        """``"<source>: "`` for messages about this graph, or ``""`` when it was not read from a file.

        Example:
            >>> Graph.from_edges([0], [1], n_nodes=2).where()
            ''
        """
        return f"{self.source}: " if self.source else ""

    def n_other_edges(self) -> int:
        """Number of edges joining two different nodes (:attr:`n_edges` without the self-loops).

        Example:
            >>> Graph.from_edges([0, 1], [0, 2], n_nodes=3).n_other_edges()
            1
        """
        return self.n_edges - self.n_self_loops

    def __post_init__(self) -> None:
        self.indptr = np.ascontiguousarray(self.indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(self.indices, dtype=np.int32)
        if self.data is not None:
            self.data = np.ascontiguousarray(self.data, dtype=np.float32)
            if len(self.data) != len(self.indices):
                raise ValueError("data and indices differ in length")
        if len(self.indptr) != len(self.node_ids) + 1:
            raise ValueError("indptr must have n_nodes + 1 entries")

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        """Number of nodes (isolated ones included)."""
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        """Number of stored (directed) CSR entries."""
        return int(self.indptr[-1])

    @property
    def n_self_loops(self) -> int:
        """Number of self-loops ``u -> u``."""
        rows = np.repeat(np.arange(self.n_nodes, dtype=np.int64), np.diff(self.indptr))
        return int(np.count_nonzero(rows == self.indices))

    @property
    def n_edges(self) -> int:
        """Number of edges: CSR entries if directed, else each undirected edge counted once."""
        if self.directed:
            return self.nnz
        loops = self.n_self_loops
        return (self.nnz - loops) // 2 + loops

    @property
    def weighted(self) -> bool:
        """Whether edges carry weights."""
        return self.data is not None

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the graph as walks see it: direction, CSR arrays, weights and node IDs.  A
        checkpoint of a graph run records it, and resuming refuses a graph whose fingerprint differs.

        Example:
            >>> a, b = Graph.from_edges([0], [1], n_nodes=2), Graph.from_edges([0], [1], n_nodes=3)
            >>> a.fingerprint() == Graph.from_edges([0], [1], n_nodes=2).fingerprint() != b.fingerprint()
            True
        """
        import hashlib
        import json

        h = hashlib.sha256(b"parvec-graph-1")
        h.update(b"directed" if self.directed else b"undirected")
        for a in (self.indptr, self.indices):
            h.update(str(len(a)).encode())
            h.update(np.ascontiguousarray(a).data.cast("B"))
        h.update(b"unweighted" if self.data is None else np.ascontiguousarray(self.data).data.cast("B"))
        h.update(json.dumps(self.node_ids, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    @property
    def index(self) -> dict[str, int]:
        """Node ID -> dense index (built on first use)."""
        if self._index is None:
            self._index = {node: i for i, node in enumerate(self.node_ids)}
        return self._index

    def degrees(self) -> np.ndarray:
        """Out-degree of every node (int64).

        Example:
            >>> Graph.from_edges([0], [1], n_nodes=3).degrees().tolist()
            [1, 1, 0]
        """
        return np.diff(self.indptr)

    def neighbors(self, node: int) -> np.ndarray:
        """Sorted out-neighbours of dense node index ``node``.

        Example:
            >>> Graph.from_edges([2, 2], [1, 0], n_nodes=3, directed=True).neighbors(2).tolist()
            [0, 1]
        """
        return self.indices[self.indptr[node] : self.indptr[node + 1]]

    def weights(self, node: int) -> np.ndarray:
        """Weights of the out-edges of ``node`` (ones when unweighted), aligned with :meth:`neighbors`.

        Example:
            >>> Graph.from_edges([0], [1], [2.5], n_nodes=2).weights(1).tolist()
            [2.5]
        """
        lo, hi = self.indptr[node], self.indptr[node + 1]
        if self.data is None:
            return np.ones(hi - lo, dtype=np.float32)
        return self.data[lo:hi]

    def has_edge(self, u: int, v: int) -> bool:
        """Whether the (directed) CSR entry ``u -> v`` exists.

        Example:
            >>> Graph.from_edges([0], [1], n_nodes=2, directed=True).has_edge(1, 0)
            False
        """
        row = self.neighbors(u)
        k = int(np.searchsorted(row, v))
        return k < len(row) and int(row[k]) == v

    def edge_list(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Edges as arrays ``(src, dst, weight)``; undirected edges once each, with ``src <= dst``.

        Example:
            >>> s, d, w = Graph.from_edges([1, 0], [2, 1], n_nodes=3).edge_list()
            >>> s.tolist(), d.tolist(), w
            ([0, 1], [1, 2], None)
        """
        src = np.repeat(np.arange(self.n_nodes, dtype=np.int64), np.diff(self.indptr))
        dst = self.indices.astype(np.int64)
        keep = slice(None) if self.directed else src <= dst
        w = None if self.data is None else self.data[keep]
        return src[keep], dst[keep], w

    def to_scipy(self) -> scipy.sparse.csr_matrix:
        """The adjacency matrix as a ``scipy.sparse.csr_matrix`` (ones when unweighted).

        Example:
            >>> Graph.from_edges([0], [1], n_nodes=2).to_scipy().toarray().tolist()
            [[0.0, 1.0], [1.0, 0.0]]
        """
        import scipy.sparse as sp

        data = np.ones(self.nnz, dtype=np.float32) if self.data is None else self.data
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.n_nodes, self.n_nodes))

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_edges(
        cls,
        src: np.ndarray | list[int],
        dst: np.ndarray | list[int],
        weights: np.ndarray | list[float] | None = None,
        *,
        n_nodes: int | None = None,
        node_ids: list[str] | None = None,
        directed: bool = False,
    ) -> Graph:
        """Build a graph from dense-index edge arrays (duplicates merged, last weight wins).

        Undirected graphs get both directions; self-loops are stored once; edges whose final weight
        is 0 are dropped. ``node_ids`` defaults to ``"0".."n-1"``.

        Example:
            >>> g = Graph.from_edges([0, 1, 0], [1, 0, 0], [1.0, 3.0, 2.0], n_nodes=2)
            >>> g.indices.tolist(), g.data.tolist()
            ([0, 1, 0], [2.0, 3.0, 3.0])
        """
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        if len(src) != len(dst):
            raise ValueError("src and dst differ in length")
        w = None if weights is None else np.asarray(weights, dtype=np.float64).ravel()
        if w is not None and len(w) != len(src):
            raise ValueError("weights and src differ in length")
        if n_nodes is None:
            n_nodes = len(node_ids) if node_ids is not None else (int(max(src.max(), dst.max())) + 1 if len(src) else 0)
        if node_ids is None:
            node_ids = [str(i) for i in range(n_nodes)]
        if len(node_ids) != n_nodes:
            raise ValueError("node_ids must have n_nodes entries")
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n_nodes):
            raise ValueError("edge endpoint out of range")
        if n_nodes >= 2**31:
            raise ParvecError(f"graph has {n_nodes} nodes; at most 2**31 - 1 are supported")
        indptr, indices, data = _build_csr(src, dst, w, n_nodes, directed)
        return cls(indptr, indices, data, list(node_ids), directed)


def _build_csr(
    src: np.ndarray, dst: np.ndarray, w: np.ndarray | None, n: int, directed: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sort, merge duplicates (last wins) and lay out as CSR, all in numpy."""
    if w is None:
        # Unweighted: one int64 key per directed entry, sorted in place (the least memory).
        key = src * n + dst
        if not directed:
            key = np.concatenate([key, dst * n + src])
        key.sort()
        uniq = key[np.concatenate([[True], key[1:] != key[:-1]])] if len(key) else key
        del key
        rows = uniq // n if n else uniq
        indices = (uniq - rows * n).astype(np.int32)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return indptr, indices, None
    if not directed:
        # Interleave (u, v) and (v, u) per input edge so that position order == line order for both.
        src, dst = np.stack([src, dst], axis=1).ravel(), np.stack([dst, src], axis=1).ravel()
        if w is not None:
            w = np.repeat(w, 2)
    key = src * n + dst
    # Last occurrence of each key wins: np.unique on the reversed array returns first hits there.
    uniq, first_in_rev = np.unique(key[::-1], return_index=True)
    pos = len(key) - 1 - first_in_rev
    data = None
    if w is not None:
        data = w[pos]
        nonzero = data != 0
        if not nonzero.all():
            uniq, data = uniq[nonzero], data[nonzero]
        data = data.astype(np.float32)
    rows = uniq // n if n else uniq
    indices = (uniq - rows * n).astype(np.int32)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, indices, data


# ---------------------------------------------------------------------------------------------
# Readers
# ---------------------------------------------------------------------------------------------


def read_graph(
    path: str | os.PathLike[str],
    *,
    weighted: bool = False,
    directed: bool = False,
    delimiter: str | None = None,
    implicit_ids: bool = False,
    variable: str = "network",
) -> Graph:
    """Read a graph, choosing the reader by extension: ``.npz``, ``.mat``, else an edge list.

    Example:
        >>> g = read_graph("karate.edgelist")  # doctest: +SKIP
        >>> g.n_nodes, g.n_edges  # doctest: +SKIP
        (34, 78)
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".npz":
        return read_npz(p, weighted=weighted, directed=directed)
    if suffix == ".mat":
        return read_mat(p, weighted=weighted, directed=directed, variable=variable)
    return read_edgelist(p, weighted=weighted, directed=directed, delimiter=delimiter, implicit_ids=implicit_ids)


def _check_file(p: Path) -> None:
    if not p.exists():
        raise ParvecError(f"{p}: no such file")
    if p.is_dir():
        raise ParvecError(f"{p}: is a directory, expected a graph file")


def read_edgelist(
    path: str | os.PathLike[str],
    *,
    weighted: bool = False,
    directed: bool = False,
    delimiter: str | None = None,
    implicit_ids: bool = False,
) -> Graph:
    """Read an edge list (``u v`` or ``u v w`` per line, ``#`` comments) into a :class:`Graph`.

    ``delimiter=None`` splits on any whitespace. See the module docstring for duplicates,
    self-loops and weights. An unweighted read logs a warning when lines carry a (then ignored) weight.

    Example:
        >>> g = read_edgelist("friends.txt", weighted=True)  # doctest: +SKIP
        >>> g.node_ids[:2]  # doctest: +SKIP
        ['alice', 'bob']
    """
    p = Path(path)
    _check_file(p)
    if delimiter == "":
        raise ParvecError("delimiter must not be empty")
    if implicit_ids:
        result = _fast_implicit(p, weighted, delimiter)
    else:
        result = _fast_integer(p, weighted, delimiter)
        if result is None:
            result = _fast_general(p, weighted, delimiter)
    if result is None:
        # numpy refused the file: the line-by-line reader finds (and names) the bad line,
        # or reads a file numpy cannot (e.g. an unweighted list mixing 2 and 3 columns).
        result = _slow_parse(p, weighted, delimiter, implicit_ids)
    src, dst, w, node_ids, n_third = result
    del result
    if n_third and not weighted:
        log.warning(
            "%s: %d of %d edge lines have a weight column, ignored by an unweighted read "
            "(read with weighted=True, --weighted, to walk by the weights)", p, n_third, len(src)
        )
    graph = Graph.from_edges(src, dst, w, node_ids=node_ids, directed=directed)
    graph.source = str(p)
    del src, dst, w
    release_freed_memory()
    return graph


# (src, dst, weights or None, node IDs, number of lines with a third column)
_Parsed = tuple[np.ndarray, np.ndarray, np.ndarray | None, list[str], int]

# Lines parsed per numpy call: the string objects of one block are the reader's only per-edge Python
# objects (~10 MB), so reading costs O(nodes + edges x 16 bytes), not O(edges) string objects.
BLOCK_LINES = 1 << 16


def _loadtxt(lines: list[str], dtype: type | np.dtype, delimiter: str | None, usecols: tuple[int, ...] | None = None
             ) -> np.ndarray | None:
    """One block through numpy's C parser; an all-comment block is (0, 2); None if numpy refuses it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "input contained no data" is a warning
            return np.loadtxt(lines, dtype=dtype, comments="#", delimiter=delimiter, ndmin=2, usecols=usecols)
    except UserWarning as exc:
        return np.empty((0, 2), dtype=dtype) if "no data" in str(exc) else None
    except ValueError:
        return None


def _blocks_text(p: Path) -> Iterator[list[str] | None]:
    """The file as blocks of ``BLOCK_LINES`` lines (None on invalid UTF-8)."""
    try:
        with open(p, encoding="utf-8-sig") as f:  # a leading BOM is not part of the first ID
            while lines := list(itertools.islice(f, BLOCK_LINES)):
                yield lines
    except UnicodeDecodeError:
        yield None


@overload
def _blocks(p: Path, dtype: type, delimiter: str | None) -> Iterator[np.ndarray | None]: ...


@overload
def _blocks(p: Path, dtype: type, delimiter: str | None,
            with_lines: Literal[True]) -> Iterator[tuple[list[str] | None, np.ndarray | None]]: ...


def _blocks(p: Path, dtype: type, delimiter: str | None,
            with_lines: bool = False) -> Iterator[np.ndarray | None | tuple[list[str] | None, np.ndarray | None]]:
    """Yield each block's parsed array (with its lines if asked); None (and stop) when numpy refuses one or
    columns change."""
    columns = 0
    for lines in _blocks_text(p):
        arr = None if lines is None else _loadtxt(lines, dtype, delimiter)
        if arr is not None and arr.shape[0]:
            if arr.shape[1] not in (2, 3) or columns not in (0, arr.shape[1]):
                arr = None
            else:
                columns = arr.shape[1]
        yield (lines, arr) if with_lines else arr
        if arr is None:
            return


class _Column:
    """A 1-D array grown by doubling, into which each block's values are copied.

    Instead of a list of per-block arrays joined at the end: the result is a view, with no final copy
    of all the edges.
    """

    def __init__(self, dtype: type, capacity: int = 1 << 16) -> None:
        self.buf: np.ndarray = np.empty(capacity, dtype=dtype)
        self.n = 0

    def extend(self, values: np.ndarray) -> None:
        m = len(values)
        if self.n + m > len(self.buf):
            grown = np.empty(max(2 * len(self.buf), self.n + m), dtype=self.buf.dtype)
            grown[: self.n] = self.buf[: self.n]
            self.buf = grown
        self.buf[self.n : self.n + m] = values
        self.n += m

    def array(self) -> np.ndarray:
        return self.buf[: self.n]


def _weights_ok(w: np.ndarray) -> bool:
    return bool(np.isfinite(w).all() and (w >= 0).all())


_FLOAT_CHARS = re.compile(r"[.eEnNiI]")


def _fast_implicit(p: Path, weighted: bool, delimiter: str | None) -> _Parsed | None:
    """All-numpy parse, block by block, for files whose IDs are already ``0..n-1``."""
    src, dst, ws = _Column(np.int32), _Column(np.int32), _Column(np.float64)
    columns = 0
    for lines, arr in _blocks(p, np.float64, delimiter, with_lines=True):
        if arr is None or lines is None or (weighted and arr.shape[0] and arr.shape[1] != 3):
            return None
        if not arr.shape[0]:  # a block of blank or comment lines (fuzzing found arr[:, 2] of a (0, 2) block)
            continue
        columns = arr.shape[1]
        # An id that is not an integer ("1e3", "2.0") parses as a float too: check the ids as integers when
        # the block holds a character of such a number (found by fuzzing); the line reader names the line.
        if _FLOAT_CHARS.search("".join(lines)) and _loadtxt(lines, np.int64, delimiter, usecols=(0, 1)) is None:
            return None
        ids = arr[:, :2]
        if not (np.isfinite(ids).all() and (ids >= 0).all() and (ids == np.floor(ids)).all()
                and (ids < 2**31).all()):  # fmt: skip
            return None
        src.extend(ids[:, 0])
        dst.extend(ids[:, 1])
        if weighted:
            if not _weights_ok(arr[:, 2]):
                return None
            ws.extend(arr[:, 2])
    if not src.n:
        return None
    s, d = src.array(), dst.array()
    n = int(max(s.max(), d.max())) + 1
    return s, d, (ws.array() if weighted else None), [str(i) for i in range(n)], (len(s) if columns == 3 else 0)


def _fast_integer(p: Path, weighted: bool, delimiter: str | None) -> _Parsed | None:
    """Files whose IDs are integers in canonical form (SNAP style): no Python object per edge.

    IDs are parsed by numpy as int64, then numbered densely in order of first appearance, so the
    result equals the string reader's; an ID written non-canonically (``007``, ``+7``, ``-0``) would
    not survive ``str(int(...))`` and sends the file to the string reader.
    """
    sep = r"\s" + (re.escape(delimiter) if delimiter else "")
    odd = re.compile(rf"(?:^|[{sep}])(?:\+|-?0[0-9]|-0(?![0-9]))", re.M)
    three = np.dtype([("u", np.int64), ("v", np.int64), ("w", np.float64)])
    ids, ws = _Column(np.int64), _Column(np.float64)
    columns = 0
    for lines in _blocks_text(p):
        if lines is None or odd.search("".join(lines)):
            return None
        # Two integer columns (or three) parse as int64; weights, or an unweighted read of a file
        # with (ignored) float weights, as (u, v, w) records.
        arr = None if weighted or columns == 3 else _loadtxt(lines, np.int64, delimiter)
        if arr is None:
            arr = _loadtxt(lines, three, delimiter)
            if arr is None:
                return None
            arr = arr.ravel()
            if not arr.size:
                continue
            if columns == 2:
                return None
            columns = 3
            ids.extend(np.stack([arr["u"], arr["v"]], axis=1).ravel())
            if weighted:
                if not _weights_ok(arr["w"]):
                    return None
                ws.extend(arr["w"])
        elif arr.size:
            if arr.shape[1] not in (2, 3) or columns not in (0, arr.shape[1]):
                return None
            columns = arr.shape[1]
            ids.extend(arr[:, :2].ravel())
    if not ids.n:
        return None
    flat = ids.array()
    del ids
    uniq, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    del flat
    order = np.argsort(first, kind="stable")  # first-seen order, as the string reader numbers IDs
    rank = np.empty(len(uniq), dtype=np.int32)
    rank[order] = np.arange(len(uniq), dtype=np.int32)
    codes = rank[inverse]
    node_ids = [str(v) for v in uniq[order].tolist()]
    n_third = len(codes) // 2 if columns == 3 else 0
    return codes[0::2], codes[1::2], (ws.array() if weighted else None), node_ids, n_third


def _fast_general(p: Path, weighted: bool, delimiter: str | None) -> _Parsed | None:
    """numpy splits each block (in C); a dict maps string IDs to ints in first-seen order."""
    lookup: dict[str, int] = {}
    codes, ws = _Column(np.int32), _Column(np.float64)
    columns = 0
    for arr in _blocks(p, object, delimiter):
        if arr is None or (weighted and arr.shape[0] and arr.shape[1] != 3):
            return None
        if not arr.shape[0]:  # a block of blank or comment lines (fuzzing found arr[:, 2] of a (0, 2) block)
            continue
        columns = arr.shape[1]
        if not weighted and columns == 3:  # an ignored weight must still be a number (the slow reader names it)
            try:
                arr[:, 2].astype(np.float64)
            except ValueError:
                return None
        ends = arr[:, :2].ravel().tolist()
        if delimiter is not None:
            ends = [e.strip() for e in ends]
            if not all(ends):
                return None
        for e in ends:  # new IDs in first-seen order (dict.setdefault is one C call per token)
            lookup.setdefault(e, len(lookup))
        codes.extend(np.fromiter(map(lookup.__getitem__, ends), dtype=np.int32, count=len(ends)))
        if weighted:
            try:
                w = arr[:, 2].astype(np.float64)
            except ValueError:
                return None
            if not _weights_ok(w):
                return None
            ws.extend(w)
    if not codes.n:
        return None
    c = codes.array()
    return c[0::2], c[1::2], (ws.array() if weighted else None), list(lookup), (len(c) // 2 if columns == 3 else 0)


def _slow_parse(p: Path, weighted: bool, delimiter: str | None, implicit_ids: bool) -> _Parsed:
    """Line-by-line reader: slower, but names the file and line of every problem."""
    lookup: dict[str, int] = {}
    src: list[int] = []
    dst: list[int] = []
    ws: list[float] = []
    max_id = -1
    n_third = 0
    columns = f" (columns separated by {delimiter!r})" if delimiter else ""
    for line_no, raw, parts in text_fields(p, delimiter):
        shown = raw.rstrip("\r\n")
        if len(parts) not in (2, 3) or not all(parts):
            raise ParvecError(f"{p}:{line_no}: expected 'u v' or 'u v w', got {shown!r}{columns}")
        if weighted and len(parts) != 3:
            raise ParvecError(f"{p}:{line_no}: weighted graph needs 'u v w', got {shown!r}{columns}")
        if len(parts) == 3 and not weighted:
            try:  # ignored, but a weight all the same: 'a b c' is an adjacency-list line, not an edge
                float(parts[2])
            except ValueError:
                raise ParvecError(
                    f"{p}:{line_no}: third column {parts[2]!r} is not a number: expected 'u v' or 'u v w' "
                    f"(an unweighted read ignores w), got {shown!r}; an adjacency list ('u v1 v2 ...') "
                    "is not an edge list"
                ) from None
            n_third += 1
        if implicit_ids:
            ends = []
            for t in parts[:2]:
                try:
                    v = int(t)
                except ValueError:
                    raise ParvecError(
                        f"{p}:{line_no}: node id {t!r} is not an integer (implicit_ids expects 0..n-1)"
                    ) from None
                if v < 0 or v >= 2**31:
                    raise ParvecError(f"{p}:{line_no}: node id {v} out of range 0..2**31-1")
                ends.append(v)
            max_id = max(max_id, ends[0], ends[1])
        else:
            ends = [lookup.setdefault(t, len(lookup)) for t in parts[:2]]
        src.append(ends[0])
        dst.append(ends[1])
        if weighted:
            try:
                wt = float(parts[2])
            except ValueError:
                raise ParvecError(f"{p}:{line_no}: weight {parts[2]!r} is not a number") from None
            if not math.isfinite(wt) or wt < 0:
                raise ParvecError(f"{p}:{line_no}: weight must be finite and >= 0, got {parts[2]!r}")
            ws.append(wt)
    if not src:
        raise ParvecError(f"{p}: no edges (empty file or only comments)")
    node_ids = [str(i) for i in range(max_id + 1)] if implicit_ids else list(lookup)
    w = np.array(ws, dtype=np.float64) if weighted else None
    return np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), w, node_ids, n_third


def text_fields(path: str | os.PathLike[str], delimiter: str | None = None) -> Iterator[tuple[int, str, list[str]]]:
    """The fields of each line of a graph's text file (an edge list, a label file): ``(line number, the line as
    read, its fields)``, split on ``delimiter`` (each field stripped) or on whitespace; ``#`` starts a comment,
    blank lines are skipped, a leading BOM is not part of the first field.  A file that is not UTF-8 raises
    :func:`not_utf8_error`'s error, naming its line.

    Example:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        ...     _ = f.write("# nodes\\na b\\n\\nc d 2 # weighted\\n")
        >>> [(n, fields) for n, _, fields in text_fields(f.name)]
        [(2, ['a', 'b']), (4, ['c', 'd', '2'])]
        >>> os.remove(f.name)
    """
    p = Path(path)
    try:
        with open(p, encoding="utf-8-sig") as f:
            for line_no, raw in enumerate(f, start=1):
                line = raw.split("#", 1)[0]
                if not line.strip():
                    continue
                yield line_no, raw, [t.strip() for t in line.split(delimiter)] if delimiter else line.split()
    except UnicodeDecodeError:
        raise not_utf8_error(p) from None


def not_utf8_error(path: str | os.PathLike[str]) -> ParvecError:
    """The error for a text file that is not UTF-8, naming its first undecodable line and byte.

    Text-mode reading decodes in blocks, so the ``UnicodeDecodeError`` it raises cannot say which line;
    this reads the file again, line by line as bytes (only on that error path).

    Example:
        >>> not_utf8_error("graph.txt")  # doctest: +SKIP
        ParvecError("graph.txt:3: not UTF-8 text (invalid start byte at byte 3 of the line)")
    """
    p = Path(path)
    with open(p, "rb") as f:
        for line_no, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return ParvecError(f"{p}:{line_no}: not UTF-8 text ({exc.reason} at byte {exc.start + 1} of the line)")
    return ParvecError(f"{p}: not UTF-8 text")


def _from_matrix(matrix: object, p: Path, weighted: bool, directed: bool, node_ids: list[str] | None) -> Graph:
    import scipy.sparse as sp

    a = sp.csr_matrix(matrix)
    if a.shape[0] != a.shape[1]:
        raise ParvecError(f"{p}: adjacency matrix must be square, got {a.shape[0]}x{a.shape[1]}")
    a.data = a.data.astype(np.float64)
    if a.nnz and not np.isfinite(a.data).all():
        raise ParvecError(f"{p}: adjacency matrix has non-finite entries")
    if a.nnz and (a.data < 0).any():
        raise ParvecError(f"{p}: adjacency matrix has negative entries (weights must be >= 0)")
    if not directed:
        a = a.maximum(a.T).tocsr()
    a.eliminate_zeros()
    a.sum_duplicates()
    a.sort_indices()
    n = a.shape[0]
    if node_ids is None:
        node_ids = [str(i) for i in range(n)]
    elif len(node_ids) != n:
        raise ParvecError(f"{p}: {len(node_ids)} node IDs for a {n}x{n} matrix")
    data = a.data.astype(np.float32) if weighted else None
    return Graph(a.indptr.astype(np.int64), a.indices.astype(np.int32), data, node_ids, directed, source=str(p))


def read_npz(path: str | os.PathLike[str], *, weighted: bool = False, directed: bool = False) -> Graph:
    """Read a ``scipy.sparse.save_npz`` matrix or a PecanPy CSR ``.npz`` (with optional ``IDs``).

    Example:
        >>> import scipy.sparse as sp
        >>> sp.save_npz("g.npz", sp.csr_matrix([[0, 1], [1, 0]]))  # doctest: +SKIP
        >>> read_npz("g.npz").n_edges  # doctest: +SKIP
        1
    """
    import scipy.sparse as sp

    p = Path(path)
    _check_file(p)
    try:
        raw = np.load(p, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ParvecError(f"{p}: not a readable .npz file ({exc})") from None
    with raw:
        keys = set(raw.files)
        node_ids = None
        if "format" in keys and "shape" in keys:
            matrix = sp.load_npz(p)
        elif {"indptr", "indices"} <= keys:
            indptr, indices = raw["indptr"].astype(np.int64), raw["indices"].astype(np.int64)
            n = len(indptr) - 1
            data = raw["data"] if "data" in keys else np.ones(len(indices))
            matrix = sp.csr_matrix((data, indices, indptr), shape=(n, n))
            if "IDs" in keys:
                node_ids = [str(x) for x in raw["IDs"]]
        else:
            raise ParvecError(f"{p}: .npz holds {sorted(keys)}; expected a scipy sparse matrix or CSR arrays")
    return _from_matrix(matrix, p, weighted, directed, node_ids)


def read_mat(
    path: str | os.PathLike[str], *, weighted: bool = False, directed: bool = False, variable: str = "network"
) -> Graph:
    """Read the adjacency matrix ``variable`` (default ``network``) of a MATLAB ``.mat`` file.

    Example:
        >>> read_mat("blogcatalog.mat").n_nodes  # doctest: +SKIP
        10312
    """
    import scipy.io

    p = Path(path)
    _check_file(p)
    try:
        mat = scipy.io.loadmat(p)
    except Exception as exc:  # scipy raises several types for corrupt files
        raise ParvecError(f"{p}: not a readable .mat file ({exc})") from None
    if variable not in mat:
        found = sorted(k for k in mat if not k.startswith("__"))
        raise ParvecError(f"{p}: no variable {variable!r} (found {found})")
    return _from_matrix(mat[variable], p, weighted, directed, None)
