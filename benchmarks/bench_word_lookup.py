"""A word's id in a big sharded model: ``ShardedKeyedVectors.get_index`` through the partitions' hashed lookup.

Writes a synthetic sharded model (the layout ``parvec train --mode sharded --save-model DIR`` writes: ``model.json``,
``shards/shard-S-of-N/in.npy``, the vocabulary's partitions ``vocab/part-R.*.npy``, each word in the partition its
hash names) with ``--words`` words (default 16,000,000: ``w`` + the id in decimal, 2-9 bytes, Zipf counts, ids by
count) and ``--parts`` partitions (default 2: the biggest partitions a sharded run on two CPUs writes), vectors of
``--dim`` columns (the lookup never reads them), then

* ``first lookup``: the first word looked up in each partition (builds that partition's lookup: sorting its hashes),
* ``known``: ``get_index`` of ``--queries`` words drawn by Zipf frequency (the model's own words), mean per word,
* ``unknown``: ``get_index(word, -1)`` of as many words not in the vocabulary (each tried in its NFC and NFD forms
  too, as ``get_index`` does), mean per word,
* ``scan``: what finding a word cost before the hashed lookup (comparing the partition's every hash), a few words.

    python benchmarks/bench_word_lookup.py                       # 16M words in /tmp (about 0.8 GB of disk)
    python benchmarks/bench_word_lookup.py --words 1000000 --out bench_out/word_lookup.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import harness


def word_arena(n: int) -> tuple:
    """The words ``w0 .. w{n-1}`` as (bytes arena uint8, starts int64, lengths int64), built without a Python
    string per word."""
    import numpy as np

    ids = np.arange(n, dtype=np.int64)
    digits = np.ones(n, dtype=np.int64)
    for d in range(1, 19):
        digits += ids >= 10 ** d
    lengths = digits + 1
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    arena = np.empty(int(lengths.sum()), dtype=np.uint8)
    arena[starts] = ord("w")
    for d in range(int(digits.max())):  # digit d from the right
        has = digits > d
        arena[starts[has] + digits[has] - d] = ord("0") + (ids[has] // 10 ** d) % 10
    return arena, starts, lengths


def write_model(path: Path, n: int, parts: int, dim: int) -> None:
    """A sharded model of ``n`` words (see the module docstring) at ``path``: one shard of ``dim`` columns."""
    import numpy as np

    from parvec import model_io
    from parvec.config import TrainConfig
    from parvec.vocab_parts import write_part
    from parvec.wordhash import hash_arena, part_of

    arena, starts, lengths = word_arena(n)
    hashes = hash_arena(arena, starts, lengths, np.empty(n, dtype=np.uint64))
    owner = part_of(hashes, parts)
    counts = (1e10 / (np.arange(n, dtype=np.float64) + 1)).astype(np.int64) + 1
    records: list[dict] = []
    vectors = np.full((n, dim), 0.5, dtype=np.float32)
    crc = model_io.array_crc32(vectors)
    files = [{"directory": "shards/shard-0-of-1", "shape": [n, dim], "columns": [0, dim],
              "crc32": {"in": crc, "out": crc}}]

    def fill(tmp: Path) -> None:
        (tmp / files[0]["directory"]).mkdir(parents=True)
        for name in ("in", "out"):
            np.save(tmp / files[0]["directory"] / f"{name}.npy", vectors)
        for r in range(parts):
            sel = np.flatnonzero(owner == r)
            lens = lengths[sel]
            first = np.zeros(len(sel), dtype=np.int64)
            np.cumsum(lens[:-1], out=first[1:])
            take = np.repeat(starts[sel] - first, lens) + np.arange(int(lens.sum()))
            records.append(write_part(tmp / "vocab", r, sel, counts[sel], lengths=lens, arena=arena[take],
                                      hashes=hashes[sel]))

    record = {"files": files, "vocab": {"directory": "vocab", "parts": records, "words": n}}
    model = model_io.SavedModel(config=TrainConfig(dim=dim, epochs=1), vocab=None, vectors=None, syn1neg=None,
                                read_options={"min_count": 1}, epochs_trained=1, sharded=record)
    model_io.save(path, model, fill=fill)


def zipf_ids(n: int, k: int, seed: int):
    """``k`` ids of ``n`` drawn by Zipf frequency (rank r with weight 1/r)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    # inverse CDF of 1/r over 1..n: r = n ** u (continuous approximation)
    return np.minimum(n - 1, (np.float64(n) ** rng.random(k)).astype(np.int64) - 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--words", type=int, default=16_000_000)
    ap.add_argument("--parts", type=int, default=2)
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--queries", type=int, default=200_000)
    ap.add_argument("--model", default=None, help="the model directory (kept; written when missing)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    a = ap.parse_args()
    import numpy as np

    from parvec.sharded_vectors import ShardedKeyedVectors
    from parvec.wordhash import fnv1a64

    tmp = None
    if a.model:
        model = Path(a.model)
    else:
        tmp = tempfile.mkdtemp(prefix="bench-lookup-")
        model = Path(tmp) / "model"
    results: dict = {"words": a.words, "parts": a.parts}
    try:
        if not (model / "model.json").exists():
            t = time.perf_counter()
            write_model(model, a.words, a.parts, a.dim)
            results["write_s"] = time.perf_counter() - t
        kv = ShardedKeyedVectors.open(model, check=False)
        firsts = []
        for r in range(a.parts):  # a word of each partition, its first lookup
            word = next(f"w{i}" for i in range(a.words) if kv.parts.parts[r] is not None
                        and _owner(fnv1a64(f"w{i}"), a.parts) == r)
            t = time.perf_counter()
            assert kv.get_index(word) == int(word[1:])
            firsts.append(time.perf_counter() - t)
        results["first_lookup_s"] = firsts
        ids = zipf_ids(a.words, a.queries, a.seed)
        words = [f"w{i}" for i in ids.tolist()]
        t, c = time.perf_counter(), time.process_time()
        got = [kv.get_index(w) for w in words]
        results["known_us"] = (time.perf_counter() - t) / len(words) * 1e6
        results["known_cpu_us"] = (time.process_time() - c) / len(words) * 1e6
        assert got == ids.tolist()
        unknown = [f"x{i}" for i in ids.tolist()]
        t, c = time.perf_counter(), time.process_time()
        missing = [kv.get_index(w, -1) for w in unknown]
        results["unknown_us"] = (time.perf_counter() - t) / len(unknown) * 1e6
        results["unknown_cpu_us"] = (time.process_time() - c) / len(unknown) * 1e6
        assert set(missing) == {-1}
        p = kv.parts.parts[0]
        t = time.perf_counter()
        for w in words[:5]:
            h = np.uint64(fnv1a64(w))
            np.flatnonzero(np.asarray(p.hashes) == h)
        results["scan_us"] = (time.perf_counter() - t) / 5 * 1e6
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {harness.machine_line(harness.machine())}")
    print(f"{a.words:,} words in {a.parts} partitions" + (f" (written in {results['write_s']:.1f} s)"
                                                           if "write_s" in results else ""))
    print(f"first lookup in each partition (builds its lookup): {', '.join(f'{s:.2f} s' for s in firsts)}")
    print(f"get_index, known words (Zipf): {results['known_us']:.2f} us/word "
          f"({results['known_cpu_us']:.2f} us of CPU); "
          f"unknown words: {results['unknown_us']:.2f} us/word ({results['unknown_cpu_us']:.2f} us of CPU); "
          f"a scan of a partition's hashes: {results['scan_us']:.0f} us/word")
    if a.out:
        harness.write_json(a.out, "bench_word_lookup", {"settings": vars(a), "results": results})
    return 0


def _owner(h: int, parts: int) -> int:
    return ((h >> 32) * parts) >> 32


if __name__ == "__main__":
    sys.exit(main())
