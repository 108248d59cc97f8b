"""SIGTERM and SIGINT stop a plain (one-machine) run cleanly.

A ``parvec`` subprocess is signalled once its outputs are reserved (the ``.parvec-*`` temporary beside the
output exists) and it reads or trains; it must exit 143 for SIGTERM, 130 for SIGINT, say so in one line,
and leave neither the output nor any temporary file.  ``train``, ``deepwalk`` and ``demo`` all go through
``parvec.cli.main``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from child_signals import popen_kwargs

REPO = Path(__file__).resolve().parents[2]
WORD = {signal.SIGINT: ("interrupted", 130), signal.SIGTERM: ("terminated", 143)}


def _signal_once_reserved(argv: list[str], out: Path, sig: int, tmp_path: Path, after_line: str | None = None,
                          cwd: Path | None = None) -> tuple[int, list[str]]:
    """Run ``parvec *argv``; once a ``.parvec-*`` temporary exists in ``out`` (and ``after_line`` was printed),
    send ``sig``; return the exit status and stderr's lines."""
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
        "PARVEC_CACHE_DIR": str(tmp_path / "cache"),
    }
    proc = subprocess.Popen([sys.executable, "-m", "parvec", *argv], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, env=env, cwd=cwd, **popen_kwargs())
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in proc.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not (any(n.startswith(".parvec-") for n in os.listdir(out))
                   and (after_line is None or any(after_line in line for line in lines))):
            assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before it could be signalled\n" + \
                "\n".join(lines[-20:])
            assert time.monotonic() < deadline, "the run never reserved its output\n" + "\n".join(lines[-20:])
            time.sleep(0.02)
        proc.send_signal(sig)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=30)
    return code, lines


def _check(code: int, lines: list[str], sig: int, out: Path) -> None:
    word, status = WORD[sig]
    text = "\n".join(lines)
    assert code == status, f"exit {code}, expected {status}\n{text[-2000:]}"
    assert [line for line in lines if line.strip()][-1] == f"parvec: {word}; no output was written", text[-2000:]
    assert sum("no output was written" in line for line in lines) == 1, text[-2000:]
    assert "Traceback" not in text
    assert sorted(os.listdir(out)) == [], "an output or a temporary file was left"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_training_stops_the_run_and_leaves_nothing(sig, demo_slice, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    argv = ["train", str(demo_slice), "-o", str(out / "v.txt"), "--epochs", "200", "--no-progress"]
    # the last line before training: the corpus is read and encoded, training starts
    code, lines = _signal_once_reserved(argv, out, sig, tmp_path, after_line="encoded-corpus cache")
    _check(code, lines, sig, out)
    cache = tmp_path / "cache"
    leftovers = [p.name for p in cache.rglob("*") if p.name.startswith((".tmp-", ".parvec-"))] if cache.exists() else []
    assert leftovers == [], f"temporary files left in the corpus cache: {leftovers}"


def test_sigterm_while_a_deepwalk_run_trains_stops_it_and_leaves_nothing(shared_data, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    graph = shared_data / "graphs" / "blogcatalog" / "blogcatalog.edgelist"
    argv = ["deepwalk", str(graph), "-o", str(out / "emb.txt"), "--epochs", "5", "--quiet"]
    code, lines = _signal_once_reserved(argv, out, signal.SIGTERM, tmp_path)
    _check(code, lines, signal.SIGTERM, out)


def test_sigterm_during_the_demo_stops_it_and_leaves_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    code, lines = _signal_once_reserved(["demo", "-o", str(out / "demo.txt")], out, signal.SIGTERM, tmp_path,
                                        cwd=tmp_path)
    _check(code, lines, signal.SIGTERM, out)


def test_a_signal_during_the_final_renames_waits_for_them_and_says_the_outputs_were_written(
        tmp_path: Path, demo_slice: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # SIGTERM arrives while the first output is renamed into place: the renames finish (all outputs or none),
    # and the stop line says they were written rather than "no output was written".
    from cli_run import run

    from parvec.cli import outputs

    renamed = outputs.PendingFile.commit
    sent: list[int] = []

    def commit_and_signal(self: outputs.PendingFile) -> None:
        if not sent:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGTERM)  # held by OutputPlan.commit until every rename is done
        renamed(self)

    monkeypatch.setattr(outputs.PendingFile, "commit", commit_and_signal)
    vectors, report = tmp_path / "v.txt", tmp_path / "run.json"
    code, _, err = run(["train", demo_slice, "-o", vectors, "--report", report, "--dim", 8, "--epochs", 1,
                        "--threads", 1, "--no-cache"], capsys)
    assert sent and code == 143, err[-2000:]
    assert vectors.is_file() and report.is_file(), "a signal during the renames cut them half-way"
    assert err.strip().splitlines()[-1].startswith("parvec: terminated; after its outputs were written ("), err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".parvec-")]


