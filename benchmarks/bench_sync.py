"""How long one replica sync takes: parvec's reduce-scatter/all-gather on Ray object references against
``ray.util.collective``'s allreduce (gloo through torch.distributed), on this machine.

Two actors (one CPU each) hold the same two float32 matrices (input and output vectors, ``--vocab`` x
``--dim``) and average their top ``rows`` rows, ``--repeats`` times after ``--warmup`` untimed syncs.  A
sync's time is the slower actor's; the table gives the median and range over repeats, and the bytes each
replica received.  The gloo route needs torch (``pip install torch==2.13.0``; ``--torch-path DIR`` adds a
``pip install --target DIR`` to the actors' path).

    python benchmarks/bench_sync.py --rows 2000 60000 --out bench_out/sync.json

``--model`` prints the replicas' traffic model (docs/design/distributed.md, "Traffic") instead (no
measurement): bytes per sync and sync time at 1/10/100 Gb/s for 2-64 replicas on 1B- and 100B-word corpora, from
:func:`parvec.distributed.replica_plan.traffic_model` (whose bytes equal those a run measures; bench_replicas.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import harness

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


class RefPeer:
    """One side of the object-reference route: parvec's RefCollective."""

    def __init__(self, rank: int, n: int, vocab: int, dim: int, board) -> None:
        import numpy as np
        import ray

        from parvec.distributed.collectives import RefCollective

        rng = np.random.default_rng(rank)
        self.mats = [rng.standard_normal((vocab, dim), dtype=np.float32) for _ in range(2)]
        self.coll = RefCollective(ray, board, rank, n, timeout_s=120)

    def run(self, gen: int, start_id: int, rows: int, repeats: int) -> dict:
        times = []
        before = self.coll.bytes_received
        for i in range(repeats):
            t0 = time.perf_counter()
            self.coll.average(gen, start_id + i, self.mats, rows)
            times.append(time.perf_counter() - t0)
        return {"times": times, "bytes": (self.coll.bytes_received - before) / repeats}


class GlooPeer:
    """One side of the ray.util.collective route (gloo allreduce of torch views of the rows, then / N)."""

    def __init__(self, rank: int, n: int, vocab: int, dim: int, torch_path: str | None) -> None:
        if torch_path:
            sys.path.insert(0, torch_path)
        import numpy as np
        import ray.util.collective as col

        rng = np.random.default_rng(rank)
        self.mats = [rng.standard_normal((vocab, dim), dtype=np.float32) for _ in range(2)]
        self.n, self.rank = n, rank
        col.init_collective_group(n, rank, backend="gloo", group_name="bench")
        self.col = col

    def run(self, rows: int, repeats: int) -> dict:
        import torch

        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for m in self.mats:
                t = torch.from_numpy(m[:rows])
                self.col.allreduce(t, group_name="bench")
                t /= self.n
            times.append(time.perf_counter() - t0)
        dim = self.mats[0].shape[1]
        # ring allreduce: each replica receives 2 (N-1)/N of the rows per matrix
        return {"times": times, "bytes": 2 * (self.n - 1) / self.n * rows * dim * 4 * 2}


def summarize(per_actor: list[dict]) -> dict:
    slowest = [max(ts) for ts in zip(*(a["times"] for a in per_actor), strict=True)]
    return {"median_s": statistics.median(slowest), "min_s": min(slowest), "max_s": max(slowest),
            "bytes_received_per_replica": per_actor[0]["bytes"]}


