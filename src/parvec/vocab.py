"""The vocabulary: words sorted by descending count, built by counting a stream of token lists.

Counting keeps memory bounded on huge corpora the way word2vec.c and gensim do: when the number of
distinct words exceeds ``max_vocab_size``, every word seen at most ``min_reduce`` times is dropped and
``min_reduce`` grows by one.  The final vocabulary keeps words with ``count >= min_count`` (raised, if
``max_final_vocab`` is given, so that at most that many words remain), sorted by descending count with
ties in first-seen order, so runs are deterministic.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from parvec.errors import ParvecError

_COUNT_BLOCK = 1 << 20  # tokens counted per Counter update (and the granularity of max_vocab_size pruning)


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
        self.max_vocab_size = max_vocab_size
        self.counts: dict[str, int] = {}
        self.min_reduce = 1
        self.raw_words = 0
        self.pruned = False

    def update(self, words: list[str]) -> None:
        """Add one block of tokens (any length; counting is done in C by ``Counter``)."""
        self.raw_words += len(words)
        counts = self.counts
        for w, c in Counter(words).items():
            counts[w] = counts.get(w, 0) + c
        if self.max_vocab_size is not None and len(counts) > self.max_vocab_size:
            self._prune()

    def _prune(self) -> None:
        # Keep memory bounded: drop rare words, raise the bar each time (word2vec.c's ReduceVocab).
        while len(self.counts) > self.max_vocab_size:  # type: ignore[operator]
            self.counts = {w: c for w, c in self.counts.items() if c > self.min_reduce}
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
