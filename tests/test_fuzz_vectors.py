"""Property-based tests of every vector reader (hypothesis): word2vec text, word2vec binary, ``.npy`` + vocab.

* Round trips: random valid files read back exactly (binary and ``.npy`` bit for bit; text too, since ``%.9g``
  round-trips every float32 — NaN stays NaN).
* Mutations of valid files (truncation at any byte, byte flips, inserted NUL/CR/LF/space/BOM, header edits)
  read either correctly or raise :class:`ParvecError` — never another exception, a hang, or a silent wrong
  shape.  "Correctly" is checked by position: a row whose bytes the mutation did not touch must come back
  exactly as written; a truncated file or an edited header reads only if it still means the same file.

The suite runs a few hundred examples per property, derandomised (same examples every run).  For a longer,
random run set ``PARVEC_FUZZ_EXAMPLES`` (e.g. ``PARVEC_FUZZ_EXAMPLES=20000 pytest tests/test_fuzz_vectors.py``).
Every crash found this way becomes a named regression test at the end of this file.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from fuzzing import no_hang as _no_hang
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from parvec import fileio, formats
from parvec.errors import ParvecError
from parvec.formats import detect_binary, load_npy, read_word2vec, save_npy, write_word2vec
from parvec.keyedvectors import KeyedVectors

LONG_RUN = int(os.environ.get("PARVEC_FUZZ_EXAMPLES", "0"))
EXAMPLES = LONG_RUN or 150
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG_RUN,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MODES = (None, True, False)  # detect, binary, text
BOM = b"\xef\xbb\xbf"
INSERTS = (b"\x00", b"\r", b"\n", b" ", b"\t", BOM, b"\xff")


def no_hang(seconds: int = 10):
    """tests/fuzzing.py's guard with this file's 10-second limit."""
    return _no_hang(seconds)


# ---------------------------------------------------------------------- strategies
# Keys as our writers accept them: word2vec keys hold no space or newline, .npy keys no newline.
W2V_KEY = st.text(st.characters(exclude_characters=" \n", exclude_categories=("Cs",)), min_size=1, max_size=6)
NPY_KEY = st.text(st.characters(exclude_characters="\n", exclude_categories=("Cs",)), min_size=1, max_size=6)
FLOAT32 = st.floats(width=32)  # NaN, infinities, subnormals, -0.0 included


@st.composite
def vector_sets(draw, key=W2V_KEY, max_rows=7):
    n = draw(st.integers(0, max_rows))
    dim = draw(st.integers(1, 6))
    keys = draw(st.lists(key, min_size=n, max_size=n, unique=True))
    vectors = draw(hnp.arrays(np.float32, (n, dim), elements=FLOAT32))
    return vectors, keys


@st.composite
def mutations(draw, size: int):
    """(kind, offset, argument) for a file of ``size`` bytes."""
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "header"]))
    if kind == "truncate":
        return kind, draw(st.integers(0, max(0, size - 1))), None
    if kind == "flip":
        return kind, draw(st.integers(0, size - 1)), draw(st.integers(1, 255))
    if kind == "insert":
        return kind, draw(st.integers(0, size)), draw(st.sampled_from(INSERTS))
    count = draw(st.one_of(st.integers(0, 12), st.integers(0, 2**70)))
    dim = draw(st.one_of(st.integers(0, 9), st.integers(0, 2**40)))
    shapes = [f"{count} {dim}", f"{count}", f"{count} {dim} {dim}", "", f"{count}\t{dim} ", f"-{count} {dim}"]
    header = draw(st.sampled_from([*shapes, f"{count} x"]))
    return kind, 0, header.encode()


def mutate(data: bytes, kind: str, offset: int, arg) -> bytes:
    if kind == "truncate":
        return data[:offset]
    if kind == "flip":
        return data[:offset] + bytes([data[offset] ^ arg]) + data[offset + 1 :]
    if kind == "insert":
        return data[:offset] + arg + data[offset:]
    return arg + data[data.index(b"\n") :]  # a new header line


def same_floats(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit, except that any NaN equals any NaN (text writes every NaN as 'nan')."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    if a.shape != b.shape:
        return False
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b)) and np.array_equal(a.view(np.uint32)[~nan], b.view(np.uint32)[~nan]))


def row_spans(data: bytes, keys: list[str], dim: int, binary: bool) -> list[tuple[int, int]]:
    """Byte ranges ``[start, end)`` of the header (index 0) and each row (index i + 1) of a file we wrote."""
    header_end = data.index(b"\n") + 1
    spans = [(0, header_end)]
    pos = header_end
    for key in keys:
        if binary:
            end = pos + len(key.encode()) + 1 + 4 * dim + 1
        else:
            end = data.index(b"\n", pos) + 1
        spans.append((pos, end))
        pos = end
    return spans


def touched_rows(spans: list[tuple[int, int]], kind: str, offset: int) -> set[int]:
    """Rows (0-based; -1 is the header) whose bytes a flip or an insertion at ``offset`` changes.

    An insertion at ``offset`` lands in the row holding that byte (at the end of the file: the last row).
    A flip changes its row and, when it turns that row's newline into something else, the next row too.
    """

    def row_of(at: int) -> int:
        at = min(at, spans[-1][1] - 1)
        return next(i - 1 for i, (a, b) in enumerate(spans) if a <= at < b)

    if kind == "insert":
        return {row_of(offset)}
    return {row_of(offset), row_of(offset + 1)}


def check_mutated(
    read, original: tuple[np.ndarray, list[str]], kind: str, touched: set[int], mutated: bytes
) -> str:
    """Read a mutated file: a ParvecError, or a result whose untouched rows are the original's, in order."""
    vectors, keys = original
    try:
        with no_hang():
            got, got_keys = read()
    except ParvecError:
        return "error"
    assert got.dtype == np.float32 and got.ndim == 2, (got.dtype, got.shape)
    if not keys:  # no rows to contradict the header: its dimension, whatever it now says, is the shape
        assert got_keys == [] and got.shape == (0, int(mutated.split(b"\n", 1)[0].removeprefix(BOM).split()[1]))
        return "same"
    assert got.shape == (len(got_keys), vectors.shape[1]), (got.shape, vectors.shape)  # never a wrong shape
    assert all(isinstance(k, str) and k for k in got_keys)
    if kind in ("truncate", "header") or -1 in touched:
        # A cut file or an edited header reads only if it still means the same file.
        assert got_keys == keys and same_floats(got, vectors), (kind, got_keys, keys)
        return "same"

    def matches(rows: list[int]) -> bool:  # result row j is original row rows[j]
        return all(
            o in touched or (got_keys[j] == keys[o] and same_floats(got[j], vectors[o])) for j, o in enumerate(rows)
        )

    every = list(range(len(keys)))
    if len(got_keys) == len(keys):
        assert matches(every), (touched, got_keys, keys)
    else:  # a touched row's new key repeats another key: the later of the two is dropped (gensim keeps the first)
        assert len(got_keys) == len(keys) - 1, (got_keys, keys)
        assert any(matches(every[:d] + every[d + 1 :]) for d in every), (touched, got_keys, keys)
    return "read"