def model_table(dim: int, sync_words: int, min_sync_words: int, latency_s: float) -> str:
    """The cost model's table: per epoch, per replica."""
    from parvec.distributed.replica_plan import traffic_model

    lines = [f"dim {dim}, sync every {sync_words:,} words per replica, ruler from {min_sync_words:,} rows, full sync "
             "at "
             f"each epoch's end; ring allreduce: a replica receives 2(N-1)/N of the rows' bytes (both matrices); "
             f"time = bytes / bandwidth + 2(N-1) x {latency_s * 1e6:.0f} us per sync (latency assumed, not "
             "measured).", "",
             "| corpus (vocab) | N | syncs/epoch | rows/sync (mean) | MB/sync per replica | GB/epoch per replica "
             "| sync s/epoch at 1 / 10 / 100 Gb/s | replica words/s at which sync is 10% (1 / 10 / 100 Gb/s) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for words, vocab, name in ((10**9, 10**6, "1B words (1M)"), (10**11, 3 * 10**6, "100B words (3M)")):
        for n in (2, 4, 8, 16, 32, 64):
            m = traffic_model(vocab, dim, n, words, 1, sync_words, min_sync_words)
            per_replica = m["bytes"] / n
            times = [per_replica / (gbps * 1e9 / 8) + m["syncs"] * 2 * (n - 1) * latency_s for gbps in (1, 10, 100)]
            need = [words / n / (10 * t) for t in times]
            lines.append(f"| {name} | {n} | {m['syncs']:,} | {m['mean_rows']:,.0f} | "
                         f"{per_replica / m['syncs'] / 1e6:.1f} | {per_replica / 1e9:.1f} | "
                         + " / ".join(f"{t:,.0f}" for t in times) + " | "
                         + " / ".join(f"{x / 1e6:.2f}M" for x in need) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[2000, 60000])
    ap.add_argument("--vocab", type=int, default=60000)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--routes", nargs="+", default=["refs", "gloo"], choices=["refs", "gloo"])
    ap.add_argument("--torch-path", default=None, help="a pip --target directory holding torch, for the actors")
    ap.add_argument("--out", default=None)
    ap.add_argument("--model", action="store_true", help="print the cost model table and exit")
    ap.add_argument("--model-dim", type=int, default=300)
    ap.add_argument("--sync-words", type=int, default=200_000)
    ap.add_argument("--min-sync-words", type=int, default=1024)
    ap.add_argument("--latency-us", type=float, default=50.0)
    args = ap.parse_args()
    if args.model:
        print(model_table(args.model_dim, args.sync_words, args.min_sync_words, args.latency_us * 1e-6))
        return
    import ray

    from parvec.distributed.collectives import Board

    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             configure_logging=False)
    n = 2
    results: dict = {"vocab": args.vocab, "dim": args.dim, "replicas": n, "repeats": args.repeats, "routes": {}}
    try:
        if "refs" in args.routes:
            board = ray.remote(num_cpus=0)(Board).remote(n, 120.0, [])
            peers = [ray.remote(num_cpus=1)(RefPeer).remote(r, n, args.vocab, args.dim, board) for r in range(n)]
            gen = ray.get(board.begin.remote(0))
            sid = 1
            out = {}
            for rows in args.rows:
                ray.get([p.run.remote(gen, sid, rows, args.warmup) for p in peers])
                sid += args.warmup
                out[rows] = summarize(ray.get([p.run.remote(gen, sid, rows, args.repeats) for p in peers]))
                sid += args.repeats
            results["routes"]["refs"] = out
            for p in peers + [board]:
                ray.kill(p)
        if "gloo" in args.routes:
            env = {"env_vars": {"PYTHONPATH": args.torch_path}} if args.torch_path else None
            cls = ray.remote(num_cpus=1)(GlooPeer)
            if env:
                cls = cls.options(runtime_env=env)
            peers = [cls.remote(r, n, args.vocab, args.dim, args.torch_path) for r in range(n)]
            out = {}
            for rows in args.rows:
                ray.get([p.run.remote(rows, args.warmup) for p in peers])
                out[rows] = summarize(ray.get([p.run.remote(rows, args.repeats) for p in peers]))
            results["routes"]["gloo"] = out
    finally:
        ray.shutdown()
    print(f"sync of the top rows of two {args.vocab} x {args.dim} float32 matrices, {n} replicas on this machine "
          f"({harness.machine_line(harness.machine())}); slower replica per sync, median (range) over {args.repeats}")
    print("| route | rows | ms per sync (median, range) | MB received per replica |")
    print("| --- | --- | --- | --- |")
    for route, per_rows in results["routes"].items():
        for rows, s in per_rows.items():
            print(f"| {route} | {rows:,} | {s['median_s'] * 1e3:.2f} ({s['min_s'] * 1e3:.2f}-{s['max_s'] * 1e3:.2f}) | "
                  f"{s['bytes_received_per_replica'] / 1e6:.2f} |")
    if args.out:
        harness.write_json(args.out, "bench_sync", results)


if __name__ == "__main__":
    main()
