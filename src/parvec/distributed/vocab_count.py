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
   odds).
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

import functools
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numba as nb
import numpy as np

from parvec.corpus import RangeSentences, ReadOptions, byte_ranges
from parvec.corpus.textscan import WordTable, normalise
from parvec.countclasses import CountClasses
from parvec.errors import ParvecError
from parvec.wordhash import WordLookup, part_of

__all__ = ["RangeCount", "Reducer", "VocabParts", "assign_ids", "build_lookup", "count_range", "count_units",
           "count_vocabulary",
           "effective_min_count", "id_bases", "join_lookup", "map_range", "merge_parts", "vocab_of_parts"]

log = logging.getLogger(__name__)


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


def _take(hashes: np.ndarray, counts: np.ndarray, starts: np.ndarray, lengths: np.ndarray, arena: np.ndarray,
          idx: np.ndarray) -> dict[str, np.ndarray]:
    """Words ``idx`` as a part: ``{"hashes", "counts", "lengths", "arena"}`` (bytes contiguous, in ``idx`` order)."""
    idx = np.asarray(idx, dtype=np.int64)
    out_lengths = lengths[idx].astype(np.int32)
    out_arena = np.empty(int(out_lengths.sum()), dtype=np.uint8)
    _gather(arena, starts, lengths, idx, np.empty(len(idx), dtype=np.int64), out_arena)
    return {"hashes": hashes[idx].copy(), "counts": counts[idx].copy(), "lengths": out_lengths, "arena": out_arena}


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
    parts = [_take(hashes, counts, starts, lengths, arena, keep[order[bounds[r]:bounds[r + 1]]])
             for r in range(reducers)]
    return (*parts, RangeCount(raw, len(table), reader.fingerprint, pruned))


# --------------------------------------------------------------------------- reduce
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