def test_the_stop_line_offers_resume_only_when_the_run_left_a_checkpoint(
        tmp_path: Path, tiny_corpus: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ctrl-C (KeyboardInterrupt) before the run's first checkpoint: --resume would find none, so the line says so;
    # after its first epoch's checkpoint (or, resumed, before its own first one) it offers --resume DIR, which works.
    # The line is parvec.cli's one handler for every mode.
    from cli_run import run

    from parvec import checkpoints
    from parvec import run as run_layer

    def stopped_before_training(self: run_layer.Run) -> None:
        raise KeyboardInterrupt

    saved = checkpoints.Checkpointer.epoch_end

    def stopped_after_the_first_checkpoint(self: checkpoints.Checkpointer, epochs_trained: int) -> bool:
        saved(self, epochs_trained)
        raise KeyboardInterrupt

    ck = tmp_path / "ck"
    argv = ["train", tiny_corpus, "-o", tmp_path / "v.txt", "--dim", 8, "--epochs", 2, "--min-count", 1,
            "--threads", 1, "--no-cache", "--checkpoint-dir", ck]
    with monkeypatch.context() as m:
        m.setattr(run_layer.Run, "execute", stopped_before_training)
        code, _, err = run(argv, capsys)
    assert code == 130 and err.strip().splitlines()[-1] == (
        f"parvec: interrupted; no output was written (no checkpoint of this run was written in {ck}: there is "
        "nothing to --resume)"), err
    with monkeypatch.context() as m:
        m.setattr(checkpoints.Checkpointer, "epoch_end", stopped_after_the_first_checkpoint)
        code, _, err = run(argv, capsys)
    assert code == 130 and err.strip().splitlines()[-1] == (
        f"parvec: interrupted; no output was written (checkpoints in {ck} are kept: --resume {ck})"), err
    resume = ["train", tiny_corpus, "-o", tmp_path / "v.txt", "--no-cache", "--resume", ck]
    with monkeypatch.context() as m:  # resumed, stopped before its own first checkpoint: the one it began from
        m.setattr(run_layer.Run, "execute", stopped_before_training)
        code, _, err = run(resume, capsys)
    assert code == 130 and err.strip().splitlines()[-1].endswith(f"(checkpoints in {ck} are kept: --resume {ck})")
    code, _, err = run(resume, capsys)
    assert code == 0 and (tmp_path / "v.txt").is_file(), err
    # A directory holding only another run's checkpoints: a new run stopped before its own is not offered them.
    with monkeypatch.context() as m:
        m.setattr(run_layer.Run, "execute", stopped_before_training)
        code, _, err = run([*argv[:-2], "-o", tmp_path / "w.txt", "--checkpoint-dir", ck], capsys)
    assert code == 130 and err.strip().splitlines()[-1].endswith(
        f"(no checkpoint of this run was written in {ck}: there is nothing to --resume)"), err


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped exception, printed
@pytest.mark.parametrize("where", ["between epochs", "before the renames"])
def test_a_signal_whose_exception_a_finalizer_swallowed_still_stops_the_run(
        tmp_path: Path, tiny_corpus: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch,
        where: str) -> None:
    # SIGTERM's handler raises in the main thread at the next bytecode; when that is inside a finalizer (__del__,
    # run by the garbage collector anywhere: a Ray ObjectRef's, a numpy memmap's) Python prints "Exception ignored"
    # and drops it, and the run went on and wrote its outputs (exit 0). The handler also records the signal, and
    # the run stops at the next epoch, or before its outputs are put into place: exit 143, nothing written.
    from cli_run import run

    from parvec import engine, interrupts
    from parvec.cli import outputs

    class Swallowing:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)  # its exception is raised inside this finalizer, and dropped
            time.sleep(0.05)

    if where == "between epochs":
        cls = next(c for c in vars(engine).values() if isinstance(c, type) and hasattr(c, "_train_one"))
        saved = cls._train_one

        def one_epoch_then_a_swallowed_signal(self: object, epoch: int) -> None:
            saved(self, epoch)
            if epoch == 0:
                Swallowing()  # collected at once: the signal arrives in its __del__
        monkeypatch.setattr(cls, "_train_one", one_epoch_then_a_swallowed_signal)
    else:
        saved_commit = outputs.OutputPlan.commit

        def swallowed_then_commit(self: outputs.OutputPlan) -> None:
            Swallowing()
            saved_commit(self)
        monkeypatch.setattr(outputs.OutputPlan, "commit", swallowed_then_commit)
    out = tmp_path / "v.txt"
    argv = ["train", tiny_corpus, "-o", out, "--dim", 8, "--epochs", 3, "--min-count", 1, "--threads", 1,
            "--no-cache"]
    code, _, err = run(argv, capsys)
    interrupts.clear_stop()
    assert code == 143, err[-2000:]
    assert err.strip().splitlines()[-1].startswith("parvec: terminated; no output was written"), err[-2000:]
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".parvec-")]
