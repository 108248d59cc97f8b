"""The GPU kernels' equivalence cases and end-to-end checks, run by one process for all of them.

numba reads NUMBA_ENABLE_CUDASIM when ``numba.cuda`` is first imported, and the test session imports numba
long before; so tests/gpu/test_gpu_simulator.py runs this file as a script in a subprocess with the
simulator switched on (the simulator's cost is paid once) and checks what it writes:

    NUMBA_ENABLE_CUDASIM=1 python tests/gpu/sim_cases.py OUT_DIR

- ``OUT_DIR/<case>.npz``: each kernel case's vectors, per-sentence loss and pairs from the kernel and from
  :mod:`parvec.gpu.reference` (same initial vectors, negatives, rates), and the initial vectors;
- ``OUT_DIR/e2e.npz`` and ``OUT_DIR/summary.json``: the driver, Word2Vec and CLI checks and timings.

tests/gpu/test_gpu_hardware.py runs the same cases in-process on a real GPU.  Nothing here is collected by
pytest (the name does not start with ``test_``).
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WINDOW = 2
NEGATIVE = 2
PAR_BATCH = 4
VOCAB = 40


@dataclass(frozen=True)
class Case:
    """One kernel-vs-reference case: one launch over sentences of ``lengths`` tokens."""

    name: str
    algo: str
    dim: int
    lengths: tuple[int, ...]
    threads: int = 8
    sample: float = 0.0
    given_negatives: bool = True  # test mode: negatives from an array (else drawn on the device)
    disjoint: bool = False  # sentences (and their negatives) use disjoint words: blocks are independent
    duplicates: bool = False  # repeated words in the window, negatives equal to the center and to each other
    window: int = WINDOW
    negative: int = NEGATIVE
    par_batch: int = PAR_BATCH
    vocab: int = VOCAB
    scale: float = 0.3  # the initial vectors' standard deviation
    alpha: float = 0.1  # the launch's rate at its first word (half of it at its end)
    uniform: bool = False  # a vocabulary larger than VOCAB: equal counts (no hot rows) instead of Zipf's
    reduction: str = "tree"  # the simulator's run (tests/gpu/sim_shuffle.py gives it shuffles); the GPU runs both
    writers: int = 0  # full-w2v's gpu_writers_cap (the kernel then counts the blocks holding each row)
    holders: int = 0  # with writers: other blocks holding every row throughout (the kernel's counts start there)

    @property
    def independent(self) -> bool:
        """Whether the blocks touch disjoint rows (one launch is then deterministic on a GPU too)."""
        return self.disjoint or len(self.lengths) == 1


def _cases() -> list[Case]:
    cases = []
    for algo in ("full-w2v", "par"):
        for dim in (8, 33):
            # one word; shorter than the window (2 <= window, 4 < the ring of 2 window + 1); longer than the
            # ring, the block's 8 threads, the PAR minibatch of 4 and (dim 33) one staged chunk of 32 dimensions
            cases.append(Case(f"{algo}-d{dim}-len1", algo, dim, (1,)))
            cases.append(Case(f"{algo}-d{dim}-short", algo, dim, (2, 4), disjoint=True))
            cases.append(Case(f"{algo}-d{dim}-long", algo, dim, (23,)))
        cases.append(Case(f"{algo}-d33-batch", algo, 33, (1, 4, 23, 9), disjoint=True))
        cases.append(Case(f"{algo}-d33-drawn", algo, 33, (12, 30), sample=0.05, given_negatives=False))
        cases.append(Case(f"{algo}-d8-duplicates", algo, 8, (17,), duplicates=True))
        cases.append(Case(f"{algo}-d33-t32", algo, 33, (15,), threads=32))
        # the shuffle reduction (the default on a GPU): one warp, and two warps added across a barrier
        cases.append(Case(f"{algo}-d33-t32-shuffle", algo, 33, (15,), threads=32, reduction="shuffle"))
        cases.append(Case(f"{algo}-d33-t64-shuffle", algo, 33, (9, 7), threads=64, reduction="shuffle",
                          disjoint=True))
        if algo == "full-w2v":  # negatives equal to the center: a lane whose output is skipped shares a zero
            cases.append(Case(f"{algo}-d8-duplicates-shuffle", algo, 8, (17,), threads=32, reduction="shuffle",
                              duplicates=True))
        # word2vec's window and negatives, PAR's minibatch of 24 with up to 45 shared negatives (more than the
        # block's threads), drawn on the device
        cases.append(Case(f"{algo}-d33-w5n5", algo, 33, (70,), sample=0.05, given_negatives=False, window=5,
                          negative=5, par_batch=24, vocab=200))
        if algo == "full-w2v":  # the writers' scale: alone, each block holds its rows once (scale 1), the rows it
            # holds twice (repeated words, negatives) included, so the kernel still equals the reference
            cases.append(Case(f"{algo}-d8-duplicates-writers", algo, 8, (17,), duplicates=True, writers=1))
            cases.append(Case(f"{algo}-d33-w5n5-writers", algo, 33, (70, 40), sample=0.05, given_negatives=False,
                              window=5, negative=5, vocab=200, writers=2))
            cases.append(Case(f"{algo}-d33-t32-shuffle-writers", algo, 33, (15, 9), threads=32, reduction="shuffle",
                              writers=1))
            # ... and with other blocks holding every row (the counts start above zero), each change the block
            # adds back, of an output row and of a ring row, is scaled by cap / (holders + 1): its own copies of
            # a row (repeated words, a row entering as the same row leaves) are not counted as others'
            cases.append(Case(f"{algo}-d8-duplicates-holders", algo, 8, (17, 9), duplicates=True, writers=2,
                              holders=5))
            cases.append(Case(f"{algo}-d8-w5n5-holders", algo, 8, (40, 25), sample=0.05, given_negatives=False,
                              window=5, negative=5, vocab=200, writers=2, holders=3))
            cases.append(Case(f"{algo}-d33-t32-shuffle-holders", algo, 33, (15, 9), threads=32, reduction="shuffle",
                              writers=1, holders=3))
    return cases


CASES = _cases()
CASE_NAMES = [c.name for c in CASES]


def _production_cases() -> list[Case]:
    """Hardware only (too slow for the simulator): the defaults' sizes -- window 5, negative 5, PAR's minibatch
    24 (up to 45 shared negatives), two 1,000-token sentences, d 100, 128 and 300, a 2,000-word vocabulary,
    word2vec-like magnitudes -- with negatives and subsampling drawn on the device."""
    return [Case(f"{algo}-d{dim}-production", algo, dim, (1000, 1000), threads=0, sample=1e-3,
                 given_negatives=False, window=5, negative=5, par_batch=24, vocab=2000, scale=0.05, alpha=0.025)
            for algo in ("full-w2v", "par") for dim in (100, 128, 300)]


PRODUCTION_CASES = _production_cases()


def case_inputs(case: Case) -> dict:
    """The case's corpus, vectors, tables and negatives (deterministic per case name)."""
    from parvec.config import TrainConfig
    from parvec.gpu.plan import Launch
    from parvec.gpu.reference import par_h_max
    from parvec.gpu.rng import epoch_key
    from parvec.sampling import alias_table, keep_probabilities, noise_distribution

    rng = np.random.default_rng(sum(map(ord, case.name)))
    n_sent = len(case.lengths)
    offsets = np.concatenate([[0], np.cumsum(case.lengths)]).astype(np.int64)
    tokens = np.empty(offsets[-1], dtype=np.int32)
    vocab = case.vocab
    part = vocab // n_sent if case.disjoint else vocab
    ranges = []
    for s in range(n_sent):
        lo = s * part if case.disjoint else 0
        ranges.append((lo, lo + part))
        tokens[offsets[s]:offsets[s + 1]] = rng.integers(lo, lo + part, case.lengths[s])
    if case.duplicates:
        tokens[:] = rng.choice([3, 5, 7, 11], size=len(tokens))
    if vocab > VOCAB:  # Zipf-like counts, most frequent first: the hot rows of real text (or all alike)
        counts = np.full(vocab, 1000, np.int64) if case.uniform else (1_000_000 / np.arange(1, vocab + 1)).astype(
            np.int64) + 1
        tokens[:] = rng.choice(vocab, size=len(tokens), p=counts / counts.sum())
    else:
        counts = rng.integers(1, 200, vocab).astype(np.int64)
    config = TrainConfig(device="cuda", algo=case.algo, dim=case.dim, window=case.window, negative=case.negative,
                         par_batch=case.par_batch, sample=case.sample, progress=False)
    width = max(par_h_max(config), 1) if case.algo == "par" else case.negative
    negs = np.zeros((len(tokens), width), dtype=np.int32)
    for s in range(n_sent):
        lo, hi = ranges[s]
        negs[offsets[s]:offsets[s + 1]] = rng.integers(lo, hi, (case.lengths[s], width))
    if case.duplicates:
        negs[:, 0] = tokens  # a negative equal to the center (skipped by FULL-W2V, not by PAR)
        negs[:, 1] = rng.choice([3, 5], size=len(tokens))
        if width > 2:
            negs[:, 2] = negs[:, 1]  # the same negative twice
    prob, alias = alias_table(noise_distribution(counts))
    return {
        "config": config, "tokens": tokens, "offsets": offsets,
        "w_in": (rng.standard_normal((vocab, case.dim)) * case.scale).astype(np.float32),
        "w_out": (rng.standard_normal((vocab, case.dim)) * case.scale).astype(np.float32),
        "keep": keep_probabilities(counts, case.sample), "prob": prob, "alias": alias,
        "negs": negs if case.given_negatives else np.zeros((0, width), dtype=np.int32),
        "launch": Launch(0, 0, n_sent, 7, int(offsets[-1]), case.alpha, case.alpha / 2, epoch_key(3, 0)),
    }


