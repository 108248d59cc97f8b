"""The reducers' merge of counted words (:mod:`parvec.distributed.vocab_count`), in memory and through run files.

A *word table* is a dict of numpy arrays, one entry per word: ``hashes`` (uint64, the words' FNV-1a hashes),
``counts`` (int64), ``lengths`` (int32) and ``arena`` (uint8, the words' bytes one after another), with an
optional ``collide`` (bool: a word that shares its hash with another distinct word).

- :func:`merge_words` merges tables into one of distinct words sorted by hash (equal hashes compared byte by
  byte, counts summed, distinct words of one hash all marked ``collide``).
- **Spilling.**  A reducer holds the distinct words of its hash range.  Before counting, their number is only an
  estimate (:func:`parvec.distributed.sharded_source.estimate_distinct`, Heaps' law carried from the input's first
  megabytes), and Ray's ``memory`` request that was sized from it is a placement label, not a limit.  So each
  reducer checks what it holds against a :class:`SpillBudget` (:func:`spill_budget`: from the estimate with a
  margin of :data:`SPILL_MARGIN`, and from the memory it was given): past it, the reducer writes its merged words
  to a sorted *run* (``.npy`` files in its own directory on local scratch, :class:`RunStore`) and goes on with an
  empty table.  At the end the runs are merged in chunks of consecutive hashes (:meth:`RunStore.merge`: every
  entry of one hash is in one chunk, so collisions are still found), each chunk's merged words appended to one
  output run read back memory-mapped; memory holds one chunk of each run at a time.  The words, counts,
  collisions and their order are those of the in-memory merge.

Example:
    >>> a = {"hashes": np.array([3, 9], np.uint64), "counts": np.array([2, 1], np.int64),
    ...      "lengths": np.array([1, 1], np.int32), "arena": np.frombuffer(b"ab", np.uint8).copy()}
    >>> merge_words([a, a])["counts"].tolist()
    [4, 2]
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba as nb
import numpy as np

__all__ = ["MERGE_PEAK_FACTOR", "MIN_SPILL_ENTRIES", "SPILL_MARGIN", "CountCheck", "MergedRuns", "ReducerCheck",
           "RunStore", "SpillBudget", "merge_words", "split_collisions", "spill_budget", "table_bytes", "take_words",
           "word_starts"]

KEYS = ("hashes", "counts", "lengths", "arena", "collide")

# A reducer spills once it holds more than SPILL_MARGIN times the distinct words the estimate gave its hash range:
# the estimate is an extrapolation (Heaps' law from the first megabytes), and the memory check before counting
# allowed for it with room (the baselines are rounded up, WORKING_ROOM); past 1.5 times it, that room is spent.
SPILL_MARGIN = 1.5
# Spilling fewer words than this saves nothing worth a file: a derived budget is never below it.
MIN_SPILL_ENTRIES = 1 << 16
# A merge's peak is about this many times the bytes of the tables it merges (their concatenation, the order, the
# per-word outputs and the merged copy: REDUCER_BYTES_PER_WORD, 170 bytes a word at the peak, over ~30 held).
MERGE_PEAK_FACTOR = 6


# --------------------------------------------------------------------------- word tables
@nb.njit(cache=True, nogil=True)
def _gather(arena: np.ndarray, starts: np.ndarray, lengths: np.ndarray, idx: np.ndarray,  # pragma: no cover - numba
            out_starts: np.ndarray, out_arena: np.ndarray) -> int:
    """Copy words ``idx`` (bytes ``arena[starts[i]:starts[i]+lengths[i]]``) one after another into ``out_arena``."""
    k = 0
    for j in range(len(idx)):
        i = idx[j]
        out_starts[j] = k
        a = starts[i]
        for b in range(lengths[i]):
            out_arena[k + b] = arena[a + b]
        k += lengths[i]
    return k


def word_starts(lengths: np.ndarray) -> np.ndarray:
    """Where each word's bytes start in its table's arena.

    Example:
        >>> word_starts(np.array([2, 3, 1], np.int32)).tolist()
        [0, 2, 5]
    """
    starts = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    return starts


def take_words(hashes: np.ndarray, counts: np.ndarray, starts: np.ndarray, lengths: np.ndarray, arena: np.ndarray,
               idx: np.ndarray) -> dict[str, np.ndarray]:
    """Words ``idx`` as a table: ``{"hashes", "counts", "lengths", "arena"}`` (bytes contiguous, in ``idx`` order).

    Example:
        >>> t = take_words(np.array([5, 7], np.uint64), np.array([1, 2]), np.array([0, 1]), np.array([1, 2], np.int32),
        ...                np.frombuffer(b"abc", np.uint8), np.array([1]))
        >>> t["arena"].tobytes(), t["counts"].tolist()
        (b'bc', [2])
    """
    idx = np.asarray(idx, dtype=np.int64)
    out_lengths = np.asarray(lengths)[idx].astype(np.int32)
    out_arena = np.empty(int(out_lengths.sum()), dtype=np.uint8)
    _gather(arena, starts, lengths, idx, np.empty(len(idx), dtype=np.int64), out_arena)
    return {"hashes": np.asarray(hashes)[idx].copy(), "counts": np.asarray(counts)[idx].copy(),
            "lengths": out_lengths, "arena": out_arena}


@nb.njit(cache=True, nogil=True)
def _merge_sorted(order: np.ndarray, hashes: np.ndarray, counts: np.ndarray, starts: np.ndarray,  # pragma: no cover
                  lengths: np.ndarray, arena: np.ndarray, flags: np.ndarray, rep: np.ndarray, merged: np.ndarray,
                  collide: np.ndarray) -> int:
    """Walk the entries in hash order (``order``): entries of equal bytes are one word (its first entry is its
    representative, its counts summed); distinct words of one hash are all marked ``collide``, and so is a word
    an entry of which was marked (``flags``: from an earlier merge).  Fills ``rep``/``merged``/``collide`` per
    word and returns the number of distinct words."""
    n = len(order)
    n_words = 0
    i = 0
    while i < n:
        h = hashes[order[i]]
        j = i
        while j < n and hashes[order[j]] == h:
            j += 1
        first_word = n_words
        for a in range(i, j):
            e = order[a]
            found = -1
            for w in range(first_word, n_words):
                r = rep[w]
                if lengths[r] == lengths[e]:
                    same = True
                    for b in range(lengths[e]):
                        if arena[starts[r] + b] != arena[starts[e] + b]:
                            same = False
                            break
                    if same:
                        found = w
                        break
            if found < 0:
                rep[n_words] = e
                merged[n_words] = counts[e]
                collide[n_words] = flags[e]
                n_words += 1
            else:
                merged[found] += counts[e]
                collide[found] = collide[found] or flags[e]
        if n_words - first_word > 1:
            for w in range(first_word, n_words):
                collide[w] = True
        i = j
    return n_words


def merge_words(tables: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Tables (parts, or earlier merges) merged into distinct words sorted by hash, with their summed counts and
    ``collide`` flags (distinct words of one hash).

    Example:
        >>> t = {"hashes": np.array([4, 4], np.uint64), "counts": np.array([1, 1], np.int64),
        ...      "lengths": np.array([1, 1], np.int32), "arena": np.frombuffer(b"xy", np.uint8).copy()}
        >>> merge_words([t])["collide"].tolist()
        [True, True]
    """
    def cat(key: str, dtype: Any) -> np.ndarray:
        return np.concatenate([p[key] for p in tables]) if tables else np.zeros(0, dtype)

    hashes, counts = cat("hashes", np.uint64), cat("counts", np.int64)
    lengths, arena = cat("lengths", np.int32), cat("arena", np.uint8)
    flags = np.concatenate([p.get("collide", np.zeros(len(p["hashes"]), np.bool_)) for p in tables]) if tables \
        else np.zeros(0, np.bool_)
    starts = word_starts(lengths)
    order = np.argsort(hashes, kind="stable")
    rep = np.empty(len(order), dtype=np.int64)
    merged_counts = np.empty(len(order), dtype=np.int64)
    collide = np.zeros(len(order), dtype=np.bool_)
    n = _merge_sorted(order, hashes, counts, starts, lengths, arena, flags, rep, merged_counts, collide)
    merged = take_words(hashes, counts, starts, lengths, arena, rep[:n])
    merged["counts"] = merged_counts[:n]  # the words' summed counts (not their first entry's)
    merged["collide"] = collide[:n]
    return merged


