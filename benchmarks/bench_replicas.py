"""Replicas benchmark: N Ray replica actors against one process, in one run, on the same data.

Every measurement runs in its own subprocess (a replica run starts its own local Ray there).  Speed runs
(``--speed-epochs``, ``--rounds`` interleaved rounds) compare one process at 1 and 2 threads with 1 and 2
replicas of one thread each, and with two independent one-thread processes trained at once
(``process-1t-pair``: their summed words/s is the most two single-thread streams get from this machine, the
ceiling of 2 replicas x 1 thread); words/s = raw corpus tokens x epochs / training seconds (reading, Ray start,
actor start and JIT excluded for every system, as bench_words.py does).  A replica run also reports its
sync time and share, the bytes synchronised per trained word (measured: the rows each allreduce moved) and
the bytes a full-model sync at the same sync count would move.  Quality runs (``--quality-epochs``, one per
seed) score WS-353, SimLex-999 and the Google analogies (3CosAdd over the 30,000 most frequent words) with
bench_words.py's evaluator, for the one-process run and each replica variant.

    python benchmarks/bench_replicas.py --out bench_out/replicas.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import harness
from bench_words import DEFAULT_CORPUS, SCORE_DIGITS, _scores
from harness import REPO

VARIANTS = {
    # name: (kind, replicas, threads, alpha_scale, min_sync_words)
    "process-1t": ("process", 1, 1, "none", None),
    "process-2t": ("process", 1, 2, "none", None),
    # two independent one-thread processes at once, each on the whole corpus, started on the same instant:
    # their summed words/s is what this machine gives two single-thread streams (the replicas' ceiling)
    "process-1t-pair": ("process", 1, 1, "none", None),
    "replicas-1x1": ("replicas", 1, 1, "none", None),
    "replicas-2x1": ("replicas", 2, 1, "none", None),
    "replicas-2x1-sqrt": ("replicas", 2, 1, "sqrt", None),
    "replicas-2x1-linear": ("replicas", 2, 1, "linear", None),
    "replicas-2x1-fullsync": ("replicas", 2, 1, "none", 10**9),
    # replicas-2x1-linear with replica 1 killed (ray.kill) once epoch --kill-epoch has done --kill-sync syncs
    "replicas-2x1-linear-fullsync": ("replicas", 2, 1, "linear", 10**9),
    "replicas-2x1-linear-fault": ("replicas", 2, 1, "linear", None),
    # "-blocking": every sync holds training up until it ends (--no-sync-overlap), as before the overlapped syncs
    "replicas-2x1-blocking": ("replicas", 2, 1, "none", None),
    "replicas-2x1-linear-blocking": ("replicas", 2, 1, "linear", None),
}


def lo_bytes() -> int | None:
    """Bytes received on the loopback interface so far (/proc/net/dev), None where unknown."""
    try:
        for line in Path("/proc/net/dev").read_text().splitlines():
            if line.strip().startswith("lo:"):
                return int(line.split(":", 1)[1].split()[0])
    except OSError:
        return None
    return None


def run_one(ns: argparse.Namespace) -> dict:
    """Train one variant once in this process; print its measurements as one JSON line."""
    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.keyedvectors import KeyedVectors
    from parvec.model_tables import init_input_vectors
    from parvec.trainer import Trainer

    kind, replicas, threads, alpha_scale, min_sync = VARIANTS[ns.variant]
    t0 = time.perf_counter()
    enc = EncodedCorpus.from_file(ns.corpus, ReadOptions(min_count=ns.min_count), cache_dir=ns.cache_dir)
    if not hasattr(enc.tokens, "filename"):  # first read: the cache now exists; memory-map it as later runs do
        enc = EncodedCorpus.from_file(ns.corpus, ReadOptions(min_count=ns.min_count), cache_dir=ns.cache_dir)
    read_seconds = time.perf_counter() - t0
    cfg = TrainConfig(algo="hogbatch", dim=ns.dim, window=ns.window, negative=ns.negative, sample=ns.sample,
                      epochs=ns.epochs, threads=threads, seed=ns.seed, progress=False)
    v = len(enc.vocab)
    w_in = init_input_vectors(v, cfg.dim, cfg.seed)
    w_out = __import__("numpy").zeros_like(w_in)
    result: dict = {"variant": ns.variant, "kind": kind, "replicas": replicas, "threads": threads, "seed": ns.seed,
                    "epochs": ns.epochs, "read_seconds": read_seconds, "raw_words": enc.raw_words,
                    "tokens": enc.n_tokens, "vocab_size": v}
    lo_before = lo_bytes()
    if kind == "process":
        trainer = Trainer(cfg, enc.vocab.counts, w_in=w_in, w_out=w_out)
        if ns.start_at:  # process-1t-pair: compile first, then start training with the other process
            trainer.warm_up((enc.tokens, enc.offsets))
            time.sleep(max(0.0, ns.start_at - time.time()))
        stats = trainer.train(enc)
    else:
        from parvec.distributed import Cluster
        from parvec.distributed.replicas import ReplicaTrainer

        cluster = Cluster(f"local:{replicas}", sync_words=ns.sync_words,
                          min_sync_words=min(min_sync or ns.min_sync_words, v), alpha_scale=alpha_scale,
                          sync_overlap=not ns.variant.endswith("-blocking"))
        trainer = ReplicaTrainer(cluster, cfg, enc.vocab.counts, w_in, w_out)
        if ns.variant.endswith("-fault"):
            import threading

            def killer() -> None:  # kill replica 1 mid-epoch, as a lost node would
                import ray

                while True:
                    time.sleep(0.05)
                    try:
                        e, k = ray.get(trainer.actors[0].progress.remote(), timeout=5)["synced"]
                    except Exception:  # noqa: BLE001 - not started yet
                        continue
                    if (e, k) >= (ns.kill_epoch - 1, ns.kill_sync):
                        ray.kill(trainer.actors[1], no_restart=False)
                        return

            threading.Thread(target=killer, daemon=True).start()
        t1 = time.perf_counter()
        stats = trainer.train(enc)
        result["wall_seconds"] = time.perf_counter() - t1
        result["report"] = trainer.report()
    lo_after = lo_bytes()
    result["loopback_bytes"] = None if lo_before is None or lo_after is None else lo_after - lo_before
    result["train_seconds"] = stats.seconds
    result["words_trained"] = stats.words
    result["words_per_sec"] = enc.raw_words * ns.epochs / stats.seconds
    result["loss_per_epoch"] = stats.loss_per_epoch
    if ns.quality:
        from parvec.evaluation import default_eval_paths, evaluate

        kv = KeyedVectors(w_in, list(enc.vocab.words), counts=enc.vocab.counts)
        result["quality"] = evaluate(kv, **default_eval_paths())
    return result


def spawn_pair(epochs: int, ns: argparse.Namespace) -> dict:
    """process-1t-pair: two one-thread processes trained at once; words/s is their sum."""
    cmd = [sys.executable, __file__, "--run-one", "--variant", "process-1t-pair", "--epochs", str(epochs),
           "--seed", "1", "--corpus", str(ns.corpus), "--cache-dir", str(ns.work / "cache"), "--dim", str(ns.dim),
           "--window", str(ns.window), "--negative", str(ns.negative), "--sample", str(ns.sample),
           "--min-count", str(ns.min_count), "--start-at", str(time.time() + 45)]  # reading + JIT fit in 45 s
    env = harness.child_env()
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outs = [p.communicate() for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError(f"process-1t-pair failed:\n{outs[0][1][-2000:]}\n{outs[1][1][-2000:]}")
    runs = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    res = dict(runs[0], words_per_sec=sum(r["words_per_sec"] for r in runs), pair=runs,
               train_seconds=max(r["train_seconds"] for r in runs))
    print(f"  process-1t-pair {epochs} ep: {res['words_per_sec'] / 1e6:.3f}M words/s (sum of "
          f"{runs[0]['words_per_sec'] / 1e6:.3f}M and {runs[1]['words_per_sec'] / 1e6:.3f}M)", file=sys.stderr,
          flush=True)
    return res


def spawn(variant: str, epochs: int, seed: int, quality: bool, ns: argparse.Namespace) -> dict:
    if variant == "process-1t-pair":
        return spawn_pair(epochs, ns)
    cmd = [sys.executable, __file__, "--run-one", "--variant", variant, "--epochs", str(epochs), "--seed", str(seed),
           "--corpus", str(ns.corpus), "--cache-dir", str(ns.work / "cache"), "--dim", str(ns.dim),
           "--window", str(ns.window), "--negative", str(ns.negative), "--sample", str(ns.sample),
           "--min-count", str(ns.min_count), "--sync-words", str(ns.sync_words),
           "--min-sync-words", str(ns.min_sync_words)]
    if quality:
        cmd.append("--quality")
    env = harness.child_env()
    for attempt in range(3):  # a loaded machine can time Ray's start out: try again, and say so
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if out.returncode == 0:
            break
        print(f"  {variant} seed {seed} failed (attempt {attempt + 1}): {out.stderr.strip().splitlines()[-1][:200]}",
              file=sys.stderr, flush=True)
    else:
        raise RuntimeError(f"{variant} failed:\n{out.stderr[-3000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"  {variant} seed {seed} {epochs} ep: {res['words_per_sec'] / 1e6:.3f}M words/s"
          + (f", {_fmt(res['quality'])}" if quality else ""), file=sys.stderr, flush=True)
    return res


def _fmt(q: dict) -> str:
    ws, sl, an = _scores(q)
    return f"{ws:.3f} / {sl:.3f} / {an:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run-one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--variant", choices=list(VARIANTS))
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--work", type=Path, default=REPO / "bench_out" / "work")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--negative", type=int, default=5)
    ap.add_argument("--sample", type=float, default=1e-4)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--sync-words", type=int, default=200_000)
    ap.add_argument("--min-sync-words", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quality", action="store_true")
    ap.add_argument("--kill-epoch", type=int, default=3, help="a -fault variant: the epoch (1-based) of the kill")
    ap.add_argument("--kill-sync", type=int, default=20, help="a -fault variant: syncs done in it before the kill")
    ap.add_argument("--speed-variants", nargs="+", default=["process-1t", "replicas-1x1", "replicas-2x1",
                                                             "process-2t", "process-1t-pair"])
    ap.add_argument("--speed-epochs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quality-variants", nargs="*", default=["process-2t", "replicas-2x1", "replicas-2x1-linear",
                                                               "replicas-2x1-linear-fullsync"])
    ap.add_argument("--quality-epochs", type=int, default=5)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--out", type=Path, default=None)
    ns = ap.parse_args()
    if ns.run_one:
        print(json.dumps(run_one(ns)))
        return
    ns.work.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()
    # Outside every measurement: fill the encoded-corpus cache and numba's cache, and run each kind once so that
    # what the measured runs read (the corpus cache, Ray's and torch's files) is in the page cache.  A machine
    # may page out what went unused for a while (the 2-core Zen 4 of 2026-11-26 runs DAMON, paging out memory
    # idle for 60 s): the first round's replica run trained 25-35% slower than the later ones without this.
    kinds = [v for v in ns.speed_variants if VARIANTS[v][0] == "replicas"][:1] if ns.rounds else []
    if ns.rounds or not (ns.work / "cache").exists():  # quality runs alone need only the caches
        for v in ["process-1t"] + kinds:
            spawn(v, 1, 1, False, ns)
    speed: dict[str, list[dict]] = {v: [] for v in ns.speed_variants}
    quality: dict[str, dict[int, dict]] = {v: {} for v in ns.quality_variants}

    def results_so_far() -> dict:
        return {"corpus": str(ns.corpus), "cpu": harness.machine_line(harness.machine()),
                "load_average_at_start": load0,
               "load_average_at_end": os.getloadavg(),
               "params": {k: getattr(ns, k) for k in ("dim", "window", "negative", "sample", "min_count",
                                                      "sync_words", "min_sync_words", "speed_epochs",
                                                      "quality_epochs", "seeds", "rounds")},
               "speed": speed, "quality": quality}

    def save() -> None:  # after every run, so a run that dies keeps what it measured
        if ns.out:
            harness.write_json(ns.out, "bench_replicas", results_so_far())

    for r in range(ns.rounds):
        print(f"speed round {r + 1}/{ns.rounds}", file=sys.stderr, flush=True)
        for v in ns.speed_variants:
            speed[v].append(spawn(v, ns.speed_epochs, 1, False, ns))
            save()
    for seed in ns.seeds:
        print(f"quality seed {seed}", file=sys.stderr, flush=True)
        for v in ns.quality_variants:
            quality[v][seed] = spawn(v, ns.quality_epochs, seed, True, ns)
            save()
    results = results_so_far()
    print(tables(results))
    save()


def tables(res: dict) -> str:
    """The speed and quality tables (markdown) of a results dict."""
    p = res["params"]
    out = [f"Corpus {Path(res['corpus']).name}; hogbatch, dim {p['dim']}, window {p['window']}, negative "
           f"{p['negative']}, sample {p['sample']}; sync every {p['sync_words']:,} words per replica, ruler from "
           f"{p['min_sync_words']} rows; CPU {res['cpu']}.", "",
           f"Speed ({p['speed_epochs']} epoch, median and range of {p['rounds']} interleaved rounds):", "",
           "| variant | words/s | × process 1 thread | sync s (share) | bytes/word | full-model bytes/word "
           "(same syncs) | loopback bytes/word |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    res = dict(res, speed={v: runs for v, runs in res["speed"].items() if runs})  # --rounds 0: no speed runs
    med = {v: statistics.median(r["words_per_sec"] for r in runs) for v, runs in res["speed"].items()}
    base = med.get("process-1t")
    for v, runs in res["speed"].items():
        wps = [r["words_per_sec"] for r in runs]
        cell = f"{med[v] / 1e6:.3f}M ({min(wps) / 1e6:.2f}–{max(wps) / 1e6:.2f})"
        ratio = f"{med[v] / base:.2f}×" if base else "–"
        rep = [r.get("report") for r in runs if r.get("report")]
        if rep:
            sync = statistics.median(x["sync_seconds"] for x in rep)
            share = statistics.median(x["sync_share"] for x in rep)
            bpw = statistics.median(x["bytes_synced_per_word"] or 0 for x in rep)
            full = statistics.median(x["bytes_full_model_same_syncs"] / max(1, r["words_trained"])
                                     for x, r in zip(rep, runs, strict=True))
            lo = statistics.median((r["loopback_bytes"] or 0) / max(1, r["words_trained"]) for r in runs)
            out.append(f"| {v} | {cell} | {ratio} | {sync:.2f} ({100 * share:.1f}%) | {bpw:.1f} | {full:.1f} | "
                       f"{lo:.1f} |")
        else:
            out.append(f"| {v} | {cell} | {ratio} | – | – | – | – |")
    two = [v for v in res["speed"] if v.startswith("replicas-2x1")] if res["speed"].get("process-1t-pair") else []
    for v in two:
        # The bar's ratio, round by round.  The pair's words/s is the sum of its two processes' (each over its own
        # time, so the one that ends later trains its last part alone); "both done" divides the pair's words by
        # the later one's time instead, as the replicas' words/s does (they end together).
        pairs = [(r["words_per_sec"], q["words_per_sec"],
                  sum(x["raw_words"] * x["epochs"] for x in q["pair"]) / max(x["train_seconds"] for x in q["pair"]))
                 for r, q in zip(res["speed"][v], res["speed"]["process-1t-pair"], strict=False)]
        out += ["", f"{v} ÷ process-1t-pair, round by round: "
                + ", ".join(f"{a / b:.3f}" for a, b, _ in pairs)
                + f" (median {statistics.median(a / b for a, b, _ in pairs):.3f}); against the pair's words over the "
                "later process's time (both done): " + ", ".join(f"{a / c:.3f}" for a, _, c in pairs)
                + f" (median {statistics.median(a / c for a, _, c in pairs):.3f})"]
    if res["quality"]:
        seeds = p["seeds"]
        out += ["", f"Quality after {p['quality_epochs']} epochs (WS-353 / SimLex-999 / analogy %), per seed and "
                "mean; words/s of the same runs; bytes synchronised per word:", "",
                "| variant | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | gap to process-2t | words/s "
                "| sync share | bytes/word (×fewer than full) |",
                "|" + " --- |" * (len(seeds) + 6)]
        ref = None
        if "process-2t" in res["quality"]:
            base = res["quality"]["process-2t"]
            ref = [statistics.mean(c) for c in zip(*(_scores((base.get(str(s)) or base[s])["quality"])
                                                     for s in seeds), strict=True)]
        for v, by_seed in res["quality"].items():
            runs = [by_seed[str(s)] if str(s) in by_seed else by_seed[s] for s in seeds]
            rows = [_scores(r["quality"]) for r in runs]
            mean = [statistics.mean(c) for c in zip(*rows, strict=True)]
            cells = [f"{w:.3f} / {x:.3f} / {a:.1f}" for w, x, a in rows]
            gap = "–" if ref is None else " / ".join(f"{m - r:+.{d}f}" for m, r, d in zip(mean, ref, SCORE_DIGITS,
                                                                                          strict=True))
            wps = statistics.median(r["words_per_sec"] for r in runs) / 1e6
            rep = [r.get("report") for r in runs if r.get("report")]
            share = f"{100 * statistics.median(x['sync_share'] for x in rep):.1f}%" if rep else "–"
            bpw = (f"{statistics.median(x['bytes_synced_per_word'] or 0 for x in rep):.1f} "
                   f"({statistics.median(x['traffic_reduction'] or 0 for x in rep):.1f}×)") if rep else "–"
            out.append(f"| {v} | " + " | ".join(cells) + f" | {mean[0]:.3f} / {mean[1]:.3f} / {mean[2]:.1f} | {gap} "
                       f"| {wps:.3f}M | {share} | {bpw} |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
