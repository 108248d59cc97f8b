"""The memory check of a cluster run counts every process it starts on this machine:
``parvec train CORPUS --dim 3000 --cluster local:2`` said "562 MiB of 23.1 GiB" while its processes peaked at
5.75 GiB.  The formulas (parvec.distributed.memory), the refusal before Ray starts (CLI and API), and a cluster
joined elsewhere (only the driver here)."""

from __future__ import annotations

import dataclasses

import pytest

from parvec import resources
from parvec.cli import main
from parvec.config import TrainConfig
from parvec.distributed import memory as M
from parvec.distributed import sharded
from parvec.distributed.cluster import Cluster
from parvec.errors import ParvecError

GiB = 1 << 30


@pytest.fixture(autouse=True)
def no_ray_in_this_process(monkeypatch):
    """As a `parvec train` process: no Ray initialised yet (a test session's Ray would be counted as running)."""
    monkeypatch.setattr(M, "ray_running", lambda: False)


def _est(cluster: Cluster, dim: int = 100, v: int = 1000, t: int = 100_000, s: int = 10, threads: int = 1,
         **kw) -> M.MemoryEstimate:
    return M.estimate_cluster(cluster, TrainConfig(dim=dim, threads=threads), v, t, s, available=None, **kw)


def _part(est: M.MemoryEstimate, name: str) -> M.ProcessGroup:
    return next(p for p in est.parts + est.elsewhere + est.earlier if p.name == name)


