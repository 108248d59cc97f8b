"""``Node2Vec`` and ``DeepWalk``: walks from :mod:`parvec.graph.walks` streamed into parvec's trainer.

The pipeline, and why:

1. **Counting pass.** The trainer needs the vocabulary (nodes by descending walk frequency, the
   encoded-corpus invariant) before it starts, so the walks are generated once, batch by batch, and
   only counted (``np.bincount``).
2. **Ranking.** :func:`parvec.graph.walks.rank_nodes` maps node ids to rank ids (vocabulary order).
3. **Training.** ``Trainer.train_parts`` pulls ``(tokens, offsets)`` batches per epoch. When the walks
   fit in ``cache_walks_mb`` (by default: no more than the two weight matrices take) the batches of
   the counting pass are kept (already remapped to ranks) and replayed; otherwise every epoch
   regenerates the *same* walks from the seed (walks are a pure function of graph, parameters and
   seed), so memory stays at one batch in flight.
4. The input vectors come back as a :class:`parvec.keyedvectors.KeyedVectors` keyed by the original
   node IDs, most frequent node first.

Nodes that learn nothing.  The counting pass also marks the nodes that stand next to a different node in
some walk (:func:`parvec.graph.walks.mark_paired`; the window is never narrower than 1, so these are the
nodes that meet another node in a training window).  The others learn nothing from the graph, and keep
their random initial vectors: an isolated node's walks have no pair, so word2vec.c and PecanPy leave
its vector as initialised too; parvec also puts back the initial vector of a node whose only updates
came from pairing with itself (a self-loop) or from PAR's repulsion (which moves every walk's nodes), so
the rule holds for every algorithm.  They stay in the output (every node of the graph has a vector) and
a warning counts them; when no node meets another (no edge between two different nodes: only
self-loops, or only zero-weight edges, which are dropped when read; or ``walk_length`` 1) training is
refused with a :class:`ParvecError` before it starts.

Defaults follow node2vec's reference implementation (dimensions 128, walk length 80, 10 walks per
node, window 10, 1 epoch, ``alpha=0.025``, negative 5) except subsampling: ``sample=0``, as SNAP's C++
node2vec (the Python reference and PecanPy inherit gensim's 1e-3).  A node's share of the walks is about
its share of the edge ends, so 1e-3 thins only nodes holding more than 0.1% of them: 2-3% of the tokens
of BlogCatalog, PPI or Cora, but every node of a graph with under 500 edges (79% of karate's walks
dropped, and one epoch then leaves the vectors collapsed; docs/training.md has the measurements).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from parvec.errors import ParvecError
from parvec.graph.graph_io import Graph, read_graph
from parvec.graph.walks import (
    NodeRanking,
    WalkSpec,
    count_nodes,
    default_batch_walks,
    iter_walk_batches,
    mark_paired,
    rank_nodes,
)

if TYPE_CHECKING:
    from parvec.keyedvectors import KeyedVectors

__all__ = ["Node2Vec", "DeepWalk"]

log = logging.getLogger(__name__)


class Node2Vec:
    """node2vec embeddings (Grover & Leskovec 2016): biased second-order walks + skip-gram.

    ``graph`` is a :class:`Graph` or a path (read with ``weighted``, ``directed``, ``delimiter``,
    ``implicit_ids``). For a :class:`Graph`, ``weighted=False`` ignores its weights.
    Extra keyword arguments go to :class:`parvec.config.TrainConfig` (e.g. ``chunk_words``).
    A graph without an edge between two different nodes, or ``walk_length`` 1, is refused; nodes that
    never meet another node in a walk keep their random initial vectors, with a warning counting them
    (module docstring).

    Example:
        >>> g = Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 0], n_nodes=4)
        >>> model = Node2Vec(g, dimensions=8, walk_length=10, num_walks=5, window=2, workers=1,
        ...                  algo="classic", p=0.5, q=2.0, seed=7)
        >>> kv = model.fit()  # doctest: +SKIP
        >>> kv["0"].shape  # doctest: +SKIP
        (8,)
    """

    def __init__(
        self,
        graph: Graph | str | os.PathLike[str],
        dimensions: int = 128,
        walk_length: int = 80,
        num_walks: int = 10,
        window: int = 10,
        p: float = 1.0,
        q: float = 1.0,
        weighted: bool | None = None,
        directed: bool | None = None,
        epochs: int = 1,
        workers: int | None = None,
        seed: int = 1,
        algo: str | None = None,
        negative: int = 5,
        sample: float = 0.0,
        alpha: float = 0.025,
        min_alpha: float | None = None,
        batch_walks: int | None = None,
        cache_walks_mb: float | None = None,
        delimiter: str | None = None,
        implicit_ids: bool = False,
        progress: bool | None = False,
        **train_options: Any,
    ) -> None:
        if train_options.pop("cluster", None) is not None:
            raise ParvecError("Node2Vec(cluster=...): training node2vec/DeepWalk on a Ray cluster is not supported "
                              "yet; train on one machine (leave cluster out)")
        if isinstance(graph, Graph):
            if directed is not None and bool(directed) != graph.directed:
                raise ParvecError(
                    f"directed={directed} but the graph was read as {'directed' if graph.directed else 'undirected'}"
                )
            if weighted is True and not graph.weighted:
                raise ParvecError("weighted=True but the graph has no weights (read it with weighted=True)")
            if weighted is False and graph.weighted:
                graph = Graph(graph.indptr, graph.indices, None, graph.node_ids, graph.directed, source=graph.source)
        else:
            graph = read_graph(
                graph,
                weighted=bool(weighted),
                directed=bool(directed),
                delimiter=delimiter,
                implicit_ids=implicit_ids,
            )
        if graph.n_nodes == 0:
            raise ParvecError("the graph has no nodes")
        self.graph = graph
        self.spec = WalkSpec(walk_length=walk_length, num_walks=num_walks, p=p, q=q, seed=seed)
        self.spec.validate()
        if walk_length < 2:
            raise ParvecError(
                f"walk_length (--walk-length) is {walk_length}: a walk of one node has no neighbour to learn "
                "from, so nothing would be trained; use 2 or more (node2vec's default is 80)"
            )
        from parvec.config import DEFAULT_ALGO, DEFAULT_GPU_ALGO, TrainConfig, default_threads

        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise ParvecError(f"workers must be a positive integer (None = all cores), got {workers!r}")
        self.workers = workers if workers is not None else default_threads()
        self.config = TrainConfig(
            algo=algo or (DEFAULT_GPU_ALGO if train_options.get("device") == "cuda" else DEFAULT_ALGO),
            dim=dimensions,
            window=window,
            negative=negative,
            sample=sample,
            alpha=alpha,
            min_alpha=min_alpha,
            epochs=epochs,
            threads=self.workers,
            seed=seed,
            max_sentence_length=max(int(walk_length), 10000),
            progress=progress,
            **train_options,
        ).validate()
        if batch_walks is not None and batch_walks < 1:
            raise ParvecError(f"batch_walks must be positive, got {batch_walks}")
        self.batch_walks = batch_walks or default_batch_walks(graph, walk_length)
        if cache_walks_mb is None:
            # Keep the walks only if they take no more memory than the two weight matrices, so
            # walks + training stay within 2x (graph + vectors + one batch); else regenerate them.
            cache_walks_mb = 2 * graph.n_nodes * dimensions * 4 / (1 << 20)
        if cache_walks_mb < 0:
            raise ParvecError(f"cache_walks_mb must be >= 0, got {cache_walks_mb}")
        self.cache_walks_mb = cache_walks_mb
        if graph.n_other_edges() == 0:
            loops = graph.n_self_loops
            what = f"only {loops} self-loop{'s' if loops != 1 else ''}" if loops else "no edges"
            raise ParvecError(
                f"{graph.where()}no edge joins two different nodes ({graph.n_nodes} nodes, {what}; edges of weight "
                "0 are dropped when read): walks never leave their start node, so there is nothing to learn"
            )
        self.ranking: NodeRanking | None = None
        # after the counting pass: which nodes meet a different node in some walk (graph node order)
        self.paired: np.ndarray | None = None
        self.node_vectors: np.ndarray | None = None  # (n_nodes, dim), rows in graph node order
        self.timings: dict[str, float] = {}
        # A parvec.runlog.RunLog here records the run for `parvec report`; with eval_labels (Labels from
        # parvec.graph.evaluation.read_labels) each epoch is scored by node classification at 50% training.
        self.run_log: Any = None
        self.eval_labels: Any = None
        self.eval_labels_source = "labels"
        self.eval_seconds = 0.0
        self.train_stats = None
        self.n_tokens = 0

    # ------------------------------------------------------------------------------------------
    def _batches(self, node_map: np.ndarray | None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        return iter_walk_batches(
            self.graph, self.spec, batch_walks=self.batch_walks, node_map=node_map, workers=self.workers
        )

    def count_pass(self) -> tuple[NodeRanking, list[tuple[np.ndarray, np.ndarray]] | None]:
        """Walk once to count node frequencies; returns the ranking and (if it fits) the walks in rank ids.

        Also sets ``paired``: which nodes stand next to a different node in some walk.

        Example:
            >>> g = Graph.from_edges([0, 1], [1, 2], n_nodes=3)
            >>> ranking, cached = Node2Vec(g, walk_length=4, num_walks=2, workers=1).count_pass()
            >>> int(ranking.counts.sum()), len(cached)  # one batch per round here
            (24, 2)
        """
        n = self.graph.n_nodes
        expected = n * self.spec.num_walks * self.spec.walk_length * 4 + n * self.spec.num_walks * 8
        keep = expected <= self.cache_walks_mb * (1 << 20)
        counts = np.zeros(n, dtype=np.int64)
        paired = np.zeros(n, dtype=bool)
        cached: list[tuple[np.ndarray, np.ndarray]] | None = [] if keep else None
        for tokens, offsets in self._batches(None):
            count_nodes(tokens, n, counts)
            mark_paired(tokens, offsets, paired)
            if cached is not None:
                cached.append((tokens, offsets))
        ranking = rank_nodes(counts)
        if cached is not None:
            rank = ranking.rank
            for tokens, _ in cached:
                np.take(rank, tokens, out=tokens)  # in place: node ids -> vocabulary ranks
        self.n_tokens = int(counts.sum())
        self.paired = paired
        return ranking, cached

    def _check_paired(self) -> None:
        """Refuse to train when no node meets another in a walk; warn with the count when some do not."""
        paired = self.paired
        assert paired is not None
        where = self.graph.where()
        if not paired.any():
            raise ParvecError(
                f"{where}no walk reached a second node (walk_length={self.spec.walk_length}, "
                f"num_walks={self.spec.num_walks}), so there is nothing to learn; raise walk_length or num_walks"
            )
        alone = np.flatnonzero(~paired)
        if len(alone):
            ids = self.graph.node_ids
            examples = ", ".join(repr(ids[i]) for i in alone[:3].tolist()) + (", ..." if len(alone) > 3 else "")
            log.warning(
                "%s%d of %d nodes never share a walk with another node (e.g. %s): they have no edge to another "
                "node (isolated, only self-loops or zero-weight edges), so they learn nothing from the graph and "
                "keep their random initial vectors, as isolated nodes do in word2vec.c and PecanPy; leave them out "
                "of evaluations",
                where, len(alone), len(paired), examples,
            )

    def fit(self) -> KeyedVectors:
        """Walk, train, and return the node vectors keyed by the original node IDs.

        Also sets ``node_vectors`` (rows in graph node order), ``ranking``, ``timings``
        (``walks``: the counting pass; ``train``: the trainer, including any walk regeneration) and
        ``train_stats``.

        Example:
            >>> kv = Node2Vec("karate.edgelist", dimensions=16, seed=1).fit()  # doctest: +SKIP
            >>> kv.most_similar("0", topn=3)  # doctest: +SKIP
        """
        w_in, ranking = self._train()
        return self._keyed_vectors(w_in, ranking)

    def fit_vectors(self) -> np.ndarray:
        """Like :meth:`fit` but returns the plain ``(n_nodes, dimensions)`` array in graph node order.

        Example:
            >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0], n_nodes=3)
            >>> model = Node2Vec(g, dimensions=4, walk_length=5, num_walks=2, workers=1, algo="classic")
            >>> model.fit_vectors().shape
            (3, 4)
        """
        self._train()
        assert self.node_vectors is not None
        return self.node_vectors

    def _train(self) -> tuple[np.ndarray, NodeRanking]:
        from parvec.trainer import Trainer

        t0 = time.perf_counter()
        ranking, cached = self.count_pass()
        self.timings["walks"] = time.perf_counter() - t0
        self.ranking = ranking
        self._check_paired()

        def make_parts(epoch: int):
            if cached is not None:
                return iter(cached)
            return self._batches(ranking.rank)

        if self.config.device == "cuda":  # the GPU driver takes the same walks as parts
            from parvec.gpu import make_trainer
            from parvec.trainer import init_input_vectors

            n, dim = len(ranking.counts), self.config.dim
            trainer = make_trainer(self.config, ranking.counts, init_input_vectors(n, dim, self.config.seed),
                                   np.zeros((n, dim), dtype=np.float32))
        else:
            trainer = Trainer(self.config, ranking.counts)
        on_epoch_end = self._recorder(trainer, ranking)
        assert self.paired is not None
        alone = ranking.rank[~self.paired]  # nodes that meet no other node: their rows are put back after training
        initial = trainer.w_in[alone].copy()
        t1 = time.perf_counter()
        self.train_stats = trainer.train_parts(make_parts, words_per_epoch=self.n_tokens, on_epoch_end=on_epoch_end)
        if self.eval_seconds:  # words/s is training's, not the per-epoch evaluation's
            self.train_stats.seconds = max(0.0, self.train_stats.seconds - self.eval_seconds)
        self.timings["train"] = time.perf_counter() - t1 - self.eval_seconds
        self.timings["walks_cached"] = float(cached is not None)
        w_in = trainer.w_in
        w_in[alone] = initial
        del trainer, make_parts  # the output vectors and the cached walks go before the copy below
        cached = None
        self.node_vectors = w_in[ranking.rank]
        return w_in, ranking

    def _recorder(self, trainer: Any, ranking: NodeRanking) -> Any:
        # With a RunLog: the time series, and per epoch the loss and (with eval_labels) node classification.
        log = self.run_log
        self.eval_seconds = 0.0
        if log is None:
            return None
        log.new_call()
        trainer.on_progress = log.progress
        started = time.perf_counter()
        cfg = self.config

        def on_epoch_end(epoch: int, stats: Any) -> None:
            scores, t_eval = None, None
            if self.eval_labels is not None:
                t0 = time.perf_counter()
                scores = self.classify(trainer.w_in[ranking.rank], train_fractions=[0.5], repeats=3)
                t_eval = time.perf_counter() - t0
                self.eval_seconds += t_eval
                log.pause(t_eval)
            lr = cfg.alpha - (cfg.alpha - cfg.final_alpha) * min(1.0, (epoch + 1) / cfg.epochs)
            log.epoch_end(epoch=epoch, words=stats.words_per_epoch[-1] if stats.words_per_epoch else 0,
                          loss=stats.loss_per_epoch[-1] if stats.loss_per_epoch else None,
                          seconds=time.perf_counter() - started - self.eval_seconds, lr=lr,
                          scores=None if scores is None else {"micro_f1": scores[0]["micro_f1"],
                                                              "macro_f1": scores[0]["macro_f1"]},
                          eval_seconds=t_eval)

        return on_epoch_end

    def classify(self, node_vectors: np.ndarray, train_fractions: Any = None, repeats: int = 3) -> list[dict]:
        """Node classification of ``node_vectors`` (rows in graph node order) against ``eval_labels``:
        ``[{"fraction", "micro_f1", "macro_f1"}, ...]``, means over ``repeats`` random splits.

        Example:
            >>> model.eval_labels = read_labels("blogcatalog.labels"); model.fit()  # doctest: +SKIP
            >>> model.classify(model.node_vectors, [0.5])[0]["micro_f1"]  # doctest: +SKIP
            0.38
        """
        from parvec.graph.evaluation import DEFAULT_FRACTIONS, align_labels, node_classification

        labels = self.eval_labels
        if labels is None:
            raise ParvecError("classify: set eval_labels (parvec.graph.evaluation.read_labels) first")
        rows, y = align_labels(self.graph.node_ids, labels, source=self.eval_labels_source)
        result = node_classification(node_vectors[rows], y, list(train_fractions or DEFAULT_FRACTIONS),
                                     repeats=repeats, seed=self.spec.seed, source=self.eval_labels_source,
                                     label_names=labels.label_names)
        return [{"fraction": r["train_fraction"], "micro_f1": r["micro_f1_mean"], "macro_f1": r["macro_f1_mean"]}
                for r in result["results"]]

    def _keyed_vectors(self, w_in: np.ndarray, ranking: NodeRanking) -> KeyedVectors:
        from parvec.keyedvectors import KeyedVectors

        ids = self.graph.node_ids
        keys = [ids[i] for i in ranking.order.tolist()]
        return KeyedVectors(w_in, keys, counts=ranking.counts)

    def keyed_arrays(self) -> tuple[np.ndarray, list[str], np.ndarray]:
        """After fitting: ``(vectors, node IDs, counts)`` with the most frequent node first.

        Example:
            >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0], n_nodes=3)
            >>> m = Node2Vec(g, dimensions=4, walk_length=5, num_walks=2, workers=1, algo="classic")
            >>> _ = m.fit_vectors(); vectors, keys, counts = m.keyed_arrays()
            >>> sorted(keys), int(counts.sum())
            (['0', '1', '2'], 30)
        """
        if self.node_vectors is None or self.ranking is None:
            raise ParvecError("the model is not trained yet: call fit() first")
        order = self.ranking.order
        ids = self.graph.node_ids
        return self.node_vectors[order], [ids[i] for i in order.tolist()], self.ranking.counts

    def walks(self) -> Iterator[list[str]]:
        """The walks as lists of node ID strings (slow; for inspection and for other trainers).

        Example:
            >>> g = Graph.from_edges([0], [1], n_nodes=2)
            >>> len(next(Node2Vec(g, walk_length=3, num_walks=1, workers=1).walks()))
            3
        """
        ids = self.graph.node_ids
        for tokens, offsets in self._batches(None):
            for i in range(len(offsets) - 1):
                yield [ids[t] for t in tokens[offsets[i] : offsets[i + 1]].tolist()]


class DeepWalk(Node2Vec):
    """DeepWalk (Perozzi et al. 2014): uniform (or weight-proportional) walks + skip-gram (p = q = 1).

    Example:
        >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0], n_nodes=3)
        >>> DeepWalk(g, dimensions=8, walk_length=5, num_walks=2, workers=1).spec.second_order
        False
    """

    def __init__(self, graph: Graph | str | os.PathLike[str], **kwargs: Any) -> None:
        for name in ("p", "q"):
            if name in kwargs and kwargs[name] != 1:
                raise ParvecError(f"DeepWalk has no {name} parameter (it is node2vec with p = q = 1)")
            kwargs.pop(name, None)
        super().__init__(graph, **kwargs)
