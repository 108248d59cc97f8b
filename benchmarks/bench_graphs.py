"""Graph benchmark: parvec node2vec end to end vs PecanPy (SparseOTF walks) + gensim Word2Vec, one run.

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
    model = Node2Vec(graph, dimensions=a.dim, walk_length=a.walk_length, num_walks=a.num_walks, window=a.window,
                     p=a.p, q=a.q, epochs=a.epochs, workers=a.threads, seed=a.seed, algo=a.algo,
                     sample=a.sample, cache_walks_mb=a.cache_walks_mb)  # fmt: skip
    vectors = model.fit_vectors()
    out["walks_s"] = model.timings["walks"]
    out["train_s"] = model.timings["train"]
    out["walks_cached"] = bool(model.timings["walks_cached"])
    out["tokens"] = model.n_tokens
    out["train_words_per_s"] = model.train_stats.words_per_sec
    out["algo"] = model.config.algo
    # The memory bound: 2 x (CSR graph + both weight matrices + one batch of walks).
    csr = graph.indptr.nbytes + graph.indices.nbytes + (graph.data.nbytes if graph.data is not None else 0)
    batch = min(model.batch_walks, graph.n_nodes * a.num_walks) * (a.walk_length * 4 + 8)
    out["memory_bound_mb"] = 2 * (csr + 2 * graph.n_nodes * a.dim * 4 + batch) / 2**20
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
    t = time.perf_counter()
    walks = g.simulate_walks(num_walks=a.num_walks, walk_length=a.walk_length - 1)  # = walk_length nodes
    out["walks_s"] = time.perf_counter() - t
    out["tokens"] = sum(len(w) for w in walks)
    t = time.perf_counter()
    w2v = Word2Vec(vector_size=a.dim, window=a.window, min_count=0, sg=1, negative=5, workers=a.threads,
                   epochs=a.epochs, seed=a.seed, sample=a.sample)  # fmt: skip
    w2v.build_vocab(walks)
    out["vocab_s"] = time.perf_counter() - t
    t2 = time.perf_counter()
    w2v.train(walks, total_examples=len(walks), epochs=a.epochs)
    out["train_only_s"] = time.perf_counter() - t2
    out["train_s"] = time.perf_counter() - t  # vocabulary + training, parvec's train_s has no separate vocab
    out["train_words_per_s"] = out["tokens"] * a.epochs / out["train_only_s"]
    out["algo"] = "gensim"
    return out, w2v.wv[g.nodes], list(g.nodes)


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
    run = run_parvec if a.system == "parvec" else run_pecanpy
    out, vectors, keys = run(a, edges)
    out["end_to_end_s"] = out["read_s"] + out["walks_s"] + out["train_s"]
    out["wall_s"] = time.perf_counter() - start
    # Peaks before evaluation, which is not part of either system.  The bar is on walks +
    # training: their peak (graph in memory) over the interpreter with its libraries and kernels loaded.
    out["walk_train_peak_rss_mb"] = _peak_mb()
    out["peak_rss_mb"] = max(out["read_peak_rss_mb"], out["walk_train_peak_rss_mb"])
    out["added_rss_mb"] = out["walk_train_peak_rss_mb"] - out["rss_after_import_mb"]
    out["read_added_rss_mb"] = out["read_peak_rss_mb"] - out["rss_after_import_mb"]
    out.update(_f1(vectors, keys, labels, a.eval_repeats, 1))
    out.update({"system": a.system, "graph": a.graph, "p": a.p, "q": a.q, "threads": a.threads,
                "repeat": a.repeat, "sample": a.sample})  # fmt: skip
    print("RESULT " + json.dumps(out), flush=True)


def _child_args(a: argparse.Namespace, system: str, graph: str, p: float, q: float, threads: int, rep: int):
    return [sys.executable, str(Path(__file__).resolve()), "--worker", "--system", system, "--graph", graph,
            "--p", str(p), "--q", str(q), "--threads", str(threads), "--repeat", str(rep), "--dim", str(a.dim),
            "--walk-length", str(a.walk_length), "--num-walks", str(a.num_walks), "--window", str(a.window),
            "--epochs", str(a.epochs), "--seed", str(a.seed), "--algo", a.algo, "--data", a.data,
            "--sample", str(a.sample),
            "--eval-repeats", str(a.eval_repeats)] + (
            ["--cache-walks-mb", str(a.cache_walks_mb)] if a.cache_walks_mb is not None else [])  # fmt: skip


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
    ap.add_argument("--systems", nargs="+", default=["parvec", "pecanpy"], choices=["parvec", "pecanpy"])
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
    runs = [(s, algo) for s in a.systems for algo in (a.algos if s == "parvec" else ["gensim"])]
    settings = [tuple(float(x) for x in s.split(",")) for s in a.pq]
    small = [tuple(float(x) for x in s.split(",")) for s in a.pq_small] if a.pq_small else settings
    results: list[dict] = []
    env = harness.child_env(PYTHONHASHSEED="0")
    for rep in range(a.repeats):
        for graph in a.graphs:
            for p, q in settings if graph == "blogcatalog" else small:
                for threads in a.threads:
                    for system, algo in runs:  # interleaved so machine noise hits all alike
                        a.algo = algo
                        cmd = _child_args(a, system, graph, p, q, threads, rep)
                        t = time.perf_counter()
                        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.timeout)
                        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
                        if proc.returncode != 0 or line is None:
                            print(f"FAILED {system} {graph} p={p} q={q} t={threads}:\n{proc.stderr[-2000:]}",
                                  file=sys.stderr)  # fmt: skip
                            continue
                        r = json.loads(line[len("RESULT ") :])
                        results.append(r)
                        print(f"{graph} p={p:g} q={q:g} threads={threads} {system} {algo}: read {r['read_s']:.2f}s "
                              f"walks {r['walks_s']:.2f}s train {r['train_s']:.1f}s peak {r['peak_rss_mb']:.0f}MB "
                              f"micro-F1 {r['micro_f1_mean']:.3f} ({time.perf_counter() - t:.0f}s)",
                              file=sys.stderr, flush=True)  # fmt: skip
    md = table(results)
    print(f"Machine: {harness.machine_line(harness.machine())}\n\n{md}")
    if a.out:
        settings_out = {k: getattr(a, k) for k in ("dim", "walk_length", "num_walks", "window", "epochs", "seed",
                                                   "sample", "algos", "eval_repeats", "threads", "graphs",
                                                   "pq")}  # fmt: skip
        harness.write_json(a.out, "bench_graphs", {"settings": settings_out, "results": results, "table": md})
    return 0


if __name__ == "__main__":
    sys.exit(main())
