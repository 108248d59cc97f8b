"""The private Ray of ``--cluster local:N`` listens on the loopback interface only.

``parvec train CORPUS -o v.txt --cluster local:2`` runs as a subprocess; while Ray starts, the replicas start
and train, every listening socket (TCP in LISTEN, UDP without a peer; IPv4 and IPv6) of every process of
that run is listed: the ``parvec`` process, every process under it (GCS, raylet, log monitor, agents,
workers, actors) and every process carrying the run's marker in its environment (Ray's processes inherit
it).  Each must be bound to a loopback address; the GCS, the raylet and an actor must have been seen
listening, so the test cannot pass by seeing nothing.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray

REPO = Path(__file__).resolve().parents[2]
MARKER = "PARVEC_TEST_RUN_MARKER"


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if ip.version == 6 and ip.ipv4_mapped is not None:  # ::ffff:127.0.0.1, an IPv6 socket bound to IPv4 loopback
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _processes(psutil, pid: int, marker: str) -> dict:
    found = {}
    try:
        root = psutil.Process(pid)
        found[root.pid] = root
        found.update((p.pid, p) for p in root.children(recursive=True))
    except psutil.Error:
        pass
    for p in psutil.process_iter():
        if p.pid in found:
            continue
        try:
            if p.environ().get(MARKER) == marker:
                found[p.pid] = p
        except psutil.Error:
            continue
    return found


def _listening(psutil, process) -> list[tuple[str, str, int]]:
    """(kind, address, port) of every socket ``process`` listens on."""
    found = []
    for c in process.net_connections(kind="inet"):
        kind = "tcp" if c.type == socket.SOCK_STREAM else "udp"
        if (kind == "tcp" and c.status == psutil.CONN_LISTEN) or (kind == "udp" and not c.raddr):
            found.append((kind, c.laddr.ip, c.laddr.port))
    return found


def test_a_local_ray_listens_on_loopback_only(demo_slice, tmp_path):
    psutil = pytest.importorskip("psutil")
    marker = uuid.uuid4().hex
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
        "RAY_USAGE_STATS_ENABLED": "0",
        "PARVEC_CACHE_DIR": str(tmp_path / "cache"),
        MARKER: marker,
    }
    argv = ["train", str(demo_slice), "-o", str(tmp_path / "v.txt"), "--cluster", "local:2", "--epochs", "60",
            "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-m", "parvec", *argv], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(line.rstrip("\n") for line in proc.stderr), daemon=True)
    reader.start()
    seen: dict[tuple[str, str, int], int] = {}  # socket -> the process that listened on it
    titles: dict[int, set[str]] = {}  # process -> its names and titles (a worker becomes an actor: ray::_Replica)
    training_since = None
    try:
        deadline = time.monotonic() + 300
        # Sample while Ray starts, the actors start and the replicas train; stop 3 s into training.
        while training_since is None or time.monotonic() < training_since + 3:
            assert proc.poll() is None, (f"the run ended (exit {proc.returncode}) before its replicas trained for 3 s: "
                                         "make it longer\n" + "\n".join(lines[-20:]))
            assert time.monotonic() < deadline, "the replicas never trained\n" + "\n".join(lines[-20:])
            for p in _processes(psutil, proc.pid, marker).values():
                try:
                    title = " ".join(p.cmdline()) or p.name()
                    sockets = _listening(psutil, p)
                except psutil.Error:
                    continue
                if training_since is None and title.startswith("ray::_Replica.train_epoch"):
                    training_since = time.monotonic()
                titles.setdefault(p.pid, set()).update((p.name(), title.strip()))
                for s in sockets:
                    seen.setdefault(s, p.pid)
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # the test has what it needs; the signal tests check the stop
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(timeout=30)

    report = "\n".join(f"  {kind} {addr}:{port}  pid {pid}: {' / '.join(sorted(titles[pid]))[:100]}"
                       for (kind, addr, port), pid in sorted(seen.items()))
    exposed = [s for s in seen if not _loopback(s[1])]
    assert exposed == [], f"sockets of the local Ray listening beyond loopback:\n{report}"
    for who in ("gcs_server", "raylet", "ray::_Replica"):  # an actor: a replica (its gRPC server, its gloo sockets)
        assert any(any(t.startswith(who) for t in titles[pid]) for pid in seen.values()), \
            f"no socket of {who} was seen, so the check saw too little:\n{report}"
