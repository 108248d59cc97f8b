"""A replica of the replicas mode: one Ray actor with the whole model, its share of the corpus, and its side of
the syncs (Ji et al.'s data-parallel replicas with frequency-ranked sub-model synchronisation).

Each replica (:data:`ReplicaActor`) trains its share (:func:`load_share`: the memory-mapped encoded-corpus cache
when its node sees it, else its byte range of the input encoded with the shared vocabulary, :func:`encode_share`)
with parvec's one CPU driver (:class:`parvec.trainer.CpuDriver`, any CPU algorithm, threads inside the actor),
through its own epoch context (:class:`ShareEpoch`: the rate at a point of its share is the schedule's at the words
*all* replicas have trained by then).  After every part it averages the rows the plan says
(:mod:`parvec.distributed.replica_plan`) with its peers through a collective (:mod:`parvec.distributed.
collectives`); a small sync runs while the next part trains (:class:`OverlappedSync`).  Mid-epoch checkpoints are
taken at part ends by the replicas together.  What the driver sends it is typed: :class:`ReplicaData` (where its
share is, once, through the sync board) and :class:`EpochCall` (one epoch's call).

Example:
    >>> EpochCall(epoch=0, schedule=None, gen=1, group_id=0, plan=None, rows=[10], model=None,
    ...           return_model=True).start_part
    0
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parvec.chunks import chunk_bounds, split_long_sentences
from parvec.config import TrainConfig
from parvec.corpus import ReadOptions, load_encoded
from parvec.distributed.collectives import SyncAborted, make_collective
from parvec.distributed.replica_plan import CHECKPOINT_SYNC_BASE, SharePlan, overlapped_syncs
from parvec.distributed.supervise import named_actor, node_id, was_restarted
from parvec.engine import Resume
from parvec.errors import ParvecError
from parvec.schedule import Schedule
from parvec.trainer import CpuDriver

__all__ = ["EpochCall", "OverlappedSync", "ReplicaActor", "ReplicaData", "ReplicaDescription", "ReplicaEpoch",
           "ReplicaProgress", "ReplicaRestarted", "ShareEpoch", "SyncFigures",
           "encode_share", "load_share"]


class ReplicaRestarted(Exception):
    """A replica's epoch call reached a process Ray restarted after the last epoch (it holds no model): the
    driver handles it as a replica lost in that epoch."""



@dataclass(frozen=True)
class ReplicaDescription:
    """A started replica, as the driver learns it: its chunks' words (``chunk_words``, one per chunk), the node and
    process it runs in, how it got its data (``data``), its collective's name, and whether Ray restarted it
    (its process died, here while it was starting).

    Example:
        >>> ReplicaDescription(np.array([5, 3]), "n1", 42, "read", "ray", False).restarted
        False
    """

    chunk_words: np.ndarray
    node: Any
    pid: int
    data: Any
    collective: str
    restarted: bool


@dataclass
class SyncFigures:
    """One replica's syncs in an epoch: their seconds (training waited), count, rows, bytes received, and how many
    overlapped the next part's training.

    Example:
        >>> SyncFigures().syncs
        0
    """

    seconds: float = 0.0
    syncs: int = 0
    rows: int = 0
    bytes: int = 0
    overlapped: int = 0


@dataclass(frozen=True)
class ReplicaEpoch:
    """A replica's answer to one epoch: its rank, its CPU driver's :class:`parvec.engine.EpochResult`, its own
    seconds, its syncs' :class:`SyncFigures`, and the model (``w_in``, ``w_out``) when the call asked for it.

    Example:
        >>> ReplicaEpoch(0, None, 1.5, SyncFigures()).model is None
        True
    """

    rank: int
    result: Any
    seconds: float
    sync: SyncFigures
    model: tuple[np.ndarray, np.ndarray] | None = None

    def carried_model(self) -> tuple[np.ndarray, np.ndarray]:
        """The model (``w_in``, ``w_out``) this answer carries: replica 0's, whose call asked for it."""
        if self.model is None:
            raise AssertionError(f"replica {self.rank} returned no model")
        return self.model


