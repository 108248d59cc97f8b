"""A small corpus with two topics for the replicas tests (tests/distributed/test_replicas.py and
test_replica_checkpoints.py): sentences that each mix six words of one topic (animals or vehicles) with four
filler words, and how well trained vectors separate the topics."""

from __future__ import annotations

from pathlib import Path

import numpy as np

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


def topic_precision(kv, topic: list[str], k: int = 5) -> float:
    """Share of each topic word's k nearest words that are of its topic."""
    hits = [sum(w in topic for w, _ in kv.most_similar(word, topn=k)) for word in topic]
    return sum(hits) / (k * len(topic))
