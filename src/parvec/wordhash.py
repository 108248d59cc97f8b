"""A compact word -> id lookup: 64-bit hashes of the words' UTF-8 bytes -> int32 ids, in numpy arrays.

The hash is the byte tokeniser's (:mod:`parvec.kernels.wordtable`): 64-bit FNV-1a of the word's UTF-8 bytes,
so an encoder hashes each token as it splits the text and never makes a Python object of it (Ordentlich et
al. section 6.1.2 hash words to 64-bit keys too).  :class:`WordLookup` holds

- ``keys``: the vocabulary's hashes, sorted (uint64, 8 bytes a word),
- ``ids``: each key's word id (int32, 4 bytes a word),
- ``directory``: for each of ``2**bits`` buckets (the top ``bits`` bits of a hash) the first key of the bucket
  (int32, ``2**bits + 1`` entries with ``V/8 < 2**bits <= V/4``: at most 1 byte a word),

13 bytes a word or less, where the encoders' Python dict took ~154.  A lookup reads one directory entry and
scans its bucket (4-8 keys on average: one or two cache lines).  The arrays are plain numpy arrays, so Ray
shares them zero-copy through its object store (one copy per node), and :func:`lookup_hash` and
:func:`scan_ids` read them from numba.

**Collisions.**  Two distinct words with one hash would be one id.  :meth:`WordLookup.from_hashes` refuses a
repeated key (a :class:`ParvecError` naming the words when given); the distributed vocabulary
(:mod:`parvec.distributed.vocab_count`) checks every distinct word of the corpus (kept or not, since a dropped
word's tokens must not be encoded as a kept word) and leaves colliding words out of the vocabulary, naming them.
For ``n`` distinct words and ``k`` kept ones a collision that touches a kept word has probability about
``n * k / 2**64`` (5e-5 for 1e8 x 1e7; 1% for 1e9 x 2e8).

Example:
    >>> lookup = WordLookup.from_words(["the", "cat", "sat"])
    >>> lookup.lookup(hash_words(["sat", "dog", "the"])).tolist()
    [2, -1, 0]
    >>> fnv1a64("the") == int(hash_words(["the"])[0])
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from parvec.errors import ParvecError
from parvec.kernels.wordtable import CLASSES, FNV_OFFSET, FNV_PRIME, NEWLINE, WORD, word_at

__all__ = ["WordLookup", "fnv1a64", "hash_arena", "hash_words", "lookup_hash", "part_of", "scan_ids"]

_M64 = (1 << 64) - 1


def fnv1a64(word: str | bytes) -> int:
    """64-bit FNV-1a of a word's UTF-8 bytes (pure Python; what the numba kernels compute).

    Example:
        >>> hex(fnv1a64(b""))
        '0xcbf29ce484222325'
    """
    data = word.encode("utf-8") if isinstance(word, str) else word
    h = int(FNV_OFFSET)
    for b in data:
        h = ((h ^ b) * int(FNV_PRIME)) & _M64
    return h


@nb.njit(cache=True, nogil=True)
def hash_arena(arena: np.ndarray, starts: np.ndarray, lengths: np.ndarray,  # pragma: no cover - numba
               out: np.ndarray) -> np.ndarray:
    """FNV-1a of each word ``arena[starts[i] : starts[i] + lengths[i]]`` into ``out[i]`` (uint64)."""
    for i in range(len(starts)):
        h = FNV_OFFSET
        a = starts[i]
        for k in range(lengths[i]):
            h = (h ^ np.uint64(arena[a + k])) * FNV_PRIME
        out[i] = h
    return out


def hash_words(words: list[str]) -> np.ndarray:
    """The FNV-1a hashes of ``words``' UTF-8 bytes (uint64), in one numba pass over their joined bytes.

    Example:
        >>> hash_words(["a", "b"]).dtype
        dtype('uint64')
    """
    encoded = [w.encode("utf-8") for w in words]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    starts = np.zeros(len(encoded), dtype=np.int64)
    if len(encoded) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    arena = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    hashes: np.ndarray = hash_arena(arena, starts, lengths, np.empty(len(encoded), dtype=np.uint64))
    return hashes


@nb.njit(inline="always")
def lookup_hash(h: np.uint64, keys: np.ndarray, ids: np.ndarray, directory: np.ndarray,  # pragma: no cover - numba
                shift: np.uint64) -> np.int32:
    """The id of the word with hash ``h`` (-1: not in the vocabulary): the bucket ``h >> shift`` of the directory,
    scanned in order (keys are sorted)."""
    b = h >> shift
    for i in range(directory[b], directory[b + np.uint64(1)]):
        k = keys[i]
        if k == h:
            found: np.int32 = ids[i]  # ids' elements (int32) are Any to mypy
            return found
        if k > h:
            break
    return np.int32(-1)


@nb.njit(cache=True, nogil=True)
def _lookup_all(hashes: np.ndarray, keys: np.ndarray, ids: np.ndarray, directory: np.ndarray,  # pragma: no cover
                shift: np.uint64, out: np.ndarray) -> np.ndarray:
    for i in range(len(hashes)):
        out[i] = lookup_hash(hashes[i], keys, ids, directory, shift)
    return out


@nb.njit(cache=True, nogil=True)
def _directory(keys: np.ndarray, shift: np.uint64, out: np.ndarray) -> np.ndarray:  # pragma: no cover - numba
    """out[b] = the first index of a key whose top bits are >= b (keys sorted); out[-1] = len(keys)."""
    n_buckets = len(out) - 1
    i = 0
    for b in range(n_buckets):
        while i < len(keys) and (keys[i] >> shift) < np.uint64(b):
            i += 1
        out[b] = i
    out[n_buckets] = len(keys)
    return out


@nb.njit(cache=True, nogil=True)
def scan_ids(buf: np.ndarray, classes: np.ndarray, keys: np.ndarray, ids: np.ndarray,  # pragma: no cover - numba
             directory: np.ndarray, shift: np.uint64, out: np.ndarray, segs: np.ndarray) -> tuple[int, int]:
    """Tokenise ``buf`` as :func:`parvec.kernels.wordtable.scan_block` does (the same byte classes, the same
    FNV-1a) and look every token up: ``out[t]`` is token ``t``'s id (-1: not in the vocabulary), ``segs`` the
    tokens of each line (one entry per ``\\n`` and one for the text after the last).  ``out`` needs room for
    ``len(buf) // 2 + 1`` tokens, ``segs`` for the line breaks + 1.  Returns ``(tokens, segments)``."""
    n = len(buf)
    i = 0
    n_tok = 0
    n_seg = 0
    seg = 0
    while i < n:
        c = classes[buf[i]]
        if c != WORD:
            if c == NEWLINE:
                segs[n_seg] = seg
                n_seg += 1
                seg = 0
            i += 1
            continue
        j, h = word_at(buf, classes, i)
        out[n_tok] = lookup_hash(h, keys, ids, directory, shift)
        n_tok += 1
        seg += 1
        i = j
    segs[n_seg] = seg
    n_seg += 1
    return n_tok, n_seg


