"""The counting and encoding passes: text (or token lists) into a vocabulary and int32 token ids.

A file is read twice, as word2vec.c does: count the vocabulary, then encode, both on bytes by a numba kernel
(:mod:`parvec.corpus.textscan`, :mod:`parvec.kernels.wordtable`: a hash table of the words' bytes, ids in
first-seen order) that gives exactly what the reader in Python (``str.split``, a ``Counter``) gives, 3-5 times
faster (benchmarks/bench_encode.py); when the distinct words pass ``max_vocab_size`` it stops and word2vec.c's
pruning runs in Python (:func:`parvec.vocab.count_words`), whose result depends on when it prunes.  The
encoding pass counts each vocabulary word's tokens, which must be the counting pass's counts (at least them
after pruning): a file that changed between the passes is refused, named, and so is an iterable that gives
other sentences the second time.  Out-of-vocabulary words are dropped from the token array, as word2vec.c
skips them.

A corpus of 4M tokens or more is encoded block by block into ``tokens.npy``/``offsets.npy``
(:class:`parvec.corpus.arrays.TokenFiles`) and comes back memory-mapped: never the whole token array in memory.

A stream cannot be read twice, so it is encoded in one pass (:func:`read_stream`): every token gets a
provisional id in first-seen order while the words are counted, then the vocabulary is sorted and pruned
exactly as for a file and the provisional ids are remapped (pruned words dropped, sentence offsets fixed).
The result is the same as the two passes give.  Memory: besides what two passes hold (the counts of every
distinct word, the encoded tokens) this holds the tokens of pruned words until the remap, at 4 bytes a token,
and no copy of the text.  With ``max_vocab_size`` (which bounds the words held while counting) one pass cannot
keep that bound -- it would have to remember every pruned word in case it comes back -- so the stream is
spooled to a temporary file (:func:`parvec.corpus.readers.spooled`: in the cache directory, or the system's
temporary directory without one), read in two passes and deleted.

Example:
    >>> from parvec.corpus.readers import IterableSentences, ReadOptions
    >>> enc = encode_sentences(IterableSentences([["a", "b", "a"]], 100), ReadOptions(min_count=2), None, "x")
    >>> enc.vocab.words, enc.tokens.tolist(), enc.raw_words
    (['a'], [0, 0], 3)
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from parvec.config import default_threads
from parvec.corpus.arrays import EncodedArrays, TokenFiles, compact, write_arrays
from parvec.corpus.readers import (
    InputFile,
    IterableSentences,
    RangeSentences,
    ReadOptions,
    TextSentences,
    line_cuts,
    spooled,
)
from parvec.corpus.textscan import WordTable, normalise, tally
from parvec.errors import ParvecError
from parvec.fileio import is_compressed
from parvec.kernels.wordtable import piece_lengths
from parvec.vocab import Pruning, Vocab, VocabCounter, count_words

__all__ = [
    "PARALLEL_MIN_BYTES",
    "IdLookup",
    "NoTokensError",
    "TokenBlocks",
    "count_text",
    "count_vocabulary",
    "encode_sentences",
    "pruning_note",
    "read_stream",
]

log = logging.getLogger(__name__)

_ENCODE_BLOCK = 1 << 18  # tokens encoded per numpy block
# A corpus of this many tokens or more (16 MiB of int32) is encoded into a file and memory-mapped, even
# without a cache directory (then in a temporary directory removed at once).
_SPILL_TOKENS = 1 << 22


class NoTokensError(ParvecError):
    """No token of the corpus is in the vocabulary.  A whole corpus is refused with it; a part of one that is
    encoded against a given vocabulary (a byte range of the input) may have none, which its reader allows.

    Example:
        >>> from parvec.vocab import Vocab
        >>> encode_sentences([["x"]], ReadOptions(), Vocab(["a"], np.array([1])), "<list>")
        Traceback (most recent call last):
        ...
        parvec.corpus.encode.NoTokensError: <list>: no token of the corpus is in the vocabulary
    """


class IdLookup(dict):
    """word -> id, with -1 for unknown words, so ``map(lookup.__getitem__, words)`` runs in C.

    Example:
        >>> IdLookup({"a": 0})["b"]
        -1
    """

    def __missing__(self, key: str) -> int:
        return -1


class _FirstSeen(dict):
    """word -> provisional id: an unseen word gets the next id (first-seen order) when it is looked up."""

    def __missing__(self, key: str) -> int:
        value = self[key] = len(self)
        return value


class TokenBlocks:
    """Token ids and sentence lengths gathered in numpy blocks of about 256k tokens: the encoding pass.

    ``sink``, if given, is called with each ``(ids, lengths)`` block, which is then not kept (else the blocks are
    kept in ``ids`` and ``lengths``); ``tally`` (int64, one per vocabulary word), if given, counts each word's
    tokens; ``on_block`` is called with each block of ids as it is made.  Ids are -1 for words not in the
    vocabulary; ``raw_words`` counts every token.

    Example:
        >>> blocks = TokenBlocks()
        >>> blocks.add_all([["a", "b"], ["c", "a"]], IdLookup({"a": 0, "c": 1}))
        >>> blocks.ids[0].tolist(), blocks.lengths[0].tolist(), blocks.raw_words
        ([0, -1, 1, 0], [2, 2], 4)
    """

    def __init__(self, on_block: Callable[[np.ndarray], None] | None = None,
                 sink: Callable[[np.ndarray, np.ndarray], None] | None = None, tally: np.ndarray | None = None) -> None:
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
        """Encode token lists through ``lookup`` (an :class:`IdLookup`, or any dict giving every word an id)."""
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
            self.add_all(sentences, IdLookup(vocab.index))

    def add_text(self, reader: TextSentences, vocab: Vocab, table: WordTable | None = None) -> None:
        """Encode a text file on bytes (:mod:`parvec.corpus.textscan`): the same ids and sentences as
        ``add_all(reader, IdLookup(vocab.index))``.  ``table`` is the counting pass's word table, if any."""
        if table is None:
            table, to_vocab = WordTable.of_words(vocab.words)
        else:
            index = vocab.index
            to_vocab = np.fromiter((index.get(w, -1) for w in table.words()), dtype=np.int32, count=len(table))
        self._add_scanned(reader, table, np.append(to_vocab, np.int32(-1)))  # a word not in the table maps to -1

    def _add_scanned(self, reader: TextSentences | RangeSentences, table: WordTable, to_vocab: np.ndarray,
                     stop: threading.Event | None = None) -> None:
        """:meth:`add_text` with the table's map to vocabulary ids given (``to_vocab``: table id -> vocabulary id,
        and a last -1 for the table's -1); ``stop``, if given, ends the pass early when it is set."""
        max_len = reader.options.max_sentence_length
        carry = np.zeros(0, dtype=np.int32)
        for found, segs in _scan(reader, table, insert=False, stop=stop):
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
        """Finish the block being gathered (:meth:`add_all` calls it at the end)."""
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


