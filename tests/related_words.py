"""The related-words check every trainer's vectors must pass on the demo corpus (2M tokens of Wikipedia)."""

from __future__ import annotations

import numpy as np

NUMBERS = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"}
COUNTRIES = {"germany", "spain", "italy", "austria", "poland", "portugal", "russia", "sweden", "belgium", "hungary",
             "england", "britain", "netherlands", "denmark", "bulgaria"}


def assert_learns_related_words(w_in: np.ndarray, vocab) -> None:
    """The ten nearest neighbours (cosine) of king, three, january and france hold enough of their kind."""
    w = w_in / np.linalg.norm(w_in, axis=1, keepdims=True)
    idx = vocab.index

    def top(word: str, k: int = 10) -> set[str]:
        sims = w @ w[idx[word]]
        return set(vocab.words[i] for i in np.argsort(-sims)[1 : k + 1])

    assert top("king") & {"queen", "prince", "emperor"}, top("king")
    assert len(top("three") & NUMBERS) >= 4, top("three")
    assert len(top("january") & MONTHS) >= 6, top("january")
    assert len(top("france") & COUNTRIES) >= 4, top("france")
