"""Faults of the Ray cluster modes on the session's Ray: a shard or client killed (kill -9) mid-run, restored
from the run's consistent snapshots and retrained bit for bit; snapshots that cannot be written or read; a replica
killed while it starts; too many actors for the cluster's CPUs.  (A CLI run with its own Ray and a shard killed:
test_faults_cli.py.)

Actor processes are found as descendants of this test process (the session's Ray was started from here) by the
title Ray gives them (``ray::ShardActor.step``, ``ray::_Replica.__init__``), and killed with SIGKILL by their
process id (fault_tools.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from fault_tools import Killer
from topic_corpus import three_topic_sentences

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.distributed import Cluster
from parvec.errors import ParvecError
from parvec.model_tables import init_input_vectors

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------- replicas: a fault while starting
def _kill_while_connecting(trainer) -> Killer:
    """Kill replica 0 while it is inside ``connect`` for certain: replica 1 is frozen (SIGSTOP) just before
    the driver asks both to form their sync group, so replica 0 waits in the group's rendezvous until the killer
    has found it there and killed it; then replica 1 goes on (SIGCONT).  (Watching for the short ``connect``
    phase of two replicas that start together missed it, or killed after it, under load.)"""
    original = trainer._connect_all
    holder: list[Killer] = []

    def connect_with_a_fault(ray, group_id):
        if not holder:
            frozen = ray.get(trainer.actors[1].ping.remote(), timeout=60)
            os.kill(frozen, signal.SIGSTOP)
            killer = Killer("ray::_Replica.connect", timeout=120)
            holder.append(killer)

            def thaw() -> None:
                deadline = time.monotonic() + 120
                while not killer.killed and time.monotonic() < deadline:
                    time.sleep(0.01)
                os.kill(frozen, signal.SIGCONT)

            threading.Thread(target=thaw, daemon=True).start()
        return original(ray, group_id)

    trainer._connect_all = connect_with_a_fault

    class _Lazy:  # the test's view of the killer the first connect makes
        @property
        def killed(self):
            return holder[0].killed if holder else []

        def join(self):
            if holder:
                holder[0].join()

    return _Lazy()  # type: ignore[return-value]


def _small_replicas(corpus_seed: int, seed: int):
    """A small corpus and a maker of 2-replica trainers on it (2 epochs, 1 thread each, many syncs):
    ``make()`` returns ``(trainer, w_in, w_out)``, the model starting from ``seed``'s vectors."""
    from parvec.distributed.replicas import ReplicaTrainer

    corpus = EncodedCorpus.from_sentences(three_topic_sentences(1500, seed=corpus_seed), min_count=1)
    cfg = TrainConfig(dim=16, epochs=2, threads=1, seed=seed, progress=False, chunk_words=1000)

    def make():
        w_in = init_input_vectors(len(corpus.vocab), 16, seed)
        w_out = np.zeros_like(w_in)
        cluster = Cluster("local:2", sync_words=2000, min_sync_words=16, timeout_s=120)
        return ReplicaTrainer(cluster, cfg, corpus.vocab.counts, w_in, w_out), w_in, w_out

    return corpus, make


@pytest.mark.ray
@pytest.mark.parametrize("phase", ["__init__", "connect"])
def test_a_replica_killed_while_starting_is_restarted_and_the_run_completes(ray_session, phase, capsys):
    corpus, make = _small_replicas(2, 5)

    def train(kill: bool):
        trainer, w_in, w_out = make()
        # Killed in its constructor (Ray runs it again) or while the replicas form their sync group.
        killer = Killer(f"ray::_Replica.{phase}") if kill and phase == "__init__" else None
        if kill and phase == "connect":
            killer = _kill_while_connecting(trainer)
        try:
            stats = trainer.train(corpus)
        finally:
            if killer is not None:
                killer.join()
        return trainer, stats, w_in, w_out, killer

    trainer, stats, w_in, w_out, killer = train(kill=True)
    assert killer.killed, "no replica was seen starting"
    faults = trainer.report().to_json()["faults"]
    assert len(faults) == 1 and faults[0]["phase"] == "start" and faults[0]["words_retrained"] == 0, faults
    assert stats.words == 2 * corpus.n_tokens
    assert "was lost while starting" in capsys.readouterr().err
    # A fault before training changes nothing: one thread per replica, the same vectors as a run without it.
    _, clean_stats, c_in, c_out, _ = train(kill=False)
    assert np.array_equal(w_in, c_in) and np.array_equal(w_out, c_out)
    assert clean_stats.loss_per_epoch == stats.loss_per_epoch


