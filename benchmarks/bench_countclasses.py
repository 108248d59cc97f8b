"""Sampling tables over count classes (:mod:`parvec.countclasses`) against the per-word tables: draw speed and
table sizes on Zipf vocabularies, and the quality of one-process HogBatch runs trained with either.

    python benchmarks/bench_countclasses.py speed --words 1000000 16000000
    python benchmarks/bench_countclasses.py quality --seeds 1 2 3 --epochs 3 --threads 1

``speed``: nanoseconds per negative drawn (a numba loop of 20M xorshift-driven draws) by the per-word alias
table (:func:`parvec.kernels.hogbatch.draw_negative`, branch-free) and by the class table
(:func:`parvec.countclasses.draw_class_noise`), and the bytes of each table, for Zipf count vectors (s = 1, every
word at least once, 4 extra tokens a word).

``quality``: HogBatch, one process, on the shared corpus (``../shared/data``), each seed trained twice in its own
subprocess: with today's per-word tables, and with the class tables (the HogBatch kernel recompiled with
``draw_class_noise`` for its draw, and :func:`parvec.sampling.subsample_sentence` reading the head's keep table:
the same code otherwise, the same random stream).  WS-353 / SimLex-999 / analogy as ``benchmarks/bench_words.py``
scores them.  The tables only: the one-process modes keep their per-word tables (their bits are pinned).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import harness
import numpy as np

REPO = harness.REPO


def zipf_counts(vocab: int, extra_per_word: int = 4, seed: int = 1) -> np.ndarray:
    """Sorted counts of a Zipf corpus (s = 1) of ``vocab`` words, each at least once."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1)
    return np.sort(1 + rng.multinomial(extra_per_word * vocab, p / p.sum()))[::-1].astype(np.int64)


def speed(words: list[int], draws: int) -> list[dict]:
    from numba import njit

    from parvec.countclasses import CountClasses, draw_class_noise, noise_tables
    from parvec.kernels.hogbatch import draw_negative
    from parvec.sampling import alias_table, noise_distribution, rng_next

    @njit(nogil=True)
    def loop_word(prob, alias, n):
        state = np.uint64(0x9E3779B97F4A7C15)
        acc = np.int64(0)
        for _ in range(n):
            state = rng_next(state)
            acc += draw_negative(state, prob, alias)
        return acc

    @njit(nogil=True)
    def loop_class(prob, ranges, n):
        state = np.uint64(0x9E3779B97F4A7C15)
        acc = np.int64(0)
        for _ in range(n):
            state = rng_next(state)
            acc += draw_class_noise(state, prob, ranges)
        return acc

    rows = []
    for v in words:
        counts = zipf_counts(v)
        t0 = time.perf_counter()
        w_prob, w_alias = alias_table(noise_distribution(counts))
        t_word_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        classes = CountClasses.from_counts(counts)
        c_prob, c_ranges = noise_tables(classes)
        t_class_build = time.perf_counter() - t0
        loop_word(w_prob, w_alias, 1000)
        loop_class(c_prob, c_ranges, 1000)
        best_w = best_c = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            loop_word(w_prob, w_alias, draws)
            best_w = min(best_w, time.perf_counter() - t0)
            t0 = time.perf_counter()
            loop_class(c_prob, c_ranges, draws)
            best_c = min(best_c, time.perf_counter() - t0)
        row = {"words": v, "classes": classes.n_classes,
               "word_table_bytes": int(w_prob.nbytes + w_alias.nbytes),
               "class_table_bytes": int(c_prob.nbytes + c_ranges.nbytes),
               "word_build_s": t_word_build, "class_build_s": t_class_build,
               "word_ns_per_draw": 1e9 * best_w / draws, "class_ns_per_draw": 1e9 * best_c / draws}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


# --------------------------------------------------------------------------- quality
def _class_kernel():
    """HogBatch's ``train_chunk`` compiled again with the class draw and the head subsampling (same code)."""
    from numba import njit

    from parvec.countclasses import draw_class_noise
    from parvec.kernels import hogbatch

    glb = dict(hogbatch.__dict__)
    glb["draw_negative"] = draw_class_noise  # subsample_sentence reads the head table as it is
    func = types.FunctionType(hogbatch.train_chunk.py_func.__code__, glb, "train_chunk")
    opts = {k: v for k, v in hogbatch.train_chunk.targetoptions.items() if k != "nopython"}
    return njit(cache=False, **opts)(func)


