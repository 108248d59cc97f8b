"""The byte tokeniser (parvec.kernels.wordtable, parvec.corpus.textscan): kernels against Python references on tiny
inputs, and files encoded on bytes against the same files encoded from Python's str.split()."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parvec.corpus.readers as readers_mod
from parvec.corpus import EncodedCorpus, ReadOptions, TextSentences, count_text, encode_sentences
from parvec.corpus.textscan import WordTable, normalise
from parvec.errors import ParvecError
from parvec.kernels.wordtable import piece_lengths
from parvec.vocab import Vocab, count_words


def python_scan(text: bytes) -> tuple[list[str], list[int]]:
    """Tokens in order and tokens per line, as the reader in Python splits them."""
    tokens, segs = [], []
    for line in text.decode("utf-8").split("\n"):
        words = line.split()
        tokens += words
        segs.append(len(words))
    return tokens, segs


def test_scan_gives_first_seen_ids_counts_and_line_lengths_as_str_split():
    text = b"the cat\tsat\x0bon the\x0c mat\r\n\nthe\x1cend\x1d \x1e\x1fcat\n  "
    t = WordTable()
    ids, segs = t.scan(text, insert=True)
    tokens, want_segs = python_scan(text)
    first_seen = list(dict.fromkeys(tokens))
    assert t.words() == first_seen
    assert [first_seen[i] for i in ids] == tokens
    assert segs.tolist() == want_segs == [6, 0, 3, 0]
    assert t.counts().tolist() == [tokens.count(w) for w in first_seen]
    # lookup only: known words keep their ids, an unknown word is -1 and nothing is added or counted
    ids2, segs2 = t.scan(b"mat dog the", insert=False)
    assert ids2.tolist() == [first_seen.index("mat"), -1, 0] and segs2.tolist() == [3]
    assert len(t) == len(first_seen) and t.counts().tolist() == [tokens.count(w) for w in first_seen]


def test_the_table_grows_many_times_and_keeps_every_word():
    rng = np.random.default_rng(0)
    words = [f"w{i}" * int(rng.integers(1, 4)) for i in range(5000)] + ["x" * 300_000]  # a giant word too
    stream = [words[i] for i in rng.integers(0, len(words), 40_000)] + ["x" * 300_000]
    t = WordTable(capacity=1)
    ids, _ = t.scan(" ".join(stream).encode(), insert=True)
    first_seen = list(dict.fromkeys(stream))
    assert t.words() == first_seen
    assert [first_seen[i] for i in ids] == stream
    counts = dict.fromkeys(first_seen, 0)
    for w in stream:
        counts[w] += 1
    assert t.counts().tolist() == list(counts.values())


def test_of_words_leaves_out_words_no_file_can_hold():
    t, to_index = WordTable.of_words(["a", "b c", "", "d\u00a0e", "\ud800", "f"])
    assert t.words() == ["a", "f"] and to_index.tolist() == [0, 5]
    assert t.counts().tolist() == [0, 0]


@given(st.lists(st.integers(0, 30), max_size=12), st.integers(0, 9), st.integers(1, 7))
def test_piece_lengths_cut_lines_as_the_python_reader(segs, carry, max_len):
    carry = min(carry, max_len - 1)
    segs = segs or [0]
    out = np.zeros(len(segs) + (carry + sum(segs)) // max_len + 1, dtype=np.int64)
    n, left = piece_lengths(np.asarray(segs, dtype=np.int64), len(segs), carry, max_len, out)
    want = []
    current = carry
    for i, s in enumerate(segs):
        current += s
        if i < len(segs) - 1:
            want += [max_len] * (current // max_len) + ([current % max_len] if current % max_len else [])
            current = 0
        else:
            want += [max_len] * (current // max_len)
            current %= max_len
    assert out[:n].tolist() == want and left == current


@pytest.mark.parametrize("block", [
    b"plain ascii\twords\n",
    "caf\u00e9 na\u00efve \u65e5\u672c\n".encode(),
    "a\u00a0b\u2003c\u3000d\u0085e\u2028f\n".encode(),  # Unicode whitespace
    "\u0130stanbul \u00c9T\u00c9 ABC\n".encode(),  # lower-casing beyond ASCII
])
@pytest.mark.parametrize("lowercase", [False, True])
def test_normalise_splits_as_str_split(block, lowercase):
    out = normalise(block, lowercase, lambda b: b.decode("utf-8"))
    text = block.decode("utf-8")
    lines = [(line.lower() if lowercase else line).split() for line in text.split("\n")]
    assert python_scan(out) == ([w for line in lines for w in line], [len(line) for line in lines])


def test_normalise_invalid_utf8_uses_the_readers_decoder():
    bad = b"ok \xff\xfe bad\n"
    replace = normalise(bad, False, lambda b: b.decode("utf-8", "replace"))
    assert python_scan(replace)[0] == ["ok", "\ufffd\ufffd", "bad"]

    def strict(b: bytes) -> str:
        raise ParvecError("f.txt:1: invalid UTF-8")

    with pytest.raises(ParvecError, match="f.txt:1"):
        normalise(bad, False, strict)


def encode_both(paths, options: ReadOptions, vocab: Vocab | None = None):
    """The corpus encoded on bytes, and from the Python reader's token lists (the reference)."""
    fast = encode_sentences(TextSentences(paths, options), options, vocab, source="x")
    slow = encode_sentences(list(TextSentences(paths, options)), options, vocab, source="x")
    return fast, slow


