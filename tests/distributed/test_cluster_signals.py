"""SIGINT and SIGTERM at several moments of a ``parvec train --cluster local:2`` run.

Each run is a ``parvec`` subprocess with its own private Ray.  The moment to signal is read from the run's
own processes, not guessed with a sleep: Ray starting (its ``gcs_server`` is up), the replicas starting (an
actor's process title is ``ray::_Replica.__init__``), training (``ray::_Replica.train_epoch``); and, exactly,
the instant Ray's C++ core worker exists inside ``ray.init`` (a signal there orphaned the core worker, which
Ray's C++ exit handler then destroyed under its running io thread: SIGSEGV).  After the signal the run must
exit 130 (SIGINT) or 143 (SIGTERM) with one line, leave no output and no temporary file, and no process of
its Ray may be left (every process carrying the run's marker in its environment, which Ray's processes
inherit, or under the ``parvec`` process).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from child_signals import popen_kwargs

pytestmark = pytest.mark.ray

REPO = Path(__file__).resolve().parents[2]
MARKER = "PARVEC_TEST_RUN_MARKER"
WORD = {signal.SIGINT: ("interrupted", 130), signal.SIGTERM: ("terminated", 143)}

# The instant Ray's C++ core worker exists, inside ray.init: the signal is sent from there.
_AT_CORE_WORKER = """
import os, signal, sys
import ray, ray._raylet

real = ray._raylet.CoreWorker
sig = getattr(signal, sys.argv[1])


def core_worker(*args, **kwargs):
    worker = real(*args, **kwargs)
    os.kill(os.getpid(), sig)  # as a Ctrl-C landing the moment Ray's core worker exists
    return worker


ray._raylet.CoreWorker = core_worker
from parvec.cli import main

sys.exit(main(sys.argv[2:]))
"""


# Ctrl-C the moment Ray's raylet has started, inside ray.init, before Ray builds this process's core worker.
_AT_RAYLET_START = """
import os, signal, sys
import ray, ray._raylet
import ray._private.services as services

real_raylet, real_core_worker = services.start_raylet, ray._raylet.CoreWorker


def start_raylet(*args, **kwargs):
    started = real_raylet(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)  # as a Ctrl-C while Ray starts
    return started


def core_worker(*args, **kwargs):
    print("TEST: Ray's core worker was built", file=sys.stderr, flush=True)
    return real_core_worker(*args, **kwargs)


services.start_raylet, ray._raylet.CoreWorker = start_raylet, core_worker
from parvec.cli import main

sys.exit(main(sys.argv[1:]))
"""


class Run:
    """One ``parvec`` subprocess, its stderr read by a thread, its processes found by marker and tree."""

    def __init__(self, argv: list[str], tmp_path: Path, script: str | None = None, script_args: tuple = ()):
        self.marker = uuid.uuid4().hex
        env = os.environ | {
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
            "RAY_USAGE_STATS_ENABLED": "0",
            "PARVEC_CACHE_DIR": str(tmp_path / "cache"),
            MARKER: self.marker,
        }
        cmd = [sys.executable, "-c", script, *script_args] if script else [sys.executable, "-m", "parvec"]
        self.proc = subprocess.Popen([*cmd, *argv], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                     env=env, **popen_kwargs())
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def tree(self) -> list:
        import psutil

        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.Error:
            return []

    def alive(self) -> list[str]:
        """Every running process of this run: under ``parvec``, or carrying its marker (zombies are gone)."""
        import psutil

        found = {p.pid: p for p in self.tree()}
        for p in psutil.process_iter():
            try:
                if p.environ().get(MARKER) == self.marker:
                    found[p.pid] = p
            except psutil.Error:
                continue
        names = []
        for p in found.values():
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    names.append(f"{p.pid} {' '.join(p.cmdline())[:80] or p.name()}")
            except psutil.Error:
                continue
        return names

    def wait_for(self, what: str, found, timeout: float = 240.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the run ended (exit {self.proc.returncode}) before {what}: make it longer\n"
                            + "\n".join(self.lines[-20:]))
            if found():
                return
            time.sleep(0.05)
        pytest.fail(f"no {what} within {timeout:.0f} s\n" + "\n".join(self.lines[-20:]))

    def titled(self, prefix: str) -> bool:
        """A process of the run whose name or title (``ray::_Replica.train_epoch``) starts with ``prefix``."""
        import psutil

        for p in self.tree():
            try:
                if p.name().startswith(prefix) or " ".join(p.cmdline()).startswith(prefix):
                    return True
            except psutil.Error:
                continue
        return False

    def finish(self, sig: int) -> tuple[int, list[str]]:
        """Send ``sig``; the exit status and stderr's lines once the run ended (bounded)."""
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the run did not end within 180 s of {signal.Signals(sig).name}")
        self.reader.join(timeout=30)
        return code, self.lines

    def kill_leftovers(self) -> None:
        import psutil

        for line in self.alive():
            with contextlib.suppress(psutil.Error):
                psutil.Process(int(line.split()[0])).kill()


