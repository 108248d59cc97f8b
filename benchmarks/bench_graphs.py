"""Graph benchmark: parvec node2vec end to end vs PecanPy (SparseOTF walks) + gensim Word2Vec and GRAPE, one run.

For every graph, (p, q) setting and thread count, each system runs in its own subprocess, so peak
memory (``VmHWM`` from /proc, numpy/numba allocations included, which tracemalloc misses; reset after
reading, so reading and walks + training get a peak each) is per system:

* ``parvec``: ``read_graph`` -> ``Node2Vec.fit_vectors`` (walks in numba, streamed into parvec's
  trainer with ``--algo``);
* ``pecanpy``: PecanPy's ``SparseOTF`` (``read_edg``, ``simulate_walks``; lists of node-ID strings)
  -> gensim ``Word2Vec(sg=1, negative=5, min_count=0)`` as ``pecanpy.embed`` does it.

Same settings for both: dim 128, 80 nodes per walk (PecanPy's ``walk_length`` counts steps, so it
gets 79), 10 walks per node, window 10, 1 epoch, alpha 0.025, same seed, and ``--sample`` (default 0,
parvec's graph default; PecanPy's own is gensim's 1e-3, which thins only 2-3% of the tokens of these
graphs: pass ``--sample 1e-3`` to run both that way).
JIT compilation is measured apart (parvec: loading its cached kernels on a tiny graph, not in
``walks``; PecanPy: a 1-step walk pass). PecanPy compiles again on *every* ``simulate_walks`` call
(new closures each time), so its ``walks`` includes one compilation, as for any PecanPy user; a
second 1-step pass measures that per-call cost (``jit_repeat_s``) for the "JIT excluded" ratio.
Quality: micro/macro-F1 of one-vs-rest logistic regression with 50% training nodes (top-k labels,
mean over ``--eval-repeats`` seeded splits), identical code for both; evaluation runs after the
memory reading.

    python benchmarks/bench_graphs.py --graphs blogcatalog ppi cora --threads 2 1 \\
        --pq 1,1 0.25,0.25 --out bench_out/graphs.json
    python benchmarks/bench_graphs.py --graphs cora --threads 2 --num-walks 2   # quick look
    python benchmarks/bench_graphs.py --read-only --graphs blogcatalog ppi --repeats 5

``--own-defaults`` runs every system at its own defaults instead (only p, q, the threads and the seed given):
parvec's ``Node2Vec`` (those of ``parvec node2vec``) with each of ``--seeds`` (default 1 2 3), the ``pecanpy``
command's settings + gensim as ``pecanpy`` calls it, and GRAPE's ``Node2VecSkipGramEnsmallen`` (Rust; 100
dimensions, 30 epochs, walks of 128, 10 per node, window 5, 10 negatives), the peers once each. Its table gives
the time of walks + training (wall and CPU seconds; on a shared machine the CPU figure is the one to compare) as
mean ± standard deviation over the runs and relative to GRAPE's, and micro/macro-F1. PecanPy and GRAPE are
optional: one that does not import is left out with a note. Their dependencies need numpy < 2, so they may live
in their own virtual environment, named with ``--peer-python``; every worker saves its vectors and this process
scores them all with the same code:

    python -m venv peers && peers/bin/pip install "numpy<2" grape pecanpy gensim
    python benchmarks/bench_graphs.py --own-defaults --graphs blogcatalog ppi --pq 1,1 --threads 2 \
        --eval-repeats 5 --peer-python peers/bin/python --out bench_out/graphs_defaults.json

``--read-only`` times only the edge-list readers, in this process, the file in the OS cache (one untimed
read first): parvec's ``read_graph`` with string IDs (the default) and with ``implicit_ids=True`` (the
all-numpy integer path), against networkx's ``read_edgelist`` and PecanPy's ``SparseOTF.read_edg`` (each
when installed); wall-clock and CPU seconds (the CPU figure is the one to read on a shared machine); medians
over ``--repeats``, with the machine's load average.  (This is where the edge-list reading speed is claimed;
the tests only check what is read.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

DATA = harness.SHARED_DATA / "graphs"
GRAPHS = {
    "blogcatalog": ("blogcatalog/blogcatalog.edgelist", "blogcatalog/blogcatalog.labels"),
    "ppi": ("ppi/ppi.edgelist", "ppi/ppi.labels"),
    "cora": ("cora/cora.edgelist", "cora/cora.labels"),
    "karate": ("karate/karate.edgelist", "karate/karate.labels"),
}


def _status_mb(field: str) -> float | None:
    """A size field of /proc/self/status in MB (None where unavailable)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _rss_mb() -> float:
    """Current resident set size (MB) from /proc (0 where unavailable)."""
    return _status_mb("VmRSS") or 0.0


