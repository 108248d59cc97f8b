"""Runs of both cluster modes on two Ray nodes of this machine that share no directory, only an S3-compatible
object store (a moto server on loopback) and Ray: the corpus is read from ``s3://``, and ``-o``, ``--save-model``
and ``--checkpoint-dir`` are ``s3://`` URLs.

The second node is started with ``ray start`` inside its own mount namespace (``unshare -m``), where an empty
private tmpfs is mounted over the driver's scratch (its ``$TMPDIR``: the staged corpus of ``--mode replicas``, the
encoded corpus, the local side of the outputs and of the checkpoint directory) and over the work directory given
with ``--cache-dir``, and another over the node's own scratch (its ``$TMPDIR``), which the driver does not see.
The driver's node offers no CPU, so every task, replica and client (one CPU each) runs on the second node.  Each
run completes and its vectors equal those of the same run on local files on one node, bit for bit (one thread):
``--mode sharded`` (the workers read their units from the URL, the vocabulary's partitions and the encoded parts
travel through Ray's object store, each shard writes its snapshots on its own node and uploads them to the
checkpoint URL, ``-o`` and ``--save-model`` stream from the shards' nodes), ``--mode replicas`` (each replica
fetches its share of the encoded corpus from Ray's object store) and a sharded run resumed from the checkpoint URL
(its every epoch done: the shards' files checked and written out).  The models read back from the URL equal the
vectors; the checkpoint URLs hold the replicas' model and the sharded checkpoint's ``model.json``, vocabulary
partitions and each shard's snapshot.  What it does not show: a shard restarted on another node reading its
snapshot back from the URL (tests/distributed/test_node_local_files.py checks that read without Ray).  Root (a
mount namespace with a tmpfs) is needed: skipped otherwise.
"""

from __future__ import annotations

import gzip
import json
import os
import posixpath
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from s3_server import bucket, s3_endpoint  # noqa: F401 - fixtures
from topic_corpus import three_topic_sentences

from parvec import Word2Vec, storage
from parvec.formats import load_npy

REPO = Path(__file__).resolve().parents[2]

COMMON = ["--clients", "1", "--threads", "1", "--minibatch-words", "128", "--dim", "16", "--epochs", "2",
          "--min-count", "1", "--no-progress"]
MODES = {"sharded": ["--mode", "sharded", "--shards", "2", *COMMON],
         "replicas": ["--mode", "replicas", "--replicas", "2", "--sync-words", "2000", *COMMON]}

# Started in a process of its own (``python -c``): a Ray head offering no CPU (the driver's node) and a second
# node started by ``ray start`` in its own mount namespace, where a private tmpfs covers each of ``hidden`` (the
# driver's scratch and work directory) and another its own scratch (its $TMPDIR); then each ``parvec train`` of
# ``runs`` in turn, on the two nodes.
_CHILD = textwrap.dedent("""
    import json, os, signal, subprocess, sys, tempfile, time
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray
    from ray.cluster_utils import Cluster as RayCluster

    cfg = json.loads(sys.argv[1])
    nodes = RayCluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    mounts = " && ".join(f"mount -t tmpfs -o size=256m parvec-hidden {d}" for d in [*cfg["hidden"], cfg["node_tmp"]])
    script = (f"{mounts} && TMPDIR={cfg['node_tmp']} exec {ray_bin} start --address={nodes.address} "
              "--node-ip-address=127.0.0.1 --num-cpus=2 --block --disable-usage-stats")
    node = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ray.init(address=nodes.address)
        deadline = time.monotonic() + 120
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert node.poll() is None and time.monotonic() < deadline, "the second node did not join"
            time.sleep(0.5)

        @ray.remote(num_cpus=1)
        def listing(paths):
            return [sorted(os.listdir(p)) for p in paths], ray.get_runtime_context().get_node_id()

        seen, where = ray.get(listing.remote(cfg["hidden"]))
        os.environ["TMPDIR"] = tempfile.tempdir = cfg["driver_tmp"]  # the driver's scratch (Ray's sockets stay in /tmp)
        from parvec.cli import main
        codes = {name: main(argv) for name, argv in cfg["runs"].items()}
        print(json.dumps({"codes": codes, "seen": seen, "task_node": where,
                          "head": ray.get_runtime_context().get_node_id(),
                          "driver_sees": sorted(os.listdir(cfg["node_tmp"]))}))
    finally:
        ray.shutdown()
        try:
            os.killpg(node.pid, signal.SIGTERM)
            node.wait(timeout=30)
        except Exception:
            os.killpg(node.pid, signal.SIGKILL)
        nodes.shutdown()
""")