def assert_same(a: EncodedCorpus, b: EncodedCorpus) -> None:
    assert a.vocab.words == b.vocab.words
    np.testing.assert_array_equal(a.vocab.counts, b.vocab.counts)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    assert a.raw_words == b.raw_words


TEXT = (
    "The quick brown fox jumps over the lazy dog\n"
    "the DOG sleeps\t\tand the fox runs\r\n"
    "\n"
    "caf\u00e9 Caf\u00e9 CAF\u00c9 na\u00efve \u65e5\u672c\u8a9e the the\n"
    "no\u00a0break\u2003em\u3000ideographic fox dog\n"
    "x\x00y fox \x1cdog\n"
    "last line without newline the fox"
)


@pytest.mark.parametrize("block_bytes", [7, 64, 1 << 20])
@pytest.mark.parametrize("options", [
    ReadOptions(min_count=1),
    ReadOptions(min_count=2, lowercase=True),
    ReadOptions(min_count=1, max_sentence_length=3),
    ReadOptions(min_count=1, max_final_vocab=4),
])
def test_files_encode_on_bytes_as_from_str_split(tmp_path, monkeypatch, block_bytes, options):
    monkeypatch.setattr(readers_mod, "_BLOCK_BYTES", block_bytes)
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(TEXT, encoding="utf-8")
    b.write_text("fox dog\nfox " * 5, encoding="utf-8")
    for paths in (a, [a, b]):
        fast, slow = encode_both(paths, options)
        assert_same(fast, slow)
    assert "fox" in fast.vocab.index


@pytest.mark.parametrize("errors", ["replace", "ignore"])
def test_invalid_utf8_encodes_on_bytes_as_from_str_split(tmp_path, errors):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"good words \xff here\n\xc3\xa9t\xc3 \xe2\x82 good\n" * 3)
    assert_same(*encode_both(p, ReadOptions(min_count=1, unicode_errors=errors)))
    with pytest.raises(ParvecError, match=r"bad.txt:1: invalid UTF-8"):
        EncodedCorpus.from_file(p, ReadOptions(min_count=1))


def test_a_given_vocabulary_encodes_on_bytes_as_from_str_split(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text(TEXT, encoding="utf-8")
    vocab = Vocab(["fox", "the", "a b", "dog", "\ud800", "caf\u00e9"], np.array([9, 8, 7, 6, 5, 4]))
    fast, slow = encode_both(p, ReadOptions(min_count=1), vocab)
    assert_same(fast, slow)
    assert set(fast.tokens.tolist()) == {0, 1, 3, 5}


def test_pruning_falls_back_to_word2vec_c_counting(tmp_path):
    p = tmp_path / "t.txt"
    words = [f"w{i}" for i in range(50) for _ in range(i + 1)]  # w_i occurs i + 1 times
    np.random.default_rng(0).shuffle(words)
    p.write_text(" ".join(words) + "\nrare1 rare2 rare3\n", encoding="utf-8")
    opts = ReadOptions(min_count=1, max_vocab_size=20)
    assert count_text(TextSentences(p, opts)) is None  # 53 distinct words > 20: pruning needed
    fast, slow = encode_both(p, opts)
    assert_same(fast, slow)
    assert fast.pruning is not None and fast.pruning == slow.pruning
    assert len(fast.vocab) <= 20 and fast.vocab.words[0] == "w49"
    unpruned = count_text(TextSentences(p, ReadOptions(min_count=1)))
    assert unpruned is not None
    counter, table = unpruned
    reference = count_words(TextSentences(p, ReadOptions(min_count=1)))
    assert counter.counts == reference.counts and list(counter.counts) == list(reference.counts)
    assert counter.raw_words == reference.raw_words == 1278 and len(table) == 53


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.sampled_from(["a", "B", "\u00e9", "\u00c9", "x\u00a0y", "z\x00", "\t", " ", "\r",
                                           "\u3000", "\u0130", "w\u2028"]), max_size=8), max_size=8),
       st.booleans(), st.integers(1, 4), st.sampled_from([5, 16, 1 << 20]))
def test_property_bytes_and_str_split_agree(tmp_path_factory, lines, lowercase, max_len, block_bytes):
    p = tmp_path_factory.mktemp("prop") / "t.txt"
    p.write_text("\n".join("".join(line) for line in lines), encoding="utf-8")
    opts = ReadOptions(min_count=1, lowercase=lowercase, max_sentence_length=max_len)
    old = readers_mod._BLOCK_BYTES
    readers_mod._BLOCK_BYTES = block_bytes
    try:
        try:
            slow = encode_sentences(list(TextSentences(p, opts)), opts, None, source="x")
        except ParvecError as exc:  # an empty file, or no words: the same error from bytes
            with pytest.raises(ParvecError) as fast_exc:
                encode_sentences(TextSentences(p, opts), opts, None, source="x")
            assert str(fast_exc.value).split(":")[-1] == str(exc).split(":")[-1]
            return
        assert_same(encode_sentences(TextSentences(p, opts), opts, None, source="x"), slow)
    finally:
        readers_mod._BLOCK_BYTES = old
