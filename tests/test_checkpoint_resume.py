"""Mid-epoch checkpoints and exact resume: a run killed with SIGKILL finishes bit for bit; every damaged
checkpoint, other corpus and conflicting flag (the cluster's too) is refused with a named error; the last two
kept; a directory that is no checkpoint is named with what it holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from sigkill import kill_after_first_mid_epoch_checkpoint

from parvec.checkpoints import EPOCH_END, latest_checkpoint, list_checkpoints, mid_name
from parvec.engine import parse_interval
from parvec.errors import CheckpointError, ParvecError
from parvec.word2vec import Word2Vec


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, demo_tokens):
    """The first 200k demo tokens, 100 words a line (about 20 chunks an epoch)."""
    path = tmp_path_factory.mktemp("ckcorpus") / "corpus.txt"
    words = demo_tokens[:200_000]
    path.write_text("\n".join(" ".join(words[i : i + 100]) for i in range(0, len(words), 100)) + "\n")
    return path


KW = dict(vector_size=16, epochs=2, workers=1, min_count=3, seed=7)
FLAGS = ["--dim", 16, "--epochs", 2, "--min-count", 3, "--seed", 7, "--no-cache"]


@pytest.fixture(scope="module")
def checkpointed(corpus, tmp_path_factory):
    """One 2-epoch, 1-thread run checkpointed every 40k words, and its uninterrupted twin's vectors."""
    ck = tmp_path_factory.mktemp("ckrun") / "ck"
    ck.mkdir()
    full = Word2Vec(corpus_file=corpus, **KW)
    model = Word2Vec(checkpoint_dir=ck, checkpoint_every="40k", **KW)
    saved = []
    model.on_checkpoint_saved = lambda path, pos, seconds: saved.append((path.name, pos))
    model.build_vocab(corpus_file=corpus)
    model.train(corpus_file=corpus)
    assert np.array_equal(model.wv.vectors, full.wv.vectors)  # checkpointing changes nothing
    return ck, full, saved


def test_parse_interval():
    assert parse_interval("30s") == ("seconds", 30.0)
    assert parse_interval("10m") == ("seconds", 600.0)
    assert parse_interval("1.5h") == ("seconds", 5400.0)
    assert parse_interval("50M") == ("words", 50e6)
    assert parse_interval("500k") == ("words", 500e3)
    assert parse_interval("2000000") == ("words", 2e6)
    for bad in ("", "10x", "-5m", "0", "m", "nan", True):
        with pytest.raises(ParvecError, match="checkpoint interval"):
            parse_interval(bad)


def test_keeps_the_last_two_mid_epoch_checkpoints_of_its_run(checkpointed, corpus, tmp_path):
    ck, _, saved = checkpointed
    mids = [name for name, pos in saved if pos is not None]
    assert len(mids) >= 6 and sum(name == EPOCH_END for name, _ in saved) == 2
    on_disk = sorted(p.name for p in ck.iterdir())
    assert on_disk == sorted([*mids[-2:], EPOCH_END])
    # Another run's checkpoints in the same directory are not this run's to remove.
    ck2 = tmp_path / "ck"
    shutil.copytree(ck, ck2)
    foreign = ck2 / mid_name(0, 1)
    shutil.copytree(ck2 / mids[-1], foreign)
    meta = json.loads((foreign / "model.json").read_text())
    meta["run_id"] = "someone-else"
    (foreign / "model.json").write_text(json.dumps(meta))
    model = Word2Vec(checkpoint_dir=ck2, checkpoint_every="40k", **KW)
    model.build_vocab(corpus_file=corpus)
    model.train(corpus_file=corpus)
    names = {p.name for p in ck2.iterdir()}
    assert foreign.name in names and len([n for n in names if n.startswith("mid-")]) == 3
    assert latest_checkpoint(ck2).name == EPOCH_END
    assert Word2Vec.load(ck2).epochs_trained == KW["epochs"]  # a checkpoint directory loads its latest