def run_one(ns: argparse.Namespace) -> dict:
    """One training run in this process: ``ns.tables`` is ``word`` (today's) or ``class``."""
    import parvec.trainer as trainer_mod
    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.evaluation import default_eval_paths, evaluate
    from parvec.keyedvectors import KeyedVectors

    if ns.tables == "class":
        from parvec.countclasses import CountClasses, keep_head, noise_tables
        from parvec.kernels import Algorithm, hogbatch

        kernel = _class_kernel()
        module = types.SimpleNamespace(train_chunk=kernel, params=hogbatch.params)
        trainer_mod.select_algorithm = lambda config: Algorithm("hogbatch", module)  # type: ignore[assignment]
        original_init = trainer_mod.ModelTables.__init__

        def init(self, config, counts, w_in=None, w_out=None):  # type: ignore[no-untyped-def]
            original_init(self, config, counts, w_in, w_out)
            classes = CountClasses.from_counts(np.asarray(counts, dtype=np.int64))
            self.keep = keep_head(classes, config.sample)
            self.noise_prob, self.noise_alias = noise_tables(classes, config.ns_exponent)

        trainer_mod.ModelTables.__init__ = init  # type: ignore[method-assign]
    enc = EncodedCorpus.from_file(Path(ns.corpus), ReadOptions(min_count=ns.min_count), cache_dir=ns.cache_dir)
    cfg = TrainConfig(algo="hogbatch", dim=ns.dim, window=5, negative=5, sample=ns.sample, epochs=ns.epochs,
                      threads=ns.threads, seed=ns.seed, progress=False)
    t = trainer_mod.Trainer(cfg, enc.vocab.counts)
    table_bytes = int(t.keep.nbytes + t.noise_prob.nbytes + t.noise_alias.nbytes)
    stats = t.train(enc)
    kv = KeyedVectors(t.w_in, list(enc.vocab.words), counts=enc.vocab.counts)
    q = evaluate(kv, **default_eval_paths())
    return {"tables": ns.tables, "seed": ns.seed, "epochs": ns.epochs, "seconds": stats.seconds,
            "loss_per_epoch": stats.loss_per_epoch, "table_bytes": table_bytes, "vocab": len(enc.vocab),
            "ws353": q["ws353"]["spearman"], "simlex": q["simlex"]["spearman"],
            "analogy": 100 * q["analogies"]["3cosadd"]}


def quality(ns: argparse.Namespace) -> list[dict]:
    from bench_words import DEFAULT_CORPUS, prepare_corpus

    work = Path(ns.work)
    corpus = prepare_corpus(DEFAULT_CORPUS, work)
    rows = []
    for seed in ns.seeds:
        for tables in ("word", "class"):
            cmd = [sys.executable, __file__, "run-one", "--tables", tables, "--seed", str(seed), "--epochs",
                   str(ns.epochs), "--threads", str(ns.threads), "--dim", str(ns.dim), "--corpus", str(corpus),
                   "--cache-dir", str(work / "cache"), "--sample", str(ns.sample), "--min-count", str(ns.min_count)]
            env = harness.child_env()
            out = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if out.returncode != 0:
                raise RuntimeError(out.stderr[-3000:])
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n| tables | " + " | ".join(f"seed {s}" for s in ns.seeds) + " | mean |")
    print("|" + " --- |" * (len(ns.seeds) + 2))
    means = {}
    for tables in ("word", "class"):
        r = [x for x in rows if x["tables"] == tables]
        cells = [f"{x['ws353']:.3f} / {x['simlex']:.3f} / {x['analogy']:.1f}" for x in r]
        m = tuple(statistics.mean(x[k] for x in r) for k in ("ws353", "simlex", "analogy"))
        means[tables] = m
        print(f"| {tables} | " + " | ".join(cells) + f" | {m[0]:.3f} / {m[1]:.3f} / {m[2]:.1f} |")
    d = [c - w for c, w in zip(means["class"], means["word"], strict=True)]
    print(f"\nclass - word (means): WS-353 {d[0]:+.3f}, SimLex-999 {d[1]:+.3f}, analogy {d[2]:+.1f} points")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("speed")
    sp.add_argument("--words", type=int, nargs="+", default=[1_000_000, 16_000_000])
    sp.add_argument("--draws", type=int, default=20_000_000)
    for name in ("quality", "run-one"):
        q = sub.add_parser(name)
        q.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
        q.add_argument("--seed", type=int, default=1)
        q.add_argument("--epochs", type=int, default=3)
        q.add_argument("--threads", type=int, default=1)
        q.add_argument("--dim", type=int, default=100)
        q.add_argument("--sample", type=float, default=1e-3)
        q.add_argument("--min-count", type=int, default=5)
        q.add_argument("--tables", choices=("word", "class"), default="word")
        q.add_argument("--corpus", default="")
        q.add_argument("--cache-dir", default="")
        q.add_argument("--work", default="/tmp/parvec-bench-countclasses")
    ns = ap.parse_args()
    if ns.cmd == "speed":
        speed(ns.words, ns.draws)
    elif ns.cmd == "quality":
        quality(ns)
    else:
        print(json.dumps(run_one(ns)))


if __name__ == "__main__":
    main()
