"""The vocabulary as a map-reduce on Ray (Ordentlich et al. section 6.1.1): no process holds every word.

1. **Map** (:func:`map_range`, one Ray task per byte range): the byte tokeniser counts the range
   (:func:`count_range`: :class:`parvec.corpus.textscan.WordTable`'s FNV-1a hashes, counts and the words' bytes in
   one arena) and cuts the words into ``R`` parts by the top 32 bits of their hash (part ``r`` holds the hashes
   whose top 32 bits are in ``[ceil(r 2^32 / R), ceil((r+1) 2^32 / R))``), numpy arrays pushed straight to the
   reducer actors (:meth:`Reducer.add`, once per range: a retried mapper's second push is ignored).  Ray hands an
   object under the cluster's inline limit (``max_direct_call_object_size``, 8 MiB in parvec's local Ray) to its
   caller, so parts *returned* by the tasks would all have passed through the driver.
2. **Reduce** (:class:`Reducer`, one Ray actor per reducer): reducer ``r`` merges part ``r`` of every range as they
   come (sorted by hash, equal hashes compared byte by byte), so it holds every distinct word of its hash range
   with its count, and returns a *histogram* (count value -> words) to the driver (:meth:`Reducer.finish`).  Two
   distinct words of one hash (a 64-bit collision) are left out of the vocabulary, named in
   :attr:`VocabParts.collisions` (the hashed lookup could not tell them apart; :mod:`parvec.wordhash` gives the
   odds).  A reducer past its budget (from the distinct words expected) spills sorted runs to local scratch and
   merges them at the end (:mod:`parvec.distributed.count_merge`), to the same words; a reducer lost while
   merging is replaced and given its part of every range again (mappers count them again: :func:`map_part`).
3. **Ids** (driver, :func:`id_bases`): from the histograms alone (per reducer and per count value, a number of
   words: a few thousand entries each) the driver finds the effective minimum count (``min_count``, raised for
   ``max_final_vocab`` as gensim does), the count classes (:class:`parvec.countclasses.CountClasses`) and each
   reducer's first id for each count.  Ids run by count descending, ties by (reducer, the word's position in
   the reducer's list sorted by hash), which is **ties by the 64-bit FNV-1a hash of the word's bytes**,
   whatever the number of ranges or reducers.  (One process orders ties by first occurrence in the text; the
   words, their counts and each count's set of words are the same.)
4. **Parts** (:meth:`Reducer.assign`, :func:`assign_ids`): each reducer gives its kept words their ids and keeps
   its part of the word list (ids, counts, bytes: :meth:`Reducer.words_part`); a task (:func:`build_lookup`) joins
   the reducers' parts of the hash -> id lookup (:class:`parvec.wordhash.WordLookup`; consecutive hash ranges,
   so their concatenation is sorted) into one object in the object store.

The driver receives only the ranges' figures, the histograms and the collisions: its memory does not grow
with the vocabulary.  ``max_vocab_size`` prunes each range on its own (word2vec.c's rule on the range's counts)
before it is cut into parts.  The same steps run in one process from the pure functions (:func:`count_range`,
:func:`merge_parts`, :func:`id_bases`, :func:`assign_ids`, :func:`join_lookup`).

Example:
    >>> parts = count_vocabulary(ray, "corpus.txt", ReadOptions(min_count=5), n_ranges=8, reducers=4)  # doctest: +SKIP
    >>> parts.classes.n_words, parts.raw_words  # doctest: +SKIP
    (67955, 16915480)
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numba as nb
import numpy as np

from parvec.corpus import RangeSentences, ReadOptions, byte_ranges
from parvec.corpus.textscan import WordTable, normalise
from parvec.countclasses import CountClasses
from parvec.distributed.count_merge import (
    CountCheck,
    ReducerCheck,
    RunStore,
    SpillBudget,
    merge_words,
    spill_budget,
    split_collisions,
    table_bytes,
    take_words,
    word_starts,
)
from parvec.errors import ParvecError
from parvec.wordhash import WordLookup, part_of

__all__ = ["RangeCount", "Reducer", "ReducerSummary", "VocabParts", "assign_ids", "build_lookup", "count_range",
           "count_units", "count_vocabulary", "effective_min_count", "id_bases", "join_lookup", "map_part", "map_range",
           "merge_parts", "vocab_of_parts"]

log = logging.getLogger(__name__)

REDUCER_RETRIES = 2  # new reducers started for one that is lost while merging, before the count fails


@dataclass(frozen=True)
class RangeCount:
    """What a mapper tells the driver about its range: raw words, distinct words, the bytes read and their CRC-32,
    and the words pruning dropped (``max_vocab_size``).

    Example:
        >>> RangeCount(10, 4, (52, 123), 0).raw_words
        10
    """

    raw_words: int
    distinct: int
    fingerprint: tuple[int, int] | None
    pruned: int


# --------------------------------------------------------------------------- map
def _prune(counts: np.ndarray, cap: int) -> tuple[np.ndarray, int]:
    """word2vec.c's ReduceVocab on one range's counts: drop counts <= 1, 2, ... until at most ``cap`` words are
    left; returns the kept indices and the words dropped."""
    keep = np.arange(len(counts))
    min_reduce = 1
    while len(keep) > cap:
        keep = keep[counts[keep] > min_reduce]
        min_reduce += 1
    return keep, len(counts) - len(keep)


def count_range(path: str, start: int, end: int | None, options: ReadOptions, reducers: int) -> tuple[Any, ...]:
    """Map: count bytes ``[start, end)`` of ``path`` (``end`` None: the whole file, decompressed) and cut the
    words into ``reducers`` parts by hash; returns
    ``(part 0, ..., part R-1, RangeCount)`` (a Ray task with ``num_returns=R+1``: each part its own object).

    Example:
        >>> *parts, info = count_range("corpus.txt", 0, 1 << 20, ReadOptions(min_count=1), 2)  # doctest: +SKIP
    """
    reader = RangeSentences(path, start, end, options)  # a local path or a URL (read from the object store)
    table = WordTable()
    raw = 0
    for name, block, where, at_end in reader.blocks():
        if at_end:
            continue
        text = normalise(block, options.lowercase, functools.partial(reader.decode, where=where, name=name))
        ids, _ = table.scan(text, insert=True)
        raw += len(ids)
    hashes, counts, starts, lengths, arena = table.arrays()
    keep, pruned = (_prune(counts, options.max_vocab_size) if options.max_vocab_size is not None
                    else (np.arange(len(counts)), 0))
    part = part_of(hashes[keep], reducers)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(reducers + 1))
    parts = [take_words(hashes, counts, starts, lengths, arena, keep[order[bounds[r]:bounds[r + 1]]])
             for r in range(reducers)]
    return (*parts, RangeCount(raw, len(table), reader.fingerprint, pruned))


# --------------------------------------------------------------------------- reduce
@dataclass(frozen=True)
class ReducerSummary:
    """What a reducer tells the driver once merged (:meth:`Reducer.finish`, :func:`merge_parts`): the histogram of
    its words' counts (``values`` ascending, ``sizes`` the words of each), the colliding words left out of it
    (``collisions``: ``(hash, [words])``), its ``distinct`` words (colliding ones included), and what it held:
    ``runs`` spilled (0: merged in memory), ``peak_entries`` and ``peak_bytes``.

    Example:
        >>> ReducerSummary(np.array([1, 3]), np.array([2, 1]), [], 3).runs
        0
    """

    values: np.ndarray
    sizes: np.ndarray
    collisions: list[tuple[int, list[str]]]
    distinct: int
    runs: int = 0
    peak_entries: int = 0
    peak_bytes: int = 0


def _summary(merged: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], ReducerSummary]:
    # A merged table without its colliding words, and its summary.
    kept, collisions = split_collisions(merged)
    values, sizes = np.unique(kept["counts"], return_counts=True)
    return kept, ReducerSummary(values.astype(np.int64), sizes.astype(np.int64), collisions, len(merged["hashes"]))


def merge_parts(*parts: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], ReducerSummary]:
    """Reduce: merge one reducer's parts (from every range) into its distinct words sorted by hash, with their
    counts; returns ``(merged, summary)``, the summary (:class:`ReducerSummary`) having the histogram of counts of
    its words and the colliding words, which are left out of both.

    Example:
        >>> merged, summary = merge_parts(part_a, part_b)  # doctest: +SKIP
    """
    return _summary(merge_words(list(parts)))


class Reducer:
    """A Ray actor: reducer ``r``.  Mappers push their part ``r`` to it (:meth:`add`; merged as they come, so it
    holds about its distinct words and one batch of parts); :meth:`finish` returns its histogram, :meth:`assign`
    gives its kept words their ids, and it serves its parts of the lookup and of the word list.  Nothing it holds
    passes through the driver.

    ``budget`` (:class:`~parvec.distributed.count_merge.SpillBudget`) bounds what it holds: when its merged words
    and the parts waiting pass it, it merges them and, if the merged words still pass half of it, writes them to a
    sorted run under ``scratch`` (:class:`~parvec.distributed.count_merge.RunStore`, a directory named after
    ``name``) and goes on empty; :meth:`finish` then merges the runs chunk by chunk.  ``stale``: the name prefix
    of the run directories of the reducers it replaces, removed here.

    Example:
        >>> reducer = ray.remote(Reducer).remote(SpillBudget(entries=1 << 20), None, "r0")  # doctest: +SKIP
    """

    def __init__(self, budget: SpillBudget | None = None, scratch: str | None = None, name: str = "reducer",
                 stale: str | None = None) -> None:
        self.budget = budget if budget is not None else SpillBudget()
        self.scratch, self.name = scratch, name
        if stale:
            for old in Path(scratch or tempfile.gettempdir()).glob(f"parvec-count-{stale}*"):
                shutil.rmtree(old, ignore_errors=True)
        self.store: RunStore | None = None
        self.seen: set[int] = set()  # the ranges whose part arrived (a retried mapper's second push is ignored)
        self.pending: list[dict[str, np.ndarray]] = []
        self.pending_words = self.pending_bytes = 0
        self.peak = (0, 0)  # the most entries, and bytes, held at once
        self.merged: dict[str, np.ndarray] | None = None
        self.words: dict[str, np.ndarray] | None = None

    def _held(self) -> tuple[int, int]:
        merged = len(self.merged["hashes"]) if self.merged is not None else 0
        return merged + self.pending_words, table_bytes(self.merged) + self.pending_bytes

    def add(self, k: int, part: dict[str, np.ndarray]) -> int:
        """Take range ``k``'s part (once: a retried mapper pushes it again); merge when the parts waiting hold more
        entries than the merged words, or when what it holds passes its budget (then spill, past half of it)."""
        if k in self.seen:
            return 0
        self.seen.add(k)
        self.pending.append(part)
        self.pending_words += len(part["hashes"])
        self.pending_bytes += table_bytes(part)
        held = self._held()
        self.peak = (max(self.peak[0], held[0]), max(self.peak[1], held[1]))
        if self.budget.over(*held):
            self._merge_pending()
            if self.budget.over(*self._held(), share=0.5):
                self._spill()
        elif self.pending_words > max(1 << 20, len(self.merged["hashes"]) if self.merged else 0):
            self._merge_pending()
        return len(part["hashes"])

    def _merge_pending(self) -> None:
        if not self.pending and self.merged is not None:
            return
        parts = ([self.merged] if self.merged is not None else []) + self.pending
        self.merged = merge_words(parts)
        self.pending, self.pending_words, self.pending_bytes = [], 0, 0

    def _spill(self) -> None:
        assert self.merged is not None
        if self.store is None:
            self.store = RunStore(self.scratch, self.name)
        self.store.write(self.merged)
        self.merged = None

    def finish(self) -> ReducerSummary:
        """Merge what is left (and the runs, if it spilled); its :class:`ReducerSummary`."""
        self._merge_pending()
        assert self.merged is not None or self.store is not None
        if self.store is None:
            assert self.merged is not None
            self.merged, summary = _summary(self.merged)
            return dataclasses.replace(summary, peak_entries=self.peak[0], peak_bytes=self.peak[1])
        if self.merged is not None:
            self._spill()
        out = self.store.merge(self.budget)
        self.merged = out.table  # memory-mapped from the store's output run, until assign
        return ReducerSummary(out.values, out.sizes, out.collisions, out.distinct, self.store.runs, *self.peak)

    def assign(self, eff_min: int, base: dict[str, np.ndarray]) -> int:
        """Ids for the kept words (:func:`assign_ids`); returns how many.  The merged counts (and runs) are freed."""
        assert self.merged is not None
        (_, _), self.words = assign_ids(self.merged, eff_min, base)
        self.merged = None
        self.discard()
        return len(self.words["ids"])

    def discard(self) -> None:
        """Delete its runs, if it spilled."""
        if self.store is not None:
            self.store.remove()
            self.store = None

    def lookup_part(self) -> tuple[np.ndarray, np.ndarray]:
        """Its part of the hash lookup: ``(keys sorted, ids)``."""
        assert self.words is not None
        return self.words["hashes"], self.words["ids"]

    def words_part(self) -> dict[str, np.ndarray]:
        """Its part of the word list: ``ids``, ``counts``, ``lengths``, ``arena`` (and ``hashes``), in hash order."""
        assert self.words is not None
        return self.words

    def part_files(self, r: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Its part of the word list as partition ``r`` of the vocabulary, in memory (:func:`parvec.vocab_parts.
        part_files`: its record, and its five ``.npy`` files' bytes, which travel through Ray's object store: no
        file system shared with the driver is needed)."""
        from parvec.vocab_parts import part_files

        w = self.words
        assert w is not None
        return part_files(r, w["ids"], w["counts"], lengths=w["lengths"], arena=w["arena"], hashes=w["hashes"])