def _merge(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Parts (or earlier merges) of one reducer merged into distinct words sorted by hash, with their summed counts
    and ``collide`` flags (distinct words of one hash)."""
    def cat(key: str, dtype: Any) -> np.ndarray:
        return np.concatenate([p[key] for p in parts]) if parts else np.zeros(0, dtype)

    hashes, counts = cat("hashes", np.uint64), cat("counts", np.int64)
    lengths, arena = cat("lengths", np.int32), cat("arena", np.uint8)
    flags = np.concatenate([p.get("collide", np.zeros(len(p["hashes"]), np.bool_)) for p in parts]) if parts \
        else np.zeros(0, np.bool_)
    starts = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    order = np.argsort(hashes, kind="stable")
    rep = np.empty(len(order), dtype=np.int64)
    merged_counts = np.empty(len(order), dtype=np.int64)
    collide = np.zeros(len(order), dtype=np.bool_)
    n = _merge_sorted(order, hashes, counts, starts, lengths, arena, flags, rep, merged_counts, collide)
    merged = _take(hashes, counts, starts, lengths, arena, rep[:n])
    merged["counts"] = merged_counts[:n]  # the words' summed counts (not their first entry's)
    merged["collide"] = collide[:n]
    return merged


def merge_parts(*parts: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Reduce: merge one reducer's parts (from every range) into its distinct words sorted by hash, with their
    counts; returns ``(merged, summary)``, ``summary`` being the histogram of counts (``values``, ``sizes``) of its
    words and the colliding words (``collisions``: ``(hash, [words])``), which are left out of both.

    Example:
        >>> merged, summary = merge_parts(part_a, part_b)  # doctest: +SKIP
    """
    merged = _merge(list(parts))
    collide = merged.pop("collide")
    starts = np.zeros(len(merged["lengths"]), dtype=np.int64)
    if len(starts) > 1:
        np.cumsum(merged["lengths"][:-1], out=starts[1:])
    collisions: dict[int, list[str]] = {}
    for w in np.flatnonzero(collide).tolist():
        word = merged["arena"][starts[w]: starts[w] + merged["lengths"][w]].tobytes()
        collisions.setdefault(int(merged["hashes"][w]), []).append(word.decode("utf-8", errors="replace"))
    if len(collisions):
        kept = _take(merged["hashes"], merged["counts"], starts, merged["lengths"], merged["arena"],
                     np.flatnonzero(~collide))
        merged = kept
    values, sizes = np.unique(merged["counts"], return_counts=True)
    summary = {"values": values.astype(np.int64), "sizes": sizes.astype(np.int64),
               "collisions": sorted(collisions.items())}
    return merged, summary


class Reducer:
    """A Ray actor: reducer ``r``.  Mappers push their part ``r`` to it (:meth:`add`; merged as they come, so it
    holds about its distinct words and one batch of parts); :meth:`finish` returns its histogram, :meth:`assign`
    gives its kept words their ids, and it serves its parts of the lookup and of the word list.  Nothing it holds
    passes through the driver.

    Example:
        >>> reducer = ray.remote(Reducer).remote()  # doctest: +SKIP
    """

    def __init__(self) -> None:
        self.seen: set[int] = set()  # the ranges whose part arrived (a retried mapper's second push is ignored)
        self.pending: list[dict[str, np.ndarray]] = []
        self.pending_words = 0
        self.merged: dict[str, np.ndarray] | None = None
        self.words: dict[str, np.ndarray] | None = None

    def add(self, k: int, part: dict[str, np.ndarray]) -> int:
        """Take range ``k``'s part (once: a retried mapper pushes it again); merge when the parts waiting hold more
        entries than the merged words."""
        if k in self.seen:
            return 0
        self.seen.add(k)
        self.pending.append(part)
        self.pending_words += len(part["hashes"])
        if self.pending_words > max(1 << 20, len(self.merged["hashes"]) if self.merged else 0):
            self._merge_pending()
        return len(part["hashes"])

    def _merge_pending(self) -> None:
        parts = ([self.merged] if self.merged is not None else []) + self.pending
        self.merged = _merge(parts)
        self.pending, self.pending_words = [], 0

    def finish(self) -> dict[str, Any]:
        """Merge what is left; the summary of :func:`merge_parts` (histogram, collisions)."""
        self._merge_pending()
        assert self.merged is not None
        self.merged, summary = merge_parts(self.merged)
        return summary

    def assign(self, eff_min: int, base: dict[str, np.ndarray]) -> int:
        """Ids for the kept words (:func:`assign_ids`); returns how many.  The merged counts are freed."""
        assert self.merged is not None
        (_, _), self.words = assign_ids(self.merged, eff_min, base)
        self.merged = None
        return len(self.words["ids"])

    def lookup_part(self) -> tuple[np.ndarray, np.ndarray]:
        """Its part of the hash lookup: ``(keys sorted, ids)``."""
        assert self.words is not None
        return self.words["hashes"], self.words["ids"]

    def words_part(self) -> dict[str, np.ndarray]:
        """Its part of the word list: ``ids``, ``counts``, ``lengths``, ``arena`` (and ``hashes``), in hash order."""
        assert self.words is not None
        return self.words

    def write_part(self, directory: str, r: int) -> dict[str, Any]:
        """Write its part of the word list as partition ``r`` of the vocabulary on disk
        (:func:`parvec.vocab_parts.write_part`: in id order, five ``.npy`` files); returns the partition's record."""
        from parvec.vocab_parts import write_part

        w = self.words
        assert w is not None
        return write_part(directory, r, w["ids"], w["counts"], lengths=w["lengths"], arena=w["arena"],
                          hashes=w["hashes"])


def map_range(path: str, start: int, end: int | None, options: ReadOptions, reducers: list[Any],
              k: int) -> RangeCount:
    """Map task for range ``k``: :func:`count_range`, each part pushed to its reducer actor; returns the range's
    figures.

    Example:
        >>> info = map_range("corpus.txt", 0, 1 << 20, ReadOptions(), reducers, 0)  # doctest: +SKIP
    """
    import ray

    info: RangeCount  # count_range's last element
    *parts, info = count_range(path, start, end, options, len(reducers))
    ray.get([r.add.remote(k, p) for r, p in zip(reducers, parts, strict=True)])
    return info


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


def id_bases(summaries: list[dict[str, Any]], min_count: int, max_final_vocab: int | None
             ) -> tuple[CountClasses, int, list[dict[str, np.ndarray]]]:
    """The driver's step: from the reducers' histograms, ``(count classes of the vocabulary, effective minimum
    count, per reducer {"values": kept count values, "bases": its first id for each})``.  Ids run by count
    descending; within a count, reducer 0's words first, each reducer's in its (hash) order.

    Example:
        >>> s = [{"values": np.array([1, 3]), "sizes": np.array([2, 1])},
        ...      {"values": np.array([3]), "sizes": np.array([2])}]
        >>> classes, eff, bases = id_bases(s, 2, None)
        >>> classes.values.tolist(), classes.first.tolist(), eff, [b["bases"].tolist() for b in bases]
        ([3], [0, 3], 2, [[0], [1]])
    """
    all_values = np.concatenate([s["values"] for s in summaries]) if summaries else np.zeros(0, np.int64)
    all_sizes = np.concatenate([s["sizes"] for s in summaries]) if summaries else np.zeros(0, np.int64)
    eff = effective_min_count(all_values, all_sizes, min_count, max_final_vocab)
    kept = all_values >= eff
    classes = CountClasses.from_histogram(all_values[kept], all_sizes[kept])
    next_id = dict(zip(classes.values.tolist(), classes.first[:-1].tolist(), strict=True))
    bases = []
    for s in summaries:
        keep = s["values"] >= eff
        values = np.asarray(s["values"])[keep][::-1].astype(np.int64)  # descending
        sizes = np.asarray(s["sizes"])[keep][::-1].astype(np.int64)
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
    starts = np.zeros(len(merged["lengths"]), dtype=np.int64)
    if len(starts) > 1:
        np.cumsum(merged["lengths"][:-1], out=starts[1:])
    words = _take(merged["hashes"], merged["counts"], starts, merged["lengths"], merged["arena"], kept)
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
                     timeout_s: float = 300.0, timings: dict[str, float] | None = None) -> VocabParts:
    """Steps 1-4 on Ray for a plain file: count its ``n_ranges`` byte ranges, merge on ``reducers`` reducer actors,
    assign ids from the histograms and build the lookup (in the object store) (:func:`count_units` of its ranges).

    Example:
        >>> parts = count_vocabulary(ray, "corpus.txt", ReadOptions(min_count=5), 8, 4)  # doctest: +SKIP
    """
    path = Path(path)
    ranges = byte_ranges(path, n_ranges)
    if not ranges:
        raise ParvecError(f"{path}: the input is empty")
    parts = count_units(ray, [(str(path), a, b) for a, b in ranges], options, reducers, timeout_s, timings,
                        name=str(path))
    parts.ranges = ranges
    return parts