# ---------------------------------------------------------------------- formulas
def test_replicas_count_every_process_and_the_object_store():
    v, d, t, s = 1000, 100, 100_000, 10
    est = _est(Cluster("local:2"), dim=d, v=v, t=t, s=s)
    model = 2 * v * d * 4
    assert [p.name for p in est.parts] == ["driver", "replica", "Ray's object store", "sync board",
                                           "Ray's own processes"]
    driver, replica, store = _part(est, "driver"), _part(est, "replica"), _part(est, "Ray's object store")
    assert driver.pieces["vectors"] == model
    assert driver.pieces["corpus"] == 4 * t + 16 * (s + 1)  # not memory-mapped: its tokens are in memory
    assert replica.count == 2 and replica.pieces["model"] == model  # each replica holds a whole model
    assert replica.pieces["corpus share"] == 4 * (t // 2) + 16 * (s + 1) + 8 * (s // 2 + 1)
    assert replica.pieces["tables"] == (20 + M.ACTOR_BYTES_PER_WORD) * v
    assert replica.pieces["runtime"] == M.REPLICA_BASELINE + 4 * TrainConfig().max_sentence_length
    # an overlapped sync's two copies of both matrices' top rows: all 1,000 rows here (fewer than the 1,024 of
    # the smallest sync); none with --no-sync-overlap, nor with one replica (nothing to sync)
    assert replica.pieces["sync copies"] == 2 * model
    assert _part(_est(Cluster("local:2", sync_overlap=False), dim=d, v=v, t=t, s=s), "replica"
                 ).pieces["sync copies"] == 0
    assert _part(_est(Cluster("local:1"), dim=d, v=v, t=t, s=s), "replica").pieces["sync copies"] == 0
    big = _part(_est(Cluster("local:2"), dim=d, v=80_000, t=t, s=s), "replica").pieces
    assert big["sync copies"] == 4 * 10_000 * d * 4 == big["model"] // 4  # V / 8 rows: a quarter of the model
    assert store.pieces["the model sent out and returned"] == 2 * model
    assert est.total == sum(p.count * sum(p.pieces.values()) for p in est.parts)
    # the model's share of the total: driver + R replicas (each with its sync copies) + 2 copies in the object store
    grown = _est(Cluster("local:2"), dim=2 * d, v=v, t=t, s=s)
    assert grown.total - est.total == (1 + 2 * (1 + 2) + 2) * model
    # a third replica adds one replica's memory; it takes a worker Ray would have left idle on local:4
    three = _est(Cluster("local:4", replicas=3), dim=d, v=v, t=t, s=s)
    two = _est(Cluster("local:4", replicas=2), dim=d, v=v, t=t, s=s)
    one_more = _part(three, "replica").each + M.WORKER_BASELINE * ((4 - 3) - (4 - 2))
    assert three.total - two.total == pytest.approx(one_more, abs=16 * (s + 1) + 4 * t)  # shares differ a little


def test_a_ray_already_running_here_is_not_counted_again(monkeypatch):
    before = _est(Cluster("local:2"))
    monkeypatch.setattr(M, "ray_running", lambda: True)  # a notebook's Ray: its processes run (and use memory) already
    after = _est(Cluster("local:2"))
    assert before.total == after.total == before.needed and after.needed == before.needed - M.RAY_SYSTEM
    assert "Ray's own processes 300.0 MiB (runtime 300.0 MiB, running already)" in after.line()
    assert "more than now" in after.line()
    tight = dataclasses.replace(after, available=after.needed)  # what is left is enough: Ray's memory is in use
    assert tight.fits and not dataclasses.replace(before, available=after.needed).fits


def test_a_memory_mapped_corpus_is_not_in_the_driver():
    est = M.estimate_cluster(Cluster("local:2"), TrainConfig(threads=1), 1000, 100_000, 10, available=None,
                             corpus=M.CorpusSizes(100_000, 10, tokens_mapped=True))
    assert _part(est, "driver").pieces["corpus"] == 16 * 11


def test_replica_threads_follow_the_replicas_driver_rule():
    assert M.replica_threads(Cluster("local:4"), TrainConfig(threads=8)) == 1  # 4 replicas on 4 CPUs
    assert M.replica_threads(Cluster("local:4", replicas=2), TrainConfig(threads=8)) == 2
    assert M.replica_threads(Cluster("local:4", replicas=2), TrainConfig(threads=1)) == 1
    with pytest.raises(ParvecError, match="need 6 CPUs but the Ray cluster has 4"):  # the driver's own error
        M.replica_threads(Cluster("local:4", replicas=2, threads_per_actor=3), TrainConfig())
    # more threads per replica: more sentence buffers
    a = _est(Cluster("local:4", replicas=2), threads=1)
    b = _est(Cluster("local:4", replicas=2), threads=2)
    assert _part(b, "replica").each - _part(a, "replica").each == 4 * TrainConfig().max_sentence_length


def test_sharded_reads_the_resolved_shards_clients_and_columns():
    v, d = 1000, 100
    est = _est(Cluster("local:4", mode="sharded", shards=3, clients=2), dim=d, v=v)
    shard, client = _part(est, "shard"), _part(est, "client")
    assert shard.count == 3 and client.count == 2
    assert shard.pieces["columns"] == 2 * v * 34 * 4  # ceil(100 / 3) columns of both matrices
    assert shard.pieces["noise table"] == 8 * v and client.pieces["subsampling table"] == 4 * v
    # one minibatch per client thread in flight on each shard, its deltas per pair with negatives per window
    mw = sharded.resolve(Cluster("local:4", mode="sharded", shards=3, clients=2), TrainConfig(dim=d)).minibatch_words
    assert shard.pieces["minibatches in flight"] == 2 * M.minibatch_bytes(mw, 5, 5, 34, "window", "float16")
    paper = _est(Cluster("local:4", mode="sharded", shards=3, clients=2, negatives_per="pair", wire_floats="float32"),
                 dim=d, v=v)
    assert _part(paper, "shard").pieces["minibatches in flight"] == 2 * M.minibatch_bytes(mw, 5, 5, 34, "pair")
    # float16 on the wire (the default): the coefficients and the answer held in both widths
    assert M.minibatch_bytes(mw, 5, 5, 34, "window", "float16") - M.minibatch_bytes(mw, 5, 5, 34, "window") == (
        2 * 2 * mw * 10 * 6)
    assert M.minibatch_bytes(mw, 5, 5, 34, "window") - M.minibatch_bytes(mw, 5, 5, 34, "pair") == (
        4 * mw * 10 * 34 - 4 * mw * 34 + 8 * mw * 7 - 8 * mw * 10 * 6)
    # the API (ShardedTrainer): the driver holds the model, the object store the corpus and initial columns
    assert _part(est, "driver").pieces["vectors"] == 2 * v * d * 4
    assert _part(est, "Ray's object store").pieces["initial columns"] == 2 * v * d * 4
    # the CLI pipeline never holds the model in the driver; its encoders ran before training
    pipe = _est(Cluster("local:4", mode="sharded", shards=3, clients=2), dim=d, v=v, pipeline=True, ranges=8)
    assert "vectors" not in _part(pipe, "driver").pieces
    assert _part(pipe, "encoder").count == 4 and _part(pipe, "encoder") not in pipe.parts
    # more shards: each holds fewer columns
    six = _est(Cluster("local:4", mode="sharded", shards=6, clients=2), dim=d, v=v)
    assert _part(six, "shard").pieces["columns"] == 2 * v * 17 * 4
    with pytest.raises(ParvecError, match="more shards than vector dimensions"):  # sharded.resolve's check
        _est(Cluster("local:4", mode="sharded", shards=200), dim=d, v=v)


def test_a_joined_cluster_checks_only_the_driver():
    est = M.estimate_cluster(Cluster("auto", replicas=3), TrainConfig(dim=3000, threads=1), 20_000, 10**6, 100,
                             available=2 * GiB)
    assert [p.name for p in est.parts] == ["driver"] and est.fits
    assert "not checked" in est.line() and "3 replicas" in est.line()
    assert "Ray's own processes" not in est.line()  # not started here
    est.check()
    small = dataclasses.replace(est, available=est.total - 1)
    with pytest.raises(ParvecError, match=r"in this process \(the driver\)"):
        small.check()


def test_suggestions_fit():
    cfg = TrainConfig(dim=3000, threads=1)
    v, t, s = 21_200, 1_919_290, 200
    full = M.estimate_cluster(Cluster("local:2"), cfg, v, t, s, available=None)
    one = M.estimate_cluster(Cluster("local:2", replicas=1), cfg, v, t, s, available=None)
    est = M.estimate_cluster(Cluster("local:2"), cfg, v, t, s, available=(full.total + one.total) // 2)
    assert not est.fits
    text = "; ".join(est.suggestions)
    assert "--replicas 1 needs" in text and "--mode sharded" in text
    dim = int(text.split("a smaller --dim (")[1].split()[0])
    fits = M.estimate_cluster(Cluster("local:2"), dataclasses.replace(cfg, dim=dim), v, t, s, available=est.available)
    too_big = M.estimate_cluster(Cluster("local:2"), dataclasses.replace(cfg, dim=dim + 1), v, t, s,
                                 available=est.available)
    assert fits.fits and not too_big.fits
    # a run that fits only without the overlapped syncs' copies is told so
    blocking = M.estimate_cluster(Cluster("local:2", sync_overlap=False), cfg, v, t, s, available=None)
    tight = M.estimate_cluster(Cluster("local:2"), cfg, v, t, s, available=(full.total + blocking.total) // 2)
    assert not tight.fits and any(x.startswith("--no-sync-overlap") for x in tight.suggestions)
    assert not any(x.startswith("--no-sync-overlap") for x in est.suggestions)  # it would not fit either
    with pytest.raises(ParvecError) as exc:
        est.check()
    message = str(exc.value)
    for what in ("--cluster local:2 (replicas) needs about", "driver", "2 replicas x", "object store",
                 "Ray's own processes", "fewer replicas", "--dim"):
        assert what in message


# ---------------------------------------------------------------------- refused before Ray starts
@pytest.fixture
def no_ray(monkeypatch):
    """Fail the test if a cluster run enters Ray (the check must refuse before)."""

    def session(self):
        raise AssertionError(f"Ray was started for --cluster {self.spec}: the memory check did not refuse first")

    monkeypatch.setattr(Cluster, "session", session)


def test_cli_refuses_a_cluster_run_that_does_not_fit_before_ray_starts(demo_slice, tmp_path, monkeypatch, capsys,
                                                                       no_ray):
    # The one-process figure (vectors + corpus, ~0.2 GiB here) fits; the run's processes (driver, 2 replicas with
    # a whole model each, the model twice in the object store, Ray) do not.
    monkeypatch.setattr(resources, "available_memory", lambda: int(1.5 * GiB))
    out = tmp_path / "v.txt"
    code = main(["train", str(demo_slice), "-o", str(out), "--dim", "3000", "--cluster", "local:2", "--threads", "1",
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    error = next(x for x in err.splitlines() if x.startswith("parvec: error: "))
    assert "--cluster local:2 (replicas) needs about" in error and "but 1.5 GiB is available" in error
    for what in ("driver", "2 replicas x", "object store", "fewer replicas", "--mode sharded", "a smaller --dim"):
        assert what in error, what
    assert not out.exists()


def test_api_refuses_a_cluster_run_that_does_not_fit(demo_slice, monkeypatch, no_ray):
    from parvec.word2vec import Word2Vec

    monkeypatch.setattr(resources, "available_memory", lambda: int(1.5 * GiB))
    with pytest.raises(ParvecError, match=r"--cluster local:2 \(replicas\) needs about .* replicas"):
        Word2Vec(corpus_file=str(demo_slice), vector_size=3000, workers=1, cluster=Cluster("local:2"))


def test_the_api_check_counts_the_sharded_processes_too(demo_slice, monkeypatch, no_ray):
    from parvec.word2vec import Word2Vec

    monkeypatch.setattr(resources, "available_memory", lambda: int(1.2 * GiB))
    # one shard by default on one machine (local:N): it holds every column; more shards are what fits
    with pytest.raises(ParvecError, match=r"\(sharded\) needs about .*, shard [0-9.]+ MiB .*use more shards"):
        Word2Vec(corpus_file=str(demo_slice), vector_size=3000, workers=1,
                 cluster=Cluster("local:2", mode="sharded"))