def map_range(path: str, start: int, end: int | None, options: ReadOptions, reducers: list[Any],
              k: int) -> RangeCount:
    """Map task for range ``k``: :func:`count_range`, each part pushed to its reducer actor; returns the range's
    figures.  A reducer found lost is skipped: the driver gives its part of every range to a new one
    (:func:`count_units`).

    Example:
        >>> info = map_range("corpus.txt", 0, 1 << 20, ReadOptions(), reducers, 0)  # doctest: +SKIP
    """
    import ray

    info: RangeCount  # count_range's last element
    *parts, info = count_range(path, start, end, options, len(reducers))
    for ref in [r.add.remote(k, p) for r, p in zip(reducers, parts, strict=True)]:
        try:
            ray.get(ref)
        except ray.exceptions.RayActorError:
            pass
    return info


def map_part(path: str, start: int, end: int | None, options: ReadOptions, reducer: Any, r: int, reducers: int,
             k: int) -> int:
    """Map task for a reducer that replaces a lost one: count range ``k`` again and push only its part ``r`` (of
    ``reducers``); returns the entries pushed (-1: that reducer was lost too).

    Example:
        >>> map_part("corpus.txt", 0, 1 << 20, ReadOptions(), reducer, 1, 2, 0)  # doctest: +SKIP
        5123
    """
    import ray

    part = count_range(path, start, end, options, reducers)[r]
    try:
        return int(ray.get(reducer.add.remote(k, part)))
    except ray.exceptions.RayActorError:
        return -1


