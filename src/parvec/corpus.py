"""The encoded corpus: a vocabulary, a flat int32 token array and int64 sentence offsets.

Every trainer reads only this.  Text files (plain, .gz, .bz2, .xz), restartable iterables of token
lists, ready numpy arrays and graph walks all become an :class:`EncodedCorpus`.

Reading follows word2vec.c and gensim's ``LineSentence``: one sentence per line, tokens split on
whitespace, no lowercasing unless asked.  A line longer than ``max_sentence_length`` tokens is split
into consecutive pieces (never truncated); the file is streamed in blocks, so a 100 MB single-line
text8-style file is never read whole.  Out-of-vocabulary words are dropped from the token array, as
word2vec.c skips them.

An encoded corpus can be cached on disk (``tokens.npy``, ``offsets.npy``, ``header.json``); a later run
with the same input file (same path, size and modification time) and the same vocabulary settings
memory-maps the cache instead of reading the text again.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parvec.errors import ParvecError
from parvec.formats import check_input, open_input
from parvec.vocab import Vocab, count_words

_BLOCK_BYTES = 1 << 22  # 4 MiB of text per read
CACHE_FORMAT_VERSION = 1


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
        if self.min_count < 1:
            raise ParvecError(f"min_count must be >= 1, got {self.min_count}")
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
    ``raw_words`` counts every token of the source, out-of-vocabulary ones included.

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
        path: str | os.PathLike[str],
        options: ReadOptions | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        vocab: Vocab | None = None,
    ) -> EncodedCorpus:
        """Read and encode a text file (plain, .gz, .bz2 or .xz), using or filling a cache.

        With ``vocab`` given, tokens are encoded against it (continued training) instead of
        building a new vocabulary.

        Example:
            >>> corpus = EncodedCorpus.from_file("corpus.txt.xz", ReadOptions(min_count=5))  # doctest: +SKIP
        """
        options = options or ReadOptions()
        options.validate()
        path = Path(path)
        check_input(path)
        key = None
        if cache_dir is not None and vocab is None:
            key = _cache_key(path, options)
            cached = _load_cache(Path(cache_dir) / key)
            if cached is not None:
                return cached
        reader = _TextSentences(path, options)
        result = _encode(reader, options, vocab, source=str(path))
        if key is not None:
            _save_cache(result, Path(cache_dir) / key, path, options)  # type: ignore[arg-type]
        return result

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
class _TextSentences:
    """Restartable stream of token lists from a text file, in bounded memory."""

    def __init__(self, path: Path, options: ReadOptions) -> None:
        self.path = path
        self.options = options

    def __iter__(self) -> Iterator[list[str]]:
        max_len = self.options.max_sentence_length
        line_no = 1
        current: list[str] = []
        carry = b""
        try:
            with open_input(self.path) as f:
                while True:
                    block = f.read(_BLOCK_BYTES)
                    at_end = not block
                    block = carry + block
                    if not at_end:
                        # Cut after the last whitespace so no word (or UTF-8 character) is split.
                        cut = max(block.rfind(b" "), block.rfind(b"\n"), block.rfind(b"\t"))
                        if cut < 0:
                            carry = block
                            if len(carry) > 64 * _BLOCK_BYTES:
                                raise ParvecError(f"{self.path}:{line_no}: a single token longer than 256 MB")
                            continue
                        carry, block = block[cut + 1 :], block[: cut + 1]
                    else:
                        carry = b""
                    text = self._decode(block, line_no)
                    lines = text.split("\n")
                    for i, line in enumerate(lines):
                        if self.options.lowercase:
                            line = line.lower()
                        current.extend(line.split())
                        last = i == len(lines) - 1
                        if not last:  # the line ended: emit it in pieces
                            for start in range(0, len(current), max_len):
                                yield current[start : start + max_len]
                            current = []
                            line_no += 1
                        elif len(current) >= max_len:  # a long line continues: emit whole pieces now
                            n_full = len(current) // max_len * max_len
                            for start in range(0, n_full, max_len):
                                yield current[start : start + max_len]
                            current = current[n_full:]
                    if at_end:
                        break
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise ParvecError(f"{self.path}: cannot read: {exc}") from None
        if current:
            yield current

    def _decode(self, block: bytes, line_no: int) -> str:
        try:
            return block.decode("utf-8", errors=self.options.unicode_errors)
        except UnicodeDecodeError as exc:
            line = line_no + block.count(b"\n", 0, exc.start)
            raise ParvecError(
                f"{self.path}:{line}: invalid UTF-8 ({exc.reason}); "
                "use --unicode-errors replace (or ignore) to read it anyway"
            ) from None


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


def _encode(
    sentences: Iterable[list[str]],
    options: ReadOptions,
    vocab: Vocab | None,
    source: str,
) -> EncodedCorpus:
    """Two passes, as word2vec.c: count the vocabulary, then encode the tokens."""
    raw_words = None
    if vocab is None:
        counter = count_words(sentences, options.max_vocab_size)
        if counter.raw_words == 0:
            raise ParvecError(f"{source}: the corpus has no words")
        vocab = counter.finish(options.min_count, options.max_final_vocab)
        raw_words = counter.raw_words
        if len(vocab) == 0:
            best = max(counter.counts.values()) if counter.counts else 0
            raise ParvecError(
                f"{source}: no word reaches min_count={options.min_count} "
                f"(the most frequent word occurs {best} times); lower --min-count"
            )
    lookup = _Lookup(vocab.index)
    token_blocks: list[np.ndarray] = []
    length_blocks: list[np.ndarray] = []
    pending_ids: list[np.ndarray] = []
    pending_lengths: list[int] = []
    pending = 0
    seen_raw = 0

    def flush() -> None:
        nonlocal pending
        if not pending_ids:
            return
        ids = np.concatenate(pending_ids)
        lengths = np.asarray(pending_lengths, dtype=np.int64)
        keep = ids >= 0
        if not keep.all():
            # Per-sentence count of kept tokens: cumulative sum read at sentence ends.
            ends = np.cumsum(lengths)
            kept_cum = np.concatenate(([0], np.cumsum(keep)))
            lengths = kept_cum[ends] - kept_cum[np.concatenate(([0], ends[:-1]))]
            ids = ids[keep]
        token_blocks.append(ids.astype(np.int32, copy=False))
        length_blocks.append(lengths)
        pending_ids.clear()
        pending_lengths.clear()
        pending = 0

    get = lookup.__getitem__
    for sentence in sentences:
        n = len(sentence)
        seen_raw += n
        pending_ids.append(np.fromiter(map(get, sentence), dtype=np.int64, count=n))
        pending_lengths.append(n)
        pending += n
        if pending >= 1 << 20:
            flush()
    flush()
    tokens = np.concatenate(token_blocks) if token_blocks else np.zeros(0, dtype=np.int32)
    lengths = np.concatenate(length_blocks) if length_blocks else np.zeros(0, dtype=np.int64)
    lengths = lengths[lengths > 0]  # sentences made only of dropped words carry nothing
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if len(tokens) == 0:
        raise ParvecError(f"{source}: no token of the corpus is in the vocabulary")
    return EncodedCorpus(vocab, tokens, offsets, raw_words=raw_words or seen_raw, source=source)


# ---------------------------------------------------------------------- the cache
def _cache_key(path: Path, options: ReadOptions) -> str:
    st = path.stat()
    ident = {
        "path": str(path.resolve()),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "options": asdict(options),
        "version": CACHE_FORMAT_VERSION,
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]
    return f"{path.name}.{digest}"


def _save_cache(corpus: EncodedCorpus, directory: Path, path: Path, options: ReadOptions) -> None:
    """Write the cache to a temp directory, then rename it into place (never half-written)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=directory.parent))
    try:
        save_encoded(corpus, tmp, extra={"input": str(path.resolve()), "options": asdict(options)})
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(tmp, directory)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # a cache that can't be written is only a lost speed-up
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _load_cache(directory: Path) -> EncodedCorpus | None:
    if not (directory / "header.json").exists():
        return None
    try:
        return load_encoded(directory)
    except (OSError, ValueError, KeyError):
        return None  # a damaged cache is rebuilt


