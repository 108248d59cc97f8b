"""Data-parallel replicas with frequency-ranked sub-model synchronisation (Ji et al., Intel's pWord2Vec).

``N`` replica actors each hold the whole model (input and output vectors) and train their own shard of
the corpus with parvec's one :class:`~parvec.trainer.Trainer` (any CPU algorithm, threads inside each
actor).  Every replica starts from the driver's model, so averaging starts from one point.

- **Shards.** The corpus is cut into the trainer's chunks (``chunk_bounds`` over the whole corpus); replica
  ``r`` gets a contiguous run of whole chunks holding about ``1/N`` of the tokens, and draws each chunk's
  random stream from its *global* chunk index, so ``local:1`` trains exactly what one machine trains.
  Each shard is split into the same number ``P`` of parts (about ``sync_words`` tokens each); the
  replicas synchronise after every part.
- **Sync schedule.** Rows are sorted by count, so the hottest rows are the first ones.  Sync number
  ``j`` (counted from the run's first sync, 1-based) averages the top ``min(2**ctz(j) * min_sync_words, V)``
  rows of both matrices (pWord2Vec's ruler); every epoch's last sync, and ``full_sync_times`` evenly spaced
  ones per epoch, average all ``V`` rows.  See :func:`sync_rows` and :func:`sync_plan`.
- **Overlapped syncs** (``Cluster.sync_overlap``, on by default): a sync of at most :func:`overlap_rows_cap`
  rows, not an epoch's last, runs while the next part trains and is applied at that part's end as the average
  plus the replica's training since (:class:`_OverlappedSync`); the others hold training up until they end.
- **Learning rate** follows the global word count: at a part boundary the position is the sum of every
  replica's words so far, and within a part it moves linearly to the next boundary's sum, so a replica's
  rate is the one the whole run is at.  ``Cluster.alpha_scale`` optionally raises the starting rate with
  ``N`` (the paper's adjustment; docs/distributed.md gives the measurement behind the default).
- **Averaging** is a reduce-scatter then an all-gather on Ray object references: each replica puts one
  slice of the rows per peer, averages the slice it owns (summed in rank order, so every replica ends with
  identical bits), puts the result, and gathers everyone's.  A small async "board" actor only swaps the
  references; the rows move between the replicas' object stores.  Every wait has a time-out.
- **Data.** Each actor memory-maps the encoded-corpus cache (``load_encoded(mmap=True)``) and touches only its
  shard; the driver never ships the corpus.  A node that cannot see the cache encodes its own byte range
  of the input text with the shared vocabulary.
- **Faults.** Replica actors restart (``max_restarts``).  When one is lost mid-epoch the driver aborts the
  epoch's syncs, waits for Ray to bring the actor back, and every replica reloads the last model all of
  them agreed on (the previous epoch's end, which the driver keeps) and trains the epoch again: with one
  thread per replica the result is bit for bit the run without the fault.  A replica lost while starting
  (in its constructor, or while the first sync group forms) is waited for the same way and the group formed
  anew.  The report names the replica lost and the words retrained, and each fault prints one line.  A
  replica that cannot come back ends the run with a ``ParvecError``.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parvec.chunks import chunk_bounds, split_long_sentences
from parvec.config import TrainConfig, default_threads
from parvec.corpus import EncodedCorpus, ReadOptions, load_encoded, save_encoded
from parvec.distributed.cluster import Cluster
from parvec.distributed.collectives import Board, SyncAborted, make_collective
from parvec.distributed.supervise import was_restarted
from parvec.engine import Diverged, EpochContext, EpochResult, Resume, SelfRunning, TrainStats
from parvec.errors import ParvecError
from parvec.schedule import Schedule
from parvec.trainer import CpuDriver

ALPHA_SCALES = ("none", "sqrt", "linear")


# ---------------------------------------------------------------------- the schedule (pure functions)
# Sync ids of the checkpoint steps (decision, full average, counters): apart from the part syncs' 1, 2, ..
CHECKPOINT_SYNC_BASE = 1 << 40


def ctz(j: int) -> int:
    """Trailing zero bits of a positive integer.

    Example:
        >>> [ctz(j) for j in (1, 2, 3, 4, 12)]
        [0, 1, 0, 2, 2]
    """
    if j < 1:
        raise ValueError("ctz needs a positive integer")
    return (j & -j).bit_length() - 1


def sync_rows(j: int, min_sync_words: int, vocab_size: int) -> int:
    """Rows averaged at sync number ``j`` (1-based): ``min(2**ctz(j) * min_sync_words, vocab_size)``.

    Example:
        >>> [sync_rows(j, 1024, 5000) for j in (1, 2, 3, 4, 8)]
        [1024, 2048, 1024, 4096, 5000]
    """
    return min((1 << ctz(j)) * min_sync_words, vocab_size)


def sync_plan(parts_per_epoch: int, epochs: int, min_sync_words: int, vocab_size: int,
              full_sync_times: int = 0) -> list[list[int]]:
    """Rows averaged after each part: ``plan[epoch][part]``.

    Sync ``j = epoch * parts_per_epoch + part + 1`` follows the ruler (:func:`sync_rows`); the last part
    of every epoch, and ``full_sync_times`` evenly spaced parts per epoch, average all rows.

    Example:
        >>> sync_plan(4, 2, 10, 100)
        [[10, 20, 10, 100], [10, 20, 10, 100]]
        >>> sync_plan(4, 1, 10, 100, full_sync_times=1)
        [[10, 100, 10, 100]]
    """
    if parts_per_epoch < 1 or epochs < 0:
        raise ValueError("parts_per_epoch must be positive and epochs non-negative")
    full_parts = {math.ceil(i * parts_per_epoch / (full_sync_times + 1)) - 1 for i in range(1, full_sync_times + 1)}
    plan = []
    for epoch in range(epochs):
        rows = []
        for part in range(parts_per_epoch):
            j = epoch * parts_per_epoch + part + 1
            full = part == parts_per_epoch - 1 or part in full_parts
            rows.append(vocab_size if full else sync_rows(j, min_sync_words, vocab_size))
        plan.append(rows)
    return plan


def ruler_rows_total(first: int, last: int, min_sync_words: int, vocab_size: int) -> int:
    """Sum of :func:`sync_rows` over syncs ``first .. last`` (inclusive), without visiting each one.

    Example:
        >>> ruler_rows_total(1, 8, 10, 1000) == sum(sync_rows(j, 10, 1000) for j in range(1, 9))
        True
    """
    total, k = 0, 0
    while (1 << k) <= last:
        step = 1 << k
        # syncs j in [first, last] with exactly k trailing zeros: multiples of 2^k that are not of 2^(k+1)
        count = (last // step - (first - 1) // step) - (last // (2 * step) - (first - 1) // (2 * step))
        total += count * min(step * min_sync_words, vocab_size)
        k += 1
    return total


def traffic_model(vocab_size: int, dim: int, replicas: int, words_per_epoch: int, epochs: int,
                  sync_words: int = 200_000, min_sync_words: int = 1024, full_sync_times: int = 0,
                  parts_per_epoch: int | None = None) -> dict[str, float]:
    """What a replicas run moves: syncs, rows averaged, and the bytes all replicas receive (a ring allreduce
    brings ``2 (N-1)/N`` of the rows' bytes into each replica, for both matrices), against full-model syncs.
    ``parts_per_epoch`` defaults to what balanced shards give, ``ceil(words_per_epoch / N / sync_words)``.

    Example:
        >>> m = traffic_model(1000, 10, 2, 40_000, 1, sync_words=10_000, min_sync_words=100)
        >>> m["syncs"], m["rows"], m["bytes"]
        (2, 1100, 176000)
    """
    n = replicas
    parts = parts_per_epoch or max(1, math.ceil(words_per_epoch / n / sync_words))
    syncs = parts * epochs
    rows = ruler_rows_total(1, syncs, min_sync_words, vocab_size)
    full_parts = {math.ceil(i * parts / (full_sync_times + 1)) - 1 for i in range(1, full_sync_times + 1)}
    full_parts.add(parts - 1)
    for e in range(epochs):  # every epoch's last part, and the evenly spaced ones, are full syncs
        for k in full_parts:
            rows += vocab_size - sync_rows(e * parts + k + 1, min_sync_words, vocab_size)
    per_row = 2 * (n - 1) * dim * 4 * 2  # bytes all replicas receive per row averaged (both matrices)
    return {"syncs": syncs, "parts_per_epoch": parts, "rows": rows, "mean_rows": rows / syncs,
            "bytes": rows * per_row, "bytes_per_word": rows * per_row / (words_per_epoch * epochs),
            "bytes_full_model": syncs * vocab_size * per_row}


def alpha_factor(scale: str, n_replicas: int) -> float:
    """The starting learning rate's multiplier for ``n_replicas``: 1, sqrt(N) or N.

    Example:
        >>> alpha_factor("none", 4), alpha_factor("sqrt", 4), alpha_factor("linear", 4)
        (1.0, 2.0, 4.0)
    """
    if scale not in ALPHA_SCALES:
        raise ParvecError(f"alpha_scale must be one of {', '.join(ALPHA_SCALES)}; got {scale!r}")
    return {"none": 1.0, "sqrt": math.sqrt(n_replicas), "linear": float(n_replicas)}[scale]


def split_balanced(words: np.ndarray, n: int) -> np.ndarray:
    """Cut a run of items with ``words`` tokens each into ``n`` contiguous groups of about equal tokens;
    returns ``n + 1`` item indices (every group non-empty when ``len(words) >= n``).

    Example:
        >>> split_balanced(np.array([5, 5, 5, 5]), 2).tolist()
        [0, 2, 4]
    """
    words = np.asarray(words, dtype=np.int64)
    if len(words) < n:
        raise ValueError("fewer items than groups")
    cum = np.concatenate([[0], np.cumsum(words)])
    total = cum[-1]
    cuts = [0]
    for g in range(1, n):
        target = total * g / n
        i = int(np.searchsorted(cum, target))
        if i > 0 and (target - cum[i - 1]) <= (cum[min(i, len(cum) - 1)] - target):
            i -= 1
        i = min(max(i, cuts[-1] + 1), len(words) - (n - g))  # every group keeps at least one item
        cuts.append(i)
    cuts.append(len(words))
    return np.asarray(cuts, dtype=np.int64)


@dataclass
class ShardPlan:
    """Where each replica's share lies and where it synchronises.

    ``parts[r]`` holds ``P`` (first, last) chunk index pairs into replica ``r``'s chunks; ``part_words[r]``
    their token counts; ``chunk_base[r]`` the global index of the replica's first chunk.
    """

    parts: list[list[tuple[int, int]]]
    part_words: np.ndarray  # int64 [N, P]
    chunk_base: list[int]

    @property
    def parts_per_epoch(self) -> int:
        return int(self.part_words.shape[1])

    @property
    def words_per_epoch(self) -> int:
        return int(self.part_words.sum())

    @functools.cached_property
    def _starts(self) -> tuple[list[list[int]], list[int]]:
        # Each replica's part starts in its own words, and the parts' starts in all replicas' words (computed
        # once: word_position runs twice per chunk in every replica).
        local = [[0, *np.cumsum(w).tolist()] for w in self.part_words]
        return local, [0, *np.cumsum(self.part_words.sum(axis=0)).tolist()]

    def word_position(self, rank: int, epoch: int, words_before: float) -> float:
        """The global schedule position of replica ``rank`` being ``words_before`` words into its epoch."""
        local = self.part_words[rank]
        starts, glob = self._starts[0][rank], self._starts[1]
        k = min(max(bisect.bisect_right(starts, words_before) - 1, 0), len(local) - 1)
        scale = (glob[k + 1] - glob[k]) / local[k] if local[k] else 0.0
        return epoch * self.words_per_epoch + int(glob[k]) + (words_before - int(starts[k])) * scale


def plan_parts(chunk_words: list[np.ndarray], sync_words: int) -> ShardPlan:
    """Split every replica's chunks (``chunk_words[r]``: tokens per chunk) into the same number of parts
    of about ``sync_words`` tokens.

    Example:
        >>> plan_parts([np.array([4, 4, 4]), np.array([4, 4, 4])], 8).part_words.tolist()
        [[4, 8], [4, 8]]
    """
    longest = max(int(w.sum()) for w in chunk_words)
    fewest = min(len(w) for w in chunk_words)
    if fewest == 0:
        raise ParvecError("a replica's share of the corpus is empty: use fewer replicas or a larger corpus")
    n_parts = max(1, min(fewest, math.ceil(longest / sync_words)))
    parts, words, base = [], [], []
    start = 0
    for w in chunk_words:
        cuts = split_balanced(w, n_parts)
        parts.append([(int(cuts[k]), int(cuts[k + 1])) for k in range(n_parts)])
        words.append([int(w[cuts[k]:cuts[k + 1]].sum()) for k in range(n_parts)])
        base.append(start)
        start += len(w)
    return ShardPlan(parts, np.asarray(words, dtype=np.int64), base)


def shard_chunks(offsets: np.ndarray, chunk_words: int, n_replicas: int) -> list[tuple[int, int]]:
    """Sentence ranges (of the split offsets) giving each replica a contiguous run of whole chunks with
    about ``1/n_replicas`` of the tokens.

    Example:
        >>> shard_chunks(np.array([0, 3, 6, 9, 12]), 3, 2)
        [(0, 2), (2, 4)]
    """
    bounds = chunk_bounds(offsets, chunk_words)
    n_chunks = len(bounds) - 1
    if n_chunks < n_replicas:
        raise ParvecError(f"the corpus makes {n_chunks} chunk(s) of about {chunk_words} words, fewer than the "
                          f"{n_replicas} replicas: use fewer replicas (or a larger corpus)")
    words = np.diff(offsets[bounds])
    cuts = split_balanced(words, n_replicas)
    return [(int(bounds[cuts[r]]), int(bounds[cuts[r + 1]])) for r in range(n_replicas)]


# ---------------------------------------------------------------------- Ray side
class ReplicaRestarted(Exception):
    """A replica's epoch call reached a process Ray restarted after the last epoch (it holds no model): the
    driver handles it as a replica lost in that epoch."""


class _Replica:
    """One replica: its share of the corpus, a whole model, parvec's Trainer, and its side of the syncs."""

    def __init__(self, rank: int, n: int, config: TrainConfig, board_name: str, timeout_s: float,
                 collective: str) -> None:
        import ray

        board = ray.get_actor(board_name)  # by name: a handle among the arguments would stop restarts
        self.board = board
        # The counts and the data description are read from the board, so a restarted actor finds them again.
        counts, data = ray.get(ray.get(board.shared_refs.remote(), timeout=timeout_s), timeout=timeout_s)
        self.ray = ray
        self.timeout_s = timeout_s
        self.rank, self.n = rank, n
        self.config = config
        v = len(counts)
        self.trainer = CpuDriver(config, counts, w_in=np.zeros((v, config.dim), np.float32),
                                 w_out=np.zeros((v, config.dim), np.float32))
        self.model_key: tuple[str, ...] | None = None  # the object references of the model it holds
        self.model_lock = threading.Lock()  # a load still running (the driver gave up waiting) finishes first
        self.tokens, self.offsets, self.data_note = _load_share(rank, n, config, data)
        self.chunks = chunk_bounds(self.offsets, config.chunk_words)
        self.collective = make_collective(collective, ray, board, rank, n, timeout_s)
        self.progress_totals: dict[str, Any] = {}
        self.synced = (-1, 0)  # (epoch, syncs completed in it)
        self.overlapped: _OverlappedSync | None = None
        self.trainer.warm_up((self.tokens, self.offsets[: min(len(self.offsets), 2)]))
        self.node = ray.get_runtime_context().get_node_id()

    def describe(self) -> dict[str, Any]:
        """This replica's chunks (tokens each), node and how it got its data."""
        words = np.diff(self.offsets[self.chunks])
        return {"chunk_words": words, "node": self.node, "pid": os.getpid(), "data": self.data_note,
                "collective": self.collective.name,
                # True when Ray restarted this actor (its process died, here while it was starting)
                "restarted": was_restarted()}

    def connect(self, group_id: int) -> None:
        """Form (or form again, after a fault) the sync group with the peers."""
        self.collective.connect(group_id)

    def ping(self) -> int:
        return os.getpid()

    def progress(self) -> dict[str, Any]:
        """The trainer's running totals and (epoch, syncs completed in it)."""
        return dict(self.progress_totals, synced=self.synced)

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

    def train_epoch(self, epoch: int, schedule: Schedule, gen: int, group_id: int, plan: ShardPlan,
                    rows: list[int], model: tuple[Any, Any] | None, return_model: bool, start_part: int = 0,
                    checkpoint_every: tuple[str, float] | None = None, overlap_rows: int = 0) -> dict[str, Any]:
        """Train one epoch of the shard with the CPU driver, syncing after every part; rank 0 returns the model
        when asked.  ``schedule`` is the run's (its rates times the replicas' scale).  ``start_part``: the
        parts before it were trained before a mid-epoch checkpoint (skipped: same chunk indexes and rates).
        ``checkpoint_every``: mid-epoch checkpoints at part ends (:meth:`_checkpoint_after`).  ``overlap_rows``:
        a sync of at most this many rows (not the epoch's last) runs while the next part trains
        (:class:`_OverlappedSync`); 0: every sync holds training up until it ends."""
        if model is not None:
            self.load_model(model)
        if self.model_key is None:  # before joining the group: the driver forms a new one with the model
            raise ReplicaRestarted(f"replica {self.rank} was restarted since its last epoch and holds no model")
        self.collective.connect(group_id)
        ranges = plan.parts[self.rank]
        parts = [(self.tokens, self.offsets[self.chunks[a]: self.chunks[b] + 1]) for a, b in ranges]
        mats = [self.trainer.w_in, self.trainer.w_out]
        self.synced = (epoch, start_part)
        self.progress_totals = {}  # this epoch's counters start at zero
        epoch_sync = {"seconds": 0.0, "syncs": 0, "rows": 0, "bytes": 0, "overlapped": 0}
        clock = [time.perf_counter(), int(plan.part_words[:, :start_part].sum())]  # the last checkpoint's

        overlap = self._overlap(mats, overlap_rows)
        overlaps = overlapped_syncs(rows, overlap_rows)

        def on_part_end(e: int, k: int, counters: tuple[int, int, float]) -> None:
            t0 = time.perf_counter()
            before = self.collective.bytes_received
            sync_id = e * plan.parts_per_epoch + k + 1
            last = k + 1 == plan.parts_per_epoch
            if overlap is not None:
                overlap.finish()  # the previous part's sync, if it ran while this part trained
            if overlap is not None and overlaps[k]:
                overlap.start(gen, sync_id, rows[k])
                epoch_sync["overlapped"] += 1
            else:
                self.collective.average(gen, sync_id, mats, rows[k])
            epoch_sync["syncs"] += 1
            epoch_sync["rows"] += rows[k]
            if checkpoint_every is not None and not last:
                self._checkpoint_after(gen, e, k, plan, mats, counters, checkpoint_every, clock, overlap)
            epoch_sync["seconds"] += time.perf_counter() - t0
            epoch_sync["bytes"] += self.collective.bytes_received - before
            self.synced = (e, k + 1)

        self.trainer.bind(lambda e: parts, chunk_index_base=plan.chunk_base[self.rank], on_part_end=on_part_end)
        t0 = time.perf_counter()
        ctx = _ShareEpoch(self, epoch, schedule, plan, self._resume_at(start_part, ranges))
        result = self.trainer.train_epoch(ctx)
        out = {"rank": self.rank, "result": result, "seconds": time.perf_counter() - t0, "sync": epoch_sync}
        if return_model:
            out["model"] = (self.trainer.w_in, self.trainer.w_out)
        return out

    def _overlap(self, mats: list[np.ndarray], cap: int) -> _OverlappedSync | None:
        # The overlapped syncs' state, its buffers kept from epoch to epoch; None where no sync overlaps.
        if not cap:
            return None
        o = self.overlapped
        if o is None or o.cap != cap or o.mats[0] is not mats[0]:
            o = self.overlapped = _OverlappedSync(self.collective, mats, cap)
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

    def _checkpoint_after(self, gen: int, epoch: int, k: int, plan: ShardPlan, mats: list[np.ndarray],
                          counters: tuple[int, int, float], every: tuple[str, float], clock: list,
                          overlap: _OverlappedSync | None = None) -> None:
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


class _OverlappedSync:
    """A sync that runs while the next part trains (Ji et al.'s synchronous averaging, delayed by one part).

    :meth:`start` copies the top ``rows`` rows of each matrix twice (a snapshot, and a buffer the collective
    averages across the replicas in place) and returns; training goes on in the matrices.  :meth:`finish`, at the
    next part's end, waits for the average and moves each row to it plus what this replica trained since the
    snapshot: ``m[:rows] += average - snapshot``.  Every replica starts its syncs at the same parts with the same
    rows, so the average is the blocking sync's, and the training since is kept rather than overwritten.  The
    replicas then differ by one part's updates until the epoch's last sync, which is a blocking full average.
    The buffers hold at most ``cap`` rows of each matrix, allocated at the first sync.

    Example:
        >>> o = _OverlappedSync(coll, [w_in, w_out], cap=4096)  # doctest: +SKIP
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


def overlap_rows(cluster: Cluster, vocab_size: int) -> int:
    """The rows up to which ``cluster``'s syncs overlap training (:func:`overlap_rows_cap`), 0 where none do
    (``sync_overlap`` off, or one replica: nothing to average).

    Example:
        >>> overlap_rows(Cluster("local:2"), 67955), overlap_rows(Cluster("local:1"), 67955)
        (8494, 0)
    """
    n = int(cluster.replicas or 1)
    return overlap_rows_cap(vocab_size, cluster.min_sync_words) if cluster.sync_overlap and n > 1 else 0


def overlapped_syncs(rows: list[int], cap: int) -> list[bool]:
    """Which of an epoch's syncs (``rows`` averaged after each part, :func:`sync_plan`) run while the next part
    trains: those of at most ``cap`` rows, but never the epoch's last (the full average the epoch ends with).

    Example:
        >>> overlapped_syncs([1024, 2048, 1024, 4096, 67955], 2048)
        [True, True, True, False, False]
    """
    return [k + 1 < len(rows) and 0 < r <= cap for k, r in enumerate(rows)]


def overlap_rows_cap(vocab_size: int, min_sync_words: int) -> int:
    """The most rows a sync may average while the next part trains: ``min(V // 8, 64 * min_sync_words)``, at
    least ``min_sync_words`` (so the ruler's smallest syncs always overlap).  Its two copies of both matrices'
    rows are then at most a quarter of the model's memory (and 256 x ``min_sync_words`` rows) once the vocabulary
    has ``8 x min_sync_words`` words or more (a smaller model's copies are its ``min_sync_words`` top rows, up to
    twice the model); the rarer, larger syncs hold training up, as every epoch's last (full) one does.

    Example:
        >>> overlap_rows_cap(67955, 1024), overlap_rows_cap(10_000_000, 1024), overlap_rows_cap(2000, 1024)
        (8494, 65536, 1024)
    """
    return max(min(vocab_size // 8, 64 * min_sync_words), min(min_sync_words, vocab_size))


class _ShareEpoch:
    """A replica's :class:`parvec.engine.EpochContext`: the rate of a point of its share is the schedule's at the
    words *all* replicas have trained by then (:meth:`ShardPlan.word_position`); its checkpoints are taken at part
    ends by the replicas together (:meth:`_Replica._checkpoint_after`), not by its CPU driver."""

    checkpoint_every = None

    def __init__(self, replica: _Replica, epoch: int, schedule: Schedule, plan: ShardPlan,
                 resume: Resume | None = None) -> None:
        self.replica, self.epoch, self.schedule, self.plan = replica, epoch, schedule, plan
        self.resume = resume

    def alpha_at(self, words_before: float) -> float:
        return self.schedule.alpha_at(self.plan.word_position(self.replica.rank, self.epoch, words_before))

    def progress(self, words: int, pairs: int, loss: float) -> None:
        self.replica.progress_totals = {"words": words, "pairs": pairs, "loss_sum": loss}

    def checkpoint_due(self, words_handed: int) -> bool:
        return False

    def checkpoint(self, units_done: int, words_done: int, words: int, pairs: int, loss: float) -> None:
        raise AssertionError("a replica's CPU driver takes no checkpoints of its own")


def _load_share(rank: int, n: int, config: TrainConfig, data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, str]:
    """This replica's tokens and split sentence offsets: the memory-mapped cache if this node sees it, else
    its byte range of the input encoded with the shared vocabulary."""
    mode = data.get("mode", "auto")
    path = data.get("cache")
    if mode in ("auto", "cache") and path and _cache_matches(Path(path), data):
        corpus = load_encoded(path, mmap=True)
        offsets = split_long_sentences(corpus.offsets, config.max_sentence_length)
        lo, hi = data["sentences"][rank]
        return corpus.tokens, np.ascontiguousarray(offsets[lo:hi + 1]), f"memory-mapped {path}"
    if mode == "cache":
        raise ParvecError(f"replica {rank}: the encoded corpus {path} is not readable on its node")
    source = data.get("source")
    if not source or not Path(source).is_file():
        raise ParvecError(
            f"replica {rank}: its node can read neither the encoded corpus ({path}) nor the input file ({source}); "
            "put the input (or --cache-dir) on a path every node can read")
    return _encode_range(rank, n, config, data) + (f"encoded its byte range of {source}",)


def _cache_matches(path: Path, data: dict[str, Any]) -> bool:
    import json

    try:
        header = json.loads((path / "header.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return header.get("tokens") == data["tokens"] and header.get("vocab_size") == len(data["words"])


def _encode_range(rank: int, n: int, config: TrainConfig, data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    # A plain file is read from its byte range (parvec.corpus.range_cuts: cut at whitespace, so no token is split or
    # lost); a compressed one cannot be sought, so it is decoded whole and this replica keeps its share of the tokens.
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

    source = Path(data["source"])
    check_input_unchanged(source, data.get("inputs"))  # the file the vocabulary was counted from
    opts = ReadOptions(**data["read_options"])
    vocab = Vocab(list(data["words"]), np.asarray(data["counts"], dtype=np.int64))
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


def replica_threads(cluster: Cluster, config: TrainConfig, cpus: int, n: int | None = None,
                    workers_given: bool = False) -> tuple[int, str | None]:
    """Threads per replica on a Ray cluster of ``cpus`` CPUs (0: unknown), and a line to print when an explicit
    count was lowered (else None).

    Each replica is a Ray actor that asks Ray for its threads as CPUs, so replicas x threads above the CPUs would
    wait for free CPUs forever: that is refused.  ``cluster.threads_per_actor`` (``--threads`` given with
    ``--cluster``, or ``Cluster(threads_per_actor=...)``) is honoured or refused, naming what fits; left out,
    ``config.threads`` is fitted to the CPUs (``cpus // n``, at least 1): silently for the default, with the line
    when ``workers_given`` (``Word2Vec(workers=...)`` given explicitly).

    Example:
        >>> replica_threads(Cluster("local:2"), TrainConfig(threads=2), 2)
        (1, None)
        >>> replica_threads(Cluster("local:2", threads_per_actor=2), TrainConfig(), 2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        parvec.errors.ParvecError: --replicas 2 x --threads 2 need 4 CPUs but the Ray cluster has 2: ...
        >>> print(replica_threads(Cluster("local:2", replicas=1), TrainConfig(threads=3), 2, workers_given=True)[1])
        parvec: note: 1 replica x 2 threads: workers=3 (--threads 3) lowered to fit the Ray cluster's 2 CPUs
    """
    n = int(n or cluster.replicas or 1)
    explicit = cluster.threads_per_actor
    if explicit is not None:
        per = int(explicit)
    elif cpus:
        per = max(1, min(int(config.threads), cpus // n if cpus >= n else 1))
    else:  # a cluster that reports no CPUs (Ray Client before a node joined): nothing to fit to
        per = int(config.threads)
    if cpus and per * n > cpus:
        if n > cpus:
            fits = f"--replicas {cpus} or fewer (at 1 thread each)"
        else:
            fits = (f"--threads {cpus // n}{' or fewer' if cpus // n > 1 else ''} with {n} replica"
                    f"{'s' if n != 1 else ''} (or leave --threads out: parvec then fits the threads to the CPUs)")
        raise ParvecError(f"--replicas {n} x --threads {per} need {per * n} CPUs but the Ray cluster has {cpus}: "
                          "each replica is a Ray actor that asks for its threads as CPUs, so Ray would wait for free "
                          f"CPUs forever; use replicas x threads <= {cpus}: {fits}; or a larger cluster")
    note = None
    if explicit is None and workers_given and per < config.threads:
        note = (f"parvec: note: {n} replica{'s' if n != 1 else ''} x {per} thread{'s' if per != 1 else ''}: "
                f"workers={config.threads} (--threads {config.threads}) lowered to fit the Ray cluster's {cpus} "
                "CPUs")
    return per, note


# ---------------------------------------------------------------------- the driver
class ReplicaDriver:
    """The ``replicas`` cluster driver: a :class:`parvec.engine.Driver` whose epoch is every replica's share of
    it, trained by the CPU driver in each replica actor and averaged by the ruler's syncs (module docstring).

    :meth:`prepare` enters the cluster's Ray session and starts the replicas (before the engine's clock),
    :meth:`train_epoch` trains one epoch on all of them (a replica lost mid-epoch: every replica reloads the
    previous epoch's model and the epoch is trained again) and leaves the averaged model in ``w_in``/``w_out``,
    :meth:`finish` stops them.

    Example:
        >>> driver = ReplicaDriver(Cluster("local:2"), TrainConfig(threads=1), counts, w_in, w_out)  # doctest: +SKIP
        >>> RunEngine(driver.use_corpus(corpus), config, schedule).run(); driver.report()["syncs"]  # doctest: +SKIP
    """

    mode = "replicas"

    def __init__(self, cluster: Cluster, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray,
                 w_out: np.ndarray) -> None:
        self.cluster = cluster
        self.config = config.validate()
        self.counts = np.asarray(counts, dtype=np.int64)
        self.w_in, self.w_out = w_in, w_out
        self.read_options: ReadOptions | None = None  # set by Word2Vec: how a node re-reads the input text
        self.corpus: EncodedCorpus | None = None
        self._report: dict[str, Any] = {}
        self.actors: list[Any] = []
        self.board: Any = None
        self._stack: contextlib.ExitStack | None = None
        self.on_progress: Any = None  # when it runs itself (ReplicaTrainer): a report's time series
        self.stats = TrainStats()
        # config.threads was given explicitly (Word2Vec(workers=...)): lowering it to fit the CPUs is said
        self.workers_given = False

    @property
    def label(self) -> str:
        """The progress bar's name."""
        return f"{self.config.algo} x {int(self.cluster.replicas or 1)} replicas"

    def report(self) -> dict[str, Any]:
        """The last run's distributed figures (replicas, syncs, sync_seconds, bytes_synced, ...)."""
        return dict(self._report)

    def use_corpus(self, corpus: EncodedCorpus) -> ReplicaDriver:
        """Train on ``corpus`` (each replica memory-maps its share of the cache, or encodes it); returns self."""
        if len(corpus.vocab) != len(self.w_in):
            raise ParvecError(f"the corpus vocabulary has {len(corpus.vocab)} words but the model has {len(self.w_in)}")
        if corpus.n_tokens == 0:
            raise ParvecError("the corpus has no in-vocabulary tokens to train on")
        self.corpus = corpus
        return self

    def vectors_finite(self) -> bool:
        """Whether the averaged input vectors hold only finite numbers."""
        return bool(np.isfinite(self.w_in.sum()))

    # ------------------------------------------------------------------ the Driver contract
    def prepare(self, start_epoch: int, epochs: int) -> None:
        """Enter the Ray session, start the replicas and form their sync group (before the engine's clock)."""
        assert self.corpus is not None, "use_corpus() first"
        corpus, cfg = self.corpus, self.config
        n = int(self.cluster.replicas or 1)
        self._scale = alpha_factor(self.cluster.alpha_scale, n)
        if self.cluster.is_local:  # too many replicas or threads for local:N's CPUs: refused before Ray starts
            replica_threads(self.cluster, cfg, self.cluster.local_cpus or default_threads(), n)
        self._stack = stack = contextlib.ExitStack()
        try:
            t_ray = time.perf_counter()
            self.ray = ray = stack.enter_context(self.cluster.session())
            self._ray_start_seconds = time.perf_counter() - t_ray
            threads = self._threads(ray, n)  # first: too many replicas for the CPUs are refused before any work
            data, tmp_dir = self._data_spec(corpus, n)
            if tmp_dir is not None:
                stack.callback(shutil.rmtree, tmp_dir, ignore_errors=True)
            stack.callback(self._stop, ray)
            rcfg = TrainConfig.from_dict(cfg.to_dict() | {"threads": threads, "progress": False,
                                                          "alpha": cfg.alpha * self._scale,
                                                          "min_alpha": cfg.final_alpha * self._scale})
            rcfg.chunk_words = cfg.chunk_words
            rcfg.par_h_factor = cfg.par_h_factor
            t_setup = time.perf_counter()
            self._described = self._start(ray, rcfg, data, n, threads)
            self._plan = plan_parts([d["chunk_words"] for d in self._described], self.cluster.sync_words)
            if self._plan.words_per_epoch != corpus.n_tokens:
                raise ParvecError(f"the replicas hold {self._plan.words_per_epoch:,} tokens but the corpus has "
                                  f"{corpus.n_tokens:,}: the input changed since it was read, or a node read it "
                                  "with other options")
            self._rows_plan = sync_plan(self._plan.parts_per_epoch, epochs, self.cluster.min_sync_words,
                                        len(self.counts), self.cluster.full_sync_times)
            self._setup_seconds = time.perf_counter() - t_setup
        except BaseException:
            stack.close()
            self._stack = None
            raise
        self._n, self._threads_per, self._rcfg = n, threads, rcfg
        self._start_epoch = start_epoch
        self._per_replica = {r: {"sync_seconds": 0.0, "bytes": 0, "train_seconds": 0.0} for r in range(n)}
        self._sync_totals = {"syncs": 0, "rows": 0, "bytes": 0, "overlapped": 0}
        self._overlap_rows = overlap_rows(self.cluster, len(self.counts))
        self._faults: list[dict[str, Any]] = list(self._start_faults)
        self._fetch_seconds = 0.0
        self._words_done = 0
        self._attempt = self._last_checkpoint = (0, 0, 0, 0.0)
        self._t0 = time.perf_counter()

    def train_epoch(self, ctx: EpochContext) -> EpochResult:
        """Train one epoch on every replica; the averaged model ends in ``w_in``/``w_out``.  A resumed epoch
        starts after the checkpoint's parts; mid-epoch checkpoints are taken at part ends by the replicas
        together (``_Replica._checkpoint_after``) and written here; a replica lost mid-epoch makes every replica
        reload the model of this epoch's last checkpoint (else of its start) and train on from there."""
        ray, epoch = self.ray, ctx.epoch
        schedule = ctx.schedule.scaled(self._scale)
        attempt_model = self._model
        r0 = ctx.resume
        # (first part, then this call's words, the epoch's pairs and loss) where the current attempt starts
        self._attempt = (r0.units_done, 0, r0.pairs, r0.loss) if r0 is not None else (0, 0, 0, 0.0)
        self._last_checkpoint = self._attempt
        while True:
            gen = ray.get(self.board.begin.remote(epoch), timeout=self.cluster.timeout_s)
            refs = [a.train_epoch.remote(epoch, schedule, gen, self._group_id, self._plan, self._rows_plan[epoch],
                                         attempt_model, r == 0, self._attempt[0], ctx.checkpoint_every,
                                         self._overlap_rows)
                    for r, a in enumerate(self.actors)]
            results, lost = self._wait(ray, refs, gen, ctx)
            if not lost:
                break
            self._lost_mid_epoch(ray, lost, epoch, self._last_checkpoint[0])
            attempt_model = (ray.put(self.w_in), ray.put(self.w_out))  # the last checkpoint's, or the epoch's start
            self._attempt = self._last_checkpoint
            self._group_id += 1  # the survivors and the restarted replica form a new sync group
        t_fetch = time.perf_counter()
        w_in, w_out = results[0].pop("model")
        np.copyto(self.w_in, w_in)
        np.copyto(self.w_out, w_out)
        del w_in, w_out
        self._fetch_seconds += time.perf_counter() - t_fetch
        _, words, pairs, loss = self._attempt
        for res in results.values():
            done: EpochResult = res["result"]
            words += done.words
            pairs += done.pairs
            loss += done.loss
            per = self._per_replica[res["rank"]]
            per["sync_seconds"] += res["sync"]["seconds"]
            per["train_seconds"] += res["seconds"]
            per["bytes"] += res["sync"]["bytes"]
        s0 = results[0]["sync"]
        self._sync_totals["syncs"] += s0["syncs"]
        self._sync_totals["rows"] += s0["rows"]
        self._sync_totals["overlapped"] += s0["overlapped"]
        self._sync_totals["bytes"] += sum(res["sync"]["bytes"] for res in results.values())
        self._words_done += words
        self._model = None
        return EpochResult(words=words, pairs=pairs, loss=loss)

    def _take_checkpoints(self, ray: Any, gen: int, ctx: EpochContext) -> None:
        # The checkpoints replica 0 put on the board: the model into w_in/w_out, then the engine writes it.
        for cp in ray.get(self.board.take_checkpoint.remote(gen), timeout=self.cluster.timeout_s):
            w_in, w_out = ray.get(cp["model"], timeout=self.cluster.timeout_s)
            np.copyto(self.w_in, w_in)
            np.copyto(self.w_out, w_out)
            del w_in, w_out
            _, words, pairs, loss = self._attempt
            for c in cp["counters"]:
                words, pairs, loss = words + int(c[0]), pairs + int(c[1]), loss + float(c[2])
            ctx.checkpoint(cp["part"] + 1, int(cp["words_done"]), words, pairs, loss)
            self._last_checkpoint = (cp["part"] + 1, words, pairs, loss)

    def finish(self) -> None:
        """The report, then the replicas stopped and the Ray session left."""
        if self._stack is None:
            return
        try:
            if hasattr(self, "_t0"):
                self._report = self._make_report(time.perf_counter() - self._t0)
        finally:
            self._stack.close()
            self._stack = None

    def _lost_mid_epoch(self, ray: Any, lost: list[int], epoch: int, from_part: int) -> None:
        # Wait for Ray to bring the lost replicas back; the epoch is trained again from its last checkpoint's
        # part (its start without one).
        plan = self._plan
        synced = max(self._syncs_done(ray, lost, epoch), from_part)
        for r in lost:
            self._await_restart(ray, r)
        retrained = plan.part_words[:, from_part:synced].sum(axis=1)
        if from_part:
            where = f"the model of this epoch's checkpoint after part {from_part}"
        elif epoch == self._start_epoch:
            where = "the model the run started from"
        else:
            where = f"the model of epoch {epoch}'s end"
        self._faults.append({"replica": lost, "epoch": epoch + 1, "phase": "train",
                             "syncs_done_before_loss": int(synced), "words_retrained": int(retrained.sum()),
                             "words_retrained_by_lost": {str(r): int(retrained[r]) for r in lost},
                             "note": f"every replica reloaded {where} and trained on from there"})
        print(f"parvec: replica {', '.join(map(str, lost))} of {self._n} was lost in epoch {epoch + 1} after "
              f"{synced} of its {plan.parts_per_epoch} syncs; Ray restarted it and every replica reloaded "
              f"{where}; {int(retrained.sum()):,} words retrained", file=sys.stderr, flush=True)

    def _make_report(self, seconds: float) -> dict[str, Any]:
        n, per, totals, plan = self._n, self._per_replica, self._sync_totals, self._plan
        sync_seconds = float(np.mean([p["sync_seconds"] for p in per.values()]))
        vocab, dim = len(self.counts), self.config.dim
        full_bytes = totals["syncs"] * 2 * (n - 1) * vocab * dim * 4 * 2
        words = self._words_done
        return {
            "mode": "replicas",
            "replicas": n,
            "threads_per_replica": self._threads_per,
            "alpha_scale": self.cluster.alpha_scale,
            "alpha_per_replica": self._rcfg.alpha,
            "syncs": totals["syncs"],
            # syncs that ran while the next part trained (sync_seconds counts only the time training waited)
            "syncs_overlapped": totals["overlapped"],
            "sync_overlap_rows": self._overlap_rows,
            "parts_per_epoch": plan.parts_per_epoch,
            "rows_synced": totals["rows"],
            "sync_seconds": sync_seconds,
            "sync_share": sync_seconds / seconds if seconds else None,
            "sync_seconds_per_replica": [p["sync_seconds"] for p in per.values()],
            # each replica's own clock for its epochs (its syncs included), beside the driver's: the gap is the
            # epochs' start and end (model shipped, results gathered) and Ray's calls
            "replica_train_seconds": [p["train_seconds"] for p in per.values()],
            "bytes_synced": totals["bytes"],
            "bytes_synced_per_word": totals["bytes"] / words if words else None,
            "bytes_full_model_same_syncs": full_bytes,
            "traffic_reduction": full_bytes / totals["bytes"] if totals["bytes"] else None,
            "model_fetch_seconds": self._fetch_seconds,
            "setup_seconds": self._setup_seconds,
            # Ray's start (or connect) and the replicas' start, before the first trained word
            "ray_start_seconds": self._ray_start_seconds,
            "start_seconds": self._ray_start_seconds + self._setup_seconds,
            "shard_words": [int(x) for x in plan.part_words.sum(axis=1)],
            "nodes": [d["node"] for d in self._described],
            "data": [d["data"] for d in self._described],
            "faults": self._faults,
            "collective": self._described[0]["collective"],
        }

    def _threads(self, ray: Any, n: int) -> int:
        per, note = replica_threads(self.cluster, self.config, int(ray.cluster_resources().get("CPU", 0)), n,
                                    workers_given=self.workers_given)
        if note:
            print(note, file=sys.stderr, flush=True)
        return per

    def _data_spec(self, corpus: EncodedCorpus, n: int) -> tuple[dict[str, Any], str | None]:
        # The cache directory the actors memory-map: the corpus's own (it came from the cache), else one
        # written now to a temporary directory, removed at the end.
        tmp_dir = None
        cache = _cache_dir_of(corpus)
        if cache is None:
            tmp_dir = tempfile.mkdtemp(prefix="parvec-replicas-")
            save_encoded(corpus, tmp_dir)
            cache = tmp_dir
        offsets = split_long_sentences(corpus.offsets, self.config.max_sentence_length)
        opts = self.read_options or ReadOptions(max_sentence_length=self.config.max_sentence_length)
        data = {
            "mode": self.cluster.options.get("data", "auto"),
            "cache": str(cache), "tokens": corpus.n_tokens,
            "sentences": shard_chunks(offsets, self.config.chunk_words, n),
            "source": corpus.source if corpus.source and Path(corpus.source).is_file() else None,
            "inputs": corpus.inputs,  # (path, size, mtime) read: a node that re-reads the file checks it
            "words": list(corpus.vocab.words), "counts": corpus.vocab.counts,
            "read_options": {k: getattr(opts, k) for k in ("min_count", "max_vocab_size", "max_final_vocab",
                                                            "max_sentence_length", "lowercase", "unicode_errors")},
        }
        return data, tmp_dir

    def _start(self, ray: Any, rcfg: TrainConfig, data: dict[str, Any], n: int, threads: int) -> list[dict[str, Any]]:
        # Start the replicas and form their first sync group.  A replica lost while starting (in its
        # constructor, or while the group forms) follows the rule of a replica lost while training: Ray
        # restarts it (max_restarts), the driver waits for it and forms the group again; the fault is reported.
        timeout = self.cluster.timeout_s
        board_cls = ray.remote(num_cpus=0, max_restarts=0)(Board)
        board_name = f"parvec-replicas-board-{os.getpid()}-{time.time_ns()}"
        self.board = board_cls.options(name=board_name).remote(n, timeout, [ray.put(self.counts), ray.put(data)])
        replica_cls = ray.remote(_Replica)
        restarts = self._max_restarts()
        cpus = int(ray.cluster_resources().get("CPU", 0))
        print(f"parvec: starting {n} replica{'s' if n != 1 else ''} x {threads} thread{'s' if threads != 1 else ''} "
              f"(Ray actors, one process each) on {cpus} CPUs ...", file=sys.stderr, flush=True)
        self.actors = [
            # max_concurrency: train_epoch, the driver's progress polls, and a rendezvous abandoned after a fault
            replica_cls.options(num_cpus=threads, max_restarts=restarts, max_concurrency=4,
                                scheduling_strategy="SPREAD", name=None).remote(
                r, n, rcfg, board_name, timeout, self.cluster.options.get("collective", "auto"))
            for r in range(n)
        ]
        self._start_faults: list[dict[str, Any]] = []
        deadline = time.perf_counter() + timeout
        described = [self._describe(ray, r, n, threads, deadline) for r in range(n)]
        for r, d in enumerate(described):
            if d["restarted"]:
                self._start_fault([r], "its process died while it started; Ray restarted it")
        # The run's first model is copied in while the replicas start, not on the first epoch's clock (~0.1 s for
        # 68,000 x 100 on a 2-core Zen 4, and the first sync waited for the slower copy).  The first epoch's call
        # names the same model, so a replica lost after this (while the group forms) loads it there.
        self._model = (ray.put(self.w_in), ray.put(self.w_out))

        def bring_back(lost: list[int], what: str) -> None:  # wait for Ray to restart them; describe them again
            for r in lost:
                self._await_restart(ray, r)
                described[r] = self._describe(ray, r, n, threads, time.perf_counter() + timeout)
            self._start_fault(lost, what)

        while lost := self._load_all(ray):
            bring_back(lost, "lost while it loaded the model; Ray restarted it")
        group_id = 0
        while lost := self._connect_all(ray, group_id):
            bring_back(lost, "lost while the replicas formed their sync group; Ray restarted it")
            group_id += 1  # a new group: the old one's rendezvous may hold the lost process's address
        self._group_id = group_id
        return described

    def _max_restarts(self) -> int:
        return int(self.cluster.options.get("max_restarts", getattr(self.cluster, "max_restarts", 3)))

    def _start_fault(self, lost: list[int], what: str) -> None:
        fault = {"replica": lost, "epoch": None, "phase": "start", "syncs_done_before_loss": 0, "words_retrained": 0,
                 "words_retrained_by_lost": {str(r): 0 for r in lost}, "note": what}
        self._start_faults.append(fault)
        names = ", ".join(str(r) for r in lost)
        print(f"parvec: replica {names} of {len(self.actors)} was lost while starting ({what}); nothing to retrain",
              file=sys.stderr, flush=True)

    def _describe(self, ray: Any, r: int, n: int, threads: int, deadline: float) -> dict[str, Any]:
        # Replica r's description once its constructor has run; a restart in between (Ray runs the constructor
        # again) only delays it.  ActorUnavailableError: restarting; ActorDiedError: it cannot come back.
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise ParvecError(f"the {n} replica actors did not start within {self.cluster.timeout_s:.0f} s "
                                  f"(timeout_s): does the Ray cluster have {n} x {threads} free CPUs?")
            try:
                return ray.get(self.actors[r].describe.remote(), timeout=left)
            except ray.exceptions.GetTimeoutError:
                continue
            except ray.exceptions.ActorDiedError as exc:
                cause = _cause(exc)
                if isinstance(cause, ParvecError):
                    raise ParvecError(str(cause)) from None
                raise ParvecError(f"replica {r} could not be started (max_restarts={self._max_restarts()}): "
                                  f"{str(exc).splitlines()[0][:300]}") from None
            except ray.exceptions.RayActorError:  # restarting (ActorUnavailableError and the like): wait for it
                time.sleep(0.2)
            except ray.exceptions.RayError as exc:
                cause = _cause(exc)
                if isinstance(cause, ParvecError):
                    raise ParvecError(str(cause)) from None
                raise ParvecError(f"a replica actor failed to start: {cause}") from None

    def _load_all(self, ray: Any) -> list[int]:
        # Every replica copies in the model at self._model; returns the replicas lost meanwhile.
        return self._call_all(ray, "load the model", "load_model", self._model)

    def _connect_all(self, ray: Any, group_id: int) -> list[int]:
        # Every replica joins sync group ``group_id``; returns the replicas lost meanwhile.
        return self._call_all(ray, "form their sync group", "connect", group_id)

    def _call_all(self, ray: Any, step: str, method: str, *args: Any) -> list[int]:
        # Every replica runs ``method(*args)``, a step of the start; returns the replicas lost meanwhile, as soon as
        # one is: a survivor may still wait in the lost one's rendezvous (up to timeout_s) and is not waited for,
        # since the next group forms in another of its threads and the old rendezvous is dropped
        # (collectives.GlooCollective); a load already done or still running is not done again
        # (_Replica.load_model).  Any other failure ends the run naming ``step``.
        pending = {getattr(a, method).remote(*args): r for r, a in enumerate(self.actors)}
        lost: list[int] = []
        errors: list[str] = []
        deadline = time.perf_counter() + self.cluster.timeout_s + 60
        while pending and not lost:
            left = deadline - time.perf_counter()
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=max(0.0, left))
            if not ready:
                waiting = ", ".join(str(r) for r in sorted(pending.values()))
                raise ParvecError(f"the replicas could not {step}: replica(s) {waiting} did not answer within "
                                  f"{self.cluster.timeout_s + 60:.0f} s")
            for ref in ready:
                r = pending.pop(ref)
                try:
                    ray.get(ref, timeout=self.cluster.timeout_s)
                except ray.exceptions.RayActorError:
                    lost.append(r)
                except Exception as exc:  # noqa: BLE001 - a peer's loss, or a real failure (sorted below)
                    errors.append(f"replica {r}: {_cause(exc)}")
        if errors and not lost:
            raise ParvecError(f"the replicas could not {step}: " + "; ".join(errors))
        return lost

    def _stop(self, ray: Any) -> None:
        for a in self.actors + ([self.board] if self.board is not None else []):
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.actors, self.board = [], None

    def _wait(self, ray: Any, refs: list, gen: int, ctx: EpochContext) -> tuple[dict[int, dict[str, Any]], list[int]]:
        # Collect the epoch's results; a replica lost calls off its peers' syncs (they come back
        # SyncAborted) so the epoch can be trained again.  Any other failure ends the run.
        epoch = ctx.epoch
        pending = {ref: r for r, ref in enumerate(refs)}
        results: dict[int, dict[str, Any]] = {}
        lost: list[int] = []
        errors: list[str] = []
        aborted: list[str] = []
        last_words, last_change = -1, time.perf_counter()
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:
                r = pending.pop(ref)
                try:
                    results[r] = ray.get(ref, timeout=self.cluster.timeout_s)
                except ray.exceptions.RayActorError:
                    lost.append(r)
                    self.board.abort.remote(gen)
                except Exception as exc:  # noqa: BLE001 - sorted below
                    cause = _cause(exc)
                    self.board.abort.remote(gen)
                    if isinstance(cause, ReplicaRestarted):  # lost between two epochs: lost in this one
                        lost.append(r)
                        continue
                    if isinstance(cause, Diverged):  # worded by the engine, as for one process
                        raise Diverged(cause.epoch, cause.what) from None
                    (aborted if isinstance(cause, SyncAborted) else errors).append(f"replica {r}: {cause}")
            if ctx.checkpoint_every is not None:
                self._take_checkpoints(ray, gen, ctx)
            words = self._poll(ray, ctx)
            if words != last_words:
                last_words, last_change = words, time.perf_counter()
            elif time.perf_counter() - last_change > self.cluster.timeout_s + 60:
                self.board.abort.remote(gen)
                raise ParvecError(f"the replicas made no progress for {self.cluster.timeout_s + 60:.0f} s in epoch "
                                  f"{epoch + 1}; stopping")
        if not lost and (errors or aborted):
            raise ParvecError("replica training failed: " + "; ".join(errors + aborted))
        return results, lost

    def _syncs_done(self, ray: Any, lost: list[int], epoch: int) -> int:
        # The syncs of this epoch the surviving replicas completed (all replicas sync in step, so the lost
        # one had completed as many, give or take the one in progress).
        counts = []
        for r, a in enumerate(self.actors):
            if r in lost:
                continue
            try:
                e, k = ray.get(a.progress.remote(), timeout=10)["synced"]
            except Exception:  # noqa: BLE001 - another one lost: counted when its turn comes
                continue
            counts.append(k if e == epoch else 0)
        return max(counts, default=0)

    def _poll(self, ray: Any, ctx: EpochContext) -> int:
        # Sum the replicas' running totals of the epoch for the engine's progress (and the no-progress watchdog).
        try:
            parts = ray.get([a.progress.remote() for a in self.actors], timeout=5)
        except Exception:  # noqa: BLE001 - a replica restarting: skip this sample
            return -1
        _, words, pairs, loss = self._attempt
        words += sum(p.get("words", 0) for p in parts)
        ctx.progress(words, pairs + sum(p.get("pairs", 0) for p in parts),
                     loss + sum(p.get("loss_sum", 0.0) for p in parts))
        return words

    def _await_restart(self, ray: Any, r: int) -> None:
        # Ray restarts the actor (its constructor memory-maps the shard again); calls fail with
        # ActorUnavailableError while it restarts, ActorDiedError once it cannot.
        timeout = self.cluster.timeout_s
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise ParvecError(f"replica {r} was lost and did not come back within {timeout:.0f} s (timeout_s)")
            try:
                ray.get(self.actors[r].ping.remote(), timeout=left)
                return
            except ray.exceptions.ActorUnavailableError:
                time.sleep(0.2)
            except ray.exceptions.GetTimeoutError:
                continue
            except ray.exceptions.RayError as exc:
                restarts = self.cluster.options.get("max_restarts", getattr(self.cluster, "max_restarts", 3))
                raise ParvecError(f"replica {r} was lost and could not be restarted (max_restarts={restarts}): "
                                  f"{_cause(exc)}") from None


def _cause(exc: BaseException) -> BaseException:
    # The exception a Ray task raised, unwrapped from RayTaskError.
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def _cache_dir_of(corpus: EncodedCorpus) -> Path | None:
    name = getattr(corpus.tokens, "filename", None)
    if not name:
        return None
    directory = Path(name).parent
    return directory if (directory / "header.json").exists() else None


class ReplicaTrainer(SelfRunning, ReplicaDriver):
    """The replicas driver that runs itself: ``ReplicaTrainer(cluster, config, counts, w_in, w_out).train(corpus)``.

    Example:
        >>> trainer = ReplicaTrainer(Cluster("local:2"), TrainConfig(threads=1), counts, w_in, w_out)  # doctest: +SKIP
        >>> stats = trainer.train(corpus)  # doctest: +SKIP
    """