def build_lookup(reducers: list[Any]) -> WordLookup:
    """Task: the hash lookup from the reducers' parts (fetched here, not through the driver).

    Example:
        >>> lookup_ref = ray.remote(build_lookup).remote(reducers)  # doctest: +SKIP
    """
    import ray

    return join_lookup(*ray.get([r.lookup_part.remote() for r in reducers]))


# --------------------------------------------------------------------------- ids
def effective_min_count(values: np.ndarray, sizes: np.ndarray, min_count: int, max_final_vocab: int | None) -> int:
    """The count a word needs to be kept: ``max(1, min_count)``, raised (as gensim does) until at most
    ``max_final_vocab`` words are left, from a histogram of counts (``values``, ``sizes``) alone.

    Example:
        >>> effective_min_count(np.array([9, 5, 1]), np.array([1, 2, 3]), 1, 2)
        6
    """
    eff = max(1, int(min_count))
    total = int(np.sum(sizes))
    if max_final_vocab is not None and total > max_final_vocab:
        order = np.argsort(values)[::-1]
        v, s = np.asarray(values)[order], np.asarray(sizes)[order]
        # ranked[max_final_vocab] (0-based, counts descending) is the value whose cumulative size passes it.
        k = int(np.searchsorted(np.cumsum(s), max_final_vocab, side="right"))
        eff = max(eff, int(v[k]) + 1)
    return eff