def _kill_and_await_restart(ray, actor) -> list[int]:
    """Kill ``actor`` (Ray may restart it) and wait until Ray has started it again: its pids before and after."""
    pids = [ray.get(actor.ping.remote(), timeout=60)]
    ray.kill(actor, no_restart=False)
    deadline = time.monotonic() + 120
    while len(pids) < 2 and time.monotonic() < deadline:
        try:
            pid = ray.get(actor.ping.remote(), timeout=60)
        except ray.exceptions.RayActorError:  # dying, or restarting
            pid = pids[0]
        if pid != pids[0]:
            pids.append(pid)
        else:
            time.sleep(0.05)
    return pids


@pytest.mark.ray
@pytest.mark.parametrize("after", ["_load_all", "train_epoch"])
def test_a_replica_restarted_empty_before_an_epoch_gets_the_model_and_the_run_matches(ray_session, after, capsys):
    """A replica Ray restarted holds no model.  Killed and restarted right after the replicas copied in the first
    model (``_load_all``, before the group forms), it must load the model with the first epoch's call; killed
    and restarted after the first epoch (``train_epoch``), the second epoch must be trained again from the first
    epoch's model, as for a replica lost mid-epoch, not end the run (before the fix it hung in the old sync
    group until the no-progress watchdog).  One thread per replica: the vectors match a run without the loss."""
    corpus, make = _small_replicas(3, 7)

    def train(kill: bool):
        trainer, w_in, w_out = make()
        pids: list[int] = []
        if kill:
            original = getattr(trainer, after)

            def then_kill(*a):
                result = original(*a)
                if not pids:
                    pids.extend(_kill_and_await_restart(trainer.ray, trainer.actors[1]))
                return result

            setattr(trainer, after, then_kill)
        stats = trainer.train(corpus)
        return trainer, stats, w_in, w_out, pids

    trainer, stats, w_in, w_out, pids = train(kill=True)
    assert len(pids) == 2 and pids[1] != pids[0], f"replica 1 was not restarted after {after}: {pids}"
    faults = trainer.report().to_json()["faults"]
    if after == "train_epoch":
        assert len(faults) == 1 and faults[0]["epoch"] == 2 and faults[0]["replica"] == [1], faults
        assert "was lost in epoch 2" in capsys.readouterr().err
    assert stats.words == 2 * corpus.n_tokens
    _, clean_stats, c_in, c_out, _ = train(kill=False)
    assert np.array_equal(w_in, c_in) and np.array_equal(w_out, c_out)
    assert clean_stats.loss_per_epoch == stats.loss_per_epoch


# ---------------------------------------------------------------------- sharded: a shard or client killed mid-run
def _sharded_cluster(tmp_path: Path, interval: float = 60.0, shards: int = 2, **kw) -> Cluster:
    return Cluster("local:2", mode="sharded", shards=shards, clients=1, threads_per_actor=1, minibatch_words=128,
                   unit_words=2000, checkpoint_interval_s=interval, checkpoint_dir=str(tmp_path / "ck"),
                   timeout_s=120.0, **kw)


_CONFIG = dict(dim=16, window=4, negative=4, epochs=3, sample=0, seed=3, progress=False)


