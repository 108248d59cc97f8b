"""Reading text: files, directories, globs, compressed inputs and streams, byte ranges, and the change checks.

Every reader yields sentences as lists of ``str`` tokens, the way word2vec.c and gensim's ``LineSentence`` read
text: one sentence per line, tokens split on whitespace as ``str.split()`` splits (a NUL byte counts as
whitespace, as word2vec.c's C strings end a word there), optional lower-casing, and a line longer than
``max_sentence_length`` tokens cut into consecutive pieces (never truncated).  The text is read in blocks of
1 MiB cut just after a whitespace byte (:data:`WHITESPACE`), so no token or UTF-8 character is split and a
100 MB single-line file is never read whole; the byte tokeniser (:mod:`parvec.corpus.encode`) reads the same
blocks through :meth:`TextSentences.blocks`.

- :class:`TextSentences`: a file (plain, ``.gz``, ``.bz2``, ``.xz``), several files read as one corpus
  (:func:`expand_inputs`: a list, a directory, a glob), or a stream (standard input ``-``, a FIFO, bash's
  ``<(...)``; read once).
- :class:`RangeSentences`: one byte range of a plain file (:func:`byte_ranges`, :func:`range_cuts`), so that
  several processes read their parts of one file: the sharded pipeline's counting and encoding tasks, and a
  replica that encodes its share of the input.
- :class:`IterableSentences`: the sentences of a restartable iterable of token lists.

A file is read twice (counted, then encoded) and both reads must see the same text: :class:`TextSentences`
compares each file's identity (:func:`file_state`: device, inode, size, mtime, ctime) before and after every
pass and hashes the bytes of a recently changed file (:func:`changed_recently`) in each pass; a change raises
:func:`input_changed`'s error naming the file.  :func:`check_input_unchanged` is the same check for a process
that reads a file the driver read before.

Example:
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "c.txt"
    >>> _ = path.write_text("the cat\\nsat on\\tthe mat\\n")
    >>> list(TextSentences(path, ReadOptions()))
    [['the', 'cat'], ['sat', 'on', 'the', 'mat']]
    >>> [list(RangeSentences(path, a, b, ReadOptions())) for a, b in byte_ranges(path, 2)]
    [[['the', 'cat'], ['sat']], [['on', 'the', 'mat']]]
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import logging
import os
import re
import stat
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from parvec.errors import ParvecError
from parvec.fileio import READ_ERRORS, STDIN, open_input
from parvec.kernels.wordtable import CLASSES, WORD

log = logging.getLogger(__name__)

__all__ = [
    "WHITESPACE",
    "InputFile",
    "IterableSentences",
    "RangeSentences",
    "ReadOptions",
    "TextSentences",
    "byte_ranges",
    "changed_recently",
    "check_input_unchanged",
    "expand_inputs",
    "file_state",
    "input_changed",
    "input_digest",
    "line_cuts",
    "range_cuts",
    "spooled",
]

T = TypeVar("T")

_BLOCK_BYTES = 1 << 20  # 1 MiB of text per read (its words, as str objects, take ~12 MiB)
# A file whose ctime is less than this before it is read may change again within the same tick of the
# file system's clock (coarse, and up to 2 s on some file systems) without a new ctime: its bytes are hashed
# in every pass, and its cache entry records the content's SHA-256 and checks it before use (git's "racily
# clean" entries).
_RACY_NS = 3_000_000_000
_GLOB_CHARS = frozenset("*?[")

# The bytes that end a token in every reader: those str.split() splits on among ASCII characters (the byte
# tokeniser's classes: space, \t, \n, \v, \f, \r, \x1c-\x1f) and NUL, which the readers read as a space.
WHITESPACE = bytes(b for b in range(256) if CLASSES[b] != WORD) + b"\x00"
_COMMON_SPACE = (b" ", b"\n", b"\t")
_RARE_SPACE = tuple(bytes([b]) for b in WHITESPACE if bytes([b]) not in _COMMON_SPACE)
_FIRST_SPACE = re.compile(b"[" + re.escape(WHITESPACE) + b"]")
_LINE_BREAK = re.compile(b"\n")


@dataclass(frozen=True)
class ReadOptions:
    """How text becomes tokens and which words make the vocabulary.

    Example:
        >>> ReadOptions(min_count=1).min_count
        1
    """

    min_count: int = 5
    max_vocab_size: int | None = None
    max_final_vocab: int | None = None
    max_sentence_length: int = 10000
    lowercase: bool = False
    unicode_errors: str = "strict"

    def validate(self) -> None:
        """Raise :class:`ParvecError` naming the first bad parameter."""
        if self.min_count < 0:  # 0 keeps every word, as 1 does (gensim's min_count=0)
            raise ParvecError(f"min_count must be >= 0, got {self.min_count}")
        if self.max_sentence_length < 1:
            raise ParvecError(f"max_sentence_length must be >= 1, got {self.max_sentence_length}")
        if self.max_final_vocab is not None and self.max_final_vocab < 1:
            raise ParvecError(f"max_final_vocab must be >= 1, got {self.max_final_vocab}")
        if self.unicode_errors not in ("strict", "replace", "ignore"):
            raise ParvecError(
                f"unicode_errors must be 'strict', 'replace' or 'ignore', got {self.unicode_errors!r}"
            )


# ---------------------------------------------------------------------- the inputs
def expand_inputs(path: Any, say_skipped: bool = True) -> list[Path] | None:
    """The files of a multi-file input, in reading order: a list or tuple of paths (each may itself be a
    directory or a glob), a directory (its files, by name, hidden ones skipped) or a glob pattern (sorted);
    empty files are left out.  None for one plain path (or ``-``), which the caller opens itself.

    Only regular files (or links to one) are read: a link to nothing is refused, naming it; the other entries
    of a directory or glob (subdirectories, which are not read, FIFOs, sockets, devices) are skipped and named in
    one warning (``say_skipped``: a caller that only checks the paths, before the reading, says nothing).

    Example:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> for name in ("b.txt", "a.txt", ".hidden"):
        ...     _ = (d / name).write_text("x\\n")
        >>> [p.name for p in expand_inputs(d)], expand_inputs(d / "a.txt")
        (['a.txt', 'b.txt'], None)
    """
    if isinstance(path, (list, tuple)):
        if not path:
            raise ParvecError("no input file given (an empty list)")
        found: list[Path] = []
        for p in path:
            if os.fspath(p) == STDIN:
                raise ParvecError("standard input ('-') cannot be one of several inputs")
            found += expand_inputs(p, say_skipped) or [Path(p)]
        kept = [p for p in found if _nonempty(p)]  # an empty file adds nothing (a missing one is named)
        if not kept:
            raise ParvecError(f"{found[0]}: the file is empty" if len(found) == 1 else "every input file is empty")
        return kept
    text = os.fspath(path)
    if text == STDIN:
        return None
    p = Path(text)
    if p.is_dir():
        try:
            entries = sorted(c for c in p.iterdir() if not c.name.startswith("."))
        except OSError as exc:
            raise ParvecError(f"{p}: cannot list the directory: {exc.strerror or exc}") from None
        files = [f for f in _files_to_read(entries, str(p), say_skipped, by_name=True) if _nonempty(f)]
        if not files:
            raise ParvecError(f"{p}: the directory holds no (non-empty, non-hidden) file to read")
        return files
    if not p.exists() and _GLOB_CHARS & set(text):
        files = _files_to_read([Path(f) for f in sorted(glob.glob(text))], text, say_skipped, by_name=False)
        files = [f for f in files if _nonempty(f)]
        if not files:
            raise ParvecError(f"{text}: the pattern matches no (non-empty) file")
        return files
    return None


def _files_to_read(entries: list[Path], where: str, say_skipped: bool, by_name: bool) -> list[Path]:
    """The regular files (or links to one) among the ``entries`` of a directory or glob ``where``.  A link to
    nothing (or a loop of links) is refused, naming it; the other entries are skipped, named (``by_name``: their
    names in the directory; else their paths) in one warning when ``say_skipped``."""
    files, skipped = [], []
    for entry in entries:
        try:
            mode = entry.stat().st_mode
        except OSError as exc:
            missing = isinstance(exc, FileNotFoundError)
            if entry.is_symlink():
                why = "does not exist" if missing else f"cannot be read ({exc.strerror or exc})"
                raise ParvecError(f"{entry}: a symbolic link to {os.readlink(entry)}, which {why} ({where} is read "
                                  "as a corpus of its files: remove the link, or restore what it names)") from None
            if missing:
                continue  # removed since it was listed
            raise ParvecError(f"{entry}: cannot read it: {exc.strerror or exc}") from None
        if stat.S_ISREG(mode):
            files.append(entry)
            continue
        name = entry.name if by_name else str(entry)
        if stat.S_ISDIR(mode):
            skipped.append(f"{name}/ (a directory: subdirectories are not read)")
        else:
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            skipped.append(f"{name} ({kind}, not a regular file)")
    if skipped and say_skipped:
        one = len(skipped) == 1
        log.warning("%s: skipped %d %s not a file to read: %s", where, len(skipped),
                    "entry that is" if one else "entries that are", ", ".join(skipped))
    return files


def _nonempty(path: Path) -> bool:
    try:
        return not path.is_file() or path.stat().st_size > 0
    except OSError:
        return True  # let the reader name the problem


# ---------------------------------------------------------------------- blocks cut at whitespace
def _last_whitespace(block: bytes) -> int:
    """The index of the last :data:`WHITESPACE` byte of ``block`` (-1: none).  The common ones are searched
    from the end (a few bytes back in text); the rare ones only after the last common one."""
    cut = max(block.rfind(b" "), block.rfind(b"\n"), block.rfind(b"\t"))
    for c in _RARE_SPACE:
        cut = max(cut, block.rfind(c, cut + 1))
    return cut


def _cut_at_whitespace(raw: Iterable[bytes], too_long: Callable[[], ParvecError]) -> Iterator[bytes]:
    """The bytes of ``raw`` again, NUL read as a space, in blocks that each end just after a whitespace byte
    (the last one: whatever is left), so no token or UTF-8 character is split between two blocks.  A token
    that grows past 256 blocks raises ``too_long()``."""
    carry = b""
    for block in raw:
        if b"\x00" in block:  # NUL is whitespace: it never becomes part of a word
            block = block.replace(b"\x00", b" ")
        block = carry + block
        cut = _last_whitespace(block)
        if cut < 0:
            carry = block
            if len(carry) > 256 * _BLOCK_BYTES:
                raise too_long()
            continue
        carry, block = block[cut + 1 :], block[: cut + 1]
        yield block
    if carry:
        yield carry


class _BlockText:
    """What the text readers share: sentences made from blocks of text cut at whitespace.

    A subclass gives :attr:`options`, :meth:`blocks` (``(name, block, where, last)`` tuples: ``where`` locates the
    block for error messages, ``last`` marks the ``b""`` that ends a file or range) and :meth:`decode`.
    """

    options: ReadOptions

    def blocks(self) -> Iterator[tuple[str, bytes, int, bool]]:
        raise NotImplementedError

    def decode(self, block: bytes, where: int, name: str) -> str:
        raise NotImplementedError

    def __iter__(self) -> Iterator[list[str]]:
        max_len = self.options.max_sentence_length
        current: list[str] = []
        for name, block, where, at_end in self.blocks():
            if at_end:
                if current:  # each file's (or range's) last line ends there
                    yield current
                current = []
                continue
            lines = self.decode(block, where, name).split("\n")
            for i, line in enumerate(lines):
                if self.options.lowercase:
                    line = line.lower()
                current.extend(line.split())
                if i < len(lines) - 1:  # the line ended: emit it in pieces
                    for start in range(0, len(current), max_len):
                        yield current[start : start + max_len]
                    current = []
                elif len(current) >= max_len:  # a long line continues: emit whole pieces now
                    n_full = len(current) // max_len * max_len
                    for start in range(0, n_full, max_len):
                        yield current[start : start + max_len]
                    current = current[n_full:]


class TextSentences(_BlockText):
    """Stream of token lists from a text file or stream, in bounded memory.

    A file can be iterated again (each pass reopens it); a stream (``once=True``) only once.  With
    ``digest=True`` each completed pass appends the SHA-256 of the (decompressed) bytes it read to
    ``digests``.  Several files (a list) are one corpus, read in order; each file's last line ends there.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "c.txt"
        >>> _ = path.write_text("A b\\n\\nc\\x00d\\n")
        >>> list(TextSentences(path, ReadOptions(lowercase=True)))
        [['a', 'b'], ['c', 'd']]
    """

    def __init__(
        self,
        path: Path | list[Path],
        options: ReadOptions,
        name: str | None = None,
        once: bool = False,
        digest: bool = False,
    ) -> None:
        # Several files are one corpus, read in order; each file's last line ends there (as if it ended with
        # a newline), and the digest covers the bytes of all of them.
        self.paths = list(path) if isinstance(path, list) else [path]
        self.path = self.paths[0]
        self.options = options
        self.name = str(path) if name is None else name
        self.once = once
        self.digest = digest
        self.digests: list[str] = []
        self._passes = 0
        # What each file was when the first pass opened it (device, inode, size, mtime, ctime), and the
        # SHA-256 of its bytes in each pass where they are hashed: every later look must match (_open_check,
        # _close_check).
        self._states: dict[int, tuple[int, ...]] = {}
        self._hashed: dict[int, bool] = {}
        self._file_digests: dict[int, str] = {}

    def blocks(self) -> Iterator[tuple[str, bytes, int, bool]]:
        """One pass over the raw text: ``(name, block, first line number, last block of its file)``.

        Blocks are cut after whitespace (no word or UTF-8 character is split), NUL bytes are spaces, and each
        file's blocks are followed by one ``(name, b"", line, True)``.  A completed pass appends its digest.
        """
        if self.once and self._passes:
            raise ParvecError(f"{self.name}: a stream can be read only once")
        self._passes += 1
        digests = []
        for i, path in enumerate(self.paths):
            name = self.name if len(self.paths) == 1 else str(path)
            hasher = self._open_check(i, path, name)
            yield from self._blocks(path, name, hasher)
            digests.append(self._close_check(i, path, name, hasher))
        if self.digest:
            self.digests.append(_combined_digest(digests))  # type: ignore[arg-type]

    def part(self, start: int, end: int) -> RangeSentences:
        """A reader of the byte range ``[start, end)`` of this (one, plain) file, cut at line boundaries
        (:func:`line_cuts`), whose errors name the file and line as this reader's do; read it inside
        :meth:`checked_pass`, which makes the checks a pass of this reader makes.

        Example:
            >>> import tempfile
            >>> path = Path(tempfile.mkdtemp()) / "c.txt"
            >>> _ = path.write_bytes(b"a b\\nc\\n\\xff\\n")
            >>> reader = TextSentences(path, ReadOptions())
            >>> [list(reader.part(a, b)) for a, b in [(0, 4), (4, 6)]]
            [[['a', 'b']], [['c']]]
            >>> list(reader.part(6, 8))
            Traceback (most recent call last):
            ...
            parvec.errors.ParvecError: ...c.txt:3: invalid UTF-8 (invalid start byte); use --unicode-errors replace \
