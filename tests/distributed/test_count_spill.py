"""Counting that cannot die late (parvec.distributed.count_merge, parvec.distributed.vocab_count): reducers that
outgrow their budget spill sorted runs and merge them to exactly the in-memory result, and a reducer lost while
merging is replaced and fed its part again."""

from __future__ import annotations

import numpy as np
import pytest

from parvec.corpus import ReadOptions
from parvec.distributed.count_merge import CountCheck, RunStore, SpillBudget, merge_words, spill_budget
from parvec.distributed.vocab_count import Reducer, count_vocabulary, merge_parts, vocab_of_parts
from parvec.errors import ParvecError


def _random_parts(rng: np.random.Generator, n_parts: int, per_part: int, n_words: int, n_hashes: int
                  ) -> list[dict[str, np.ndarray]]:
    """Parts as mappers make them (distinct words each, any order) over ``n_words`` random words whose hashes are
    drawn from ``n_hashes`` values (fewer than the words: distinct words of one hash, collisions)."""
    vocab = [bytes(rng.integers(97, 123, size=int(rng.integers(1, 9)), dtype=np.uint8)) for _ in range(n_words)]
    vocab = list(dict.fromkeys(vocab))  # distinct words
    word_hash = rng.integers(0, n_hashes, size=len(vocab)).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    parts = []
    for _ in range(n_parts):
        idx = rng.choice(len(vocab), size=min(per_part, len(vocab)), replace=False)
        parts.append({"hashes": word_hash[idx], "counts": rng.integers(1, 50, size=len(idx)).astype(np.int64),
                      "lengths": np.array([len(vocab[i]) for i in idx], np.int32),
                      "arena": np.frombuffer(b"".join(vocab[i] for i in idx), np.uint8).copy()})
    return parts


def _reference(parts: list[dict[str, np.ndarray]]):
    """numpy's answer: np.unique over every entry's hash; a hash of one distinct word is that word with its counts
    summed, a hash of several is a collision."""
    hashes = np.concatenate([p["hashes"] for p in parts])
    counts = np.concatenate([p["counts"] for p in parts])
    words = []
    for p in parts:
        text, pos = p["arena"].tobytes(), 0
        for n in p["lengths"].tolist():
            words.append(text[pos:pos + n].decode())
            pos += n
    unique, inverse = np.unique(hashes, return_inverse=True)
    summed = np.bincount(inverse, weights=counts).astype(np.int64)
    spelled: dict[int, set[str]] = {}
    for i, w in zip(inverse.tolist(), words, strict=True):
        spelled.setdefault(i, set()).add(w)
    kept = np.array([len(spelled[i]) == 1 for i in range(len(unique))], dtype=bool)
    collisions = [(int(unique[i]), sorted(spelled[i])) for i in np.flatnonzero(~kept).tolist()]
    return unique[kept], summed[kept], [next(iter(spelled[i])) for i in np.flatnonzero(kept).tolist()], collisions


def _words(table: dict[str, np.ndarray]) -> list[str]:
    text, pos, out = bytes(table["arena"]), 0, []
    for n in np.asarray(table["lengths"]).tolist():
        out.append(text[pos:pos + n].decode())
        pos += n
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_runs_merged_in_chunks_are_numpys_unique_and_the_in_memory_merge(tmp_path, seed):
    rng = np.random.default_rng(seed)
    parts = _random_parts(rng, 9, 2500, 6000, 4000)  # ~2000 of the 4000 hashes carry more than one word
    hashes, counts, words, collisions = _reference(parts)
    assert len(collisions) > 100
    store = RunStore(str(tmp_path), "t")
    for i in range(0, len(parts), 2):  # runs of one or two parts, as a reducer spills them
        store.write(merge_words(parts[i:i + 2]))
    merged = store.merge(SpillBudget(entries=1000))  # chunks of 1024 entries of each run: many chunks
    assert store.runs == 5
    assert np.array_equal(merged.table["hashes"], hashes)
    assert np.array_equal(merged.table["counts"], counts)
    assert _words(merged.table) == words
    assert merged.collisions == collisions
    assert merged.distinct == len(hashes) + sum(len(w) for _, w in collisions)
    in_memory, summary = merge_parts(*parts)
    for key in ("hashes", "counts", "lengths", "arena"):
        assert np.array_equal(merged.table[key], in_memory[key]), key
    assert summary.collisions == merged.collisions and summary.distinct == merged.distinct
    assert np.array_equal(summary.values, merged.values) and np.array_equal(summary.sizes, merged.sizes)
    store.remove()
    assert not list(tmp_path.iterdir())