def _launches(inputs: dict, per_sentence: bool) -> list:
    """The case's one launch, or one launch per sentence (each with the rate the one launch would give it)."""
    from parvec.gpu.plan import Launch, sentence_alpha

    launch = inputs["launch"]
    if not per_sentence:
        return [launch]
    offsets = inputs["offsets"]
    out = []
    for s in range(launch.s_lo, launch.s_hi):
        a = float(sentence_alpha(launch, offsets, s))
        out.append(Launch(0, s, s + 1, launch.sentence_base + s, int(offsets[s + 1] - offsets[s]), a, a, launch.key))
    return out


def run_reference(case: Case, per_sentence: bool = False) -> dict:
    """The case trained by :func:`parvec.gpu.reference.train_launch_reference`."""
    from parvec.gpu.reference import train_launch_reference

    x = case_inputs(case)
    w_in, w_out = x["w_in"].copy(), x["w_out"].copy()
    scale = min(1.0, case.writers / (case.holders + 1)) if case.writers else 1.0  # (the kernel's count, this block's)
    losses, pairs = [], []
    for launch in _launches(x, per_sentence):
        loss, p = train_launch_reference(case.algo, w_in, w_out, x["tokens"], x["offsets"], launch, x["keep"],
                                         x["prob"], x["alias"], x["config"], negs=x["negs"], neg_base=0,
                                         writers_scale=scale)
        losses.append(loss)
        pairs.append(p)
    return {"w_in": w_in, "w_out": w_out, "loss": np.concatenate(losses), "pairs": np.concatenate(pairs),
            "w_in0": x["w_in"], "w_out0": x["w_out"]}


