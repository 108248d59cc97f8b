"""The replicas' plan, as pure functions (Ji et al.'s data-parallel replicas, ``Cluster(mode="replicas")``): who
trains what, when the replicas synchronise, which rows each sync averages, and how many threads each replica runs.

- **Shares.** The corpus is cut into the CPU driver's chunks (``chunk_bounds`` over the whole corpus); replica
  ``r`` gets a contiguous run of whole chunks holding about ``1/N`` of the tokens (:func:`share_chunks`), and
  draws each chunk's random stream from its *global* chunk index, so ``local:1`` trains exactly what one machine
  trains.  Each share is split into the same number ``P`` of parts of about ``sync_words`` tokens
  (:func:`plan_parts`, :class:`SharePlan`); the replicas synchronise after every part.
- **The ruler.** Rows are sorted by count, so the hottest rows are the first ones.  Sync number ``j`` (counted
  from the run's first sync, 1-based) averages the top ``min(2**ctz(j) * min_sync_words, V)`` rows of both
  matrices (pWord2Vec's ruler, :func:`sync_rows`); every epoch's last sync, and ``full_sync_times`` evenly
  spaced ones per epoch, average all ``V`` rows (:func:`sync_plan`).  :func:`traffic_model` says what that moves.
- **Overlapped syncs.** A sync of at most :func:`overlap_rows_cap` rows, not an epoch's last, runs while the next
  part trains (:func:`overlapped_syncs`).
- **Learning rate and threads.** :func:`alpha_factor` scales the starting rate with ``N`` (``Cluster.alpha_scale``);
  :func:`replica_threads` is the rule for the threads of each replica on a cluster's CPUs.

Example:
    >>> sync_plan(4, 1, 10, 100)
    [[10, 20, 10, 100]]
"""

from __future__ import annotations

import bisect
import functools
import math
from dataclasses import dataclass

import numpy as np

from parvec.chunks import chunk_bounds
from parvec.config import TrainConfig
from parvec.distributed.cluster import Cluster
from parvec.errors import ParvecError

__all__ = ["ALPHA_SCALES", "CHECKPOINT_SYNC_BASE", "SharePlan", "alpha_factor", "ctz", "overlap_rows",
           "overlap_rows_cap", "overlapped_syncs", "plan_parts", "replica_threads", "ruler_rows_total",
           "share_chunks", "split_balanced", "sync_plan", "sync_rows", "traffic_model"]

ALPHA_SCALES = ("none", "sqrt", "linear")
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
    ``parts_per_epoch`` defaults to what balanced shares give, ``ceil(words_per_epoch / N / sync_words)``.

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
class SharePlan:
    """Where each replica's share of the corpus lies and where it synchronises.

    ``parts[r]`` holds ``P`` (first, last) chunk index pairs into replica ``r``'s chunks; ``part_words[r]``
    their token counts; ``chunk_base[r]`` the global index of the replica's first chunk.
    """

    parts: list[list[tuple[int, int]]]
    part_words: np.ndarray  # int64 [N, P]
    chunk_base: list[int]

    @property
    def parts_per_epoch(self) -> int:
        """Parts (syncs) per epoch, the same for every replica."""
        return int(self.part_words.shape[1])

    @property
    def words_per_epoch(self) -> int:
        """Tokens of every replica's share together."""
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


def plan_parts(chunk_words: list[np.ndarray], sync_words: int) -> SharePlan:
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
    return SharePlan(parts, np.asarray(words, dtype=np.int64), base)


def share_chunks(offsets: np.ndarray, chunk_words: int, n_replicas: int) -> list[tuple[int, int]]:
    """Sentence ranges (of the split offsets) giving each replica a contiguous run of whole chunks with
    about ``1/n_replicas`` of the tokens.

    Example:
        >>> share_chunks(np.array([0, 3, 6, 9, 12]), 3, 2)
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