# ---------------------------------------------------------------------- word2vec round trips
@FUZZ
@given(data=vector_sets(), binary=st.booleans(), suffix=st.sampled_from(["", "", ".gz", ".bz2", ".xz"]))
def test_word2vec_round_trip(tmp_path, data, binary, suffix):
    vectors, keys = data
    path = tmp_path / f"v{suffix}"
    write_word2vec(path, vectors, keys, binary=binary)
    try:
        with no_hang():
            got, got_keys = read_word2vec(path, binary=binary)
    except ParvecError as exc:
        # The documented limit: binary=True refuses bytes that read as text.  Only a binary file where at
        # least half of the first vectors' bytes happen to be printable text (dimension 1 or 2) gets there.
        assert binary and "looks like a text word2vec file" in str(exc), exc
        scanned = [v.astype("<f4").tobytes() for v in vectors[:8]]
        assert 2 * sum(formats._is_text(v) for v in scanned) >= len(scanned), scanned
        return
    assert got_keys == keys and same_floats(got, vectors)
    if binary:  # exact bits, NaN payloads included
        assert np.array_equal(got.view(np.uint32), vectors.view(np.uint32))
    with no_hang():
        detected = detect_binary(path)
    assert binary or not detected, "a text file was detected as binary"
    try:
        got, got_keys = read_word2vec(path, binary=None)
    except ParvecError:
        # The documented limit of detection: a tiny binary file whose first line reads as a text row, or where
        # half of the first vectors' bytes are printable text, is taken for text -- and fails on a line.
        assert binary and not detected
        with fileio.open_input(path) as f:
            first = f.read().split(b"\n", 2)[1]
        scanned = [v.astype("<f4").tobytes() for v in vectors[:8]]
        text_like = 2 * sum(formats._is_text(v) for v in scanned) >= len(scanned)
        assert formats._text_row(first) is not None or text_like, first
    else:
        assert got_keys == keys and same_floats(got, vectors)


