"""The encoded corpus: a vocabulary, a flat int32 token array and int64 sentence offsets.

Every trainer reads only this.  Text files (plain, .gz, .bz2, .xz), streams (standard input ``-``, a
FIFO, bash's ``<(...)``), restartable iterables of token lists, ready numpy arrays and graph walks all
become an :class:`EncodedCorpus`.

Reading follows word2vec.c and gensim's ``LineSentence``: one sentence per line, tokens split on
whitespace (a NUL byte counts as whitespace, as word2vec.c's C strings end a word there), no lowercasing
unless asked.  A line longer than ``max_sentence_length`` tokens is split into consecutive pieces (never
truncated); the input is streamed in blocks, so a 100 MB single-line text8-style file is never read whole.
Out-of-vocabulary words are dropped from the token array, as word2vec.c skips them.

A file is read twice, as word2vec.c does: count the vocabulary, then encode, both on bytes by a numba
kernel (:mod:`parvec.textscan`, :mod:`parvec.kernels.wordtable`: a hash table of the words' bytes, ids in
first-seen order) that gives exactly what the reader in Python (``str.split``, a ``Counter``) gives, 3-5
times faster (benchmarks/bench_encode.py); when the distinct words pass ``max_vocab_size`` it stops and
word2vec.c's pruning runs in Python, whose result depends on when it prunes.  The two reads must see the same
file: its identity (device, inode, size, mtime, ctime) is compared before and after each pass, a recently
changed file's bytes are hashed in each pass, and the encoding pass counts each vocabulary word's tokens, which
must be the counting pass's counts (at least them after pruning); a file that changed is refused, named
(docs/big_corpora.md).  A stream cannot be read
twice, so it is encoded in one pass: every token gets a provisional id in first-seen order while the
words are counted, then the vocabulary is sorted and pruned exactly as for a file and the provisional ids
are remapped (pruned words dropped, sentence offsets fixed).  The result is the same as the two passes
give.  Memory: besides what two passes hold (the counts of every distinct word, the encoded tokens) this
holds the tokens of pruned words until the remap, at 4 bytes a token, and no copy of the text.  With
``max_vocab_size`` (which bounds the words held while counting) one pass cannot keep that bound -- it
would have to remember every pruned word in case it comes back -- so the stream is spooled to a
temporary file (in the cache directory, or the system's temporary directory without one), read in two
passes and deleted.

An encoded corpus of a file can be cached on disk (``tokens.npy``, ``offsets.npy``, ``vocab.json``,
``header.json``).  The cache entry is keyed on the file's path, device, inode, size, modification time
and inode change time (ctime, in nanoseconds: no tool sets it back, so an in-place edit with the mtime
restored, or a file replaced by a rename, is a new key), and on the reading options.  A file changed less
than a few seconds before it was read (when an edit could still fall in the same clock tick) also has its
content's SHA-256 checked before its entry is used.  An entry is written into a temporary directory
renamed into place, and its files carry SHA-256 checksums in ``header.json``, so a killed run or damaged
files are rebuilt, never trusted.  Streams are never cached.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import logging
import lzma
import mmap
import os
import shutil
import tempfile
import time
import tokenize
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parvec.errors import ParvecError
from parvec.formats import STDIN, check_input, is_stream, open_input, write_reason
from parvec.kernels.wordtable import piece_lengths
from parvec.textscan import WordTable, normalise, tally
from parvec.vocab import Vocab, VocabCounter, count_words

log = logging.getLogger(__name__)

_BLOCK_BYTES = 1 << 20  # 1 MiB of text per read (its words, as str objects, take ~12 MiB)
_ENCODE_BLOCK = 1 << 18  # tokens encoded per numpy block
# A corpus of this many tokens or more (16 MiB of int32) is encoded into a file and memory-mapped, even
# without a cache directory (then in a temporary directory removed at once).
_SPILL_TOKENS = 1 << 22
_CHECK_BLOCK = 1 << 24  # tokens range-checked at a time when a memory-mapped corpus is loaded
_RELEASE_MARGIN = 1 << 22  # bytes released beyond a chunk's range (release_pages): twice the largest folio
CACHE_FORMAT_VERSION = 2
# A file whose ctime is less than this before it is read may change again within the same tick of the
# file system's clock (coarse, and up to 2 s on some file systems) without a new ctime: its cache entry
# also records the content's SHA-256 and checks it before use (git's "racily clean" entries).
_RACY_NS = 3_000_000_000
_STALE_TEMPORARY_SECONDS = 24 * 3600  # a ".tmp-*" this old in the cache is a killed run's leftover
_STDIN_NAME = "<stdin>"
_READ_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)
# What reading a damaged cache entry can raise (np.load parses its header with tokenize and literal_eval).
_DAMAGE_ERRORS = (
    OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, EOFError, SyntaxError, MemoryError,
    OverflowError, tokenize.TokenError,
)


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


@dataclass
class EncodedCorpus:
    """Vocabulary + int32 tokens + int64 sentence offsets (``len(offsets) == sentences + 1``).

    Sentence ``i`` is ``tokens[offsets[i]:offsets[i + 1]]``; token ids index ``vocab.words``.
    ``raw_words`` counts every token of the source, out-of-vocabulary ones included.  ``cache_used``
    says where :meth:`from_file` got it: ``True`` from the cache, ``False`` read (a cache was consulted
    and written), ``None`` no cache involved (no cache directory, a stream, or a given vocabulary).

    Example:
        >>> c = EncodedCorpus.from_sentences([["a", "b", "a"], ["b", "a"]], min_count=1)
        >>> c.vocab.words, c.tokens.tolist(), c.offsets.tolist()
        (['a', 'b'], [0, 1, 0, 1, 0], [0, 3, 5])
    """

    vocab: Vocab
    tokens: np.ndarray
    offsets: np.ndarray
    raw_words: int = 0
    source: str = ""
    # True: loaded from the cache; False: a cache was consulted and (re)built; None: no cache involved.
    cache_used: bool | None = None
    # What vocabulary pruning did while counting (VocabCounter.pruning), None if it did not prune.
    pruning: dict[str, Any] | None = None
    # The files it was read from, unchanged while read: [{"path", "size", "mtime_ns"}]; None if not files.
    inputs: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if self.tokens.dtype != np.int32:
            raise ValueError("tokens must be int32")
        if self.offsets.dtype != np.int64:
            raise ValueError("offsets must be int64")
        if not self.raw_words:
            self.raw_words = int(len(self.tokens))

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
            >>> list(EncodedCorpus.from_sentences([["x", "y"]], min_count=1).sentences())
            [['x', 'y']]
        """
        words = self.vocab.words
        for i in range(self.n_sentences):
            yield [words[t] for t in self.tokens[self.offsets[i] : self.offsets[i + 1]]]

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str] | list[str | os.PathLike[str]] | tuple[str | os.PathLike[str], ...],
        options: ReadOptions | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        vocab: Vocab | None = None,
    ) -> EncodedCorpus:
        """Read and encode a text file (plain, .gz, .bz2 or .xz), using or filling a cache.

        ``-`` is standard input; it, a FIFO and ``<(...)`` are read once as streams and never cached.
        With ``vocab`` given, tokens are encoded against it (continued training) instead of building
        a new vocabulary, and no cache is used.

        Several files are one corpus: a list of paths, a directory (its files, by name, hidden ones
        skipped) or a glob pattern (``"shards/*.txt.gz"``, sorted); they are read in order, each file's
        last line ending there.  The cache key covers every file.  The tokens are written to the cache
        (or, for a large corpus without one, a temporary file) block by block and memory-mapped.

        Example:
            >>> corpus = EncodedCorpus.from_file("corpus.txt.xz", ReadOptions(min_count=5))  # doctest: +SKIP
            >>> corpus.cache_used is None  # no cache_dir given  # doctest: +SKIP
            True
        """
        options = options or ReadOptions()
        options.validate()
        paths = _expand_inputs(path)
        if paths is not None:
            source = " ".join(str(p) for p in paths)
            if len(paths) == 1:
                path = paths[0]
            elif cache_dir is None or vocab is not None:
                return _encode(_TextSentences(paths, options, name=source), options, vocab, source=source)
            else:
                return _read_cached(paths, options, Path(cache_dir))
        stdin = os.fspath(path) == STDIN
        p = check_input(path, allow_stream=True)
        if not stdin and str(p) == STDIN:
            p = Path.cwd() / STDIN  # "./-" is a file named "-"
        if stdin or is_stream(p):
            return _read_stream(p, _STDIN_NAME if stdin else str(p), options, vocab, cache_dir)
        if cache_dir is None or vocab is not None:
            return _encode(_TextSentences(p, options), options, vocab, source=str(p))
        return _read_cached(p, options, Path(cache_dir))

    @classmethod
    def from_sentences(
        cls,
        sentences: Iterable[list[str]],
        min_count: int = 5,
        max_vocab_size: int | None = None,
        max_final_vocab: int | None = None,
        max_sentence_length: int = 10000,
        vocab: Vocab | None = None,
    ) -> EncodedCorpus:
        """Encode a restartable iterable of token lists (a list, or an object whose ``__iter__``
        starts over).  A one-shot generator is refused: the vocabulary pass would consume it.

        Example:
            >>> EncodedCorpus.from_sentences([["a", "a", "b"]], min_count=2).vocab.words
            ['a']
        """
        if iter(sentences) is sentences:
            raise ParvecError(
                "sentences is a one-shot iterator (e.g. a generator): parvec reads the corpus twice "
                "(vocabulary, then encoding). Pass a list or a restartable iterable (an object whose "
                "__iter__ starts over), or a file path via corpus_file."
            )
        options = ReadOptions(
            min_count=min_count,
            max_vocab_size=max_vocab_size,
            max_final_vocab=max_final_vocab,
            max_sentence_length=max_sentence_length,
        )
        options.validate()
        return _encode(_IterableSentences(sentences, max_sentence_length), options, vocab, source="<iterable>")

    @classmethod
    def from_arrays(
        cls,
        tokens: np.ndarray,
        offsets: np.ndarray | None,
        vocab: Vocab | list[str] | None = None,
    ) -> EncodedCorpus:
        """Wrap ready arrays.  ``offsets=None`` means one sentence (the trainer splits long ones).
        Without a vocabulary, ids 0..max are the words ``"0"``, ``"1"``, ... with counts from the
        tokens; ids must then be ranked by count, or pass a :class:`Vocab` with the counts.

        Example:
            >>> EncodedCorpus.from_arrays(np.array([0, 0, 1], dtype=np.int32), None).vocab.counts.tolist()
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


# ---------------------------------------------------------------------- reading text
_GLOB_CHARS = frozenset("*?[")


def _expand_inputs(path: Any) -> list[Path] | None:
    """The files of a multi-file input (a list, a directory, a glob pattern); None for one plain path."""
    if isinstance(path, (list, tuple)):
        if not path:
            raise ParvecError("no input file given (an empty list)")
        found: list[Path] = []
        for p in path:
            if os.fspath(p) == STDIN:
                raise ParvecError("standard input ('-') cannot be one of several inputs")
            found += _expand_inputs(p) or [Path(p)]
        kept = [p for p in found if _nonempty(p)]  # an empty shard adds nothing (a missing one is named)
        if not kept:
            raise ParvecError(f"{found[0]}: the file is empty" if len(found) == 1 else "every input file is empty")
        return kept
    text = os.fspath(path)
    if text == STDIN:
        return None
    p = Path(text)
    if p.is_dir():
        try:
            files = sorted(c for c in p.iterdir() if not c.name.startswith(".") and c.is_file())
        except OSError as exc:
            raise ParvecError(f"{p}: cannot list the directory: {exc.strerror or exc}") from None
        files = [f for f in files if _nonempty(f)]
        if not files:
            raise ParvecError(f"{p}: the directory holds no (non-empty, non-hidden) file to read")
        return files
    if not p.exists() and _GLOB_CHARS & set(text):
        files = [Path(f) for f in sorted(glob.glob(text)) if Path(f).is_file()]
        files = [f for f in files if _nonempty(f)]
        if not files:
            raise ParvecError(f"{text}: the pattern matches no (non-empty) file")
        return files
    return None


def _nonempty(path: Path) -> bool:
    try:
        return not path.is_file() or path.stat().st_size > 0
    except OSError:
        return True  # let the reader name the problem


class _TextSentences:
    """Stream of token lists from a text file or stream, in bounded memory.

    A file can be iterated again (each pass reopens it); a stream (``once=True``) only once.  With
    ``digest=True`` each completed pass appends the SHA-256 of the (decompressed) bytes it read to
    ``digests``.
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
        state = _file_state(path)
        if i not in self._states:
            if state is not None:
                self._states[i] = state
                self._hashed[i] = self.digest or state[4] >= now_ns - _RACY_NS
        elif state != self._states[i]:
            raise _changed(name, self._states[i], state, "after its words were counted, before it was read again")
        return hashlib.sha256() if self._hashed.get(i) else None

    def _close_check(self, i: int, path: Path, name: str, hasher: Any) -> str | None:
        digest = hasher.hexdigest() if hasher is not None else None
        if self.once or i not in self._states:
            return digest
        state = _file_state(path)
        if state != self._states[i]:
            raise _changed(name, self._states[i], state, "while it was read")
        if digest is not None:
            first = self._file_digests.setdefault(i, digest)
            if digest != first:
                raise _changed(name, self._states[i], state, "between two reads", content=True)
        return digest

    def __iter__(self) -> Iterator[list[str]]:
        max_len = self.options.max_sentence_length
        current: list[str] = []
        for name, block, line_no, at_end in self.blocks():
            if at_end:
                if current:  # each file's last line ends there
                    yield current
                current = []
                continue
            lines = self._decode(block, line_no, name).split("\n")
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

    def _blocks(self, path: Path, name: str, hasher: Any) -> Iterator[tuple[str, bytes, int, bool]]:
        line_no = 1
        carry = b""
        try:
            with open_input(path, allow_stream=True) as f:
                while True:
                    block = f.read(_BLOCK_BYTES)
                    at_end = not block
                    if hasher is not None:
                        hasher.update(block)
                    if b"\x00" in block:  # NUL is whitespace: it never becomes part of a word
                        block = block.replace(b"\x00", b" ")
                    block = carry + block
                    if not at_end:
                        # Cut after the last whitespace so no word (or UTF-8 character) is split.
                        cut = max(block.rfind(b" "), block.rfind(b"\n"), block.rfind(b"\t"))
                        if cut < 0:
                            carry = block
                            if len(carry) > 256 * _BLOCK_BYTES:
                                raise ParvecError(f"{name}:{line_no}: a single token longer than 256 MB")
                            continue
                        carry, block = block[cut + 1 :], block[: cut + 1]
                    else:
                        carry = b""
                    if block:
                        yield name, block, line_no, False
                        line_no += block.count(b"\n")
                    if at_end:
                        break
        except _READ_ERRORS as exc:
            raise ParvecError(f"{name}: cannot read: {exc}") from None
        yield name, b"", line_no, True

    def _decode(self, block: bytes, line_no: int, name: str) -> str:
        try:
            return block.decode("utf-8", errors=self.options.unicode_errors)
        except UnicodeDecodeError as exc:
            line = line_no + block.count(b"\n", 0, exc.start)
            raise ParvecError(
                f"{name}:{line}: invalid UTF-8 ({exc.reason}); "
                "use --unicode-errors replace (or ignore) to read it anyway"
            ) from None


