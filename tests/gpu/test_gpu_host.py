"""The GPU path's host side, on any machine: algorithm/device validation, the clear errors without a GPU or
without the extra, the counter-based RNG, the launch plan and schedule, the shared-memory limits, the
bytes model, the benchmark's pure parts, and (where a CUDA toolkit exists) the kernels compiled for sm_90."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from benchmark_modules import load
from numba import njit

from parvec.capabilities import ALGORITHMS, GPU_ALGORITHMS
from parvec.config import TrainConfig, default_algo
from parvec.errors import ParvecError
from parvec.gpu import plan
from parvec.gpu.rng import (
    STREAM_NEGATIVE,
    STREAM_SHRINK,
    STREAM_SUBSAMPLE,
    alias_draw,
    counter_hash,
    epoch_key,
    hash_uniform,
    keeps_token,
    negative_sample,
    par_c_rep,
    window_shrink,
)
from parvec.sampling import alias_table, noise_distribution
from parvec.schedule import Schedule

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------ config / errors
def test_algorithms_by_device():
    assert ALGORITHMS == ("classic", "hogbatch", "par")  # config.ALGORITHMS stays the CPU ones
    assert GPU_ALGORITHMS == ("full-w2v", "par")
    assert default_algo("cpu") == "hogbatch" and default_algo("cuda") == "full-w2v"
    assert TrainConfig().algo == "hogbatch" and TrainConfig(device="cuda").validate().algo == "full-w2v"
    assert TrainConfig(device="cuda", algo="par").validate().algo == "par"
    assert TrainConfig(algo="par").validate().device == "cpu"
    cfg = TrainConfig(device="cuda")
    assert TrainConfig.from_dict(cfg.to_dict()).algo == "full-w2v"


@pytest.mark.parametrize(("algo", "device", "words"), [
    ("full-w2v", "cpu", ["GPU only", "--device cuda"]),
    ("hogbatch", "cuda", ["CPU only", "full-w2v or par"]),
    ("classic", "cuda", ["CPU only", "full-w2v"]),
    ("sgd", "cuda", ["algo must be one of", "full-w2v"]),
])
def test_wrong_algorithm_for_device_is_refused(algo, device, words):
    with pytest.raises(ParvecError) as err:
        TrainConfig(algo=algo, device=device).validate()
    for w in words:
        assert w in str(err.value)


def _no_gpu_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PARVEC_CACHE_DIR"] = env.get("PARVEC_CACHE_DIR", "")
    return env


@functools.cache
def _has_gpu() -> bool:
    from numba import config, cuda

    return bool(cuda.is_available()) and not config.ENABLE_CUDASIM


def test_cli_without_gpu_exits_2_naming_the_device(tmp_path, capsys):
    if _has_gpu():
        pytest.skip("this machine has a CUDA GPU")
    text = tmp_path / "t.txt"
    text.write_text("a b c a b c\n" * 5, encoding="utf-8")
    env = dict(_no_gpu_env(), PARVEC_CACHE_DIR=str(tmp_path / "cache"))
    args = ["train", str(text), "-o", str(tmp_path / "v.txt"), "--min-count", "1", "--no-cache"]
    out = subprocess.run([sys.executable, "-m", "parvec", *args, "--device", "cuda"], capture_output=True, text=True,
                         env=env)
    assert out.returncode == 2, out.stderr
    assert "--device cuda: no CUDA GPU is available" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "v.txt").exists()
    # full-w2v without --device cuda, and a CPU algorithm with it: the configuration error, not a traceback
    from parvec.cli import main

    assert main([*args, "--algo", "full-w2v"]) == 2
    assert "runs on the GPU only" in capsys.readouterr().err
    assert main([*args, "--device", "cuda", "--algo", "hogbatch"]) == 2
    assert "runs on the CPU only" in capsys.readouterr().err
    assert not (tmp_path / "v.txt").exists()


def test_word2vec_without_gpu_names_the_device():
    if _has_gpu():
        pytest.skip("this machine has a CUDA GPU")
    from parvec.word2vec import Word2Vec

    with pytest.raises(ParvecError, match="--device cuda: no CUDA GPU is available"):
        Word2Vec(sentences=[["a", "b", "c"]] * 20, min_count=1, device="cuda", vector_size=8)


def test_missing_extra_is_named(monkeypatch):
    import parvec.gpu as gpu

    monkeypatch.delitem(sys.modules, "parvec.gpu.driver", raising=False)
    monkeypatch.delattr(gpu, "driver", raising=False)
    monkeypatch.setitem(sys.modules, "numba_cuda", None)  # as if numba-cuda were not installed
    with pytest.raises(ParvecError, match=r"pip install 'parvec\[gpu\]'"):
        gpu.make_driver(TrainConfig(device="cuda"), np.ones(3, np.int64), np.zeros((3, 100), np.float32),
                         np.zeros((3, 100), np.float32))
    with pytest.raises(ParvecError, match="numba-cuda"):
        gpu.require_device()


# ---------------------------------------------------------------------------------------------------- RNG
def test_counter_hash_depends_on_every_coordinate():
    key = epoch_key(1, 0)
    base = counter_hash(key, 5, 9, STREAM_SHRINK)
    assert base == counter_hash(key, 5, 9, STREAM_SHRINK)  # a pure function
    others = {counter_hash(epoch_key(2, 0), 5, 9, STREAM_SHRINK), counter_hash(epoch_key(1, 1), 5, 9, STREAM_SHRINK),
              counter_hash(key, 6, 9, STREAM_SHRINK), counter_hash(key, 5, 10, STREAM_SHRINK),
              counter_hash(key, 5, 9, STREAM_SUBSAMPLE), counter_hash(key, 5, 9, STREAM_NEGATIVE)}
    assert base not in others and len(others) == 6


@njit(cache=True)
def _draw_many(key, n_sent, n_pos, k, prob, alias, window):
    negs = np.empty(n_sent * n_pos, np.int64)
    shrink = np.empty(n_sent * n_pos, np.int64)
    unif = np.empty(n_sent * n_pos, np.float64)
    same = True
    i = 0
    for s in range(n_sent):
        for p in range(n_pos):
            negs[i] = negative_sample(key, s, p, k, prob, alias)
            same &= negs[i] == alias_draw(counter_hash(key, s, p, STREAM_NEGATIVE + k), prob, alias)
            shrink[i] = window_shrink(key, s, p, window)
            unif[i] = hash_uniform(counter_hash(key, s, p, STREAM_SUBSAMPLE))
            i += 1
    return negs, shrink, unif, same


def test_device_draws_follow_their_distributions():
    counts = np.array([5000, 2000, 900, 400, 100, 30, 7, 1] * 4, dtype=np.int64)
    p = noise_distribution(counts)
    prob, alias = alias_table(p)
    negs, shrink, unif, same = _draw_many(epoch_key(7, 3), 400, 500, 2, prob, alias, 5)
    assert same  # negative_sample is alias_draw of the counter hash, as the kernels compute it
    freq = np.bincount(negs, minlength=len(p)) / len(negs)
    assert np.abs(freq - p).max() < 0.004  # 200,000 draws: ~0.001 standard error on the largest
    assert sorted(set(shrink.tolist())) == [0, 1, 2, 3, 4]
    assert abs(np.bincount(shrink).min() / len(shrink) - 0.2) < 0.01
    assert 0 <= unif.min() and unif.max() < 1 and abs(unif.mean() - 0.5) < 0.005


def test_subsampling_keeps_at_the_word2vec_rate():
    keep = np.float32(0.3)

    @njit
    def kept(key, n):
        c = 0
        for p in range(n):
            c += keeps_token(key, 1, p, keep)
        return c

    rate = kept(epoch_key(1, 0), 100_000) / 100_000
    assert abs(rate - 0.3) < 0.01
    assert kept(epoch_key(1, 0), 1000) == kept(epoch_key(1, 0), 1000)
    assert keeps_token(epoch_key(1, 0), 0, 0, np.float32(1.0))  # keep >= 1: always


def test_c_rep_rule():
    key = epoch_key(1, 0)
    edge = {par_c_rep(key, s, 0, 100, 5) for s in range(300)}
    middle = {par_c_rep(key, s, 50, 100, 5) for s in range(300)}
    assert edge == set(range(5)) and middle == set(range(10))
    assert {par_c_rep(key, s, 96, 100, 5) for s in range(300)} == set(range(5))  # within 5 of the end


# ------------------------------------------------------------------------------------------------- the plan
def test_launch_bounds_cover_every_sentence_once():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 1000, 3000)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    b = plan.launch_bounds(offsets, 100_000, max_blocks=250)
    assert b[0] == 0 and b[-1] == 3000 and (np.diff(b) > 0).all()
    words = offsets[b[1:]] - offsets[b[:-1]]
    blocks = np.diff(b)
    assert (blocks <= 250).all()
    # every launch but the last reaches the target or the block cap, and overshoots by less than a sentence
    full = (words[:-1] >= 100_000) | (blocks[:-1] == 250)
    assert full.all() and (words < 100_000 + 1000).all()


def test_epoch_launches_cut_sentences_and_follow_the_cpu_schedule():
    cfg = TrainConfig(device="cuda", alpha=0.04, min_alpha=0.001, epochs=3)
    parts = [(np.zeros(2500, np.int32), np.array([0, 2500])), (np.zeros(700, np.int32), np.array([0, 300, 700]))]
    launches = list(plan.epoch_launches(cfg, parts, 1, Schedule.of(cfg, 3200, 3), 1000))
    cut0 = launches[0][1]
    assert cut0.tolist() == [0, 1000, 2000, 2500]  # a 2500-token sentence in pieces of <= 1000
    ls = [launch for _, _, launch in launches]
    assert [launch.words for launch in ls] == [1000, 1000, 500, 700]
    assert [launch.sentence_base for launch in ls] == [0, 1, 2, 3]  # epoch-wide sentence numbers, across parts
    rate = Schedule.of(cfg, 3200, 3).alpha_at  # the one schedule every driver uses (parvec.schedule)
    pos = 3200  # epoch 1 starts after one epoch's words
    for launch in ls:
        assert launch.alpha0 == pytest.approx(rate(pos)) and launch.alpha1 == pytest.approx(rate(pos + launch.words))
        pos += launch.words
    assert rate(0) == 0.04 and rate(9600) == pytest.approx(0.001) and rate(4800) == pytest.approx(0.0205)
    assert all(launch.key == ls[0].key for launch in ls) and ls[0].key != next(iter(
        plan.epoch_launches(cfg, parts, 2, Schedule.of(cfg, 3200, 3), 1000)))[2].key


def test_gpu_rate_schedule_is_the_cpu_trainers():
    # The CPU trainer's chunk rates come from the same linear formula: check on a real run's first chunk.
    from parvec.corpus import EncodedCorpus
    from parvec.trainer import Trainer

    cfg = TrainConfig(algo="classic", dim=4, epochs=2, threads=1, progress=False, chunk_words=50, alpha=0.05)
    corpus = EncodedCorpus.from_sentences([["a", "b", "c", "d"] * 25] * 4, min_count=1)
    seen = []
    trainer = Trainer(cfg, corpus.vocab.counts)
    kernel = trainer.algorithm.module.train_chunk

    class Spy:  # the classic kernel module, recording each chunk's rates (its ChunkRates)
        def train_chunk(self, *args):
            if args[4] < args[5]:  # not the compile-only call over no sentences
                seen.append((args[10][0], args[10][1]))
            return kernel(*args)

    trainer.algorithm = type(trainer.algorithm)(trainer.algorithm.name, Spy())
    trainer.train(corpus)
    rate = Schedule.of(TrainConfig(device="cuda", alpha=0.05, epochs=2), corpus.n_tokens).alpha_at
    assert seen[0][0] == pytest.approx(rate(0)) and seen[-1][1] == pytest.approx(rate(2 * corpus.n_tokens))
    assert seen[1][0] == pytest.approx(rate(100))


# -------------------------------------------------------------------------------- kernels' static properties
def test_shared_memory_limits_are_clear_errors():
    from parvec.gpu import full_w2v, par_gpu

    full_w2v.check_shared(256, 300, 5, 5)  # fits: 2 x 11 x 300 floats of ring
    with pytest.raises(ParvecError, match=r"window 10 at dim 300 needs .* lower --window or --dim"):
        full_w2v.check_shared(128, 300, 10, 5)
    par_gpu.check_shared(256, 300, 5, 24, 45)  # fits: the ring (2 x 11 x 300 floats) beside the repulsion's chunks
    with pytest.raises(ParvecError, match="lower --par-batch, --negative or --window"):
        par_gpu.check_shared(128, 128, 10, 24, 475)  # negative 25, window 10
    with pytest.raises(ParvecError, match=r"window 8, dim 300.*lower --par-batch, --negative or --window"):
        par_gpu.check_shared(256, 300, 8, 24, 75)  # both buffers live at once (the interleaved order)
    from parvec.gpu.reference import par_batch_size

    with pytest.raises(ParvecError, match="par_batch must be >= 1"):
        par_batch_size(TrainConfig(device="cuda", algo="par", par_batch=0))


def test_bytes_model():
    from parvec.gpu.driver import model_bytes_per_word

    for d in (100, 128, 300):
        assert model_bytes_per_word(TrainConfig(device="cuda", dim=d, negative=5)) == 56 * d
    assert model_bytes_per_word(TrainConfig(device="cuda", dim=100, negative=10)) == 96 * 100
    par = model_bytes_per_word(TrainConfig(device="cuda", algo="par", dim=100, negative=5, window=5, par_batch=24))
    assert par == round(1600 + 800 * (24 + 22.5) / 24)


# -------------------------------------------------------------------------------------------- the benchmark
@pytest.fixture(scope="module")
def bench():
    return load("bench_gpu", "bench_words")


def test_bench_repeats_the_corpus_and_reports_ratios(bench):
    tokens = np.arange(10, dtype=np.int32)
    offsets = np.array([0, 4, 10])
    t, o, copies = bench.repeat_corpus(tokens, offsets, 25)
    assert copies == 3 and len(t) == 30 and o.tolist() == [0, 4, 10, 14, 20, 24, 30]
    assert (t[o[2]:o[3]] == tokens[:4]).all()
    rows = [{"dim": 100, "corpus": "c", "system": "hogbatch-cpu", "words_per_sec": 2e6},
            {"dim": 100, "corpus": "c", "system": "full-w2v t64 tree", "words_per_sec": 9e6,
             "model_bytes_per_sec": 3e10, "fraction_of_peak": 0.01}]
    table = bench.ratio_table(rows)
    assert "| 100 | c | full-w2v t64 tree | 9.00M | 4.50× | 30 | 1% |" in table
    assert bench.occupancy(96, 18592, 64) == {"blocks_per_sm": 10, "warps_per_sm": 20, "occupancy": 20 / 64,
                                              "limited_by": "registers"}
    assert bench.barriers_per_word("full-w2v", 5, 64, "tree") == 42
    assert bench.kept_fraction(np.array([1000, 1]), 1e-3) < 1


def test_bench_reference_systems_floor_and_residency(bench):
    assert bench.parse_reference_system("full-w2v@1320") == ("full-w2v", 1320)
    assert bench.parse_reference_system("par-phased") == ("par-phased", None)
    for bad in ("hogbatch@8", "par@0", "sgd", "par@x"):
        with pytest.raises(ValueError, match="reference system"):
            bench.parse_reference_system(bad)
    from parvec.corpus import EncodedCorpus

    c = EncodedCorpus.from_arrays(np.arange(10, dtype=np.int32), np.array([0, 4, 7, 10]))
    assert bench.head_corpus(c, 8).offsets.tolist() == [0, 4, 7] and bench.head_corpus(c, 0) is c
    assert bench.head_corpus(c, 3).offsets.tolist() == [0, 3]  # shorter than the first sentence: its head
    rows = [{"dim": 128, "corpus": "c", "algo": "full-w2v", "system": "a", "words_per_sec": 1.2e8},
            {"dim": 128, "corpus": "c", "algo": "full-w2v", "system": "b", "words_per_sec": 1.4e8},
            {"dim": 100, "corpus": "c", "algo": "full-w2v", "system": "c", "words_per_sec": 9e8}]
    assert bench.speed_floor_lines(rows, "c", 150e6) == [
        "- floor: full-w2v at d 128, 140.0M words/s (b) >= 150M: NOT met (goal 200M: not met)"]
    assert bench.speed_floor_lines(rows, "other", 150e6) == []
    report = {"registers_per_thread": {"x": 96}, "shared_bytes_per_block": 18592, "threads_per_block": 64}
    assert bench.resident_blocks(report, 132) == 1320 and bench.resident_blocks(report, None) is None


def test_bench_gpu_only_paths_import_what_exists(bench):
    # --model-check and the GPU runs cannot run here; the names they import from parvec must still exist (a move
    # of init_input_vectors out of parvec.trainer broke --model-check and --reference unseen)
    import ast
    import importlib
    import importlib.util

    tree = ast.parse(Path(bench.__file__).read_text(encoding="utf-8"))
    missing = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "parvec":
            module = importlib.import_module(node.module)
            missing += [f"{node.module}.{a.name}" for a in node.names if not hasattr(module, a.name)
                        and not (hasattr(module, "__path__")  # a package's submodule, imported by name
                                 and importlib.util.find_spec(f"{node.module}.{a.name}") is not None)]
    assert missing == []


def test_bench_scores_take_a_missing_score_as_nan(bench):
    # a corpus without the evaluation sets' words: the evaluator says None, the summary's means need numbers
    got = bench.scores({"ws353": {"spearman": None}, "simlex": {"spearman": 0.25}, "analogies": {"3cosadd": None}})
    assert np.isnan(got[0]) and got[1] == 0.25 and np.isnan(got[2])
    assert bench.fmt_scores(None, {"ws353": {"spearman": None}}) == "- / - / -"


def test_launch_bounds_and_default_blocks():
    from parvec.gpu.blocks import default_reduction, min_blocks_per_sm, threads_for
    from parvec.gpu.full_w2v import shared_bytes as fw_bytes
    from parvec.gpu.par_gpu import shared_bytes as par_bytes

    assert [threads_for(d) for d in (50, 100, 128, 300)] == [32, 64, 64, 256]
    assert [threads_for(d, "par") for d in (50, 100, 128, 300)] == [64, 128, 128, 256]
    # at most the blocks per SM the kernels had before (10 of 64 threads at d 128), and what shared memory allows
    assert min_blocks_per_sm(64, fw_bytes(64, 128, 5, 5)) == 10
    assert min_blocks_per_sm(64, par_bytes(64, 128, 5, 24, 45)) == 7  # the ring beside the repulsion's chunks
    assert min_blocks_per_sm(256, fw_bytes(256, 300, 5, 5)) == 2
    # the shuffle by default on a GPU (faster on the H200), the tree under the simulator or for a partial warp
    assert [default_reduction(t, sim) for t, sim in ((64, False), (32, False), (64, True), (16, False))] == [
        "shuffle", "shuffle", "tree", "tree"]


def test_bench_without_gpu_says_so():
    if _has_gpu():
        pytest.skip("this machine has a CUDA GPU")
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_gpu.py"), "--no-tests"],
                         capture_output=True, text=True, env=_no_gpu_env())
    assert out.returncode == 2 and out.stderr.startswith("no CUDA device"), out.stderr


def test_kernels_compile_for_sm90_without_spills(ptx_run):
    rc, text, folder = ptx_run
    if rc == 3:
        pytest.skip(f"no CUDA toolkit (libnvvm, ptxas) here: {text[-300:]}")
    assert rc == 0, text[-3000:]
    rows = json.loads((folder / "ptx.json").read_text(encoding="utf-8"))["ptx"]
    assert {(r["algo"], r["reduction"]) for r in rows} == {("full-w2v", "shuffle"), ("par", "tree")}
    for r in rows:
        # the output rows stay in registers (no local-memory stack, no spills); shared memory is what we budget
        assert r["stack_bytes"] == 0 and r["spill_stores"] == 0 and r["spill_loads"] == 0, r
        assert r["smem_bytes"] == r["smem_model_bytes"], r
        assert 0 < r["registers"] <= 255 and r["blocks_per_sm"] >= 1, r


def test_default_words_per_launch_bounds_the_concurrency():
    # a launch's sentences run at once (Hogwild across blocks): 1/16 of an epoch, capped per algorithm as measured
    # on an H200 (docs/gpu.md: full-w2v's quality stays within 0.01 / 0.01 / 1 of CPU hogbatch up to 262,144 words
    # per launch; PAR's cap stays at 100k until its larger launches are measured over three seeds)
    assert plan.default_words_per_launch("full-w2v", 17_000_000) == 1 << 18
    assert plan.default_words_per_launch("par", 17_000_000) == 100_000
    assert plan.default_words_per_launch("full-w2v", 2_000_000) == 125_000  # the demo corpus: 16 launches an epoch
    assert plan.default_words_per_launch("par", 1_000) == plan.MIN_WORDS_PER_LAUNCH
    for algo in ("full-w2v", "par"):
        for words in (10, 10**5, 10**6, 10**7, 10**9):
            wpl = plan.default_words_per_launch(algo, words)
            assert plan.MIN_WORDS_PER_LAUNCH <= wpl <= plan.MAX_WORDS_PER_LAUNCH[algo]
            assert wpl <= max(words // plan.LAUNCHES_PER_EPOCH, plan.MIN_WORDS_PER_LAUNCH)


@pytest.mark.parametrize("cap", [-1, 2.5, True])
def test_a_writers_cap_that_is_not_a_count_is_refused_naming_the_parameter(cap):
    with pytest.raises(ParvecError, match=r"gpu_writers_cap must be an integer >= 0 \(0: off\), got"):
        TrainConfig(device="cuda", gpu_writers_cap=cap).validate()
    assert TrainConfig(device="cuda", gpu_writers_cap=8).validate().gpu_writers_cap == 8


def test_the_writers_cap_is_saved_only_when_set_and_read_back():
    assert "gpu_writers_cap" not in TrainConfig(device="cuda").to_dict()  # the files of runs without it are unchanged
    d = TrainConfig(device="cuda", gpu_writers_cap=8).to_dict()
    assert d["gpu_writers_cap"] == 8 and TrainConfig.from_dict(d).gpu_writers_cap == 8
