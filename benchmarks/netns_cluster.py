"""Several Ray nodes on this machine, each in its own network namespace, joined by shaped veth links.

``NodeNet(n)`` makes a hub namespace holding a bridge and ``n`` node namespaces, each joined to the bridge by a veth
pair (node ``i`` at 10.231.0.(i+1)/24); ``shape(rate)`` puts a token bucket (``tc tbf``) on both ends of every veth,
so each node has a full-duplex link of ``rate`` to the others, as a cluster's nodes have (``netem`` delays are not
available on these kernels: only the rate is shaped).  ``start_ray()`` starts a Ray head in node 0 and a Ray node in
each other namespace (``ray start``, one CPU each, a temp directory of their own); ``run(i, cmd)`` runs a command in
node ``i``'s namespace; ``link_bytes()`` reads every veth's byte counters.  ``close()`` ends every process in the
namespaces (by the namespaces' own process lists, never by name) and deletes the namespaces: no traffic leaves
them and nothing is left behind.  Needs root, ``ip`` and ``tc``.

    with NodeNet(3) as net:
        net.shape("1gbit"); net.start_ray()
        net.run(0, ["python", "-m", "parvec", "train", ..., "--cluster", "auto"], env={"RAY_ADDRESS": net.address})
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SUBNET = "10.231.0"
RAY_PORT = 6391


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def tbf_args(rate_bps: float, rate: str) -> list[str]:
    """``tc``'s arguments for a token bucket at ``rate`` (``rate_bps`` its bytes/s): a bucket of 1 ms of the rate
    (at least two 64 KiB packets), 100 ms of queue.

    Example:
        >>> tbf_args(125e6, "1gbit")
        ['tbf', 'rate', '1gbit', 'burst', '135168', 'latency', '100ms']
    """
    burst = max(int(rate_bps / 1000), 2 * 65536 + 4096)
    return ["tbf", "rate", rate, "burst", str(burst), "latency", "100ms"]


class NodeNet:
    """``nodes`` network namespaces joined by veth links through a bridge (module docstring)."""

    def __init__(self, nodes: int, temp_dir: Path) -> None:
        tag = os.getpid() % 100000
        self.hub = f"pvhub{tag}"
        self.names = [f"pvn{tag}-{i}" for i in range(nodes)]
        self.temp_dir = temp_dir
        self.address = f"{SUBNET}.1:{RAY_PORT}"
        _ip("netns", "add", self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        for i, name in enumerate(self.names):
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
            # the pair is made in the node's namespace, its hub end moved to the hub and put on the bridge
            _ip("-n", name, "link", "add", "eth0", "type", "veth", "peer", "name", f"h{i}")
            _ip("-n", name, "link", "set", f"h{i}", "netns", self.hub)
            _ip("-n", self.hub, "link", "set", f"h{i}", "master", "br0")
            _ip("-n", self.hub, "link", "set", f"h{i}", "up")
            _ip("-n", name, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")

    def __enter__(self) -> NodeNet:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def shape(self, rate: str, rate_bps: float) -> None:
        """Every link shaped at ``rate`` in both directions (``rate_bps`` infinite: unshaped)."""
        for i, name in enumerate(self.names):
            for ns, dev in ((name, "eth0"), (self.hub, f"h{i}")):
                subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root"],
                               capture_output=True)
                if rate_bps != math.inf:
                    subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root",
                                    *tbf_args(rate_bps, rate)], check=True, capture_output=True, text=True)

    def popen(self, i: int, cmd: list[str], env: dict[str, str], **kw: Any) -> subprocess.Popen[str]:
        """``cmd`` started in node ``i``'s namespace."""
        return subprocess.Popen(["ip", "netns", "exec", self.names[i], *cmd], env=env, text=True, **kw)

    def run(self, i: int, cmd: list[str], env: dict[str, str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        """``cmd`` in node ``i``'s namespace; killed (its process group) after ``timeout_s``."""
        proc = self.popen(i, cmd, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            err += f"\n(killed after {timeout_s:.0f} s)"
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def start_ray(self, env: dict[str, str], python: str = sys.executable) -> None:
        """A Ray head in node 0 and a Ray node in each other (one CPU each), all in ``temp_dir``."""
        ray = str(Path(python).with_name("ray"))
        common = ["--num-cpus", "1", "--disable-usage-stats", f"--temp-dir={self.temp_dir}"]
        head = self.run(0, [ray, "start", "--head", f"--node-ip-address={SUBNET}.1", f"--port={RAY_PORT}",
                            "--include-dashboard=false", *common], env, 180)
        if head.returncode != 0:
            raise SystemExit(f"ray start --head failed: {head.stderr[-2000:]}")
        for i in range(1, len(self.names)):
            node = self.run(i, [ray, "start", f"--address={self.address}", f"--node-ip-address={SUBNET}.{i + 1}",
                                *common], env, 180)
            if node.returncode != 0:
                raise SystemExit(f"ray start (node {i}) failed: {node.stderr[-2000:]}")
        time.sleep(2)

    def link_bytes(self) -> list[tuple[int, int]]:
        """Each node's link: (bytes it sent, bytes it received), from its veth's counters."""
        out = []
        for name in self.names:
            got = []
            for what in ("tx_bytes", "rx_bytes"):
                res = subprocess.run(["ip", "netns", "exec", name, "cat", f"/sys/class/net/eth0/statistics/{what}"],
                                     capture_output=True, text=True, check=True)
                got.append(int(res.stdout))
            out.append((got[0], got[1]))
        return out

    def _pids(self) -> list[int]:
        pids: list[int] = []
        for name in [*self.names, self.hub]:
            res = _ip("netns", "pids", name, check=False)
            pids += [int(p) for p in res.stdout.split()]
        return pids

    def close(self) -> None:
        """End every process in the namespaces (TERM, then KILL), then delete the namespaces."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self._pids():
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 10
            while self._pids() and time.monotonic() < deadline:
                time.sleep(0.2)
        for name in [*self.names, self.hub]:
            _ip("netns", "del", name, check=False)
