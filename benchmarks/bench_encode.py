"""Corpus counting and encoding throughput, one step at a time, on a slice of the shared corpus.

The slice (``--tokens``, default 5M, 10,000 tokens a line) is decompressed once into ``--work``.  Each
step runs ``--repeats`` times (median).  On bytes, as ``EncodedCorpus.from_file`` reads files
(:mod:`parvec.corpus.textscan`): ``count`` (:func:`parvec.corpus.count_text`: read + the numba word table) and
``encode`` (the second pass: read + table lookups into int32 blocks, ``parvec.corpus.TokenBlocks.add_text``).  The
reader in Python, which streams and iterables use (and files before the byte tokeniser): ``read`` (read,
decode, ``str.split``), ``count-python`` (``parvec.vocab.count_words``: read + ``Counter``) and
``encode-python`` (read + word -> id lookups, ``parvec.corpus.TokenBlocks.add_all``).  ``from_file`` is
``EncodedCorpus.from_file`` end to end, no cache.  Tokens per second per step, by the wall clock and by
this process's CPU time (on a shared machine the CPU figure is the one-core throughput), with the machine's
load average (speed is claimed from here, not from tests).

    python benchmarks/bench_encode.py --tokens 5000000 --repeats 3
    python benchmarks/bench_encode.py --profile count     # cProfile of one step, top functions
    python benchmarks/bench_encode.py --out bench_out/encode.json   # the table and each step's times as JSON
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

import harness
from harness import DEFAULT_CORPUS as CORPUS
from harness import REPO, slice_corpus


def make_slice(a: argparse.Namespace) -> Path:
    """The first ``a.tokens`` tokens of the corpus, 10,000 a line (harness.slice_corpus)."""
    return slice_corpus(Path(a.corpus), a.tokens, Path(a.work), line_tokens=10000)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--tokens", type=int, default=5_000_000)
    ap.add_argument("--work", default=str(REPO / "bench_out" / "encode"))
    ap.add_argument("--repeats", type=int, default=3)
    names = ["count", "encode", "read", "count-python", "encode-python", "from_file"]
    ap.add_argument("--steps", nargs="+", default=names, choices=names)
    ap.add_argument("--profile", choices=names, default=None,
                    help="cProfile one run of this step and print the top functions")
    ap.add_argument("--out", default=None, help="write the table and each step's times as JSON here")
    a = ap.parse_args()
    from parvec.corpus import EncodedCorpus, IdLookup, ReadOptions, TextSentences, TokenBlocks, count_text
    from parvec.vocab import count_words

    path = make_slice(a)
    options = ReadOptions(min_count=5)
    sentences = TextSentences(path, options)
    counted = count_text(sentences)
    assert counted is not None, "no pruning on a slice"
    counter, table = counted
    vocab = counter.finish(min_count=5)
    reference = count_words(sentences).finish(min_count=5)
    assert vocab.words == reference.words and (vocab.counts == reference.counts).all(), "byte and str counts differ"

    def read() -> int:
        return sum(len(s) for s in sentences)

    def count_python() -> int:
        return count_words(sentences).raw_words

    def encode_python() -> int:
        blocks = TokenBlocks()
        blocks.add_all(sentences, IdLookup(vocab.index))
        return blocks.raw_words

    def count() -> int:
        return count_text(sentences)[0].raw_words

    def encode() -> int:
        blocks = TokenBlocks()
        blocks.add_text(sentences, vocab, table)
        return blocks.raw_words

    def from_file() -> int:
        return EncodedCorpus.from_file(path, options).raw_words

    steps = {"count": count, "encode": encode, "read": read, "count-python": count_python,
             "encode-python": encode_python, "from_file": from_file}
    if a.profile:
        prof = cProfile.Profile()
        prof.runcall(steps[a.profile])
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
        return 0
    rows, results = [], []
    for name in a.steps:
        times, cpu, n = [], [], 0
        for _ in range(a.repeats):
            t, c = time.perf_counter(), time.process_time()
            n = steps[name]()
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        med, med_cpu = statistics.median(times), statistics.median(cpu)
        results.append({"step": name, "tokens": n, "seconds": times, "cpu_seconds": cpu})
        rows.append(f"| {name} | {n:,} | {med:.2f} | {n / med / 1e6:.2f} | {med_cpu:.2f} | {n / med_cpu / 1e6:.2f} |")
    load = os.getloadavg()
    table = "\n".join([
        f"{path} ({a.tokens:,} tokens, vocabulary {len(vocab):,} at min-count 5); {a.repeats} repeats; load "
        f"average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {harness.machine_line(harness.machine())}",
        "| step | tokens | wall s (median) | M tokens / wall s | CPU s (median) | M tokens / CPU s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |", *rows])
    print(table)
    if a.out:
        harness.write_json(a.out, "bench_encode", {"args": vars(a), "corpus": str(path), "vocab_size": len(vocab),
                                                   "steps": results, "table": table})
    return 0


if __name__ == "__main__":
    sys.exit(main())
