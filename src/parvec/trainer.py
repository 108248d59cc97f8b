"""The CPU driver: this machine's threads over chunks of sentences, for every CPU kernel.

It owns what the kernels must not, for one epoch at a time (:class:`CpuDriver`): threads, random streams and
the chunks' learning rates; the run around it (epochs, statistics, progress, checkpoints, the errors) is the
run engine's (:mod:`parvec.engine`), the same for every mode.  A kernel only trains one chunk of sentences.

- **Chunks.** Each corpus part is cut into chunks of about ``chunk_words`` tokens on sentence
  boundaries (sentences longer than ``max_sentence_length`` are split first).  Worker threads take
  chunks from a bounded queue and call the kernel, which releases the GIL: Hogwild across threads.
- **Learning rate.** The schedule's (:class:`parvec.schedule.Schedule`) at the chunk's first word and just
  after its last, by the chunk's *position* in the corpus, not by when a thread happens to reach it.
- **Random streams.** Each chunk's RNG state comes from (seed, epoch, chunk index), so window shrinks,
  subsampling and negatives do not depend on thread scheduling.  With one thread a run repeats bit for
  bit; with more, Hogwild's unsynchronised updates make runs differ slightly (as word2vec.c's do).
- **Streaming.** The parts of an epoch come from a function of the epoch (graph walks are generated batch by
  batch); a corpus is the one-part case.
- **Mid-epoch checkpoints.** When the engine says one is due, at the next chunk boundary the producer stops
  handing out chunks, waits until every chunk in flight is trained (a *prefix* of the epoch's chunks is then
  done, whatever order the threads took them in) and hands the engine that position.  A resumed epoch skips
  that prefix (same chunk indexes, same schedule positions) and continues its counters, so a resumed 1-thread
  run repeats bit for bit.

:class:`Trainer` is the CPU driver that runs itself: ``Trainer(config, counts).train(corpus)``.
"""

from __future__ import annotations

import itertools
import math
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from parvec.chunks import Part, chunk_bounds, resume_mismatch, split_long_sentences
from parvec.config import TrainConfig
from parvec.corpus import release_pages
from parvec.engine import Diverged, DriverBase, EpochContext, EpochResult, SelfRunning, TrainStats
from parvec.errors import ParvecError
from parvec.kernels import select_algorithm
from parvec.kernels.params import ChunkRates
from parvec.model_tables import ModelTables
from parvec.sampling import chunk_seed

__all__ = ["CpuDriver", "Trainer", "estimate_memory"]


@dataclass
class _Job:
    tokens: np.ndarray
    offsets: np.ndarray
    s_lo: int
    s_hi: int
    seed: np.uint64
    alpha0: float
    alpha1: float


