"""The client of a sharded run: one Ray actor that trains units of the encoded corpus against the shards.

A client forms each unit's minibatches (:class:`parvec.distributed.units.UnitRunner`, one per thread), sends
every shard the same call (:class:`RayStep`: one packed byte array, :mod:`parvec.distributed.wire`), sums the
shards' partial dot products, applies the sigmoid and forms the coefficients and the loss.  Only indices, seeds
and scalars travel; the client counts the bytes of every array it sends and receives.  A unit whose shard call
fails (a shard lost, or fenced by the driver) ends with :class:`~parvec.distributed.wire.ShardLost`: the driver
restores a snapshot and trains it again.

Example:
    >>> ClientSpec(holder="run-1", shard_names=("run-1-shard-0",), config=TrainConfig(), minibatch_words=1024,
    ...            timeout_s=60.0).fused
    False
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from parvec.config import TrainConfig
from parvec.distributed.sharded_report import ClientInfo
from parvec.distributed.supervise import cause, first_line, named_actor, node_id, was_restarted
from parvec.distributed.units import Step, Unit, UnitRunner, UnitStats, prepare_part
from parvec.distributed.wire import (
    Minibatch,
    ShardLost,
    answer_parts,
    join_parts,
    pack_call,
    pack_train_call,
    split_call,
    sum_partials,
)
from parvec.errors import ParvecError
from parvec.kernels import sharded as K
from parvec.memory import peak_memory_bytes
from parvec.schedule import Schedule
from parvec.usage import own_cpu_seconds

__all__ = ["ClientActor", "ClientSpec", "RayStep"]


@dataclass(frozen=True)
class ClientSpec:
    """What every client of a run is given: ``holder`` (the name of the
    :class:`~parvec.distributed.supervise.RunRefs` actor that hands it the keep table and the corpus parts), the
    shards' actor names (found by name), the training config, the minibatch settings and the longest wait.

    The corpus parts (from the holder) are ``("refs", [tokens_ref, offsets_ref])`` (arrays in Ray's object
    store) or ``("files", [tokens.npy, offsets.npy])`` (memory-mapped; every client must see the files).

    Example:
        >>> ClientSpec("run-1", ("s0",), TrainConfig(), 1024, 60.0, shard_calls="fused").fused
        True
    """

    holder: str
    shard_names: tuple[str, ...]
    config: TrainConfig
    minibatch_words: int
    timeout_s: float
    interleave: bool = True
    wire_floats: str = "float32"
    shard_calls: str = "split"

    @property
    def fused(self) -> bool:
        """One shard trains each minibatch whole (the settings fuse only one shard's calls)."""
        return self.shard_calls == "fused"


class RayStep(Step):
    """One client thread's way to the shards: every shard gets the same call, each answer has a time-out.

    Example:
        >>> step = RayStep(ray, shards, negative=5, timeout_s=60.0)  # doctest: +SKIP
    """

    def __init__(self, ray: Any, shards: list[Any], negative: int, timeout_s: float, wire: str = "float32",
                 fused: bool = False) -> None:
        self.ray = ray
        self.handles = shards
        self.shards = len(shards)
        self.negative = negative
        self.timeout_s = timeout_s
        self.wire = wire
        self.fused = fused

    def submit(self, prev: tuple[Minibatch, np.ndarray] | None, nxt: Minibatch | None) -> Any:
        # The call in parts and the answer in parts, each small enough to travel inside Ray's messages
        # (wire.INLINE_BYTES): no round trip through the object store.
        buf = pack_call(prev, nxt, self.negative, self.wire)
        self.sent = buf.nbytes
        parts = split_call(buf)
        k = answer_parts(nxt.pairs * (1 + self.negative) if nxt is not None else 0, self.wire == "float16")
        if k == 1:
            return [h.step.remote(*parts) for h in self.handles]
        return [h.step.options(num_returns=k).remote(*parts) for h in self.handles]

    def train(self, mb: Minibatch) -> Any:
        buf = pack_train_call(mb)
        self.sent = buf.nbytes
        return [self.handles[0].train.remote(*split_call(buf))]

    def result(self, handle: Any) -> list[np.ndarray]:
        ray = self.ray
        refs = [r for h in handle for r in (h if isinstance(h, list) else [h])]  # each shard's answer in parts
        try:
            got = ray.get(refs, timeout=self.timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise ParvecError(f"a shard did not answer within {self.timeout_s:g} s (Cluster.timeout_s); "
                              "the cluster is overloaded or a shard hangs") from None
        except (ray.exceptions.RayActorError, ShardLost) as exc:
            # A shard died (or was fenced by the driver, or restarted and not yet restored).  Wait for this call's
            # other shards to answer too, so that none of this unit's adjusts is still on its way to a shard when
            # the driver restores a snapshot; then the unit ends.
            ray.wait(refs, num_returns=len(refs), timeout=self.timeout_s)
            bad = next((s for s, h in enumerate(handle) if any(_failed(ray, r) for r in
                                                               (h if isinstance(h, list) else [h]))), -1)
            inner = cause(exc)
            detail = inner.args[1] if isinstance(inner, ShardLost) and len(inner.args) > 1 else first_line(inner)
            raise ShardLost(bad, str(detail)) from None
        if got[0] is None:
            return []
        if len(got) == len(handle):
            answers: list[np.ndarray] = got  # Ray's get is Any to mypy
            return answers
        k = len(got) // len(handle)
        return [join_parts(got[i * k: (i + 1) * k]) for i in range(len(handle))]


def _failed(ray: Any, ref: Any) -> bool:
    try:
        ray.get(ref, timeout=0)
        return False
    except Exception:  # noqa: BLE001 - whatever the shard answered with, its call failed
        return True


class ClientActor:
    """Trains units of the encoded corpus against the shards (``threads_per_actor`` units at once; module
    docstring).

    Example:
        >>> client = ray.remote(ClientActor).remote(0, spec)  # doctest: +SKIP
    """

    def __init__(self, index: int, spec: ClientSpec) -> None:
        import ray

        self.ray = ray
        self.index = index
        self.spec = spec
        self.timeout_s = spec.timeout_s
        holder = named_actor(spec.holder)
        keep_ref, parts = ray.get(holder.get.remote("client"), timeout=self.timeout_s)
        self.shards = [named_actor(name) for name in spec.shard_names]
        self.config = spec.config
        self.keep = ray.get(keep_ref, timeout=self.timeout_s)
        # Each part is loaded when a unit of it first comes (its tokens memory-mapped or fetched, its sentence
        # offsets read and split): a client holds the offsets of the parts it trains, not the whole corpus's.
        self.part_specs = list(parts)
        self.parts: dict[int, Any] = {}
        self._parts_lock = threading.Lock()
        self._local = threading.local()
        self.restarted = was_restarted()

    def part(self, p: int) -> Any:
        """Part ``p`` as the kernels see it (:func:`~parvec.distributed.units.prepare_part`), loaded once."""
        with self._parts_lock:
            got = self.parts.get(p)
            if got is None:
                kind, (a, b) = self.part_specs[p]
                if kind == "refs":
                    tokens, offsets = self.ray.get([a, b], timeout=self.timeout_s)
                else:
                    tokens, offsets = np.load(a, mmap_mode="r"), np.load(b)
                got = self.parts[p] = prepare_part(tokens, offsets, self.config.max_sentence_length)
            return got

    def _runner(self) -> UnitRunner:
        runner = getattr(self._local, "runner", None)
        if runner is None:
            runner = self._local.runner = UnitRunner(self.config, self.keep, self.spec.minibatch_words,
                                                     self.spec.interleave)
        return runner

    def _step(self) -> RayStep:
        return RayStep(self.ray, self.shards, self.config.negative, self.timeout_s, self.spec.wire_floats,
                       self.spec.fused)

    def warm_up(self) -> None:
        """Compile the kernels on both sides (a minibatch of two words whose coefficients are zero, so the
        model does not change)."""
        mb = Minibatch(np.zeros(2, np.int32), np.array([[0, 2, 0, 2]], np.int32), np.zeros(2, np.uint16),
                       np.uint64(1), np.ones(2, np.int32), np.zeros(2, np.float32), 2)
        step = self._step()
        if self.spec.fused:  # learning rates zero: the model does not change
            step.result(step.train(mb))
        else:
            f = sum_partials(step.result(step.submit(None, mb)))  # float16 from a float16 wire
            coef = np.zeros_like(f)
            K.coefficients(f, mb.n_ctx, mb.alpha, self.config.negative, coef)
            step.result(step.submit((mb, np.zeros_like(f)), None))
        runner = self._runner()
        tokens, offsets = np.zeros(2, np.int32), np.array([0, 2], np.int64)  # the unit kernels, on no sentence
        if self.part_specs and self.part_specs[0][0] == "files":
            tokens.setflags(write=False)  # the types of memory-mapped parts: compiled now, not in the first unit
        runner.run(tokens, offsets, Unit(0, 0, 0, 0, 0, 0), 0, Schedule(0.025, 0.0001, 1, 1), step)

    def train_unit(self, unit: Unit, epoch: int, schedule: Schedule) -> UnitStats:
        """Train one unit; returns its figures."""
        tokens, offsets = self.part(unit.part)
        return self._runner().run(tokens, offsets, unit, epoch, schedule, self._step())  # ShardLost: the unit ends

    def info(self) -> ClientInfo:
        """Whether Ray restarted it, its peak memory, process, Ray node and CPU seconds."""
        return ClientInfo(index=self.index, restarted=self.restarted, peak_rss_bytes=peak_memory_bytes(),
                          pid=os.getpid(), node=node_id(), cpu_seconds=own_cpu_seconds(),
                          parts_loaded=len(self.parts))

    def ping(self) -> int:
        """This process's id."""
        return os.getpid()