def test_api_resume_from_every_checkpoint_is_bit_identical(checkpointed, corpus):
    ck, full, _ = checkpointed
    found = list_checkpoints(ck)
    assert any(f.chunks_done for f in found)
    for f in found:
        model = Word2Vec.load(f.path)
        assert model.workers == 1  # the saved thread count
        stats = model.train(corpus_file=corpus, resume=True)
        assert np.array_equal(model.wv.vectors, full.wv.vectors), f.path.name
        assert np.array_equal(model.syn1neg, full.syn1neg), f.path.name
        if f.chunks_done:  # the partial epoch's loss covers the whole epoch, as uninterrupted
            assert stats.loss_per_epoch == full.stats.loss_per_epoch[f.epoch:]
            assert stats.words < full.stats.words_per_epoch[f.epoch] * (KW["epochs"] - f.epoch)


def test_sigkill_mid_epoch_then_resume_gives_the_same_bytes(corpus, tmp_path, capsys):
    # 16 epochs of 200k words, a checkpoint every 40k words (4 an epoch, whatever the machine's speed: an
    # interval in seconds longer than an epoch would give epoch-end checkpoints only, as on a fast machine)
    flags = [*FLAGS, "--epochs", 16, "--threads", 1]
    code, _, err = run(["train", corpus, *flags, "-o", tmp_path / "full.txt"], capsys)
    assert code == 0, err
    ck, interval, every = tmp_path / "ck", 0.25, "40k"
    killed_at = kill_after_first_mid_epoch_checkpoint(
        ["train", corpus, *flags, "-o", tmp_path / "killed.txt", "--checkpoint-dir", ck, "--checkpoint-every", every],
        interval)
    assert not (tmp_path / "killed.txt").exists()
    code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "resumed.txt", "--resume", ck], capsys)
    assert code == 0, err
    assert "threads: 1, as the checkpoint was trained" in err
    where = next(line for line in err.splitlines() if line.startswith("resuming "))
    resumed_from = Path(where.split()[1].rstrip(":"))
    assert resumed_from.parent == ck
    # The work lost is what followed the checkpoint: the kill came at most 1.6 x 0.25 s after a checkpoint was
    # printed, plus the chunk that crossed it and the time to write one (a shared machine: 1 s for both).
    lost_line = next(line for line in err.splitlines() if line.startswith("lost: the training after this checkpoint"))
    saved_at = float(lost_line.split("(saved_at ")[1].split(")")[0])
    lost = killed_at - saved_at
    assert 0 <= lost <= interval + 1.0, lost
    assert (tmp_path / "resumed.txt").read_bytes() == (tmp_path / "full.txt").read_bytes()


def _damage(path: Path, how: str) -> None:
    if how == "missing vectors":
        (path / "vectors.npy").unlink()
    elif how == "truncated syn1neg":
        data = (path / "syn1neg.npy").read_bytes()
        (path / "syn1neg.npy").write_bytes(data[: len(data) // 2])
    elif how == "altered vectors":
        data = bytearray((path / "vectors.npy").read_bytes())
        data[-5] ^= 0xFF
        (path / "vectors.npy").write_bytes(bytes(data))
    elif how == "bad json":
        (path / "model.json").write_text('{"format": "parvec-word2vec", "config": {')
    elif how == "missing position":
        meta = json.loads((path / "model.json").read_text())
        del meta["position"]
        (path / "model.json").write_text(json.dumps(meta))
    elif how == "missing model.json":
        (path / "model.json").unlink()
    elif how == "missing vocab":
        (path / "vocab.json").unlink()
    elif how == "missing config":
        meta = json.loads((path / "model.json").read_text())
        del meta["config"]
        (path / "model.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("how", ["missing vectors", "truncated syn1neg", "altered vectors", "bad json",
                                 "missing position", "missing vocab", "missing config", "missing model.json"])
def test_a_damaged_checkpoint_is_named_and_the_previous_one_offered(checkpointed, corpus, tmp_path, capsys, how):
    ck = tmp_path / "ck"
    shutil.copytree(checkpointed[0], ck)
    newest = list_checkpoints(ck)[-2]  # the newest mid-epoch one (the epoch-end one sorts last)
    older = list_checkpoints(ck)[-3]
    assert newest.chunks_done and older.chunks_done
    _damage(newest.path, how)
    with pytest.raises(CheckpointError, match=str(older.path)):
        Word2Vec.load(newest.path)
    code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "v.txt", "--resume", newest.path], capsys)
    assert code == 2 and "Traceback" not in err
    assert str(newest.path) in err and f"--resume {older.path}" in err
    assert not (tmp_path / "v.txt").exists()
    if how != "bad json":
        return
    # The offered one works.
    code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "v.txt", "--resume", older.path], capsys)
    assert code == 0, err


