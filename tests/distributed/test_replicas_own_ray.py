"""Replicas on a Ray that the test starts itself, not the session's (this file is scheduled apart from the tests
that share the session's Ray): two nodes on this machine (``ray.cluster_utils``), each replica reading its own
share of the input; and the niceness of the workers of a local Ray that parvec starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from ray_nodes import on_two_nodes
from topic_corpus import ANIMALS, VEHICLES, write_corpus


def test_two_node_cluster_each_node_reads_its_own_shard(tmp_path):
    pytest.importorskip("ray")
    corpus = write_corpus(tmp_path / "corpus.txt", 4000)
    res = on_two_nodes('"num_cpus": 1', "num_cpus=1", f"""
        from parvec.word2vec import Word2Vec

        cluster = parvec.Cluster("auto", replicas=2, sync_words=4000, min_sync_words=16, options={{"data": "encode"}})
        model = Word2Vec(corpus_file={str(corpus)!r}, vector_size=16, min_count=1, epochs=3, workers=1, seed=2,
                         cluster=cluster, progress=False)
        sims = {{w: [x for x, _ in model.wv.most_similar(w, topn=5)] for w in ("cat", "car")}}
        print(json.dumps({{"report": model.run_report, "sims": sims, "words": model.stats.words}}))
    """, timeout=240)
    rep = res["report"]
    assert len(set(rep["nodes"])) == 2  # one replica on each node
    assert all(d.startswith("encoded its byte range") for d in rep["data"])  # each read its own shard
    assert sum(rep["share_words"]) == 40_000 and min(rep["share_words"]) > 15_000
    assert rep["bytes_synced"] > 0 and res["words"] == 3 * 40_000
    assert sum(w in ANIMALS for w in res["sims"]["cat"]) >= 4
    assert sum(w in VEHICLES for w in res["sims"]["car"]) >= 4


def test_a_local_ray_parvec_starts_runs_its_workers_at_niceness_0():
    # Ray's default worker niceness is 15 (added to the niceness Ray started with): replicas would yield the CPU
    # to every other process on the machine; a local Ray that parvec starts runs them as a one-process run's
    # threads (at the niceness of the process that started it: the test's own, which `nice pytest` raises), the
    # environment kept
    pytest.importorskip("ray")
    script = textwrap.dedent("""
        import json, os
        import parvec

        with parvec.Cluster("local:1").session() as ray:
            actor = ray.remote(num_cpus=1)(type("Probe", (), {"nice": lambda self: os.nice(0)})).remote()
            nice = ray.get(actor.nice.remote(), timeout=120)
        print(json.dumps({"nice": nice, "env": os.environ.get("RAY_worker_niceness")}))
    """)
    env = {k: v for k, v in os.environ.items() if k != "RAY_worker_niceness"} | {"RAY_USAGE_STATS_ENABLED": "0"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res == {"nice": os.nice(0), "env": None}  # the test's niceness, inherited, plus 0
