"""Cluster flags that depend only on the flags and the CPUs of ``local:N``: an explicit ``--threads`` per replica
is honoured or refused (never lowered in silence), and every such refusal comes before the corpus is read and
Ray starts.  No Ray here: ``Cluster.session`` fails the test if it is entered."""

from __future__ import annotations

import pytest
from cli_run import run

from parvec.config import TrainConfig
from parvec.distributed import Cluster, check_cpus
from parvec.distributed.replica_plan import replica_threads
from parvec.errors import ParvecError


@pytest.fixture()
def no_ray(monkeypatch):
    """Entering a Ray session fails the test: what is refused must be refused before Ray starts."""
    from parvec.distributed import cluster

    def session(self):
        raise AssertionError(f"Ray was started for --cluster {self.spec}; the refusal should have come first")

    monkeypatch.setattr(cluster.Cluster, "session", session)


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("the cat sat on the mat\nthe dog sat on the log\n" * 200, encoding="utf-8")
    return path


@pytest.mark.parametrize(("flags", "message"), [
    # 2 replicas x 2 threads ran as 2 x 1 without a word; 1 x 3 as 1 x 2
    (["--replicas", "2", "--threads", "2"],
     "--replicas 2 x --threads 2 need 4 CPUs but the Ray cluster has 2: each replica is a Ray actor that asks for "
     "its threads as CPUs, so Ray would wait for free CPUs forever; use replicas x threads <= 2: --threads 1 with 2 "
     "replicas (or leave --threads out: parvec then fits the threads to the CPUs); or a larger cluster"),
    (["--replicas", "1", "--threads", "3"], "--replicas 1 x --threads 3 need 3 CPUs but the Ray cluster has 2"),
    (["--replicas", "4", "--threads", "1"], "--replicas 4 x --threads 1 need 4 CPUs but the Ray cluster has 2: "),
    (["--mode", "sharded", "--shards", "50", "--clients", "4"],
     "--shards 50 --clients 4 start 54 Ray actors (every shard and client is a process) but the Ray cluster has 2 "
     "CPUs"),
])
def test_what_local_n_cannot_run_is_refused_before_ray_starts(no_ray, corpus, tmp_path, capsys, flags, message):
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.txt", "--cluster", "local:2", "--min-count", "1",
                        "--no-cache", *flags], capsys)
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("parvec: error: ") and message in last, last
    assert "words, vocabulary" not in err  # refused before the corpus was read
    assert not (tmp_path / "v.txt").exists()


def test_an_explicit_thread_count_per_replica_is_honoured_or_refused_and_the_default_fits():
    # --threads given on the command line becomes Cluster.threads_per_actor: honoured when it fits ...
    assert replica_threads(Cluster("local:4", replicas=2, threads_per_actor=2), TrainConfig(threads=1), 4) == (2, None)
    # ... refused when it does not, naming what fits
    with pytest.raises(ParvecError, match=r"--replicas 2 x --threads 2 need 4 CPUs .* --threads 1 with 2 replicas"):
        replica_threads(Cluster("local:2", threads_per_actor=2), TrainConfig(), 2)
    # Left out, the default is fitted to the CPUs in silence: all cores (2 here) over 2 replicas is 1 each.
    assert replica_threads(Cluster("local:2"), TrainConfig(threads=2), 2) == (1, None)
    # Python's workers=3 given explicitly and lowered to fit: said, with why.
    per, note = replica_threads(Cluster("local:2", replicas=1), TrainConfig(threads=3), 2, workers_given=True)
    assert per == 2 and note == ("parvec: note: 1 replica x 2 threads: workers=3 (--threads 3) lowered to fit the "
                                 "Ray cluster's 2 CPUs")


def test_check_cpus_never_starts_ray_and_passes_what_fits(no_ray):
    check_cpus(Cluster("local:2"), TrainConfig(threads=2))  # the default: 2 replicas x 1 thread
    check_cpus(Cluster("local:4", mode="sharded", shards=2, clients=2), TrainConfig())
    check_cpus(Cluster("auto", replicas=8, threads_per_actor=8), TrainConfig())  # a joined cluster: checked on Ray
    with pytest.raises(ParvecError, match="--replicas 3 x --threads 1 need 3 CPUs but the Ray cluster has 2"):
        check_cpus(Cluster("local:2", replicas=3), TrainConfig(threads=1))


