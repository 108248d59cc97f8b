"""A sharded model directory written without Ray, for tests of what reads one (the lazy
``ShardedKeyedVectors``, ``parvec similar/analogy/eval/verify``): the layout ``parvec train --mode sharded
--save-model DIR`` writes (``model.json`` naming ``shards/shard-S-of-N/{in,out}.npy`` with their CRC-32s and the
vocabulary's partitions ``vocab/part-R.*.npy``, each word in the partition its hash names), from given vectors.

Example:
    >>> write_sharded_model(tmp_path / "model", vectors, words, shards=3)  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from parvec import model_io
from parvec.config import TrainConfig
from parvec.vocab_parts import write_part
from parvec.wordhash import fnv1a64, part_of


def topic_vectors(n: int = 300, dim: int = 24, topics: int = 3, seed: int = 7) -> tuple[np.ndarray, list[str]]:
    """``n`` float32 vectors of ``dim`` around ``topics`` random centres, words ``t{topic}w{i}`` in id order: what
    the queries and evaluations have something to find in."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dim))
    vectors = (centres[np.arange(n) % topics] + 0.6 * rng.standard_normal((n, dim))).astype(np.float32)
    return vectors, [f"t{i % topics}w{i}" for i in range(n)]


def write_sharded_model(path: Path, vectors: np.ndarray, words: list[str], shards: int = 2, parts: int = 2) -> Path:
    """Write ``vectors`` (row i is ``words[i]``'s; counts descending by id) as a sharded model at ``path``: the
    columns cut into ``shards`` near-equal blocks, the words into ``parts`` partitions by hash.  Returns ``path``."""
    n, dim = vectors.shape
    counts = np.arange(n, 0, -1, dtype=np.int64) + 10
    out = np.asarray(vectors, np.float32) * 0.5 + 0.01
    cuts = np.linspace(0, dim, shards + 1).round().astype(int)
    hashes = np.array([fnv1a64(w.encode()) for w in words], np.uint64)
    owner = part_of(hashes, parts)

    files: list[dict[str, Any]] = [
        {"directory": f"shards/shard-{s}-of-{shards}", "shape": [n, int(cuts[s + 1] - cuts[s])],
         "columns": [int(cuts[s]), int(cuts[s + 1])],
         "crc32": {"in": model_io.array_crc32(np.ascontiguousarray(vectors[:, cuts[s]:cuts[s + 1]])),
                   "out": model_io.array_crc32(np.ascontiguousarray(out[:, cuts[s]:cuts[s + 1]]))}}
        for s in range(shards)]
    records: list[dict] = []

    def fill(tmp: Path) -> None:
        for s, f in enumerate(files):
            (tmp / f["directory"]).mkdir(parents=True)
            np.save(tmp / f["directory"] / "in.npy", np.ascontiguousarray(vectors[:, cuts[s]:cuts[s + 1]]))
            np.save(tmp / f["directory"] / "out.npy", np.ascontiguousarray(out[:, cuts[s]:cuts[s + 1]]))
        for r in range(parts):
            ids = np.flatnonzero(owner == r)
            records.append(write_part(tmp / "vocab", r, ids, counts[ids], words=[words[i].encode() for i in ids]))

    record = {"files": files, "vocab": {"directory": "vocab", "parts": records, "words": n}}
    model = model_io.SavedModel(config=TrainConfig(dim=dim, epochs=1), vocab=None, vectors=None, syn1neg=None,
                                read_options={"min_count": 1}, epochs_trained=1, sharded=record)
    model_io.save(path, model, fill=fill)
    return path