def _sharded_run(ray, corpus: EncodedCorpus, cluster: Cluster, kill=None, before_kill=None, after=False):
    """Train ``corpus`` on 2 shards and 1 client thread; ``kill`` = ("shard", 1) or ("client", 0) kills that
    actor's process (SIGKILL) once the second epoch has trained 3 units (after ``before_kill(run)``), or with
    ``after`` once training is done, before the model is gathered.  Returns the vectors, the stats, the report
    and the pid killed."""
    from parvec.distributed.sharded import ShardedRun

    parts = [("refs", [ray.put(corpus.tokens), ray.put(corpus.offsets)])]
    run = ShardedRun(ray, cluster, TrainConfig(**_CONFIG), corpus.vocab.counts, parts, [corpus.offsets])
    killed: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        kind, index = kill
        handle = run.shards[index] if kind == "shard" else run.clients[index]
        pid = ray.get(handle.ping.remote(), timeout=60)
        unit_words = run.words_per_epoch / len(run.units)
        while not stop.is_set():
            # Mid-way through the second epoch: its first 3 units trained (nothing was trained twice before).
            if run.totals.words >= run.words_per_epoch + 3 * unit_words:
                if before_kill is not None:
                    before_kill(run)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.002)

    watcher = threading.Thread(target=watch, daemon=True) if kill and not after else None
    try:
        if watcher is not None:
            watcher.start()
        stats = run.train()
        if kill and after:
            pid = ray.get(run.shards[kill[1]].ping.remote(), timeout=60)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        w_in = np.zeros((len(corpus.vocab), 16), np.float32)
        w_out = np.zeros_like(w_in)
        run.gather(w_in, w_out)
        report = run.report().to_json()
    finally:
        stop.set()
        if watcher is not None:
            watcher.join(timeout=30)
        run.close()
    return w_in, w_out, stats, report, killed


@pytest.fixture(scope="module")
def fault_corpus() -> EncodedCorpus:
    return EncodedCorpus.from_sentences(three_topic_sentences(3000, seed=11), min_count=1)  # 30 units per epoch


@pytest.fixture(scope="module")
def clean_sharded(ray_session, fault_corpus, tmp_path_factory):
    return _sharded_run(ray_session, fault_corpus, _sharded_cluster(tmp_path_factory.mktemp("clean")))


@pytest.mark.ray
@pytest.mark.parametrize(("kill", "interval"), [(("shard", 1), 60.0), (("shard", 1), 0.001), (("client", 0), 0.001)])
def test_an_actor_killed_mid_run_is_restored_from_the_snapshots_and_the_run_is_bit_identical(
        ray_session, fault_corpus, clean_sharded, tmp_path, capsys, kill, interval):
    # interval 60 s: the only snapshots are the epochs' ends, so the second epoch is trained again from its
    # start; 0.001 s: a snapshot after every unit (one client thread: nothing to drain), so the unit the kill
    # interrupted is trained again from the snapshot just before it.
    cluster = _sharded_cluster(tmp_path, interval)
    w_in, w_out, stats, report, killed = _sharded_run(ray_session, fault_corpus, cluster, kill=kill)
    assert killed, "the actor was never killed: the run ended first"
    c_in, c_out, c_stats, c_report, _ = clean_sharded
    # One client thread: the units are trained in the same order from the same state, so the run with the kill
    # is bit for bit the run without it (its loss per epoch too: each epoch's figures restart from the snapshot).
    assert np.array_equal(w_in, c_in) and np.array_equal(w_out, c_out)
    assert stats.loss_per_epoch == c_stats.loss_per_epoch and stats.words == c_stats.words == 3 * fault_corpus.n_tokens
    kind, index = kill
    n = 2 if kind == "shard" else 1
    err = capsys.readouterr().err
    assert "parvec: starting 2 shards and 1 client x 1 thread" in err
    line = next(x for x in err.splitlines() if f"{kind} {index} of {n} was lost in epoch 2" in x)
    faults = [f for f in report["faults"] if f["phase"] == "train"]
    assert len(faults) == 1 and faults[0]["kind"] == kind and faults[0]["index"] == index, report["faults"]
    words = faults[0]["words_retrained"]
    assert words > 0 and f"{words:,} words retrained" in line
    if interval == 60.0:  # the second epoch from its start again: the units done before the kill and the one in flight
        assert "every shard restored the snapshot of epoch 1's end" in line
        assert faults[0]["snapshot"]["units_done"] == 0 and faults[0]["units_retrained"] >= 4
    else:
        # (the kill may land while the snapshot after the third unit is written: then the one before it is restored)
        assert "every shard restored the snapshot of epoch 2 unit " in line
        assert faults[0]["snapshot"]["units_done"] >= 2 and faults[0]["units_retrained"] <= 2
    assert report["words_retrained"] == words and report["requeued_words"] == words
    assert "lost_updates_minibatches" not in report
    if kind == "shard":
        assert report["shard_restarts"][1] is not None and report["shard_restarts"][0] is None
    assert report["snapshots"] >= 3 and report["snapshot_bytes"] == 2 * len(fault_corpus.vocab) * 16 * 4
    assert report["snapshot_seconds"] > 0


