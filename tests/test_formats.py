"""word2vec text/binary formats, .npy + vocabulary, atomic writes and their error messages."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from parvec import fileio, formats
from parvec.errors import ParvecError
from parvec.fileio import atomic_output
from parvec.formats import detect_binary, load_npy, read_word2vec, save_npy, write_word2vec


@pytest.fixture
def sample() -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((50, 13)).astype(np.float32)
    vectors[0] = [0.1] * 13  # values with no short exact decimal form
    vectors[1, :3] = [1e-30, -3.4e38, 0.0]
    words = ["the", "naïve", "東京", "über", "a\xa0b"] + [f"w{i}" for i in range(45)]
    return vectors, words


def _bin_entry(word: str, vec: np.ndarray, newline: bool) -> bytes:
    return word.encode() + b" " + vec.astype("<f4").tobytes() + (b"\n" if newline else b"")


def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# ---------------------------------------------------------------------- round trips and layout
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".xz"])
def test_round_trip_is_exact(tmp_path, sample, binary, suffix):
    vectors, words = sample
    path = tmp_path / f"vec{'.bin' if binary else '.txt'}{suffix}"
    write_word2vec(path, vectors, words, binary=binary)
    got, got_words = read_word2vec(path, binary=binary)
    assert got_words == words
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, vectors)
    got2, _ = read_word2vec(path, binary=None)  # detected
    np.testing.assert_array_equal(got2, vectors)
    assert detect_binary(path) is binary
    assert _listing(tmp_path) == [path.name]  # no temp file left behind


@pytest.mark.parametrize(
    ("suffix", "magic", "opener"),
    [(".gz", b"\x1f\x8b", gzip.open), (".bz2", b"BZh", bz2.open), (".xz", b"\xfd7zXZ", lzma.open)],
)
def test_compressed_output_is_really_compressed(tmp_path, sample, suffix, magic, opener):
    vectors, words = sample
    path = tmp_path / f"vec.txt{suffix}"
    write_word2vec(path, vectors, words)
    assert path.read_bytes().startswith(magic)
    with opener(path, "rb") as f:
        assert f.readline() == b"50 13\n"


def test_text_layout_matches_word2vec_c(tmp_path):
    path = tmp_path / "v.txt"
    write_word2vec(path, np.array([[0.5, -0.25], [1.0, 0.1]], dtype=np.float32), ["a", "b"])
    assert path.read_bytes() == b"2 2\na 0.5 -0.25 \nb 1 0.100000001 \n"


def test_binary_layout_matches_word2vec_c(tmp_path):
    v = np.array([[0.5, -0.25], [1.0, 2.0]], dtype=np.float32)
    path = tmp_path / "v.bin"
    write_word2vec(path, v, ["a", "bé"], binary=True)
    expected = b"2 2\n" + _bin_entry("a", v[0], True) + _bin_entry("bé", v[1], True)
    assert path.read_bytes() == expected


def test_write_header_false(tmp_path):
    path = tmp_path / "v.txt"
    write_word2vec(path, np.ones((1, 2), dtype=np.float32), ["a"], write_header=False)
    assert path.read_bytes() == b"a 1 1 \n"


@pytest.mark.parametrize("newline", [True, False])
def test_reads_both_binary_variants(tmp_path, newline):
    rng = np.random.default_rng(1)
    v = rng.standard_normal((4, 5)).astype(np.float32)
    v[2, 0] = np.frombuffer(b"\n\n \n", dtype="<f4")[0]  # vector bytes holding newlines and spaces
    words = ["x", "yy", "zzz", "\u00e9t\u00e9"]
    body = b"".join(_bin_entry(w, row, newline) for w, row in zip(words, v, strict=True))
    path = tmp_path / "v.bin"
    path.write_bytes(b"4 5\n" + body)
    got, got_words = read_word2vec(path, binary=True)
    assert got_words == words
    np.testing.assert_array_equal(got, v)
    assert detect_binary(path)


def test_reads_text_without_trailing_space_and_with_crlf(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"2 3\r\na 1 2 3\r\nb  4\t5 6   \n")
    got, words = read_word2vec(path)
    assert words == ["a", "b"]
    np.testing.assert_array_equal(got, [[1, 2, 3], [4, 5, 6]])


@pytest.mark.parametrize("binary", [False, True])
def test_limit_and_datatype(tmp_path, sample, binary):
    vectors, words = sample
    path = tmp_path / "v"
    write_word2vec(path, vectors, words, binary=binary)
    got, got_words = read_word2vec(path, binary=binary, limit=7, datatype=np.float64)
    assert got_words == words[:7]
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, vectors[:7])
    got0, w0 = read_word2vec(path, binary=binary, limit=0)
    assert got0.shape == (0, 13) and w0 == []


def test_zero_vectors_file(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"0 4\n")
    got, words = read_word2vec(path)
    assert got.shape == (0, 4) and words == []


def test_duplicate_words_keep_the_first(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"3 1\na 1 \nb 2 \na 3 \n")
    got, words = read_word2vec(path)
    assert words == ["a", "b"]
    np.testing.assert_array_equal(got[:, 0], [1, 2])


# ---------------------------------------------------------------------- unicode
def test_invalid_utf8_text(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"2 2\ngood 1 2 \nb\xffd 3 4 \n")
    with pytest.raises(ParvecError) as exc:
        read_word2vec(path)
    msg = str(exc.value)
    assert str(path) in msg and ":3:" in msg and "--unicode-errors replace" in msg
    _, words = read_word2vec(path, unicode_errors="replace")
    assert words == ["good", "b\ufffdd"]
    _, words = read_word2vec(path, unicode_errors="ignore")
    assert words == ["good", "bd"]


def test_invalid_utf8_binary_names_the_vector(tmp_path):
    v = np.ones(2, dtype=np.float32)
    path = tmp_path / "v.bin"
    path.write_bytes(b"2 2\n" + _bin_entry("ok", v, True) + b"tr\xe6" + b" " + v.tobytes() + b"\n")
    with pytest.raises(ParvecError) as exc:
        read_word2vec(path, binary=True)
    msg = str(exc.value)
    assert str(path) in msg and "vector 2" in msg and "--unicode-errors replace" in msg
    _, words = read_word2vec(path, binary=True, unicode_errors="replace")
    assert words == ["ok", "tr\ufffd"]


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "empty"),
        (b"hello world\n", ":1: malformed header"),
        (b"3\nfoo 1 2 3\n", ":1: malformed header"),
        (b"3 x\n", ":1: malformed header"),
        (b"2 3 4\n", ":1: malformed header"),
        (b"-1 3\n", ":1: malformed header"),
        (b"2 0\n", ":1: malformed header"),
        (b"3 2\na 1 2 \nb 3 4 \n", ":4: truncated file: the header promises 3 vectors but only 2"),
        (b"2 3\na 1 2 3 \nb 4 5 \n", ":3: dimension mismatch: 2 values, but the header says 3"),
        (b"2 3\na 1 2 3 \nb 4 5 6 7 \n", ":3: dimension mismatch: 4 values"),
        (b"2 3\na 1 2 3 \nb 4 five 6 \n", ":3: non-numeric value 'five'"),
        (b"2 3\na 1 2 3 \nb 4 5 6x \n", ":3: non-numeric value '6x'"),
        (b"2 3\na 1 2 3 \n\nb 4 5 6 \n", ":3: dimension mismatch: 0 values"),
    ],
)
def test_text_errors_name_file_and_line(tmp_path, content, fragment):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(ParvecError) as exc:
        read_word2vec(path)
    assert str(path) in str(exc.value)
    assert fragment in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(ParvecError, match="no such file") as exc:
        read_word2vec(tmp_path / "nope.txt")
    assert "nope.txt" in str(exc.value)


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(ParvecError, match="is a directory"):
        read_word2vec(tmp_path)


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "v.txt.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(ParvecError, match="cannot read") as exc:
        read_word2vec(path)
    assert str(path) in str(exc.value)


def test_binary_truncated_vector(tmp_path):
    v = np.arange(4, dtype=np.float32)
    path = tmp_path / "v.bin"
    path.write_bytes(b"2 4\n" + _bin_entry("a", v, True) + b"b " + v.tobytes()[:10])
    with pytest.raises(ParvecError) as exc:
        read_word2vec(path, binary=True)
    msg = str(exc.value)
    assert str(path) in msg and "vector 2" in msg and "truncated vector: expected 16 bytes, found 10" in msg


def test_binary_fewer_vectors_than_header(tmp_path):
    v = np.arange(4, dtype=np.float32)
    path = tmp_path / "v.bin"
    path.write_bytes(b"3 4\n" + _bin_entry("a", v, True) + _bin_entry("b", v, True))
    with pytest.raises(ParvecError) as exc:
        read_word2vec(path, binary=True)
    msg = str(exc.value)
    assert str(path) in msg and "vector 3" in msg and "promises 3 vectors but only 2" in msg


def test_binary_word_without_vector(tmp_path):
    v = np.arange(4, dtype=np.float32)
    path = tmp_path / "v.bin"
    path.write_bytes(b"2 4\n" + _bin_entry("a", v, True) + b"orphan")
    with pytest.raises(ParvecError, match="vector 2.*a word without its vector"):
        read_word2vec(path, binary=True)


def test_wrong_layout_is_reported(tmp_path, sample):
    vectors, words = sample
    txt, bin_ = tmp_path / "v.txt", tmp_path / "v.bin"
    write_word2vec(txt, vectors, words)
    write_word2vec(bin_, vectors, words, binary=True)
    with pytest.raises(ParvecError, match="looks like a text word2vec file"):
        read_word2vec(txt, binary=True)
    with pytest.raises(ParvecError, match=r"v\.bin:2: .*binary=True / --binary"):
        read_word2vec(bin_, binary=False)


def test_bad_options(tmp_path, sample):
    vectors, words = sample
    write_word2vec(tmp_path / "v.txt", vectors, words)
    with pytest.raises(ParvecError, match="unicode_errors"):
        read_word2vec(tmp_path / "v.txt", unicode_errors="bogus")
    with pytest.raises(ParvecError, match="limit"):
        read_word2vec(tmp_path / "v.txt", limit=-1)


@pytest.mark.parametrize("bad", ["two words", "new\nline", ""])
def test_unwritable_keys(tmp_path, bad):
    with pytest.raises(ParvecError, match="cannot be written"):
        write_word2vec(tmp_path / "v.txt", np.ones((2, 2), dtype=np.float32), ["ok", bad])
    assert _listing(tmp_path) == []


# ---------------------------------------------------------------------- layout detection and header checks
def test_text_with_a_wrong_header_dimension_is_text(tmp_path, sample):
    vectors, words = sample
    path = tmp_path / "v.txt"
    write_word2vec(path, vectors, words)
    for dim in (12, 14, 4, 1000):
        path.write_bytes(f"50 {dim}".encode() + path.read_bytes()[path.read_bytes().index(b"\n") :])
        assert not detect_binary(path)
        with pytest.raises(ParvecError, match=rf"v\.txt:2: dimension mismatch: 13 values, but the header says {dim}$"):
            read_word2vec(path, binary=None)


def test_binary_whose_first_vector_spells_a_number_is_binary(tmp_path):
    # "w 1\n" is a text row, but the line ends inside the first vector and the rest is not text.
    v = np.frombuffer(b"1\n\x00\x80" + b"\x01\x02\x03\xbf", dtype="<f4").reshape(1, 2)
    v = np.vstack([v, [[0.5, -2.0]]]).astype(np.float32)
    path = tmp_path / "v.bin"
    write_word2vec(path, v, ["w", "x"], binary=True)
    assert path.read_bytes().startswith(b"2 2\nw 1\n")
    assert detect_binary(path)
    got, words = read_word2vec(path, binary=None)
    assert words == ["w", "x"]
    np.testing.assert_array_equal(got.view(np.uint32), v.view(np.uint32))


def test_tiny_malformed_text_that_parses_as_binary_is_still_text(tmp_path):
    # "b five" is also word "b" + the 4 bytes of one float32 + newline: a whole valid binary file.  Its bytes
    # are all text, so it is (malformed) text: an error naming line 2, never the float 'five'.
    path = tmp_path / "v.txt"
    path.write_bytes(b"1 1\nb five\n")
    assert not detect_binary(path)
    with pytest.raises(ParvecError, match=r"v\.txt:2: non-numeric value 'five'"):
        read_word2vec(path, binary=None)
    with pytest.raises(ParvecError, match=r"v\.txt:2: this looks like a text word2vec file .*--text"):
        read_word2vec(path, binary=True)  # not even when asked: text bytes read as floats are garbage


def test_binary_rows_keep_one_layout(tmp_path):
    v = np.arange(4, dtype=np.float32)
    path = tmp_path / "v.bin"
    path.write_bytes(b"3 4\n" + _bin_entry("a", v, True) + _bin_entry("b", v, False) + _bin_entry("c", v, True))
    start = 4 + len(_bin_entry("a", v, True)) + len(_bin_entry("b", v, False))
    with pytest.raises(ParvecError, match=rf"vector 3 at byte {start}: no newline after the previous vector"):
        read_word2vec(path, binary=True)
    path.write_bytes(b"3 4\n" + _bin_entry("a", v, False) + _bin_entry("b", v, False) + _bin_entry("\nc", v, False))
    with pytest.raises(ParvecError, match="vector 3 at byte 40: a newline after the previous vector, unlike"):
        read_word2vec(path, binary=True)  # gensim's layout (no newlines), then one
    path.write_bytes(b"2 4\n" + _bin_entry("a", v, False) + _bin_entry(" b", v, False))
    with pytest.raises(ParvecError, match="vector 2 at byte 22: an empty word"):
        read_word2vec(path, binary=True)


@pytest.mark.parametrize("binary", [False, True])
def test_only_whitespace_may_follow_the_vectors(tmp_path, sample, binary):
    vectors, words = sample
    path = tmp_path / "v"
    write_word2vec(path, vectors, words, binary=binary)
    path.write_bytes(path.read_bytes() + b"\n \r\n\n")
    got, got_words = read_word2vec(path, binary=binary)
    assert got_words == words
    np.testing.assert_array_equal(got, vectors)
    size = path.stat().st_size
    path.write_bytes(path.read_bytes() + b"extra")
    where = ":55: the header promises 50 vectors, but more lines follow" if not binary else f"byte {size}: data after"
    with pytest.raises(ParvecError, match=where):
        read_word2vec(path, binary=binary)
    got, _ = read_word2vec(path, binary=binary, limit=49)  # a limit below the count reads no further
    np.testing.assert_array_equal(got, vectors[:49])


@pytest.mark.parametrize("binary", [False, True])
def test_huge_header_numbers_fail_on_the_data_not_on_memory(tmp_path, binary):
    v = np.ones((2, 3), dtype=np.float32)
    path = tmp_path / "v"
    write_word2vec(path, v, ["a", "b"], binary=binary)
    body = path.read_bytes()[4:]
    path.write_bytes(b"999999999999 3\n" + body)
    with pytest.raises(ParvecError, match="the header promises 999999999999 vectors but only 2 follow"):
        read_word2vec(path, binary=binary)
    path.write_bytes(b"2 99999999999\n" + body)
    fragment = "truncated vector: expected 399999999996 bytes" if binary else ":2: dimension mismatch: 3 values"
    with pytest.raises(ParvecError, match=fragment):
        read_word2vec(path, binary=binary)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"2 2\n a 1 \nb 2 3 \n", ":2: the line starts with a space"),
        (b"2 2\na 1 2 \nb 3 4", ":3: the last line ends without a newline"),
        (b"2 2\na 1 2 \nb 3", ":3: dimension mismatch: 1 values, but the header says 2 \\(the file ends on this line"),
        (b"1 2\na 1 2 \n\n\nb 3 4 \n", ":5: the header promises 1 vectors, but more lines follow \\('b 3 4'\\)"),
    ],
)
def test_more_text_errors(tmp_path, content, fragment):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(ParvecError, match=fragment):
        read_word2vec(path, binary=None)


def test_last_line_with_trailing_space_but_no_newline_is_complete(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"2 2\na 1 2 \nb 3 4 ")  # word2vec.c's trailing space: the last value is whole
    assert read_word2vec(path)[0].tolist() == [[1, 2], [3, 4]]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (gzip.compress(b"1 2\na 1 2 \n", mtime=0), "gzip-compressed: give it a .gz name"),
        (b"the 0.1 0.2\nof 0.3 0.4\n", "line 1 looks like a vector \\(a word and 2 numbers\\).*no_header=True"),
        (b"\x93NUMPY\x01\x00", "a .npy array"),
        (b"2 0\n", "the dimension must be at least 1"),
    ],
)
def test_malformed_header_says_what_the_file_is(tmp_path, content, fragment):
    path = tmp_path / "v.txt"
    path.write_bytes(content)
    with pytest.raises(ParvecError, match=":1: malformed header.*" + fragment):
        read_word2vec(path, binary=None)


def test_numpy_reads_whitespace_as_minus_one_and_we_do_not():
    assert formats._text_values(b" \t ").size == 0  # np.fromstring(b" ", sep=" ") gives [-1.0]
    assert formats._text_values(b"1 x") is None
    assert formats._text_values(b"1 2\x00") is None


def test_binary_shifted_by_a_wrong_dimension_names_the_right_one(tmp_path):
    rng = np.random.default_rng(5)
    v = rng.standard_normal((30, 6)).astype(np.float32)
    words = [f"word{i}" for i in range(30)]
    path = tmp_path / "v.bin"
    write_word2vec(path, v, words, binary=True)
    for wrong in (5, 7, 12):
        path.write_bytes(f"30 {wrong}".encode() + path.read_bytes()[path.read_bytes().index(b"\n") :])
        with pytest.raises(ParvecError, match=rf"fit dimension 6, not the header's dimension {wrong}"):
            read_word2vec(path, binary=None)


# ---------------------------------------------------------------------- files without a header
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_no_header(tmp_path, sample, suffix):
    vectors, words = sample
    path = tmp_path / f"glove.txt{suffix}"
    write_word2vec(path, vectors, words, write_header=False)
    got, got_words = read_word2vec(path, no_header=True)
    assert got_words == words
    np.testing.assert_array_equal(got, vectors)
    got, got_words = read_word2vec(path, no_header=True, limit=5)
    assert got_words == words[:5] and got.shape == (5, 13)
    with pytest.raises(ParvecError, match=r":1: malformed header.*no_header=True"):
        read_word2vec(path)


def test_no_header_errors(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_bytes(b"\xef\xbb\xbfa 1 2\r\nb 3 4\r\n\r\n")
    assert read_word2vec(path, no_header=True)[1] == ["a", "b"]  # BOM, CRLF and a blank last line
    path.write_bytes(b"a 1 2\n\nb 3 4\n")
    with pytest.raises(ParvecError, match=r"glove\.txt:2: dimension mismatch: 0 values, but line 1 has 2"):
        read_word2vec(path, no_header=True)
    path.write_bytes(b"just words here\n")
    with pytest.raises(ParvecError, match=r"glove\.txt:1: not a vector line"):
        read_word2vec(path, no_header=True)


# ---------------------------------------------------------------------- atomic writes
def test_atomic_output_failure_keeps_the_old_file(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old content")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_output(path, "w") as f:
            f.write("new content, half written")
            f.flush()
            raise RuntimeError("boom")
    assert path.read_text() == "old content"
    assert _listing(tmp_path) == ["out.txt"]


def test_atomic_output_keyboard_interrupt_compressed(tmp_path):
    path = tmp_path / "out.txt.gz"
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(path, "wb", compress=True) as f:
            f.write(b"x" * 100000)
            raise KeyboardInterrupt
    assert _listing(tmp_path) == []


def test_write_word2vec_failing_mid_write_leaves_old_file(tmp_path, sample):
    vectors, words = sample
    path = tmp_path / "vec.txt"
    path.write_bytes(b"previous")

    class FailingKeys(list):
        def __getitem__(self, i):
            if i == 30:
                raise OSError("disk on fire")
            return super().__getitem__(i)

    # dim 13000 -> 26 rows per write block: the first block is on disk when key 30 fails.
    big = np.repeat(vectors, 1000, axis=1)
    with pytest.raises(OSError, match="disk on fire"):
        write_word2vec(path, big, FailingKeys(words))
    assert path.read_bytes() == b"previous"
    assert _listing(tmp_path) == ["vec.txt"]


def test_atomic_output_success_replaces_and_sets_normal_permissions(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    os.chmod(path, 0o640)
    with atomic_output(path) as f:
        f.write(b"new")
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # an existing file keeps its mode
    fresh = tmp_path / "fresh.txt"
    with atomic_output(fresh, "w") as f:
        f.write("héllo\n")
    assert fresh.read_bytes() == "héllo\n".encode()
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~fileio._UMASK  # not mkstemp's 0600


def test_atomic_output_missing_directory(tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "v.txt"
    with pytest.raises(ParvecError, match="output directory .*dir does not exist") as exc:
        with atomic_output(target):
            pass
    assert str(target.parent) in str(exc.value)
    with pytest.raises(ParvecError, match="dir does not exist"):
        write_word2vec(target, np.ones((1, 2), dtype=np.float32), ["a"])


def test_atomic_output_onto_directory(tmp_path):
    with pytest.raises(ParvecError, match="is a directory"):
        with atomic_output(tmp_path):
            pass


# ---------------------------------------------------------------------- .npy + vocab
def test_npy_round_trip_and_naming(tmp_path, sample):
    vectors, words = sample
    counts = np.arange(50, 0, -1)
    out = save_npy(tmp_path / "vec.npy", vectors, words, counts)
    assert out == tmp_path / "vec.npy"
    assert _listing(tmp_path) == ["vec.counts.npy", "vec.npy", "vec.vocab.txt"]
    assert (tmp_path / "vec.vocab.txt").read_text(encoding="utf-8") == "".join(w + "\n" for w in words)
    for name in ("vec", "vec.npy"):
        got, keys, got_counts = load_npy(tmp_path / name)
        np.testing.assert_array_equal(got, vectors)
        assert keys == words
        np.testing.assert_array_equal(got_counts, counts)
    mm, _, _ = load_npy(tmp_path / "vec", mmap=True)
    assert isinstance(mm, np.memmap)
    save_npy(tmp_path / "vec", vectors, words)  # without counts: the stale counts file goes
    assert load_npy(tmp_path / "vec")[2] is None


def test_npy_errors(tmp_path, sample):
    vectors, words = sample
    with pytest.raises(ParvecError, match=r"missing\.npy: no such file"):
        load_npy(tmp_path / "missing.npy")
    save_npy(tmp_path / "v", vectors, words)
    (tmp_path / "v.vocab.txt").unlink()
    with pytest.raises(ParvecError, match=r"v\.vocab\.txt: no such file"):
        load_npy(tmp_path / "v")
    save_npy(tmp_path / "v", vectors, words)
    (tmp_path / "v.vocab.txt").write_text("a\nb\n")
    with pytest.raises(ParvecError, match="v.vocab.txt: 2 keys, but v.npy has 50 vectors"):
        load_npy(tmp_path / "v")
    (tmp_path / "v.vocab.txt").write_bytes(b"a\n\xff\n")
    with pytest.raises(ParvecError, match=r"v\.vocab\.txt:2: invalid UTF-8"):
        load_npy(tmp_path / "v")
    (tmp_path / "w.npy").write_bytes(b"not numpy")
    (tmp_path / "w.vocab.txt").write_text("a\n")
    with pytest.raises(ParvecError, match=r"w\.npy: not a readable \.npy"):
        load_npy(tmp_path / "w")


def test_npy_damaged_files(tmp_path, sample):
    vectors, words = sample
    save_npy(tmp_path / "v", vectors, words, np.arange(50))
    (tmp_path / "v.counts.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(ParvecError, match=r"v\.counts\.npy: not a readable \.npy array"):
        load_npy(tmp_path / "v")
    np.save(tmp_path / "v.counts.npy", np.linspace(0, 1, 50))
    with pytest.raises(ParvecError, match=r"v\.counts\.npy: expected 50 integer counts, got float64"):
        load_npy(tmp_path / "v")
    np.save(tmp_path / "v.counts.npy", -np.arange(50))
    with pytest.raises(ParvecError, match=r"v\.counts\.npy: negative count at row 1"):
        load_npy(tmp_path / "v")
    (tmp_path / "v.counts.npy").unlink()
    keys = words[:3] + [""] + words[4:]
    (tmp_path / "v.vocab.txt").write_text("".join(w + "\n" for w in keys))
    with pytest.raises(ParvecError, match=r"v\.vocab\.txt:4: empty key"):
        load_npy(tmp_path / "v")
    (tmp_path / "v.vocab.txt").write_text("".join(w + "\n" for w in words[:49]) + "the\n")
    with pytest.raises(ParvecError, match=r"v\.vocab\.txt:50: duplicate key 'the' \(first on line 1\)"):
        load_npy(tmp_path / "v")
    save_npy(tmp_path / "z", np.zeros((2, 0), dtype=np.float32), ["a", "b"])
    with pytest.raises(ParvecError, match=r"z\.npy: expected a 2-D float array with at least one column"):
        load_npy(tmp_path / "z")
    save_npy(tmp_path / "v", vectors, words)
    data = (tmp_path / "v.npy").read_bytes()
    (tmp_path / "v.npy").write_bytes(data[:-7])
    for mmap in (False, True):
        with pytest.raises(ParvecError, match=r"v\.npy: 2593 bytes of data, but .* shape \(50, 13\) needs 2600"):
            load_npy(tmp_path / "v", mmap=mmap)
    # np.load alone reads a header shrunk by one digit as a smaller array, ignoring the bytes after it.
    (tmp_path / "v.npy").write_bytes(data.replace(b"(50, 13)", b"(40, 13)"))
    with pytest.raises(ParvecError, match=r"v\.npy: 2600 bytes of data, but .* shape \(40, 13\) needs 2080"):
        load_npy(tmp_path / "v")
    (tmp_path / "v.npy").write_bytes(data)
    (tmp_path / "v.vocab.txt").write_bytes((tmp_path / "v.vocab.txt").read_bytes()[:-2])  # "w44\n" cut to "w4"
    with pytest.raises(ParvecError, match=r"v\.vocab\.txt:50: the last line has no newline"):
        load_npy(tmp_path / "v")


# ---------------------------------------------------------------------- a larger file
def test_reading_a_larger_binary_file(tmp_path):
    # How fast, against gensim's load_word2vec_format: benchmarks/bench_vectors.py; here, the values.
    rng = np.random.default_rng(3)
    n, dim = 20000, 100
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    words = [f"word{i}" for i in range(n)]
    write_word2vec(tmp_path / "v.bin", vectors, words, binary=True)
    got, got_words = read_word2vec(tmp_path / "v.bin", binary=True)
    np.testing.assert_array_equal(got, vectors)
    assert got_words == words


# ---------------------------------------------------------------------- gensim interoperability
gensim_models = pytest.importorskip("gensim.models")


@pytest.mark.parametrize("binary", [False, True])
def test_gensim_reads_what_we_write(tmp_path, sample, binary):
    vectors, words = sample
    path = tmp_path / ("v.bin" if binary else "v.txt")
    write_word2vec(path, vectors, words, binary=binary)
    kv = gensim_models.KeyedVectors.load_word2vec_format(str(path), binary=binary)
    assert list(kv.index_to_key) == words
    np.testing.assert_allclose(kv.vectors, vectors, rtol=1e-7, atol=0)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_we_read_what_gensim_writes(tmp_path, sample, binary, suffix):
    vectors, words = sample
    kv = gensim_models.KeyedVectors(vector_size=vectors.shape[1])
    kv.add_vectors(words, vectors)
    path = tmp_path / (("v.bin" if binary else "v.txt") + suffix)
    kv.save_word2vec_format(str(path), binary=binary)
    got, got_words = read_word2vec(path, binary=binary)
    assert got_words == words
    np.testing.assert_allclose(got, vectors, rtol=1e-7, atol=0)
    assert detect_binary(path) is binary
