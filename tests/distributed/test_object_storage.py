"""Cluster runs (``--mode replicas``, ``--mode sharded``) with their corpus in an S3-compatible object store (a moto
server on loopback) and their outputs and checkpoints written to it: the vectors equal those of the same run on
local files, bit for bit at one thread, and a sharded run killed with SIGKILL after a checkpoint resumes from the
``s3://`` checkpoint directory."""

from __future__ import annotations

import bz2
import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from fault_tools import descendants_titled
from s3_server import bucket, s3_endpoint  # noqa: F401 - fixtures
from topic_corpus import three_topic_sentences

from parvec import storage
from parvec.formats import load_npy

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("ray_session")

SHARDED = ["--cluster", "local:2", "--mode", "sharded", "--shards", "2", "--clients", "1", "--threads", "1",
           "--minibatch-words", "128", "--dim", "16", "--epochs", "4", "--min-count", "1", "--no-cache"]
REPLICAS = ["--cluster", "local:2", "--mode", "replicas", "--replicas", "2", "--threads", "1", "--dim", "16",
            "--epochs", "2", "--min-count", "1", "--no-cache", "--seed", "3"]


def _own_ray_run(argv: list[str]) -> tuple[int, str]:
    """``parvec ARGV`` in a child process, whose ``--cluster local:2`` starts its own Ray from this environment
    (the S3 server's address and credentials): the workers of a sharded run read the corpus from the URL
    themselves, with the credentials of their own environment, which the session's Ray (started before the S3
    server) does not hold."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), RAY_USAGE_STATS_ENABLED="0")
    out = subprocess.run([sys.executable, "-m", "parvec", *map(str, argv)], capture_output=True, text=True,
                         env=env, timeout=600)
    return out.returncode, out.stderr


def _s3fs():
    import s3fs

    return s3fs.S3FileSystem(skip_instance_cache=True)


def _corpus(directory: Path, bucket_name: str) -> tuple[Path, str]:
    """Three parts (plain, gzip, bzip2) of a three-topic corpus, on local disk and under s3://BUCKET/corpus/."""
    directory.mkdir()
    sentences = three_topic_sentences(3000, seed=21)
    for k, (name, opener) in enumerate([("part-0.txt", open), ("part-1.txt.gz", gzip.open),
                                        ("part-2.txt.bz2", bz2.open)]):
        with opener(directory / name, "wt", encoding="utf-8") as f:
            f.write("\n".join(" ".join(s) for s in sentences[k::3]) + "\n")
        storage.upload(directory / name, f"s3://{bucket_name}/corpus/{name}")
    return directory, f"s3://{bucket_name}/corpus/"


def _s3_npy(url: str, tmp: Path) -> tuple[np.ndarray, list[str]]:
    """The vectors and words of ``-o URL.npy`` (its .npy, .vocab.txt and .counts.npy), read from a local copy."""
    local = tmp / "downloaded"
    name = url.rsplit("/", 1)[1]
    for key in _s3fs().glob(url.removeprefix("s3://") + ".*"):
        storage.download("s3://" + key, local / key.rsplit("/", 1)[1])
    vectors, words, _ = load_npy(local / f"{name}.npy")
    return vectors, words


@pytest.mark.ray
@pytest.mark.parametrize("flags", [REPLICAS, SHARDED], ids=["replicas", "sharded"])
def test_a_cluster_run_from_and_to_s3_equals_the_local_run(flags, bucket, tmp_path, capsys):  # noqa: F811
    corpus, url = _corpus(tmp_path / "corpus", bucket)
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.npy", *flags], capsys)
    assert code == 0, err[-3000:]
    want, want_words, _ = load_npy(tmp_path / "v.npy")
    s3 = f"s3://{bucket}"
    argv = ["train", url, "-o", f"{s3}/out/v.npy", "--save-model", f"{s3}/out/model", "--checkpoint-dir",
            f"{s3}/ck", *flags]
    if flags is SHARDED:  # read by the workers from the URL (not copied to the driver)
        code, err = _own_ray_run(argv)
        assert "parvec-staged" not in err
    else:
        code, _, err = run(argv, capsys)
    assert code == 0, err[-3000:]
    fs = _s3fs()
    assert fs.exists(f"{bucket}/out/model/model.json") and fs.exists(f"{bucket}/ck/checkpoint/model.json")
    got, words = _s3_npy(f"{s3}/out/v", tmp_path)
    # One thread per replica or client: the same words trained in the same order, bit for bit.
    assert words == want_words and np.array_equal(got, want)


@pytest.mark.ray
def test_a_sharded_run_killed_after_an_s3_checkpoint_resumes_from_it_bit_for_bit(bucket, tmp_path, capsys):  # noqa: F811
    corpus, url = _corpus(tmp_path / "corpus", bucket)
    code, _, err = run(["train", corpus, "-o", tmp_path / "full.npy", *SHARDED], capsys)
    assert code == 0, err[-3000:]
    want, want_words, _ = load_npy(tmp_path / "full.npy")

    ck = f"s3://{bucket}/ck"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.Popen([sys.executable, "-m", "parvec", "train", url, "-o", f"s3://{bucket}/killed.npy",
                             *SHARDED, "--checkpoint-dir", ck], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env)
    fs = _s3fs()
    ray_processes: list[int] = []
    try:
        deadline = time.monotonic() + 400
        while proc.poll() is None and time.monotonic() < deadline:
            fs.invalidate_cache()
            if fs.exists(f"{bucket}/ck/checkpoint/model.json"):
                break
            time.sleep(0.05)
        ray_processes = descendants_titled("", proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        for pid in [proc.pid, *ray_processes]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        stderr = proc.stderr.read()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, f"the run ended before it was killed: {stderr[-2000:]}"
    assert not fs.exists(f"{bucket}/killed.npy")

    code, err = _own_ray_run(["train", url, "-o", f"s3://{bucket}/resumed.npy", "--no-cache", "--resume", ck])
    assert code == 0, err[-3000:]
    assert "every shard restored its columns from the checkpoint's snapshot" in err
    got, words = _s3_npy(f"s3://{bucket}/resumed", tmp_path)
    assert words == want_words and np.array_equal(got, want)
    fs.invalidate_cache()
    assert fs.exists(f"{bucket}/ck/checkpoint/model.json")  # checkpointed on, to the URL


@pytest.mark.ray
def test_a_sharded_runs_partitioned_output_is_written_by_the_clusters_tasks(bucket, tmp_path, capsys):  # noqa: F811
    corpus, url = _corpus(tmp_path / "corpus", bucket)
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.bin", "--binary", "1", *SHARDED], capsys)
    assert code == 0, err[-3000:]
    code, err = _own_ray_run(["train", url, "-o", f"s3://{bucket}/parts/", *SHARDED])
    assert code == 0, err[-3000:]
    assert "(written by the cluster's tasks) and the manifest to s3://" in err and "parvec-staged" not in err
    fs = _s3fs()
    assert sorted(k.rsplit("/", 1)[1] for k in fs.ls(f"{bucket}/parts/")) == ["manifest.json", "part-00000.bin"]
    assert fs.cat(f"{bucket}/parts/part-00000.bin") == (tmp_path / "v.bin").read_bytes()  # the one-file output's bytes
    from parvec import KeyedVectors

    back, want = (KeyedVectors.load_word2vec_format(f"s3://{bucket}/parts/"),
                  KeyedVectors.load_word2vec_format(tmp_path / "v.bin", binary=True))
    assert back.index_to_key == want.index_to_key and np.array_equal(back.vectors, want.vectors)
