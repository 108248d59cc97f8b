"""A corpus bigger than memory: count, encode and train one epoch with peak RSS measured per step.

Not a CI test: the full bar generates a >= 1-billion-token corpus (~6 GB of text) by repeating the shared
Wikipedia corpus (``../shared/data/corpus/enwiki2015_text8style_100M.txt.xz``, 16.9M tokens) into a scratch
directory, then runs each step in its own subprocess so that ``VmHWM`` in ``/proc/self/status`` is that
step's peak resident set:

1. ``generate``: the repeated corpus, streamed (decompressed once, then copied block by block);
2. ``count``: the vocabulary counting pass alone (:func:`parvec.corpus.count_vocabulary`, the byte counter
   ``from_file`` uses; bounded memory);
3. ``encode``: :meth:`parvec.EncodedCorpus.from_file` into the encoded-corpus cache -- its own counting pass,
   then the tokens streamed to ``tokens.npy`` block by block;
4. ``train``: the cached (memory-mapped) corpus, one epoch of ``Word2Vec`` (pages released chunk by chunk).

Bar: every step's peak RSS < 1.5 GB.  Then ``count``/``encode``/``train`` run again under a memory limit
smaller than the int32 token array (``--limit``, default: the smaller of 0.9 x the array and 1.5 GiB, set
with ``resource.setrlimit`` in the child): ``RLIMIT_DATA`` by default (heap and private mappings; a read-only
file mapping does not count), or ``RLIMIT_AS`` with ``--limit-kind as`` (the whole address space: numba's
LLVM and the thread stacks reserve a lot of it, and the memory-mapped token file counts in full).

Example (the full bar; about 6 GB of disk and hours of CPU on 2 cores)::

    nice -n 19 python benchmarks/bench_bigcorpus.py --tokens 1000000000 --scratch /tmp/parvec-big

A smaller run for a quick look: ``--tokens 50000000``.  ``--keep`` keeps the scratch files.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import harness
from harness import DEFAULT_CORPUS as DEFAULT_SOURCE

BLOCK = 1 << 24


def status(field: str) -> int:
    """A /proc/self/status field in bytes (VmHWM, VmPeak, VmRSS, ...)."""
    with open("/proc/self/status") as f:
        return next((int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":")), 0)


# ---------------------------------------------------------------------------------------------- steps
def step_generate(a: argparse.Namespace) -> dict:
    scratch = Path(a.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    base = scratch / "base.txt"
    if not base.exists():
        tmp = base.with_suffix(".tmp")
        with lzma.open(a.source, "rb") as src, open(tmp, "wb") as out:
            while block := src.read(BLOCK):
                out.write(block)
        os.replace(tmp, base)
    # text8 style: words separated by single spaces, so tokens = spaces + 1 per copy
    with open(base, "rb") as f:
        base_tokens = sum(block.count(b" ") for block in iter(lambda: f.read(BLOCK), b"")) + 1
    corpus = scratch / f"corpus_{a.tokens}.txt"
    written = 0
    if not corpus.exists():
        tmp = corpus.with_suffix(".tmp")
        with open(tmp, "wb") as out:
            while written < a.tokens:
                want = a.tokens - written
                with open(base, "rb") as f:
                    if want >= base_tokens:
                        while block := f.read(BLOCK):
                            out.write(block)
                        written += base_tokens
                    else:  # a prefix of the last copy, cut after the want-th word
                        while want > 0:
                            block = f.read(BLOCK)
                            if not block:
                                break
                            n = block.count(b" ")
                            if n >= want:
                                cut = -1
                                for _ in range(want):
                                    cut = block.index(b" ", cut + 1)
                                out.write(block[:cut])
                                written += want
                                want = 0
                            else:
                                out.write(block)
                                written += n
                                want -= n
                out.write(b"\n")  # one line per copy (the reader cuts it into 10,000-token sentences)
        os.replace(tmp, corpus)
    return {"file": str(corpus), "bytes": corpus.stat().st_size, "base_tokens": base_tokens}


def step_count(a: argparse.Namespace) -> dict:
    from parvec.corpus import ReadOptions, TextSentences, count_vocabulary

    opts = ReadOptions(min_count=a.min_count)
    counter, table = count_vocabulary(TextSentences(Path(a.corpus), opts), opts)  # as from_file counts
    vocab = counter.finish(opts.min_count)
    return {"raw_words": counter.raw_words, "distinct": len(counter.counts), "vocab": len(vocab),
            "pruning": counter.pruning.to_json() if counter.pruning is not None else None,
            "max_vocab_size": counter.max_vocab_size,
            "counter": "bytes" if table is not None else "python (pruning)"}


def step_encode(a: argparse.Namespace) -> dict:
    import numpy as np

    from parvec.corpus import EncodedCorpus, ReadOptions

    enc = EncodedCorpus.from_file(a.corpus, ReadOptions(min_count=a.min_count), cache_dir=a.cache)
    return {"tokens": enc.n_tokens, "sentences": enc.n_sentences, "vocab": len(enc.vocab),
            "memory_mapped": isinstance(enc.tokens, np.memmap), "cache_used": enc.cache_used}


def step_train(a: argparse.Namespace) -> dict:
    import numpy as np

    from parvec import Word2Vec
    from parvec.corpus import EncodedCorpus, ReadOptions

    t0 = time.perf_counter()
    enc = EncodedCorpus.from_file(a.corpus, ReadOptions(min_count=a.min_count), cache_dir=a.cache)
    load_s = time.perf_counter() - t0
    model = Word2Vec(vector_size=a.dim, min_count=a.min_count, epochs=1, workers=a.threads, seed=1)
    model.build_vocab(corpus=enc)
    stats = model.train(corpus=enc)
    ranked = model.wv.most_similar("king", topn=5) if "king" in model.wv.key_to_index else []
    return {"tokens": enc.n_tokens, "memory_mapped": isinstance(enc.tokens, np.memmap),
            "cache_used": enc.cache_used, "load_s": round(load_s, 1), "words_per_s": round(stats.words_per_sec),
            "king": [w for w, _ in ranked]}


STEPS = {"generate": step_generate, "count": step_count, "encode": step_encode, "train": step_train}


def child(a: argparse.Namespace) -> None:
    """One step in this process: print its result, time and peak memory as JSON."""
    if a.limit:
        kind = resource.RLIMIT_DATA if a.limit_kind == "data" else resource.RLIMIT_AS
        resource.setrlimit(kind, (a.limit, a.limit))
    t0 = time.perf_counter()
    try:
        result = STEPS[a.step](a)
        ok = True
    except BaseException as exc:  # reported, not raised: the parent prints it
        result = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        ok = False
    result.update(ok=ok, seconds=round(time.perf_counter() - t0, 1), peak_rss=status("VmHWM"),
                  peak_vm=status("VmPeak"))
    print("RESULT " + json.dumps(result), flush=True)


def run_step(a: argparse.Namespace, step: str, limit: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--step", step, "--tokens", str(a.tokens), "--scratch", a.scratch,
           "--source", str(a.source), "--corpus", a.corpus, "--cache", a.cache, "--dim", str(a.dim),
           "--threads", str(a.threads), "--min-count", str(a.min_count), "--limit-kind", a.limit_kind]
    if limit:
        cmd += ["--limit", str(limit)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=harness.child_env())
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        return {"ok": False, "error": f"exit {proc.returncode}: {proc.stderr[-800:]}"}
    return json.loads(lines[-1][len("RESULT "):])


def gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=1_000_000_000, help="corpus size in tokens (1e9)")
    p.add_argument("--scratch", default="/tmp/parvec-bigcorpus", help="where the corpus and cache go")
    p.add_argument("--source", default=str(DEFAULT_SOURCE), help="the .xz corpus repeated")
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--min-count", dest="min_count", type=int, default=5)
    p.add_argument("--limit", type=int, default=None, help="memory limit of the limited run, bytes")
    p.add_argument("--limit-kind", dest="limit_kind", choices=("data", "as"), default="data")
    p.add_argument("--no-limited-run", dest="limited", action="store_false")
    p.add_argument("--limited-only", dest="limited_only", action="store_true",
                   help="skip the unlimited steps (the corpus must be there: use --keep on the first run)")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--step", help=argparse.SUPPRESS)
    p.add_argument("--corpus", default="", help=argparse.SUPPRESS)
    p.add_argument("--cache", default="", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.step:
        child(a)
        return
    scratch = Path(a.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    need = a.tokens * 6 * 2 + (1 << 30)  # text (~5.9 bytes a token) + tokens.npy (4) x cache entries, roughly
    free = shutil.disk_usage(scratch).free
    if free < need:
        sys.exit(f"{scratch}: {gib(free)} free, the run needs about {gib(need)}")
    a.corpus = str(scratch / f"corpus_{a.tokens}.txt")
    a.cache = str(scratch / "cache")
    print(f"parvec bench_bigcorpus: {a.tokens:,} tokens in {scratch}; load {os.getloadavg()}; "
          f"{harness.machine_line(harness.machine())}", flush=True)
    results: dict = {"tokens": a.tokens, "load_at_start": os.getloadavg(), "steps": {}, "limited": {}}
    token_bytes = a.tokens * 4
    bar = int(1.5 * 2**30)
    try:
        for step in ("generate",) if a.limited_only else ("generate", "count", "encode", "train"):
            if step == "encode":
                shutil.rmtree(a.cache, ignore_errors=True)
            r = run_step(a, step)
            results["steps"][step] = r
            print(f"{step:9s} {'ok ' if r.get('ok') else 'FAILED'} {r.get('seconds', 0):8.1f} s  peak RSS "
                  f"{gib(r.get('peak_rss', 0))}  peak VM {gib(r.get('peak_vm', 0))}  "
                  f"{ {k: v for k, v in r.items() if k not in ('ok', 'seconds', 'peak_rss', 'peak_vm')} }",
                  flush=True)
            if not r.get("ok"):
                break
        if a.limited:
            limit = a.limit or min(int(0.9 * token_bytes), bar)
            results["limit"] = {"bytes": limit, "kind": a.limit_kind, "token_array_bytes": token_bytes}
            print(f"under RLIMIT_{a.limit_kind.upper()} = {gib(limit)} (the int32 token array: {gib(token_bytes)})",
                  flush=True)
            shutil.rmtree(a.cache, ignore_errors=True)
            for step in ("count", "encode", "train"):
                r = run_step(a, step, limit=limit)
                results["limited"][step] = r
                print(f"{step:9s} {'ok ' if r.get('ok') else 'FAILED'} {r.get('seconds', 0):8.1f} s  peak RSS "
                      f"{gib(r.get('peak_rss', 0))}  peak VM {gib(r.get('peak_vm', 0))}"
                      + ("" if r.get("ok") else f"  {r.get('error')}"), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    peaks = [r.get("peak_rss", 0) for r in results["steps"].values()]
    ok = all(r.get("ok") for r in results["steps"].values()) and max(peaks, default=0) < bar
    limited_ok = all(r.get("ok") for r in results["limited"].values()) if results["limited"] else None
    results.update(bar_peak_rss_below_1_5GB=ok, limited_run_ok=limited_ok, load_at_end=os.getloadavg())
    print(f"bar (every step's peak RSS < 1.5 GB): {'met' if ok else 'NOT met'}; limited run: "
          f"{'succeeded' if limited_ok else 'skipped' if limited_ok is None else 'FAILED'}; load {os.getloadavg()}")
    if a.json:
        harness.write_json(a.json, "bench_bigcorpus", results)


if __name__ == "__main__":
    main()
