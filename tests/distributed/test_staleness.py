"""The staleness model (parvec.distributed.staleness): one lane is the reference (what one client thread's real run
computes), more lanes read dot products without the other lanes' adjusts."""

from __future__ import annotations

import numpy as np
import pytest

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.distributed.shard_kernels import reference_train
from parvec.distributed.staleness import stale_train
from parvec.distributed.units import SamplingTables

from topic_corpus import three_topic_sentences


@pytest.fixture(scope="module")
def corpus():
    return EncodedCorpus.from_sentences(three_topic_sentences(80), min_count=1)


def test_one_lane_is_the_reference_to_the_bit(corpus):
    cfg = TrainConfig(dim=8, window=3, negative=3, epochs=2, sample=1e-2, seed=5)
    tables = SamplingTables.per_word(corpus.vocab.counts, cfg)
    ref_in, ref_out, ref_stats = reference_train(cfg, corpus.vocab.counts, [(corpus.tokens, corpus.offsets)],
                                                 minibatch_words=24, unit_words=400)
    run = stale_train(cfg, tables, [(corpus.tokens, corpus.offsets)], minibatch_words=24, unit_words=400)
    assert np.array_equal(run.w_in, ref_in) and np.array_equal(run.w_out, ref_out)
    assert run.loss_per_epoch == ref_stats.loss_per_epoch and not run.diverged
    assert run.pairs == ref_stats.pairs


def test_more_lanes_read_staler_dot_products(corpus):
    # the same minibatches (the same units dealt to 3 lanes), so the same pairs; other vectors, since each lane's
    # dot products miss the adjusts of the other lanes' minibatches in flight
    cfg = TrainConfig(dim=8, window=3, negative=3, epochs=1, sample=1e-2, seed=5)
    tables = SamplingTables.per_word(corpus.vocab.counts, cfg)
    one = stale_train(cfg, tables, [(corpus.tokens, corpus.offsets)], minibatch_words=24, unit_words=400)
    three = stale_train(cfg, tables, [(corpus.tokens, corpus.offsets)], minibatch_words=24, unit_words=400,
                        threads=3)
    assert three.pairs == one.pairs and three.minibatches == one.minibatches
    assert not np.array_equal(three.w_in, one.w_in)
    assert abs(three.loss_per_epoch[0] - one.loss_per_epoch[0]) < 0.05