@dataclass(frozen=True)
class ReplicaProgress:
    """A replica's running totals of the epoch (words, pairs, summed loss) and ``synced``: (epoch, syncs completed
    in it).

    Example:
        >>> ReplicaProgress(synced=(0, 2)).words
        0
    """

    words: int = 0
    pairs: int = 0
    loss_sum: float = 0.0
    synced: tuple[int, int] = field(default=(-1, 0))

@dataclass(frozen=True)
class ReplicaData:
    """Where the replicas find their shares of the corpus (the driver puts it on the sync board once, so a
    restarted replica finds it again): ``cache`` (the encoded-corpus cache directory) and its ``tokens``, each
    replica's sentences ``shares[r]`` (of the split offsets), the input ``source`` and its identity ``inputs``
    (for a node that cannot see the cache and re-reads its byte range), the vocabulary (``words``, ``counts``) and
    the ``read_options`` it was read with; ``mode``: "auto" (the cache if this node sees it), "cache" (only the
    cache) or "encode" (always re-read).  ``refs``: on a cluster of several nodes, each replica's share (its tokens
    and sentence offsets from 0) in Ray's object store, for a replica whose node sees neither the cache nor the
    input (no file system shared with the driver).

    Example:
        >>> ReplicaData(shares=((0, 2),), tokens=6, words=("a", "b"), counts=np.array([4, 2]),
        ...             read_options=ReadOptions()).mode
        'auto'
    """

    shares: tuple[tuple[int, int], ...]
    tokens: int
    words: tuple[str, ...]
    counts: np.ndarray
    read_options: ReadOptions
    cache: str | None = None
    source: str | None = None
    inputs: Any = None
    mode: str = "auto"
    refs: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class EpochCall:
    """One epoch's call to every replica: the ``epoch``, the run's ``schedule`` (its rates times the replicas'
    scale), the board's generation ``gen`` of this attempt and the sync group ``group_id``, the ``plan`` and the
    ``rows`` each of the epoch's syncs averages, the ``model`` to load first (object references to ``w_in`` and
    ``w_out``; None: the one it holds), whether to return the model (rank 0), ``start_part`` (the parts before it
    were trained before a mid-epoch checkpoint: skipped, same chunk indexes and rates), ``checkpoint_every``
    (mid-epoch checkpoints at part ends, :meth:`parvec.engine.parse_interval`'s ``(kind, amount)``) and
    ``overlap_rows`` (a sync of at most this many rows, not the epoch's last, runs while the next part trains; 0:
    none does).

    Example:
        >>> EpochCall(1, None, 2, 0, None, [], None, False, start_part=3).start_part
        3
    """

    epoch: int
    schedule: Schedule
    gen: int
    group_id: int
    plan: SharePlan
    rows: list[int]
    model: tuple[Any, Any] | None
    return_model: bool
    start_part: int = 0
    checkpoint_every: tuple[str, float] | None = None
    overlap_rows: int = 0


