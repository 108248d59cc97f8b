"""The trainer: seeds, threads, learning-rate schedule, streaming parts, resume, errors."""

from __future__ import annotations

import numpy as np
import pytest

from parvec.chunks import chunk_bounds, split_long_sentences
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.errors import ParvecError
from parvec.model_tables import init_input_vectors
from parvec.trainer import Trainer


@pytest.fixture(scope="module")
def small_corpus(demo_slice):
    return EncodedCorpus.from_file(demo_slice, ReadOptions(min_count=5))


def train(corpus, **kw):
    cfg = TrainConfig(**({"algo": "classic", "dim": 16, "epochs": 1, "threads": 1, "progress": False} | kw))
    tr = Trainer(cfg, corpus.vocab.counts)
    return tr, tr.train(corpus)


def test_one_thread_repeats_bit_for_bit_and_seed_matters(small_corpus):
    a, _ = train(small_corpus, seed=3)
    b, _ = train(small_corpus, seed=3)
    c, _ = train(small_corpus, seed=4)
    np.testing.assert_array_equal(a.w_in, b.w_in)
    np.testing.assert_array_equal(a.w_out, b.w_out)
    assert not np.array_equal(a.w_in, c.w_in)


def test_two_threads_train_every_word_once_per_epoch(small_corpus):
    tr, stats = train(small_corpus, threads=2, epochs=2)
    assert stats.words == 2 * small_corpus.n_tokens
    assert stats.words_per_epoch == [small_corpus.n_tokens] * 2
    assert len(stats.loss_per_epoch) == 2 and all(np.isfinite(stats.loss_per_epoch))


def test_resume_from_an_epoch_equals_an_uninterrupted_run(small_corpus):
    full, _ = train(small_corpus, epochs=2, seed=5)
    cfg = TrainConfig(algo="classic", dim=16, epochs=2, threads=1, seed=5, progress=False)
    first = Trainer(cfg, small_corpus.vocab.counts)
    snapshots = {}
    def snapshot(epoch, stats):
        snapshots[epoch] = (first.w_in.copy(), first.w_out.copy())

    first.train(small_corpus, on_epoch_end=snapshot)
    resumed = Trainer(cfg, small_corpus.vocab.counts, w_in=snapshots[0][0].copy(), w_out=snapshots[0][1].copy())
    resumed.train(small_corpus, start_epoch=1)
    np.testing.assert_array_equal(resumed.w_in, full.w_in)


def test_streamed_parts_equal_one_corpus(small_corpus):
    whole, _ = train(small_corpus, seed=9)
    cfg = TrainConfig(algo="classic", dim=16, epochs=1, threads=1, seed=9, progress=False)
    tr = Trainer(cfg, small_corpus.vocab.counts)
    off = small_corpus.offsets
    half = len(off) // 2

    def parts(epoch):
        yield small_corpus.tokens[: off[half]], off[: half + 1]
        yield small_corpus.tokens[off[half] :], off[half:] - off[half]

    stats = tr.train_parts(parts, small_corpus.n_tokens)
    assert stats.words == small_corpus.n_tokens
    # Chunk boundaries differ at the seam, so vectors differ slightly but train as well.
    assert np.corrcoef(tr.w_in.ravel(), whole.w_in.ravel())[0, 1] > 0.5


def test_helpers():
    assert split_long_sentences(np.array([0, 25, 26]), 10).tolist() == [0, 10, 20, 25, 26]
    assert chunk_bounds(np.array([0, 5, 10, 15, 20]), 10).tolist() == [0, 2, 4]
    v = init_input_vectors(3, 4, seed=1)
    # word2vec.c's first value with next_random = 1: ((25214903917 + 11) & 0xFFFF) / 65536 - 0.5) / 4
    assert v[0, 0] == np.float32(((((25214903917 + 11) & 0xFFFF) / 65536) - 0.5) / 4)
    assert np.all(np.abs(v) <= 0.5 / 4)


def test_bad_parameters_are_named():
    for kw, name in [({"dim": 0}, "dim"), ({"window": -1}, "window"), ({"epochs": 0}, "epochs"),
                     ({"negative": 0}, "negative"), ({"algo": "cbow"}, "algo"), ({"alpha": 0}, "alpha")]:
        with pytest.raises(ParvecError, match=name):
            TrainConfig(**kw).validate()


def test_kernel_errors_surface_in_the_caller(small_corpus):
    cfg = TrainConfig(algo="classic", dim=16, epochs=1, threads=2, progress=False)
    tr = Trainer(cfg, small_corpus.vocab.counts)

    def bad_parts(epoch):
        yield small_corpus.tokens, small_corpus.offsets
        raise RuntimeError("walk generator failed")

    with pytest.raises(RuntimeError, match="walk generator failed"):
        tr.train_parts(bad_parts, small_corpus.n_tokens)


def test_warm_up_compiles_for_the_corpus_array_types(small_corpus):
    # A memory-mapped cache is read-only, a different numba signature; compiling it inside the timed
    # loop once cost a first run half its speed.
    tokens = small_corpus.tokens.copy()
    tokens.setflags(write=False)
    cfg = TrainConfig(algo="classic", dim=16, epochs=1, threads=1, progress=False)
    tr = Trainer(cfg, small_corpus.vocab.counts)
    tr.warm_up((tokens, small_corpus.offsets))
    assert any(not sig[2].mutable for sig in tr.algorithm.train_chunk.signatures)


@pytest.mark.parametrize(("algo", "extra"), [("par", {"par_batch": 0}), ("hogbatch", {"compute_loss": False})])
def test_divergence_stops_with_an_error_not_nan_vectors(small_corpus, algo, extra):
    cfg = TrainConfig(algo=algo, dim=16, epochs=2, threads=2, alpha=1e6, progress=False, **extra)
    tr = Trainer(cfg, small_corpus.vocab.counts)
    with pytest.raises(ParvecError, match=r"diverged in epoch 1 .*lower alpha \(now 1000000.0\)"):
        tr.train(small_corpus)


def test_warm_up_sees_offsets_as_training_splits_them(small_corpus):
    # Training hands the kernel a split (new, writable) copy of the offsets when sentences exceed
    # max_sentence_length; a warm-up on the read-only originals would compile the wrong signature.
    tokens = small_corpus.tokens.copy()
    offsets = np.array([0, len(tokens)], dtype=np.int64)  # one long sentence
    tokens.setflags(write=False)
    offsets.setflags(write=False)
    cfg = TrainConfig(algo="classic", dim=16, epochs=1, threads=1, progress=False, max_sentence_length=50)
    tr = Trainer(cfg, small_corpus.vocab.counts)
    seen = []
    kernel = tr.algorithm.train_chunk

    class Spy:
        params = tr.algorithm.params

        @staticmethod
        def train_chunk(*args):
            seen.append(args[3])
            return kernel(*args)

    tr.algorithm = Spy
    tr.warm_up((tokens, offsets))
    (got,) = seen
    assert got.flags.writeable and len(got) == -(-len(tokens) // 50) + 1
