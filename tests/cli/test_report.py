"""`parvec train --report` time series and `parvec report`: figures of a real run, odd runs, errors, a browser."""

from __future__ import annotations

import base64
import json
import lzma
import math
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from shared_files import SHARED_DATA, needs_shared

from parvec.cli import main
from parvec.evaluation import default_eval_paths
from parvec.runlog import RunLog, Totals

DEMO = Path(__file__).resolve().parents[2] / "src" / "parvec" / "data" / "demo_corpus.txt.xz"


def _png_pixels(data: bytes) -> np.ndarray:
    import io

    import matplotlib.image as mpimg

    return mpimg.imread(io.BytesIO(data), format="png")


def _not_blank(pixels: np.ndarray) -> bool:
    rgb = pixels[..., :3]
    # A blank image is one colour; a figure has axes, lines and text: many pixels far from the background.
    background = np.median(rgb.reshape(-1, 3), axis=0)
    far = np.abs(rgb - background).sum(axis=-1) > 0.3
    return bool(far.mean() > 0.01)


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "small.txt"
    with lzma.open(DEMO, "rt", encoding="utf-8") as f:
        text = f.read(1_500_000)
    path.write_text(text[: text.rfind("\n") + 1] if "\n" in text else text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def real_run(small_corpus: Path, tmp_path_factory) -> tuple[Path, Path]:
    if not default_eval_paths():  # ../shared/data/eval, else the sets parvec ships (src/parvec/data)
        pytest.fail("no evaluation files found, not even the ones parvec ships in src/parvec/data")
    out = tmp_path_factory.mktemp("run")
    report = out / "run.json"
    code = main(["train", str(small_corpus), "-o", str(out / "vec.txt"), "--epochs", "3", "--dim", "32",
                 "--threads", "1", "--min-count", "3", "--report", str(report), "--eval-every-epoch",
                 "--report-interval", "0.01", "--no-cache", "--no-progress"])
    assert code == 0
    return report, out / "vec.txt"


def test_report_json_has_time_series_and_epoch_scores(real_run):
    report, _ = real_run
    d = json.loads(report.read_text())
    tl = d["timeline"]
    assert tl[0]["words"] == 0 and tl[0]["lr"] == pytest.approx(d["parameters"]["alpha"])
    assert len(tl) >= 3
    words = [s["words"] for s in tl]
    assert words == sorted(words) and words[-1] == d["words_trained"]
    lrs = [s["lr"] for s in tl]
    assert lrs == sorted(lrs, reverse=True) and lrs[-1] < 0.01 * lrs[0]
    assert all(s["loss"] is None or 0 < s["loss"] < 10 for s in tl)
    assert any(s["words_per_sec"] for s in tl)
    assert d["epochs"] == 3
    assert [e["epoch"] for e in d["epoch_log"]] == [1, 2, 3]
    for e in d["epoch_log"]:
        assert set(e["scores"]) == {"ws353", "simlex", "analogy"}
        assert e["loss"] == pytest.approx(d["loss_per_epoch"][e["epoch"] - 1])
    assert d["words_per_sec"] == pytest.approx(d["words_trained"] / d["training_seconds"])
    assert d["output"].endswith("vec.txt")


def test_training_seconds_leave_out_the_evaluations_between_epochs(small_corpus, tmp_path, monkeypatch):
    # Each per-epoch evaluation takes at least 0.5 s more here: if the run counted them as training, its training
    # seconds plus the evaluations' would exceed the wall time of the whole command.
    import parvec.evaluation as evaluation

    real = evaluation.score_sets

    def slow_evaluate(*args, **kwargs):
        time.sleep(0.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluation, "score_sets", slow_evaluate)
    report = tmp_path / "run.json"
    t0 = time.perf_counter()
    code = main(["train", str(small_corpus), "-o", str(tmp_path / "vec.txt"), "--epochs", "2", "--dim", "16",
                 "--threads", "1", "--min-count", "3", "--report", str(report), "--eval-every-epoch", "--no-cache",
                 "--no-progress"])
    wall = time.perf_counter() - t0
    assert code == 0
    d = json.loads(report.read_text())
    evals = [e["eval_seconds"] for e in d["epoch_log"]]
    assert len(evals) == 2 and min(evals) >= 0.5
    assert d["training_seconds"] + sum(evals) <= wall


def test_report_draws_every_figure(real_run, tmp_path):
    report, _ = real_run
    html_path = tmp_path / "report.html"
    assert main(["report", str(report), "-o", str(html_path), "--words", "one", "two", "three", "four",
                 "nosuchword"]) == 0
    html = html_path.read_text()
    images = dict(re.findall(r"<img id='(\w+)'[^>]*src='data:image/png;base64,([^']+)'", html))
    assert set(images) == {"loss", "throughput", "quality", "projection"}
    for name, b64 in images.items():
        png = base64.b64decode(b64)
        assert (tmp_path / "report_files" / f"{name}.png").read_bytes() == png
        assert _not_blank(_png_pixels(png)), name
    assert "nosuchword" in html  # the missing word is named, not silently dropped
    assert "<h2>Parameters</h2>" in html and "hogbatch" in html


def test_nan_loss_and_single_epoch_still_render(tmp_path):
    run = {"parameters": {"algo": "par", "threads": 2, "dim": 8, "alpha": 0.025}, "kind": "words",
           "loss_per_epoch": [float("nan")],
           "timeline": [{"t": 0.0, "epoch": 1, "words": 0, "words_per_sec": None, "lr": 0.025, "loss": None},
                        {"t": 1.0, "epoch": 1, "words": 100, "words_per_sec": 100.0, "lr": 0.0, "loss": float("nan")}],
           "epochs": 1, "epoch_log": [{"epoch": 1, "words": 100, "loss": float("nan"), "seconds": 1.0, "lr": 0.0}]}
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(run))  # json writes NaN, as Python's report writer does
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "id='loss'" in html and "id='quality'" in html
    assert "no vectors file" in html
    loss = _png_pixels((tmp_path / "r_files" / "loss.png").read_bytes())
    assert _not_blank(loss)


