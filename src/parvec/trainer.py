"""The one trainer behind every CPU algorithm.

It owns what the kernels must not: threads, the learning-rate schedule, random streams, progress,
loss bookkeeping and epoch callbacks (checkpoints).  A kernel only trains one chunk of sentences.

- **Chunks.** Each corpus part is cut into chunks of about ``chunk_words`` tokens on sentence
  boundaries (sentences longer than ``max_sentence_length`` are split first).  Worker threads take
  chunks from a bounded queue and call the kernel, which releases the GIL: Hogwild across threads.
- **Learning rate.** Linear from ``alpha`` to ``min_alpha`` over all raw words of all epochs.  A chunk's
  rate is set by its *position* in the corpus, not by when a thread happens to reach it.
- **Random streams.** Each chunk's RNG state comes from (seed, epoch, chunk index), so window shrinks,
  subsampling and negatives do not depend on thread scheduling.  With one thread a run repeats bit for
  bit; with more, Hogwild's unsynchronised updates make runs differ slightly (as word2vec.c's do).
- **Streaming.** :meth:`Trainer.train_parts` takes a function that yields corpus parts per epoch
  (graph walks are generated batch by batch); :meth:`Trainer.train` is the one-part case.
- **Mid-epoch checkpoints.** With ``checkpoint_every``, at the first chunk boundary after the interval the
  producer stops handing out chunks, waits until every chunk in flight is trained (a *prefix* of the
  epoch's chunks is then done, whatever order the threads took them in), calls ``on_checkpoint`` with the
  :class:`Position` and carries on.  ``resume_at`` skips that prefix (same chunk indexes, same schedule
  positions) and restores the loss and word counters, so a resumed 1-thread run repeats bit for bit.
"""

from __future__ import annotations

import itertools
import math
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, release_pages
from parvec.errors import ParvecError
from parvec.kernels import select_algorithm
from parvec.sampling import alias_table, chunk_seed, keep_probabilities, noise_distribution

Part = tuple[np.ndarray, np.ndarray]  # (tokens int32, offsets int64)


@dataclass
class TrainStats:
    """What a training run did.  ``words`` counts raw (pre-subsampling) in-vocabulary words, as
    word2vec.c does; ``pairs`` the positive (context, center) pairs trained; ``loss_per_epoch`` is the
    epoch's summed SGNS loss over its ``pairs_per_epoch``: the mean loss per positive pair, its
    negatives' terms included, each term taken just before the update it drives (docs/training.md).

    Example:
        >>> TrainStats(words=10, seconds=2.0).words_per_sec
        5.0
    """

    words: int = 0
    pairs: int = 0
    seconds: float = 0.0
    epochs: int = 0
    loss_per_epoch: list[float] = field(default_factory=list)
    words_per_epoch: list[int] = field(default_factory=list)
    pairs_per_epoch: list[int] = field(default_factory=list)

    @property
    def words_per_sec(self) -> float:
        return self.words / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "words": self.words,
            "pairs": self.pairs,
            "seconds": self.seconds,
            "epochs": self.epochs,
            "words_per_sec": self.words_per_sec,
            "loss_per_epoch": self.loss_per_epoch,
            "pairs_per_epoch": self.pairs_per_epoch,
        }


@njit(cache=True)
def _init_input_vectors(n: int, dim: int, seed: int, start: int) -> np.ndarray:
    # word2vec.c's initialisation: its LCG, uniform in [-0.5, 0.5) / dim (seed 1 = word2vec.c's); rows
    # start..n-1 of that matrix (the stream is advanced past the first `start` rows).
    out = np.empty((n - start, dim), dtype=np.float32)
    state = np.uint64(seed)
    mul = np.uint64(25214903917)
    inc = np.uint64(11)
    for _ in range(start * dim):
        state = state * mul + inc
    for a in range(n - start):
        for b in range(dim):
            state = state * mul + inc
            out[a, b] = (np.float32(state & np.uint64(0xFFFF)) / np.float32(65536.0) - np.float32(0.5)) / dim
    return out


