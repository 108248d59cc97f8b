"""A kernel trains the same bits whether this process compiled it or numba loaded it from its cache.

The batch kernels at the specialised dimensions (100, 300) called the batch code as a separately compiled numba
function, and a kernel compiled in the process ran other machine code for that call than the same kernel loaded
from numba's cache: the first run after the cache was cold (a new install, an edited kernel) trained vectors that
differed in their last bits from every later run, and a sharded run resumed after a kill (cached kernels) was not
the uninterrupted run (compiled ones) bit for bit.  Each check here runs one script twice in fresh processes that
share a new numba cache directory: the first compiles, the second loads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

# HogBatch's and the fast CBOW's batch update, and the sharded mode's fused calls (one shard), at d 100.
SCRIPT = """
import hashlib
import numpy as np
from parvec.config import TrainConfig
from parvec.distributed.shard_kernels import reference_train
from parvec.kernels import cbow_batch, hogbatch

rng = np.random.default_rng(0)
dim = 100
w_in = ((rng.random((50, dim), dtype=np.float32) - 0.5) / dim).astype(np.float32)
w_out = ((rng.random((50, dim), dtype=np.float32) - 0.5) / dim).astype(np.float32)
work = np.zeros(hogbatch.work_floats(11, 6, dim), np.float32)
cwork = np.zeros(cbow_batch.work_floats(4, 6, dim), np.float32)
labels = np.array([1, 0, 0, 0, 0, 0], np.float32)
for _ in range(200):
    hogbatch.hogbatch_update(w_in, w_out, rng.integers(0, 50, 10), rng.integers(0, 50, 6), labels,
                             np.float32(0.025), work)
    sent = rng.integers(0, 50, 12)
    cbow_batch.cbow_batch_update(w_in, w_out, sent, np.array([3, 6, 9]), np.array([0, 3, 6]), np.array([6, 9, 12]),
                                 rng.integers(0, 50, 5), np.float32(0.05), True, cwork)
tokens = rng.integers(0, 50, 3000).astype(np.int32)
counts = np.bincount(tokens, minlength=50) + 1
s_in, s_out, _ = reference_train(TrainConfig(dim=dim, epochs=1, seed=1), counts, [(tokens, np.arange(0, 3001, 100))],
                                 minibatch_words=256, fused=True)
print(hashlib.sha256(w_in.tobytes() + w_out.tobytes() + s_in.tobytes() + s_out.tobytes()).hexdigest())
"""


def test_the_batch_kernels_train_the_same_bits_compiled_and_loaded_from_the_cache(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(SRC), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    runs = [subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-3000:]
    assert any((tmp_path / "numba").rglob("*.nbi"))  # the second process had a cache to load
    compiled, loaded = (r.stdout.strip() for r in runs)
    assert compiled == loaded