def test_several_runs_are_overlaid(real_run, tmp_path):
    report, _ = real_run
    other = json.loads(report.read_text())
    other["parameters"]["algo"] = "par"
    for s in other["timeline"]:
        if s["words_per_sec"]:
            s["words_per_sec"] *= 1.9
    p2 = tmp_path / "par.json"
    p2.write_text(json.dumps(other))
    assert main(["report", str(report), str(p2), "-o", str(tmp_path / "both.html")]) == 0
    html = (tmp_path / "both.html").read_text()
    assert "hogbatch 1t d32" in html and "par 1t d32" in html


def test_benchmark_json_becomes_a_bar_chart(tmp_path):
    bench = {"args": {"corpus": "x"}, "runs": [
        {"system": "hogbatch", "threads": 1, "words_per_sec": 1.4e6, "round": 0},
        {"system": "hogbatch", "threads": 1, "words_per_sec": 1.6e6, "round": 1},
        {"system": "gensim-file", "threads": 1, "words_per_sec": 0.26e6, "round": 0},
        {"system": "hogbatch", "threads": 2, "words_per_sec": 4.0e5, "quality": {"ws353": {"spearman": 0.67},
                                                                              "simlex": {"spearman": 0.30},
                                                                              "analogies": {"3cosadd": 0.37}}}]}
    p = tmp_path / "words.json"
    p.write_text(json.dumps(bench))
    assert main(["report", str(p), "-o", str(tmp_path / "b.html")]) == 0
    html = (tmp_path / "b.html").read_text()
    assert "id='benchmark'" in html and "<td>1.500</td>" in html and "0.6700" in html
    assert _not_blank(_png_pixels((tmp_path / "b_files" / "benchmark.png").read_bytes()))