def split_collisions(merged: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[tuple[int, list[str]]]]:
    """A merged table (:func:`merge_words`) without its colliding words, and those words by hash
    (``(hash, [words, sorted])``, hashes ascending).

    Example:
        >>> t = {"hashes": np.array([4, 4, 6], np.uint64), "counts": np.array([1, 1, 2], np.int64),
        ...      "lengths": np.array([1, 1, 1], np.int32), "arena": np.frombuffer(b"yxz", np.uint8).copy()}
        >>> kept, collisions = split_collisions(merge_words([t]))
        >>> kept["hashes"].tolist(), collisions
        ([6], [(4, ['x', 'y'])])
    """
    collide = merged["collide"]
    table = {k: v for k, v in merged.items() if k != "collide"}
    if not collide.any():
        return table, []
    starts = word_starts(table["lengths"])
    found: dict[int, list[str]] = {}
    for w in np.flatnonzero(collide).tolist():
        word = bytes(table["arena"][starts[w]: starts[w] + table["lengths"][w]])
        found.setdefault(int(table["hashes"][w]), []).append(word.decode("utf-8", errors="replace"))
    kept = take_words(table["hashes"], table["counts"], starts, table["lengths"], table["arena"],
                      np.flatnonzero(~collide))
    return kept, [(h, sorted(words)) for h, words in sorted(found.items())]


