"""The gensim-shaped Word2Vec model: build, train, continue, save/load, memory check."""

from __future__ import annotations

import numpy as np
import pytest

import parvec.drivers as drivers_mod
from parvec import ParvecError, Word2Vec


def topic_sentences(n=400, seed=0):
    rng = np.random.default_rng(seed)
    a = [f"a{i}" for i in range(15)]
    b = [f"b{i}" for i in range(15)]
    return [list(rng.choice(a if i % 2 else b, 10)) for i in range(n)]


def test_sentences_train_and_topics_separate():
    model = Word2Vec(sentences=topic_sentences(), vector_size=16, min_count=1, epochs=5, workers=1,
                     algo="classic", sample=0)
    assert len(model.wv) == 30 and model.wv.vector_size == 16
    assert model.epochs_trained == 5 and model.stats.words == 5 * 4000
    near = [w for w, _ in model.wv.most_similar("a1", topn=6)]
    assert sum(w.startswith("a") for w in near) >= 5
    assert model.wv.similarity("a1", "a2") > model.wv.similarity("a1", "b2")


def test_save_load_round_trip_and_continue_training(tmp_path):
    model = Word2Vec(sentences=topic_sentences(), vector_size=8, min_count=1, epochs=2, workers=1,
                     algo="classic", seed=7)
    model.save(tmp_path / "m")
    back = Word2Vec.load(tmp_path / "m")
    assert back.wv.index_to_key == model.wv.index_to_key
    np.testing.assert_array_equal(back.wv.vectors, model.wv.vectors)
    np.testing.assert_array_equal(back.syn1neg, model.syn1neg)
    assert back.config == model.config and back.epochs_trained == 2
    before = back.wv.vectors.copy()
    stats = back.train(sentences=topic_sentences(seed=1) + [["unknown", "words", "a1"]], epochs=1)
    assert stats.epochs == 1 and back.epochs_trained == 3
    assert not np.array_equal(before, back.wv.vectors)
    assert "unknown" not in back.wv  # continued training keeps the vocabulary
    # Saving over an existing model replaces it whole.
    back.save(tmp_path / "m")
    assert Word2Vec.load(tmp_path / "m").epochs_trained == 3


def test_a_model_loaded_read_only_refuses_to_train_with_a_clear_error(tmp_path):
    model = Word2Vec(sentences=topic_sentences(), vector_size=8, min_count=1, epochs=1, workers=1, seed=7)
    model.save(tmp_path / "m")
    mapped = Word2Vec.load(tmp_path / "m", mmap="r")
    assert mapped.wv.most_similar("a1", topn=1)  # queries read the mapped arrays
    with pytest.raises(ParvecError, match=r"read-only \(Word2Vec.load\(\.\.\., mmap='r'\) maps them\)"):
        mapped.train(sentences=topic_sentences(seed=1), epochs=1)


def test_one_thread_same_seed_same_model_any_algo_default():
    kw = dict(sentences=topic_sentences(), vector_size=8, min_count=1, epochs=1, workers=1, algo="classic")
    a, b = Word2Vec(seed=3, **kw), Word2Vec(seed=3, **kw)
    np.testing.assert_array_equal(a.wv.vectors, b.wv.vectors)


def test_refusals_and_errors(tmp_path, monkeypatch):
    with pytest.raises(ParvecError, match="sg must be 0 or 1"):
        Word2Vec(sg=2)
    with pytest.raises(ParvecError, match="not implemented for algo 'par'"):
        Word2Vec(hs=1, algo="par")  # hierarchical softmax runs with classic/hogbatch (tests/kernels/test_hs.py)
    with pytest.raises(ParvecError, match="negative=0 only with hierarchical softmax"):
        Word2Vec(negative=0)
    with pytest.raises(ParvecError, match="only one of"):
        Word2Vec(sentences=[["a"]], corpus_file="x.txt")
    with pytest.raises(ParvecError, match="build the vocabulary first"):
        Word2Vec().train(sentences=[["a"]])
    with pytest.raises(ParvecError, match="not a parvec model"):
        Word2Vec.load(tmp_path)
    monkeypatch.setattr(drivers_mod, "available_memory", lambda: 1000)  # the memory check (parvec.drivers)
    with pytest.raises(ParvecError, match="GiB is available"):
        Word2Vec(sentences=topic_sentences(), min_count=1)