def _on_bytes(sentences: Iterable[list[str]]) -> TypeGuard[TextSentences]:
    """Whether ``sentences`` is a file (or files) that the byte tokeniser reads: not a stream (read once)."""
    return isinstance(sentences, TextSentences) and not sentences.once


def _scan(reader: TextSentences | RangeSentences, table: WordTable, insert: bool,
          stop: threading.Event | None = None) -> Iterator[tuple[np.ndarray | None, np.ndarray]]:
    """One pass of ``reader`` through ``table``: ``(table ids, line token counts)`` per block, normalised for
    the kernel (:func:`parvec.corpus.textscan.normalise`), and ``(None, ...)`` at the end of each file; it ends
    early, after a block, once ``stop`` (if given) is set."""
    lowercase = reader.options.lowercase
    for name, block, line_no, at_end in reader.blocks():
        if stop is not None and stop.is_set():
            return
        if at_end:
            yield None, np.zeros(0, dtype=np.int64)
            continue
        text = normalise(block, lowercase, functools.partial(reader.decode, where=line_no, name=name))
        yield table.scan(text, insert=insert)


def _assemble(
    blocks: TokenBlocks, vocab: Vocab, raw_words: int, source: str, remap: np.ndarray | None = None
) -> EncodedArrays:
    """Join the blocks (each remapped through ``remap`` first, if given) into the encoded corpus."""
    token_blocks: list[np.ndarray] = []
    length_blocks: list[np.ndarray] = []
    for i in range(len(blocks.ids)):
        ids, lengths = blocks.ids[i], blocks.lengths[i]
        blocks.ids[i] = None  # type: ignore[call-overload]  # free each block as soon as it is done
        if remap is not None:
            ids = remap[ids]
        ids, lengths = compact(ids, lengths)
        token_blocks.append(ids)
        length_blocks.append(lengths)
    tokens = np.concatenate(token_blocks) if token_blocks else np.zeros(0, dtype=np.int32)
    del token_blocks
    lengths = np.concatenate(length_blocks) if length_blocks else np.zeros(0, dtype=np.int64)
    lengths = lengths[lengths > 0]  # sentences made only of dropped words carry nothing
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if len(tokens) == 0:
        raise NoTokensError(f"{source}: no token of the corpus is in the vocabulary")
    return EncodedArrays(vocab, tokens, offsets, raw_words=raw_words, source=source)


