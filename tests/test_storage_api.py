"""The Python API with URLs, as gensim's smart_open gives them: ``Word2Vec(corpus_file="s3://...")``, ``save`` and
``load`` of a model, ``save_word2vec_format``/``load_word2vec_format`` and ``KeyedVectors.save``/``load`` against
an S3-compatible server (moto on loopback, reached over HTTP through s3fs).  What is read from or written to a URL
equals the same calls on local files, bit for bit; errors name the URL, never a local copy."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import numpy as np
import pytest
from s3_server import bucket, s3_endpoint  # noqa: F401 - fixtures
from s3_server import s3_client as _fs

from parvec import KeyedVectors, ParvecError, Word2Vec

PARAMS = {"vector_size": 16, "min_count": 1, "epochs": 2, "workers": 1, "seed": 7, "window": 3, "sample": 0}


def _corpus(directory: Path) -> Path:
    """Two parts of a small two-topic corpus, the second gzip-compressed."""
    rng = np.random.default_rng(11)
    a, b = [f"a{i}" for i in range(25)], [f"b{i}" for i in range(25)]
    directory.mkdir()
    for k, (name, opener) in enumerate([("part-0.txt", open), ("part-1.txt.gz", gzip.open)]):
        with opener(directory / name, "wt") as f:
            f.write("".join(" ".join(rng.choice(a if (i + k) % 2 else b, 8)) + "\n" for i in range(250)))
    return directory


def test_a_corpus_url_trains_the_model_of_the_same_local_files(bucket, tmp_path):  # noqa: F811
    local = _corpus(tmp_path / "corpus")
    _fs().put(str(local) + "/", f"{bucket}/corpus/", recursive=True)
    want = Word2Vec(corpus_file=str(local), **PARAMS)
    got = Word2Vec(corpus_file=f"s3://{bucket}/corpus/", **PARAMS)
    assert got.wv.index_to_key == want.wv.index_to_key
    assert np.array_equal(got.wv.vectors, want.wv.vectors)
    one = Word2Vec(corpus_file=f"s3://{bucket}/corpus/part-1.txt.gz", **PARAMS)  # one object, decompressed
    assert one.wv.index_to_key == Word2Vec(corpus_file=str(local / "part-1.txt.gz"), **PARAMS).wv.index_to_key
    assert not [p for p in Path(tempfile.gettempdir()).glob("parvec-in-*") if (p / "in-0").exists()]  # copies removed


def test_a_model_saved_to_a_url_loads_back_whole(bucket, tmp_path):  # noqa: F811
    model = Word2Vec([["x", "y", "z", "x"], ["y", "z", "w"]] * 30, **PARAMS)
    model.save(f"s3://{bucket}/models/m.parvec")
    assert _fs().exists(f"{bucket}/models/m.parvec/model.json")
    for mmap in (None, "r"):
        back = Word2Vec.load(f"s3://{bucket}/models/m.parvec", mmap=mmap)
        assert back.wv.index_to_key == model.wv.index_to_key
        assert np.array_equal(back.wv.vectors, model.wv.vectors)
    Word2Vec.load(f"s3://{bucket}/models/m.parvec").train([["x", "y", "w"]] * 5, epochs=1)  # a loaded copy trains on


def test_vector_files_round_trip_through_urls(bucket, tmp_path):  # noqa: F811
    kv = Word2Vec([["p", "q", "r"], ["q", "r", "s", "p"]] * 20, **PARAMS).wv
    for name, binary in (("v.txt", False), ("v.bin", True), ("v.txt.gz", False)):
        kv.save_word2vec_format(f"s3://{bucket}/vec/{name}", binary=binary)
        kv.save_word2vec_format(tmp_path / name, binary=binary)
        assert _fs().cat(f"{bucket}/vec/{name}") == (tmp_path / name).read_bytes()
        back = KeyedVectors.load_word2vec_format(f"s3://{bucket}/vec/{name}", binary=binary)
        assert back.index_to_key == kv.index_to_key
    assert kv.save(f"s3://{bucket}/npy/vectors") == f"s3://{bucket}/npy/vectors.npy"
    for mmap in (False, True):
        back = KeyedVectors.load(f"s3://{bucket}/npy/vectors.npy", mmap=mmap)
        assert back.index_to_key == kv.index_to_key and np.array_equal(back.vectors, kv.vectors)


def test_url_errors_name_the_url_not_a_local_copy(bucket, tmp_path):  # noqa: F811
    with pytest.raises(ParvecError, match=rf"s3://{bucket}/none\.parvec: no such object"):
        Word2Vec.load(f"s3://{bucket}/none.parvec")
    with pytest.raises(ParvecError, match=r"s3://parvec-no-such-bucket-9/m: no such bucket"):
        Word2Vec([["a", "b"]] * 5, **PARAMS).save("s3://parvec-no-such-bucket-9/m")
    with pytest.raises(ParvecError, match=rf"s3://{bucket}/npy/w\.npy: no such object"):
        KeyedVectors.load(f"s3://{bucket}/npy/w.npy")
    _fs().pipe(f"{bucket}/bad/part-0.txt", b"good words here\n\xff\xfe broken\n")
    with pytest.raises(ParvecError) as err:
        Word2Vec(corpus_file=f"s3://{bucket}/bad/", **PARAMS, unicode_errors="strict")
    assert f"s3://{bucket}/bad/part-0.txt" in str(err.value) and "parvec-in-" not in str(err.value)
    _fs().pipe(f"{bucket}/notmodel/readme.txt", b"hello\n")
    with pytest.raises(ParvecError) as err:
        Word2Vec.load(f"s3://{bucket}/notmodel")
    assert f"s3://{bucket}/notmodel" in str(err.value) and "parvec-copy-" not in str(err.value)
