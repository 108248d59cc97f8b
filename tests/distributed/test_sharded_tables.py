"""The sharded kernels draw negatives from, and subsample with, either per-word tables or tables over count classes
(parvec.distributed.units.SamplingTables): the class tables draw each negative from the class alias table and a
uniform id inside the class (parvec.countclasses.draw_class_noise) with the per-word draw's random stream, and the
clients' head table keeps the same words as the per-word keep table."""

from __future__ import annotations

import numpy as np
import pytest

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.countclasses import CountClasses, draw_class_noise, noise_tables, word_probabilities
from parvec.distributed.shard_kernels import reference_train
from parvec.distributed.units import SamplingTables, UnitRunner
from parvec.kernels import sharded as K
from parvec.sampling import rng_next


def _zipf_counts(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sort(rng.zipf(1.3, n).clip(1, 10**6))[::-1].astype(np.int64)


def _minibatch(vocab: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, vocab, 400).astype(np.int32)
    offsets = np.array([0, 120, 250, 400], np.int64)
    runner = UnitRunner(TrainConfig(window=3, negative=4), np.ones(vocab, np.float32), 64)
    return next(runner.minibatches(tokens, offsets, 0, 3, 11, 0.025, 0.02, 400))


def test_class_tables_draw_the_class_stream_of_the_per_word_draws_states():
    counts = _zipf_counts(3000)
    classes = CountClasses.from_counts(counts)
    prob, ranges = noise_tables(classes)
    mb = _minibatch(len(counts))
    negs = K.minibatch_negatives(mb.seq, mb.seg, mb.shrink, 3, 4, prob, ranges, mb.seed)
    # The same states as the per-word draw takes: one rng_next per draw, a draw equal to its positive redrawn.
    state = np.uint64(mb.seed)
    pairs = K.count_pairs(mb.seg, mb.shrink, 3)
    positives = []
    m = 0
    for g in range(mb.seg.shape[0]):
        base, n, lo, hi = (int(x) for x in mb.seg[g])
        for i in range(lo, hi):
            r = int(mb.shrink[m])
            m += 1
            positives += [int(mb.seq[base + j]) for j in range(max(0, i - 3 + r), min(n, i + 3 - r + 1)) if j != i]
    assert len(positives) == pairs == len(negs)
    expected = np.empty_like(negs)
    for p, pos in enumerate(positives):
        for k in range(4):
            while True:
                state = np.uint64(int(rng_next(state)) & 0xFFFFFFFFFFFFFFFF)  # numba hands back an int64
                t = int(draw_class_noise(state, prob, ranges))
                if t != pos:
                    break
            expected[p, k] = t
    assert np.array_equal(negs, expected)
    assert negs.max() < len(counts) and negs.min() >= 0


def test_singleton_classes_are_the_per_word_alias_table():
    # A per-word alias table read as classes of one word each: the same negatives.
    counts = _zipf_counts(500, seed=1)
    per_word = SamplingTables.per_word(counts, TrainConfig())
    ranges = np.concatenate((per_word.noise_alias.astype(np.int64), np.arange(len(counts) + 1)))
    mb = _minibatch(len(counts), seed=5)
    a = K.minibatch_negatives(mb.seq, mb.seg, mb.shrink, 3, 4, per_word.noise_prob, per_word.noise_alias, mb.seed)
    b = K.minibatch_negatives(mb.seq, mb.seg, mb.shrink, 3, 4, per_word.noise_prob, ranges, mb.seed)
    assert np.array_equal(a, b)


def test_negatives_follow_unigram_075_with_class_tables():
    counts = _zipf_counts(2000, seed=2)
    tables = SamplingTables.of_classes(CountClasses.from_counts(counts), TrainConfig())
    assert len(tables.noise_alias) == 2 * len(tables.noise_prob) + 1 and tables.n_words == 2000
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 2000, 200_000).astype(np.int32)
    offsets = np.arange(0, 200_001, 1000, dtype=np.int64)
    runner = UnitRunner(TrainConfig(window=2, negative=5), np.ones(2000, np.float32), 4096)
    drawn = np.zeros(2000, np.int64)
    for mb in runner.minibatches(tokens, offsets, 0, 200, 3, 0.025, 0.02, 200_000):
        negs = K.minibatch_negatives(mb.seq, mb.seg, mb.shrink, 2, 5, tables.noise_prob, tables.noise_alias, mb.seed)
        drawn += np.bincount(negs.ravel(), minlength=2000)
    p = word_probabilities(tables.noise_prob, tables.noise_alias)
    want = counts.astype(float) ** 0.75 / (counts.astype(float) ** 0.75).sum()
    np.testing.assert_allclose(p, want, rtol=1e-5)
    top = drawn[:20] / drawn.sum()  # the frequent words, drawn often enough to compare (a negative equal to its
    np.testing.assert_allclose(top, want[:20], rtol=0.1)  # positive is redrawn: a small bias, well inside 10%)


def test_the_head_keep_table_subsamples_as_the_per_word_one():
    counts = _zipf_counts(3000, seed=4)
    config = TrainConfig(sample=1e-3, window=3)
    head = SamplingTables.of_classes(CountClasses.from_counts(counts), config).keep
    full = SamplingTables.per_word(counts, config).keep
    assert 0 < len(head) < 100 and np.array_equal(head, full[: len(head)]) and (full[len(head):] == 1).all()
    rng = np.random.default_rng(7)
    tokens = rng.choice(3000, 50_000, p=counts / counts.sum()).astype(np.int32)
    offsets = np.arange(0, 50_001, 500, dtype=np.int64)
    a = [mb.seq.tolist() for mb in UnitRunner(config, full, 256).minibatches(tokens, offsets, 0, 100, 9, .025, .02,
                                                                             50_000)]
    b = [mb.seq.tolist() for mb in UnitRunner(config, head, 256).minibatches(tokens, offsets, 0, 100, 9, .025, .02,
                                                                             50_000)]
    assert a == b and len(a) > 10


def _topic_corpus(n_sent: int = 600, seed: int = 0) -> EncodedCorpus:
    rng = np.random.default_rng(seed)
    topics = [[f"{t}{i}" for i in range(12)] for t in ("a", "b", "c")]
    return EncodedCorpus.from_sentences([list(rng.choice(topics[rng.integers(3)], 20)) for _ in range(n_sent)],
                                        min_count=1)


@pytest.mark.parametrize("negatives_per", ["window", "pair"])
def test_the_reference_trains_topics_with_class_tables(negatives_per):
    corpus = _topic_corpus()
    config = TrainConfig(dim=16, window=4, negative=4, epochs=4, sample=0, seed=2)
    tables = SamplingTables.of_classes(CountClasses.from_counts(corpus.vocab.counts), config)
    w_in, _, stats = reference_train(config, corpus.vocab.counts, [(corpus.tokens, corpus.offsets)],
                                     minibatch_words=32, unit_words=2000, negatives_per=negatives_per, tables=tables)
    per_word, _, _ = reference_train(config, corpus.vocab.counts, [(corpus.tokens, corpus.offsets)],
                                     minibatch_words=32, unit_words=2000, negatives_per=negatives_per)
    assert not np.allclose(w_in, per_word, atol=1e-4)  # other draws
    unit = w_in / np.linalg.norm(w_in, axis=1, keepdims=True)
    words = corpus.vocab.words
    sims = unit @ unit.T
    same = [words[i][0] == words[j][0] for i in range(len(words)) for j in np.argsort(-sims[i])[1:6]]
    assert np.mean(same) > 0.9 and stats.loss_per_epoch[-1] < stats.loss_per_epoch[0]
