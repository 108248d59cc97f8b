"""Property-based fuzzing of the corpus text reader: :meth:`EncodedCorpus.from_file` on arbitrary
bytes -- invalid UTF-8 under every ``unicode_errors`` mode, NULs, CR/LF mixes, other Unicode whitespace, huge
lines, empty files -- plain and compressed (truncated or corrupted archives included), in memory and streamed
to disk, with tiny read blocks so every block boundary is exercised.

The only acceptable outcomes: exactly what a simple reference reader gives (decode the whole file, NUL as
space, one sentence per ``\\n`` line, ``str.split()`` tokens, pieces of ``max_sentence_length``), or a
:class:`ParvecError`, and then only where the reference says the input is bad.  Settings: tests/fuzzing.py
(``PARVEC_FUZZ_EXAMPLES`` for a long run).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import zlib
from collections import Counter

import numpy as np
import pytest
from fuzzing import fuzz_settings, no_hang
from hypothesis import given
from hypothesis import strategies as st

import parvec.corpus.encode as encode_mod
import parvec.corpus.readers as readers_mod
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.errors import ParvecError

PIECES = st.one_of(
    st.sampled_from([b"the", b"cat", b"Cat", b"\xc3\xa9t\xc3\xa9", b"\xe6\x97\xa5", b"a" * 40]),
    st.sampled_from([b" ", b"  ", b"\n", b"\r\n", b"\r", b"\t", b"\x00", b"\x0b", b"\x0c", b"\x1c", b"\x85",
                     b"\xc2\x85", b"\xe2\x80\xa8", b"\xe3\x80\x80", b"\xef\xbb\xbf"]),
    st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"]),
    st.binary(max_size=6),
    st.builds(lambda w, n: w * n, st.sampled_from([b"x", b"ab ", b"\xc3\xa9"]), st.integers(0, 400)),
)
TEXTS = st.lists(PIECES, max_size=40).map(b"".join)


def reference(data: bytes, options: ReadOptions) -> list[list[str]] | str:
    """The sentences a simple whole-file reader gives, or the kind of error expected ("decode", "empty")."""
    if not data:
        return "empty"
    try:
        text = data.replace(b"\x00", b" ").decode("utf-8", errors=options.unicode_errors)
    except UnicodeDecodeError:
        return "decode"
    if options.lowercase:
        text = text.lower()
    sentences = []
    for line in text.split("\n"):
        words = line.split()
        sentences += [words[i : i + options.max_sentence_length]
                      for i in range(0, len(words), options.max_sentence_length)]
    return sentences


def expected_corpus(sentences: list[list[str]], min_count: int) -> tuple[list[str], list[list[str]]] | str:
    counts = Counter(w for s in sentences for w in s)
    if not counts:
        return "no words"
    kept = [w for w in counts if counts[w] >= min_count]  # first-seen order
    if not kept:
        return "min_count"
    kept.sort(key=lambda w: -counts[w])
    keep = set(kept)
    encoded = [[w for w in s if w in keep] for s in sentences]
    return kept, [s for s in encoded if s]


OPTIONS = st.builds(
    ReadOptions,
    min_count=st.sampled_from([1, 1, 2]),
    max_sentence_length=st.sampled_from([1, 3, 10000]),
    lowercase=st.booleans(),
    unicode_errors=st.sampled_from(["strict", "replace", "ignore"]),
)
COMPRESSORS = {".txt": None, ".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


def check(got_or_error, data: bytes, options: ReadOptions) -> None:
    ref = reference(data, options)
    expected = ref if isinstance(ref, str) else expected_corpus(ref, options.min_count)
    if isinstance(got_or_error, ParvecError):
        message = str(got_or_error)
        assert isinstance(expected, str), f"unexpected error {message!r}"
        assert {"empty": "empty", "decode": "invalid UTF-8", "no words": "no words",
                "min_count": "min_count"}[expected] in message, message
        return
    assert not isinstance(expected, str), f"read a file the reference refuses ({expected})"
    words, sentences = expected
    got = got_or_error
    assert got.vocab.words == words
    assert list(got.sentences()) == sentences
    assert got.raw_words == sum(len(s) for s in ref)
    assert got.offsets[0] == 0 and got.offsets[-1] == len(got.tokens)


def read(path, options: ReadOptions, cache_dir=None):
    try:
        with no_hang():
            return EncodedCorpus.from_file(path, options, cache_dir=cache_dir)
    except ParvecError as exc:
        return exc


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(encode_mod, "_ENCODE_BLOCK", 5)


@fuzz_settings(120)
@given(data=TEXTS, options=OPTIONS, block=st.sampled_from([8, 16, 1 << 20]), streamed=st.booleans(),
       cached=st.booleans())
def test_text_reads_like_the_reference(tmp_path_factory, tiny_blocks, data, options, block, streamed, cached):
    d = tmp_path_factory.mktemp("c")
    p = d / "c.txt"
    p.write_bytes(data)
    saved = readers_mod._BLOCK_BYTES, encode_mod._SPILL_TOKENS
    readers_mod._BLOCK_BYTES, encode_mod._SPILL_TOKENS = block, (1 if streamed else 1 << 62)
    try:
        got = read(p, options, d / "cache" if cached else None)
        if isinstance(got, ParvecError) and "longer than" in str(got):
            runs = data.replace(b"\x00", b" ").replace(b"\n", b" ").replace(b"\t", b" ").split(b" ")
            assert max(map(len, runs)) > 255 * block, got  # only a real giant token is refused
            return
        check(got, data, options)
        if cached and not isinstance(got, ParvecError):
            check(read(p, options, d / "cache"), data, options)  # read back from the cache entry
    finally:
        readers_mod._BLOCK_BYTES, encode_mod._SPILL_TOKENS = saved


def decompress(suffix: str, blob: bytes) -> bytes | None:
    """What Python's own decompressor makes of ``blob`` (None: it refuses it)."""
    try:
        if suffix == ".gz":
            return gzip.decompress(blob)
        if suffix == ".bz2":
            return bz2.decompress(blob)
        return lzma.decompress(blob)
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError):
        return None