def _file_state(path: Path) -> tuple[int, ...] | None:
    """``(device, inode, size, mtime_ns, ctime_ns)`` of ``path`` (None when it cannot be looked at)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _changed(name: str, before: tuple[int, ...], after: tuple[int, ...] | None, when: str,
             content: bool = False) -> ParvecError:
    """The error for an input that changed while parvec read it (what changed, and what to do)."""
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


def _combined_digest(digests: list[str]) -> str:
    """One file's SHA-256, or for several files the SHA-256 of their digests, in order."""
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()


class _IterableSentences:
    """Validates and splits the sentences of a user iterable."""

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


class _Lookup(dict):
    """word -> id, with -1 for unknown words, so ``map(lookup.__getitem__, words)`` runs in C."""

    def __missing__(self, key: str) -> int:
        return -1


class _FirstSeen(dict):
    """word -> provisional id: an unseen word gets the next id (first-seen order) when it is looked up."""

    def __missing__(self, key: str) -> int:
        value = self[key] = len(self)
        return value


class _Blocks:
    """Token ids and sentence lengths gathered in numpy blocks of about ``_ENCODE_BLOCK`` tokens."""

    def __init__(self, on_block: Any = None, sink: Any = None, tally: np.ndarray | None = None) -> None:
        self.sink = sink  # if given, called with each (ids, lengths) block, which is then not kept
        self.tally = tally  # if given (int64, one per vocabulary word), each word's tokens are counted into it
        self.ids: list[np.ndarray] = []
        self.lengths: list[np.ndarray] = []
        self.raw_words = 0
        self._ids: list[np.ndarray] = []
        self._lengths: list[int] = []
        self._pending = 0
        self._on_block = on_block  # called with each block of ids as it is made

    def add_all(self, sentences: Iterable[list[str]], lookup: dict[str, int]) -> None:
        get = lookup.__getitem__
        block = _ENCODE_BLOCK
        for sentence in sentences:
            n = len(sentence)
            self._ids.append(np.fromiter(map(get, sentence), dtype=np.int32, count=n))
            self._lengths.append(n)
            self._pending += n
            if self._pending >= block:
                self.flush()
        self.flush()

    def add(self, sentences: Iterable[list[str]], vocab: Vocab, table: WordTable | None = None) -> None:
        """Encode ``sentences`` against ``vocab``: a file on bytes (:meth:`add_text`), anything else (a stream,
        an iterable) from its token lists (:meth:`add_all`)."""
        if _on_bytes(sentences):
            self.add_text(sentences, vocab, table)
        else:
            self.add_all(sentences, _Lookup(vocab.index))

    def add_text(self, reader: _TextSentences, vocab: Vocab, table: WordTable | None = None) -> None:
        """Encode a text file on bytes (:mod:`parvec.textscan`): the same ids and sentences as
        ``add_all(reader, _Lookup(vocab.index))``.  ``table`` is the counting pass's word table, if any."""
        if table is None:
            table, to_vocab = WordTable.of_words(vocab.words)
        else:
            index = vocab.index
            to_vocab = np.fromiter((index.get(w, -1) for w in table.words()), dtype=np.int32, count=len(table))
        to_vocab = np.append(to_vocab, np.int32(-1))  # a word not in the table (id -1) maps to -1
        max_len = reader.options.max_sentence_length
        carry = np.zeros(0, dtype=np.int32)
        for found, segs in _scan(reader, table, insert=False):
            if found is None:  # the end of a file: its last line ends there
                if len(carry):
                    self._emit(carry, np.array([len(carry)], dtype=np.int64))
                carry = carry[:0]
                continue
            ids = to_vocab[found]
            if len(carry):
                ids = np.concatenate((carry, ids))
            lengths = np.zeros(len(segs) + len(ids) // max_len + 1, dtype=np.int64)
            n, left = piece_lengths(segs, len(segs), len(carry), max_len, lengths)
            carry = ids[len(ids) - left :].copy()
            self._emit(ids[: len(ids) - left], lengths[:n])

    def flush(self) -> None:
        if not self._ids:
            return
        self._emit(np.concatenate(self._ids), np.asarray(self._lengths, dtype=np.int64))
        self._ids.clear()
        self._lengths.clear()
        self._pending = 0

    def _emit(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """One finished block: to the sink, or kept."""
        self.raw_words += len(ids)
        if self.tally is not None:
            tally(ids, self.tally)
        if self._on_block is not None:
            self._on_block(ids)
        if self.sink is not None:
            self.sink(ids, lengths)
        else:
            self.ids.append(ids)
            self.lengths.append(lengths)


def _on_bytes(sentences: Iterable[list[str]]) -> bool:
    """Whether ``sentences`` is a file (or files) that the byte tokeniser reads: not a stream (read once)."""
    return isinstance(sentences, _TextSentences) and not sentences.once


def _scan(reader: _TextSentences, table: WordTable, insert: bool) -> Iterator[tuple[np.ndarray | None, np.ndarray]]:
    """One pass of ``reader`` through ``table``: ``(table ids, line token counts)`` per block, normalised for
    the kernel (:func:`parvec.textscan.normalise`), and ``(None, ...)`` at the end of each file."""
    lowercase = reader.options.lowercase
    for name, block, line_no, at_end in reader.blocks():
        if at_end:
            yield None, np.zeros(0, dtype=np.int64)
            continue
        text = normalise(block, lowercase, lambda b, line_no=line_no, name=name: reader._decode(b, line_no, name))
        yield table.scan(text, insert=insert)


def _compact(ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop the ids < 0 (out-of-vocabulary words) and shorten each sentence's length to match."""
    keep = ids >= 0
    if not keep.all():
        # Per-sentence count of kept tokens: cumulative sum read at sentence ends.
        ends = np.cumsum(lengths)
        kept_cum = np.concatenate(([0], np.cumsum(keep)))
        lengths = kept_cum[ends] - kept_cum[np.concatenate(([0], ends[:-1]))]
        ids = ids[keep]
    return ids.astype(np.int32, copy=False), lengths


def _assemble(
    blocks: _Blocks, vocab: Vocab, raw_words: int, source: str, remap: np.ndarray | None = None
) -> EncodedCorpus:
    """Join the blocks (each remapped through ``remap`` first, if given) into the encoded corpus."""
    token_blocks: list[np.ndarray] = []
    length_blocks: list[np.ndarray] = []
    for i in range(len(blocks.ids)):
        ids, lengths = blocks.ids[i], blocks.lengths[i]
        blocks.ids[i] = None  # type: ignore[call-overload]  # free each block as soon as it is done
        if remap is not None:
            ids = remap[ids]
        ids, lengths = _compact(ids, lengths)
        token_blocks.append(ids)
        length_blocks.append(lengths)
    tokens = np.concatenate(token_blocks) if token_blocks else np.zeros(0, dtype=np.int32)
    del token_blocks
    lengths = np.concatenate(length_blocks) if length_blocks else np.zeros(0, dtype=np.int64)
    lengths = lengths[lengths > 0]  # sentences made only of dropped words carry nothing
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if len(tokens) == 0:
        raise ParvecError(f"{source}: no token of the corpus is in the vocabulary")
    return EncodedCorpus(vocab, tokens, offsets, raw_words=raw_words, source=source)


def count_text(reader: _TextSentences) -> tuple[VocabCounter, WordTable] | None:
    """Count the words of a text file on bytes (:mod:`parvec.textscan`): the counts, totals and first-seen
    order that :func:`parvec.vocab.count_words` gives for ``reader``, and the word table for the encoding
    pass.  None when the distinct words pass ``max_vocab_size`` (given, or the automatic cap): then
    word2vec.c's pruning is needed, and ``count_words`` does it (its results depend on when it prunes).

    Example:
        >>> counter, table = count_text(_TextSentences(Path("corpus.txt"), ReadOptions()))  # doctest: +SKIP
        >>> counter.raw_words, len(counter.counts) == len(table)  # doctest: +SKIP
        (17005207, True)
    """
    counter = VocabCounter(reader.options.max_vocab_size)
    table = WordTable()
    for ids, _ in _scan(reader, table, insert=True):
        if ids is not None:
            counter.raw_words += len(ids)
            if len(table) > counter.max_vocab_size:
                return None
    counter.counts = dict(zip(table.words(), table.counts().tolist(), strict=True))
    return counter, table


def count_vocabulary(sentences: Iterable[list[str]], options: ReadOptions) -> tuple[VocabCounter, WordTable | None]:
    """The counting pass: a file on bytes (:func:`count_text`, which also gives its word table), or, for a
    stream, an iterable or a file that needs pruning, :func:`parvec.vocab.count_words` in Python.

    Example:
        >>> counter, table = count_vocabulary([["a", "b"], ["a"]], ReadOptions(min_count=1))
        >>> counter.counts, table is None
        ({'a': 2, 'b': 1}, True)
    """
    counted = count_text(sentences) if _on_bytes(sentences) else None  # type: ignore[arg-type]
    if counted is None:
        return count_words(sentences, options.max_vocab_size), None
    return counted


def _check_vocab(vocab: Vocab, raw_words: int, best: int, options: ReadOptions, source: str) -> None:
    if raw_words == 0:
        raise ParvecError(f"{source}: the corpus has no words")
    if len(vocab) == 0:
        raise ParvecError(
            f"{source}: no word reaches min_count={options.min_count} "
            f"(the most frequent word occurs {best} times); lower --min-count"
        )


def _encode(
    sentences: Iterable[list[str]],
    options: ReadOptions,
    vocab: Vocab | None,
    source: str,
    directory: Path | None = None,
) -> EncodedCorpus:
    """Two passes, as word2vec.c: count the vocabulary, then encode the tokens (one with ``vocab`` given).

    A corpus of at least ``_SPILL_TOKENS`` tokens (known from the counting pass) is streamed, block by
    block, into ``tokens.npy`` and ``offsets.npy`` in ``directory`` (with ``vocab.json``) and comes back
    memory-mapped: never the whole token array in memory.  Without ``directory`` that is a temporary
    directory removed at once (the mapped file lives until the corpus is freed).  A smaller corpus is
    encoded in memory (and saved into ``directory`` if given): the same tokens, offsets and vocabulary."""
    raw_words = None
    pruning = None
    table = None
    counted = vocab is None  # the encoding pass must then find the tokens the counting pass counted
    if vocab is None:
        counter, table = count_vocabulary(sentences, options)
        vocab = counter.finish(options.min_count, options.max_final_vocab)
        raw_words = counter.raw_words
        pruning = counter.pruning
        _check_vocab(vocab, raw_words, max(counter.counts.values(), default=0), options, source)
        if pruning is not None:
            log.warning("%s: %s", source, pruning_note(pruning))
        del counter
    if directory is None and raw_words is not None and raw_words >= _SPILL_TOKENS:
        spill = _spill_directory()
        if spill is not None:
            try:
                corpus = _encode_to(spill, sentences, vocab, raw_words, source, pruning, table)
                corpus.inputs = _inputs_read(sentences)
                return corpus
            finally:
                shutil.rmtree(spill, ignore_errors=True)  # unlinked; the mapping keeps the data
    if directory is not None and raw_words is not None and raw_words >= _SPILL_TOKENS:
        corpus = _encode_to(directory, sentences, vocab, raw_words, source, pruning, table)
        corpus.inputs = _inputs_read(sentences)
        return corpus
    blocks = _Blocks(tally=np.zeros(len(vocab), dtype=np.int64) if counted else None)
    blocks.add(sentences, vocab, table)
    if counted:
        _check_agreement(blocks, vocab, raw_words, pruning is not None, sentences, source)
    corpus = _assemble(blocks, vocab, raw_words or blocks.raw_words, source)
    corpus.pruning = pruning
    corpus.inputs = _inputs_read(sentences)
    if directory is not None:
        np.save(directory / "tokens.npy", corpus.tokens)
        np.save(directory / "offsets.npy", corpus.offsets)
        (directory / "vocab.json").write_text(corpus.vocab.to_json(), encoding="utf-8")
    return corpus


def _check_agreement(blocks: _Blocks, vocab: Vocab, raw_words: int | None, pruned: bool, sentences: Any,
                     source: str) -> None:
    """The encoding pass must have read what the counting pass counted: as many words, and each vocabulary word
    as often as its count (at least as often after word2vec.c's pruning, which only lowers counts).  Else the
    input changed between the passes (or an iterable gave other sentences the second time), and training would
    leave the words counted but not encoded with their random vectors: :class:`ParvecError`."""
    assert blocks.tally is not None
    found = blocks.tally
    bad = np.flatnonzero(found < vocab.counts if pruned else found != vocab.counts)
    if blocks.raw_words == raw_words and not len(bad):
        return
    what = f"the counting pass read {raw_words:,} words, the encoding pass {blocks.raw_words:,}"
    if len(bad):
        w = int(bad[0])
        what += (f"; {len(bad):,} vocabulary words were found another number of times, e.g. {vocab.words[w]!r}: "
                 f"counted {int(vocab.counts[w]):,}, encoded {int(found[w]):,}")
    if isinstance(sentences, _IterableSentences):
        raise ParvecError(f"{source}: the sentences changed between the two passes ({what}): an iterable must give "
                          "the same sentences every time it is iterated")
    raise ParvecError(f"{source}: the input changed while parvec read it ({what}): the vocabulary's counts and the "
                      "trained tokens would disagree; nothing was trained or written. Train on a copy that nothing "
                      "writes to (or wait until the file is complete)")


def _inputs_read(sentences: Any) -> list[dict[str, Any]] | None:
    """Which files (path, size, mtime) a file reader read, unchanged; None for anything else."""
    if not isinstance(sentences, _TextSentences) or sentences.once:
        return None
    return [{"path": str(Path(p).resolve()), "size": st[2], "mtime_ns": st[3]}
            for i, p in enumerate(sentences.paths) if (st := sentences._states.get(i)) is not None]


def check_input_unchanged(path: str | os.PathLike[str], inputs: list[dict[str, Any]] | None) -> None:
    """Raise :class:`ParvecError` if ``path`` is one of ``inputs`` (:attr:`EncodedCorpus.inputs`) but no longer
    has the size and modification time it had when the corpus was read.  A cluster node that reads its share of
    the input again calls it: its copy must be the file the vocabulary was counted from.

    Example:
        >>> check_input_unchanged("corpus.txt", corpus.inputs)  # doctest: +SKIP
    """
    resolved = str(Path(path).resolve())
    for info in inputs or []:
        if info.get("path") == resolved:
            state = _file_state(Path(path))
            if state is None or (state[2], state[3]) != (info.get("size"), info.get("mtime_ns")):
                now = "missing" if state is None else f"{state[2]:,} bytes, mtime {state[3]}"
                raise ParvecError(
                    f"{path}: not the file the corpus was read from (then {info.get('size'):,} bytes, mtime "
                    f"{info.get('mtime_ns')}; now {now}): it changed since, or this node's copy differs (copy it "
                    "with its modification time: cp -p, rsync -a), or put --cache-dir on a path every node reads")


def pruning_note(pruning: dict[str, Any]) -> str:
    """One line saying what vocabulary pruning did (see :attr:`parvec.vocab.VocabCounter.pruning`).

    Example:
        >>> pruning_note({"words_dropped": 5, "max_count_cut": 1, "max_vocab_size": 10, "automatic": False})
        'vocabulary counting pruned 5 rare words (counts up to 1 cut) to hold at most 10 distinct words \
(--max-vocab-size)'
    """
    why = ("the automatic cap from the available memory; set --max-vocab-size to choose"
           if pruning.get("automatic") else "--max-vocab-size")
    return (f"vocabulary counting pruned {pruning['words_dropped']:,} rare words (counts up to "
            f"{pruning['max_count_cut']} cut) to hold at most {pruning['max_vocab_size']:,} distinct words ({why})")


def _spill_directory() -> Path | None:
    """A new private directory under the system's temporary directory (None if it cannot be made)."""
    try:
        return Path(tempfile.mkdtemp(prefix="parvec-encoded-"))
    except OSError as exc:
        log.warning("cannot create a temporary directory for the encoded corpus (%s): encoding in memory", exc)
        return None


def _encode_to(
    directory: Path,
    sentences: Iterable[list[str]],
    vocab: Vocab,
    raw_words: int | None,
    source: str,
    pruning: dict[str, Any] | None,
    table: WordTable | None = None,
) -> EncodedCorpus:
    """The encoding pass streamed into ``directory`` (see :func:`_encode`); returns it memory-mapped.
    ``raw_words`` is the counting pass's total (None: the vocabulary was given, nothing to check against)."""
    counted = raw_words is not None
    with _TokenFiles(directory, source) as out:
        blocks = _Blocks(sink=out.add, tally=np.zeros(len(vocab), dtype=np.int64) if counted else None)
        blocks.add(sentences, vocab, table)
        if counted:
            _check_agreement(blocks, vocab, raw_words, pruning is not None, sentences, source)
    if out.n_tokens == 0:
        raise ParvecError(f"{source}: no token of the corpus is in the vocabulary")
    try:
        (directory / "vocab.json").write_text(vocab.to_json(), encoding="utf-8")
        tokens = np.load(directory / "tokens.npy", mmap_mode="r", allow_pickle=False)
        offsets = np.load(directory / "offsets.npy", allow_pickle=False)
    except OSError as exc:
        raise ParvecError(f"{source}: cannot write the encoded corpus in {directory}: {exc.strerror or exc}") from None
    corpus = EncodedCorpus(vocab, tokens, offsets, raw_words=raw_words or blocks.raw_words, source=source)
    corpus.pruning = pruning
    return corpus


_NPY_HEADER_BYTES = 128  # a 1-D array's .npy header, padded: the shape is written once the length is known


def _npy_header(dtype: np.dtype, length: int) -> bytes:
    body = f"{{'descr': {np.dtype(dtype).str!r}, 'fortran_order': False, 'shape': ({length},), }}"
    size = _NPY_HEADER_BYTES - 10
    return b"\x93NUMPY\x01\x00" + size.to_bytes(2, "little") + (body.ljust(size - 1) + "\n").encode("latin1")


class _TokenFiles:
    """``tokens.npy`` (int32) and ``offsets.npy`` (int64) written block by block; headers written last."""

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
        except OSError as exc:
            raise self._error(exc) from None

    def _error(self, exc: OSError) -> ParvecError:
        return ParvecError(f"{self.source}: cannot write the encoded corpus in {self.directory}: "
                           f"{write_reason(exc)} (free space there, or choose another --cache-dir)")

    def add(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        ids, lengths = _compact(ids, lengths)
        lengths = lengths[lengths > 0]  # sentences made only of dropped words carry nothing
        ends = np.cumsum(lengths)
        ends += self.n_tokens
        try:
            self.tokens.write(memoryview(np.ascontiguousarray(ids, dtype=np.int32)).cast("B"))
            self.offsets.write(memoryview(ends.astype(np.int64, copy=False)).cast("B"))
        except OSError as exc:
            raise self._error(exc) from None
        self.n_tokens += len(ids)
        self.n_sentences += len(lengths)

    def __enter__(self) -> _TokenFiles:
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


def release_pages(array: np.ndarray, start: int, end: int) -> None:
    """Drop this process's resident pages of ``array[start:end]`` if ``array`` is a read-only memory map.

    The data stays in the file (and the page cache); a later read maps it again.  Training calls it
    after each chunk so that reading a token file bigger than memory through ``np.memmap`` keeps the
    resident set small.  Anything else (an in-memory array) is left alone.

    Example:
        >>> release_pages(np.zeros(10, dtype=np.int32), 0, 10)  # not a memory map: nothing happens
    """
    mm = getattr(array, "_mmap", None)
    if mm is None or not isinstance(array, np.memmap) or array.flags.writeable or end <= start:
        return
    try:
        base = np.frombuffer(mm, dtype=np.uint8).ctypes.data
        first = array.ctypes.data - base + start * array.itemsize
        last = array.ctypes.data - base + end * array.itemsize
        # Every page the range touches and _RELEASE_MARGIN beyond it on each side.  A read fault maps more
        # than its page: the page cache's whole folio (up to 2 MiB: 1 MiB was measured here) and Linux's
        # fault-around, all within the 2 MiB-aligned region of the fault.  So reading one chunk maps pages of
        # its neighbours, and reading a page another chunk shares maps back pages of a chunk already
        # released: releasing only the chunk's own whole pages left one page in ten resident with
        # 10,000-word chunks at 2 threads (0.5 GB of a 4 GB token file after one epoch).  Each page is
        # mapped by a fault of a chunk being trained, within 2 MiB of that chunk, and that chunk's release
        # comes after its faults and covers them.  The mapping is read-only, so dropping a page a neighbour
        # is reading right now loses nothing: it faults back in from the page cache.
        page = mmap.PAGESIZE
        first = max(0, (first - _RELEASE_MARGIN) // page * page)
        last = min(-(-(last + _RELEASE_MARGIN) // page) * page, len(mm))
        if last > first:
            mm.madvise(mmap.MADV_DONTNEED, first, last - first)
    except (ValueError, OSError, AttributeError):
        pass


def _encode_one_pass(sentences: Iterable[list[str]], options: ReadOptions, source: str) -> EncodedCorpus:
    """One pass (for a stream): provisional ids in first-seen order while counting, then the vocabulary
    exactly as :func:`_encode` builds it, and every block remapped to it.  Needs ``max_vocab_size=None``."""
    assert options.max_vocab_size is None
    first_seen = _FirstSeen()
    counts = np.zeros(1024, dtype=np.int64)

    def count(ids: np.ndarray) -> None:
        nonlocal counts
        seen = np.bincount(ids)
        if len(seen) > len(counts):
            grown = np.zeros(max(len(seen), 2 * len(counts)), dtype=np.int64)
            grown[: len(counts)] = counts
            counts = grown
        counts[: len(seen)] += seen

    blocks = _Blocks(on_block=count)
    blocks.add_all(sentences, first_seen)
    counts = counts[: len(first_seen)]
    # The same vocabulary as counting gives: the same counts, in the same first-seen order.
    vocab = Vocab.from_counts(
        dict(zip(first_seen, counts.tolist(), strict=True)), options.min_count, options.max_final_vocab
    )
    _check_vocab(vocab, blocks.raw_words, int(counts.max(initial=0)), options, source)
    remap = np.full(len(first_seen), -1, dtype=np.int32)
    remap[np.fromiter(map(first_seen.__getitem__, vocab.words), dtype=np.int64, count=len(vocab))] = np.arange(
        len(vocab), dtype=np.int32
    )
    del first_seen, counts
    return _assemble(blocks, vocab, blocks.raw_words, source, remap=remap)


# ---------------------------------------------------------------------- streams
def _read_stream(
    path: Path, name: str, options: ReadOptions, vocab: Vocab | None, cache_dir: str | os.PathLike[str] | None
) -> EncodedCorpus:
    """Standard input, a FIFO or ``<(...)``: read once, never cached (``cache_used`` stays None)."""
    reader = _TextSentences(path, options, name=name, once=True)
    if vocab is not None:
        return _encode(reader, options, vocab, source=name)  # encoding against a vocabulary is one pass
    if options.max_vocab_size is None:
        return _encode_one_pass(reader, options, source=name)
    # max_vocab_size bounds the words held while counting; one pass would have to hold every pruned word.
    spool_dir = Path(cache_dir) if cache_dir is not None else Path(tempfile.gettempdir())
    with _spooled(path, name, spool_dir) as spool:
        return _encode(_TextSentences(spool, options, name=name), options, None, source=name)


@contextlib.contextmanager
def _spooled(path: Path, name: str, directory: Path) -> Iterator[Path]:
    """Copy a stream (decompressed) into a temporary file in ``directory``; removed afterwards."""
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
                except _READ_ERRORS as exc:
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


# ---------------------------------------------------------------------- the cache
def _input_identity(path: Path) -> dict[str, Any]:
    """What names this version of the file: nothing a user restores by accident (ctime is never set back)."""
    st = path.stat()
    return {
        "path": str(path.resolve()),
        "dev": st.st_dev,
        "ino": st.st_ino,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
    }


def _identity(path: Path | list[Path]) -> dict[str, Any]:
    """One file's identity, or for several files their paths and each one's identity, in order."""
    if isinstance(path, list):
        files = [_input_identity(p) for p in path]
        return {"path": [f["path"] for f in files], "files": files}
    return _input_identity(path)


def _newest_ctime(identity: dict[str, Any]) -> int:
    return max(f["ctime_ns"] for f in identity["files"]) if "files" in identity else identity["ctime_ns"]


def _cache_key(path: Path | list[Path], identity: dict[str, Any], options: ReadOptions) -> str:
    ident = {"input": identity, "options": asdict(options), "version": CACHE_FORMAT_VERSION}
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]
    name = path.name[:100] if isinstance(path, Path) else f"{path[0].name[:80]}+{len(path) - 1}"
    return f"{name}.{digest}"  # short enough for any file system's name limit


def _input_digest(path: Path | list[Path]) -> str:
    """SHA-256 of the file's (decompressed) bytes, as :class:`_TextSentences` digests them (several files:
    the SHA-256 of each file's digest, in order)."""
    digests = []
    for p in path if isinstance(path, list) else [path]:
        hasher = hashlib.sha256()
        with open_input(p) as f:
            while block := f.read(_BLOCK_BYTES):
                hasher.update(block)
        digests.append(hasher.hexdigest())
    return _combined_digest(digests)


def _read_cached(path: Path | list[Path], options: ReadOptions, root: Path) -> EncodedCorpus:
    """The cached encoding of ``path`` (one file or several) if its entry is intact and current, else read
    it, streaming the tokens into a new entry (a temporary directory renamed into place)."""
    now_ns = time.time_ns()
    identity = _identity(path)
    source = str(path) if isinstance(path, Path) else " ".join(str(p) for p in path)
    entry = root / _cache_key(path, identity, options)
    cached = _load_cache(entry, path, identity, options)
    if cached is not None:
        cached.cache_used = True
        return cached
    verify = _newest_ctime(identity) >= now_ns - _RACY_NS
    reader = _TextSentences(path, options, name=source, digest=verify)
    tmp = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        _remove_stale_temporaries(root)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    except OSError as exc:
        log.warning("cannot write the encoded-corpus cache in %s: %s", root, exc)  # only a lost speed-up
        result = _encode(reader, options, None, source=source)
        result.cache_used = False
        return result
    try:
        result = _encode(reader, options, None, source=source, directory=tmp)
        result.cache_used = False
        try:
            unchanged = _identity(path) == identity and len(set(reader.digests)) <= 1
        except OSError:
            unchanged = False
        if not unchanged:
            log.warning("%s changed while it was read: its encoded corpus is not cached", source)
            return result
        info = {**identity, "verify_content": verify, "sha256": reader.digests[-1] if verify else None}
        extra = {"input": info, "options": asdict(options), "pruning": result.pruning}
        _write_header(result, tmp, extra)
        if entry.exists():  # a damaged entry under this key (or a concurrent run's)
            shutil.rmtree(entry)
        os.replace(tmp, entry)
        tmp = None
    except OSError as exc:
        log.warning("cannot write the encoded-corpus cache in %s: %s", root, exc)
        return result
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)  # an entry not kept (the mapping keeps its data)
    _remove_superseded(root, entry, info["path"], options)
    return result


def _remove_stale_temporaries(root: Path) -> None:
    """Remove what killed runs left (``.tmp-*`` older than a day; a recent one may still be written)."""
    limit = time.time() - _STALE_TEMPORARY_SECONDS
    for child in root.iterdir():
        try:
            if child.name.startswith(".tmp-") and child.lstat().st_mtime < limit:
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink()
        except OSError:
            pass


def _remove_superseded(root: Path, entry: Path, input_path: str, options: ReadOptions) -> None:
    """Remove the other entries of this file and these options: they encode an older version of it."""
    wanted = asdict(options)
    try:
        siblings = [c for c in root.iterdir() if c.name.startswith(entry.name.rsplit(".", 1)[0] + ".")]
    except OSError:
        return
    for child in siblings:
        if child.name == entry.name or not child.is_dir():
            continue
        try:
            header = json.loads((child / "header.json").read_text(encoding="utf-8"))
            given = header.get("input")
            if (given.get("path") if isinstance(given, dict) else given) == input_path and header.get(
                "options"
            ) == wanted:
                shutil.rmtree(child, ignore_errors=True)
        except (*_DAMAGE_ERRORS, ParvecError):
            continue


def _load_cache(
    entry: Path, path: Path | list[Path], identity: dict[str, Any], options: ReadOptions
) -> EncodedCorpus | None:
    """The entry's corpus if it is intact and encodes this version of ``path`` with ``options``."""
    if not entry.is_dir():
        return None
    try:
        corpus, header = _load(entry, mmap=True, verify=True)
        info = header["input"]
        if {k: info.get(k) for k in identity} != identity or header.get("options") != asdict(options):
            return None
        if info["verify_content"]:
            now_ns = time.time_ns()
            if _input_digest(path) != info["sha256"]:
                return None  # changed within the clock tick of its last change
            if _newest_ctime(identity) < now_ns - _RACY_NS:
                # Unchanged until now, and any later change gets a later ctime: the stat key suffices.
                _rewrite_header(entry, {**header, "input": {**info, "verify_content": False}})
    except (*_DAMAGE_ERRORS, ParvecError) as exc:
        log.warning("the encoded-corpus cache %s is damaged (%s): reading the corpus again", entry, exc)
        return None
    corpus.inputs = [{"path": f["path"], "size": f["size"], "mtime_ns": f["mtime_ns"]}
                     for f in identity.get("files", [identity])]
    return corpus


def _rewrite_header(entry: Path, header: dict[str, Any]) -> None:
    """Replace the entry's header.json atomically (a failure only keeps the content check)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=entry, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(header, f, indent=1)
        os.replace(tmp, entry / "header.json")
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


_SAVED_FILES = ("tokens.npy", "offsets.npy", "vocab.json")


def save_encoded(corpus: EncodedCorpus, directory: str | os.PathLike[str], extra: dict[str, Any] | None = None) -> None:
    """Save an encoded corpus as ``tokens.npy``, ``offsets.npy``, ``vocab.json`` and ``header.json``
    (written last, with the SHA-256 of the other three, which :func:`load_encoded` checks).

    Example:
        >>> save_encoded(corpus, "cache/text8")  # doctest: +SKIP
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / "tokens.npy", np.asarray(corpus.tokens))
    np.save(directory / "offsets.npy", np.asarray(corpus.offsets))
    (directory / "vocab.json").write_text(corpus.vocab.to_json(), encoding="utf-8")
    _write_header(corpus, directory, extra)


def _write_header(corpus: EncodedCorpus, directory: Path, extra: dict[str, Any] | None) -> None:
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


def load_encoded(directory: str | os.PathLike[str], mmap: bool = True, verify: bool = True) -> EncodedCorpus:
    """Load a corpus saved by :func:`save_encoded`; tokens are memory-mapped by default.

    With ``verify`` (the default) the files' checksums are checked (one read of each file) besides
    their shapes, dtypes and id ranges; anything damaged raises :class:`ParvecError` naming it.

    Example:
        >>> corpus = load_encoded("cache/text8")  # doctest: +SKIP
    """
    directory = Path(directory)
    try:
        return _load(directory, mmap=mmap, verify=verify)[0]
    except ParvecError:
        raise
    except _DAMAGE_ERRORS as exc:
        raise ParvecError(f"{directory}: damaged encoded corpus ({type(exc).__name__}: {exc})") from None


def _load(directory: Path, mmap: bool, verify: bool) -> tuple[EncodedCorpus, dict[str, Any]]:
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
    corpus = EncodedCorpus(vocab, tokens, offsets, raw_words=int(header["raw_words"]), source=header.get("source", ""))
    pruning = header.get("pruning")
    corpus.pruning = pruning if isinstance(pruning, dict) else None
    return corpus, header


def _ids_in_range(tokens: np.ndarray, n_words: int) -> bool:
    """All ids in ``[0, n_words)``, checked a block at a time (a memory map's pages released after each)."""
    for start in range(0, len(tokens), _CHECK_BLOCK):
        block = tokens[start : start + _CHECK_BLOCK]
        if int(block.min()) < 0 or int(block.max()) >= n_words:
            return False
        release_pages(tokens, start, start + len(block))
    return True