def run_kernel(case: Case, per_sentence: bool = False, reduction: str | None = None, threads: int | None = None,
               inputs: dict | None = None) -> dict:
    """The case trained by the kernel (simulator or GPU, whichever numba.cuda is); ``inputs``: other inputs than
    :func:`case_inputs`'s."""
    from numba import cuda

    from parvec.gpu import full_w2v, par_gpu
    from parvec.gpu.blocks import threads_for
    from parvec.gpu.reference import par_batch_size, par_h_max

    x = case_inputs(case) if inputs is None else inputs
    cfg = x["config"]
    reduction = reduction or case.reduction
    threads = threads or case.threads or threads_for(cfg.dim, case.algo)
    if case.algo == "par":
        h_max = max(par_h_max(cfg), 1)
        kernel = par_gpu.make_kernel(threads, cfg.dim, cfg.window, cfg.negative, par_batch_size(cfg), h_max, reduction)
    else:
        kernel = full_w2v.make_kernel(threads, cfg.dim, cfg.window, cfg.negative, reduction, case.writers)
    w_in, w_out = cuda.to_device(x["w_in"]), cuda.to_device(x["w_out"])
    tokens, offsets = cuda.to_device(x["tokens"]), cuda.to_device(x["offsets"])
    keep, prob, alias = cuda.to_device(x["keep"]), cuda.to_device(x["prob"]), cuda.to_device(x["alias"])
    negs = cuda.to_device(x["negs"])
    # the writers' counts (case.writers): per output row the blocks holding it, per input row its ring copies
    busy = cuda.to_device(np.full((2, len(x["w_out"])), case.holders, dtype=np.int32))
    losses, pairs = [], []
    for launch in _launches(x, per_sentence):
        n_blocks = launch.s_hi - launch.s_lo
        out_loss = cuda.to_device(np.zeros(n_blocks, dtype=np.float64))
        out_pairs = cuda.to_device(np.zeros(n_blocks, dtype=np.int64))
        args = [w_in, w_out, tokens, offsets, launch.s_lo, launch.sentence_base, launch.key, launch.alpha0,
                launch.alpha1, launch.words, keep, prob, alias, negs, 0]
        if case.algo == "par":
            args.append(float(cfg.par_h_factor))
        args += [True, out_loss, out_pairs]
        if case.writers > 0:
            args.append(busy)
        kernel[n_blocks, threads](*args)
        losses.append(out_loss.copy_to_host())
        pairs.append(out_pairs.copy_to_host())
    return {"w_in": w_in.copy_to_host(), "w_out": w_out.copy_to_host(), "loss": np.concatenate(losses),
            "pairs": np.concatenate(pairs), "busy": busy.copy_to_host()}


