"""A sharded run (``--mode sharded``) is resumable: every consistent snapshot of the shards is checkpointed in
``--checkpoint-dir`` (a model directory naming each shard's column files), and ``--resume`` restores every shard
and goes on.  At one client thread the resumed run's vectors are bit for bit the uninterrupted run's: after the
CLI process is killed with SIGKILL (resumed from an epoch's end), and after a run stopped mid-epoch (resumed from a
snapshot inside the epoch)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from fault_tools import descendants_titled
from topic_corpus import three_topic_sentences

from parvec import model_io
from parvec.checkpoints import EPOCH_END, latest_checkpoint, list_checkpoints, mid_name
from parvec.config import TrainConfig
from parvec.corpus import ReadOptions
from parvec.distributed import Cluster
from parvec.errors import CheckpointError
from parvec.formats import load_npy
from parvec.word2vec import Word2Vec

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("ray_session")


# One client thread: every run trains the same minibatches in the same order (the bit-for-bit condition).
FLAGS = ["--cluster", "local:2", "--mode", "sharded", "--shards", "2", "--clients", "1", "--threads", "1",
         "--minibatch-words", "128", "--dim", "16", "--epochs", "4", "--min-count", "1", "--no-cache"]


@pytest.mark.ray
def test_a_sharded_run_killed_with_sigkill_resumes_bit_for_bit_without_repeating_its_flags(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(s) for s in three_topic_sentences(3000, seed=21)) + "\n", encoding="utf-8")
    full, ck_full = tmp_path / "full.npy", tmp_path / "ckA"
    code, _, err = run(["train", corpus, "-o", full, *FLAGS, "--checkpoint-dir", ck_full], capsys)
    assert code == 0, err[-3000:]
    # A completed run leaves a checkpoint (not only the shards' snapshots): the last epoch's end, naming them.
    assert "snapshots: 4 consistent snapshots of the shards" in err and f"checkpointed as {ck_full / EPOCH_END}" in err
    assert [f.path.name for f in list_checkpoints(ck_full)] == [EPOCH_END]
    meta = json.loads((ck_full / EPOCH_END / "model.json").read_text())
    assert meta["epochs_trained"] == 4 and meta["arrays"] == {} and len(meta["sharded"]["files"]) == 2
    assert meta["cluster"]["mode"] == "sharded" and meta["cluster"]["shards"] == 2
    vectors, words, _ = load_npy(full)

    # The same run in its own process (its own local Ray), killed with SIGKILL once its first checkpoint exists.
    ck = tmp_path / "ckB"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.Popen([sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(tmp_path / "k.npy"),
                             *FLAGS, "--checkpoint-dir", str(ck)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    ray_processes: list[int] = []
    try:
        deadline = time.monotonic() + 400
        while not (ck / EPOCH_END / "model.json").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        ray_processes = descendants_titled("", proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        for pid in [proc.pid, *ray_processes]:  # the killed run's own Ray, left behind by its driver
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it was killed"
    assert not (tmp_path / "k.npy").exists()
    killed_at = json.loads((ck / EPOCH_END / "model.json").read_text())["epochs_trained"]
    assert 1 <= killed_at < 4

    # --resume DIR alone: the cluster, the training flags and the checkpoint directory are the checkpoint's.
    resumed = tmp_path / "resumed.npy"
    code, _, err = run(["train", corpus, "-o", resumed, "--no-cache", "--resume", ck], capsys)
    assert code == 0, err[-3000:]
    assert ("cluster: --cluster local:2 --mode sharded --shards 2 --clients 1 --threads 1, as the checkpoint was "
            "trained") in err
    assert f"resuming {ck / EPOCH_END}: {killed_at} of 4 epochs done" in err
    assert "every shard restored its columns from the checkpoint's snapshot" in err
    got, got_words, _ = load_npy(resumed)
    assert got_words == words and np.array_equal(got, vectors)
    assert json.loads((ck / EPOCH_END / "model.json").read_text())["epochs_trained"] == 4  # checkpointed on

    # The finished run's checkpoint: nothing left to train, the same vectors written from its snapshot.
    again = tmp_path / "again.npy"
    code, _, err = run(["train", corpus, "-o", again, "--no-cache", "--resume", ck_full], capsys)
    assert code == 0 and "nothing left to train: the checkpoint holds all 4 epochs" in err, err[-3000:]
    assert np.array_equal(load_npy(again)[0], vectors)
    # Python reads it as a model: the matrices assembled from the shards' column files.
    model = Word2Vec.load(ck_full)
    assert model.wv.index_to_key == words and np.array_equal(model.wv.vectors, vectors)
    assert model.saved_cluster is not None and model.saved_cluster.mode == "sharded" and model.epochs_trained == 4

    # Another input is refused, naming the difference; so is a damaged shard file (its CRC-32), naming it.
    other = tmp_path / "other.txt"
    other.write_text("\n".join(" ".join(s) for s in three_topic_sentences(3000, seed=22)) + "\n", encoding="utf-8")
    code, _, err = run(["train", other, "-o", tmp_path / "o.npy", "--no-cache", "--resume", ck_full], capsys)
    assert code == 2 and f"cannot resume {ck_full / EPOCH_END}: {other} is not the input the checkpoint was " \
                         "trained on" in err.strip().splitlines()[-1], err[-2000:]
    damaged = tmp_path / "damaged"
    shutil.copytree(ck_full, damaged)
    snap = model_io.shard_file_paths(damaged / EPOCH_END, meta["sharded"])[1]
    data = bytearray((snap / "out.npy").read_bytes())
    data[-1] ^= 0xFF
    (snap / "out.npy").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=f"{snap / 'out.npy'}: the array's checksum does not match"):
        Word2Vec.load(damaged)
    code, _, err = run(["train", corpus, "-o", tmp_path / "d.npy", "--no-cache", "--resume", damaged], capsys)
    assert code == 2 and (f"shard 1 of 2 cannot read snapshot {meta['sharded']['snapshot']['id']} ({snap}): "
                          "out.npy: its data does not match the CRC-32 the checkpoint recorded (the file was altered "
                          "or damaged)") in err.strip().splitlines()[-1], err[-2000:]
    assert not (tmp_path / "d.npy").exists()


@pytest.mark.ray
def test_a_sharded_run_stopped_mid_epoch_resumes_from_its_mid_epoch_checkpoint_bit_for_bit(ray_session, tmp_path):
    from parvec.distributed.pipeline import ShardedWord2Vec
    from parvec.run import RunOptions

    path = tmp_path / "c.txt"  # 30 units an epoch
    path.write_text("\n".join(" ".join(s) for s in three_topic_sentences(3000, seed=11)) + "\n", encoding="utf-8")
    config = TrainConfig(dim=16, window=4, negative=4, epochs=3, sample=0, seed=3, progress=False)
    options = ReadOptions(min_count=1)

    def cluster(interval: float) -> Cluster:
        return Cluster("local:2", mode="sharded", shards=2, clients=1, threads_per_actor=1, minibatch_words=128,
                       unit_words=2000, checkpoint_interval_s=interval, timeout_s=120.0)

    def rows(model) -> tuple[np.ndarray, np.ndarray]:
        n = model.files.n_words
        return model.files.rows(0, n), model.files.rows(0, n, "out")

    with ShardedWord2Vec(config, options, cluster(60.0), tmp_path / "cache") as model:
        clean = model.train(model.encode(path))
        c_in, c_out = rows(model)

    # A snapshot after (about) every unit, each checkpointed by the run layer; the run stopped by its 40th
    # checkpoint, in epoch 2.
    class Stop(Exception):
        pass

    ck = tmp_path / "ck"
    written = []

    def checkpoint_then_stop(where, position, seconds) -> None:
        written.append(where)
        if len(written) == 40:
            raise Stop

    with pytest.raises(Stop), ShardedWord2Vec(config, options, cluster(0.001), tmp_path / "cache") as model:
        model.run_options = RunOptions(checkpoint_dir=ck, on_checkpoint_saved=checkpoint_then_stop)
        model.train(model.encode(path))
    # Each checkpoint written removes the older ones (they name snapshots the shards remove); the run stopped inside
    # the 40th's console callback, before it removed the 39th: both name snapshot files that are there.
    found = list_checkpoints(ck)
    assert len(found) <= 2 and [f.path.name for f in found] == [w.name for w in written[-len(found):]]
    for f in found:
        model_io.load(f.path, arrays=False)  # every shard's files there, with the shapes it records
    latest = found[-1]
    assert latest.path == latest_checkpoint(ck) and latest.epoch == 1 and 0 < latest.chunks_done < 30
    assert latest.path.name == mid_name(1, latest.chunks_done)
    for shard in (ck / "shards").glob("shard-*"):
        assert len(list(shard.glob("snap-*"))) <= 2

    saved = model_io.load(latest.path, arrays=False)
    assert saved.vectors is None and saved.vocab is None and saved.position.chunks_done == latest.chunks_done
    model, where, _ = ShardedWord2Vec.load_for_resume(ck, tmp_path / "cache")
    assert where == latest.path and model.position.epoch == 1
    model.cluster = cluster(60.0)
    with model:
        corpus = model.encode(path)
        model.run_options = RunOptions(checkpoint_dir=ck)
        stats = model.train(corpus, resume=True)
        w_in, w_out = rows(model)
    assert np.array_equal(w_in, c_in) and np.array_equal(w_out, c_out)
    # The resumed epoch's loss is the whole epoch's (the units before the checkpoint carried), as uninterrupted.
    assert stats.loss_per_epoch == clean.loss_per_epoch[1:]
    assert stats.words == 2 * corpus.tokens - saved.position.words_done
    assert latest_checkpoint(ck).name == EPOCH_END
    # Python reads the finished checkpoint whole: the words from the partitions, the matrices from the shards
    loaded = Word2Vec.load(ck)
    assert np.array_equal(loaded.wv.vectors, c_in) and loaded.epochs_trained == 3
