"""Random walks: node2vec transition probabilities (chi-square), weights, direction, seeds, batching."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from parvec.errors import ParvecError
from parvec.graph.graph_io import Graph
from parvec.graph.node2vec import DeepWalk, Node2Vec
from parvec.graph.walks import (
    WalkSpec,
    generate_walks,
    iter_walk_batches,
    mark_paired,
    rank_nodes,
    start_order,
    walk_batch,
)

# A small graph with triangles (0-1-2, 1-2-3), open paths (3-4-5), a pendant node (6) and a self-loop
# (3-3), so that all three node2vec cases (return, distance 1, distance 2) occur.
EDGES = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (3, 4), (4, 5), (2, 5), (3, 3), (5, 6)]
WEIGHTS = [1.0, 2.0, 0.5, 3.0, 1.0, 4.0, 1.5, 2.5, 2.0, 1.0]


def small_graph(weighted: bool) -> Graph:
    src, dst = zip(*EDGES, strict=True)
    return Graph.from_edges(src, dst, WEIGHTS if weighted else None, n_nodes=7)


def exact_next(g: Graph, prev: int, cur: int, p: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """node2vec's P(next | prev, cur) from the definition (Grover & Leskovec 2016, eq. 2)."""
    nbrs = g.neighbors(cur)
    w = g.weights(cur).astype(np.float64)
    prev_nbrs = set(g.neighbors(prev).tolist())
    alpha = np.array([1 / p if x == prev else (1.0 if x in prev_nbrs else 1 / q) for x in nbrs.tolist()])
    probs = w * alpha
    return nbrs, probs / probs.sum()


def triple_counts(tokens: np.ndarray, offsets: np.ndarray) -> dict[tuple[int, int], dict[int, int]]:
    lengths = np.diff(offsets)
    assert (lengths == lengths[0]).all()
    walks = tokens.reshape(len(lengths), lengths[0]).astype(np.int64)
    a, b, c = walks[:, :-2].ravel(), walks[:, 1:-1].ravel(), walks[:, 2:].ravel()
    key = (a * 7 + b) * 7 + c
    uniq, cnt = np.unique(key, return_counts=True)
    out: dict[tuple[int, int], dict[int, int]] = {}
    for k, n in zip(uniq.tolist(), cnt.tolist(), strict=True):
        ab, cc = divmod(k, 7)
        out.setdefault(divmod(ab, 7), {})[cc] = n
    return out


def chi2_pvalues(g: Graph, counts, p: float, q: float, min_total: int = 300) -> list[float]:
    pvals = []
    for (prev, cur), nxt in counts.items():
        total = sum(nxt.values())
        if total < min_total:
            continue
        nbrs, probs = exact_next(g, prev, cur, p, q)
        assert set(nxt) <= set(nbrs.tolist()), f"impossible move from {cur} (prev {prev})"
        observed = np.array([nxt.get(x, 0) for x in nbrs.tolist()], dtype=np.float64)
        pvals.append(chisquare(observed, probs * total).pvalue)
    return pvals


@pytest.fixture(scope="module")
def walk_cache():
    cache = {}

    def get(weighted: bool, p: float, q: float):
        key = (weighted, p, q)
        if key not in cache:
            g = small_graph(weighted)
            spec = WalkSpec(walk_length=300, num_walks=60, p=p, q=q, seed=11)
            cache[key] = (g, triple_counts(*generate_walks(g, spec)))
        return cache[key]

    return get


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(("p", "q"), [(1.0, 1.0), (0.25, 4.0), (4.0, 0.25), (0.5, 2.0), (2.0, 0.5)])
def test_second_order_transitions_match_node2vec(walk_cache, weighted, p, q):
    g, counts = walk_cache(weighted, p, q)
    pvals = chi2_pvalues(g, counts, p, q)
    assert len(pvals) >= 15
    # Seeded, so deterministic; 1e-4 per (prev, cur) pair leaves room for ~20 tests without flakes.
    assert min(pvals) > 1e-4, sorted(pvals)[:3]


def test_chi_square_detects_wrong_parameters(walk_cache):
    # Power check: walks made with p=0.25, q=4 are clearly not p=q=1 (or p=4, q=0.25) walks.
    g, counts = walk_cache(False, 0.25, 4.0)
    assert min(chi2_pvalues(g, counts, 1.0, 1.0)) < 1e-10
    assert min(chi2_pvalues(g, counts, 4.0, 0.25)) < 1e-10