def test_a_different_corpus_is_refused(checkpointed, corpus, tmp_path, capsys):
    ck = checkpointed[0]
    other = tmp_path / "other.txt"
    other.write_text("".join(corpus.read_text().splitlines(keepends=True)[:-5]))  # five lines short
    newest = list_checkpoints(ck)[-2]
    code, _, err = run(["train", other, "--no-cache", "-o", tmp_path / "v.txt", "--resume", newest.path], capsys)
    assert code == 2 and "not the one the checkpoint was trained on" in err and "Traceback" not in err
    model = Word2Vec.load(newest.path)
    with pytest.raises(ParvecError, match="not the one the checkpoint was trained on"):
        model.train(corpus_file=other, resume=True)


@pytest.mark.parametrize("flags, message", [
    (["--dim", 32], "--dim 32 (the checkpoint has 16)"),
    (["--min-count", 1], "--min-count 1 (the checkpoint has 3)"),
    (["--window", 2, "--seed", 9], "--window 2 (the checkpoint has 5); --seed 9 (the checkpoint has 7)"),
    (["--epochs", 1], "--epochs 1: it has already begun 2 of its 2 epochs"),
])
def test_conflicting_flags_are_refused(checkpointed, corpus, tmp_path, capsys, flags, message):
    newest = list_checkpoints(checkpointed[0])[-2]
    assert newest.epoch == 1 and newest.chunks_done
    code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "v.txt", "--resume", newest.path, *flags],
                       capsys)
    assert code == 2 and message in err and "Traceback" not in err


def test_same_values_threads_and_more_epochs_are_applied_and_said(checkpointed, corpus, tmp_path, capsys):
    newest = list_checkpoints(checkpointed[0])[-2]
    ck = tmp_path / "ck"
    code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "v.txt", "--resume", newest.path,
                        "--dim", 16, "--threads", 2, "--epochs", 3, "--checkpoint-dir", ck, "--report",
                        tmp_path / "r.json"], capsys)
    assert code == 0, err
    assert "--threads 2 overrides the checkpoint's 1" in err
    assert "--epochs 3 (the checkpoint planned 2)" in err
    report = json.loads((tmp_path / "r.json").read_text())
    assert len(report["loss_per_epoch"]) == 2  # the rest of epoch 2, and epoch 3
    assert report["resumed_from"]["position"]["chunks_done"] == newest.chunks_done
    assert Word2Vec.load(ck / EPOCH_END).epochs_trained == 3


def test_more_epochs_keeps_the_learning_rate_continuous(checkpointed, corpus):
    newest = list_checkpoints(checkpointed[0])[-2]
    model = Word2Vec.load(newest.path)
    alpha_there = model.position.alpha
    seen = []
    model.train(corpus_file=corpus, resume=True, epochs=4,
                callbacks=[lambda m, e, s: seen.append(m.learning_rate_schedule().alpha_at((e + 1) * m.corpus_words))])
    w0, a0 = model.schedule_anchor
    assert a0 == pytest.approx(alpha_there, rel=1e-6)
    assert seen[0] < a0 and seen[-1] == pytest.approx(model.config.final_alpha)
    with pytest.raises(ParvecError, match="already begun 2 epoch"):
        Word2Vec.load(newest.path).train(corpus_file=corpus, resume=True, epochs=1)


