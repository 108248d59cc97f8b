"""The vocabulary as a map-reduce (parvec.distributed.vocab_count): the same vocabulary as one process on real
text, ties ordered by hash, collisions left out, and a driver that receives only small tables."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from parvec.corpus import ReadOptions, TextSentences, byte_ranges, encode_sentences
from parvec.distributed.hashed_encode import encode_ranges
from parvec.distributed.vocab_count import (
    RangeCount,
    ReducerSummary,
    assign_ids,
    count_range,
    count_vocabulary,
    effective_min_count,
    id_bases,
    join_lookup,
    merge_parts,
    vocab_of_parts,
)
from parvec.vocab import Vocab
from parvec.wordhash import fnv1a64, hash_words


def _one_process(path: Path, options: ReadOptions) -> Vocab:
    return encode_sentences(TextSentences(path, options), options, None, str(path)).vocab


def _check_same_vocabulary(words: list[str], counts: np.ndarray, want: Vocab) -> None:
    """Same words and counts, the same set of words at each count, ties in hash order."""
    assert np.array_equal(counts, want.counts)
    assert sorted(words) == sorted(want.words)
    assert dict(zip(words, counts.tolist(), strict=True)) == dict(zip(want.words, want.counts.tolist(), strict=True))
    hashes = [fnv1a64(w) for w in words]
    for i in range(1, len(words)):
        if counts[i] == counts[i - 1]:
            assert hashes[i] > hashes[i - 1]


def _in_process(path: Path, options: ReadOptions, n_ranges: int, reducers: int):
    """The four steps without Ray."""
    mapped = [count_range(str(path), a, b, options, reducers) for a, b in byte_ranges(path, n_ranges)]
    merged = [merge_parts(*[m[r] for m in mapped]) for r in range(reducers)]
    classes, eff, bases = id_bases([m[1] for m in merged], options.min_count, options.max_final_vocab)
    assigned = [assign_ids(merged[r][0], eff, bases[r]) for r in range(reducers)]
    words = [""] * classes.n_words
    counts = np.zeros(classes.n_words, dtype=np.int64)
    for _, part in assigned:
        text = part["arena"].tobytes()
        pos = 0
        for i, n in zip(part["ids"].tolist(), part["lengths"].tolist(), strict=True):
            words[i] = text[pos:pos + n].decode("utf-8")
            pos += n
        counts[part["ids"]] = part["counts"]
    return words, counts, classes, join_lookup(*[a[0] for a in assigned]), [m[-1] for m in mapped]


@pytest.mark.parametrize(("options", "n_ranges", "reducers"), [
    (ReadOptions(min_count=1), 1, 1),
    (ReadOptions(min_count=1), 7, 3),
    (ReadOptions(min_count=5), 4, 2),
    (ReadOptions(min_count=2, max_final_vocab=3000), 5, 4),
    (ReadOptions(min_count=1, lowercase=True), 3, 5),
])
def test_the_map_reduce_gives_the_one_process_vocabulary(demo_slice, options, n_ranges, reducers):
    words, counts, classes, lookup, counted = _in_process(demo_slice, options, n_ranges, reducers)
    want = _one_process(demo_slice, options)
    _check_same_vocabulary(words, counts, want)
    assert np.array_equal(classes.expand(), want.counts)
    assert np.array_equal(lookup.lookup(hash_words(words)), np.arange(len(words)))
    assert sum(c.raw_words for c in counted) == 500_000


def test_effective_min_count_is_gensims_rule():
    counts = np.array([9, 7, 7, 5, 5, 5, 2, 1, 1])
    values, sizes = np.unique(counts, return_counts=True)
    for cap in range(1, 11):
        ranked = sorted(counts.tolist(), reverse=True)
        want = max(1, ranked[cap] + 1) if len(counts) > cap else 1
        assert effective_min_count(values, sizes, 1, cap) == want
    assert effective_min_count(values, sizes, 6, None) == 6


def _part(words: list[bytes], hashes: list[int], counts: list[int]) -> dict[str, np.ndarray]:
    return {"hashes": np.array(hashes, np.uint64), "counts": np.array(counts, np.int64),
            "lengths": np.array([len(w) for w in words], np.int32),
            "arena": np.frombuffer(b"".join(words), np.uint8).copy()}


def test_words_of_one_hash_are_left_out_and_named():
    """Two distinct words with one 64-bit hash (forced here) are left out; the same word from two ranges is
    merged."""
    a = _part([b"alpha", b"beta", b"gamma"], [5, 9, 9], [3, 2, 1])
    b = _part([b"alpha", b"delta", b"gamma"], [5, 7, 9], [4, 1, 6])
    merged, summary = merge_parts(a, b)
    assert merged["hashes"].tolist() == [5, 7]
    assert merged["counts"].tolist() == [7, 1]
    assert summary.collisions == [(9, ["beta", "gamma"])]
    assert summary.values.tolist() == [1, 7] and summary.sizes.tolist() == [1, 1]


def test_max_vocab_size_prunes_each_range(demo_slice):
    size = demo_slice.stat().st_size
    *parts, info = count_range(str(demo_slice), 0, size, ReadOptions(max_vocab_size=5000), 2)
    assert isinstance(info, RangeCount) and info.pruned > 0
    kept = sum(len(p["hashes"]) for p in parts)
    assert kept <= 5000 and kept == info.distinct - info.pruned
    # word2vec.c's rule: the words left are those above the last count cut.
    counts = np.concatenate([p["counts"] for p in parts])
    full = _one_process(demo_slice, ReadOptions(min_count=1))
    cut = int(counts.min()) - 1
    assert kept == int(np.sum(full.counts > cut))


class _RecordingRay:
    """The ``ray`` module, recording what the driver fetches."""

    def __init__(self, ray):
        self._ray = ray
        self.fetched: list = []

    def __getattr__(self, name):
        return getattr(self._ray, name)

    def get(self, refs, **kwargs):
        values = self._ray.get(refs, **kwargs)
        self.fetched.append(values)
        return values


def test_on_ray_the_vocabulary_is_the_one_process_one_and_the_driver_gets_small_tables(ray_session, demo_slice):
    options = ReadOptions(min_count=1)
    rec = _RecordingRay(ray_session)
    parts = count_vocabulary(rec, demo_slice, options, n_ranges=6, reducers=3)
    want = _one_process(demo_slice, options)
    assert parts.classes.n_words == len(want) > 30_000
    assert parts.raw_words == 500_000
    # What the driver received: each range's figures and each reducer's histogram, nothing per word.
    fetched = [v for batch in rec.fetched for v in batch]
    assert len(fetched) == 6 + 3 + 3  # the ranges' figures, the histograms, the reducers' numbers of kept words
    n_values = len(np.unique(want.counts))
    for v in fetched:
        if isinstance(v, (RangeCount, int)):
            continue
        assert isinstance(v, ReducerSummary) and len(v.values) <= n_values
    assert sum(len(pickle.dumps(v)) for v in fetched) < 20 * 3 * n_values + 300 * 6 + 4096
    assert parts.classes.nbytes() <= 16 * (n_values + 1)
    assert isinstance(parts.lookup, ray_session.ObjectRef)
    # The parts, gathered (in the test): the one-process vocabulary, ties by hash.
    words, counts = vocab_of_parts(ray_session, parts)
    _check_same_vocabulary(words, counts, want)
    # The lookup comes zero-copy from the object store and encodes as the one-process vocabulary does (ids
    # permuted: ties differ).
    lookup = ray_session.get(parts.lookup)
    assert not lookup.keys.flags.writeable
    to_new = np.asarray(lookup.lookup(hash_words(want.words)))
    out = demo_slice.parent / "hashed"
    sizes = encode_ranges(ray_session, demo_slice, options, parts.ranges, parts.lookup, out)
    assert [s[3] for s in sizes] == [c.fingerprint for c in parts.counted]  # the bytes counting read
    from python_encoder import python_encode_range

    for k, (a, b) in enumerate(parts.ranges):
        one_tokens, one_offsets, _ = python_encode_range(demo_slice, a, b, options, want)
        tokens = np.load(out / f"tokens_{k}.npy")
        assert sizes[k][0] == len(tokens)
        assert np.array_equal(tokens, to_new[one_tokens])
        assert np.array_equal(np.load(out / f"offsets_{k}.npy"), one_offsets)
    parts.close(ray_session)


def test_on_ray_a_vocabulary_no_word_reaches_is_refused(ray_session, tmp_path):
    from parvec.errors import ParvecError

    path = tmp_path / "c.txt"
    path.write_text("a b c a\n")
    with pytest.raises(ParvecError, match="no word reaches min_count=5 .the most frequent word occurs 2 times"):
        count_vocabulary(ray_session, path, ReadOptions(min_count=5), n_ranges=2, reducers=2)
