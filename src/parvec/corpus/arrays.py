"""The arrays of an encoded corpus -- a vocabulary, int32 tokens, int64 sentence offsets -- in memory and on disk.

:class:`EncodedArrays` is what the counting and encoding passes (:mod:`parvec.corpus.encode`) and the on-disk
cache (:mod:`parvec.corpus.cache`) make; :class:`parvec.corpus.EncodedCorpus`, which every trainer reads, is
the same data with the constructors that read text (``from_file`` calls the passes and the cache, so the data
they make is a class below them: the imports run one way, ``encoded`` -> ``cache`` -> ``encode`` -> ``arrays``).

On disk a corpus is a directory of ``tokens.npy`` (int32), ``offsets.npy`` (int64), ``vocab.json`` and
``header.json`` (the counts and the SHA-256 of the other three files; written last, so its presence marks a
complete directory).  A large corpus is written block by block (:class:`TokenFiles`: never the whole token
array in memory) and read back memory-mapped (:func:`read_arrays`), its ids checked a block at a time.

Example:
    >>> import tempfile
    >>> corpus = EncodedArrays.from_arrays(np.array([0, 1, 0], dtype=np.int32), None)
    >>> d = Path(tempfile.mkdtemp())
    >>> write_arrays(corpus, d); write_header(corpus, d, None)
    >>> loaded, header = read_arrays(d, mmap=True, verify=True)
    >>> loaded.tokens.tolist(), header["vocab_size"]
    ([0, 1, 0], 2)
"""

from __future__ import annotations

import hashlib
import json
import os
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import numpy as np

from parvec.corpus.pages import release_pages
from parvec.corpus.readers import InputFile
from parvec.errors import ParvecError
from parvec.fileio import write_reason
from parvec.vocab import Pruning, Vocab

__all__ = [
    "CACHE_FORMAT_VERSION",
    "DAMAGE_ERRORS",
    "EncodedArrays",
    "TokenFiles",
    "compact",
    "read_arrays",
    "write_arrays",
    "write_header",
]

CACHE_FORMAT_VERSION = 2
# What reading a damaged corpus directory can raise (np.load parses its header with tokenize and literal_eval).
DAMAGE_ERRORS = (
    OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, EOFError, SyntaxError, MemoryError,
    OverflowError, tokenize.TokenError,
)
_CHECK_BLOCK = 1 << 24  # tokens range-checked at a time when a memory-mapped corpus is loaded
_SAVED_FILES = ("tokens.npy", "offsets.npy", "vocab.json")
_NPY_HEADER_BYTES = 128  # a 1-D array's .npy header, padded: the shape is written once the length is known