class _Replica:
    """One replica: its share of the corpus, a whole model, the CPU driver, and its side of the syncs (module
    docstring).  Its class name is what Ray titles its process (``ray::_Replica.train_epoch``); the driver makes
    it an actor as :data:`ReplicaActor`.

    Example:
        >>> replica = ray.remote(ReplicaActor).remote(0, 2, config, "board", 60.0, "auto")  # doctest: +SKIP
    """

    def __init__(self, rank: int, n: int, config: TrainConfig, board_name: str, timeout_s: float,
                 collective: str) -> None:
        import ray

        board = named_actor(board_name)
        self.board = board
        # The counts and the data description are read from the board, so a restarted actor finds them again.
        counts, data = ray.get(ray.get(board.shared_refs.remote(), timeout=timeout_s), timeout=timeout_s)
        assert isinstance(data, ReplicaData)
        self.ray = ray
        self.timeout_s = timeout_s
        self.rank, self.n = rank, n
        self.config = config
        v = len(counts)
        self.trainer = CpuDriver(config, counts, w_in=np.zeros((v, config.dim), np.float32),
                                 w_out=np.zeros((v, config.dim), np.float32))
        self.model_key: tuple[str, ...] | None = None  # the object references of the model it holds
        self.model_lock = threading.Lock()  # a load still running (the driver gave up waiting) finishes first
        self.tokens, self.offsets, self.data_note = load_share(rank, n, config, data)
        self.chunks = chunk_bounds(self.offsets, config.chunk_words)
        self.collective = make_collective(collective, ray, board, rank, n, timeout_s)
        self.progress_totals = ReplicaProgress()  # the epoch's counters (``synced`` kept in self.synced)
        self.synced = (-1, 0)  # (epoch, syncs completed in it)
        self.overlapped: OverlappedSync | None = None
        self.trainer.warm_up((self.tokens, self.offsets[: min(len(self.offsets), 2)]))
        self.node = node_id()

    def describe(self) -> ReplicaDescription:
        """This replica's chunks (tokens each), node and how it got its data."""
        words = np.diff(self.offsets[self.chunks])
        return ReplicaDescription(chunk_words=words, node=self.node, pid=os.getpid(), data=self.data_note,
                                  collective=self.collective.name, restarted=was_restarted())

    def connect(self, group_id: int) -> None:
        """Form (or form again, after a fault) the sync group with the peers."""
        self.collective.connect(group_id)

    def ping(self) -> int:
        """This process's id."""
        return os.getpid()

    def progress(self) -> ReplicaProgress:
        """The trainer's running totals and (epoch, syncs completed in it)."""
        return dataclasses.replace(self.progress_totals, synced=self.synced)

    def load_model(self, model: tuple[Any, Any]) -> None:
        """Copy the model at ``model`` (object references to w_in, w_out) into this replica's, unless it holds
        that one already: the driver sends the run's first model while the replicas start, and again with the
        first epoch's call (a replica restarted in between loads it there)."""
        key = tuple(ref.hex() for ref in model)
        with self.model_lock:
            if key == self.model_key:
                return
            self.model_key = None  # the copy below is not a whole model until it ends
            w_in, w_out = self.ray.get(list(model), timeout=self.timeout_s)
            np.copyto(self.trainer.w_in, w_in)
            np.copyto(self.trainer.w_out, w_out)
            del w_in, w_out
            self.model_key = key

    def train_epoch(self, call: EpochCall) -> ReplicaEpoch:
        """Train one epoch of this replica's share with the CPU driver, syncing after every part (``call``: what
        and how, :class:`EpochCall`); rank 0 returns the model when asked."""
        epoch, schedule, gen, plan, rows = call.epoch, call.schedule, call.gen, call.plan, call.rows
        start_part, checkpoint_every, model = call.start_part, call.checkpoint_every, call.model
        if model is not None:
            self.load_model(model)
        if self.model_key is None:  # before joining the group: the driver forms a new one with the model
            raise ReplicaRestarted(f"replica {self.rank} was restarted since its last epoch and holds no model")
        self.collective.connect(call.group_id)
        ranges = plan.parts[self.rank]
        parts = [(self.tokens, self.offsets[self.chunks[a]: self.chunks[b] + 1]) for a, b in ranges]
        mats = [self.trainer.w_in, self.trainer.w_out]
        self.synced = (epoch, start_part)
        self.progress_totals = ReplicaProgress()  # this epoch's counters start at zero
        epoch_sync = SyncFigures()
        clock = [time.perf_counter(), int(plan.part_words[:, :start_part].sum())]  # the last checkpoint's

        overlap = self._overlap(mats, call.overlap_rows)
        overlaps = overlapped_syncs(rows, call.overlap_rows)

        def on_part_end(e: int, k: int, counters: tuple[int, int, float]) -> None:
            t0 = time.perf_counter()
            before = self.collective.bytes_received
            sync_id = e * plan.parts_per_epoch + k + 1
            last = k + 1 == plan.parts_per_epoch
            if overlap is not None:
                overlap.finish()  # the previous part's sync, if it ran while this part trained
            if overlap is not None and overlaps[k]:
                overlap.start(gen, sync_id, rows[k])
                epoch_sync.overlapped += 1
            else:
                self.collective.average(gen, sync_id, mats, rows[k])
            epoch_sync.syncs += 1
            epoch_sync.rows += rows[k]
            if checkpoint_every is not None and not last:
                self._checkpoint_after(gen, e, k, plan, mats, counters, checkpoint_every, clock, overlap)
            epoch_sync.seconds += time.perf_counter() - t0
            epoch_sync.bytes += self.collective.bytes_received - before
            self.synced = (e, k + 1)

        self.trainer.bind(lambda e: parts, chunk_index_base=plan.chunk_base[self.rank], on_part_end=on_part_end)
        t0 = time.perf_counter()
        ctx = ShareEpoch(self, epoch, schedule, plan, self._resume_at(start_part, ranges))
        result = self.trainer.train_epoch(ctx)
        return ReplicaEpoch(rank=self.rank, result=result, seconds=time.perf_counter() - t0, sync=epoch_sync,
                            model=(self.trainer.w_in, self.trainer.w_out) if call.return_model else None)

    def _overlap(self, mats: list[np.ndarray], cap: int) -> OverlappedSync | None:
        # The overlapped syncs' state, its buffers kept from epoch to epoch; None where no sync overlaps.
        if not cap:
            return None
        o = self.overlapped
        if o is None or o.cap != cap or o.mats[0] is not mats[0]:
            o = self.overlapped = OverlappedSync(self.collective, mats, cap)
        if o.pending is not None:  # a failed attempt's sync, in its abandoned group: new buffers from here on
            o.drop()
        return o

    def _resume_at(self, start_part: int, ranges: list[tuple[int, int]]) -> Resume | None:
        # This replica's position after the parts a checkpoint trained: its chunks and tokens before them.
        if start_part == 0:
            return None
        first, last = ranges[0][0], ranges[start_part - 1][1]
        words = int(self.offsets[self.chunks[last]] - self.offsets[self.chunks[first]])
        return Resume(units_done=last - first, words_done=words, words=0, pairs=0, loss=0.0)

    def _checkpoint_after(self, gen: int, epoch: int, k: int, plan: SharePlan, mats: list[np.ndarray],
                          counters: tuple[int, int, float], every: tuple[str, float], clock: list[Any],
                          overlap: OverlappedSync | None = None) -> None:
        """After part ``k``'s sync: replica 0 says whether a checkpoint is due (words: all replicas' words
        since the last one, from the plan, so the same parts in every run; seconds: its clock), every replica
        hears it through the board (a barrier); if due, every row is averaged (the replicas then hold one
        model) and replica 0 puts the model and every replica's counters on the board for the driver."""
        sync_id = CHECKPOINT_SYNC_BASE + epoch * plan.parts_per_epoch + k + 1
        done = int(plan.part_words[:, : k + 1].sum())
        due = None
        if self.rank == 0:
            kind, amount = every
            due = (done - clock[1] >= amount) if kind == "words" else (time.perf_counter() - clock[0] >= amount)
        status, answers = self.ray.get(self.board.exchange.remote(gen, sync_id, 3, self.rank, [due]),
                                       timeout=self.timeout_s + 30)
        if status != "ok":
            raise SyncAborted(f"checkpoint decision after part {k + 1}: {status}")
        if not answers[0][0]:
            return
        clock[0], clock[1] = time.perf_counter(), done
        if overlap is not None:
            overlap.finish()  # this part's sync first: a checkpoint holds no sync in flight
        self.collective.average(gen, sync_id, mats, len(mats[0]))
        status, answers = self.ray.get(self.board.exchange.remote(gen, sync_id, 4, self.rank, [list(counters)]),
                                       timeout=self.timeout_s + 30)
        if status != "ok":
            raise SyncAborted(f"checkpoint after part {k + 1}: {status}")
        if self.rank == 0:
            model = [self.ray.put(m) for m in mats]  # copies: training goes on
            self.board.put_checkpoint.remote(gen, {"part": k, "words_done": done,
                                                   "counters": [a[0] for a in answers], "model": model})


