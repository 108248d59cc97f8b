"""GPU benchmark: parvec's FULL-W2V and PAR kernels against CPU HogBatch (every core) and a plain PyTorch SGNS,
in one run, on the same data, with quality beside speed.

    python benchmarks/bench_gpu.py --out bench_out/gpu.json            # on a machine with an NVIDIA GPU

1. **Equivalence on the hardware**: ``pytest -m gpu tests/gpu`` (the kernels against their CPU references
   at 1e-4, both reductions).
2. **Speed** (words/s = raw corpus words x epochs / training seconds, compilation and reading excluded) at
   each ``--dims`` (100, 128, 300; window 5, negative 5, sample 1e-4) on the shared corpus and on a corpus
   of at least ``--big-words`` (100M) made by repeating it in memory (never written to disk): full-w2v and
   par for every ``--threads-per-block`` x ``--reductions``, parvec's CPU hogbatch with every core of this
   host, and a plain PyTorch SGNS (two ``nn.Embedding(sparse=True)``, center/context pairs with negatives,
   ``torch.optim.SparseAdam`` on the batch's mean loss) when torch imports with CUDA.
3. **Quality** after ``--quality-epochs`` (5) per ``--seeds`` (at least 3): WS-353, SimLex-999 and the Google
   analogies (top 30k) with parvec.evaluation, as benchmarks/bench_words.py scores them; each run, the
   means and each system's gap to CPU hogbatch.
4. **Bytes per trained word**: the counted model of docs/gpu.md (FULL-W2V ``8 d (negative + 2)``, 56 d at
   negative 5, against word2vec.c's 336 d) times the measured trained words/s, against the device's peak
   memory bandwidth; the kernel's registers, shared memory and the occupancy they allow; barriers per
   trained word.  Run it under Nsight Compute (``ncu --metrics dram__bytes.sum``) for the profiler's figure.

5. **The floor and the bars**: whether full-w2v reaches ``--floor`` words/s at d 128 (no test times anything)
   and the quality bars against CPU hogbatch and (``--cpu-quality par``) CPU par.

Prints tables (ratios to CPU hogbatch) and writes everything to ``--out`` as benchmarks/harness.py's JSON: the
header naming the machine (CPU model and ISA, the GPU model from ``nvidia-smi``) and the code, then this script's
keys (``device``, ``cpu``, ``args``, ``speed``, ``quality``, ``table``; ``model_check``, ``launch_sweep``,
``reference`` or ``ptx`` in those modes). Without a GPU it stops at once with "no CUDA device". ``--model-check``
runs only the hardware related-words runs on the GPU beside the CPU model of its Hogwild
(:func:`parvec.gpu.reference.hogwild_train`) with the blocks the GPU holds. Two modes need no GPU: ``--ptx``
compiles the kernels for sm_90 with NVVM and ptxas (CUDA toolkit) and reports registers, spills, shared memory and
the occupancy they allow on an H100; ``--reference`` trains the kernels' orders on the CPU -- sequentially and in
the Hogwild model -- beside CPU classic and hogbatch, over ``--seeds``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bench_words
import harness
import numpy as np
from harness import DEFAULT_CORPUS, DEMO_CORPUS, REPO

BENCHMARK = "bench_gpu"
GPU_ALGOS = ("full-w2v", "par")
# sm_90 (H100) limits for the static occupancy of --ptx: registers, shared memory (bytes), warps, blocks per SM
SM90 = {"regs": 65536, "smem": 228 * 1024, "smem_block_reserved": 1024, "warps": 64, "blocks": 32}
KERNEL_SIGNATURE = {
    "full-w2v": "void(float32[:, ::1], float32[:, ::1], int32[::1], int64[::1], int64, int64, uint64, float64, "
                "float64, int64, float32[::1], float32[::1], int32[::1], int32[:, ::1], int64, boolean, float64[::1], "
                "int64[::1])",
    "par": "void(float32[:, ::1], float32[:, ::1], int32[::1], int64[::1], int64, int64, uint64, float64, float64, "
           "int64, float32[::1], float32[::1], int32[::1], int32[:, ::1], int64, float64, boolean, float64[::1], "
           "int64[::1])",
}
# full-w2v with gpu_writers_cap: one more argument, the per-row counts of output and input rows' holders
WRITERS_SIGNATURE = KERNEL_SIGNATURE["full-w2v"][:-1] + ", int32[:, ::1])"


# ----------------------------------------------------------------------------------------------- pure parts
def repeat_corpus(tokens: np.ndarray, offsets: np.ndarray, min_words: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The corpus repeated whole until it holds at least ``min_words`` tokens: (tokens, offsets, copies).

    Example:
        >>> t, o, k = repeat_corpus(np.arange(3, dtype=np.int32), np.array([0, 1, 3]), 7)
        >>> k, t.tolist(), o.tolist()
        (3, [0, 1, 2, 0, 1, 2, 0, 1, 2], [0, 1, 3, 4, 6, 7, 9])
    """
    n = len(tokens)
    copies = max(1, -(-int(min_words) // max(n, 1)))
    big_tokens = np.tile(np.asarray(tokens, dtype=np.int32), copies)
    starts = np.asarray(offsets[:-1], dtype=np.int64)
    big_offsets = np.concatenate([(starts[None, :] + n * np.arange(copies)[:, None]).ravel(), [n * copies]])
    return big_tokens, big_offsets.astype(np.int64), copies


def kept_fraction(counts: np.ndarray, sample: float) -> float:
    """The expected share of tokens subsampling keeps (word2vec.c's rule, as the kernels apply it).

    Example:
        >>> kept_fraction(np.array([10, 10]), 0.0)
        1.0
    """
    from parvec.sampling import keep_probabilities

    counts = np.asarray(counts, dtype=np.float64)
    return float((counts * keep_probabilities(counts, sample)).sum() / counts.sum())


def occupancy(regs: int, smem: int, threads: int, limits: dict[str, int] = SM90) -> dict[str, Any]:
    """Blocks and warps per SM that ``regs`` registers per thread and ``smem`` bytes of shared memory per block
    allow for blocks of ``threads`` (register allocation in 256-register units per warp).

    Example:
        >>> occupancy(96, 18592, 64)["blocks_per_sm"]
        10
    """
    warps = -(-threads // 32)
    regs_per_warp = -(-max(regs, 1) * 32 // 256) * 256
    by_regs = (limits["regs"] // regs_per_warp) // warps
    by_smem = limits["smem"] // (smem + limits["smem_block_reserved"])
    by_warps = limits["warps"] // warps
    blocks = min(limits["blocks"], by_regs, by_smem, by_warps)
    limiter = min((("registers", by_regs), ("shared memory", by_smem), ("warps", by_warps),
                   ("blocks", limits["blocks"])), key=lambda kv: kv[1])[0]
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps, "occupancy": blocks * warps / limits["warps"],
            "limited_by": limiter}


def barriers_per_word(algo: str, window: int, threads: int, reduction: str) -> float:
    """Block barriers per trained center word in the attraction/window pass (the kernels' counted model):
    one reduction per context word (2 E[window - b] = window + 1 of them), each 1 + log2(threads) barriers for
    the tree, 1 for the shuffle (0 in a one-warp block).  PAR's repulsion adds about 2 + 4 ceil(d / 32) per
    minibatch, not counted here.

    Example:
        >>> barriers_per_word("full-w2v", 5, 64, "tree"), barriers_per_word("full-w2v", 5, 32, "shuffle")
        (42.0, 0.0)
    """
    contexts = window + 1
    if reduction == "tree":
        per = 1 + math.log2(threads)
    else:
        per = 1.0 if threads > 32 else 0.0
    return float(contexts * per)


def ratio_table(rows: list[dict[str, Any]]) -> str:
    """The speed table: words/s per (dim, corpus, system) and the ratio to CPU hogbatch of the same dim and
    corpus; quality is in its own table.

    Example:
        >>> print(ratio_table([{"dim": 128, "corpus": "c", "system": "hogbatch-cpu", "words_per_sec": 1e6},
        ...                    {"dim": 128, "corpus": "c", "system": "full-w2v", "words_per_sec": 5e6}]))
        | dim | corpus | system | words/s | × CPU hogbatch | model GB/s | % of peak |
        | --- | --- | --- | --- | --- | --- | --- |
        | 128 | c | hogbatch-cpu | 1.00M | 1.00× | – | – |
        | 128 | c | full-w2v | 5.00M | 5.00× | – | – |
    """
    base = {(r["dim"], r["corpus"]): r["words_per_sec"] for r in rows if r["system"] == "hogbatch-cpu"}
    lines = ["| dim | corpus | system | words/s | × CPU hogbatch | model GB/s | % of peak |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        b = base.get((r["dim"], r["corpus"]))
        ratio = f"{r['words_per_sec'] / b:.2f}×" if b else "–"
        gbs = f"{r['model_bytes_per_sec'] / 1e9:.0f}" if r.get("model_bytes_per_sec") else "–"
        peak = f"{100 * r['fraction_of_peak']:.0f}%" if r.get("fraction_of_peak") else "–"
        lines.append(f"| {r['dim']} | {r['corpus']} | {r['system']} | {r['words_per_sec'] / 1e6:.2f}M | {ratio} | "
                     f"{gbs} | {peak} |")
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- --ptx (no GPU needed)
@contextlib.contextmanager
def _offline_nvvm(cc: tuple[int, int]):
    """Let numba-cuda compile to PTX with libnvvm on a machine with no GPU and no NVRTC: it asks the current
    device for its compute capability and NVRTC for the architectures; both answers are given here."""
    import numba.cuda.dispatcher as dispatcher
    from numba.cuda import cuda_paths
    from numba.cuda.cudadrv import nvrtc

    class _Device:
        compute_capability = cc

    saved = (dispatcher.get_current_device, nvrtc.get_arch_option, cuda_paths._get_nvrtc_path)
    dispatcher.get_current_device = lambda: _Device()
    nvrtc.get_arch_option = lambda major, minor: f"compute_{major}{minor}"
    cuda_paths._get_nvrtc_path = lambda: ("none", None)
    try:
        yield
    finally:
        dispatcher.get_current_device, nvrtc.get_arch_option, cuda_paths._get_nvrtc_path = saved


def _ptxas() -> str | None:
    for cand in (shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas"):
        if cand and Path(cand).exists():
            return cand
    return None


def ptx_resources(algo: str, dim: int, window: int, negative: int, par_batch: int, threads: int, reduction: str,
                  workdir: Path, cc: tuple[int, int] = (9, 0), writers_cap: int = 0) -> dict[str, Any]:
    """Compile one kernel for ``sm_{cc}`` (NVVM, then ptxas -v) and return its resources and static occupancy
    (``writers_cap``: full-w2v's ``gpu_writers_cap`` variant)."""
    from numba import cuda

    from parvec.config import TrainConfig
    from parvec.gpu import full_w2v, par_gpu
    from parvec.gpu.reference import par_batch_size, par_h_max

    cfg = TrainConfig(device="cuda", algo=algo, dim=dim, window=window, negative=negative, par_batch=par_batch)
    if algo == "par":
        h_max = max(par_h_max(cfg), 1)
        kernel = par_gpu.make_kernel(threads, dim, window, negative, par_batch_size(cfg), h_max, reduction)
        smem_model = par_gpu.shared_bytes(threads, dim, window, par_batch_size(cfg), h_max)
    else:
        kernel = full_w2v.make_kernel(threads, dim, window, negative, reduction, writers_cap)
        smem_model = full_w2v.shared_bytes(threads, dim, window, negative)
    signature = WRITERS_SIGNATURE if algo == "full-w2v" and writers_cap > 0 else KERNEL_SIGNATURE[algo]
    t0 = time.perf_counter()
    with _offline_nvvm(cc):
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=cc, fastmath=True,
                                  launch_bounds=kernel.targetoptions.get("launch_bounds"))
    name = f"{algo}-d{dim}-t{threads}-{reduction}" + (f"-cap{writers_cap}" if signature is WRITERS_SIGNATURE else "")
    path = workdir / f"{name}.ptx"
    path.write_text(ptx, encoding="utf-8")
    ptxas = _ptxas()
    if ptxas is None:
        raise RuntimeError("ptxas not found (CUDA toolkit): cannot assemble the PTX")
    out = subprocess.run([ptxas, f"-arch=sm_{cc[0]}{cc[1]}", "-v", str(path), "-o", os.devnull], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise RuntimeError(f"ptxas failed on {name}:\n{out.stderr[-2000:]}")
    text = out.stderr

    def grab(pattern: str) -> int:
        m = re.search(pattern, text)
        return int(m.group(1)) if m else 0

    res = {"kernel": name, "algo": algo, "dim": dim, "threads": threads, "reduction": reduction,
           "registers": grab(r"Used (\d+) registers"), "smem_bytes": grab(r"(\d+) bytes smem"),
           "stack_bytes": grab(r"(\d+) bytes stack frame"), "spill_stores": grab(r"(\d+) bytes spill stores"),
           "spill_loads": grab(r"(\d+) bytes spill loads"), "smem_model_bytes": smem_model,
           "compile_seconds": time.perf_counter() - t0, "sm": f"sm_{cc[0]}{cc[1]}"}
    res.update(occupancy(res["registers"], res["smem_bytes"], threads))
    return res


def _toolkit_missing(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return any(w in text for w in ("nvvm", "libdevice", "ptxas not found", "cuda toolkit", "dynamiclibnotfound"))


def run_ptx(ns: argparse.Namespace) -> int:
    """``--ptx``: compile every kernel asked for and print its resources; exit 3 without a CUDA toolkit."""
    workdir = Path(ns.work) / "ptx"
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for algo in ns.algos:
        for dim in ns.dims:
            for threads in ns.threads_per_block or [None]:
                from parvec.gpu.blocks import threads_for

                t = threads or threads_for(dim, algo)
                for reduction in ns.reductions:
                    if reduction == "shuffle" and t % 32 or ns.only and f"{algo}:{reduction}" not in ns.only:
                        continue
                    try:
                        row = ptx_resources(algo, dim, ns.window, ns.negative, ns.par_batch, t, reduction, workdir,
                                            writers_cap=ns.writers_cap)
                    except Exception as exc:  # no libnvvm / ptxas here: say so, distinctly from a failure
                        if _toolkit_missing(exc):
                            print(f"cannot compile for sm_90 here (no CUDA toolkit): {exc}", file=sys.stderr)
                            return 3
                        raise
                    rows.append(row)
                    print(f"{row['kernel']}: {row['registers']} registers, {row['smem_bytes']} B shared, "
                          f"{row['stack_bytes']} B stack, spills {row['spill_stores']}/{row['spill_loads']} B; "
                          f"{row['blocks_per_sm']} blocks / {row['warps_per_sm']} warps per SM "
                          f"({100 * row['occupancy']:.0f}%, by {row['limited_by']})", flush=True)
    if ns.out:
        harness.write_json(ns.out, BENCHMARK, {"ptx": rows})
    return 0


# -------------------------------------------------------------------------------------------- the GPU run
def device_facts() -> dict[str, Any]:
    """Name, compute capability, SM count and peak memory bandwidth of the current GPU."""
    from numba import config, cuda

    if config.ENABLE_CUDASIM:
        return {"name": "numba CUDA simulator (a smoke run: no speed)", "compute_capability": "-"}
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    facts: dict[str, Any] = {"name": name, "compute_capability": ".".join(map(str, dev.compute_capability))}
    with contextlib.suppress(Exception):
        facts["sms"] = int(dev.MULTIPROCESSOR_COUNT)
    with contextlib.suppress(Exception):
        # double data rate: 2 transfers per memory clock (kHz) over the bus width (bits)
        facts["peak_bytes_per_sec"] = 2.0 * dev.MEMORY_CLOCK_RATE * 1e3 * dev.GLOBAL_MEMORY_BUS_WIDTH / 8
    with contextlib.suppress(Exception):
        facts["memory_bytes"] = int(cuda.current_context().get_memory_info().total)
    return facts


def cpu_facts() -> dict[str, Any]:
    """The host CPU model (the harness's: ``lscpu``, else /proc/cpuinfo) and the cores CPU hogbatch uses."""
    from parvec.config import default_threads

    return {"model": harness.cpu_model(), "cores": default_threads()}


def train_gpu(corpus: Any, algo: str, dim: int, ns: argparse.Namespace, epochs: int, seed: int,
              threads: int | None = None, reduction: str | None = None,
              words_per_launch: int | None = None) -> tuple[Any, Any, dict[str, Any]]:
    from parvec.config import TrainConfig
    from parvec.gpu.driver import GpuTrainer

    cfg = TrainConfig(device="cuda", algo=algo, dim=dim, window=ns.window, negative=ns.negative, sample=ns.sample,
                      epochs=epochs, seed=seed, par_batch=ns.par_batch, progress=False,
                      compute_loss=not ns.no_loss, gpu_writers_cap=ns.writers_cap if algo == "full-w2v" else 0)
    trainer = GpuTrainer(cfg, corpus.vocab.counts, threads_per_block=threads, reduction=reduction,
                         words_per_launch=words_per_launch)
    trainer.warm_up()
    stats = trainer.train(corpus)
    return trainer, stats, trainer.report()["gpu"]


def train_cpu(corpus: Any, dim: int, ns: argparse.Namespace, epochs: int, seed: int,
              algo: str = "hogbatch") -> tuple[Any, Any]:
    from parvec.config import TrainConfig, default_threads
    from parvec.trainer import Trainer

    cfg = TrainConfig(algo=algo, dim=dim, par_batch=ns.par_batch, window=ns.window, negative=ns.negative,
                      sample=ns.sample, epochs=epochs, seed=seed, threads=default_threads(), progress=False)
    trainer = Trainer(cfg, corpus.vocab.counts)
    trainer.warm_up((corpus.tokens, corpus.offsets))
    return trainer, trainer.train(corpus)


# SparseAdam's rate at the start (decaying linearly to 1e-4 of it, as word2vec's does).  On the demo corpus (1 epoch,
# d 32, 4,096-token batches, on the CPU) 0.01 scored 0.134 / 0.092 on WS-353 / SimLex-999 where CPU hogbatch scored
# 0.119 / 0.077, and plain SGD with each row's summed gradient divided by its uses in the batch -0.075 / 0.046 (a
# frequent word gets one step per batch); at d 64 with 16,384-token batches (122 steps an epoch there), 0.002 scored
# -0.091 / 0.038.  The shared corpus's 5 epochs give 16,384-token batches about 5,000 steps.
TORCH_LR = 0.01
TORCH_BATCH_TOKENS = 1 << 14


def torch_sgns(corpus: Any, dim: int, ns: argparse.Namespace, epochs: int, seed: int,
               batch_tokens: int = TORCH_BATCH_TOKENS, lr: float = TORCH_LR,
               device: str = "cuda") -> tuple[np.ndarray, float] | None:
    """A plain PyTorch SGNS: two sparse embeddings, (context, center) pairs within word2vec.c's random window in
    each batch of ``batch_tokens`` tokens (before subsampling), ``negative`` unigram^0.75 negatives per pair, the
    mean loss over the batch's pairs minimised with ``torch.optim.SparseAdam`` (what PyTorch SGNS implementations
    use: a row's step does not grow with how often its word occurs in the batch; plain SGD on the summed loss at
    word2vec's rate per pair gave a frequent word thousands of stale steps at once and diverged), its rate
    decaying linearly by words.  Returns (input vectors, training seconds), or None without torch (or CUDA, for
    ``device="cuda"``)."""
    try:
        import torch
    except ImportError:
        return None
    if device == "cuda" and not torch.cuda.is_available():
        return None
    from parvec.sampling import keep_probabilities, noise_distribution

    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    counts = corpus.vocab.counts
    v = len(counts)
    emb_in = torch.nn.Embedding(v, dim, sparse=True).to(dev)
    emb_out = torch.nn.Embedding(v, dim, sparse=True).to(dev)
    with torch.no_grad():
        emb_in.weight.uniform_(-0.5 / dim, 0.5 / dim, generator=gen)
        emb_out.weight.zero_()
    opt = torch.optim.SparseAdam(list(emb_in.parameters()) + list(emb_out.parameters()), lr=lr)
    keep = torch.as_tensor(keep_probabilities(counts, ns.sample), device=dev)
    noise = torch.as_tensor(noise_distribution(np.maximum(counts, 0), 0.75), dtype=torch.float32, device=dev)
    table = torch.multinomial(noise, 1 << 24, replacement=True, generator=gen)  # word2vec.c's unigram table
    tokens = torch.as_tensor(np.asarray(corpus.tokens, dtype=np.int64), device=dev)
    sent_id = torch.as_tensor(np.repeat(np.arange(corpus.n_sentences), np.diff(corpus.offsets)), device=dev)
    n = len(tokens)
    total = n * epochs
    done = 0
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(epochs):
        for lo in range(0, n, batch_tokens):
            tok = tokens[lo:lo + batch_tokens]
            sid = sent_id[lo:lo + batch_tokens]
            kept = torch.rand(len(tok), device=dev, generator=gen) < keep[tok]
            tok, sid = tok[kept], sid[kept]
            shrink = torch.randint(0, ns.window, (len(tok),), device=dev, generator=gen)
            centers, contexts = [], []
            for off in range(1, ns.window + 1):
                for sign in (-1, 1):
                    o = sign * off
                    idx = torch.arange(max(0, -o), len(tok) - max(0, o), device=dev)
                    ok = (sid[idx] == sid[idx + o]) & (off <= ns.window - shrink[idx])
                    centers.append(tok[idx[ok]])
                    contexts.append(tok[idx[ok] + o])
            c = torch.cat(centers)
            x = torch.cat(contexts)
            done += len(tokens[lo:lo + batch_tokens])
            if len(c) == 0:
                continue
            negs = table[torch.randint(0, len(table), (len(c), ns.negative), device=dev, generator=gen)]
            rate = lr * max(1e-4, 1 - done / total)
            u = emb_in(x)  # the context's input vector, trained against the center and the negatives
            pos = (u * emb_out(c)).sum(-1)
            neg = torch.bmm(emb_out(negs), u.unsqueeze(-1)).squeeze(-1)
            loss = -(torch.nn.functional.logsigmoid(pos).sum() + torch.nn.functional.logsigmoid(-neg).sum())
            for group in opt.param_groups:
                group["lr"] = rate
            opt.zero_grad()
            (loss / len(c)).backward()
            opt.step()
    if device == "cuda":
        torch.cuda.synchronize()
    return emb_in.weight.detach().cpu().numpy(), time.perf_counter() - t0


def evaluate_vectors(w: np.ndarray, corpus: Any) -> dict[str, Any]:
    from parvec.evaluation import default_eval_paths, evaluate
    from parvec.keyedvectors import KeyedVectors

    kv = KeyedVectors(np.ascontiguousarray(w), list(corpus.vocab.words), counts=corpus.vocab.counts)
    return evaluate(kv, **default_eval_paths())


def scores(q: dict[str, Any]) -> tuple[float, float, float]:
    """(WS-353 Spearman, SimLex-999 Spearman, analogy %) of one evaluation, NaN for a score it could not take
    (no pair or question in the vocabulary: the evaluator says None).

    Example:
        >>> scores({"ws353": {"spearman": 0.5}, "simlex": {"spearman": None}, "analogies": {"3cosadd": 0.25}})
        (0.5, nan, 25.0)
    """
    nan = float("nan")
    ws, sl = (q.get(k, {}).get("spearman") for k in ("ws353", "simlex"))
    an = q.get("analogies", {}).get("3cosadd")
    return (nan if ws is None else float(ws), nan if sl is None else float(sl), nan if an is None else 100 * an)


def fmt_scores(bw: Any, q: dict[str, Any]) -> str:
    """WS-353 / SimLex-999 / analogy % of one evaluation, '-' for a score it could not take."""
    return " / ".join("-" if x is None or x != x else f"{x:.3f}" for x in scores(q))


def launch_sweep(ns: argparse.Namespace, corpus: Any, result: dict[str, Any], bw: Any) -> int:
    """Words per launch against speed and quality: every launch's sentences run as concurrent blocks (Hogwild
    across blocks), so the launch size sets how many sentences update the same frequent rows at once.  Each
    ``--words-per-launch`` x algo x seed trains ``--quality-epochs`` on the corpus (reduction: the last of
    ``--reductions``), beside CPU hogbatch per seed; rows are printed and written (``--out``) as they come."""
    from parvec.errors import ParvecError

    dim, reduction, rows = ns.quality_dims[0], ns.reductions[-1], []
    result["launch_sweep"] = rows

    def record(row: dict[str, Any]) -> None:
        rows.append(row)
        q = row.get("quality")
        shown = fmt_scores(bw, q) if q else row.get("error", "")
        print(f"sweep {row['system']} seed {row['seed']}: {row.get('words_per_sec', 0) / 1e6:.2f}M words/s "
              f"(WS-353 / SimLex-999 / analogy %) {shown}", file=sys.stderr, flush=True)
        if ns.out:
            harness.write_json(ns.out, BENCHMARK, result)

    raw = corpus.raw_words * ns.quality_epochs
    for seed in ns.seeds:
        for wpl in ns.words_per_launch:
            for algo in ns.algos:
                cap = f" cap {ns.writers_cap}" if ns.writers_cap and algo == "full-w2v" else ""
                row: dict[str, Any] = {"system": f"{algo} wpl {wpl:,} {reduction}{cap}", "algo": algo, "seed": seed,
                                       "words_per_launch": wpl, "dim": dim, "epochs": ns.quality_epochs,
                                       "writers_cap": ns.writers_cap if cap else 0}
                try:
                    trainer, stats, rep = train_gpu(corpus, algo, dim, ns, ns.quality_epochs, seed,
                                                    reduction=reduction, words_per_launch=wpl)
                except ParvecError as exc:
                    row["error"] = str(exc)
                    record(row)
                    continue
                row.update(words_per_sec=raw / stats.seconds, seconds=stats.seconds, loss=stats.loss_per_epoch,
                           corpus_mode=rep.get("corpus"), quality=evaluate_vectors(trainer.w_in, corpus))
                record(row)
        if not ns.no_cpu:
            trainer, stats = train_cpu(corpus, dim, ns, ns.quality_epochs, seed)
            record({"system": "hogbatch-cpu", "seed": seed, "dim": dim, "epochs": ns.quality_epochs,
                    "threads": result["cpu"]["cores"], "words_per_sec": raw / stats.seconds,
                    "seconds": stats.seconds, "quality": evaluate_vectors(trainer.w_in, corpus)})
    return 0


# ------------------------------------------------------------------------------- --reference (no GPU needed)
REFERENCE_SYSTEMS = ("full-w2v", "par", "par-phased", "classic", "hogbatch")


def parse_reference_system(name: str) -> tuple[str, int | None]:
    """``"full-w2v"`` -> ("full-w2v", None): the sequential reference; ``"par@1584"`` -> ("par", 1584): the
    Hogwild model (:func:`parvec.gpu.reference.hogwild_train`) with 1584 resident blocks.

    Example:
        >>> parse_reference_system("par-phased@200"), parse_reference_system("hogbatch")
        (('par-phased', 200), ('hogbatch', None))
    """
    base, _, n = name.partition("@")
    if base not in REFERENCE_SYSTEMS or (n and (not n.isdigit() or int(n) < 1)) or (n and base in ("classic",
                                                                                                    "hogbatch")):
        raise ValueError(f"reference system {name!r}: one of {', '.join(REFERENCE_SYSTEMS)}, the GPU ones "
                         "optionally @RESIDENT_BLOCKS")
    return base, int(n) if n else None


def head_corpus(corpus: Any, words: int) -> Any:
    """The corpus's first sentences holding at most ``words`` tokens (all of it when ``words`` is 0).

    Example:
        >>> from parvec.corpus import EncodedCorpus
        >>> c = EncodedCorpus.from_arrays(np.arange(6, dtype=np.int32), np.array([0, 2, 4, 6]))
        >>> head_corpus(c, 5).offsets.tolist()
        [0, 2, 4]
    """
    if not words or words >= corpus.n_tokens:
        return corpus
    k = int(np.searchsorted(corpus.offsets, words, side="right")) - 1
    if k < 1:
        k = 1
        offsets = np.array([0, words], dtype=np.int64)
    else:
        offsets = np.asarray(corpus.offsets[:k + 1], dtype=np.int64)
    return type(corpus).from_arrays(corpus.tokens[:offsets[-1]], offsets, corpus.vocab)


def train_reference(corpus: Any, system: str, dim: int, ns: argparse.Namespace, epochs: int,
                    seed: int) -> tuple[np.ndarray, dict[str, Any]]:
    """One run of a ``--reference`` system on the CPU: (input vectors, facts of the run)."""
    from parvec.config import TrainConfig, default_threads
    from parvec.gpu.reference import hogwild_train, reference_train
    from parvec.model_tables import init_input_vectors
    from parvec.trainer import Trainer

    base, resident = parse_reference_system(system)
    facts: dict[str, Any] = {}
    t0 = time.perf_counter()
    if base in ("classic", "hogbatch"):
        cfg = TrainConfig(algo=base, dim=dim, window=ns.window, negative=ns.negative, sample=ns.sample,
                          epochs=epochs, seed=seed, threads=default_threads(), progress=False)
        trainer = Trainer(cfg, corpus.vocab.counts)
        trainer.warm_up((corpus.tokens, corpus.offsets))
        t0 = time.perf_counter()
        stats = trainer.train(corpus)
        facts.update(threads=cfg.threads, losses=stats.loss_per_epoch)
        w = trainer.w_in
    else:
        algo = "par" if base.startswith("par") else base
        cfg = TrainConfig(device="cuda", algo=algo, dim=dim, window=ns.window, negative=ns.negative, sample=ns.sample,
                          epochs=epochs, seed=seed, par_batch=ns.par_batch, progress=False)
        n = len(corpus.vocab)
        w = init_input_vectors(n, dim, seed)
        w_out = np.zeros((n, dim), np.float32)
        parts = lambda epoch: [(corpus.tokens, corpus.offsets)]  # noqa: E731
        phased = base == "par-phased"
        if resident is None:
            from parvec.gpu.plan import default_words_per_launch

            facts["losses"] = reference_train(cfg, corpus.vocab.counts, w, w_out, parts, corpus.n_tokens,
                                              words_per_launch=default_words_per_launch(algo, corpus.n_tokens),
                                              par_phased=phased)
        else:
            stats = hogwild_train(cfg, corpus.vocab.counts, w, w_out, parts, corpus.n_tokens, resident,
                                  par_phased=phased)
            facts.update(losses=stats.losses, mean_in_flight=stats.mean_in_flight, resident=resident)
    facts["seconds"] = time.perf_counter() - t0
    return w, facts


def run_reference(ns: argparse.Namespace) -> int:
    """``--reference``: quality over ``--seeds`` of the GPU kernels' update orders run on the CPU -- the
    sequential references and the Hogwild model at a GPU's concurrency -- beside CPU classic and hogbatch, so
    each GPU gap splits into the algorithm's (reference - hogbatch) and the concurrency's (model - reference).
    Rows are printed and written (``--out``) as they come."""
    from parvec.corpus import EncodedCorpus, ReadOptions

    bw = bench_words
    systems = list(ns.reference_systems)
    dim = ns.quality_dims[0]
    corpus = EncodedCorpus.from_file(ns.corpus, ReadOptions(min_count=ns.min_count), cache_dir=Path(ns.work) / "cache")
    corpus = head_corpus(corpus, ns.reference_words)
    result: dict[str, Any] = {"cpu": cpu_facts(), "args": {k: str(v) for k, v in vars(ns).items()},
                              "corpus_tokens": corpus.n_tokens, "reference": []}
    rows = result["reference"]
    print(f"--reference: {corpus.n_tokens:,} tokens of {ns.corpus.name}, d {dim}, {ns.quality_epochs} epochs, seeds "
          f"{ns.seeds}, CPU {result['cpu']}", file=sys.stderr, flush=True)
    quality: dict[str, dict[int, Any]] = {}
    for seed in ns.seeds:
        for system in systems:
            w, facts = train_reference(corpus, system, dim, ns, ns.quality_epochs, seed)
            q = evaluate_vectors(w, corpus)
            quality.setdefault(system, {})[seed] = q
            rows.append({"system": system, "seed": seed, "dim": dim, "epochs": ns.quality_epochs, **facts,
                         "quality": q})
            loss = " ".join(f"{x:.3f}" for x in facts.get("losses", []))
            print(f"reference {system} seed {seed}: {fmt_scores(bw, q)} (WS-353 / SimLex-999 / analogy %); loss "
                  f"{loss}; {facts['seconds']:.0f} s", file=sys.stderr, flush=True)
            if ns.out:
                harness.write_json(ns.out, BENCHMARK, result)
    full = {k: v for k, v in quality.items() if len(v) == len(ns.seeds)}
    lines = [f"CPU {result['cpu']['model']} ({result['cpu']['cores']} cores); {corpus.n_tokens:,} tokens of "
             f"{ns.corpus.name}; d {dim}, window {ns.window}, negative {ns.negative}, sample {ns.sample}, "
             f"{ns.quality_epochs} epochs"]
    if len(ns.seeds) > 1 and full:
        lines += ["", bw.seed_table(full, ns.seeds)]
    means = {k: [statistics.mean(scores(v[s])[i] for s in ns.seeds) for i in range(3)] for k, v in full.items()}
    for system, m in means.items():
        base, resident = parse_reference_system(system)
        for other, label in (("hogbatch", "hogbatch"), (base, "its sequential reference")):
            if other in means and other != system and (other != base or resident is not None):
                gap = [a - b for a, b in zip(m, means[other], strict=True)]
                lines.append(f"- {system} - {label} (means): WS-353 {gap[0]:+.3f}, SimLex-999 {gap[1]:+.3f}, "
                             f"analogy {gap[2]:+.1f} points")
    table = "\n".join(lines)
    result["table"] = table
    print(table)
    if ns.out:
        harness.write_json(ns.out, BENCHMARK, result)
    return 0


# the hardware related-words tests' settings (tests/gpu/test_gpu_hardware.py) on the 2M-token demo corpus
MODEL_CHECK = {"full-w2v": dict(dim=100, epochs=2, sample=1e-3, seed=1), "par": dict(dim=50, epochs=3, sample=1e-3,
                                                                                      seed=4)}


def resident_blocks(report: dict[str, Any], sms: int | None) -> int | None:
    """The blocks a GPU holds at once for a trained kernel (its registers and shared memory, :func:`occupancy`
    x SMs), from the driver's report; None when a figure is missing.

    Example:
        >>> resident_blocks({"registers_per_thread": 96, "shared_bytes_per_block": 18592, "threads_per_block": 64},
        ...                 132)
        1320
    """
    regs = report.get("registers_per_thread")
    if isinstance(regs, dict):
        regs = max(regs.values()) if regs else None
    if not regs or not sms:
        return None
    return occupancy(int(regs), int(report["shared_bytes_per_block"]), int(report["threads_per_block"]))[
        "blocks_per_sm"] * int(sms)


def _hardware_tests() -> Any:
    """tests/gpu/test_gpu_hardware.py as a module (its probe word sets), after the tests/gpu/sim_cases.py it
    imports, both registered under their names as pytest would import them."""
    for name in ("sim_cases", "test_gpu_hardware"):
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "gpu" / f"{name}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    return sys.modules["test_gpu_hardware"]


def related_words_probes(w: np.ndarray, corpus: Any, algo: str) -> dict[str, bool]:
    """The hardware related-words test's probes (tests/gpu/test_gpu_hardware.py) on trained vectors."""
    hw = _hardware_tests()

    w = w / np.linalg.norm(w, axis=1, keepdims=True)
    idx = corpus.vocab.index

    def top(word: str) -> set[str]:
        return {corpus.vocab.words[i] for i in np.argsort(-(w @ w[idx[word]]))[1:11]}

    if algo == "par":
        return {"king": len(top("king") & hw.ROYAL) >= 3, "france": len(top("france") & hw.PAR_COUNTRIES) >= 4,
                "january": len(top("january") & hw.MONTHS) >= 6}
    return {"king": bool(top("king") & {"queen", "prince", "emperor"}), "three": len(top("three") & hw.NUMBERS) >= 4,
            "january": len(top("january") & hw.MONTHS) >= 6, "france": len(top("france") & hw.COUNTRIES) >= 4}


def model_check(ns: argparse.Namespace, result: dict[str, Any]) -> list[str]:
    """``--model-check``: the hardware related-words runs (demo corpus, the driver's defaults) on the GPU and in
    the Hogwild model with the blocks this GPU holds for the kernel (:func:`resident_blocks`), and with
    ``--model-check-sequential`` sequentially: loss per epoch, sentences in flight and the probes of each, side
    by side."""
    from parvec.config import TrainConfig
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.gpu.driver import GpuTrainer
    from parvec.gpu.reference import hogwild_train, reference_train
    from parvec.model_tables import init_input_vectors

    corpus = EncodedCorpus.from_file(DEMO_CORPUS, ReadOptions(min_count=5), cache_dir=Path(ns.work) / "cache")
    parts = lambda epoch: [(corpus.tokens, corpus.offsets)]  # noqa: E731
    rows = result.setdefault("model_check", [])
    lines = ["", "Model against hardware (demo corpus, the related-words tests' settings; loss per epoch, "
                 "sentences in flight, probes passed):", "",
             "| algo | run | loss per epoch | in flight | probes | seconds |", "| --- | --- | --- | --- | --- | --- |"]
    for algo in sorted(ns.algos, key=lambda a: a != "par"):  # PAR first: its hardware test is the one that failed
        cfg = TrainConfig(device="cuda", algo=algo, progress=False, **MODEL_CHECK[algo])
        trainer = GpuTrainer(cfg, corpus.vocab.counts)
        trainer.warm_up()
        stats = trainer.train(corpus)
        rep = trainer.report()["gpu"]
        resident = resident_blocks(rep, result["device"].get("sms"))
        runs = [("GPU", trainer.w_in, stats.loss_per_epoch, None, stats.seconds)]
        n = len(corpus.vocab)
        if resident:
            w_in, w_out = init_input_vectors(n, cfg.dim, cfg.seed), np.zeros((n, cfg.dim), np.float32)
            t0 = time.perf_counter()
            st = hogwild_train(cfg, corpus.vocab.counts, w_in, w_out, parts, corpus.n_tokens, resident,
                               words_per_launch=trainer.words_per_launch)
            runs.append((f"model, {resident} blocks", w_in, st.losses, st.mean_in_flight, time.perf_counter() - t0))
        if ns.model_check_sequential:
            w_in, w_out = init_input_vectors(n, cfg.dim, cfg.seed), np.zeros((n, cfg.dim), np.float32)
            t0 = time.perf_counter()
            losses = reference_train(cfg, corpus.vocab.counts, w_in, w_out, parts, corpus.n_tokens,
                                     words_per_launch=trainer.words_per_launch)
            runs.append(("sequential", w_in, losses, None, time.perf_counter() - t0))
        for name, w, loss, flight, sec in runs:
            probes = related_words_probes(w, corpus, algo)
            rows.append({"algo": algo, "run": name, "losses": loss, "in_flight": flight, "probes": probes,
                         "seconds": sec, "report": rep if name == "GPU" else None})
            fl = "-" if flight is None else " ".join(f"{x:.0f}" for x in flight)
            lines.append(f"| {algo} | {name} | {' '.join(f'{x:.3f}' for x in loss)} | {fl} | "
                         f"{sum(probes.values())}/{len(probes)} | {sec:.1f} |")
            print(f"model check {algo} {name}: loss {loss} probes {probes}", file=sys.stderr, flush=True)
            if ns.out:  # as they come: a stage cut off at its time limit keeps what it measured
                harness.write_json(ns.out, BENCHMARK, result)
    return lines


def run_gpu(ns: argparse.Namespace) -> int:
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.errors import ParvecError
    from parvec.gpu import require_device

    try:
        require_device()
    except ParvecError as exc:
        print(f"no CUDA device: {exc}", file=sys.stderr)
        return 2
    bw = bench_words
    result: dict[str, Any] = {"device": device_facts(), "cpu": cpu_facts(), "args": {k: str(v) for k, v in
                                                                                     vars(ns).items()}}
    print(f"device: {result['device']}; host CPU: {result['cpu']}", file=sys.stderr, flush=True)
    if not ns.no_tests:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu",
                               str(REPO / "tests" / "gpu")], capture_output=True, text=True, cwd=REPO)
        result["hardware_tests"] = {"rc": proc.returncode, "summary": proc.stdout.strip().splitlines()[-1:]}
        print(f"hardware equivalence tests: rc {proc.returncode}: {result['hardware_tests']['summary']}",
              file=sys.stderr, flush=True)
    if ns.model_check:
        table = "\n".join(model_check(ns, result))
        result["table"] = table
        print(table)
        if ns.out:
            harness.write_json(ns.out, BENCHMARK, result)
        return 0
    corpus = EncodedCorpus.from_file(ns.corpus, ReadOptions(min_count=ns.min_count), cache_dir=Path(ns.work) / "cache")
    if ns.words_per_launch:
        return launch_sweep(ns, corpus, result, bw)
    corpora = {ns.corpus.name: (corpus, corpus.raw_words)}
    if ns.big_words > 0 and not ns.no_speed:
        big_tokens, big_offsets, copies = repeat_corpus(corpus.tokens, corpus.offsets, ns.big_words)
        big = EncodedCorpus.from_arrays(big_tokens, big_offsets, corpus.vocab)
        corpora[f"{ns.corpus.name} x{copies}"] = (big, corpus.raw_words * copies)
    keep_share = kept_fraction(corpus.vocab.counts, ns.sample)
    peak = result["device"].get("peak_bytes_per_sec")
    rows: list[dict[str, Any]] = []
    quality: dict[str, dict[int, Any]] = {}
    result["speed"] = rows

    def save() -> None:  # after every measurement: a run cut off at a time limit keeps what it measured
        if ns.out:
            result["quality"] = {k: {str(s): q for s, q in v.items()} for k, v in quality.items()}
            harness.write_json(ns.out, BENCHMARK, result)

    for dim in [] if ns.no_speed else ns.dims:
        for cname, (enc, raw) in corpora.items():
            for algo in ns.algos:
                from parvec.gpu.blocks import threads_for
                from parvec.gpu.driver import model_bytes_per_word

                for threads in ns.threads_per_block or [threads_for(dim, algo)]:
                    for reduction in ns.reductions:
                        if reduction == "shuffle" and threads % 32:
                            continue
                        try:
                            trainer, stats, rep = train_gpu(enc, algo, dim, ns, ns.speed_epochs, ns.seeds[0], threads,
                                                            reduction)
                        except ParvecError as exc:
                            print(f"{algo} d{dim} t{threads} {reduction}: {exc}", file=sys.stderr)
                            continue
                        wps = raw * ns.speed_epochs / stats.seconds
                        bpw = model_bytes_per_word(trainer.config)
                        row = {"dim": dim, "corpus": cname, "system": f"{algo} t{threads} {reduction}", "algo": algo,
                               "threads": threads, "reduction": reduction, "words_per_sec": wps,
                               "seconds": stats.seconds, "model_bytes_per_trained_word": bpw,
                               "model_bytes_per_sec": wps * keep_share * bpw, "report": rep,
                               "barriers_per_trained_word": barriers_per_word(algo, ns.window, threads, reduction)}
                        if peak:
                            row["fraction_of_peak"] = row["model_bytes_per_sec"] / peak
                        regs = rep.get("registers_per_thread")
                        if isinstance(regs, dict):
                            regs = max(regs.values()) if regs else None
                        if regs:
                            row.update(occupancy(int(regs), rep["shared_bytes_per_block"], threads))
                        rows.append(row)
                        save()
                        print(f"{cname} d{dim} {row['system']}: {wps / 1e6:.2f}M words/s", file=sys.stderr, flush=True)
            if not ns.no_cpu:
                _, stats = train_cpu(enc, dim, ns, ns.speed_epochs, ns.seeds[0])
                rows.append({"dim": dim, "corpus": cname, "system": "hogbatch-cpu", "words_per_sec":
                             raw * ns.speed_epochs / stats.seconds, "seconds": stats.seconds,
                             "threads": result["cpu"]["cores"]})
                save()
                print(f"{cname} d{dim} hogbatch-cpu: {rows[-1]['words_per_sec'] / 1e6:.2f}M words/s", file=sys.stderr,
                      flush=True)
            if not ns.no_torch:
                out = torch_sgns(enc, dim, ns, ns.speed_epochs, ns.seeds[0])
                if out is not None:
                    rows.append({"dim": dim, "corpus": cname, "system": "torch-sgns", "words_per_sec":
                                 raw * ns.speed_epochs / out[1], "seconds": out[1]})
                    save()
                    print(f"{cname} d{dim} torch-sgns: {rows[-1]['words_per_sec'] / 1e6:.2f}M words/s",
                          file=sys.stderr, flush=True)
    # Quality: each GPU kernel and CPU hogbatch per seed, on the shared corpus.
    for dim in [] if ns.no_quality else ns.quality_dims:
        for seed in ns.seeds:
            for algo in ns.algos:
                try:
                    trainer, stats, _ = train_gpu(corpus, algo, dim, ns, ns.quality_epochs, seed)
                except ParvecError as exc:
                    print(f"quality seed {seed} {algo} d{dim}: {exc}", file=sys.stderr, flush=True)
                    result.setdefault("diverged", []).append({"algo": algo, "dim": dim, "seed": seed,
                                                              "error": str(exc)})
                    continue
                quality.setdefault(f"{algo} d{dim}", {})[seed] = evaluate_vectors(trainer.w_in, corpus)
                save()
            for cpu_algo in [] if ns.no_cpu else ns.cpu_quality:
                trainer, _ = train_cpu(corpus, dim, ns, ns.quality_epochs, seed, cpu_algo)
                quality.setdefault(f"{cpu_algo}-cpu d{dim}", {})[seed] = evaluate_vectors(trainer.w_in, corpus)
                save()
            for system, by_seed in quality.items():
                if seed in by_seed:
                    print(f"quality seed {seed} {system}: {fmt_scores(bw, by_seed[seed])}", file=sys.stderr,
                          flush=True)
        if not ns.no_torch:
            out = torch_sgns(corpus, dim, ns, ns.quality_epochs, ns.seeds[0])
            if out is not None:
                quality.setdefault(f"torch-sgns d{dim}", {})[ns.seeds[0]] = evaluate_vectors(out[0], corpus)
                save()
                print(f"quality seed {ns.seeds[0]} torch-sgns d{dim}: "
                      f"{fmt_scores(bw, quality[f'torch-sgns d{dim}'][ns.seeds[0]])}", file=sys.stderr, flush=True)
    result["quality"] = {k: {str(s): q for s, q in v.items()} for k, v in quality.items()}
    lines = [f"GPU {result['device'].get('name')} (cc {result['device'].get('compute_capability')}); CPU "
             f"{result['cpu']['model']} ({result['cpu']['cores']} cores) for hogbatch; corpus {ns.corpus.name}; window "
             f"{ns.window}, negative {ns.negative}, sample {ns.sample}; speed: {ns.speed_epochs} epoch(s); model bytes "
             f"per trained word from docs/gpu.md x words/s x kept share {keep_share:.2f}.", "", ratio_table(rows)]
    full = {k: v for k, v in quality.items() if len(v) == len(ns.seeds)}
    if len(ns.seeds) > 1 and full:
        lines += ["", bw.seed_table(full, ns.seeds)]
        for dim in ns.quality_dims:
            ref = full.get(f"hogbatch-cpu d{dim}")
            if not ref:
                continue
            for system, by_seed in full.items():
                if system.startswith("hogbatch"):
                    continue
                gaps = [statistics.mean(scores(by_seed[s])[i] - scores(ref[s])[i] for s in ns.seeds)
                        for i in range(3)]
                lines.append(f"- {system} − hogbatch-cpu d{dim} (means): WS-353 {gaps[0]:+.3f}, SimLex-999 "
                             f"{gaps[1]:+.3f}, analogy {gaps[2]:+.1f} points")
            # the bars: full-w2v within 0.01 / 0.01 / 1 point of CPU hogbatch; par within 0.02 / 0.02 / 2 of CPU par
            for gpu, cpu, bars in ((f"full-w2v d{dim}", f"hogbatch-cpu d{dim}", (0.01, 0.01, 1.0)),
                                   (f"par d{dim}", f"par-cpu d{dim}", (0.02, 0.02, 2.0))):
                if gpu in full and cpu in full:
                    gaps = [statistics.mean(scores(full[gpu][s])[i] - scores(full[cpu][s])[i]
                                            for s in ns.seeds) for i in range(3)]
                    met = all(g >= -b for g, b in zip(gaps, bars, strict=True))
                    lines.append(f"- bar: {gpu} within {bars[0]} / {bars[1]} / {bars[2]:.0f} of {cpu} (means): "
                                 f"{'met' if met else 'NOT met'} ({gaps[0]:+.3f} / {gaps[1]:+.3f} / {gaps[2]:+.1f})")
    for system, by_seed in quality.items():
        if len(by_seed) < len(ns.seeds):
            lines.append(f"- {system} (seed {next(iter(by_seed))}): {fmt_scores(bw, next(iter(by_seed.values())))}")
    lines += speed_floor_lines(rows, ns.corpus.name, ns.floor)
    table = "\n".join(lines)
    result["table"] = table
    print(table)
    if ns.out:
        harness.write_json(ns.out, BENCHMARK, result)
    return 0


def speed_floor_lines(rows: list[dict[str, Any]], corpus: str, floor: float, goal: float = 200e6) -> list[str]:
    """The words/s floor, judged here and not in a test (no timed asserts): full-w2v's fastest run at d 128 on
    ``corpus`` against ``floor`` (and the ``goal``).

    Example:
        >>> speed_floor_lines([{"dim": 128, "corpus": "c", "algo": "full-w2v", "system": "full-w2v t64 shuffle",
        ...                     "words_per_sec": 1.6e8}], "c", 150e6)
        ['- floor: full-w2v at d 128, 160.0M words/s (full-w2v t64 shuffle) >= 150M: met (goal 200M: not met)']
    """
    best = max((r for r in rows if r.get("algo") == "full-w2v" and r["dim"] == 128 and r["corpus"] == corpus),
               key=lambda r: r["words_per_sec"], default=None)
    if best is None:
        return []
    wps = best["words_per_sec"]
    return [f"- floor: full-w2v at d 128, {wps / 1e6:.1f}M words/s ({best['system']}) >= {floor / 1e6:.0f}M: "
            f"{'met' if wps >= floor else 'NOT met'} (goal {goal / 1e6:.0f}M: {'met' if wps >= goal else 'not met'})"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--algos", nargs="+", default=list(GPU_ALGOS), choices=GPU_ALGOS)
    ap.add_argument("--dims", nargs="+", type=int, default=[100, 128, 300])
    ap.add_argument("--quality-dims", nargs="+", type=int, default=[128])
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--negative", type=int, default=5)
    ap.add_argument("--sample", type=float, default=1e-4)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--par-batch", type=int, default=24)
    ap.add_argument("--speed-epochs", type=int, default=1)
    ap.add_argument("--quality-epochs", type=int, default=5)
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--big-words", type=int, default=100_000_000,
                    help="the repeated corpus holds at least this many words (100M; 0: no repeated corpus)")
    ap.add_argument("--threads-per-block", nargs="+", type=int, default=None,
                    help="sweep these block sizes (default: parvec's choice per dim)")
    ap.add_argument("--reductions", nargs="+", default=["tree", "shuffle"], choices=("tree", "shuffle"))
    ap.add_argument("--words-per-launch", nargs="+", type=int, default=None,
                    help="run only the launch-size sweep: speed and quality per words per launch (see launch_sweep)")
    ap.add_argument("--writers-cap", type=int, default=0,
                    help="full-w2v's gpu_writers_cap in every GPU run (0: off; docs/gpu.md, Concurrency in the model)")
    ap.add_argument("--no-tests", action="store_true", help="skip the hardware equivalence tests")
    ap.add_argument("--no-cpu", action="store_true", help="skip the CPU runs")
    ap.add_argument("--cpu-quality", nargs="+", default=["hogbatch"], choices=("hogbatch", "par", "classic"),
                    help="CPU algorithms whose quality runs beside the GPU's (par: PAR's bar is CPU par's)")
    ap.add_argument("--floor", type=float, default=150e6,
                    help="the words/s floor full-w2v must reach at d 128 (the summary says met or not)")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch SGNS")
    ap.add_argument("--no-quality", action="store_true", help="speed only: skip the quality runs")
    ap.add_argument("--no-speed", action="store_true",
                    help="quality only: skip the speed runs (nothing is timed, so it may share the machine)")
    ap.add_argument("--no-loss", action="store_true",
                    help="the GPU kernels skip the loss (compute_loss=False): what the loss costs in words/s")
    ap.add_argument("--ptx", action="store_true",
                    help="compile the kernels for sm_90 (NVVM + ptxas, no GPU needed) and report their resources")
    ap.add_argument("--only", nargs="+", default=None, metavar="ALGO:REDUCTION",
                    help="--ptx: compile only these (e.g. full-w2v:shuffle par:tree)")
    ap.add_argument("--model-check", action="store_true",
                    help="only the model against the hardware: the related-words runs on the GPU, in the Hogwild model "
                         "with this GPU's resident blocks, and sequentially (the demo corpus)")
    ap.add_argument("--model-check-sequential", action="store_true",
                    help="--model-check: the sequential reference too (deterministic: it needs no GPU)")
    ap.add_argument("--reference", action="store_true",
                    help="no GPU: quality over --seeds of the kernels' orders on the CPU (sequential, and the Hogwild "
                         "model with SYSTEM@RESIDENT_BLOCKS) beside CPU classic and hogbatch (--reference-systems)")
    ap.add_argument("--reference-systems", nargs="+", default=["full-w2v", "par", "classic", "hogbatch"],
                    metavar="SYSTEM", help=f"--reference: of {', '.join(REFERENCE_SYSTEMS)}; the GPU ones @N: the "
                                           "Hogwild model with N resident blocks (e.g. full-w2v@1320)")
    ap.add_argument("--reference-words", type=int, default=0,
                    help="--reference: train on the corpus's first sentences of at most this many tokens (0: all)")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "parvec-bench-gpu")
    ap.add_argument("--out", type=Path, help="write all results as JSON here")
    ns = ap.parse_args(argv)
    if ns.ptx:
        return run_ptx(ns)
    if ns.reference:
        try:
            [parse_reference_system(x) for x in ns.reference_systems]
        except ValueError as exc:
            ap.error(str(exc))
        return run_reference(ns)
    if len(ns.seeds) < 3:
        print("note: quality is judged on the mean over >= 3 seeds (--seeds)", file=sys.stderr)
    return run_gpu(ns)


if __name__ == "__main__":
    raise SystemExit(main())
