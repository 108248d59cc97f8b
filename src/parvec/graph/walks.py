"""DeepWalk and node2vec random walks in numba, emitted straight into the encoded-corpus form.

Walks
    A walk has at most ``walk_length`` nodes, the start node included (as node2vec and DeepWalk
    count; PecanPy makes ``walk_length + 1``). It stops early at a node without out-edges, so a
    directed graph never walks against an edge. The first step, and every step when
    ``p == q == 1``, is first order: uniform over the out-neighbours, or proportional to the edge
    weight when the graph is weighted. Later steps from ``cur`` (coming from ``prev``) follow
    node2vec: ``P(x) ∝ w(cur, x) · α(x)`` with ``α = 1/p`` if ``x == prev``, ``1`` if ``x`` is an
    out-neighbour of ``prev`` and ``1/q`` otherwise. (On directed graphs "distance 1" means an edge
    ``prev -> x``, as in PecanPy; the reference node2vec tests ``x -> prev``. Undirected: the same.)

Second order without transition tables (KnightKing-style rejection sampling)
    Nothing per edge pair is precomputed: memory stays O(edges) (the CSR arrays plus one float64
    prefix sum of the weights when weighted). For each step the return edge is split off exactly:
    with ``R = w(cur, prev)/p`` and ``E = max(1, 1/q) · (W_cur − w(cur, prev))``, the walk returns to
    ``prev`` with probability ``R / (R + E)``; otherwise it proposes ``x ≠ prev`` from the first-order
    distribution without ``prev`` (O(1) unweighted, a binary search weighted) and accepts it with
    probability ``α(x) / max(1, 1/q)``, testing "``x`` is a neighbour of ``prev``" by binary search in
    ``prev``'s sorted row; a rejection restarts the step. Since the return mass is exact, small ``p``
    costs no rejections; the expected number of trials per step is at most ``max(q, 1/q)``.

Randomness and parallelism
    Every walk has its own xorshift64* stream seeded from ``(seed, round, start node)`` by SplitMix64,
    so a walk does not depend on which thread runs it, on the thread count or on the batch size.
    Walks of a batch run in a ``prange`` loop (numba threads, GIL released). Each round visits every
    start node once, in a per-round shuffled order (derived from ``(seed, round)``), as node2vec does.

Streaming
    :func:`iter_walk_batches` yields ``(tokens int32, offsets int64)`` batches of at most
    ``batch_walks`` walks (one walk per sentence) — never Python lists — so a trainer can consume walks
    as they are produced and regenerate them identically in every epoch. ``node_map`` rewrites node
    ids while walking (e.g. into vocabulary rank order, see :func:`rank_nodes`).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from parvec.errors import ParvecError
from parvec.graph.graph_io import Graph
from parvec.kernels.fastmath import FASTMATH

__all__ = [
    "WalkSpec",
    "NodeRanking",
    "walk_batch",
    "iter_walk_batches",
    "generate_walks",
    "count_nodes",
    "mark_paired",
    "rank_nodes",
    "start_order",
    "walk_seed",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_XS_MUL = np.uint64(0x2545F4914F6CDD1D)
_U30 = np.uint64(30)
_U27 = np.uint64(27)
_U31 = np.uint64(31)
_U12 = np.uint64(12)
_U25 = np.uint64(25)
_U11 = np.uint64(11)
_INV53 = 1.0 / 9007199254740992.0  # 2**-53


@njit(nogil=True, fastmath=FASTMATH, cache=True)
def _splitmix64(x: np.uint64) -> np.uint64:
    # SplitMix64 finaliser: turns structured (seed, round, node) triples into independent seeds.
    z = x + _GOLDEN
    z = (z ^ (z >> _U30)) * _MIX1
    z = (z ^ (z >> _U27)) * _MIX2
    return z ^ (z >> _U31)


@njit(nogil=True, fastmath=FASTMATH, cache=True)
def _walk_state(seed: np.uint64, rnd: np.uint64, node: np.uint64) -> np.uint64:
    s: np.uint64 = _splitmix64(_splitmix64(_splitmix64(seed) ^ rnd) ^ node)  # a jitted call is Any to mypy
    if s == np.uint64(0):  # xorshift must never hold 0
        s = _GOLDEN
    return s


@njit(nogil=True, fastmath=FASTMATH, cache=True)
def _next(state: np.ndarray) -> np.uint64:
    # xorshift64*: state kept in a 1-element array so helpers can advance it.
    x: np.uint64 = state[0]
    x ^= x >> _U12
    x ^= x << _U25
    x ^= x >> np.uint64(27)
    state[0] = x
    return x * _XS_MUL


@njit(nogil=True, fastmath=FASTMATH, cache=True)
def _uniform(state: np.ndarray) -> float:
    # 53 random bits -> [0, 1)
    return float(_next(state) >> _U11) * _INV53


@njit(nogil=True, fastmath=FASTMATH, cache=True)
def _randint(state: np.ndarray, n: np.int64) -> np.int64:
    k = np.int64(_uniform(state) * n)
    return k if k < n else n - 1


@njit(nogil=True, fastmath=FASTMATH, cache=True)
def _find(indices: np.ndarray, lo: np.int64, hi: np.int64, x: np.int64) -> int | np.int64:
    # Position of x in the sorted slice indices[lo:hi], or -1.
    end = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and indices[lo] == x:
        return lo
    return -1


@njit(nogil=True, fastmath=FASTMATH, cache=True)
def _search_cum(cumw: np.ndarray, lo: np.int64, hi: np.int64, u: float) -> np.int64:
    # First position j in [lo, hi) with cumw[j] > u (cumw is the row's running sum of weights).
    while lo < hi:
        mid = (lo + hi) >> 1
        if cumw[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(nogil=True, fastmath=FASTMATH, cache=True)
def _first_order(indptr: np.ndarray, cumw: np.ndarray, weighted: bool, cur: np.int64, state: np.ndarray) -> np.int64:
    # Returns the CSR position of the next node (uniform or weight-proportional).
    s: np.int64 = indptr[cur]  # the arrays' elements and the jitted calls are Any to mypy
    e: np.int64 = indptr[cur + 1]
    if not weighted:
        step: np.int64 = _randint(state, e - s)
        return s + step
    base = cumw[s - 1] if s > 0 else 0.0
    total = cumw[e - 1] - base
    j: np.int64 = _search_cum(cumw, s, e, base + _uniform(state) * total)
    return j if j < e else e - 1


@njit(nogil=True, fastmath=FASTMATH, cache=True)
def _second_order(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, cumw: np.ndarray, weighted: bool,
                  cur: np.int64, prev: np.int64, inv_p: float, inv_q: float, state: np.ndarray) -> np.int64:
    # node2vec step by rejection sampling with the return edge split off exactly (module docstring).
    s: np.int64 = indptr[cur]  # the arrays' elements and the jitted calls are Any to mypy
    e: np.int64 = indptr[cur + 1]
    deg = e - s
    ret: np.int64 = _find(indices, s, e, prev)  # CSR position of cur -> prev, or -1 (directed graphs)
    if weighted:
        base = cumw[s - 1] if s > 0 else 0.0
        total = cumw[e - 1] - base
        w_ret = float(data[ret]) if ret >= 0 else 0.0
    else:
        base = 0.0
        total = float(deg)
        w_ret = 1.0 if ret >= 0 else 0.0
    rest = total - w_ret
    if rest < 0.0:
        rest = 0.0
    bound = inv_q if inv_q > 1.0 else 1.0
    r_mass = w_ret * inv_p
    e_mass = bound * rest
    if ret >= 0 and (rest <= 0.0 or deg == 1):
        return ret
    ps = indptr[prev]
    pe = indptr[prev + 1]
    while True:
        u = _uniform(state) * (r_mass + e_mass)
        if ret >= 0 and u < r_mass:
            return ret
        # propose x != prev from the first-order distribution restricted to cur's other neighbours
        if weighted:
            v = _uniform(state) * rest
            if ret >= 0:
                before = (cumw[ret - 1] if ret > 0 else 0.0) - base
                if v >= before:
                    v += w_ret
            j = _search_cum(cumw, s, e, base + v)
            if j >= e:
                j = e - 1
            if j == ret:  # float round-off at the boundary of the skipped interval
                continue
        else:
            if ret >= 0:
                j = s + _randint(state, deg - 1)
                if j >= ret:
                    j += 1
            else:
                j = s + _randint(state, deg)
        x = indices[j]
        if _find(indices, ps, pe, x) >= 0:
            alpha = 1.0
        else:
            alpha = inv_q
        if alpha >= bound or _uniform(state) * bound < alpha:
            chosen: np.int64 = j
            return chosen


@njit(nogil=True, fastmath=FASTMATH, cache=True, parallel=True)
def _walk_kernel(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    cumw: np.ndarray,
    weighted: bool,
    starts: np.ndarray,
    seed: np.uint64,
    rnd: np.uint64,
    walk_length: int,
    inv_p: float,
    inv_q: float,
    node_map: np.ndarray,
    out: np.ndarray,
    lengths: np.ndarray,
) -> None:
    n_walks = starts.shape[0]
    first_only = inv_p == 1.0 and inv_q == 1.0
    useed = np.uint64(seed)
    urnd = np.uint64(rnd)
    for i in prange(n_walks):
        state = np.empty(1, dtype=np.uint64)
        start = np.int64(starts[i])
        state[0] = _walk_state(useed, urnd, np.uint64(start))
        out[i, 0] = node_map[start]
        prev = np.int64(-1)
        cur = start
        length = 1
        while length < walk_length:
            if indptr[cur] == indptr[cur + 1]:
                break  # no out-edges: the walk ends here
            if prev < 0 or first_only:
                j = _first_order(indptr, cumw, weighted, cur, state)
            else:
                j = _second_order(indptr, indices, data, cumw, weighted, cur, prev, inv_p, inv_q, state)
            nxt = np.int64(indices[j])
            out[i, length] = node_map[nxt]
            prev = cur
            cur = nxt
            length += 1
        lengths[i] = length


@njit(nogil=True, cache=True)
def _compact(out: np.ndarray, lengths: np.ndarray, tokens: np.ndarray, offsets: np.ndarray) -> None:
    # Copy ragged walks into the flat token array (only needed when some walk ended early).
    pos = 0
    offsets[0] = 0
    for i in range(out.shape[0]):
        n = lengths[i]
        for k in range(n):
            tokens[pos + k] = out[i, k]
        pos += n
        offsets[i + 1] = pos


@dataclass(frozen=True)
class WalkSpec:
    """Walk parameters shared by every batch.

    Example:
        >>> WalkSpec(walk_length=80, num_walks=10, p=0.25, q=4.0, seed=1).second_order
        True
    """

    walk_length: int = 80
    num_walks: int = 10
    p: float = 1.0
    q: float = 1.0
    seed: int = 1

    @property
    def second_order(self) -> bool:
        """Whether walks need the node2vec bias (``p`` or ``q`` differs from 1)."""
        return not (self.p == 1.0 and self.q == 1.0)

    def validate(self) -> None:
        """Raise :class:`ParvecError` for impossible values.

        Example:
            >>> WalkSpec(p=0).validate()
            Traceback (most recent call last):
            ...
            parvec.errors.ParvecError: p must be a positive number, got 0
        """
        if not isinstance(self.walk_length, int | np.integer) or self.walk_length < 1:
            raise ParvecError(f"walk_length must be a positive integer, got {self.walk_length}")
        if not isinstance(self.num_walks, int | np.integer) or self.num_walks < 1:
            raise ParvecError(f"num_walks must be a positive integer, got {self.num_walks}")
        for name in ("p", "q"):
            v = getattr(self, name)
            if not (isinstance(v, int | float | np.number) and np.isfinite(v) and v > 0):
                raise ParvecError(f"{name} must be a positive number, got {v}")
        if not isinstance(self.seed, int | np.integer) or self.seed < 0:
            raise ParvecError(f"seed must be a non-negative integer, got {self.seed}")


def _cumulative_weights(graph: Graph) -> np.ndarray:
    """Row-local running sums stored as one global float64 prefix sum (rows subtract their base)."""
    if graph.data is None:
        return np.zeros(1, dtype=np.float64)
    return np.cumsum(graph.data, dtype=np.float64)


def walk_seed(seed: int, rnd: int, node: int) -> int:
    """The 64-bit RNG state the walk from ``node`` in round ``rnd`` starts with (for reference/tests).

    Example:
        >>> walk_seed(1, 0, 5) == walk_seed(1, 0, 5) != walk_seed(1, 1, 5)
        True
    """
    return int(_walk_state(np.uint64(seed), np.uint64(rnd), np.uint64(node)))


def start_order(n_nodes: int, seed: int, rnd: int) -> np.ndarray:
    """Start nodes of round ``rnd``: a permutation of ``0..n-1`` derived from ``(seed, rnd)``.

    Example:
        >>> sorted(start_order(4, seed=1, rnd=0).tolist())
        [0, 1, 2, 3]
    """
    rng = np.random.Generator(np.random.PCG64([int(seed), int(rnd), 0x6E3276]))
    return rng.permutation(n_nodes).astype(np.int32)


class _Prepared:
    """Graph arrays as the kernel wants them, computed once per graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.weighted = graph.data is not None
        self.data = graph.data if graph.data is not None else np.zeros(1, dtype=np.float32)
        self.cumw = _cumulative_weights(graph)
        self.identity = np.arange(max(graph.n_nodes, 1), dtype=np.int32)


