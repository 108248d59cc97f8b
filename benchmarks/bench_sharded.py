"""Sharded parameter servers (``--mode sharded``, Ordentlich et al.): network bytes, quality and speed against
one process, and a model larger than one process may hold.  Every measurement runs in its own process.

    # bytes per trained input word on the wire, d = 100/300/1000, S = 2 and 4 (first 1M tokens, 1 epoch)
    python benchmarks/bench_sharded.py network --dims 100 300 1000 --shards 2 4 --out /tmp/sharded_net.json
    # WS-353 / SimLex-999 / analogy and words/s: sharded (S=2, 2 clients) vs classic and hogbatch, 3 seeds
    python benchmarks/bench_sharded.py quality --seeds 1 2 3 --out /tmp/sharded_quality.json
    # the minibatch size's effect on quality, in one process (the demo corpus), beside hogbatch and classic
    python benchmarks/bench_sharded.py minibatch --sizes 64 256 1024 4096 --out /tmp/sharded_minibatch.json
    # what a call costs besides the shard's kernels: one array each way against inline parts, 1 ... 64 clients
    python benchmarks/bench_sharded.py calls --base 65c7f41 --client-counts 1 2 8 64 --out /tmp/calls.json
    # words/s against one process (interleaved rounds, 4M tokens), this tree beside the default run of a base
    python benchmarks/bench_sharded.py speed --rounds 3 --base f68d7b0 --out /tmp/sharded_speed.json
    # the staleness model (one process): loss and quality against words in flight and the update cap, 1 epoch
    python benchmarks/bench_sharded.py staleness --minibatch-sizes 512 4096 32768 --caps 0 16 --samples 1e-4 1e-3
    # no default sharded run diverges: 1 and 2 shards x 1 and 2 clients x seeds 1-5 x sample 1e-3 and 1e-4, 1 epoch
    python benchmarks/bench_sharded.py defaults --seeds 1 2 3 4 5 --out /tmp/sharded_defaults.json
    # beyond one process's memory: a Zipf corpus of 5.2M words at dim 200 (benchmarks/make_zipf_corpus.py)
    python benchmarks/bench_sharded.py memory --corpus /tmp/zipf5m.txt --one-process-cap 6G --shard-memory 3G

Each subcommand prints a Markdown table and writes its measurements as JSON (``--out``).  The corpus of the
first two is ../shared/data's enwiki text8-style 100M (16.9M tokens), cut into lines of 10,000 tokens as
benchmarks/bench_words.py does; quality is scored by bench_words' evaluator (top 30k words).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_words  # (the corpus preparation, the one-process runs and the evaluation)
import harness
from bench_engine_ab import base_checkout
from harness import DEMO_CORPUS, REPO, slice_corpus

ENV = harness.child_env()


def _load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def _cpu() -> str:
    return harness.machine_line(harness.machine())


def _run(cmd: list[str], limit_data: int | None = None) -> dict:
    """Run a command; its exit status, output tail, seconds and peak RSS (its own, children excluded)."""
    def cap() -> None:
        if limit_data is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (limit_data, resource.getrlimit(resource.RLIMIT_DATA)[1]))

    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, env=ENV, preexec_fn=cap)
        _, status, usage = os.wait4(proc.pid, 0)  # waited here, so its own peak RSS is known
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        out = log.read()
    seconds = time.perf_counter() - t0
    return {"cmd": " ".join(cmd), "rc": proc.returncode, "seconds": seconds, "output_tail": out[-6000:],
            "peak_rss_bytes": usage.ru_maxrss * 1024}


# --------------------------------------------------------------------------- network
def network_one(ns: argparse.Namespace) -> dict:
    """One network measurement in this process: S shards, dim d, one epoch of the first --tokens tokens."""
    import numpy as np

    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.distributed import Cluster
    from parvec.distributed.sharded import ShardedRun

    enc = EncodedCorpus.from_file(ns.corpus_file, ReadOptions(min_count=ns.min_count), cache_dir=ns.work / "cache")
    n = min(ns.tokens, enc.n_tokens)
    offsets = enc.offsets[enc.offsets <= n]
    if offsets[-1] != n:
        offsets = np.append(offsets, n)
    tokens = np.ascontiguousarray(enc.tokens[:n])
    cfg = TrainConfig(dim=ns.dim, window=ns.window, negative=ns.negative, sample=ns.sample, epochs=1, seed=ns.seed,
                      progress=False)
    cluster = Cluster("local:2", mode="sharded", shards=ns.shards_one, clients=ns.clients, threads_per_actor=2,
                      minibatch_words=ns.minibatch_words)
    with cluster.session() as r:
        run = ShardedRun(r, cluster, cfg, enc.vocab.counts, [("refs", [r.put(tokens), r.put(offsets)])], [offsets])
        try:
            stats = run.train()
            rep = run.report().to_json()
        finally:
            run.close()
    rep = {k: v for k, v in rep.items() if not isinstance(v, list) or k.startswith("shard_")}
    rep.update(dim=ns.dim, tokens=n, seconds=stats.seconds, words_per_sec=stats.words_per_sec,
               loss=stats.loss_per_epoch[0], rowwise_dedup=_rowwise_dedup(cfg, enc.vocab.counts, tokens, offsets,
                                                                            ns.minibatch_words) if ns.dedup else None)
    return rep


def _rowwise_dedup(cfg, counts, tokens, offsets, minibatch_words: int, minibatches: int = 400) -> dict:
    """What a row-wise parameter server moves for the same minibatches when each distinct row of a minibatch
    is fetched once: distinct input rows + distinct output rows (positives and negatives), d floats each."""
    from parvec.distributed.units import UnitRunner, client_keep
    from parvec.kernels import sharded as K
    from parvec.sampling import chunk_seed, word_noise_tables

    prob, alias = word_noise_tables(counts, cfg.ns_exponent)
    runner = UnitRunner(cfg, client_keep(counts, cfg), minibatch_words)
    seed = int(chunk_seed(cfg.seed, 0, 0))
    inputs = rows = refs = 0
    batches = runner.minibatches(tokens, offsets, 0, len(offsets) - 1, seed, 0.025, 0.0, 1)
    for _, mb in zip(range(minibatches), batches, strict=False):
        negs = K.minibatch_negatives(mb.seq, mb.seg, mb.shrink, cfg.window, cfg.negative, prob, alias, mb.seed)
        centers, outs = [], []
        m = 0
        for start, n, a, b in mb.seg.tolist():
            run = mb.seq[start:start + n]
            for j in range(a, b):
                r = int(mb.shrink[m])
                m += 1
                for k in range(max(0, j - cfg.window + r), min(n, j + cfg.window - r + 1)):
                    if k != j:
                        centers.append(int(run[j]))
                        outs.append(int(run[k]))
        inputs += mb.inputs
        rows += len(set(centers)) + len(set(outs) | set(negs.ravel().tolist()))
        refs += mb.inputs + len(outs) + negs.size
    d = cfg.dim
    return {"minibatches": minibatches, "rows_per_input": rows / inputs, "bytes_per_word": rows / inputs * d * 4,
            "no_dedup_rows_per_input": refs / inputs}


def network(ns: argparse.Namespace) -> dict:
    corpus = bench_words.prepare_corpus(ns.corpus, ns.work)
    results = []
    for d in ns.dims:
        for s in ns.shards:
            cmd = [sys.executable, __file__, "network-one", "--dim", str(d), "--shards-one", str(s), "--corpus-file",
                   str(corpus), "--tokens", str(ns.tokens), "--work", str(ns.work), "--minibatch-words",
                   str(ns.minibatch_words), "--clients", str(ns.clients), "--sample", str(ns.sample)]
            if s == ns.shards[0]:
                cmd.append("--dedup")
            res = _run(cmd)
            if res["rc"] != 0:
                raise RuntimeError(res["output_tail"])
            rep = json.loads(res["output_tail"].strip().splitlines()[-1])
            rep["load_average"] = _load()
            results.append(rep)
            print(f"d={d} S={s}: sent {rep['bytes_sent_per_word']:.1f} B/word, received "
                  f"{rep['bytes_received_per_word']:.1f}, paper {rep['paper_bytes_per_word']:.1f}, row-wise "
                  f"{rep['rowwise_ps_bytes_per_word']:.0f} ({rep['words_per_sec']:.0f} words/s)", file=sys.stderr,
                  flush=True)
    dedup = {r["dim"]: r["rowwise_dedup"] for r in results if r.get("rowwise_dedup")}
    lines = [f"Network bytes per trained input word, measured at the clients (first {ns.tokens:,} tokens, 1 epoch, "
             f"window 5, negative 5, minibatches of {ns.minibatch_words} input words). CPU: {_cpu()}.", "",
             "| d | S | w (positives/input) | sent B/word | of which indices | received B/word | paper w(n+1)S4 | "
             "row-wise PS (1+w(n+1))d4 | row-wise, distinct rows per minibatch | received / row-wise | S/d |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        dd = dedup.get(r["dim"])
        lines.append(f"| {r['dim']} | {r['shards']} | {r['contexts_per_input']:.3f} | {r['bytes_sent_per_word']:.1f} | "
                     f"{r['index_bytes_sent_per_word']:.1f} | {r['bytes_received_per_word']:.1f} | "
                     f"{r['paper_bytes_per_word']:.1f} | {r['rowwise_ps_bytes_per_word']:.0f} | "
                     f"{dd['bytes_per_word']:.0f} |" if dd else "– |")
        lines[-1] += f" {r['ratio_to_rowwise_ps']:.4f} | {r['shards'] / r['dim']:.4f} |"
    return {"results": results, "table": "\n".join(lines)}


# --------------------------------------------------------------------------- quality
def _eval_npy(path: Path) -> dict:
    from parvec.evaluation import default_eval_paths, evaluate
    from parvec.keyedvectors import KeyedVectors

    return evaluate(KeyedVectors.load(path), **default_eval_paths())


def quality(ns: argparse.Namespace) -> dict:
    corpus = bench_words.prepare_corpus(ns.corpus, ns.work)
    bw = argparse.Namespace(dim=ns.dim, window=ns.window, negative=ns.negative, sample=ns.sample,
                            min_count=ns.min_count, seed=1, work=ns.work)
    runs: list[dict] = []
    for seed in ns.seeds:
        for system in ns.systems:
            if system == "sharded":
                out = ns.work / f"sharded_s{seed}.npy"
                report = ns.work / f"sharded_s{seed}.json"
                cmd = [sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(out), "--cluster",
                       f"local:{ns.threads}", "--mode", "sharded", "--shards", str(ns.shards_one), "--clients",
                       str(ns.clients), "--threads", str(ns.client_threads), "--minibatch-words",
                       str(ns.minibatch_words), "--minibatch-formation", ns.minibatch_formation, "--negatives-per",
                       ns.negatives_per, "--wire-floats", ns.wire_floats, "--shard-calls", ns.shard_calls,
                       "--dim", str(ns.dim),
                       "--window", str(ns.window), "--negative",
                       str(ns.negative), "--sample", str(ns.sample), "--min-count", str(ns.min_count), "--epochs",
                       str(ns.epochs), "--seed", str(seed), "--report", str(report), "--no-cache"]
                res = _run(cmd)
                if res["rc"] != 0:
                    raise RuntimeError(res["output_tail"])
                rep = json.loads(report.read_text())
                q = _eval_npy(out)
                one = {"system": "sharded", "seed": seed, "threads": ns.threads, "quality": q,
                       "words_per_sec": rep["raw_words_per_sec"], "train_seconds": rep["training_seconds"],
                       "read_seconds": rep["read_seconds"], "wall_seconds": res["seconds"],
                       "loss_per_epoch": rep["loss_per_epoch"],
                       "sharded": {k: rep.get(k) for k in (
                           "shards", "clients", "client_threads", "minibatch_words", "negatives_per",
                           "wire_floats", "fused_calls", "bytes_sent_per_word",
                           "bytes_received_per_word", "contexts_per_input", "shard_peak_memory_bytes",
                           "client_unit_seconds", "client_wait_seconds", "client_form_seconds",
                           "client_coefficient_seconds", "shard_kernel_seconds", "shard_calls", "minibatches",
                           "export_seconds")}}
            else:
                one = bench_words.spawn(system, ns.threads, ns.epochs, True, bw, corpus, seed=seed)
                one["seed"] = seed
            one["load_average"] = _load()
            runs.append(one)
            print(f"seed {seed} {system:9s} {bench_words.fmt_quality(one['quality'])}  "
                  f"{one['words_per_sec'] / 1e3:.0f}k words/s  (load {one['load_average']})", file=sys.stderr,
                  flush=True)
    lines = [f"Quality and speed, {ns.epochs} epochs, dim {ns.dim}, window {ns.window}, negative {ns.negative}, sample "
             f"{ns.sample}, min_count {ns.min_count}; one-process systems at {ns.threads} threads; sharded: "
             f"local:{ns.threads}, {ns.shards_one} shards, {ns.clients} clients x {ns.client_threads} threads, "
             f"minibatches of {ns.minibatch_words} input words, negatives per {ns.negatives_per}, {ns.wire_floats} on "
             f"the wire. CPU: {_cpu()}.",
             "",
             "| system | seed | WS-353 ρ | SimLex-999 ρ | analogy | words/s | load |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    means = {}
    for system in ns.systems:
        rs = [r for r in runs if r["system"] == system]
        for r in rs:
            ws, sl, an = bench_words._scores(r["quality"])
            lines.append(f"| {system} | {r['seed']} | {ws:.3f} | {sl:.3f} | {an:.1f}% | "
                         f"{r['words_per_sec'] / 1e3:.0f}k | {r['load_average']} |")
        scores = [bench_words._scores(r["quality"]) for r in rs]
        means[system] = {"ws353": statistics.mean(s[0] for s in scores),
                         "simlex": statistics.mean(s[1] for s in scores),
                         "analogy": statistics.mean(s[2] for s in scores),
                         "words_per_sec": statistics.mean(r["words_per_sec"] for r in rs)}
    lines += ["", "| system | mean WS-353 | mean SimLex-999 | mean analogy | mean words/s |",
              "| --- | --- | --- | --- | --- |"]
    for system, m in means.items():
        lines.append(f"| {system} | {m['ws353']:.3f} | {m['simlex']:.3f} | {m['analogy']:.1f}% | "
                     f"{m['words_per_sec'] / 1e3:.0f}k |")
    if "sharded" in means:
        sh = means["sharded"]
        lines.append("")
        for peer in (s for s in ns.systems if s != "sharded"):
            p = means[peer]
            lines.append(f"sharded - {peer}: WS-353 {sh['ws353'] - p['ws353']:+.3f}, SimLex-999 "
                         f"{sh['simlex'] - p['simlex']:+.3f}, analogy "
                         f"{sh['analogy'] - p['analogy']:+.1f} points; "
                         f"speed {sh['words_per_sec'] / p['words_per_sec']:.2f}x")
    return {"runs": runs, "means": means, "table": "\n".join(lines)}


# --------------------------------------------------------------------------- minibatch size
def minibatch(ns: argparse.Namespace) -> dict:
    """The sharded minibatch algorithm in one process (``reference_train``: what S shards and one client
    thread compute) for several minibatch sizes, beside one-process hogbatch and classic, 1 thread each."""
    import numpy as np

    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.distributed.shard_kernels import reference_train
    from parvec.evaluation import default_eval_paths, evaluate
    from parvec.keyedvectors import KeyedVectors
    from parvec.trainer import Trainer

    corpus = ns.minibatch_corpus
    enc = EncodedCorpus.from_file(corpus, ReadOptions(min_count=ns.min_count))
    runs = []
    for what in [*ns.peers, *[str(m) for m in ns.sizes]]:
        for seed in ns.seeds:
            cfg = TrainConfig(algo=what if what in ("classic", "hogbatch") else "classic", dim=ns.dim,
                              window=ns.window, negative=ns.negative, sample=ns.sample, epochs=ns.epochs, seed=seed,
                              threads=1, progress=False)
            t0 = time.perf_counter()
            if what in ("classic", "hogbatch"):
                trainer = Trainer(cfg, enc.vocab.counts)
                stats = trainer.train(enc)
                w = trainer.w_in
            else:
                w, _, stats = reference_train(cfg, enc.vocab.counts, [(enc.tokens, enc.offsets)],
                                              minibatch_words=int(what))
            finite = bool(np.isfinite(w).all())
            ws = sl = an = float("nan")
            if finite:
                ws, sl, an = bench_words._scores(evaluate(KeyedVectors(w, list(enc.vocab.words)),
                                                          **default_eval_paths()))
            runs.append({"system": what, "seed": seed, "seconds": time.perf_counter() - t0, "ws353": ws,
                         "simlex": sl, "analogy": an, "loss_per_epoch": stats.loss_per_epoch, "finite": finite})
            print(f"{what:>8s} seed {seed}: WS {ws:.3f} SimLex {sl:.3f} analogy {an:.1f}% loss "
                  f"{stats.loss_per_epoch[-1]:.3f}", file=sys.stderr, flush=True)
    lines = [f"Minibatch size, one process, one thread: {corpus.name} ({enc.n_tokens:,} tokens, vocabulary "
             f"{len(enc.vocab):,}), {ns.epochs} epochs, dim {ns.dim}, window {ns.window}, negative {ns.negative}, "
             f"sample {ns.sample}; mean over seeds {ns.seeds}. CPU: {_cpu()}.", "",
             "| system | WS-353 ρ | SimLex-999 ρ | analogy | last epoch's loss |", "| --- | --- | --- | --- | --- |"]
    for what in [*ns.peers, *[str(m) for m in ns.sizes]]:
        rs = [r for r in runs if r["system"] == what]
        name = what if what in ns.peers else f"sharded, {what} words"
        if not all(r["finite"] for r in rs):
            lines.append(f"| {name} | diverged | | | |")
            continue
        lines.append(f"| {name} | {statistics.mean(r['ws353'] for r in rs):.3f} | "
                     f"{statistics.mean(r['simlex'] for r in rs):.3f} | "
                     f"{statistics.mean(r['analogy'] for r in rs):.1f}% | "
                     f"{statistics.mean(r['loss_per_epoch'][-1] for r in rs):.3f} |")
    return {"runs": runs, "table": "\n".join(lines)}


# --------------------------------------------------------------------------- the staleness model
def staleness(ns: argparse.Namespace) -> dict:
    """:func:`parvec.distributed.staleness.stale_train` on the whole corpus: ``--clients`` client threads x each of
    ``--minibatch-sizes`` input words in flight, each of ``--caps`` (0: summed), ``--samples`` and ``--seeds``; the
    loss per pair, where it diverged, and WS-353 / SimLex-999 / analogy of what trained."""
    import numpy as np

    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.countclasses import CountClasses
    from parvec.distributed.staleness import stale_train
    from parvec.distributed.units import SamplingTables
    from parvec.evaluation import default_eval_paths, evaluate
    from parvec.keyedvectors import KeyedVectors

    corpus = bench_words.prepare_corpus(ns.corpus, ns.work) if ns.corpus.suffix == ".xz" else ns.corpus
    enc = EncodedCorpus.from_file(corpus, ReadOptions(min_count=ns.min_count))
    words = list(enc.vocab.words)
    runs = []
    for sample in ns.samples:
        for m in ns.minibatch_sizes:
            for cap in ns.caps:
                for seed in ns.seeds:
                    cfg = TrainConfig(dim=ns.dim, window=ns.window, negative=ns.negative, sample=sample,
                                      epochs=ns.epochs, seed=seed, threads=1, progress=False)
                    tables = SamplingTables.of_classes(CountClasses.from_counts(enc.vocab.counts), cfg)
                    run = stale_train(cfg, tables, [(enc.tokens, enc.offsets)], minibatch_words=m, threads=ns.clients,
                                      update_cap=cap)
                    q = (None, None, None)
                    if not run.diverged and ns.evaluate:
                        q = bench_words._scores(evaluate(KeyedVectors(run.w_in, words), **default_eval_paths()))
                    one = {"sample": sample, "threads": ns.clients, "minibatch_words": m, "in_flight": ns.clients * m,
                           "update_cap": cap, "seed": seed, "loss_per_epoch": run.loss_per_epoch,
                           "diverged_at": run.diverged_at, "quality": q, "seconds": run.seconds,
                           "max_abs_w_out": float(np.nanmax(np.abs(run.w_out)))}
                    runs.append(one)
                    print(json.dumps(one), file=sys.stderr, flush=True)
    lines = [f"The staleness model, {corpus.name} ({enc.n_tokens:,} tokens), {ns.epochs} epoch(s), dim {ns.dim}, "
             f"window {ns.window}, negative {ns.negative}, {ns.clients} client threads. CPU: {_cpu()}.", "",
             "| sample | words in flight | update cap | seed | loss | WS-353 / SimLex-999 / analogy |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in runs:
        loss = f"diverged (minibatch {r['diverged_at'][1]})" if r["diverged_at"] else f"{r['loss_per_epoch'][-1]:.3f}"
        q = " / ".join("–" if x is None else f"{x:.3f}" for x in r["quality"][:2])
        an = "–" if r["quality"][2] is None else f"{r['quality'][2]:.1f}"
        lines.append(f"| {r['sample']:g} | {r['in_flight']:,} | {r['update_cap'] or 'summed'} | {r['seed']} | {loss} | "
                     f"{q} / {an} |")
    return {"runs": runs, "table": "\n".join(lines)}


# --------------------------------------------------------------------------- the defaults never diverge
def defaults(ns: argparse.Namespace) -> dict:
    """``parvec train --mode sharded`` with every sharded setting left to parvec, over ``--shards`` x ``--clients``
    x ``--seeds`` x ``--samples`` (1 epoch unless ``--epochs``): each run's exit status, loss and minibatch size;
    a run that stops with "training diverged" counts as diverged."""
    corpus = bench_words.prepare_corpus(ns.corpus, ns.work)
    runs = []
    for sample in ns.samples:
        for shards in ns.shards:
            for clients in ns.clients_list:
                for seed in ns.seeds:
                    report = ns.work / "defaults.json"
                    cmd = [sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(ns.work / "defaults.npy"),
                           "--cluster", f"local:{ns.threads}", "--mode", "sharded", "--shards", str(shards),
                           "--clients", str(clients), "--threads", "1", "--dim", str(ns.dim), "--window",
                           str(ns.window), "--negative", str(ns.negative), "--sample", str(sample), "--min-count",
                           str(ns.min_count), "--epochs", str(ns.epochs), "--seed", str(seed), "--report",
                           str(report), "--no-cache"]
                    report.unlink(missing_ok=True)
                    res = _run(cmd)
                    rep = json.loads(report.read_text()) if res["rc"] == 0 and report.exists() else {}
                    one = {"sample": sample, "shards": shards, "clients": clients, "seed": seed, "rc": res["rc"],
                           "diverged": "diverged" in res["output_tail"], "loss_per_epoch": rep.get("loss_per_epoch"),
                           "minibatch_words": rep.get("minibatch_words"), "update_cap": rep.get("update_cap"),
                           "words_per_sec": rep.get("raw_words_per_sec"), "seconds": res["seconds"],
                           "load_average": _load()}
                    if res["rc"] != 0:
                        one["output_tail"] = res["output_tail"][-400:]
                    runs.append(one)
                    print(f"sample {sample:g} S={shards} C={clients} seed {seed}: rc {one['rc']} loss "
                          f"{one['loss_per_epoch']} {'DIVERGED' if one['diverged'] else ''}", file=sys.stderr,
                          flush=True)
    lines = [f"Default sharded runs, {ns.epochs} epoch(s), dim {ns.dim}, window {ns.window}, negative {ns.negative}, "
             f"min_count {ns.min_count}, local:{ns.threads}, 1 thread per client. CPU: {_cpu()}.", "",
             "| sample | shards | clients | seed | minibatch words | update cap | exit | loss | words/s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in runs:
        loss = "diverged" if r["diverged"] else (f"{r['loss_per_epoch'][-1]:.3f}" if r["loss_per_epoch"] else "–")
        wps = f"{r['words_per_sec'] / 1e3:.0f}k" if r["words_per_sec"] else "–"
        lines.append(f"| {r['sample']:g} | {r['shards']} | {r['clients']} | {r['seed']} | {r['minibatch_words']} | "
                     f"{r['update_cap']} | {r['rc']} | {loss} | {wps} |")
    bad = [r for r in runs if r["rc"] != 0 or r["diverged"]]
    lines += ["", f"{len(runs) - len(bad)} of {len(runs)} runs trained; {len(bad)} diverged or failed."]
    return {"runs": runs, "table": "\n".join(lines)}


# --------------------------------------------------------------------------- memory
def memory(ns: argparse.Namespace) -> dict:
    from parvec.distributed.pipeline import parse_bytes

    one_cap = parse_bytes(ns.one_process_cap, "--one-process-cap")
    out_dir = ns.work / "zipf_out"
    out_dir.mkdir(parents=True, exist_ok=True)
    common = [str(ns.corpus), "--min-count", "1", "--dim", str(ns.dim), "--epochs", str(ns.epochs), "--sample",
              str(ns.sample), "--no-cache"]
    one = _run([sys.executable, "-m", "parvec", "train", *common, "-o", str(out_dir / "one.bin"), "--threads", "2"],
               limit_data=one_cap)
    print(f"one process capped at {ns.one_process_cap}: exit {one['rc']}: {one['output_tail'].strip()[-400:]}",
          file=sys.stderr, flush=True)
    report = out_dir / "sharded.json"
    sharded = _run([sys.executable, "-m", "parvec", "train", *common, "-o", str(out_dir / "sharded.bin"), "--cluster",
                    f"local:{ns.threads}", "--mode", "sharded", "--shards", str(ns.shards_one), "--clients",
                    str(ns.clients), "--threads", str(ns.client_threads), "--shard-memory", ns.shard_memory,
                    "--report", str(report)])
    print(sharded["output_tail"][-3000:], file=sys.stderr, flush=True)
    rep = json.loads(report.read_text()) if sharded["rc"] == 0 else None
    size = (out_dir / "sharded.bin").stat().st_size if (out_dir / "sharded.bin").exists() else None
    result = {"one_process": one, "sharded": sharded, "report": rep, "output_bytes": size,
              "one_process_cap_bytes": one_cap, "shard_memory_bytes": parse_bytes(ns.shard_memory, "--shard-memory"),
              "load_average_at_end": _load(), "cpu": _cpu()}
    if rep:
        v, d, s = rep["vocab_size"], ns.dim, ns.shards_one
        lines = [f"Zipf corpus {ns.corpus} ({rep['corpus_words']:,} tokens), vocabulary {v:,}, dim {d}: the model is "
                 f"{rep['model_bytes'] / 2**30:.2f} GiB. CPU: {_cpu()}.", "",
                 f"- one process capped at {ns.one_process_cap} (RLIMIT_DATA): exit {one['rc']} after "
                 f"{one['seconds']:.0f} s: `{one['output_tail'].strip().splitlines()[-1][:300]}`",
                 f"- {s} shards capped at {ns.shard_memory} each: exit {sharded['rc']}; trained "
                 f"{rep['words_trained']:,} words in {rep['training_seconds']:.0f} s "
                 f"({rep['raw_words_per_sec'] / 1e3:.0f}k words/s); read "
                 f"(count + encode) {rep['read_seconds']:.0f} s, export {rep['export_seconds']:.0f} s "
                 f"({size / 2**30:.2f} GiB word2vec binary)",
                 "", "| shard | columns' bytes 2·V·(d/S)·4 | peak RSS | overhead |", "| --- | --- | --- | --- |"]
        for k, (mb, peak) in enumerate(zip(rep["shard_model_bytes"], rep["shard_peak_memory_bytes"], strict=True)):
            lines.append(f"| {k} | {mb / 2**30:.2f} GiB | {peak / 2**30:.2f} GiB | {(peak - mb) / 2**20:.0f} MiB |")
        lines.append(f"\nDriver peak RSS {rep['peak_memory_bytes'] / 2**30:.2f} GiB (vocabulary and counts, no "
                     "vectors).")
        result["table"] = "\n".join(lines)
    return result


# --------------------------------------------------------------------------- the cost of a call
def calls(ns: argparse.Namespace) -> dict:
    """``sharded_calls.py`` (what one call costs a shard and its client besides the shard's kernels) with this
    tree's parvec (calls in inline parts) and ``--base``'s (one array each way), each in its own process, rounds
    interleaved; the medians per transport and client threads."""
    corpus = slice_corpus(ns.corpus, ns.tokens, ns.work)
    trees = {"this tree": REPO}
    if ns.base:
        trees[f"base {ns.base}"] = base_checkout(ns.base, ns.work)
    rows: list[dict] = []
    one: dict = {}
    for rnd in range(ns.rounds):
        for tree, src in trees.items():
            cmd = [sys.executable, str(Path(__file__).with_name("sharded_calls.py")), str(corpus), "--calls",
                   str(ns.calls), "--minibatch-words", str(ns.minibatch_words), "--dim", str(ns.dim), "--sample",
                   str(ns.sample), "--cache", str(ns.work / "cache"), "--client-counts", *map(str, ns.client_counts)]
            out = subprocess.run(cmd, capture_output=True, text=True, env=harness.child_env(src / "src"))
            if out.returncode != 0:
                raise RuntimeError(f"sharded_calls.py ({tree}) failed: {out.stderr[-3000:]}")
            one = json.loads(out.stdout.strip().splitlines()[-1])
            for r in one["rows"]:
                rows.append(dict(r, tree=tree, round=rnd))
                print(f"round {rnd} {tree} {r['transport']} x {r['clients']}: {r['wall_ms_per_call']:.2f} ms/call, "
                      f"shard step {r['shard_step_ms']:.2f} + other {r['shard_other_ms']:.2f} ms, client "
                      f"{r['client_ms']:.2f} ms", file=sys.stderr, flush=True)
    lines = [f"One shard of {one['columns']} columns ({one['rows_of_shard']:,} rows), minibatches of "
             f"{ns.minibatch_words} input words ({one['inputs_per_call']:.0f} on average, sample {ns.sample}), float16 "
             f"wire, negatives per window; medians of {ns.rounds} interleaved rounds; CPU: {_cpu()}", "",
             "| transport | client threads | wall ms per call | shard: step (unpack + kernels) ms CPU | "
             "shard: the rest ms CPU | client ms CPU (pack + call) | (rest + client) / step |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for transport in dict.fromkeys(r["transport"] for r in rows):
        for clients in ns.client_counts:
            mine = [r for r in rows if r["transport"] == transport and r["clients"] == clients]
            med = {k: statistics.median(r[k] for r in mine) for k in ("wall_ms_per_call", "shard_step_ms",
                                                                      "shard_other_ms", "client_ms")}
            lines.append(f"| {transport} | {clients} | {med['wall_ms_per_call']:.2f} | {med['shard_step_ms']:.2f} | "
                         f"{med['shard_other_ms']:.2f} | {med['client_ms']:.2f} | "
                         f"{(med['shard_other_ms'] + med['client_ms']) / med['shard_step_ms']:.2f} |")
    return {"runs": rows, "table": "\n".join(lines)}


# --------------------------------------------------------------------------- speed
TWO_SHARDS = ["--cluster", "local:2", "--mode", "sharded", "--shards", "2"]


def _one_shard(clients: int, threads: int, calls: str = "split") -> list[str]:
    """One shard, ``clients`` x ``threads``, float16 on the wire, ``calls`` (split: partial dot products out and
    coefficients back; fused: the shard trains each minibatch whole, the default with one shard)."""
    return ["--cluster", "local:2", "--mode", "sharded", "--shards", "1", "--clients", str(clients), "--threads",
            str(threads), "--wire-floats", "float16", "--shard-calls", calls]


SPEED_SYSTEMS: dict[str, list[str]] = {
    "one process, 2 threads": ["--threads", "2"],
    # "the default" and "2 x" systems: 2 shards, given explicitly (the default on local:N is now 1 shard), so that
    # each name stays what it measured
    "sharded, the default (2 shards, 2 clients x 1 thread since 57d5d15; 2 x 2 threads before)": [
        *TWO_SHARDS],
    "sharded 2 x (2 clients x 2 threads)": [*TWO_SHARDS, "--clients", "2",
                                           "--threads", "2"],
    "sharded 2 x (1 client x 1 thread)": [*TWO_SHARDS, "--clients", "1",
                                         "--threads", "1"],
    "sharded 1 x (2 clients x 1 thread)": ["--cluster", "local:2", "--mode", "sharded", "--shards", "1",
                                          "--clients", "2", "--threads", "1", "--shard-calls", "split"],
    # negatives per window (kernels/sharded.py): an input word's context words share its negatives
    "sharded, the default, negatives per window": [*TWO_SHARDS, "--negatives-per",
                                                   "window"],
    "sharded 2 x (2 clients x 2 threads), negatives per window": [
        *TWO_SHARDS, "--clients", "2", "--threads", "2", "--negatives-per", "window"],
    "sharded 2 x (1 client x 1 thread), negatives per window": [
        *TWO_SHARDS, "--clients", "1", "--threads", "1", "--negatives-per", "window"],
    # float16 on the wire (wire.to_wire): half the bytes of the dot products and coefficients
    "sharded, the default, float16 wire": [*TWO_SHARDS, "--wire-floats", "float16"],
    "sharded, the default, negatives per window, float16 wire": [
        *TWO_SHARDS, "--negatives-per", "window", "--wire-floats", "float16"],
    "sharded 2 x (1 client x 1 thread), negatives per window, float16 wire": [
        *TWO_SHARDS, "--clients", "1", "--threads", "1", "--negatives-per", "window",
        "--wire-floats", "float16"],
    # one shard on one machine: the memory is shared anyway, and every row is visited once per call, not S times
    "sharded 1 x (2 clients x 1 thread), float16 wire": _one_shard(2, 1),
    # one client thread: the same words in flight in calls twice as large, half as many calls
    "sharded 1 x (1 client x 1 thread), float16 wire": _one_shard(1, 1),
    # one client process with two threads: two units in flight (the same words in flight as 2 clients x 1 thread),
    # so the shard and the client can both be busy, without a second client process
    "sharded 1 x (1 client x 2 threads), float16 wire": _one_shard(1, 2),
    "sharded 1 x (1 client x 3 threads), float16 wire": _one_shard(1, 3),
    # fused calls (the default with one shard): the shard holds every column, so it trains each
    # minibatch whole in one call (hogbatch's batches); no partial sums out, no coefficients back
    "sharded 1 x (1 client x 2 threads), fused calls": _one_shard(1, 2, "fused"),
    "sharded 1 x (2 clients x 1 thread), fused calls": _one_shard(2, 1, "fused"),
    "sharded 1 x (1 client x 3 threads), fused calls": _one_shard(1, 3, "fused"),
    # nothing but --cluster local:2 --mode sharded: what a user gets
    "sharded 1 x (2 clients x 1 thread), local:2's default": ["--cluster", "local:2", "--mode", "sharded"],
}


# run at --base too: the default of local:N (1 shard, fused calls) and the 2-shard rows with one client thread
BASE_TOO = ("sharded 1 x (2 clients x 1 thread), local:2's default", "sharded 2 x (1 client x 1 thread)")


def _speed_one(name: str, src: Path, corpus: Path, ns: argparse.Namespace) -> dict:
    """One ``parvec train`` of ``name`` with the code under ``src``; its report's figures."""
    with tempfile.TemporaryDirectory(dir=ns.work) as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(Path(tmp) / "v.npy"), "--report",
               str(report), "--no-progress", "--no-cache", "--epochs", "1", "--sample", str(ns.sample), "--dim",
               str(ns.dim), "--seed", "1", *SPEED_SYSTEMS[name]]
        out = subprocess.run(cmd, capture_output=True, text=True, env=harness.child_env(src / "src"))
        if out.returncode != 0:
            raise RuntimeError(f"{name} ({src}) failed: {out.stderr[-2000:]}")
        rep = json.loads(report.read_text())
    keys = ("words_per_sec", "training_seconds", "cpu_seconds_per_word", "loss_per_epoch", "minibatch_words",
            "shard_kernel_seconds", "shard_cpu_seconds", "client_cpu_seconds", "cpu_seconds_by_process")
    return {k: rep.get(k) for k in keys}