def test_a_reducer_past_its_budget_spills_and_finishes_as_the_in_memory_one(tmp_path):
    rng = np.random.default_rng(7)
    parts = _random_parts(rng, 8, 1500, 5000, 1 << 40)  # no collisions
    spilling = Reducer(SpillBudget(entries=2000), str(tmp_path), "r0")
    in_memory = Reducer()
    for k, p in enumerate(parts):
        spilling.add(k, p)
        in_memory.add(k, p)
    assert spilling.add(0, parts[0]) == 0  # a retried mapper's second push is ignored
    a, b = spilling.finish(), in_memory.finish()
    assert a.runs >= 3 and b.runs == 0
    assert a.peak_entries <= 2000 + 1500 and b.peak_entries == 8 * 1500
    assert (a.distinct, a.collisions) == (b.distinct, b.collisions)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.sizes, b.sizes)
    base = {"values": a.values[::-1].copy(), "bases": np.zeros(len(a.values), np.int64)}
    assert spilling.assign(1, base) == in_memory.assign(1, base) == a.distinct
    assert not list(tmp_path.iterdir())  # the runs are deleted once ids are assigned
    for key in ("ids", "hashes", "counts", "lengths", "arena"):
        assert np.array_equal(spilling.words_part()[key], in_memory.words_part()[key]), key


def test_the_budget_comes_from_the_estimate_with_its_margin_and_from_the_memory_given():
    assert spill_budget(4_000_000, 4) == SpillBudget(entries=1_500_000)
    assert spill_budget(1000, 4).entries == 1 << 16  # never below the floor
    assert spill_budget(1000, 4, floor=0).entries == 375
    from parvec.distributed.memory import WORKER_BASELINE

    assert spill_budget(None, 4, reducer_memory=WORKER_BASELINE + (600 << 20)) == SpillBudget(nbytes=100 << 20)
    assert SpillBudget() == spill_budget(None, 4)  # nothing known: no limit


# --------------------------------------------------------------------------- on the session's Ray
@pytest.fixture(scope="module")
def unspilled(ray_session, demo_slice):
    """The demo slice's vocabulary counted in memory: (words, counts) in id order, and the distinct words."""
    parts = count_vocabulary(ray_session, demo_slice, ReadOptions(min_count=1), n_ranges=3, reducers=2)
    try:
        assert parts.check is not None and not parts.check.notes()
        words, counts = vocab_of_parts(ray_session, parts)
        return words, counts, parts.check.distinct
    finally:
        parts.close(ray_session)


def test_on_ray_a_vocabulary_ten_times_the_estimate_spills_and_is_the_same(ray_session, demo_slice, unspilled,
                                                                            tmp_path):
    words, counts, distinct = unspilled
    estimate = distinct // 10
    parts = count_vocabulary(ray_session, demo_slice, ReadOptions(min_count=1), n_ranges=3, reducers=2,
                             distinct_estimate=estimate, budget=spill_budget(estimate, 2, floor=0),
                             scratch=str(tmp_path))
    try:
        check = parts.check
        assert isinstance(check, CountCheck)
        assert all(r.spilled for r in check.reducers) and check.distinct == distinct
        assert check.off_by == pytest.approx(distinct / estimate)
        assert "spilled" in check.notes()[0] and "times the" in check.notes()[0]
        assert check.to_dict()["reducers"][0]["runs"] >= 2
        got_words, got_counts = vocab_of_parts(ray_session, parts)
        assert got_words == words and np.array_equal(got_counts, counts)
        assert not list(tmp_path.iterdir())  # runs deleted once ids were assigned
    finally:
        parts.close(ray_session)


def test_on_ray_a_reducer_killed_while_merging_is_run_again_and_the_vocabulary_is_the_same(ray_session, demo_slice,
                                                                                            unspilled):
    words, counts, _ = unspilled
    killed: list[int] = []

    def kill_reducer_1_once(actors, merging):
        if not killed:
            assert merging == [0, 1]
            ray_session.kill(actors[1], no_restart=True)
            killed.append(1)

    parts = count_vocabulary(ray_session, demo_slice, ReadOptions(min_count=1), n_ranges=3, reducers=2,
                             on_merge=kill_reducer_1_once)
    try:
        assert killed == [1]
        assert parts.check is not None and [r.restarts for r in parts.check.reducers] == [0, 1]
        assert parts.check.notes() == ["reducer 1 of 2 was lost and run again 1 time from its part of every unit"]
        got_words, got_counts = vocab_of_parts(ray_session, parts)
        assert got_words == words and np.array_equal(got_counts, counts)
    finally:
        parts.close(ray_session)


def test_on_ray_a_reducer_lost_past_its_retries_is_named(ray_session, tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("a b c a b a\n" * 50)

    def kill_reducer_0(actors, merging):
        if 0 in merging:
            ray_session.kill(actors[0], no_restart=True)

    with pytest.raises(ParvecError, match=r"merging the counts: reducer 0 of 2 was lost 2 times .*more memory"):
        count_vocabulary(ray_session, path, ReadOptions(min_count=1), n_ranges=2, reducers=2, reducer_retries=1,
                         on_merge=kill_reducer_0)
