"""``--mode sharded``'s distributed steps as functions of typed parameters (parvec.distributed.pipeline), with
the command line apart (parvec.cli.sharded): the steps called directly train what ``parvec train --mode sharded``
trains, and its report carries the keys every run report has (parvec.cli.run_report)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from parvec.cli import main
from parvec.config import TrainConfig
from parvec.corpus import ReadOptions
from parvec.distributed import Cluster
from parvec.formats import load_npy
from parvec.runlog import RunLog

pytestmark = pytest.mark.usefixtures("ray_session")

COMMON_KEYS = ("kind", "parameters", "words_trained", "epochs", "read_seconds", "training_seconds", "words_per_sec",
               "loss_per_epoch", "peak_memory_bytes", "device", "cluster", "output", "output_binary", "checkpoints",
               "resumed_from", "vocab_size", "corpus_words", "corpus_tokens_in_vocab", "sentences", "raw_words_per_sec")


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory) -> Path:
    rng = np.random.default_rng(2)
    topics = [[f"{t}{i}" for i in range(12)] for t in ("a", "b", "c")]
    path = tmp_path_factory.mktemp("steps") / "topics.txt"
    path.write_text("".join(" ".join(rng.choice(topics[rng.integers(3)], 20)) + "\n" for _ in range(200)),
                    encoding="utf-8")
    return path


def test_the_steps_without_the_cli_train_what_the_cli_trains(ray_session, corpus_file, tmp_path, capsys):
    from parvec.distributed.pipeline import encode_input, export_model, sharded_run, train_run, work_directory

    config = TrainConfig(algo="classic", dim=12, window=3, epochs=2, seed=4, threads=1, compute_loss=True,
                         progress=False)
    cluster = Cluster("local:2", mode="sharded", shards=2, clients=1, threads_per_actor=1)
    log = RunLog(interval_s=0.0)
    with work_directory(tmp_path / "cache") as work:
        enc = encode_input(ray_session, str(corpus_file), ReadOptions(min_count=1), work, timeout_s=600.0)
        with sharded_run(ray_session, cluster, config, enc) as run:
            stats = train_run(run, log)
            vectors_npy, none = export_model(run, work, with_output_vectors=False)
            steps = np.load(vectors_npy)
    assert not work.exists() and none is None and stats.epochs == 2
    assert [e["epoch"] for e in log.epochs] == [1, 2] and log.epochs[-1]["lr"] == pytest.approx(config.final_alpha)

    report_path = tmp_path / "r.json"
    assert main(["train", str(corpus_file), "-o", str(tmp_path / "v.npy"), "--cluster", "local:2", "--mode", "sharded",
                 "--shards", "2", "--clients", "1", "--threads", "1", "--dim", "12", "--epochs", "2", "--min-count",
                 "1", "--window", "3", "--seed", "4", "--no-cache", "--no-progress", "--report", str(report_path)]) == 0
    capsys.readouterr()
    cli, keys, _ = load_npy(tmp_path / "v.npy")
    assert keys == enc["vocab"].words and np.array_equal(cli, steps)  # one client thread: the same run
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert [k for k in COMMON_KEYS if k not in report] == []
    assert report["kind"] == "words" and report["parameters"]["algo"] == "sharded" and report["device"] == "cpu"
    assert report["resumed_from"] is None and report["checkpoints"] == {"every": None, "dir": None}
    assert report["loss_per_epoch"] == stats.loss_per_epoch and report["words_trained"] == stats.words
    assert report["byte_ranges"] == enc["ranges"] and report["vocab_size"] == len(enc["vocab"])
    assert report["corpus_tokens_in_vocab"] == enc["tokens"] == 200 * 20
    assert report["shards"] == 2 and len(report["shard_peak_memory_bytes"]) == 2 and report["peak_memory_bytes"] > 0
    assert len(report["epoch_log"]) == 2 and report["cluster"]["mode"] == "sharded"
