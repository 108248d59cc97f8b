"""The hashed word -> id lookup (parvec.wordhash) and encoding through it (parvec.corpus.hashencode), against the
byte tokeniser's hashes and the Python encoder's tokens on real text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from parvec.corpus import ReadOptions, byte_ranges, encode_sentences
from parvec.corpus.hashencode import encode_range
from parvec.corpus.readers import RangeSentences, TextSentences
from parvec.corpus.textscan import WordTable
from parvec.errors import ParvecError
from parvec.vocab import Vocab
from parvec.wordhash import WordLookup, fnv1a64, hash_words


def _vocab(path: Path, options: ReadOptions) -> Vocab:
    return encode_sentences(TextSentences(path, options), options, None, str(path)).vocab


def test_hashes_are_the_byte_tokenisers_fnv1a():
    words = ["the", "", "a", "naïve", "日本語", "x" * 300, "Straße"]
    table = WordTable()
    table.scan("\n".join(w for w in words if w).encode("utf-8"), insert=True)
    got = hash_words(words)
    assert [int(h) for h in got] == [fnv1a64(w) for w in words]
    by_word = dict(zip(table.words(), table.arrays()[0].tolist(), strict=True))
    assert all(by_word[w] == fnv1a64(w) for w in words if w)


def test_every_vocabulary_word_is_found_and_others_are_not(demo_slice):
    vocab = _vocab(demo_slice, ReadOptions(min_count=3))
    lookup = WordLookup.from_words(vocab.words)
    assert np.array_equal(lookup.lookup(hash_words(vocab.words)), np.arange(len(vocab)))
    dropped = _vocab(demo_slice, ReadOptions(min_count=1)).words[len(vocab):]
    assert len(dropped) > 1000
    assert np.all(lookup.lookup(hash_words(dropped)) == -1)
    assert np.all(lookup.keys[1:] > lookup.keys[:-1])
    # <= 16 bytes a word: 8 (key) + 4 (id) + the directory (at most one byte a word).
    assert lookup.nbytes / len(vocab) <= 13 + 8 / len(vocab)


def test_small_and_empty_lookups():
    empty = WordLookup.from_words([])
    assert empty.lookup(hash_words(["a"])).tolist() == [-1]
    one = WordLookup.from_words(["a"])
    assert one.lookup(hash_words(["a", "b"])).tolist() == [0, -1]
    # Keys in every bucket, the first and the last: the extreme hashes.
    keys = np.array([0, 1, 2**63, 2**64 - 2, 2**64 - 1], dtype=np.uint64)
    t = WordLookup.from_hashes(keys[::-1].copy(), np.arange(5, dtype=np.int32))
    assert t.lookup(keys).tolist() == [4, 3, 2, 1, 0]
    assert t.lookup(np.array([3, 2**64 - 3], dtype=np.uint64)).tolist() == [-1, -1]


def test_a_hash_collision_is_refused_naming_the_words():
    with pytest.raises(ParvecError, match="'b' and 'c' have the same 64-bit hash 0x7"):
        WordLookup.from_hashes(np.array([1, 7, 7], np.uint64), np.arange(3, dtype=np.int32), ["a", "b", "c"])
    with pytest.raises(ValueError, match="sorted and distinct"):
        WordLookup.from_sorted(np.array([2, 1], np.uint64), np.array([0, 1], np.int32))


def _python_encode(path: Path, a: int, b: int, options: ReadOptions, vocab: Vocab):
    from python_encoder import python_encode_range

    return python_encode_range(path, a, b, options, vocab)


@pytest.mark.parametrize("options", [ReadOptions(min_count=2), ReadOptions(min_count=1, max_sentence_length=37)])
def test_encoding_ranges_through_the_lookup_is_the_python_encoder(demo_slice, options):
    vocab = _vocab(demo_slice, options)
    lookup = WordLookup.from_words(vocab.words)
    for a, b in byte_ranges(demo_slice, 5):
        tokens, offsets, raw = encode_range(demo_slice, a, b, options, lookup)
        want = _python_encode(demo_slice, a, b, options, vocab)
        assert np.array_equal(tokens, want[0]) and np.array_equal(offsets, want[1]) and raw == want[2]


def test_encoding_odd_text_through_the_lookup(tmp_path):
    """NUL, CR, vertical tab, non-ASCII words and whitespace, lower-casing, empty lines, long lines."""
    text = ("The cat\x00sat\r\non the\x0bmat\n\n\nÉcole naïve\u00a0Straße x\u3000y\n"
            + " ".join(f"w{i % 7}" for i in range(50)) + "\nTHE END the end").encode("utf-8")
    path = tmp_path / "odd.txt"
    path.write_bytes(text)
    for options in (ReadOptions(min_count=1), ReadOptions(min_count=1, lowercase=True, max_sentence_length=4)):
        vocab = _vocab(path, options)
        lookup = WordLookup.from_words(vocab.words)
        for n in (1, 3):
            for a, b in byte_ranges(path, n):
                got = encode_range(path, a, b, options, lookup)
                want = _python_encode(path, a, b, options, vocab)
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]) and got[2] == want[2]
                assert list(RangeSentences(path, a, b, options))  # the range holds tokens


def test_a_range_without_vocabulary_words_encodes_to_nothing(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("a b\nc d\n")
    tokens, offsets, raw = encode_range(path, 0, path.stat().st_size, ReadOptions(), WordLookup.from_words(["z"]))
    assert tokens.tolist() == [] and offsets.tolist() == [0] and raw == 4