def test_several_threads_checkpoint_and_resume(corpus, tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    model = Word2Vec(checkpoint_dir=ck, checkpoint_every="30k", **(KW | {"workers": 2}))
    model.build_vocab(corpus_file=corpus)
    full = model.train(corpus_file=corpus)
    mid = [f for f in list_checkpoints(ck) if f.chunks_done][-1]
    resumed = Word2Vec.load(mid.path)
    assert resumed.workers == 2
    stats = resumed.train(corpus_file=corpus, resume=True)
    # Hogwild differs run to run; the loss of the last epoch is that of the same training.
    assert stats.loss_per_epoch[-1] == pytest.approx(full.loss_per_epoch[-1], rel=0.02)
    assert np.isfinite(resumed.wv.vectors).all()


def test_checkpoint_every_needs_a_directory(corpus, tmp_path, capsys):
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.txt", "--checkpoint-every", "1m"], capsys)
    assert code == 2 and "--checkpoint-every needs --checkpoint-dir" in err
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.txt", "--checkpoint-dir", tmp_path / "ck",
                        "--checkpoint-every", "ten minutes"], capsys)
    assert code == 2 and "checkpoint interval must be" in err
    with pytest.raises(ParvecError, match="checkpoint_every needs checkpoint_dir"):
        Word2Vec(corpus_file=corpus, checkpoint_every="10m", **KW)
    for command in ("deepwalk", "node2vec"):
        code, _, err = run([command, tmp_path / "g.txt", "-o", tmp_path / "e.txt", "--checkpoint-every", "1m"],
                           capsys)
        assert code == 2 and "--checkpoint-every needs --checkpoint-dir" in err  # tests/graph/test_graph_checkpoints.py


# ---------------------------------------------------------------------- where the run trained; not a checkpoint
def test_a_checkpoint_records_where_it_trained_and_resume_refuses_another_place(checkpointed, corpus, tmp_path,
                                                                               capsys):
    newest = list_checkpoints(checkpointed[0])[-2]
    assert json.loads((newest.path / "model.json").read_text())["cluster"] is None  # this process
    code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "v.txt", "--resume", newest.path,
                        "--cluster", "local:2"], capsys)
    assert code == 2 and "Traceback" not in err
    assert ("--cluster local:2 (the checkpoint was trained in this process, without --cluster: its position and "
            "learning rate are this process's)") in err.strip().splitlines()[-1]
    # A replicas run's checkpoint (its record as a replicas run writes it): another --replicas or --mode is refused
    # in one line naming both values, before Ray starts.
    replicas = tmp_path / "replicas-ck"
    shutil.copytree(newest.path, replicas)
    meta = json.loads((replicas / "model.json").read_text())
    meta["cluster"] = {"spec": "local:2", "mode": "replicas", "replicas": 2, "threads_per_actor": 1,
                       "sync_words": 200000, "min_sync_words": 1024, "full_sync_times": 0, "sync_overlap": True,
                       "alpha_scale": "linear"}
    (replicas / "model.json").write_text(json.dumps(meta))
    for flags, message in ((["--replicas", 4], "--replicas 4 (the checkpoint has 2: --cluster local:2 --mode "
                                               "replicas --replicas 2 --threads 1)"),
                           (["--mode", "sharded"], "--mode sharded (the checkpoint has replicas: --cluster local:2"),
                           (["--cluster", "local:2", "--sync-words", 5000], "--sync-words 5000 (the checkpoint has "
                                                                            "200000")):
        code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "v.txt", "--resume", replicas, *flags],
                           capsys)
        last = err.strip().splitlines()[-1]
        assert code == 2 and last.startswith(f"parvec: error: cannot resume {replicas} with different training "
                                             "flags: ") and message in last, last
    # A checkpoint that records no cluster (written before it was recorded) is not a sharded run's: --mode sharded
    # cannot resume it (refused before Ray starts).
    unrecorded = tmp_path / "unrecorded-ck"
    shutil.copytree(newest.path, unrecorded)
    meta.pop("cluster")
    (unrecorded / "model.json").write_text(json.dumps(meta))
    code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "v.txt", "--resume", unrecorded,
                        "--cluster", "local:2", "--mode", "sharded"], capsys)
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"parvec: error: --resume {unrecorded} is not a sharded run's checkpoint: resume it without --mode sharded "
        "(it trains where it was trained)")
    from parvec.distributed import cluster_from_record

    model = Word2Vec.load(replicas)
    assert model.saved_cluster is not None and model.saved_cluster.replicas == 2
    assert model.cluster is None  # loaded: trains nowhere until asked
    model.cluster = cluster_from_record(model.saved_cluster.with_settings(replicas=1))
    with pytest.raises(ParvecError, match=r"replicas 1 \(the checkpoint's 2\)"):
        model.train(corpus_file=corpus, resume=True)


