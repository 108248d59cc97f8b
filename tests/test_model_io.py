"""The model directory (parvec.model_io): every kind of array and record round-trips, models
written by the code before it load (tests/model_dirs, written by commit 6f3980e), and a sharded run's
``--save-model`` carries the CRC-32s every other model has, so a damaged one is refused naming the file."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from parvec import model_io
from parvec.checkpoints import load_for_resume
from parvec.corpus import ReadOptions
from parvec.engine import Position
from parvec.errors import CheckpointError
from parvec.formats import load_npy
from parvec.word2vec import Word2Vec

HERE = Path(__file__).resolve().parent
OLD = HERE / "model_dirs"
sys.path.insert(0, str(OLD))
import make_model_dirs as old  # noqa: E402

SRC = HERE.parent / "src" / "parvec"
SENTENCES = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "ran", "to", "the", "cat"],
             ["the", "dog", "sat"]] * 15
SMALL = {"vector_size": 6, "window": 2, "min_count": 1, "epochs": 1, "workers": 1, "seed": 3}
KINDS = {
    "skip-gram": {},
    "cbow": {"sg": 0},
    "hs skip-gram (syn1, no negatives)": {"hs": 1, "negative": 0},
    "hs cbow with negatives (syn1 and syn1neg)": {"sg": 0, "hs": 1, "negative": 3},
}


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))


def _same(saved: model_io.SavedModel, model: Word2Vec) -> None:
    np.testing.assert_array_equal(saved.vectors, model.wv.vectors)
    np.testing.assert_array_equal(saved.syn1neg, model.syn1neg)
    if model.syn1 is None:
        assert saved.syn1 is None
    else:
        np.testing.assert_array_equal(saved.syn1, model.syn1)
    assert saved.vocab.words == model.vocab.words and saved.vocab.counts.tolist() == model.vocab.counts.tolist()
    assert saved.config == model.config


# ---------------------------------------------------------------------- round trips
@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
def test_every_array_kind_round_trips_through_model_io_and_word2vec(tmp_path, kind):
    model = Word2Vec(sentences=SENTENCES, **SMALL | kind)
    assert (model.syn1 is not None) == bool(kind.get("hs"))
    model.save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / model_io.MODEL_JSON).read_text())
    names = {model_io.VECTORS, model_io.SYN1NEG} | ({model_io.SYN1} if model.syn1 is not None else set())
    assert set(meta["arrays"]) == names and "vocab_crc32" in meta
    saved = model_io.load(tmp_path / "m")
    _same(saved, model)
    assert saved.position is None and saved.kind == "model" and saved.epochs_trained == 1
    back = Word2Vec.load(tmp_path / "m")
    np.testing.assert_array_equal(back.wv.vectors, model.wv.vectors)
    assert back.config == model.config and back.corpus_count == model.corpus_count
    # Each array is checked: a flipped bit in any of them is refused, naming the file.
    for name in sorted(names):
        work = tmp_path / f"flip-{name}"
        shutil.copytree(tmp_path / "m", work)
        _flip_last_byte(work / name)
        with pytest.raises(CheckpointError, match=f"{work / name}: the array's checksum does not match"):
            model_io.load(work)


def test_a_mid_epoch_position_and_a_graph_run_record_round_trip(tmp_path):
    model = Word2Vec(sentences=SENTENCES, **SMALL | {"epochs": 3})
    model.epochs_trained, model.run_id = 1, "r1"
    model.graph_run = {"command": "node2vec", "graph": {"source": "g.txt", "sha256": "cd" * 32},
                       "walks": {"walk_length": 5, "p": 0.5, "q": 2.0, "crc32": 7}}
    model.checkpoint_every, model.schedule_anchor = "10k", (123.0, 0.015)
    pos = Position(epoch=1, chunks_done=2, words_done=17, words=[40, 17], pairs=[90, 30], losses=[2.0, 1.5],
                   alpha=0.02)
    model.save(tmp_path / "mid", position=pos)
    saved = model_io.load(tmp_path / "mid")
    assert saved.kind == "mid-epoch checkpoint" and saved.position == pos
    assert saved.graph_run == model.graph_run and saved.run_id == "r1"
    assert saved.checkpoint_every == "10k" and saved.schedule_anchor == (123.0, 0.015)
    back = Word2Vec.load(tmp_path / "mid")
    assert back.position == pos and back.graph_run == model.graph_run and back.saved_checkpoint_every == "10k"
    assert back.schedule_anchor == (123.0, 0.015) and back.epochs_trained == 1 and back.saved_at is not None
    # A position in another epoch than the epochs done is refused, naming model.json.
    meta = json.loads((tmp_path / "mid" / "model.json").read_text())
    meta["position"]["epoch"] = 2
    (tmp_path / "mid" / "model.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"mid/model.json: a mid-epoch checkpoint without a valid position"):
        model_io.load(tmp_path / "mid")


def test_checkpoints_resume_with_the_loader_it_is_given(tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    model = Word2Vec(sentences=SENTENCES, checkpoint_dir=ck, **SMALL | {"epochs": 2})
    saved, where, note = load_for_resume(ck, model_io.load)  # arrays and metadata, no Word2Vec built
    assert isinstance(saved, model_io.SavedModel) and where == ck / "checkpoint" and "latest checkpoint" in note
    np.testing.assert_array_equal(saved.vectors, model.wv.vectors)
    assert isinstance(Word2Vec.load(ck), Word2Vec)


# ---------------------------------------------------------------------- models written before model_io
OLD_DIRS = ["sg", "cbow_hs", "mid", "sharded"]


@pytest.mark.parametrize("name", OLD_DIRS)
def test_a_model_written_by_the_code_before_model_io_loads(tmp_path, name):
    src = OLD / name
    d = tmp_path / name
    shutil.copytree(src, d)
    vocab = json.loads((src / "vocab.json").read_text(encoding="utf-8"))
    model = Word2Vec.load(d)
    assert model.vocab.words == vocab["words"] and model.vocab.counts.tolist() == vocab["counts"]
    np.testing.assert_array_equal(model.wv.vectors, np.load(src / "vectors.npy"))
    np.testing.assert_array_equal(model.syn1neg, np.load(src / "syn1neg.npy"))
    assert model.config.dim == old.COMMON["vector_size"] and model.read_options.min_count == 1
    if name == "cbow_hs":
        assert not model.config.sg and model.config.hs
        np.testing.assert_array_equal(model.syn1, np.load(src / "syn1.npy"))
    if name == "mid":
        assert model.position == Position.from_json(old.POSITION) and model.graph_run == old.GRAPH_RUN
        assert model.run_id == old.RUN_ID and model.saved_checkpoint_every == "30"
        assert model.schedule_anchor == (60.0, 0.02) and model.epochs_trained == 1
    # Read and written again by model_io, it is the same directory: the same arrays and vocabulary bytes, the same
    # model.json but for when it was written (a sharded one gains what Word2Vec.save always wrote: checksums...).
    model_io.save(tmp_path / "again", model_io.load(d))
    for f in src.iterdir():
        if f.name != "model.json":
            assert (tmp_path / "again" / f.name).read_bytes() == f.read_bytes(), f.name
    before = json.loads((src / "model.json").read_text())
    after = json.loads((tmp_path / "again" / "model.json").read_text())
    if name == "sharded":
        assert "arrays" not in before and set(after["arrays"]) == {"vectors.npy", "syn1neg.npy"}
        assert all(after[k] == v for k, v in before.items())
    else:
        assert list(after) == list(before)
        assert {k: v for k, v in after.items() if k != "saved_at"} == {
            k: v for k, v in before.items() if k != "saved_at"}
    # The old checksums are checked (the sharded one has none: the reason for the test below).
    if name != "sharded":
        _flip_last_byte(d / "vectors.npy")
        with pytest.raises(CheckpointError, match=f"{d / 'vectors.npy'}: the array's checksum does not match"):
            Word2Vec.load(d)


# ---------------------------------------------------------------------- arrays moved in (written elsewhere first)
def _exported(tmp_path: Path, model: Word2Vec) -> tuple[Path, Path]:
    # What export_model leaves in the work directory: the two matrices as .npy files.
    work = tmp_path / "work"
    work.mkdir()
    np.save(work / "vectors.npy", model.wv.vectors)
    np.save(work / "syn1neg.npy", model.syn1neg)
    return work / "vectors.npy", work / "syn1neg.npy"


def test_moved_arrays_get_checksums_and_a_damaged_one_is_refused(tmp_path):
    model = Word2Vec(sentences=SENTENCES, **SMALL | {"algo": "classic"})
    vec, syn = _exported(tmp_path, model)
    out = tmp_path / "out"
    out.mkdir()  # the --save-model output reserves its directory first
    model_io.save(out, model_io.SavedModel(
        config=model.config, vocab=model.vocab, vectors=np.load(vec, mmap_mode="r"),
        syn1neg=np.load(syn, mmap_mode="r"), read_options=ReadOptions(min_count=1).__dict__, epochs_trained=1,
        corpus_words=model.corpus_words, raw_words=model.raw_words),
        move_files={model_io.VECTORS: vec, model_io.SYN1NEG: syn})
    assert not vec.exists() and not syn.exists()  # moved, not copied
    meta = json.loads((out / "model.json").read_text())
    assert meta["arrays"]["vectors.npy"]["crc32"] == zlib.crc32(model.wv.vectors.tobytes())
    assert meta["arrays"]["syn1neg.npy"]["crc32"] == zlib.crc32(model.syn1neg.tobytes())
    assert "vocab_crc32" in meta and sorted(p.name for p in out.iterdir()) == [
        "model.json", "syn1neg.npy", "vectors.npy", "vocab.json"]
    back = Word2Vec.load(out)
    np.testing.assert_array_equal(back.wv.vectors, model.wv.vectors)
    np.testing.assert_array_equal(back.syn1neg, model.syn1neg)
    _flip_last_byte(out / "syn1neg.npy")
    with pytest.raises(CheckpointError, match=f"{out / 'syn1neg.npy'}: the array's checksum does not match"):
        Word2Vec.load(out)


def test_moving_an_exported_array_in_checks_its_shape(tmp_path):
    model = Word2Vec(sentences=SENTENCES, **SMALL)
    vec, syn = _exported(tmp_path, model)
    np.save(syn, model.syn1neg[:-1])  # a row short: the export went wrong
    saved = model_io.SavedModel(model.config, model.vocab, np.load(vec, mmap_mode="r"), model.syn1neg)
    n = len(model.vocab)
    with pytest.raises(ValueError, match=rf"syn1neg.npy: float32 of shape \({n - 1}, 6\), expected float32 of "
                       rf"shape \({n}, 6\)"):
        model_io.save(tmp_path / "m", saved, move_files={model_io.VECTORS: vec, model_io.SYN1NEG: syn})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]  # no partial directory left
    assert syn.exists() and vec.exists()  # nothing was moved


def test_a_sharded_save_model_from_the_cli_is_verified_on_load(tmp_path):
    pytest.importorskip("ray")
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(s) for s in SENTENCES * 4) + "\n", encoding="utf-8")
    env = os.environ | {"RAY_USAGE_STATS_ENABLED": "0"}
    argv = [sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(tmp_path / "v.npy"), "--save-model",
            str(tmp_path / "model"), "--cluster", "local:2", "--mode", "sharded", "--shards", "1", "--clients", "1",
            "--threads", "1", "--dim", "8", "--epochs", "1", "--min-count", "1", "--window", "2", "--no-cache"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    # The sharded model format: each shard's column files and the vocabulary's partitions, with their CRC-32s
    model = tmp_path / "model"
    meta = json.loads((model / "model.json").read_text())
    assert meta["arrays"] == {} and [f["directory"] for f in meta["sharded"]["files"]] == ["shards/shard-0-of-1"]
    assert meta["sharded"]["vocab"]["directory"] == "vocab" and not (model / "vocab.json").exists()
    vectors, words, _ = load_npy(tmp_path / "v.npy")
    loaded = Word2Vec.load(model)
    np.testing.assert_array_equal(loaded.wv.vectors, vectors)
    assert loaded.wv.index_to_key == words
    part = model / "vocab" / "part-0.bytes.npy"
    data = part.read_bytes()
    _flip_last_byte(part)
    with pytest.raises(CheckpointError, match=f"{part}: its checksum does not match model.json"):
        Word2Vec.load(model)
    part.write_bytes(data)
    _flip_last_byte(model / "shards" / "shard-0-of-1" / "in.npy")
    with pytest.raises(CheckpointError, match=f"{model / 'shards' / 'shard-0-of-1' / 'in.npy'}: the array's checksum"):
        Word2Vec.load(model)


# ---------------------------------------------------------------------- import circles
def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of its code (TYPE_CHECKING blocks and functions too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def test_checkpoints_and_model_io_do_not_import_word2vec_nor_evaluation_keyedvectors():
    for name in ("checkpoints.py", "model_io.py"):
        assert "parvec.word2vec" not in _imports(SRC / name), name
    assert "parvec.keyedvectors" not in _imports(SRC / "evaluation.py")
