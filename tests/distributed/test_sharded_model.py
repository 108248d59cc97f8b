"""The sharded model format (``parvec train --mode sharded --save-model DIR``): each shard's column files and the
vocabulary's partitions, no gather.  It loads whole in ``Word2Vec.load``, lazily in
``KeyedVectors.load_sharded`` (memory-mapped; ``most_similar`` from the shards' partial dot products and norms,
block by block), and a cluster query (``parvec similar DIR WORD --cluster``) gives the gathered vectors' top 10."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import parvec.sharded_vectors as sharded_vectors
from parvec.cli import main
from parvec.errors import ParvecError
from parvec.formats import load_npy
from parvec.keyedvectors import KeyedVectors
from parvec.word2vec import Word2Vec
from parvec.wordhash import fnv1a64, part_of

pytestmark = pytest.mark.usefixtures("ray_session")


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path]:
    """A sharded run over 3 topics x 30 words (3 shards of d 24), its model directory and its .npy vectors."""
    d = tmp_path_factory.mktemp("model")
    rng = np.random.default_rng(3)
    topics = [[f"{t}{i}" for i in range(30)] for t in ("a", "b", "c")]
    (d / "c.txt").write_text("".join(" ".join(rng.choice(topics[rng.integers(3)], 20)) + "\n" for _ in range(1500)),
                             encoding="utf-8")
    assert main(["train", str(d / "c.txt"), "-o", str(d / "v.npy"), "--save-model", str(d / "model"), "--cluster",
                 "local:2", "--mode", "sharded", "--shards", "3", "--clients", "1", "--threads", "1", "--dim", "24",
                 "--epochs", "3", "--min-count", "1", "--window", "4", "--sample", "0", "--minibatch-words", "64",
                 "--no-cache", "--no-progress"]) == 0
    return d / "model", d / "v.npy"


def test_the_model_is_the_shards_files_and_loads_whole(trained):
    model_dir, npy = trained
    vectors, words, counts = load_npy(npy)
    meta = json.loads((model_dir / "model.json").read_text())
    files = meta["sharded"]["files"]
    assert [f["directory"] for f in files] == [f"shards/shard-{s}-of-3" for s in range(3)]
    assert [f["columns"] for f in files] == [[0, 8], [8, 16], [16, 24]] and meta["arrays"] == {}
    for s, f in enumerate(files):  # each shard's own columns, as it wrote them
        cols = np.load(model_dir / f["directory"] / "in.npy")
        assert np.array_equal(cols, vectors[:, 8 * s: 8 * s + 8])
    model = Word2Vec.load(model_dir)
    assert model.wv.index_to_key == words and np.array_equal(model.wv.vectors, vectors)
    assert model.vocab.counts.tolist() == counts.tolist() and model.epochs_trained == 3


@pytest.mark.parametrize("block_rows", [sharded_vectors.BLOCK_ROWS, 7])
def test_a_lazy_sharded_model_answers_as_the_gathered_vectors(trained, monkeypatch, block_rows):
    model_dir, npy = trained
    monkeypatch.setattr(sharded_vectors, "BLOCK_ROWS", block_rows)  # several blocks of rows
    vectors, words, _ = load_npy(npy)
    gathered = KeyedVectors(vectors, words)
    lazy = KeyedVectors.load_sharded(model_dir)
    assert len(lazy) == len(words) == 90 and lazy.vector_size == 24 and list(lazy.index_to_key) == words
    assert "a3" in lazy and "z9" not in lazy and lazy.get_index("b7") == words.index("b7")
    assert [lazy.get_index(w) for w in words] == list(range(len(words)))
    parts = lazy.parts.parts  # each word in the partition its hash names (the reducer's hash range)
    assert len(parts) == 2 and all(
        np.uint64(fnv1a64(w.encode())) in np.asarray(parts[int(part_of(np.array([fnv1a64(w.encode())], np.uint64),
                                                                        2)[0])].hashes) for w in words)
    assert np.array_equal(lazy["c2"], gathered["c2"])
    for word in ("a0", "b5", "c29"):
        want = gathered.most_similar(word, topn=10)
        got = lazy.most_similar(word, topn=10)
        assert [w for w, _ in got] == [w for w, _ in want]
        np.testing.assert_allclose([c for _, c in got], [c for _, c in want], atol=1e-5)
    analogy = gathered.most_similar(positive=["a1", "b2"], negative=["c3"], topn=10)
    assert [w for w, _ in lazy.most_similar(positive=["a1", "b2"], negative=["c3"], topn=10)] == [w for w, _ in analogy]
    assert lazy.similarity("a1", "a2") == pytest.approx(gathered.similarity("a1", "a2"), abs=1e-6)


def test_a_directory_that_is_not_a_sharded_model_is_named(tmp_path):
    (tmp_path / "model.json").write_text('{"format": "parvec-word2vec"}')
    with pytest.raises(ParvecError, match=r"not a sharded model \(no model\.json naming shards and vocabulary"):
        KeyedVectors.load_sharded(tmp_path)


def test_a_cluster_query_gives_the_gathered_top_10(ray_session, trained, monkeypatch, capsys):
    from parvec.distributed.sharded_query import cluster_most_similar

    model_dir, npy = trained
    vectors, words, _ = load_npy(npy)
    gathered = KeyedVectors(vectors, words)
    monkeypatch.setattr("parvec.distributed.sharded_query.BLOCK_ROWS", 16)  # several blocks of rows
    for word in ("a0", "b5"):
        got = cluster_most_similar(ray_session, model_dir, [word], topn=10)
        want = gathered.most_similar(word, topn=10)
        assert [w for w, _ in got] == [w for w, _ in want]
        np.testing.assert_allclose([c for _, c in got], [c for _, c in want], atol=1e-5)
    assert main(["similar", str(model_dir), "a0", "-k", "10", "--cluster", "local:2"]) == 0
    printed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert printed == [w for w, _ in gathered.most_similar("a0", topn=10)]
    assert main(["similar", str(npy), "a0", "--cluster", "local:2"]) == 2
    assert "is not a sharded model directory" in capsys.readouterr().err


def test_eval_analogy_and_similar_print_the_gathered_vectors_scores(trained, tmp_path, capsys):
    model_dir, npy = trained
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{t}{i}\t{u}{(i * 7) % 30}\t{(i * 3) % 10}\n" for i in range(30)
                             for t, u in (("a", "a"), ("b", "c"))) + "a1\tz9\t4\n", encoding="utf-8")
    questions = tmp_path / "questions.txt"
    questions.write_text(": topics\n" + "".join(f"a{i} a{i + 1} b{i} b{i + 1}\nb{i} c{i} a{i} c{i + 3}\n"
                                                for i in range(20)), encoding="utf-8")
    commands = [["eval", "{}", "--ws353", pairs, "--simlex", pairs, "--analogies", questions],
                ["eval", "{}", "--ws353", pairs, "--analogies", questions, "--restrict-vocab", "50", "--json"],
                ["analogy", "{}", "a1", "a2", "b3"], ["analogy", "{}", "c0", "b7", "a9", "-k", "20"],
                ["similar", "{}", "c4", "-k", "30"]]
    for argv in commands:
        printed = []
        for vectors in (npy, model_dir):  # the gathered vectors, then the sharded model read lazily
            assert main([str(a).format(vectors) for a in argv]) == 0
            printed.append(capsys.readouterr().out.replace(str(npy), str(model_dir)))
        assert printed[0] == printed[1] and printed[0]


def test_a_cluster_query_names_a_damaged_model_never_a_nan(ray_session, trained, tmp_path, monkeypatch, capsys):
    import shutil

    model_dir = shutil.copytree(trained[0], tmp_path / "model")
    kv = KeyedVectors.load_sharded(model_dir)
    shard = model_dir / "shards" / "shard-1-of-3" / "in.npy"
    row = next(i for i in range(len(kv)) if kv.index_to_key[i] != "a0")
    with open(shard, "r+b") as f:
        f.seek(128 + row * 8 * 4)
        f.write(b"\xff" * 32)  # that row's 8 columns of shard 1: NaN
    assert main(["similar", str(model_dir), "a0", "--cluster", "local:2"]) == 2  # small: its CRC-32s checked at open
    assert f"{shard}: its data does not match the CRC-32 model.json records" in capsys.readouterr().err
    monkeypatch.setattr(sharded_vectors, "CHECK_AT_OPEN_BYTES", 0)  # as a model too big to check at open
    assert main(["similar", str(model_dir), "a0", "--cluster", "local:2"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (f"parvec: error: {model_dir}: the model is damaged: row {row} holds NaN or infinite "
                                 f"values in {shard}; `parvec verify {model_dir}` checks every file against "
                                 "model.json's CRC-32s\n")