def speed(ns: argparse.Namespace) -> dict:
    """Interleaved rounds: one process beside the sharded configurations, at this tree and at ``--base``."""
    corpus = slice_corpus(ns.corpus, ns.tokens, ns.work)
    trees = {"this tree": REPO}
    if ns.base:
        trees[f"base {ns.base}"] = base_checkout(ns.base, ns.work)
    runs: list[dict] = []
    for rnd in range(ns.rounds):
        for tree, src in trees.items():
            for name in ns.speed_systems:
                if tree != "this tree" and not (name.startswith("sharded, the default (") or name in BASE_TOO):
                    continue  # the base: its defaults only (2 shards given, and local:N's own)
                one = {"round": rnd, "tree": tree, "system": name, **_speed_one(name, src, corpus, ns)}
                runs.append(one)
                print(f"round {rnd} {tree} {name}: {one['words_per_sec'] / 1e6:.3f}M words/s", file=sys.stderr,
                      flush=True)
    one_process = statistics.median(r["words_per_sec"] for r in runs if r["system"] == "one process, 2 threads")
    lines = [f"{ns.tokens:,} tokens, 1 epoch, dim {ns.dim}, sample {ns.sample}; medians of {ns.rounds} interleaved "
             f"rounds; CPU: {_cpu()}", "",
             "| tree | system | minibatch words | words/s | x one process | CPU s per 1M words | loss |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for tree in trees:
        for name in ns.speed_systems:
            mine = [r for r in runs if r["tree"] == tree and r["system"] == name]
            if not mine:
                continue
            wps = statistics.median(r["words_per_sec"] for r in mine)
            cpu = statistics.median(r["cpu_seconds_per_word"] for r in mine) * 1e6
            lines.append(f"| {tree} | {name} | {mine[0]['minibatch_words'] or '-'} | {wps / 1e6:.3f}M | "
                         f"{wps / one_process:.3f}x | {cpu:.2f} | {mine[0]['loss_per_epoch'][0]:.4f} |")
    return {"runs": runs, "table": "\n".join(lines)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("network", "quality", "memory", "minibatch", "network-one", "speed", "defaults",
                                     "staleness", "calls"))
    ap.add_argument("--minibatch-sizes", type=int, nargs="+", default=[512, 4096, 32768],
                    help="staleness: input words per minibatch (x --clients threads in flight)")
    ap.add_argument("--caps", type=int, nargs="+", default=[0, 16], help="staleness: update caps (0: summed)")
    ap.add_argument("--no-evaluate", dest="evaluate", action="store_false", help="staleness: the loss only (a Zipf "
                    "corpus has no meaning to score)")
    ap.add_argument("--samples", type=float, nargs="+", default=[1e-3, 1e-4], help="defaults: sample values")
    ap.add_argument("--clients-list", type=int, nargs="+", default=[1, 2], help="defaults: client counts (1 2)")
    ap.add_argument("--client-counts", type=int, nargs="+", default=[1, 2, 8, 64],
                    help="calls: client threads sending at once (1 2 8 64)")
    ap.add_argument("--calls", type=int, default=400, help="calls: calls per measurement (400)")
    ap.add_argument("--rounds", type=int, default=3, help="speed: interleaved rounds (3)")
    ap.add_argument("--speed-systems", nargs="+", choices=list(SPEED_SYSTEMS), default=list(SPEED_SYSTEMS),
                    metavar="SYSTEM", help="speed: the systems to run (default: all of SPEED_SYSTEMS)")
    ap.add_argument("--negatives-per", choices=("pair", "window"), default="pair", help="quality: sharded runs' "
                    "--negatives-per (pair)")
    ap.add_argument("--wire-floats", choices=("float32", "float16"), default="float16", help="quality: sharded runs' "
                    "--wire-floats (float16, parvec's default)")
    ap.add_argument("--shard-calls", choices=("fused", "split"), default="split", help="quality: sharded runs' "
                    "--shard-calls (split; fused: one shard only)")
    ap.add_argument("--base", help="speed: also the default sharded run of this git revision (a worktree); calls: "
                    "its calls too")
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024, 4096], help="minibatch: input words")
    ap.add_argument("--peers", nargs="*", default=["hogbatch", "classic"], help="minibatch: one-process peers")
    ap.add_argument("--minibatch-corpus", type=Path, default=DEMO_CORPUS)
    ap.add_argument("--dims", type=int, nargs="+", default=[100, 300, 1000])
    ap.add_argument("--shards", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--shards-one", type=int, default=2, help=argparse.SUPPRESS)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--dedup", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--corpus-file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--tokens", type=int, default=1_000_000, help="network: tokens trained (1,000,000)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--systems", nargs="+", default=["sharded", "classic", "hogbatch"])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="one-process threads; local:N for sharded (2)")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--minibatch-formation", choices=("interleaved", "contiguous"), default="interleaved",
                    help="quality: how clients form minibatches (interleaved, parvec's default)")
    ap.add_argument("--client-threads", type=int, default=1,
                    help="threads per client (1: with 2 clients x 256 words, 512 words in flight, the default rule)")
    ap.add_argument("--minibatch-words", type=int, default=256)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--negative", type=int, default=5)
    ap.add_argument("--sample", type=float, default=1e-4)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--one-process-cap", default="6G")
    ap.add_argument("--shard-memory", default="3G")
    ap.add_argument("--corpus", type=Path, default=bench_words.DEFAULT_CORPUS)
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "parvec-bench")
    ap.add_argument("--out", type=Path)
    ns = ap.parse_args()
    ns.work.mkdir(parents=True, exist_ok=True)
    if ns.what == "network-one":
        print(json.dumps(network_one(ns)))
        return
    if ns.what == "memory":
        ns.shards_one = ns.shards[-1]
        if ns.dim == 100 and "--dim" not in sys.argv:
            ns.dim = 200
        if ns.epochs == 5 and "--epochs" not in sys.argv:
            ns.epochs = 1
        if ns.sample == 1e-4 and "--sample" not in sys.argv:
            ns.sample = 1e-3
    if ns.what == "quality" and "--shards-one" not in sys.argv:  # --shards-one, when given, wins
        ns.shards_one = 2 if ns.shards == [2, 4] else ns.shards[0]
    if ns.what == "minibatch" and "--seeds" not in sys.argv:
        ns.seeds = [1]
    if ns.what == "staleness":
        if "--seeds" not in sys.argv:
            ns.seeds = [1]
        if "--epochs" not in sys.argv:
            ns.epochs = 1
        if "--samples" not in sys.argv:
            ns.samples = [1e-4, 1e-3]
    if ns.what == "defaults":
        if "--seeds" not in sys.argv:
            ns.seeds = [1, 2, 3, 4, 5]
        if "--shards" not in sys.argv:
            ns.shards = [1, 2]
        if "--epochs" not in sys.argv:
            ns.epochs = 1
    if ns.what == "speed" and "--tokens" not in sys.argv:
        ns.tokens = 4_000_000
    if ns.what == "calls" and "--tokens" not in sys.argv:
        ns.tokens = 4_000_000
    if ns.what == "calls" and "--minibatch-words" not in sys.argv:
        ns.minibatch_words = 2048
    result = {"network": network, "quality": quality, "memory": memory, "minibatch": minibatch,
              "speed": speed, "defaults": defaults, "staleness": staleness, "calls": calls}[ns.what](ns)
    print(result.get("table", ""))
    if ns.out:
        harness.write_json(ns.out, f"bench_sharded {ns.what}", result)


if __name__ == "__main__":
    main()
