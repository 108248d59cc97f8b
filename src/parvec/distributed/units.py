"""The sharded minibatch algorithm on the client's side, without Ray: units of work and the minibatch loop.

- **Units.** Each epoch's corpus is cut (on sentence boundaries, after long sentences are split as the
  one-process trainer splits them) into units of about ``unit_words`` tokens (:func:`plan_units`).  A unit is
  what a client trains in one call and what is trained again after a fault.  Its random stream is
  ``chunk_seed(seed, epoch, unit index)`` and its learning rate runs linearly over its global word positions, as
  the one-process trainer's chunks do.
- **Minibatches.** :class:`UnitRunner` forms minibatches of ``minibatch_words`` input words
  (:func:`parvec.kernels.sharded.subsample_unit`, then :func:`~parvec.kernels.sharded.form_interleaved`,
  interleaved by default) and drives them through a :class:`Step` (the way to the shards: Ray's
  :class:`parvec.distributed.client_actor.RayStep`, or the one-process
  :class:`parvec.distributed.shard_kernels.LocalStep`): one call per minibatch that adjusts the previous
  minibatch and computes the dot products of the next one (so a call carries two minibatches' work), with the
  next minibatch formed while the call is in flight.  Each minibatch's negatives come from its own seed, derived
  from the unit's seed and its index.  :class:`UnitStats` is what one unit did.

Example:
    >>> [(u.s_lo, u.s_hi, u.base) for u in plan_units([np.array([0, 3, 6, 9, 12])], 6)]
    [(0, 2, 0), (2, 4, 6)]
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parvec.chunks import Part, chunk_bounds, split_long_sentences
from parvec.config import TrainConfig
from parvec.countclasses import CountClasses, keep_head, noise_tables
from parvec.distributed.wire import WIRE_BYTES, Minibatch, sum_partials
from parvec.errors import ParvecError
from parvec.kernels import sharded as K
from parvec.sampling import chunk_seed, keep_probabilities, splitmix64, word_noise_tables
from parvec.schedule import Schedule

__all__ = ["DEFAULT_MINIBATCH_WORDS", "DEFAULT_UNIT_WORDS", "LANE_WORDS", "SamplingTables", "Step", "Unit",
           "UnitRunner", "UnitStats", "client_keep", "minibatch_seed", "plan_units", "prepare_part", "units_crc32"]

DEFAULT_MINIBATCH_WORDS = 1024
DEFAULT_UNIT_WORDS = 100_000
# Interleaved minibatches take runs of this many consecutive input words from minibatch_words // LANE_WORDS
# lanes spread over the unit: a run sends its inputs with one window of context words on each side, so runs of
# 4 send about a third of the indices of single words, while a burst of one word still lands in one run.
LANE_WORDS = 4


# --------------------------------------------------------------------------- units and schedule
@dataclass(frozen=True)
class Unit:
    """One unit of work: sentences ``s_lo .. s_hi`` of part ``part`` (offsets already split), ``index``
    within its epoch (the random stream) and ``base`` its first word's position in the epoch.

    Example:
        >>> Unit(part=0, s_lo=0, s_hi=3, index=0, base=0, words=30).words
        30
    """

    part: int
    s_lo: int
    s_hi: int
    index: int
    base: int
    words: int


def plan_units(part_offsets: Sequence[np.ndarray], unit_words: int) -> list[Unit]:
    """Cut every part (its split offsets) into units of about ``unit_words`` tokens, in corpus order.

    Example:
        >>> [(u.s_lo, u.s_hi, u.base) for u in plan_units([np.array([0, 3, 6, 9, 12])], 6)]
        [(0, 2, 0), (2, 4, 6)]
    """
    units: list[Unit] = []
    base = 0
    for p, offsets in enumerate(part_offsets):
        bounds = chunk_bounds(offsets, unit_words)
        for c in range(len(bounds) - 1):
            lo, hi = int(bounds[c]), int(bounds[c + 1])
            words = int(offsets[hi] - offsets[lo])
            units.append(Unit(p, lo, hi, len(units), base, words))
            base += words
    return units


def units_crc32(units: Sequence[Unit]) -> int:
    """The CRC-32 of a run's units (part, sentences, words of each, in order): a resumed run must cut its corpus
    into the same units, or the checkpoint's position (units done) would name other words.

    Example:
        >>> units_crc32([Unit(0, 0, 2, 0, 0, 6)]) == units_crc32([Unit(0, 0, 2, 0, 0, 6)])
        True
    """
    table = np.array([(u.part, u.s_lo, u.s_hi, u.words) for u in units], dtype=np.int64).reshape(-1, 4)
    return zlib.crc32(table.tobytes()) & 0xFFFFFFFF


def minibatch_seed(unit_seed: int, index: int) -> np.uint64:
    """The seed of a unit's ``index``-th minibatch, from which every shard draws its negatives.

    Example:
        >>> bool(minibatch_seed(5, 0) != minibatch_seed(5, 1))
        True
    """
    s = splitmix64(int(unit_seed) ^ splitmix64(index + 1))
    return np.uint64(s or 0x9E3779B97F4A7C15)


def client_keep(counts: np.ndarray, config: TrainConfig) -> np.ndarray:
    """Subsampling keep probabilities, what a client needs to form minibatches.

    Example:
        >>> [round(float(x), 3) for x in client_keep(np.array([1000, 1]), TrainConfig(sample=1e-3))]
        [0.033, 1.0]
    """
    return keep_probabilities(np.asarray(counts, dtype=np.int64), config.sample)


@dataclass(frozen=True)
class SamplingTables:
    """A sharded run's sampling tables: the noise distribution the shards draw negatives from
    (``noise_prob``, ``noise_alias``) and the keep probabilities the clients subsample with (``keep``: of the
    first ``len(keep)`` ids, every later id always kept), for a vocabulary of ``n_words``.

    :meth:`per_word` gives one entry per word (:func:`parvec.sampling.word_noise_tables`, :func:`client_keep`:
    the ``Word2Vec`` API's sharded driver, whose model and counts are in the driver anyway); :meth:`of_classes`
    gives the same distributions over count classes (:mod:`parvec.countclasses`: a few thousand entries whatever
    the vocabulary, and the keep probabilities of the head words only), what ``parvec train --mode sharded``
    sends to every shard and client.  The kernels tell the two apart by the tables' lengths
    (:func:`parvec.kernels.sharded.subsample_unit`, the negatives' draw).

    Example:
        >>> from parvec.countclasses import CountClasses
        >>> t = SamplingTables.of_classes(CountClasses.from_counts(np.array([1000, 5, 5, 1])), TrainConfig())
        >>> t.n_words, len(t.noise_prob), len(t.noise_alias), len(t.keep)  # sample 1e-3: counts 1000 and 5 sampled
        (4, 3, 7, 3)
        >>> SamplingTables.per_word(np.array([1000, 5, 5, 1]), TrainConfig()).noise_alias.tolist()
        [0, 0, 0, 0]
    """

    noise_prob: np.ndarray
    noise_alias: np.ndarray
    keep: np.ndarray
    n_words: int

    @classmethod
    def per_word(cls, counts: np.ndarray, config: TrainConfig) -> SamplingTables:
        """One entry per word (``counts`` in id order)."""
        counts = np.asarray(counts, dtype=np.int64)
        prob, alias = word_noise_tables(counts, config.ns_exponent)
        return cls(prob, alias, client_keep(counts, config), len(counts))

    @classmethod
    def of_classes(cls, classes: CountClasses, config: TrainConfig) -> SamplingTables:
        """Over the vocabulary's count classes (ids by descending count)."""
        prob, ranges = noise_tables(classes, config.ns_exponent)
        return cls(prob, ranges, keep_head(classes, config.sample), classes.n_words)

    @property
    def nbytes(self) -> int:
        """Bytes of the three tables."""
        return int(self.noise_prob.nbytes + self.noise_alias.nbytes + self.keep.nbytes)


def prepare_part(tokens: np.ndarray, offsets: np.ndarray, max_sentence_length: int) -> Part:
    """A part as the kernels see it: long sentences split as the one-process trainer splits them.

    Example:
        >>> prepare_part(np.zeros(5, np.int32), np.array([0, 5]), 2)[1].tolist()
        [0, 2, 4, 5]
    """
    return tokens, split_long_sentences(offsets, max_sentence_length)


class Step:
    """How a client reaches the shards: ``submit(prev, next)`` starts one call that adjusts ``prev`` (a
    ``(Minibatch, coef)`` pair or None) and computes ``next``'s partial dot products; ``result`` waits for
    it and returns one array per shard (empty when ``next`` is None).  ``sent`` is the size of the array
    the last ``submit`` sent to each shard."""

    shards = 1
    sent = 0
    wire = "float32"  # how floats travel (WIRE_FLOATS)
    fused = False  # one shard: ``train(mb)`` has it train the minibatch whole (shard_calls="fused")

    def submit(self, prev: tuple[Minibatch, np.ndarray] | None, nxt: Minibatch | None) -> Any:
        raise NotImplementedError

    def train(self, mb: Minibatch) -> Any:
        """Start one fused call: the one shard trains ``mb`` whole; ``result`` returns ``[array([loss])]``."""
        raise NotImplementedError

    def result(self, handle: Any) -> list[np.ndarray]:
        raise NotImplementedError


@dataclass
class UnitStats:
    """What training one unit did (summed into the run's figures).

    Example:
        >>> total = UnitStats(acks=[0]); total.add(UnitStats(words=5, acks=[2])); total.words, total.acks
        (5, [2])
    """

    words: int = 0
    inputs: int = 0
    pairs: int = 0
    loss: float = 0.0
    minibatches: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    index_bytes_sent: int = 0
    acks: list[int] = field(default_factory=list)  # adjusts each shard confirmed
    seconds: float = 0.0
    wait_seconds: float = 0.0  # blocked on the shards' answers (the network, Ray, the shards' work)
    form_seconds: float = 0.0  # forming minibatches not overlapped with a call in flight
    client_seconds: float = 0.0  # summing partials, coefficients and loss

    def add(self, other: UnitStats) -> None:
        """Add ``other``'s figures to these."""
        for name in ("words", "inputs", "pairs", "loss", "minibatches", "bytes_sent", "bytes_received",
                     "index_bytes_sent", "seconds", "wait_seconds", "form_seconds", "client_seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if len(self.acks) < len(other.acks):
            self.acks += [0] * (len(other.acks) - len(self.acks))
        for s, a in enumerate(other.acks):
            self.acks[s] += a

    def to_dict(self) -> dict[str, Any]:
        """The figures as a dict (a snapshot's record)."""
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> UnitStats:
        """The figures :meth:`to_dict` gave."""
        return cls(**d)


class UnitRunner:
    """Forms a unit's minibatches and drives them through a :class:`Step` (one per client thread).

    Example:
        >>> runner = UnitRunner(config, keep, minibatch_words=1024)  # doctest: +SKIP
        >>> stats = runner.run(tokens, offsets, unit, epoch, schedule, LocalStep(...))  # doctest: +SKIP
    """

    def __init__(self, config: TrainConfig, keep: np.ndarray, minibatch_words: int, interleave: bool = True) -> None:
        if minibatch_words < 1:
            raise ParvecError(f"minibatch_words must be a positive integer, got {minibatch_words}")
        self.config = config
        self.keep = keep
        self.window = config.window
        self.negative = config.negative
        self.max_inputs = minibatch_words
        self.interleave = interleave
        m = minibatch_words
        self._seq = np.empty(m * (2 * self.window + 1), dtype=np.int32)
        self._seg = np.empty((m, 4), dtype=np.int32)
        # Each input's shrink fits 16 bits (window <= 65535 is checked by the driver).
        self._shrink = np.empty(m, dtype=np.uint16)
        self._n_ctx = np.empty(m, dtype=np.int32)
        self._pos = np.empty(m, dtype=np.float64)
        self._grow(0, 0)

    def _grow(self, words: int, sentences: int) -> None:
        """The unit buffers: kept words, shrinks and positions for ``words``, starts for ``sentences``."""
        if words > getattr(self, "_cap_words", -1):
            cap = max(words, 1024)
            self._kept = np.empty(cap, dtype=np.int32)
            self._kshrink = np.empty(cap, dtype=np.uint16)
            self._kpos = np.empty(cap, dtype=np.float64)
            self._cap_words = cap
        if sentences + 1 > getattr(self, "_cap_sent", -1):
            self._sent_off = np.empty(max(sentences + 1, 1024), dtype=np.int64)
            self._cap_sent = len(self._sent_off)

    def minibatches(self, tokens: np.ndarray, offsets: np.ndarray, s_lo: int, s_hi: int, unit_seed: int,
                    a0: float, a1: float, unit_words: int) -> Iterator[Minibatch]:
        """The minibatches of sentences ``s_lo .. s_hi`` (``offsets`` already split), in order.

        The sentences are subsampled once (:func:`parvec.kernels.sharded.subsample_unit`, the stream from
        ``unit_seed``); with ``interleave`` each minibatch takes one input word from each of
        ``minibatch_words`` lanes spread over the unit (:func:`parvec.kernels.sharded.form_interleaved`),
        otherwise ``minibatch_words`` consecutive input words.  Learning rates run from ``a0`` to ``a1`` over
        the unit's ``unit_words`` raw words.

        Example:
            >>> [mb.inputs for mb in runner.minibatches(tokens, offsets, 0, 3, 7, 0.025, 0.02, 30)]  # doctest: +SKIP
            [16, 4]
        """
        raw = int(offsets[s_hi] - offsets[s_lo])
        self._grow(raw, s_hi - s_lo)
        n_kept, n_sent, _ = K.subsample_unit(tokens, offsets, s_lo, s_hi, self.keep, self.window,
                                             np.uint64(unit_seed), self._kept, self._sent_off, self._kshrink,
                                             self._kpos)
        m = self.max_inputs
        if self.interleave:
            per_lane = min(LANE_WORDS, m)
            # whole runs only: lanes x per_lane <= m, the buffers' size (a minibatch_words that is not a multiple
            # of LANE_WORDS, 4096 // 3 = 1365, used to take one lane more and write past their ends)
            lanes = K.lane_bounds(n_kept, m // per_lane)
        else:
            lanes, per_lane = np.array([0, n_kept], dtype=np.int64), m
        index = 0
        while True:
            k, n_seq, n_seg, pairs = K.form_interleaved(
                self._kept, self._sent_off, n_sent, self._kshrink, self._kpos, lanes, per_lane, index,
                self.window, self._seq, self._seg, self._shrink, self._n_ctx, self._pos)
            if k == 0:
                return
            alpha = (a0 + (a1 - a0) * (self._pos[:k] / max(unit_words, 1))).astype(np.float32)
            yield Minibatch(self._seq[:n_seq].copy(), self._seg[:n_seg].copy(), self._shrink[:k].copy(),
                            minibatch_seed(unit_seed, index), self._n_ctx[:k].copy(), alpha, int(pairs))
            index += 1

    def run(self, tokens: np.ndarray, offsets: np.ndarray, unit: Unit, epoch: int, schedule: Schedule,
            step: Step) -> UnitStats:
        """Train one unit; ``offsets`` already split.  A :class:`ShardLost` from the step (a shard lost, or
        fenced while the driver restores a snapshot) ends the unit: the driver restores every shard to its
        newest complete snapshot and trains the unit again."""
        t0 = time.perf_counter()
        stats = UnitStats(acks=[0] * step.shards)
        unit_seed = int(chunk_seed(self.config.seed, epoch, unit.index))
        a0, a1 = schedule.span(epoch, unit.base, unit.words)
        negative = self.negative
        t = time.perf_counter()
        batches = self.minibatches(tokens, offsets, unit.s_lo, unit.s_hi, unit_seed, a0, a1, unit.words)

        def form() -> Minibatch | None:
            return next(batches, None)

        nxt = form()
        stats.form_seconds += time.perf_counter() - t
        if step.fused:
            self._run_fused(step, nxt, form, stats)
            stats.words = unit.words
            stats.seconds = time.perf_counter() - t0
            return stats
        pending: tuple[Minibatch, np.ndarray] | None = None
        while nxt is not None or pending is not None:
            handle = step.submit(pending, nxt)
            following = form() if nxt is not None else None  # while the shards work
            t = time.perf_counter()
            partials = step.result(handle)  # ShardLost ends the unit
            stats.wait_seconds += time.perf_counter() - t
            # The bytes of the one array sent to each shard: the indices, seeds and header, and the coefficients.
            stats.bytes_sent += step.sent * step.shards
            coef_bytes = len(pending[1]) * WIRE_BYTES[step.wire] if pending is not None else 0
            stats.index_bytes_sent += (step.sent - coef_bytes) * step.shards
            if pending is not None:
                for s in range(step.shards):
                    stats.acks[s] += 1
            if nxt is not None:
                t = time.perf_counter()
                stats.bytes_received += sum(p.nbytes for p in partials)
                f = sum_partials(partials)
                coef = np.empty(nxt.pairs * (1 + negative), dtype=np.float32)
                stats.loss += K.coefficients(f, nxt.n_ctx, nxt.alpha, negative, coef)
                stats.inputs += nxt.inputs
                stats.pairs += nxt.pairs
                stats.minibatches += 1
                pending = (nxt, coef)
                nxt = following
                stats.client_seconds += time.perf_counter() - t
            else:
                pending = None
        stats.words = unit.words
        stats.seconds = time.perf_counter() - t0
        return stats

    @staticmethod
    def _run_fused(step: Step, nxt: Minibatch | None, form: Any, stats: UnitStats) -> None:
        # One call per minibatch, which the one shard trains whole; the next minibatch forms while it works.
        while nxt is not None:
            handle = step.train(nxt)
            following = form()  # while the shard works (form_seconds counts only forming that is not)
            t = time.perf_counter()
            answer = step.result(handle)  # ShardLost ends the unit
            stats.wait_seconds += time.perf_counter() - t
            stats.bytes_sent += step.sent
            stats.index_bytes_sent += step.sent
            stats.bytes_received += sum(a.nbytes for a in answer)
            stats.acks[0] += 1
            stats.loss += float(answer[0][0])
            stats.inputs += nxt.inputs
            stats.pairs += nxt.pairs
            stats.minibatches += 1
            nxt = following