ReplicaActor = _Replica  # the replica actor's class (its name is the process title Ray gives it)


class OverlappedSync:
    """A sync that runs while the next part trains (Ji et al.'s synchronous averaging, delayed by one part).

    :meth:`start` copies the top ``rows`` rows of each matrix twice (a snapshot, and a buffer the collective
    averages across the replicas in place) and returns; training goes on in the matrices.  :meth:`finish`, at the
    next part's end, waits for the average and moves each row to it plus what this replica trained since the
    snapshot: ``m[:rows] += average - snapshot``.  Every replica starts its syncs at the same parts with the same
    rows, so the average is the blocking sync's, and the training since is kept rather than overwritten.  The
    replicas then differ by one part's updates until the epoch's last sync, which is a blocking full average.
    The buffers hold at most ``cap`` rows of each matrix, allocated at the first sync.

    Example:
        >>> o = OverlappedSync(coll, [w_in, w_out], cap=4096)  # doctest: +SKIP
        >>> o.start(gen, sync_id=1, rows=1024); ...train the next part...; o.finish()  # doctest: +SKIP
    """

    def __init__(self, collective: Any, mats: list[np.ndarray], cap: int) -> None:
        self.collective, self.mats, self.cap = collective, mats, cap
        self.snap: list[np.ndarray] = []
        self.buf: list[np.ndarray] = []
        self.pending: tuple[int, Any] | None = None  # (rows, the collective's handle)

    def start(self, gen: int, sync_id: int, rows: int) -> None:
        """Snapshot the top ``rows`` rows and start their average; the previous one must be finished."""
        assert self.pending is None and rows <= self.cap
        if not self.snap:
            self.snap = [np.empty((self.cap, m.shape[1]), m.dtype) for m in self.mats]
            self.buf = [np.empty((self.cap, m.shape[1]), m.dtype) for m in self.mats]
        for m, snap, buf in zip(self.mats, self.snap, self.buf, strict=True):
            np.copyto(snap[:rows], m[:rows])
            np.copyto(buf[:rows], snap[:rows])
        try:
            self.pending = (rows, self.collective.start_average(gen, sync_id, [b[:rows] for b in self.buf]))
        except BaseException:
            self.drop()  # a sum it did start may still write into these buffers
            raise

    def drop(self) -> None:
        """Forget the sync in flight (its group failed) and the buffers it may still write into."""
        self.pending = None
        self.snap, self.buf = [], []

    def finish(self) -> None:
        """Wait for the sync in flight, if any, and apply it (the average plus this replica's training since)."""
        if self.pending is None:
            return
        rows, handle = self.pending
        self.collective.wait(handle)  # if it fails the sync stays pending: the next epoch's call drops it
        self.pending = None
        for m, snap, buf in zip(self.mats, self.snap, self.buf, strict=True):
            b = buf[:rows]
            b -= snap[:rows]
            m[:rows] += b


