"""The GPU tests' subprocesses: the simulator run of every kernel case (tests/gpu/sim_cases.py) and the
compilation of the kernels for a real GPU (benchmarks/bench_gpu.py --ptx, where NVVM and ptxas exist).

numba picks the simulator or the hardware target when ``numba.cuda`` is first imported, so both run in their
own process.  They start together, in the background, as soon as the first test of this folder runs (when
the session holds a test that needs them), and the host and quality tests run meanwhile; a test that needs a
result waits for it.  In a pytest-xdist worker each starts when a test first needs it (the worker that runs
that test's file), so the suite runs each once.  Both are stopped at the end of the session if still running.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BENCH = REPO / "benchmarks" / "bench_gpu.py"
TIMEOUT_S = 900


class _Background:
    def __init__(self, name: str, cmd: list[str], env: dict[str, str], out: Path) -> None:
        self.name = name
        self.out = out
        self.log = open(out / f"{name}.log", "w+", encoding="utf-8")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=REPO)
        self.rc: int | None = None

    def wait(self) -> tuple[int, str]:
        if self.rc is None:
            try:
                self.rc = self.proc.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.rc = self.proc.wait()
            self.log.flush()
            self.log.seek(0)
            self.text = self.log.read()
            self.log.close()
        return self.rc, self.text

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.log.closed:
            self.log.close()


_started: dict[str, _Background] = {}


def _start(tmp_path_factory: pytest.TempPathFactory, which: set[str]) -> None:
    env = dict(os.environ)
    env.pop("PARVEC_GPU_REDUCTION", None)
    if "sim" in which and "sim" not in _started:
        out = tmp_path_factory.mktemp("gpu_sim")
        sim_env = dict(env, NUMBA_ENABLE_CUDASIM="1", PARVEC_GPU_THREADS="8", PARVEC_CACHE_DIR=str(out / "cache"))
        _started["sim"] = _Background("sim", [sys.executable, str(HERE / "sim_cases.py"), str(out)], sim_env, out)
    if "ptx" in which and "ptx" not in _started:
        out = tmp_path_factory.mktemp("gpu_ptx")
        ptx_env = {k: v for k, v in env.items() if k != "NUMBA_ENABLE_CUDASIM"}
        # FULL-W2V with the shuffle reduction (hardware only) and PAR with the tree: both kernels, both reductions
        cmd = [sys.executable, str(BENCH), "--ptx", "--dims", "128", "--threads-per-block", "64", "--only",
               "full-w2v:shuffle", "par:tree", "--out", str(out / "ptx.json")]
        _started["ptx"] = _Background("ptx", cmd, ptx_env, out)


@pytest.fixture(scope="session", autouse=True)
def _gpu_background(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Start the subprocesses the session's tests will need, at once, so they overlap the other tests.  Not in a
    # pytest-xdist worker: every worker collects the whole suite but runs only some files (each file whole, in one
    # worker), so each would start both runs; there ``sim_run``/``ptx_run`` start them when a test first asks.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        which: set[str] = set()
    else:
        names = {n for item in request.session.items for n in getattr(item, "fixturenames", ())}
        which = {w for w, fixture in (("sim", "sim_run"), ("ptx", "ptx_run")) if fixture in names}
    _start(tmp_path_factory, which)
    yield
    for bg in _started.values():
        bg.stop()
    _started.clear()


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder tests/gpu/sim_cases.py wrote (the simulator run)."""
    _start(tmp_path_factory, {"sim"})
    bg = _started["sim"]
    rc, text = bg.wait()
    assert rc == 0, text[-4000:]
    return bg.out


@pytest.fixture(scope="session")
def ptx_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """(exit status, output, folder) of ``bench_gpu.py --ptx``: the kernels compiled for sm_90."""
    _start(tmp_path_factory, {"ptx"})
    bg = _started["ptx"]
    rc, text = bg.wait()
    return rc, text, bg.out
