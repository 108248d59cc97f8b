"""A sharded run's memory before and after counting (parvec.distributed.memory): the count step from the input's
size, the pipeline's processes once the vocabulary is known (no per-word table in the driver, the shards or the
clients), what actors ask Ray's memory resource for on a cluster joined, and the snapshot interval scaled with a
shard's size."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ray_nodes import on_two_nodes
from topic_corpus import write_corpus

from parvec.config import TrainConfig
from parvec.corpus import ReadOptions
from parvec.distributed.cluster import Cluster
from parvec.distributed.memory import count_step, estimate_cluster, placement
from parvec.distributed.sharded_settings import snapshot_interval
from parvec.errors import ParvecError

GiB = 1 << 30


def test_the_count_step_is_refused_when_its_reducers_cannot_fit():
    cluster = Cluster("local:2", mode="sharded")
    est = count_step(cluster, 10 * GiB, 64 << 20, 160, 50_000_000, 2, available=4 * GiB)
    assert not est.fits
    with pytest.raises(ParvecError, match=r"needs about .* but 4\.0 GiB is available: .*2 reducers x .*distinct "
                                          r"words of its hash range.*expects about 50,000,000 distinct words"):
        est.check()
    small = count_step(cluster, 100 << 20, 64 << 20, 4, 200_000, 2, available=4 * GiB)
    assert small.fits and small.total < 2 * GiB


def test_the_pipeline_holds_no_per_word_table_but_the_shards_columns():
    config = TrainConfig(dim=8, threads=1)
    cluster = Cluster("local:2", mode="sharded")
    small = estimate_cluster(cluster, config, 10**6, 2 * 10**6, 2000, pipeline=True, ranges=4, available=None)
    big = estimate_cluster(cluster, config, 32 * 10**6, 2 * 10**6, 2000, pipeline=True, ranges=4, available=None)

    def each(est, name):
        return next(p for p in est.parts if p.name == name).pieces

    # Only the shards' columns grow with the vocabulary (2 x V x 8 x 4 bytes on one shard)
    for name in ("driver", "client"):
        assert each(big, name) == each(small, name), name
    grown = {k: each(big, "shard")[k] - each(small, "shard")[k] for k in each(big, "shard")}
    assert grown == {"columns": 2 * 31 * 10**6 * 8 * 4, "noise table": 0, "row blocks": 0,
                     "minibatches in flight": 0, "runtime": 0}
    api = estimate_cluster(cluster, config, 10**6, 2 * 10**6, 2000, available=None)  # the Word2Vec API's
    assert next(p for p in api.parts if p.name == "shard").pieces["noise table"] == 8 * 10**6


class _Ray:
    def __init__(self, memory):
        self._memory = memory

    def nodes(self):
        return [{"Alive": True, "Resources": {"CPU": 8.0, "memory": m}} for m in self._memory]


def test_placement_asks_ray_for_memory_on_a_joined_cluster_and_refuses_what_no_node_has():
    needs = {"shard": 6 * GiB, "client": GiB}
    assert placement(_Ray([8 * GiB, 16 * GiB]), needs, Cluster("auto", mode="sharded")) == needs
    assert placement(_Ray([8 * GiB]), needs, Cluster("local:2", mode="sharded")) == {}  # one node, checked whole
    assert placement(_Ray([0]), needs, Cluster("auto", mode="sharded")) == {}  # no memory resource reported
    with pytest.raises(ParvecError, match=r"a shard needs about 6\.0 GiB but the largest node offers 4\.0 GiB"):
        placement(_Ray([4 * GiB, 2 * GiB]), needs, Cluster("auto", mode="sharded"))


def test_the_snapshot_interval_scales_with_a_shards_size_or_is_given():
    assert snapshot_interval(None, 100 << 20) == 60.0
    assert snapshot_interval(None, 24 * 10**9) == pytest.approx(1920.0)  # ~96 s to write: 5% of the time
    assert snapshot_interval(7.5, 24 * 10**9) == 7.5


def test_the_distinct_words_are_estimated_from_a_sample_of_the_input(tmp_path):
    from parvec.distributed.sharded_source import estimate_distinct, plan_inputs

    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(200_000)])
    path = tmp_path / "c.txt"
    with open(path, "w") as f:
        for _ in range(40):  # Zipf text: ~2 MB, the sample 256 KiB
            f.write(" ".join(words[(rng.zipf(1.2, 8_000) - 1) % len(words)]) + "\n")
    plan = plan_inputs(str(path), 2, tmp_path)
    true = len(set(path.read_text().split()))
    got = estimate_distinct(plan, ReadOptions(), sample_bytes=1 << 18)
    assert true / 3 < got < 3 * true, (got, true)  # a rough guide for the memory check, not a count
    whole = estimate_distinct(plan, ReadOptions(), sample_bytes=1 << 40)  # a sample that is the whole input
    assert whole == true


def test_on_two_ray_nodes_the_shards_and_clients_go_to_the_node_whose_memory_fits_them(tmp_path):
    """Two Ray nodes on this machine (``ray.cluster_utils``, in a child process with its own Ray): the head offers
    64 MiB of Ray's ``memory`` resource, the other 4 GiB.  A sharded run joined to them (``--cluster auto``) asks
    for each actor's memory, so every shard and client lands on the second node (without the requests Ray
    spreads them over both), and the run trains and writes its vectors."""
    pytest.importorskip("ray")
    corpus = write_corpus(tmp_path / "corpus.txt", 2000)
    report, vectors = tmp_path / "r.json", tmp_path / "v.txt"
    res = on_two_nodes('"num_cpus": 2, "memory": 64 << 20', "num_cpus=2, memory=4 << 30", f"""
        from parvec.cli import main

        code = main(["train", {str(corpus)!r}, "-o", {str(vectors)!r}, "--cluster", "auto", "--mode", "sharded",
                     "--shards", "2", "--clients", "1", "--threads", "1", "--dim", "16", "--min-count", "1",
                     "--epochs", "1", "--report", {str(report)!r}, "--no-progress"])
        print(json.dumps({{"code": code, "nodes": {{n["NodeID"]: n["Resources"].get("memory") for n in ray.nodes()}}}}))
    """)
    assert res["code"] == 0, res
    assert sorted(res["nodes"].values()) == [64 << 20, 4 << 30], res
    big = next(node for node, memory in res["nodes"].items() if memory == 4 << 30)
    rep = json.loads(report.read_text())
    assert rep["shard_nodes"] == [big, big], (rep["shard_nodes"], res)
    assert rep["client_nodes"] == [big], (rep["client_nodes"], res)
    assert vectors.stat().st_size > 0
