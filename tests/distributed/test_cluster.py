"""``parvec.distributed.cluster``: signals held while Ray starts and stops, sockets bound to one address, and
joining through Ray Client (``--cluster ray://HOST:PORT``) with the ``[ray]`` extra."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child_signals import default_sigint

from parvec.distributed.cluster import deferred_signals, listening_socket

REPO = Path(__file__).resolve().parents[2]


def test_a_signal_inside_deferred_signals_is_raised_when_the_block_ends():
    reached_the_end = False
    with default_sigint():  # as an interactive Python: also when the tests run in the background (SIGINT ignored)
        with pytest.raises(KeyboardInterrupt):
            with deferred_signals():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # a signal not held would be raised here
                reached_the_end = True
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back after the block
    assert reached_the_end


def test_handlers_set_inside_deferred_signals_are_dropped_and_sigterm_reaches_the_old_one():
    got = []

    def handler(signum, frame):
        got.append(signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        with deferred_signals():
            signal.signal(signal.SIGTERM, lambda s, f: sys.exit(s))  # what ray.init does
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            assert got == []
        assert got == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, old)


def test_listening_socket_listens_on_the_given_address_only():
    fd, port = listening_socket("127.0.0.1")
    with socket.socket(fileno=fd) as sock:
        assert sock.getsockname() == ("127.0.0.1", port)
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_client_address_that_does_not_answer_is_one_clear_error(demo_slice, tmp_path):
    # --cluster ray:// needs Ray Client (ray[client], in the [ray] extra): with it installed, an address where no
    # client server answers ends in one line naming the address, once Ray Client gives up (its own time-outs:
    # shortened here to 1 s a try through its documented variables; 5 + 10 + 15 s by default).
    port = _closed_port()
    out = tmp_path / "out"
    out.mkdir()
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
        "RAY_USAGE_STATS_ENABLED": "0",
        "PARVEC_CACHE_DIR": str(tmp_path / "cache"),
        "RAY_CLIENT_INITIAL_CONNECTION_TIMEOUT_S": "1",
        "RAY_CLIENT_MAX_CONNECTION_TIMEOUT_S": "1",
    }
    spec = f"ray://127.0.0.1:{port}"
    res = subprocess.run([sys.executable, "-m", "parvec", "train", str(demo_slice), "-o", str(out / "v.txt"),
                          "--cluster", spec, "--replicas", "2"], capture_output=True, text=True, env=env, timeout=180)
    assert res.returncode == 2, res.stderr[-3000:]
    errors = [line for line in res.stderr.splitlines() if line.startswith("parvec: error:")]
    assert len(errors) == 1, res.stderr[-3000:]
    assert f"--cluster {spec}: could not connect to a Ray Client server at 127.0.0.1:{port}" in errors[0]
    assert "gives up after about 3 s" in errors[0]
    assert res.stderr.rstrip().splitlines()[-1] == errors[0], "more on stderr after the error line"
    for noise in ("Traceback", "Warning", "requires pip package"):
        assert noise not in res.stderr, res.stderr[-3000:]
    # nor Ray's own log lines (Ray Client's "INFO client_builder.py:262 -- Passing the following kwargs ..."):
    # every line is parvec's
    raw = [line for line in res.stderr.splitlines() if " INFO " in line or " WARNING " in line or ".py:" in line]
    assert raw == [], res.stderr[-3000:]
    assert os.listdir(out) == []


def test_a_local_ray_off_loopback_is_refused_with_the_address() -> None:
    # The guard behind the loopback promise: a Ray version that ignores the single-machine switch (and would
    # listen on the network) is refused, naming the address it took.
    from types import SimpleNamespace

    from parvec.distributed.cluster import _check_loopback
    from parvec.errors import ParvecError

    def fake(address: str) -> SimpleNamespace:
        return SimpleNamespace(util=SimpleNamespace(get_node_ip_address=lambda: address))

    for ok in ("127.0.0.1", "::1", "localhost"):
        _check_loopback(fake(ok), "local:2")
    with pytest.raises(ParvecError, match=r"--cluster local:2: the local Ray took the address 192\.0\.2\.7 instead "
                                          r"of 127\.0\.0\.1, so its servers would listen on the network"):
        _check_loopback(fake("192.0.2.7"), "local:2")
