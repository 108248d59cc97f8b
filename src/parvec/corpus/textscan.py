"""Counting and encoding text files on bytes: the word table (:mod:`parvec.kernels.wordtable`) and the
normalisation that lets it give exactly what Python's ``str.split()`` gives.

:class:`parvec.corpus.readers.TextSentences` reads a file in blocks cut at whitespace.  A block goes to the kernel
as it is when the kernel's byte rules split it as ``bytes.decode().split()`` would: it is ASCII (then
lower-casing, if asked, is ``bytes.lower()``), or it is valid UTF-8 with no non-ASCII whitespace (U+0085,
U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) and no lower-casing.  Any other
block (invalid UTF-8 read with ``unicode_errors`` replace/ignore, Unicode whitespace, non-ASCII
lower-casing) is decoded, split and lower-cased in Python and joined back with single spaces and line
breaks: slower, the same tokens.

Example:
    >>> t = WordTable()
    >>> ids, segs = t.scan(b"the cat\\nthe", insert=True)
    >>> ids.tolist(), segs.tolist(), t.words(), t.counts().tolist()
    ([0, 1, 0], [2, 1], ['the', 'cat'], [2, 1])
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable

import numba as nb
import numpy as np

from parvec.kernels.wordtable import CLASSES, join_words, rehash, scan_block

# Non-ASCII characters str.split() splits on, as UTF-8.
_UNICODE_SPACE = re.compile(rb"\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80")


class WordTable:
    """Distinct words (UTF-8 bytes) -> ids in first-seen order, with counts; grows as needed.

    Memory: about 28 bytes a word, 8 bytes a slot (at most half full) and the words' bytes.

    Example:
        >>> t = WordTable(); _ = t.scan(b"b a b", insert=True); t.words(), len(t)
        (['b', 'a'], 2)
    """

    # per word, allocated (and grown) by _alloc_words
    _hashes: np.ndarray
    _starts: np.ndarray
    _lengths: np.ndarray
    _counts: np.ndarray

    def __init__(self, capacity: int = 1024) -> None:
        self._state = np.zeros(6, dtype=np.int64)  # [words, arena bytes used, and a scan's position]
        self._alloc_words(max(capacity, 16))
        self._slots = np.full(_pow2(4 * len(self._hashes)), -1, dtype=np.int32)
        self._arena = np.zeros(max(capacity, 16) * 8, dtype=np.uint8)
        self._ids = np.zeros(0, dtype=np.int32)
        self._segs = np.zeros(0, dtype=np.int64)
        self._words: list[str] | None = None

    def __len__(self) -> int:
        return int(self._state[0])

    def _alloc_words(self, capacity: int) -> None:
        n = len(self)
        old = getattr(self, "_hashes", None)
        arrays = []
        for name, dtype in (("_hashes", np.uint64), ("_starts", np.int64), ("_lengths", np.int32),
                            ("_counts", np.int64)):
            a = np.zeros(capacity, dtype=dtype)
            if old is not None:
                a[:n] = getattr(self, name)[:n]
            arrays.append((name, a))
        for name, a in arrays:
            setattr(self, name, a)

    def _grow(self) -> None:
        """Twice the room for words (and their slots), and for their bytes if the arena is over half full."""
        self._alloc_words(2 * len(self._hashes))
        self._slots = np.full(_pow2(4 * len(self._hashes)), -1, dtype=np.int32)
        rehash(self._hashes, len(self), self._slots)
        used = int(self._state[1])
        if 2 * used > len(self._arena) or len(self._arena) - used < 1 << 16:
            arena = np.zeros(2 * len(self._arena) + (1 << 16), dtype=np.uint8)
            arena[:used] = self._arena[:used]
            self._arena = arena

    def scan(self, block: bytes, insert: bool) -> tuple[np.ndarray, np.ndarray]:
        """Tokenise a normalised block (see the module docstring); returns views ``(ids, line_token_counts)``.

        ``ids`` are table ids (-1 for a word not in the table when ``insert`` is false); the last line count is
        the text after the last line break.  The views are overwritten by the next call.
        """
        if len(self._ids) < len(block) // 2 + 1:
            self._ids = np.zeros(len(block) // 2 + 1, dtype=np.int32)
        lines = block.count(b"\n") + 1
        if len(self._segs) < lines:
            self._segs = np.zeros(lines, dtype=np.int64)
        buf = np.frombuffer(block, dtype=np.uint8)
        state = self._state
        state[2:] = 0
        while not scan_block(buf, CLASSES, self._slots, self._hashes, self._starts, self._lengths, self._counts,
                             self._arena, state, insert, self._ids, self._segs):
            if len(self._arena) - int(state[1]) < len(block):  # a giant word: room for it at once
                arena = np.zeros(int(state[1]) + 2 * len(block), dtype=np.uint8)
                arena[: int(state[1])] = self._arena[: int(state[1])]
                self._arena = arena
            else:
                self._grow()
        return self._ids[: state[3]], self._segs[: state[4]]

    def words(self) -> list[str]:
        """The words, in id order (first seen first); the list is kept until a word is added."""
        n = len(self)
        if self._words is None or len(self._words) != n:
            out = np.empty(int(self._lengths[:n].sum()) + n, dtype=np.uint8)
            join_words(self._arena, self._starts, self._lengths, n, out)
            self._words = out.tobytes().decode("utf-8").split("\n")[:n]  # words hold no line break
        return self._words

    def counts(self) -> np.ndarray:
        """How often each word was scanned with ``insert`` (a view, in id order)."""
        return self._counts[: len(self)]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The words as arrays, in id order (views): ``(FNV-1a hashes uint64, counts int64, starts int64,
        lengths int32, arena uint8)``, word ``i``'s bytes being ``arena[starts[i] : starts[i] + lengths[i]]``.

        Example:
            >>> t = WordTable(); _ = t.scan(b"ab c ab", insert=True)
            >>> hashes, counts, starts, lengths, arena = t.arrays()
            >>> counts.tolist(), starts.tolist(), lengths.tolist(), arena.tobytes()
            ([2, 1], [0, 2], [2, 1], b'abc')
        """
        n = len(self)
        return (self._hashes[:n], self._counts[:n], self._starts[:n], self._lengths[:n],
                self._arena[: int(self._state[1])])

    def absorb(self, other: WordTable) -> np.ndarray:
        """Add ``other``'s words and counts to this table: its words new here get the next ids, in ``other``'s
        first-seen order, so absorbing the tables of consecutive parts of a text in order gives the table of
        the whole text (the same ids and counts).  Returns ``other``'s id -> id here (int32).

        Example:
            >>> a, b = WordTable(), WordTable()
            >>> _ = a.scan(b"x y x", insert=True); _ = b.scan(b"z y z z", insert=True)
            >>> a.absorb(b).tolist(), a.words(), a.counts().tolist()
            ([2, 1], ['x', 'y', 'z'], [2, 2, 3])
        """
        n = len(other)
        if n == 0:
            return np.zeros(0, dtype=np.int32)
        _, counts, starts, lengths, arena = other.arrays()
        joined = np.empty(int(lengths.sum()) + n, dtype=np.uint8)
        join_words(arena, starts, lengths, n, joined)  # the words, one a line: each scans as itself
        ids, _ = self.scan(joined.tobytes(), insert=True)
        ids = ids.copy()
        self._counts[ids] += counts - 1  # the scan counted each word once
        return ids

    def shared(self) -> WordTable:
        """A table that shares this one's words (no copy) with scan buffers of its own: for looking words up
        (``scan(..., insert=False)``, which writes nothing in the words' arrays) in another thread.  Never
        insert through it.

        Example:
            >>> t = WordTable(); _ = t.scan(b"a b", insert=True)
            >>> t.shared().scan(b"b c", insert=False)[0].tolist()
            [1, -1]
        """
        other = copy.copy(self)
        other._state = self._state.copy()
        other._ids = np.zeros(0, dtype=np.int32)
        other._segs = np.zeros(0, dtype=np.int64)
        return other

    @classmethod
    def of_words(cls, words: list[str]) -> tuple[WordTable, np.ndarray]:
        """A table of ``words`` (a vocabulary) and ``table id -> index in words`` (int32).

        A word that holds whitespace can never be a token of a file, so it is left out.

        Example:
            >>> t, to_index = WordTable.of_words(["x", "a b", "y"]); t.words(), to_index.tolist()
            (['x', 'y'], [0, 2])
        """
        table = cls(len(words) + 1)
        keep, encoded = [], []
        for i, w in enumerate(words):
            if w and w.split() == [w]:
                try:
                    encoded.append(w.encode("utf-8"))
                except UnicodeEncodeError:  # a lone surrogate (from Python tokens): never a token of a file
                    continue
                keep.append(i)
        if keep:
            ids, _ = table.scan(b"\n".join(encoded), insert=True)
            assert len(ids) == len(keep) and len(table) == len(keep), "vocabulary words are distinct"
        table._counts[:] = 0
        return table, np.asarray(keep, dtype=np.int32)


