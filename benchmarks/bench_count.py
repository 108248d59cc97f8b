"""Counting and encoding a plain file on one thread against every core (one file in parts, one thread each:
:func:`parvec.corpus.encode_sentences` with ``threads``), on the shared corpus and a Zipf corpus, in the same run.

The shared corpus (``--corpus``, 16.9M tokens, one line) is decompressed once into ``--work`` in lines of 10,000
tokens (the sentences ``max_sentence_length=10000`` cuts the one line into: the same corpus; a one-line file
cannot be cut at line boundaries and is read by one thread).  The Zipf corpus is made by
benchmarks/make_zipf_corpus.py (``--zipf-words`` distinct words, ``--zipf-extra`` more tokens, 1,000 a line).
Each measurement runs in its own process (so its peak RSS, ``VmHWM``, is its own): the counting pass alone,
then ``EncodedCorpus.from_file`` end to end (both passes, no cache: the tokens streamed into a temporary
directory and memory-mapped), at min-count 5.  The runs of one corpus must give the same vocabulary and
tokens (their SHA-256 is compared).  The table gives, per thread count: the median and the best seconds (the
best is the run least disturbed by other processes on a shared machine), the median CPU seconds, the peak RSS,
the speed-up against one thread (median, best), the range of the 1-minute load average around the runs and the
cores the machine's other processes used during them (median; from /proc/stat).  The thread counts are
interleaved repeat by repeat; the CPU is named above the table.

    python benchmarks/bench_count.py --work /tmp/parvec-count --out bench_out/count.json
    python benchmarks/bench_count.py --zipf-words 1000000 --zipf-extra 60000000 --threads 1 2 --repeats 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import harness
from harness import DEFAULT_CORPUS, REPO, prepare_corpus


def _peak_rss_bytes() -> int:
    """This process's peak resident set (VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(path: str, threads: int, step: str) -> dict[str, Any]:
    """One measurement (in its own process): ``count`` (the counting pass) or ``from_file`` (both passes)."""
    from parvec.corpus import EncodedCorpus, ReadOptions, TextSentences, count_text
    from parvec.corpus import encode as encode_mod

    options = ReadOptions(min_count=5)
    warm = Path(path).with_suffix(".warm.txt")  # the kernels' compiled code loaded outside the timing
    if not warm.exists():
        warm.write_text("a b c\n" * 10)
    EncodedCorpus.from_file(warm, ReadOptions(min_count=1), threads=1)
    t, c = time.perf_counter(), time.process_time()
    reader = TextSentences(Path(path), options)
    if step == "count":
        ranges = encode_mod._parallel_ranges(reader, threads)
        if ranges is None:
            counted = count_text(reader)
            assert counted is not None, "no pruning expected"
            counter = counted[0]
        else:
            counter, table, parts = encode_mod._count_in_parts(reader, ranges, options)
            assert parts is not None, "no pruning expected"
        seconds, cpu = time.perf_counter() - t, time.process_time() - c
        digest = hashlib.sha256(json.dumps(list(counter.counts.items())).encode()).hexdigest()
        n, parts_used = counter.raw_words, 1 if ranges is None else len(ranges)
    else:
        parts_used = len(encode_mod._parallel_ranges(reader, threads) or [None])
        corpus = EncodedCorpus.from_file(path, options, threads=threads)
        seconds, cpu = time.perf_counter() - t, time.process_time() - c
        h = hashlib.sha256(json.dumps([corpus.vocab.words, corpus.vocab.counts.tolist()]).encode())
        h.update(corpus.offsets.tobytes())
        for a in range(0, len(corpus.tokens), 1 << 24):
            h.update(corpus.tokens[a : a + (1 << 24)].tobytes())
        digest, n = h.hexdigest(), corpus.raw_words
    return {"step": step, "threads": threads, "parts": parts_used, "tokens": n, "seconds": seconds,
            "cpu_seconds": cpu, "peak_rss": _peak_rss_bytes(), "sha256": digest}


def _busy_seconds() -> float:
    """CPU seconds every process of the machine has used since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def wait_quiet(limit: float) -> None:
    """Wait (at most ``limit`` seconds) until the machine's processes use under 0.15 cores over 5 s."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        busy, t = _busy_seconds(), time.perf_counter()
        time.sleep(5)
        if (_busy_seconds() - busy) / (time.perf_counter() - t) < 0.15:
            return


