"""The GPU driver: :class:`GpuDriver` trains an epoch's kernel launches with the FULL-W2V or PAR kernel.

It is a :class:`parvec.engine.Driver`: the run engine owns the epochs, statistics, progress bar, ``on_progress``
totals (``--report``), epoch callbacks, checkpoints and errors, as for the CPU driver; the driver trains one
epoch's launches with the run's learning-rate schedule and the same noise table and subsampling probabilities.
A launch is its unit: a mid-epoch checkpoint is taken between launches (the launches in flight finished, the
vectors copied back), and a resumed epoch skips the launches done.  :class:`GpuTrainer` is the GPU driver that
runs itself (``GpuTrainer(config, counts).train(corpus)``).

- **Corpus on the device.**  A part whose tokens fit in device memory (the corpus, on every epoch) is
  copied once and every launch reads its sentences there.  A part that does not fit (or node2vec's walk
  batches, new each time) goes launch by launch through two pinned host buffers on two CUDA streams: the
  copy of one launch's tokens overlaps the kernel of the previous one.
- **Launches** of :func:`parvec.gpu.plan.default_words_per_launch` words (1/16 of an epoch, at most 262,144 for
  full-w2v, 100k for par: the launch size is the Hogwild concurrency), one block per sentence
  (:mod:`parvec.gpu.plan`); the vectors stay on the device for the whole run and come back after every
  epoch (for the callbacks, the divergence check and the caller).
- **Reproducible.**  Every random choice is keyed by (seed, epoch, sentence, position)
  (:mod:`parvec.gpu.rng`), so the draws never depend on scheduling; concurrent blocks still race on
  shared rows (Hogwild), so runs on a GPU are not bit-identical, as multi-threaded CPU runs are not.

Example:
    >>> trainer = GpuTrainer(TrainConfig(device="cuda", algo="full-w2v"), corpus.vocab.counts)  # doctest: +SKIP
    >>> stats = trainer.train(corpus); trainer.w_in.shape  # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numba_cuda  # noqa: F401  -- the [gpu] extra; its absence is reported by parvec.gpu.make_driver
import numpy as np
from numba import config as numba_config
from numba import cuda

from parvec.chunks import Part, resume_mismatch
from parvec.config import TrainConfig
from parvec.engine import Diverged, DriverBase, EpochContext, EpochResult, SelfRunning, TrainStats
from parvec.errors import ParvecError
from parvec.gpu import full_w2v, par_gpu
from parvec.gpu.blocks import REDUCTIONS, default_reduction, threads_for
from parvec.gpu.plan import (
    DEFAULT_WORDS_PER_LAUNCH,
    GPU_MAX_SENTENCE,
    MAX_BLOCKS_PER_LAUNCH,
    MAX_WORDS_PER_LAUNCH,
    MIN_WORDS_PER_LAUNCH,
    SIM_PROGRESS_S,
    SIM_SWITCH_INTERVAL_S,
    SIM_THREADS_PER_BLOCK,
    SIM_WORDS_PER_LAUNCH,
    Launch,
    default_words_per_launch,
    epoch_launches,
)
from parvec.gpu.reference import par_batch_size, par_h_max
from parvec.model_tables import ModelTables

MEMORY_MARGIN = 256 << 20  # bytes of device memory left free when deciding whether a corpus fits


def simulated() -> bool:
    """Whether numba's CUDA simulator stands in for a GPU (``NUMBA_ENABLE_CUDASIM=1``).

    Example:
        >>> isinstance(simulated(), bool)
        True
    """
    return bool(numba_config.ENABLE_CUDASIM)


_SIMULATOR_NOTED = [False]


def simulator_note() -> str:
    """The line a run under numba's CUDA simulator prints once per process: it is slow, for tests only.

    Example:
        >>> "tests only" in simulator_note()
        True
    """
    return (f"parvec: note: --device cuda is running on numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1), which runs "
            f"every GPU thread as a Python thread, about 50 words/s at --dim 100: it is for tests only (unset "
            f"NUMBA_ENABLE_CUDASIM to train on a GPU, or use --device cpu); it trains with {SIM_THREADS_PER_BLOCK} "
            f"threads per block and launches of about {SIM_WORDS_PER_LAUNCH:,} words, and prints its progress")


def require_device() -> str:
    """The name of the CUDA device training will use, or a :class:`ParvecError` saying none is there.

    Example:
        >>> require_device()  # doctest: +SKIP
        'NVIDIA H100 80GB HBM3'
    """
    if simulated():
        return "numba CUDA simulator"
    reason = ""
    try:
        if cuda.is_available():
            name = cuda.get_current_device().name
            return name.decode() if isinstance(name, bytes) else str(name)
        cuda.get_current_device()  # raises, saying why (no driver, no device)
    except Exception as exc:
        reason = " ".join(str(exc).split()).rstrip(" :.")
    raise ParvecError(f"--device cuda: no CUDA GPU is available ({reason or 'numba-cuda found no device'}). Train "
                      "on the CPU (--device cpu), or on a machine with an NVIDIA GPU and its driver")


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ParvecError(f"{name} must be an integer, got {value!r}") from None


@dataclass(frozen=True)
class GpuReport:
    """A GPU run's figures (:meth:`GpuDriver.report`): the device (its name, whether it is the simulator, its
    compute capability and memory when real), the kernel and its launch shape, the launches, how the corpus was
    held (``resident``, ``streamed``), the bytes uploaded.  :meth:`to_json` gives the report's ``gpu`` key.

    Example:
        >>> r = GpuReport({"name": "sim", "simulator": True}, "full-w2v", 128, "tree", None, 0, 4096, 3,
        ...               ("resident",), 10, 800.0, 1000)
        >>> r.to_json()["gpu"]["corpus"], r.device_name
        (['resident'], 'sim')
    """

    device: dict[str, object]
    kernel: str | None
    threads_per_block: int
    reduction: str
    registers_per_thread: int | dict[str, int] | None
    shared_bytes_per_block: int
    words_per_launch: int
    launches: int
    corpus: tuple[str, ...]
    bytes_uploaded: int
    model_bytes_per_trained_word: float
    max_sentence_tokens: int

    @property
    def device_name(self) -> str:
        """The device's name."""
        return str(self.device.get("name"))

    def to_json(self) -> dict[str, dict[str, object]]:
        """The ``--report`` file's ``gpu`` object, in its order."""
        return {"gpu": {
            "device": dict(self.device), "kernel": self.kernel, "threads_per_block": self.threads_per_block,
            "reduction": self.reduction, "registers_per_thread": self.registers_per_thread,
            "shared_bytes_per_block": self.shared_bytes_per_block, "words_per_launch": self.words_per_launch,
            "launches": self.launches, "corpus": list(self.corpus), "bytes_uploaded": self.bytes_uploaded,
            "model_bytes_per_trained_word": self.model_bytes_per_trained_word,
            "max_sentence_tokens": self.max_sentence_tokens,
        }}