@FUZZ
@given(data=vector_sets(key=W2V_KEY.filter(lambda k: not k.startswith("\ufeff"))))
def test_word2vec_no_header_round_trip(tmp_path, data):
    vectors, keys = data
    path = tmp_path / "glove.txt"
    write_word2vec(path, vectors, keys, write_header=False)
    if not keys:
        with pytest.raises(ParvecError, match="the file is empty"):
            read_word2vec(path, no_header=True)
        return
    with no_hang():
        got, got_keys = read_word2vec(path, no_header=True)
    assert got_keys == keys and same_floats(got, vectors)


# ---------------------------------------------------------------------- word2vec mutations
@FUZZ
@given(data=vector_sets(), binary=st.booleans(), st_mut=st.data())
def test_word2vec_mutations(tmp_path, data, binary, st_mut):
    vectors, keys = data
    path = tmp_path / ("v.bin" if binary else "v.txt")
    write_word2vec(path, vectors, keys, binary=binary)
    valid = path.read_bytes()
    kind, offset, arg = st_mut.draw(mutations(len(valid)))
    mutated = mutate(valid, kind, offset, arg)
    path.write_bytes(mutated)
    spans = row_spans(valid, keys, vectors.shape[1], binary)
    touched = touched_rows(spans, kind, offset) if kind in ("flip", "insert") else set()
    for mode in MODES:
        check_mutated(lambda m=mode: read_word2vec(path, binary=m), data, kind, touched, mutated)
    with no_hang():
        try:
            detect_binary(path)
        except ParvecError:
            pass


@FUZZ
@given(
    data=vector_sets(max_rows=4),
    binary=st.booleans(),
    cuts=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=2, max_size=6),
)
def test_word2vec_several_byte_flips(tmp_path, data, binary, cuts):
    vectors, keys = data
    path = tmp_path / "v"
    write_word2vec(path, vectors, keys, binary=binary)
    raw = bytearray(path.read_bytes())
    for at, mask in cuts:
        raw[at % len(raw)] ^= mask
    path.write_bytes(bytes(raw))
    for mode in MODES:
        try:
            with no_hang():
                got, got_keys = read_word2vec(path, binary=mode)
        except ParvecError:
            continue
        header = bytes(raw).split(b"\n", 1)[0]
        count, dim = (int(x) for x in header.removeprefix(BOM).split())
        assert got.dtype == np.float32 and got.shape == (len(got_keys), dim)
        assert len(got_keys) <= count


# ---------------------------------------------------------------------- .npy + vocabulary
@FUZZ
@given(data=vector_sets(key=NPY_KEY), with_counts=st.booleans(), dtype=st.sampled_from(["<f4", ">f4", "<f8", "<f2"]))
def test_npy_round_trip(tmp_path, data, with_counts, dtype):
    vectors, keys = data
    with np.errstate(over="ignore"):  # float16 has no room for large float32 values: they become inf
        vectors = vectors.astype(dtype)
    counts = np.arange(len(keys), dtype=np.int64)[::-1] if with_counts else None
    save_npy(tmp_path / "v", vectors, keys, counts)
    for mmap in (False, True):
        with no_hang():
            got, got_keys, got_counts = load_npy(tmp_path / "v", mmap=mmap)
        assert got_keys == keys and got.dtype == vectors.dtype
        assert np.array_equal(np.asarray(got).view(np.uint8), vectors.view(np.uint8))
        assert (got_counts is None) == (counts is None)
        if counts is not None:
            assert np.array_equal(got_counts, counts)
    kv = KeyedVectors.load(tmp_path / "v.npy")
    assert kv.index_to_key == keys and np.array_equal(kv.vectors.view(np.uint8), vectors.view(np.uint8))