def _returnable_array(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """An uninitialised array in its own anonymous pages (from 1 MiB up), unmapped as soon as it is freed.

    Walk batches are streamed: one is made while the trainer still holds the previous one.  From
    ``np.empty``, glibc serves such blocks from the walking thread's heap once its mmap threshold has
    risen (after the first large free) and keeps them there when freed: 7 MB of RSS on BlogCatalog.
    """
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if nbytes < 1 << 20:
        return np.empty(shape, dtype=dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=dtype).reshape(shape)


def walk_batch(
    graph: Graph,
    starts: np.ndarray,
    spec: WalkSpec,
    rnd: int = 0,
    node_map: np.ndarray | None = None,
    _prepared: _Prepared | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Walk once from each node of ``starts`` (round ``rnd``); returns ``(tokens, offsets)``.

    ``tokens`` (int32) holds the walks back to back, walk ``i`` being
    ``tokens[offsets[i]:offsets[i+1]]`` (``offsets`` int64, ``len(starts) + 1`` entries).

    Example:
        >>> g = Graph.from_edges([0, 1], [1, 2], n_nodes=3)
        >>> tokens, offsets = walk_batch(g, np.array([0, 2]), WalkSpec(walk_length=4))
        >>> offsets.tolist(), tokens[:1].tolist()
        ([0, 4, 8], [0])
    """
    prep = _prepared if _prepared is not None else _Prepared(graph)
    starts = np.ascontiguousarray(starts, dtype=np.int32)
    if len(starts) and (starts.min() < 0 or starts.max() >= graph.n_nodes):
        raise ParvecError("start node out of range")
    node_map = prep.identity if node_map is None else np.ascontiguousarray(node_map, dtype=np.int32)
    n = len(starts)
    L = int(spec.walk_length)
    out = _returnable_array((n, L), np.int32)
    lengths = np.empty(n, dtype=np.int64)
    if n:
        _walk_kernel(
            graph.indptr, graph.indices, prep.data, prep.cumw, prep.weighted, starts,
            np.uint64(spec.seed), np.uint64(rnd), L, 1.0 / float(spec.p), 1.0 / float(spec.q),
            node_map, out, lengths,
        )  # fmt: skip
    if n == 0 or lengths.min() == L:
        return out.reshape(-1), np.arange(n + 1, dtype=np.int64) * L
    tokens = _returnable_array((int(lengths.sum()),), np.int32)
    offsets = np.empty(n + 1, dtype=np.int64)
    _compact(out, lengths, tokens, offsets)
    return tokens, offsets


class _Threads:
    """Context manager setting numba's thread count for the walks, then restoring it."""

    def __init__(self, workers: int | None) -> None:
        self.workers = workers
        self.saved = 0

    def __enter__(self) -> None:
        self.saved = numba.get_num_threads()
        if self.workers:
            numba.set_num_threads(max(1, min(int(self.workers), numba.config.NUMBA_NUM_THREADS)))

    def __exit__(self, *exc: object) -> None:
        numba.set_num_threads(self.saved)


def default_batch_walks(graph: Graph, walk_length: int, max_tokens: int = 1 << 22) -> int:
    """Walks per batch: one round (every node once), capped at about ``max_tokens`` tokens.

    Example:
        >>> default_batch_walks(Graph.from_edges([0], [1], n_nodes=2), 80)
        2
    """
    return max(1, min(graph.n_nodes, max_tokens // max(1, walk_length)))


def iter_walk_batches(
    graph: Graph,
    spec: WalkSpec,
    *,
    batch_walks: int | None = None,
    node_map: np.ndarray | None = None,
    workers: int | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield the walks of all ``spec.num_walks`` rounds as ``(tokens, offsets)`` batches.

    The sequence of walks is a pure function of ``(graph, spec)``: ``batch_walks`` and ``workers``
    change only how it is cut and how fast it is made, so calling this again regenerates it.

    Example:
        >>> g = Graph.from_edges([0, 1], [1, 2], n_nodes=3)
        >>> [len(o) - 1 for _, o in iter_walk_batches(g, WalkSpec(walk_length=5, num_walks=2), batch_walks=2)]
        [2, 1, 2, 1]
    """
    spec.validate()
    n = graph.n_nodes
    if n == 0:
        return
    bw = int(batch_walks) if batch_walks else default_batch_walks(graph, spec.walk_length)
    if bw < 1:
        raise ParvecError(f"batch_walks must be positive, got {batch_walks}")
    prep = _Prepared(graph)
    for rnd in range(spec.num_walks):
        order = start_order(n, spec.seed, rnd)
        for lo in range(0, n, bw):
            with _Threads(workers):
                batch = walk_batch(graph, order[lo : lo + bw], spec, rnd, node_map, _prepared=prep)
            yield batch


def generate_walks(
    graph: Graph, spec: WalkSpec, *, workers: int | None = None, node_map: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """All walks in one ``(tokens, offsets)`` pair (concatenated batches).

    Example:
        >>> g = Graph.from_edges([0, 1], [1, 2], n_nodes=3)
        >>> tokens, offsets = generate_walks(g, WalkSpec(walk_length=3, num_walks=2))
        >>> len(offsets) - 1, len(tokens)
        (6, 18)
    """
    toks, offs, base = [], [np.zeros(1, dtype=np.int64)], 0
    for t, o in iter_walk_batches(graph, spec, workers=workers, node_map=node_map):
        toks.append(t)
        offs.append(o[1:] + base)
        base += len(t)
    tokens = np.concatenate(toks) if toks else np.zeros(0, dtype=np.int32)
    return tokens, np.concatenate(offs)


def count_nodes(tokens: np.ndarray, n_nodes: int, counts: np.ndarray | None = None) -> np.ndarray:
    """Add the occurrences of each node in ``tokens`` to ``counts`` (int64, created if None).

    Example:
        >>> count_nodes(np.array([0, 2, 2], dtype=np.int32), 3).tolist()
        [1, 0, 2]
    """
    c = np.bincount(tokens, minlength=n_nodes).astype(np.int64)
    if counts is None:
        return c
    counts += c
    return counts


def mark_paired(tokens: np.ndarray, offsets: np.ndarray, paired: np.ndarray) -> np.ndarray:
    """Set ``paired[v]`` for every node ``v`` next to a different node in one of the walks.

    Skip-gram's window is never narrower than 1, so these are the nodes that meet another node in some
    training window; the others (isolated nodes, nodes with only a self-loop, ``walk_length`` 1) learn
    nothing from the graph.  A node meets a different node in a walk exactly when it is next to one
    somewhere in it, so neighbouring positions are enough.  Returns ``paired`` (bool, updated in place).

    Example:
        >>> tokens = np.array([0, 1, 2, 2, 3], dtype=np.int32)  # walks [0, 1], [2, 2], [3]
        >>> mark_paired(tokens, np.array([0, 2, 4, 5]), np.zeros(4, dtype=bool)).tolist()
        [True, True, False, False]
    """
    if paired.all() or len(tokens) < 2:
        return paired
    step = tokens[1:] != tokens[:-1]
    inner = np.asarray(offsets[1:-1], dtype=np.int64) - 1  # the step from one walk's end to the next's start
    step[inner[(inner >= 0) & (inner < len(step))]] = False
    paired[tokens[:-1][step]] = True
    paired[tokens[1:][step]] = True
    return paired


@dataclass(frozen=True)
class NodeRanking:
    """Nodes ranked by descending walk frequency (ties by node index): the training vocabulary order.

    ``order[r]`` is the node of rank ``r``; ``rank[v]`` is the rank of node ``v``; ``counts`` are the
    frequencies in rank order (non-increasing, the encoded-corpus invariant).

    Example:
        >>> r = rank_nodes(np.array([1, 5, 3]))
        >>> r.order.tolist(), r.rank.tolist(), r.counts.tolist()
        ([1, 2, 0], [2, 0, 1], [5, 3, 1])
        >>> r.to_nodes(r.to_ranks(np.array([0, 1], dtype=np.int32))).tolist()
        [0, 1]
    """

    order: np.ndarray  # int32[n]: rank -> node
    rank: np.ndarray  # int32[n]: node -> rank
    counts: np.ndarray  # int64[n]: counts in rank order

    def to_ranks(self, tokens: np.ndarray) -> np.ndarray:
        """Node ids -> rank ids."""
        ranks: np.ndarray = self.rank[tokens]
        return ranks

    def to_nodes(self, tokens: np.ndarray) -> np.ndarray:
        """Rank ids -> node ids."""
        nodes: np.ndarray = self.order[tokens]
        return nodes


def rank_nodes(counts: np.ndarray) -> NodeRanking:
    """Rank nodes by descending count (stable, so ties keep node order); see :class:`NodeRanking`.

    Example:
        >>> rank_nodes(np.array([2, 2, 7])).order.tolist()
        [2, 0, 1]
    """
    counts = np.asarray(counts, dtype=np.int64)
    order = np.argsort(-counts, kind="stable").astype(np.int32)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return NodeRanking(order, rank, counts[order])
