"""The memory a cluster run takes on this machine: every process it starts, by mode, before Ray starts.

A one-process run needs its vectors and its encoded corpus (:func:`parvec.trainer.estimate_memory`).  A
cluster run started here (``--cluster local:N``) needs far more, in several processes at once:

- **the driver** (this process): the model (``2 V d`` float32, input and output vectors), its corpus (unless
  memory-mapped from the encoded-corpus cache), the vocabulary as Python strings;
- **replicas mode**: ``R`` replica actors, each with a whole model, the overlapped syncs' two copies of the top
  rows (:func:`parvec.distributed.replica_plan.overlap_rows_cap`; a quarter of the model at most, for
  ``V >= 8 x min_sync_words``), and its share of the corpus (memory-mapped
  cache pages and its sentence offsets; :func:`parvec.distributed.replica_actor.load_share`), the per-word tables
  (counts, subsampling, the noise alias table) and the vocabulary; Ray's object store holds the model the
  driver sends out and the one replica 0 sends back (``2 x 2 V d``); a sync board actor;
- **sharded mode**: ``S`` shard actors, each with its columns of both matrices (``2 V ceil(d/S)`` float32)
  and the noise alias table (``8 V``); ``C`` client actors with the subsampling table (``4 V``) and the
  corpus (the object store's copy from the API, the memory-mapped files of ``parvec train --mode sharded``);
  from the API the object store also holds the corpus and the driver's initial columns; the CLI pipeline's
  encoder actors (one per CPU, before training) each hold the vocabulary and one byte range's tokens;
- **Ray itself**: its own processes (GCS, raylet, agents, log monitor) and its idle pooled workers.

Each process also has a **baseline**: the interpreter with numpy, numba, Ray (and torch in a replica, for the
gloo sync) loaded.  The baselines are measured, not guessed: the proportional set size (PSS: shared pages
split among the processes that map them, so the sum is physical memory) of every process of a
``--cluster local:2 --dim 10`` run (replicas, and ``--mode sharded``), 2 AMD EPYC cores, Python 3.11, numpy
2, numba 0.61, Ray 2.60, torch 2.13 CPU, sampled from ``/proc`` every 0.1 s
(``tests/distributed/test_cluster_memory_runs.py`` repeats the measurement at a large ``--dim`` and checks this
estimate against it).  Summing each process's own peak RSS instead counts the object store's shared pages once
per process that maps them (a 3.3 GiB run reads as 5.6 GiB that way).

The settings come from where the run resolves them (:class:`parvec.distributed.sharded_settings.ShardedSettings`
for shards, clients and threads; :func:`parvec.distributed.replica_plan.replica_threads` and
:func:`parvec.distributed.replica_plan.share_chunks` for the replicas' threads and shares), so the estimate sizes
the run that would start.  A cluster parvec joins (``auto``, ``ray://``) has only the driver here: Ray's
figures for the other nodes (``ray.nodes()``) are the memory a node offered the scheduler when it started,
not what is free now, and asking needs a connection first, so they are not checked (the line says so).

Example:
    >>> from parvec.config import TrainConfig
    >>> from parvec.distributed.cluster import Cluster
    >>> est = estimate_cluster(Cluster("local:2"), TrainConfig(dim=3000, threads=1), 21200, 1_919_290, 200,
    ...                        available=2 << 30)
    >>> est.fits, round(est.total / 2**30, 1)
    (False, 3.8)
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from parvec import resources
from parvec.chunks import split_long_sentences
from parvec.config import TrainConfig, default_threads
from parvec.distributed import replica_plan
from parvec.distributed.cluster import Cluster
from parvec.distributed.replica_plan import overlap_rows, share_chunks
from parvec.distributed.sharded_settings import ROW_BLOCK_BYTES, ShardedSettings
from parvec.distributed.units import DEFAULT_UNIT_WORDS
from parvec.errors import ParvecError
from parvec.resources import human_bytes

KiB = 1 << 10
MiB = 1 << 20

# Measured baselines (PSS at the process's peak, rounded up ~10%; see the module docstring).
DRIVER_BASELINE = 140 * MiB  # the parvec process: numpy, numba, Ray's client (121 MiB measured; 85 sharded CLI)
REPLICA_BASELINE = 280 * MiB  # a replica actor: numpy, numba, its CpuDriver and torch for the gloo sync (251 MiB)
SHARD_BASELINE = 120 * MiB  # a shard actor: numpy, numba, the sharded kernels (108 MiB)
CLIENT_BASELINE = 135 * MiB  # a client actor: numpy, numba, the minibatch loop (120 MiB)
BOARD_BASELINE = 90 * MiB  # the replicas' sync board actor (79 MiB)
WORKER_BASELINE = 85 * MiB  # an idle pooled Ray worker, or an encoder actor before its data (77 MiB)
RAY_SYSTEM = 300 * MiB  # a local Ray's own processes: gcs_server, raylet, 4 Python agents and monitors (272 MiB)
# Python's cost of the vocabulary, per word: str + list slot + dict entry (73 + 63 B measured for 10-letter words)
DRIVER_BYTES_PER_WORD = 250  # Vocab.words/index and KeyedVectors.index_to_key/key_to_index
ACTOR_BYTES_PER_WORD = 100  # a replica's copy of the word list (data description from the board)
LOOKUP_BYTES_PER_WORD = 13  # the hashed word -> id lookup (parvec.wordhash): one copy per node, in the object store
ENCODER_BLOCK_BYTES = 48 * MiB  # an encoding task's text block, its tokens and ids (written block by block)
# The distributed vocabulary's count step (docs/scale.md, measured): a reducer at its peak holds ~170 bytes per
# distinct word of its hash range (the parts' arrays, their order, the merged copy); a mapper's byte tokeniser
# table over one byte range takes up to ~6 bytes per byte of it (a range of distinct words: Zipf's head of a corpus)
REDUCER_BYTES_PER_WORD = 170
MAPPER_BYTES_PER_BYTE = 6
WORKING_ROOM = 64 * MiB  # the driver's output writing and other temporaries


@dataclass
class ProcessGroup:
    """One line of the breakdown: ``count`` processes of one kind (or one pool, count 1) holding ``pieces`` each.

    Example:
        >>> ProcessGroup("replica", 2, {"model": 100, "runtime": 50}).total
        300
    """

    name: str
    count: int
    pieces: dict[str, int]
    running: bool = False  # already running when the check is made: its memory is out of the available already

    @property
    def each(self) -> int:
        return int(sum(self.pieces.values()))

    @property
    def total(self) -> int:
        return self.count * self.each

    def describe(self) -> str:
        what = " + ".join(f"{k} {human_bytes(v)}" for k, v in self.pieces.items() if v)
        now = ", running already" if self.running else ""
        if self.count == 1:
            return f"{self.name} {human_bytes(self.each)} ({what}{now})"
        return f"{self.count} {self.name}s x {human_bytes(self.each)} ({what}{now})"


@dataclass
class MemoryEstimate:
    """What a cluster run takes on this machine, part by part, against the memory available.

    ``parts`` are on this machine at the same time (their sum is :attr:`total`); those already running when
    the check is made (a Ray started before it) are out of ``available`` already, so :attr:`needed` leaves
    them out; ``elsewhere`` are the processes a joined cluster runs on its nodes (not counted, not checked);
    ``earlier`` a phase that ran before the check (the CLI pipeline's encoders), reported.  :meth:`check` raises
    when :attr:`needed` is over ``available``.

    Example:
        >>> MemoryEstimate("local:1", "replicas", [ProcessGroup("driver", 1, {"vectors": 10})], available=5).fits
        False
    """

    spec: str
    mode: str
    parts: list[ProcessGroup]
    available: int | None
    elsewhere: list[ProcessGroup] = field(default_factory=list)
    earlier: list[ProcessGroup] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return int(sum(p.total for p in self.parts))

    @property
    def needed(self) -> int:
        """Bytes still to be taken: :attr:`total` less the parts already running."""
        return int(sum(p.total for p in self.parts if not p.running))

    @property
    def fits(self) -> bool:
        return self.available is None or self.needed <= self.available

    @property
    def local(self) -> bool:
        return not self.elsewhere

    def _where(self) -> str:
        return f"--cluster {self.spec} ({self.mode})"

    def breakdown(self) -> str:
        """The parts, in words."""
        text = ", ".join(p.describe() for p in self.parts)
        if self.earlier:
            text += "; before training: " + ", ".join(p.describe() for p in self.earlier)
        return text

    def line(self) -> str:
        """The ``memory:`` line ``parvec train`` prints before training.

        Example:
            >>> est = MemoryEstimate("local:1", "replicas", [ProcessGroup("driver", 1, {"vectors": 2 << 20})], 8 << 30)
            >>> est.line().split(", every process on this machine: ")
            ['memory: 2.0 MiB of 8.0 GiB available, --cluster local:1 (replicas)', 'driver 2.0 MiB (vectors 2.0 MiB)']
        """
        avail = f" of {human_bytes(self.available)} available" if self.available is not None else ""
        if self.needed != self.total:
            avail = f" ({human_bytes(self.needed)} more than now){avail}"
        if self.local:
            head = f"memory: {human_bytes(self.total)}{avail}, {self._where()}, every process on this machine: "
            return head + self.breakdown()
        remote = ", ".join(p.describe() for p in self.elsewhere)
        return (f"memory: {human_bytes(self.total)}{avail} for this process ({self.breakdown()}), {self._where()}; the "
                f"cluster's nodes are not checked (remote nodes: {remote})")

    def check(self) -> None:
        """Raise :class:`ParvecError` with the breakdown and what to change when the run does not fit.

        Example:
            >>> MemoryEstimate("local:2", "replicas", [ProcessGroup("driver", 1, {"vectors": 10})], 5).check()
            Traceback (most recent call last):
            ...
            parvec.errors.ParvecError: --cluster local:2 (replicas) needs about 10 B on this machine but 5 B is \
available: driver 10 B (vectors 10 B); change the run
        """
        if self.fits:
            return
        what = "; ".join(self.suggestions) if self.suggestions else "change the run"
        where = "on this machine" if self.local else "in this process (the driver)"
        more = f" ({human_bytes(self.needed)} more than now)" if self.needed != self.total else ""
        raise ParvecError(f"{self._where()} needs about {human_bytes(self.total)}{more} {where} but "
                          f"{human_bytes(self.available)} is available: {self.breakdown()}; {what}")

    def to_dict(self) -> dict[str, Any]:
        """For ``--report``: the parts and their pieces in bytes."""
        def parts(ps: list[ProcessGroup]) -> list[dict[str, Any]]:
            return [{"name": p.name, "count": p.count, "bytes_each": p.each, "pieces": dict(p.pieces),
                     "running": p.running} for p in ps]

        return {"spec": self.spec, "mode": self.mode, "total_bytes": self.total, "needed_bytes": self.needed,
                "available_bytes": self.available, "parts": parts(self.parts), "elsewhere": parts(self.elsewhere),
                "earlier": parts(self.earlier), "fits": self.fits}


# --------------------------------------------------------------------------- sizes of the corpus
@dataclass(frozen=True)
class CorpusSizes:
    """What the estimate needs of the corpus: tokens, sentences (after long ones are split), whether the
    driver's tokens are memory-mapped, and the largest replica share (tokens, sentences) for ``replicas``.

    Example:
        >>> CorpusSizes(1000, 10).largest_share(2)
        (500, 5)
    """

    tokens: int
    sentences: int
    tokens_mapped: bool = False
    shares: tuple[tuple[int, int], ...] | None = None  # per replica (tokens, sentences), from share_chunks

    def largest_share(self, n: int) -> tuple[int, int]:
        if self.shares is not None and len(self.shares) == n:
            return max(self.shares)
        return -(-self.tokens // n), -(-self.sentences // n)


def corpus_sizes(corpus: Any, config: TrainConfig, replicas: int | None = None) -> CorpusSizes:
    """The sizes of an :class:`~parvec.corpus.EncodedCorpus` for :func:`estimate_cluster`, each replica's
    share cut as the replicas driver cuts it (``share_chunks`` over the split offsets).

    Example:
        >>> corpus_sizes(corpus, TrainConfig(), replicas=2).shares  # doctest: +SKIP
        ((960102, 100), (959188, 100))
    """
    offsets = split_long_sentences(np.asarray(corpus.offsets), config.max_sentence_length)
    shares = None
    if replicas:
        try:
            ranges = share_chunks(offsets, config.chunk_words, replicas)
            shares = tuple((int(offsets[hi] - offsets[lo]), hi - lo) for lo, hi in ranges)
        except ParvecError:  # too few chunks for the replicas: the run says so when it starts
            shares = None
    return CorpusSizes(int(corpus.n_tokens), len(offsets) - 1, isinstance(corpus.tokens, np.memmap), shares)


# --------------------------------------------------------------------------- the estimate
def estimate_cluster(cluster: Cluster, config: TrainConfig, vocab_size: int, n_tokens: int, n_sentences: int,
                     *, corpus: CorpusSizes | None = None, pipeline: bool = False, ranges: int = 1,
                     available: int | None | Literal["measure"] = "measure",
                     settings: ShardedSettings | None = None) -> MemoryEstimate:
    """What ``cluster`` running ``config`` over a vocabulary of ``vocab_size`` words and a corpus of
    ``n_tokens`` tokens in ``n_sentences`` sentences takes on this machine, with suggestions that fit.

    ``corpus`` (from :func:`corpus_sizes`) adds the replicas' exact shares and whether the driver's tokens are
    memory-mapped; ``pipeline`` is ``parvec train --mode sharded`` (the model never in the driver, the corpus
    memory-mapped from ``ranges`` encoded byte ranges); ``available`` defaults to
    :func:`parvec.resources.available_memory` (None: unknown, never refused); ``settings``: a sharded run's
    settings as the run resolved them (default: ``cluster``'s for ``config``).

    Example:
        >>> est = estimate_cluster(Cluster("local:2"), TrainConfig(dim=100, threads=1), 1000, 10**5, 10)
        >>> [p.name for p in est.parts]
        ['driver', 'replica', "Ray's object store", 'sync board', "Ray's own processes"]
    """
    room = resources.available_memory() if available == "measure" else available
    sizes = corpus or CorpusSizes(int(n_tokens), int(n_sentences))
    est = _estimate(cluster, config, int(vocab_size), sizes, pipeline, max(1, int(ranges)), room, settings)
    if not est.fits:
        est.suggestions = _suggestions(cluster, config, int(vocab_size), sizes, pipeline, max(1, int(ranges)),
                                       room, est)
    return est


def _local_cpus(cluster: Cluster) -> int:
    return cluster.local_cpus or default_threads()


def replica_threads(cluster: Cluster, config: TrainConfig) -> int:
    """Threads per replica, by the replicas driver's own rule (a local Ray has ``N`` CPUs for ``local:N``).

    Example:
        >>> replica_threads(Cluster("local:2"), TrainConfig(threads=2))
        1
    """
    n = int(cluster.replicas or 1)
    if not cluster.is_local:
        return int(cluster.threads_per_actor or config.threads)
    return replica_plan.replica_threads(cluster, config, _local_cpus(cluster), n)[0]


def ray_running() -> bool:
    """Whether this process already has a Ray (a notebook's, a test session's): a run uses it as it is, so its
    own processes are running already (and out of the memory available).  Never imports Ray.

    Example:
        >>> isinstance(ray_running(), bool)
        True
    """
    ray = sys.modules.get("ray")
    try:
        return bool(ray is not None and ray.is_initialized())
    except Exception:  # noqa: BLE001 - a half-imported or odd Ray: count its processes
        return False


def _estimate(cluster: Cluster, config: TrainConfig, v: int, sizes: CorpusSizes, pipeline: bool, ranges: int,
              available: int | None, settings: ShardedSettings | None = None) -> MemoryEstimate:
    # ``settings``: the run's, resolved once (a changed cluster or config, a suggestion's, resolves its own).
    if cluster.mode == "sharded":
        st = settings if settings is not None else ShardedSettings.of(cluster, config)
        parts, ray_parts, earlier = _sharded(cluster, st, config, v, sizes, pipeline, ranges)
    else:
        parts, ray_parts, earlier = _replicas(cluster, config, v, sizes)
    if ray_running():  # started before this check (the CLI pipeline's counting, a notebook): running already
        ray_parts = [dataclasses.replace(p, running=True) for p in ray_parts]
    driver, actors = parts[0], parts[1:]
    if cluster.is_local:
        return MemoryEstimate(cluster.spec, cluster.mode, parts + ray_parts, available, earlier=earlier)
    return MemoryEstimate(cluster.spec, cluster.mode, [driver], available, elsewhere=actors)


def _replicas(cluster: Cluster, config: TrainConfig, v: int, sizes: CorpusSizes
              ) -> tuple[list[ProcessGroup], list[ProcessGroup], list[ProcessGroup]]:
    n = int(cluster.replicas or 1)
    threads = replica_threads(cluster, config)
    model = 2 * v * config.dim * 4
    t, s = sizes.tokens, sizes.sentences
    share_t, share_s = sizes.largest_share(n)
    driver = ProcessGroup("driver", 1, {
        "vectors": model,
        # its tokens unless memory-mapped, the offsets and the split copy the data description is cut from
        "corpus": (0 if sizes.tokens_mapped else 4 * t) + 16 * (s + 1),
        "vocabulary": DRIVER_BYTES_PER_WORD * v,
        "runtime": DRIVER_BASELINE + WORKING_ROOM,
    })
    # an overlapped sync's snapshot and buffer of both matrices' rows (replica_actor.OverlappedSync)
    overlap = overlap_rows(cluster, v)
    replica = ProcessGroup("replica", n, {
        "model": model,
        "sync copies": 2 * 2 * overlap * config.dim * 4,
        # counts (int64), subsampling, noise probabilities and aliases (4 bytes each)
        "tables": 20 * v + ACTOR_BYTES_PER_WORD * v,
        # the memory-mapped share's pages, the corpus offsets split as the trainer splits them, its own slice
        "corpus share": 4 * share_t + 16 * (s + 1) + 8 * (share_s + 1),
        "runtime": REPLICA_BASELINE + threads * 4 * config.max_sentence_length,
    })
    store = ProcessGroup("Ray's object store", 1, {
        "the model sent out and returned": 2 * model,
        "vocabulary and tables": (8 + 24) * v + 16 * n,
    })
    board = ProcessGroup("sync board", 1, {"runtime": BOARD_BASELINE})
    ray_parts = []
    if cluster.is_local:
        idle = max(0, _local_cpus(cluster) - n)  # the replicas take the workers Ray starts with
        ray_parts.append(ProcessGroup("Ray's own processes", 1, {"runtime": RAY_SYSTEM,
                                                                 "idle workers": idle * WORKER_BASELINE}))
    return [driver, replica, store, board], ray_parts, []


def minibatch_bytes(inputs: int, window: int, negative: int, width: int, negatives_per: str,
                    wire: str = "float32", fused: bool = False) -> int:
    """At most what one minibatch in flight holds on a shard of ``width`` columns (``kernels/sharded.py``): the
    rows drawn for it and, split, the call's coefficients, the rows kept from its dot products to its adjust, the
    answer, and adjust's deltas (per input word with negatives per pair, per pair with negatives per window); with a
    float16 ``wire`` the coefficients and the answer are held in both widths (received and converted, computed and
    converted).  ``fused`` (one shard, ``shard_calls="fused"``): the call's indices, rates and counts instead of
    floats both ways, per pair its dot products turned coefficients in place; no deltas across window batches.
    ``2 window`` pairs per input.

    Example:
        >>> minibatch_bytes(1024, 5, 5, 50, "window") > minibatch_bytes(1024, 5, 5, 50, "pair")
        True
        >>> minibatch_bytes(1024, 5, 5, 50, "window", "float16") - minibatch_bytes(1024, 5, 5, 50, "window")
        245760
        >>> minibatch_bytes(8192, 5, 5, 100, "window", fused=True) < minibatch_bytes(2048, 5, 5, 100, "window")
        True
    """
    pairs = inputs * 2 * window
    stride = 1 + negative
    if fused:
        floats = 4 * (2 * window + 1) * inputs + 16 * inputs + (2 + 4 + 4) * inputs
        floats += 4 * pairs * stride if negatives_per == "pair" else 0
    else:  # the coefficients received, the partial dot products sent; float16 ones beside their float32 copies
        floats = 2 * (4 + (2 if wire == "float16" else 0)) * pairs * stride
    if negatives_per == "window":
        return floats + 8 * pairs + 8 * inputs * (stride + 1) + (0 if fused else 4 * pairs * width)
    return floats + 8 * pairs * (1 + stride) + 4 * inputs * width


def _sharded(cluster: Cluster, st: ShardedSettings, config: TrainConfig, v: int, sizes: CorpusSizes, pipeline: bool,
             ranges: int) -> tuple[list[ProcessGroup], list[ProcessGroup], list[ProcessGroup]]:
    n_shards, n_clients = st.shards, st.clients
    width = -(-config.dim // n_shards)
    model = 2 * v * config.dim * 4
    columns = 2 * v * width * 4
    t, s = sizes.tokens, sizes.sentences
    # gathering/exporting the model: a block of rows of both matrices assembled while the next is on its way
    blocks = min(4 * ROW_BLOCK_BYTES, 2 * model)
    if pipeline:  # the driver holds the count classes and the units, no word and no sentence offset
        driver = ProcessGroup("driver", 1, {"units and tables": 64 * (t // DEFAULT_UNIT_WORDS + 1) + 64 * KiB,
                                            "runtime": DRIVER_BASELINE + WORKING_ROOM})
    else:
        driver = ProcessGroup("driver", 1, {"vectors": model,
                                    "corpus": (0 if sizes.tokens_mapped else 4 * t) + 8 * (s + 1),
                                    "gathered blocks": blocks, "vocabulary": DRIVER_BYTES_PER_WORD * v,
                                    "runtime": DRIVER_BASELINE + WORKING_ROOM})
    shard = ProcessGroup("shard", n_shards, {
        "columns": columns,
        # per word from the API (its counts are here anyway); over count classes from the CLI: a few KB
        "noise table": 64 * KiB if pipeline else 8 * v,
        "row blocks": 0 if pipeline else min(blocks // n_shards, 2 * columns),  # the API's gathers
        # one minibatch per client thread at a time: its call, its kept rows, its answer and adjust's deltas
        "minibatches in flight": st.clients * st.threads * minibatch_bytes(
            st.minibatch_words, config.window, config.negative, width, st.negatives_per, st.wire_floats, st.fused),
        "runtime": SHARD_BASELINE,
    })
    client = ProcessGroup("client", n_clients, {
        "subsampling table": 4 * KiB if pipeline else 4 * v,
        # the offsets of the parts it trains, split as the trainer splits them (from the CLI, a client prefers
        # its own parts: about 1 / clients of them)
        "corpus offsets": 16 * (s // (n_clients if pipeline else 1) + 1),
        "runtime": CLIENT_BASELINE,
    })
    store_pieces = {"tables": 64 * KiB if pipeline else 12 * v, "row blocks": 0 if pipeline else blocks}
    if pipeline:
        store_pieces["memory-mapped corpus"] = 4 * t  # the encoded ranges' pages, shared by the clients
    else:
        store_pieces |= {"corpus": 4 * t + 8 * (s + 1), "initial columns": model}
    store = ProcessGroup("Ray's object store", 1, store_pieces)
    ray_parts, earlier = [], []
    if cluster.is_local:
        cpus = _local_cpus(cluster)
        # Ray starts one worker per CPU; the pipeline's counting and encoding tasks leave as many again
        idle = (2 if pipeline else 1) * cpus
        ray_parts.append(ProcessGroup("Ray's own processes", 1, {"runtime": RAY_SYSTEM,
                                                                 "idle workers": idle * WORKER_BASELINE}))
        if pipeline:
            per_range_s = -(-s // ranges)
            earlier.append(ProcessGroup("encoder", min(cpus, ranges), {
                "lookup (shared, one copy per node)": LOOKUP_BYTES_PER_WORD * v // min(cpus, ranges),
                "byte range": 8 * (per_range_s + 1) + ENCODER_BLOCK_BYTES,
                "runtime": WORKER_BASELINE,
            }))
    return [driver, shard, client, store], ray_parts, earlier


# --------------------------------------------------------------------------- what would fit
def _fits(cluster: Cluster, config: TrainConfig, v: int, sizes: CorpusSizes, pipeline: bool, ranges: int,
          available: int) -> MemoryEstimate | None:
    try:
        est = _estimate(cluster, config, v, sizes, pipeline, ranges, available)
    except ParvecError:  # e.g. more shards than dimensions, more threads than CPUs
        return None
    return est if est.fits else None


def _suggestions(cluster: Cluster, config: TrainConfig, v: int, sizes: CorpusSizes, pipeline: bool, ranges: int,
                 available: int | None, est: MemoryEstimate) -> list[str]:
    if available is None:
        return []
    out: list[str] = []
    args = (v, sizes, pipeline, ranges, available)
    if cluster.mode == "replicas":
        n = int(cluster.replicas or 1)
        each = next(p.each for p in est.parts + est.elsewhere if p.name == "replica")
        fewer = next(((k, e) for k in range(n - 1, 0, -1)
                      if (e := _fits(dataclasses.replace(cluster, replicas=k), config, *args)) is not None), None)
        if fewer is not None:
            out.append(f"use fewer replicas (each holds a whole model: {human_bytes(each)}; --replicas {fewer[0]} "
                       f"needs {human_bytes(fewer[1].total)})")
        else:
            out.append(f"use fewer replicas (each holds a whole model: {human_bytes(each)})")
        if cluster.sync_overlap and n > 1 and (e := _fits(dataclasses.replace(cluster, sync_overlap=False), config,
                                                          *args)) is not None:
            out.append(f"--no-sync-overlap (each replica's copies of the rows an overlapped sync averages; "
                       f"{human_bytes(e.total)} without them)")
        out.append("train column-sharded (--mode sharded --shards N: N shard processes split the model's columns, "
                   "none holds it whole)")
    else:
        st_shards = next(p.count for p in est.parts + est.elsewhere if p.name == "shard")
        more = next(((k, e) for k in range(st_shards + 1, min(config.dim, 4 * st_shards + 16) + 1)
                     if (e := _fits(dataclasses.replace(cluster, shards=k), config, *args)) is not None), None)
        if more is not None:
            out.append(f"use more shards (--shards {more[0]} needs {human_bytes(more[1].total)})")
        else:
            out.append("use more shards (each holds 2 x vocabulary x dim / shards float32)")
        n_clients = next(p.count for p in est.parts + est.elsewhere if p.name == "client")
        if n_clients > 1:
            out.append("fewer clients (--clients)")
    lo, hi = 0, config.dim - 1  # the largest dimension that fits: the need grows with dim
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _fits(cluster, dataclasses.replace(config, dim=mid), *args) is not None:
            lo = mid
        else:
            hi = mid - 1
    out.append(f"a smaller --dim ({lo} fits)" if lo >= 1 else "a smaller --dim")
    return out


def check_corpus(cluster: Cluster, config: TrainConfig, corpus: Any) -> MemoryEstimate:
    """Estimate a cluster run over an encoded corpus (its exact replica shares) and raise when it does not fit.

    Example:
        >>> check_corpus(Cluster("local:2"), TrainConfig(dim=3000), corpus)  # doctest: +SKIP
        Traceback (most recent call last):
        parvec.errors.ParvecError: --cluster local:2 (replicas) needs about 3.6 GiB on this machine but ...
    """
    sizes = corpus_sizes(corpus, config, cluster.replicas if cluster.mode == "replicas" else None)
    est = estimate_cluster(cluster, config, len(corpus.vocab), sizes.tokens, sizes.sentences, corpus=sizes)
    est.check()
    return est



# --------------------------------------------------------------------------- the count step, before counting
def count_step(cluster: Cluster, input_bytes: int, largest_unit: int, units: int, distinct: int,
               reducers: int, available: int | None | Literal["measure"] = "measure") -> MemoryEstimate:
    """What counting a sharded run's vocabulary takes, from the input's sizes (before anything is counted):
    ``distinct`` words expected (:func:`parvec.distributed.sharded_source.estimate_distinct`) over ``reducers``
    reducer actors, a mapper task per unit (at most one per CPU at a time, each with the byte tokeniser's table
    of a unit of up to ``largest_unit`` bytes), the driver and Ray's own processes.

    Example:
        >>> est = count_step(Cluster("local:2", mode="sharded"), 10**9, 64 << 20, 16, 10**6, 2, available=8 << 30)
        >>> est.fits, [p.name for p in est.parts]
        (True, ['driver', 'reducer', 'mapper', "Ray's own processes"])
    """
    room = resources.available_memory() if available == "measure" else available
    cpus = _local_cpus(cluster) if cluster.is_local else max(1, units)
    driver = ProcessGroup("driver", 1, {"runtime": DRIVER_BASELINE + WORKING_ROOM})
    reducer = ProcessGroup("reducer", reducers, {
        "distinct words of its hash range": REDUCER_BYTES_PER_WORD * -(-int(distinct) // max(1, reducers)),
        "runtime": WORKER_BASELINE})
    mapper = ProcessGroup("mapper", max(1, min(cpus, units)), {
        "word table of a unit": MAPPER_BYTES_PER_BYTE * int(largest_unit), "runtime": WORKER_BASELINE})
    parts = [driver, reducer, mapper]
    if not cluster.is_local:
        return MemoryEstimate(cluster.spec, cluster.mode, [driver], room, elsewhere=parts[1:])
    ray_parts = [ProcessGroup("Ray's own processes", 1, {"runtime": RAY_SYSTEM}, running=ray_running())]
    est = MemoryEstimate(cluster.spec, cluster.mode, parts + ray_parts, room)
    if not est.fits:
        est.suggestions = [f"counting {human_bytes(input_bytes)} of input expects about {int(distinct):,} distinct "
                           "words (from the first megabytes' growth): train on a cluster with more memory (the "
                           "reducers share the words by hash), or on a part of the input first"]
    return est


def placement(ray: Any, needs: dict[str, int], cluster: Cluster) -> dict[str, int]:
    """The bytes each kind of actor or task asks of Ray's ``memory`` resource, so that Ray places it on a node
    with room for it (and spreads them): ``needs`` as given on a cluster joined, where a need over every node's
    memory is refused naming the largest node; nothing on ``local:N`` (one node, checked whole before Ray
    started: a request would only wait on Ray's own share of it).

    Example:
        >>> placement(ray, {"shard": 8 << 30}, Cluster("auto", mode="sharded"))  # doctest: +SKIP
        {'shard': 8589934592}
    """
    if cluster.is_local or not needs:
        return {}
    nodes = [n for n in ray.nodes() if n.get("Alive", True)]
    largest = max((float(n.get("Resources", {}).get("memory", 0)) for n in nodes), default=0.0)
    if largest <= 0:  # a cluster that reports no memory resource: nothing to place by
        return {}
    for what, need in needs.items():
        if need > largest:
            raise ParvecError(f"--cluster {cluster.spec}: a {what} needs about {human_bytes(need)} but the largest "
                              f"node offers {human_bytes(int(largest))} (Ray's memory resource); use more shards "
                              "(--shards), nodes with more memory, or a smaller --dim")
    return {k: int(v) for k, v in needs.items()}

__all__ = ["CorpusSizes", "MemoryEstimate", "ProcessGroup", "check_corpus", "corpus_sizes", "count_step",
           "estimate_cluster", "placement", "ray_running", "replica_threads"]
