"""Checkpoints and exact resume of ``parvec node2vec`` / ``deepwalk``: a run killed with SIGKILL
finishes with the uninterrupted run's bytes; another graph, conflicting walk or training flags and the wrong
kind of checkpoint are refused with a named error (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from sigkill import kill_after_first_mid_epoch_checkpoint

from parvec.checkpoints import EPOCH_END, list_checkpoints
from parvec.errors import ParvecError
from parvec.graph.node2vec import DeepWalk, Node2Vec
from parvec.word2vec import Word2Vec

KW = dict(dimensions=16, walk_length=20, num_walks=4, window=5, p=0.5, q=2.0, epochs=2, workers=1, seed=3,
          algo="classic")
FLAGS = ["--dimensions", 16, "--walk-length", 20, "--num-walks", 4, "--window-size", 5, "--p", 0.5, "--q", 2,
         "--workers", 1, "--seed", 3, "--algo", "classic", "--quiet"]




@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """A random graph of 2000 string-named nodes and 8000 edges (160k walk tokens an epoch: 16 chunks in 4
    batches), plus a node with only a self-loop (it learns nothing and keeps its initial vector)."""
    rng = np.random.default_rng(0)
    u, v = rng.integers(0, 2000, 8000), rng.integers(0, 2000, 8000)
    path = tmp_path_factory.mktemp("ckgraph") / "g.txt"
    path.write_text("".join(f"n{a} n{b}\n" for a, b in zip(u.tolist(), v.tolist(), strict=True)) + "alone alone\n")
    return path


@pytest.fixture(scope="module")
def checkpointed(graph, tmp_path_factory):
    """One 2-epoch, 1-thread node2vec run checkpointed every 30k walk tokens, and its uninterrupted twin."""
    ck = tmp_path_factory.mktemp("ckn2v") / "ck"
    ck.mkdir()
    full = Node2Vec(graph, **KW)
    full_vectors = full.fit_vectors()
    model = Node2Vec(graph, checkpoint_dir=ck, checkpoint_every="30k", **KW)
    saved = []
    model.on_checkpoint_saved = lambda path, pos, seconds: saved.append((path.name, pos))
    assert np.array_equal(model.fit_vectors(), full_vectors)  # checkpointing changes nothing
    return ck, full, full_vectors, saved


def test_checkpoints_are_model_directories_that_identify_the_walks(checkpointed, graph):
    ck, full, _, saved = checkpointed
    mids = [name for name, pos in saved if pos is not None]
    assert len(mids) >= 8 and sum(name == EPOCH_END for name, _ in saved) == 2
    assert sorted(p.name for p in ck.iterdir()) == sorted([*mids[-2:], EPOCH_END])  # the last two kept
    meta = json.loads((ck / mids[-1] / "model.json").read_text())
    run_ = meta["graph_run"]
    assert run_["command"] == "node2vec" and run_["graph"]["sha256"] == full.graph.fingerprint()
    assert run_["walks"] | {"crc32": 0} == {"walk_length": 20, "num_walks": 4, "p": 0.5, "q": 2.0, "seed": 3,
                                           "batch_walks": full.batch_walks, "tokens": full.n_tokens, "crc32": 0}
    assert run_["walks"]["crc32"] == full.walks_crc32
    # The vocabulary is the node ranking: a checkpoint loads as a Word2Vec whose words are the node IDs.
    model = Word2Vec.load(ck / mids[-1])
    assert model.wv.index_to_key == full.keyed_arrays()[1]
    assert model.position.epoch == 1 and model.position.chunks_done > 0


def test_api_resume_from_every_checkpoint_is_bit_identical(checkpointed, graph, tmp_path):
    ck, full, full_vectors, _ = checkpointed
    found = list_checkpoints(ck)
    assert any(f.chunks_done for f in found)
    alone = full.graph.index["alone"]
    for f in found:
        copy = tmp_path / f.path.name
        shutil.copytree(ck, copy)  # the resumed run checkpoints beside the one it resumes
        model = Node2Vec.from_checkpoint(copy / f.path.name, graph)
        assert model.config.threads == 1 and model.checkpoint_dir == copy and model.checkpoint_every == "30k"
        vectors = model.fit_vectors()
        assert np.array_equal(vectors, full_vectors), f.path.name
        assert np.array_equal(vectors[alone], full_vectors[alone])
        if f.chunks_done:  # the resumed epoch's loss covers all of it, as the uninterrupted run's
            assert model.train_stats.loss_per_epoch == full.train_stats.loss_per_epoch[f.epoch:]
            assert model.train_stats.words < full.train_stats.words_per_epoch[f.epoch] * (KW["epochs"] - f.epoch)
    assert not full.timings["walks_cached"]  # these runs regenerated the walks every epoch; kept in memory:
    newest = tmp_path / "cached"
    shutil.copytree(ck, newest)
    model = Node2Vec.from_checkpoint(newest / found[-2].path.name, graph)
    model.cache_walks_mb = 100.0
    assert np.array_equal(model.fit_vectors(), full_vectors) and model.timings["walks_cached"]


def test_sigkill_mid_epoch_then_resume_gives_the_same_bytes(graph, tmp_path, capsys):
    # 12 epochs of 160k walk tokens, a checkpoint every 30k tokens (5 an epoch, whatever the machine's speed)
    flags = [*FLAGS, "--epochs", 12]
    code, _, err = run(["node2vec", graph, *flags, "-o", tmp_path / "full.txt"], capsys)
    assert code == 0, err
    ck, interval = tmp_path / "ck", 0.25
    killed_at = kill_after_first_mid_epoch_checkpoint(
        ["node2vec", graph, *flags, "-o", tmp_path / "killed.txt", "--checkpoint-dir", ck, "--checkpoint-every", "30k"],
        interval)
    assert not (tmp_path / "killed.txt").exists()
    code, _, err = run(["node2vec", graph, "-o", tmp_path / "resumed.txt", "--resume", ck, "--quiet"], capsys)
    assert code == 0, err
    assert "threads: 1, as the checkpoint was trained" in err
    resumed_from = Path(next(x for x in err.splitlines() if x.startswith("resuming ")).split()[1].rstrip(":"))
    assert resumed_from.parent == ck
    # The work lost is what followed the checkpoint: at most 1.6 x 0.25 s after a checkpoint was printed, plus
    # the chunk that crossed it and the time to write one (a shared machine: 1 s for both).
    lost_line = next(x for x in err.splitlines() if x.startswith("lost: the training after this checkpoint"))
    lost = killed_at - float(lost_line.split("(saved_at ")[1].split(")")[0])
    assert 0 <= lost <= interval + 1.0, lost
    assert (tmp_path / "resumed.txt").read_bytes() == (tmp_path / "full.txt").read_bytes()


def test_a_different_graph_is_refused(checkpointed, graph, tmp_path, capsys):
    newest = list_checkpoints(checkpointed[0])[-2]
    lines = graph.read_text().splitlines(keepends=True)
    other = tmp_path / "other.txt"
    other.write_text("".join(lines[:-10] + lines[-1:]))  # nine edges fewer
    code, _, err = run(["node2vec", other, "-o", tmp_path / "e.txt", "--resume", newest.path], capsys)
    assert code == 2 and "Traceback" not in err
    assert f"{other}: not the graph the checkpoint was trained on" in err and str(newest.path) in err
    assert not (tmp_path / "e.txt").exists()
    # The same edges with weights: another graph to walk on; --weighted against an unweighted checkpoint.
    weighted = tmp_path / "w.txt"
    weighted.write_text("".join(x.rstrip("\n") + " 2\n" for x in lines))
    code, _, err = run(["node2vec", weighted, "-o", tmp_path / "e.txt", "--resume", newest.path, "--weighted"],
                       capsys)
    assert code == 2 and "--weighted/--unweighted True (the checkpoint has False)" in err
    with pytest.raises(ParvecError, match="not the graph the checkpoint was trained on"):
        Node2Vec.from_checkpoint(newest.path, other)


@pytest.mark.parametrize("flags, message", [
    (["--p", 0.25], "--p 0.25 (the checkpoint has 0.5)"),
    (["--q", 1, "--p", 0.5], "--q 1.0 (the checkpoint has 2.0)"),
    (["--walk-length", 40, "--num-walks", 2],
     "--walk-length 40 (the checkpoint has 20); --num-walks 2 (the checkpoint has 4)"),
    (["--dimensions", 32, "--seed", 4], "--dimensions 32 (the checkpoint has 16); --seed 4 (the checkpoint has 3)"),
    (["--batch-walks", 7], "--batch-walks 7 (the checkpoint has"),
    (["--ns-exponent", 0.75], "--ns-exponent 0.75 (the checkpoint has 0.25)"),
    (["--epochs", 1], "epochs=1: the checkpoint has already begun 2 epoch(s) of 2"),
])
def test_conflicting_flags_are_refused(checkpointed, graph, tmp_path, capsys, flags, message):
    newest = list_checkpoints(checkpointed[0])[-2]
    assert newest.epoch == 1 and newest.chunks_done
    code, _, err = run(["node2vec", graph, "-o", tmp_path / "e.txt", "--resume", newest.path, *flags], capsys)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "e.txt").exists()


def test_the_wrong_kind_of_checkpoint_is_refused(checkpointed, graph, tmp_path, capsys):
    ck = checkpointed[0]
    code, _, err = run(["deepwalk", graph, "-o", tmp_path / "e.txt", "--resume", ck], capsys)
    assert code == 2 and "a checkpoint of a node2vec run (p=0.5, q=2.0), not of DeepWalk" in err
    code, _, err = run(["train", graph, "-o", tmp_path / "v.txt", "--resume", ck, "--no-cache"], capsys)
    assert code == 2 and f"is a checkpoint of a `parvec node2vec` run on {graph}" in err
    with pytest.raises(ParvecError, match="resume it with `parvec node2vec"):
        Word2Vec.load(ck).train(corpus_file=graph, resume=True)
    words = Word2Vec(sentences=[["a", "b", "c"]] * 20, min_count=1, vector_size=8, workers=1, epochs=1, sample=0)
    words.save(tmp_path / "words")
    code, _, err = run(["node2vec", graph, "-o", tmp_path / "e.txt", "--resume", tmp_path / "words"], capsys)
    assert code == 2 and "a checkpoint of `parvec train` (words), not of a node2vec/DeepWalk run" in err
    code, _, err = run(["node2vec", graph, "-o", tmp_path / "e.txt", "--checkpoint-every", "1m"], capsys)
    assert code == 2 and "--checkpoint-every needs --checkpoint-dir" in err
    with pytest.raises(ParvecError, match="checkpoint_every needs checkpoint_dir"):
        Node2Vec(graph, checkpoint_every="1m", **KW)


def test_deepwalk_threads_and_more_epochs_are_applied_and_said(graph, tmp_path, capsys):
    ck = tmp_path / "ck"
    flags = FLAGS[:8] + FLAGS[12:]  # without --p and --q
    assert "--p" not in flags and "--q" not in flags and "--workers" in flags
    code, _, err = run(["deepwalk", graph, *flags, "--epochs", 2, "-o", tmp_path / "a.txt", "--checkpoint-dir", ck,
                        "--checkpoint-every", "40k"], capsys)
    assert code == 0, err
    mid = [f for f in list_checkpoints(ck) if f.chunks_done][-1]
    assert json.loads((mid.path / "model.json").read_text())["graph_run"]["command"] == "deepwalk"
    ck2 = tmp_path / "ck2"
    code, _, err = run(["deepwalk", graph, "-o", tmp_path / "b.txt", "--resume", mid.path, "--workers", 2,
                        "--epochs", 3, "--checkpoint-dir", ck2, "--report", tmp_path / "r.json", "--quiet"], capsys)
    assert code == 0, err
    assert "--workers 2 overrides the checkpoint's 1" in err
    assert "--epochs 3: the learning rate now decays from its value at the checkpoint" in err
    report = json.loads((tmp_path / "r.json").read_text())
    assert len(report["loss_per_epoch"]) == 2  # the rest of epoch 2, and epoch 3
    assert report["resumed_from"]["position"]["chunks_done"] == mid.chunks_done
    assert report["checkpoints"]["epoch_end_checkpoints"] == 2
    assert Word2Vec.load(ck2 / EPOCH_END).epochs_trained == 3
    resumed = DeepWalk.from_checkpoint(ck2, graph)
    assert resumed.config.epochs == 3 and resumed.resumed_from.schedule_anchor is not None


def test_a_graph_run_resumed_with_more_epochs_records_its_schedules_learning_rate(graph, tmp_path):
    """The report's per-epoch learning rate of a resumed run whose epochs changed is its schedule's: the rate at
    the checkpoint decaying to the final rate at the new end (the run engine's), not a fresh schedule's."""
    from parvec.runlog import RunLog
    from parvec.schedule import Schedule

    ck, after_one = tmp_path / "ck", tmp_path / "after-one"
    ck.mkdir()
    model = Node2Vec(graph, checkpoint_dir=ck, **KW)

    def keep_the_first(path, pos, seconds):
        if pos is None and not after_one.exists():
            shutil.copytree(path, after_one)

    model.on_checkpoint_saved = keep_the_first
    model.fit()
    resumed = Node2Vec.from_checkpoint(after_one, graph, epochs=4)
    resumed.run_log = RunLog(interval_s=60.0)
    resumed.fit()
    cfg = resumed.config
    planned = Schedule(cfg.alpha, cfg.final_alpha, resumed.n_tokens, KW["epochs"])
    schedule = planned.resumed_with(4, resumed.n_tokens)  # continued after epoch 1, to 4 epochs in all
    records = resumed.run_log.epochs
    assert [r.epoch for r in records] == [2, 3, 4]
    assert [r.lr for r in records] == [schedule.epoch_end_alpha(e) for e in (1, 2, 3)]
    assert records[0].lr < planned.epoch_end_alpha(0) * 0.7  # below a fresh 4-epoch schedule's 0.0125