def id_bases(summaries: list[ReducerSummary], min_count: int, max_final_vocab: int | None
             ) -> tuple[CountClasses, int, list[dict[str, np.ndarray]]]:
    """The driver's step: from the reducers' histograms, ``(count classes of the vocabulary, effective minimum
    count, per reducer {"values": kept count values, "bases": its first id for each})``.  Ids run by count
    descending; within a count, reducer 0's words first, each reducer's in its (hash) order.

    Example:
        >>> s = [ReducerSummary(np.array([1, 3]), np.array([2, 1]), [], 3),
        ...      ReducerSummary(np.array([3]), np.array([2]), [], 2)]
        >>> classes, eff, bases = id_bases(s, 2, None)
        >>> classes.values.tolist(), classes.first.tolist(), eff, [b["bases"].tolist() for b in bases]
        ([3], [0, 3], 2, [[0], [1]])
    """
    all_values = np.concatenate([s.values for s in summaries]) if summaries else np.zeros(0, np.int64)
    all_sizes = np.concatenate([s.sizes for s in summaries]) if summaries else np.zeros(0, np.int64)
    eff = effective_min_count(all_values, all_sizes, min_count, max_final_vocab)
    kept = all_values >= eff
    classes = CountClasses.from_histogram(all_values[kept], all_sizes[kept])
    next_id = dict(zip(classes.values.tolist(), classes.first[:-1].tolist(), strict=True))
    bases = []
    for s in summaries:
        keep = s.values >= eff
        values = np.asarray(s.values)[keep][::-1].astype(np.int64)  # descending
        sizes = np.asarray(s.sizes)[keep][::-1].astype(np.int64)
        b = np.empty(len(values), dtype=np.int64)
        for i, (v, n) in enumerate(zip(values.tolist(), sizes.tolist(), strict=True)):
            b[i] = next_id[v]
            next_id[v] += n
        bases.append({"values": values, "bases": b})
    return classes, eff, bases