@pytest.mark.ray
def test_the_one_shard_of_fused_calls_killed_mid_run_is_restored_and_the_run_is_bit_identical(
        ray_session, fault_corpus, tmp_path, capsys):
    # One shard, fused calls (its default): a call that trains a minibatch whole and dies with the shard leaves
    # the unit to be trained again from the snapshot, as a split call does.
    def cluster(name: str) -> Cluster:
        return _sharded_cluster(tmp_path / name, 0.001, shards=1, shard_calls="fused")

    c_in, c_out, c_stats, c_report, _ = _sharded_run(ray_session, fault_corpus, cluster("clean"))
    w_in, w_out, stats, report, killed = _sharded_run(ray_session, fault_corpus, cluster("kill"), kill=("shard", 0))
    assert killed, "the shard was never killed: the run ended first"
    assert report["fused_calls"] is True and c_report["fused_calls"] is True
    assert np.array_equal(w_in, c_in) and np.array_equal(w_out, c_out)
    assert stats.loss_per_epoch == c_stats.loss_per_epoch and stats.words == 3 * fault_corpus.n_tokens
    [fault] = [f for f in report["faults"] if f["phase"] == "train"]
    assert fault["kind"] == "shard" and fault["index"] == 0 and report["shard_restarts"][0] is not None
    assert "shard 0 of 1 was lost in epoch 2" in capsys.readouterr().err


@pytest.mark.ray
def test_a_shard_killed_after_training_is_restored_from_the_last_epochs_snapshot(
        ray_session, fault_corpus, clean_sharded, tmp_path, capsys):
    # Lost while the model is read back (gathered, or exported by the CLI): the snapshot of the last epoch's end
    # is the model as trained, so nothing is retrained and nothing is lost.
    w_in, w_out, stats, report, killed = _sharded_run(ray_session, fault_corpus, _sharded_cluster(tmp_path),
                                                      kill=("shard", 0), after=True)
    assert killed
    c_in, c_out, c_stats, _, _ = clean_sharded
    assert np.array_equal(w_in, c_in) and np.array_equal(w_out, c_out)
    [fault] = report["faults"]
    assert fault["phase"] == "gather" and fault["kind"] == "shard" and fault["index"] == 0
    assert fault["words_retrained"] == 0 and report["shard_restarts"][0] is not None
    err = capsys.readouterr().err
    assert ("parvec: shard 0 of 2 was lost after epoch 3 (its process" in err
            and "every shard restored the snapshot of epoch 3's end; 0 words retrained" in err), err[-2000:]


@pytest.mark.ray
def test_a_snapshot_that_cannot_be_read_ends_the_run_naming_the_shard(ray_session, fault_corpus, tmp_path):
    from parvec.distributed.sharded import snapshot_dir

    def lose_the_snapshot(run) -> None:
        newest = json.loads((tmp_path / "ck" / "manifest.json").read_text())["id"]
        shutil.rmtree(snapshot_dir(tmp_path / "ck", 1, 2, newest))

    with pytest.raises(ParvecError, match=r"shard 1 of 2 cannot read snapshot \d+"):
        _sharded_run(ray_session, fault_corpus, _sharded_cluster(tmp_path), kill=("shard", 1),
                     before_kill=lose_the_snapshot)


