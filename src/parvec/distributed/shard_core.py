"""The sharded minibatch algorithm without Ray: units of work, the client's minibatch loop, the
one-process reference, and the bookkeeping every part of ``--mode sharded`` shares.

- **Units.** Each epoch's corpus is cut (on sentence boundaries, after long sentences are split as the
  one-process trainer splits them) into units of about ``unit_words`` tokens.  A unit is what a client
  trains in one call and what is trained again after a fault.  Its random stream is
  ``chunk_seed(seed, epoch, unit index)`` and its learning rate runs linearly over its global word
  positions, as the one-process trainer's chunks do.
- **Minibatches.** :class:`UnitRunner` forms minibatches of ``minibatch_words`` input words
  (:func:`parvec.kernels.sharded.subsample_unit`, then :func:`~parvec.kernels.sharded.form_interleaved`,
  interleaved by default) and drives them through a :class:`Step`: one call per
  minibatch that adjusts the previous minibatch and computes the dot products of the next one (so a
  call carries two minibatches' work), with the next minibatch formed while the call is in flight.
  Each minibatch's negatives come from its own seed, derived from the unit's seed and its index.
- **The reference.** :func:`reference_train` runs the same units and minibatches in this process against
  the whole matrices (:class:`LocalStep`): what ``S`` shards with one client thread compute, up to the
  rounding of summing ``S`` partial dot products.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parvec.chunks import chunk_bounds, split_long_sentences
from parvec.config import TrainConfig
from parvec.engine import TrainStats
from parvec.errors import ParvecError
from parvec.kernels import sharded as K
from parvec.model_tables import init_input_vectors
from parvec.sampling import chunk_seed, keep_probabilities, splitmix64, word_noise_tables
from parvec.schedule import Schedule

Part = tuple[np.ndarray, np.ndarray]  # (tokens int32, offsets int64)

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


def prepare_part(tokens: np.ndarray, offsets: np.ndarray, max_sentence_length: int) -> Part:
    """A part as the kernels see it: long sentences split as the one-process trainer splits them.

    Example:
        >>> prepare_part(np.zeros(5, np.int32), np.array([0, 5]), 2)[1].tolist()
        [0, 2, 4, 5]
    """
    return tokens, split_long_sentences(offsets, max_sentence_length)


# --------------------------------------------------------------------------- one minibatch
@dataclass
class Minibatch:
    """One minibatch as it travels: the kept-word runs (``seq``), one row per run (``seg``), each input's
    window shrink, the negatives' seed; and, kept at the client, positives per input and learning rates.
    """

    seq: np.ndarray
    seg: np.ndarray
    shrink: np.ndarray
    seed: np.uint64
    n_ctx: np.ndarray
    alpha: np.ndarray
    pairs: int

    @property
    def inputs(self) -> int:
        return len(self.shrink)


_HEADER = 14  # int64 fields at the start of a packed call
WIRE_FLOATS = ("float32", "float16")
WIRE_BYTES = {"float32": 4, "float16": 2}  # bytes per float on the wire


def to_wire(coef: np.ndarray, alpha: np.ndarray, wire: str) -> tuple[np.ndarray, float]:
    """The coefficients as sent: ``(array, scale)``.  float16 carries ``coef / scale`` with ``scale`` the
    minibatch's largest learning rate (``alpha``: its inputs' rates), so ``alpha * (label - sigmoid)`` keeps
    float16's 11 significant bits whatever the rate (it decays ten-thousand-fold over a run), not its subnormals.

    Example:
        >>> a, s = to_wire(np.array([0.01, -0.02], np.float32), np.array([0.02], np.float32), "float16")
        >>> a.dtype.name, round(s, 6)
        ('float16', 0.02)
    """
    if wire == "float32":
        return coef, 1.0
    top = float(alpha.max()) if len(alpha) else 0.0
    scale = top if top > 0 else 1.0
    return to_half(coef * np.float32(1.0 / scale)), scale


def to_half(x: np.ndarray) -> np.ndarray:
    """``x`` as float16, as ``x.astype(np.float16)`` rounds it but in numba (:func:`parvec.kernels.sharded.
    float_to_half`: numpy's cast cost a shard call more than the bytes it saved).

    Example:
        >>> to_half(np.array([1.0, 1e-3], np.float32)).tolist()
        [1.0, 0.0010004043579101562]
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    return K.float_to_half(x, x.view(np.uint32), np.empty(len(x), dtype=np.uint16)).view(np.float16)


def sum_partials(partials: Sequence[np.ndarray]) -> np.ndarray:
    """The shards' partial dot products summed in float32, in shard order (float16 ones converted in numba).

    Example:
        >>> sum_partials([np.array([1.5], np.float16), np.array([0.25], np.float16)]).tolist()
        [1.75]
    """
    if partials[0].dtype != np.float16:
        return partials[0] if len(partials) == 1 else np.sum(partials, axis=0, dtype=np.float32)
    out = np.empty(len(partials[0]), dtype=np.float32)
    for s, p in enumerate(partials):
        K.half_to_float(p.view(np.uint16), np.float32(1.0), out, s > 0)
    return out


def from_wire(arr: np.ndarray, scale: float) -> np.ndarray:
    """The float32 coefficients a shard applies (:func:`to_wire`'s inverse, up to its rounding).

    Example:
        >>> from_wire(*to_wire(np.array([0.5], np.float32), np.ones(1, np.float32), "float16")).tolist()
        [0.5]
    """
    if arr.dtype == np.float32:
        return arr
    return K.half_to_float(arr.view(np.uint16), np.float32(scale), np.empty(len(arr), dtype=np.float32), False)


def _padded(nbytes: int) -> int:
    return (nbytes + 7) // 8 * 8


def pack_call(prev: tuple[Minibatch, np.ndarray] | None, nxt: Minibatch | None, negative: int,
              wire: str = "float32") -> np.ndarray:
    """One shard call as one byte array (one argument costs Ray far less than ten): a header of 14 int64
    (for the previous minibatch: present, seed, seq/runs/inputs/coefficient counts; the same for the next,
    with the number of dot products expected; whether floats travel as float16 (``wire``), and the
    coefficients' scale, :func:`to_wire`) and then the arrays, each 8-byte aligned.

    Example:
        >>> args = unpack_call(pack_call(None, None, 5)); args[0] is None and args[5] is None
        True
    """
    arrays: list[np.ndarray] = []
    header = np.zeros(_HEADER, dtype=np.int64)
    for h, (mb, extra) in ((0, prev if prev is not None else (None, None)), (6, (nxt, None))):
        if mb is None:
            continue
        header[h] = 1
        header[h + 1] = np.int64(np.uint64(mb.seed).view(np.int64))
        header[h + 2] = len(mb.seq)
        header[h + 3] = len(mb.seg)
        header[h + 4] = len(mb.shrink)
        header[h + 5] = len(extra) if extra is not None else mb.pairs * (1 + negative)
        if extra is not None:
            extra, scale = to_wire(extra, mb.alpha, wire)
            header[13] = np.float64(scale).view(np.int64)
        arrays += [mb.seq, mb.seg, mb.shrink] + ([extra] if extra is not None else [])
    header[12] = WIRE_FLOATS.index(wire)
    return _pack(header, arrays)


def _pack(header: np.ndarray, arrays: list[np.ndarray]) -> np.ndarray:
    # One byte array: the int64 header, then each array 8-byte aligned (both kinds of call).
    buf = np.zeros(_packed_bytes(len(header), arrays), dtype=np.uint8)
    at = header.nbytes
    buf[:at] = header.view(np.uint8)
    for a in arrays:
        buf[at: at + a.nbytes] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        at += _padded(a.nbytes)
    return buf


def _packed_bytes(header_fields: int, arrays: list[np.ndarray]) -> int:
    # The size of :func:`_pack`'s array, without packing it.
    return 8 * header_fields + sum(_padded(a.nbytes) for a in arrays)


def call_bytes(prev: tuple[Minibatch, np.ndarray] | None, nxt: Minibatch | None, wire: str = "float32") -> int:
    """The size of :func:`pack_call`'s array for these minibatches, without packing it.

    Example:
        >>> call_bytes(None, None)
        112
    """
    total = _HEADER * 8
    for mb, extra in ((prev if prev is not None else (None, None)), (nxt, None)):
        if mb is not None:
            total += sum(_padded(a.nbytes) for a in (mb.seq, mb.seg, mb.shrink))
            total += _padded(len(extra) * WIRE_BYTES[wire]) if extra is not None else 0
    return total


def unpack_call(buf: np.ndarray) -> tuple[Any, ...]:
    """The inverse of :func:`pack_call`: ``(p_seq, p_seg, p_shrink, p_seed, p_coef, n_seq, n_seg, n_shrink,
    n_seed, n_out, half)`` as views into ``buf`` (None where a minibatch is absent; ``p_coef`` float32, a
    copy when it came as float16; ``half``: answer in float16).

    Example:
        >>> unpack_call(pack_call(None, None, 5))[9]
        0
    """
    buf = np.asarray(buf, dtype=np.uint8)
    header = buf[: _HEADER * 8].view(np.int64)
    half = bool(header[12])
    width = 2 if half else 4
    at = _HEADER * 8
    out: list[Any] = []
    for h in (0, 6):
        if not header[h]:
            out += [None, None, None, np.uint64(0), None] if h == 0 else [None, None, None, np.uint64(0), 0]
            continue
        seed = np.int64(header[h + 1]).view(np.uint64)
        n_seq, n_seg, n_in, n_extra = (int(x) for x in header[h + 2: h + 6])
        seq = buf[at: at + 4 * n_seq].view(np.int32)
        at += _padded(4 * n_seq)
        seg = buf[at: at + 16 * n_seg].view(np.int32).reshape(n_seg, 4)
        at += _padded(16 * n_seg)
        shrink = buf[at: at + 2 * n_in].view(np.uint16)
        at += _padded(2 * n_in)
        if h == 0:
            coef = buf[at: at + width * n_extra].view(np.float16 if half else np.float32)
            at += _padded(width * n_extra)
            out += [seq, seg, shrink, seed, from_wire(coef, float(header[13:14].view(np.float64)[0]))]
        else:
            out += [seq, seg, shrink, seed, n_extra]
    return (*out, half)


_TRAIN_HEADER = 4  # int64 fields at the start of a packed fused call


def pack_train_call(mb: Minibatch) -> np.ndarray:
    """One fused call (``shard_calls="fused"``: one shard trains the minibatch whole) as one byte array: a header
    of 4 int64 (the negatives' seed, seq/runs/inputs counts), then ``seq``, ``seg``, ``shrink``, the inputs'
    learning rates (float32) and positives per input (int32), each 8-byte aligned.  No float of the model travels.

    Example:
        >>> mb = Minibatch(np.zeros(2, np.int32), np.array([[0, 2, 0, 2]], np.int32), np.zeros(2, np.uint16),
        ...                np.uint64(7), np.ones(2, np.int32), np.full(2, 0.025, np.float32), 2)
        >>> unpack_train_call(pack_train_call(mb))[3]
        np.uint64(7)
    """
    header = np.array([np.uint64(mb.seed).view(np.int64), len(mb.seq), len(mb.seg), len(mb.shrink)], np.int64)
    return _pack(header, _train_arrays(mb))


def train_call_bytes(mb: Minibatch) -> int:
    """The size of :func:`pack_train_call`'s array for ``mb``, without packing it.

    Example:
        >>> train_call_bytes(mb) == pack_train_call(mb).nbytes  # doctest: +SKIP
        True
    """
    return _packed_bytes(_TRAIN_HEADER, _train_arrays(mb))


def _train_arrays(mb: Minibatch) -> list[np.ndarray]:
    return [mb.seq, mb.seg, mb.shrink, np.asarray(mb.alpha, np.float32), np.asarray(mb.n_ctx, np.int32)]


def unpack_train_call(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.uint64, np.ndarray,
                                                np.ndarray]:
    """The inverse of :func:`pack_train_call`: ``(seq, seg, shrink, seed, alpha, n_ctx)`` as views into ``buf``.

    Example:
        >>> seq, seg, shrink, seed, alpha, n_ctx = unpack_train_call(pack_train_call(mb))  # doctest: +SKIP
    """
    buf = np.asarray(buf, dtype=np.uint8)
    header = buf[: _TRAIN_HEADER * 8].view(np.int64)
    seed = np.int64(header[0]).view(np.uint64)
    n_seq, n_seg, n_in = (int(x) for x in header[1:4])
    at = _TRAIN_HEADER * 8
    out = []
    for count, width, dtype, shape in ((n_seq, 4, np.int32, None), (n_seg, 16, np.int32, (n_seg, 4)),
                                       (n_in, 2, np.uint16, None), (n_in, 4, np.float32, None),
                                       (n_in, 4, np.int32, None)):
        a = buf[at: at + width * count].view(dtype)
        out.append(a.reshape(shape) if shape is not None else a)
        at += _padded(width * count)
    seq, seg, shrink, alpha, n_ctx = out
    return seq, seg, shrink, seed, alpha, n_ctx


SHARD_CALLS = ("fused", "split")


def check_shard_calls(calls: str) -> str:
    """``calls`` if it is one of :data:`SHARD_CALLS`, else a ParvecError naming them.

    Example:
        >>> check_shard_calls("fused")
        'fused'
    """
    return _one_of("shard_calls", calls, SHARD_CALLS)


def _one_of(name: str, value: str, choices: Sequence[str]) -> str:
    # ``value`` if it is one of ``choices``, else a ParvecError naming the parameter and the choices.
    if value not in choices:
        raise ParvecError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


NEGATIVES_PER = ("pair", "window")


def check_wire(wire: str) -> str:
    """``wire`` if it is one of :data:`WIRE_FLOATS`, else a ParvecError naming them.

    Example:
        >>> check_wire("float16")
        'float16'
    """
    return _one_of("wire_floats", wire, WIRE_FLOATS)


class ShardKernels:
    """The shard side of one ``negatives_per`` algorithm: "window" (parvec's default: the negatives shared by an
    input word's context words, :func:`parvec.kernels.sharded.window_rows`) or "pair" (the paper's, per (input,
    positive) pair).  ``rows`` draws a minibatch's rows, ``dotprod_rows``/``adjust_rows`` use them (a shard keeps
    them from a minibatch's dot products to its adjust); ``dotprod``/``adjust`` draw them for themselves.

    Example:
        >>> ShardKernels("window").dotprod.__name__
        'dotprod_window'
    """

    def __init__(self, negatives_per: str, window: int = 5, negative: int = 5) -> None:
        if negatives_per not in NEGATIVES_PER:
            raise ParvecError(f"negatives_per must be one of {', '.join(NEGATIVES_PER)}; got {negatives_per!r}")
        self.by_window = negatives_per == "window"
        self.window, self.negative = window, negative
        self.dotprod, self.adjust = (K.dotprod_window, K.adjust_window) if self.by_window else (K.dotprod, K.adjust)

    def rows(self, seq: np.ndarray, seg: np.ndarray, shrink: np.ndarray, pairs: int, seed: np.uint64,
             noise_prob: np.ndarray, noise_alias: np.ndarray) -> tuple[np.ndarray, ...]:
        """The rows of a minibatch of ``pairs`` pairs, in the kernels' order (window: each pair's context word,
        each input's center and negatives, each input's first pair; pair: each pair's input word, its positive
        and negatives)."""
        stride = 1 + self.negative
        if self.by_window:
            n_in = len(shrink)
            kept = (np.empty(pairs, np.int64), np.empty(n_in * stride, np.int64), np.empty(n_in + 1, np.int64))
            K.window_rows(seq, seg, shrink, self.window, self.negative, noise_prob, noise_alias, seed, *kept)
        else:
            kept = (np.empty(pairs, np.int64), np.empty(pairs * stride, np.int64))
            K.pair_rows(seq, seg, shrink, self.window, self.negative, noise_prob, noise_alias, seed, *kept)
        return kept

    def dotprod_rows(self, w_in: np.ndarray, w_out: np.ndarray, kept: tuple[np.ndarray, ...], out: np.ndarray) -> None:
        """The partial dot products of the minibatch whose rows :meth:`rows` drew."""
        if self.by_window:
            K.dotprod_window_rows(w_in, w_out, *kept, out)
        else:
            K.dotprod_rows(w_in, w_out, *kept, len(kept[0]), out)

    def adjust_rows(self, w_in: np.ndarray, w_out: np.ndarray, kept: tuple[np.ndarray, ...], seg: np.ndarray,
                    shrink: np.ndarray, coef: np.ndarray) -> None:
        """The minibatch's updates (``coef``) given the rows :meth:`rows` drew."""
        if self.by_window:
            K.adjust_window_rows(w_in, w_out, *kept, coef)
        else:
            K.adjust_rows(w_in, w_out, seg, shrink, self.window, *kept, len(kept[0]), coef)


    def train_rows(self, w_in: np.ndarray, w_out: np.ndarray, kept: tuple[np.ndarray, ...], seg: np.ndarray,
                   shrink: np.ndarray, alpha: np.ndarray, n_ctx: np.ndarray) -> float:
        """Train the minibatch whose rows :meth:`rows` drew whole (one shard holds every column): window batches
        as hogbatch trains them (:func:`parvec.kernels.sharded.train_window_rows`); per pair, the dot products,
        the coefficients and the paper's adjust from the call's start.  Returns its SGNS loss."""
        if self.by_window:
            return float(K.train_window_rows(w_in, w_out, *kept, alpha))
        f = np.empty(len(kept[1]), dtype=np.float32)
        K.dotprod_rows(w_in, w_out, *kept, len(kept[0]), f)
        loss = K.coefficients(f, n_ctx, alpha, self.negative, f)
        K.adjust_rows(w_in, w_out, seg, shrink, self.window, *kept, len(kept[0]), f)
        return float(loss)


def shard_kernels(negatives_per: str, window: int = 5, negative: int = 5) -> ShardKernels:
    """:class:`ShardKernels` of ``negatives_per`` (a ParvecError naming the choices otherwise).

    Example:
        >>> shard_kernels("pair").adjust.__name__
        'adjust'
    """
    return ShardKernels(negatives_per, window, negative)


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


class LocalStep(Step):
    """The one-process step: the kernels on whole matrices, right away (the reference and tests).

    Example:
        >>> step = LocalStep(w_in, w_out, config, prob, alias)  # doctest: +SKIP
    """

    def __init__(self, w_in: np.ndarray, w_out: np.ndarray, config: TrainConfig, noise_prob: np.ndarray,
                 noise_alias: np.ndarray, negatives_per: str = "window", wire: str = "float32",
                 fused: bool = False) -> None:
        self.w_in, self.w_out = w_in, w_out
        self.window, self.negative = config.window, config.negative
        self.noise_prob, self.noise_alias = noise_prob, noise_alias
        self.kernels = shard_kernels(negatives_per, config.window, config.negative)
        self.wire = check_wire(wire)
        self.fused = fused

    def train(self, mb: Minibatch) -> Any:
        self.sent = train_call_bytes(mb)  # what the shard would receive
        kept = self.kernels.rows(mb.seq, mb.seg, mb.shrink, mb.pairs, mb.seed, self.noise_prob, self.noise_alias)
        loss = self.kernels.train_rows(self.w_in, self.w_out, kept, mb.seg, mb.shrink, mb.alpha, mb.n_ctx)
        return [np.array([loss], dtype=np.float64)]

    def submit(self, prev: tuple[Minibatch, np.ndarray] | None, nxt: Minibatch | None) -> Any:
        out = []
        self.sent = call_bytes(prev, nxt, self.wire)  # what a shard would receive
        if prev is not None:
            mb, coef = prev
            if self.wire != "float32":  # what a shard would apply
                coef = from_wire(*to_wire(coef, mb.alpha, self.wire))
            self.kernels.adjust(self.w_in, self.w_out, mb.seq, mb.seg, mb.shrink, self.window, self.negative,
                        self.noise_prob, self.noise_alias, mb.seed, coef)
        if nxt is not None:
            f = np.empty(nxt.pairs * (1 + self.negative), dtype=np.float32)
            self.kernels.dotprod(self.w_in, self.w_out, nxt.seq, nxt.seg, nxt.shrink, self.window, self.negative,
                         self.noise_prob, self.noise_alias, nxt.seed, f)
            out.append(to_half(f) if self.wire == "float16" else f)
        return out

    def result(self, handle: Any) -> list[np.ndarray]:
        return handle


@dataclass
class UnitStats:
    """What training one unit did (summed into the run's figures)."""

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
        for name in ("words", "inputs", "pairs", "loss", "minibatches", "bytes_sent", "bytes_received",
                     "index_bytes_sent", "seconds", "wait_seconds", "form_seconds", "client_seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if len(self.acks) < len(other.acks):
            self.acks += [0] * (len(other.acks) - len(self.acks))
        for s, a in enumerate(other.acks):
            self.acks[s] += a

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> UnitStats:
        return cls(**d)


class ShardLost(Exception):
    """A call to a shard failed: ``(shard index, what happened)``.  The shard's process died, or the shard
    refused the call (fenced by the driver, or restarted and not yet restored); the unit ends and the driver
    restores every shard's newest complete snapshot."""


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


# --------------------------------------------------------------------------- the one-process reference
def reference_train(
    config: TrainConfig,
    counts: np.ndarray,
    parts: Sequence[Part],
    minibatch_words: int = DEFAULT_MINIBATCH_WORDS,
    unit_words: int = DEFAULT_UNIT_WORDS,
    w_in: np.ndarray | None = None,
    w_out: np.ndarray | None = None,
    epochs: int | None = None,
    interleave: bool = True,
    negatives_per: str = "window",
    wire: str = "float32",
    fused: bool = False,
) -> tuple[np.ndarray, np.ndarray, TrainStats]:
    """The sharded minibatch algorithm in this process, one client thread, whole matrices (``negatives_per``:
    :func:`shard_kernels`; ``wire``: the floats rounded as :func:`to_wire` sends them; ``fused``: each minibatch
    trained whole in one call, as one shard with ``shard_calls="fused"`` trains it).

    ``parts`` are ``(tokens, offsets)``; returns ``(w_in, w_out, stats)`` (trained in place when given).

    Example:
        >>> w_in, w_out, stats = reference_train(TrainConfig(dim=16), corpus.vocab.counts,
        ...                                      [(corpus.tokens, corpus.offsets)])  # doctest: +SKIP
    """
    config = config.validate()
    counts = np.asarray(counts, dtype=np.int64)
    n = len(counts)
    w_in = init_input_vectors(n, config.dim, config.seed) if w_in is None else w_in
    w_out = np.zeros((n, config.dim), dtype=np.float32) if w_out is None else w_out
    prob, alias = word_noise_tables(counts, config.ns_exponent)
    prepared = [prepare_part(t, o, config.max_sentence_length) for t, o in parts]
    units = plan_units([o for _, o in prepared], unit_words)
    words_per_epoch = sum(u.words for u in units)
    epochs = config.epochs if epochs is None else epochs
    schedule = Schedule.of(config, words_per_epoch, epochs)
    runner = UnitRunner(config, client_keep(counts, config), minibatch_words, interleave)
    step = LocalStep(w_in, w_out, config, prob, alias, negatives_per, wire, fused)
    stats = TrainStats()
    t0 = time.perf_counter()
    for epoch in range(epochs):
        total = UnitStats(acks=[0])
        for unit in units:
            tokens, offsets = prepared[unit.part]
            total.add(runner.run(tokens, offsets, unit, epoch, schedule, step))
        stats.words += total.words
        stats.pairs += total.pairs
        stats.words_per_epoch.append(total.words)
        stats.pairs_per_epoch.append(total.pairs)
        stats.loss_per_epoch.append(total.loss / total.pairs if total.pairs else float("nan"))
    stats.epochs = epochs
    stats.seconds = time.perf_counter() - t0
    return w_in, w_out, stats
