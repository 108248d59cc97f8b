"""What travels between a client and the shards of a sharded run: one byte array per call.

A client sends every shard the same call (:func:`pack_call`): the previous minibatch's coefficients to apply, and
the next minibatch's kept-word runs, window shrinks and negatives' seed, whose partial dot products the shard
answers with; with one shard and fused calls, one call trains a minibatch whole (:func:`pack_train_call`).  Only
indices, seeds and scalars travel, and the floats as ``wire_floats`` says (float16: :func:`to_wire`, scaled by the
minibatch's largest learning rate).  A shard that refuses a call (fenced by the driver, or restarted and not yet
restored) answers with :class:`ShardLost`.

Example:
    >>> call = unpack_call(pack_call(None, None, 5)); call.adjust is None and call.dots is None
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from parvec.distributed.sharded_settings import WIRE_FLOATS
from parvec.kernels import sharded as K

__all__ = ["INLINE_BYTES", "WIRE_BYTES", "AdjustCall", "DotCall", "Minibatch", "ShardCall", "ShardLost",
           "answer_parts", "call_bytes", "from_wire", "join_parts", "pack_call", "pack_train_call", "split_answer",
           "split_call", "sum_partials", "to_half", "to_wire", "train_call_bytes", "unpack_call",
           "unpack_train_call"]


@dataclass
class Minibatch:
    """One minibatch as it travels: the kept-word runs (``seq``), one row per run (``seg``), each input's
    window shrink, the negatives' seed; and, kept at the client, positives per input and learning rates.

    Example:
        >>> Minibatch(np.zeros(2, np.int32), np.array([[0, 2, 0, 2]], np.int32), np.zeros(2, np.uint16),
        ...           np.uint64(1), np.ones(2, np.int32), np.zeros(2, np.float32), 2).inputs
        2
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
        """Input words in the minibatch."""
        return len(self.shrink)


_HEADER = 14  # int64 fields at the start of a packed call
# Ray carries an argument or a return value of at most 100 KiB inside the call's own message (its
# max_direct_call_object_size); a larger one goes through the object store, about a millisecond more of CPU on
# each side on a 2-core machine.  So a call travels as parts of at most this many bytes (docs/benchmarks/clusters.md,
# "The cost of a call").
INLINE_BYTES = 96 << 10
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
    half: np.ndarray = K.float_to_half(x, x.view(np.uint32), np.empty(len(x), dtype=np.uint16))  # jitted: Any to mypy
    return half.view(np.float16)


def sum_partials(partials: Sequence[np.ndarray]) -> np.ndarray:
    """The shards' partial dot products summed in float32, in shard order (float16 ones converted in numba).

    Example:
        >>> sum_partials([np.array([1.5], np.float16), np.array([0.25], np.float16)]).tolist()
        [1.75]
    """
    if partials[0].dtype != np.float16:
        return partials[0] if len(partials) == 1 else np.asarray(np.sum(partials, axis=0, dtype=np.float32))
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
    coefficients: np.ndarray = K.half_to_float(arr.view(np.uint16), np.float32(scale),  # jitted: Any to mypy
                                               np.empty(len(arr), dtype=np.float32), False)
    return coefficients


def _padded(nbytes: int) -> int:
    return (nbytes + 7) // 8 * 8


def pack_call(prev: tuple[Minibatch, np.ndarray] | None, nxt: Minibatch | None, negative: int,
              wire: str = "float32") -> np.ndarray:
    """One shard call as one byte array (one argument costs Ray far less than ten): a header of 14 int64
    (for the previous minibatch: present, seed, seq/runs/inputs/coefficient counts; the same for the next,
    with the number of dot products expected; whether floats travel as float16 (``wire``), and the
    coefficients' scale, :func:`to_wire`) and then the arrays, each 8-byte aligned.

    Example:
        >>> call = unpack_call(pack_call(None, None, 5)); call.adjust is None and call.dots is None
        True
    """
    arrays: list[np.ndarray] = []
    header = np.zeros(_HEADER, dtype=np.int64)
    # The two minibatches, typed before the loop: mypy 2.4 crashes ("Unexpectedly encountered partial type")
    # narrowing `prev` in a conditional expression inside this loop's iterable.
    sides: list[tuple[int, Minibatch | None, np.ndarray | None]] = [(6, nxt, None)]
    if prev is not None:
        sides.insert(0, (0, *prev))
    for h, mb, extra in sides:
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