@dataclass
class EncodedArrays:
    """Vocabulary + int32 tokens + int64 sentence offsets (``len(offsets) == sentences + 1``).

    Sentence ``i`` is ``tokens[offsets[i]:offsets[i + 1]]``; token ids index ``vocab.words``.
    ``raw_words`` counts every token of the source, out-of-vocabulary ones included.  ``cache_used``
    says where :meth:`parvec.corpus.EncodedCorpus.from_file` got it: ``True`` from the cache, ``False`` read (a
    cache was consulted and written), ``None`` no cache involved (no cache directory, a stream, or a given
    vocabulary).

    Example:
        >>> c = EncodedArrays.from_arrays(np.array([0, 1, 0, 1, 0], dtype=np.int32), [0, 3, 5], ["a", "b"])
        >>> c.vocab.words, c.n_tokens, c.n_sentences
        (['a', 'b'], 5, 2)
    """

    vocab: Vocab
    tokens: np.ndarray
    offsets: np.ndarray
    raw_words: int = 0
    source: str = ""
    # True: loaded from the cache; False: a cache was consulted and (re)built; None: no cache involved.
    cache_used: bool | None = None
    # What vocabulary pruning did while counting (VocabCounter.pruning), None if it did not prune.
    pruning: Pruning | None = None
    # The files it was read from, unchanged while read (path, size, mtime); None if not files.
    inputs: list[InputFile] | None = None

    def __post_init__(self) -> None:
        if self.tokens.dtype != np.int32:
            raise ValueError("tokens must be int32")
        if self.offsets.dtype != np.int64:
            raise ValueError("offsets must be int64")
        if not self.raw_words:
            self.raw_words = int(len(self.tokens))

    @classmethod
    def of(cls, corpus: EncodedArrays) -> Self:
        """``corpus`` as an instance of this class: the same vocabulary and arrays (not copied) and figures.

        Example:
            >>> a = EncodedArrays.from_arrays(np.array([0], dtype=np.int32), None)
            >>> EncodedArrays.of(a) is a
            True
        """
        if type(corpus) is cls:
            return corpus
        return cls(corpus.vocab, corpus.tokens, corpus.offsets, raw_words=corpus.raw_words, source=corpus.source,
                   cache_used=corpus.cache_used, pruning=corpus.pruning, inputs=corpus.inputs)

    @property
    def n_tokens(self) -> int:
        """Number of in-vocabulary tokens (the words a trainer processes per epoch)."""
        return int(len(self.tokens))

    @property
    def n_sentences(self) -> int:
        """Number of sentences."""
        return int(len(self.offsets) - 1)

    def sentences(self) -> Iterator[list[str]]:
        """Decode back to lists of words (for inspection and tests).

        Example:
            >>> c = EncodedArrays.from_arrays(np.array([0, 1], dtype=np.int32), None, ["x", "y"])
            >>> list(c.sentences())
            [['x', 'y']]
        """
        words = self.vocab.words
        for i in range(self.n_sentences):
            yield [words[t] for t in self.tokens[self.offsets[i] : self.offsets[i + 1]]]

    @classmethod
    def from_arrays(
        cls,
        tokens: np.ndarray,
        offsets: np.ndarray | None,
        vocab: Vocab | list[str] | None = None,
    ) -> Self:
        """Wrap ready arrays.  ``offsets=None`` means one sentence (the trainer splits long ones).
        Without a vocabulary, ids 0..max are the words ``"0"``, ``"1"``, ... with counts from the
        tokens; ids must then be ranked by count, or pass a :class:`Vocab` with the counts.

        Example:
            >>> EncodedArrays.from_arrays(np.array([0, 0, 1], dtype=np.int32), None).vocab.counts.tolist()
            [2, 1]
        """
        tokens = np.asarray(tokens)
        if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
            raise ParvecError("tokens must be a 1-D integer array")
        tokens = tokens.astype(np.int32, copy=False)
        if offsets is None:
            offsets = np.array([0, len(tokens)], dtype=np.int64)
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(tokens):
            raise ParvecError("offsets must start at 0 and end at len(tokens)")
        if np.any(np.diff(offsets) < 0):
            raise ParvecError("offsets must be non-decreasing")
        n_ids = int(tokens.max()) + 1 if len(tokens) else 0
        if len(tokens) and tokens.min() < 0:
            raise ParvecError("tokens must be non-negative ids")
        if vocab is None or isinstance(vocab, list):
            counts = np.bincount(tokens, minlength=n_ids).astype(np.int64)
            words = [str(i) for i in range(n_ids)] if vocab is None else list(vocab)
            if len(words) < n_ids:
                raise ParvecError(f"tokens use id {n_ids - 1} but the vocabulary has {len(words)} words")
            counts = np.pad(counts, (0, len(words) - len(counts)))
            vocab = Vocab(words, counts)
        elif n_ids > len(vocab):
            raise ParvecError(f"tokens use id {n_ids - 1} but the vocabulary has {len(vocab)} words")
        return cls(vocab, tokens, offsets, raw_words=len(tokens), source="<arrays>")


