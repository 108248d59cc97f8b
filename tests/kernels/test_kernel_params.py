"""The CPU kernels read their settings by name: one ``KernelParams`` record per run and a ``ChunkRates`` per chunk,
both compiled by numba as named tuples (one signature whatever the config's scalar types; cached like any other)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from numba import typeof

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.kernels import select_algorithm
from parvec.kernels.params import ChunkRates, KernelParams
from parvec.trainer import Trainer

SRC = Path(__file__).resolve().parents[2] / "src"
FIELD_TYPES = [int, int, int, int, float, bool, bool, bool]

CONFIGS = [TrainConfig(algo="classic"), TrainConfig(algo="hogbatch"), TrainConfig(algo="par", par_h_factor=1.2),
           TrainConfig(algo="classic", sg=False), TrainConfig(algo="hogbatch", sg=False, cbow_mean=False),
           TrainConfig(hs=True, negative=0), TrainConfig(hs=True, sg=False, compute_loss=False)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.algo}-sg{int(c.sg)}-hs{int(c.hs)}")
def test_every_kernel_module_builds_one_record_of_python_scalars(config: TrainConfig) -> None:
    kp, floats = select_algorithm(config).params(config)
    assert type(kp) is KernelParams and floats >= config.dim
    assert [type(v) for v in kp] == FIELD_TYPES
    assert (kp.window, kp.negative, kp.sg, kp.cbow_mean, kp.compute_loss) == (
        config.window, config.negative, config.sg, config.cbow_mean, config.compute_loss)


def test_numpy_scalars_become_the_same_record_type() -> None:
    # a config holding numpy scalars (a value read from an array) must not compile a second signature
    plain = KernelParams.of(TrainConfig(window=7, negative=3), batch=5, h_max=2, h_factor=1.5)
    loose = KernelParams.of(SimpleNamespace(window=np.int32(7), negative=np.int64(3), sg=np.bool_(True),  # type: ignore[arg-type]
                                            cbow_mean=1, compute_loss=np.bool_(True)),
                            batch=np.int16(5), h_max=np.int64(2), h_factor=np.float32(1.5))  # type: ignore[arg-type]
    assert loose == plain and [type(v) for v in loose] == FIELD_TYPES
    assert typeof(loose) == typeof(plain)
    rates = ChunkRates.of(np.float32(0.025), np.float64(0.02))
    assert typeof(rates) == typeof(ChunkRates(0.5, 0.25)) and rates.alpha0 == float(np.float32(0.025))


def test_the_trainer_compiles_the_kernel_for_the_two_records() -> None:
    corpus = EncodedCorpus.from_sentences([["a", "b", "c", "d", "e"] * 20] * 5, min_count=1)
    cfg = TrainConfig(algo="classic", dim=8, epochs=1, threads=1, progress=False, chunk_words=100)
    trainer = Trainer(cfg, corpus.vocab.counts)
    trainer.train(corpus)
    assert trainer.kernel_params == KernelParams.of(cfg)
    signatures = trainer.algorithm.train_chunk.signatures
    assert signatures and all(sig[9] == typeof(trainer.kernel_params) and sig[10] == typeof(ChunkRates(0.0, 0.0))
                              for sig in signatures)


CACHE_SCRIPT = """
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.trainer import Trainer

corpus = EncodedCorpus.from_sentences([["a", "b", "c", "d", "e"] * 20] * 5, min_count=1)
trainer = Trainer(TrainConfig(algo="classic", dim=8, epochs=1, threads=1, progress=False), corpus.vocab.counts)
trainer.train(corpus)
stats = trainer.algorithm.train_chunk.stats
print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


def test_a_kernel_taking_the_records_loads_from_numbas_cache_in_the_next_process(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(SRC), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    runs = [subprocess.run([sys.executable, "-c", CACHE_SCRIPT], env=env, capture_output=True, text=True, timeout=600)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-3000:]
    (hits1, misses1), (hits2, misses2) = (map(int, r.stdout.split()) for r in runs)
    assert (hits1, misses1) == (0, 1)  # the first process compiles
    assert (hits2, misses2) == (1, 0)  # the second loads what it wrote
