"""``Node2Vec`` and ``DeepWalk``: walks from :mod:`parvec.graph.walks` streamed into parvec's trainer.

The pipeline, and why:

1. **Counting pass.** The trainer needs the vocabulary (nodes by descending walk frequency, the
   encoded-corpus invariant) before it starts, so the walks are generated once, batch by batch, and
   only counted (``np.bincount``).
2. **Ranking.** :func:`parvec.graph.walks.rank_nodes` maps node ids to rank ids (vocabulary order).
3. **Training.** The driver (:mod:`parvec.drivers`, its parts bound with ``bind``) pulls ``(tokens, offsets)``
   batches per epoch (:meth:`parvec.engine.SelfRunning.train_parts`). When the walks
   fit in ``cache_walks_mb`` (by default: no more than the two weight matrices take) the batches of
   the counting pass are kept (already remapped to ranks) and replayed; otherwise every epoch
   regenerates the *same* walks from the seed (walks are a pure function of graph, parameters and
   seed), so memory stays at one batch in flight.
4. The input vectors come back as a :class:`parvec.keyedvectors.KeyedVectors` keyed by the original
   node IDs, most frequent node first.

Checkpoints and exact resume (``checkpoint_dir``, ``checkpoint_every``; docs/long_runs.md).  A checkpoint
is a :class:`parvec.word2vec.Word2Vec` model directory written by the same machinery as ``parvec train``'s
(:mod:`parvec.checkpoints`): the vocabulary is the node ranking, the arrays the trainer's, the position the
trainer's chunk position.  The walks are *not* saved: they are a pure function of (graph, walk parameters,
seed), so model.json records their identity instead (the graph's SHA-256, the walk parameters and batch
size, which fix the chunks, and a CRC-32 of the walk stream) and a resumed run regenerates them, checks
the CRC and the node counts against the checkpoint, and skips the chunks already trained.  A different
graph or conflicting walk parameters are refused.  A checkpoint that cannot be written (a full disk) stops
the run, the previous one intact, or with ``on_checkpoint_error="continue"`` is skipped with a warning, as
:attr:`parvec.word2vec.Word2Vec.on_checkpoint_error`.

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

Defaults are GRAPE's node2vec settings with 3 epochs (dimensions 100, walks of 128 nodes, 10 walks per node,
window 5, negative 10, ``alpha=0.025``) and negatives drawn by walk count ** 0.25 (``ns_exponent``; word2vec's
0.75 for words): on BlogCatalog and PPI they score GRAPE's node classification F1 in under a tenth of its time,
where node2vec's reference settings (128, 80, 10, window 10, negative 5, 1 epoch) score 0.03 micro- and 0.05
macro-F1 lower, and the exponent 0.25 raised macro-F1 by 0.004-0.007 over 0.75 (docs/guide/graphs.md has the
measurements); none depends on the graph.  Subsampling is off
(``sample=0``), as SNAP's C++ node2vec (the Python reference and PecanPy inherit gensim's 1e-3).  A node's share
of the walks is about its share of the edge ends, so 1e-3 thins only nodes holding more than 0.1% of them: 2-3% of
the tokens of BlogCatalog, PPI or Cora, but every node of a graph with under 500 edges (79% of karate's walks
dropped, and one epoch then leaves the vectors collapsed; docs/training.md has the measurements).
"""

from __future__ import annotations

import logging
import os
import time
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from parvec import capabilities
from parvec.config import GRAPH_NS_EXPONENT
from parvec.errors import CheckpointError, ParvecError
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
from parvec.run import KeptRun, Run, RunOptions, RunState, resume_epochs
from parvec.schedule import Schedule

if TYPE_CHECKING:
    from parvec.engine import PartsDriver, TrainStats
    from parvec.keyedvectors import KeyedVectors
    from parvec.model_io import SavedModel

__all__ = ["Node2Vec", "DeepWalk"]

log = logging.getLogger(__name__)


def _as_graph(graph: Graph | str | os.PathLike[str], weighted: bool | None, directed: bool | None,
              delimiter: str | None, implicit_ids: bool) -> Graph:
    """The graph to walk: ``graph`` itself (checked against ``weighted``/``directed``; ``weighted=False`` drops its
    weights) or read from the path; a graph without nodes is refused."""
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
        graph = read_graph(graph, weighted=bool(weighted), directed=bool(directed), delimiter=delimiter,
                           implicit_ids=implicit_ids)
    if graph.n_nodes == 0:
        raise ParvecError("the graph has no nodes")
    return graph