def init_input_vectors(n: int, dim: int, seed: int = 1, start: int = 0) -> np.ndarray:
    """Input vectors as word2vec.c initialises them (uniform in [-0.5, 0.5) / dim): rows ``start..n-1``.

    Row ``i`` is the same whatever ``start`` is, so the rows of words added to a vocabulary
    (``build_vocab(update=True)``) are what they would have been in a model built with them.

    Example:
        >>> init_input_vectors(3, 4).shape
        (3, 4)
        >>> bool((init_input_vectors(3, 4, start=2) == init_input_vectors(3, 4)[2:]).all())
        True
    """
    if not 0 <= start <= n:
        raise ValueError(f"start must be in [0, {n}], got {start}")
    return _init_input_vectors(n, dim, seed, start)


def split_long_sentences(offsets: np.ndarray, max_len: int) -> np.ndarray:
    """Offsets with every sentence longer than ``max_len`` cut into consecutive pieces.

    Example:
        >>> split_long_sentences(np.array([0, 5, 6]), 2).tolist()
        [0, 2, 4, 5, 6]
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    if len(lengths) == 0 or lengths.max() <= max_len:
        return offsets
    pieces = np.maximum(1, -(-lengths // max_len))
    starts = np.repeat(offsets[:-1], pieces)
    within = np.arange(len(starts)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    cut = starts + within * max_len
    return np.concatenate([cut, offsets[-1:]]).astype(np.int64)


def chunk_bounds(offsets: np.ndarray, chunk_words: int) -> np.ndarray:
    """Sentence indices that cut the corpus into chunks of about ``chunk_words`` tokens.

    Example:
        >>> chunk_bounds(np.array([0, 3, 6, 9, 12]), 6).tolist()
        [0, 2, 4]
    """
    n_sent = len(offsets) - 1
    if n_sent <= 0:
        return np.zeros(1, dtype=np.int64)
    chunk_of = offsets[:-1] // chunk_words
    starts = np.flatnonzero(np.diff(chunk_of)) + 1
    return np.concatenate([[0], starts, [n_sent]]).astype(np.int64)


@dataclass
class Position:
    """Where a run stands at a chunk boundary: what a mid-epoch checkpoint saves and a resume restarts from.

    ``epoch`` is the epoch in progress (counted from 0, within the call); its first ``chunks_done`` chunks
    (across all its parts) are trained, ``words_done`` raw tokens (the schedule position inside the
    epoch).  ``words``, ``pairs`` and ``losses`` are the counters of epochs ``0 .. epoch`` (the last one
    partial), so the resumed run reports whole-epoch losses.

    Example:
        >>> Position(epoch=1, chunks_done=3, words_done=30000).to_dict()["chunks_done"]
        3
    """

    epoch: int
    chunks_done: int
    words_done: int
    words: list[int] = field(default_factory=list)
    pairs: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    alpha: float = 0.0  # the learning rate at this point (informational)

    def to_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "chunks_done": self.chunks_done, "words_done": self.words_done,
                "words": list(self.words), "pairs": list(self.pairs), "losses": list(self.losses),
                "alpha": self.alpha}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Position:
        """Inverse of :meth:`to_dict`; :class:`ParvecError` (KeyError/TypeError/ValueError) on a bad dict."""
        pos = cls(epoch=int(d["epoch"]), chunks_done=int(d["chunks_done"]), words_done=int(d["words_done"]),
                  words=[int(x) for x in d["words"]], pairs=[int(x) for x in d["pairs"]],
                  losses=[float(x) for x in d["losses"]], alpha=float(d.get("alpha", 0.0)))
        if (pos.epoch < 0 or pos.chunks_done < 0 or pos.words_done < 0
                or not len(pos.words) == len(pos.pairs) == len(pos.losses) == pos.epoch + 1):
            raise ValueError("inconsistent position fields")
        return pos


def parse_interval(value: str | int | float) -> tuple[str, float]:
    """``checkpoint_every``: ``("seconds", s)`` for a duration (``30s``, ``10m``, ``2h``, ``1d``) or
    ``("words", n)`` for a word count (``2000000``, ``500k``, ``50M``, ``1G``).  Lower-case ``m`` is
    minutes, upper-case ``M`` millions of words.

    Example:
        >>> parse_interval("10m"), parse_interval("50M"), parse_interval(2000)
        (('seconds', 600.0), ('words', 50000000.0), ('words', 2000.0))
    """
    units = {"s": ("seconds", 1), "m": ("seconds", 60), "h": ("seconds", 3600), "d": ("seconds", 86400),
             "k": ("words", 10**3), "K": ("words", 10**3), "M": ("words", 10**6), "G": ("words", 10**9),
             "B": ("words", 10**9)}
    bad = ParvecError(f"checkpoint interval must be a duration (30s, 10m, 2h) or a word count (2000000, 500k, "
                      f"50M), got {value!r}")
    if isinstance(value, bool):
        raise bad
    if isinstance(value, int | float):
        kind, amount = "words", float(value)
    else:
        text = str(value).strip()
        kind, scale = units.get(text[-1:], ("words", 1)) if text else ("words", 1)
        number = text[:-1] if text[-1:] in units else text
        try:
            amount = float(number) * scale
        except ValueError:
            raise bad from None
    if not (math.isfinite(amount) and amount > 0):
        raise bad
    return kind, amount


@dataclass
class _Job:
    tokens: np.ndarray
    offsets: np.ndarray
    s_lo: int
    s_hi: int
    seed: np.uint64
    alpha0: float
    alpha1: float
    epoch: int


class Trainer:
    """Trains input/output vectors with one of the registered kernels.

    Example:
        >>> corpus = EncodedCorpus.from_file("corpus.txt")  # doctest: +SKIP
        >>> trainer = Trainer(TrainConfig(algo="classic"), corpus.vocab.counts)  # doctest: +SKIP
        >>> stats = trainer.train(corpus); trainer.w_in.shape  # doctest: +SKIP
    """

    def __init__(
        self,
        config: TrainConfig,
        counts: np.ndarray,
        w_in: np.ndarray | None = None,
        w_out: np.ndarray | None = None,
        syn1: np.ndarray | None = None,
    ) -> None:
        self._setup(config, counts, w_in, w_out)
        self.algorithm = select_algorithm(config)
        self.iparams, self._fextra, self._work_floats = self.algorithm.params(config)
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

    def _setup(self, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray | None,
               w_out: np.ndarray | None) -> None:
        # What every driver shaped like the Trainer holds (the GPU driver calls this too): the validated
        # config, the vectors (word2vec.c's initialisation unless given), subsampling and noise tables, stats.
        self.config = config.validate()
        counts = np.asarray(counts, dtype=np.int64)
        if len(counts) == 0:
            raise ParvecError("the vocabulary is empty")
        n = len(counts)
        self.w_in = init_input_vectors(n, config.dim, config.seed) if w_in is None else w_in
        self.w_out = np.zeros((n, config.dim), dtype=np.float32) if w_out is None else w_out
        for name, w in (("w_in", self.w_in), ("w_out", self.w_out)):
            if w.shape != (n, config.dim) or w.dtype != np.float32 or not w.flags.c_contiguous:
                raise ParvecError(f"{name} must be C-contiguous float32 of shape ({n}, {config.dim})")
        self.keep = keep_probabilities(counts, config.sample)
        self.noise_prob, self.noise_alias = alias_table(noise_distribution(np.maximum(counts, 0), config.ns_exponent))
        self.stats = TrainStats()
        # Called a few times a second with the running totals (t, words, pairs, loss_sum, lr, epoch) of the
        # run in progress, and once at its end: parvec.runlog.RunLog.progress records a report's time series.
        self.on_progress: Callable[..., None] | None = None
        # A run that trains no pair at all ends with a ParvecError (its vectors would be the random initial
        # ones).  A driver that trains one share of a run per call sets this False and checks the run's total.
        self.require_pairs = True

    # ------------------------------------------------------------------ public
    def train(
        self,
        corpus: EncodedCorpus,
        epochs: int | None = None,
        on_epoch_end: Callable[[int, TrainStats], None] | None = None,
        start_epoch: int = 0,
        **checkpoints: Any,
    ) -> TrainStats:
        """Train on one encoded corpus for ``epochs`` (default ``config.epochs``); ``start_epoch`` > 0
        resumes a run whose first epochs are done (same schedule and random streams).  ``checkpoints``:
        ``checkpoint_every``, ``on_checkpoint``, ``resume_at`` of :meth:`train_parts`."""
        if len(corpus.vocab) != len(self.w_in):
            raise ParvecError(
                f"the corpus vocabulary has {len(corpus.vocab)} words but the model has {len(self.w_in)}"
            )
        return self.train_parts(lambda epoch: [(corpus.tokens, corpus.offsets)], corpus.n_tokens,
                                epochs=epochs, on_epoch_end=on_epoch_end, start_epoch=start_epoch, **checkpoints)

    def train_parts(
        self,
        make_parts: Callable[[int], Iterable[Part]],
        words_per_epoch: int,
        epochs: int | None = None,
        on_epoch_end: Callable[[int, TrainStats], None] | None = None,
        start_epoch: int = 0,
        on_part_end: Callable[[int, int], None] | None = None,
        chunk_index_base: int = 0,
        word_position: Callable[[int, int], float] | None = None,
        schedule_epochs: int | None = None,
        checkpoint_every: tuple[str, float] | None = None,
        on_checkpoint: Callable[[Position], None] | None = None,
        resume_at: Position | None = None,
    ) -> TrainStats:
        """Train on parts streamed per epoch: ``make_parts(epoch)`` yields ``(tokens, offsets)``.

        ``words_per_epoch`` (the total tokens the parts of one epoch hold) sets the learning-rate
        schedule; parts beyond it train at the final rate.  Epochs ``start_epoch .. epochs-1`` run;
        ``on_epoch_end(epoch, stats)`` is called after each, once all its chunks are trained.

        Hooks for drivers that train one share of a larger run (``parvec.distributed.replicas``); their
        defaults leave training exactly as without them:

        - ``on_part_end(epoch, part_index)``: called once every chunk of that part is trained, before the
          next part starts (workers idle meanwhile): the place to synchronise with peers.
        - ``chunk_index_base``: the index of the first chunk of each epoch in ``chunk_seed(seed, epoch,
          chunk)``, so a share of the corpus draws the random streams the whole corpus would.
        - ``word_position(epoch, words_before)``: the schedule position (words) of a point ``words_before``
          raw words into this call's epoch; default ``epoch * words_per_epoch + words_before``.
        - ``schedule_epochs``: the epochs the learning-rate schedule spans (default ``epochs``), so one
          epoch of a longer run can be trained by itself.

        Mid-epoch checkpoints (module docstring): ``checkpoint_every`` (from :func:`parse_interval`) and
        ``on_checkpoint(position)``, called with every worker idle (it may read or copy the vectors);
        ``resume_at`` (a :class:`Position` in epoch ``start_epoch``) continues from such a checkpoint.
        """
        cfg = self.config
        epochs = cfg.epochs if epochs is None else epochs
        if not 0 <= start_epoch < epochs:
            raise ParvecError(f"start_epoch must be in [0, {epochs}), got {start_epoch}")
        if words_per_epoch <= 0:
            raise ParvecError("the corpus has no in-vocabulary tokens to train on")
        if resume_at is not None and resume_at.epoch != start_epoch:
            raise ParvecError(f"resume_at is in epoch {resume_at.epoch} but start_epoch is {start_epoch}")

        def split_parts(epoch: int) -> Iterator[Part]:
            return (self._as_trained(part) for part in make_parts(epoch))

        # The first part is taken now so the kernel is compiled (or loaded from numba's cache) for its
        # exact array types before the clock starts: a read-only memory-mapped corpus is a different
        # numba signature from a writable one.
        first_parts = split_parts(start_epoch)
        first = next(first_parts, None)
        self._compile_for(first)  # already split
        n_threads = cfg.threads
        jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=4 * n_threads)
        stop = threading.Event()
        errors: list[BaseException] = []
        # Per thread and epoch: words, pairs, loss (float64, summed without locks).
        words = np.zeros((n_threads, epochs), dtype=np.int64)
        pairs = np.zeros((n_threads, epochs), dtype=np.int64)
        losses = np.zeros((n_threads, epochs), dtype=np.float64)
        # The counters of the epochs (or part of one) done before the checkpoint this call resumes from.
        # Thread 0's pairs and loss start from them, so a resumed 1-thread run sums its loss in the order an
        # uninterrupted one does; the words are kept apart (this call's words/s and schedule use its own).
        carried = (np.zeros(epochs, dtype=np.int64), np.zeros(epochs, dtype=np.int64))  # words, pairs
        if resume_at is not None:
            n = min(epochs, resume_at.epoch + 1)
            carried[0][:n] = resume_at.words[:n]
            carried[1][:n] = resume_at.pairs[:n]
            pairs[0, :n] = resume_at.pairs[:n]
            losses[0, :n] = resume_at.losses[:n]
        ck_clock = [time.perf_counter(), 0]  # when the last checkpoint was taken; words handed out since
        total_words = words_per_epoch * (epochs if schedule_epochs is None else schedule_epochs)
        todo_words = words_per_epoch * (epochs - start_epoch) - (resume_at.words_done if resume_at else 0)
        a_start, a_end = cfg.alpha, cfg.final_alpha
        longest = [0]  # the longest sentence handed to the kernels, for the no-pairs error

        def alpha_at(word_pos: float) -> float:
            return max(a_end, a_start - (a_start - a_end) * min(1.0, word_pos / total_words))

        def position_of(epoch: int, words_before: int) -> float:
            if word_position is None:
                return epoch * words_per_epoch + words_before
            return word_position(epoch, words_before)

        def checkpoint_due() -> bool:
            if checkpoint_every is None or on_checkpoint is None:
                return False
            kind, amount = checkpoint_every
            if kind == "words":
                return ck_clock[1] >= amount
            return time.perf_counter() - ck_clock[0] >= amount

        def take_checkpoint(epoch: int, chunks_done: int, position: int) -> None:
            # Every chunk handed out is trained (the caller joined the queue): the chunks done are the
            # epoch's first `chunks_done`, and the counters are final for them.
            w, p, lo = words.sum(axis=0) + carried[0], pairs.sum(axis=0), losses.sum(axis=0)
            assert on_checkpoint is not None
            on_checkpoint(Position(epoch, chunks_done, position, [int(x) for x in w[: epoch + 1]],
                                   [int(x) for x in p[: epoch + 1]], [float(x) for x in lo[: epoch + 1]],
                                   alpha_at(position_of(epoch, position))))
            ck_clock[0], ck_clock[1] = time.perf_counter(), 0

        def produce() -> None:
            try:
                for epoch in range(start_epoch, epochs):
                    position = 0
                    chunk_index = chunk_index_base
                    # Resuming mid-epoch: the first chunks were trained before the checkpoint; walk past
                    # them (same indexes and schedule positions) without training them.
                    skip = resume_at.chunks_done if resume_at is not None and epoch == start_epoch else 0
                    parts = split_parts(epoch) if epoch != start_epoch else (
                        first_parts if first is None else itertools.chain([first], first_parts))
                    for part_index, (tokens, offsets) in enumerate(parts):
                        if len(offsets) > 1:
                            longest[0] = max(longest[0], int(np.diff(offsets).max()))
                        bounds = chunk_bounds(offsets, cfg.chunk_words)
                        for c in range(len(bounds) - 1):
                            lo, hi = int(bounds[c]), int(bounds[c + 1])
                            n_words = int(offsets[hi] - offsets[lo])
                            if skip > 0:
                                skip -= 1
                                position += n_words
                                chunk_index += 1
                                if skip == 0 and resume_at is not None and position != resume_at.words_done:
                                    raise ParvecError(
                                        f"the corpus does not match the checkpoint: its first {resume_at.chunks_done}"
                                        f" chunks of epoch {epoch + 1} hold {position} words, the checkpoint's "
                                        f"{resume_at.words_done}")
                                continue
                            if chunk_index > chunk_index_base and checkpoint_due():
                                jobs.join()  # drain: every chunk handed out is trained, the workers are idle
                                if stop.is_set():
                                    return
                                take_checkpoint(epoch, chunk_index - chunk_index_base, position)
                            job = _Job(tokens, offsets, lo, hi, chunk_seed(cfg.seed, epoch, chunk_index),
                                       alpha_at(position_of(epoch, position)),
                                       alpha_at(position_of(epoch, position + n_words)), epoch)
                            position += n_words
                            chunk_index += 1
                            ck_clock[1] += n_words
                            while not stop.is_set():
                                try:
                                    jobs.put(job, timeout=0.1)
                                    break
                                except queue.Full:
                                    continue
                            if stop.is_set():
                                return
                        if on_part_end is not None:
                            jobs.join()  # every chunk of the part is trained: the workers are idle
                            if stop.is_set():
                                return
                            on_part_end(epoch, part_index)
                    if skip > 0:
                        raise ParvecError(f"the corpus does not match the checkpoint: epoch {epoch + 1} has fewer "
                                          f"than the {resume_at.chunks_done} chunks the checkpoint trained")
                    jobs.join()  # the epoch is complete only when every chunk is trained
                    if stop.is_set():
                        return
                    if not np.isfinite(self.w_in.sum()):  # ~1 ms per 10^6 floats: catches --no-loss runs
                        raise self._diverged(epoch, "the input vectors hold NaN or inf")
                    if on_epoch_end is not None:  # the stats so far, with the seconds since this call started
                        on_epoch_end(epoch, self._stats_so_far(words, pairs, losses, start_epoch, epoch + 1,
                                                               carried, seconds=time.perf_counter() - start))
                    ck_clock[0], ck_clock[1] = time.perf_counter(), 0  # an epoch-end checkpoint resets the clock
            except BaseException as exc:  # surfaced by the main thread
                errors.append(exc)
                stop.set()
            finally:
                for _ in range(n_threads):
                    jobs.put(None)

        kernel = self.algorithm.train_chunk
        fparams_base = np.concatenate([[0.0, 0.0], self._fextra]).astype(np.float64)

        def work(t: int) -> None:
            sent_buf = np.empty(cfg.max_sentence_length, dtype=np.int32)
            scratch = np.zeros(max(1, self._work_floats), dtype=np.float32)
            fparams = fparams_base.copy()
            while True:
                job = jobs.get()
                if job is None:
                    jobs.task_done()
                    return
                try:
                    if not stop.is_set():
                        fparams[0] = job.alpha0
                        fparams[1] = job.alpha1
                        w, p, loss = kernel(self.w_in, self.w_out, job.tokens, job.offsets, job.s_lo, job.s_hi,
                                            self.keep, self.noise_prob, self.noise_alias, self.iparams, fparams,
                                            job.seed, sent_buf, scratch, *self._kernel_extra)
                        # A memory-mapped corpus: drop the chunk's pages, so the resident set stays small
                        release_pages(job.tokens, int(job.offsets[job.s_lo]), int(job.offsets[job.s_hi]))
                        words[t, job.epoch] += w
                        pairs[t, job.epoch] += p
                        losses[t, job.epoch] += loss
                        if not math.isfinite(loss):
                            raise self._diverged(job.epoch, f"the loss became {loss}")
                except BaseException as exc:
                    errors.append(exc)
                    stop.set()
                finally:
                    jobs.task_done()

        threads = [threading.Thread(target=work, args=(t,), name=f"parvec-worker-{t}", daemon=True)
                   for t in range(n_threads)]
        producer = threading.Thread(target=produce, name="parvec-producer", daemon=True)
        words_before = start_epoch * words_per_epoch + (resume_at.words_done if resume_at is not None else 0)
        bar = self._progress_bar(todo_words)
        start = time.perf_counter()
        if self.on_progress is not None:  # the curves start at word 0, at the starting learning rate
            self.on_progress(self._totals(words, pairs, losses, start, alpha_at, words_before))
        for th in threads:
            th.start()
        producer.start()
        try:
            while producer.is_alive() or any(th.is_alive() for th in threads):
                # Wait on a thread still running (the producer, else a worker finishing the last chunks),
                # so this loop wakes every 0.25 s and never spins.
                waiting = producer if producer.is_alive() else next((th for th in threads if th.is_alive()), producer)
                waiting.join(timeout=0.25)
                if bar is not None:
                    self._update_bar(bar, words, pairs, losses, lambda w: alpha_at(w + words_before))
                if self.on_progress is not None:
                    self.on_progress(self._totals(words, pairs, losses, start, alpha_at, words_before))
        except KeyboardInterrupt:
            stop.set()
            for th in threads:
                th.join()
            raise
        finally:
            if bar is not None:
                bar.close()
        for th in threads:
            th.join()
        seconds = time.perf_counter() - start
        if self.on_progress is not None and not errors:
            self.on_progress(self._totals(words, pairs, losses, start, alpha_at, words_before),
                             force=True)
        if errors:
            raise errors[0]
        stats = self._stats_so_far(words, pairs, losses, start_epoch, epochs, carried, seconds=seconds)
        self.stats = stats
        if stats.pairs == 0 and self.require_pairs:  # the vectors are the random initial ones: never hand them back
            raise self._no_pairs(stats, longest[0])
        return stats

    # ------------------------------------------------------------------ helpers
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
        fparams = np.concatenate([[0.0, 0.0], self._fextra]).astype(np.float64)
        self.algorithm.train_chunk(self.w_in, self.w_out, tokens, offsets, 0, 0, self.keep, self.noise_prob,
                                   self.noise_alias, self.iparams, fparams, np.uint64(1),
                                   np.empty(1, dtype=np.int32), np.zeros(max(1, self._work_floats), np.float32),
                                   *self._kernel_extra)

    @staticmethod
    def _totals(words, pairs, losses, start: float, alpha_at, words_before: int) -> dict[str, Any]:
        # The running totals of this call, for on_progress: a few small sums, no locks (Hogwild counters).
        per_epoch = pairs.sum(axis=0)
        current = np.flatnonzero(per_epoch)
        done = int(words.sum())
        return {"t": time.perf_counter() - start, "words": done, "pairs": int(per_epoch.sum()),
                "loss_sum": float(losses.sum()), "lr": alpha_at(done + words_before),
                "epoch": int(current[-1]) if len(current) else 0}

    def _diverged(self, epoch: int, what: str) -> ParvecError:
        # Stop rather than hand back NaN vectors: a silent wrong result is worse than an error.
        cfg = self.config
        hint = f"lower alpha (now {cfg.alpha})"
        if cfg.algo == "par":
            b = "whole sentences" if cfg.par_batch == 0 else str(cfg.par_batch)
            hint += (f" or par_batch (now {b}; long lines put thousands of gradient terms on each shared"
                     " negative, keep it in the tens)")
        return ParvecError(f"training diverged in epoch {epoch + 1} ({cfg.algo}): {what}; {hint}")

    def _no_pairs(self, stats: TrainStats, longest: int) -> ParvecError:
        # A pair needs two kept in-vocabulary words in one sentence (any two neighbours are within the
        # shrunk window, which is never below 1); say which of the two ways of missing that happened.
        cfg = self.config
        what = f"training made no (context, center) pair in {stats.epochs} epoch(s) over {stats.words} words, so "
        what += "the vectors would be their random initial values: "
        if longest <= 1:
            return ParvecError(what + "no sentence holds two in-vocabulary words (every line is one word once "
                               "words under min_count are removed); lower --min-count, or put the words that "
                               "belong together on one line")
        return ParvecError(what + f"subsampling (sample={cfg.sample:g}) left no sentence with two words (the "
                           f"longest has {longest}); lower --sample (0 turns it off) or --min-count, or use a "
                           "larger corpus")

    @staticmethod
    def _stats_so_far(words, pairs, losses, first: int, end: int, carried=None, seconds: float = 0.0) -> TrainStats:
        # words/pairs: this call's; the per-epoch figures include what a resumed checkpoint had done
        # (`carried` words and pairs; its pairs and loss are already in thread 0's counters).  `seconds`: the
        # time this call has trained so far (every driver passes it, so an epoch callback sees words/s).
        w = words.sum(axis=0)[first:end]
        p = pairs.sum(axis=0)[first:end]
        loss = losses.sum(axis=0)[first:end]
        this_words, this_pairs = int(w.sum()), int(p.sum())
        if carried is not None:
            w = w + carried[0][first:end]
            this_pairs -= int(carried[1][first:end].sum())
        return TrainStats(
            words=this_words,
            pairs=this_pairs,
            seconds=seconds,
            epochs=end - first,
            loss_per_epoch=[float(lv / pv) if pv else float("nan") for lv, pv in zip(loss, p, strict=True)],
            words_per_epoch=[int(x) for x in w],
            pairs_per_epoch=[int(x) for x in p],
        )

    def _progress_bar(self, total_words: int):
        show = self.config.progress
        if show is None:
            show = sys.stderr.isatty()
        if not show:
            return None
        from tqdm import tqdm

        return tqdm(total=total_words, unit="w", unit_scale=True, dynamic_ncols=True, file=sys.stderr,
                    desc=getattr(getattr(self, "algorithm", None), "kernel", self.config.algo), smoothing=0.1)

    @staticmethod
    def _update_bar(bar, words, pairs, losses, alpha_at) -> None:
        done = int(words.sum())
        bar.update(done - bar.n)  # the rate shown is for the words of this run
        # The loss of the epoch in progress (the latest with trained pairs).
        per_epoch = pairs.sum(axis=0)
        current = np.flatnonzero(per_epoch)
        e = current[-1] if len(current) else 0
        loss = losses[:, e].sum() / per_epoch[e] if per_epoch[e] else float("nan")
        bar.set_postfix(lr=f"{alpha_at(done):.5f}", loss=f"{loss:.4f}", refresh=False)


def estimate_memory(vocab_size: int, dim: int, n_tokens: int, n_sentences: int) -> int:
    """Bytes for the two weight matrices plus the encoded corpus.

    Example:
        >>> estimate_memory(1000, 100, 10**6, 100)
        4800808
    """
    return 2 * vocab_size * dim * 4 + n_tokens * 4 + (n_sentences + 1) * 8


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where unknown).

    Example:
        >>> available_memory() is None or available_memory() > 0
        True
    """
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