def test_first_step_follows_weights():
    # Star: centre 0 with leaves 1..4 weighted 1, 2, 3, 4; first steps from 0 must follow the weights.
    g = Graph.from_edges([0, 0, 0, 0], [1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0], n_nodes=5)
    starts = np.zeros(20000, dtype=np.int32)
    tokens, offsets = walk_batch(g, starts, WalkSpec(walk_length=2, seed=5), rnd=0)
    # every walk from the same start node in the same round is the same stream: use distinct rounds
    firsts = []
    for rnd in range(2000):
        t, _ = walk_batch(g, np.zeros(1, dtype=np.int32), WalkSpec(walk_length=2, seed=5), rnd=rnd)
        firsts.append(int(t[1]))
    observed = np.bincount(firsts, minlength=5)[1:]
    assert chisquare(observed, np.array([1, 2, 3, 4]) / 10 * len(firsts)).pvalue > 1e-4
    assert chisquare(observed, np.full(4, len(firsts) / 4)).pvalue < 1e-6  # and not uniform
    assert len(set(tokens[1::2].tolist())) == 1  # same (seed, round, node) -> same walk


def test_unweighted_first_step_is_uniform():
    g = Graph.from_edges([0, 0, 0], [1, 2, 3], [5.0, 1.0, 1.0], n_nodes=4)
    g_unw = Graph(g.indptr, g.indices, None, g.node_ids)
    firsts = [
        int(walk_batch(g_unw, np.zeros(1, np.int32), WalkSpec(walk_length=2, seed=2), rnd=r)[0][1]) for r in range(1500)
    ]
    assert chisquare(np.bincount(firsts, minlength=4)[1:]).pvalue > 1e-4


@pytest.mark.parametrize(("p", "q"), [(1.0, 1.0), (0.25, 4.0)])
def test_directed_walks_never_go_against_an_edge(p, q):
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 40, 120), rng.integers(0, 40, 120)
    g = Graph.from_edges(src, dst, n_nodes=45, directed=True)  # nodes 40..44 isolated, some sinks
    tokens, offsets = generate_walks(g, WalkSpec(walk_length=15, num_walks=5, p=p, q=q, seed=3))
    deg = g.degrees()
    for i in range(len(offsets) - 1):
        walk = tokens[offsets[i] : offsets[i + 1]].tolist()
        for a, b in zip(walk, walk[1:], strict=False):
            assert g.has_edge(a, b), f"walk {walk} uses {a}->{b}"
        # a walk ends early exactly when it reaches a node without out-edges
        assert (len(walk) == 15) or deg[walk[-1]] == 0
        assert len(walk) == 15 or len(walk) < 15 and deg[walk[-1]] == 0
    assert (np.diff(offsets) < 15).any()  # the graph has sinks, so some walks did stop


def test_reproducible_and_independent_of_threads_and_batches():
    rng = np.random.default_rng(1)
    g = Graph.from_edges(rng.integers(0, 200, 800), rng.integers(0, 200, 800), rng.random(800) + 0.1, n_nodes=200)
    spec = WalkSpec(walk_length=20, num_walks=3, p=0.5, q=2.0, seed=42)
    t1, o1 = generate_walks(g, spec, workers=1)
    t2, o2 = generate_walks(g, spec, workers=2)
    parts = list(iter_walk_batches(g, spec, batch_walks=37, workers=2))
    t3 = np.concatenate([t for t, _ in parts])
    assert np.array_equal(t1, t2) and np.array_equal(o1, o2) and np.array_equal(t1, t3)
    assert all(len(o) - 1 <= 37 for _, o in parts)
    t4, _ = generate_walks(g, WalkSpec(walk_length=20, num_walks=3, p=0.5, q=2.0, seed=43))
    assert not np.array_equal(t1, t4)


def test_encoded_corpus_layout_and_rounds():
    g = small_graph(False)
    spec = WalkSpec(walk_length=6, num_walks=4, seed=9)
    batches = list(iter_walk_batches(g, spec))
    assert len(batches) == 4  # default: one batch per round
    for rnd, (tokens, offsets) in enumerate(batches):
        assert tokens.dtype == np.int32 and offsets.dtype == np.int64
        assert offsets[0] == 0 and offsets[-1] == len(tokens) and len(offsets) == g.n_nodes + 1
        starts = tokens[offsets[:-1]]
        assert np.array_equal(starts, start_order(g.n_nodes, spec.seed, rnd))  # every node once per round
    assert not np.array_equal(start_order(g.n_nodes, 9, 0), start_order(g.n_nodes, 9, 1))


