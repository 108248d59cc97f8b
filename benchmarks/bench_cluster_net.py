"""Both cluster modes on a shaped network, beside the time model's prediction.

The benchmark makes its own network namespace (``ip netns``), brings its loopback up, and shapes that loopback
with ``tc`` (a token bucket, ``tbf``, at 10 Gb/s, 1 Gb/s, ... ; no shaping for the reference run).  Every
``parvec train --cluster local:2`` then runs inside the namespace (``ip netns exec``): its Ray, its actors and
every byte between them (the replicas' gloo allreduce, the sharded mode's calls from clients to shards) cross
that one shaped loopback, the only interface there, on 127.0.0.1.  Nothing listens outside the namespace; every
run has a time-out; the namespace is deleted at the end (also on Ctrl-C).  Needs root, ``ip`` and ``tc``.

The time model (the functions below; docs/benchmarks/clusters.md, "A shaped network"):

* **replicas**: every byte the allreduce moves crosses the link once, and a sync takes ``t_j = bytes_j / R +
  2(N-1) x RTT/2``.  A blocking sync (each epoch's last, the largest, or all with ``--no-sync-overlap``) holds
  training up for all of it; an overlapped one runs while the next part trains and holds it up only for what it
  takes beyond that part, ``max(0, t_j - T_part)``.  So ``T(R) = T0 + sum of the holds`` (:func:`sync_holds`),
  ``T0`` the unshaped run's training time, ``bytes_j`` sync j's rows times the bytes per row the run counted,
  ``T_part`` the unshaped time per part.  Before the overlapped syncs the model was the bulk-synchronous
  ``T0 + bytes_synced / R + syncs x 2(N-1) x RTT/2``, which is this with every sync blocking.
* **sharded** mode keeps ``k = clients x threads`` minibatches in flight, so the link's transfers overlap the
  CPU's work: the epoch takes as long as its busier resource, ``T(R) = max(T0, bytes / R + minibatches x RTT /
  k)`` (the bottleneck bound), ``bytes`` every shard's requests and replies as the clients counted them.  The
  table also gives the pessimistic bound of a closed queueing network with exponential service times (exact
  mean-value analysis, :func:`mva_time`: ``k`` minibatches, each ``Z = T0 x k / minibatches`` away from the
  link, then holding it for ``bytes per minibatch / R``); the measured time lies between the two.  The
  queueing model alone overestimates (27% above the measured time at 1 Gb/s, beyond the 25% the model must
  hold to), because the transfers are of fixed size (not exponential) and the CPU is less contended while the
  link is slow.

A shaped loopback is one shared medium: all traffic of all processes shares one rate ``R`` (a real cluster
has a full-duplex link per node).  The projections (``--project``) therefore use the same formulas with a
link per node: a ring allreduce moves ``2(N-1)/N`` of the synced bytes through every node's link, and a
shard's link carries its own share of the calls.

Several nodes (``--nodes N``, :func:`measure_nodes`): N Ray nodes on this machine, each in its own network
namespace joined to the others by a veth link through a bridge (``netns_cluster.py``), every link shaped in both
directions, and a sharded run across them beside :func:`predict_nodes`.

    sudo python benchmarks/bench_cluster_net.py --rates 0 10gbit 1gbit 200mbit --out /tmp/net.json
    sudo python benchmarks/bench_cluster_net.py --nodes 3 --rates 0 1gbit 200mbit --out /tmp/nodes.json
    python benchmarks/bench_cluster_net.py --project            # the projection tables only (no root)
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import harness
from harness import DEFAULT_CORPUS, slice_corpus

MODES: dict[str, list[str]] = {
    "replicas 2 x 1 thread": ["--cluster", "local:2", "--threads", "1"],
    # the bulk-synchronous replicas (before the overlapped syncs): the model's other branch
    "replicas 2 x 1 thread, every sync blocking": ["--cluster", "local:2", "--threads", "1", "--no-sync-overlap"],
    "sharded 2 shards, 2 clients x 1 thread": ["--cluster", "local:2", "--mode", "sharded", "--shards", "2",
                                               "--clients", "2", "--threads", "1"],
    # half the bytes on the wire (wire.to_wire): what a link-bound run gains
    "sharded 2 shards, 2 clients x 1 thread, float16 wire": ["--cluster", "local:2", "--mode", "sharded", "--shards",
                                                             "2", "--clients", "2", "--threads", "1",
                                                             "--wire-floats", "float16"],
}

# The measured terms of the node projection (docs/benchmarks/clusters.md, "The cost of a call"; filled in from
# bench_sharded.py calls and --kernel on this machine).
SHARD_INPUT_US = 0.87  # a shard's rows, dot products and adjust per input word (50 columns, in-process)
SHARD_CALL_US = 1530.0  # a shard's CPU per call besides its step: Ray, the call in inline parts
CLIENT_CALL_US = 1680.0  # a client's CPU per call to one shard (packing, Ray's submission and reply): inline parts
RAY_SHARD_CALL_US = 1830.0  # the same with one array each way (through the object store beyond 100 KiB)
RAY_CLIENT_CALL_US = 2380.0
CLIENT_INPUT_US = 0.35  # a client's CPU per input word besides its calls (forming, partial sums, coefficients)
INTO_BYTES = 40.0  # float16 coefficients (w(n+1) x 2 bytes at w = 3.3) and indices, per input word into a shard
OUT_BYTES = 40.0  # float16 partial dot products per input word out of a shard

PROBE = r"""
import socket, sys, threading, time
n = int(sys.argv[1])
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(2); port = srv.getsockname()[1]
def serve():
    a, _ = srv.accept(); a.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while (b := a.recv(1)) and b != b"q":
        a.sendall(b)
    a.close()
    c, _ = srv.accept(); got = 0
    while (b := c.recv(1 << 20)):
        got += len(b)
    c.sendall(b"k"); c.close()
threading.Thread(target=serve, daemon=True).start()
s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
t = time.perf_counter()
for _ in range(200):
    s.sendall(b"x"); s.recv(1)
