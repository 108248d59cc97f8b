"""A vocabulary kept in partitions on disk: what a column-sharded run has instead of one word list.

The distributed vocabulary (:mod:`parvec.distributed.vocab_count`) leaves each reducer with its words (a range of
64-bit word hashes).  Each reducer writes its partition as five ``.npy`` files, in id order
(:func:`write_part`): ``part-R.ids.npy`` (int32), ``part-R.counts.npy`` (int64), ``part-R.hashes.npy`` (uint64,
the FNV-1a hash of the word's UTF-8 bytes), ``part-R.offsets.npy`` (int64, one more than words) and
``part-R.bytes.npy`` (uint8, the words' UTF-8 bytes one after another).  Ids run by count descending, ties by
hash, so the partitions' ids interleave.  A sharded model or checkpoint records each partition's word count and
the CRC-32 of each file (``model.json``'s ``sharded.vocab``).

:class:`WordParts` opens them memory-mapped and answers what the writers and readers of a sharded model ask
without a Python object per word: the words of an id range (:meth:`WordParts.words_between`, for writing vectors
or a vocabulary file by row ranges in parallel), a word's id (:meth:`WordParts.index`: its hash says its
partition, and the partition's hashed lookup, :class:`parvec.wordhash.WordLookup` as the encoders use, its position
there: O(1), built for a partition at its first lookup, ~13 bytes a word of it), an id's word;
:meth:`WordParts.vocab` gives the whole :class:`parvec.vocab.Vocab` where one is wanted
(``Word2Vec.load`` of a sharded model).

Example:
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> info = write_part(d, 0, np.array([1, 0]), np.array([3, 5]), words=[b"cat", b"the"])
    >>> parts = WordParts.open(d, [VocabPart.from_json(info)])
    >>> parts.n_words, parts.word(0), parts.index("cat"), parts.counts_between(0, 2).tolist()
    (2, 'the', 1, [5, 3])
"""

from __future__ import annotations

import io
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba as nb
import numpy as np

from parvec.errors import CheckpointError
from parvec.fileio import output_file, write_array, write_failure
from parvec.vocab import Vocab
from parvec.wordhash import WordLookup, fnv1a64, hash_arena, lookup_hash

__all__ = ["PART_FILES", "VocabPart", "WordParts", "crc32_file", "part_files", "part_paths", "vocab_crc32",
           "write_part", "write_part_files"]

PART_FILES = ("ids", "counts", "hashes", "offsets", "bytes")
_CRC_BLOCK = 16 << 20


@dataclass(frozen=True)
class VocabPart:
    """A partition's record (``model.json``'s ``sharded.vocab.parts``, :func:`write_part`'s object): its number,
    words, bytes of words, and each file's CRC-32 (by name: ``ids``, ``counts``, ...).

    Example:
        >>> VocabPart.from_json({"part": 1, "words": 2, "bytes": 6, "crc32": {"ids": 7}}).to_json()["crc32"]
        {'ids': 7}
    """

    part: int
    words: int
    bytes: int
    crc32: dict[str, int]

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> VocabPart:
        """The record of a partition's JSON object (a model's, or :func:`write_part`'s)."""
        return cls(int(d["part"]), int(d["words"]), int(d.get("bytes", 0)), {str(k): int(v) for k, v in
                                                                             (d.get("crc32") or {}).items()})

    def to_json(self) -> dict[str, int | dict[str, int]]:
        """The partition's object in ``model.json``."""
        return {"part": self.part, "words": self.words, "bytes": self.bytes, "crc32": dict(self.crc32)}

    def paths(self, directory: str | os.PathLike[str]) -> dict[str, Path]:
        """The partition's five files in ``directory`` (:func:`part_paths`)."""
        return part_paths(directory, self.part)


