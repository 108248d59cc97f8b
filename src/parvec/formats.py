"""Word-vector file formats: word2vec.c's text and binary layouts, and ``.npy`` + vocabulary.

word2vec format (what ``word2vec.c -output`` writes and gensim reads):

* header ``"{count} {dimension}\\n"``;
* text: one ``word v1 v2 ... vD \\n`` line per vector.  word2vec.c prints ``"%lf "`` per value, so
  every line ends with a space before the newline; we keep that layout.  Values are written with
  ``%.9g``: 9 significant digits is the shortest fixed precision that round-trips every float32
  exactly (``%.6g``/``%lf`` lose precision; numpy's shortest repr is ~40% slower to produce);
* binary: ``word`` + a space + ``dimension`` little-endian float32 values + ``\\n``.  Some writers
  (gensim 4) omit the ``\\n``; the reader accepts both.

Files ending in ``.gz``, ``.bz2`` or ``.xz`` are (de)compressed by extension.  Reading is strict: the
header must agree with the file (every text line a word and exactly ``dimension`` numbers, binary rows
that fit ``dimension`` float32 values with one separator layout throughout, exactly ``count`` vectors,
then only whitespace), and every problem raises :class:`ParvecError` naming the file and the line (text)
or the vector and byte offset (binary) and what disagrees.  Layout detection (``binary=None``) never turns
a malformed text file into a binary one: a first vector line of a word and numbers is text; binary needs
the first rows to parse as binary (see :func:`detect_binary`).  A UTF-8 BOM and CRLF line ends are read;
a text file without the header (GloVe's layout) needs ``no_header=True``, as in gensim.

``.npy`` format: ``save_npy("out/vec", ...)`` writes ``out/vec.npy`` (the float32 matrix),
``out/vec.vocab.txt`` (one UTF-8 key per line, in row order, each line ended by ``\\n``) and, when
counts are given, ``out/vec.counts.npy`` (int64).  A path ending in ``.npy`` is taken as the same
prefix, so ``save_npy("vec.npy", ...)`` and ``save_npy("vec", ...)`` write the same files.

Every write goes through :func:`parvec.fileio.atomic_output`: an interrupted run never leaves a half-written
file.  Opening inputs (decompression, streams) and writing files in general are :mod:`parvec.fileio`'s; this
module keeps the word-vector formats and the refusal of pickles.
"""

from __future__ import annotations

import bz2
import contextlib
import dataclasses
import gzip
import itertools
import logging
import math
import os
import re
import tokenize
import warnings
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

import numpy as np

from parvec.errors import ParvecError
from parvec.fileio import READ_ERRORS, PathLike, atomic_output, is_compressed, open_input, write_array

__all__ = [
    "detect_binary",
    "is_pickle",
    "load_npy",
    "npy_paths",
    "read_word2vec",
    "refuse_pickle",
    "save_npy",
    "write_word2vec",
]

log = logging.getLogger(__name__)

_READ_BLOCK = 1 << 22  # binary reader refill size (4 MiB)
_MAX_WORD_BYTES = 1 << 20  # a "word" longer than this means the file is not what we think
_SNIFF_BYTES = 1 << 20
_SNIFF_ROWS = 8  # binary rows layout detection parses
_MAX_GUESS_DIM = 4096  # largest dimension tried when saying which one a binary file's rows fit
_UNICODE_ERRORS = ("strict", "replace", "ignore")
# What np.load raises on a damaged .npy: its header is parsed with tokenize, ast.literal_eval and np.dtype.
_NPY_ERRORS = (
    OSError, ValueError, EOFError, TypeError, SyntaxError, MemoryError, OverflowError, KeyError, tokenize.TokenError
)
_BOM = b"\xef\xbb\xbf"
_WHITESPACE = b" \t\n\r\x0b\x0c"
# Bytes no UTF-8 text holds: C0 controls other than whitespace, DEL, and bytes UTF-8 never uses.
_NOT_TEXT = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f\xc0\xc1\xf5-\xff]")
_MAGIC = (
    (b"\x1f\x8b", "is gzip-compressed: give it a .gz name"),
    (b"\xfd7zXZ\x00", "is xz-compressed: give it a .xz name"),
    (b"BZh", "looks bzip2-compressed: give it a .bz2 name"),
    (b"\x93NUMPY", "is a .npy array: give its .npy name (with its .vocab.txt beside it)"),
)


