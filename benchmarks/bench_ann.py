"""Approximate nearest-neighbour libraries on one model: build time, memory, recall@10 against exact, queries/s.

A synthetic model of ``N`` unit vectors of 100 dimensions around ``N/200`` random centres (noise 0.7: each word's
nearest words mostly share its centre, as trained word vectors' clusters do), 300 query words; the exact top 10 by
brute force.  Each library builds an HNSW graph (M 16, construction candidates 100; Annoy: 20 trees) on 2 threads,
then answers one query at a time on one thread with search candidates ``ef`` 32, 64, 128, 256.  Build time is given
by the wall clock and the process's CPU seconds (on a shared machine the CPU seconds say more), memory as the
process's resident growth while building.

    python benchmarks/bench_ann.py 200000 hnswlib,faiss,usearch,annoy
    python benchmarks/bench_ann.py 1000000 exact,hnswlib          # the exact single-query speed, then the index
"""
from __future__ import annotations

import gc
import os
import sys
import time

import harness
import numpy as np

D = 100


def model(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unit vectors, 300 query ids, their exact top 10 ids, the query left out)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, n // 200), D)).astype(np.float32)
    v = centres[rng.integers(0, len(centres), n)] + 0.7 * rng.standard_normal((n, D), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    qi = rng.choice(n, 300, replace=False)
    truth = []
    for lo in range(0, len(qi), 50):  # 50 queries at a time: their scores are 50 x n floats
        scores = v[qi[lo:lo + 50]] @ v.T
        scores[np.arange(len(scores)), qi[lo:lo + 50]] = -9
        top = np.argpartition(-scores, 10, axis=1)[:, :10]
        truth += [t[np.argsort(-s[t])] for t, s in zip(top, scores, strict=True)]
    return v, qi, np.array(truth)


def exact(n: int, v: np.ndarray, qi: np.ndarray) -> None:
    """The exact single-query speed: what ``KeyedVectors.most_similar`` does per word (a matrix-vector product
    over the unit rows and a partial sort), 20 words."""
    from parvec.keyedvectors import KeyedVectors

    kv = KeyedVectors(v, [f"w{i}" for i in range(n)])
    kv.most_similar("w0", topn=10)
    t, c = time.perf_counter(), time.process_time()
    for i in qi[:20].tolist():
        kv.most_similar(f"w{i}", topn=10)
    dt, dc = time.perf_counter() - t, time.process_time() - c
    print(f"exact most_similar n={n:,} queries/s {20 / dt:.1f} (per CPU second {20 / dc:.1f}) "
          f"load {os.getloadavg()[0]:.1f}", flush=True)


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def measure(name: str, n: int, v: np.ndarray, qi: np.ndarray, truth: np.ndarray, build, search) -> None:
    gc.collect()
    r0, t, c = rss_mib(), time.perf_counter(), time.process_time()
    index = build(v)
    wall, cpu, mem = time.perf_counter() - t, time.process_time() - c, rss_mib() - r0
    for ef in (32, 64, 128, 256):
        t, c = time.perf_counter(), time.process_time()
        found = [[j for j in search(index, v[i], ef) if j != i][:10] for i in qi]
        dt, dc = time.perf_counter() - t, time.process_time() - c
        recall = np.mean([len(set(f) & set(w)) / 10 for f, w in zip(found, truth, strict=True)])
        print(f"{name} n={n:,} build {wall:.1f} s (CPU {cpu:.1f} s) memory +{mem:.0f} MiB ef={ef} recall@10 "
              f"{recall:.3f} queries/s {len(qi) / dt:.0f} (per CPU second {len(qi) / max(dc, 1e-9):.0f}) "
              f"load {os.getloadavg()[0]:.1f}", flush=True)


def libraries() -> dict:
    """name -> (build(vectors), search(index, vector, ef) -> ids)."""
    def hnsw_build(v):
        import hnswlib

        p = hnswlib.Index(space="ip", dim=D)
        p.init_index(max_elements=len(v), M=16, ef_construction=100)
        p.add_items(v, num_threads=2)
        return p

    def hnsw_search(p, q, ef):
        p.set_ef(ef)
        return p.knn_query(q, k=11, num_threads=1)[0][0]

    def faiss_build(v):
        import faiss

        faiss.omp_set_num_threads(2)
        ix = faiss.IndexHNSWFlat(D, 16, faiss.METRIC_INNER_PRODUCT)
        ix.hnsw.efConstruction = 100
        ix.add(v)
        return ix

    def faiss_search(ix, q, ef):
        ix.hnsw.efSearch = ef
        return ix.search(q[None], 11)[1][0]

    def usearch_build(v):
        from usearch.index import Index

        ix = Index(ndim=D, metric="ip", dtype="f32", connectivity=16, expansion_add=100)
        ix.add(np.arange(len(v)), v, threads=2)
        return ix

    def usearch_search(ix, q, ef):
        ix.expansion_search = ef
        return ix.search(q, 11).keys

    def annoy_build(v):
        from annoy import AnnoyIndex

        a = AnnoyIndex(D, "angular")
        for i in range(len(v)):
            a.add_item(i, v[i])
        a.build(20, n_jobs=2)
        return a

    def annoy_search(a, q, ef):
        return a.get_nns_by_vector(q, 11, search_k=ef * 200)

    return {"hnswlib": (hnsw_build, hnsw_search), "faiss": (faiss_build, faiss_search),
            "usearch": (usearch_build, usearch_search), "annoy": (annoy_build, annoy_search)}


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    names = (sys.argv[2] if len(sys.argv) > 2 else "hnswlib,faiss,usearch,annoy").split(",")
    print(f"CPU: {harness.machine_line(harness.machine())}; load {os.getloadavg()[0]:.1f}", flush=True)
    v, qi, truth = model(n)
    for name in names:
        if name == "exact":
            exact(n, v, qi)
        else:
            measure(name, n, v, qi, truth, *libraries()[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