@pytest.mark.parametrize("algo", ["par", "classic", "hogbatch"])
def test_an_explicit_algo_with_mode_sharded_is_refused_before_ray_starts(no_ray, corpus, tmp_path, capsys, algo):
    # --mode sharded trains its own minibatch SGNS whatever --algo says: an explicit --algo ran, exit 0, as
    # "algo: sharded" without a word.
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.txt", "--cluster", "local:2", "--mode", "sharded",
                        "--min-count", "1", "--no-cache", "--algo", algo], capsys)
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last == (f"parvec: error: --algo {algo} is not available with --mode sharded: the sharded mode trains "
                    "skip-gram with negative sampling in its own minibatch kernels on the shards (--minibatch-words "
                    "and --negatives-per set them), not one of the CPU algorithms; leave --algo out"), last
    assert "words, vocabulary" not in err  # refused before the corpus was read
    assert not (tmp_path / "v.txt").exists()


def test_more_replicas_than_the_corpus_has_chunks_is_refused_before_ray_starts(no_ray, tmp_path, capsys):
    # 15,000 tokens make 2 chunks of about 10,000 words; local:4 starts 4 replicas: refused once Ray had started.
    path = tmp_path / "c.txt"
    path.write_text("".join(f"w{i % 50} w{(i * 7) % 50} w{(i * 3) % 50}\n" for i in range(5000)), encoding="utf-8")
    code, _, err = run(["train", path, "-o", tmp_path / "v.txt", "--cluster", "local:4", "--min-count", "1",
                        "--no-cache", "--epochs", "1"], capsys)
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last == ("parvec: error: the corpus makes 2 chunk(s) of about 10000 words, fewer than the 4 replicas: "
                    "use fewer replicas (or a larger corpus)"), last
    assert not (tmp_path / "v.txt").exists()


def test_resume_restores_the_snapshot_interval_a_sharded_checkpoint_recorded():
    from parvec.cli.resume import restore_cluster
    from parvec.cluster_record import ClusterRecord

    record = ClusterRecord.from_json({"spec": "local:2", "mode": "sharded", "shards": 1, "clients": 1,
                                      "threads_per_actor": 1, "checkpoint_interval_s": 30.0})
    # Left out: the checkpoint's interval (--resume ck alone used to fall back to the scaled default), and said.
    values = {"cluster": None, "cluster_mode": "replicas", "shards": None, "clients": None, "threads": 2,
              "snapshot_interval": None}
    r = restore_cluster(values, record, True, frozenset())
    conflicts, lines, args = r.conflicts, r.lines, values | dict(r.flags)
    assert conflicts == () and args["snapshot_interval"] == 30.0 and args["cluster_mode"] == "sharded"
    assert ("snapshots inside an epoch every 30 s, as the checkpoint was trained (--snapshot-interval overrides)"
            in lines)
    # Given: it overrides (it decides when the shards write, not what is trained).
    values = {"cluster": None, "cluster_mode": "replicas", "shards": None, "clients": None, "threads": 2,
              "snapshot_interval": 5.0}
    r = restore_cluster(values, record, True, frozenset({"snapshot_interval"}))
    conflicts, lines, args = r.conflicts, r.lines, values | dict(r.flags)
    assert conflicts == () and args["snapshot_interval"] == 5.0 and not any("snapshots inside" in x for x in lines)


@pytest.mark.parametrize("algo", ["par", "classic"])
def test_word2vec_refuses_another_algorithm_on_a_sharded_cluster(no_ray, corpus, algo):
    # the API as the CLI: a sharded cluster trains its own window batches (HogBatch's step), so algo="par" would
    # say one thing and run another; refused before Ray starts or the corpus is read
    import parvec

    with pytest.raises(ParvecError, match=rf"^algo='{algo}' is not available with --mode sharded: .*leave algo out"):
        parvec.Word2Vec(corpus_file=corpus, min_count=1, algo=algo,
                        cluster=parvec.Cluster("local:2", mode="sharded", shards=2))
