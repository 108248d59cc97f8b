"""The one byte-range reader: the sharded pipeline's counting and encoding tasks and a replica
that encodes its share of the input read a byte range of a file with ``parvec.corpus.RangeSentences``, cut by
``parvec.corpus.range_cuts``/``byte_ranges`` at the whitespace the rest of the corpus code splits on (what
``str.split()`` and the byte tokeniser split on, and NUL): every token of the file once, none split, none glued
to its neighbour; a line is one sentence unless a range boundary cuts it."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import parvec.corpus.readers as readers_mod
from parvec.corpus import EncodedCorpus, RangeSentences, ReadOptions, TextSentences, byte_ranges, range_cuts
from parvec.errors import ParvecError

# Every byte that ends a token (str.split()'s ASCII whitespace and NUL), line breaks apart.
SEPARATORS = [b" ", b"\t", b"\x0b", b"\x0c", b"\r", b"\x1c", b"\x1d", b"\x1e", b"\x1f", b"\x00"]
OPTS = ReadOptions(min_count=1, max_sentence_length=7)


def _text(seed: int, lines: int = 60) -> bytes:
    rng = np.random.default_rng(seed)
    words = [w.encode() for w in ("cat", "dog", "wörd", "émigré", "x", "naïve", "ünïcode", "a")]
    out = []
    for _ in range(lines):
        n = int(rng.integers(0, 15))
        parts = []
        for _ in range(n):
            parts.append(words[rng.integers(len(words))])
            parts.append(SEPARATORS[rng.integers(len(SEPARATORS))] * int(rng.integers(1, 3)))
        out.append(b"".join(parts))
    return b"\n".join(out) + b"\n"


def _tokens(sentences) -> list[str]:
    return [w for s in sentences for w in s]


@pytest.mark.parametrize("seed", range(4))
def test_ranges_read_every_token_of_the_file_as_the_corpus_reader_does(tmp_path, seed):
    path = tmp_path / "c.txt"
    path.write_bytes(_text(seed))
    whole = list(TextSentences(path, OPTS))
    assert not any("\x00" in w or "\x1f" in w or "\r" in w for w in _tokens(whole))  # all of them split tokens
    assert [s for a, b in byte_ranges(path, 1) for s in RangeSentences(path, a, b, OPTS)] == whole
    for n in (2, 3, 5, 16, 200):
        ranges = byte_ranges(path, n)
        got = [list(RangeSentences(path, a, b, OPTS)) for a, b in ranges]
        assert _tokens(s for part in got for s in part) == _tokens(whole), n  # in order, none split or lost
        assert all(0 < len(s) <= 7 for part in got for s in part)
        data = path.read_bytes()
        assert all(data[a - 1 : a] in SEPARATORS + [b"\n"] for a, _ in ranges[1:])  # cut just after whitespace


def test_a_file_whose_only_whitespace_is_unit_separators_is_still_cut(tmp_path):
    """\\x1c-\\x1f split tokens in str.split() and in the byte tokeniser: they are cut points too."""
    path = tmp_path / "c.txt"
    path.write_bytes(b"\x1f".join(b"w%d" % i for i in range(2000)))
    ranges = byte_ranges(path, 4)
    assert len(ranges) == 4
    got = _tokens(s for a, b in ranges for s in RangeSentences(path, a, b, ReadOptions()))
    assert got == [f"w{i}" for i in range(2000)]


def test_range_cuts_give_every_rank_a_range_even_an_empty_one(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"aaaaaaaaaaaa bb")
    cuts = range_cuts(path, 4)
    assert len(cuts) == 5 and cuts[0] == 0 and cuts[-1] == path.stat().st_size
    assert cuts == sorted(cuts) and byte_ranges(path, 4) == [(0, 13), (13, 15)]


def test_invalid_utf8_in_a_range_names_the_file_and_the_byte(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"good words\nbad \xff here\n")
    with pytest.raises(ParvecError, match=r"c\.txt: invalid UTF-8 at byte 15 \(invalid start byte\)"):
        list(RangeSentences(path, 5, path.stat().st_size, ReadOptions()))
    assert _tokens(RangeSentences(path, 5, path.stat().st_size, ReadOptions(unicode_errors="replace"))) == [
        "words", "bad", "\ufffd", "here"]


def test_the_fingerprint_is_the_bytes_read_and_their_crc(tmp_path):
    import zlib

    path = tmp_path / "c.txt"
    path.write_bytes(b"one two\nthree four\n")
    reader = RangeSentences(path, 4, 19, ReadOptions())
    assert reader.fingerprint is None
    list(reader)
    assert reader.fingerprint == (15, zlib.crc32(b"two\nthree four\n"))


def test_blocks_are_cut_at_any_whitespace_byte(tmp_path, monkeypatch):
    """A file separated only by \\r (or \\v, \\f, \\x1c-\\x1f) is read in blocks cut there, not held whole as one
    'token' until the 256-block limit refuses it."""
    monkeypatch.setattr(readers_mod, "_BLOCK_BYTES", 16)
    path = tmp_path / "c.txt"
    words = [f"w{i % 50}" for i in range(3000)]
    path.write_bytes("\r".join(words).encode())  # 16 KB, more than 256 blocks of 16 bytes
    corpus = EncodedCorpus.from_file(path, ReadOptions(min_count=1))
    assert [corpus.vocab.words[t] for t in corpus.tokens] == words


# ---------------------------------------------------------------------- the cluster readers use it
def _replica_data(path: Path, vocab_file: Path, options: dict):
    from parvec.distributed.replica_actor import ReplicaData

    enc = EncodedCorpus.from_file(vocab_file, ReadOptions(**options))
    return ReplicaData(shares=(), tokens=enc.n_tokens, words=tuple(enc.vocab.words), counts=enc.vocab.counts,
                       read_options=ReadOptions(**options), source=str(path))


READ = {"min_count": 1, "max_vocab_size": None, "max_final_vocab": None, "max_sentence_length": 10000,
        "lowercase": False, "unicode_errors": "strict"}


@pytest.mark.parametrize("name", ["c.txt", "c.txt.GZ", "c.txt.gz"])
def test_replica_shares_hold_every_token_once(tmp_path, name):
    from parvec.config import TrainConfig
    from parvec.distributed.replica_actor import encode_share

    text = _text(7, lines=300)
    plain = tmp_path / "plain.txt"
    plain.write_bytes(text)
    path = tmp_path / name
    path.write_bytes(gzip.compress(text) if name.lower().endswith(".gz") else text)
    data = _replica_data(path, plain, READ)
    whole = EncodedCorpus.from_file(plain, ReadOptions(**READ))
    config = TrainConfig(threads=1)
    shares = [encode_share(rank, 3, config, data)[0] for rank in range(3)]
    assert np.array_equal(np.concatenate(shares), whole.tokens)
    assert all(len(s) > 0 for s in shares)


def test_replica_range_with_invalid_utf8_stops_with_the_readers_error(tmp_path):
    """Neither a traceback nor an empty share: the reader's error, naming the file and the byte."""
    from parvec.config import TrainConfig
    from parvec.distributed.replica_actor import encode_share

    clean = tmp_path / "clean.txt"
    clean.write_bytes(b"alpha beta gamma\n" * 20)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"alpha beta gamma\n" * 3 + b"alpha \xff gamma\n" + b"alpha beta gamma\n" * 16)
    data = _replica_data(bad, clean, READ)
    with pytest.raises(ParvecError, match=r"bad\.txt: invalid UTF-8 at byte 57"):
        encode_share(0, 2, TrainConfig(threads=1), data)
