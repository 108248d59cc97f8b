"""Word-vector operations, parvec vs gensim on the same vectors in one run: analogy evaluation, top-k
nearest words, reading a word2vec binary file.

* ``analogies``: ``evaluate_word_analogies`` on the Google set (19,544 questions) over a 30,000-word
  vocabulary, the analogy words plus fillers with seeded random vectors (``--vectors FILE``: trained
  vectors instead); same ``restrict_vocab`` and case folding; the counted / correct questions are printed
  beside the times, so the comparison is of the same work.
* ``most_similar``: ``most_similar(word, topn=5)`` over 300,000 random 8-dimensional vectors (norms
  cached by a first call, as both libraries do), 20 query words.
* ``read``: a 20,000 x 100 word2vec binary file written by parvec, read by parvec's ``read_word2vec`` and
  gensim's ``load_word2vec_format``.
* ``neighbours``: the 30 nearest words of ``--queries`` words (default 2,048) over ``--rows`` random 100-dimensional
  vectors (default 1,000,000): parvec's ``most_similar_batch`` (one pass over the matrix) against a loop of
  ``most_similar`` over the first 20 of them; words per second in the note (parvec only: gensim has no batch).

Each is timed ``--repeats`` times in this process (median, min, max; one untimed warm-up call each), by the
wall clock and by the process's CPU seconds (all threads summed: on a shared machine the wall clock says
little), with the machine's load average.  These replace the time bounds some tests used to assert (speed is claimed
from benchmarks; the tests check the results).

    python benchmarks/bench_vectors.py                   # the first three, 3 repeats
    python benchmarks/bench_vectors.py --only neighbours --systems parvec --repeats 1
    python benchmarks/bench_vectors.py --only analogies --vectors vec.bin --out bench_out/vectors.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import harness

QUESTIONS = harness.SHARED_DATA / "eval" / "questions-words.txt"


def vectors_for(a: argparse.Namespace):
    """(keys, float32 vectors): a trained file, or the analogy words + fillers with seeded random vectors."""
    import numpy as np

    if a.vectors:
        from parvec.keyedvectors import load_vectors

        kv = load_vectors(a.vectors)
        return list(kv.index_to_key), np.ascontiguousarray(kv.vectors, dtype=np.float32)
    from parvec.evaluation import read_analogy_questions

    sections = read_analogy_questions(a.questions)
    words = sorted({w.lower() for _, qs in sections for q in qs for w in q})
    keys = words + [f"filler{i}" for i in range(a.vocab - len(words))]
    rng = np.random.default_rng(a.seed)
    return keys, rng.standard_normal((len(keys), a.dim)).astype(np.float32)


CPU_SECONDS: list[float] = []  # the process's CPU seconds of each timed call, in order (all threads summed)


def timed(fn, repeats: int) -> tuple[list[float], object]:
    fn()  # warm-up: imports, caches, BLAS threads
    times, result = [], None
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t)
        CPU_SECONDS.append(time.process_time() - c)
    return times, result


def counts(sections: list[dict]) -> tuple[int, int]:
    total = sections[-1]
    return len(total["correct"]) + len(total["incorrect"]), len(total["correct"])


def _gensim_kv(keys, vectors):
    import logging

    from gensim.models import KeyedVectors as GensimKV

    logging.getLogger("gensim").setLevel(logging.WARNING)
    gkv = GensimKV(vectors.shape[1])
    gkv.add_vectors(keys, vectors.copy())
    return gkv


def bench_analogies(a: argparse.Namespace) -> dict:
    from parvec.keyedvectors import KeyedVectors

    keys, vectors = vectors_for(a)
    out = {"what": f"evaluate_word_analogies, {len(keys):,} words x {vectors.shape[1]}, restrict_vocab "
                   f"{a.restrict_vocab:,}"}
    if "parvec" in a.systems:
        kv = KeyedVectors(vectors.copy(), keys)
        times, (_, sections) = timed(lambda: kv.evaluate_word_analogies(a.questions,
                                                                         restrict_vocab=a.restrict_vocab), a.repeats)
        out["parvec"] = {"seconds": times, "note": "questions {}, correct {}".format(*counts(sections))}
    if "gensim" in a.systems:
        gkv = _gensim_kv(keys, vectors)
        times, (_, sections) = timed(lambda: gkv.evaluate_word_analogies(a.questions,
                                                                          restrict_vocab=a.restrict_vocab), a.repeats)
        out["gensim"] = {"seconds": times, "note": "questions {}, correct {}".format(*counts(sections))}
    return out


def bench_most_similar(a: argparse.Namespace) -> dict:
    import numpy as np

    from parvec.keyedvectors import KeyedVectors

    rng = np.random.default_rng(a.seed)
    vectors = rng.standard_normal((300_000, 8)).astype(np.float32)
    keys = [str(i) for i in range(len(vectors))]
    queries = [str(i) for i in range(0, 300_000, 15_000)]
    out = {"what": f"most_similar(topn=5) x {len(queries)} queries over 300,000 words x 8"}
    systems = {}
    if "parvec" in a.systems:
        systems["parvec"] = KeyedVectors(vectors.copy(), keys)
    if "gensim" in a.systems:
        systems["gensim"] = _gensim_kv(keys, vectors)
    for name, kv in systems.items():
        kv.most_similar(queries[0], topn=5)  # the norms, cached by both
        times, result = timed(lambda kv=kv: [kv.most_similar(q, topn=5) for q in queries], a.repeats)
        out[name] = {"seconds": times, "note": f"first answer {result[0][0][0]}"}
    return out


def bench_read(a: argparse.Namespace) -> dict:
    import numpy as np

    from parvec.formats import read_word2vec, write_word2vec

    rng = np.random.default_rng(a.seed)
    vectors = rng.standard_normal((20_000, 100)).astype(np.float32)
    words = [f"word{i}" for i in range(len(vectors))]
    out = {"what": "read a 20,000 x 100 word2vec binary file"}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v.bin"
        write_word2vec(path, vectors, words, binary=True)
        if "parvec" in a.systems:
            times, (got, _) = timed(lambda: read_word2vec(path, binary=True), a.repeats)
            out["parvec"] = {"seconds": times, "note": f"exact: {bool(np.array_equal(got, vectors))}"}
        if "gensim" in a.systems:
            from gensim.models import KeyedVectors as GensimKV

            times, kv = timed(lambda: GensimKV.load_word2vec_format(str(path), binary=True), a.repeats)
            out["gensim"] = {"seconds": times, "note": f"exact: {bool(np.array_equal(kv.vectors, vectors))}"}
    return out


def bench_neighbours(a: argparse.Namespace) -> dict:
    import numpy as np

    from parvec.keyedvectors import KeyedVectors

    rng = np.random.default_rng(a.seed)
    vectors = rng.standard_normal((a.rows, 100), dtype=np.float32)
    keys = [f"w{i}" for i in range(a.rows)]
    queries = [keys[i] for i in rng.integers(0, a.rows, a.queries).tolist()]
    out = {"what": f"30 nearest words of {a.queries:,} words over {a.rows:,} x 100 (most_similar: 20 of them)"}
    kv = KeyedVectors(vectors, keys)
    kv.get_normed_vectors()  # the unit rows, cached by both ways
    if "parvec" in a.systems:
        times, _ = timed(lambda: kv.most_similar_batch(queries, topn=30), a.repeats)
        t = time.perf_counter()
        for q in queries[:20]:
            kv.most_similar(q, topn=30)
        single = time.perf_counter() - t
        out["parvec"] = {"seconds": times, "note": f"most_similar_batch {a.queries / statistics.median(times):,.0f} "
                         f"words/s; a most_similar loop {20 / single:,.1f} words/s"}
    return out


BENCHES = {"analogies": bench_analogies, "most_similar": bench_most_similar, "read": bench_read,
           "neighbours": bench_neighbours}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", default=["analogies", "most_similar", "read"], choices=list(BENCHES),
                    help="which (default: all but neighbours, which builds a 1M-row model)")
    ap.add_argument("--questions", default=str(QUESTIONS), help="analogies: the question file")
    ap.add_argument("--vectors", default=None, help="analogies: trained vectors (word2vec or .npy); default random")
    ap.add_argument("--vocab", type=int, default=30000, help="analogies: words of the random vocabulary (30000)")
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--restrict-vocab", type=int, default=30000)
    ap.add_argument("--rows", type=int, default=1_000_000, help="neighbours: rows of the random vectors")
    ap.add_argument("--queries", type=int, default=2048, help="neighbours: query words")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--systems", nargs="+", default=["parvec", "gensim"], choices=["parvec", "gensim"])
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    a = ap.parse_args()
    results = {}
    for name in a.only:
        results[name] = BENCHES[name](a)
        for system in ("parvec", "gensim"):  # the CPU seconds of its timed calls, in the order they ran
            if system in results[name]:
                results[name][system]["cpu_seconds"] = CPU_SECONDS[:a.repeats]
                del CPU_SECONDS[:a.repeats]
    load = os.getloadavg()
    print(f"{a.repeats} repeats; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
          f"{harness.machine_line(harness.machine())}")
    print("| operation | system | median s | min s | max s | CPU s (median) | gensim / parvec (wall; CPU) | check |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in results.values():
        ratio = ""
        if "parvec" in r and "gensim" in r:
            med = {n: (statistics.median(r[n]["seconds"]), statistics.median(r[n]["cpu_seconds"])) for n in r
                   if n in ("parvec", "gensim")}
            ratio = f"{med['gensim'][0] / med['parvec'][0]:.2f}x; {med['gensim'][1] / med['parvec'][1]:.2f}x"
        for name in ("parvec", "gensim"):
            if name in r:
                s = r[name]["seconds"]
                print(f"| {r['what']} | {name} | {statistics.median(s):.3f} | {min(s):.3f} | {max(s):.3f} | "
                      f"{statistics.median(r[name]['cpu_seconds']):.3f} | {ratio if name == 'parvec' else ''} | "
                      f"{r[name]['note']} |")
    if a.out:
        harness.write_json(a.out, "bench_vectors", {"settings": vars(a), "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