@nb.njit(cache=True, nogil=True)
def tally(ids: np.ndarray, counts: np.ndarray) -> None:  # pragma: no cover - numba
    """Add one to ``counts[i]`` for every id ``i >= 0`` of ``ids`` (the encoding pass's count of each word, which
    :mod:`parvec.corpus.encode` compares with the counting pass's).

    Example:
        >>> c = np.zeros(3, np.int64); tally(np.array([0, 2, -1, 0], np.int32), c); c.tolist()
        [2, 0, 1]
    """
    for i in ids:
        if i >= 0:
            counts[i] += 1


def _pow2(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())


def normalise(block: bytes, lowercase: bool, decode: Callable[[bytes], str]) -> bytes:
    """``block`` in a form the kernel splits as ``str.split()`` splits the decoded text, line by line.

    ``decode`` is the reader's decoder, with its ``unicode_errors`` (in strict mode it raises the error naming
    the file and line on invalid UTF-8).

    Example:
        >>> normalise("a\\u00a0B\\n".encode(), True, bytes.decode)
        b'a b\\n'
    """
    if block.isascii():
        return block.lower() if lowercase else block
    if not lowercase:
        try:
            block.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            valid = False
        if valid and _UNICODE_SPACE.search(block) is None:
            return block
    lines = decode(block).split("\n")
    if lowercase:
        lines = [line.lower() for line in lines]
    return "\n".join(" ".join(line.split()) for line in lines).encode("utf-8")