class AdjustCall(NamedTuple):
    """The previous minibatch of a shard call (:func:`unpack_call`), to adjust: its kept-word runs, one row per
    run, each input's window shrink, the negatives' seed, and its coefficients (float32; a copy when they came as
    float16), the others views into the call.

    Example:
        >>> mb = Minibatch(np.zeros(2, np.int32), np.array([[0, 2, 0, 2]], np.int32), np.zeros(2, np.uint16),
        ...                np.uint64(7), np.ones(2, np.int32), np.ones(2, np.float32), 2)
        >>> unpack_call(pack_call((mb, np.zeros(6, np.float32)), None, 2)).adjust.seed
        np.uint64(7)
    """

    seq: np.ndarray
    seg: np.ndarray
    shrink: np.ndarray
    seed: np.uint64
    coef: np.ndarray


class DotCall(NamedTuple):
    """The next minibatch of a shard call (:func:`unpack_call`), whose partial dot products the shard answers:
    its kept-word runs, one row per run, each input's window shrink (views into the call), the negatives' seed and
    the number of dot products expected.

    Example:
        >>> mb = Minibatch(np.zeros(2, np.int32), np.array([[0, 2, 0, 2]], np.int32), np.zeros(2, np.uint16),
        ...                np.uint64(7), np.ones(2, np.int32), np.ones(2, np.float32), 2)
        >>> unpack_call(pack_call(None, mb, 2)).dots.n_out
        6
    """

    seq: np.ndarray
    seg: np.ndarray
    shrink: np.ndarray
    seed: np.uint64
    n_out: int


class ShardCall(NamedTuple):
    """One shard call unpacked (:func:`unpack_call`): the minibatch to adjust and the one to answer dot products
    for (None where absent), and whether the answer travels as float16.

    Example:
        >>> unpack_call(pack_call(None, None, 5)).half
        False
    """

    adjust: AdjustCall | None
    dots: DotCall | None
    half: bool


def unpack_call(buf: np.ndarray) -> ShardCall:
    """The inverse of :func:`pack_call`: the previous minibatch (:class:`AdjustCall`) and the next one
    (:class:`DotCall`), None where absent, their arrays views into ``buf``; ``half``: answer in float16.

    Example:
        >>> unpack_call(pack_call(None, None, 5)).dots is None
        True
    """
    buf = np.asarray(buf, dtype=np.uint8)
    header = buf[: _HEADER * 8].view(np.int64)
    half = bool(header[12])
    width = 2 if half else 4
    at = _HEADER * 8
    adjust: AdjustCall | None = None
    dots: DotCall | None = None
    for h in (0, 6):
        if not header[h]:
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
            adjust = AdjustCall(seq, seg, shrink, seed, from_wire(coef, float(header[13:14].view(np.float64)[0])))
        else:
            dots = DotCall(seq, seg, shrink, seed, n_extra)
    return ShardCall(adjust, dots, half)


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


def split_call(buf: np.ndarray) -> list[np.ndarray]:
    """A packed call as Ray's arguments: views of at most :data:`INLINE_BYTES` bytes each, so that every part
    travels inside the call's message, not through the object store (:func:`join_parts` undoes it).

    Example:
        >>> [len(p) for p in split_call(np.zeros(200_000, np.uint8))]
        [98304, 98304, 3392]
    """
    return [buf[i: i + INLINE_BYTES] for i in range(0, max(len(buf), 1), INLINE_BYTES)]


def join_parts(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Parts of a call or an answer as one array (the one part itself when there is one).

    Example:
        >>> join_parts(split_call(np.arange(5, dtype=np.uint8))).tolist()
        [0, 1, 2, 3, 4]
    """
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def answer_parts(n_out: int, half: bool) -> int:
    """The return values a shard's answer of ``n_out`` partial dot products takes (float16 when ``half``): each
    at most :data:`INLINE_BYTES` bytes, so that it comes back inside Ray's reply.  The client asks Ray for that
    many (``num_returns``) and :func:`split_answer` cuts the answer the same way.

    Example:
        >>> answer_parts(0, False), answer_parts(73_728, True), answer_parts(73_728, False)
        (1, 2, 3)
    """
    return max(1, -(-n_out * (2 if half else 4) // INLINE_BYTES))


def split_answer(out: np.ndarray, parts: int) -> np.ndarray | list[np.ndarray]:
    """``out`` as ``parts`` return values (:func:`answer_parts`): itself when one, else a list of views.

    Example:
        >>> [len(p) for p in split_answer(np.zeros(73_728, np.float16), 2)]
        [49152, 24576]
    """
    if parts == 1:
        return out
    per = INLINE_BYTES // out.itemsize
    return [out[i * per: (i + 1) * per] for i in range(parts)]


class ShardLost(Exception):
    """A call to a shard failed: ``(shard index, what happened)``.  The shard's process died, or the shard
    refused the call (fenced by the driver, or restarted and not yet restored); the unit ends and the driver
    restores every shard's newest complete snapshot.

    Example:
        >>> ShardLost(1, "fenced").args
        (1, 'fenced')
    """