def measure(cmd: list[str], what: str) -> dict[str, Any]:
    """:func:`harness.run_child`, with the cores the machine's other processes used meanwhile (``others``)."""
    busy, own, t = _busy_seconds(), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    got = harness.run_child(cmd, what)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = after.ru_utime + after.ru_stime - own.ru_utime - own.ru_stime
    got["others"] = max(0.0, (_busy_seconds() - busy - child_cpu) / (time.perf_counter() - t))
    return got


def zipf_corpus(work: Path, words: int, extra: int) -> Path:
    """benchmarks/make_zipf_corpus.py's corpus, made once under ``work``."""
    out = work / f"zipf_{words}_{extra}.txt"
    if not out.exists():
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "make_zipf_corpus.py"), "--words", str(words),
                        "--extra", str(extra), "--out", str(out)], check=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    ap.add_argument("--work", default="/tmp/parvec-count")
    ap.add_argument("--zipf-words", type=int, default=1_000_000)
    ap.add_argument("--zipf-extra", type=int, default=60_000_000)
    ap.add_argument("--threads", type=int, nargs="+", default=None, help="default: 1 and every core")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--steps", nargs="+", default=["count", "from_file"], choices=["count", "from_file"])
    ap.add_argument("--corpora", nargs="+", default=["shared", "zipf"], choices=["shared", "zipf"])
    ap.add_argument("--quiet-wait", type=float, default=0.0,
                    help="before each run, wait up to this many seconds for the machine to be idle (shared machines)")
    ap.add_argument("--out", default=None, help="write the table and every run as JSON here")
    ap.add_argument("--child", nargs=3, metavar=("PATH", "THREADS", "STEP"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], int(a.child[1]), a.child[2])))
        return 0
    from parvec.config import default_threads

    threads = a.threads or sorted({1, default_threads()})
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    corpora = {}
    if "shared" in a.corpora:
        corpora["shared corpus, 10,000 tokens a line"] = prepare_corpus(Path(a.corpus), work)
    if "zipf" in a.corpora:
        corpora[f"Zipf, {a.zipf_words:,} words"] = zipf_corpus(work, a.zipf_words, a.zipf_extra)
    m = harness.machine()
    lines = [f"{harness.machine_line(m)}; {a.repeats} repeat(s), medians",
             "| corpus | step | threads (parts) | tokens | wall s (median / best) | CPU s (median) | peak RSS MiB "
             "| speed-up (median / best) "
             "| load (1 min) | others' cores |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    runs = []
    for label, path in corpora.items():
        for step in a.steps:
            base = None
            digests = set()
            measured: dict[int, list[dict[str, Any]]] = {n: [] for n in threads}
            loads: dict[int, list[float]] = {n: [] for n in threads}
            for _ in range(a.repeats):  # the thread counts interleaved: a change of load hits each alike
                for n in threads:
                    wait_quiet(a.quiet_wait)
                    loads[n].append(os.getloadavg()[0])
                    measured[n].append(measure([sys.executable, __file__, "--child", str(path), str(n), step],
                                               f"{step} {path} threads={n}"))
                    loads[n].append(os.getloadavg()[0])
            for n in threads:
                got = measured[n]
                load_before, load_after = min(loads[n]), max(loads[n])
                wall = statistics.median(r["seconds"] for r in got)
                best = min(r["seconds"] for r in got)
                cpu = statistics.median(r["cpu_seconds"] for r in got)
                rss = max(r["peak_rss"] for r in got)
                digests |= {r["sha256"] for r in got}
                base = (wall, best) if base is None else base
                runs.append({"corpus": label, "path": str(path), "runs": got, "load": loads[n]})
                row = (f"| {label} | {step} | {n} ({got[0]['parts']}) | {got[0]['tokens']:,} | {wall:.2f} / {best:.2f} "
                       f"| {cpu:.2f} | {rss / 2**20:.0f} | {base[0] / wall:.2f}x / {base[1] / best:.2f}x "
                       f"| {load_before:.2f}-{load_after:.2f} "
                       f"| {statistics.median(r['others'] for r in got):.2f} |")
                print(row, flush=True)
                lines.append(row)
            assert len(digests) == 1, f"{label} {step}: the results differ between thread counts"
    table = "\n".join(lines)
    print(table)
    if a.out:
        harness.write_json(a.out, "bench_count", {"args": vars(a), "runs": runs, "table": table})
    return 0


if __name__ == "__main__":
    sys.exit(main())