rtt = (time.perf_counter() - t) / 200
s.sendall(b"q"); s.close()
s = socket.create_connection(("127.0.0.1", port)); buf = b"\0" * (1 << 20)
t = time.perf_counter()
for _ in range(n):
    s.sendall(buf)
s.shutdown(socket.SHUT_WR); s.recv(1)
print(rtt, n * len(buf) / (time.perf_counter() - t))
"""


# --------------------------------------------------------------------------- the time model
def rate_bytes(rate: str) -> float:
    """``tc``'s rate notation in bytes per second; ``0`` is unshaped (infinite).

    Example:
        >>> rate_bytes("1gbit"), rate_bytes("200mbit")
        (125000000.0, 25000000.0)
    """
    if rate in ("0", "", "none"):
        return math.inf
    units = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3}
    for suffix, bits in units.items():
        if rate.endswith(suffix):
            return float(rate[: -len(suffix)]) * bits / 8
    raise SystemExit(f"--rates: {rate!r} is not a rate like 10gbit, 1gbit or 200mbit (or 0: unshaped)")


def mva_time(calls: int, k: int, think_s: float, link_s: float) -> float:
    """Seconds for ``calls`` round trips of ``k`` circulating customers (exact mean-value analysis of a closed
    network: a delay of ``think_s`` per round and one FIFO link holding each round for ``link_s``).

    Example:
        >>> round(mva_time(1000, 4, 0.004, 0.0), 3)   # no link time: k rounds every think_s
        1.0
        >>> round(mva_time(1000, 4, 0.0001, 0.002), 3)  # the link saturates: calls x link_s
        2.0
    """
    q = 0.0
    x = 0.0
    for n in range(1, k + 1):
        r_link = link_s * (1.0 + q)
        x = n / (think_s + r_link)
        q = x * r_link
    return calls / x if x > 0 else math.inf


def run_syncs(report: dict[str, Any]) -> list[tuple[int, bool]]:
    """A replicas run's syncs in order, from its report: (rows, whether it ran while the next part trained)."""
    from parvec.distributed.replica_plan import overlapped_syncs, sync_plan

    cl = report["cluster"]
    plan = sync_plan(report["parts_per_epoch"], report["epochs"], cl["min_sync_words"], report["vocab_size"],
                     cl.get("full_sync_times", 0))
    cap = report.get("sync_overlap_rows") or 0  # absent from runs before the overlapped syncs: none overlapped
    return [pair for epoch in plan for pair in zip(epoch, overlapped_syncs(epoch, cap), strict=True)]


def sync_holds(syncs: list[tuple[int, bool]], bytes_per_row: float, rate: float, latency_s: float,
               part_s: float) -> float:
    """Seconds the syncs hold training up: a blocking sync all of its ``rows x bytes_per_row / rate + latency_s``,
    an overlapped one what it takes beyond the ``part_s`` of training it runs beside.

    Example:
        >>> sync_holds([(1000, True), (1000, False)], 100.0, 1e6, 0.01, 0.05)  # 0.11 s each: 0.06 + 0.11
        0.17
    """
    total = 0.0
    for rows, overlapped in syncs:
        t = rows * bytes_per_row / rate + latency_s
        total += max(0.0, t - part_s) if overlapped else t
    return round(total, 12)


def predict(mode: str, base: dict[str, Any], rate: float, rtt_s: float, pessimistic: bool = False) -> float:
    """The model's training seconds at link rate ``rate`` (bytes/s) from the unshaped run ``base`` (sharded,
    ``pessimistic``: the queueing network's instead of the bottleneck bound)."""
    t0 = base["training_seconds"]
    if mode.startswith("replicas"):
        n, syncs = base["replicas"], run_syncs(base)
        part_s = (t0 - base["sync_seconds"]) / len(syncs)  # the unshaped training time per part
        return t0 + sync_holds(syncs, base["bytes_synced"] / base["rows_synced"], rate, 2 * (n - 1) * rtt_s / 2,
                               part_s)
    k = base["clients"] * base["client_threads"]
    calls = base["minibatches"]
    bytes_total = (base["bytes_sent_per_word"] + base["bytes_received_per_word"]) * base["trained_input_words"]
    if pessimistic:
        return mva_time(calls, k, t0 * k / calls, bytes_total / calls / rate + rtt_s)
    return max(t0, bytes_total / rate + calls * rtt_s / k)


