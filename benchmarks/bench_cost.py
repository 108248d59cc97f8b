"""What a run costs, not only how fast it is: one process against the cluster modes on this machine, in one run,
on the same data, from each run's ``--report`` (``cpu_seconds``: the CPU seconds of every process the run
started here, from their own accounting; ``parvec.usage``).

    python benchmarks/bench_cost.py --rounds 3 --out bench_out/cost.json

Each system is ``parvec train`` in its own subprocess (the CLI a user runs), on the first ``--tokens`` tokens of
the shared corpus (else the shipped demo corpus), rounds interleaved so machine noise hits the systems alike.
Printed per system: median words/s, CPU seconds per million words, and both as ratios to one process with the
same total threads.  The cluster runs' wall time includes Ray's start; ``training_seconds`` does not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import harness
from harness import corpus_or_demo, slice_corpus

SYSTEMS: dict[str, list[str]] = {
    "one process, 1 thread": ["--threads", "1"],
    "one process, 2 threads": ["--threads", "2"],
    "replicas local:1 x 1 thread": ["--cluster", "local:1", "--threads", "1"],
    "replicas local:2 x 1 thread": ["--cluster", "local:2", "--threads", "1"],
    "sharded 2 shards x 1 client": ["--cluster", "local:2", "--mode", "sharded", "--shards", "2", "--clients", "1",
                                    "--threads", "1"],
    # the sharded default on local:N: one shard whose calls train each minibatch whole (fused calls)
    "sharded, the default (1 shard x 2 clients, fused calls)": ["--cluster", "local:2", "--mode", "sharded"],
}
BASELINE = {"replicas local:1 x 1 thread": "one process, 1 thread"}  # else: 2 threads in all


def run_system(name: str, corpus: Path, work: Path, common: list[str]) -> dict[str, Any]:
    """One ``parvec train`` of ``name``; its report's figures."""
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(Path(tmp) / "v.npy"), "--report",
               str(report), "--no-progress", *common, *SYSTEMS[name]]
        out = subprocess.run(cmd, capture_output=True, text=True, env=harness.child_env())
        if out.returncode != 0:
            raise SystemExit(f"{name} failed ({out.returncode}): {out.stderr[-2000:]}")
        rep = json.loads(report.read_text(encoding="utf-8"))
    return {k: rep.get(k) for k in ("words_trained", "training_seconds", "words_per_sec", "cpu_seconds",
                                    "cpu_seconds_per_word", "cpu_processes")}


def table(runs: list[dict[str, Any]]) -> str:
    """Medians per system and ratios to the one-process baseline with the same threads.

    Example:
        >>> r = [{"system": "one process, 2 threads", "words_per_sec": 2e6, "cpu_seconds_per_word": 1e-6},
        ...      {"system": "replicas local:2 x 1 thread", "words_per_sec": 1e6, "cpu_seconds_per_word": 3e-6}]
        >>> "| replicas local:2 x 1 thread | 1.000M | 0.50x | 3.00 | 3.00x |" in table(r)
        True
    """
    med = {}
    for name in dict.fromkeys(r["system"] for r in runs):
        mine = [r for r in runs if r["system"] == name]
        med[name] = (statistics.median(r["words_per_sec"] for r in mine),
                     statistics.median(r["cpu_seconds_per_word"] for r in mine))
    lines = ["| system | words/s (median) | speed vs one process | CPU s per 1M words | cost vs one process |",
             "| --- | --- | --- | --- | --- |"]
    for name, (wps, cpw) in med.items():
        base = med.get(BASELINE.get(name, "one process, 2 threads"), (wps, cpw))
        lines.append(f"| {name} | {wps / 1e6:.3f}M | {wps / base[0]:.2f}x | {cpw * 1e6:.2f} | {cpw / base[1]:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--tokens", type=int, default=2_000_000)
    ap.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "parvec-bench-cost")
    ap.add_argument("--out", type=Path)
    ns = ap.parse_args(argv)
    source = corpus_or_demo(ns.corpus)
    corpus = slice_corpus(source, ns.tokens, ns.work)
    common = ["--dim", str(ns.dim), "--epochs", str(ns.epochs), "--min-count", "5", "--no-cache", "--seed", "1"]
    model = harness.machine_line(harness.machine())
    runs = []
    for rnd in range(ns.rounds):
        order = ns.systems if rnd % 2 == 0 else ns.systems[::-1]
        for name in order:
            r = run_system(name, corpus, ns.work, common) | {"system": name, "round": rnd}
            runs.append(r)
            print(f"round {rnd} {name}: {r['words_per_sec'] / 1e6:.3f}M words/s, "
                  f"{r['cpu_seconds']:.2f} CPU s over {r['cpu_processes']} processes", file=sys.stderr, flush=True)
    text = table(runs)
    print(f"Machine: {model}; {corpus.name}; dim {ns.dim}, {ns.epochs} epoch(s), "
          f"{ns.rounds} rounds\n\n{text}")
    if ns.out:
        harness.write_json(ns.out, "bench_cost", {"args": {k: str(v) for k, v in vars(ns).items()}, "runs": runs,
                                                  "table": text})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
