"""Hierarchical softmax: parvec vs gensim ``hs=1, negative=0``, skip-gram and CBOW, in one run, same data.

Every measurement runs in its own subprocess; systems are interleaved so machine noise hits them alike.
Speed is raw corpus words x epochs / training seconds (reading and vocabulary excluded), and also per
CPU second of the training process (``cpu_words_per_sec``: steadier than wall time on a shared machine).
Quality is WS-353 and SimLex-999 Spearman and Google analogy (3CosAdd, top 30k words) by
``bench_words.py``'s evaluator, over ``--quality-seeds``.  gensim runs ``corpus_file`` mode;
compare quality at 1 worker (gensim's corpus_file mode with N workers decays the learning rate over
only 1/N of each epoch).

    python benchmarks/bench_hs.py --modes sg cbow --threads 1 2 --rounds 1 --quality-seeds 1 2 3 \\
        --out /tmp/bench_out/hs.json

Both systems get the same learning rate: 0.025 for skip-gram, 0.05 for CBOW (word2vec.c's defaults;
gensim's default is 0.025 for both, so it is passed explicitly).  parvec computes its loss (its default);
gensim does not (its default).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import harness
from bench_words import DEFAULT_CORPUS, SCORE_DIGITS, SCORE_NAMES, _scores, fmt_quality, prepare_corpus

SYSTEMS = ("parvec", "gensim-file")
ALPHA = {"sg": 0.025, "cbow": 0.05}


def run_one(args: argparse.Namespace) -> dict:
    """Train one system in one mode once (in this process) and return its measurements."""
    from parvec.evaluation import default_eval_paths, evaluate
    from parvec.keyedvectors import KeyedVectors

    corpus = Path(args.corpus)
    sg = args.mode == "sg"
    alpha = ALPHA[args.mode]
    result: dict = {"system": args.system, "mode": args.mode, "threads": args.threads, "epochs": args.epochs,
                    "seed": args.seed, "alpha": alpha}
    if args.system == "parvec":
        from parvec.config import TrainConfig
        from parvec.corpus import EncodedCorpus, ReadOptions
        from parvec.trainer import Trainer

        enc = EncodedCorpus.from_file(corpus, ReadOptions(min_count=args.min_count), cache_dir=args.cache_dir)
        cfg = TrainConfig(algo="classic", hs=True, negative=0, sg=sg, cbow_mean=True, alpha=alpha, dim=args.dim,
                          window=args.window, sample=args.sample, epochs=args.epochs, threads=args.threads,
                          seed=args.seed, progress=False)
        trainer = Trainer(cfg, enc.vocab.counts)
        trainer.warm_up((enc.tokens, enc.offsets))
        c0 = time.process_time()
        stats = trainer.train(enc)
        cpu = time.process_time() - c0
        seconds = stats.seconds
        raw_words = enc.raw_words
        kv = KeyedVectors(trainer.w_in, list(enc.vocab.words), counts=enc.vocab.counts)
        result["loss_per_epoch"] = stats.loss_per_epoch
    else:
        import logging

        from gensim.models import Word2Vec as GensimW2V

        logging.disable(logging.WARNING)
        model = GensimW2V(vector_size=args.dim, window=args.window, negative=0, hs=1, sg=int(sg), cbow_mean=1,
                          alpha=alpha, sample=args.sample, min_count=args.min_count, workers=args.threads,
                          seed=args.seed)
        model.build_vocab(corpus_file=str(corpus))
        raw_words = model.corpus_total_words
        c0 = time.process_time()
        t1 = time.perf_counter()
        model.train(corpus_file=str(corpus), total_words=raw_words, epochs=args.epochs)
        seconds = time.perf_counter() - t1
        cpu = time.process_time() - c0
        kv = KeyedVectors(model.wv.vectors, list(model.wv.index_to_key))
    result["train_seconds"] = seconds
    result["cpu_seconds"] = cpu
    result["raw_words"] = raw_words
    result["words_per_sec"] = raw_words * args.epochs / seconds
    result["cpu_words_per_sec"] = raw_words * args.epochs / cpu
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result["vocab_size"] = len(kv)
    result["load_avg"] = os.getloadavg()
    if args.quality:
        result["quality"] = evaluate(kv, **default_eval_paths())
    return result


def spawn(system: str, mode: str, threads: int, epochs: int, quality: bool, seed: int, ns: argparse.Namespace,
          corpus: Path) -> dict:
    cmd = [sys.executable, __file__, "--run-one", "--system", system, "--mode", mode, "--threads", str(threads),
           "--epochs", str(epochs), "--dim", str(ns.dim), "--window", str(ns.window), "--sample", str(ns.sample),
           "--min-count", str(ns.min_count), "--seed", str(seed), "--corpus", str(corpus),
           "--cache-dir", str(ns.work / "cache")]
    if quality:
        cmd.append("--quality")
    return harness.run_child(cmd, f"{system} {mode}")


def summary(runs: list[dict], ns: argparse.Namespace) -> str:
    """Markdown: speed (median words/s and CPU words/s, ratio to gensim) and quality (mean over seeds, gaps)."""
    lines = [f"Corpus {ns.corpus.name}; hs=1, negative=0, dim {ns.dim}, window {ns.window}, sample {ns.sample}, "
             f"min_count {ns.min_count}; alpha sg {ALPHA['sg']}, cbow {ALPHA['cbow']}.", ""]
    speed = [r for r in runs if "quality" not in r]
    if speed:
        lines += [f"Speed ({ns.epochs} epoch(s), median of {ns.rounds} round(s)):", "",
                  "| mode | system | threads | words/s (wall) | × gensim | words per CPU s | × gensim | load avg |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for mode in ns.modes:
            for threads in ns.threads:
                med = {}
                for system in SYSTEMS:
                    rs = [r for r in speed if r["mode"] == mode and r["system"] == system and r["threads"] == threads]
                    if rs:
                        med[system] = (statistics.median(r["words_per_sec"] for r in rs),
                                       statistics.median(r["cpu_words_per_sec"] for r in rs),
                                       statistics.median(r["load_avg"][0] for r in rs))
                for system, (w, c, load) in med.items():
                    g = med.get("gensim-file")
                    lines.append(f"| {mode} | {system} | {threads} | {w / 1e6:.3f}M | "
                                 f"{w / g[0] if g else float('nan'):.2f}× | {c / 1e6:.3f}M | "
                                 f"{c / g[1] if g else float('nan'):.2f}× | {load:.1f} |")
    qual = [r for r in runs if "quality" in r]
    if qual:
        lines += ["", f"Quality ({ns.quality_epochs} epochs, {ns.quality_threads} thread(s); WS-353 / SimLex-999 / "
                  "analogy %):", "", "| mode | system | per seed | mean |", "| --- | --- | --- | --- |"]
        for mode in ns.modes:
            means = {}
            for system in SYSTEMS:
                rs = sorted((r for r in qual if r["mode"] == mode and r["system"] == system), key=lambda r: r["seed"])
                if not rs:
                    continue
                rows = [_scores(r["quality"]) for r in rs]
                means[system] = [statistics.mean(c) for c in zip(*rows, strict=True)]
                cells = "; ".join(f"s{r['seed']}: {w:.3f} / {x:.3f} / {a:.1f}" for r, (w, x, a) in
                                  zip(rs, rows, strict=True))
                mean = " / ".join(f"{m:.{p}f}" for m, p in zip(means[system], SCORE_DIGITS, strict=True))
                lines.append(f"| {mode} | {system} | {cells} | {mean} |")
            if len(means) == 2:
                gaps = [a - b for a, b in zip(means["parvec"], means["gensim-file"], strict=True)]
                lines.append(f"| {mode} | parvec − gensim | | " + ", ".join(
                    f"{n} {g:+.{p}f}" for n, g, p in zip(SCORE_NAMES, gaps, SCORE_DIGITS, strict=True)) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--system", help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--quality", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--modes", nargs="+", choices=("sg", "cbow"), default=["sg", "cbow"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2], help="thread counts of the speed runs")
    ap.add_argument("--epochs", type=int, default=1, help="epochs of the speed runs (1)")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds of speed runs (0 = none)")
    ap.add_argument("--quality-epochs", type=int, default=5, help="epochs of the quality runs (0 = none)")
    ap.add_argument("--quality-threads", type=int, default=1)
    ap.add_argument("--quality-seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--parallel", type=int, default=1,
                    help="quality runs at once (their speed is not reported, so they may share the machine)")
    ap.add_argument("--quality-first", action="store_true", help="run the quality runs before the speed runs")
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--sample", type=float, default=1e-4)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--cache-dir", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "parvec-bench")
    ap.add_argument("--out", type=Path, help="write all measurements as JSON here (rewritten after every run)")
    ns = ap.parse_args()
    if ns.run_one:
        ns.threads = ns.threads[0]
        print(json.dumps(run_one(ns)))
        return
    corpus = prepare_corpus(ns.corpus, ns.work)
    from parvec.corpus import EncodedCorpus, ReadOptions

    # Fill parvec's corpus cache once, untimed (each run also compiles before its clock starts).
    EncodedCorpus.from_file(corpus, ReadOptions(min_count=ns.min_count), cache_dir=ns.work / "cache")
    runs: list[dict] = []

    def record(res: dict) -> None:
        runs.append(res)
        what = fmt_quality(res["quality"]) if "quality" in res else f"{res['words_per_sec'] / 1e6:.3f}M words/s"
        print(f"{res['mode']} {res['system']:12s} {res['threads']}t seed {res['seed']} {what} "
              f"(cpu {res['cpu_words_per_sec'] / 1e6:.3f}M words/s, load {res['load_avg'][0]:.1f})",
              file=sys.stderr, flush=True)
        if ns.out:
            harness.write_json(ns.out, "bench_hs", {"args": {k: str(v) for k, v in vars(ns).items()}, "runs": runs,
                                                    "table": summary(runs, ns)})

    def speed_runs() -> None:
        for _ in range(ns.rounds):
            for mode in ns.modes:
                for threads in ns.threads:
                    for system in SYSTEMS:
                        record(spawn(system, mode, threads, ns.epochs, False, ns.seed, ns, corpus))

    def quality_runs() -> None:
        if not ns.quality_epochs:
            return
        jobs = [(system, mode, seed) for seed in ns.quality_seeds for mode in ns.modes for system in SYSTEMS]
        with ThreadPoolExecutor(max_workers=max(1, ns.parallel)) as pool:
            futures = [pool.submit(spawn, system, mode, ns.quality_threads, ns.quality_epochs, True, seed, ns, corpus)
                       for system, mode, seed in jobs]
            for f in as_completed(futures):  # recorded (and the JSON rewritten) as each run ends
                record(f.result())

    if ns.quality_first:
        quality_runs()
        speed_runs()
    else:
        speed_runs()
        quality_runs()
    print(f"Machine: {harness.machine_line(harness.machine())}\n\n{summary(runs, ns)}")


if __name__ == "__main__":
    main()