def _can_hide_directories() -> bool:
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs -o size=1m none /mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.ray
def test_runs_of_both_modes_on_two_nodes_that_share_only_the_object_store_equal_the_local_runs(
        bucket, tmp_path, capsys):  # noqa: F811
    pytest.importorskip("ray")
    if not _can_hide_directories():
        pytest.skip("needs root: a mount namespace (unshare -m) with a private tmpfs")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sentences = three_topic_sentences(3000, seed=21)
    with open(corpus / "part-0.txt", "w", encoding="utf-8") as f:
        f.write("\n".join(" ".join(s) for s in sentences[0::2]) + "\n")
    with gzip.open(corpus / "part-1.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(" ".join(s) for s in sentences[1::2]) + "\n")
    for p in sorted(corpus.iterdir()):
        storage.upload(p, f"s3://{bucket}/corpus/{p.name}")
    want = {}
    for mode, flags in MODES.items():
        code, _, err = run(["train", corpus, "-o", tmp_path / f"local-{mode}.npy", "--cluster", "local:2", *flags,
                            "--no-cache"], capsys)
        assert code == 0, err[-3000:]
        want[mode] = load_npy(tmp_path / f"local-{mode}.npy")

    driver_tmp, work, node_tmp = tmp_path / "driver-tmp", tmp_path / "work", tmp_path / "node-tmp"
    for d in (driver_tmp, work, node_tmp):
        d.mkdir()
    (driver_tmp / "only-the-driver-sees-this").write_text("x")
    (work / "only-the-driver-sees-this").write_text("x")
    out_url = f"s3://{bucket}/out"
    runs = {mode: ["train", f"s3://{bucket}/corpus/", "-o", f"{out_url}/{mode}.npy", "--save-model",
                   f"{out_url}/{mode}-model", "--checkpoint-dir", f"{out_url}/{mode}-ck", "--cluster", "auto",
                   *flags, "--cache-dir", str(work)] for mode, flags in MODES.items()}
    runs["replicas"] += ["--report", f"{out_url}/replicas-report.json"]
    # The sharded checkpoint, read back from the URL by a new run on the same two nodes (every epoch done: its
    # shards' files are checked and written out from the driver's copy).
    runs["resumed"] = ["train", f"s3://{bucket}/corpus/", "--resume", f"{out_url}/sharded-ck", "-o",
                       f"{out_url}/resumed.npy", "--cluster", "auto", "--no-progress", "--cache-dir", str(work)]
    # Ray's multi-node mode (``ray start --address`` needs it): both nodes on this machine's address.
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), RAY_USAGE_STATS_ENABLED="0",
               RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="1")
    cfg = {"driver_tmp": str(driver_tmp), "hidden": [str(driver_tmp), str(work)], "node_tmp": str(node_tmp),
           "runs": runs}
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cfg)], capture_output=True, text=True,
                         timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    # A task on the second node finds the driver's scratch and work directory empty (its own tmpfs), and it is not
    # the driver's node; the driver does not see the second node's scratch.
    assert res["seen"] == [[], []] and res["task_node"] != res["head"] and res["driver_sees"] == [], res
    assert res["codes"] == {name: 0 for name in runs}, out.stderr[-6000:]
    fs, root = storage.filesystem(out_url)
    for name, mode in (("sharded", "sharded"), ("replicas", "replicas"), ("resumed", "sharded")):
        storage.download(f"{out_url}/{name}.npy", tmp_path / f"got-{name}.npy")
        for suffix in (".vocab.txt", ".counts.npy"):
            storage.download(f"{out_url}/{name}{suffix}", tmp_path / f"got-{name}{suffix}")
        got, words, _ = load_npy(tmp_path / f"got-{name}.npy")
        want_vectors, want_words, _ = want[mode]
        assert words == want_words and np.array_equal(got, want_vectors), name
    # Each replica (on the second node) found its share in Ray's object store.
    report = json.loads(fs.cat_file(f"{root}/replicas-report.json"))
    assert list(_values(report, "data")) == [["its share from Ray's object store"] * 2], report
    for mode in MODES:  # the models, read back from the URL
        model = Word2Vec.load(f"{out_url}/{mode}-model")
        assert model.wv.index_to_key == want[mode][1] and np.array_equal(model.wv.vectors, want[mode][0]), mode
    # The checkpoints: the replicas' model.json and matrices; the sharded one's model.json, vocabulary partitions
    # (uploaded by the driver) and each shard's snapshot of the last epoch (uploaded by the shard from its node).
    assert any(p.endswith("/model.json") for p in fs.find(f"{root}/replicas-ck")), fs.find(f"{root}/replicas-ck")
    ck = f"{root}/sharded-ck"
    found = fs.find(ck)
    meta = [p for p in found if p.endswith("/model.json")]
    assert len(meta) == 1, found
    sharded = json.loads(fs.cat_file(meta[0]))["sharded"]
    assert [f["directory"].split("/")[-2] for f in sharded["files"]] == ["shard-0-of-2", "shard-1-of-2"]
    for f in sharded["files"]:
        shard_dir = posixpath.normpath(posixpath.join(f"{ck}/checkpoint", f["directory"]))
        assert {f"{shard_dir}/{n}" for n in ("in.npy", "out.npy", "meta.json")} <= set(found), (shard_dir, found)
    assert len([p for p in found if "/vocab/part-" in p]) == 5 * len(sharded["vocab"]["parts"]), found


def _values(tree, key):
    # Every value of ``key`` in a JSON tree.
    if isinstance(tree, dict):
        for k, v in tree.items():
            if k == key:
                yield v
            else:
                yield from _values(v, key)
    elif isinstance(tree, list):
        for v in tree:
            yield from _values(v, key)