class CpuDriver(ModelTables, DriverBase):
    """Trains an epoch's chunks on this machine's threads with one of the registered kernels (module
    docstring); a :class:`parvec.engine.Driver`.

    ``bind(make_parts)`` says where each epoch's parts come from; ``chunk_index_base`` (the index of the first
    chunk of each epoch in ``chunk_seed(seed, epoch, chunk)``, so a share of the corpus draws the random streams
    the whole corpus would) and ``on_part_end(epoch, part_index, (words, pairs, loss))`` (with the epoch's
    counters; called once every chunk of a part is trained, workers idle: where replicas synchronise and take
    their checkpoints) serve a driver that trains one share of a larger run.

    Example:
        >>> driver = CpuDriver(TrainConfig(algo="classic"), corpus.vocab.counts)  # doctest: +SKIP
        >>> RunEngine(driver.bind(lambda e: [(corpus.tokens, corpus.offsets)]), cfg, schedule).run()  # doctest: +SKIP
    """

    mode = "cpu"

    def __init__(self, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray | None = None,
                 w_out: np.ndarray | None = None, syn1: np.ndarray | None = None) -> None:
        super().__init__(config, counts, w_in, w_out)
        self.algorithm = select_algorithm(config)
        # The kernel's named parameters (one record for the run; each chunk adds its ChunkRates) and scratch size
        self.kernel_params, self._work_floats = self.algorithm.params(config)
        # Hierarchical softmax: the Huffman tree of the counts and the inner nodes' vectors (syn1, V-1 rows,
        # zeros unless given), passed after the contract's arguments to a kernel that declares NEEDS_HS.
        self.tree = None
        self.syn1 = None
        self._kernel_extra: tuple = ()
        if self.algorithm.needs_hs:
            from parvec.huffman import build_huffman_tree

            self.tree = build_huffman_tree(np.asarray(counts, dtype=np.int64))
            n_inner = self.tree.n_inner
            self.syn1 = np.zeros((n_inner, config.dim), dtype=np.float32) if syn1 is None else syn1
            if (self.syn1.shape != (n_inner, config.dim) or self.syn1.dtype != np.float32
                    or not self.syn1.flags.c_contiguous):
                raise ParvecError(f"syn1 must be C-contiguous float32 of shape ({n_inner}, {config.dim}) "
                                  "(one row per inner node of the Huffman tree)")
            self._kernel_extra = (self.syn1, self.tree.codes, self.tree.points, self.tree.code_len)
        elif syn1 is not None:
            raise ParvecError("syn1 (hierarchical softmax's output layer) given but hs is off")
        self.stats = TrainStats()
        # Called a few times a second with the running totals (t, words, pairs, loss_sum, lr, epoch) of the
        # run in progress, and once at its end: parvec.runlog.RunLog.progress records a report's time series.
        self.on_progress: Callable[..., None] | None = None
        # A run that trains no pair at all ends with a ParvecError (its vectors would be the random initial
        # ones).  A driver that trains one share of a run per call sets this False and checks the run's total.
        self.require_pairs = True
        self.make_parts: Callable[[int], Iterable[Part]] | None = None
        self.chunk_index_base = 0
        self.on_part_end: Callable[[int, int, tuple[int, int, float]], None] | None = None
        self._first: tuple[int, Part | None, Iterator[Part]] | None = None

    @property
    def label(self) -> str:
        """The progress bar's name: the kernel's."""
        return str(getattr(self.algorithm, "kernel", self.config.algo))

    def bind(self, make_parts: Callable[[int], Iterable[Part]], repeats: bool = False, chunk_index_base: int = 0,
             on_part_end: Callable[[int, int, tuple[int, int, float]], None] | None = None) -> CpuDriver:
        """Train the parts ``make_parts(epoch)`` yields (see the class docstring for the other two); returns self."""
        self.make_parts = make_parts
        self.chunk_index_base = chunk_index_base
        self.on_part_end = on_part_end
        self._first = None
        return self

    # ------------------------------------------------------------------ the Driver contract
    def prepare(self, start_epoch: int, epochs: int) -> None:
        """Compile the kernel (or load it from numba's cache) for the first part's exact array types before the
        clock starts (a read-only memory-mapped corpus is a different numba signature from a writable one); the
        part taken is trained first in ``start_epoch``."""
        parts = self._split(start_epoch)
        first = next(parts, None)
        self._compile_for(first)  # already split
        self._first = (start_epoch, first, parts)

    def finish(self) -> None:
        self._first = None

    def train_epoch(self, ctx: EpochContext) -> EpochResult:
        """Train this epoch's chunks on ``config.threads`` threads; see the module docstring."""
        n_threads = self.config.threads
        run = _EpochRun(self, ctx, n_threads)
        producer = threading.Thread(target=run.produce, args=(self._parts_of(ctx.epoch),), name="parvec-producer",
                                    daemon=True)
        threads = [threading.Thread(target=run.work, args=(t,), name=f"parvec-worker-{t}", daemon=True)
                   for t in range(n_threads)]
        for th in threads:
            th.start()
        producer.start()
        try:
            while producer.is_alive() or any(th.is_alive() for th in threads):
                # Wait on a thread still running (the producer, else a worker finishing the last chunks),
                # so this loop wakes every 0.25 s and never spins.
                waiting = producer if producer.is_alive() else next((th for th in threads if th.is_alive()), producer)
                waiting.join(timeout=0.25)
                ctx.progress(*run.counters())
        except KeyboardInterrupt:
            run.stop.set()
            for th in threads:
                th.join()
            raise
        for th in threads:
            th.join()
        if run.errors:
            raise run.errors[0]
        words, pairs, loss = run.counters()
        return EpochResult(words=words, pairs=pairs, loss=loss, longest=run.longest)

    def _split(self, epoch: int) -> Iterator[Part]:
        assert self.make_parts is not None, "bind(make_parts) first"
        return (self._as_trained(part) for part in self.make_parts(epoch))

    def _parts_of(self, epoch: int) -> Iterator[Part]:
        # The epoch prepare() took the first part of continues with it; any other epoch asks make_parts.
        if self._first is not None and self._first[0] == epoch:
            _, first, rest = self._first
            self._first = None
            return rest if first is None else itertools.chain([first], rest)
        return self._split(epoch)

    # ------------------------------------------------------------------ compiling
    def warm_up(self, part: Part | None = None) -> None:
        """Compile the kernel (or load it from numba's cache) for ``part``'s array types; trains nothing.

        Training does this before its clock starts; call it yourself to fill the cache ahead of time
        (e.g. before a benchmark).  ``part`` is ``(tokens, offsets)`` as given to training; its long
        sentences are split as training splits them, since the array types are what counts: a read-only
        memory-mapped corpus is a different compiled signature from a writable one, and so is a split
        copy of its offsets.

        Example:
            >>> trainer.warm_up((corpus.tokens, corpus.offsets))  # doctest: +SKIP
        """
        self._compile_for(None if part is None else self._as_trained(part))

    def _as_trained(self, part: Part) -> Part:
        # The one place a part becomes what the kernel sees: long sentences cut into pieces.
        tokens, offsets = part
        return tokens, split_long_sentences(offsets, self.config.max_sentence_length)

    def _compile_for(self, part: Part | None) -> None:
        # An empty range of sentences trains nothing but compiles for the arrays' exact types.
        if part is not None:
            tokens, offsets = part
        else:
            tokens = np.zeros(1, dtype=np.int32)
            offsets = np.array([0, 1], dtype=np.int64)
        self.algorithm.train_chunk(self.w_in, self.w_out, tokens, offsets, 0, 0, self.keep, self.noise_prob,
                                   self.noise_alias, self.kernel_params, ChunkRates.of(0.0, 0.0), np.uint64(1),
                                   np.empty(1, dtype=np.int32), np.zeros(max(1, self._work_floats), np.float32),
                                   *self._kernel_extra)


