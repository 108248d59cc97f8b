"""gensim idioms on parvec.Word2Vec / KeyedVectors, each checked against what gensim itself does."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from parvec import KeyedVectors, ParvecError, Word2Vec
from parvec.model_tables import init_input_vectors

gensim_models = pytest.importorskip("gensim.models")

COMMON = dict(vector_size=16, window=5, negative=5, sample=0, epochs=3, workers=1, seed=1)


def topic_sentences(n=600, seed=0, prefix=("a", "b"), words=20):
    rng = np.random.default_rng(seed)
    a = [f"{prefix[0]}{i}" for i in range(words)]
    b = [f"{prefix[1]}{i}" for i in range(words)]
    return [list(rng.choice(a if i % 2 else b, 12)) for i in range(n)]


class Recorder:
    """gensim's CallbackAny2Vec shape: the four hooks, each called with the model."""

    def __init__(self):
        self.events = []

    def on_train_begin(self, model):
        self.events.append("train_begin")

    def on_epoch_begin(self, model):
        self.events.append("epoch_begin")

    def on_epoch_end(self, model):
        self.events.append(("epoch_end", model.get_latest_training_loss()))

    def on_train_end(self, model):
        self.events.append("train_end")


def test_sg_hs_cbow_mean_resolve_as_gensim():
    p = Word2Vec(sg=1, hs=0, cbow_mean=0)
    g = gensim_models.Word2Vec(sg=1, hs=0, cbow_mean=0)
    assert (p.sg, p.hs, p.cbow_mean) == (g.sg, g.hs, g.cbow_mean) == (1, 0, 0)
    assert p.config.sg is True and p.config.hs is False and p.config.cbow_mean is False
    assert Word2Vec(sg=True).config.sg is True
    for bad in ({"sg": 2}, {"hs": -1}, {"cbow_mean": "yes"}):
        with pytest.raises(ParvecError, match=f"{next(iter(bad))} must be 0 or 1"):
            Word2Vec(**bad)
    # sg=0 / hs=1 reach the config (refused there until the CBOW and HS kernels land, then trained).
    for kw, field, value in (({"sg": 0}, "sg", False), ({"hs": 1, "negative": 5}, "hs", True)):
        try:
            model = Word2Vec(**kw)
        except ParvecError as exc:
            assert "not implemented yet" in str(exc)
        else:
            assert getattr(model.config, field) is value


def test_callbacks_and_running_loss_as_gensim():
    sentences = topic_sentences()
    rec_p, rec_g = Recorder(), Recorder()
    Word2Vec(sentences=sentences, min_count=1, algo="classic", callbacks=[rec_p], **COMMON)
    gensim_models.Word2Vec(sentences=sentences, min_count=1, sg=1, hs=0, compute_loss=True, callbacks=[rec_g],
                           **COMMON)
    names = [e if isinstance(e, str) else e[0] for e in rec_p.events]
    assert names == [e if isinstance(e, str) else e[0] for e in rec_g.events]
    assert names == ["train_begin"] + ["epoch_begin", "epoch_end"] * 3 + ["train_end"]
    # get_latest_training_loss: the running sum over the call's pairs, read at each epoch's end (gensim's meaning).
    loss_p = [e[1] for e in rec_p.events if isinstance(e, tuple)]
    loss_g = [e[1] for e in rec_g.events if isinstance(e, tuple)]
    assert loss_p[0] < loss_p[1] < loss_p[2]
    for lp, lg in zip(loss_p, loss_g, strict=True):
        assert 0.9 < lp / lg < 1.1, (loss_p, loss_g)


def test_callbacks_mixed_with_plain_functions_and_bad_ones():
    seen = []
    model = Word2Vec(min_count=1, **COMMON)
    enc = model.build_vocab(topic_sentences(n=100))
    rec = Recorder()
    model.train(corpus=enc, epochs=2, callbacks=[rec, lambda m, epoch, stats: seen.append(epoch)])
    assert seen == [0, 1] and rec.events[0] == "train_begin" and rec.events[-1] == "train_end"
    with pytest.raises(ParvecError, match="neither a function"):
        model.train(corpus=enc, epochs=1, callbacks=[42])
    model.train(corpus=enc, epochs=1, compute_loss=False)
    assert model.get_latest_training_loss() == 0.0  # as gensim without compute_loss


