"""Evaluating node embeddings: multi-label node classification and link prediction.

Node classification follows DeepWalk's and node2vec's protocol: one-vs-rest logistic regression
(liblinear) trained on a random fraction of the labelled nodes, repeated over seeded random splits;
each test node is given its ``k`` most probable labels, ``k`` being its true number of labels; micro-
and macro-F1 over all labels (mean ± std over the splits).

Link prediction follows node2vec's protocol: hide a fraction of the edges (only edges outside a random
spanning forest, so the residual graph keeps the original connectivity), embed the residual graph,
build Hadamard features ``x_u * x_v``, train logistic regression on residual edges versus as many
sampled non-edges, and report ROC-AUC on the hidden edges versus as many other non-edges.

Inputs that make a score meaningless are a :class:`ParvecError` naming the file or parameter (labels that
tell no node apart, a graph with nothing to hide or too few non-edges, non-finite vectors); inputs that only
weaken it are logged as warnings with counts (labelled nodes without a vector, a label on a single node or
on every node, training splits missing a label, fewer hidden edges than asked for).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parvec.errors import ParvecError
from parvec.graph.graph_io import Graph, text_fields

__all__ = [
    "Labels",
    "read_labels",
    "align_labels",
    "node_classification",
    "EdgeSplit",
    "split_edges",
    "sample_non_edges",
    "link_prediction",
    "DEFAULT_FRACTIONS",
]

DEFAULT_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

log = logging.getLogger(__name__)


def _examples(names: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (", ..." if len(names) > limit else "")


# ---------------------------------------------------------------------------------------------
# Labels
# ---------------------------------------------------------------------------------------------


@dataclass
class Labels:
    """Node labels: ``node_ids[i]`` has the labels ``label_names[j]`` for every ``matrix[i, j] == 1``.

    Example:
        >>> lab = Labels.from_pairs([("a", "x"), ("a", "y"), ("b", "x")])
        >>> lab.node_ids, lab.label_names, lab.matrix.toarray().tolist()
        (['a', 'b'], ['x', 'y'], [[1, 1], [1, 0]])
    """

    node_ids: list[str]
    label_names: list[str]
    matrix: Any  # scipy.sparse.csr_matrix of int8, (n_nodes, n_labels)

    @classmethod
    def from_pairs(cls, pairs: Sequence[tuple[str, str]]) -> Labels:
        """Build from ``(node, label)`` pairs (duplicates ignored; first-seen node order, sorted labels)."""
        import scipy.sparse as sp

        nodes = list(dict.fromkeys(n for n, _ in pairs))
        names = sorted({lab for _, lab in pairs}, key=_natural_key)
        ni = {n: i for i, n in enumerate(nodes)}
        li = {name: j for j, name in enumerate(names)}
        rows = np.array([ni[n] for n, _ in pairs], dtype=np.int64)
        cols = np.array([li[lab] for _, lab in pairs], dtype=np.int64)
        m = sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(len(nodes), len(names)))
        m.sum_duplicates()
        m.data[:] = 1
        return cls(nodes, names, m)

    @property
    def multilabel(self) -> bool:
        """Whether some node has more than one label."""
        return bool((np.diff(self.matrix.indptr) > 1).any())


def _natural_key(s: str) -> tuple[int, int | str]:
    # "2" < "10" for numeric labels, plain order otherwise.
    return (0, int(s)) if s.lstrip("-").isdigit() else (1, s)


def read_labels(path: str | os.PathLike[str], delimiter: str | None = None) -> Labels:
    """Read ``node label [label ...]`` lines (one line per membership or several labels per line).

    ``#`` starts a comment; blank lines are skipped. Errors name the file and line.

    Example:
        >>> read_labels("blogcatalog.labels").matrix.shape  # doctest: +SKIP
        (10312, 39)
    """
    p = Path(path)
    if not p.exists():
        raise ParvecError(f"{p}: no such file")
    if p.is_dir():
        raise ParvecError(f"{p}: is a directory, expected a label file")
    pairs: list[tuple[str, str]] = []
    for line_no, raw, fields in text_fields(p, delimiter):
        parts = [t for t in fields if t]
        if len(parts) < 2:
            raise ParvecError(f"{p}:{line_no}: expected 'node label [label ...]', got {raw.rstrip()!r}")
        pairs.extend((parts[0], lab) for lab in parts[1:])
    if not pairs:
        raise ParvecError(f"{p}: no labels (empty file or only comments)")
    return Labels.from_pairs(pairs)


def align_labels(keys: Sequence[str], labels: Labels, source: str = "labels") -> tuple[np.ndarray, Any]:
    """Rows of the embedding (``keys``) for each labelled node, and the label matrix in that order.

    Labelled nodes without a vector are dropped, with a warning saying how many; raises if none is left.
    ``source`` (the label file) starts the messages.

    Example:
        >>> rows, y = align_labels(["b", "a"], Labels.from_pairs([("a", "x"), ("c", "y")]))
        >>> rows.tolist(), y.toarray().tolist()
        ([1], [[1, 0]])
    """
    index = {k: i for i, k in enumerate(keys)}
    found = [(i, index[n]) for i, n in enumerate(labels.node_ids) if n in index]
    n_labelled = len(labels.node_ids)
    if not found:
        like = f" (the labels name nodes like {labels.node_ids[0]!r}" + (
            f", the vectors are keyed like {keys[0]!r})" if len(keys) else "; there are no vectors)"
        )
        raise ParvecError(f"{source}: none of the {n_labelled} labelled nodes has a vector{like}")
    if len(found) < n_labelled:
        missing = [n for n in labels.node_ids if n not in index]
        log.warning(
            "%s: %d of the %d labelled nodes have no vector (e.g. %s) and are left out of the evaluation",
            source, len(missing), n_labelled, _examples(missing),
        )
    lab_rows = np.array([a for a, _ in found], dtype=np.int64)
    emb_rows = np.array([b for _, b in found], dtype=np.int64)
    return emb_rows, labels.matrix[lab_rows]


# ---------------------------------------------------------------------------------------------
# Node classification
# ---------------------------------------------------------------------------------------------


def _top_k_predictions(scores: np.ndarray, k: np.ndarray) -> np.ndarray:
    """0/1 matrix with the ``k[i]`` highest-scoring labels of row ``i`` set (DeepWalk's TopKRanker)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(scores.shape[1])[None, :].repeat(len(scores), 0), axis=1)
    return (ranks < k[:, None]).astype(np.int8)


def _check_classification_options(repeats: Any, C: Any, workers: Any, train_fractions: Sequence[float]) -> list[float]:
    """node_classification's numeric options checked (:class:`ParvecError` naming the first bad one); the fractions."""
    if not isinstance(repeats, int | np.integer) or repeats < 1:
        raise ParvecError(f"repeats must be a positive integer, got {repeats}")
    if not (isinstance(C, int | float | np.number) and np.isfinite(C) and C > 0):
        raise ParvecError(f"C must be a positive number, got {C}")
    if not isinstance(workers, int | np.integer) or workers < 1:
        raise ParvecError(f"workers must be a positive integer, got {workers}")
    fractions = [float(f) for f in train_fractions]
    if not fractions:
        raise ParvecError("train_fractions is empty")
    for frac in fractions:
        if not 0 < frac < 1:
            raise ParvecError(f"training fractions must be in (0, 1), got {frac}")
    return fractions


def node_classification(
    vectors: np.ndarray,
    labels: Any,
    train_fractions: Sequence[float] = DEFAULT_FRACTIONS,
    repeats: int = 10,
    seed: int = 0,
    C: float = 1.0,
    workers: int = 1,
    *,
    source: str = "labels",
    label_names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Multi-label classification scores of ``vectors`` (rows aligned with ``labels``' rows).

    ``labels`` is a 0/1 matrix (dense or scipy sparse, ``(n, n_labels)``); nodes without any label
    should be left out. Returns ``{"results": [{"train_fraction", "micro_f1_mean", "micro_f1_std",
    "macro_f1_mean", "macro_f1_std", "micro_f1", "macro_f1"}, ...], "n_nodes", "n_labels", ...}``.

    Labels that tell no node apart (every node has every label, e.g. a single class) raise
    :class:`ParvecError`, as do non-finite vectors.  A label no node has is left out; a label on a single
    node (its F1 is 0 in every split) or on every node (always right), and training splits that miss a
    label, are logged as warnings with counts.  ``source`` (the label file) and ``label_names`` are
    used in those messages.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> y = np.repeat(np.eye(2, dtype=int), 20, axis=0)
        >>> x = y + 0.1 * rng.standard_normal((40, 2))
        >>> r = node_classification(x, y, train_fractions=[0.5], repeats=2)
        >>> r["results"][0]["micro_f1_mean"]
        1.0
    """
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.multiclass import OneVsRestClassifier

    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2:
        raise ParvecError(f"vectors must be a 2-D array (nodes x dimensions), got shape {x.shape}")
    y = sp.csr_matrix(labels).astype(np.int8)
    y.eliminate_zeros()
    n, n_labels = y.shape
    if len(x) != n:
        raise ParvecError(f"{len(x)} vectors but {n} labelled nodes")
    if n < 2:
        raise ParvecError(f"{source}: node classification needs at least 2 labelled nodes, got {n}")
    fractions = _check_classification_options(repeats, C, workers, train_fractions)
    bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
    if len(bad):
        raise ParvecError(f"vectors: {len(bad)} of the {n} vectors hold NaN or inf (e.g. row {int(bad[0])})")
    k_true = np.diff(y.indptr)
    if (k_true == 0).any():
        raise ParvecError(f"{source}: {int((k_true == 0).sum())} rows have no label; leave unlabelled nodes out")
    names = [str(j) for j in range(n_labels)] if label_names is None else [str(v) for v in label_names]
    if len(names) != n_labels:
        raise ParvecError(f"label_names has {len(names)} names for {n_labels} labels")
    y, names = _check_label_columns(y, names, source)
    n_labels = len(names)
    y_dense = y.toarray()
    results = []
    short: list[str] = []  # fractions whose training splits missed some label
    for frac in fractions:
        n_train = min(n - 1, max(1, int(round(frac * n))))
        micro, macro = [], []
        missed_splits, missed_most = 0, 0
        for rep in range(repeats):
            rng = np.random.default_rng([seed, rep])  # same splits for every fraction's repeat `rep`
            perm = rng.permutation(n)
            tr, te = perm[:n_train], perm[n_train:]
            missed = n_labels - int(np.count_nonzero(y_dense[tr].any(axis=0)))
            if missed:
                missed_splits += 1
                missed_most = max(missed_most, missed)
            clf = OneVsRestClassifier(LogisticRegression(solver="liblinear", C=C), n_jobs=workers)
            with warnings.catch_warnings():
                # a label absent from a training split only triggers sklearn warnings (counted above instead)
                warnings.simplefilter("ignore")
                clf.fit(x[tr], y_dense[tr])
                scores = clf.predict_proba(x[te])
                pred = _top_k_predictions(scores, k_true[te])
                micro.append(f1_score(y_dense[te], pred, average="micro", zero_division=0))
                macro.append(f1_score(y_dense[te], pred, average="macro", zero_division=0))
        if missed_splits:
            short.append(
                f"train fraction {frac:g} ({n_train} of {n} nodes): {missed_splits} of {repeats} splits had up to "
                f"{missed_most} of the {n_labels} labels without a training example"
            )
        results.append(
            {
                "train_fraction": float(frac),
                "micro_f1_mean": float(np.mean(micro)),
                "micro_f1_std": float(np.std(micro)),
                "macro_f1_mean": float(np.mean(macro)),
                "macro_f1_std": float(np.std(macro)),
                "micro_f1": [float(v) for v in micro],
                "macro_f1": [float(v) for v in macro],
            }
        )
    if short:
        log.warning(
            "%s: a label without a training example is never learned, so it is not predicted and lowers both "
            "F1 scores (a larger training fraction avoids it): %s", source, "; ".join(short),
        )
    return {
        "n_nodes": int(n),
        "n_labels": int(n_labels),
        "repeats": int(repeats),
        "seed": int(seed),
        "results": results,
    }


def _check_label_columns(y: Any, names: list[str], source: str) -> tuple[Any, list[str]]:
    """Refuse labels that tell no node apart; drop labels no node has; warn about labels on one or all nodes."""
    n, n_labels = y.shape
    per_label = np.bincount(y.indices, minlength=n_labels)
    empty = np.flatnonzero(per_label == 0)
    if len(empty):
        log.warning("%s: %s no labelled node (%s) and %s left out", source,
                    _of_labels(len(empty), n_labels, "has", "have"), _examples([names[j] for j in empty]),
                    "is" if len(empty) == 1 else "are")  # fmt: skip
        keep = per_label > 0
        y, per_label = y[:, keep], per_label[keep]
        names = [nm for nm, k in zip(names, keep.tolist(), strict=True) if k]
        n_labels = len(names)
    full = np.flatnonzero(per_label == n)
    if len(full) == n_labels:
        if n_labels == 1:
            raise ParvecError(
                f"{source}: every labelled node has the same single label {names[0]!r}: there is nothing to "
                "classify (node classification needs at least 2 labels)"
            )
        raise ParvecError(
            f"{source}: every labelled node has every one of the {n_labels} labels: there is nothing to classify"
        )
    if len(full):
        log.warning("%s: %s every labelled node (%s): always predicted right whatever the vectors, which raises "
                    "both F1 scores", source, _of_labels(len(full), n_labels, "is held by", "are held by"),
                    _examples([names[j] for j in full]))  # fmt: skip
    single = np.flatnonzero(per_label == 1)
    if len(single):
        log.warning("%s: %s a single node (%s): in a split it is either in the training or the test part, never "
                    "both, so its F1 is 0 in every split, which lowers macro-F1", source,
                    _of_labels(len(single), n_labels, "is held by", "are held by"),
                    _examples([names[j] for j in single]))  # fmt: skip
    return y, names


def _of_labels(k: int, total: int, one: str, many: str) -> str:
    return f"{k} of the {total} labels {one if k == 1 else many}"


# ---------------------------------------------------------------------------------------------
# Link prediction
# ---------------------------------------------------------------------------------------------


@dataclass
class EdgeSplit:
    """The residual graph and the hidden edges of a link-prediction split.

    Example:
        >>> g = Graph.from_edges([0, 1, 2, 0], [1, 2, 3, 2], n_nodes=4)
        >>> s = split_edges(g, 0.5, seed=0)
        >>> s.residual.n_edges + len(s.hidden)
        4
    """

    residual: Graph
    hidden: np.ndarray  # int64 (m, 2): the removed edges


def _pair_keys(u: np.ndarray, v: np.ndarray, n: int, directed: bool) -> np.ndarray:
    if not directed:
        u, v = np.minimum(u, v), np.maximum(u, v)
    return u.astype(np.int64) * n + v.astype(np.int64)


def split_edges(graph: Graph, fraction: float = 0.5, seed: int = 0) -> EdgeSplit:
    """Hide ``fraction`` of the (non-self-loop) edges, never one of a random spanning forest.

    If fewer edges lie outside the forest than requested, only those are hidden (with a warning); a graph
    with none (a forest) or a fraction that rounds to no edge raises :class:`ParvecError`.

    Example:
        >>> g = Graph.from_edges([0, 0, 1], [1, 2, 2], n_nodes=3)
        >>> len(split_edges(g, 0.9, seed=1).hidden)  # a triangle has one edge outside any spanning tree
        1
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import minimum_spanning_tree

    if not 0 < fraction < 1:
        raise ParvecError(f"the fraction of edges to hide must be in (0, 1), got {fraction}")
    n = graph.n_nodes
    where = graph.where()
    src, dst, w = graph.edge_list()
    loop = src == dst
    cand = np.flatnonzero(~loop)
    if len(cand) == 0:
        raise ParvecError(f"{where}the graph has no edge between two different nodes to hide (link prediction "
                          "needs some)")  # fmt: skip
    rng = np.random.default_rng([seed, 0x11CE])
    # Random spanning forest: MST of the undirected skeleton under random weights in (1, 2).
    u, v = np.minimum(src[cand], dst[cand]), np.maximum(src[cand], dst[cand])
    rw = 1.0 + rng.random(len(cand))
    skeleton = sp.coo_matrix((rw, (u, v)), shape=(n, n)).tocsr()  # duplicates (directed u->v, v->u) summed
    forest = minimum_spanning_tree(skeleton).tocoo()
    protected = np.isin(_pair_keys(u, v, n, False), _pair_keys(forest.row, forest.col, n, False))
    removable = cand[~protected]
    asked = int(round(fraction * len(cand)))
    if len(removable) == 0:
        raise ParvecError(f"{where}all {len(cand)} edges are needed to keep the graph connected (it has no cycle): "
                          "nothing to hide; link prediction needs a graph with cycles")  # fmt: skip
    if asked < 1:
        raise ParvecError(f"{where}hiding fraction {fraction:g} of {len(cand)} edges rounds to none: raise the "
                          "fraction (--fraction)")  # fmt: skip
    n_hide = min(asked, len(removable))
    if n_hide < asked:
        log.warning("%shid %d of the %d edges asked for (fraction %g of %d): the other %d are needed to keep the "
                    "graph connected", where, n_hide, asked, fraction, len(cand), len(cand) - n_hide)  # fmt: skip
    hide = np.sort(rng.choice(removable, size=n_hide, replace=False))
    keep = np.ones(len(src), dtype=bool)
    keep[hide] = False
    residual = Graph.from_edges(
        src[keep], dst[keep], None if w is None else w[keep], node_ids=graph.node_ids, directed=graph.directed
    )
    residual.source = graph.source
    return EdgeSplit(residual, np.stack([src[hide], dst[hide]], axis=1))


def sample_non_edges(
    graph: Graph, count: int, rng: np.random.Generator, exclude: np.ndarray | None = None
) -> np.ndarray:
    """``count`` distinct node pairs ``(u, v)``, ``u != v``, that are not edges of ``graph``.

    ``exclude`` holds pair keys (``u * n + v``, with ``u < v`` if undirected) to avoid as well.

    Example:
        >>> g = Graph.from_edges([0], [1], n_nodes=4)
        >>> pairs = sample_non_edges(g, 3, np.random.default_rng(0))
        >>> len(pairs), any(set(p) == {0, 1} for p in pairs.tolist())
        (3, False)
    """
    n = graph.n_nodes
    directed = graph.directed
    src, dst, _ = graph.edge_list()
    edge_keys = np.unique(_pair_keys(src, dst, n, directed))
    possible = n * (n - 1) // (1 if directed else 2) - int(np.count_nonzero(src != dst))
    if exclude is not None:
        possible -= len(exclude)
    if count > possible:
        raise ParvecError(f"the graph has only {possible} non-edges; {count} were requested")
    banned = edge_keys if exclude is None else np.union1d(edge_keys, exclude)
    chosen = np.zeros(0, dtype=np.int64)
    while len(chosen) < count:
        need = count - len(chosen)
        m = int(need * 1.5) + 16
        a = rng.integers(0, n, m)
        b = rng.integers(0, n, m)
        ok = a != b
        keys = _pair_keys(a[ok], b[ok], n, directed)
        keys = keys[~np.isin(keys, banned)]
        # keep first occurrences in draw order so the sample is reproducible and unbiased
        _, first = np.unique(keys, return_index=True)
        keys = keys[np.sort(first)]
        keys = keys[~np.isin(keys, chosen)]
        chosen = np.concatenate([chosen, keys[:need]])
    return np.stack([chosen // n, chosen % n], axis=1)


def link_prediction(
    graph: Graph,
    embed: Callable[[Graph], np.ndarray],
    fraction: float = 0.5,
    seed: int = 0,
) -> dict[str, Any]:
    """ROC-AUC of link prediction with Hadamard features (node2vec's protocol, module docstring).

    ``embed(residual_graph)`` must return the ``(n_nodes, dim)`` vectors in graph node order
    (e.g. ``lambda g: Node2Vec(g, ...).fit_vectors()``).

    Example:
        >>> from parvec.graph.node2vec import Node2Vec
        >>> g = read_graph("ppi.edgelist")  # doctest: +SKIP
        >>> link_prediction(g, lambda r: Node2Vec(r, seed=1).fit_vectors())["roc_auc"]  # doctest: +SKIP
        0.7...
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    split = split_edges(graph, fraction, seed)
    rng = np.random.default_rng([seed, 0x5EED])
    n = graph.n_nodes
    test_pos = split.hidden
    r_src, r_dst, _ = split.residual.edge_list()
    nonloop = np.flatnonzero(r_src != r_dst)
    n_train = min(len(nonloop), len(test_pos))
    m = graph.n_other_edges()
    possible = n * (n - 1) // (1 if graph.directed else 2) - m
    if possible < len(test_pos) + n_train:
        raise ParvecError(
            f"{graph.where()}link prediction needs {len(test_pos) + n_train} non-edges ({len(test_pos)} to test "
            f"against the hidden edges, {n_train} to train on) but the graph ({n} nodes, {m} edges) has only "
            f"{possible}: it is too dense; hide a smaller fraction (--fraction)"
        )
    test_neg = sample_non_edges(graph, len(test_pos), rng)
    pick = rng.choice(nonloop, size=n_train, replace=False)
    train_pos = np.stack([r_src[pick], r_dst[pick]], axis=1)
    train_neg = sample_non_edges(
        graph, n_train, rng, exclude=_pair_keys(test_neg[:, 0], test_neg[:, 1], n, graph.directed)
    )
    vectors = np.asarray(embed(split.residual), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != n:
        raise ParvecError(f"embed returned an array of shape {vectors.shape} for {n} nodes")
    if not np.isfinite(vectors).all():
        raise ParvecError("embed returned vectors holding NaN or inf")

    def features(pairs: np.ndarray) -> np.ndarray:
        product: np.ndarray = vectors[pairs[:, 0]] * vectors[pairs[:, 1]]
        return product

    x_train = np.vstack([features(train_pos), features(train_neg)])
    y_train = np.r_[np.ones(len(train_pos)), np.zeros(len(train_neg))]
    x_test = np.vstack([features(test_pos), features(test_neg)])
    y_test = np.r_[np.ones(len(test_pos)), np.zeros(len(test_neg))]
    clf = LogisticRegression(max_iter=2000)
    clf.fit(x_train, y_train)
    auc = float(roc_auc_score(y_test, clf.predict_proba(x_test)[:, 1]))
    return {
        "roc_auc": auc,
        "fraction_hidden": float(
            len(test_pos) / max(1, len(test_pos) + split.residual.n_edges - split.residual.n_self_loops)
        ),
        "n_hidden": int(len(test_pos)),
        "n_train_pairs": int(len(x_train)),
        "n_test_pairs": int(len(x_test)),
        "residual_edges": int(split.residual.n_edges),
        "seed": int(seed),
    }
