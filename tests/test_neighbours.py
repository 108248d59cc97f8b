"""Batched exact neighbours (``most_similar_batch``, ``parvec neighbours``) equal brute force, on vectors in memory and
on a sharded model read lazily; the approximate index (``parvec index``, ``most_similar(..., indexer=...)``) finds
the exact neighbours of a model with a known structure.  Speed: benchmarks/bench_vectors.py and bench_ann.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from sharded_model_dir import topic_vectors, write_sharded_model

import parvec.neighbours as neighbours
from parvec.formats import write_word2vec
from parvec.keyedvectors import KeyedVectors
from parvec.sharded_vectors import ShardedKeyedVectors

N, DIM, K = 700, 16, 12


def brute_force(vectors: np.ndarray, words: list[str], queries: list[str], k: int,
                rows: np.ndarray | None = None) -> list[list[tuple[str, float]]]:
    """Every query's ``k`` best rows (of ``rows``, default all) by float64 cosine, itself left out, ties by id."""
    unit = vectors.astype(np.float64) / np.linalg.norm(vectors.astype(np.float64), axis=1, keepdims=True)
    rows = np.arange(len(words)) if rows is None else np.unique(rows)
    out = []
    for q in queries:
        i = words.index(q)
        scores = unit[rows] @ unit[i]
        order = np.lexsort((rows, -scores))
        out.append([(words[rows[j]], float(scores[j])) for j in order if rows[j] != i][:k])
    return out


