"""The staleness model (parvec.distributed.staleness): one lane is the reference (what one client thread's real run
computes), more lanes read dot products without the other lanes' adjusts."""

from __future__ import annotations

import numpy as np
import pytest
from topic_corpus import three_topic_sentences

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.distributed.shard_kernels import reference_train
from parvec.distributed.staleness import stale_train
from parvec.distributed.units import SamplingTables


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


def _zipf_corpus():
    # one word of ~12%, a Zipf tail: the most frequent words' output rows are centers and negatives of many inputs
    rng = np.random.default_rng(1)
    p = 1.0 / np.arange(1, 301) ** 1.1
    sents = [[f"w{i}" for i in rng.choice(300, 40, p=p / p.sum())] for _ in range(1500)]
    return EncodedCorpus.from_sentences(sents, min_count=1)


def test_combined_updates_keep_many_words_in_flight_from_diverging():
    # 2 x 1,024 input words in flight: applied one by one from one stale state, the frequent words' output rows blow
    # up; with the rows over the threshold combined and stepped by a line search the same minibatches train, and
    # so do 32 lanes of 64 words, whose threshold per minibatch is 16 / 32 -> 1
    corpus = _zipf_corpus()
    cfg = TrainConfig(dim=16, window=5, negative=5, epochs=1, sample=0, seed=1)
    tables = SamplingTables.per_word(corpus.vocab.counts, cfg)
    parts = [(corpus.tokens, corpus.offsets)]
    summed = stale_train(cfg, tables, parts, minibatch_words=1024, threads=2, unit_words=20000, update_cap=0)
    combined = stale_train(cfg, tables, parts, minibatch_words=1024, threads=2, unit_words=20000, update_cap=16)
    assert summed.diverged and summed.diverged_at is not None
    assert not combined.diverged and combined.loss_per_epoch[0] < 3.5
    assert float(np.abs(combined.w_out).max()) < 5.0
    summed = stale_train(cfg, tables, parts, minibatch_words=64, threads=32, unit_words=20000, update_cap=0)
    combined = stale_train(cfg, tables, parts, minibatch_words=64, threads=32, unit_words=20000, update_cap=16)
    assert summed.loss_per_epoch[0] > 10 and float(np.abs(summed.w_out).max()) > 50
    assert combined.loss_per_epoch[0] < 3.0 and float(np.abs(combined.w_out).max()) < 5.0


def test_the_model_steps_as_the_shards_of_a_run_do():
    # threads lanes in flight and shards column groups: the threshold and step each shard of such a run takes
    from parvec.distributed.shard_kernels import LocalStep

    cfg = TrainConfig(dim=16, negative=5)
    z = np.zeros((4, 16), np.float32)
    step = LocalStep(z, z.copy(), cfg, np.ones(4), np.zeros(4, np.int64), update_cap=16, shards=2, lanes=4)
    assert (step.kernels.update_cap, step.kernels.step_scale, step.kernels.column_groups) == (4, 0.5, 2)


def test_the_update_cap_is_a_sharded_setting():
    from parvec.distributed import Cluster
    from parvec.distributed.sharded_settings import UPDATE_CAP, ShardedSettings
    from parvec.errors import ParvecError

    split = dict(mode="sharded", shards=2)
    assert ShardedSettings.of(Cluster("local:2", **split), TrainConfig()).update_cap == UPDATE_CAP == 16
    assert ShardedSettings.of(Cluster("local:2", update_cap=0, **split), TrainConfig()).to_json()["update_cap"] == 0
    with pytest.raises(ParvecError, match="update_cap must be a non-negative integer, got -1"):
        ShardedSettings.of(Cluster("local:2", update_cap=-1, **split), TrainConfig())