(or ignore) to read it anyway
        """
        assert len(self.paths) == 1 and not self.once, "a part of one file read twice"
        return _TextPart(self.path, start, end, self.options, self.name)

    def checked_pass(self, work: Callable[[], T], pool: Executor) -> T:
        """One pass over the file done by ``work`` (which reads it through :meth:`part` readers, in ``pool``'s
        threads) with the checks :meth:`blocks` makes: the file's identity before and after, and its SHA-256 (read
        in one more task of ``pool``) where this reader hashes it, appended to :attr:`digests` with ``digest``.

        Example:
            >>> from concurrent.futures import ThreadPoolExecutor
            >>> import tempfile
            >>> path = Path(tempfile.mkdtemp()) / "c.txt"
            >>> _ = path.write_bytes(b"a b\\nc\\n")
            >>> reader = TextSentences(path, ReadOptions(), digest=True)
            >>> with ThreadPoolExecutor(2) as pool:
            ...     reader.checked_pass(lambda: [list(reader.part(a, b)) for a, b in [(0, 4), (4, 6)]], pool)
            [[['a', 'b']], [['c']]]
            >>> reader.digests == [input_digest(path)]
            True
        """
        assert len(self.paths) == 1 and not self.once, "a pass in parts of one file read twice"
        self._passes += 1
        path, name = self.path, self.name
        hasher = self._open_check(0, path, name)
        hashing = pool.submit(_hash_file, path, hasher) if hasher is not None else None
        try:
            result = work()
        finally:
            if hashing is not None:
                hashing.result()
        digest = self._close_check(0, path, name, hasher)
        if self.digest:
            self.digests.append(_combined_digest([digest]))  # type: ignore[list-item]
        return result

    def inputs_read(self) -> list[InputFile] | None:
        """The files this reader read, unchanged (each one's path, size and mtime as first opened; see
        :attr:`parvec.corpus.EncodedCorpus.inputs`); None for a stream.

        Example:
            >>> import tempfile
            >>> path = Path(tempfile.mkdtemp()) / "c.txt"
            >>> _ = path.write_text("a b\\n")
            >>> reader = TextSentences(path, ReadOptions()); _ = list(reader)
            >>> [(Path(f.path).name, f.size) for f in reader.inputs_read()]
            [('c.txt', 4)]
        """
        if self.once:
            return None
        return [InputFile(str(Path(p).resolve()), st[2], st[3])
                for i, p in enumerate(self.paths) if (st := self._states.get(i)) is not None]

    # A file read more than once (counted, then encoded) must be the same file with the same bytes each time:
    # else the vocabulary's counts and the tokens disagree, and words counted but never encoded keep their
    # random vectors.  Its identity (device, inode, size, mtime and ctime in nanoseconds) is taken when the
    # first pass opens it and compared before and after every pass; a file changed less than _RACY_NS before
    # it was first opened (when a change could keep its ctime, within one tick of a coarse clock) also has its
    # bytes hashed in every pass.  A stream is read once: there is nothing to compare.
    def _open_check(self, i: int, path: Path, name: str) -> Any:
        if self.once:
            return hashlib.sha256() if self.digest else None
        now_ns = time.time_ns()
        state = file_state(path)
        if i not in self._states:
            if state is not None:
                self._states[i] = state
                self._hashed[i] = self.digest or changed_recently(state[4], now_ns)
        elif state != self._states[i]:
            raise input_changed(name, self._states[i], state, "after its words were counted, before it was read again")
        return hashlib.sha256() if self._hashed.get(i) else None

    def _close_check(self, i: int, path: Path, name: str, hasher: Any) -> str | None:
        digest = hasher.hexdigest() if hasher is not None else None
        if self.once or i not in self._states:
            return digest
        state = file_state(path)
        if state != self._states[i]:
            raise input_changed(name, self._states[i], state, "while it was read")
        if digest is not None:
            first = self._file_digests.setdefault(i, digest)
            if digest != first:
                raise input_changed(name, self._states[i], state, "between two reads", content=True)
        return digest

    def _blocks(self, path: Path, name: str, hasher: Any) -> Iterator[tuple[str, bytes, int, bool]]:
        line_no = 1

        def too_long() -> ParvecError:
            return ParvecError(f"{name}:{line_no}: a single token longer than 256 MB")

        try:
            with open_input(path, allow_stream=True) as f:
                for block in _cut_at_whitespace(_read_all(f, hasher), too_long):
                    yield name, block, line_no, False
                    line_no += block.count(b"\n")
        except READ_ERRORS as exc:
            raise ParvecError(f"{name}: cannot read: {exc}") from None
        yield name, b"", line_no, True

    def decode(self, block: bytes, where: int, name: str) -> str:
        """``block`` as text, with the reader's ``unicode_errors``; invalid UTF-8 (``strict``) raises
        :class:`ParvecError` naming the file and the line (``where``: the block's first line number).

        Example:
            >>> TextSentences(Path("c.txt"), ReadOptions()).decode(b"ok\\n\\xff", 3, "c.txt")
            Traceback (most recent call last):
            ...
            parvec.errors.ParvecError: c.txt:4: invalid UTF-8 (invalid start byte); use --unicode-errors replace \
(or ignore) to read it anyway
        """
        try:
            return block.decode("utf-8", errors=self.options.unicode_errors)
        except UnicodeDecodeError as exc:
            line = where + block.count(b"\n", 0, exc.start)
            raise ParvecError(
                f"{name}:{line}: invalid UTF-8 ({exc.reason}); "
                "use --unicode-errors replace (or ignore) to read it anyway"
            ) from None


def _read_all(f: Any, hasher: Any) -> Iterator[bytes]:
    """The blocks of an open file, to its end, each added to ``hasher`` (if given)."""
    while block := f.read(_BLOCK_BYTES):
        if hasher is not None:
            hasher.update(block)
        yield block


# ---------------------------------------------------------------------- byte ranges
def range_cuts(path: str | os.PathLike[str], n: int) -> list[int]:
    """``n + 1`` offsets that cut a plain file into ``n`` byte ranges: ``0``, then for each ``k`` the offset just
    after the first whitespace byte (:data:`WHITESPACE`) at or after ``size * k // n`` (the end of the file when
    there is none), then the size.  Every cut is at a token boundary, so the ranges hold every token of the file
    once, none split; a range may be empty.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "c.txt"
        >>> _ = path.write_bytes(b"aaaa bb\\ncc dd")
        >>> range_cuts(path, 3)
        [0, 5, 11, 13]
    """
    return _cuts_after(path, n, _FIRST_SPACE)


def byte_ranges(path: str | os.PathLike[str], n: int) -> list[tuple[int, int]]:
    """Cut a plain file into at most ``n`` byte ranges, each ending just after a whitespace byte (so no
    word, and no UTF-8 character, is split): :func:`range_cuts` without the empty ranges.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "c.txt"
        >>> _ = path.write_bytes(b"aaaa bb\\ncc dd")
        >>> byte_ranges(path, 3), byte_ranges(path, 40)[:3]
        ([(0, 5), (5, 11), (11, 13)], [(0, 5), (5, 8), (8, 11)])
    """
    cuts = range_cuts(path, n)
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def line_cuts(path: str | os.PathLike[str], n: int) -> list[int]:
    """``n + 1`` offsets that cut a plain file into ``n`` byte ranges at line boundaries: ``0``, then for each ``k``
    the offset just after the first ``\\n`` at or after ``size * k // n`` (the end of the file when there is
    none), then the size.  A range read as a file (its last line ending at its end) gives the sentences of those
    lines of the whole file: no line, and so no sentence or piece of ``max_sentence_length``, is split.  A
    range may be empty (a file with fewer lines than ranges).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "c.txt"
        >>> _ = path.write_bytes(b"a bbbbbbb cc\\nd\\n")
        >>> line_cuts(path, 2), range_cuts(path, 2)
        ([0, 13, 15], [0, 10, 15])
    """
    return _cuts_after(path, n, _LINE_BREAK)


def _cuts_after(path: str | os.PathLike[str], n: int, pattern: re.Pattern[bytes]) -> list[int]:
    """``n + 1`` offsets: ``0``, then for each ``k`` the offset just after the first match of ``pattern`` (one byte)
    at or after ``size * k // n`` (the end of the file when there is none), then the size."""
    size = _size(path)
    n = max(1, n)
    cuts = [0]
    with _open_raw(path) as f:
        for k in range(1, n):
            pos = max(size * k // n, cuts[-1])
            f.seek(pos)
            while True:
                block = f.read(1 << 16)
                if not block:
                    pos = size
                    break
                hit = pattern.search(block)
                if hit is not None:
                    pos += hit.start() + 1
                    break
                pos += len(block)
            cuts.append(min(pos, size))
    cuts.append(size)
    return cuts


def _size(path: str | os.PathLike[str]) -> int:
    """Bytes of a local file, or of the object a URL names (:mod:`parvec.storage`)."""
    from parvec import storage

    if storage.is_url(path):
        return storage.object_size(str(path))
    return os.path.getsize(path)


def _open_raw(path: str | os.PathLike[str]) -> Any:
    """A local file, or the object a URL names, opened for reading as stored (seekable; nothing decompressed)."""
    from parvec import storage

    return storage.open_raw(str(path)) if storage.is_url(path) else open(path, "rb")


class RangeSentences(_BlockText):
    """Token lists of one byte range ``[start, end)`` of a plain text file, read as :class:`TextSentences` reads
    a file: lines are sentences, split on whitespace (NUL included), lines longer than ``max_sentence_length``
    tokens cut into pieces, optional lower-casing, ``unicode_errors`` as given; the range's last line ends at
    its end.  Cut the ranges with :func:`byte_ranges` (or :func:`range_cuts`): at whitespace, no token is split
    or lost.  ``end=None`` reads the whole file, decompressing a ``.gz``/``.bz2``/``.xz`` one (a compressed file
    cannot be cut: it is one range, read by one process).  ``path`` may be a URL (``s3://b/corpus/part-0.txt``):
    the range is then read from the object store (:func:`parvec.storage.open_raw`, a ranged read), not a copy.
    Restartable (iterated twice); each complete pass sets :attr:`fingerprint` to ``(bytes read, CRC-32 of those
    bytes)`` (decompressed), which two processes reading the same range compare.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "c.txt"
        >>> _ = path.write_bytes(b"aaaa bb\\ncc dd")
        >>> reader = RangeSentences(path, 5, 13, ReadOptions())
        >>> list(reader), reader.fingerprint
        ([['bb'], ['cc', 'dd']], (8, 3462143607))
    """

    def __init__(self, path: str | os.PathLike[str], start: int, end: int | None, options: ReadOptions) -> None:
        from parvec import storage

        self.path: Any = path if storage.is_url(path) else Path(path)
        self.start, self.end, self.options = start, end, options
        self.name = str(self.path)
        self.fingerprint: tuple[int, int] | None = None  # (bytes, CRC-32) of the last complete pass

    def blocks(self) -> Iterator[tuple[str, bytes, int, bool]]:
        """One pass over the range: ``(name, block, byte offset of the block in the file, False)`` for blocks cut
        after whitespace (NUL read as a space), then ``(name, b"", end, True)``.

        Example:
            >>> import tempfile
            >>> path = Path(tempfile.mkdtemp()) / "c.txt"
            >>> _ = path.write_bytes(b"aaaa bb\\ncc dd")
            >>> [(block, where, last) for _, block, where, last in RangeSentences(path, 5, 13, ReadOptions()).blocks()]
            [(b'bb\\ncc ', 5, False), (b'dd', 11, False), (b'', 13, True)]
        """
        name = self.name
        offset = self.start
        read = [0, 0]  # bytes, CRC-32

        def too_long() -> ParvecError:
            return self._too_long(offset)

        try:
            with _open_raw(self.path) if self.end is not None else self._open_whole() as f:
                for block in _cut_at_whitespace(self._read(f, read), too_long):
                    yield name, block, offset, False
                    offset += len(block)
        except READ_ERRORS as exc:
            raise ParvecError(f"{name}: cannot read: {exc}") from None
        self.fingerprint = (read[0], read[1])  # what counting and encoding each read of the range
        yield name, b"", offset, True

    def _open_whole(self) -> Any:
        from parvec import storage

        return storage.open_input(self.path) if storage.is_url(self.path) else open_input(self.path)

    def _too_long(self, offset: int) -> ParvecError:
        """The error for a token that starts at byte ``offset`` and is longer than 256 MB."""
        return ParvecError(f"{self.name}: a single token longer than 256 MB at byte {offset}")

    def _read(self, f: Any, read: list[int]) -> Iterator[bytes]:
        end = self.end
        if end is not None:
            f.seek(self.start)
        pos = self.start
        while end is None or pos < end:
            block = f.read(_BLOCK_BYTES if end is None else min(_BLOCK_BYTES, end - pos))
            if not block:
                break
            read[0] += len(block)
            read[1] = zlib.crc32(block, read[1])
            pos += len(block)
            yield block

    def decode(self, block: bytes, where: int, name: str) -> str:
        """``block`` as text, with the reader's ``unicode_errors``; invalid UTF-8 (``strict``) raises
        :class:`ParvecError` naming the file and the byte (``where``: the block's offset in the file).

        Example:
            >>> RangeSentences("c.txt", 0, 9, ReadOptions()).decode(b"ok \\xff", 100, "c.txt")
            Traceback (most recent call last):
            ...
            parvec.errors.ParvecError: c.txt: invalid UTF-8 at byte 103 (invalid start byte); use --unicode-errors \
replace (or ignore) to read it anyway
        """
        try:
            return block.decode("utf-8", errors=self.options.unicode_errors)
        except UnicodeDecodeError as exc:
            raise ParvecError(f"{name}: invalid UTF-8 at byte {where + exc.start} ({exc.reason}); "
                              "use --unicode-errors replace (or ignore) to read it anyway") from None


class _TextPart(RangeSentences):
    """A byte range of a file read by :class:`TextSentences` (:meth:`TextSentences.part`): its errors name the
    line, as the whole file's reader names it (the lines before the range are counted only for the message)."""

    def __init__(self, path: Path, start: int, end: int, options: ReadOptions, name: str) -> None:
        super().__init__(path, start, end, options)
        self.name = name

    def _line(self, offset: int) -> int:
        """The line number of byte ``offset`` of the file (1 + the line breaks before it)."""
        lines, pos = 1, 0
        with open(self.path, "rb") as f:
            while pos < offset and (block := f.read(min(_BLOCK_BYTES, offset - pos))):
                lines += block.count(b"\n")
                pos += len(block)
        return lines

    def _too_long(self, offset: int) -> ParvecError:
        return ParvecError(f"{self.name}:{self._line(offset)}: a single token longer than 256 MB")

    def _read(self, f: Any, read: list[int]) -> Iterator[bytes]:
        assert self.end is not None
        f.seek(self.start)
        pos = self.start
        while pos < self.end and (block := f.read(min(_BLOCK_BYTES, self.end - pos))):
            pos += len(block)
            yield block  # no CRC-32: the file's identity (and hash) is checked by TextSentences.checked_pass

    def decode(self, block: bytes, where: int, name: str) -> str:
        try:
            return block.decode("utf-8", errors=self.options.unicode_errors)
        except UnicodeDecodeError as exc:
            raise ParvecError(
                f"{name}:{self._line(where + exc.start)}: invalid UTF-8 ({exc.reason}); "
                "use --unicode-errors replace (or ignore) to read it anyway"
            ) from None


def _hash_file(path: Path, hasher: Any) -> None:
    """Add the bytes of the file ``path`` to ``hasher`` (the digest of a pass read in parts)."""
    try:
        with open(path, "rb") as f:
            for _ in _read_all(f, hasher):
                pass
    except OSError:
        pass  # the pass's identity check names what happened to the file


class IterableSentences:
    """Validates and splits the sentences of a user iterable: each must be a list of tokens (not a string),
    cut into pieces of at most ``max_len`` tokens.

    Example:
        >>> list(IterableSentences([["a", "b", "c"], ["d"]], 2))
        [['a', 'b'], ['c'], ['d']]
    """

    def __init__(self, sentences: Iterable[list[str]], max_len: int) -> None:
        self.sentences = sentences
        self.max_len = max_len

    def __iter__(self) -> Iterator[list[str]]:
        for i, sentence in enumerate(self.sentences):
            if isinstance(sentence, str):
                raise ParvecError(
                    f"sentence {i} is a string, expected a list of tokens (did you forget .split()?)"
                )
            sentence = list(sentence)
            for start in range(0, len(sentence), self.max_len):
                yield sentence[start : start + self.max_len]


# ---------------------------------------------------------------------- the change checks
def file_state(path: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """``(device, inode, size, mtime_ns, ctime_ns)`` of ``path`` (None when it cannot be looked at): what must
    not change between two reads of an input.

    Example:
        >>> file_state("/no/such/file") is None
        True
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def changed_recently(ctime_ns: int, now_ns: int) -> bool:
    """Whether a file whose status changed at ``ctime_ns`` could still change within the same tick of the file
    system's clock (coarse, up to 2 s on some file systems) without a new ctime: then only its bytes tell (it is
    hashed in every pass, and its cache entry checks its content).

    Example:
        >>> now = time.time_ns()
        >>> changed_recently(now - 10**9, now), changed_recently(now - 3600 * 10**9, now)
        (True, False)
    """
    return ctime_ns >= now_ns - _RACY_NS


def input_changed(name: str, before: tuple[int, ...], after: tuple[int, ...] | None, when: str,
                  content: bool = False) -> ParvecError:
    """The error for an input that changed while parvec read it (what changed, and what to do); ``before`` and
    ``after`` are :func:`file_state`'s, ``content`` says that only the bytes differ.

    Example:
        >>> str(input_changed("c.txt", (1, 2, 10, 5, 5), (1, 2, 4, 6, 6), "while it was read"))[:77]
        'c.txt: the input changed while it was read (its size went from 10 to 4 bytes)'
    """
    if content:
        what = "its bytes differ though its size and modification time do not"
    elif after is None:
        what = "it was removed or can no longer be read"
    elif after[:2] != before[:2]:
        what = "it was replaced by another file"
    elif after[2] != before[2]:
        what = f"its size went from {before[2]:,} to {after[2]:,} bytes"
    else:
        what = "it was modified (same size)"
    return ParvecError(
        f"{name}: the input changed {when} ({what}): parvec reads a file twice (counting its words, then "
        "encoding them) and the two reads must see the same text, else the vocabulary's counts and the trained "
        "tokens disagree; nothing was trained or written. Train on a copy that nothing writes to (or wait until "
        "the file is complete)"
    )


@dataclass(frozen=True)
class InputFile:
    """A file a corpus was read from, as it was then: its resolved ``path``, ``size`` and ``mtime_ns``
    (:attr:`parvec.corpus.EncodedCorpus.inputs`); a node that reads the file again checks it against this
    (:func:`check_input_unchanged`).

    Example:
        >>> InputFile("/data/corpus.txt", 4, 1700000000000000000).size
        4
    """

    path: str
    size: int
    mtime_ns: int


def check_input_unchanged(path: str | os.PathLike[str], inputs: Sequence[InputFile] | None) -> None:
    """Raise :class:`ParvecError` if ``path`` is one of ``inputs`` (:attr:`EncodedCorpus.inputs`) but no longer
    has the size and modification time it had when the corpus was read.  A cluster node that reads its share of
    the input again calls it: its copy must be the file the vocabulary was counted from.

    Example:
        >>> check_input_unchanged("corpus.txt", corpus.inputs)  # doctest: +SKIP
    """
    resolved = str(Path(path).resolve())
    for info in inputs or []:
        if info.path == resolved:
            state = file_state(Path(path))
            if state is None or (state[2], state[3]) != (info.size, info.mtime_ns):
                now = "missing" if state is None else f"{state[2]:,} bytes, mtime {state[3]}"
                raise ParvecError(
                    f"{path}: not the file the corpus was read from (then {info.size:,} bytes, mtime "
                    f"{info.mtime_ns}; now {now}): it changed since, or this node's copy differs (copy it "
                    "with its modification time: cp -p, rsync -a), or put --cache-dir on a path every node reads")


def _combined_digest(digests: list[str]) -> str:
    """One file's SHA-256, or for several files the SHA-256 of their digests, in order."""
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()


def input_digest(path: Path | list[Path]) -> str:
    """SHA-256 of the file's (decompressed) bytes, as :class:`TextSentences` digests them (several files: the
    SHA-256 of each file's digest, in order).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "c.txt"
        >>> _ = path.write_bytes(b"abc")
        >>> input_digest(path) == hashlib.sha256(b"abc").hexdigest()
        True
    """
    digests = []
    for p in path if isinstance(path, list) else [path]:
        hasher = hashlib.sha256()
        with open_input(p) as f:
            while block := f.read(_BLOCK_BYTES):
                hasher.update(block)
        digests.append(hasher.hexdigest())
    return _combined_digest(digests)


# ---------------------------------------------------------------------- streams read twice
@contextlib.contextmanager
def spooled(path: Path, name: str, directory: Path) -> Iterator[Path]:
    """Copy a stream (decompressed) into a temporary file in ``directory``, for a reader that must read it twice
    (``max_vocab_size``); the copy is removed afterwards.

    Example:
        >>> with spooled(Path("/dev/stdin"), "<stdin>", Path("cache")) as copy:  # doctest: +SKIP
        ...     corpus = TextSentences(copy, ReadOptions())
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=".tmp-spool-", suffix=".txt", dir=directory)
    except OSError as exc:
        raise ParvecError(f"{name}: cannot create a temporary copy in {directory} (max_vocab_size reads a "
                          f"stream twice): {exc.strerror or exc}") from None  # fmt: skip
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, open_input(path, allow_stream=True) as f:
            while True:
                try:
                    block = f.read(_BLOCK_BYTES)
                except READ_ERRORS as exc:
                    raise ParvecError(f"{name}: cannot read: {exc}") from None
                if not block:
                    break
                try:
                    out.write(block)
                except OSError as exc:
                    raise ParvecError(f"{name}: cannot copy it to {tmp} (max_vocab_size reads a stream twice): "
                                      f"{exc.strerror or exc}") from None  # fmt: skip
        yield tmp
    finally:
        tmp.unlink(missing_ok=True)
