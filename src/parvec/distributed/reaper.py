"""The watcher of a local Ray that parvec starts: when the parvec process is gone, its Ray goes too.

Ray ties the processes ``ray.init`` starts (GCS, raylet, log monitor) to the driver with ``PR_SET_PDEATHSIG``:
when the driver is killed (SIGKILL, the OOM killer) they get SIGKILL at once, so the raylet cannot stop what it
started.  Its workers notice within seconds, but its agents (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``)
see their raylet die "unexpectedly" and first try to report it to the GCS, which is gone too: they lived on for
60-90 s (Ray's 60-s publish timeout).  Ray's own answer for platforms without that kernel fate-sharing is a
"reaper" process that kills its process group when its parent dies; parvec cannot give its Ray a process group
of its own (the driver would leave the terminal's, and Ctrl-C), so this watcher finds the Ray's processes
itself: those holding a file open in the Ray's session directory (every Ray process keeps its logs there) that
run Ray's binaries or this Python, and those whose environment carries the run's marker
(``PARVEC_LOCAL_RAY=TOKEN``, which the processes Ray starts inherit; the agents' environment is overwritten by
their process titles, hence the session directory).

:class:`parvec.distributed.cluster.Cluster` starts it (:func:`start`) before ``ray.init``, with a pipe from the
driver on its standard input and in a session of its own (a terminal's Ctrl-C is the driver's to handle), and
tells it the session directory once Ray runs (:func:`tell`).  It reads until end of file, which comes when the
driver closes the pipe after stopping its Ray, or when the driver dies in any way (the kernel closes its end);
it then SIGKILLs those processes and exits.  It is run by path with ``python -I``: the standard library only,
no parvec import.

Example:
    >>> watcher = start("0123abcd")  # doctest: +SKIP
    >>> os.environ[MARKER] = "0123abcd"; ray.init(...)  # doctest: +SKIP
    >>> tell(watcher, session_dir, os.path.dirname(ray.__file__))  # doctest: +SKIP
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

MARKER = "PARVEC_LOCAL_RAY"


def _exe(pid: str) -> str:
    try:
        return os.path.realpath(f"/proc/{pid}/exe")
    except OSError:
        return ""


def _holds_file_under(pid: str, directory: str) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(directory):
                return True
        except OSError:
            continue
    return False


def ray_processes(token: str, session_dir: str | None = None, ray_dir: str | None = None,
                  spare: tuple[int, ...] = ()) -> list[int]:
    """The processes of a local Ray, from /proc (this user's only: others' cannot be read): those whose
    environment holds ``PARVEC_LOCAL_RAY=token``, and those holding a file open under ``session_dir`` that run a
    binary under ``ray_dir`` or this Python (not, say, a ``tail -f`` of a log).  Never this process or ``spare``.

    Example:
        >>> ray_processes("no-such-token", "/no/such/session")
        []
    """
    needle = f"{MARKER}={token}".encode()
    session = os.path.join(session_dir, "") if session_dir else None
    binaries = (os.path.join(os.path.realpath(ray_dir), "") if ray_dir else None, os.path.realpath(sys.executable))
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == os.getpid() or int(name) in spare:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                marked = needle in f.read().split(b"\0")
        except OSError:
            continue
        if not marked and session is not None:
            exe = _exe(name)
            ours = exe == binaries[1] or (binaries[0] is not None and exe.startswith(binaries[0]))
            marked = ours and _holds_file_under(name, session)
        if marked:
            found.append(int(name))
    return found


def reap(token: str, session_dir: str | None = None, ray_dir: str | None = None,
         spare: tuple[int, ...] = ()) -> list[int]:
    """SIGKILL every process of the local Ray (:func:`ray_processes`); returns their ids.

    Example:
        >>> reap("no-such-token")
        []
    """
    killed = []
    for pid in ray_processes(token, session_dir, ray_dir, spare):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
        killed.append(pid)
    return killed


def tell(watcher: Any, session_dir: str, ray_dir: str) -> None:
    """Tell the watcher where the Ray it watches keeps its files (its session directory) and Ray's package
    directory (its binaries), once ``ray.init`` has returned.

    Example:
        >>> tell(None, "/tmp/ray/session_x", "/site-packages/ray")
    """
    if watcher is None or watcher.stdin is None:
        return
    try:
        watcher.stdin.write(f"session {session_dir}\nray {ray_dir}\n".encode())
        watcher.stdin.flush()
    except (OSError, ValueError):
        pass


def start(token: str) -> Any:
    """Start the watcher of the Ray marked ``token`` (a :class:`subprocess.Popen`; close its ``stdin`` when the
    Ray has stopped, and it exits once it has killed whatever is left), or None where it cannot run.

    Example:
        >>> watcher = start("0123abcd"); watcher.stdin.close(); watcher.wait()  # doctest: +SKIP
        0
    """
    if not sys.platform.startswith("linux"):
        return None  # /proc is how it finds the Ray's processes
    env = {k: v for k, v in os.environ.items() if k != MARKER}
    try:
        return subprocess.Popen([sys.executable, "-I", os.path.abspath(__file__), token, str(os.getpid())],
                                stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                start_new_session=True, close_fds=True)
    except OSError:
        return None


def _main(argv: list[str]) -> int:
    token, driver = argv[1], int(argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the end of its input stops it (its session has no terminal)
    told: dict[str, str] = {}
    for line in sys.stdin.buffer:  # until end of file: the driver is done with its Ray, or gone
        key, _, value = line.decode("utf-8", "replace").rstrip("\n").partition(" ")
        told[key] = value
    reap(token, told.get("session"), told.get("ray"), spare=(driver,))  # the driver, when it closed the pipe
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