def compact(ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop the ids < 0 (out-of-vocabulary words) and shorten each sentence's length to match.

    Example:
        >>> ids, lengths = compact(np.array([0, -1, 2, -1], np.int32), np.array([3, 1], np.int64))
        >>> ids.tolist(), lengths.tolist()
        ([0, 2], [2, 0])
    """
    keep = ids >= 0
    if not keep.all():
        # Per-sentence count of kept tokens: cumulative sum read at sentence ends.
        ends = np.cumsum(lengths)
        kept_cum = np.concatenate(([0], np.cumsum(keep)))
        lengths = kept_cum[ends] - kept_cum[np.concatenate(([0], ends[:-1]))]
        ids = ids[keep]
    return ids.astype(np.int32, copy=False), lengths


# ---------------------------------------------------------------------- on disk
def _npy_header(dtype: np.dtype, length: int) -> bytes:
    body = f"{{'descr': {np.dtype(dtype).str!r}, 'fortran_order': False, 'shape': ({length},), }}"
    size = _NPY_HEADER_BYTES - 10
    return b"\x93NUMPY\x01\x00" + size.to_bytes(2, "little") + (body.ljust(size - 1) + "\n").encode("latin1")


class TokenFiles:
    """``tokens.npy`` (int32) and ``offsets.npy`` (int64) written block by block; headers written last.

    Each :meth:`add` takes a block of ids (ids < 0 are dropped, see :func:`compact`) and its sentence lengths
    (sentences left empty are dropped).  A write that fails raises :class:`ParvecError` naming the directory
    and the cause (``no space left on device``).

    Example:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> with TokenFiles(d, "c.txt") as out:
        ...     out.add(np.array([0, -1, 1], np.int32), np.array([2, 1], np.int64))
        >>> np.load(d / "tokens.npy").tolist(), np.load(d / "offsets.npy").tolist()
        ([0, 1], [0, 1, 2])
    """

    def __init__(self, directory: Path, source: str) -> None:
        self.directory = directory
        self.source = source
        self.n_tokens = 0
        self.n_sentences = 0
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self.tokens = open(directory / "tokens.npy", "wb")  # noqa: SIM115 - closed in __exit__
            self.offsets = open(directory / "offsets.npy", "wb")  # noqa: SIM115
            self.tokens.write(bytes(_NPY_HEADER_BYTES))
            self.offsets.write(bytes(_NPY_HEADER_BYTES))
            self.offsets.write(np.zeros(1, dtype=np.int64).tobytes())
            self.tokens.flush()  # nothing buffered: put() writes at positions, beside the buffered writes
        except OSError as exc:
            raise self._error(exc) from None

    def _error(self, exc: OSError) -> ParvecError:
        return ParvecError(f"{self.source}: cannot write the encoded corpus in {self.directory}: "
                           f"{write_reason(exc)} (free space there, or choose another --cache-dir)")

    def add(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """Append a block of ids and its sentence lengths."""
        ids, lengths = compact(ids, lengths)
        lengths = lengths[lengths > 0]  # sentences made only of dropped words carry nothing
        ends = np.cumsum(lengths)
        ends += self.n_tokens
        try:
            self.tokens.write(np.ascontiguousarray(ids, dtype=np.int32).data.cast("B"))
            self.offsets.write(np.ascontiguousarray(ends, dtype=np.int64).data.cast("B"))
        except OSError as exc:
            raise self._error(exc) from None
        self.n_tokens += len(ids)
        self.n_sentences += len(lengths)

    def put(self, ids: np.ndarray, at: int) -> None:
        """Write in-vocabulary ids (all >= 0) as tokens ``at``, ``at + 1``, ... of ``tokens.npy``: the parts of a
        corpus encoded in parallel, each at its place (safe from several threads at once; a part's sentence
        lengths follow, in order, with :meth:`add_lengths`).

        Example:
            >>> import tempfile
            >>> d = Path(tempfile.mkdtemp())
            >>> with TokenFiles(d, "c.txt") as out:
            ...     out.put(np.array([2], np.int32), 1); out.put(np.array([0], np.int32), 0)
            ...     out.add_lengths(np.array([1, 0, 1], np.int64))
            >>> np.load(d / "tokens.npy").tolist(), np.load(d / "offsets.npy").tolist()
            ([0, 2], [0, 1, 2])
        """
        data = np.ascontiguousarray(ids, dtype=np.int32).data.cast("B")
        pos = _NPY_HEADER_BYTES + 4 * at
        try:
            while len(data):
                written = os.pwrite(self.tokens.fileno(), data, pos)
                data, pos = data[written:], pos + written
        except OSError as exc:
            raise self._error(exc) from None

    def add_lengths(self, lengths: np.ndarray) -> None:
        """Append sentence lengths (in-vocabulary tokens; empty sentences are dropped) for tokens written by
        :meth:`put`."""
        lengths = lengths[lengths > 0]
        ends = np.cumsum(lengths)
        ends += self.n_tokens
        try:
            self.offsets.write(np.ascontiguousarray(ends, dtype=np.int64).data.cast("B"))
        except OSError as exc:
            raise self._error(exc) from None
        self.n_tokens += int(lengths.sum())
        self.n_sentences += len(lengths)

    def __enter__(self) -> TokenFiles:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            if exc_info[0] is None:
                for f, dtype, n in ((self.tokens, np.int32, self.n_tokens), (self.offsets, np.int64,
                                                                               self.n_sentences + 1)):
                    f.seek(0)
                    f.write(_npy_header(np.dtype(dtype), n))
        except OSError as exc:
            raise self._error(exc) from None
        finally:
            self.tokens.close()
            self.offsets.close()


def write_arrays(corpus: EncodedArrays, directory: Path) -> None:
    """Write ``tokens.npy``, ``offsets.npy`` and ``vocab.json`` of ``corpus`` into ``directory`` (which exists);
    :func:`write_header` completes it.

    Example:
        >>> write_arrays(corpus, Path("cache/entry"))  # doctest: +SKIP
    """
    np.save(directory / "tokens.npy", np.asarray(corpus.tokens))
    np.save(directory / "offsets.npy", np.asarray(corpus.offsets))
    (directory / "vocab.json").write_text(corpus.vocab.to_json(), encoding="utf-8")


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def write_header(corpus: EncodedArrays, directory: Path, extra: dict[str, Any] | None) -> None:
    """Write ``header.json`` last, with the corpus's figures, the SHA-256 of the other three files and ``extra``:
    its presence marks a complete directory.

    Example:
        >>> write_header(corpus, Path("cache/entry"), {"source_note": "x"})  # doctest: +SKIP
    """
    header = {
        "format": "parvec-encoded-corpus",
        "version": CACHE_FORMAT_VERSION,
        "tokens": corpus.n_tokens,
        "sentences": corpus.n_sentences,
        "vocab_size": len(corpus.vocab),
        "raw_words": corpus.raw_words,
        "source": corpus.source,
        "files": {name: _file_sha256(directory / name) for name in _SAVED_FILES},
        **(extra or {}),
    }
    # header.json last: its presence marks a complete entry.
    (directory / "header.json").write_text(json.dumps(header, indent=1), encoding="utf-8")


def read_arrays(directory: Path, mmap: bool, verify: bool) -> tuple[EncodedArrays, dict[str, Any]]:
    """The corpus in ``directory`` and its header; the tokens memory-mapped with ``mmap``.  Its shapes, dtypes,
    offsets and id ranges are checked, and with ``verify`` the files' checksums (one read of each file):
    anything damaged raises :class:`ParvecError` naming it (or one of :data:`DAMAGE_ERRORS`).

    Example:
        >>> corpus, header = read_arrays(Path("cache/entry"), mmap=True, verify=True)  # doctest: +SKIP
    """
    header = json.loads((directory / "header.json").read_text(encoding="utf-8"))
    if not isinstance(header, dict):
        header = {}
    version = header.get("version")
    if header.get("format") != "parvec-encoded-corpus" or version not in (1, CACHE_FORMAT_VERSION):
        raise ParvecError(f"{directory}: not a parvec encoded corpus (version 1 or {CACHE_FORMAT_VERSION})")
    if verify and version == CACHE_FORMAT_VERSION:  # version 1 had no checksums
        for name in _SAVED_FILES:
            if _file_sha256(directory / name) != header["files"][name]:
                raise ParvecError(f"{directory / name}: damaged (its SHA-256 differs from header.json's)")
    tokens = np.load(directory / "tokens.npy", mmap_mode="r" if mmap else None, allow_pickle=False)
    offsets = np.load(directory / "offsets.npy", allow_pickle=False)
    vocab = Vocab.from_json((directory / "vocab.json").read_text(encoding="utf-8"))
    problem = None
    if tokens.dtype != np.int32 or tokens.ndim != 1 or offsets.dtype != np.int64 or offsets.ndim != 1:
        problem = "arrays of the wrong type or shape"
    elif len(tokens) != header["tokens"] or len(offsets) != header["sentences"] + 1 or len(vocab) != header[
        "vocab_size"
    ]:
        problem = "arrays or vocabulary do not match the header"
    elif offsets[0] != 0 or offsets[-1] != len(tokens) or np.any(np.diff(offsets) < 0):
        problem = "sentence offsets out of order"
    elif not _ids_in_range(tokens, len(vocab)):
        problem = "token ids outside the vocabulary"
    if problem:
        raise ParvecError(f"{directory}: damaged encoded corpus: {problem}")
    corpus = EncodedArrays(vocab, tokens, offsets, raw_words=int(header["raw_words"]), source=header.get("source", ""))
    corpus.pruning = Pruning.from_json(header.get("pruning"))
    return corpus, header


def _ids_in_range(tokens: np.ndarray, n_words: int) -> bool:
    """All ids in ``[0, n_words)``, checked a block at a time (a memory map's pages released after each)."""
    for start in range(0, len(tokens), _CHECK_BLOCK):
        block = tokens[start : start + _CHECK_BLOCK]
        if int(block.min()) < 0 or int(block.max()) >= n_words:
            return False
        release_pages(tokens, start, start + len(block))
    return True