def test_counts_order_and_min_count_zero_one_as_gensim():
    sentences = topic_sentences(n=50) + [["rare1", "a1"], ["rare2", "rare1", "b2"]]
    for min_count in (0, 1, 3):
        p = Word2Vec(min_count=min_count, vector_size=8)
        p.build_vocab(sentences)
        g = gensim_models.Word2Vec(min_count=min_count, vector_size=8)
        g.build_vocab(sentences)
        # Same words, same counts, both by descending count (gensim orders ties arbitrarily, parvec first-seen).
        counts_p = {w: p.wv.get_vecattr(w, "count") for w in p.wv.index_to_key}
        assert counts_p == {w: int(g.wv.get_vecattr(w, "count")) for w in g.wv.index_to_key}, min_count
        assert [counts_p[w] for w in p.wv.index_to_key] == sorted(counts_p.values(), reverse=True)
        first_seen = list(dict.fromkeys(w for s in sentences for w in s))
        for i in range(len(p.wv) - 1):  # ties in first-seen order
            w, v = p.wv.index_to_key[i], p.wv.index_to_key[i + 1]
            assert counts_p[w] > counts_p[v] or first_seen.index(w) < first_seen.index(v)
        assert p.corpus_count == g.corpus_count and p.corpus_total_words == g.corpus_total_words
    assert "rare2" in p.wv or min_count == 3
    with pytest.raises(ParvecError, match="min_count must be >= 0"):
        Word2Vec(min_count=-1)
    with pytest.raises(KeyError):
        p.wv.get_vecattr("a1", "sample_int")


def test_vocabulary_growth_as_gensim():
    first = topic_sentences(n=300)
    # The second corpus: known words (counts added), new words (appended), and a known word too rare in it.
    second = topic_sentences(n=200, seed=5, prefix=("c", "a"), words=10) + [["b3", "zz"]]
    p = Word2Vec(min_count=2, **COMMON)
    p.build_vocab(first)
    p.train(first, total_examples=p.corpus_count, epochs=p.epochs)
    g = gensim_models.Word2Vec(min_count=2, sg=1, **COMMON)
    g.build_vocab(first)
    g.train(first, total_examples=g.corpus_count, epochs=g.epochs)
    wv_ref = p.wv
    old_words, old_in, old_out = list(p.wv.index_to_key), p.wv.vectors.copy(), p.syn1neg.copy()
    n_old = len(old_words)

    enc = p.build_vocab(second, update=True)
    g.build_vocab(second, update=True)
    assert p.wv is wv_ref and len(p.wv) == len(g.wv) and set(p.wv.index_to_key) == set(g.wv.index_to_key)
    assert p.wv.index_to_key[:n_old] == old_words  # existing indices stay, as in gensim:
    assert set(g.wv.index_to_key[:n_old]) == set(old_words)
    for w in p.wv.index_to_key:
        assert p.wv.get_vecattr(w, "count") == int(g.wv.get_vecattr(w, "count")), w
    added = p.wv.index_to_key[n_old:]
    counts = [p.wv.get_vecattr(w, "count") for w in added]
    assert added and counts == sorted(counts, reverse=True)  # parvec: by descending count within the new block
    n = len(p.wv)
    np.testing.assert_array_equal(p.wv.vectors[:n_old], old_in)
    np.testing.assert_array_equal(p.syn1neg[:n_old], old_out)
    np.testing.assert_array_equal(p.syn1neg[n_old:], 0)  # output rows of new words: zero, as gensim
    np.testing.assert_array_equal(p.wv.vectors[n_old:], init_input_vectors(n, 16, 1)[n_old:])  # word2vec.c's init
    assert p.wv.vectors.shape == g.wv.vectors.shape and p.syn1neg.shape == g.syn1neg.shape
    assert enc.vocab.words == p.wv.index_to_key and p.corpus_count == g.corpus_count

    p.train(second, total_examples=p.corpus_count, epochs=p.epochs)
    assert not np.allclose(p.wv.vectors[n_old:], init_input_vectors(n, 16, 1)[n_old:])  # new words trained
    assert p.wv.most_similar("c1", topn=1)[0][0].startswith("c")
    with pytest.raises(ParvecError, match="no prior vocabulary"):
        Word2Vec(min_count=1).build_vocab(first, update=True)
    with pytest.raises(RuntimeError, match="no prior vocabulary"):
        gensim_models.Word2Vec(min_count=1).build_vocab(first, update=True)


