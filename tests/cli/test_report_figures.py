"""``parvec report``: a sharded run is labelled with its shards (from the report's cluster block, or its top level
in older reports), the loss curve starts where training started, the projection's labels do not overlap, and
with several runs each run's vectors get their own projection, named after the run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from parvec.cli import main
from parvec.keyedvectors import KeyedVectors
from parvec.report import loss_steps, place_labels, read_run
from parvec.runlog import Sample


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_a_sharded_run_is_labelled_with_its_shards_from_either_place(tmp_path):
    base = {"parameters": {"algo": "sharded", "threads": 1, "dim": 16}, "timeline": [], "epoch_log": []}
    given = {"mode": "sharded", "replicas": None, "shards": None, "clients": None}  # the Cluster as given
    old = _write(tmp_path / "old.json", base | {"cluster": given, "shards": 2, "clients": 1})  # written before
    assert read_run(old).label == "sharded 1t d16 sharded×2"
    from parvec.cli.run_report import cluster_block

    block = cluster_block(given, {"shards": 1, "clients": 2, "client_threads": 1})
    assert block["shards"] == 1 and block["clients"] == 2 and block["threads_per_actor"] == 1
    new = _write(tmp_path / "new.json", base | {"cluster": block})
    assert read_run(new).label == "sharded 1t d16 sharded×1"
    replicas = _write(tmp_path / "rep.json", base | {"cluster": {"mode": "replicas", "replicas": 2}})
    assert read_run(replicas).label.endswith("replicas×2")


def _samples(timeline):
    # A report's time series as parvec.report reads it.
    samples = [Sample.from_json(d) for d in timeline]
    assert None not in samples
    return samples


def test_the_loss_curve_starts_where_training_started():
    # Samples every 2 s of a 4-s run: the loss of a sample is the mean since the one before, drawn over that span.
    timeline = [{"t": 0.0, "words": 0, "loss": None}, {"t": 2.0, "words": 500, "loss": 3.0},
                {"t": 4.0, "words": 1000, "loss": 2.5}]
    edges, losses = loss_steps(_samples(timeline))
    assert edges == [0.0, 500.0, 1000.0] and losses == [3.0, 2.5]
    # An older report without the start sample: its first loss still starts at word 0.
    assert loss_steps(_samples(timeline[1:])) == ([0.0, 500.0, 1000.0], [3.0, 2.5])
    assert loss_steps(_samples([{"words": 0, "loss": None}, {"words": 10, "loss": None},
                                {"words": 20, "loss": 1.0}])) == (
        [0.0, 10.0, 20.0], [pytest.approx(np.nan, nan_ok=True), 1.0])


def test_a_short_runs_report_has_a_loss_sample_from_its_start(tmp_path, capsys):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(200)]
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(rng.choice(words, 20)) for _ in range(4000)) + "\n")
    report = tmp_path / "r.json"
    assert main(["train", str(corpus), "-o", str(tmp_path / "v.txt"), "--epochs", "1", "--dim", "8", "--min-count",
                 "1", "--threads", "1", "--report", str(report), "--no-cache", "--no-progress"]) == 0
    timeline = json.loads(report.read_text())["timeline"]
    with_loss = [s for s in timeline if s["loss"] is not None]
    assert timeline[0]["words"] == 0 and with_loss
    edges, losses = loss_steps(_samples(timeline))
    assert edges[0] == 0 and np.isfinite(losses[0])


def test_projection_labels_never_overlap(tmp_path):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(1)
    # 40 points in three tight clumps: fixed offsets put many labels on top of each other.
    xy = np.concatenate([rng.normal(c, 0.01, size=(n, 2)) for c, n in ((0, 20), (1, 15), (3, 5))])
    words = [f"word{i:02d}" for i in range(len(xy))]
    fig, ax = plt.subplots(figsize=(8, 6))
    ax.scatter(xy[:, 0], xy[:, 1], s=14)
    ax.margins(0.12)
    texts, left_out = place_labels(ax, xy, words)
    renderer = fig.canvas.get_renderer()
    boxes = []
    for t in texts:  # the words' boxes, not their leader lines
        t.update_positions(renderer)
        boxes.append(matplotlib.text.Text.get_window_extent(t, renderer))
    assert len(texts) + len(left_out) == len(words) and len(texts) >= 10
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b)
    assert [t.get_text() for t in texts] == [w for w in words if w not in left_out]  # the most frequent first
    plt.close(fig)


def test_two_runs_get_a_projection_each_named_after_its_run(tmp_path):
    rng = np.random.default_rng(2)
    runs = []
    for algo in ("hogbatch", "par"):
        vec = tmp_path / f"{algo}.txt"
        KeyedVectors(rng.standard_normal((30, 8)).astype(np.float32), [f"w{i}" for i in range(30)]) \
            .save_word2vec_format(vec)
        runs.append(_write(tmp_path / f"{algo}.json", {
            "parameters": {"algo": algo, "threads": 2, "dim": 8}, "output": str(vec), "output_binary": False,
            "timeline": [{"t": 0.0, "words": 0, "loss": None, "lr": 0.025},
                         {"t": 1.0, "words": 100, "loss": 3.0, "lr": 0.0, "words_per_sec": 100.0}],
            "epoch_log": []}))
    html_path = tmp_path / "r.html"
    assert main(["report", *map(str, runs), "-o", str(html_path)]) == 0
    html = html_path.read_text()
    titles = re.findall(r"<h2>(PCA projection[^<]*)</h2>", html)
    assert titles == ["PCA projection of hogbatch 2t d8: hogbatch.txt", "PCA projection of par 2t d8: par.txt"]
    assert (tmp_path / "r_files" / "projection.png").exists() and (tmp_path / "r_files" / "projection2.png").exists()


class _Figures:  # a driver's report (parvec.engine.DriverReport)
    def to_json(self):
        return {"syncs": 4}


def test_the_run_report_record_writes_the_keys_in_the_report_files_order():
    from parvec.checkpoints import CheckpointCounts
    from parvec.cli.run_report import CorpusFigures, checkpoints, resumed_from, run_report
    from parvec.engine import TrainStats

    stats = TrainStats(words=10, seconds=2.0, epochs=1, loss_per_epoch=[2.5], cpu_seconds=3.0, cpu_processes=2,
                       cpu_by_process={"parvec": 3.0})
    report = run_report("words", {"dim": 8}, stats, read_seconds=0.5, device="cpu", output="/v.bin",
                        output_binary=True, cluster={"mode": "replicas"},
                        checkpoints=checkpoints(CheckpointCounts(epoch_end_checkpoints=1), None, "ck"),
                        resumed_from=resumed_from("ck/checkpoint", 1.5, None),
                        corpus=CorpusFigures(vocab_size=3, raw_words=12, tokens=10, sentences=2),
                        extra={"model": "skip-gram", "device": "overridden"}, driver=_Figures())
    d = report.to_json()
    assert list(d) == ["kind", "parameters", "vocab_size", "corpus_words", "corpus_tokens_in_vocab", "sentences",
                       "words_trained", "epochs", "read_seconds", "training_seconds", "words_per_sec",
                       "raw_words_per_sec", "cpu_seconds", "cpu_seconds_per_word", "cpu_processes",
                       "cpu_seconds_by_process", "loss_per_epoch", "peak_memory_bytes", "device", "cluster", "output",
                       "output_binary", "checkpoints", "resumed_from", "model", "syncs"]
    assert d["device"] == "overridden" and d["cpu_seconds_per_word"] == 0.3 and d["raw_words_per_sec"] == 6.0
    assert d["checkpoints"] == {"mid_epoch_checkpoints": 0, "epoch_end_checkpoints": 1, "checkpoint_seconds": 0.0,
                                "failed_checkpoints": 0, "every": None, "dir": "ck"}
    assert d["resumed_from"] == {"path": "ck/checkpoint", "saved_at": 1.5, "position": None}
    json.dumps(d)