class _EpochRun:
    """One epoch of a :class:`CpuDriver`: the producer that hands out chunks, the workers, their counters."""

    def __init__(self, driver: CpuDriver, ctx: EpochContext, n_threads: int) -> None:
        self.driver, self.ctx = driver, ctx
        self.jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=4 * n_threads)
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.n_threads = n_threads
        # Per thread: words, pairs, loss (float64, summed without locks).  Thread 0 starts from what a resumed
        # epoch carried, so a resumed 1-thread run sums its loss in the order an uninterrupted one does.
        self.words = np.zeros(n_threads, dtype=np.int64)
        self.pairs = np.zeros(n_threads, dtype=np.int64)
        self.losses = np.zeros(n_threads, dtype=np.float64)
        if ctx.resume is not None:
            self.pairs[0] = ctx.resume.pairs
            self.losses[0] = ctx.resume.loss
        self.longest = 0  # the longest sentence handed to the kernels, for the no-pairs error

    def counters(self) -> tuple[int, int, float]:
        """(this call's words, the epoch's pairs, the epoch's loss) so far: a few small sums, no locks."""
        return int(self.words.sum()), int(self.pairs.sum()), float(self.losses.sum())

    def produce(self, parts: Iterator[Part]) -> None:
        try:
            self._produce(parts)
        except BaseException as exc:  # surfaced by the main thread
            self.errors.append(exc)
            self.stop.set()
        finally:
            for _ in range(self.n_threads):
                self.jobs.put(None)

    def _produce(self, parts: Iterator[Part]) -> None:
        driver, ctx, cfg = self.driver, self.ctx, self.driver.config
        epoch, base = ctx.epoch, driver.chunk_index_base
        position = 0
        chunk_index = base
        handed = 0  # raw words handed out in this call's epoch (the checkpoint clock)
        # Resuming mid-epoch: the first chunks were trained before the checkpoint; walk past them (same indexes
        # and schedule positions) without training them.
        resume = ctx.resume
        skip = resume.units_done if resume is not None else 0
        for part_index, (tokens, offsets) in enumerate(parts):
            if len(offsets) > 1:
                self.longest = max(self.longest, int(np.diff(offsets).max()))
            bounds = chunk_bounds(offsets, cfg.chunk_words)
            for c in range(len(bounds) - 1):
                lo, hi = int(bounds[c]), int(bounds[c + 1])
                n_words = int(offsets[hi] - offsets[lo])
                if skip > 0:
                    skip -= 1
                    position += n_words
                    chunk_index += 1
                    if skip == 0 and resume is not None and position != resume.words_done:
                        raise resume_mismatch(epoch, resume.units_done, position, resume.words_done)
                    continue
                if chunk_index > base and ctx.checkpoint_due(handed):
                    self.jobs.join()  # drain: every chunk handed out is trained, the workers are idle
                    if self.stop.is_set():
                        return
                    ctx.checkpoint(chunk_index - base, position, *self.counters())
                job = _Job(tokens, offsets, lo, hi, chunk_seed(cfg.seed, epoch, chunk_index),
                           ctx.alpha_at(position), ctx.alpha_at(position + n_words))
                position += n_words
                chunk_index += 1
                handed += n_words
                if not self._put(job):
                    return
            if driver.on_part_end is not None:
                self.jobs.join()  # every chunk of the part is trained: the workers are idle
                if self.stop.is_set():
                    return
                driver.on_part_end(epoch, part_index, self.counters())
        if skip > 0:
            raise resume_mismatch(epoch, resume.units_done)  # type: ignore[union-attr]
        self.jobs.join()  # the epoch is complete only when every chunk is trained

    def _put(self, job: _Job) -> bool:
        while not self.stop.is_set():
            try:
                self.jobs.put(job, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work(self, t: int) -> None:
        d = self.driver
        cfg = d.config
        kernel = d.algorithm.train_chunk
        sent_buf = np.empty(cfg.max_sentence_length, dtype=np.int32)
        scratch = np.zeros(max(1, d._work_floats), dtype=np.float32)
        jobs, stop = self.jobs, self.stop
        while True:
            job = jobs.get()
            if job is None:
                jobs.task_done()
                return
            try:
                if not stop.is_set():
                    rates = ChunkRates.of(job.alpha0, job.alpha1)
                    w, p, loss = kernel(d.w_in, d.w_out, job.tokens, job.offsets, job.s_lo, job.s_hi, d.keep,
                                        d.noise_prob, d.noise_alias, d.kernel_params, rates, job.seed, sent_buf,
                                        scratch, *d._kernel_extra)
                    # A memory-mapped corpus: drop the chunk's pages, so the resident set stays small
                    release_pages(job.tokens, int(job.offsets[job.s_lo]), int(job.offsets[job.s_hi]))
                    self.words[t] += w
                    self.pairs[t] += p
                    self.losses[t] += loss
                    if not math.isfinite(loss):
                        raise Diverged(self.ctx.epoch, f"the loss became {loss}")
            except BaseException as exc:
                self.errors.append(exc)
                stop.set()
            finally:
                jobs.task_done()


class Trainer(SelfRunning, CpuDriver):
    """The CPU driver that runs itself: ``Trainer(config, counts, w_in, w_out, syn1).train(corpus)`` trains the
    vectors in place with one of the registered kernels and returns :class:`TrainStats`.

    Example:
        >>> corpus = EncodedCorpus.from_file("corpus.txt")  # doctest: +SKIP
        >>> trainer = Trainer(TrainConfig(algo="classic"), corpus.vocab.counts)  # doctest: +SKIP
        >>> stats = trainer.train(corpus); trainer.w_in.shape  # doctest: +SKIP
    """


def estimate_memory(vocab_size: int, dim: int, n_tokens: int, n_sentences: int) -> int:
    """Bytes for the two weight matrices plus the encoded corpus: the memory plan of a run in this process.

    Example:
        >>> estimate_memory(1000, 100, 10**6, 100)
        4800808
    """
    return 2 * vocab_size * dim * 4 + n_tokens * 4 + (n_sentences + 1) * 8
