"""``ShardedKeyedVectors``: a sharded model read lazily offers KeyedVectors' surface and answers as the gathered
vectors do, to the bit, reading the rows it needs (not the matrix); its files are checked when it opens (sizes,
and CRC-32s when small) and a NaN row found in a query is an error naming the model, never a score.  The models
here are written without Ray (tests/sharded_model_dir.py); tests/distributed/test_sharded_model.py queries one a
sharded run trained."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from sharded_model_dir import topic_vectors, write_sharded_model

import parvec.sharded_vectors as sharded_vectors
from parvec.errors import CheckpointError, ParvecError
from parvec.keyedvectors import KeyedVectors, load_vectors

N, DIM = 300, 24


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[Path, KeyedVectors]:
    """A sharded model of 300 words x 24 dimensions in 3 shards and 2 partitions, and its gathered vectors."""
    vectors, words = topic_vectors(N, DIM)
    path = write_sharded_model(tmp_path_factory.mktemp("sharded") / "model", vectors, words, shards=3)
    return path, KeyedVectors(vectors, words, np.arange(N, 0, -1) + 10)


@pytest.fixture()
def eval_files(tmp_path) -> tuple[Path, Path]:
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"T{i % 3}W{i}\tt{(i * 7) % 3}w{(i * 7) % N}\t{(i * 37) % 10}\n" for i in range(40))
                     + "t0w0\tnosuchword\t5\n", encoding="utf-8")
    analogies = tmp_path / "questions.txt"
    analogies.write_text(": topics\n" + "".join(f"t0w{3 * i} t1w{3 * i + 1} t0w{3 * i + 30} t1w{3 * i + 31}\n"
                                                for i in range(25)) + ": more\nt2w2 t2w5 t1w7 t1w10\n",
                         encoding="utf-8")
    return pairs, analogies


@pytest.mark.parametrize("block_rows", [sharded_vectors.BLOCK_ROWS, 40])
def test_a_sharded_model_answers_as_the_gathered_vectors_to_the_bit(model, monkeypatch, tmp_path, eval_files,
                                                                     block_rows):
    path, gathered = model
    monkeypatch.setattr(sharded_vectors, "BLOCK_ROWS", block_rows)  # 40: blocks of 32 rows (ROW_ALIGN)
    lazy = KeyedVectors.load_sharded(path)
    assert len(lazy) == N and lazy.vector_size == DIM and list(lazy.index_to_key) == gathered.index_to_key
    for word in ("t0w0", "t1w4", "t2w299"):
        assert lazy.most_similar(word, topn=12) == gathered.most_similar(word, topn=12)
    question = {"positive": ["t0w3", "t1w4"], "negative": ["t2w5"], "topn": 10}
    assert lazy.most_similar(**question) == gathered.most_similar(**question)
    assert lazy.most_similar(**question, restrict_vocab=100) == gathered.most_similar(**question, restrict_vocab=100)
    assert lazy.most_similar_cosmul(**question) == gathered.most_similar_cosmul(**question)
    assert np.array_equal(lazy.most_similar("t0w0", topn=None), gathered.most_similar("t0w0", topn=None))
    assert lazy.similar_by_vector(gathered["t1w1"], topn=3) == gathered.similar_by_vector(gathered["t1w1"], topn=3)
    assert lazy.similar_by_word("t1w1", topn=3) == gathered.similar_by_key("t1w1", topn=3)
    assert lazy.similarity("t0w0", "t1w1") == gathered.similarity("t0w0", "t1w1")
    assert lazy.n_similarity(["t0w0", "t0w3"], ["t1w1"]) == gathered.n_similarity(["t0w0", "t0w3"], ["t1w1"])
    assert lazy.distance("t0w0", "t2w2") == gathered.distance("t0w0", "t2w2")
    assert np.array_equal(lazy.distances("t0w0"), gathered.distances("t0w0"))
    assert np.array_equal(lazy.distances("t0w0", ["t1w1", "t2w2"]), gathered.distances("t0w0", ["t1w1", "t2w2"]))
    assert lazy.doesnt_match(["t0w0", "t0w3", "t0w6", "t1w1"]) == gathered.doesnt_match(["t0w0", "t0w3", "t0w6",
                                                                                        "t1w1"])
    pairs, analogies = eval_files
    assert lazy.evaluate_word_pairs(pairs) == gathered.evaluate_word_pairs(pairs)
    for method in ("3cosadd", "3cosmul"):
        assert (lazy.evaluate_word_analogies(analogies, method=method)
                == gathered.evaluate_word_analogies(analogies, method=method))
    total = lazy.evaluate_word_analogies(analogies)[1][-1]
    assert len(total["correct"]) + len(total["incorrect"]) == 26  # every question answered
    assert "t1w1" in lazy and "nosuchword" not in lazy and lazy.key_to_index["t2w8"] == 8
    assert "t2w8" in lazy.key_to_index and "nosuchword" not in lazy.key_to_index and len(lazy.key_to_index) == N
    assert lazy.get_vecattr("t0w9", "count") == gathered.get_vecattr("t0w9", "count")
    assert np.array_equal(lazy["t0w9"], gathered["t0w9"]) and np.array_equal(lazy[["t0w9", "t1w1"]],
                                                                              gathered[["t0w9", "t1w1"]])
    for binary, name in ((False, "v.txt"), (True, "v.bin.gz")):
        lazy.save_word2vec_format(tmp_path / f"lazy-{name}", binary=binary)
        gathered.save_word2vec_format(tmp_path / f"gathered-{name}", binary=binary)
        assert (tmp_path / f"lazy-{name}").read_bytes() == (tmp_path / f"gathered-{name}").read_bytes()
    assert np.array_equal(lazy.vectors, gathered.vectors)
    assert np.array_equal(lazy.get_normed_vectors(), gathered.get_normed_vectors())


def test_queries_and_evaluations_read_rows_not_the_matrix(model, monkeypatch, eval_files):
    path, _ = model
    monkeypatch.setattr(sharded_vectors, "BLOCK_ROWS", 64)
    lazy = KeyedVectors.load_sharded(path)
    asked: list[int] = []
    get_rows = lazy.get_rows

    def spy(rows, norm=False):
        out = get_rows(rows, norm)
        asked.append(len(out))
        return out

    monkeypatch.setattr(lazy, "get_rows", spy)
    lazy.most_similar("t0w0", topn=5)
    assert max(asked) == 64 and sum(asked) == N + 1  # the query word, then every row in blocks of 64
    asked.clear()
    pairs, analogies = eval_files
    lazy.evaluate_word_pairs(pairs)
    words = {i for i in range(40)} | {(i * 7) % N for i in range(40)}
    assert asked == [len(words)]  # the pairs' words' rows, once
    asked.clear()
    lazy.evaluate_word_analogies(analogies, restrict_vocab=120)
    assert asked == [120]  # the searched rows
    assert lazy._gathered is None and lazy._normed is None  # nothing gathered


def test_a_truncated_shard_file_is_named_when_the_model_opens(model, tmp_path):
    path = shutil.copytree(model[0], tmp_path / "model")
    shard = path / "shards" / "shard-1-of-3" / "in.npy"
    size = shard.stat().st_size
    with open(shard, "r+b") as f:
        f.truncate(size - 100)
    message = (rf"{shard}: truncated: the file has {size - 100:,} bytes, its float32 {N}x8 array needs {size:,} "
               r"\(the file was cut short or altered: copy the model again\)")
    with pytest.raises(CheckpointError, match=message):
        KeyedVectors.load_sharded(path)
    with pytest.raises(CheckpointError, match=message):
        KeyedVectors.load_sharded(path, check=False)
    with pytest.raises(CheckpointError, match=message):
        load_vectors(path)


def _overwrite(file: Path, at: int, data: bytes) -> None:
    with open(file, "r+b") as f:
        f.seek(at)
        f.write(data)


def test_altered_shard_data_fails_its_crc_at_open_and_a_nan_row_fails_a_query(model, tmp_path, monkeypatch):
    path = shutil.copytree(model[0], tmp_path / "model")
    shard = path / "shards" / "shard-1-of-3" / "in.npy"
    _overwrite(shard, 128 + 32 * 40, b"\xff" * 64)  # rows 40 and 41 of its 8 columns: NaN
    with pytest.raises(CheckpointError, match=rf"{shard}: its data does not match the CRC-32 model.json records"):
        KeyedVectors.load_sharded(path)
    lazy = KeyedVectors.load_sharded(path, check=False)  # sizes only: the query finds the NaN rows
    damaged = (rf"{path}: the model is damaged: the vector of 't1w40' \(row 40\) holds NaN or infinite values in "
               rf"{shard} \(columns 8..15\); `parvec verify {path}` checks every file")
    for query in (lambda: lazy.most_similar("t0w0"), lambda: lazy.most_similar("t1w40"),
                  lambda: lazy.evaluate_word_analogies(tmp_path / "q.txt"), lambda: lazy.vectors):
        (tmp_path / "q.txt").write_text(": s\nt0w0 t0w3 t0w6 t0w9\n", encoding="utf-8")
        with pytest.raises(CheckpointError, match=damaged):
            query()
    monkeypatch.setattr(sharded_vectors, "CHECK_AT_OPEN_BYTES", 1000)  # a model too big to check at open
    with pytest.raises(CheckpointError, match=damaged):
        KeyedVectors.load_sharded(path).most_similar("t0w0")


def test_a_damaged_vocabulary_partition_is_named(model, tmp_path):
    path = shutil.copytree(model[0], tmp_path / "model")
    part = path / "vocab" / "part-1.bytes.npy"
    _overwrite(part, 130, b"\xff\xfe")  # two bytes of a word: not UTF-8 any more
    with pytest.raises(CheckpointError, match=rf"{part}: its checksum does not match model.json"):
        KeyedVectors.load_sharded(path)
    lazy = KeyedVectors.load_sharded(path, check=False)
    with pytest.raises(CheckpointError, match=rf"{path}: the model is damaged: its vocabulary's partitions do not "
                                              r"read \(.*\); `parvec verify"):
        list(lazy.index_to_key)


def test_verify_checks_every_file_of_a_sharded_model(model, tmp_path):
    from parvec.model_check import verify

    path = shutil.copytree(model[0], tmp_path / "model")
    (check,) = verify(path)
    assert check.damaged == [] and len(check.files) == 3 * 2 + 2 * 5 and all(f.recorded for f in check.files)
    out = path / "shards" / "shard-2-of-3" / "out.npy"
    _overwrite(out, 200, np.float32(0.5).tobytes())  # a finite value changed: only the CRC-32 tells
    (check,) = verify(path)
    assert [(f.path, f.problem) for f in check.damaged] == [
        (out, "its data does not match the CRC-32 model.json records (the file was altered or damaged)")]


def test_limit_keeps_the_most_frequent_words(model):
    path, gathered = model
    lazy = load_vectors(path, limit=50)
    assert len(lazy) == 50 and list(lazy.index_to_key) == gathered.index_to_key[:50]
    assert "t0w60" not in lazy and lazy.most_similar("t0w3") == gathered.most_similar("t0w3", restrict_vocab=50)
    with pytest.raises(KeyError):
        lazy.get_index("t0w60")


def test_a_word_is_found_in_another_unicode_normal_form(tmp_path):
    vectors, words = topic_vectors(6, 4)
    words[2] = "café"  # precomposed
    lazy = KeyedVectors.load_sharded(write_sharded_model(tmp_path / "m", vectors, words))
    assert lazy.get_index("cafe\u0301") == 2 and "cafe\u0301" in lazy


def test_a_directory_that_is_not_a_model_says_what_was_expected(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("x")
    with pytest.raises(ParvecError, match=r"notes: a directory, not a vector file or a parvec model directory \(no "
                                          r"model\.json\): it holds a\.txt; expected a vector file"):
        load_vectors(tmp_path / "notes")