def count_text(reader: TextSentences) -> tuple[VocabCounter, WordTable] | None:
    """Count the words of a text file on bytes (:mod:`parvec.corpus.textscan`): the counts, totals and first-seen
    order that :func:`parvec.vocab.count_words` gives for ``reader``, and the word table for the encoding
    pass.  None when the distinct words pass ``max_vocab_size`` (given, or the automatic cap): then
    word2vec.c's pruning is needed, and ``count_words`` does it (its results depend on when it prunes).

    Example:
        >>> counter, table = count_text(TextSentences(Path("corpus.txt"), ReadOptions()))  # doctest: +SKIP
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
    counted = count_text(sentences) if _on_bytes(sentences) else None
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


def encode_sentences(
    sentences: Iterable[list[str]],
    options: ReadOptions,
    vocab: Vocab | None,
    source: str,
    directory: Path | None = None,
    threads: int | None = None,
) -> EncodedArrays:
    """Encode a reader's sentences in two passes, as word2vec.c: count the vocabulary (with ``options``), then
    encode the tokens; with ``vocab`` given, one pass encodes against it (continued training, a cluster node's
    share of the input).  ``sentences`` is a reader of :mod:`parvec.corpus.readers` (:class:`TextSentences`,
    :class:`RangeSentences`, :class:`IterableSentences`) or any restartable iterable of token lists; ``source``
    names it in errors.  Out-of-vocabulary tokens are dropped; a corpus without an in-vocabulary token raises
    :class:`NoTokensError` ("no token of the corpus is in the vocabulary").

    A corpus of at least 4M tokens (known from the counting pass) is streamed, block by block, into
    ``tokens.npy`` and ``offsets.npy`` in ``directory`` (with ``vocab.json``) and comes back memory-mapped:
    never the whole token array in memory.  Without ``directory`` that is a temporary directory removed at
    once (the mapped file lives until the corpus is freed).  A smaller corpus is encoded in memory (and saved
    into ``directory`` if given): the same tokens, offsets and vocabulary.

    One plain file of :data:`PARALLEL_MIN_BYTES` or more is counted and encoded in ``threads`` parts at once
    (None: :func:`parvec.config.default_threads`; 1: one thread), with the same result
    (:func:`_count_in_parts`, :func:`_encode_in_parts`).

    Example:
        >>> enc = encode_sentences([["b", "a"], ["a"]], ReadOptions(min_count=1), None, "<list>")
        >>> enc.vocab.words, enc.tokens.tolist(), enc.offsets.tolist()
        (['a', 'b'], [1, 0, 0], [0, 2, 3])
        >>> encode_sentences([["a", "c"]], ReadOptions(), enc.vocab, "<more>").tokens.tolist()
        [0]
    """
    raw_words = None
    pruning = None
    table = None
    parts = None
    counted = vocab is None  # the encoding pass must then find the tokens the counting pass counted
    if vocab is None:
        ranges = _parallel_ranges(sentences, threads)
        if ranges is not None:
            assert isinstance(sentences, TextSentences)
            counter, table, parts = _count_in_parts(sentences, ranges, options)
        else:
            counter, table = count_vocabulary(sentences, options)
        vocab = counter.finish(options.min_count, options.max_final_vocab)
        raw_words = counter.raw_words
        pruning = counter.pruning
        _check_vocab(vocab, raw_words, max(counter.counts.values(), default=0), options, source)
        if pruning is not None:
            log.warning("%s: %s", source, pruning_note(pruning))
        del counter
    if parts is not None:
        assert isinstance(sentences, TextSentences) and table is not None and raw_words is not None
        corpus = _encode_in_parts(sentences, parts, table, vocab, raw_words, source, directory)
        corpus.inputs = _inputs_read(sentences)
        return corpus
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
    blocks = TokenBlocks(tally=np.zeros(len(vocab), dtype=np.int64) if counted else None)
    blocks.add(sentences, vocab, table)
    if counted:
        _check_agreement(blocks, vocab, raw_words, pruning is not None, sentences, source)
    corpus = _assemble(blocks, vocab, raw_words or blocks.raw_words, source)
    corpus.pruning = pruning
    corpus.inputs = _inputs_read(sentences)
    if directory is not None:
        write_arrays(corpus, directory)
    return corpus


def _check_agreement(blocks: TokenBlocks, vocab: Vocab, raw_words: int | None, pruned: bool, sentences: Any,
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
    raise _changed_error(sentences, source, what)


def _changed_error(sentences: Any, source: str, what: str) -> ParvecError:
    """The error for an encoding pass that did not read what the counting pass counted (``what`` differs)."""
    if isinstance(sentences, IterableSentences):
        return ParvecError(f"{source}: the sentences changed between the two passes ({what}): an iterable must give "
                           "the same sentences every time it is iterated")
    return ParvecError(f"{source}: the input changed while parvec read it ({what}): the vocabulary's counts and the "
                       "trained tokens would disagree; nothing was trained or written. Train on a copy that nothing "
                       "writes to (or wait until the file is complete)")


def _inputs_read(sentences: Any) -> list[InputFile] | None:
    """Which files (path, size, mtime) a file reader read, unchanged; None for anything else."""
    return sentences.inputs_read() if isinstance(sentences, TextSentences) else None


def pruning_note(pruning: Pruning) -> str:
    """One line saying what vocabulary pruning did (see :attr:`parvec.vocab.VocabCounter.pruning`).

    Example:
        >>> pruning_note(Pruning(words_dropped=5, max_count_cut=1, max_vocab_size=10, automatic=False))
        'vocabulary counting pruned 5 rare words (counts up to 1 cut) to hold at most 10 distinct words \
(--max-vocab-size)'
    """
    why = ("the automatic cap from the available memory; set --max-vocab-size to choose"
           if pruning.automatic else "--max-vocab-size")
    return (f"vocabulary counting pruned {pruning.words_dropped:,} rare words (counts up to "
            f"{pruning.max_count_cut} cut) to hold at most {pruning.max_vocab_size:,} distinct words ({why})")


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
    pruning: Pruning | None,
    table: WordTable | None = None,
) -> EncodedArrays:
    """The encoding pass streamed into ``directory`` (see :func:`encode_sentences`); returns it memory-mapped.
    ``raw_words`` is the counting pass's total (None: the vocabulary was given, nothing to check against)."""
    counted = raw_words is not None
    with TokenFiles(directory, source) as out:
        blocks = TokenBlocks(sink=out.add, tally=np.zeros(len(vocab), dtype=np.int64) if counted else None)
        blocks.add(sentences, vocab, table)
        if counted:
            _check_agreement(blocks, vocab, raw_words, pruning is not None, sentences, source)
    return _load_encoded(directory, out, vocab, raw_words or blocks.raw_words, source, pruning)