@pytest.mark.ray
def test_a_snapshot_that_cannot_be_written_ends_the_run_naming_the_shard(ray_session, tmp_path):
    from parvec.distributed.sharded import ShardedRun

    corpus = EncodedCorpus.from_sentences(three_topic_sentences(200, seed=12), min_count=1)
    parts = [("refs", [ray_session.put(corpus.tokens), ray_session.put(corpus.offsets)])]
    run = ShardedRun(ray_session, _sharded_cluster(tmp_path), TrainConfig(**_CONFIG), corpus.vocab.counts, parts,
                     [corpus.offsets])
    try:
        where = tmp_path / "ck" / "shard-1-of-2"  # shard 1's snapshot directory becomes a file: it cannot write there
        shutil.rmtree(where)
        where.write_text("not a directory")
        with pytest.raises(ParvecError, match="shard 1 of 2 could not write its snapshot to .*shard-1-of-2"):
            run.train()
    finally:
        run.close()


@pytest.mark.ray
def test_cli_stops_with_exit_2_naming_the_shard_that_cannot_keep_its_snapshots(ray_session, tmp_path, capsys):
    from parvec.cli import main

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(s) for s in three_topic_sentences(300, seed=15)) + "\n", encoding="utf-8")
    (tmp_path / "ck" / "shards").mkdir(parents=True)
    (tmp_path / "ck" / "shards" / "shard-1-of-2").write_text("a file where shard 1 keeps its snapshots")
    out = tmp_path / "v.txt"
    code = main(["train", str(corpus), "-o", str(out), "--cluster", "local:2", "--mode", "sharded", "--shards", "2",
                 "--clients", "1", "--threads", "1", "--dim", "8", "--min-count", "1", "--no-cache",
                 "--checkpoint-dir", str(tmp_path / "ck")])
    err = capsys.readouterr().err
    assert code == 2 and "parvec: error: shard 1 of 2 cannot keep its snapshots in " in err, err[-2000:]
    assert "Traceback" not in err and not out.exists()


# ---------------------------------------------------------------------- too many actors for the CPUs
def test_actor_budget_warns_then_refuses():
    from parvec.distributed.sharded import actor_budget

    assert actor_budget(2, 2, 2) is None and actor_budget(1, 1, 1) is None
    assert "8 Ray actors (one process each) on 2 CPUs" in actor_budget(4, 4, 2)
    with pytest.raises(ParvecError, match=r"--shards 50 --clients 4 start 54 Ray actors .* has 2 CPUs.*at most 16"):
        actor_budget(50, 4, 2)


@pytest.mark.ray
def test_cli_refuses_far_more_actors_than_cpus_before_reading_the_corpus(ray_session, tmp_path, capsys):
    from parvec.cli import main

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(s) for s in three_topic_sentences(300, seed=14)) + "\n", encoding="utf-8")
    out = tmp_path / "v.txt"
    code = main(["train", str(corpus), "-o", str(out), "--cluster", "local:2", "--mode", "sharded", "--shards", "20",
                 "--clients", "4", "--dim", "64", "--min-count", "1", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and "parvec: error: --shards 20 --clients 4 start 24 Ray actors" in err and "2 CPUs" in err
    assert "counted and encoded" not in err and "starting" not in err and not out.exists()
    # Replicas ask Ray for their threads as CPUs: 8 on 2 CPUs would wait forever, so they are refused too.
    code = main(["train", str(corpus), "-o", str(out), "--cluster", "local:2", "--replicas", "8", "--threads", "1",
                 "--dim", "16", "--min-count", "1", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and "--replicas 8 x --threads 1 need 8 CPUs but the Ray cluster has 2" in err
    assert "starting" not in err and not out.exists()