# ---------------------------------------------------------------------------------------------- end to end
def tiny_sentences() -> list[list[str]]:
    """A few sentences over 20 words (lengths 1 .. 40): several launches, sentences past every tile."""
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(20)]
    return [[words[j] for j in rng.integers(0, 20, n)] for n in (1, 3, 12, 40, 7, 2, 25)]


def _e2e(out: Path) -> dict:
    """Word2Vec(device="cuda"), the driver's streamed/resident paths, resume, node2vec parts and the CLI, each
    against the reference driver."""
    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus
    from parvec.gpu.driver import GpuTrainer
    from parvec.gpu.reference import reference_train
    from parvec.model_tables import init_input_vectors
    from parvec.word2vec import Word2Vec

    arrays: dict[str, np.ndarray] = {}
    summary: dict[str, object] = {}
    sentences = tiny_sentences()
    for algo in ("full-w2v", "par"):
        t0 = time.perf_counter()
        kw = dict(vector_size=8, window=2, negative=2, min_count=1, epochs=2, seed=3, sample=0.05, alpha=0.1,
                  par_batch=4)
        model = Word2Vec(sentences=sentences, device="cuda", **({} if algo == "full-w2v" else {"algo": "par"}), **kw)
        summary[f"w2v-{algo}-seconds"] = time.perf_counter() - t0
        summary[f"w2v-{algo}-algo"] = model.config.algo
        summary[f"w2v-{algo}-loss"] = model.stats.loss_per_epoch
        summary[f"w2v-{algo}-report"] = model.run_report
        corpus = EncodedCorpus.from_sentences(sentences, min_count=1)
        n = len(corpus.vocab)
        w_in, w_out = init_input_vectors(n, 8, 3), np.zeros((n, 8), np.float32)
        ref_loss = reference_train(model.config, corpus.vocab.counts, w_in, w_out,
                                   lambda epoch, c=corpus: [(c.tokens, c.offsets)], corpus.n_tokens)
        summary[f"w2v-{algo}-ref-loss"] = ref_loss
        arrays[f"w2v-{algo}-w_in"] = model.wv.vectors.copy()
        arrays[f"w2v-{algo}-w_out"] = model.syn1neg.copy()
        arrays[f"w2v-{algo}-ref-w_in"] = w_in
        arrays[f"w2v-{algo}-ref-w_out"] = w_out

    # The driver: several launches (words_per_launch 25), streamed and resident, and a resumed run.
    corpus = EncodedCorpus.from_sentences(sentences, min_count=1)
    counts = corpus.vocab.counts
    parts = lambda epoch: [(corpus.tokens, corpus.offsets)]  # noqa: E731
    for algo in ("full-w2v", "par"):
        cfg = TrainConfig(device="cuda", algo=algo, dim=8, window=2, negative=2, epochs=2, seed=5, sample=0.05,
                          alpha=0.1, par_batch=4, progress=False)
        results = {}
        for mode in ("resident", "streamed"):
            trainer = GpuTrainer(cfg, counts, words_per_launch=25, resident=mode == "resident")
            snap = {}
            stats = trainer.train(corpus, on_epoch_end=lambda e, s, t=trainer, snap=snap: snap.setdefault(
                e, (t.w_in.copy(), t.w_out.copy())))
            results[mode] = (trainer.w_in.copy(), trainer.w_out.copy(), stats)
            summary[f"driver-{algo}-{mode}-corpus"] = trainer.report().to_json()["gpu"]["corpus"]
            summary[f"driver-{algo}-{mode}-launches"] = trainer.report().to_json()["gpu"]["launches"]
        resumed = GpuTrainer(cfg, counts, snap[0][0].copy(), snap[0][1].copy(), words_per_launch=25)
        r_stats = resumed.train(corpus, start_epoch=1)
        n = len(counts)
        w_in, w_out = init_input_vectors(n, 8, 5), np.zeros((n, 8), np.float32)
        ref_loss = reference_train(cfg, counts, w_in, w_out, parts, corpus.n_tokens, words_per_launch=25)
        for mode, (a, b, stats) in results.items():
            arrays[f"driver-{algo}-{mode}-w_in"] = a
            arrays[f"driver-{algo}-{mode}-w_out"] = b
            summary[f"driver-{algo}-{mode}-loss"] = stats.loss_per_epoch
            summary[f"driver-{algo}-{mode}-words"] = stats.words
        arrays[f"driver-{algo}-resumed-w_in"] = resumed.w_in.copy()
        arrays[f"driver-{algo}-resumed-w_out"] = resumed.w_out.copy()
        summary[f"driver-{algo}-resumed-loss"] = r_stats.loss_per_epoch
        arrays[f"driver-{algo}-ref-w_in"] = w_in
        arrays[f"driver-{algo}-ref-w_out"] = w_out
        summary[f"driver-{algo}-ref-loss"] = ref_loss
        summary["corpus-tokens"] = corpus.n_tokens
    # full-w2v with the concurrent-writers cap: the driver hands the kernel its per-row counts (a block alone: scale 1)
    cfg = TrainConfig(device="cuda", algo="full-w2v", dim=8, window=2, negative=2, epochs=2, seed=5, sample=0.05,
                      alpha=0.1, progress=False, gpu_writers_cap=8)
    trainer = GpuTrainer(cfg, counts, words_per_launch=25)
    trainer.train(corpus)
    arrays["driver-writers-w_in"] = trainer.w_in.copy()
    arrays["driver-writers-w_out"] = trainer.w_out.copy()

    # node2vec: walks fed as parts (new arrays every epoch, so streamed), against the reference.
    from parvec.graph.graph_io import Graph
    from parvec.graph.walks import WalkSpec, count_nodes, iter_walk_batches, rank_nodes

    src = np.array([0, 0, 1, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 2], dtype=np.int64)
    dst = np.array([1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8, 8, 0, 7], dtype=np.int64)
    graph = Graph.from_edges(src, dst, n_nodes=9)
    spec = WalkSpec(walk_length=8, num_walks=2, p=0.5, q=2.0, seed=9)
    node_counts = None
    for tokens, _ in iter_walk_batches(graph, spec, batch_walks=4, workers=1):
        node_counts = count_nodes(tokens, graph.n_nodes, node_counts)
    ranking = rank_nodes(node_counts)

    # regenerated every epoch, as Node2Vec does without its walk cache
    def walk_parts(epoch: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        return iter_walk_batches(graph, spec, batch_walks=4, node_map=ranking.rank, workers=1)

    words_per_epoch = int(node_counts.sum())
    cfg = TrainConfig(device="cuda", algo="full-w2v", dim=8, window=2, negative=2, epochs=2, seed=2, sample=0.0,
                      alpha=0.05, progress=False)
    ranked_counts = ranking.counts
    trainer = GpuTrainer(cfg, ranked_counts)
    w_in0, w_out0 = trainer.w_in.copy(), trainer.w_out.copy()
    stats = trainer.train_parts(walk_parts, words_per_epoch)
    ref_loss = reference_train(cfg, ranked_counts, w_in0, w_out0, walk_parts, words_per_epoch)
    arrays["walks-w_in"], arrays["walks-w_out"] = trainer.w_in.copy(), trainer.w_out.copy()
    arrays["walks-ref-w_in"], arrays["walks-ref-w_out"] = w_in0, w_out0
    summary["walks-loss"], summary["walks-ref-loss"] = stats.loss_per_epoch, ref_loss
    summary["walks-words"], summary["walks-words-per-epoch"] = stats.words, words_per_epoch
    summary["walks-corpus"] = trainer.report().to_json()["gpu"]["corpus"]

    # Mid-epoch checkpoints on the GPU, at kernel-launch boundaries (launches of ~25 words here), and a run resumed
    # from one, through Word2Vec: it must end where the run that was not interrupted ends.
    import os

    from parvec.checkpoints import list_checkpoints

    os.environ["PARVEC_GPU_WORDS_PER_LAUNCH"] = "25"
    try:
        ck = out / "gpu-checkpoints"
        ck.mkdir(exist_ok=True)
        kw = dict(vector_size=8, window=2, negative=2, min_count=1, epochs=2, seed=4, sample=0.0, alpha=0.05,
                  workers=1)
        full = Word2Vec(sentences=sentences, device="cuda", checkpoint_dir=ck, checkpoint_every=30, **kw)
        mids = [f for f in list_checkpoints(ck) if f.chunks_done]
        summary["gpu-mid-checkpoints"] = [[f.epoch, f.chunks_done] for f in mids]
        summary["gpu-mid-report"] = full.checkpoint_report.to_json()
        resumed = Word2Vec.load(mids[0].path)
        summary["gpu-resumed-position"] = resumed.position.to_json() if resumed.position is not None else None
        r_stats = resumed.train(sentences=sentences, resume=True)
        summary["gpu-full-loss"], summary["gpu-resumed-loss"] = full.stats.loss_per_epoch, r_stats.loss_per_epoch
        arrays["gpu-full-w_in"], arrays["gpu-full-w_out"] = full.wv.vectors.copy(), full.syn1neg.copy()
        arrays["gpu-resumed-w_in"], arrays["gpu-resumed-w_out"] = resumed.wv.vectors.copy(), resumed.syn1neg.copy()
    finally:
        os.environ.pop("PARVEC_GPU_WORDS_PER_LAUNCH", None)

    # No pair at all (one-word sentences): the CPU trainer's error, not random vectors handed back.
    from parvec.errors import ParvecError

    lonely = EncodedCorpus.from_sentences([["a"], ["b"], ["a"]], min_count=1)
    try:
        GpuTrainer(TrainConfig(device="cuda", dim=8, epochs=1, progress=False), lonely.vocab.counts).train(lonely)
        summary["no-pairs-error"] = None
    except ParvecError as exc:
        summary["no-pairs-error"] = str(exc)

    # The CLI: parvec train --device cuda writes vectors and a report with the GPU figures.
    from parvec.cli import main

    text = out / "tiny.txt"
    text.write_text("\n".join(" ".join(s) for s in sentences) + "\n", encoding="utf-8")
    rc = main(["train", str(text), "-o", str(out / "vectors.txt"), "--device", "cuda", "--dim", "8", "--window", "2",
               "--negative", "2", "--min-count", "1", "--epochs", "2", "--sample", "0", "--no-cache",
               "--report", str(out / "report.json")])
    summary["cli-rc"] = rc
    np.savez(out / "e2e.npz", **arrays)
    return summary


def main(out: Path) -> int:
    """Run every case and the end-to-end checks; write their results under ``out``."""
    from sim_shuffle import emulate_warp_shuffles  # this folder: the script's own

    emulate_warp_shuffles()
    sys.setswitchinterval(5e-5)  # the simulator's barriers poll 32 Python threads; the default 5 ms is 10x slower
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, object] = {"cases": {}, "errors": {}}
    t_all = time.perf_counter()
    for case in CASES:
        t0 = time.perf_counter()
        try:
            ref = run_reference(case)
            got = run_kernel(case)
            np.savez(out / f"{case.name}.npz", **{f"ref_{k}": v for k, v in ref.items()},
                     **{f"got_{k}": v for k, v in got.items()})
        except Exception:
            summary["errors"][case.name] = traceback.format_exc()
        summary["cases"][case.name] = time.perf_counter() - t0
    t0 = time.perf_counter()
    from sim_race import bad_launches  # this folder: the script's own

    summary["shared-array-race-launches"] = bad_launches()
    summary["shared-array-race-seconds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        summary["e2e"] = _e2e(out)
    except Exception:
        summary["errors"]["e2e"] = traceback.format_exc()
    summary["e2e_seconds"] = time.perf_counter() - t0
    summary["seconds"] = time.perf_counter() - t_all
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
