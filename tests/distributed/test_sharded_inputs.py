"""``--mode sharded``'s inputs as users have them (parvec.distributed.sharded_source): several files, a directory or a
glob, plain or compressed (a compressed file is one unit read whole by a worker), counted and encoded on the
cluster; the same vocabulary (words, counts, order) and sentences as their concatenation (byte ranges end at line
breaks); an input that changes between counting and encoding is refused."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
from pathlib import Path

import numpy as np
import pytest

import parvec.distributed.sharded_source as source_mod
from parvec.cli import main
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.distributed import Cluster
from parvec.distributed.pipeline import ShardedWord2Vec
from parvec.errors import ParvecError
from parvec.formats import load_npy
from parvec.vocab_parts import WordParts

pytestmark = pytest.mark.usefixtures("ray_session")

CONFIG = TrainConfig(dim=12, window=3, negative=3, epochs=2, sample=0, seed=4, threads=1, progress=False)


def _topics(n_sent: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    topics = [[f"{t}{i}" for i in range(12)] for t in ("a", "b", "c")]
    return "".join(" ".join(rng.choice(topics[rng.integers(3)], 20)) + "\n" for _ in range(n_sent))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path]:
    """A directory of four files (plain, .gz, .bz2, .xz) and their concatenation."""
    d = tmp_path_factory.mktemp("inputs")
    texts = [_topics(150, seed) for seed in range(4)]
    corpus = d / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text(texts[0], encoding="utf-8")
    (corpus / "b.txt.gz").write_bytes(gzip.compress(texts[1].encode()))
    (corpus / "c.txt.bz2").write_bytes(bz2.compress(texts[2].encode()))
    (corpus / "d.txt.xz").write_bytes(lzma.compress(texts[3].encode()))
    whole = d / "whole.txt"
    whole.write_text("".join(texts), encoding="utf-8")
    return corpus, whole


def _cluster(**kw) -> Cluster:
    return Cluster("local:2", mode="sharded", shards=2, clients=2, threads_per_actor=1, minibatch_words=32, **kw)


def _vocabulary(model: ShardedWord2Vec, corpus) -> tuple[list[bytes], list[int]]:
    parts = WordParts.open(corpus.vocab_dir, corpus.vocab_parts, check=True)
    return parts.words_between(0, parts.n_words), parts.counts_between(0, parts.n_words).tolist()


def test_a_directory_of_plain_and_compressed_files_is_counted_as_their_concatenation(inputs, tmp_path):
    corpus_dir, whole = inputs
    got = {}
    for name, source in (("dir", corpus_dir), ("glob", str(corpus_dir / "*.txt*")),
                         ("list", [str(p) for p in sorted(corpus_dir.iterdir())]), ("whole", whole)):
        with ShardedWord2Vec(CONFIG, ReadOptions(min_count=1), _cluster(), tmp_path / "cache") as model:
            corpus = model.encode(source)
            got[name] = (_vocabulary(model, corpus), corpus.tokens, corpus.sentences, corpus.raw_words,
                         corpus.classes.values.tolist(), corpus.classes.first.tolist())
            if name == "dir":
                # each compressed file one unit read whole; the plain file cut into ranges
                assert sum(1 for _, _, b in corpus.inputs.units if b is None) == 3
                assert len(corpus.inputs.files) == 4 and len(corpus.inputs.units) >= 5
    assert got["dir"] == got["glob"] == got["list"] == got["whole"]
    one = EncodedCorpus.from_file(whole, ReadOptions(min_count=1))
    (words, counts), tokens, _, raw, _, _ = got["dir"]
    want = [w.encode() for w in one.vocab.words]
    assert sorted(zip(words, counts, strict=True)) == sorted(zip(want, one.vocab.counts.tolist(), strict=True))
    assert (tokens, raw) == (one.n_tokens, one.raw_words)
    assert got["dir"][2] == one.n_sentences  # the plain file's ranges end at line breaks


def test_byte_ranges_end_at_line_breaks_so_the_sentences_are_the_one_process_readers(tmp_path):
    # Lines of 95 to 400 words, and one of 5,000 (pieces of --max-sentence-length 64): every whitespace cut of
    # the file into 4 ranges falls inside a line, which then counted as two sentences (and its pieces moved).
    rng = np.random.default_rng(8)
    words = [f"w{i}" for i in range(40)]
    lines = [" ".join(rng.choice(words, n)) for n in (400, 95, 333, 5000, 120, 260, 97)]
    path = tmp_path / "long.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = path.read_bytes()
    options = ReadOptions(min_count=1, max_sentence_length=64)
    plan = source_mod.plan_inputs(path, cpus=2, work=tmp_path)
    assert len(plan.units) >= 2 and all(data[a - 1:a] == b"\n" for _, a, _ in plan.units[1:])
    assert [b for _, _, b in plan.units[:-1]] == [a for _, a, _ in plan.units[1:]] and plan.units[-1][2] == len(data)
    one = EncodedCorpus.from_file(path, options)  # its sentences: the lines cut into pieces of 64 words
    with ShardedWord2Vec(CONFIG, options, _cluster(), tmp_path / "cache") as model:
        corpus = model.encode(path)
        pieces = np.concatenate([np.diff(np.load(offsets)) for _, (_, offsets) in corpus.parts])
        assert corpus.sentences == one.n_sentences == 7 + 2 + 6 + 79 + 2 + 5 + 2
        assert pieces.tolist() == np.diff(one.offsets).tolist()  # the same sentences, the same pieces
        assert sum(u.words for u in corpus.units()) == corpus.tokens == one.n_tokens


def test_the_cli_trains_a_directory_and_several_files(inputs, tmp_path, capsys):
    corpus_dir, whole = inputs
    flags = ["--cluster", "local:2", "--mode", "sharded", "--shards", "2", "--clients", "2", "--threads", "1",
             "--dim", "16", "--epochs", "3", "--min-count", "1", "--window", "4", "--sample", "0", "--no-cache",
             "--minibatch-words", "32",
             "--no-progress"]
    assert main(["train", str(corpus_dir), "-o", str(tmp_path / "dir.npy"), "--report", str(tmp_path / "r.json"),
                 *flags]) == 0
    err = capsys.readouterr().err
    assert "in 4 files" not in err and "of 4 files" in err
    assert main(["train", *[str(p) for p in sorted(corpus_dir.iterdir())], "-o", str(tmp_path / "list.txt.gz"),
                 *flags]) == 0
    capsys.readouterr()
    vectors, words, counts = load_npy(tmp_path / "dir.npy")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["input_files"] == 4 and report["vocab_size"] == len(words) == 36
    check = report["count_check"]  # the whole input was sampled: the estimate is exact, no reducer spilled
    assert check["estimate"] == check["distinct"] == 36 and check["off_by"] == 1.0
    assert [r["runs"] for r in check["reducers"]] == [0, 0] and [r["restarts"] for r in check["reducers"]] == [0, 0]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    near = np.argsort(-(unit @ unit.T), axis=1)[:, 1:6]
    same = np.mean([words[i][0] == words[j][0] for i in range(len(words)) for j in near[i]])
    assert same > 0.9, same  # topic words ranked together
    with gzip.open(tmp_path / "list.txt.gz", "rt") as f:  # pieces compressed by the tasks, one stream each
        head = f.readline().split()
        lines = f.read().splitlines()
    assert head == [str(len(words)), "16"] and [line.split()[0] for line in lines] == words


def test_an_input_changed_between_counting_and_encoding_is_refused(tmp_path, monkeypatch):
    import parvec.distributed.vocab_count as vocab_count

    path = tmp_path / "c.txt"
    path.write_text(_topics(300, 1).replace("a1 ", "w1 "), encoding="utf-8")
    original = vocab_count.count_units

    def count_then_change(*args, **kwargs):
        parts = original(*args, **kwargs)
        data = path.read_bytes()
        path.write_bytes(data.replace(b"w1 ", b"w9 "))  # same size, other bytes
        return parts

    monkeypatch.setattr(vocab_count, "count_units", count_then_change)
    with ShardedWord2Vec(CONFIG, ReadOptions(min_count=1), _cluster(), tmp_path / "cache") as model:
        with pytest.raises(ParvecError, match=r"c\.txt: the input changed while it was read"):
            model.encode(path)
        # stat shows nothing (a file system with a coarse clock): the bytes each unit read, CRC-32, still do
        path.write_bytes(path.read_bytes().replace(b"w9 ", b"w1 "))
        monkeypatch.setattr(source_mod, "file_state", lambda p: (1, 2, 3, 4, 5))
        with pytest.raises(ParvecError, match=r"c\.txt: the input changed between counting and encoding its bytes"):
            model.encode(path)


def test_an_empty_directory_and_a_missing_file_are_named(tmp_path):
    (tmp_path / "empty").mkdir()
    with ShardedWord2Vec(CONFIG, ReadOptions(min_count=1), _cluster(), tmp_path / "cache") as model:
        with pytest.raises(ParvecError, match="holds no .non-empty, non-hidden. file to read"):
            model.encode(tmp_path / "empty")
        with pytest.raises(ParvecError, match="no/such.txt"):
            model.encode(str(tmp_path / "no" / "such.txt"))
    assert not any(os.scandir(tmp_path / "cache"))


def test_a_count_that_cannot_fit_is_refused_before_anything_is_counted(tmp_path, monkeypatch):
    import parvec.distributed.vocab_count as vocab_count
    from parvec import resources

    path = tmp_path / "c.txt"
    path.write_text(_topics(300, 2), encoding="utf-8")

    def counted(*args, **kwargs):
        raise AssertionError("the input was counted")

    monkeypatch.setattr(vocab_count, "count_units", counted)
    monkeypatch.setattr(resources, "available_memory", lambda: 64 << 20)
    with ShardedWord2Vec(CONFIG, ReadOptions(min_count=1), _cluster(), tmp_path / "cache") as model:
        with pytest.raises(ParvecError, match=r"needs about .* but 64\.0 MiB is available: .*reducers? .*distinct "
                                              r"words of its hash range.*expects about 36 distinct words"):
            model.encode(path)
    assert model.count_plan is not None and not model.count_plan.estimate.fits


def test_a_plan_read_back_from_its_recorded_units_cuts_the_same_ranges(tmp_path):
    # what a checkpoint records of the input (model.json's sharded.input) is read back as the same units, and the
    # same input with another number of files is refused
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"w{i % 7} w{i % 5} w{i % 3}\n" for i in range(2000)))
    plan = source_mod.plan_inputs(str(corpus), cpus=2, work=tmp_path)
    written = json.loads(json.dumps(plan.recorded_units().to_json()))
    assert written == {"files": [str(corpus.absolute())], "units": [list(u) for u in plan.units]}
    recorded = source_mod.RecordedUnits.from_json(written | {"fingerprints": []})
    assert recorded is not None and source_mod.RecordedUnits.from_json({"fingerprints": []}) is None
    again = source_mod.plan_inputs(str(corpus), cpus=8, work=tmp_path, recorded=recorded)
    assert again.units == plan.units and len(plan.units) >= 4
    with pytest.raises(ParvecError, match="the checkpoint 2"):
        source_mod.plan_inputs(str(corpus), cpus=2, work=tmp_path,
                               recorded=source_mod.RecordedUnits(recorded.files * 2, recorded.units))