def _load_encoded(directory: Path, out: TokenFiles, vocab: Vocab, raw_words: int, source: str,
                  pruning: Pruning | None) -> EncodedArrays:
    """The corpus ``out`` wrote into ``directory``, with its ``vocab.json``: memory-mapped."""
    if out.n_tokens == 0:
        raise NoTokensError(f"{source}: no token of the corpus is in the vocabulary")
    try:
        (directory / "vocab.json").write_text(vocab.to_json(), encoding="utf-8")
        tokens = np.load(directory / "tokens.npy", mmap_mode="r", allow_pickle=False)
        offsets = np.load(directory / "offsets.npy", allow_pickle=False)
    except OSError as exc:
        raise ParvecError(f"{source}: cannot write the encoded corpus in {directory}: {exc.strerror or exc}") from None
    corpus = EncodedArrays(vocab, tokens, offsets, raw_words=raw_words, source=source)
    corpus.pruning = pruning
    return corpus


# ---------------------------------------------------------------------- one file in parts, in parallel
# One plain file this big or bigger is counted and encoded in parts, one thread each (the numba kernels release
# the GIL): below it the threads' start and the merge cost more than they save.
PARALLEL_MIN_BYTES = 64 << 20


def _parallel_ranges(sentences: Iterable[list[str]], threads: int | None) -> list[tuple[int, int]] | None:
    """The byte ranges (cut at line boundaries, :func:`parvec.corpus.readers.line_cuts`) that count and encode
    ``sentences`` in parallel: one plain (uncompressed) file of :data:`PARALLEL_MIN_BYTES` or more, read twice,
    into ``threads`` parts (None: every core this process may use).  None for anything else: fewer than two
    threads or non-empty ranges, several files, a compressed file, a stream, an iterable."""
    n = default_threads() if threads is None else threads
    if n < 2 or not _on_bytes(sentences) or len(sentences.paths) != 1:
        return None
    path = Path(sentences.path)
    try:
        if is_compressed(path) or not path.is_file() or path.stat().st_size < PARALLEL_MIN_BYTES:
            return None
        cuts = line_cuts(path, n)
    except OSError:
        return None  # the reader names the problem
    ranges = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    return ranges if len(ranges) > 1 else None