class Node2Vec(KeptRun):
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
        dimensions: int = 100,
        walk_length: int = 128,
        num_walks: int = 10,
        window: int = 5,
        p: float = 1.0,
        q: float = 1.0,
        weighted: bool | None = None,
        directed: bool | None = None,
        epochs: int = 3,
        workers: int | None = None,
        seed: int = 1,
        algo: str | None = None,
        negative: int = 10,
        ns_exponent: float = GRAPH_NS_EXPONENT,
        sample: float = 0.0,
        alpha: float | None = 0.025,
        min_alpha: float | None = None,
        batch_walks: int | None = None,
        cache_walks_mb: float | None = None,
        delimiter: str | None = None,
        implicit_ids: bool = False,
        progress: bool | None = False,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        checkpoint_every: str | int | None = None,
        on_checkpoint_error: str = "stop",
        **train_options: Any,
    ) -> None:
        cluster = train_options.pop("cluster", None)
        if cluster is not None:  # not on a cluster yet (parvec.capabilities)
            capabilities.check(capabilities.mode_of(None, cluster), graphs=True)
        self.graph = graph = _as_graph(graph, weighted, directed, delimiter, implicit_ids)
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
            ns_exponent=ns_exponent,
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
        # With a run_log (a parvec.runlog.RunLog: the run for `parvec report`) and eval_labels (Labels from
        # parvec.graph.evaluation.read_labels) each epoch is scored by node classification at 50% training.
        self.eval_labels: Any = None
        self.eval_labels_source = "labels"
        self.eval_seconds = 0.0
        self.train_stats: TrainStats | None = None
        self.n_tokens = 0
        self.walks_crc32: int | None = None  # of the walk stream (node ids and batch offsets), after count_pass
        # Checkpoints (module docstring): epoch-end ones in checkpoint_dir/checkpoint, mid-epoch ones every
        # checkpoint_every; on_checkpoint_saved(path, position or None, seconds) is told of each (parvec.run).
        self.run_options = RunOptions(checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every,
                                      on_checkpoint_error=on_checkpoint_error)
        self.run_options.check_checkpoints(False, 0)
        if checkpoint_dir is not None:
            capabilities.check_graph_checkpoints(self.config.device)
        self.state = RunState()
        self.resumed_from: SavedModel | None = None  # the checkpoint this model continues, see from_checkpoint
        self.resumed_path: str | None = None
        self.saved_threads: int | None = None  # the checkpoint's thread count, when resumed

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
        crc = 0
        for tokens, offsets in self._batches(None):
            crc = zlib.crc32(offsets.data.cast("B"), zlib.crc32(tokens.data.cast("B"), crc))
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
        self.walks_crc32 = crc & 0xFFFFFFFF
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
        from parvec.drivers import parts_driver
        from parvec.model_tables import init_half_width, init_input_vectors

        t0 = time.perf_counter()
        ranking, cached = self.count_pass()
        self.timings["walks"] = time.perf_counter() - t0
        self.ranking = ranking
        self._check_paired()
        resumed = self.resumed_from
        if resumed is not None:
            self._check_resumed_walks(ranking)

        def make_parts(epoch: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
            if cached is not None:
                return iter(cached)
            return self._batches(ranking.rank)

        n = len(ranking.counts)
        # What trains the walks: the CPU threads or the GPU; a resumed run starts from the checkpoint's vectors.
        driver = parts_driver(self.config, ranking.counts, resumed.vectors if resumed is not None else None,
                              resumed.syn1neg if resumed is not None else None).bind(make_parts)
        assert self.paired is not None
        alone = ranking.rank[~self.paired]  # nodes that meet no other node: their rows are put back after training
        if resumed is not None and len(alone):  # their initial rows: a pure function of (n, dim, seed)
            initial = init_input_vectors(n, self.config.dim, self.config.seed,
                                         half_width=init_half_width(self.config))[alone]
        else:
            initial = driver.w_in[alone].copy()
        run = self._run(driver, ranking)
        t1 = time.perf_counter()
        self.train_stats = run.execute()
        self.eval_seconds = run.eval_seconds
        self.timings["train"] = time.perf_counter() - t1 - self.eval_seconds
        self.timings["walks_cached"] = float(cached is not None)
        w_in = driver.w_in
        w_in[alone] = initial
        del driver, run, make_parts  # the output vectors and the cached walks go before the copy below
        cached = None
        self.node_vectors = w_in[ranking.rank]
        return w_in, ranking

    def _run(self, driver: PartsDriver, ranking: NodeRanking) -> Run:
        # The run of the walks (parvec.run): a resumed one continues its checkpoint's position and schedule; its
        # checkpoints are model directories of the driver's arrays (the vocabulary is the node ranking, graph_run
        # identifies the walks); with eval_labels each epoch is scored by node classification at 50% training.
        from parvec.corpus import ReadOptions
        from parvec.model_io import SavedModel
        from parvec.vocab import Vocab

        state, resumed, config = self.state, self.resumed_from, self.config
        begin = Run.start(config, state, resume=resumed is not None, epochs=config.epochs,
                          words_per_epoch=self.n_tokens)
        if resumed is not None:
            vocab, read_options = resumed.vocab, dict(resumed.read_options or {})
        else:
            ids = self.graph.node_ids
            vocab = Vocab([ids[i] for i in ranking.order.tolist()], ranking.counts)
            read_options = ReadOptions(min_count=1).__dict__
        graph_run = self._graph_run()
        every = None if self.checkpoint_every is None else str(self.checkpoint_every)
        corpus_count = self.graph.n_nodes * self.spec.num_walks

        def describe(position: Any, epochs_trained: int) -> SavedModel:
            return SavedModel(config=config, vocab=vocab, vectors=driver.w_in, syn1neg=driver.w_out,
                              read_options=read_options, epochs_trained=epochs_trained, corpus_words=self.n_tokens,
                              raw_words=self.n_tokens, corpus_count=corpus_count, position=position,
                              run_id=state.run_id, checkpoint_every=every, schedule_anchor=state.schedule_anchor,
                              graph_run=graph_run)

        def score() -> dict[str, float | None]:
            scores = self.classify(driver.w_in[ranking.rank], train_fractions=[0.5], repeats=3)[0]
            return {"micro_f1": scores["micro_f1"], "macro_f1": scores["macro_f1"]}

        schedule = Schedule.of(config, self.n_tokens, anchor=state.schedule_anchor)
        return Run(driver, config, schedule, self.run_options, state, describe=describe, start_epoch=begin.epoch,
                   resume_at=begin.at, score=score if self.eval_labels is not None else None)

    # ------------------------------------------------------------------------------------------
    # Checkpoints and resume (module docstring): the checkpoint is a Word2Vec model directory (parvec.model_io,
    # through Word2Vec.save / parvec.word2vec.load_for_resume); graph_run in its model.json identifies the walks.
    def _graph_run(self) -> dict[str, Any]:
        g, spec = self.graph, self.spec
        return {
            "command": "deepwalk" if isinstance(self, DeepWalk) else "node2vec",
            "graph": {"source": g.source, "sha256": g.fingerprint(), "nodes": g.n_nodes, "edges": g.n_edges,
                      "weighted": g.weighted, "directed": g.directed},
            "walks": {"walk_length": spec.walk_length, "num_walks": spec.num_walks, "p": spec.p, "q": spec.q,
                      "seed": spec.seed, "batch_walks": self.batch_walks, "tokens": self.n_tokens,
                      "crc32": self.walks_crc32},
        }

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike[str],
        graph: Graph | str | os.PathLike[str],
        *,
        workers: int | None = None,
        epochs: int | None = None,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        checkpoint_every: str | int | None = None,
        progress: bool | None = False,
        delimiter: str | None = None,
        implicit_ids: bool = False,
        flag_names: dict[str, str] | None = None,
        on_checkpoint_error: str = "stop",
        **expected: Any,
    ) -> Node2Vec:
        """The run saved in a checkpoint (``path``: a checkpoint, or a checkpoint directory's latest), set to
        continue on ``graph`` from its exact position: :meth:`fit` finishes it, and at one thread the vectors
        equal the uninterrupted run's bit for bit.

        The walk and training parameters are the checkpoint's; ``expected`` (any constructor argument, e.g.
        ``p=0.5``) is checked against them, and a different value is refused, as is a different graph (its
        SHA-256 differs from the checkpoint's).  ``workers`` overrides the saved thread count; ``epochs``
        other than the saved ones applies from the checkpoint on (not lower than the epochs begun);
        ``checkpoint_dir`` defaults to the checkpoint's directory and ``checkpoint_every`` to its interval.
        ``flag_names`` (``{"p": "--p"}``) names the parameters in the refusal as the command line does.

        Example:
            >>> Node2Vec(g, checkpoint_dir="ck", checkpoint_every="1M", seed=3).fit()  # doctest: +SKIP
            >>> kv = Node2Vec.from_checkpoint("ck", g).fit()  # after a kill: the same vectors  # doctest: +SKIP
        """
        from parvec.checkpoints import EPOCH_END

        ck = _read_checkpoint(path)
        saved, where, spec = ck.saved, ck.where, ck.spec
        cfg = saved.config
        _check_expected(ck, expected, flag_names or {})
        kind = DeepWalk if ck.command == "deepwalk" else Node2Vec
        if not issubclass(kind, cls):
            raise ParvecError(f"{where}: a checkpoint of a node2vec run (p={spec.p}, q={spec.q}), not of DeepWalk: "
                              "resume it with `parvec node2vec`")
        graph = _checkpoint_graph(ck, graph, delimiter, implicit_ids)
        if checkpoint_dir is None and (where.name == EPOCH_END or where.name.startswith("mid-e")):
            checkpoint_dir = where.parent  # checkpoints continue beside the one resumed
        if checkpoint_every is None and checkpoint_dir is not None:
            checkpoint_every = saved.checkpoint_every  # at the saved interval
        self = kind.__new__(kind)
        Node2Vec.__init__(
            self, graph, dimensions=cfg.dim, walk_length=spec.walk_length, num_walks=spec.num_walks,
            window=cfg.window, p=spec.p, q=spec.q, epochs=cfg.epochs, seed=spec.seed, algo=cfg.algo,
            workers=cfg.threads if workers is None else workers, negative=cfg.negative,
            ns_exponent=cfg.ns_exponent, sample=cfg.sample, alpha=cfg.alpha, min_alpha=cfg.min_alpha,
            batch_walks=ck.batch_walks, progress=progress,
            checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every, on_checkpoint_error=on_checkpoint_error,
        )  # fmt: skip
        threads, self.saved_threads = self.config.threads, cfg.threads
        self.config = cfg  # every saved field (chunk_words, ns_exponent, ...), the thread count aside
        self.config.threads = threads
        self.config.progress = progress
        self.state = RunState.from_saved(saved)
        if epochs is not None and epochs != cfg.epochs:
            resume_epochs(self.config, self.state, epochs, int(ck.walks.get("tokens") or 1))
        self.resumed_from, self.resumed_path = saved, str(where)
        return self

    def _check_resumed_walks(self, ranking: NodeRanking) -> None:
        # The regenerated walks must be the checkpoint's: the same stream (CRC-32) and node ranking.
        resumed = self.resumed_from
        assert resumed is not None and resumed.graph_run is not None
        walks = resumed.graph_run["walks"]
        vocab = resumed.vocab
        assert vocab is not None, "a graph run's checkpoint holds its vocabulary (vocab.json)"
        ids = self.graph.node_ids
        same = (walks.get("crc32") == self.walks_crc32 and walks.get("tokens") == self.n_tokens
                and np.array_equal(vocab.counts, ranking.counts)
                and vocab.words == [ids[i] for i in ranking.order.tolist()])
        if not same:
            raise ParvecError(f"cannot resume {self.resumed_path}: the walks regenerated from the graph and the saved "
                              f"parameters differ from the checkpoint's ({self.n_tokens:,} tokens, CRC-32 "
                              f"{self.walks_crc32:08x}; the checkpoint's {walks.get('tokens')} tokens, CRC-32 "
                              f"{walks.get('crc32') or 0:08x}): a different parvec version's walks?")

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


