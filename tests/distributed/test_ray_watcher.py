"""The watcher of a local Ray (parvec.distributed.reaper) kills, once the pipe from the parvec process that
started it closes, exactly the processes of that Ray: those carrying the run's marker in their environment, and
those running Ray's binaries or this Python with a file open in the Ray's session directory; not a ``tail -f`` of
its log, not another run's processes, not the driver."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parvec.distributed import reaper

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watcher reads /proc")

SLEEPER = "import sys, time; f = open(sys.argv[1], 'a') if len(sys.argv) > 1 else None; time.sleep(120)"


def _sleeper(env_extra: dict | None = None, hold: Path | None = None, exe: str = sys.executable) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != reaper.MARKER} | (env_extra or {})
    argv = [exe, "-c", SLEEPER, *([str(hold)] if hold else [])] if exe == sys.executable else [exe, "-f", str(hold)]
    return subprocess.Popen(argv, env=env)


def _wait_gone(proc: subprocess.Popen, timeout: float = 10.0) -> bool:
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def test_the_watcher_kills_the_marked_and_session_processes_when_its_pipe_closes(tmp_path):
    session = tmp_path / "session_x"
    (session / "logs").mkdir(parents=True)
    log = session / "logs" / "agent.log"
    log.write_text("")
    other = tmp_path / "session_x2"  # another Ray's session, whose name starts the same
    other.mkdir()
    token = "t" + os.urandom(6).hex()
    marked = _sleeper({reaper.MARKER: token})
    agent = _sleeper(hold=log)  # its environment lost, as a Ray agent's (setproctitle), but its log open
    others = [_sleeper({reaper.MARKER: "another-run"}), _sleeper(hold=other / "x.log"),
              _sleeper(hold=log, exe="tail")]  # a user's `tail -f` of the Ray's log
    time.sleep(0.5)  # the sleepers have opened their files
    watcher = reaper.start(token)
    try:
        assert watcher is not None
        reaper.tell(watcher, str(session), str(tmp_path / "no-ray-here"))
        assert watcher.poll() is None  # it waits while the pipe is open
        watcher.stdin.close()  # what the driver's death does too
        assert watcher.wait(timeout=30) == 0
        assert _wait_gone(marked) and _wait_gone(agent)
        assert all(p.poll() is None for p in others)
    finally:
        for p in [marked, agent, *others]:
            p.kill()
            p.wait()


def test_the_watcher_of_a_killed_driver_reaps_its_ray(tmp_path):
    # The driver is a process that starts the watcher and a marked child, then dies by SIGKILL.
    token = "t" + os.urandom(6).hex()
    script = (
        "import os, signal, subprocess, sys\n"
        "from parvec.distributed import reaper\n"
        f"w = reaper.start({token!r})\n"
        f"env = dict(os.environ, {reaper.MARKER}={token!r})\n"
        f"child = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}], env=env)\n"
        "print(child.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9
    child = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    state = Path(f"/proc/{child}/stat").read_text().split(")")[-1].split()[0] if Path(f"/proc/{child}").exists() else ""
    assert state in ("", "Z"), f"the driver's Ray process {child} outlived it"