def test_errors_name_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"parameters": {\n  "algo": }')
    assert main(["report", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    assert f"{bad}:2: not valid JSON" in capsys.readouterr().err
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    assert main(["report", str(other), "-o", str(tmp_path / "r.html")]) == 2
    assert "not a parvec run report" in capsys.readouterr().err
    good = tmp_path / "good.json"
    good.write_text('{"parameters": {}, "epoch_log": []}')
    assert main(["report", str(good), "-o", str(tmp_path / "r.png")]) == 2
    assert "HTML" in capsys.readouterr().err
    assert main(["report", str(good), "-o", str(tmp_path / "missing" / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()


def test_report_refuses_to_overwrite_its_input(tmp_path, capsys):
    good = tmp_path / "good.html"
    good.write_text('{"parameters": {}, "epoch_log": []}')
    before = good.read_bytes()
    assert main(["report", str(good), "-o", str(good)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert good.read_bytes() == before


def test_runlog_windows_and_pauses():
    log = RunLog(interval_s=1.0)
    log.progress(Totals(t=0.0, words=0, pairs=0, loss_sum=0.0, lr=0.025, epoch=0))
    # The first sample that trained something is kept at once: a short run's loss curve starts at its start.
    log.progress(Totals(t=0.5, words=50, pairs=100, loss_sum=300.0, lr=0.02, epoch=0))
    log.progress(Totals(t=0.9, words=90, pairs=180, loss_sum=500.0, lr=0.02, epoch=0))  # too soon
    log.progress(Totals(t=2.0, words=200, pairs=400, loss_sum=1000.0, lr=0.01, epoch=0))
    log.pause(10.0)  # an evaluation: not training time
    log.progress(Totals(t=14.0, words=400, pairs=800, loss_sum=1400.0, lr=0.0, epoch=1))
    assert [s.words for s in log.timeline] == [0, 50, 200, 400]
    assert log.timeline[1].loss == pytest.approx(3.0) and log.timeline[1].words_per_sec == pytest.approx(100)
    assert log.timeline[2].loss == pytest.approx(700 / 300)
    assert log.timeline[2].words_per_sec == pytest.approx(100)
    # The window's loss, not the running mean: (1400 - 1000) / (800 - 400).
    assert log.timeline[3].loss == pytest.approx(1.0)
    assert log.timeline[3].t == pytest.approx(4.0) and log.timeline[3].words_per_sec == pytest.approx(100)
    # A kernel that computes no loss adds nothing: no loss, not a loss of 0.
    log.progress(Totals(t=20.0, words=500, pairs=900, loss_sum=1400.0, lr=0.0, epoch=1), force=True)
    assert log.timeline[4].loss is None and math.isclose(log.timeline[4].words_per_sec, 100 / 6)


def _chromium() -> str | None:
    # .ci/run installs Debian's chromium package before the tests; a machine without a Chromium skips this test.
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def test_report_opens_in_headless_chromium(real_run, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium package)")
    report, _ = real_run
    html_path = tmp_path / "report.html"
    assert main(["report", str(report), "-o", str(html_path)]) == 0
    shot = tmp_path / "shot.png"
    profile = tmp_path / "profile"
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1200,2400",
         "--hide-scrollbars", html_path.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert shot.exists(), proc.stderr[-2000:]
    pixels = _png_pixels(shot.read_bytes())
    assert pixels.shape[0] >= 2000 and pixels.shape[1] >= 1000
    assert _not_blank(pixels)
    # The embedded figures were decoded and drawn: the top of the page holds the first figure's plot area.
    assert _not_blank(pixels[: pixels.shape[0] // 3])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


KARATE = SHARED_DATA / "graphs" / "karate"


@needs_shared(KARATE)
def test_graph_run_report_has_node_classification_and_epoch_f1(tmp_path):
    report = tmp_path / "k.json"
    code = main(["deepwalk", str(KARATE / "karate.edgelist"), "-o", str(tmp_path / "k.emb"), "--labels",
                 str(KARATE / "karate.labels"), "--report", str(report), "--eval-every-epoch", "--epochs", "2",
                 "--report-interval", "0.01", "--workers", "1", "--quiet"])
    assert code == 0
    d = json.loads(report.read_text())
    assert d["kind"] == "graph" and d["nodes"] == 34 and d["epochs"] == 2
    fractions = [r["fraction"] for r in d["node_classification"]]
    assert fractions == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
    assert all(0.5 < r["micro_f1"] <= 1.0 for r in d["node_classification"][1:])  # karate's two clubs
    assert [set(e["scores"]) for e in d["epoch_log"]] == [{"micro_f1", "macro_f1"}] * 2
    html_path = tmp_path / "k.html"
    assert main(["report", str(report), "-o", str(html_path)]) == 0
    html = html_path.read_text()
    images = dict(re.findall(r"<img id='(\w+)'[^>]*src='data:image/png;base64,([^']+)'", html))
    assert set(images) == {"loss", "throughput", "quality", "projection", "node_classification"}
    for b64 in images.values():
        assert _not_blank(_png_pixels(base64.b64decode(b64)))


def test_graph_report_needs_labels_for_eval_every_epoch(tmp_path, capsys):
    code = main(["deepwalk", str(KARATE / "karate.edgelist"), "-o", str(tmp_path / "k.emb"), "--report",
                 str(tmp_path / "k.json"), "--eval-every-epoch", "--quiet"])
    assert code == 2 and "--labels" in capsys.readouterr().err
    assert not (tmp_path / "k.emb").exists() and not (tmp_path / "k.json").exists()


def test_runlog_json_keeps_the_reports_keys_and_their_order():
    # parvec report and older readers read these keys: the records write them as the dicts did.
    log = RunLog(interval_s=0.0)
    log.progress(Totals(t=0.0, words=0, pairs=0, loss_sum=0.0, lr=0.025, epoch=0))
    log.progress(Totals(t=1.0, words=100, pairs=50, loss_sum=100.0, lr=0.02, epoch=0))
    log.epoch_end(epoch=0, words=100, loss=2.0, seconds=1.0, lr=0.02)
    log.epoch_end(epoch=1, words=100, loss=float("nan"), seconds=1.0, lr=0.01, scores={"ws353": 0.5}, eval_seconds=0.2)
    d = json.loads(json.dumps(log.to_dict()))
    assert list(d) == ["timeline_interval_s", "timeline", "epoch_log"]
    assert [list(s) for s in d["timeline"]] == [["t", "epoch", "words", "words_per_sec", "lr", "loss", "rss_bytes"]] * 2
    assert d["timeline"][1] | {"rss_bytes": None} == {"t": 1.0, "epoch": 1, "words": 100, "words_per_sec": 100.0,
                                                     "lr": 0.02, "loss": 2.0, "rss_bytes": None}
    assert d["epoch_log"] == [{"epoch": 1, "words": 100, "loss": 2.0, "seconds": 1.0, "lr": 0.02},
                              {"epoch": 2, "words": 100, "loss": None, "seconds": 1.0, "lr": 0.01,
                               "scores": {"ws353": 0.5}, "eval_seconds": 0.2}]