@pytest.mark.filterwarnings("ignore:Reading `.npy` or `.npz` file required additional header parsing")
@FUZZ
@given(data=vector_sets(key=NPY_KEY), target=st.sampled_from(["npy", "vocab", "counts"]), st_mut=st.data())
def test_npy_mutations(tmp_path, data, target, st_mut):
    vectors, keys = data
    counts = np.arange(len(keys), dtype=np.int64)
    save_npy(tmp_path / "v", vectors, keys, counts)
    path = tmp_path / {"npy": "v.npy", "vocab": "v.vocab.txt", "counts": "v.counts.npy"}[target]
    valid = path.read_bytes()
    if not valid:  # an empty vocabulary (no keys): only insertions apply
        kind, offset, arg = "insert", 0, st_mut.draw(st.sampled_from(INSERTS))
    else:
        kind, offset, arg = st_mut.draw(mutations(len(valid)).filter(lambda m: m[0] != "header"))
    path.write_bytes(mutate(valid, kind, offset, arg))
    for read in (
        lambda: load_npy(tmp_path / "v"),
        lambda: load_npy(tmp_path / "v", mmap=True),
        lambda: (lambda kv: (kv.vectors, kv.index_to_key, kv.counts))(KeyedVectors.load(tmp_path / "v")),
    ):
        try:
            with no_hang():
                got, got_keys, got_counts = read()
        except ParvecError:
            continue
        assert got.ndim == 2 and got.shape[0] == len(got_keys) and got.shape[1] >= 1
        assert np.issubdtype(got.dtype, np.floating)
        if target != "npy":
            assert np.array_equal(np.asarray(got).view(np.uint8), vectors.view(np.uint8))
        if target != "vocab":
            assert got_keys == keys
        else:
            assert len(got_keys) == len(keys)
            line = valid[:offset].count(b"\n")  # the key the mutation touched (or borders)
            assert all(g == k for i, (g, k) in enumerate(zip(got_keys, keys, strict=True)) if abs(i - line) > 1)
        if target == "npy" and not keys:  # no rows to contradict the header: any dimension is consistent
            assert got.shape[0] == 0
        elif target == "npy":
            assert got.shape == vectors.shape
            header_len = len(valid) - vectors.nbytes
            if kind != "truncate" and offset >= header_len and got.dtype == vectors.dtype:
                row = (offset - header_len) // (4 * vectors.shape[1])
                keep = np.arange(len(keys)) != row
                assert np.array_equal(np.asarray(got)[keep].view(np.uint8), vectors[keep].view(np.uint8))
        if target == "counts" and got_counts is not None:
            assert got_counts.shape == (len(keys),) and got_counts.min(initial=0) >= 0


# ---------------------------------------------------------------------- options, arbitrary files, gensim
@FUZZ
@given(data=vector_sets(), binary=st.booleans(), st_mut=st.data(), limit=st.integers(0, 8))
def test_word2vec_limit_and_decoding_options_agree(tmp_path, data, binary, st_mut, limit):
    """On a valid or mutated file: ``limit`` reads a prefix of the full read (never fails where it succeeds);
    ``unicode_errors`` replace/ignore read exactly what strict reads when strict succeeds; ``datatype`` casts."""
    vectors, keys = data
    path = tmp_path / "v"
    write_word2vec(path, vectors, keys, binary=binary)
    valid = path.read_bytes()
    if st_mut.draw(st.booleans()):
        path.write_bytes(mutate(valid, *st_mut.draw(mutations(len(valid)))))
    for mode in MODES:
        try:
            with no_hang():
                full, full_keys = read_word2vec(path, binary=mode)
        except ParvecError:
            continue
        with no_hang():
            part, part_keys = read_word2vec(path, binary=mode, limit=limit)
        assert len(part_keys) <= limit and part_keys == full_keys[: len(part_keys)]
        assert same_floats(part, full[: len(part_keys)]) and part.shape[1] == full.shape[1]
        if len(set(full_keys)) == len(full_keys) == len(keys):  # no duplicate dropped: exactly min(limit, n) rows
            assert len(part_keys) == min(limit, len(full_keys))
        for errors in ("replace", "ignore"):
            got, got_keys = read_word2vec(path, binary=mode, unicode_errors=errors)
            assert got_keys == full_keys and same_floats(got, full)
        got, got_keys = read_word2vec(path, binary=mode, datatype=np.float64)
        assert got.dtype == np.float64 and got_keys == full_keys and same_floats(got.astype(np.float32), full)


