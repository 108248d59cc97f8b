"""Interleaved A/B of the CPU trainer's speed: this checkout against an earlier commit (default c9b23cc, the
last commit before the run engine; ``--base`` any other), in one run, on the same data.

    python benchmarks/bench_engine_ab.py --rounds 5 --out bench_out/engine_ab.json

The earlier commit is checked out once into a git worktree under ``--work`` (never committed, never built:
its ``src/`` goes on ``PYTHONPATH``).  Every measurement is its own subprocess: it encodes the corpus (each
version with its own cache, so only the first run of each encodes), compiles and warms the kernels, then
times ``Trainer.train`` (training seconds only, as ``TrainStats.seconds``).  The versions alternate inside
every round (A B, then B A) so machine noise hits them alike; the table gives each round's ratio new/base and
their median, per algorithm and thread count, and the same for the training's CPU seconds (``getrusage``), which a
loaded machine disturbs less than the wall clock.  At 1 thread it also compares the trained vectors' SHA-256: the
engine must train bit-identical vectors there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import harness
from harness import REPO, corpus_or_demo, slice_corpus

CHILD = r"""
import hashlib, json, resource, sys
import numpy as np
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.trainer import Trainer
a = json.loads(sys.argv[1])
corpus = EncodedCorpus.from_file(a["corpus"], ReadOptions(min_count=5), cache_dir=a["cache"])
cfg = TrainConfig(algo=a["algo"], dim=a["dim"], epochs=a["epochs"], threads=a["threads"], seed=1, progress=False)
trainer = Trainer(cfg, corpus.vocab.counts)
trainer.warm_up((corpus.tokens, corpus.offsets))
r0 = resource.getrusage(resource.RUSAGE_SELF)
stats = trainer.train(corpus)
r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"words_per_sec": corpus.raw_words * cfg.epochs / stats.seconds, "seconds": stats.seconds,
                  "cpu_seconds": cpu,
                  "sha256": hashlib.sha256(np.ascontiguousarray(trainer.w_in).tobytes()).hexdigest()}))
"""


def base_checkout(rev: str, work: Path) -> Path:
    """A detached worktree of ``rev`` under ``work`` (made once)."""
    path = work / f"base-{rev}"
    if not (path / "src" / "parvec").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev], check=True,
                       capture_output=True)
    return path


def measure(src: Path, args: dict[str, Any]) -> dict[str, Any]:
    """One timed run of the trainer whose code is under ``src`` (a subprocess)."""
    try:
        return harness.run_child([sys.executable, "-c", CHILD, json.dumps(args)], f"run ({src})",
                                 env=harness.child_env(src, PYTHONHASHSEED="0"), cwd=src.parent)
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None


def summarize(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Per (algo, threads): median words/s of each version, each round's ratio new/base, the median ratio, and
    the median ratio of the training's CPU seconds (new/base; on a loaded machine the steadier of the two).

    Example:
        >>> r = [{"algo": "hogbatch", "threads": 1, "round": 0, "version": v, "words_per_sec": w, "sha256": "x",
        ...       "cpu_seconds": c} for v, w, c in (("base", 100.0, 2.0), ("new", 102.0, 1.9))]
        >>> summarize(r)[0][0]["median_ratio"], summarize(r)[0][0]["median_cpu_ratio"]
        (1.02, 0.95)
    """
    rows, lines = [], ["| algo | threads | base words/s (median) | new words/s (median) | ratio per round | "
                       "median ratio | CPU s new/base per round | median CPU s ratio | vectors |",
                       "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    keys = sorted({(r["algo"], r["threads"]) for r in runs})
    for algo, threads in keys:
        mine = [r for r in runs if r["algo"] == algo and r["threads"] == threads]
        by = {v: {r["round"]: r for r in mine if r["version"] == v} for v in ("base", "new")}
        rounds = sorted(set(by["base"]) & set(by["new"]))
        ratios = [by["new"][i]["words_per_sec"] / by["base"][i]["words_per_sec"] for i in rounds]
        cpu = [by["new"][i]["cpu_seconds"] / by["base"][i]["cpu_seconds"] for i in rounds]
        same = {by["new"][i]["sha256"] == by["base"][i]["sha256"] for i in rounds}
        row = {"algo": algo, "threads": threads, "ratios": ratios, "median_ratio": statistics.median(ratios),
               "cpu_ratios": cpu, "median_cpu_ratio": round(statistics.median(cpu), 6),
               "base": statistics.median(r["words_per_sec"] for r in by["base"].values()),
               "new": statistics.median(r["words_per_sec"] for r in by["new"].values()),
               "identical_vectors": same == {True}}
        rows.append(row)
        n_same = sum(by["new"][i]["sha256"] == by["base"][i]["sha256"] for i in rounds)
        row["identical_rounds"] = n_same
        ident = (f"identical in {n_same} of {len(rounds)} rounds" if threads == 1
                 else "differ (Hogwild threads: expected)")
        lines.append(f"| {algo} | {threads} | {row['base'] / 1e6:.3f}M | {row['new'] / 1e6:.3f}M | "
                     + ", ".join(f"{x:.3f}" for x in ratios) + f" | **{row['median_ratio']:.3f}** | "
                     + ", ".join(f"{x:.3f}" for x in cpu) + f" | **{row['median_cpu_ratio']:.3f}** | {ident} |")
    return rows, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="c9b23cc", help="the commit to compare against (default: before the engine)")
    ap.add_argument("--corpus", type=Path, default=None,
                    help="text or .xz corpus (default: the shared corpus, else the shipped demo corpus)")
    ap.add_argument("--tokens", type=int, default=4_000_000, help="train on the first this many tokens")
    ap.add_argument("--algos", nargs="+", default=["hogbatch", "par"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "parvec-bench-ab")
    ap.add_argument("--out", type=Path)
    ns = ap.parse_args(argv)
    source = corpus_or_demo(ns.corpus)
    corpus = slice_corpus(source, ns.tokens, ns.work)
    srcs = {"base": base_checkout(ns.base, ns.work) / "src", "new": REPO / "src"}
    model = harness.machine_line(harness.machine())
    print(f"CPU: {model}; corpus: {corpus.name}; base {ns.base} vs this checkout", file=sys.stderr, flush=True)
    runs: list[dict[str, Any]] = []
    for rnd in range(ns.rounds):
        for algo in ns.algos:
            for threads in ns.threads:
                order = ("base", "new") if rnd % 2 == 0 else ("new", "base")
                for version in order:
                    args = {"corpus": str(corpus), "cache": str(ns.work / f"cache-{version}"), "algo": algo,
                            "dim": ns.dim, "epochs": ns.epochs, "threads": threads}
                    r = measure(srcs[version], args) | {"algo": algo, "threads": threads, "round": rnd,
                                                        "version": version}
                    runs.append(r)
                    print(f"round {rnd} {algo} {threads}t {version}: {r['words_per_sec'] / 1e6:.3f}M words/s",
                          file=sys.stderr, flush=True)
    rows, table = summarize(runs)
    print(f"CPU: {model}; {corpus.name}; dim {ns.dim}, {ns.epochs} epoch(s), {ns.rounds} interleaved rounds\n")
    print(table)
    if ns.out:
        harness.write_json(ns.out, "bench_engine_ab", {"base": ns.base, "corpus": str(corpus), "runs": runs,
                                                       "summary": rows, "table": table})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