def count_units(ray: Any, units: list[tuple[str, int, int | None]], options: ReadOptions, reducers: int,
                timeout_s: float = 300.0, timings: dict[str, float] | None = None, *, name: str = "the corpus",
                reducer_memory: int | None = None, mapper_memory: int | None = None) -> VocabParts:
    """Steps 1-4 on Ray over ``units`` (``(path, start, end)``: byte ranges of plain files, ``end`` None for a whole
    file, decompressed): count each unit in a mapper task, merge on ``reducers`` reducer actors, assign ids from the
    histograms and build the lookup (in the object store).  Raises :class:`ParvecError` for a corpus without words
    or without a word that reaches the minimum count (``name`` says which; the reducers are then stopped).
    ``timings``, if given, gets each step's seconds (``count_merge``, ``ids``, ``assign_lookup``);
    ``reducer_memory``/``mapper_memory`` are the bytes each asks of Ray's ``memory`` resource (placement by memory).

    Example:
        >>> parts = count_units(ray, [("a.txt", 0, 4096), ("b.txt.gz", 0, None)], ReadOptions(), 2)  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    reducer_opts: dict[str, Any] = {"num_cpus": 0}
    if reducer_memory:
        reducer_opts["memory"] = int(reducer_memory)
    actors = [ray.remote(Reducer).options(**reducer_opts).remote() for _ in range(max(1, int(reducers)))]
    try:
        mapper_opts: dict[str, Any] = {"num_cpus": 1, "max_retries": 2}
        if mapper_memory:
            mapper_opts["memory"] = int(mapper_memory)
        mapper = ray.remote(map_range).options(**mapper_opts)
        counted = _get(ray, [mapper.remote(str(p), a, b, options, actors, k) for k, (p, a, b) in enumerate(units)],
                       "counting words", timeout_s)
        summaries = _get(ray, [r.finish.remote() for r in actors], "merging the counts", timeout_s)
        t1 = time.perf_counter()
        if sum(c.raw_words for c in counted) == 0:
            raise ParvecError(f"{name}: the corpus has no words")
        classes, eff, bases = id_bases(summaries, options.min_count, options.max_final_vocab)
        collisions = [c for s in summaries for c in s["collisions"]]
        for h, words in collisions:
            log.warning("%s: the words %s have the same 64-bit hash %#x and are left out of the vocabulary", name,
                        ", ".join(repr(w) for w in words), h)
        if classes.n_words == 0:
            best = max((int(s["values"].max()) for s in summaries if len(s["values"])), default=0)
            raise ParvecError(f"{name}: no word reaches min_count={options.min_count} (the most frequent word "
                              f"occurs {best} times); lower --min-count")
        t2 = time.perf_counter()
        _get(ray, [r.assign.remote(eff, b) for r, b in zip(actors, bases, strict=True)], "assigning ids", timeout_s)
        lookup = ray.remote(num_cpus=1, max_retries=2)(build_lookup).remote(actors)
        ray.wait([lookup], timeout=timeout_s * max(1, len(actors)))
    except BaseException:
        for r in actors:
            ray.kill(r)
        raise
    if timings is not None:
        timings.update(count_merge=t1 - t0, ids=t2 - t1, assign_lookup=time.perf_counter() - t2)
    return VocabParts(classes, eff, lookup, actors, list(units), counted, collisions)


def _get(ray: Any, refs: list[Any], what: str, timeout_s: float) -> list[Any]:
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