@fuzz_settings(80)
@given(data=TEXTS.filter(bool), suffix=st.sampled_from([".gz", ".bz2", ".xz"]), options=OPTIONS,
       cut=st.floats(0, 1), flips=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), max_size=2),
       mutate=st.booleans())
def test_compressed_inputs_truncated_or_corrupted(tmp_path_factory, data, suffix, options, cut, flips, mutate):
    blob = bytearray(COMPRESSORS[suffix](data))
    if mutate:
        for where, xor in flips:
            blob[int(where * (len(blob) - 1))] ^= xor
        blob = blob[: max(1, int(cut * len(blob)))] if cut < 0.9 else blob
    p = tmp_path_factory.mktemp("z") / f"c.txt{suffix}"
    p.write_bytes(bytes(blob))
    got = read(p, options)
    plain = decompress(suffix, bytes(blob))
    if plain is None:
        assert isinstance(got, ParvecError), "a damaged archive was read without an error"
        return
    check(got, plain, options)


@fuzz_settings(40)
@given(parts=st.lists(TEXTS, min_size=1, max_size=4), options=OPTIONS)
def test_several_files_read_like_their_concatenation(tmp_path_factory, parts, options):
    d = tmp_path_factory.mktemp("m")
    paths = []
    for i, data in enumerate(parts):
        paths.append(d / f"p{i}.txt")
        paths[-1].write_bytes(data)
    got = read(paths, options)
    nonempty = [data for data in parts if data]
    if not nonempty:
        assert isinstance(got, ParvecError)
        return
    # Each file ends its last line, as if it ended with a newline.
    joined = b"".join(data if data.endswith(b"\n") else data + b"\n" for data in parts)
    if any(reference(data, options) == "decode" for data in parts):
        assert isinstance(got, ParvecError) and "invalid UTF-8" in str(got)
        return
    check(got, joined, options)


def test_regression_empty_and_whitespace_only_files():
    # Kept as plain cases of the properties above (no crash was found in them).
    for data, kind in ((b"", "empty"), (b" \r\n\x00\t", "no words")):
        assert reference(data, ReadOptions()) == kind or expected_corpus(reference(data, ReadOptions()), 1) == kind


def test_reference_helpers_agree_on_a_plain_file(tmp_path):
    p = tmp_path / "c.txt"
    p.write_bytes(b"a b\r\nb\x00c\n\n")
    got = EncodedCorpus.from_file(p, ReadOptions(min_count=1))
    check(got, p.read_bytes(), ReadOptions(min_count=1))
    assert np.asarray(got.tokens).tolist() == [1, 0, 0, 2]  # b (2), a, c: b first by count
