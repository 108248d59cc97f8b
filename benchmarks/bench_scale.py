"""The sharded pipeline at scale (docs/scale.md): ``parvec train --mode sharded`` end to end on synthetic Zipf corpora
of millions of distinct words, every process's peak memory and each step's seconds; and its steps one by one.

    python benchmarks/bench_scale.py e2e --words 1000000 4000000 --min-count 1 2 --pipelines new previous \\
        --src src /work/main/src --work /tmp/parvec-scale --out /tmp/parvec-scale/e2e.json
    python benchmarks/bench_scale.py e2e --words 16000000 --min-count 1 2 --out /tmp/parvec-scale/e2e16.json
    python benchmarks/bench_scale.py run --words 1000000 4000000 --min-count 1 2
    python benchmarks/bench_scale.py raydata --corpus /tmp/parvec-scale/zipf1000000.txt

For each vocabulary size ``V`` a corpus of ``2 V`` tokens (``benchmarks/make_zipf_corpus.py --words V --extra V``:
every word once, then Zipf draws, 1000 words a line; written once under ``--work``): 2 tokens a distinct word,
the worst case for per-word costs.

``e2e``: ``parvec train CORPUS -o vectors.bin --cluster local:2 --mode sharded --dim 8 --epochs 1 --threads 1``
end to end (count, encode, train, export) on the same corpora, as a subprocess whose every process is sampled
from ``/proc`` every 0.2 s: the driver's peak RSS (``VmHWM``) and, per role (``Reducer``, ``map_range``,
``encode_unit``, ``ShardActor``, ``ClientActor``, ``write_piece``), the largest RSS a process had while Ray titled
it so; each step's seconds from the run's report.  ``--src DIR`` runs another checkout's ``parvec`` (the previous
pipeline: ``--src /work/main/src``); ``--pipelines`` names the runs ``new`` and ``previous``.

``run``: the steps one by one, each run in a subprocess that starts ``Cluster("local:2")``:
:func:`parvec.distributed.vocab_count.count_vocabulary` (``count_merge``: mappers and reducers up to the
histograms; ``ids``: the driver's id assignment; ``assign_lookup``: the reducers' ids and the joined lookup), the
sampling tables from the count classes (``tables``), and :func:`parvec.distributed.hashed_encode.encode_ranges`
(``encode``).  Memory per step: the peak RSS (``VmHWM``, reset before each step through ``/proc/PID/clear_refs``)
of the driver and of every Ray worker process, less each one's RSS before the step, and that per distinct and
per kept word.  Shared object-store pages a worker reads count in its RSS.

``local``: counting and encoding one corpus as a one-process run does (the byte tokeniser in this process) against
the distributed steps on a local Ray (the Ray's start timed apart): whether the map-reduce pays on one machine.

``raydata``: the count-and-merge step by plain Ray tasks (as in ``run``) against Ray Data (``map_batches`` of
ranges into Arrow tables of (word bytes, count), ``groupby("word").sum("count")``, then the histogram of the
counts), on one corpus.  Needs ``pyarrow`` and ``pandas`` (not parvec dependencies; e.g. ``pip install --target
DIR pyarrow pandas`` and ``PYTHONPATH=DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import harness
import numpy as np

REPO = harness.REPO
_RANGE_BYTES = 64 << 20


# --------------------------------------------------------------------------- process memory
def _status(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _workers() -> list[int]:
    """The Ray worker processes (tasks and actors) started under this driver: its descendants that Ray names
    ``ray::...`` (its own agents left out)."""
    import psutil

    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            name = (p.cmdline() or [""])[0]
        except psutil.Error:
            continue
        if name.startswith("ray::") and not name.endswith("Agent"):
            out.append(p.pid)
    return out


class Meter:
    """Peak RSS per step of the driver and of the Ray workers: VmHWM reset before each step, and sampled every
    0.2 s during it (a worker that exits within the step is caught by the samples).  A worker that starts within
    the step grows from the RSS of an idle worker (``idle``)."""

    def __init__(self) -> None:
        self.steps: dict[str, dict] = {}
        self.idle = 0
        self._t0 = 0.0
        self._base: dict[int, int] = {}
        self._peaks: dict[int, int] = {}
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def _sample(self, stop: threading.Event) -> None:
        while not stop.wait(0.2):
            for pid in _workers():
                self._peaks[pid] = max(self._peaks.get(pid, 0), _status(pid, "VmHWM:"))

    def start(self) -> None:
        pids = [os.getpid(), *_workers()]
        for pid in pids:
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass
        self._base = {pid: _status(pid, "VmRSS:") for pid in pids}
        self._peaks = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(self._stop,), daemon=True)
        self._thread.start()
        self._t0 = time.perf_counter()

    def stop(self, name: str) -> dict:
        seconds = time.perf_counter() - self._t0
        assert self._stop is not None and self._thread is not None
        self._stop.set()
        self._thread.join()
        for pid in _workers():
            self._peaks[pid] = max(self._peaks.get(pid, 0), _status(pid, "VmHWM:"))
        me = os.getpid()
        driver_peak = _status(me, "VmHWM:")
        w = [(pid, p, self._base.get(pid, self.idle)) for pid, p in self._peaks.items()]
        row = {"seconds": seconds, "driver_peak": driver_peak, "driver_growth": driver_peak - self._base[me],
               "worker_peak_max": max((p for _, p, _ in w), default=0),
               "worker_growth_max": max((p - b for _, p, b in w), default=0), "workers": len(w),
               "idle_worker_rss": self.idle}
        self.steps[name] = row
        return row


def _warm_up(ray) -> int:
    """Start the workers (one per CPU) with the modules the steps import, so their start is not in a step;
    returns an idle worker's RSS."""

    def load() -> int:
        import parvec.corpus.hashencode  # noqa: F401
        import parvec.distributed.pipeline  # noqa: F401
        import parvec.distributed.vocab_count  # noqa: F401

        time.sleep(0.5)
        return os.getpid()

    task = ray.remote(num_cpus=1)(load)
    pids = set(ray.get([task.remote() for _ in range(4)]))
    return min(_status(pid, "VmRSS:") for pid in pids)