def test_resume_of_a_replicas_checkpoint_restores_its_threads_per_replica(checkpointed, corpus, tmp_path, capsys):
    # A replicas run left to fit its threads (workers=2 on 2 CPUs: 2 replicas x 1 thread) records the 1 thread each
    # replica ran; resumed, that is what it says and restores, and --threads 1 (the same value) is no override.  Its
    # epochs are all done: nothing trains, Ray never starts.
    done = tmp_path / "replicas-done"
    shutil.copytree(checkpointed[0] / EPOCH_END, done)
    meta = json.loads((done / "model.json").read_text())
    meta["config"]["threads"] = 2
    meta["cluster"] = {"spec": "local:2", "mode": "replicas", "replicas": 2, "threads_per_actor": 1,
                       "sync_words": 200000, "min_sync_words": 1024, "full_sync_times": 0, "sync_overlap": True,
                       "alpha_scale": "linear"}
    (done / "model.json").write_text(json.dumps(meta))
    for flags in ([], ["--threads", 1]):
        code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "v.txt", "--resume", done, *flags],
                           capsys)
        assert code == 0, err
        assert "threads: 1 per replica, as the checkpoint was trained (--threads overrides)" in err.splitlines(), err
        assert "threads: 2" not in err and "overrides the checkpoint's" not in err
    # A checkpoint that recorded no threads per replica (fitted again to the cluster's CPUs) says so.
    meta["cluster"]["threads_per_actor"] = None
    (done / "model.json").write_text(json.dumps(meta))
    code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "v.txt", "--resume", done], capsys)
    assert code == 0 and ("threads: fitted to the cluster's CPUs for each replica (at most 2), as the checkpoint was "
                          "trained (--threads N per replica overrides)") in err.splitlines(), err


def test_resume_of_a_directory_that_is_no_checkpoint_says_what_it_holds(corpus, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    files = tmp_path / "files"
    (files / "sub").mkdir(parents=True)
    (files / "notes.txt").write_text("x")
    # What a sharded run left before sharded runs wrote checkpoints: the shards' snapshots and their manifest only.
    old = tmp_path / "ckS"
    for s in range(2):
        snap = old / "shards" / f"shard-{s}-of-2" / "snap-3"
        snap.mkdir(parents=True)
        np.save(snap / "in.npy", np.zeros((3, 4), np.float32))
    (old / "shards" / "manifest.json").write_text("{}")
    for where, holds in ((tmp_path / "nowhere", "there is no such file or directory"),
                         (empty, "the directory is empty"),
                         (files, "it holds notes.txt, sub/"),
                         (old, "it holds a sharded run's shard snapshots (shard-0-of-2/snap-3, shard-1-of-2/snap-3 "
                               f"in {old / 'shards'}) but no checkpoint naming them")):
        code, _, err = run(["train", corpus, "--no-cache", "-o", tmp_path / "v.txt", "--resume", where], capsys)
        last = err.strip().splitlines()[-1]
        assert code == 2 and last.startswith(f"parvec: error: {where}: not a parvec model directory (no model.json): "
                                             f"{holds}"), last


def test_a_sharded_resume_keeps_the_update_cap_it_trained_with() -> None:
    # the cap decides what a minibatch's adjust computes: a resumed run takes the checkpoint's (0 for a checkpoint
    # written before the setting, which summed every update), and another value given is refused
    from parvec.cli.resume import restore_cluster
    from parvec.cluster_record import ClusterRecord

    saved = {"spec": "local:2", "mode": "sharded", "shards": 2, "clients": 1, "update_cap": 4}
    record = ClusterRecord.from_json(saved)
    values = {"cluster": None, "cluster_mode": "sharded", "update_cap": None, "threads": 1}
    restored = restore_cluster(values, record, True, frozenset())
    assert restored.conflicts == ()
    assert dict(restored.flags)["update_cap"] == 4
    old = ClusterRecord.from_json({k: v for k, v in saved.items() if k != "update_cap"})
    assert dict(restore_cluster(values, old, True, frozenset()).flags)["update_cap"] == 0
    values = {"cluster": None, "cluster_mode": "sharded", "update_cap": 16, "threads": 1}
    conflicts = restore_cluster(values, record, True, frozenset({"update_cap"})).conflicts
    assert len(conflicts) == 1 and conflicts[0].startswith("--update-cap 16 (the checkpoint has 4")