@dataclass
class _Part:
    """One byte range of the file, as its counting pass left it."""

    start: int
    end: int
    ids: np.ndarray  # the part's words (its own first-seen order) -> ids in the whole file's table
    counts: np.ndarray  # the part's count of each of its words
    raw_words: int


def _count_part(reader: TextSentences | RangeSentences, cap: int, stop: threading.Event,
                found: list[tuple[WordTable, int] | None], i: int) -> None:
    """Count one part into a table of its own, left in ``found[i]`` with the part's tokens (None: more than
    ``cap`` distinct words, or ``stop`` set); not returned, so that the caller frees it once absorbed."""
    table = WordTable()
    raw = 0
    for ids, _ in _scan(reader, table, insert=True, stop=stop):
        if ids is not None:
            raw += len(ids)
            if len(table) > cap:
                return
    if not stop.is_set():
        found[i] = (table, raw)


def _count_in_parts(
    reader: TextSentences, ranges: list[tuple[int, int]], options: ReadOptions
) -> tuple[VocabCounter, WordTable | None, list[_Part] | None]:
    """The counting pass in parallel: each range counted into its own word table in its own thread, the tables
    absorbed in range order (:meth:`parvec.corpus.textscan.WordTable.absorb`: counts summed, first-seen order the
    file's), so the counts, totals and first-seen order are :func:`count_text`'s.  When the distinct words pass
    ``max_vocab_size`` (given or automatic) it stops and :func:`parvec.vocab.count_words` counts with
    word2vec.c's pruning, as the one-thread path does; then the table and parts are None."""
    counter = VocabCounter(options.max_vocab_size)
    cap = counter.max_vocab_size
    stop = threading.Event()

    def work() -> tuple[WordTable, list[_Part]] | None:
        found: list[tuple[WordTable, int] | None] = [None] * len(ranges)
        futures = [pool.submit(_count_part, reader.part(a, b), cap, stop, found, i) for i, (a, b) in enumerate(ranges)]
        try:
            table, parts = None, []
            for i, ((a, b), future) in enumerate(zip(ranges, futures, strict=True)):
                future.result()
                got, found[i] = found[i], None
                if got is None:
                    return None
                part_table, raw = got
                counts = part_table.counts().copy()
                if table is None:  # the first part's table is the whole file's so far: its ids are the same
                    table, ids = part_table, np.arange(len(part_table), dtype=np.int32)
                else:
                    ids = table.absorb(part_table)
                parts.append(_Part(a, b, ids, counts, raw))
                del got, part_table  # each later part's table is freed once absorbed
                if len(table) > cap:
                    return None
            assert table is not None
            return table, parts
        finally:
            stop.set()  # the others stop (all are done when it succeeded)
            wait(futures)

    with ThreadPoolExecutor(len(ranges) + 1, thread_name_prefix="parvec-count") as pool:
        done = reader.checked_pass(work, pool)
    if done is None:
        return count_words(reader, options.max_vocab_size), None, None
    table, parts = done
    counter.raw_words = sum(p.raw_words for p in parts)
    counter.counts = dict(zip(table.words(), table.counts().tolist(), strict=True))
    return counter, table, parts