def table_bytes(table: dict[str, np.ndarray] | None) -> int:
    """The bytes a table's arrays hold.

    Example:
        >>> table_bytes({"hashes": np.zeros(2, np.uint64), "arena": np.zeros(3, np.uint8)})
        19
    """
    return 0 if table is None else int(sum(a.nbytes for a in table.values()))


# --------------------------------------------------------------------------- the budget
@dataclass(frozen=True)
class SpillBudget:
    """What a reducer may hold before it spills: ``entries`` (words of its merged table and of the parts waiting
    to be merged) and ``nbytes`` (their arrays' bytes); None: no limit of that kind.

    Example:
        >>> SpillBudget(entries=100).over(150, 0), SpillBudget(nbytes=1000).over(10, 900)
        (True, False)
    """

    entries: int | None = None
    nbytes: int | None = None

    def over(self, entries: int, nbytes: int, share: float = 1.0) -> bool:
        """Whether ``entries`` words of ``nbytes`` bytes pass ``share`` of the budget."""
        return ((self.entries is not None and entries > share * self.entries)
                or (self.nbytes is not None and nbytes > share * self.nbytes))

    def chunk(self, runs: int) -> int:
        """The entries each of ``runs`` runs gives one chunk of the final merge (the chunks of all runs together
        within half the budget; at least 1024)."""
        cap = min(self.entries if self.entries is not None else 1 << 62,
                  self.nbytes // 32 if self.nbytes is not None else 1 << 62)
        return max(1024, min(1 << 22, cap // max(1, 2 * runs)))


def spill_budget(distinct: int | None, reducers: int, reducer_memory: int | None = None,
                 floor: int = MIN_SPILL_ENTRIES) -> SpillBudget:
    """Each reducer's budget: :data:`SPILL_MARGIN` times its share of the ``distinct`` words expected (at least
    ``floor``), and of ``reducer_memory`` bytes (the memory it asked Ray for) what its tables may hold for a merge
    of them to fit (:data:`MERGE_PEAK_FACTOR`) after its runtime's baseline.

    Example:
        >>> spill_budget(1_000_000, 4)
        SpillBudget(entries=375000, nbytes=None)
        >>> spill_budget(None, 4, reducer_memory=685 << 20).nbytes
        104857600
    """
    from parvec.distributed.memory import WORKER_BASELINE

    entries = None if distinct is None else max(int(floor), math.ceil(SPILL_MARGIN * int(distinct) / max(1, reducers)))
    nbytes = None if not reducer_memory else max(1 << 20, (int(reducer_memory) - WORKER_BASELINE) // MERGE_PEAK_FACTOR)
    return SpillBudget(entries, nbytes)


# --------------------------------------------------------------------------- runs
@dataclass
class MergedRuns:
    """The runs merged (:meth:`RunStore.merge`): ``table`` the distinct words without collisions, in hash order
    (memory-mapped from the store's output run), ``collisions`` the colliding words by hash, ``values``/``sizes``
    the histogram of the table's counts and ``distinct`` the distinct words, colliding ones included.

    Example:
        >>> store = RunStore(None, "doc")
        >>> merged = store.merge(SpillBudget(entries=10)); store.remove()
        >>> merged.distinct
        0
    """

    table: dict[str, np.ndarray]
    collisions: list[tuple[int, list[str]]]
    values: np.ndarray
    sizes: np.ndarray
    distinct: int


class RunStore:
    """A reducer's sorted runs: a directory of its own under ``scratch`` (None: the system's temporary directory,
    local to the node), ``run_<i>/<key>.npy`` each.

    Example:
        >>> store = RunStore(None, "reducer-0")
        >>> store.write(merge_words([{"hashes": np.array([1], np.uint64), "counts": np.array([2], np.int64),
        ...                            "lengths": np.array([1], np.int32), "arena": np.array([97], np.uint8)}]))
        >>> store.runs, store.merge(SpillBudget(entries=4)).table["counts"].tolist()
        (1, [2])
        >>> store.remove()
    """

    def __init__(self, scratch: str | None, name: str) -> None:
        if scratch is not None:
            Path(scratch).mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix=f"parvec-count-{name}-", dir=scratch))
        self.runs = 0
        self.spilled_entries = 0

    def write(self, merged: dict[str, np.ndarray]) -> None:
        """Write a merged table (sorted by hash, distinct words, ``collide`` flags) as the next run."""
        run = self.path / f"run_{self.runs}"
        run.mkdir()
        for key in KEYS:
            np.save(run / f"{key}.npy", merged[key] if key in merged else np.zeros(len(merged["hashes"]), np.bool_))
        self.runs += 1
        self.spilled_entries += len(merged["hashes"])

    def _load(self, name: str) -> dict[str, np.ndarray]:
        return {key: np.load(self.path / name / f"{key}.npy", mmap_mode="r").view(np.ndarray) for key in KEYS}

    def merge(self, budget: SpillBudget) -> MergedRuns:
        """Merge every run, chunk by chunk of consecutive hashes (:meth:`SpillBudget.chunk` entries of each run),
        into the output run ``merged/``; its table is returned memory-mapped."""
        runs = [self._load(f"run_{i}") for i in range(self.runs)]
        total = sum(len(r["hashes"]) for r in runs)
        out = self.path / "merged"
        out.mkdir()
        dtypes = {"hashes": np.uint64, "counts": np.int64, "lengths": np.int32}
        writers = {k: np.lib.format.open_memmap(out / f"{k}.npy", mode="w+", dtype=d, shape=(max(1, total),))
                   for k, d in dtypes.items()}
        arena = np.lib.format.open_memmap(out / "arena.npy", mode="w+", dtype=np.uint8,
                                          shape=(max(1, sum(len(r["arena"]) for r in runs)),))
        at = [0] * len(runs)  # each run's next entry
        byte_at = [0] * len(runs)  # and where its bytes start
        n = n_bytes = distinct = 0
        collisions: list[tuple[int, list[str]]] = []
        histograms: list[tuple[np.ndarray, np.ndarray]] = []
        step = budget.chunk(len(runs))
        while True:
            live = [i for i, r in enumerate(runs) if at[i] < len(r["hashes"])]
            if not live:
                break
            # The chunk: every entry up to the smallest of the live runs' hashes at ``step`` entries on (inclusive:
            # the entries of one hash are never cut apart).
            bound = min(runs[i]["hashes"][min(at[i] + step, len(runs[i]["hashes"])) - 1] for i in live)
            parts = []
            for i in live:
                r = runs[i]
                end = int(np.searchsorted(r["hashes"], bound, side="right"))
                if end == at[i]:
                    continue
                n_b = int(np.sum(r["lengths"][at[i]:end], dtype=np.int64))
                parts.append({k: np.array(r[k][at[i]:end]) for k in ("hashes", "counts", "lengths", "collide")}
                             | {"arena": np.array(r["arena"][byte_at[i]:byte_at[i] + n_b])})
                at[i], byte_at[i] = end, byte_at[i] + n_b
            merged = merge_words(parts)
            distinct += len(merged["hashes"])
            kept, found = split_collisions(merged)
            collisions += found
            m, m_b = len(kept["hashes"]), len(kept["arena"])
            for k in dtypes:
                writers[k][n:n + m] = kept[k]
            arena[n_bytes:n_bytes + m_b] = kept["arena"]
            histograms.append(np.unique(kept["counts"], return_counts=True))
            n, n_bytes = n + m, n_bytes + m_b
        for w in (*writers.values(), arena):
            w.flush()
        del writers, arena, runs
        loaded = self._load_merged()
        table = {k: loaded[k][:n] for k in dtypes} | {"arena": loaded["arena"][:n_bytes]}
        values, sizes = _sum_histograms(histograms)
        return MergedRuns(table, collisions, values, sizes, distinct)

    def _load_merged(self) -> dict[str, np.ndarray]:
        return {key: np.load(self.path / "merged" / f"{key}.npy", mmap_mode="r").view(np.ndarray)
                for key in ("hashes", "counts", "lengths", "arena")}

    def remove(self) -> None:
        """Delete the runs (a table read from them must not be used after)."""
        shutil.rmtree(self.path, ignore_errors=True)


def _sum_histograms(histograms: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not histograms:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    values = np.concatenate([h[0] for h in histograms])
    sizes = np.concatenate([h[1] for h in histograms])
    unique, inverse = np.unique(values, return_inverse=True)
    return unique.astype(np.int64), np.bincount(inverse, weights=sizes, minlength=len(unique)).astype(np.int64)


# --------------------------------------------------------------------------- what the driver is told
@dataclass(frozen=True)
class ReducerCheck:
    """One reducer's figures after counting: its ``distinct`` words, the most ``peak_entries`` and ``peak_bytes``
    it held at once, the ``runs`` it spilled (0: merged in memory) and its ``restarts`` (new reducers fed its part of
    every unit again after it was lost).

    Example:
        >>> ReducerCheck(0, 120, 150, 4096, 2, 0).spilled
        True
    """

    reducer: int
    distinct: int
    peak_entries: int
    peak_bytes: int
    runs: int
    restarts: int

    @property
    def spilled(self) -> bool:
        """Whether it spilled runs."""
        return self.runs > 0


@dataclass(frozen=True)
class CountCheck:
    """The distinct-word estimate checked against what the reducers received (:func:`count_units`'s record, in a
    sharded run's report as ``count_check``): ``estimate`` (None: none given), each reducer's ``budget`` and figures.

    Example:
        >>> check = CountCheck(100, SpillBudget(entries=75), (ReducerCheck(0, 500, 80, 4000, 3, 0),
        ...                                                    ReducerCheck(1, 500, 70, 3500, 0, 1)))
        >>> check.distinct, check.off_by, check.notes()[0]
        (1000, 10.0, 'reducer 0 of 2 spilled 3 runs: 1,000 distinct words were counted, 10.0 times the 100 expected')
    """

    estimate: int | None
    budget: SpillBudget
    reducers: tuple[ReducerCheck, ...]

    @property
    def distinct(self) -> int:
        """The distinct words counted (colliding ones included)."""
        return sum(r.distinct for r in self.reducers)

    @property
    def off_by(self) -> float | None:
        """The distinct words counted over those expected (None without an estimate)."""
        return self.distinct / self.estimate if self.estimate else None

    def notes(self) -> list[str]:
        """A line for each reducer that spilled or was re-run (none when all went as planned)."""
        n = len(self.reducers)
        off = f", {self.off_by:.1f} times the {self.estimate:,} expected" if self.off_by is not None else ""
        lines = [f"reducer {r.reducer} of {n} spilled {r.runs} run{'s' if r.runs != 1 else ''}: {self.distinct:,} "
                 f"distinct words were counted{off}" for r in self.reducers if r.spilled]
        lines += [f"reducer {r.reducer} of {n} was lost and run again {r.restarts} time{'s' if r.restarts != 1 else ''}"
                  " from its part of every unit" for r in self.reducers if r.restarts]
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The record for a JSON report."""
        return {"estimate": self.estimate, "distinct": self.distinct, "off_by": self.off_by,
                "budget_entries": self.budget.entries, "budget_bytes": self.budget.nbytes,
                "reducers": [dataclasses.asdict(r) for r in self.reducers]}