class ShareEpoch:
    """A replica's :class:`parvec.engine.EpochContext`: the rate of a point of its share is the schedule's at the
    words *all* replicas have trained by then (:meth:`SharePlan.word_position`); its checkpoints are taken at part
    ends by the replicas together (``_Replica._checkpoint_after``), not by its CPU driver.

    Example:
        >>> ctx = ShareEpoch(replica, 0, schedule, plan)  # doctest: +SKIP
    """

    checkpoint_every: tuple[str, float] | None = None  # the replicas take their checkpoints together

    def __init__(self, replica: _Replica, epoch: int, schedule: Schedule, plan: SharePlan,
                 resume: Resume | None = None) -> None:
        self.replica, self.epoch, self.schedule, self.plan = replica, epoch, schedule, plan
        self.resume = resume

    def alpha_at(self, words_before: float) -> float:
        """The run's rate at this point of the share."""
        return self.schedule.alpha_at(self.plan.word_position(self.replica.rank, self.epoch, words_before))

    def progress(self, words: int, pairs: int, loss: float) -> None:
        """Keep the running counters for the driver's progress poll."""
        self.replica.progress_totals = ReplicaProgress(words=words, pairs=pairs, loss_sum=loss)

    def checkpoint_due(self, words_handed: int) -> bool:
        """Never: the replicas take their checkpoints together, at part ends."""
        return False

    def checkpoint(self, units_done: int, words_done: int, words: int, pairs: int, loss: float) -> None:
        """Not called (:meth:`checkpoint_due` is never true)."""
        raise AssertionError("a replica's CPU driver takes no checkpoints of its own")


