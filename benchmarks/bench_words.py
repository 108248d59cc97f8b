"""Word-vector benchmark: parvec's algorithms vs gensim, in one run, on the same data.

Every measurement runs in its own subprocess (so peak memory is per system), and the systems are
interleaved round by round so machine noise hits them alike.  Speed is words/s = raw corpus tokens
x epochs / training seconds (reading and vocabulary building excluded for every system); quality is
WS-353 and SimLex-999 Spearman and Google analogy (3CosAdd) over the 30,000 most frequent words,
scored by the same evaluator for every system.

    python benchmarks/bench_words.py --systems classic hogbatch gensim-file --threads 1 2 \\
        --epochs 1 --rounds 3 --quality-epochs 5 --out bench_out/words.json

Systems: ``classic``, ``hogbatch``, ``par`` (parvec), ``gensim-file`` (gensim corpus_file mode),
``gensim-iter`` (gensim with an in-memory iterable).

The ``--out`` JSON draws as a report (words/s per system and thread count as bars, the quality runs in a
table): ``parvec report bench_out/words.json -o bench_out/words.html``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import harness
from harness import DEFAULT_CORPUS, REPO, prepare_corpus  # noqa: F401  (REPO, prepare_corpus: other scripts')

PARVEC_ALGOS = ("classic", "hogbatch", "par")


def run_one(args: argparse.Namespace) -> dict:
    """Train one system once (in this process) and return its measurements."""
    from parvec.evaluation import default_eval_paths, evaluate
    from parvec.keyedvectors import KeyedVectors

    corpus = Path(args.corpus)
    args.threads = args.threads[0] if isinstance(args.threads, list) else args.threads
    result: dict = {"system": args.system, "threads": args.threads, "epochs": args.epochs, "dim": args.dim,
                    "window": args.window}
    if args.system in PARVEC_ALGOS:
        from parvec.config import TrainConfig
        from parvec.corpus import EncodedCorpus, ReadOptions
        from parvec.trainer import Trainer

        t0 = time.perf_counter()
        enc = EncodedCorpus.from_file(corpus, ReadOptions(min_count=args.min_count), cache_dir=args.cache_dir)
        result["read_seconds"] = time.perf_counter() - t0
        cfg = TrainConfig(algo=args.system, dim=args.dim, window=args.window, negative=args.negative,
                          sample=args.sample, epochs=args.epochs, threads=args.threads, seed=args.seed,
                          progress=False, **json.loads(args.extra or "{}"))
        trainer = Trainer(cfg, enc.vocab.counts)
        stats = trainer.train(enc)
        seconds = stats.seconds
        raw_words = enc.raw_words
        kv = KeyedVectors(trainer.w_in, list(enc.vocab.words), counts=enc.vocab.counts)
        result["loss_per_epoch"] = stats.loss_per_epoch
    else:
        import logging

        from gensim.models import Word2Vec as GensimW2V

        logging.disable(logging.WARNING)
        common = dict(vector_size=args.dim, window=args.window, negative=args.negative, sample=args.sample,
                      min_count=args.min_count, workers=args.threads, sg=1, hs=0, seed=args.seed)
        t0 = time.perf_counter()
        if args.system == "gensim-file":
            model = GensimW2V(**common)
            model.build_vocab(corpus_file=str(corpus))
            result["read_seconds"] = time.perf_counter() - t0
            raw_words = model.corpus_total_words
            t1 = time.perf_counter()
            model.train(corpus_file=str(corpus), total_words=raw_words, epochs=args.epochs)
        else:
            with open(corpus, encoding="utf-8") as f:
                sentences = [line.split() for line in f]
            model = GensimW2V(**common)
            model.build_vocab(sentences)
            result["read_seconds"] = time.perf_counter() - t0
            raw_words = model.corpus_total_words
            t1 = time.perf_counter()
            model.train(sentences, total_examples=len(sentences), epochs=args.epochs)
        seconds = time.perf_counter() - t1
        kv = KeyedVectors(model.wv.vectors, list(model.wv.index_to_key))
    result["train_seconds"] = seconds
    result["raw_words"] = raw_words
    result["words_per_sec"] = raw_words * args.epochs / seconds
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result["vocab_size"] = len(kv)
    if args.quality:
        result["quality"] = evaluate(kv, **default_eval_paths())
    return result


def spawn(system: str, threads: int, epochs: int, quality: bool, ns: argparse.Namespace, corpus: Path,
          extra: str = "", seed: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--run-one", "--system", system, "--threads", str(threads),
           "--epochs", str(epochs), "--dim", str(ns.dim), "--window", str(ns.window),
           "--negative", str(ns.negative), "--sample", str(ns.sample), "--min-count", str(ns.min_count),
           "--seed", str(ns.seed if seed is None else seed), "--corpus", str(corpus),
           "--cache-dir", str(ns.work / "cache")]
    if quality:
        cmd.append("--quality")
    if extra:
        cmd += ["--extra", extra]
    return harness.run_child(cmd, system)


SCORE_NAMES = ("WS-353", "SimLex-999", "analogy")
SCORE_DIGITS = (3, 3, 1)  # decimals each score is shown with (analogy in %)


def _scores(q: dict) -> tuple[float, float, float]:
    """(WS-353 Spearman, SimLex-999 Spearman, analogy 3CosAdd in %) of one quality result (NaN if absent)."""
    nan = float("nan")
    return (q.get("ws353", {}).get("spearman", nan), q.get("simlex", {}).get("spearman", nan),
            100 * q.get("analogies", {}).get("3cosadd", nan))


def fmt_quality(q: dict | None) -> str:
    if not q:
        return "| – | – | – |"
    ws, sl, an = _scores(q)
    return f"| {ws:.3f} | {sl:.3f} | {an:.1f}% |"


def seed_table(per_seed: dict[str, dict[int, dict]], seeds: list[int]) -> str:
    """Quality per seed, mean and sd per system, and each system's gap to classic: on the means and the
    widest same-seed gap (one run against one run is what a single benchmark run compares)."""
    head = "| system | " + " | ".join(f"seed {s}" for s in seeds) + " | mean (sd) |"
    lines = [f"Quality over seeds (WS-353 / SimLex-999 / analogy %), {len(seeds)} runs per system:", "", head,
             "|" + " --- |" * (len(seeds) + 2)]
    for system, by_seed in per_seed.items():
        rows = [_scores(by_seed[s]) for s in seeds]
        cells = [f"{w:.3f} / {x:.3f} / {a:.1f}" for w, x, a in rows]
        stats = [(statistics.mean(c), statistics.stdev(c)) for c in zip(*rows, strict=True)]
        mean = " / ".join(f"{m:.{p}f} ({sd:.{p}f})" for (m, sd), p in zip(stats, SCORE_DIGITS, strict=True))
        lines.append(f"| {system} | " + " | ".join(cells) + f" | {mean} |")
    if "classic" in per_seed:
        lines += ["", "Gap to classic (system − classic): mean over seeds; widest same-seed gap:", ""]
        ref = {s: _scores(per_seed["classic"][s]) for s in seeds}
        for system, by_seed in per_seed.items():
            if system == "classic":
                continue
            gaps = [[o - r for o, r in zip(_scores(by_seed[s]), ref[s], strict=True)] for s in seeds]
            parts = []
            for name, p, col in zip(SCORE_NAMES, SCORE_DIGITS, zip(*gaps, strict=True), strict=True):
                parts.append(f"{name} {statistics.mean(col):+.{p}f} (widest {max(col, key=abs):+.{p}f})")
            lines.append(f"- {system}: " + "; ".join(parts))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--system", help=argparse.SUPPRESS)
    ap.add_argument("--quality", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--extra", default="", help="JSON of extra TrainConfig fields for parvec systems")
    ap.add_argument("--systems", nargs="+", default=["classic", "hogbatch", "gensim-file"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--epochs", type=int, default=1, help="epochs of the speed runs (1)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of speed runs; medians reported")
    ap.add_argument("--quality-epochs", type=int, default=5, help="epochs of the quality runs (0 = none)")
    ap.add_argument("--quality-threads", type=int, default=2)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--negative", type=int, default=5)
    ap.add_argument("--sample", type=float, default=1e-4)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quality-seeds", type=int, nargs="+", default=None,
                    help="train the quality runs once per seed (systems interleaved per seed) and report "
                         "each run, the mean and sd, and the gap to classic (default: --seed only)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--cache-dir", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "parvec-bench")
    ap.add_argument("--out", type=Path, help="write all measurements as JSON here")
    ns = ap.parse_args()
    if ns.run_one:
        print(json.dumps(run_one(ns)))
        return
    corpus = prepare_corpus(ns.corpus, ns.work)
    if any(s in PARVEC_ALGOS for s in ns.systems):  # fill parvec's corpus cache once, untimed
        from parvec.corpus import EncodedCorpus, ReadOptions

        enc = EncodedCorpus.from_file(corpus, ReadOptions(min_count=ns.min_count), cache_dir=ns.work / "cache")
        # Fill numba's on-disk cache too, so no measured run pays (in time or peak memory) for compiling.
        from parvec.config import TrainConfig
        from parvec.trainer import Trainer

        for system in (s for s in ns.systems if s in PARVEC_ALGOS):
            cfg = TrainConfig(algo=system, dim=ns.dim, window=ns.window, negative=ns.negative, epochs=1,
                              progress=False, **json.loads(ns.extra or "{}"))
            Trainer(cfg, enc.vocab.counts).warm_up((enc.tokens, enc.offsets))
    runs: list[dict] = []
    speed: dict[tuple[str, int], list[dict]] = {}
    for r in range(ns.rounds):
        for threads in ns.threads:
            for system in ns.systems:
                res = spawn(system, threads, ns.epochs, False, ns, corpus, ns.extra)
                res["round"] = r
                runs.append(res)
                speed.setdefault((system, threads), []).append(res)
                print(f"round {r} {system:12s} {threads}t {res['words_per_sec'] / 1e6:.3f}M words/s "
                      f"peak {res['peak_rss_bytes'] / 2**20:.0f} MiB", file=sys.stderr, flush=True)
    quality: dict[str, dict] = {}
    per_seed: dict[str, dict[int, dict]] = {}
    seeds = ns.quality_seeds or [ns.seed]
    if ns.quality_epochs:
        for seed in seeds:
            for system in ns.systems:
                res = spawn(system, ns.quality_threads, ns.quality_epochs, True, ns, corpus, ns.extra, seed)
                res["seed"] = seed
                runs.append(res)
                per_seed.setdefault(system, {})[seed] = res["quality"]
                if seed == seeds[0]:
                    quality[system] = res
                print(f"quality seed {seed} {system:12s} {fmt_quality(res.get('quality'))}", file=sys.stderr,
                      flush=True)
    base = {t: statistics.median(r["words_per_sec"] for r in speed.get(("gensim-file", t), [])) if
            speed.get(("gensim-file", t)) else None for t in ns.threads}
    lines = [f"Corpus {ns.corpus.name}; dim {ns.dim}, window {ns.window}, negative {ns.negative}, sample "
             f"{ns.sample}, min_count {ns.min_count}; speed: {ns.epochs} epoch(s), median of {ns.rounds} "
             f"interleaved rounds; quality: {ns.quality_epochs} epochs at {ns.quality_threads} threads.", "",
             "| system | threads | words/s (median, range) | × gensim corpus_file | peak RSS | WS-353 ρ | "
             "SimLex-999 ρ | analogy (top 30k) |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for system in ns.systems:
        for threads in ns.threads:
            rs = speed.get((system, threads), [])
            if not rs:
                continue
            wps = [r["words_per_sec"] for r in rs]
            med = statistics.median(wps)
            ratio = f"{med / base[threads]:.2f}×" if base.get(threads) else "–"
            peak = max(r["peak_rss_bytes"] for r in rs) / 2**20
            q = quality.get(system, {}).get("quality") if threads == ns.quality_threads else None
            lines.append(f"| {system} | {threads} | {med / 1e6:.3f}M ({min(wps) / 1e6:.2f}–{max(wps) / 1e6:.2f}) | "
                         f"{ratio} | {peak:.0f} MiB {fmt_quality(q)}")
        if system in quality and not speed.get((system, ns.quality_threads)):
            # Quality without a speed run at these threads (e.g. --rounds 0): its own row, not a lost result.
            res = quality[system]
            lines.append(f"| {system} | {ns.quality_threads} | – | – | {res['peak_rss_bytes'] / 2**20:.0f} MiB "
                         f"{fmt_quality(res.get('quality'))}")
    if len(seeds) > 1:
        lines += ["", seed_table(per_seed, seeds)]
    table = "\n".join(lines)
    print(f"Machine: {harness.machine_line(harness.machine())}\n\n{table}")
    if ns.out:
        harness.write_json(ns.out, "bench_words", {"args": {k: str(v) for k, v in vars(ns).items()}, "runs": runs,
                                                   "table": table})


if __name__ == "__main__":
    main()