@dataclass(frozen=True)
class WordLookup:
    """Word hashes -> ids: sorted ``keys`` (uint64), their ``ids`` (int32) and a bucket ``directory`` (int32,
    ``2**bits + 1`` entries) over the keys' top ``bits`` bits.  Plain numpy arrays: Ray ships it zero-copy.

    Example:
        >>> t = WordLookup.from_hashes(np.array([30, 10, 20], np.uint64), np.array([0, 1, 2], np.int32))
        >>> t.keys.tolist(), t.ids.tolist(), t.lookup(np.array([20, 5], np.uint64)).tolist()
        ([10, 20, 30], [1, 2, 0], [2, -1])
    """

    keys: np.ndarray
    ids: np.ndarray
    directory: np.ndarray
    bits: int

    @classmethod
    def from_sorted(cls, keys: np.ndarray, ids: np.ndarray) -> WordLookup:
        """The lookup of keys already sorted and distinct (the concatenated parts of reducers that own
        consecutive hash ranges); a repeated or unsorted key is a ``ValueError``.

        Example:
            >>> WordLookup.from_sorted(np.array([1, 5], np.uint64), np.array([7, 3], np.int32)).bits
            1
        """
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        ids = np.ascontiguousarray(ids, dtype=np.int32)
        if keys.shape != ids.shape or keys.ndim != 1:
            raise ValueError("keys and ids must be one-dimensional and of one length")
        if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
            raise ValueError("keys must be sorted and distinct")
        bits = max(1, (len(keys) // 8).bit_length())
        directory = _directory(keys, np.uint64(64 - bits), np.empty((1 << bits) + 1, dtype=np.int32))
        return cls(keys, ids, directory, bits)

    @classmethod
    def from_hashes(cls, hashes: np.ndarray, ids: np.ndarray, words: list[str] | None = None) -> WordLookup:
        """The lookup of ``hashes[i] -> ids[i]`` in any order; two equal hashes are a :class:`ParvecError`
        (naming the two words when ``words``, indexed like ``hashes``, is given).

        Example:
            >>> WordLookup.from_hashes(np.array([4, 4], np.uint64), np.array([0, 1], np.int32), ["x", "y"])
            Traceback (most recent call last):
            ...
            parvec.errors.ParvecError: the words 'x' and 'y' have the same 64-bit hash 0x4: the hashed word lookup \
cannot tell them apart
        """
        hashes = np.asarray(hashes, dtype=np.uint64)
        order = np.argsort(hashes, kind="stable")
        keys = hashes[order]
        same = np.flatnonzero(keys[1:] == keys[:-1]) if len(keys) > 1 else np.zeros(0, np.int64)
        if len(same):
            a, b = int(order[same[0]]), int(order[same[0] + 1])
            what = f"the words {words[a]!r} and {words[b]!r}" if words is not None else f"entries {a} and {b}"
            raise ParvecError(f"{what} have the same 64-bit hash {int(keys[same[0]]):#x}: the hashed word lookup "
                              "cannot tell them apart")
        return cls.from_sorted(keys, np.asarray(ids, dtype=np.int32)[order])

    @classmethod
    def from_words(cls, words: list[str]) -> WordLookup:
        """The lookup of a word list (ids are positions in it).

        Example:
            >>> WordLookup.from_words(["a", "b"]).lookup(hash_words(["b"])).tolist()
            [1]
        """
        return cls.from_hashes(hash_words(words), np.arange(len(words), dtype=np.int32), words)

    @property
    def shift(self) -> np.uint64:
        """The bucket of hash ``h`` is ``h >> shift``."""
        return np.uint64(64 - self.bits)

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """The ids of ``hashes`` (-1 where not in the vocabulary), int32.

        Example:
            >>> WordLookup.from_words(["a"]).lookup(hash_words(["a", "z"])).tolist()
            [0, -1]
        """
        h = np.ascontiguousarray(hashes, dtype=np.uint64)
        found: np.ndarray = _lookup_all(h, self.keys, self.ids, self.directory, self.shift,
                                        np.empty(len(h), dtype=np.int32))
        return found

    @property
    def nbytes(self) -> int:
        """Bytes of the three arrays."""
        return int(self.keys.nbytes + self.ids.nbytes + self.directory.nbytes)


class HashScanner:
    """Tokenises normalised text blocks (:func:`parvec.corpus.textscan.normalise`) into vocabulary ids through a
    :class:`WordLookup`: what :meth:`parvec.corpus.textscan.WordTable.scan` gives with ``insert=False``, mapped
    to the vocabulary, without a table of the words.

    Example:
        >>> s = HashScanner(WordLookup.from_words(["the", "cat"]))
        >>> ids, segs = s.scan(b"the dog\\ncat")
        >>> ids.tolist(), segs.tolist()
        ([0, -1, 1], [2, 1])
    """

    def __init__(self, lookup: WordLookup) -> None:
        self.lookup = lookup
        self._ids = np.zeros(0, dtype=np.int32)
        self._segs = np.zeros(0, dtype=np.int64)

    def scan(self, block: bytes) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, line token counts)`` of one block (views, overwritten by the next call)."""
        if len(self._ids) < len(block) // 2 + 1:
            self._ids = np.zeros(len(block) // 2 + 1, dtype=np.int32)
        lines = block.count(b"\n") + 1
        if len(self._segs) < lines:
            self._segs = np.zeros(lines, dtype=np.int64)
        t = self.lookup
        n_tok, n_seg = scan_ids(np.frombuffer(block, dtype=np.uint8), CLASSES, t.keys, t.ids, t.directory, t.shift,
                                self._ids, self._segs)
        return self._ids[:n_tok], self._segs[:n_seg]


def part_of(hashes: np.ndarray, reducers: int) -> np.ndarray:
    """The partition of each hash among ``reducers`` (a sharded run's vocabulary reducers, and the partitions they
    write: :mod:`parvec.vocab_parts`): ``(top 32 bits * reducers) >> 32``, monotone in the hash (int64).

    Example:
        >>> part_of(np.array([0, 2**63, 2**64 - 1], np.uint64), 4).tolist()
        [0, 2, 3]
    """
    return ((np.asarray(hashes, dtype=np.uint64) >> np.uint64(32)) * np.uint64(reducers) >> np.uint64(32)).astype(
        np.int64)