# Pieces of text vector files, good and bad: words, numbers as word2vec.c, gensim and numpy write them, numbers
# only some parsers take (hex, underscores), separators, line ends, control bytes, invalid UTF-8, a BOM.
PIECES = (b"a", b"b", b"\xc3\xa9", b"1", b"-0.5", b"2e3", b"1e99", b"nan", b"-inf", b".5", b"5.", b"x1", b"1x",
          b"--1", b"0x10", b"1_0", b" ", b" ", b" ", b"  ", b"\t", b"\n", b"\n", b"\r\n", b"\r", b"\x00", b"\xff",
          b"\x0b", b"\xc2\xa0", BOM)


WORDS = (b"a", b"b", b"\xc3\xa9", b"x1", b"1", b"\xff", b"a\x00", b"\xc2\xa0", BOM + b"c", b"a\tb")
NUMBERS = (b"1", b"-0.5", b"2e3", b"1e99", b"nan", b"-inf", b".5", b"5.", b"0", b"1x", b"0x10", b"1_0", b"--1")
SEPARATORS = (b" ", b" ", b" ", b"  ", b"\t", b" \t")
LINE_ENDS = (b"\n", b"\n", b" \n", b"\r\n", b"\r", b"", b"\n\n")


@st.composite
def vector_files(draw):
    """A header and either a soup of pieces or rows of a word and about ``dim`` numbers, each maybe odd."""
    header = draw(st.sampled_from([b"%d %d\n" % (c, d) for c in range(4) for d in range(1, 4)] + [b"", b"2 2\r\n"]))
    if draw(st.booleans()):
        body = b"".join(draw(st.lists(st.sampled_from(PIECES), max_size=40)))
    else:
        count, dim = (int(x) for x in header.split()) if header.strip() else (2, 2)
        rows = []
        for _ in range(draw(st.one_of(st.just(count), st.integers(0, 4)))):  # mostly as many rows as the header says
            k = draw(st.one_of(st.just(dim), st.integers(max(0, dim - 1), dim + 1)))
            numbers = draw(st.lists(st.sampled_from(NUMBERS[:9] * 4 + NUMBERS[9:]), min_size=k, max_size=k))
            row = draw(st.sampled_from(WORDS[:4] * 3 + WORDS[4:]))
            row += b"".join(draw(st.sampled_from(SEPARATORS[:3] * 4 + SEPARATORS[3:])) + x for x in numbers)
            rows.append(row + draw(st.sampled_from(LINE_ENDS[:2] * 4 + LINE_ENDS[2:])))
        body = b"".join(rows)
    return header + body + draw(st.one_of(st.just(b""), st.just(b""), st.just(b"\n"), st.binary(max_size=24)))


def _gensim_read(path, **options):
    """gensim's reading of the same file, or None when gensim cannot read it (it raises anything)."""
    import warnings

    from gensim.models import KeyedVectors as GensimKV

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            kv = GensimKV.load_word2vec_format(str(path), **options)
    except Exception:  # noqa: BLE001 - any failure of the peer means "no opinion"
        return None
    return kv.vectors, list(kv.index_to_key)


@FUZZ
@given(raw=vector_files(), binary=st.sampled_from(MODES), no_header=st.booleans(), limit=st.sampled_from([None, 1, 2]),
       errors=st.sampled_from(["strict", "replace", "ignore"]), datatype=st.sampled_from([np.float32, np.float64]),
       gz=st.booleans())
def test_word2vec_arbitrary_files(tmp_path, raw, binary, no_header, limit, errors, datatype, gz):
    """Files put together from good and bad pieces, with every option: a ParvecError, or vectors of the
    right shape and type under distinct non-empty keys, which are what gensim reads when gensim reads the
    file too."""
    path = tmp_path / ("v.gz" if gz else "v")
    if gz:
        import gzip

        path.write_bytes(gzip.compress(raw, mtime=0))
    else:
        path.write_bytes(raw)
    try:
        with no_hang():
            got, keys = read_word2vec(path, binary=binary, limit=limit, unicode_errors=errors, datatype=datatype,
                                      no_header=no_header)
    except ParvecError:
        return
    assert got.dtype == datatype and got.ndim == 2 and got.shape[0] == len(keys) and got.shape[1] >= 1
    assert all(isinstance(k, str) and k for k in keys) and len(set(keys)) == len(keys)
    assert limit is None or len(keys) <= limit
    if len(keys) and not gz:  # the peer: gensim's reader, given the layout parvec used
        layout = binary if binary is not None else (False if no_header else detect_binary(path))
        peer = _gensim_read(path, binary=layout, limit=limit, unicode_errors=errors, no_header=no_header)
        if peer is not None and len(peer[1]) == len(keys):
            assert peer[1] == keys and same_floats(peer[0], got.astype(np.float32)), (raw, keys, peer[1])