def _peak_mb() -> float:
    """Peak RSS (MB) since the start or the last :func:`_reset_peak`."""
    peak = _status_mb("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _reset_peak() -> float:
    """Restart the peak-RSS counter (Linux >= 4.0: clear_refs 5); returns the peak before the reset."""
    before = _peak_mb()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return before


def _f1(vectors, keys: list[str], labels_path: Path, repeats: int, workers: int) -> dict:
    from parvec.graph.evaluation import align_labels, node_classification, read_labels

    labels = read_labels(labels_path)
    rows, y = align_labels(keys, labels)
    r = node_classification(vectors[rows], y, train_fractions=[0.5], repeats=repeats, seed=0, workers=workers)
    res = r["results"][0]
    return {k: res[k] for k in ("micro_f1_mean", "micro_f1_std", "macro_f1_mean", "macro_f1_std")}


def run_parvec(a: argparse.Namespace, edges: Path) -> tuple[dict, object, list[str]]:
    from parvec.graph.graph_io import Graph, read_graph
    from parvec.graph.node2vec import Node2Vec

    out: dict = {}
    t = time.perf_counter()
    tiny = Graph.from_edges([0, 1, 2], [1, 2, 0], n_nodes=3)
    # load the cached numba kernels (walks, both orders; training) before the clock starts
    Node2Vec(tiny, dimensions=8, walk_length=4, num_walks=1, p=0.5, q=2.0, workers=a.threads, algo=a.algo,
             seed=a.seed).fit_vectors()  # fmt: skip
    out["jit_s"] = time.perf_counter() - t
    out["rss_after_import_mb"] = _rss_mb()
    t = time.perf_counter()
    graph = read_graph(edges)
    out["read_s"] = time.perf_counter() - t
    out["read_peak_rss_mb"] = _reset_peak()  # from here on the peak is that of walks + training
    if a.own_defaults:  # parvec's defaults (those of `parvec node2vec`), only p, q, threads and the seed given
        model = Node2Vec(graph, p=a.p, q=a.q, workers=a.threads, seed=a.seed)
    else:
        model = Node2Vec(graph, dimensions=a.dim, walk_length=a.walk_length, num_walks=a.num_walks, window=a.window,
                         p=a.p, q=a.q, epochs=a.epochs, workers=a.threads, seed=a.seed, algo=a.algo,
                         sample=a.sample, cache_walks_mb=a.cache_walks_mb)  # fmt: skip
    t, c = time.perf_counter(), time.process_time()
    vectors = model.fit_vectors()
    out["walk_train_s"], out["walk_train_cpu_s"] = time.perf_counter() - t, time.process_time() - c
    spec, cfg = model.spec, model.config
    out["settings"] = {"dimensions": cfg.dim, "walk_length": spec.walk_length, "num_walks": spec.num_walks,
                       "window": cfg.window, "epochs": cfg.epochs, "negative": cfg.negative,
                       "ns_exponent": cfg.ns_exponent, "sample": cfg.sample,
                       "alpha": cfg.alpha}  # fmt: skip
    out["walks_s"] = model.timings["walks"]
    out["train_s"] = model.timings["train"]
    out["walks_cached"] = bool(model.timings["walks_cached"])
    out["tokens"] = model.n_tokens
    out["train_words_per_s"] = model.train_stats.words_per_sec
    out["algo"] = model.config.algo
    # The memory bound: 2 x (CSR graph + both weight matrices + one batch of walks).
    csr = graph.indptr.nbytes + graph.indices.nbytes + (graph.data.nbytes if graph.data is not None else 0)
    spec, dim = model.spec, model.config.dim
    batch = min(model.batch_walks, graph.n_nodes * spec.num_walks) * (spec.walk_length * 4 + 8)
    out["memory_bound_mb"] = 2 * (csr + 2 * graph.n_nodes * dim * 4 + batch) / 2**20
    return out, vectors, graph.node_ids


def run_pecanpy(a: argparse.Namespace, edges: Path) -> tuple[dict, object, list[str]]:
    import logging

    import numba
    from gensim.models import Word2Vec
    from pecanpy.pecanpy import SparseOTF

    logging.getLogger("gensim").setLevel(logging.WARNING)
    numba.set_num_threads(a.threads)  # PecanPy's walks use numba's prange; `workers` only reaches gensim
    out: dict = {"rss_after_import_mb": _rss_mb()}
    t = time.perf_counter()
    g = SparseOTF(p=a.p, q=a.q, workers=a.threads, verbose=False, random_state=a.seed)
    g.read_edg(str(edges), weighted=False, directed=False, delimiter=" ")
    out["read_s"] = time.perf_counter() - t
    out["read_peak_rss_mb"] = _reset_peak()  # from here on the peak is that of walks + training
    t = time.perf_counter()
    g.simulate_walks(num_walks=1, walk_length=2)  # first compilation
    out["jit_s"] = time.perf_counter() - t
    # PecanPy builds new closures on every simulate_walks call, so every call compiles again; this
    # second tiny call measures that per-call cost, to estimate walking time without it.
    t = time.perf_counter()
    g.simulate_walks(num_walks=1, walk_length=2)
    out["jit_repeat_s"] = time.perf_counter() - t
    # Own defaults: the `pecanpy` command's (128 dimensions, 80-step walks, 10 per node, window 10, 1 epoch;
    # gensim's own negative 5 and sample 1e-3), as pecanpy.cli.learn_embeddings calls gensim.
    dim, walk_length, num_walks, window, epochs, sample = (
        (128, 80, 10, 10, 1, 1e-3) if a.own_defaults else (a.dim, a.walk_length - 1, a.num_walks, a.window, a.epochs,
                                                            a.sample))  # fmt: skip
    t, c, c0 = time.perf_counter(), time.process_time(), time.perf_counter()
    walks = g.simulate_walks(num_walks=num_walks, walk_length=walk_length)  # walk_length steps: + 1 nodes
    out["walks_s"] = time.perf_counter() - t
    out["tokens"] = sum(len(w) for w in walks)
    t = time.perf_counter()
    w2v = Word2Vec(vector_size=dim, window=window, min_count=0, sg=1, negative=5, workers=a.threads,
                   epochs=epochs, seed=a.seed, sample=sample)  # fmt: skip
    w2v.build_vocab(walks)
    out["vocab_s"] = time.perf_counter() - t
    t2 = time.perf_counter()
    w2v.train(walks, total_examples=len(walks), epochs=epochs)
    out["train_only_s"] = time.perf_counter() - t2
    out["train_s"] = time.perf_counter() - t  # vocabulary + training, parvec's train_s has no separate vocab
    out["walk_train_s"], out["walk_train_cpu_s"] = time.perf_counter() - c0, time.process_time() - c
    out["train_words_per_s"] = out["tokens"] * epochs / out["train_only_s"]
    out["settings"] = {"dimensions": dim, "walk_length": walk_length + 1, "num_walks": num_walks, "window": window,
                       "epochs": epochs, "negative": 5, "sample": sample}
    out["algo"] = "gensim"
    return out, w2v.wv[g.nodes], list(g.nodes)


def run_grape(a: argparse.Namespace, edges: Path) -> tuple[dict, object, list[str]]:
    """GRAPE's node2vec skip-gram (``Node2VecSkipGramEnsmallen``, Rust): its own defaults with ``--own-defaults``
    (100 dimensions, 30 epochs, walks of 128, 10 per node, window 5, 10 negatives, at most 100 neighbours
    sampled per step), else the shared settings; p and q as given (its ``return_weight`` is 1/p,
    ``explore_weight`` 1/q; its own defaults are 0.25 and 4). Walks and training are one call: ``walks_s`` is
    left empty and ``train_s`` holds both."""
    from embiggen.embedders.ensmallen_embedders.node2vec_skipgram import Node2VecSkipGramEnsmallen
    from grape import Graph

    out: dict = {"rss_after_import_mb": _rss_mb(), "jit_s": None, "walks_s": None}
    t = time.perf_counter()
    g = Graph.from_csv(edge_path=str(edges), directed=False, sources_column_number=0, destinations_column_number=1,
                       edge_list_separator=" ", edge_list_header=False, verbose=False, name=edges.stem)
    out["read_s"] = time.perf_counter() - t
    out["read_peak_rss_mb"] = _reset_peak()
    shared = {} if a.own_defaults else {
        "embedding_size": a.dim, "epochs": a.epochs, "walk_length": a.walk_length, "iterations": a.num_walks,
        "window_size": a.window, "number_of_negative_samples": 5}
    model = Node2VecSkipGramEnsmallen(return_weight=1 / a.p, explore_weight=1 / a.q, random_state=a.seed,
                                      verbose=False, **shared)  # fmt: skip
    t, c = time.perf_counter(), time.process_time()
    embedding = model.fit_transform(g).get_node_embedding_from_index(0)
    out["walk_train_s"], out["walk_train_cpu_s"] = time.perf_counter() - t, time.process_time() - c
    out["train_s"] = out["walk_train_s"]
    out["algo"] = "grape"
    out["settings"] = {k: v for k, v in model.parameters().items() if isinstance(v, int | float | str | None)}
    return out, embedding.to_numpy(), [str(k) for k in embedding.index]


def read_speed(a: argparse.Namespace) -> int:
    """``--read-only``: median read times of parvec's two edge-list paths and PecanPy's reader."""
    import statistics

    from parvec.graph.graph_io import read_graph

    readers = {"parvec (string IDs)": lambda path: read_graph(path),
               "parvec (implicit_ids=True)": lambda path: read_graph(path, implicit_ids=True)}
    try:
        import networkx

        readers["networkx read_edgelist"] = lambda path: networkx.read_edgelist(path)
    except ImportError:
        print("networkx is not installed: its reader is left out", file=sys.stderr)
    try:
        from pecanpy.pecanpy import SparseOTF

        def pecanpy_read(path: Path) -> None:
            SparseOTF(p=1, q=1, workers=1, verbose=False).read_edg(str(path), weighted=False, directed=False,
                                                                  delimiter=" ")

        readers["PecanPy read_edg"] = pecanpy_read
    except ImportError:
        print("PecanPy is not installed: its reader is left out", file=sys.stderr)
    rows, results = [], []
    for graph in a.graphs:
        path = Path(a.data) / GRAPHS[graph][0]
        times: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        for name, read in readers.items():
            first = read(path)  # untimed: the OS cache, imports
            if hasattr(first, "n_nodes"):
                print(f"{graph}: {name}: {first.n_nodes:,} nodes, {first.n_edges:,} edges", file=sys.stderr)
            elif first is not None:  # networkx
                print(f"{graph}: {name}: {first.number_of_nodes():,} nodes, {first.number_of_edges():,} edges",
                      file=sys.stderr)
            for _ in range(a.repeats):  # interleaving would mix caches; each reader runs its repeats in a row
                t, c = time.perf_counter(), time.process_time()
                read(path)
                times.setdefault(name, []).append(time.perf_counter() - t)
                cpu.setdefault(name, []).append(time.process_time() - c)
        base = statistics.median(times["parvec (string IDs)"])
        base_cpu = statistics.median(cpu["parvec (string IDs)"])
        for name, ts in times.items():
            med, med_cpu = statistics.median(ts), statistics.median(cpu[name])
            rows.append(f"| {graph} | {name} | {med:.3f} | {min(ts):.3f} | {max(ts):.3f} | {med / base:.2f} | "
                        f"{med_cpu:.3f} | {med_cpu / base_cpu:.2f} |")
            results.append({"graph": graph, "reader": name, "seconds": ts, "cpu_seconds": cpu[name]})
    load = os.getloadavg()
    print(f"edge-list reading, {a.repeats} repeats; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
          f"{harness.machine_line(harness.machine())}")
    print("| graph | reader | median s | min s | max s | time / parvec string IDs | CPU s (median) | CPU / parvec "
          "string IDs |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))
    if a.out:
        harness.write_json(a.out, "bench_graphs", {"read_only": True, "results": results})
    return 0


def worker(a: argparse.Namespace) -> None:
    """Run one system once in this process and print one JSON line."""
    edges_rel, labels_rel = GRAPHS[a.graph]
    edges, labels = Path(a.data) / edges_rel, Path(a.data) / labels_rel
    start = time.perf_counter()
    run = {"parvec": run_parvec, "pecanpy": run_pecanpy, "grape": run_grape}[a.system]
    out, vectors, keys = run(a, edges)
    out["end_to_end_s"] = out["read_s"] + out["walk_train_s"]
    out["wall_s"] = time.perf_counter() - start
    # Peaks before evaluation, which is not part of either system.  The bar is on walks +
    # training: their peak (graph in memory) over the interpreter with its libraries and kernels loaded.
    out["walk_train_peak_rss_mb"] = _peak_mb()
    out["peak_rss_mb"] = max(out["read_peak_rss_mb"], out["walk_train_peak_rss_mb"])
    out["added_rss_mb"] = out["walk_train_peak_rss_mb"] - out["rss_after_import_mb"]
    out["read_added_rss_mb"] = out["read_peak_rss_mb"] - out["rss_after_import_mb"]
    if a.vectors_out:  # a peer's interpreter may lack parvec: the parent scores the saved vectors
        import numpy as np

        np.save(a.vectors_out, np.asarray(vectors, dtype=np.float32))
        Path(a.vectors_out + ".keys.txt").write_text("".join(f"{k}\n" for k in keys), encoding="utf-8")
    else:
        out.update(_f1(vectors, keys, labels, a.eval_repeats, 1))
    out.update({"system": a.system, "graph": a.graph, "p": a.p, "q": a.q, "threads": a.threads,
                "repeat": a.repeat, "sample": a.sample, "seed": a.seed})  # fmt: skip
    print("RESULT " + json.dumps(out), flush=True)


def _python(a: argparse.Namespace, system: str) -> str:
    """The interpreter of a system's worker: ``--peer-python`` for the peers when given, else this one."""
    return a.peer_python if system != "parvec" and a.peer_python else sys.executable


PEER_IMPORTS = {"pecanpy": ("pecanpy.pecanpy", "gensim"), "grape": ("grape", "embiggen")}


def available(a: argparse.Namespace, systems: list[str]) -> list[str]:
    """``systems`` less the peers that do not import in their interpreter (each left out with a note on stderr)."""
    kept = []
    for system in systems:
        mods = PEER_IMPORTS.get(system)
        if mods:
            probe = subprocess.run([_python(a, system), "-c", "import " + ", ".join(mods)], capture_output=True,
                                   text=True)  # fmt: skip
            if probe.returncode != 0:
                why = (probe.stderr.strip().splitlines() or ["?"])[-1]
                print(f"note: {system} is left out: it does not import in {_python(a, system)} ({why}); "
                      f"pip install {system} (or give --peer-python)", file=sys.stderr)  # fmt: skip
                continue
        kept.append(system)
    return kept


def _child_args(a: argparse.Namespace, system: str, graph: str, p: float, q: float, threads: int, rep: int):
    return [_python(a, system), str(Path(__file__).resolve()), "--worker", "--system", system, "--graph", graph,
            "--p", str(p), "--q", str(q), "--threads", str(threads), "--repeat", str(rep), "--dim", str(a.dim),
            "--walk-length", str(a.walk_length), "--num-walks", str(a.num_walks), "--window", str(a.window),
            "--epochs", str(a.epochs), "--seed", str(a.seed), "--algo", a.algo, "--data", a.data,
            "--sample", str(a.sample),
            "--eval-repeats", str(a.eval_repeats)] + (
            ["--cache-walks-mb", str(a.cache_walks_mb)] if a.cache_walks_mb is not None else []) + (
            ["--own-defaults"] if a.own_defaults else [])  # fmt: skip


def _measure(a: argparse.Namespace, cmd: list[str], system: str, graph: str, p: float, q: float, threads: int,
             env: dict[str, str]) -> dict | None:
    """Run one worker; score the vectors it saved (micro/macro-F1, here, the same code for every system)."""
    import numpy as np

    vectors_out = cmd[cmd.index("--vectors-out") + 1]
    t = time.perf_counter()
    env = dict(env, RAYON_NUM_THREADS=str(threads))  # GRAPE's thread pool (Rust's rayon)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.timeout)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        print(f"FAILED {system} {graph} p={p} q={q} t={threads}:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    r = json.loads(line[len("RESULT ") :])
    keys = Path(vectors_out + ".keys.txt").read_text(encoding="utf-8").splitlines()
    r.update(_f1(np.load(vectors_out), keys, Path(a.data) / GRAPHS[graph][1], a.eval_repeats, 1))
    walks = "–" if r.get("walks_s") is None else f"{r['walks_s']:.2f}s"
    print(f"{graph} p={p:g} q={q:g} threads={threads} {system} {r['algo']} seed {r['seed']}: read {r['read_s']:.2f}s "
          f"walks {walks} walks+train {r['walk_train_s']:.1f}s (CPU {r['walk_train_cpu_s']:.1f}s) peak "
          f"{r['peak_rss_mb']:.0f}MB micro-F1 {r['micro_f1_mean']:.3f} macro-F1 {r['macro_f1_mean']:.3f} "
          f"({time.perf_counter() - t:.0f}s)", file=sys.stderr, flush=True)  # fmt: skip
    return r


def table_own_defaults(results: list[dict]) -> str:
    """``--own-defaults``: per graph and system, the mean ± standard deviation over runs (parvec's seeds) of the
    walks + training seconds (wall and CPU) and the F1 scores, and the time relative to GRAPE's."""
    import statistics

    def ms(vals: list[float], digits: int) -> str:
        sd = f" ± {statistics.stdev(vals):.{digits}f}" if len(vals) > 1 else ""
        return f"{statistics.mean(vals):.{digits}f}{sd}"

    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault((r["graph"], r["p"], r["q"], r["threads"], r["system"]), []).append(r)
    lines = ["| graph | p, q | threads | system (settings) | runs | walks + training s | CPU s | time / GRAPE's "
             "(wall, CPU) | micro-F1 | macro-F1 |",
             "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    order = {"grape": 0, "pecanpy": 1, "parvec": 2}
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], -k[3], order.get(k[4], 9))):
        rs = groups[key]
        graph, p, q, threads, system = key
        st = rs[0].get("settings") or {}
        short = {"dimensions": "d", "embedding_size": "d", "walk_length": "walk", "num_walks": "walks/node",
                 "iterations": "walks/node", "window": "window", "window_size": "window", "epochs": "epochs",
                 "negative": "neg", "number_of_negative_samples": "neg", "ns_exponent": "ns"}  # fmt: skip
        desc = ", ".join(f"{short[k]} {v}" for k, v in st.items() if k in short)
        grape = groups.get((graph, p, q, threads, "grape"))
        wall = [r["walk_train_s"] for r in rs]
        cpu = [r["walk_train_cpu_s"] for r in rs]
        rel = "–"
        if grape:
            rel = (f"{statistics.mean(wall) / statistics.mean(g['walk_train_s'] for g in grape):.3f}, "
                   f"{statistics.mean(cpu) / statistics.mean(g['walk_train_cpu_s'] for g in grape):.3f}")
        name = {"grape": "GRAPE", "pecanpy": "PecanPy + gensim", "parvec": f"parvec ({rs[0]['algo']})"}[system]
        lines.append(f"| {graph} | {p:g}, {q:g} | {threads} | {name} ({desc}) | {len(rs)} | {ms(wall, 1)} | "
                     f"{ms(cpu, 1)} | {rel} | {ms([r['micro_f1_mean'] for r in rs], 3)} | "
                     f"{ms([r['macro_f1_mean'] for r in rs], 3)} |")  # fmt: skip
    return "\n".join(lines)