@nb.njit(cache=True, nogil=True)
def _ids(counts: np.ndarray, values_desc: np.ndarray, bases: np.ndarray,  # pragma: no cover - numba
         out: np.ndarray) -> np.ndarray:
    """Ids of words in their (hash) order: the next id of their count's class (``values_desc`` descending)."""
    nxt = bases.copy()
    for i in range(len(counts)):
        c = counts[i]
        lo = 0
        hi = len(values_desc)
        while lo < hi:  # the index of c in the descending values
            mid = (lo + hi) >> 1
            if values_desc[mid] > c:
                lo = mid + 1
            else:
                hi = mid
        out[i] = nxt[lo]
        nxt[lo] += 1
    return out


def assign_ids(merged: dict[str, np.ndarray], eff_min: int, base: dict[str, np.ndarray]
               ) -> tuple[tuple[np.ndarray, np.ndarray], dict[str, np.ndarray]]:
    """Reducer, second step: its kept words' ids; returns ``((keys, ids), words)``: its part of the hash lookup
    (keys sorted) and of the word list (``ids``, ``counts``, ``lengths``, ``arena``, in hash order).

    Example:
        >>> (keys, ids), words = assign_ids(merged, 5, bases[0])  # doctest: +SKIP
    """
    kept = np.flatnonzero(merged["counts"] >= eff_min)
    counts = merged["counts"][kept]
    ids = _ids(counts, base["values"], base["bases"], np.empty(len(kept), dtype=np.int64)).astype(np.int32)
    starts = word_starts(merged["lengths"])
    words = take_words(merged["hashes"], merged["counts"], starts, merged["lengths"], merged["arena"], kept)
    words["ids"] = ids
    return (words["hashes"], ids), words


