"""Interleaved A/B of the CPU trainer's speed: this checkout against an earlier commit (default c9b23cc, the
code before the run engine of issue 22), in one run, on the same data.

    python benchmarks/bench_engine_ab.py --rounds 5 --out bench_out/engine_ab.json

The earlier commit is checked out once into a git worktree under ``--work`` (never committed, never built:
its ``src/`` goes on ``PYTHONPATH``).  Every measurement is its own subprocess: it encodes the corpus (each
version with its own cache, so only the first run of each encodes), compiles and warms the kernels, then
times ``Trainer.train`` (training seconds only, as ``TrainStats.seconds``).  The versions alternate inside
every round (A B, then B A) so machine noise hits them alike; the table gives each round's ratio new/base and
their median, per algorithm and thread count.  At 1 thread it also compares the trained vectors' SHA-256: the
engine must train bit-identical vectors there.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "corpus" / "enwiki2015_text8style_100M.txt.xz"
DEMO_CORPUS = REPO / "src" / "parvec" / "data" / "demo_corpus.txt.xz"

CHILD = r"""
import hashlib, json, sys
import numpy as np
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.trainer import Trainer
a = json.loads(sys.argv[1])
corpus = EncodedCorpus.from_file(a["corpus"], ReadOptions(min_count=5), cache_dir=a["cache"])
cfg = TrainConfig(algo=a["algo"], dim=a["dim"], epochs=a["epochs"], threads=a["threads"], seed=1, progress=False)
trainer = Trainer(cfg, corpus.vocab.counts)
trainer.warm_up((corpus.tokens, corpus.offsets))
stats = trainer.train(corpus)
print(json.dumps({"words_per_sec": corpus.raw_words * cfg.epochs / stats.seconds, "seconds": stats.seconds,
                  "sha256": hashlib.sha256(np.ascontiguousarray(trainer.w_in).tobytes()).hexdigest()}))
"""


def slice_corpus(source: Path, tokens: int, work: Path, line_tokens: int = 1000) -> Path:
    """The first ``tokens`` tokens of ``source`` (xz or text), ``line_tokens`` a line, written once under
    ``work`` (read in 4 MiB blocks until there are enough; a word cut at a block's end is rare: a slice, not a
    reproduction).  Shared by the benchmarks that train on part of the corpus.

    Example:
        >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "c.txt").write_text("a b c d e")
        9
        >>> slice_corpus(d / "c.txt", 3, d, line_tokens=2).read_text()
        'a b\\nc\\n'
    """
    work.mkdir(parents=True, exist_ok=True)
    out = work / f"{source.name.removesuffix('.xz')}.{tokens}.{line_tokens}.txt"
    if out.exists():
        return out
    opener = lzma.open if source.suffix == ".xz" else open
    words: list[str] = []
    with opener(source, "rt", encoding="utf-8") as f:
        while len(words) < tokens:
            block = f.read(1 << 22)
            if not block:
                break
            words.extend(block.split())
    words = words[:tokens]
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for i in range(0, len(words), line_tokens):
            f.write(" ".join(words[i : i + line_tokens]) + "\n")
    os.replace(tmp, out)
    return out


def cpu_model() -> str:
    """The CPU's model name as ``lscpu`` gives it ("?" without lscpu)."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "?"
    return next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Model name")), "?")


def base_checkout(rev: str, work: Path) -> Path:
    """A detached worktree of ``rev`` under ``work`` (made once)."""
    path = work / f"base-{rev}"
    if not (path / "src" / "parvec").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev], check=True,
                       capture_output=True)
    return path


def measure(src: Path, args: dict[str, Any]) -> dict[str, Any]:
    """One timed run of the trainer whose code is under ``src`` (a subprocess)."""
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True, text=True, env=env,
                         cwd=str(src.parent))
    if out.returncode != 0:
        raise SystemExit(f"run failed ({src}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarize(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Per (algo, threads): median words/s of each version, each round's ratio new/base, the median ratio.

    Example:
        >>> r = [{"algo": "hogbatch", "threads": 1, "round": 0, "version": v, "words_per_sec": w, "sha256": "x"}
        ...      for v, w in (("base", 100.0), ("new", 102.0))]
        >>> summarize(r)[0][0]["median_ratio"]
        1.02
    """
    rows, lines = [], ["| algo | threads | base words/s (median) | new words/s (median) | ratio per round | "
                       "median ratio | vectors |", "| --- | --- | --- | --- | --- | --- | --- |"]
    keys = sorted({(r["algo"], r["threads"]) for r in runs})
    for algo, threads in keys:
        mine = [r for r in runs if r["algo"] == algo and r["threads"] == threads]
        by = {v: {r["round"]: r for r in mine if r["version"] == v} for v in ("base", "new")}
        rounds = sorted(set(by["base"]) & set(by["new"]))
        ratios = [by["new"][i]["words_per_sec"] / by["base"][i]["words_per_sec"] for i in rounds]
        same = {by["new"][i]["sha256"] == by["base"][i]["sha256"] for i in rounds}
        row = {"algo": algo, "threads": threads, "ratios": ratios, "median_ratio": statistics.median(ratios),
               "base": statistics.median(r["words_per_sec"] for r in by["base"].values()),
               "new": statistics.median(r["words_per_sec"] for r in by["new"].values()),
               "identical_vectors": same == {True}}
        rows.append(row)
        n_same = sum(by["new"][i]["sha256"] == by["base"][i]["sha256"] for i in rounds)
        row["identical_rounds"] = n_same
        ident = (f"identical in {n_same} of {len(rounds)} rounds" if threads == 1
                 else "differ (Hogwild threads: expected)")
        lines.append(f"| {algo} | {threads} | {row['base'] / 1e6:.3f}M | {row['new'] / 1e6:.3f}M | "
                     + ", ".join(f"{x:.3f}" for x in ratios) + f" | **{row['median_ratio']:.3f}** | {ident} |")
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
    source = ns.corpus or (DEFAULT_CORPUS if DEFAULT_CORPUS.exists() else DEMO_CORPUS)
    corpus = slice_corpus(source, ns.tokens, ns.work)
    srcs = {"base": base_checkout(ns.base, ns.work) / "src", "new": REPO / "src"}
    model = cpu_model()
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
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        ns.out.write_text(json.dumps({"cpu": model, "base": ns.base, "corpus": str(corpus), "runs": runs,
                                      "summary": rows, "table": table}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