def _fmt(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def table(results: list[dict]) -> str:
    """Markdown table (medians over repeats) with PecanPy+gensim / parvec time ratios."""
    import statistics

    groups: dict[tuple, list[dict]] = {}
    for r in results:
        system = "pecanpy" if r["system"] == "pecanpy" else f"parvec-{r['algo']}"
        groups.setdefault((r["graph"], r["p"], r["q"], r["threads"], system), []).append(r)

    def med(rs: list[dict], key: str) -> float | None:
        vals = [r[key] for r in rs if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    lines = [
        "| graph | p, q | threads | system | read s | walks s | train s | end-to-end s | jit s | peak RSS MB "
        "| read: added MB | walks + training: added MB (bound) | micro-F1 | macro-F1 |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    ratios = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], -k[3], k[4])):
        rs = groups[key]
        graph, p, q, threads, system = key
        name = f"parvec ({rs[0]['algo']})" if system != "pecanpy" else "PecanPy + gensim"
        lines.append(
            f"| {graph} | {p:g}, {q:g} | {threads} | {name} | {_fmt(med(rs, 'read_s'), 2)} | "
            f"{_fmt(med(rs, 'walks_s'), 2)} | {_fmt(med(rs, 'train_s'), 1)} | {_fmt(med(rs, 'end_to_end_s'), 1)} | "
            f"{_fmt(med(rs, 'jit_s'), 1)} | {_fmt(med(rs, 'peak_rss_mb'), 0)} | "
            f"{_fmt(med(rs, 'read_added_rss_mb'), 0)} | {_fmt(med(rs, 'added_rss_mb'), 0)}"
            + (f" ({med(rs, 'memory_bound_mb'):.0f})" if med(rs, "memory_bound_mb") else "")
            + f" | {_fmt(med(rs, 'micro_f1_mean'), 3)} | "
            f"{_fmt(med(rs, 'macro_f1_mean'), 3)} |"
        )
        if system != "pecanpy" and (graph, p, q, threads, "pecanpy") in groups:
            other = groups[(graph, p, q, threads, "pecanpy")]
            ratio = {k: (med(other, k) or 0) / (med(rs, k) or float("nan")) for k in
                     ("walks_s", "train_s", "end_to_end_s", "peak_rss_mb")}  # fmt: skip
            ratio["walks_nojit_s"] = ((med(other, "walks_s") or 0) - (med(other, "jit_repeat_s") or 0)) / (
                med(rs, "walks_s") or float("nan")
            )
            ratios.append((graph, p, q, threads, rs[0]["algo"], ratio))
    if ratios:
        lines += [
            "",
            "PecanPy + gensim time (memory) divided by parvec's:",
            "",
            "| graph | p, q | threads | parvec algo | walks | walks, PecanPy JIT excluded | training "
            "| end to end | peak RSS |",
            "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for graph, p, q, threads, algo, r in ratios:
            lines.append(f"| {graph} | {p:g}, {q:g} | {threads} | {algo} | {r['walks_s']:.0f}× | "
                         f"{r['walks_nojit_s']:.0f}× | {r['train_s']:.2f}× | {r['end_to_end_s']:.2f}× | "
                         f"{r['peak_rss_mb']:.2f}× |")  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", nargs="+", default=["blogcatalog", "ppi", "cora"], choices=sorted(GRAPHS))
    ap.add_argument("--pq", nargs="+", default=["1,1", "0.25,0.25"],
                    help="p,q settings (default: 1,1 and 0.25,0.25)")  # fmt: skip
    ap.add_argument("--pq-small", nargs="+", default=None,
                    help="p,q settings for graphs other than blogcatalog (default: same as --pq)")  # fmt: skip
    ap.add_argument("--threads", nargs="+", type=int, default=[2, 1])
    ap.add_argument("--systems", nargs="+", default=["parvec", "pecanpy", "grape"],
                    choices=["parvec", "pecanpy", "grape"],
                    help="systems to run; a peer that is not installed is left out with a note")  # fmt: skip
    ap.add_argument("--own-defaults", action="store_true",
                    help="every system at its own defaults (only p, q, threads and the seed given): parvec's "
                    "Node2Vec, the pecanpy command's, GRAPE's Node2VecSkipGramEnsmallen; one table with the time of "
                    "walks + training relative to GRAPE's")
    ap.add_argument("--seeds", nargs="+", type=int, default=None,
                    help="parvec's seeds, each a run (default: 1 2 3 with --own-defaults, else --seed); the peers "
                    "run once, with the first")
    ap.add_argument("--peer-python", default=None,
                    help="interpreter for PecanPy and GRAPE (e.g. a virtualenv with numpy<2, which their "
                    "dependencies need); the vectors come back as files and are scored here")
    ap.add_argument("--repeats", type=int, default=1, help="runs per configuration (median reported)")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--walk-length", type=int, default=80, help="nodes per walk")
    ap.add_argument("--num-walks", type=int, default=10)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--sample", type=float, default=0.0,
                    help="subsampling threshold for both systems (default 0, parvec's graph default)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--algos",
        nargs="+",
        default=None,
        help="parvec training algorithms to run (default: parvec's default, else classic and par)",
    )
    ap.add_argument("--algo", default="classic", help=argparse.SUPPRESS)  # the worker's algorithm
    ap.add_argument("--cache-walks-mb", type=float, default=None)
    ap.add_argument("--eval-repeats", type=int, default=3, help="random 50%% splits for the F1 scores")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--out", default=None, help="write all results as JSON here")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per subprocess")
    # internal: one measurement in this process
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--system", help=argparse.SUPPRESS)
    ap.add_argument("--graph", help=argparse.SUPPRESS)
    ap.add_argument("--p", type=float, default=1.0, help=argparse.SUPPRESS)
    ap.add_argument("--q", type=float, default=1.0, help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--vectors-out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--read-only", action="store_true", help="time only the edge-list readers (see above)")
    a = ap.parse_args()
    if a.read_only:
        return read_speed(a)
    if a.worker:
        a.threads = a.threads[0]
        worker(a)
        return 0
    if a.algos is None:
        from parvec.config import DEFAULT_ALGO
        from parvec.errors import ParvecError
        from parvec.kernels import get_algorithm

        try:
            get_algorithm(DEFAULT_ALGO)
            a.algos = [DEFAULT_ALGO]
        except ParvecError:  # the default kernel is not in this build yet
            a.algos = ["classic", "par"]
    if a.seeds is None:
        a.seeds = [1, 2, 3] if a.own_defaults else [a.seed]
    runs = [(s, algo) for s in available(a, a.systems) for algo in (a.algos if s == "parvec" else [s])]
    settings = [tuple(float(x) for x in s.split(",")) for s in a.pq]
    small = [tuple(float(x) for x in s.split(",")) for s in a.pq_small] if a.pq_small else settings
    results: list[dict] = []
    env = harness.child_env(PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as tmp:
        vectors_out = str(Path(tmp) / "vectors.npy")
        for rep in range(a.repeats):
            for graph in a.graphs:
                for p, q in settings if graph == "blogcatalog" else small:
                    for threads in a.threads:
                        for system, algo in runs:  # interleaved so machine noise hits all alike
                            for seed in a.seeds if system == "parvec" else a.seeds[:1]:
                                a.algo, a.seed = algo, seed
                                cmd = _child_args(a, system, graph, p, q, threads, rep) + ["--vectors-out",
                                                                                           vectors_out]
                                r = _measure(a, cmd, system, graph, p, q, threads, env)
                                if r is not None:
                                    results.append(r)
    md = table_own_defaults(results) if a.own_defaults else table(results)
    print(f"Machine: {harness.machine_line(harness.machine())}\n\n{md}")
    if a.out:
        settings_out = {k: getattr(a, k) for k in ("dim", "walk_length", "num_walks", "window", "epochs", "seeds",
                                                   "sample", "algos", "eval_repeats", "threads", "graphs",
                                                   "pq", "own_defaults")}  # fmt: skip
        harness.write_json(a.out, "bench_graphs", {"settings": settings_out, "results": results, "table": md})
    return 0


if __name__ == "__main__":
    sys.exit(main())