class _Checkpoint:
    """A node2vec/DeepWalk checkpoint read for :meth:`Node2Vec.from_checkpoint`: what :func:`parvec.model_io.load`
    read, where, and its ``graph_run`` (the walk parameters, the graph's identity, which command trained it)."""

    def __init__(self, saved: SavedModel, where: Any) -> None:
        run = saved.graph_run
        if not isinstance(run, dict):
            raise ParvecError(f"{where}: a checkpoint of `parvec train` (words), not of a node2vec/DeepWalk run: "
                              f"resume it with `parvec train CORPUS --resume {where}`")
        try:
            self.graph_record, self.walks = dict(run["graph"]), dict(run["walks"])
            w = self.walks
            self.spec = WalkSpec(walk_length=int(w["walk_length"]), num_walks=int(w["num_walks"]), p=float(w["p"]),
                                 q=float(w["q"]), seed=int(w["seed"]))
            self.batch_walks, self.weighted = int(w["batch_walks"]), bool(self.graph_record["weighted"])
            self.directed = bool(self.graph_record["directed"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{where}/model.json: damaged graph_run ({exc})") from None
        self.saved, self.where, self.command = saved, where, run.get("command")


def _read_checkpoint(path: str | os.PathLike[str]) -> _Checkpoint:
    # The checkpoint (the latest in a checkpoint directory; a damaged one names the previous intact one).
    from parvec import model_io
    from parvec.checkpoints import load_for_resume

    saved, where, note = load_for_resume(path, model_io.load)
    if note:
        log.info("%s", note)
    return _Checkpoint(saved, where)


def _check_expected(ck: _Checkpoint, expected: dict[str, Any], names: dict[str, str]) -> None:
    # Parameters given to from_checkpoint must be the checkpoint's (names: how the command line spells them).
    cfg, spec = ck.saved.config, ck.spec
    saved = {"dimensions": cfg.dim, "walk_length": spec.walk_length, "num_walks": spec.num_walks, "p": spec.p,
             "q": spec.q, "window": cfg.window, "negative": cfg.negative, "ns_exponent": cfg.ns_exponent,
             "sample": cfg.sample, "alpha": cfg.alpha, "min_alpha": cfg.min_alpha, "seed": spec.seed,
             "algo": cfg.algo, "batch_walks": ck.batch_walks, "weighted": ck.weighted, "directed": ck.directed}
    conflicts = [(f"{names[k]} {v}" if k in names else f"{k}={v!r}") + f" (the checkpoint has {saved[k]})"
                 for k, v in expected.items() if k in saved and v is not None and v != saved[k]]
    unknown = sorted(set(expected) - set(saved))
    if unknown:
        raise ParvecError(f"from_checkpoint: unknown or not checkable parameters {', '.join(unknown)}")
    if conflicts:
        raise ParvecError(f"cannot resume {ck.where} with different parameters: {'; '.join(conflicts)}; a resumed "
                          "run keeps its saved walk and training parameters (leave these out), or start a new run")


def _checkpoint_graph(ck: _Checkpoint, graph: Graph | str | os.PathLike[str], delimiter: str | None,
                      implicit_ids: bool) -> Graph:
    # The graph to resume on, read with the checkpoint's weighted/directed: the one it was trained on (SHA-256).
    where, weighted, directed, record = ck.where, ck.weighted, ck.directed, ck.graph_record
    if not isinstance(graph, Graph):
        graph = read_graph(graph, weighted=weighted, directed=directed, delimiter=delimiter, implicit_ids=implicit_ids)
    elif weighted != graph.weighted or directed != graph.directed:
        raise ParvecError(f"cannot resume {where}: it was trained on a{' weighted' if weighted else 'n unweighted'}"
                          f", {'directed' if directed else 'undirected'} graph")
    fingerprint = graph.fingerprint()
    if fingerprint != record.get("sha256"):
        theirs = f"{record.get('source')}: {record.get('nodes')} nodes, {record.get('edges')} edges"
        raise ParvecError(
            f"cannot resume {where}: {graph.where() or 'this graph: '}not the graph the checkpoint was trained on "
            f"({graph.n_nodes} nodes, {graph.n_edges} edges, SHA-256 {fingerprint[:12]}...; the checkpoint's "
            f"{theirs}, SHA-256 {str(record.get('sha256'))[:12]}...); give the same graph and the same "
            "--weighted, --directed, --delimiter, --implicit-ids")
    return graph


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