def _n_ranges(ray, path: Path) -> int:
    cpus = int(ray.cluster_resources().get("CPU", 1))
    return max(2 * cpus, -(-os.path.getsize(path) // _RANGE_BYTES))


# --------------------------------------------------------------------------- one measurement
def run_new(ray, path: Path, min_count: int, work: Path, meter: Meter) -> dict:
    from parvec.corpus import ReadOptions
    from parvec.countclasses import keep_head, noise_tables
    from parvec.distributed.hashed_encode import encode_ranges
    from parvec.distributed.vocab_count import count_vocabulary

    cpus = int(ray.cluster_resources().get("CPU", 1))
    options = ReadOptions(min_count=min_count)
    timings: dict[str, float] = {}
    meter.start()
    parts = count_vocabulary(ray, path, options, _n_ranges(ray, path), reducers=cpus, timings=timings)
    meter.stop("count")
    meter.start()
    prob, ranges = noise_tables(parts.classes)
    head = keep_head(parts.classes, 1e-3)
    meter.stop("tables")
    lookup_bytes = ray.get(ray.remote(lambda t: t.nbytes).remote(parts.lookup))
    parts.close(ray)
    meter.start()
    sizes = encode_ranges(ray, path, options, parts.ranges, parts.lookup, work / "encoded")
    meter.stop("encode")
    return {"kept": parts.classes.n_words, "tokens": sum(s[0] for s in sizes), "raw_words": parts.raw_words,
            "count_steps": timings, "classes": parts.classes.n_classes, "lookup_bytes": int(lookup_bytes),
            "noise_table_bytes": int(prob.nbytes + ranges.nbytes), "keep_head_bytes": int(head.nbytes)}


def run_one(ns: argparse.Namespace) -> dict:
    from parvec.distributed.cluster import Cluster

    path = Path(ns.corpus)
    work = Path(ns.work) / f"work-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    meter = Meter()
    with Cluster("local:2").session() as ray:
        meter.idle = _warm_up(ray)
        result = run_new(ray, path, ns.min_count, work, meter)
    shutil.rmtree(work, ignore_errors=True)
    result.update(pipeline=ns.pipeline, min_count=ns.min_count, distinct=ns.distinct, steps=meter.steps)
    for row in meter.steps.values():
        for key in ("driver_growth", "worker_growth_max"):
            row[key + "_per_distinct_word"] = row[key] / ns.distinct
            row[key + "_per_kept_word"] = row[key] / max(1, result["kept"])
    return result


# --------------------------------------------------------------------------- corpora and the table
def make_corpus(words: int, work: Path) -> Path:
    from make_zipf_corpus import write_corpus, zipf_tokens

    path = work / f"zipf{words}.txt"
    if not path.exists():
        t0 = time.perf_counter()
        write_corpus(str(path), zipf_tokens(words, words, 1.0, 1), 1000)
        print(f"# {path}: {os.path.getsize(path) / 2**20:.0f} MiB in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


def run(ns: argparse.Namespace) -> list[dict]:
    work = Path(ns.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for words in ns.words:
        path = make_corpus(words, work)
        for min_count in ns.min_count:
            for pipeline in ns.pipelines:
                cmd = [sys.executable, __file__, "run-one", "--pipeline", pipeline, "--corpus", str(path),
                       "--min-count", str(min_count), "--distinct", str(words), "--work", str(work)]
                env = harness.child_env()
                out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=ns.timeout)
                if out.returncode != 0:
                    row = {"pipeline": pipeline, "distinct": words, "min_count": min_count,
                           "error": out.stderr[-2000:]}
                else:
                    row = json.loads(out.stdout.strip().splitlines()[-1])
                _record(rows, row, ns, "bench_scale")
    print(table(rows))
    return rows


def _record(rows: list[dict], row: dict, ns: argparse.Namespace, benchmark: str) -> None:
    """Keep a measured row: printed as a JSON line, and every row so far rewritten to ``--out``."""
    rows.append(row)
    print(json.dumps(row), flush=True)
    if ns.out:
        harness.write_json(ns.out, benchmark, {"args": {k: str(v) for k, v in vars(ns).items()}, "runs": rows})


def table(rows: list[dict]) -> str:
    lines = ["| distinct words | min count | pipeline | step | seconds | driver peak MiB (growth B/distinct word) | "
             "largest worker peak MiB (growth B/distinct word) |", "|" + " --- |" * 7]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['distinct']:,} | {r['min_count']} | {r['pipeline']} | failed | | | |")
            continue
        for step, s in r["steps"].items():
            lines.append(f"| {r['distinct']:,} | {r['min_count']} | {r['pipeline']} | {step} | {s['seconds']:.1f} | "
                         f"{s['driver_peak'] / 2**20:.0f} ({s['driver_growth_per_distinct_word']:.1f}) | "
                         f"{s['worker_peak_max'] / 2**20:.0f} ({s['worker_growth_max_per_distinct_word']:.1f}) |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- end to end
ROLES = ("Reducer", "map_range", "encode_unit", "count_range", "Encoder", "encode", "ShardActor", "ClientActor",
         "write_piece", "RunRefs")


def _tree(root: int) -> list[int]:
    import psutil

    try:
        return [root, *(c.pid for c in psutil.Process(root).children(recursive=True))]
    except psutil.Error:
        return []


def _title(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


def e2e_one(corpus: Path, min_count: int, work: Path, src: str, timeout: float) -> dict:
    """One ``parvec train --mode sharded`` run, every process sampled (module docstring)."""
    out = work / "v.bin"
    report = work / "r.json"
    cmd = [sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(out), "--cluster", "local:2", "--mode",
           "sharded", "--dim", "8", "--epochs", "1", "--threads", "1", "--min-count", str(min_count), "--no-cache",
           "--no-progress", "--report", str(report), "--cache-dir", str(work)]
    env = harness.child_env(Path(src))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=str(work))
    driver_peak, roles, idle = 0, {}, []
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True)
    reader.start()
    while proc.poll() is None and time.perf_counter() - t0 < timeout:
        driver_peak = max(driver_peak, _status(proc.pid, "VmHWM:"))
        for pid in _tree(proc.pid)[1:]:
            title = _title(pid)
            if not title.startswith("ray::"):
                continue
            rss = _status(pid, "VmRSS:")
            if title == "ray::IDLE":
                idle.append(rss)
            for role in ROLES:
                if title.startswith(f"ray::{role}"):
                    roles[role] = max(roles.get(role, 0), rss)
        time.sleep(0.2)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    reader.join(timeout=5)
    row = {"seconds": time.perf_counter() - t0, "returncode": proc.returncode, "driver_peak": driver_peak,
           "roles": roles, "idle_worker_rss": min(idle) if idle else 0}
    if proc.returncode != 0:
        row["error"] = "".join(stderr)[-3000:]
        return row
    rep = json.loads(report.read_text())
    row.update(kept=rep["vocab_size"], tokens=rep["corpus_tokens_in_vocab"], read_seconds=rep["read_seconds"],
               training_seconds=rep["training_seconds"], count_seconds=rep.get("count_seconds"),
               encode_seconds=rep.get("encode_seconds"), export_seconds=rep.get("export_seconds"),
               shard_peak=rep.get("shard_peak_memory_bytes"), model_bytes=rep.get("model_bytes"))
    return row


def e2e(ns: argparse.Namespace) -> list[dict]:
    work = Path(ns.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for words in ns.words:
        path = make_corpus(words, work)
        for min_count in ns.min_count:
            for name, src in zip(ns.pipelines, ns.src, strict=True):
                run_dir = work / f"e2e-{name}-{words}-{min_count}"
                run_dir.mkdir(exist_ok=True)
                row = e2e_one(path, min_count, run_dir, src, ns.timeout)
                row.update(pipeline=name, distinct=words, min_count=min_count)
                shutil.rmtree(run_dir, ignore_errors=True)
                _record(rows, row, ns, "bench_scale_e2e")
    print(e2e_table(rows))
    return rows


def e2e_table(rows: list[dict]) -> str:
    lines = ["| distinct words | min count (kept) | pipeline | count s | encode s | train s | export s | driver peak "
             "MiB | reducer | mapper | encoder | shard | client | writer |", "|" + " --- |" * 14]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['distinct']:,} | {r['min_count']} | {r['pipeline']} | failed |" + " |" * 10)
            continue
        roles = r["roles"]

        def mib(*names: str, roles: dict = roles) -> str:
            v = max((roles.get(n, 0) for n in names), default=0)
            return f"{v / 2**20:.0f}" if v else ""

        cnt = r.get("count_seconds")
        enc = r.get("encode_seconds")
        exp = r.get("export_seconds")
        lines.append(
            f"| {r['distinct']:,} | {r['min_count']} ({r['kept']:,}) | {r['pipeline']} | "
            f"{cnt:.1f} | {enc:.1f} | {r['training_seconds']:.1f} | {exp:.1f} | " if cnt is not None and enc is not None
            and exp is not None else f"| {r['distinct']:,} | {r['min_count']} ({r['kept']:,}) | {r['pipeline']} | "
            f"{r['read_seconds']:.1f} (count + encode) | | {r['training_seconds']:.1f} | | ")
        lines[-1] += (f"{r['driver_peak'] / 2**20:.0f} | {mib('Reducer')} | {mib('map_range', 'count_range')} | "
                      f"{mib('encode_unit', 'Encoder', 'encode')} | {mib('ShardActor')} | {mib('ClientActor')} | "
                      f"{mib('write_piece')} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- one process against the cluster's count
def one_process(ns: argparse.Namespace) -> dict:
    """Counting and encoding a corpus as a one-process run does (``EncodedCorpus.from_file``: the byte tokeniser
    in this process, no cache) against the distributed steps on ``local:N`` (``prepare_corpus``: map-reduce
    vocabulary, hashed encoding; the local Ray's start timed apart), ``--rounds`` times each, interleaved."""
    import tempfile

    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.distributed.cluster import Cluster
    from parvec.distributed.sharded_source import plan_inputs, prepare_corpus

    path = Path(ns.corpus)
    options = ReadOptions(min_count=ns.min_count)
    out: dict = {"corpus": str(path), "min_count": ns.min_count, "cluster": ns.cluster, "one_process_s": [],
                 "cluster_s": [], "ray_start_s": []}
    for _ in range(ns.rounds):
        t0 = time.perf_counter()
        enc = EncodedCorpus.from_file(path, options)
        out["one_process_s"].append(time.perf_counter() - t0)
        out["words"] = len(enc.vocab)
        del enc
        t0 = time.perf_counter()
        with Cluster(ns.cluster).session() as ray:
            _warm_up(ray)
            out["ray_start_s"].append(time.perf_counter() - t0)
            work = Path(tempfile.mkdtemp(dir=ns.work))
            t1 = time.perf_counter()
            corpus = prepare_corpus(ray, plan_inputs(str(path), int(ray.cluster_resources()["CPU"]), work), options,
                                    work, 100_000)
            out["cluster_s"].append(time.perf_counter() - t1)
            out["cluster_words"] = corpus.n_words
            shutil.rmtree(work, ignore_errors=True)
        print(json.dumps(out), flush=True)
    return out


# --------------------------------------------------------------------------- Ray Data against plain tasks
def raydata(ns: argparse.Namespace) -> dict:
    import pyarrow as pa
    import ray.data

    from parvec.corpus import ReadOptions, byte_ranges
    from parvec.distributed.cluster import Cluster
    from parvec.distributed.vocab_count import count_vocabulary

    path = Path(ns.corpus)
    options = ReadOptions(min_count=1)

    def count_batch(batch: dict) -> pa.Table:
        from parvec.corpus import RangeSentences
        from parvec.corpus.textscan import WordTable, normalise

        tables = []
        for a, b in zip(batch["start"].tolist(), batch["end"].tolist(), strict=True):
            reader = RangeSentences(path, a, b, options)
            t = WordTable()
            for name, block, where, at_end in reader.blocks():
                if not at_end:
                    t.scan(normalise(block, False, lambda x, w=where, n=name, r=reader: r.decode(x, w, n)),
                           insert=True)
            _, counts, starts, lengths, arena = t.arrays()
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            # The words' bytes are already contiguous in first-seen order (starts == offsets[:-1]).
            assert np.array_equal(starts, offsets[:-1])
            words = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(lengths),
                                                     [None, pa.py_buffer(offsets), pa.py_buffer(arena.copy())])
            tables.append(pa.table({"word": words, "count": pa.array(counts.copy())}))
        return pa.concat_tables(tables)

    out: dict = {"corpus": str(path)}
    with Cluster("local:2").session() as ray:
        _warm_up(ray)
        n = _n_ranges(ray, path)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        for _ in range(ns.rounds):
            timings: dict[str, float] = {}
            t0 = time.perf_counter()
            parts = count_vocabulary(ray, path, options, n, reducers=cpus, timings=timings)
            out.setdefault("tasks_count_merge_s", []).append(timings["count_merge"])
            out.setdefault("tasks_total_s", []).append(time.perf_counter() - t0)
            out["tasks_words"] = parts.classes.n_words
            parts.close(ray)
            del parts
            t0 = time.perf_counter()
            ranges = byte_ranges(path, n)
            ds = ray.data.from_items([{"start": a, "end": b} for a, b in ranges], override_num_blocks=len(ranges))
            counted = ds.map_batches(count_batch, batch_size=1, batch_format="numpy")
            grouped = counted.groupby("word").sum("count").materialize()
            t1 = time.perf_counter()
            hist = grouped.groupby("sum(count)").count().to_pandas()
            t2 = time.perf_counter()
            out.setdefault("raydata_count_merge_s", []).append(t1 - t0)
            out.setdefault("raydata_histogram_s", []).append(t2 - t1)
            out["raydata_words"] = int(hist["count()"].sum())
            del grouped
            print(json.dumps(out), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--words", type=int, nargs="+", default=[1_000_000, 4_000_000, 16_000_000])
    r.add_argument("--min-count", type=int, nargs="+", default=[1, 2])
    r.add_argument("--pipelines", nargs="+", choices=("new",), default=["new"])
    r.add_argument("--work", default="/tmp/parvec-scale")
    r.add_argument("--out", default="")
    r.add_argument("--timeout", type=float, default=3600)
    o = sub.add_parser("run-one")
    o.add_argument("--pipeline", choices=("new",), default="new")
    o.add_argument("--corpus", required=True)
    o.add_argument("--min-count", type=int, default=1)
    o.add_argument("--distinct", type=int, required=True)
    o.add_argument("--work", default="/tmp/parvec-scale")
    e = sub.add_parser("e2e")
    e.add_argument("--words", type=int, nargs="+", default=[1_000_000, 4_000_000, 16_000_000])
    e.add_argument("--min-count", type=int, nargs="+", default=[1, 2])
    e.add_argument("--pipelines", nargs="+", default=["new"])
    e.add_argument("--src", nargs="+", default=[str(REPO / "src")], help="each pipeline's source directory")
    e.add_argument("--work", default="/tmp/parvec-scale")
    e.add_argument("--out", default="")
    e.add_argument("--timeout", type=float, default=7200)
    q = sub.add_parser("local")
    q.add_argument("--corpus", required=True)
    q.add_argument("--min-count", type=int, default=5)
    q.add_argument("--cluster", default="local:2")
    q.add_argument("--rounds", type=int, default=2)
    q.add_argument("--work", default="/tmp/parvec-scale")
    d = sub.add_parser("raydata")
    d.add_argument("--corpus", required=True)
    d.add_argument("--rounds", type=int, default=2)
    ns = ap.parse_args()
    if ns.cmd == "run":
        run(ns)
    elif ns.cmd == "run-one":
        print(json.dumps(run_one(ns)))
    elif ns.cmd == "e2e":
        e2e(ns)
    elif ns.cmd == "local":
        print(json.dumps(one_process(ns)))
    else:
        print(json.dumps(raydata(ns)))


if __name__ == "__main__":
    main()