@contextlib.contextmanager
def _strict_numbers() -> Iterator[None]:
    """Make numpy's text parser raise on trailing junk (older numpy only warned)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        yield


_NO_VALUES = np.empty(0, dtype=np.float32)


def _text_values(rest: bytes) -> np.ndarray | None:
    """The numbers of a text row after its word; None when a field is not a number (call under _strict_numbers)."""
    if not rest.strip():
        return _NO_VALUES  # np.fromstring reads a string of only whitespace as [-1.0]
    try:
        return np.fromstring(rest, dtype=np.float32, sep=" ")
    except (ValueError, DeprecationWarning):
        return None


def _text_row(line: bytes) -> tuple[bytes, np.ndarray] | None:
    """``(word, values)`` when ``line`` is a word followed by at least one number, else None."""
    word, _, rest = line.rstrip().partition(b" ")
    if not word:
        return None
    with _strict_numbers():
        values = _text_values(rest)
    return (word, values) if values is not None and values.size else None


def _shown(raw: bytes, width: int = 60) -> str:
    return raw[:width].decode("utf-8", "replace").rstrip("\r\n")


def _header_hint(raw: bytes, line: bytes) -> str:
    for magic, what in _MAGIC:
        if raw.startswith(magic):
            return f"the file {what}"
    fields = line.split()
    if len(fields) == 2 and all(x.isdigit() for x in fields):
        return "the dimension must be at least 1"
    row = _text_row(line)
    if row is not None and (row[1].size >= 2 or not row[0].isdigit()):
        return (
            f"line 1 looks like a vector (a word and {row[1].size} numbers), not a header: for a file without a "
            "header (GloVe's layout) use no_header=True / --no-header"
        )
    return "a file without a header (GloVe's layout) needs no_header=True / --no-header"


def _read_header(f: IO[bytes], path: Path) -> tuple[int, int, int]:
    """Parse the ``count dimension`` line; return ``(count, dimension, bytes it takes)``.  A UTF-8 BOM is skipped."""
    raw = f.readline(4096)
    if not raw:
        raise ParvecError(f"{path}: the file is empty (expected a '<count> <dimension>' header)")
    line = raw[len(_BOM) :] if raw.startswith(_BOM) else raw
    fields = line.split()
    ended = raw.endswith(b"\n") or len(raw) < 4096  # no newline only when the file ends there
    if ended and len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit() and int(fields[1]) > 0:
        return int(fields[0]), int(fields[1]), len(raw)
    if not ended:
        line += f.readline(1 << 20)  # the rest of a long first line, to say what it is
    raise ParvecError(
        f"{path}:1: malformed header {_shown(line)!r}: expected '<count> <dimension>' as word2vec writes; "
        + _header_hint(raw, line)
    )


def _check_options(limit: int | None, unicode_errors: str) -> None:
    if limit is not None and limit < 0:
        raise ParvecError(f"limit must be >= 0, got {limit}")
    if unicode_errors not in _UNICODE_ERRORS:
        raise ParvecError(f"unicode_errors must be 'strict', 'replace' or 'ignore', got {unicode_errors!r}")


# ---------------------------------------------------------------------- binary rows
# A problem found while scanning binary rows: (row index, offset in the buffer, kind, what).  kind is "end" (the
# data ends where a row should start), "truncated" (it ends inside a row) or "structure" (the bytes do not fall
# into word, space, vector, separator: a wrong dimension in the header, or a damaged file).
_Problem = tuple[int, int, str, str]


def _scan_binary(
    buf: bytes, pos: int, dim: int, max_rows: int, newline: bool | None, at_eof: bool, row: int
) -> tuple[list[tuple[int, int]], int, bool | None, _Problem | None]:
    """Parse binary rows of ``buf[pos:]``: word, space, ``dim`` little-endian float32, then word2vec.c's newline.

    gensim 4 writes no newline after a vector; a file uses one layout throughout, fixed by the byte after its
    first vector (``newline``: None until seen).  Words are non-empty and hold no newline.  Returns the
    ``(word start, word end)`` of each complete row (the vector follows the space at word end), the position
    after the last one, the layout and the first problem.  Without a problem the scan stops after ``max_rows``
    rows, or before a row ``buf`` does not hold whole (a problem only when ``at_eof``).  ``row`` is the index of
    the first row scanned.
    """
    vec = 4 * dim
    spans: list[tuple[int, int]] = []
    n = len(buf)
    while len(spans) < max_rows:
        start = pos
        if row > 0:  # the separator between the previous vector and this row
            if pos >= n:
                if at_eof:
                    return spans, start, newline, (row, start, "end", "")
                break
            sep = buf[pos] == 10
            if newline is None:
                newline = sep
            if sep != newline:
                what = (
                    "no newline after the previous vector, unlike the vectors before it"
                    if newline
                    else "a newline after the previous vector, unlike the vectors before it"
                )
                return spans, start, newline, (row, start, "structure", what)
            pos += sep
        sp = buf.find(b" ", pos, pos + _MAX_WORD_BYTES + 1)
        if sp < 0:
            if not at_eof and n - pos <= _MAX_WORD_BYTES:
                pos = start
                break
            if at_eof and not buf[pos:].strip():
                return spans, start, newline, (row, pos, "end", "")
            if at_eof:
                return spans, start, newline, (row, pos, "truncated", "truncated file: a word without its vector")
            what = f"no space after the word within {_MAX_WORD_BYTES} bytes"
            return spans, start, newline, (row, pos, "structure", what)
        if sp == pos or buf.find(b"\n", pos, sp) >= 0:
            what = "an empty word" if sp == pos else "a newline inside the word"
            return spans, start, newline, (row, pos, "structure", what)
        if sp + 1 + vec > n:
            if not at_eof:
                pos = start
                break
            what = f"truncated vector: expected {vec} bytes, found {n - sp - 1}"
            return spans, start, newline, (row, pos, "truncated", what)
        spans.append((pos, sp))
        pos = sp + 1 + vec
        row += 1
    return spans, pos, newline, None


def _sniff_size(dim: int) -> int:
    return min(64 << 20, max(_SNIFF_BYTES, (_SNIFF_ROWS + 1) * (4 * dim + 1024)))


def _read_start(path: Path) -> tuple[int, int, int, bytes, bool]:
    """``(count, dim, header bytes, the bytes after the header (a few rows' worth), whether that is all)``."""
    try:
        with open_input(path) as f:
            count, dim, header_len = _read_header(f, path)
            want = _sniff_size(dim)
            body = f.read(want)
            at_eof = len(body) < want or not f.read(1)
    except READ_ERRORS as exc:
        raise ParvecError(f"{path}: cannot read: {exc}") from None
    return count, dim, header_len, body, at_eof


@dataclasses.dataclass(frozen=True)
class _Sniff:
    kind: str  # "text"/"binary": the first rows are that layout; "text?"/"binary?": neither parses, a guess
    values: int  # how many numbers the first body line holds when kind is "text"
    dim: int


def _classify(body: bytes, count: int, dim: int, at_eof: bool) -> _Sniff:
    """Tell the layout from the bytes after the header.

    A first line that is a word and numbers makes the file text ("text"), whatever the header says, so that
    a text file with a wrong header is reported as such.  The one exception is a binary first vector whose
    bytes spell a number up to a newline byte: binary when that line ends inside the first vector, bytes no
    text holds follow within it, and the next line is not a text row like the first.  Otherwise the file is
    binary when its first rows parse as word, space, ``dim`` float32 values and separator and most of their
    vectors hold bytes no text holds.  Rows that parse but are text are "text?" (a damaged text file, or a
    tiny binary one whose vector bytes happen to be printable); a file whose rows do not parse is guessed
    from its first line's bytes ("text?" or "binary?").  ``binary=True`` is refused for "text" and "text?":
    reading text bytes as float32 is how a malformed text file turns into garbage words.
    """
    if not body.strip():
        return _Sniff("empty", 0, dim)
    nl = body.find(b"\n")
    line = body[:nl] if nl >= 0 else (body if at_eof else b"")
    line_end = nl if nl >= 0 else len(body)
    row = _text_row(line) if line else None
    spans, _, _, problem = _scan_binary(body, 0, dim, max(1, min(count, _SNIFF_ROWS)), None, at_eof, 0)
    # Binary evidence: the first rows parse as binary, and most of their vectors hold bytes no text holds.  (One
    # damaged row of a text file among clean ones is not enough: with one value per line "0.5 " is 4 bytes,
    # and a text file can parse as binary rows; real float32 vectors are not text at all.)
    vectors = [body[w + 1 : w + 1 + 4 * dim] for _, w in spans] if problem is None else []
    evidence = bool(vectors) and 2 * sum(not _is_text(v) for v in vectors) > len(vectors)
    vector_end = (spans[0][1] + 1 + 4 * dim) if vectors else 0  # where the first vector ends, read as binary
    past_line = evidence and line_end < vector_end and _NOT_TEXT.search(body, line_end, vector_end) is not None
    if past_line:
        next_nl = body.find(b"\n", line_end + 1)
        following = body[line_end + 1 : next_nl if next_nl >= 0 else len(body)]
        next_row = _text_row(following)
        past_line = bool(following.strip()) and (next_row is None or row is None or next_row[1].size != row[1].size)
    if row is not None:
        return _Sniff("binary", 0, dim) if past_line else _Sniff("text", row[1].size, dim)
    if evidence:
        return _Sniff("binary", 0, dim)
    if vectors:  # rows that parse as binary, but text bytes: a damaged text file (or a tiny, printable binary one)
        return _Sniff("text?", 0, dim)
    values_part = (line or body[:256]).partition(b" ")[2]
    printable = _NOT_TEXT.search(values_part) is None and _is_utf8(values_part, cut_ok=not line)
    return _Sniff("text?" if printable else "binary?", 0, dim)


def _is_text(raw: bytes) -> bool:
    """Whether ``raw`` could be a piece of a text file: UTF-8 (but for a character cut at the end), no controls."""
    return _NOT_TEXT.search(raw) is None and _is_utf8(raw, cut_ok=True)


def _sniff(path: Path) -> _Sniff:
    count, dim, _, body, at_eof = _read_start(path)
    return _classify(body, count, dim, at_eof)


def detect_binary(path: PathLike) -> bool:
    """Whether a word2vec file is in the binary layout (False: text), judged from its first rows.

    A file is binary only when the bytes after its header parse as binary vectors (word, space,
    ``dimension`` float32 values, separator); a file whose first vector line is a word and numbers is text,
    even when its header disagrees with that line (reading it then says so).

    Example:
        >>> detect_binary("GoogleNews-vectors-negative300.bin.gz")  # doctest: +SKIP
        True
    """
    return _sniff(Path(path)).kind.startswith("binary")


def _dims_that_fit(path: Path, count: int) -> list[int]:
    """The dimensions (up to ``_MAX_GUESS_DIM``) with which the file's first binary rows parse cleanly."""
    try:
        _, _, _, body, at_eof = _read_start(path)
    except ParvecError:
        return []
    rows = max(1, min(count, _SNIFF_ROWS))
    fits = []
    for d in range(1, min(_MAX_GUESS_DIM, len(body) // 4) + 1):
        spans, end, _, problem = _scan_binary(body, 0, d, rows, None, at_eof, 0)
        if problem is not None or len(spans) < rows:
            continue
        if any(not _is_utf8(body[a:b]) for a, b in spans):
            continue
        if at_eof:  # the whole file is here: all of it must parse
            spans, end, _, problem = _scan_binary(body, 0, d, count, None, True, 0)
            if problem is not None or body[end:].strip():
                continue
        fits.append(d)
        if len(fits) > 1:
            break
    return fits


def _is_utf8(raw: bytes, cut_ok: bool = False) -> bool:
    """Whether ``raw`` is valid UTF-8 (``cut_ok``: but for a character cut short at its end)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return cut_ok and exc.reason == "unexpected end of data"
    return True


def _dim_note(path: Path, count: int, dim: int) -> str:
    fits = _dims_that_fit(path, count)
    if len(fits) == 1 and fits[0] != dim:
        return f" (the first vectors fit dimension {fits[0]}, not the header's dimension {dim}: fix the header)"
    return ""


def _binary_error(path: Path, problem: _Problem, base: int, count: int, dim: int) -> ParvecError:
    row, offset, kind, what = problem
    if kind == "end":
        what = f"the file ends: the header promises {count} vectors but only {row} follow"
    elif kind == "structure":
        what = f"{what}: the rows do not fit the header's dimension {dim}, or the file is damaged"
    return ParvecError(f"{path}: vector {row + 1} at byte {base + offset}: {what}{_dim_note(path, count, dim)}")


def _decode_word(raw: bytes, unicode_errors: str, path: Path, where: str, note: str = "") -> str:
    try:
        return raw.decode("utf-8", errors=unicode_errors)
    except UnicodeDecodeError as exc:
        fix = note or "; use --unicode-errors replace (unicode_errors='replace') to read it anyway"
        raise ParvecError(f"{path}:{where}: invalid UTF-8 in word {raw[:60]!r} ({exc.reason}){fix}") from None


def _allocate(n: int, dim: int, path: Path, count: int, size: int | None) -> np.ndarray:
    # Each row takes at least 2 * dim + 1 bytes, so an uncompressed file's size bounds the rows it can hold:
    # a header promising more is caught when the rows run out, not by allocating what it promises.
    rows = n if size is None else min(n, size // (2 * dim + 1) + 1)
    try:
        return np.empty((rows, dim), dtype=np.float32)
    except (MemoryError, ValueError):
        raise ParvecError(
            f"{path}:1: the header asks for {count} x {dim} float32 values, which do not fit in memory; "
            "use limit= to read fewer vectors (or fix the header if it is wrong)"
        ) from None


def _read_binary_rows(
    f: IO[bytes], path: Path, n: int, count: int, dim: int, unicode_errors: str, header_len: int, size: int | None
) -> tuple[np.ndarray, list[str]]:
    words: list[str] = []
    out: np.ndarray | None = None
    buf, pos, base, eof, newline, i = b"", 0, header_len, False, None, 0
    little = np.dtype("<f4")
    while i < n:
        spans, end, newline, problem = _scan_binary(buf, pos, dim, n - i, newline, eof, i)
        if spans and out is None:
            out = _allocate(n, dim, path, count, size)
        for ws, we in spans:
            try:
                words.append(buf[ws:we].decode("utf-8", errors=unicode_errors))
            except UnicodeDecodeError:
                # A wrong dimension in the header shifts words into vector bytes: say that, not "use replace".
                where = f" vector {i + 1} at byte {base + ws}"
                words.append(_decode_word(buf[ws:we], unicode_errors, path, where, _dim_note(path, count, dim)))
            assert out is not None
            out[i] = np.frombuffer(buf, dtype=little, count=dim, offset=we + 1)
            i += 1
        if problem is not None:
            raise _binary_error(path, problem, base, count, dim)
        pos = end
        if i < n:
            block = f.read(_READ_BLOCK)
            eof = not block
            base += pos
            buf = buf[pos:] + block
            pos = 0
    if n == count:
        _check_binary_tail(f, path, buf[pos:], base + pos, newline, count, dim)
    return (out if out is not None else np.empty((0, dim), dtype=np.float32)), words


def _check_binary_tail(
    f: IO[bytes], path: Path, rest: bytes, offset: int, newline: bool | None, count: int, dim: int
) -> None:
    """After the last vector the header promises: word2vec.c's newline, then only whitespace."""
    if not rest:
        rest = f.read(_READ_BLOCK)
    if newline is not False and rest[:1] == b"\n":
        rest, offset = rest[1:], offset + 1
    while rest:
        data = rest.lstrip()
        if data:
            raise ParvecError(
                f"{path}: byte {offset + len(rest) - len(data)}: data after the {count} vectors the header promises "
                f"(is its count right?){_dim_note(path, count, dim)}"
            )
        offset += len(rest)
        rest = f.read(_READ_BLOCK)


# ---------------------------------------------------------------------- text rows
def _layout_hint(path: Path, sniff: _Sniff | None) -> str:
    try:
        kind = (sniff or _sniff(path)).kind
    except ParvecError:
        return ""
    if kind == "binary":
        return " (this looks like a binary word2vec file: use binary=True / --binary)"
    if kind == "binary?":
        return " (its bytes are not text: a binary word2vec file? try binary=True / --binary)"
    return ""


def _read_text_rows(
    lines: Iterable[bytes],
    path: Path,
    n: int,
    count: int,
    dim: int,
    unicode_errors: str,
    size: int | None,
    *,
    first_line: int,
    source: str,
    check_tail: bool,
    mismatch_note: str = "",
) -> tuple[np.ndarray, list[str]]:
    """Read ``n`` rows ``word v1 .. v_dim`` from ``lines`` (line numbers from ``first_line``).

    ``source`` says where ``dim`` comes from ("the header says").  Every row must have exactly ``dim``
    numbers and end in whitespace (a last line cut inside a number has neither newline nor trailing space);
    with ``check_tail`` only blank lines may follow the ``count`` rows.
    """
    words: list[str] = []
    out: np.ndarray | None = None
    i = 0
    line_no = first_line - 1
    it = iter(lines)
    with _strict_numbers():
        for line in it if n else ():
            line_no += 1
            word_raw, _, rest = line.rstrip().partition(b" ")
            values = _text_values(rest) if word_raw else None
            if values is None or values.size != dim or line[-1] not in _WHITESPACE:
                _text_row_error(path, line_no, line, word_raw, rest, values, dim, source, mismatch_note)
            words.append(_decode_word(word_raw, unicode_errors, path, str(line_no)))
            if out is None:
                out = _allocate(n, dim, path, count, size)
            out[i] = values
            i += 1
            if i == n:
                break
    if i < n:
        raise ParvecError(
            f"{path}:{line_no + 1}: truncated file: the header promises {count} vectors but only {i} follow"
        )
    if check_tail:
        for line in it:
            line_no += 1
            if line.strip():
                raise ParvecError(
                    f"{path}:{line_no}: the header promises {count} vectors, but more lines follow "
                    f"({_shown(line.strip(), 40)!r}): is its count right?"
                )
    return (out if out is not None else np.empty((0, dim), dtype=np.float32)), words


def _text_row_error(
    path: Path,
    line_no: int,
    line: bytes,
    word_raw: bytes,
    rest: bytes,
    values: np.ndarray | None,
    dim: int,
    source: str,
    mismatch_note: str,
) -> NoReturn:
    if not line.strip():
        what = f"dimension mismatch: 0 values, but {source} {dim} (an empty line)"
    elif not word_raw:
        what = "the line starts with a space: no word before the values"
    elif values is None:
        bad = next((x for x in rest.split() if _text_values(x) is None), rest.strip())
        what = f"non-numeric value {_shown(bad, 30)!r} in the vector of {_shown(word_raw, 50)!r}"
    elif values.size != dim:
        what = f"dimension mismatch: {values.size} values, but {source} {dim}{mismatch_note}"
    else:
        what = (
            "the last line ends without a newline: the file looks truncated (its last value may be cut short); "
            "add the newline if the file is complete"
        )
    if line[-1] not in _WHITESPACE and values is not None and values.size != dim:
        what += " (the file ends on this line: truncated?)"
    raise _TextRowError(f"{path}:{line_no}: {what}")


class _TextRowError(ParvecError):
    """A text row that does not parse (the reader adds the layout hint when it is the first row)."""


def _read_text_file(
    f: IO[bytes],
    path: Path,
    n: int,
    count: int,
    dim: int,
    unicode_errors: str,
    size: int | None,
    sniff: _Sniff | None,
) -> tuple[np.ndarray, list[str]]:
    try:
        return _read_text_rows(
            f,
            path,
            n,
            count,
            dim,
            unicode_errors,
            size,
            first_line=2,
            source="the header says",
            check_tail=n == count,
        )
    except _TextRowError as exc:
        msg = str(exc)
        if msg.startswith(f"{path}:2: "):
            msg += _layout_hint(path, sniff)
        raise ParvecError(msg) from None


def _read_headerless(path: Path, limit: int | None, unicode_errors: str) -> tuple[np.ndarray, list[str]]:
    """A text file without the header line (GloVe's layout): a first pass counts the rows, as gensim does."""

    def first_line(f: IO[bytes]) -> bytes:
        line = f.readline()
        return line[len(_BOM) :] if line.startswith(_BOM) else line

    with open_input(path) as f:
        first = first_line(f)
        row = _text_row(first)
        if row is None:
            raise ParvecError(
                f"{path}:1: not a vector line {_shown(first)!r}: a file without a header has a word and its "
                "numbers on every line"
            )
        dim = row[1].size
        rows, line_no = 1, 1
        for line in f:
            if limit is not None and rows >= limit:
                break
            line_no += 1
            if line.strip():
                rows = line_no  # blank lines count only before a vector (and are errors there)
    n = rows if limit is None else min(rows, limit)
    fields = first.split()
    header_like = len(fields) == 2 and all(x.isdigit() for x in fields)
    note = " (line 1 looks like a '<count> <dimension>' header: leave out no_header=True / --no-header)"
    with open_input(path) as f:
        lines = itertools.chain([first_line(f)], f)
        try:
            return _read_text_rows(
                lines,
                path,
                n,
                rows,
                dim,
                unicode_errors,
                _plain_size(path),
                first_line=1,
                source="line 1 has",
                check_tail=False,
                mismatch_note=note if header_like else "",
            )
        except _TextRowError as exc:
            raise ParvecError(str(exc)) from None


def _plain_size(path: Path) -> int | None:
    """The size of an uncompressed file (it bounds how many rows the file can hold)."""
    return None if is_compressed(path) else path.stat().st_size


def read_word2vec(
    path: PathLike,
    binary: bool | None = False,
    limit: int | None = None,
    unicode_errors: str = "strict",
    datatype: Any = np.float32,
    no_header: bool = False,
) -> tuple[np.ndarray, list[str]]:
    """Read a word2vec text or binary file; return ``(vectors [n, dim], words)``.

    ``binary=None`` detects the layout (see :func:`detect_binary`); ``binary=True`` on a file whose first
    vector line is text, or ``False`` on binary bytes, is an error that says which layout to use.  The header
    must agree with the file: every text line holds a word and exactly ``dimension`` numbers, binary rows fit
    ``dimension`` float32 values, and the file holds exactly ``count`` vectors (blank lines may follow).
    A UTF-8 BOM and CRLF line ends are accepted.  ``no_header=True`` reads a text file without the header
    line (GloVe's layout), counting its lines first, as gensim does.  ``limit`` reads only the first
    ``limit`` vectors (word2vec files are sorted by descending frequency) and does not look further.
    ``unicode_errors`` is passed to ``bytes.decode`` for the words.  A word that occurs twice keeps its first
    vector, as gensim does.  Bad input raises :class:`ParvecError` naming the file and the line (text) or the
    vector and byte offset (binary), and what disagrees.

    Example:
        >>> vectors, words = read_word2vec("vectors.bin", binary=True, limit=100000)  # doctest: +SKIP
    """
    p = Path(path)
    _check_options(limit, unicode_errors)
    if no_header and binary:
        raise ParvecError(f"{p}: no_header=True / --no-header is for text files; binary word2vec files have a header")
    try:
        if no_header:
            out, words = _read_headerless(p, limit, unicode_errors)
        else:
            sniff = None
            if binary is None or binary:
                sniff = _sniff(p)
                if binary is None:
                    binary = sniff.kind.startswith("binary")
                elif sniff.kind == "text":
                    note = f"; the header says dimension {sniff.dim}" if sniff.values != sniff.dim else ""
                    raise ParvecError(
                        f"{p}:2: this looks like a text word2vec file (a word and {sniff.values} numbers{note}): "
                        "use binary=False / --text"
                    )
                elif sniff.kind == "text?":
                    raise ParvecError(
                        f"{p}:2: this looks like a text word2vec file (its bytes are text, not binary vectors), but "
                        "line 2 is not a word and numbers: use binary=False / --text to see what is wrong with it"
                    )
            with open_input(p) as f:
                count, dim, header_len = _read_header(f, p)
                n = count if limit is None else min(count, limit)
                size = _plain_size(p)
                if binary:
                    out, words = _read_binary_rows(f, p, n, count, dim, unicode_errors, header_len, size)
                else:
                    out, words = _read_text_file(f, p, n, count, dim, unicode_errors, size, sniff)
    except READ_ERRORS as exc:
        raise ParvecError(f"{p}: cannot read: {exc}") from None
    if len(set(words)) != len(words):
        words, out = _drop_duplicates(words, out, p)
    return out.astype(datatype, copy=False), words


def _drop_duplicates(words: list[str], out: np.ndarray, path: Path) -> tuple[list[str], np.ndarray]:
    seen: set[str] = set()
    keep = np.zeros(len(words), dtype=bool)
    for i, w in enumerate(words):
        if w not in seen:
            seen.add(w)
            keep[i] = True
    dropped = [w for w, k in zip(words, keep, strict=True) if not k]
    log.warning("%s: %d duplicate words (e.g. %r); keeping the first vector of each", path, len(dropped), dropped[0])
    return [w for w, k in zip(words, keep, strict=True) if k], out[keep]


# ---------------------------------------------------------------------- writing
def _check_keys(keys: Sequence[str], n: int, forbidden: str, what: str) -> None:
    if len(keys) != n:
        raise ParvecError(f"{what}: {len(keys)} keys for {n} vectors")
    for i, key in enumerate(keys):
        if not isinstance(key, str) or not key or (" " in forbidden and " " in key) or "\n" in key:
            raise ParvecError(
                f"{what}: key {i} ({key!r}) cannot be written: keys must be non-empty strings "
                f"without {' or '.join(repr(c) for c in forbidden)}"
            )


def write_word2vec(
    path: PathLike,
    vectors: np.ndarray,
    keys: Sequence[str],
    binary: bool = False,
    write_header: bool = True,
) -> None:
    """Write vectors in word2vec.c's text or binary layout (compressed if the name ends .gz/.bz2/.xz).

    The write is atomic (see :func:`parvec.fileio.atomic_output`).  Keys must not contain spaces or newlines.

    Example:
        >>> import numpy as np
        >>> write_word2vec("vec.txt", np.eye(2, dtype=np.float32), ["a", "b"])  # doctest: +SKIP
        >>> open("vec.txt").read()  # doctest: +SKIP
        '2 2\\na 1 0 \\nb 0 1 \\n'
    """
    vectors = np.asarray(vectors)
    if vectors.ndim != 2:
        raise ParvecError(f"{path}: vectors must be a 2-D array, got shape {vectors.shape}")
    n, dim = vectors.shape
    _check_keys(keys, n, " \n", str(path))
    rows_per_write = word2vec_block_rows(dim)
    blocks = (([keys[i] for i in range(lo, min(n, lo + rows_per_write))], vectors[lo:min(n, lo + rows_per_write)])
              for lo in range(0, n, rows_per_write))
    write_word2vec_blocks(path, n, dim, blocks, binary=binary, write_header=write_header, check_keys=False)


def word2vec_block_rows(dim: int) -> int:
    """The rows :func:`write_word2vec_blocks` formats at a time (about 4 MiB of text).

    Example:
        >>> word2vec_block_rows(100)
        3495
    """
    return max(1, (1 << 22) // max(1, 12 * dim))


def write_word2vec_blocks(path: PathLike, n: int, dim: int, blocks: Iterable[tuple[Sequence[str], np.ndarray]],
                          binary: bool = False, write_header: bool = True, check_keys: bool = True) -> None:
    """:func:`write_word2vec` from ``(keys, rows)`` blocks, in order, of ``n`` vectors of ``dim`` in all: the rows
    are never one matrix (a sharded model's, assembled from its shards a block at a time).  The write is atomic;
    a key that cannot be written, or blocks that do not add up to ``n``, leave no file.

    Example:
        >>> import numpy as np
        >>> write_word2vec_blocks("vec.txt", 2, 2, [(["a"], np.eye(2)[:1]), (["b"], np.eye(2)[1:])])  # doctest: +SKIP
    """
    from parvec import storage

    if storage.is_url(path):  # written locally, then uploaded whole (an object store has no rename)
        with storage.write_output(os.fspath(path)) as local:
            write_word2vec_blocks(local, n, dim, blocks, binary, write_header, check_keys)
        return
    fmt = "%.9g " * dim + "\n"  # word2vec.c's trailing space, then the newline
    done = 0
    with atomic_output(path, "wb", compress=True) as f:
        if write_header:
            f.write(f"{n} {dim}\n".encode())
        for keys, block in blocks:
            data = np.ascontiguousarray(block, dtype="<f4")
            if data.ndim != 2 or data.shape[1] != dim:
                raise ParvecError(f"{path}: a block of vectors of shape {data.shape}, expected (rows, {dim})")
            if check_keys:
                _check_keys(keys, len(data), " \n", str(path))
            if binary:
                f.write(b"".join(key.encode("utf-8") + b" " + row.tobytes() + b"\n"
                                 for key, row in zip(keys, data, strict=True)))
            else:
                rows = data.astype(np.float64).tolist()
                f.write("".join(f"{key} " + fmt % tuple(row) for key, row in zip(keys, rows, strict=True))
                        .encode("utf-8"))
            done += len(data)
        if done != n:
            raise ParvecError(f"{path}: {done} vectors written, the header says {n}")


# ---------------------------------------------------------------------- .npy + vocabulary
def is_pickle(path: PathLike) -> bool:
    """Whether ``path`` holds a Python pickle (protocol 2-5), plain or gzip/bz2-compressed, as gensim's
    ``save()`` writes ``.kv`` and ``.model`` files.

    Example:
        >>> import pickle, tempfile
        >>> with tempfile.NamedTemporaryFile(suffix=".kv") as f:
        ...     _ = f.write(pickle.dumps({"a": 1}, protocol=4)); f.flush(); is_pickle(f.name)
        True
    """
    try:
        with open(path, "rb") as f:
            head = f.read(2)
            if head[:2] in (b"\x1f\x8b", b"BZ"):
                f.seek(0)
                with (gzip.open if head == b"\x1f\x8b" else bz2.open)(f) as z:
                    head = z.read(2)
    except (OSError, EOFError, zlib.error):
        return False
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def refuse_pickle(path: PathLike, what: str) -> None:
    """Raise :class:`ParvecError` if ``path`` is a pickle (a gensim ``.kv``/``.model`` file), saying why parvec
    does not read pickles and how to convert the file; ``what`` names the loader (``"KeyedVectors.load"``).

    Example:
        >>> refuse_pickle("vectors.txt", "KeyedVectors.load")  # doctest: +SKIP
    """
    p = Path(path)
    if not (p.is_file() and is_pickle(p)):
        return
    raise ParvecError(
        f"{p}: a pickled file (gensim's save() writes .kv and .model files so); {what} does not read pickles: "
        "unpickling runs code stored in the file, and a pickle is tied to the gensim, numpy and Python versions "
        "that wrote it. Convert it in gensim: "
        f"KeyedVectors.load({str(p)!r}).save_word2vec_format('vectors.bin', binary=True) (for a model: "
        f"Word2Vec.load({str(p)!r}).wv.save_word2vec_format('vectors.bin', binary=True)), then load that with "
        "parvec.KeyedVectors.load_word2vec_format('vectors.bin', binary=True)"
    )


def npy_paths(path: PathLike) -> tuple[Path, Path, Path]:
    """The ``(vectors .npy, vocabulary .vocab.txt, counts .counts.npy)`` paths for a prefix or ``.npy`` path.

    Example:
        >>> [p.name for p in npy_paths("out/vec.npy")]
        ['vec.npy', 'vec.vocab.txt', 'vec.counts.npy']
    """
    text = os.fspath(path)
    for suffix in (".vocab.txt", ".counts.npy", ".npy"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
            break
    return Path(text + ".npy"), Path(text + ".vocab.txt"), Path(text + ".counts.npy")


def save_npy(path_prefix: PathLike, vectors: np.ndarray, keys: Sequence[str],
             counts: np.ndarray | None = None) -> Path | str:
    """Save ``PREFIX.npy`` (vectors), ``PREFIX.vocab.txt`` (keys) and optionally ``PREFIX.counts.npy``.

    Returns the ``.npy`` path.  Each file is written atomically.  Keys must not contain newlines.  A URL prefix
    (``s3://bucket/vectors``) writes the files locally, then uploads each (:mod:`parvec.storage`); its ``.npy``
    URL is returned.

    Example:
        >>> import numpy as np
        >>> save_npy("out/vec", np.eye(2, dtype=np.float32), ["a", "b"])  # doctest: +SKIP
        PosixPath('out/vec.npy')
    """
    from parvec import storage

    if storage.is_url(path_prefix):
        return _save_npy_url(os.fspath(path_prefix), vectors, keys, counts)
    vec_path, vocab_path, counts_path = npy_paths(path_prefix)
    vectors = np.asarray(vectors)
    if vectors.ndim != 2:
        raise ParvecError(f"{vec_path}: vectors must be a 2-D array, got shape {vectors.shape}")
    _check_keys(keys, len(vectors), "\n", str(vocab_path))
    if counts is not None and len(counts) != len(vectors):
        raise ParvecError(f"{counts_path}: {len(counts)} counts for {len(vectors)} vectors")
    with atomic_output(vec_path, "wb") as f:
        write_array(f, vectors)
    with atomic_output(vocab_path, "wb") as f:
        f.write("".join(key + "\n" for key in keys).encode("utf-8"))
    if counts is not None:
        with atomic_output(counts_path, "wb") as f:
            write_array(f, np.asarray(counts, dtype=np.int64))
    elif counts_path.exists():
        counts_path.unlink()  # a stale counts file from an earlier save would no longer match
    return vec_path


def _npy_urls(url: str) -> tuple[str, str, str]:
    # npy_paths for a URL (Path would fold its "//")
    for suffix in (".vocab.txt", ".counts.npy", ".npy"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
            break
    return url + ".npy", url + ".vocab.txt", url + ".counts.npy"


def _save_npy_url(url: str, vectors: np.ndarray, keys: Sequence[str], counts: np.ndarray | None) -> str:
    import tempfile

    from parvec import storage

    urls = _npy_urls(url)
    storage.check_writable(urls[0])
    with tempfile.TemporaryDirectory(prefix="parvec-out-") as tmp:
        local = npy_paths(Path(tmp) / urls[0].rsplit("/", 1)[-1])
        try:
            save_npy(local[0], vectors, keys, counts)
        except ParvecError as exc:
            raise storage.renamed(exc, {str(Path(tmp)): url.rsplit("/", 1)[0]}) from None
        for p, target in zip(local, urls, strict=True):
            if p.exists():
                storage.upload(p, target)
            elif storage.url_exists(target):  # a stale counts object from an earlier save would no longer match
                fs, key = storage.filesystem(target)
                fs.rm_file(key)
    return urls[0]


def _load_array(path: Path, mmap: bool = False) -> np.ndarray:
    """``np.load``, strict: the file must hold exactly the bytes its header's shape and dtype need.

    (``np.load`` ignores bytes after the array, so a damaged shape in the header could read as a
    smaller array.)
    """
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    try:
        with open(path, "rb") as f:
            read_header = readers.get(np.lib.format.read_magic(f))
            if read_header is not None:
                shape, _, dtype = read_header(f)
                have = os.fstat(f.fileno()).st_size - f.tell()
                need = math.prod(shape) * dtype.itemsize
                if have != need and not dtype.hasobject:
                    raise ParvecError(
                        f"{path}: {have} bytes of data, but its header's {dtype} array of shape {shape} needs {need} "
                        "(a damaged or truncated file)"
                    )
        array: np.ndarray = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        return array
    except _NPY_ERRORS as exc:
        raise ParvecError(f"{path}: not a readable .npy array: {exc}") from None


def load_npy(path_prefix: PathLike, mmap: bool = False) -> tuple[np.ndarray, list[str], np.ndarray | None]:
    """Load what :func:`save_npy` wrote: ``(vectors, keys, counts or None)``.

    ``mmap=True`` memory-maps the vectors read-only instead of reading them.  The vectors must be a 2-D
    float array with at least one column (and exactly the bytes its header needs), the vocabulary one
    non-empty, distinct UTF-8 key per row, each line ended by a newline, and the counts (if present) one
    non-negative integer per row; anything else raises :class:`ParvecError` naming the file (and the line
    of the vocabulary).

    Example:
        >>> vectors, keys, counts = load_npy("out/vec.npy")  # doctest: +SKIP
    """
    from parvec import storage

    if storage.is_url(path_prefix):
        return _load_npy_url(os.fspath(path_prefix), mmap)
    vec_path, vocab_path, counts_path = npy_paths(path_prefix)
    for p in (vec_path, vocab_path):
        if not p.is_file():
            raise ParvecError(f"{p}: no such file (a .npy vector file needs {vocab_path.name} next to it)")
    vectors = _load_array(vec_path, mmap)
    if vectors.ndim != 2 or not np.issubdtype(vectors.dtype, np.floating) or vectors.shape[1] == 0:
        raise ParvecError(
            f"{vec_path}: expected a 2-D float array with at least one column, got {vectors.dtype} {vectors.shape}"
        )
    try:
        raw = vocab_path.read_bytes()
    except OSError as exc:
        raise ParvecError(f"{vocab_path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ParvecError(f"{vocab_path}:{line}: invalid UTF-8 ({exc.reason})") from None
    if text and not text.endswith("\n"):
        raise ParvecError(
            f"{vocab_path}:{text.count(chr(10)) + 1}: the last line has no newline: the file looks truncated "
            "(every key ends with a newline)"
        )
    keys = text.split("\n")
    keys.pop()  # every key ends with "\n"; the split leaves one empty string after the last
    if len(keys) != len(vectors):
        raise ParvecError(f"{vocab_path}: {len(keys)} keys, but {vec_path.name} has {len(vectors)} vectors")
    first_line: dict[str, int] = {}
    for line, key in enumerate(keys, 1):
        if not key:
            raise ParvecError(f"{vocab_path}:{line}: empty key")
        if first_line.setdefault(key, line) != line:
            raise ParvecError(f"{vocab_path}:{line}: duplicate key {key!r} (first on line {first_line[key]})")
    counts = None
    if counts_path.is_file():
        counts = _load_array(counts_path)
        if counts.shape != (len(keys),) or not np.issubdtype(counts.dtype, np.integer):
            raise ParvecError(f"{counts_path}: expected {len(keys)} integer counts, got {counts.dtype} {counts.shape}")
        if counts.size and counts.min() < 0:
            raise ParvecError(f"{counts_path}: negative count at row {int(np.flatnonzero(counts < 0)[0])}")
    return vectors, keys, counts


def _load_npy_url(url: str, mmap: bool) -> tuple[np.ndarray, list[str], np.ndarray | None]:
    import tempfile

    from parvec import storage

    urls = _npy_urls(url)
    for target in urls[:2]:
        if not storage.url_exists(target):
            raise ParvecError(f"{target}: no such object (a .npy vector file needs "
                              f"{urls[1].rsplit('/', 1)[-1]} next to it)")
    with tempfile.TemporaryDirectory(prefix="parvec-in-") as tmp:
        local = npy_paths(Path(tmp) / urls[0].rsplit("/", 1)[-1])
        for p, target in zip(local, urls, strict=True):
            if storage.url_exists(target):
                storage.download(target, p)
        try:
            return load_npy(local[0], mmap=mmap)  # a memory map outlives the unlinked file
        except ParvecError as exc:
            raise storage.renamed(exc, {tmp: url.rsplit("/", 1)[0]}) from None