def join_lookup(*parts: tuple[np.ndarray, np.ndarray]) -> WordLookup:
    """The hash -> id lookup from the reducers' parts, in reducer order (consecutive hash ranges).

    Example:
        >>> join_lookup((np.array([1], np.uint64), np.array([0], np.int32))).lookup(np.array([1], np.uint64)).tolist()
        [0]
    """
    if not parts:
        return WordLookup.from_sorted(np.zeros(0, np.uint64), np.zeros(0, np.int32))
    return WordLookup.from_sorted(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


# --------------------------------------------------------------------------- the driver
@dataclass
class VocabParts:
    """A vocabulary counted by :func:`count_vocabulary`, held by its reducer actors: the driver has only small
    tables.  ``lookup`` is an object reference to the hash lookup, ``reducers`` the actors (their word-list parts:
    :meth:`Reducer.words_part`; :meth:`close` stops them), ``classes`` the count classes (the sampling tables come
    from them: :mod:`parvec.countclasses`), ``ranges`` and ``counted`` each range and its figures.

    Example:
        >>> parts.classes.n_words, len(parts.reducers), parts.min_count  # doctest: +SKIP
        (67955, 4, 5)
    """

    classes: CountClasses
    min_count: int
    lookup: Any
    reducers: list[Any]
    ranges: list[Any]
    counted: list[RangeCount]
    collisions: list[tuple[int, list[str]]] = field(default_factory=list)
    check: CountCheck | None = None

    @property
    def raw_words(self) -> int:
        """Tokens of the corpus (every word, kept or not)."""
        return sum(c.raw_words for c in self.counted)

    def close(self, ray: Any) -> None:
        """Stop the reducer actors (their word lists go with them; the lookup stays while referenced)."""
        for r in self.reducers:
            ray.kill(r)
        self.reducers = []


def count_vocabulary(ray: Any, path: str | os.PathLike[str], options: ReadOptions, n_ranges: int, reducers: int,
                     timeout_s: float = 300.0, timings: dict[str, float] | None = None, **count: Any) -> VocabParts:
    """Steps 1-4 on Ray for a plain file: count its ``n_ranges`` byte ranges, merge on ``reducers`` reducer actors,
    assign ids from the histograms and build the lookup (in the object store) (:func:`count_units` of its ranges;
    ``count``: its keywords, such as ``distinct_estimate`` or ``budget``).

    Example:
        >>> parts = count_vocabulary(ray, "corpus.txt", ReadOptions(min_count=5), 8, 4)  # doctest: +SKIP
    """
    path = Path(path)
    ranges = byte_ranges(path, n_ranges)
    if not ranges:
        raise ParvecError(f"{path}: the input is empty")
    parts = count_units(ray, [(str(path), a, b) for a, b in ranges], options, reducers, timeout_s, timings,
                        name=str(path), **count)
    parts.ranges = ranges
    return parts


def count_units(ray: Any, units: list[tuple[str, int, int | None]], options: ReadOptions, reducers: int,
                timeout_s: float = 300.0, timings: dict[str, float] | None = None, *, name: str = "the corpus",
                reducer_memory: int | None = None, mapper_memory: int | None = None,
                distinct_estimate: int | None = None, budget: SpillBudget | None = None, scratch: str | None = None,
                reducer_retries: int = REDUCER_RETRIES,
                on_merge: Callable[[list[Any], list[int]], None] | None = None) -> VocabParts:
    """Steps 1-4 on Ray over ``units`` (``(path, start, end)``: byte ranges of plain files, ``end`` None for a whole
    file, decompressed): count each unit in a mapper task, merge on ``reducers`` reducer actors, assign ids from the
    histograms and build the lookup (in the object store).  Raises :class:`ParvecError` for a corpus without words
    or without a word that reaches the minimum count (``name`` says which; the reducers are then stopped).
    ``timings``, if given, gets each step's seconds (``count_merge``, ``ids``, ``assign_lookup``);
    ``reducer_memory``/``mapper_memory`` are the bytes each asks of Ray's ``memory`` resource (placement by memory).

    Each reducer spills sorted runs to ``scratch`` (None: the node's temporary directory) past its ``budget``
    (None: :func:`~parvec.distributed.count_merge.spill_budget` of ``distinct_estimate``, the distinct words
    expected, and of ``reducer_memory``).  A reducer lost while merging (its actor died) is replaced by a new one
    fed its part of every unit again (mapper tasks count the units again), at most ``reducer_retries`` times for
    each reducer; then a :class:`ParvecError` names it.  ``on_merge`` is called with the reducer actors and the
    indices whose merge was just asked for (a test's way to kill one).  The result's ``check``
    (:class:`~parvec.distributed.count_merge.CountCheck`) compares the estimate with the distinct words counted and
    says which reducers spilled or were re-run.

    Example:
        >>> parts = count_units(ray, [("a.txt", 0, 4096), ("b.txt.gz", 0, None)], ReadOptions(), 2)  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    n_reducers = max(1, int(reducers))
    if budget is None:
        budget = spill_budget(distinct_estimate, n_reducers, reducer_memory)
    reducer_opts: dict[str, Any] = {"num_cpus": 0}
    if reducer_memory:
        reducer_opts["memory"] = int(reducer_memory)
    token = uuid.uuid4().hex[:12]

    def make(r: int, attempt: int) -> Any:
        stale = f"{token}-r{r}-" if attempt else None
        return ray.remote(Reducer).options(**reducer_opts).remote(budget, scratch, f"{token}-r{r}-a{attempt}", stale)

    actors = [make(r, 0) for r in range(n_reducers)]
    try:
        mapper_opts: dict[str, Any] = {"num_cpus": 1, "max_retries": 2}
        if mapper_memory:
            mapper_opts["memory"] = int(mapper_memory)
        mapper = ray.remote(map_range).options(**mapper_opts)
        counted = _get(ray, [mapper.remote(str(p), a, b, options, actors, k) for k, (p, a, b) in enumerate(units)],
                       "counting words", timeout_s)

        def refeed(r: int) -> None:
            feeder = ray.remote(map_part).options(**mapper_opts)
            _get(ray, [feeder.remote(str(p), a, b, options, actors[r], r, n_reducers, k)
                       for k, (p, a, b) in enumerate(units)], f"counting reducer {r}'s part again", timeout_s)

        summaries, restarts = _finish_all(ray, actors, make, refeed, timeout_s, reducer_retries, on_merge)
        t1 = time.perf_counter()
        check = CountCheck(distinct_estimate, budget, tuple(
            ReducerCheck(r, s.distinct, s.peak_entries, s.peak_bytes, s.runs, restarts[r])
            for r, s in enumerate(summaries)))
        for line in check.notes():
            log.warning("%s: %s", name, line)
        if sum(c.raw_words for c in counted) == 0:
            raise ParvecError(f"{name}: the corpus has no words")
        classes, eff, bases = id_bases(summaries, options.min_count, options.max_final_vocab)
        collisions = [c for s in summaries for c in s.collisions]
        for h, words in collisions:
            log.warning("%s: the words %s have the same 64-bit hash %#x and are left out of the vocabulary", name,
                        ", ".join(repr(w) for w in words), h)
        if classes.n_words == 0:
            best = max((int(s.values.max()) for s in summaries if len(s.values)), default=0)
            raise ParvecError(f"{name}: no word reaches min_count={options.min_count} (the most frequent word "
                              f"occurs {best} times); lower --min-count")
        t2 = time.perf_counter()
        _get(ray, [r.assign.remote(eff, b) for r, b in zip(actors, bases, strict=True)], "assigning ids", timeout_s)
        lookup = ray.remote(num_cpus=1, max_retries=2)(build_lookup).remote(actors)
        ray.wait([lookup], timeout=timeout_s * max(1, len(actors)))
    except BaseException:
        _stop(ray, actors)
        raise
    if timings is not None:
        timings.update(count_merge=t1 - t0, ids=t2 - t1, assign_lookup=time.perf_counter() - t2)
    return VocabParts(classes, eff, lookup, actors, list(units), counted, collisions, check)


def _finish_all(ray: Any, actors: list[Any], make: Callable[[int, int], Any], refeed: Callable[[int], None],
                timeout_s: float, retries: int, on_merge: Callable[[list[Any], list[int]], None] | None
                ) -> tuple[list[ReducerSummary], list[int]]:
    # Every reducer's merge; a reducer lost meanwhile (or earlier: its mappers' pushes were skipped) is replaced in
    # ``actors`` by a new one that is given its part of every unit again, at most ``retries`` times each.
    n = len(actors)
    summaries: list[ReducerSummary | None] = [None] * n
    restarts = [0] * n
    todo = list(range(n))
    while todo:
        refs = [(r, actors[r].finish.remote()) for r in todo]
        if on_merge is not None:
            on_merge(actors, list(todo))
        todo = []
        for r, ref in refs:
            try:
                summaries[r] = _get(ray, [ref], "merging the counts", timeout_s, lost_ok=True)[0]
            except ray.exceptions.RayActorError as exc:
                restarts[r] += 1
                why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                if restarts[r] > retries:
                    raise ParvecError(
                        f"merging the counts: reducer {r} of {n} was lost {restarts[r]} times (the last: {why}); "
                        "its words may not fit its node's memory: give the cluster more memory or more CPUs (a "
                        "reducer each), or count a part of the input first") from None
                log.warning("merging the counts: reducer %d of %d was lost (%s); a new one counts its part of every "
                            "unit again (%d of %d retries)", r, n, why, restarts[r], retries)
                ray.kill(actors[r])
                actors[r] = make(r, restarts[r])
                refeed(r)
                todo.append(r)
    assert all(s is not None for s in summaries)
    return [s for s in summaries if s is not None], restarts


def _stop(ray: Any, actors: list[Any]) -> None:
    # Delete the reducers' runs (those that answer within a few seconds) and stop them.
    try:
        ray.wait([r.discard.remote() for r in actors], num_returns=len(actors), timeout=10)
    except Exception:  # noqa: BLE001 - best effort: a lost reducer's runs are removed by its replacement only
        pass
    for r in actors:
        ray.kill(r)


def _get(ray: Any, refs: list[Any], what: str, timeout_s: float, lost_ok: bool = False) -> list[Any]:
    # Every task's answer; a lost actor is the caller's to handle when ``lost_ok``, any other failure a ParvecError.
    try:
        got: list[Any] = ray.get(refs, timeout=timeout_s * max(1, len(refs)))
        return got
    except ray.exceptions.GetTimeoutError:
        raise ParvecError(f"{what}: not done within {timeout_s:g} s per task (Cluster.timeout_s)") from None
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", exc)
        if isinstance(cause, ParvecError):
            raise ParvecError(str(cause)) from None
        raise ParvecError(f"{what} failed: {cause}") from None
    except ray.exceptions.RayActorError as exc:
        if lost_ok:
            raise
        raise ParvecError(f"{what} failed: {(str(exc).strip().splitlines() or [type(exc).__name__])[0]}") from None


def vocab_of_parts(ray: Any, parts: VocabParts) -> tuple[list[str], np.ndarray]:
    """The words in id order and their counts, gathered from the reducers' word-list parts: a per-word Python
    list in this process (for checks, small vocabularies and today's one-file outputs).

    Example:
        >>> words, counts = vocab_of_parts(ray, parts)  # doctest: +SKIP
    """
    n = parts.classes.n_words
    words: list[str] = [""] * n
    counts = np.zeros(n, dtype=np.int64)
    for reducer in parts.reducers:
        w = ray.get(reducer.words_part.remote())
        text = w["arena"].tobytes()
        pos = 0
        for i, length in zip(w["ids"].tolist(), w["lengths"].tolist(), strict=True):
            words[i] = text[pos: pos + length].decode("utf-8")
            pos += length
        counts[w["ids"]] = w["counts"]
    return words, counts
