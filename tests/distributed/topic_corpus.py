"""Small corpora for the cluster tests: two topics (animals, vehicles) mixed with filler words and how well trained
vectors separate them (the replicas tests); three topics of 12 words (the sharded and fault tests); lines of the
demo corpus's tokens (the memory tests)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from parvec.keyedvectors import KeyedVectors

ANIMALS = ["cat", "dog", "horse", "cow", "sheep", "goat", "pig", "mouse"]
VEHICLES = ["car", "bus", "train", "truck", "bike", "plane", "boat", "tram"]
FILLER = [f"w{i}" for i in range(120)]


def topic_sentences(n: int, seed: int = 0) -> list[list[str]]:
    """Sentences that each mix words of one topic (animals or vehicles) with filler words."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        topic = ANIMALS if i % 2 else VEHICLES
        words = list(rng.choice(topic, 6)) + list(rng.choice(FILLER, 4))
        rng.shuffle(words)
        out.append(words)
    return out


def write_corpus(path: Path, n: int, seed: int = 0) -> Path:
    path.write_text("\n".join(" ".join(s) for s in topic_sentences(n, seed)) + "\n", encoding="utf-8")
    return path


def topic_precision(kv: KeyedVectors, topic: list[str], k: int = 5) -> float:
    """Share of each topic word's k nearest words that are of its topic."""
    hits = [sum(w in topic for w, _ in kv.most_similar(word, topn=k)) for word in topic]
    return sum(hits) / (k * len(topic))


def three_topic_sentences(n_sent: int, seed: int = 0) -> list[list[str]]:
    """Sentences each drawn from one of three topics of 12 words: words of a topic share contexts."""
    rng = np.random.default_rng(seed)
    topics = [[f"{t}{i}" for i in range(12)] for t in ("a", "b", "c")]
    return [list(rng.choice(topics[rng.integers(3)], 20)) for _ in range(n_sent)]


def write_token_lines(path: Path, tokens: list[str], n: int) -> Path:
    """The first ``n`` of ``tokens`` written to ``path`` in lines of 1,000."""
    words = tokens[:n]
    path.write_text("\n".join(" ".join(words[i:i + 1000]) for i in range(0, len(words), 1000)) + "\n",
                    encoding="utf-8")
    return path
