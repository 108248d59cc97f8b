"""``--mode sharded``'s model (parvec.distributed.pipeline.ShardedWord2Vec) without the command line trains what
``parvec train --mode sharded`` trains (the command drives it through the one train flow), and its report carries
the keys every run report has (parvec.cli.run_report), its per-epoch records from the run layer."""

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


def test_the_model_without_the_cli_trains_what_the_cli_trains(ray_session, corpus_file, tmp_path, capsys):
    from parvec.distributed.pipeline import ShardedWord2Vec
    from parvec.run import RunOptions

    config = TrainConfig(algo="classic", dim=12, window=3, epochs=2, seed=4, threads=1, compute_loss=True,
                         progress=False)
    cluster = Cluster("local:2", mode="sharded", shards=2, clients=1, threads_per_actor=1)
    log = RunLog(interval_s=0.0)
    with ShardedWord2Vec(config, ReadOptions(min_count=1), cluster, tmp_path / "cache") as model:
        corpus = model.encode(str(corpus_file))
        model.run_options = RunOptions(run_log=log)
        stats = model.train(corpus)
        model.wv.save(tmp_path / "api.npy")
        work = model.work
    assert not work.exists() and stats.epochs == 2
    # the report's records come from the run layer, the learning rate from the engine's schedule
    assert [e.epoch for e in log.epochs] == [1, 2] and log.epochs[-1].lr == pytest.approx(config.final_alpha)
    steps, words, counts = load_npy(tmp_path / "api.npy")

    report_path = tmp_path / "r.json"
    assert main(["train", str(corpus_file), "-o", str(tmp_path / "v.npy"), "--cluster", "local:2", "--mode", "sharded",
                 "--shards", "2", "--clients", "1", "--threads", "1", "--dim", "12", "--epochs", "2", "--min-count",
                 "1", "--window", "3", "--seed", "4", "--no-cache", "--no-progress", "--report", str(report_path)]) == 0
    capsys.readouterr()
    cli, keys, cli_counts = load_npy(tmp_path / "v.npy")
    assert keys == words and np.array_equal(cli, steps)  # one client thread: the same run
    assert cli_counts.tolist() == counts.tolist() and len(keys) == corpus.n_words
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert [k for k in COMMON_KEYS if k not in report] == []
    assert report["kind"] == "words" and report["parameters"]["algo"] == "sharded" and report["device"] == "cpu"
    assert report["resumed_from"] is None  # the run layer's checkpoint figures, as every mode reports them
    assert report["checkpoints"] == {"every": None, "dir": None, "mid_epoch_checkpoints": 0, "epoch_end_checkpoints": 0,
                                     "checkpoint_seconds": 0.0, "failed_checkpoints": 0}
    assert report["loss_per_epoch"] == stats.loss_per_epoch and report["words_trained"] == stats.words
    assert report["byte_ranges"] == len(corpus.inputs.units) and report["vocab_size"] == corpus.n_words
    assert report["corpus_tokens_in_vocab"] == corpus.tokens == 200 * 20
    assert report["shards"] == 2 and len(report["shard_peak_memory_bytes"]) == 2 and report["peak_memory_bytes"] > 0
    assert len(report["epoch_log"]) == 2 and report["cluster"]["mode"] == "sharded"
    assert [e["lr"] for e in report["epoch_log"]] == [e.lr for e in log.epochs]
