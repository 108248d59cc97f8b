"""A sharded run on two Ray nodes of this machine whose second node cannot see the driver's temporary directory,
its corpus in an S3-compatible object store (a moto server on loopback, the only thing both nodes share besides the
checkout and the work directory given with ``--cache-dir``).

The second node is started with ``ray start`` inside its own mount namespace (``unshare -m``), where an empty
private tmpfs is mounted over the driver's ``$TMPDIR``: a file the driver writes there (a copy of the corpus, the
encoded corpus) does not exist for that node's processes.  The driver's node offers no CPU, so every mapper and
encoder task (one CPU each) runs on the second node.  The run completes and its vectors equal those of the same
run on local files, bit for bit (one client thread): the workers read their byte ranges and compressed objects
from the URL themselves, and the encoded parts reach the client through Ray's object store.  What it does not
show: the vocabulary's partitions and the shards' snapshots are written to the work directory (``--cache-dir``),
which both nodes still see here.  Root (a mount namespace with a tmpfs) is needed: skipped otherwise.
"""

from __future__ import annotations

import gzip
import json
import os
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

from parvec import storage
from parvec.formats import load_npy

REPO = Path(__file__).resolve().parents[2]

FLAGS = ["--mode", "sharded", "--shards", "2", "--clients", "1", "--threads", "1", "--minibatch-words", "128",
         "--dim", "16", "--epochs", "2", "--min-count", "1", "--no-progress"]

_CHILD = textwrap.dedent("""
    import json, os, signal, subprocess, sys, tempfile, time
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray
    from ray.cluster_utils import Cluster as RayCluster

    cfg = json.loads(sys.argv[1])
    hidden = cfg["driver_tmp"]
    nodes = RayCluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    script = (f"mount -t tmpfs -o size=1m parvec-hidden {hidden} && exec {ray_bin} start --address={nodes.address} "
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
        def listing(path):
            return sorted(os.listdir(path)), ray.get_runtime_context().get_node_id()

        seen, where = ray.get(listing.remote(hidden))
        tempfile.tempdir = hidden
        from parvec.cli import main
        code = main(cfg["argv"])
        print(json.dumps({"code": code, "seen": seen, "task_node": where,
                          "head": ray.get_runtime_context().get_node_id()}))
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
def test_a_sharded_run_whose_workers_cannot_see_the_drivers_tmpdir_reads_s3_and_equals_the_local_run(
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
    code, _, err = run(["train", corpus, "-o", tmp_path / "local.npy", "--cluster", "local:2", *FLAGS,
                        "--no-cache"], capsys)
    assert code == 0, err[-3000:]
    want, want_words, _ = load_npy(tmp_path / "local.npy")

    driver_tmp = tmp_path / "driver-tmp"
    driver_tmp.mkdir()
    (driver_tmp / "only-the-driver-sees-this").write_text("x")
    argv = ["train", f"s3://{bucket}/corpus/", "-o", str(tmp_path / "two-nodes.npy"), "--cluster", "auto", *FLAGS,
            "--cache-dir", str(tmp_path / "work")]
    # Ray's multi-node mode (``ray start --address`` needs it): both nodes on this machine's address.
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), RAY_USAGE_STATS_ENABLED="0",
               RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="1")
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps({"driver_tmp": str(driver_tmp), "argv": argv})],
                         capture_output=True, text=True, timeout=500, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    # A task on the second node finds the driver's TMPDIR empty (its own tmpfs), and it is not the driver's node.
    assert res["seen"] == [] and res["task_node"] != res["head"], res
    assert res["code"] == 0, out.stderr[-4000:]
    got, words, _ = load_npy(tmp_path / "two-nodes.npy")
    assert words == want_words and np.array_equal(got, want)
