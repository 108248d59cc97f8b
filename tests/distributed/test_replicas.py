"""Replicas mode (parvec.distributed.replicas): schedule, sharding, averaging, bit-identity with one machine,
the CLI end to end, a lost replica, and the message without Ray.

Cluster tests use the session's one local Ray (``ray_session``: 2 CPUs); two Ray nodes and the workers'
niceness, each on a Ray of its own: test_replicas_own_ray.py.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import numpy as np
import pytest
from topic_corpus import ANIMALS, FILLER, VEHICLES, topic_precision, topic_sentences, write_corpus

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.distributed.cluster import Cluster
from parvec.distributed.replica_actor import OverlappedSync
from parvec.distributed.replica_plan import (
    ctz,
    overlap_rows_cap,
    plan_parts,
    share_chunks,
    split_balanced,
    sync_plan,
    sync_rows,
    traffic_model,
)
from parvec.distributed.replicas import ReplicaTrainer
from parvec.errors import ParvecError


# ---------------------------------------------------------------------- pure functions
def test_ruler_rows_exact():
    assert [ctz(j) for j in range(1, 17)] == [0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4]
    assert [sync_rows(j, 1024, 5000) for j in range(1, 17)] == [
        1024, 2048, 1024, 4096, 1024, 2048, 1024, 5000, 1024, 2048, 1024, 4096, 1024, 2048, 1024, 5000]
    assert sync_rows(6, 3, 10**6) == 6
    # the ruler counts syncs over the whole run; every epoch's last sync is full
    assert sync_plan(5, 2, 10, 1000) == [[10, 20, 10, 40, 1000], [20, 10, 80, 10, 1000]]
    # two evenly spaced full syncs per epoch in 6 parts: after parts 2 and 4, and the last
    assert sync_plan(6, 1, 10, 1000, full_sync_times=2) == [[10, 1000, 10, 1000, 10, 1000]]
    with pytest.raises(ValueError):
        ctz(0)


def test_shards_are_whole_chunks_and_parts_match():
    offsets = np.arange(0, 10_001, 100, dtype=np.int64)  # 100 sentences of 100 tokens
    shards = share_chunks(offsets, 1000, 3)  # 10 chunks of 10 sentences
    assert shards[0][0] == 0 and shards[-1][1] == 100
    assert all(lo % 10 == 0 and hi % 10 == 0 for lo, hi in shards)  # chunk boundaries
    assert [hi - lo for lo, hi in shards] in ([30, 40, 30], [40, 30, 30], [30, 30, 40])
    words = [np.full((hi - lo) // 10, 1000) for lo, hi in shards]
    plan = plan_parts(words, 2000)
    assert plan.part_words.shape == (3, 2)  # every replica: the same number of parts (sync points)
    assert plan.words_per_epoch == 10_000
    assert plan.chunk_base == [0, len(words[0]), len(words[0]) + len(words[1])]
    assert split_balanced(np.array([1, 1, 1, 1, 10]), 2).tolist() == [0, 4, 5]
    with pytest.raises(ParvecError, match="fewer than the 3 replicas"):
        share_chunks(np.array([0, 5, 10]), 100, 3)


def test_learning_rate_position_is_global():
    # Replica 0's parts hold 100 and 300 words, replica 1's 200 and 200: at a part boundary the schedule
    # position is every replica's words so far; between boundaries it moves linearly.
    plan = plan_parts([np.array([100, 300]), np.array([200, 200])], 150)
    assert plan.part_words.tolist() == [[100, 300], [200, 200]]
    assert plan.word_position(0, 0, 0) == 0
    assert plan.word_position(0, 0, 100) == 300 == plan.word_position(1, 0, 200)
    assert plan.word_position(0, 0, 50) == 150
    assert plan.word_position(1, 2, 400) == 2 * 800 + 800
    one = plan_parts([np.array([7, 5, 9])], 7)  # one replica: exactly the one-machine position
    assert [one.word_position(0, 1, w) for w in (0, 3, 7, 12, 21)] == [21, 24, 28, 33, 42]


class _AveragingPeers:
    """Two ranks' collectives in one process: an average started by both ranks is the mean of what each held at
    its start (as gloo's allreduce of copies is), written into each rank's arrays at its wait."""

    def __init__(self) -> None:
        self.started: dict[int, dict[int, list[np.ndarray]]] = {}

    def rank(self, r: int):
        peers = self

        class Coll:
            def start_average(self, gen, sync_id, arrays):
                peers.started.setdefault(sync_id, {})[r] = [a.copy() for a in arrays]
                return sync_id, arrays

            def wait(self, pending):
                sync_id, arrays = pending
                held = list(peers.started[sync_id].values())
                for i, a in enumerate(arrays):
                    a[...] = sum(h[i] for h in held) / np.float32(len(held))

        return Coll()


def _overlapped_reference(before, deltas, rows):
    # what an overlapped sync leaves on each rank: the average of the top rows at the start, plus what the rank
    # trained since (the deltas); the colder rows are the rank's own
    out = []
    for r in range(2):
        mats = []
        for k in range(2):
            m = before[r][k] + deltas[r][k]
            m[:rows] = (before[0][k][:rows] + before[1][k][:rows]) / 2 + deltas[r][k][:rows]
            mats.append(m)
        out.append(mats)
    return out


def test_overlapped_sync_is_the_average_plus_the_training_since():
    rng = np.random.default_rng(3)
    before = [[rng.standard_normal((20, 4)).astype(np.float32) for _ in range(2)] for _ in range(2)]
    deltas = [[rng.standard_normal((20, 4)).astype(np.float32) for _ in range(2)] for _ in range(2)]
    mats = [[m.copy() for m in pair] for pair in before]
    peers = _AveragingPeers()
    syncs = [OverlappedSync(peers.rank(r), mats[r], cap=8) for r in range(2)]
    for o in syncs:
        o.finish()  # nothing in flight: nothing changes
    assert all(np.array_equal(a, b) for r in range(2) for a, b in zip(mats[r], before[r], strict=True))
    for o in syncs:
        o.start(0, sync_id=1, rows=6)
    with pytest.raises(AssertionError):
        syncs[0].start(0, sync_id=2, rows=6)  # one sync in flight at a time
    for r in range(2):  # the next part trains while the sums run
        for m, d in zip(mats[r], deltas[r], strict=True):
            m += d
    for o in syncs:
        o.finish()
    want = _overlapped_reference(before, deltas, 6)
    for r in range(2):
        for k in range(2):
            np.testing.assert_allclose(mats[r][k], want[r][k], rtol=1e-6, atol=1e-6)
    # an average that fails stays pending, and dropping it leaves new buffers for the next sync (a late write from the
    # abandoned group cannot reach them)
    class Failing:
        def start_average(self, gen, sync_id, arrays):
            return sync_id, arrays

        def wait(self, pending):
            raise RuntimeError("peer gone")

    lost = OverlappedSync(Failing(), [m.copy() for m in before[0]], cap=8)
    lost.start(0, 1, 4)
    old_buf = lost.buf[0]
    with pytest.raises(RuntimeError):
        lost.finish()
    assert lost.pending is not None
    lost.drop()
    lost.start(0, 2, 4)
    assert lost.buf[0] is not old_buf
    # the ruler's smallest syncs always overlap; the copies stay within a quarter of the model
    assert overlap_rows_cap(67955, 1024) == 8494 and overlap_rows_cap(10**7, 1024) == 65536
    assert overlap_rows_cap(2000, 1024) == 1024 and overlap_rows_cap(100, 1024) == 100


# ---------------------------------------------------------------------- on the session's Ray
@pytest.mark.ray
def test_local1_is_bit_identical_to_one_machine(ray_session):
    from parvec.word2vec import Word2Vec

    sentences = topic_sentences(3000)
    common = dict(vector_size=16, min_count=1, epochs=2, workers=1, seed=7, sample=1e-3, progress=False)
    one = Word2Vec(sentences=sentences, **common)
    rep = Word2Vec(sentences=sentences, cluster=Cluster("local:1", sync_words=3000, min_sync_words=8), **common)
    assert np.array_equal(one.wv.vectors, rep.wv.vectors)
    assert np.array_equal(one.syn1neg, rep.syn1neg)
    assert one.stats.words == rep.stats.words and one.stats.loss_per_epoch == rep.stats.loss_per_epoch
    report = rep.run_report
    assert report["replicas"] == 1 and report["syncs"] > 2 and report["bytes_synced"] == 0
    assert report["data"][0].startswith("memory-mapped")  # the corpus reached the actor as a file, not through Ray


@pytest.mark.ray
@pytest.mark.parametrize("collective", ["gloo", "refs", "gloo-overlapped", "refs-overlapped"])
def test_average_of_two_replicas_is_the_numpy_mean(ray_session, collective):
    ray = ray_session
    from parvec.distributed.collectives import Board

    class Peer:
        def __init__(self, rank, board_name, seed):
            import ray as r

            from parvec.distributed.collectives import make_collective

            rng = np.random.default_rng(seed)
            self.mats = [rng.standard_normal((50, 6)).astype(np.float32) for _ in range(2)]
            self.delta = [rng.standard_normal((50, 6)).astype(np.float32) for _ in range(2)]
            self.coll = make_collective(collective.split("-")[0], r, r.get_actor(board_name), rank, 2, 60.0)

        def mats_(self):
            return self.mats, self.delta

        def average(self, gen, rows):
            self.coll.connect(0)
            if collective.endswith("overlapped"):  # the sum runs while the rows move on (the next part's training)
                sync = OverlappedSync(self.coll, self.mats, cap=rows)
                sync.start(gen, 1, rows)
                for m, d in zip(self.mats, self.delta, strict=True):
                    m += d
                sync.finish()
            else:
                self.coll.average(gen, 1, self.mats, rows)
            return self.mats, self.coll.bytes_received, self.coll.name

    name = f"test-board-{collective}-{time.time_ns()}"
    board = ray.remote(num_cpus=0)(Board).options(name=name).remote(2, 60.0, [])
    peers = [ray.remote(num_cpus=0)(Peer).remote(r, name, seed=r + 10) for r in range(2)]
    try:
        before = ray.get([p.mats_.remote() for p in peers], timeout=60)
        gen = ray.get(board.begin.remote(0))
        after = ray.get([p.average.remote(gen, 37) for p in peers], timeout=120)
    finally:
        for a in peers + [board]:
            ray.kill(a)
    if collective.endswith("overlapped"):
        want = _overlapped_reference([b[0] for b in before], [b[1] for b in before], 37)
        for r in range(2):
            mats, received, used = after[r]
            assert used == collective.split("-")[0] and received == 37 * 6 * 4 * 2
            for k in range(2):
                np.testing.assert_allclose(mats[k], want[r][k], rtol=1e-6, atol=1e-6)
        return
    before = [b[0] for b in before]
    for k in range(2):
        mean = np.mean(np.stack([before[0][k][:37], before[1][k][:37]]), axis=0)
        for r in range(2):
            mats, received, used = after[r]
            assert used == collective
            assert np.array_equal(mats[k][:37], mean)  # identical bits on both replicas
            assert np.array_equal(mats[k][37:], before[r][k][37:])  # colder rows untouched
            assert received == 37 * 6 * 4 * 2  # (2 matrices) x (a reduce-scatter and an all-gather of half)


@pytest.mark.ray
def test_cli_trains_on_two_replicas_with_the_report(ray_session, tmp_path, capsys):
    from parvec.cli import main

    corpus = write_corpus(tmp_path / "corpus.txt", 4000)
    out, report = tmp_path / "vec.txt", tmp_path / "report.json"
    code = main(["train", str(corpus), "-o", str(out), "--cluster", "local:2", "--threads", "1", "--dim", "16",
                 "--min-count", "1", "--epochs", "3", "--sync-words", "4000", "--min-sync-words", "16",
                 "--report", str(report), "--no-cache", "--seed", "3"])
    assert code == 0
    from parvec.keyedvectors import KeyedVectors

    kv = KeyedVectors.load_word2vec_format(str(out))
    assert len(kv) == len(ANIMALS) + len(VEHICLES) + len(FILLER)
    assert topic_precision(kv, ANIMALS) > 0.8 and topic_precision(kv, VEHICLES) > 0.8
    rep = json.loads(report.read_text())
    assert rep["replicas"] == 2 and rep["threads_per_replica"] == 1
    assert rep["alpha_scale"] == "linear" and rep["alpha_per_replica"] == pytest.approx(2 * 0.025)
    assert rep["syncs"] >= 6 and rep["sync_seconds"] > 0
    assert rep["bytes_synced"] > 0 and rep["bytes_synced_per_word"] == pytest.approx(
        rep["bytes_synced"] / rep["words_trained"])
    assert rep["cluster"]["spec"] == "local:2" and rep["faults"] == []
    assert rep["words_trained"] == 3 * 40_000
    # the syncs of the hottest rows ran while the next part trained: all but each epoch's last (full) one, up to
    # the cap's rows
    cap = rep["sync_overlap_rows"]
    assert cap == overlap_rows_cap(rep["vocab_size"], 16) and rep["cluster"]["sync_overlap"] is True
    plan = sync_plan(rep["parts_per_epoch"], 3, 16, rep["vocab_size"])
    assert rep["syncs_overlapped"] == sum(rows <= cap for epoch in plan for rows in epoch[:-1]) > 0
    console = capsys.readouterr()
    assert f"2 replicas x 1 thread, {rep['syncs']} syncs ({rep['syncs_overlapped']} overlapped)" in (
        console.out + console.err)
    # the bytes the run counted are the cost model's (docs/design/distributed.md, "Traffic"), sync for sync
    model = traffic_model(rep["vocab_size"], 16, 2, 40_000, 3, 4000, 16, parts_per_epoch=rep["parts_per_epoch"])
    assert rep["syncs"] == model["syncs"] and rep["bytes_synced"] == model["bytes"]
    assert rep["bytes_full_model_same_syncs"] == model["bytes_full_model"]
    # the run's cost: the driver, both replicas, the board and the private Ray's own processes, from their own
    # accounting (parvec.usage); at least the two replicas' training, which is most of the wall time here
    assert rep["cpu_processes"] >= 4
    by = rep["cpu_seconds_by_process"]
    assert by["ray::_Replica"] > 0 and "this process" in by and "raylet" in by  # what each kind of process cost
    assert sum(by.values()) == pytest.approx(rep["cpu_seconds"], abs=0.05)
    assert rep["start_seconds"] == pytest.approx(rep["ray_start_seconds"] + rep["setup_seconds"])
    assert rep["cpu_seconds"] > rep["training_seconds"] * 0.5
    assert rep["cpu_seconds_per_word"] == pytest.approx(rep["cpu_seconds"] / rep["words_trained"])


def _fault_run(tmp_path, kill: bool, restarts: int = 3, collective: str = "auto"):
    import ray

    corpus = EncodedCorpus.from_sentences(topic_sentences(30_000, seed=1), min_count=1)
    cfg = TrainConfig(dim=16, epochs=3, threads=1, seed=5, progress=False, chunk_words=1000)
    from parvec.model_tables import init_input_vectors

    w_in = init_input_vectors(len(corpus.vocab), 16, 5)
    w_out = np.zeros_like(w_in)
    cluster = Cluster("local:2", sync_words=2000, min_sync_words=16, timeout_s=60,
                      options={"max_restarts": restarts, "collective": collective})
    trainer = ReplicaTrainer(cluster, cfg, corpus.vocab.counts, w_in, w_out)
    outcome: dict = {}

    def run():
        try:
            outcome["stats"] = trainer.train(corpus)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    th = threading.Thread(target=run)
    th.start()
    killed = None
    if kill:
        deadline = time.time() + 120
        while time.time() < deadline and th.is_alive():
            try:
                epoch, done = ray.get(trainer.actors[0].progress.remote(), timeout=5).synced
            except Exception:  # noqa: BLE001 - the actors not up yet
                epoch, done = -1, 0
            if epoch == 1 and done >= 3:  # mid-way through the second epoch
                killed = trainer.actors[1]
                ray.kill(killed, no_restart=False)
                break
            time.sleep(0.005)
    th.join(timeout=240)
    assert not th.is_alive(), "the run hung"
    return trainer, w_in, w_out, outcome, killed


@pytest.mark.ray
def test_lost_replica_is_restarted_and_the_run_matches_an_unfaulted_one(ray_session, tmp_path):
    trainer, w_in, w_out, outcome, killed = _fault_run(tmp_path, kill=True)
    assert killed is not None, "training ended before the kill"
    assert "error" not in outcome, outcome.get("error")
    faults = trainer.report().to_json()["faults"]
    assert len(faults) == 1 and faults[0]["replica"] == [1] and faults[0]["epoch"] == 2
    assert faults[0]["words_retrained_by_lost"]["1"] > 0
    assert faults[0]["words_retrained"] >= 2 * faults[0]["words_retrained_by_lost"]["1"] * 0.9
    # Every replica reloaded the last full sync and trained the epoch again: one thread each, so the run is
    # bit for bit the one without the fault.
    clean, c_in, c_out, c_outcome, _ = _fault_run(tmp_path, kill=False)
    assert "error" not in c_outcome
    assert np.array_equal(w_in, c_in) and np.array_equal(w_out, c_out)
    assert outcome["stats"].words == c_outcome["stats"].words


@pytest.mark.ray
def test_replica_that_cannot_come_back_ends_the_run_with_an_error(ray_session, tmp_path):
    trainer, _, _, outcome, killed = _fault_run(tmp_path, kill=True, restarts=0, collective="refs")
    assert killed is not None
    err = outcome.get("error")
    assert isinstance(err, ParvecError) and "replica 1 was lost and could not be restarted" in str(err)


def test_sync_overlap_flag_reaches_the_cluster():
    from parvec.cli import build_parser
    from parvec.cli.train import cluster_from_args

    parser = build_parser()
    base = ["train", "c.txt", "-o", "v.txt", "--cluster", "local:2"]
    assert cluster_from_args(parser.parse_args(base)).sync_overlap is True
    assert cluster_from_args(parser.parse_args(base + ["--no-sync-overlap"])).sync_overlap is False
    with pytest.raises(ParvecError, match="sync_overlap"):
        Cluster("local:2", sync_overlap="no")


def test_without_ray_cluster_says_how_to_install(monkeypatch, tmp_path, capsys):
    from parvec.cli import main
    from parvec.distributed import make_driver

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ParvecError, match=r"pip install 'parvec\[ray\]'"):
        make_driver(Cluster("local:2"), TrainConfig(), np.ones(3), np.zeros((3, 100), np.float32),
                    np.zeros((3, 100), np.float32))
    corpus = write_corpus(tmp_path / "c.txt", 50)
    assert main(["train", str(corpus), "-o", str(tmp_path / "v.txt"), "--cluster", "local:2", "--min-count", "1",
                 "--no-cache"]) == 2
    assert "parvec[ray]" in capsys.readouterr().err
    assert not (tmp_path / "v.txt").exists()


def test_node2vec_on_a_cluster_is_refused_clearly(tmp_path):
    from parvec.graph.node2vec import Node2Vec

    edges = tmp_path / "g.edgelist"
    edges.write_text("0 1\n1 2\n2 0\n", encoding="utf-8")
    with pytest.raises(ParvecError, match="training node2vec/DeepWalk is not available on a cluster's replicas"):
        Node2Vec(str(edges), cluster=Cluster("local:2"))