def save_encoded(corpus: EncodedCorpus, directory: str | os.PathLike[str], extra: dict[str, Any] | None = None) -> None:
    """Save an encoded corpus as ``tokens.npy``, ``offsets.npy``, ``vocab.json`` and ``header.json``.

    Example:
        >>> save_encoded(corpus, "cache/text8")  # doctest: +SKIP
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / "tokens.npy", corpus.tokens)
    np.save(directory / "offsets.npy", corpus.offsets)
    (directory / "vocab.json").write_text(corpus.vocab.to_json(), encoding="utf-8")
    header = {
        "format": "parvec-encoded-corpus",
        "version": CACHE_FORMAT_VERSION,
        "tokens": corpus.n_tokens,
        "sentences": corpus.n_sentences,
        "vocab_size": len(corpus.vocab),
        "raw_words": corpus.raw_words,
        "source": corpus.source,
        **(extra or {}),
    }
    # header.json last: its presence marks a complete cache.
    (directory / "header.json").write_text(json.dumps(header, indent=1), encoding="utf-8")


def load_encoded(directory: str | os.PathLike[str], mmap: bool = True) -> EncodedCorpus:
    """Load a corpus saved by :func:`save_encoded`; tokens are memory-mapped by default.

    Example:
        >>> corpus = load_encoded("cache/text8")  # doctest: +SKIP
    """
    directory = Path(directory)
    header = json.loads((directory / "header.json").read_text(encoding="utf-8"))
    if header.get("format") != "parvec-encoded-corpus" or header.get("version") != CACHE_FORMAT_VERSION:
        raise ValueError("not a parvec encoded corpus of this version")
    tokens = np.load(directory / "tokens.npy", mmap_mode="r" if mmap else None)
    offsets = np.load(directory / "offsets.npy")
    vocab = Vocab.from_json((directory / "vocab.json").read_text(encoding="utf-8"))
    if len(tokens) != header["tokens"] or len(offsets) != header["sentences"] + 1:
        raise ValueError("cache arrays do not match the header")
    return EncodedCorpus(vocab, tokens, offsets, raw_words=header["raw_words"], source=header.get("source", ""))