def test_train_totals_with_gensims_meaning_and_errors():
    sentences = topic_sentences(n=200)

    def fresh():
        m = Word2Vec(min_count=1, algo="classic", **COMMON)
        m.build_vocab(sentences)
        return m

    plain = fresh()
    plain.train(sentences, epochs=2)
    for totals in ({"total_examples": plain.corpus_count}, {"total_words": plain.corpus_total_words}):
        m = fresh()
        m.train(corpus_iterable=sentences, epochs=2, **totals)
        np.testing.assert_array_equal(m.wv.vectors, plain.wv.vectors)  # the corpus's own size: same schedule
    slow = fresh()
    slow.train(sentences, total_words=10 * plain.corpus_total_words, epochs=2)  # decays over 10x the words
    assert not np.array_equal(slow.wv.vectors, plain.wv.vectors)
    g = gensim_models.Word2Vec(min_count=1)
    g.build_vocab(sentences)
    for kw, phrase in (({}, "You must specify either total_examples or total_words"),
                       ({"total_examples": 200}, "You must specify an explicit epochs count")):
        with pytest.raises(ValueError, match=phrase):
            g.train(corpus_iterable=sentences, **kw)
        with pytest.raises(ParvecError, match=phrase):
            fresh().train(corpus_iterable=sentences, **kw)
    with pytest.raises(ParvecError, match="total_examples must be a positive integer"):
        fresh().train(sentences, total_examples=0, epochs=1)


def test_keyedvectors_save_load_round_trip_without_pickle(tmp_path):
    model = Word2Vec(sentences=topic_sentences(n=100), min_count=1, **COMMON)
    model.wv.save(tmp_path / "vectors.kv")  # a gensim script's name
    back = KeyedVectors.load(tmp_path / "vectors.kv")
    assert back.index_to_key == model.wv.index_to_key
    np.testing.assert_array_equal(back.vectors, model.wv.vectors)
    assert [back.get_vecattr(w, "count") for w in back.index_to_key] == model.wv.counts.tolist()
    for f in tmp_path.iterdir():
        assert not f.read_bytes().startswith(b"\x80")  # nothing pickled
    np.load(tmp_path / "vectors.kv.npy", allow_pickle=False)


def test_gensim_pickles_refused_with_the_conversion(tmp_path, capsys):
    sentences = topic_sentences(n=100)
    g = gensim_models.Word2Vec(sentences=sentences, min_count=1, vector_size=8, workers=1, epochs=1)
    g.save(str(tmp_path / "w2v.model"))
    g.wv.save(str(tmp_path / "vectors.kv"))
    assert (tmp_path / "vectors.kv").read_bytes()[:1] == b"\x80"
    for load, path in ((KeyedVectors.load, "vectors.kv"), (Word2Vec.load, "w2v.model")):
        with pytest.raises(ParvecError, match="does not read pickles") as info:
            load(tmp_path / path)
        msg = str(info.value)
        assert "runs code" in msg and "save_word2vec_format" in msg and "load_word2vec_format" in msg
        assert str(tmp_path / path) in msg
    from parvec.cli import main

    assert main(["similar", str(tmp_path / "vectors.kv"), "a1"]) == 2
    assert "does not read pickles" in capsys.readouterr().err
    # The conversion the message gives works.
    g.wv.save_word2vec_format(str(tmp_path / "v.bin"), binary=True)
    kv = KeyedVectors.load_word2vec_format(tmp_path / "v.bin", binary=True)
    assert kv.index_to_key == g.wv.index_to_key
    np.testing.assert_array_equal(kv.vectors, g.wv.vectors)
    # Compressed pickles too; other files are not taken for one.
    import gzip

    from parvec.formats import is_pickle

    (tmp_path / "x.kv.gz").write_bytes(gzip.compress(pickle.dumps({"a": 1}, protocol=4)))
    assert is_pickle(tmp_path / "x.kv.gz") and not is_pickle(tmp_path / "v.bin")


def test_vocabulary_growth_from_a_file_or_an_encoded_corpus(tmp_path):
    from parvec.corpus import EncodedCorpus

    first, second = topic_sentences(n=200), [["a1", "new1", "new2", "new1"], ["new1", "b2", "rare"]] * 3 + [["x"]]
    path = tmp_path / "more.txt"
    path.write_text("".join(" ".join(s) + "\n" for s in second))
    grown = []
    for kw in ({"corpus_file": path}, {"corpus": EncodedCorpus.from_sentences(second, min_count=1)},
               {"corpus_iterable": second}):
        m = Word2Vec(min_count=2, **COMMON)
        m.build_vocab(corpus_iterable=first)
        before = {w: m.wv.get_vecattr(w, "count") for w in m.wv.index_to_key}
        enc = m.build_vocab(update=True, **kw)
        assert m.wv.index_to_key[len(before):] == ["new1", "new2", "rare"]  # by count (9, 3, 3), ties first-seen
        # (empty sentences aside: an all-unknown line may stay as an empty sentence)
        grown.append((list(m.wv.index_to_key), m.wv.counts.tolist(), enc.tokens.tolist(), sorted(set(enc.offsets))))
        assert m.wv.get_vecattr("a1", "count") == before["a1"] + 3
        m.train(corpus=enc, epochs=1)
    # x (1) does not reach min_count 2 in the new corpus; the three inputs agree.
    assert "x" not in grown[0][0] and grown[0] == grown[1] == grown[2]