def part_paths(directory: str | os.PathLike[str], r: int) -> dict[str, Path]:
    """The five files of partition ``r`` in ``directory``.

    Example:
        >>> part_paths("vocab", 2)["ids"].as_posix()
        'vocab/part-2.ids.npy'
    """
    return {name: Path(directory) / f"part-{r}.{name}.npy" for name in PART_FILES}


def crc32_file(path: str | os.PathLike[str]) -> int:
    """The CRC-32 of a file's bytes, read in blocks.

    Example:
        >>> crc32_file(__file__) > 0
        True
    """
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(_CRC_BLOCK):
            crc = zlib.crc32(block, crc)
    return crc & 0xFFFFFFFF


def part_files(r: int, ids: np.ndarray, counts: np.ndarray, lengths: np.ndarray | None = None,
               arena: np.ndarray | None = None, hashes: np.ndarray | None = None,
               words: Sequence[bytes] | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Partition ``r`` (words of ids ``ids``, counts ``counts``; their bytes as ``lengths`` + ``arena``, or
    ``words``) sorted by id, in memory: its record (``{"part": r, "words": n, "bytes": total, "crc32": {file:
    CRC-32}}``) and its five files' bytes (``.npy``, as ``uint8`` arrays: what :func:`write_part` writes, what a
    Ray task receives through the object store).  ``hashes`` (FNV-1a of the bytes) are computed when not given.

    Example:
        >>> record, files = part_files(0, np.array([0]), np.array([7]), words=[b"x"])
        >>> record["words"], sorted(files) == sorted(PART_FILES)
        (1, True)
    """
    if words is not None:
        lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
        arena = np.frombuffer(b"".join(words), dtype=np.uint8)
    assert lengths is not None and arena is not None
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    if hashes is None:
        hashes = hash_arena(arena, starts, lengths, np.empty(len(lengths), dtype=np.uint64))
    order = np.argsort(np.asarray(ids), kind="stable")
    sorted_lengths = lengths[order]
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(sorted_lengths, out=offsets[1:])
    out_bytes = np.empty(int(offsets[-1]), dtype=np.uint8)
    _gather(arena, starts[order], sorted_lengths, out_bytes)
    arrays: dict[str, np.ndarray] = {"ids": np.asarray(ids, dtype=np.int32)[order],
                                     "counts": np.asarray(counts, dtype=np.int64)[order],
                                     "hashes": np.asarray(hashes, dtype=np.uint64)[order], "offsets": offsets,
                                     "bytes": out_bytes}
    files = {}
    for name, a in arrays.items():
        buf = io.BytesIO()
        write_array(buf, a)
        files[name] = np.frombuffer(buf.getbuffer(), dtype=np.uint8)
    crcs = {name: zlib.crc32(f.data) & 0xFFFFFFFF for name, f in files.items()}
    return {"part": r, "words": len(order), "bytes": int(offsets[-1]), "crc32": crcs}, files


def write_part_files(directory: str | os.PathLike[str], r: int, files: dict[str, np.ndarray]) -> None:
    """Write partition ``r``'s files (:func:`part_files`'s bytes) into ``directory``.

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> write_part_files(d, 0, part_files(0, np.array([0]), np.array([7]), words=[b"x"])[1])
        >>> WordParts.open(d, [VocabPart(0, 1, 1, {})]).word(0)
        'x'
    """
    paths = part_paths(directory, r)
    Path(directory).mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        try:
            with output_file(paths[name]) as f:
                f.write(np.ascontiguousarray(data).data)
        except OSError as exc:
            raise write_failure(paths[name], exc) from None


def write_part(directory: str | os.PathLike[str], r: int, ids: np.ndarray, counts: np.ndarray,
               lengths: np.ndarray | None = None, arena: np.ndarray | None = None,
               hashes: np.ndarray | None = None, words: Sequence[bytes] | None = None) -> dict[str, Any]:
    """Write partition ``r`` (:func:`part_files`) into ``directory``, sorted by id; returns its record:
    ``{"part": r, "words": n, "bytes": total, "crc32": {file: CRC-32}}``.

    Example:
        >>> import tempfile
        >>> write_part(tempfile.mkdtemp(), 0, np.array([0]), np.array([7]), words=[b"x"])["words"]
        1
    """
    record, files = part_files(r, ids, counts, lengths, arena, hashes, words)
    write_part_files(directory, r, files)
    return record


@nb.njit(cache=True, nogil=True)
def _gather(arena: np.ndarray, starts: np.ndarray, lengths: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """The words ``arena[starts[i] : starts[i] + lengths[i]]`` one after another into ``out``."""
    k = 0
    for i in range(len(starts)):
        a = starts[i]
        for b in range(lengths[i]):
            out[k + b] = arena[a + b]
        k += lengths[i]


def vocab_crc32(parts: Sequence[VocabPart]) -> int:
    """One CRC-32 of a vocabulary's partitions (their records' file CRC-32s, in partition order): equal for the
    same words, counts and ids.

    Example:
        >>> p = VocabPart(0, 2, 6, {"ids": 1, "counts": 2})
        >>> vocab_crc32([p]) == vocab_crc32([VocabPart(0, 2, 6, {"counts": 2, "ids": 1})])
        True
    """
    crc = 0
    for p in parts:
        for name in sorted(p.crc32):
            crc = zlib.crc32(f"{name}:{p.crc32[name]};".encode(), crc)
    return crc & 0xFFFFFFFF


@nb.njit(cache=True, nogil=True)
def _find(h: np.uint64, keys: np.ndarray, ids: np.ndarray, directory: np.ndarray,  # pragma: no cover - numba
          shift: np.uint64) -> np.int32:
    """:func:`parvec.wordhash.lookup_hash` compiled once (cached) for calls from Python."""
    found: np.int32 = lookup_hash(h, keys, ids, directory, shift)  # a jitted call is Any to mypy
    return found


@dataclass
class _Part:
    ids: np.ndarray
    counts: np.ndarray
    hashes: np.ndarray
    offsets: np.ndarray
    data: np.ndarray
    lookup: WordLookup | None = None  # hash -> position in this partition, built at its first lookup
    repeated: frozenset[int] = frozenset()  # hashes two of its words share (looked up by their bytes)

    def table(self) -> WordLookup:
        """The partition's hash -> position lookup, built once from its hashes (a hash two words share maps to
        the first of them and is listed in ``repeated``: the words' bytes decide).

        Example:
            >>> p = _Part(*(np.zeros(1, t) for t in (np.int32, np.int64, np.uint64, np.int64, np.uint8)))
            >>> p.table().lookup(np.zeros(1, np.uint64)).tolist()
            [0]
        """
        if self.lookup is None:
            hashes = np.asarray(self.hashes, dtype=np.uint64)
            order = np.argsort(hashes, kind="stable")
            keys = hashes[order]
            first = np.ones(len(keys), dtype=bool)
            first[1:] = keys[1:] != keys[:-1]
            self.repeated = frozenset(int(h) for h in keys[~first].tolist())
            self.lookup = WordLookup.from_sorted(keys[first], order[first].astype(np.int32))
        return self.lookup

    def position(self, h: np.uint64, data: bytes) -> int | None:
        """The position in this partition of the word of hash ``h`` and UTF-8 bytes ``data`` (None: not here).

        Example:
            >>> p = _Part(*(np.zeros(n, t) for n, t in ((1, np.int32), (1, np.int64), (1, np.uint64), (2, np.int64),
            ...                                         (0, np.uint8))))
            >>> p.position(np.uint64(0), b""), p.position(np.uint64(5), b"")
            (0, None)
        """
        t = self.table()
        k = int(_find(h, t.keys, t.ids, t.directory, t.shift))
        if k >= 0 and int(h) in self.repeated:  # two words of one hash: every position of it, by its bytes
            candidates = np.flatnonzero(np.asarray(self.hashes) == h).tolist()
        else:
            candidates = [k] if k >= 0 else []
        for k in candidates:
            if self.data[int(self.offsets[k]):int(self.offsets[k + 1])].tobytes() == data:
                return int(k)
        return None


def _npy_view(data: np.ndarray) -> np.ndarray:
    # The array a .npy file's bytes hold, as a view of them (no copy).
    buf = io.BytesIO(data[:4096].tobytes())
    version = np.lib.format.read_magic(buf)
    shape, _, dtype = (np.lib.format.read_array_header_1_0(buf) if version == (1, 0)
                       else np.lib.format.read_array_header_2_0(buf))
    count = int(np.prod(shape)) if shape else 1
    return np.frombuffer(data, dtype=dtype, count=count, offset=buf.tell()).reshape(shape)


class WordParts:
    """A vocabulary's partitions, memory-mapped (module docstring); ``records`` are their :class:`VocabPart` records.

    Example:
        >>> parts = WordParts.open("model/vocab", records)  # doctest: +SKIP
        >>> parts.words_between(0, 3)  # doctest: +SKIP
        [b'the', b'of', b'and']
    """

    def __init__(self, parts: list[_Part], numbers: Sequence[int] | None = None) -> None:
        self.parts = parts
        self.n_words = int(sum(len(p.ids) for p in parts))
        # partitions 0..R-1 in order are the reducers' hash ranges (parvec.wordhash.part_of): a word is in its own
        self._by_hash = numbers is not None and list(numbers) == list(range(len(parts)))

    @classmethod
    def open(cls, directory: str | os.PathLike[str], records: Sequence[VocabPart],
             check: bool = False) -> WordParts:
        """Open the partitions ``records`` names in ``directory``; with ``check`` every file's CRC-32 is compared
        with its record (a :class:`parvec.errors.CheckpointError` naming the file that differs or is missing).

        Example:
            >>> WordParts.open("model/vocab", records, check=True).n_words  # doctest: +SKIP
            71290
        """
        parts = []
        for rec in records:
            paths = rec.paths(directory)
            arrays = {}
            for name, path in paths.items():
                try:
                    if check and crc32_file(path) != rec.crc32[name]:
                        raise CheckpointError(f"{path}: its checksum does not match model.json (the file was altered "
                                              "or damaged)")
                    # a plain ndarray view of the memory map: numpy's memmap subclass costs microseconds an index
                    arrays[name] = np.load(path, mmap_mode="r").view(np.ndarray)
                except FileNotFoundError:
                    raise CheckpointError(f"{path}: missing (a partition of the vocabulary)") from None
                except (OSError, ValueError) as exc:
                    raise CheckpointError(f"{path}: truncated or damaged array ({exc})") from None
            if len(arrays["ids"]) != rec.words or len(arrays["offsets"]) != len(arrays["ids"]) + 1:
                raise CheckpointError(f"{paths['ids']}: holds {len(arrays['ids'])} words, model.json records "
                                      f"{rec.words}")
            parts.append(_Part(arrays["ids"], arrays["counts"], arrays["hashes"], arrays["offsets"], arrays["bytes"]))
        return cls(parts, [rec.part for rec in records])

    @classmethod
    def of_files(cls, records: Sequence[VocabPart], files: Sequence[dict[str, np.ndarray]]) -> WordParts:
        """The partitions ``records`` names from their files' bytes in memory (:func:`part_files`: what the
        reducers hand over through Ray's object store), read in place.

        Example:
            >>> record, files = part_files(0, np.array([1, 0]), np.array([3, 5]), words=[b"cat", b"the"])
            >>> WordParts.of_files([VocabPart.from_json(record)], [files]).words_between(0, 2)
            [b'the', b'cat']
        """
        parts = []
        for f in files:
            arrays = {name: _npy_view(f[name]) for name in PART_FILES}
            parts.append(_Part(arrays["ids"], arrays["counts"], arrays["hashes"], arrays["offsets"], arrays["bytes"]))
        return cls(parts, [rec.part for rec in records])

    def _between(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
        # ids, counts and bytes of the words of ids lo..hi-1 of every partition (not yet in id order).
        ids, counts, words = [], [], []
        for p in self.parts:
            a, b = np.searchsorted(p.ids, [lo, hi])
            if b <= a:
                continue
            off = np.asarray(p.offsets[a:b + 1])
            data = bytes(p.data[off[0]:off[-1]])
            rel = off - off[0]
            ids.append(np.asarray(p.ids[a:b]))
            counts.append(np.asarray(p.counts[a:b]))
            words += [data[rel[i]:rel[i + 1]] for i in range(b - a)]
        return (np.concatenate(ids) if ids else np.zeros(0, np.int32),
                np.concatenate(counts) if counts else np.zeros(0, np.int64), words)

    def words_between(self, lo: int, hi: int) -> list[bytes]:
        """The UTF-8 bytes of the words of ids ``lo .. hi-1``, in id order (a list for that range only)."""
        ids, _, words = self._between(lo, hi)
        order = np.argsort(ids, kind="stable")
        if len(ids) != hi - lo:
            raise CheckpointError(f"the vocabulary's partitions hold {len(ids)} of the ids {lo}..{hi - 1}")
        return [words[i] for i in order.tolist()]

    def words_of(self, ids: np.ndarray) -> list[bytes]:
        """The UTF-8 bytes of the words of ids ``ids`` (any order), each found in its partition by binary search.

        Example:
            >>> parts.words_of(np.array([2, 0]))  # doctest: +SKIP
            [b'and', b'the']
        """
        ids = np.asarray(ids, dtype=np.int64)
        out: list[bytes | None] = [None] * len(ids)
        for p in self.parts:
            if not len(p.ids):
                continue
            at = np.minimum(np.searchsorted(p.ids, ids), len(p.ids) - 1)
            hit = np.flatnonzero(p.ids[at] == ids)
            offsets, data = p.offsets, p.data
            for i, k in zip(hit.tolist(), at[hit].tolist(), strict=True):
                out[i] = data[int(offsets[k]):int(offsets[k + 1])].tobytes()
        if any(w is None for w in out):
            missing = next(int(ids[i]) for i, w in enumerate(out) if w is None)
            raise CheckpointError(f"the vocabulary's partitions hold no word of id {missing}")
        return [w for w in out if w is not None]

    def counts_between(self, lo: int, hi: int) -> np.ndarray:
        """The counts of ids ``lo .. hi-1`` (int64)."""
        ids, counts, _ = self._between(lo, hi)
        return counts[np.argsort(ids, kind="stable")]

    def word(self, i: int) -> str:
        """The word of id ``i``."""
        return self.words_between(int(i), int(i) + 1)[0].decode("utf-8")

    def index(self, word: str) -> int | None:
        """The id of ``word`` (None when it is not in the vocabulary): its hash names its partition (the reducer's
        hash range, looked at first) and its position there (the partition's hashed lookup, built at its first
        lookup: O(1), no scan of the partition); its bytes decide."""
        data = word.encode("utf-8")
        hash_ = fnv1a64(data)
        h = np.uint64(hash_)
        parts = self.parts
        if self._by_hash and parts:  # its own partition first (the rest only for partitions written otherwise)
            own = ((hash_ >> 32) * len(parts)) >> 32  # parvec.wordhash.part_of
            at = parts[own].position(h, data)
            if at is not None:
                return int(parts[own].ids[at])
            parts = [*parts[:own], *parts[own + 1:]]
        for p in parts:
            k = p.position(h, data)
            if k is not None:
                return int(p.ids[k])
        return None

    def vocab(self) -> Vocab:
        """The whole vocabulary as a :class:`parvec.vocab.Vocab` (a Python string per word: for models that fit)."""
        words = [w.decode("utf-8") for w in self.words_between(0, self.n_words)]
        return Vocab(words, self.counts_between(0, self.n_words))