@FUZZ
@given(data=vector_sets(max_rows=5), binary=st.booleans())
def test_gensim_written_files_read_as_gensim_reads_them(tmp_path, data, binary):
    """Files written by the peer (gensim's save_word2vec_format) read back to gensim's own vectors."""
    from gensim.models import KeyedVectors as GensimKV

    vectors, keys = data
    if not keys:
        return
    kv = GensimKV(vectors.shape[1])
    kv.add_vectors(keys, vectors)
    path = tmp_path / ("g.bin" if binary else "g.txt")
    kv.save_word2vec_format(str(path), binary=binary)
    for mode in (binary, None):
        try:
            with no_hang():
                got, got_keys = read_word2vec(path, binary=mode)
        except ParvecError as exc:
            # Only the documented limits (test_word2vec_round_trip): a tiny binary file whose first line reads
            # as a text row, or where half of the first vectors' bytes are printable text, is taken for text.
            assert binary, exc
            scanned = [v.astype("<f4").tobytes() for v in vectors[:8]]
            text_like = 2 * sum(formats._is_text(v) for v in scanned) >= len(scanned)
            first = path.read_bytes().split(b"\n", 2)[1]
            assert text_like or (mode is None and formats._text_row(first) is not None), (exc, scanned)
            continue
        peer = _gensim_read(path, binary=binary)
        assert peer is not None and got_keys == peer[1] == keys
        assert same_floats(got, peer[0])
        if binary:
            assert same_floats(got, vectors)


# ---------------------------------------------------------------------- regressions found by fuzzing
def test_regression_control_character_in_a_later_word_keeps_text_detected(tmp_path):
    # Found by test_word2vec_round_trip: a control byte in the third row's word lay where a binary reading puts
    # the first vector, so this valid text file was detected as binary.
    path = tmp_path / "v.txt"
    path.write_bytes(b"3 1\n0 0 \n00 10000 \n\x1f 0 \n")
    assert not detect_binary(path)
    got, words = read_word2vec(path, binary=None)
    assert words == ["0", "00", "\x1f"] and got[:, 0].tolist() == [0, 10000, 0]


def test_regression_npy_header_that_trips_numpys_tokenizer(tmp_path):
    # Found by test_npy_mutations: one flipped bit turns "(0, 1)" into ")0, 1)"; numpy's header parser raised
    # tokenize.TokenError, which escaped as a traceback.
    save_npy(tmp_path / "v", np.zeros((0, 1), dtype=np.float32), [])
    data = (tmp_path / "v.npy").read_bytes()
    (tmp_path / "v.npy").write_bytes(data.replace(b"(0, 1)", b")0, 1)"))
    with pytest.raises(ParvecError, match=r"v\.npy: not a readable \.npy array"):
        load_npy(tmp_path / "v")
    with pytest.raises(ParvecError, match=r"v\.npy: not a readable \.npy array"):
        KeyedVectors.load(tmp_path / "v.npy")


def test_regression_tiny_binary_whose_vector_bytes_look_printable(tmp_path):
    # Found by the long run of test_word2vec_round_trip: the 4 bytes of 1.9 are "33\xf3?", no control byte, so
    # detection guessed text and the valid binary file failed to read.  "\xf3?" is not UTF-8: binary.
    path = tmp_path / "v.bin"
    write_word2vec(path, np.array([[1.9]], dtype=np.float32), ["\x1f"], binary=True)
    assert detect_binary(path)
    got, words = read_word2vec(path, binary=None)
    assert words == ["\x1f"] and got.tolist() == [[np.float32(1.9)]]