# --------------------------------------------------------------------------- the namespace
class Namespace:
    """A network namespace of this benchmark: loopback up, shaped with ``tbf`` at ``rate`` (None: unshaped)."""

    def __init__(self) -> None:
        self.name = f"parvec-net-{os.getpid()}"
        self._ip("netns", "add", self.name)
        self._ip("-n", self.name, "link", "set", "lo", "up")

    @staticmethod
    def _ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True)

    def shape(self, rate: str) -> None:
        """Replace the loopback's queueing discipline: a token bucket at ``rate``, or none (``0``)."""
        subprocess.run(["ip", "netns", "exec", self.name, "tc", "qdisc", "del", "dev", "lo", "root"],
                       capture_output=True)
        if rate_bytes(rate) == math.inf:
            return
        # The bucket holds 1 ms of the rate, at least two loopback packets (MTU 64 KiB); 100 ms of queue.
        burst = max(int(rate_bytes(rate) / 1000), 2 * 65536 + 4096)
        subprocess.run(["ip", "netns", "exec", self.name, "tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate",
                        rate, "burst", str(burst), "latency", "100ms"], check=True, capture_output=True, text=True)

    def run(self, cmd: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        """``cmd`` inside the namespace, in its own process group, killed with it after ``timeout_s``."""
        proc = subprocess.Popen(["ip", "netns", "exec", self.name, *cmd], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                env=harness.child_env())
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            out, err = proc.communicate()
            raise SystemExit(f"timed out after {timeout_s:.0f} s: {' '.join(cmd)}\n{err[-2000:]}") from None
        except BaseException:  # Ctrl-C: the run is in a session of its own, so it heard nothing; stop it too
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
            raise
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def probe(self, megabytes: int) -> tuple[float, float]:
        """The link's round-trip time (s, 1-byte TCP messages) and its TCP throughput (bytes/s)."""
        res = self.run([sys.executable, "-c", PROBE, str(megabytes)], 120)
        if res.returncode != 0:
            raise SystemExit(f"the link probe failed: {res.stderr[-2000:]}")
        rtt, rate = (float(v) for v in res.stdout.split())
        return rtt, rate

    def close(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


def check_tools() -> str | None:
    """Why this machine cannot run the shaped benchmark, or None."""
    if os.geteuid() != 0:
        return "needs root (ip netns, tc)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"needs {tool} (iproute2)"
    return None


# --------------------------------------------------------------------------- runs
def train(ns: Namespace, mode: str, corpus: Path, work: Path, common: list[str], timeout_s: float) -> dict[str, Any]:
    """One ``parvec train`` of ``mode`` inside the namespace; its report."""
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(Path(tmp) / "v.npy"), "--report",
               str(report), "--no-progress", *common, *MODES[mode]]
        res = ns.run(cmd, timeout_s)
        if res.returncode != 0:
            raise SystemExit(f"{mode} failed ({res.returncode}): {res.stderr[-2000:]}")
        return json.loads(report.read_text(encoding="utf-8"))


KEEP = ("training_seconds", "words_per_sec", "words_trained", "cpu_seconds", "replicas", "syncs", "sync_seconds",
        "bytes_synced", "rows_synced", "syncs_overlapped", "sync_overlap_rows", "parts_per_epoch", "epochs",
        "vocab_size", "cluster", "clients", "client_threads", "shards", "minibatches", "trained_input_words",
        "bytes_sent_per_word", "bytes_received_per_word", "minibatch_words")


def measure(a: argparse.Namespace) -> dict[str, Any]:
    why = check_tools()
    if why:
        raise SystemExit(f"bench_cluster_net.py: {why}")
    a.work.mkdir(parents=True, exist_ok=True)
    corpus = slice_corpus(a.corpus, a.tokens, a.work)
    common = ["--epochs", str(a.epochs), "--sample", "1e-4", "--dim", str(a.dim), "--seed", "1", "--no-cache"]
    ns = Namespace()
    runs: list[dict[str, Any]] = []
    links: dict[str, dict[str, float]] = {}
    try:
        for rate in a.rates:
            ns.shape(rate)
            mb = 32 if rate_bytes(rate) > 5e8 else max(4, int(rate_bytes(rate) * 2 / 2**20))
            rtt, tput = ns.probe(mb)
            links[rate] = {"rtt_s": rtt, "tcp_bytes_per_s": tput}
            print(f"link {rate}: RTT {rtt * 1e6:.0f} us, TCP {tput * 8 / 1e9:.2f} Gb/s", file=sys.stderr, flush=True)
        for rnd in range(a.rounds):
            for rate in a.rates:
                ns.shape(rate)
                for mode in a.modes:
                    rep = train(ns, mode, corpus, a.work, common, a.timeout)
                    one = {"round": rnd, "rate": rate, "mode": mode, **{k: rep.get(k) for k in KEEP}}
                    runs.append(one)
                    print(f"round {rnd} {rate:>8s} {mode}: {one['training_seconds']:.2f} s", file=sys.stderr,
                          flush=True)
    finally:
        ns.close()
    return {"cpu": harness.machine()["cpu_model"], "cores": os.cpu_count(), "tokens": a.tokens,
            "epochs": a.epochs, "dim": a.dim, "links": links, "runs": runs}


def compare(result: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The table: per mode and rate, measured median seconds beside the model's (from the unshaped runs)."""
    runs, links = result["runs"], result["links"]
    rows: list[dict[str, Any]] = []
    base_rate = next(r for r in links if rate_bytes(r) == math.inf)
    lines = [f"CPU: {result['cpu']}, {result['cores']} cores; {result['tokens']:,} tokens x {result['epochs']} "
             f"epoch(s), dim {result['dim']}; medians of {max(r['round'] for r in runs) + 1} round(s)", "",
             "| mode | link | link measured (TCP, RTT) | training s measured | model | model / measured | "
             "queueing bound / measured | traffic |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for mode in dict.fromkeys(r["mode"] for r in runs):
        base_runs = [r for r in runs if r["mode"] == mode and r["rate"] == base_rate]
        base = dict(base_runs[0])
        base["training_seconds"] = statistics.median(r["training_seconds"] for r in base_runs)
        if mode.startswith("replicas"):
            traffic = f"{base['bytes_synced'] / 1e6:.0f} MB in {base['syncs']} syncs"
        else:
            total = (base["bytes_sent_per_word"] + base["bytes_received_per_word"]) * base["trained_input_words"]
            traffic = f"{total / 1e6:.0f} MB in {base['minibatches']} minibatches x {base['shards']} shards"
        for rate in links:
            mine = [r["training_seconds"] for r in runs if r["mode"] == mode and r["rate"] == rate]
            measured = statistics.median(mine)
            model = predict(mode, base, rate_bytes(rate), links[base_rate]["rtt_s"])
            queueing = predict(mode, base, rate_bytes(rate), links[base_rate]["rtt_s"], pessimistic=True)
            rows.append({"mode": mode, "rate": rate, "measured_s": measured, "model_s": model,
                         "ratio": model / measured, "queueing_s": queueing})
            link = links[rate]
            q = f"{queueing / measured:.2f}" if not mode.startswith("replicas") else "-"
            lines.append(f"| {mode} | {rate if rate_bytes(rate) < math.inf else 'unshaped'} | "
                         f"{link['tcp_bytes_per_s'] * 8 / 1e9:.2f} Gb/s, {link['rtt_s'] * 1e6:.0f} us | "
                         f"{measured:.2f} | {model:.2f} | {model / measured:.2f} | {q} | {traffic} |")
    worst = max(abs(r["ratio"] - 1) for r in rows)
    lines += ["", f"Largest model error: {worst:.0%} (bar: 25%) -- "
              f"{'the model holds' if worst <= 0.25 else 'THE MODEL IS WRONG'}"]
    return "\n".join(lines), rows


# --------------------------------------------------------------------------- several nodes, one namespace each
NODE_MODE = ["--cluster", "auto", "--mode", "sharded", "--shards", "2", "--clients", "2", "--threads", "1",
             "--wire-floats", "float16"]


def measure_nodes(a: argparse.Namespace) -> dict[str, Any]:
    """A sharded run (2 shards, 2 clients x 1 thread) across ``--nodes`` Ray nodes, each in its own network
    namespace joined by veth links (``netns_cluster.NodeNet``), at each of ``--rates`` on every link, rounds
    interleaved; each run's report and every link's bytes.  The model's prediction for a shaped run
    (:func:`predict_nodes`) starts from the unshaped run of the same round."""
    from netns_cluster import NodeNet

    why = check_tools()
    if why:
        raise SystemExit(f"bench_cluster_net.py --nodes: {why}")
    corpus = slice_corpus(a.corpus, a.tokens, a.work)
    env = harness.child_env(RAY_AUTH_MODE="disabled")  # the nodes' own Ray, no token shared between them
    common = ["--dim", str(a.dim), "--epochs", str(a.epochs), "--min-count", "5", "--sample", "1e-4", "--seed", "1",
              "--no-cache", "--no-progress"]
    runs = []
    with NodeNet(a.nodes, a.work / "ray") as net:
        net.start_ray(env)
        for rnd in range(a.rounds):
            for rate in a.rates:
                net.shape(rate, rate_bytes(rate))
                with tempfile.TemporaryDirectory(dir=a.work) as tmp:
                    report = Path(tmp) / "report.json"
                    before = net.link_bytes()
                    res = net.run(0, [sys.executable, "-m", "parvec", "train", str(corpus), "-o",
                                      str(Path(tmp) / "v.npy"), "--report", str(report), *common, *NODE_MODE],
                                  dict(env, RAY_ADDRESS=net.address), a.timeout)
                    after = net.link_bytes()
                    if res.returncode != 0:
                        raise SystemExit(f"the run across {a.nodes} nodes failed: {res.stderr[-3000:]}")
                    rep = json.loads(report.read_text(encoding="utf-8"))
                links = [(ta - tb, ra - rb) for (ta, ra), (tb, rb) in zip(after, before, strict=True)]
                one = {"round": rnd, "rate": rate, "links": links, **{k: rep.get(k) for k in KEEP},
                       "bytes_counted": (rep["bytes_sent_per_word"] + rep["bytes_received_per_word"])
                       * rep["words_trained"], "shard_nodes": rep.get("shard_nodes"),
                       "client_nodes": rep.get("client_nodes")}
                runs.append(one)
                print(f"round {rnd} {rate}: {one['training_seconds']:.2f} s, {one['words_per_sec'] / 1e6:.3f}M "
                      f"words/s, busiest link {max(max(t, r) for t, r in links) / 1e6:.0f} MB", file=sys.stderr,
                      flush=True)
    return {"nodes": a.nodes, "runs": runs, "corpus": str(corpus), "cpu": harness.machine_line(harness.machine())}


def predict_nodes(base: dict[str, Any], rate: float, bound: bool = False) -> float:
    """Training seconds at ``rate`` bytes/s per link from an unshaped run ``base``: ``k = clients x threads``
    minibatches circulate, each a round of CPU work (``T0 x k / minibatches``, the unshaped run's) and a transfer
    through the busiest link (its bytes in its busier direction, per minibatch, over ``rate``; links are full
    duplex, the veth round trips of ~50 us left out): the closed queueing network's time (:func:`mva_time`).
    ``bound``: the bottleneck bound ``max(T0, busiest link's bytes / rate)`` instead, which assumes the transfers
    overlap the CPU work completely (right for many minibatches in flight, optimistic for 2).

    Example:
        >>> base = {"training_seconds": 4.0, "links": [(100e6, 50e6), (20e6, 60e6)], "minibatches": 400,
        ...         "clients": 2, "client_threads": 1}
        >>> predict_nodes(base, 12.5e6, bound=True), round(predict_nodes(base, 12.5e6), 2)
        (8.0, 10.0)
    """
    busiest = max(max(tx, rx) for tx, rx in base["links"])
    t0 = base["training_seconds"]
    if bound:
        return max(t0, busiest / rate)
    calls, k = base["minibatches"], base["clients"] * base["client_threads"]
    return mva_time(calls, k, t0 * k / calls, busiest / calls / rate)


def compare_nodes(result: dict[str, Any]) -> str:
    """The measured runs beside the model's prediction (medians over rounds), as a Markdown table."""
    runs = result["runs"]
    base_rate = next(r["rate"] for r in runs if rate_bytes(r["rate"]) == math.inf)
    lines = [f"{result['nodes']} Ray nodes, one network namespace each, joined by veth links through a bridge; "
             f"sharded, 2 shards, 2 clients x 1 thread, float16 wire; CPU: {result['cpu']}", "",
             "| link rate | measured s | words/s | busiest link MB (tx / rx) | model s | model / measured | "
             "bottleneck bound s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for rate in dict.fromkeys(r["rate"] for r in runs):
        ratios, measured, preds, bounds, wps, link = [], [], [], [], [], (0, 0)
        for r in (x for x in runs if x["rate"] == rate):
            base = next(x for x in runs if x["round"] == r["round"] and x["rate"] == base_rate)
            p = predict_nodes(base, rate_bytes(rate))
            ratios.append(p / r["training_seconds"])
            measured.append(r["training_seconds"])
            preds.append(p)
            bounds.append(predict_nodes(base, rate_bytes(rate), bound=True))
            wps.append(r["words_per_sec"])
            link = max(r["links"], key=max)
        lines.append(f"| {rate} | {statistics.median(measured):.2f} | {statistics.median(wps) / 1e6:.3f}M | "
                     f"{link[0] / 1e6:.0f} / {link[1] / 1e6:.0f} | {statistics.median(preds):.2f} | "
                     f"{statistics.median(ratios):.2f} | {statistics.median(bounds):.2f} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- a shard's kernel rate
def shard_kernel_rate(corpus: Path, work: Path, rows: int, cols: int, minibatch_words: int = 200,
                      window: int = 5, seconds: float = 20.0, negatives_per: str = "window",
                      clients: int = 1) -> dict[str, float]:
    """Input words per second one thread of a shard trains (draw the rows, dot products, adjust) when the shard
    holds ``rows`` words x ``cols`` columns: the corpus's minibatches with their word ids spread over ``rows``
    (a multiplicative hash), so that rows are where a large vocabulary puts them (memory, not cache).

    The kernels run in a shard's order (``ShardActor.step``): each call adjusts the minibatch whose dot products
    its client asked for in that client's previous call, then computes the dot products of the client's next
    one; with ``clients`` client threads taking turns, ``clients - 1`` other calls come between a minibatch's
    dot products and its adjust (whose rows may have left the cache by then)."""
    import numpy as np

    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus
    from parvec.distributed.shard_kernels import shard_kernels
    from parvec.distributed.units import UnitRunner, client_keep, prepare_part
    from parvec.sampling import word_noise_tables

    enc = EncodedCorpus.from_file(str(slice_corpus(corpus, 1_000_000, work)))
    cfg = TrainConfig(dim=100, window=window, sample=1e-4).validate()
    counts = enc.vocab.counts
    prob, alias = word_noise_tables(counts, cfg.ns_exponent)
    tokens, offsets = prepare_part(enc.tokens, enc.offsets, cfg.max_sentence_length)
    runner = UnitRunner(cfg, client_keep(counts, cfg), minibatch_words)
    mbs = list(runner.minibatches(tokens, offsets, 0, len(offsets) - 1, 7, 0.025, 0.0001, len(tokens)))
    rng = np.random.default_rng(1)
    w_in = (rng.random((rows, cols), dtype=np.float32) - 0.5) / 100
    w_out = (rng.random((rows, cols), dtype=np.float32) - 0.5) / 100
    stride = 1 + cfg.negative
    kernels = shard_kernels(negatives_per, window, cfg.negative)
    spread = np.int64(2_654_435_761)
    t_draw = t_train = 0.0
    inputs = 0
    waiting: collections.deque = collections.deque()  # (rows, minibatch, dot products) awaiting their adjust
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        for mb in mbs:
            f = np.empty(mb.pairs * stride, dtype=np.float32)
            t = time.perf_counter()
            kept = kernels.rows(mb.seq, mb.seg, mb.shrink, mb.pairs, mb.seed, prob, alias)
            t_draw += time.perf_counter() - t
            kept = (*(k * spread % rows for k in kept[:2]), *kept[2:])  # the row ids, not window's first pairs
            t = time.perf_counter()
            if len(waiting) == clients:  # this client's previous minibatch
                p_kept, p_mb, p_f = waiting.popleft()
                kernels.adjust_rows(w_in, w_out, p_kept, p_mb.seg, p_mb.shrink, p_f * np.float32(1e-3))
            kernels.dotprod_rows(w_in, w_out, kept, f)
            t_train += time.perf_counter() - t
            waiting.append((kept, mb, f))
            inputs += mb.inputs
    return {"rows": rows, "cols": cols, "negatives_per": negatives_per, "minibatch_words": minibatch_words,
            "clients": clients, "inputs_per_s": inputs / (t_draw + t_train),
            "draw_share": t_draw / (t_draw + t_train), "pairs_per_input": sum(m.pairs for m in mbs) /
            sum(m.inputs for m in mbs)}


# --------------------------------------------------------------------------- projections
def project_replicas(nodes: int, node_words_s: float, rate: float, latency_s: float, vocab: int, dim: int,
                     sync_words: int = 200_000, min_sync_words: int = 1024, words: int = 1_000_000_000,
                     overlap: bool = True) -> dict:
    """A replicas run of ``nodes`` nodes, each training ``node_words_s`` alone, links of ``rate`` bytes/s per
    node and ``latency_s`` one way: its words/s and efficiency (words/s over nodes x node_words_s);
    ``overlap``: the smaller syncs run beside the next part (the default), else every sync blocks."""
    from parvec.distributed.replica_plan import overlap_rows_cap, overlapped_syncs, sync_plan, traffic_model
    m = traffic_model(vocab, dim, nodes, words, 1, sync_words=sync_words, min_sync_words=min_sync_words)
    per_node_bytes = m["bytes"] / nodes  # what each node receives (and sends) over the epoch
    cap = overlap_rows_cap(vocab, min_sync_words) if overlap else 0
    plan = sync_plan(math.ceil(words / nodes / sync_words), 1, min_sync_words, vocab)[0]
    syncs = list(zip(plan, overlapped_syncs(plan, cap), strict=True))
    # a ring allreduce moves 2(N-1)/N of both matrices' rows through every node's link
    sync_s = sync_holds(syncs, 2 * (nodes - 1) / nodes * dim * 4 * 2, rate, 2 * (nodes - 1) * latency_s,
                        sync_words / node_words_s)
    train_s = words / nodes / node_words_s
    total = words / (train_s + sync_s)
    return {"nodes": nodes, "words_per_s": total, "efficiency": total / (nodes * node_words_s),
            "sync_share": sync_s / (train_s + sync_s), "syncs": m["syncs"], "gb_per_node": per_node_bytes / 1e9}


def project_sharded(shards: int, client_inputs_s: float, thread_kernel_s: float, shard_threads: int,
                    call_s_per_byte: float, rate: float, latency_s: float, contexts: float, negative: int,
                    in_flight: int, minibatch_words: int) -> dict:
    """Sharded mode with ``shards`` shard nodes: input words/s, and what limits them.

    Every shard works on every input word: ``thread_kernel_s`` of kernel per input on one of its
    ``shard_threads`` threads, plus ``call_s_per_byte`` of CPU for every byte its calls carry (Ray's handling,
    measured on the shards); each shard's full-duplex link carries, into the shard, the coefficients and
    indices, out of it the partial dot products; ``in_flight`` input words circulate in minibatches of
    ``minibatch_words``, each a round trip of ``2 x latency_s`` plus its transfer and kernel times.

    Example:
        >>> p = project_sharded(10, 1e9, 1e-6, 16, 4e-9, 1.25e9, 2e-4, 3.3, 5, 320_000, 200)
        >>> p["limit"], round(p["inputs_per_s"] / 1e6, 1)
        ('shard CPU', 9.1)
    """
    pair_values = contexts * (1 + negative)
    into_shard = pair_values * 4 + 4 * (2 * contexts + 1) + 2
    out_of_shard = pair_values * 4
    link_inputs_s = rate / max(into_shard, out_of_shard)
    cpu_inputs_s = shard_threads / (thread_kernel_s + call_s_per_byte * (into_shard + out_of_shard))
    round_s = 2 * latency_s + minibatch_words / min(cpu_inputs_s, link_inputs_s)
    latency_inputs_s = in_flight / round_s
    limits = {"shard CPU": cpu_inputs_s, "shard link": link_inputs_s, "clients": client_inputs_s,
              "round trips": latency_inputs_s}
    limit = min(limits, key=limits.get)
    best = limits[limit]
    return {"shards": shards, "inputs_per_s": best, "limit": limit, "gbit_into_shard": best * into_shard * 8 / 1e9}


def project_nodes(nodes: int, cores: int, rate: float, latency_s: float, in_flight: int, client_threads: int, *,
                  shard_input_s: float, shard_call_s: float, client_input_s: float, client_call_s: float,
                  into_bytes: float, out_bytes: float, min_minibatch: int = 16, shards: int | None = None) -> dict:
    """A sharded run on ``nodes`` nodes of ``cores`` cores and a full-duplex link of ``rate`` bytes/s each,
    ``shards`` shards (default one per node; at most one per node) and ``client_threads`` client threads spread
    over the nodes; every cost a term measured on this machine:

    * ``shard_input_s``: a shard's kernel CPU per input word at its columns (``--kernel``);
    * ``shard_call_s``: a shard's CPU per call besides its kernels (the transport and the call's Python;
      ``bench_sharded.py calls``), ``client_call_s`` a client's per call to one shard (packing, sending, reading);
    * ``client_input_s``: a client's CPU per input word (forming minibatches, summing partials, coefficients);
    * ``into_bytes`` / ``out_bytes``: bytes per input word into one shard (coefficients and indices) and out of
      it (partial dot products).

    ``in_flight`` input words circulate, one minibatch per client thread (at least ``min_minibatch`` words), each
    a round trip of ``2 x latency_s``, its transfer through the client's link (to and from every shard) and its
    CPU on one shard thread and the client.  Every node runs a shard and clients, so its cores do ``1 / nodes``
    of all the work: input words/s is the least of all cores over the CPU per input word, the links (each node
    sends its shard's answers and its clients' calls), a shard node's cores over its shard's CPU per input word
    (every shard works on every input word), and in-flight words over the round trip.

    Example:
        >>> p = project_nodes(20, 24, 1.25e9, 1e-4, 65_536, 1600, shard_input_s=1e-6, shard_call_s=1e-4,
        ...                   client_input_s=5e-7, client_call_s=1e-4, into_bytes=60, out_bytes=40)
        >>> p["limit"], p["minibatch_words"], round(p["inputs_per_s"] / 1e6, 2)
        ('cores', 40, 3.98)
    """
    shards = nodes if shards is None else min(shards, nodes)
    mb = max(min_minibatch, in_flight // client_threads)
    per_input = shards * (shard_input_s + (shard_call_s + client_call_s) / mb) + client_input_s
    cpu_inputs_s = min(nodes * cores / per_input, cores / (shard_input_s + shard_call_s / mb))
    # each direction of a node's link: a shard's answers (or calls), and its clients' share of the calls
    share = shards / nodes
    link_inputs_s = rate / max(out_bytes + into_bytes * share, into_bytes + out_bytes * share)
    round_s = (2 * latency_s + mb * shards * max(into_bytes, out_bytes) / rate
               + mb * (shard_input_s + client_input_s) + shard_call_s + shards * client_call_s)
    latency_inputs_s = client_threads * mb / round_s
    limits = {"cores": cpu_inputs_s, "links": link_inputs_s, "round trips": latency_inputs_s}
    limit = min(limits, key=limits.get)
    best = limits[limit]
    return {"nodes": nodes, "inputs_per_s": best, "limit": limit, "minibatch_words": mb,
            "client_threads": client_threads, "calls_per_s_per_shard": best / mb,
            "call_share": shards * (shard_call_s + client_call_s) / mb / per_input,
            "gbit_per_node": best * max(out_bytes + into_bytes * share, into_bytes + out_bytes * share) * 8 / 1e9}


def projections(a: argparse.Namespace) -> str:
    """The projection tables of docs/benchmarks/clusters.md from the model (the node rates are parameters)."""
    lines = [f"Replicas (Ji et al.): 1B-word epoch, vocabulary {a.vocab:,}, d {a.proj_dim}, a sync every "
             f"{a.sync_words:,} words per node; a full-duplex link per node, {a.latency_ms} ms one way", "",
             "| node alone (words/s) | nodes | link | words/s | efficiency | sync share | efficiency, every sync "
             "blocking | syncs | GB per node |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for node in a.node_words_s:
        for rate in ("1gbit", "10gbit", "56gbit", "100gbit"):
            for nodes in (8, 32, 128):
                p, b = (project_replicas(nodes, node, rate_bytes(rate), a.latency_ms / 1e3, a.vocab, a.proj_dim,
                                         sync_words=a.sync_words, overlap=overlap) for overlap in (True, False))
                lines.append(f"| {node / 1e6:.2f}M | {nodes} | {rate} | {p['words_per_s'] / 1e6:.1f}M | "
                             f"{p['efficiency']:.2f} | {p['sync_share']:.2f} | {b['efficiency']:.2f} | "
                             f"{p['syncs']:,} | {p['gb_per_node']:.1f} |")
    thread_kernel_s = 1 / (a.shard_thread_inputs_s * a.kernel_pairs / a.contexts)  # row accesses scale with pairs
    clients = a.client_thread_inputs_s * a.client_threads
    lines += ["", "Ji et al. (paper 001, Table V): 32 Broadwell nodes (36 cores each, FDR InfiniBand, 56 Gb/s) "
              "110M words/s, 4 nodes 20M; one node 5.8M words/s.", "",
              f"Sharded (Ordentlich et al.): 200M-word vocabulary, d 300, w = {a.contexts} contexts per input, 5 "
              f"negatives; a shard thread's kernels {thread_kernel_s * 1e6:.2f} us per input (measured "
              f"{a.shard_thread_inputs_s / 1e6:.2f}M inputs/s at {a.kernel_pairs} pairs per input, scaled to "
              f"{a.contexts}), {a.shard_threads} threads per shard node, {a.call_ns_per_byte} ns of CPU per byte of "
              f"its calls; clients {a.client_threads:,} threads x {a.client_thread_inputs_s / 1e6:.2f}M inputs/s; "
              f"{a.in_flight:,} input words in flight (the paper's 200 executors x 8 threads x 200 words); "
              f"{a.latency_ms} ms one way", "",
              "| shards | link per shard | input words/s | limited by | Gb/s into each shard |",
              "| --- | --- | --- | --- | --- |"]
    for rate in ("1gbit", "10gbit"):
        for shards in (6, 10, 15):
            p = project_sharded(shards, clients, thread_kernel_s, a.shard_threads, a.call_ns_per_byte * 1e-9,
                                rate_bytes(rate), a.latency_ms / 1e3, a.contexts, 5, a.in_flight, 200)
            lines.append(f"| {shards} | {rate} | {p['inputs_per_s'] / 1e6:.2f}M | {p['limit']} | "
                         f"{p['gbit_into_shard']:.2f} |")
    lines += ["", "Ordentlich et al. (paper 003, section 6.2): d 300 with 6 / 10 / 15 shards: 1.0M / 1.3M / 1.6M "
              "input words/s (200 executors x 8 threads, minibatch 200); d 1000, 25 shards: 1.2M."]
    return "\n".join(lines + ["", nodes_table(a)])


def _thread_counts(most: int) -> list[int]:
    # the client-thread counts tried for a layout: powers of two up to ``most``, and ``most``
    out, t = [], 1
    while t < most:
        out.append(t)
        t *= 2
    return out + [most]


def nodes_table(a: argparse.Namespace) -> str:
    """The projection of a 200M-word, d 300 run on nodes of ``--node-cores`` cores and 10 GbE, one shard per node
    (:func:`project_nodes`), from the per-call and per-word costs measured here, for each transport's call cost
    and several words in flight."""
    lines = [f"Sharded, measured terms: nodes of {a.node_cores} cores and 10 Gb/s, at most one shard per node, "
             f"{a.client_threads:,} client threads; a shard's kernels {a.shard_input_us:.2f} us per input word at "
             f"d 300 / nodes columns; per call to one shard: the shard {a.shard_call_us:g} us and the client "
             f"{a.client_call_us:g} us in inline parts, {a.ray_shard_call_us:g} and {a.ray_client_call_us:g} "
             f"us with one array each way; the client {a.client_input_us:.2f} us per input word; "
             f"{a.into_bytes:g} bytes per input word into a shard and {a.out_bytes:g} out of it; {a.latency_ms} ms "
             "one way", "",
             "| nodes | shards | calls | words in flight | words per call | input words/s | limited by | share of "
             "CPU in calls | calls/s per shard | Gb/s per node |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for layout in a.proj_layouts:
        nodes, shards = (int(x) for x in layout.split(":"))
        for transport, shard_call, client_call, merged in (
                ("one array", a.ray_shard_call_us, a.ray_client_call_us, 1),
                ("inline parts", a.shard_call_us, a.client_call_us, 1),
                (f"inline parts, {a.merge} threads' minibatches a call", a.shard_call_us, a.client_call_us, a.merge),
                ("inline parts, client threads chosen", a.shard_call_us, a.client_call_us, 0)):
            for in_flight in a.proj_in_flight:
                # a call carrying ``merged`` client threads' minibatches: its cost spread over their words; 0: the
                # number of client threads (one minibatch of in_flight / threads words each) that trains fastest
                costs = dict(shard_input_s=a.shard_input_us * 1e-6, shard_call_s=shard_call * 1e-6 / max(1, merged),
                             client_input_s=a.client_input_us * 1e-6, client_call_s=client_call * 1e-6 / max(1, merged),
                             into_bytes=a.into_bytes, out_bytes=a.out_bytes, shards=shards)
                threads = [a.client_threads] if merged else _thread_counts(a.client_threads)
                p = max((project_nodes(nodes, a.node_cores, rate_bytes("10gbit"), a.latency_ms / 1e3, in_flight, t,
                                       **costs) for t in threads), key=lambda r: r["inputs_per_s"])
                if not merged:
                    transport = f"inline parts, {p['client_threads']:,} client threads"
                lines.append(f"| {nodes} | {shards} | {transport} | {in_flight:,} | {p['minibatch_words']} | "
                             f"{p['inputs_per_s'] / 1e6:.2f}M | {p['limit']} | {p['call_share']:.0%} | "
                             f"{p['calls_per_s_per_shard'] / 1e3:.1f}k | {p['gbit_per_node']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", nargs="+", default=["0", "10gbit", "1gbit", "200mbit"],
                    help="loopback rates to shape (0: unshaped, the model's reference; must be included)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (2)")
    ap.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES), metavar="MODE",
                    help="the runs of each round (default: all of MODES)")
    ap.add_argument("--tokens", type=int, default=2_000_000)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run before it is killed (300)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "parvec-bench-net")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--from-json", type=Path, help="print the comparison of an earlier --out")
    ap.add_argument("--project", action="store_true", help="print the projection tables only")
    ap.add_argument("--kernel", nargs=2, type=int, metavar=("ROWS", "COLS"),
                    help="time one shard thread's kernels on ROWS words x COLS columns (e.g. 20000000 20)")
    ap.add_argument("--node-words-s", type=float, nargs="+", default=[5.8e6],
                    help="projection: one node's words/s alone (5.8M: Ji et al.'s 36-core Broadwell node)")
    ap.add_argument("--vocab", type=int, default=1_000_000)
    ap.add_argument("--proj-dim", type=int, default=300)
    ap.add_argument("--sync-words", type=int, default=200_000)
    ap.add_argument("--latency-ms", type=float, default=0.2)
    ap.add_argument("--shard-thread-inputs-s", type=float, default=1.35e6,
                    help="projection: one shard thread's kernel rate, input words/s (--kernel 20000000 20 "
                         "--kernel-clients 64 here: 1.35-1.40M, 2026-11-26)")
    ap.add_argument("--kernel-negatives-per", choices=("pair", "window"), default="window",
                    help="--kernel: the shard algorithm measured (window, the default of parvec train)")
    ap.add_argument("--kernel-minibatch-words", type=int, default=200,
                    help="--kernel: input words per minibatch (200, the paper's)")
    ap.add_argument("--kernel-clients", type=int, default=1,
                    help="--kernel: client threads taking turns on the shard (1); each minibatch's adjust comes "
                         "that many calls after its dot products")
    ap.add_argument("--kernel-pairs", type=float, default=5.97, help="pairs per input word of that measurement")
    ap.add_argument("--shard-threads", type=int, default=16, help="projection: threads of a shard node")
    ap.add_argument("--call-ns-per-byte", type=float, default=4.0,
                    help="projection: a shard's CPU per byte of its calls (shard CPU - kernel, over bytes)")
    ap.add_argument("--client-thread-inputs-s", type=float, default=0.37e6,
                    help="projection: one client thread's input words/s of CPU (its own work and Ray's)")
    ap.add_argument("--client-threads", type=int, default=1600, help="projection: client threads in all")
    ap.add_argument("--in-flight", type=int, default=320_000)
    ap.add_argument("--proj-layouts", nargs="+", default=["20:20", "100:20", "100:100"],
                    help="projection: NODES:SHARDS (20:20 100:20 100:100)")
    ap.add_argument("--node-cores", type=int, default=24, help="projection: cores per node (24, the paper's)")
    ap.add_argument("--merge", type=int, default=8, help="projection: client threads whose minibatches one call "
                    "would carry (8: one executor's threads)")
    ap.add_argument("--proj-in-flight", type=int, nargs="+", default=[4096, 8192, 32_768, 65_536, 320_000],
                    help="projection: input words in flight over all client threads")
    ap.add_argument("--shard-input-us", type=float, default=SHARD_INPUT_US,
                    help="projection: a shard's kernel CPU per input word (us) at d 300 / nodes columns")
    ap.add_argument("--shard-call-us", type=float, default=SHARD_CALL_US, help="projection: a shard's CPU per "
                    "call besides its kernels, inline parts (us; bench_sharded.py calls)")
    ap.add_argument("--client-call-us", type=float, default=CLIENT_CALL_US,
                    help="projection: a client's CPU per call to one shard, inline parts (us)")
    ap.add_argument("--ray-shard-call-us", type=float, default=RAY_SHARD_CALL_US,
                    help="projection: the same with one array each way (us)")
    ap.add_argument("--ray-client-call-us", type=float, default=RAY_CLIENT_CALL_US,
                    help="projection: the same with one array each way (us)")
    ap.add_argument("--client-input-us", type=float, default=CLIENT_INPUT_US,
                    help="projection: a client's CPU per input word (us)")
    ap.add_argument("--into-bytes", type=float, default=INTO_BYTES,
                    help="projection: bytes per input word into one shard (float16 coefficients, indices)")
    ap.add_argument("--out-bytes", type=float, default=OUT_BYTES,
                    help="projection: bytes per input word out of one shard (float16 partial dot products)")
    ap.add_argument("--contexts", type=float, default=3.3)
    ap.add_argument("--nodes", type=int, help="a sharded run across this many Ray nodes, each in its own network "
                    "namespace joined by veth links shaped at each of --rates (needs root)")
    a = ap.parse_args()
    if a.nodes:
        a.work.mkdir(parents=True, exist_ok=True)
        result = measure_nodes(a)
        text = compare_nodes(result)
        print(text)
        if a.out:
            harness.write_json(a.out, "bench_cluster_net --nodes", dict(result, table=text))
        return
    if a.kernel:
        a.work.mkdir(parents=True, exist_ok=True)
        k = shard_kernel_rate(a.corpus, a.work, *a.kernel, minibatch_words=a.kernel_minibatch_words,
                              negatives_per=a.kernel_negatives_per, clients=a.kernel_clients)
        print(json.dumps(k))
        return
    if a.project:
        print(projections(a))
        return
    if a.from_json:
        result = json.loads(a.from_json.read_text())
    else:
        if not any(rate_bytes(r) == math.inf for r in a.rates):
            raise SystemExit("--rates must include 0 (the unshaped run the model starts from)")
        t = time.perf_counter()
        result = measure(a)
        result["seconds"] = time.perf_counter() - t
    text, rows = compare(result)
    result["comparison"] = rows
    print(text)
    print()
    print(projections(a))
    if a.out and not a.from_json:
        harness.write_json(a.out, "bench_cluster_net", result)


if __name__ == "__main__":
    main()