def test_node_map_writes_mapped_ids():
    g = small_graph(True)
    spec = WalkSpec(walk_length=8, num_walks=2, p=0.25, q=4.0, seed=1)
    mapping = np.arange(7, dtype=np.int32)[::-1].copy()
    plain, _ = generate_walks(g, spec)
    mapped, _ = generate_walks(g, spec, node_map=mapping)
    assert np.array_equal(mapping[plain], mapped)


def test_rank_nodes_orders_by_descending_count_and_round_trips():
    counts = np.array([3, 9, 3, 0, 7])
    r = rank_nodes(counts)
    assert r.order.tolist() == [1, 4, 0, 2, 3] and r.counts.tolist() == [9, 7, 3, 3, 0]
    tokens = np.array([0, 1, 2, 3, 4, 4], dtype=np.int32)
    assert np.array_equal(r.to_nodes(r.to_ranks(tokens)), tokens)
    assert np.all(np.diff(r.counts) <= 0)


def test_count_pass_cached_and_regenerated_walks_agree():
    g = small_graph(False)
    kw = dict(walk_length=10, num_walks=3, p=0.5, q=2.0, workers=1, seed=4, dimensions=8)
    cached_model = Node2Vec(g, cache_walks_mb=64, **kw)
    ranking, cached = cached_model.count_pass()
    stream_model = Node2Vec(g, cache_walks_mb=0, **kw)
    ranking2, none = stream_model.count_pass()
    assert none is None and np.array_equal(ranking.order, ranking2.order)
    regenerated = list(stream_model._batches(ranking2.rank))
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(cached, regenerated, strict=True))
    all_tokens = np.concatenate([t for t, _ in cached])
    assert np.array_equal(np.bincount(all_tokens, minlength=7), ranking.counts)  # rank ids by frequency
    assert ranking.counts.sum() == 7 * 3 * 10


def test_walks_are_cached_by_default_only_when_no_bigger_than_the_weights():
    g = small_graph(False)  # 7 nodes: 210 tokens of walks (~1 KB) against 7 x dim x 2 x 4 bytes of weights
    assert Node2Vec(g, walk_length=10, num_walks=3, dimensions=8, workers=1).count_pass()[1] is None
    assert Node2Vec(g, walk_length=10, num_walks=3, dimensions=64, workers=1).count_pass()[1] is not None


def test_bad_parameters_raise_parvec_error():
    g = small_graph(False)
    for bad in (dict(p=0), dict(q=-1), dict(walk_length=0), dict(num_walks=0), dict(p=float("nan"))):
        with pytest.raises(ParvecError):
            Node2Vec(g, **bad)
    with pytest.raises(ParvecError, match="DeepWalk has no p"):
        DeepWalk(g, p=2)
    with pytest.raises(ParvecError, match="weighted=True"):
        Node2Vec(g, weighted=True)


def test_mark_paired_matches_a_python_reference_and_sees_sinks():
    # directed: 0 -> 1 -> 2 (2 is a sink, reached), 3 isolated, 4 -> 4 only, 5 -> 4 (4 meets 5 that way)
    g = Graph.from_edges([0, 1, 4, 5], [1, 2, 4, 4], n_nodes=7, directed=True)  # 6: no edge at all
    spec = WalkSpec(walk_length=5, num_walks=3, seed=2)
    paired = np.zeros(7, dtype=bool)
    expected = set()
    for tokens, offsets in iter_walk_batches(g, spec, batch_walks=2):
        mark_paired(tokens, offsets, paired)
        for i in range(len(offsets) - 1):
            walk = tokens[offsets[i] : offsets[i + 1]].tolist()
            expected |= {v for a, b in zip(walk, walk[1:], strict=False) if a != b for v in (a, b)}
    assert paired.tolist() == [v in expected for v in range(7)] == [True, True, True, False, True, True, False]
    model = Node2Vec(g, walk_length=5, num_walks=3, seed=2, workers=1, dimensions=4)
    model.count_pass()
    assert model.paired.tolist() == paired.tolist()
    # a walk's last node is not paired with the next walk's first
    assert not mark_paired(np.array([0, 1, 1], np.int32), np.array([0, 1, 3]), np.zeros(2, bool)).any()
