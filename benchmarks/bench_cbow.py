"""CBOW benchmark: parvec's CBOW kernels vs gensim ``sg=0``, in one run, on the same data.

Systems: ``cbow-classic`` (parvec ``algo="classic", sg=False``: word2vec.c's loop), ``cbow-fast``
(parvec ``algo="hogbatch", sg=False``: the batched kernel), ``gensim-cbow`` (gensim ``sg=0`` in
``corpus_file`` mode).  Every measurement runs in its own subprocess and the systems are interleaved
round by round; speed is raw corpus words x epochs / training seconds, at each ``--threads`` (gensim's
``workers``); quality (WS-353, SimLex-999, Google analogy over the 30,000 most frequent words, by
:mod:`benchmarks.bench_words`' evaluator) per seed, parvec at ``--quality-threads`` and gensim at
``workers=1`` (its ``corpus_file`` mode with N workers decays the learning rate over 1/N of each epoch)
and, with ``--gensim-quality-workers 1 2``, at 2 workers too.  ``--tokens N`` trains on the corpus's first N
tokens, 1,000 a line (``harness.slice_corpus``), instead of all of it.  ``--start word2vec`` starts every
system from word2vec.c's range of initial input vectors, [-0.5, 0.5) / dim (parvec's own stream; gensim's
halved), ``--start gensim`` from gensim 4's [-1, 1) / dim; the default is each system's own (parvec's CBOW:
gensim's range, docs/guide/words.md#cbow).  Learning rates are each system's CBOW
default unless ``--alpha`` gives one for both: parvec's is 0.05 (word2vec.c's), gensim's 0.025 (gensim 4's
``alpha`` default, the same for ``sg=0`` and ``sg=1``).  ``--rounds 0`` runs the quality part alone.

    python benchmarks/bench_cbow.py --threads 1 2 --epochs 1 --rounds 2 --quality-epochs 5 \\
        --quality-seeds 1 2 3 --out /tmp/bench_out/cbow.json
    python benchmarks/bench_cbow.py --rounds 0 --quality-seeds 1 2 3 --gensim-quality-workers 1 2   # quality only
    python benchmarks/bench_cbow.py --rounds 0 --systems gensim-cbow --alpha 0.05 --quality-seeds 1 2 3
    python benchmarks/bench_cbow.py --rounds 0 --systems cbow-classic gensim-cbow --alpha 0.05 --tokens 3000000 \
        --quality-epochs 3 --quality-threads 1 --quality-seeds 1 2 3 --start word2vec   # a small corpus
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
from bench_words import DEFAULT_CORPUS, SCORE_DIGITS, SCORE_NAMES, _scores, fmt_quality, prepare_corpus
from harness import slice_corpus

PARVEC = {"cbow-classic": "classic", "cbow-fast": "hogbatch"}
SYSTEMS = ("cbow-classic", "cbow-fast", "gensim-cbow")
START = {"word2vec": 0.5, "gensim": 1.0}  # --start: the half-width of the initial range, times dim


def run_one(args: argparse.Namespace) -> dict:
    """Train one system once (in this process) and return its measurements."""
    from parvec.evaluation import default_eval_paths, evaluate
    from parvec.keyedvectors import KeyedVectors

    corpus = Path(args.corpus)
    result: dict = {"system": args.system, "threads": args.threads, "epochs": args.epochs, "seed": args.seed}
    alpha_kw = {} if args.alpha is None else {"alpha": args.alpha}
    if args.system in PARVEC:
        from parvec.config import TrainConfig
        from parvec.corpus import EncodedCorpus, ReadOptions
        from parvec.model_tables import init_input_vectors
        from parvec.trainer import Trainer

        enc = EncodedCorpus.from_file(corpus, ReadOptions(min_count=args.min_count), cache_dir=args.cache_dir)
        cfg = TrainConfig(algo=PARVEC[args.system], sg=False, dim=args.dim, window=args.window,
                          negative=args.negative, sample=args.sample, epochs=args.epochs, threads=args.threads,
                          seed=args.seed, progress=False, **alpha_kw, **json.loads(args.extra or "{}"))
        trainer = Trainer(cfg, enc.vocab.counts)
        if args.start != "own":
            trainer.w_in[:] = init_input_vectors(len(enc.vocab), cfg.dim, cfg.seed, half_width=START[args.start])
        trainer.warm_up((enc.tokens, enc.offsets))
        cpu0 = time.process_time()
        stats = trainer.train(enc)
        cpu = time.process_time() - cpu0
        seconds, raw_words = stats.seconds, enc.raw_words
        result["config"] = cfg.to_dict() | {"start": args.start}
        result["loss_per_epoch"] = stats.loss_per_epoch
        kv = KeyedVectors(trainer.w_in, list(enc.vocab.words), counts=enc.vocab.counts)
    else:
        import logging

        from gensim.models import Word2Vec as GensimW2V

        logging.disable(logging.WARNING)
        model = GensimW2V(vector_size=args.dim, window=args.window, negative=args.negative, sample=args.sample,
                          min_count=args.min_count, workers=args.threads, sg=0, hs=0, cbow_mean=1, seed=args.seed,
                          **alpha_kw)
        model.build_vocab(corpus_file=str(corpus))
        if args.start == "word2vec":  # gensim's own stream, halved: [-0.5, 0.5) / dim
            model.wv.vectors *= 0.5
        raw_words = model.corpus_total_words
        t1, cpu0 = time.perf_counter(), time.process_time()
        model.train(corpus_file=str(corpus), total_words=raw_words, epochs=args.epochs)
        seconds, cpu = time.perf_counter() - t1, time.process_time() - cpu0
        result["config"] = {"alpha": model.alpha, "min_alpha": model.min_alpha, "cbow_mean": model.cbow_mean,
                            "start": args.start}
        kv = KeyedVectors(model.wv.vectors, list(model.wv.index_to_key))
    result["train_seconds"] = seconds
    result["raw_words"] = raw_words
    result["words_per_sec"] = raw_words * args.epochs / seconds
    # Words per CPU-second of this process while training: far less moved by other jobs on a shared
    # machine than wall time (cache and memory contention still count).
    result["cpu_seconds"] = cpu
    result["words_per_cpu_sec"] = raw_words * args.epochs / cpu
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if args.quality:
        result["quality"] = evaluate(kv, **default_eval_paths())
    return result


def spawn(system: str, threads: int, epochs: int, quality: bool, ns: argparse.Namespace, corpus: Path,
          seed: int) -> dict:
    cmd = [sys.executable, __file__, "--run-one", "--system", system, "--threads", str(threads),
           "--epochs", str(epochs), "--dim", str(ns.dim), "--window", str(ns.window),
           "--negative", str(ns.negative), "--sample", str(ns.sample), "--min-count", str(ns.min_count),
           "--seed", str(seed), "--corpus", str(corpus), "--cache-dir", str(ns.work / "cache"), "--start", ns.start]
    if quality:
        cmd.append("--quality")
    if ns.extra:
        cmd += ["--extra", ns.extra]
    if ns.alpha is not None:
        cmd += ["--alpha", str(ns.alpha)]
    return harness.run_child(cmd, system)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--system", help=argparse.SUPPRESS)
    ap.add_argument("--quality", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--extra", default="", help="JSON of extra TrainConfig fields for parvec (e.g. batch_size)")
    ap.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--epochs", type=int, default=1, help="epochs of the speed runs (1)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds of speed runs; medians reported")
    ap.add_argument("--quality-epochs", type=int, default=5, help="epochs of the quality runs (0 = none)")
    ap.add_argument("--quality-threads", type=int, default=2, help="parvec's threads in the quality runs")
    ap.add_argument("--gensim-quality-workers", type=int, nargs="+", default=[1])
    ap.add_argument("--quality-seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--negative", type=int, default=5)
    ap.add_argument("--sample", type=float, default=1e-4)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--alpha", type=float, default=None,
                    help="starting learning rate of every system (default: each one's own: parvec 0.05, gensim 0.025)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--tokens", type=int, default=0, help="train on the corpus's first N tokens, 1,000 a line (0: all)")
    ap.add_argument("--start", choices=("own", *START), default="own",
                    help="initial input vectors: each system's own (default), word2vec.c's or gensim 4's range")
    ap.add_argument("--cache-dir", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "parvec-bench")
    ap.add_argument("--out", type=Path, help="write all measurements as JSON here")
    ns = ap.parse_args()
    if ns.run_one:
        ns.threads = ns.threads[0]
        print(json.dumps(run_one(ns)))
        return
    corpus = slice_corpus(ns.corpus, ns.tokens, ns.work) if ns.tokens else prepare_corpus(ns.corpus, ns.work)
    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.trainer import Trainer

    # Fill parvec's corpus cache and numba's cache once, untimed.
    enc = EncodedCorpus.from_file(corpus, ReadOptions(min_count=ns.min_count), cache_dir=ns.work / "cache")
    for system in (s for s in ns.systems if s in PARVEC):
        cfg = TrainConfig(algo=PARVEC[system], sg=False, dim=ns.dim, window=ns.window, negative=ns.negative,
                          epochs=1, progress=False, **json.loads(ns.extra or "{}"))
        Trainer(cfg, enc.vocab.counts).warm_up((enc.tokens, enc.offsets))
    runs: list[dict] = []
    load = [os.getloadavg()[0]]
    speed: dict[tuple[str, int], list[float]] = {}
    cpu_speed: dict[tuple[str, int], list[float]] = {}
    for r in range(ns.rounds):
        for threads in ns.threads:
            for system in ns.systems:
                res = spawn(system, threads, ns.epochs, False, ns, corpus, ns.seed)
                res["round"], res["load1"] = r, os.getloadavg()[0]
                runs.append(res)
                speed.setdefault((system, threads), []).append(res["words_per_sec"])
                cpu_speed.setdefault((system, threads), []).append(res["words_per_cpu_sec"])
                print(f"round {r} {system:13s} {threads}t {res['words_per_sec'] / 1e6:.3f}M words/s, "
                      f"{res['words_per_cpu_sec'] / 1e6:.3f}M per CPU-second "
                      f"(load {res['load1']:.1f})", file=sys.stderr, flush=True)
    quality: dict[str, list[tuple[float, float, float]]] = {}
    if ns.quality_epochs:
        for seed in ns.quality_seeds:
            for system in ns.systems:
                for threads in (ns.gensim_quality_workers if system == "gensim-cbow" else [ns.quality_threads]):
                    res = spawn(system, threads, ns.quality_epochs, True, ns, corpus, seed)
                    res["load1"] = os.getloadavg()[0]
                    runs.append(res)
                    name = f"{system} {threads}t"
                    quality.setdefault(name, []).append(_scores(res["quality"]))
                    print(f"quality seed {seed} {name:16s} {fmt_quality(res['quality'])} "
                          f"(alpha {res['config'].get('alpha')}, load {res['load1']:.1f})", file=sys.stderr,
                          flush=True)
                    if ns.out:  # rewritten after every run, so a long run's figures survive an interruption
                        harness.write_json(ns.out, "bench_cbow", {"args": {k: str(v) for k, v in vars(ns).items()},
                                                                  "runs": runs})
    load.append(os.getloadavg()[0])
    alpha_txt = ns.alpha if ns.alpha is not None else "parvec 0.05, gensim 0.025 (defaults)"
    corpus_txt = f"{ns.corpus.name}, first {ns.tokens} tokens" if ns.tokens else ns.corpus.name
    lines = [f"Corpus {corpus_txt}; initial vectors: {ns.start}; CBOW (mean), dim {ns.dim}, window {ns.window}, "
             f"negative {ns.negative}, "
             f"sample {ns.sample}, min_count {ns.min_count}, "
             f"alpha {alpha_txt}; speed: {ns.epochs} epoch(s), median of "
             f"{ns.rounds} interleaved rounds (1-min load {load[0]:.1f} at the start, {load[1]:.1f} at the end).", "",
             "| system | threads | words/s (median, range) | × gensim corpus_file | words per CPU-second | × gensim |",
             "| --- | --- | --- | --- | --- | --- |"]
    for system in ns.systems:
        for threads in ns.threads:
            wps = speed.get((system, threads))
            if not wps:
                continue
            base = speed.get(("gensim-cbow", threads))
            ratio = f"{statistics.median(wps) / statistics.median(base):.2f}×" if base else "–"
            cps, cbase = cpu_speed[(system, threads)], cpu_speed.get(("gensim-cbow", threads))
            cratio = f"{statistics.median(cps) / statistics.median(cbase):.2f}×" if cbase else "–"
            lines.append(f"| {system} | {threads} | {statistics.median(wps) / 1e6:.3f}M ({min(wps) / 1e6:.2f}–"
                         f"{max(wps) / 1e6:.2f}) | {ratio} | {statistics.median(cps) / 1e6:.3f}M | {cratio} |")
    if quality:
        lines += ["", f"Quality after {ns.quality_epochs} epochs, mean (sd) over seeds {ns.quality_seeds}:", "",
                  "| system | " + " | ".join(SCORE_NAMES) + " |", "| --- | --- | --- | --- |"]
        means = {}
        for name, rows in quality.items():
            cols = list(zip(*rows, strict=True))
            means[name] = [statistics.mean(c) for c in cols]
            cells = [f"{statistics.mean(c):.{p}f}" + (f" ({statistics.stdev(c):.{p}f})" if len(c) > 1 else "")
                     for c, p in zip(cols, SCORE_DIGITS, strict=True)]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        ref = means.get("gensim-cbow 1t")
        if ref:
            lines += ["", "Gap to gensim sg=0 workers=1 (means; bars: WS/SimLex >= -0.02, analogy >= -2 points):", ""]
            for name, m in means.items():
                if name != "gensim-cbow 1t":
                    lines.append(f"- {name}: " + "; ".join(f"{n} {a - b:+.{p}f}" for n, a, b, p in
                                                          zip(SCORE_NAMES, m, ref, SCORE_DIGITS, strict=True)))
    table = "\n".join(lines)
    print(f"Machine: {harness.machine_line(harness.machine())}\n\n{table}")
    if ns.out:
        harness.write_json(ns.out, "bench_cbow", {"args": {k: str(v) for k, v in vars(ns).items()}, "runs": runs,
                                                  "table": table})


if __name__ == "__main__":
    main()