def test_regression_binary_file_that_also_reads_as_text_is_never_read_as_garbage(tmp_path):
    # Found by test_word2vec_round_trip: the float32 bytes of 5.4054397e16 are "0\n@[", so this binary file is
    # "1 1\n0 0\n@[\n": line 2 a text row, line 3 junk.  Its bytes are all text, so it is taken for text (an
    # error on line 3); binary=True is refused too (reading text bytes as floats is how malformed text turned
    # into garbage: see the next test).  The documented limit: tiny binary files with all-text vector bytes.
    v = np.array([[5.4054397e16]], dtype=np.float32)
    path = tmp_path / "v.bin"
    write_word2vec(path, v, ["0"], binary=True)
    assert path.read_bytes() == b"1 1\n0 0\n@[\n"
    with pytest.raises(ParvecError, match=r"v\.bin:3: the header promises 1 vectors, but more lines follow"):
        read_word2vec(path, binary=None)
    with pytest.raises(ParvecError, match=r"v\.bin:2: this looks like a text word2vec file"):
        read_word2vec(path, binary=True)


@pytest.mark.parametrize("content", [b"2 1\n0 0.5 \n1 1.5 \n", b"\r1 1\n0 1.5 \n"])
def test_regression_explicit_binary_refuses_a_valid_text_file_that_also_parses_as_binary(tmp_path, content):
    # Found by the long run of test_word2vec_mutations: with dim 1, "0.5 " is 4 bytes, so these valid text
    # files are also valid binary files, and binary=True read them as 1.5e-19 (through an exception for
    # binary=True since removed).  Text bytes are refused as binary; detection and binary=False read them.
    path = tmp_path / "v.txt"
    path.write_bytes(content)
    with pytest.raises(ParvecError, match=r"v\.txt:2: this looks like a text word2vec file.*--text"):
        read_word2vec(path, binary=True)
    for binary in (None, False):
        assert read_word2vec(path, binary=binary)[0][-1, 0] == 1.5


@pytest.mark.parametrize(
    "content",
    [
        # a 3-row text file cut at byte 72, inside its last line: its bytes also parse as 3 binary rows
        b"3 3\n000\xc2\x80\xc2\x80 -inf 0.75 1.08546163e+09 \n0 inf -1.51129203e+09 100 \n1 0 0 0",
        b"2 1\n0 ,0 \n00 -0 \n",  # a flipped byte: line 2 is not a vector line, the bytes are all text
    ],
)
def test_regression_damaged_text_is_never_read_as_binary_even_when_asked(tmp_path, content):
    # Found by the long run of test_word2vec_mutations: damaged tiny text files that parse exactly as binary
    # rows read as garbage words ('08546163e+09') with binary=True.  Text bytes are refused as binary.
    path = tmp_path / "v.txt"
    path.write_bytes(content)
    for binary in (None, True, False):
        with pytest.raises(ParvecError, match=r"v\.txt:\d+: ") as exc:
            read_word2vec(path, binary=binary)
        assert "--binary" not in str(exc.value)


def test_regression_one_damaged_row_does_not_make_a_text_file_binary(tmp_path):
    # Found by the long run of test_word2vec_mutations: one flipped byte ('.' to 0xae) made line 2 of this dim-1
    # text file non-text; the file then counted as binary, parsed whole ("0.5 " is 4 bytes) and line 3's 0.5
    # came back as 1.5e-19.  One damaged row among clean text rows is not binary evidence.
    path = tmp_path / "v.txt"
    path.write_bytes(b"2 1\n0 0\xae5 \n00 0.5 \n")
    assert not detect_binary(path)
    for binary in (None, True, False):
        with pytest.raises(ParvecError, match=r"v\.txt:2: ") as exc:
            read_word2vec(path, binary=binary)
        assert "--binary" not in str(exc.value)


def test_documented_limit_tiny_binary_with_printable_vector_bytes(tmp_path):
    # Found by the long run of test_word2vec_round_trip: the 4 bytes of 7.9673576e14 are printable text, so this
    # valid one-vector binary file cannot be told from a damaged text file and is refused, even as binary=True
    # (the message says why).  Real vectors are never all printable bytes; this needs dimension 1 or 2.
    v = np.array([[7.9673576e14]], dtype=np.float32)
    assert formats._is_text(v.tobytes())
    path = tmp_path / "v.bin"
    write_word2vec(path, v, ["0"], binary=True)
    for binary in (None, True):
        with pytest.raises(ParvecError, match=r"v\.bin:2: (this looks like a text word2vec file|non-numeric)"):
            read_word2vec(path, binary=binary)