def load_share(rank: int, n: int, config: TrainConfig, data: ReplicaData) -> tuple[np.ndarray, np.ndarray, str]:
    """Replica ``rank``'s tokens and split sentence offsets, and how it got them: the memory-mapped cache if
    this node sees it, else its byte range of the input encoded with the shared vocabulary (:func:`encode_share`),
    else (a node that shares no file system with the driver) its share from Ray's object store.

    Example:
        >>> tokens, offsets, how = load_share(0, 2, config, data)  # doctest: +SKIP
    """
    mode = data.mode
    path = data.cache
    if mode in ("auto", "cache") and path and _cache_matches(Path(path), data):
        corpus = load_encoded(path, mmap=True)
        offsets = split_long_sentences(corpus.offsets, config.max_sentence_length)
        lo, hi = data.shares[rank]
        return corpus.tokens, np.ascontiguousarray(offsets[lo:hi + 1]), f"memory-mapped {path}"
    if mode == "cache":
        raise ParvecError(f"replica {rank}: the encoded corpus {path} is not readable on its node")
    source = data.source
    if (not source or not Path(source).is_file()) and data.refs is not None and mode == "auto":
        import ray

        tokens, offsets = ray.get(data.refs[rank])
        return tokens, offsets, "its share from Ray's object store"
    if not source or not Path(source).is_file():
        raise ParvecError(
            f"replica {rank}: its node can read neither the encoded corpus ({path}) nor the input file ({source}); "
            "put the input (or --cache-dir) on a path every node can read")
    return encode_share(rank, n, config, data) + (f"encoded its byte range of {source}",)


def _cache_matches(path: Path, data: ReplicaData) -> bool:
    try:
        header = json.loads((path / "header.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    matches: bool = header.get("tokens") == data.tokens and header.get("vocab_size") == len(data.words)
    return matches


def encode_share(rank: int, n: int, config: TrainConfig, data: ReplicaData) -> tuple[np.ndarray, np.ndarray]:
    """Replica ``rank`` of ``n``'s share encoded from the input text with the shared vocabulary: tokens and split
    sentence offsets.  A plain file is read from its byte range (:func:`parvec.corpus.range_cuts`: cut at
    whitespace, so no token is split or lost); a compressed one cannot be sought, so it is decoded whole and the
    replica keeps its share of the tokens.  The file must be the one the vocabulary was counted from.

    Example:
        >>> tokens, offsets = encode_share(0, 2, TrainConfig(threads=1), data)  # doctest: +SKIP
    """
    from parvec.corpus import (
        NoTokensError,
        RangeSentences,
        TextSentences,
        check_input_unchanged,
        encode_sentences,
        range_cuts,
    )
    from parvec.fileio import is_compressed
    from parvec.vocab import Vocab

    assert data.source is not None
    source = Path(data.source)
    check_input_unchanged(source, data.inputs)  # the file the vocabulary was counted from
    opts = data.read_options
    vocab = Vocab(list(data.words), np.asarray(data.counts, dtype=np.int64))
    if is_compressed(source):
        whole = encode_sentences(TextSentences(source, opts), opts, vocab, source=str(source))
        t = whole.n_tokens
        lo, hi = t * rank // n, t * (rank + 1) // n
        s_lo = int(np.searchsorted(whole.offsets, lo, side="right")) - 1
        s_hi = int(np.searchsorted(whole.offsets, hi, side="left"))
        offsets = np.clip(whole.offsets[s_lo:s_hi + 1], lo, hi) - lo
        offsets = offsets[np.concatenate([[True], np.diff(offsets) > 0])]
        tokens = np.ascontiguousarray(whole.tokens[lo:hi])
    else:
        cuts = range_cuts(source, n)
        start, end = cuts[rank], cuts[rank + 1]
        try:
            enc = encode_sentences(RangeSentences(source, start, end, opts), opts, vocab,
                                   source=f"{source} bytes {start}-{end}")
            tokens, offsets = enc.tokens, enc.offsets
        except NoTokensError:  # a byte range without an in-vocabulary token
            tokens, offsets = np.zeros(0, np.int32), np.zeros(1, np.int64)
    return tokens, split_long_sentences(offsets, config.max_sentence_length)