@dataclass
class _Slot:
    """One of the two sets of launch buffers (streamed parts) and its stream."""

    stream: Any
    h_tokens: np.ndarray | None = None
    h_offsets: np.ndarray | None = None
    d_tokens: Any = None
    d_offsets: Any = None
    d_loss: Any = None
    d_pairs: Any = None
    h_loss: np.ndarray | None = None
    h_pairs: np.ndarray | None = None


class GpuDriver(ModelTables, DriverBase):
    """Trains ``w_in``/``w_out`` on a CUDA GPU with ``config.algo`` ("full-w2v" or "par"): a
    :class:`parvec.engine.Driver` whose unit is a kernel launch (module docstring).

    ``threads_per_block`` (a power of two; default :func:`parvec.gpu.blocks.threads_for`, or
    ``$PARVEC_GPU_THREADS``), ``reduction`` ("tree" or "shuffle"; default shuffle on a GPU, tree under the
    simulator or with blocks that are not whole warps, or ``$PARVEC_GPU_REDUCTION``),
    ``words_per_launch`` (at least 20,000 on a GPU; default :func:`parvec.gpu.plan.default_words_per_launch`
    of the epoch: 1/16 of it, at most 262,144 for full-w2v and 100k for par; or ``$PARVEC_GPU_WORDS_PER_LAUNCH``) and
    ``resident`` (False streams every part) are tuning knobs for benchmarks and tests.

    Example:
        >>> driver = GpuDriver(TrainConfig(device="cuda"), corpus.vocab.counts).use_corpus(corpus)  # doctest: +SKIP
        >>> RunEngine(driver, config, Schedule.of(config, corpus.n_tokens)).run()  # doctest: +SKIP
    """

    mode = "cuda"

    def __init__(self, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray | None = None,
                 w_out: np.ndarray | None = None, *, threads_per_block: int | None = None,
                 reduction: str | None = None, words_per_launch: int | None = None,
                 resident: bool | None = None) -> None:
        if config.validate().device != "cuda":
            raise ParvecError(f"GpuTrainer trains on device 'cuda', the config says {config.device!r}")
        self.device_name = require_device()
        super().__init__(config, counts, w_in, w_out)  # vectors, subsampling and noise tables
        self.stats = TrainStats()
        self.on_progress: Callable[..., None] | None = None  # a report's time series (SelfRunning)
        self.require_pairs = True

        sim = simulated()
        if sim and not _SIMULATOR_NOTED[0]:
            _SIMULATOR_NOTED[0] = True
            print(simulator_note(), file=sys.stderr, flush=True)
        threads = (threads_per_block or _env_int("PARVEC_GPU_THREADS")
                   or (SIM_THREADS_PER_BLOCK if sim else threads_for(config.dim, str(config.algo))))
        if threads < 1 or threads > 1024 or threads & (threads - 1):
            raise ParvecError(f"threads per block must be a power of two in [1, 1024], got {threads}")
        reduction = reduction or os.environ.get("PARVEC_GPU_REDUCTION") or default_reduction(threads, sim)
        if reduction not in REDUCTIONS:
            raise ParvecError(f"the GPU reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
        if reduction == "shuffle" and (threads % 32 or simulated()):
            raise ParvecError("the shuffle reduction needs a GPU (not the simulator) and a multiple of 32 threads "
                              f"per block (got {threads})")
        wpl = (words_per_launch or _env_int("PARVEC_GPU_WORDS_PER_LAUNCH")
               or (SIM_WORDS_PER_LAUNCH if sim else None))
        if wpl is not None and wpl < MIN_WORDS_PER_LAUNCH and not simulated():
            raise ParvecError(f"words per launch must be at least {MIN_WORDS_PER_LAUNCH:,} on a GPU, got {wpl:,}")
        self.threads_per_block = threads
        self.reduction = reduction
        # None: default_words_per_launch of each run's epoch; the buffers are sized for the largest
        self._words_per_launch = None if wpl is None else int(wpl)
        self.words_per_launch = int(wpl or MAX_WORDS_PER_LAUNCH.get(str(config.algo), DEFAULT_WORDS_PER_LAUNCH))
        self.resident = resident
        if config.algo == "par":
            self.par_batch = par_batch_size(config)
            self.h_max = max(par_h_max(config), 1)
            self.kernel = par_gpu.make_kernel(threads, config.dim, config.window, config.negative, self.par_batch,
                                              self.h_max, reduction)
            self.shared_bytes = par_gpu.shared_bytes(threads, config.dim, config.window, self.par_batch, self.h_max)
            neg_width = self.h_max
        else:
            self.kernel = full_w2v.make_kernel(threads, config.dim, config.window, config.negative, reduction,
                                               int(config.gpu_writers_cap))
            self.shared_bytes = full_w2v.shared_bytes(threads, config.dim, config.window, config.negative)
            neg_width = max(config.negative, 1)
        self._neg_width = neg_width
        self._launches = 0
        self._uploaded_bytes = 0
        self._modes: set[str] = set()
        self._compiled = False
        self._parts_repeat = False  # the same corpus arrays every epoch (bind(repeats=True)): kept on the device
        self.make_parts: Callable[[int], Iterable[Part]] | None = None
        self._device: _DeviceState | None = None
        self._switch_interval: float | None = None
        self._last_cut: np.ndarray | None = None

    @property
    def label(self) -> str:
        """The progress bar's name: the kernel's."""
        return str(self.config.algo)

    def bind(self, make_parts: Callable[[int], Iterable[Part]], repeats: bool = False) -> GpuDriver:
        """Train the parts ``make_parts(epoch)`` yields; ``repeats``: the same arrays every epoch (the corpus),
        kept on the device when they fit.  Returns self."""
        self.make_parts = make_parts
        self._parts_repeat = repeats
        return self

    # ------------------------------------------------------------------ the Driver contract
    def prepare(self, start_epoch: int, epochs: int) -> None:
        """Copy the vectors and tables to the device and compile the kernel, before the clock starts."""
        self._switch_interval = sys.getswitchinterval()
        if simulated():  # the simulator's barriers poll every thread of a block: a short switch interval
            sys.setswitchinterval(min(self._switch_interval, SIM_SWITCH_INTERVAL_S))
        self._device = _DeviceState(self)
        self._compile(self._device)
        self._sim_start = time.perf_counter()
        self._sim_last = self._sim_start
        self._sim_todo = self._sim_done = 0

    def finish(self) -> None:
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None
        self._device = None

    def train_epoch(self, ctx: EpochContext) -> EpochResult:
        """Train this epoch's launches (two in flight on two streams); the vectors come back at its end."""
        assert self._device is not None and self.make_parts is not None, "prepare() and bind() first"
        d, epoch, resume = self._device, ctx.epoch, ctx.resume
        words, pairs, loss = 0, resume.pairs if resume else 0, resume.loss if resume else 0.0
        counts: list[Any] = [words, pairs, loss]  # words, pairs (int), loss (float)
        pending: deque[tuple[Launch, _Slot, int]] = deque()
        longest, last_progress = 0, time.perf_counter()
        skip = resume.units_done if resume is not None else 0
        position = handed = units = 0

        def collect() -> None:
            launch, slot, n_blocks = pending.popleft()
            slot.stream.synchronize()
            assert slot.h_loss is not None and slot.h_pairs is not None
            loss = float(slot.h_loss[:n_blocks].sum())
            if not math.isfinite(loss):
                raise Diverged(launch.epoch, f"the loss became {loss}")
            counts[0] += launch.words
            counts[1] += int(slot.h_pairs[:n_blocks].sum())
            counts[2] += loss

        self.words_per_launch = self._words_per_launch or default_words_per_launch(str(self.config.algo),
                                                                                    ctx.schedule.words_per_epoch)
        for tokens, cut, launch in epoch_launches(self.config, self.make_parts(epoch), epoch, ctx.schedule,
                                                  self.words_per_launch):
            if skip > 0:  # resumed: the launches before the checkpoint are done
                skip -= 1
                position += launch.words
                units += 1
                if skip == 0 and position != resume.words_done:  # type: ignore[union-attr]
                    raise resume_mismatch(epoch, resume.units_done, position, resume.words_done,  # type: ignore[union-attr]
                                          what="kernel launches")
                continue
            if units > 0 and ctx.checkpoint_due(handed):
                while pending:  # drain: every launch handed out is trained; the vectors come back
                    collect()
                d.fetch_vectors()
                ctx.checkpoint(units, position, counts[0], counts[1], counts[2])
            if cut is not self._last_cut and len(cut) > 1:
                self._last_cut = cut
                longest = max(longest, int(np.diff(cut).max()))
            n_blocks = launch.s_hi - launch.s_lo
            slot = d.slots[self._launches % 2]
            if len(pending) == 2:  # this slot's previous launch must be done before its buffers change
                collect()
            d_tokens, d_offsets, s_lo = d.stage(tokens, cut, launch, slot)
            self._launch(d, slot, d_tokens, d_offsets, s_lo, launch, n_blocks)
            self._launches += 1
            pending.append((launch, slot, n_blocks))
            position += launch.words
            handed += launch.words
            units += 1
            if len(pending) == 2:  # keep one launch queued behind the one we wait for
                collect()
                self._sim_line(ctx, counts[0])
            now = time.perf_counter()
            if now - last_progress >= 0.25:
                last_progress = now
                ctx.progress(counts[0], counts[1], counts[2])
        if skip > 0:
            raise resume_mismatch(epoch, resume.units_done, what="kernel launches")  # type: ignore[union-attr]
        while pending:
            collect()
        self._sim_line(ctx, counts[0], force=True)
        d.fetch_vectors()
        return EpochResult(words=counts[0], pairs=counts[1], loss=counts[2], longest=longest)

    def _sim_line(self, ctx: EpochContext, words: int, force: bool = False) -> None:
        # Under the simulator a run is thousands of times slower than on a GPU: without a progress bar (which
        # the engine shows when asked, or on a terminal), say how far it is.
        if not simulated() or self.config.progress is not None or sys.stderr.isatty():
            return
        now = time.perf_counter()
        if not force and now - self._sim_last < SIM_PROGRESS_S:
            return
        self._sim_last = now
        schedule = ctx.schedule
        if not self._sim_todo:
            self._sim_todo = schedule.words_per_epoch * (schedule.epochs - ctx.epoch)
            self._sim_done = 0
        done, todo, elapsed = self._sim_done + words, self._sim_todo, now - self._sim_start
        left = elapsed * (todo - done) / done if done else float("nan")
        print(f"CUDA simulator: epoch {ctx.epoch + 1}/{schedule.epochs}, {done:,} of {todo:,} words "
              f"({100 * done / todo:.0f}%) in {elapsed:.0f} s"
              + (f", about {_duration(left)} left" if done < todo and done else ""), file=sys.stderr, flush=True)
        if force:  # the epoch's end
            self._sim_done += words

    def _launch(self, d: _DeviceState, slot: _Slot, d_tokens: Any, d_offsets: Any, s_lo: int, launch: Launch,
                n_blocks: int) -> None:
        cfg = self.config
        common = (d.w_in, d.w_out, d_tokens, d_offsets, s_lo, launch.sentence_base, launch.key, launch.alpha0,
                  launch.alpha1, launch.words, d.keep, d.prob, d.alias, d.no_negs, 0)
        tail = (bool(cfg.compute_loss), slot.d_loss, slot.d_pairs) + (() if d.busy is None else (d.busy,))
        args = common + ((float(cfg.par_h_factor),) if cfg.algo == "par" else ()) + tail
        self.kernel[n_blocks, self.threads_per_block, slot.stream](*args)
        assert slot.h_loss is not None and slot.h_pairs is not None
        slot.d_loss[:n_blocks].copy_to_host(slot.h_loss[:n_blocks], stream=slot.stream)
        slot.d_pairs[:n_blocks].copy_to_host(slot.h_pairs[:n_blocks], stream=slot.stream)

    def _compile(self, d: _DeviceState) -> None:
        # One block over an empty sentence: compiles the kernel for the exact argument types and trains nothing.
        if self._compiled:
            return
        slot = d.slots[0]
        tokens = np.zeros(1, dtype=np.int32)
        offsets = np.zeros(2, dtype=np.int64)
        launch = Launch(0, 0, 1, 0, 0, 0.0, 0.0, np.uint64(1))
        self._launch(d, slot, cuda.to_device(tokens, stream=slot.stream), cuda.to_device(offsets, stream=slot.stream),
                     0, launch, 1)
        slot.stream.synchronize()
        self._compiled = True

    def warm_up(self, part: Part | None = None) -> None:
        """Compile the kernel before a run (training does it before its clock starts).

        Example:
            >>> trainer.warm_up()  # doctest: +SKIP
        """
        self._compile(_DeviceState(self))

    # ------------------------------------------------------------------ reporting
    def report(self) -> GpuReport:
        """The GPU figures of the last run, for ``parvec train --report``.

        Example:
            >>> trainer.report().kernel  # doctest: +SKIP
            'full-w2v'
        """
        cfg = self.config
        device: dict[str, object] = {"name": self.device_name, "simulator": simulated()}
        if not simulated():
            dev = cuda.get_current_device()
            device["compute_capability"] = ".".join(map(str, dev.compute_capability))
            try:
                device["memory_bytes"] = int(cuda.current_context().get_memory_info().total)
            except Exception:  # pragma: no cover - reporting only
                pass
        regs = None
        try:
            regs = self.kernel.get_regs_per_thread()
            regs = int(regs) if not isinstance(regs, dict) else {str(k): int(v) for k, v in regs.items()}
        except Exception:
            regs = None
        return GpuReport(device=device, kernel=cfg.algo, threads_per_block=self.threads_per_block,
                         reduction=self.reduction, registers_per_thread=regs, shared_bytes_per_block=self.shared_bytes,
                         words_per_launch=self.words_per_launch, launches=self._launches,
                         corpus=tuple(sorted(self._modes)), bytes_uploaded=self._uploaded_bytes,
                         model_bytes_per_trained_word=model_bytes_per_word(cfg), max_sentence_tokens=GPU_MAX_SENTENCE)

class GpuTrainer(SelfRunning, GpuDriver):
    """The GPU driver that runs itself: ``GpuTrainer(config, counts).train(corpus)`` (the corpus is copied to the
    device once when it fits), as :class:`parvec.trainer.Trainer` on the CPU.

    Example:
        >>> GpuTrainer(TrainConfig(device="cuda"), corpus.vocab.counts).train(corpus).words_per_sec  # doctest: +SKIP
    """


class _DeviceState:
    """The device copies one training call uses: vectors, tables, the resident part, the two launch slots."""

    def __init__(self, trainer: GpuDriver) -> None:
        self.trainer = trainer
        need = trainer.w_in.nbytes + trainer.w_out.nbytes + 3 * trainer.keep.nbytes
        if not simulated():
            free = int(cuda.current_context().get_memory_info().free)
            if need + MEMORY_MARGIN > free:
                raise ParvecError(f"the vectors need {need / 2**30:.2f} GiB on the GPU but {free / 2**30:.2f} GiB is "
                                  "free; lower --dim, raise --min-count or set --max-final-vocab")
        self.w_in = cuda.to_device(trainer.w_in)
        self.w_out = cuda.to_device(trainer.w_out)
        self.keep = cuda.to_device(trainer.keep)
        self.prob = cuda.to_device(trainer.noise_prob)
        self.alias = cuda.to_device(trainer.noise_alias)
        self.no_negs = cuda.device_array((0, trainer._neg_width), dtype=np.int32)
        # full-w2v's writers' scale: per output row the blocks holding it, per input row its copies in the blocks'
        # rings (zero between launches; parvec.gpu.collisions)
        writers = trainer.config.algo != "par" and trainer.config.gpu_writers_cap > 0
        self.busy = cuda.to_device(np.zeros((2, len(trainer.w_out)), dtype=np.int32)) if writers else None
        self.slots = [_Slot(cuda.stream()), _Slot(cuda.stream())]
        for slot in self.slots:
            slot.d_loss = cuda.device_array(MAX_BLOCKS_PER_LAUNCH, dtype=np.float64)
            slot.d_pairs = cuda.device_array(MAX_BLOCKS_PER_LAUNCH, dtype=np.int64)
            slot.h_loss = cuda.pinned_array(MAX_BLOCKS_PER_LAUNCH, dtype=np.float64)
            slot.h_pairs = cuda.pinned_array(MAX_BLOCKS_PER_LAUNCH, dtype=np.int64)
        self._resident: tuple[Any, Any] | None = None
        self._resident_host: tuple[np.ndarray, np.ndarray] | None = None

    def fetch_vectors(self) -> None:
        cuda.synchronize()
        self.w_in.copy_to_host(self.trainer.w_in)
        self.w_out.copy_to_host(self.trainer.w_out)

    def _keep_resident(self, nbytes: int) -> bool:
        t = self.trainer
        if t.resident is not None:
            return t.resident
        if not t._parts_repeat:  # node2vec's walk batches are new every time: stream them
            return False
        if simulated():
            return True
        try:
            free = int(cuda.current_context().get_memory_info().free)
        except Exception:  # pragma: no cover - no memory figure: stream
            return False
        return nbytes + MEMORY_MARGIN < free

    def stage(self, tokens: np.ndarray, cut: np.ndarray, launch: Launch, slot: _Slot) -> tuple[Any, Any, int]:
        """Device (tokens, offsets, first sentence) for a launch: the resident part's, or this launch's
        sentences copied through the slot's pinned buffers on its stream."""
        t = self.trainer
        host = self._resident_host
        if host is not None and tokens is host[0] and (cut is host[1] or np.array_equal(cut, host[1])):
            assert self._resident is not None
            return self._resident[0], self._resident[1], launch.s_lo
        nbytes = tokens.nbytes + cut.nbytes
        if self._keep_resident(nbytes):
            self._resident = self._resident_host = None  # the previous part's copy goes first
            d_tokens = cuda.to_device(np.ascontiguousarray(tokens, dtype=np.int32))
            d_offsets = cuda.to_device(np.ascontiguousarray(cut, dtype=np.int64))
            self._resident = (d_tokens, d_offsets)
            self._resident_host = (tokens, cut)
            t._uploaded_bytes += nbytes
            t._modes.add("resident")
            return d_tokens, d_offsets, launch.s_lo
        t._modes.add("streamed")
        lo = int(cut[launch.s_lo])
        hi = int(cut[launch.s_hi])
        n_tok = hi - lo
        n_off = launch.s_hi - launch.s_lo + 1
        cap = t.words_per_launch + GPU_MAX_SENTENCE
        if slot.h_tokens is None or len(slot.h_tokens) < n_tok:
            size = max(cap, n_tok)
            slot.h_tokens = cuda.pinned_array(size, dtype=np.int32)
            slot.d_tokens = cuda.device_array(size, dtype=np.int32)
        if slot.h_offsets is None or len(slot.h_offsets) < n_off:
            size = max(MAX_BLOCKS_PER_LAUNCH + 1, n_off)
            slot.h_offsets = cuda.pinned_array(size, dtype=np.int64)
            slot.d_offsets = cuda.device_array(size, dtype=np.int64)
        slot.h_tokens[:n_tok] = tokens[lo:hi]
        np.subtract(cut[launch.s_lo:launch.s_hi + 1], lo, out=slot.h_offsets[:n_off])
        slot.d_tokens[:n_tok].copy_to_device(slot.h_tokens[:n_tok], stream=slot.stream)
        slot.d_offsets[:n_off].copy_to_device(slot.h_offsets[:n_off], stream=slot.stream)
        t._uploaded_bytes += 4 * n_tok + 8 * n_off
        return slot.d_tokens, slot.d_offsets, 0


def _duration(seconds: float) -> str:
    """``95`` -> ``'1 min 35 s'``.

    Example:
        >>> _duration(95), _duration(12.4), _duration(7300)
        ('1 min 35 s', '12 s', '2 h 2 min')
    """
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def model_bytes_per_word(config: TrainConfig) -> int:
    """Global-memory bytes one trained (kept) center word moves in the kernel's counted model
    (docs/gpu.md): FULL-W2V ``8 d`` for the context row entering and leaving the ring plus ``8 d`` for each of
    the ``negative + 1`` output rows read and added back, ``8 d (negative + 2)`` (56 d at negative 5);
    PAR ``16 d`` for attraction (ring row and center row) plus ``8 d (B + E[H]) / B`` for repulsion.

    Example:
        >>> model_bytes_per_word(TrainConfig(device="cuda", algo="full-w2v", dim=100, negative=5))
        5600
    """
    d = config.dim
    if config.algo == "par":
        batch = max(config.par_batch, 1)
        mean_c_rep = (2 * config.window - 1) / 2  # a middle minibatch: C_rep uniform in [0, 2 window)
        mean_h = config.par_h_factor * config.negative * mean_c_rep
        return int(round(16 * d + 8 * d * (batch + mean_h) / batch))
    return 8 * d * (config.negative + 2)
