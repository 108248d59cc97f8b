"""What one minibatch call costs a shard and its client besides the shard's kernels, with the parvec on
PYTHONPATH (``bench_sharded.py calls`` runs it with this tree's and with a base revision's, each in its own
process): one shard actor of ``dim // 2`` columns (one of 2 shards) on a local Ray of 2 CPUs, the client threads in
this process, each sending the corpus's minibatches as a client thread does (``RayStep``: the previous
minibatch's coefficients and the next one's indices, float16 on the wire), 1 ... 64 threads at once.  Prints one
JSON line: per call, the wall time, the shard's step (unpacking and kernels, its thread's CPU), the shard's other
CPU (Ray's handling of the call) and this process's CPU (packing, Ray's submission and reply).

    PYTHONPATH=src python benchmarks/sharded_calls.py CORPUS.txt --client-counts 1 2 8 64

This script does not import the benchmarks' harness, which puts this checkout's ``src`` first on ``sys.path``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def calls_one(ns: argparse.Namespace) -> dict:
    """The measurements (module docstring) as a dict: ``rows`` (one per client-thread count), the shard's shape."""
    import threading

    import numpy as np
    import ray

    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.distributed import wire
    from parvec.distributed.client_actor import RayStep
    from parvec.distributed.shard_actor import ShardActor, ShardSpec
    from parvec.distributed.units import SamplingTables, UnitRunner, plan_units, prepare_part
    from parvec.sampling import chunk_seed
    from parvec.usage import own_cpu_seconds

    enc = EncodedCorpus.from_file(str(ns.corpus), ReadOptions(min_count=ns.min_count), cache_dir=ns.cache)
    cfg = TrainConfig(dim=ns.dim, window=ns.window, negative=ns.negative, sample=ns.sample).validate()
    tables = SamplingTables.per_word(enc.vocab.counts, cfg)
    tokens, offsets = prepare_part(enc.tokens, enc.offsets, cfg.max_sentence_length)
    runner = UnitRunner(cfg, tables.keep, ns.minibatch_words)
    mbs = []
    for u in plan_units([offsets], 100_000):
        mbs += list(runner.minibatches(tokens, offsets, u.s_lo, u.s_hi, int(chunk_seed(1, 0, u.index)), 0.025,
                                       0.02, u.words))
    inputs_per_mb = sum(m.inputs for m in mbs) / len(mbs)
    cols = ns.dim // 2
    spec = ShardSpec(index=0, shards=2, n_words=len(enc.vocab), dim=ns.dim, lo=0, hi=cols, window=ns.window,
                     negative=ns.negative, seed=1, in_flight=max(ns.client_counts))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    shard = ray.remote(ShardActor).options(max_concurrency=max(ns.client_counts) + 4).remote(
        spec, [tables.noise_prob, tables.noise_alias, None, None])
    ray.get(shard.info.remote())
    rows = []

    def client(k: int, clients: int, n_calls: int) -> None:
        step = RayStep(ray, [shard], ns.negative, 600.0, "float16")
        prev = None
        for i in range(n_calls):
            mb = mbs[(k + i * clients) % len(mbs)]
            out = step.result(step.submit(prev, mb))[0]
            prev = (mb, np.zeros(len(out), np.float32))

    transport = "ray, parts" if hasattr(wire, "split_call") else "ray, one array"  # this tree's, or a base's
    for clients in ns.client_counts:
        per = max(4, ns.calls // clients)
        client(0, 1, 4)  # warm
        before = ray.get(shard.info.remote())
        cpu0, t0 = own_cpu_seconds(), time.perf_counter()
        threads = [threading.Thread(target=client, args=(k, clients, per)) for k in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall, cpu = time.perf_counter() - t0, own_cpu_seconds() - cpu0
        after = ray.get(shard.info.remote())
        n = after.calls - before.calls
        kernel = after.kernel_seconds - before.kernel_seconds
        shard_cpu = after.cpu_seconds - before.cpu_seconds
        row = {"transport": transport, "clients": clients, "calls": n, "minibatch_words": ns.minibatch_words,
               "inputs_per_call": inputs_per_mb, "wall_ms_per_call": wall / n * 1e3,
               "shard_step_ms": kernel / n * 1e3, "shard_other_ms": (shard_cpu - kernel) / n * 1e3,
               "client_ms": cpu / n * 1e3, "load_average": open("/proc/loadavg").read().split()[0]}
        rows.append(row)
        print(f"{transport} x {clients}: {row['wall_ms_per_call']:.2f} ms/call wall, shard step "
              f"{row['shard_step_ms']:.2f} + other {row['shard_other_ms']:.2f} ms CPU, client "
              f"{row['client_ms']:.2f} ms CPU", file=sys.stderr, flush=True)
    ray.shutdown()
    return {"rows": rows, "columns": cols, "rows_of_shard": len(enc.vocab), "inputs_per_call": inputs_per_mb}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--client-counts", type=int, nargs="+", default=[1, 2, 8, 64])
    ap.add_argument("--calls", type=int, default=400, help="calls per measurement (400)")
    ap.add_argument("--minibatch-words", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--negative", type=int, default=5)
    ap.add_argument("--sample", type=float, default=1e-4)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--cache", type=Path, default=None)
    print(json.dumps(calls_one(ap.parse_args())))


if __name__ == "__main__":
    main()