class _PartWriter:
    """The sink of one part's encoding into ``tokens.npy``: its in-vocabulary tokens at their place (``at``,
    ``size`` tokens, known from the counting pass), its sentence lengths kept for the offsets."""

    def __init__(self, out: TokenFiles, at: int, size: int) -> None:
        self.out, self.at, self.size = out, at, size
        self.written = 0
        self.lengths: list[np.ndarray] = []

    def __call__(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        ids, lengths = compact(ids, lengths)
        ids = ids[: max(0, self.size - self.written)]  # a changed file never writes into the next part's place
        self.out.put(ids, self.at + self.written)
        self.written += len(ids)
        self.lengths.append(lengths[lengths > 0])


def _encode_part(reader: TextSentences | RangeSentences, table: WordTable, to_vocab: np.ndarray, n_vocab: int,
                 writer: _PartWriter | None, stop: threading.Event) -> TokenBlocks:
    """Encode one part (into ``writer``, or kept in memory without one), tallying each word's tokens."""
    blocks = TokenBlocks(sink=writer, tally=np.zeros(n_vocab, dtype=np.int64))
    blocks._add_scanned(reader, table, to_vocab, stop=stop)
    return blocks


def _encode_in_parts(reader: TextSentences, parts: list[_Part], table: WordTable, vocab: Vocab, raw_words: int,
                     source: str, directory: Path | None) -> EncodedArrays:
    """The encoding pass in parallel, after :func:`_count_in_parts`: each part encoded against the vocabulary in
    its own thread (the table shared read-only, :meth:`parvec.corpus.textscan.WordTable.shared`), the tokens
    and sentences joined in part order.  A corpus of ``_SPILL_TOKENS`` or more goes into ``tokens.npy`` and
    ``offsets.npy`` (in ``directory``, or a temporary directory) as :func:`encode_sentences` writes it: each
    part writes its tokens at its own place, known from its counts; the sentence lengths are kept in memory
    (as ``offsets.npy`` is read back) and written in order.  Else in memory, saved into ``directory`` if given."""
    index = vocab.index
    to_vocab = np.fromiter((index.get(w, -1) for w in table.words()), dtype=np.int32, count=len(table))
    in_vocab = to_vocab >= 0
    sizes = [int(p.counts[in_vocab[p.ids]].sum()) for p in parts]
    to_vocab = np.append(to_vocab, np.int32(-1))  # a word not in the table (id -1) maps to -1
    if raw_words >= _SPILL_TOKENS:
        if directory is not None:
            return _encode_parts_to(directory, reader, parts, sizes, table, to_vocab, vocab, raw_words, source)
        spill = _spill_directory()
        if spill is not None:
            try:
                return _encode_parts_to(spill, reader, parts, sizes, table, to_vocab, vocab, raw_words, source)
            finally:
                shutil.rmtree(spill, ignore_errors=True)  # unlinked; the mapping keeps the data
    blocks = _run_parts(reader, parts, table, to_vocab, len(vocab), None, sizes, vocab, raw_words, source)
    corpus = _assemble(blocks, vocab, raw_words, source)
    if directory is not None:
        write_arrays(corpus, directory)
    return corpus


def _encode_parts_to(directory: Path, reader: TextSentences, parts: list[_Part], sizes: list[int],
                     table: WordTable, to_vocab: np.ndarray, vocab: Vocab, raw_words: int,
                     source: str) -> EncodedArrays:
    """:func:`_encode_in_parts` into ``tokens.npy``/``offsets.npy`` in ``directory``, as :func:`_encode_to`."""
    with TokenFiles(directory, source) as out:
        _run_parts(reader, parts, table, to_vocab, len(vocab), out, sizes, vocab, raw_words, source)
    return _load_encoded(directory, out, vocab, raw_words, source, None)


def _run_parts(reader: TextSentences, parts: list[_Part], table: WordTable, to_vocab: np.ndarray, n_vocab: int,
               out: TokenFiles | None, sizes: list[int], vocab: Vocab, raw_words: int,
               source: str) -> TokenBlocks:
    """Encode the parts in parallel (a checked pass of ``reader``) and check the pass against the counts; the
    blocks of every part in order (kept in memory without ``out``)."""
    starts = np.concatenate(([0], np.cumsum(sizes[:-1], dtype=np.int64))).tolist()
    writers = [_PartWriter(out, at, size) for at, size in zip(starts, sizes, strict=True)] if out else None
    stop = threading.Event()

    def work() -> list[TokenBlocks]:
        futures = [pool.submit(_encode_part, reader.part(p.start, p.end), table.shared(), to_vocab, n_vocab,
                               writers[i] if writers else None, stop) for i, p in enumerate(parts)]
        try:
            return [future.result() for future in futures]
        except BaseException:
            stop.set()
            raise
        finally:
            wait(futures)

    with ThreadPoolExecutor(len(parts) + 1, thread_name_prefix="parvec-encode") as pool:
        done = reader.checked_pass(work, pool)
    joined = TokenBlocks(tally=np.zeros(n_vocab, dtype=np.int64))
    for blocks in done:
        assert blocks.tally is not None and joined.tally is not None
        joined.tally += blocks.tally
        joined.raw_words += blocks.raw_words
        joined.ids += blocks.ids
        joined.lengths += blocks.lengths
    _check_agreement(joined, vocab, raw_words, False, reader, source)
    if writers is not None and out is not None:
        for writer in writers:
            if writer.written != writer.size:  # the counts agree, yet a part holds other tokens: never trained
                raise _changed_error(reader, source, f"a part of the file held {writer.written:,} tokens of the "
                                                     f"vocabulary, its count {writer.size:,}")
            out.add_lengths(np.concatenate(writer.lengths) if writer.lengths else np.zeros(0, dtype=np.int64))
    return joined


def _encode_one_pass(sentences: Iterable[list[str]], options: ReadOptions, source: str) -> EncodedArrays:
    """One pass (for a stream): provisional ids in first-seen order while counting, then the vocabulary
    exactly as :func:`encode_sentences` builds it, and every block remapped to it.  Needs ``max_vocab_size=None``."""
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

    blocks = TokenBlocks(on_block=count)
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


def read_stream(
    path: Path, name: str, options: ReadOptions, vocab: Vocab | None, cache_dir: str | os.PathLike[str] | None
) -> EncodedArrays:
    """Encode standard input, a FIFO or ``<(...)`` (``path``, called ``name``): read once (in one pass, or spooled
    to a temporary file in ``cache_dir`` with ``max_vocab_size``), never cached (``cache_used`` stays None).

    Example:
        >>> enc = read_stream(Path("/dev/stdin"), "<stdin>", ReadOptions(), None, None)  # doctest: +SKIP
    """
    reader = TextSentences(path, options, name=name, once=True)
    if vocab is not None:
        return encode_sentences(reader, options, vocab, source=name)  # encoding against a vocabulary is one pass
    if options.max_vocab_size is None:
        return _encode_one_pass(reader, options, source=name)
    # max_vocab_size bounds the words held while counting; one pass would have to hold every pruned word.
    spool_dir = Path(cache_dir) if cache_dir is not None else Path(tempfile.gettempdir())
    with spooled(path, name, spool_dir) as spool:
        return encode_sentences(TextSentences(spool, options, name=name), options, None, source=name)