def same(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> None:
    assert [[w for w, _ in g] for g in got] == [[w for w, _ in g] for g in want]
    assert np.allclose([[s for _, s in g] for g in got], [[s for _, s in g] for g in want], atol=1e-6)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[np.ndarray, list[str], Path]:
    vectors, words = topic_vectors(N, DIM, topics=5)
    path = write_sharded_model(tmp_path_factory.mktemp("nb") / "model", vectors, words, shards=3, parts=2)
    return vectors, words, path


@pytest.mark.parametrize("blocks", [(16384, 1024), (64, 5)])  # one block; many blocks and query chunks
def test_most_similar_batch_equals_brute_force_in_memory_and_sharded(model, monkeypatch, blocks):
    vectors, words, path = model
    monkeypatch.setattr(neighbours, "BLOCK_ROWS", blocks[0])
    monkeypatch.setattr(neighbours, "QUERY_CHUNK", blocks[1])
    queries = words[::23] + ["t2w2"]
    want = brute_force(vectors, words, queries, K)
    for kv in (KeyedVectors(vectors, words), ShardedKeyedVectors.open(path)):
        got = kv.most_similar_batch(queries, topn=K)
        same(got, want)
        assert [[w for w, _ in g[:3]] for g in got[:4]] == [[w for w, _ in kv.most_similar(q, topn=3)]
                                                              for q in queries[:4]]
        cand = np.arange(0, N, 3)
        same(kv.most_similar_batch(queries, topn=K, candidates=[words[i] for i in cand]),
             brute_force(vectors, words, queries, K, rows=cand))
        same(kv.most_similar_batch(queries, topn=K, restrict_vocab=200),
             brute_force(vectors, words, queries, K, rows=np.arange(200)))
        same(kv.most_similar_batch(queries[:2], topn=N + 5), brute_force(vectors, words, queries[:2], N))  # all
        with pytest.raises(KeyError):
            kv.most_similar_batch(["t0w0", "no-such-word"])


def test_a_nan_row_is_an_error_never_a_neighbour():
    vectors, words = topic_vectors(50, 4)
    vectors[7, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        KeyedVectors(vectors, words).most_similar_batch(["t0w0"], topn=3)


def _read_table(path: Path) -> tuple[str, list[list[str]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines[0], [line.split("\t") for line in lines[1:]]


@pytest.mark.parametrize("kind", ["word2vec", "sharded"])
def test_parvec_neighbours_writes_the_brute_force_table(model, tmp_path, capsys, kind):
    vectors, words, path = model
    if kind == "word2vec":
        path = tmp_path / "v.txt"
        write_word2vec(path, vectors, words)
    queries = tmp_path / "queries.txt"
    queries.write_text("t0w0\nno-such-word\n\nt1w301 extra fields\nt0w0\nt2w2\n", encoding="utf-8")
    candidates = tmp_path / "ads.txt"
    candidates.write_text("".join(f"{w}\n" for w in words[::2]) + "not-an-ad\n", encoding="utf-8")
    out = tmp_path / "out" / "neighbours.tsv"
    out.parent.mkdir()
    code, stdout, err = run(["neighbours", path, "--queries", queries, "-k", 5, "-o", out], capsys)
    assert code == 0, err
    assert "1 of 4 words are not in the vocabulary" in err and "'no-such-word'" in err and stdout == ""
    header, rows = _read_table(out)
    assert header == "query\trank\tneighbour\tscore"
    want = brute_force(vectors, words, ["t0w0", "t1w301", "t2w2"], 5)
    assert [r[0] for r in rows] == ["t0w0"] * 5 + ["t1w301"] * 5 + ["t2w2"] * 5
    assert [int(r[1]) for r in rows] == [1, 2, 3, 4, 5] * 3
    assert [r[2] for r in rows] == [w for found in want for w, _ in found]
    assert np.allclose([float(r[3]) for r in rows], [s for found in want for _, s in found], atol=2e-6)
    assert [p.name for p in out.parent.iterdir()] == ["neighbours.tsv"]  # no temporary left

    code, _, err = run(["neighbours", path, "--queries", queries, "--candidates", candidates, "-k", 3, "-o", out],
                       capsys)
    assert code == 0 and "--candidates" in err and "'not-an-ad'" in err
    _, rows = _read_table(out)
    want = brute_force(vectors, words, ["t0w0", "t1w301", "t2w2"], 3, rows=np.arange(0, N, 2))
    assert [r[2] for r in rows] == [w for found in want for w, _ in found]


def test_parvec_neighbours_refuses_queries_it_cannot_answer(model, tmp_path, capsys):
    vectors, words, path = model
    unknown = tmp_path / "q.txt"
    unknown.write_text("nope\nnada\n", encoding="utf-8")
    out = tmp_path / "n.tsv"
    code, _, err = run(["neighbours", path, "--queries", unknown, "-o", out], capsys)
    assert code == 2 and "none of its 2 words is in the vocabulary" in err and not out.exists()
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    code, _, err = run(["neighbours", path, "--queries", empty, "-o", out], capsys)
    assert code == 2 and f"--queries {empty}: holds no word" in err and not out.exists()
    code, _, err = run(["neighbours", path, "--queries", tmp_path / "missing.txt", "-o", out], capsys)
    assert code == 2 and "missing.txt" in err and "Traceback" not in err
    code, _, err = run(["neighbours", path, "--queries", unknown, "-o", unknown], capsys)
    assert code == 2 and unknown.read_text(encoding="utf-8") == "nope\nnada\n"


def clustered(n: int = 3000, dim: int = 24, clusters: int = 60, seed: int = 3) -> tuple[np.ndarray, list[str]]:
    """Tight clusters around random centres: each word's nearest words are its cluster's."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    vectors = (centres[np.arange(n) % clusters] + 0.25 * rng.standard_normal((n, dim))).astype(np.float32)
    return vectors, [f"c{i % clusters}w{i}" for i in range(n)]


def test_the_approximate_index_finds_the_exact_neighbours(tmp_path, capsys):
    pytest.importorskip("hnswlib")
    from parvec.ann import build_index, load_index

    vectors, words = clustered()
    kv = KeyedVectors(vectors, words)
    indexer = build_index(kv, m=16, ef_construction=100)
    queries = words[::7]
    exact = kv.most_similar_batch(queries, topn=10)
    approx = [kv.most_similar(q, topn=10, indexer=indexer) for q in queries]
    recall = np.mean([len({w for w, _ in a} & {w for w, _ in e}) / 10 for a, e in zip(approx, exact, strict=True)])
    assert recall >= 0.95
    assert all(q not in [w for w, _ in a] for q, a in zip(queries, approx, strict=True))  # the query left out
    word, score = approx[0][0]
    assert score == pytest.approx(kv.similarity(queries[0], word), abs=1e-5)

    # parvec index, then the index read back for a sharded model of the same vectors answers the same
    model = write_sharded_model(tmp_path / "model", vectors, words, shards=2)
    index = tmp_path / "model.hnsw"
    code, _, err = run(["index", model, "-o", index, "--threads", 1], capsys)
    assert code == 0 and index.is_file(), err
    lazy = ShardedKeyedVectors.open(model)
    loaded = load_index(index, lazy)
    got = [lazy.most_similar(q, topn=10, indexer=loaded) for q in queries[:50]]
    assert np.mean([len({w for w, _ in a} & {w for w, _ in e}) / 10
                    for a, e in zip(got, exact[:50], strict=True)]) >= 0.95
    with pytest.raises(Exception, match="index of 3,000 vectors, not of these 100"):
        load_index(index, KeyedVectors(vectors[:100], words[:100]))


def test_parvec_index_without_the_extra_names_it(tmp_path, capsys, monkeypatch):
    vectors, words = clustered(50, 4)
    path = tmp_path / "v.txt"
    write_word2vec(path, vectors, words)
    monkeypatch.setitem(sys.modules, "hnswlib", None)  # as when it is not installed
    code, _, err = run(["index", path, "-o", tmp_path / "v.hnsw"], capsys)
    assert code == 2 and "pip install 'parvec[ann]'" in err and not (tmp_path / "v.hnsw").exists()