def _check_stopped(run: Run, sig: int, code: int, lines: list[str], out: Path) -> None:
    word, status = WORD[sig]
    text = "\n".join(lines)
    assert code == status, f"exit {code}, expected {status}\n{text[-3000:]}"
    said = [line for line in lines if "no output was written" in line]
    assert said == [f"parvec: {word}; no output was written"], text[-3000:]
    assert [line for line in lines if line.strip()][-1] == said[0], text[-3000:]
    for bad in ("Traceback", "Segmentation fault", "Fatal Python error", "*** SIG", "core dumped"):
        assert bad not in text, f"{bad!r} on stderr:\n{text[-3000:]}"
    assert sorted(os.listdir(out)) == [], "an output or a temporary file was left"
    deadline = time.monotonic() + 30  # Ray's processes end within a short, bounded wait
    left = run.alive()
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = run.alive()
    if left:
        run.kill_leftovers()
    assert left == [], f"processes of the run still running 30 s after it exited: {left}"


@pytest.fixture
def corpus(demo_slice: Path) -> Path:
    return demo_slice


def _argv(corpus: Path, out: Path, epochs: int = 60) -> list[str]:
    return ["train", str(corpus), "-o", str(out / "v.txt"), "--cluster", "local:2", "--epochs", str(epochs),
            "--no-progress"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_the_moment_rays_core_worker_exists_is_a_clean_stop(sig, corpus, tmp_path):
    # A past crash: a Ctrl-C landing inside ray.init right after Ray's C++ core worker was built
    # (before Python held it) exited -11 once Ray's C++ exit handler destroyed the orphaned core worker.
    pytest.importorskip("psutil")
    out = tmp_path / "out"
    out.mkdir()
    run = Run(_argv(corpus, out, epochs=1), tmp_path, script=_AT_CORE_WORKER,
              script_args=(signal.Signals(sig).name,))
    try:
        code = run.proc.wait(timeout=240)
    except subprocess.TimeoutExpired:
        run.proc.kill()
        pytest.fail("the run did not end within 240 s")
    run.reader.join(timeout=30)
    _check_stopped(run, sig, code, run.lines, out)


MOMENTS = {
    # Ray starting: ray.init has started the GCS and is starting the rest
    "ray-start": ("Ray's GCS starting", lambda run: run.titled("gcs_server")),
    # the replica actors being built (their kernels compiling or loading from cache)
    "actor-start": ("a replica actor starting", lambda run: run.titled("ray::_Replica.__init__")),
    # an epoch being trained on the replicas
    "training": ("a replica training", lambda run: run.titled("ray::_Replica.train_epoch")),
}


@pytest.mark.parametrize(("moment", "sig"), [("ray-start", signal.SIGINT), ("actor-start", signal.SIGTERM),
                                             ("training", signal.SIGINT), ("training", signal.SIGTERM)],
                         ids=["ray-start-SIGINT", "actor-start-SIGTERM", "training-SIGINT", "training-SIGTERM"])
def test_a_signal_during_a_cluster_run_stops_it_cleanly(moment, sig, corpus, tmp_path):
    pytest.importorskip("psutil")
    out = tmp_path / "out"
    out.mkdir()
    what, reached = MOMENTS[moment]
    run = Run(_argv(corpus, out), tmp_path)
    try:
        run.wait_for(what, lambda: reached(run))
        code, lines = run.finish(sig)
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()
    _check_stopped(run, sig, code, lines, out)


def test_ctrl_c_while_ray_starts_stops_the_start_at_once(corpus, tmp_path):
    # A Ctrl-C while Ray started was held until ray.init was over (5-10 s, more on a busy machine): only the
    # moments from the core worker's creation to ray.init's end need it held (the crash above).
    pytest.importorskip("psutil")
    out = tmp_path / "out"
    out.mkdir()
    run = Run(_argv(corpus, out, epochs=1), tmp_path, script=_AT_RAYLET_START)
    try:
        code = run.proc.wait(timeout=240)
    except subprocess.TimeoutExpired:
        run.proc.kill()
        pytest.fail("the run did not end within 240 s")
    run.reader.join(timeout=30)
    assert "TEST: Ray's core worker was built" not in run.lines, "the start went on after the Ctrl-C"
    _check_stopped(run, signal.SIGINT, code, run.lines, out)
