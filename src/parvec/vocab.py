"""The vocabulary: words sorted by descending count, built by counting a stream of token lists.

Counting keeps memory bounded on huge corpora the way word2vec.c and gensim do: when the number of
distinct words exceeds ``max_vocab_size``, every word seen at most ``min_reduce`` times is dropped and
``min_reduce`` grows by one.  Without ``max_vocab_size`` the cap is automatic
(:func:`default_max_vocab_size`): word2vec.c's 21 million words (0.7 of its 30M-entry hash table), lowered
when the memory this process may use cannot hold that many; a corpus with fewer distinct words is never
pruned, and the counter says when it pruned (:attr:`VocabCounter.pruning`).

The final vocabulary keeps words with ``count >= min_count`` (raised, if ``max_final_vocab`` is given, so
that at most that many words remain), sorted by descending count with ties in first-seen order, so runs are
deterministic.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from parvec.errors import ParvecError
from parvec.resources import memory_budget

_COUNT_BLOCK = 1 << 18  # tokens counted per Counter update (and the granularity of max_vocab_size pruning)
_W2V_PRUNE_AT = 21_000_000  # word2vec.c prunes when its vocabulary passes 0.7 * vocab_hash_size (30M)
_BYTES_PER_WORD = 200  # a counted word: the str (~60 B for a short word), its dict slot and its int count
_MIN_AUTO_CAP = 1_000_000


def default_max_vocab_size() -> int:
    """The cap on distinct words held while counting when none is given.

    word2vec.c's rule (prune past 21M distinct words), lowered so that the counts take at most a quarter of
    the memory this process may use (:func:`parvec.resources.memory_budget`: MemAvailable, and the
    RLIMIT_DATA/RLIMIT_AS headroom), never below
    one million words.

    Example:
        >>> 1_000_000 <= default_max_vocab_size() <= 21_000_000
        True
    """
    budget = memory_budget()
    if budget is None:
        return _W2V_PRUNE_AT
    return int(min(_W2V_PRUNE_AT, max(_MIN_AUTO_CAP, budget // 4 // _BYTES_PER_WORD)))


@dataclass
class Vocab:
    """Words by descending count, their counts, and the word -> index map.

    Example:
        >>> v = Vocab.from_counts({"the": 5, "cat": 2, "sat": 2})
        >>> v.words, v.counts.tolist(), v.index["cat"]
        (['the', 'cat', 'sat'], [5, 2, 2], 1)
    """

    words: list[str]
    counts: np.ndarray  # int64, len(words), non-increasing
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.counts = np.asarray(self.counts, dtype=np.int64)
        if len(self.counts) != len(self.words):
            raise ValueError("words and counts differ in length")
        if not self.index:
            self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    @property
    def total(self) -> int:
        """Sum of the counts of the kept words (word2vec.c's ``train_words``)."""
        return int(self.counts.sum())

    @classmethod
    def from_counts(
        cls,
        counts: dict[str, int],
        min_count: int = 1,
        max_final_vocab: int | None = None,
    ) -> Vocab:
        """Keep words with ``count >= min_count`` (and at most ``max_final_vocab`` of them), sorted.

        ``counts`` must iterate in first-seen order (a dict does) so ties stay deterministic.

        Example:
            >>> Vocab.from_counts({"a": 1, "b": 3}, min_count=2).words
            ['b']
        """
        effective_min = max(1, min_count)
        if max_final_vocab is not None and len(counts) > max_final_vocab:
            # As gensim: raise min_count until at most max_final_vocab words survive.
            ranked = sorted(counts.values(), reverse=True)
            effective_min = max(effective_min, ranked[max_final_vocab] + 1)
        kept = [(w, c) for w, c in counts.items() if c >= effective_min]
        kept.sort(key=lambda wc: -wc[1])  # stable: ties keep first-seen order
        return cls([w for w, _ in kept], np.array([c for _, c in kept], dtype=np.int64))

    def to_json(self) -> str:
        """Serialise as JSON (words and counts).

        Example:
            >>> Vocab.from_json(Vocab.from_counts({"x": 2}).to_json()).words
            ['x']
        """
        return json.dumps({"words": self.words, "counts": self.counts.tolist()}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Vocab:
        """Inverse of :meth:`to_json`."""
        data = json.loads(text)
        return cls(list(data["words"]), np.array(data["counts"], dtype=np.int64))


@dataclass(frozen=True)
class Pruning:
    """What word2vec.c-style pruning did while counting: the distinct ``words_dropped`` (a word dropped twice
    counts twice), the highest count cut (``max_count_cut``), the cap it held (``max_vocab_size``) and whether
    that cap was the automatic one (from the available memory) rather than ``--max-vocab-size``.  Written into
    the encoded-corpus cache's header and the run report (``vocab_pruning``) by :meth:`to_json`.

    Example:
        >>> p = Pruning(words_dropped=5, max_count_cut=1, max_vocab_size=10, automatic=False)
        >>> p.to_json()["words_dropped"], Pruning.from_json(p.to_json()) == p
        (5, True)
    """

    words_dropped: int
    max_count_cut: int
    max_vocab_size: int
    automatic: bool

    def to_json(self) -> dict[str, object]:
        """The record as the cache header and the report hold it (its keys in this order)."""
        return {"words_dropped": self.words_dropped, "max_count_cut": self.max_count_cut,
                "max_vocab_size": self.max_vocab_size, "automatic": self.automatic}

    @classmethod
    def from_json(cls, d: object) -> Pruning | None:
        """The record read back from a cache header; None when it is not there or damaged (no note is shown)."""
        if not isinstance(d, dict):
            return None
        try:
            return cls(words_dropped=int(d["words_dropped"]), max_count_cut=int(d["max_count_cut"]),
                       max_vocab_size=int(d["max_vocab_size"]), automatic=bool(d.get("automatic")))
        except (KeyError, TypeError, ValueError):
            return None


class VocabCounter:
    """Counts words from a stream of token lists with word2vec.c-style pruning.

    Example:
        >>> c = VocabCounter()
        >>> c.update(["a", "b", "a"]); c.update(["a"])
        >>> c.finish(min_count=2).words
        ['a']
    """

    def __init__(self, max_vocab_size: int | None = None) -> None:
        if max_vocab_size is not None and max_vocab_size < 1:
            raise ParvecError(f"max_vocab_size must be positive, got {max_vocab_size}")
        self.automatic = max_vocab_size is None
        self.max_vocab_size = default_max_vocab_size() if max_vocab_size is None else max_vocab_size
        self.counts: dict[str, int] = {}
        self.min_reduce = 1
        self.raw_words = 0
        self.pruned = False
        self.pruned_words = 0  # distinct words dropped by pruning (a word dropped twice counts twice)

    @property
    def pruning(self) -> Pruning | None:
        """What pruning did (None when it never ran): words dropped, the highest count cut, the cap.

        Example:
            >>> c = VocabCounter(max_vocab_size=2); c.update(["a", "a", "b", "c"]); c.pruning.words_dropped
            2
        """
        if not self.pruned:
            return None
        return Pruning(words_dropped=self.pruned_words, max_count_cut=self.min_reduce - 1,
                       max_vocab_size=self.max_vocab_size, automatic=self.automatic)



    def update(self, words: list[str]) -> None:
        """Add one block of tokens (any length; counting is done in C by ``Counter``)."""
        self.raw_words += len(words)
        counts = self.counts
        for w, c in Counter(words).items():
            counts[w] = counts.get(w, 0) + c
        if self.max_vocab_size is not None and len(counts) > self.max_vocab_size:
            self.prune()

    def prune(self) -> None:
        """Keep memory bounded: drop the words seen at most ``min_reduce`` times, raising the bar each time, until
        at most ``max_vocab_size`` words are left (word2vec.c's ReduceVocab).

        Example:
            >>> c = VocabCounter(max_vocab_size=1); c.counts = {"a": 3, "b": 1}; c.prune(); c.counts
            {'a': 3}
        """
        while len(self.counts) > self.max_vocab_size:
            before = len(self.counts)
            self.counts = {w: c for w, c in self.counts.items() if c > self.min_reduce}
            self.pruned_words += before - len(self.counts)
            self.min_reduce += 1
            self.pruned = True

    def finish(self, min_count: int = 5, max_final_vocab: int | None = None) -> Vocab:
        """Build the final :class:`Vocab`."""
        return Vocab.from_counts(self.counts, min_count=min_count, max_final_vocab=max_final_vocab)


def count_words(
    sentences: Iterable[list[str]],
    max_vocab_size: int | None = None,
) -> VocabCounter:
    """Count every token of ``sentences``; returns the counter (see :meth:`VocabCounter.finish`).

    Example:
        >>> count_words([["a", "b"], ["a"]]).counts
        {'a': 2, 'b': 1}
    """
    counter = VocabCounter(max_vocab_size)
    block: list[str] = []
    for sentence in sentences:
        block.extend(sentence)
        if len(block) >= _COUNT_BLOCK:
            counter.update(block)
            block = []
    if block:
        counter.update(block)
    return counter


# ---------------------------------------------------------------------- word2vec.c's vocabulary files
SENTENCE_END = "</s>"  # word2vec.c's sentence-end token: the first line of its vocabulary files


def write_vocab_file(path: str | os.PathLike[str], vocab: Vocab, sentences: int) -> None:
    """Write word2vec.c's ``-save-vocab`` file atomically: ``</s> SENTENCES`` first, then ``word count`` lines.

    word2vec.c keeps ``</s>`` (its sentence-end token, counted once per line break) at index 0 and ends a
    sentence on word 0, so a vocabulary it reads back with ``-read-vocab`` must begin with ``</s>``;
    parvec ends sentences at line breaks and has no such token, so it writes ``</s>`` with the number of
    sentences it read, then its words by descending count (ties in first-seen order), as word2vec.c's
    SaveVocab writes its sorted vocabulary.

    Example:
        >>> write_vocab_file("vocab.txt", Vocab.from_counts({"the": 5, "cat": 2}), sentences=3)  # doctest: +SKIP
        >>> open("vocab.txt").read()  # doctest: +SKIP
        '</s> 3\\nthe 5\\ncat 2\\n'
    """
    from parvec.fileio import atomic_output

    with atomic_output(path, "w") as f:
        f.write(f"{SENTENCE_END} {int(sentences)}\n")
        for w, c in zip(vocab.words, vocab.counts.tolist(), strict=True):
            if w != SENTENCE_END:
                f.write(f"{w} {c}\n")


def read_vocab_file(
    path: str | os.PathLike[str], min_count: int = 5, max_final_vocab: int | None = None
) -> Vocab:
    """Read a ``word count`` vocabulary file (word2vec.c's ``-save-vocab`` layout), strictly.

    As word2vec.c's ReadVocab: the file's counts are the words' counts (subsampling and negative sampling
    use them), the words are sorted by descending count (ties in file order) and those under ``min_count``
    dropped; a ``</s>`` line is skipped (parvec has no sentence-end token).  Each line must be a word and a
    non-negative integer separated by whitespace (a CR before the newline is ignored, as word2vec.c does);
    a blank line, a wrong field count, a count that is not an integer, a repeated word or invalid UTF-8 is a
    :class:`ParvecError` naming the file and line.

    Example:
        >>> read_vocab_file("vocab.txt", min_count=1).words  # doctest: +SKIP
        ['the', 'cat']
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ParvecError(f"{p}: no such vocabulary file") from None
    except OSError as exc:
        raise ParvecError(f"{p}: cannot read: {exc.strerror or exc}") from None
    counts: dict[str, int] = {}
    first_line: dict[str, int] = {}
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line
    for line_no, line in enumerate(lines, 1):
        try:
            text = line.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError as exc:
            raise ParvecError(f"{p}:{line_no}: invalid UTF-8 ({exc.reason})") from None
        fields = text.split()
        if len(fields) != 2:
            what = "is blank" if not fields else f"has {len(fields)} fields"
            raise ParvecError(f"{p}:{line_no}: expected 'word count', but the line {what}: {text[:80]!r}")
        word, count_text = fields
        if not count_text.isascii() or not count_text.isdigit():
            raise ParvecError(f"{p}:{line_no}: the count of {word!r} is not a non-negative integer: {count_text!r}")
        if word in first_line:
            raise ParvecError(f"{p}:{line_no}: {word!r} is listed twice (first on line {first_line[word]})")
        first_line[word] = line_no
        if word != SENTENCE_END:
            counts[word] = int(count_text)
    if not counts:
        raise ParvecError(f"{p}: the vocabulary file lists no words")
    vocab = Vocab.from_counts(counts, min_count=min_count, max_final_vocab=max_final_vocab)
    if not len(vocab):
        raise ParvecError(f"{p}: no word of the vocabulary file reaches min_count={min_count} "
                          f"(the largest count is {max(counts.values())})")
    return vocab
