"""The actors of one sharded run: started, supervised through their start, and stopped.

:func:`start_actors` puts the run's tables (noise, keep: :class:`~parvec.distributed.units.SamplingTables`;
initial columns) and corpus parts in one
:class:`~parvec.distributed.supervise.RunRefs` actor, starts ``S`` :class:`~parvec.distributed.shard_actor.
ShardActor` and ``C`` :class:`~parvec.distributed.client_actor.ClientActor` (each given a typed spec and names, no
object reference, so that Ray can restart it), then waits for each one by one: an actor that dies while starting
is restarted by Ray like one that dies while training (a restarted shard restores the snapshot the run starts
from), and the fault is reported.  :class:`ShardedActors` holds their handles and process ids.

Example:
    >>> actors = start_actors(ray, settings, config, tables, parts, None, Path("ck"), False,
    ...                       restore_args=lambda s: (None,), faults=[])  # doctest: +SKIP
    >>> len(actors.shards), len(actors.clients)  # doctest: +SKIP
    (1, 2)
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parvec import storage
from parvec.config import TrainConfig
from parvec.distributed.client_actor import ClientActor, ClientSpec
from parvec.distributed.shard_actor import ShardActor, ShardSpec
from parvec.distributed.sharded_report import ShardInfo
from parvec.distributed.sharded_settings import ShardedSettings, actor_budget, cluster_cpus
from parvec.distributed.supervise import FaultRecord, RunRefs, call_through_restarts, report_fault
from parvec.distributed.units import SamplingTables
from parvec.distributed.wire import ShardLost
from parvec.errors import ParvecError
from parvec.kernels import sharded as K

__all__ = ["ShardedActors", "start_actors"]


@dataclass
class ShardedActors:
    """The started actors of a sharded run: the shards' and clients' handles (and process ids, to tell a restart),
    which clients are still alive, the shards' first ``info()``, and the holder of the run's object references.

    Example:
        >>> actors.what("shard", 1)  # doctest: +SKIP
        'shard 1 of 2'
    """

    ray: Any
    settings: ShardedSettings
    shards: list[Any] = field(default_factory=list)
    clients: list[Any] = field(default_factory=list)
    holder: Any = None
    alive: list[bool] = field(default_factory=list)
    shard_pids: list[int] = field(default_factory=list)
    client_pids: list[int] = field(default_factory=list)
    shard_infos: list[ShardInfo] = field(default_factory=list)

    def what(self, kind: str, index: int) -> str:
        """An actor in words: ``shard 1 of 2``, ``client 0 of 1``."""
        return f"{kind} {index} of {len(self.shards) if kind == 'shard' else len(self.clients)}"

    def call(self, handle: Any, method: str, args: tuple, what: str, deadline: float,
             on_refused: Callable[[float], None] | None = None) -> tuple[Any, bool]:
        """``handle.method(*args)`` through the actor's restarts while the run starts
        (:func:`parvec.distributed.supervise.call_through_restarts`)."""
        st = self.settings
        return call_through_restarts(self.ray, handle, method, args, what=what, deadline=deadline,
                                     timeout_s=st.timeout_s, max_restarts=st.max_restarts,
                                     refused=(ShardLost,) if on_refused is not None else (), on_refused=on_refused)

    def close(self, drop_snapshots: bool) -> None:
        """Stop every actor (the Ray session itself is the cluster's); ``drop_snapshots``: each shard first removes
        its snapshots (a run's temporary ones, on its own node's disk)."""
        ray = self.ray
        if drop_snapshots and self.shards:
            with contextlib.suppress(Exception):
                ray.wait([h.drop_snapshots.remote() for h in self.shards], num_returns=len(self.shards), timeout=30)
        for h in [*self.clients, *self.shards, self.holder]:
            if h is not None:
                with contextlib.suppress(Exception):
                    ray.kill(h, no_restart=True)
        self.clients, self.shards, self.holder = [], [], None


def start_actors(ray: Any, settings: ShardedSettings, config: TrainConfig, tables: SamplingTables, parts: list[Any],
                 init: tuple[np.ndarray, np.ndarray] | None, checkpoint_dir: Path, resuming: bool, *,
                 restore_args: Callable[[int], tuple[Any, ...]], faults: list[FaultRecord],
                 memory: dict[str, int] | None = None) -> ShardedActors:
    """Start a run's shards and clients and wait until each has started (module docstring); ``restore_args(s)``
    is what shard ``s`` restores when it must (restarted while starting, or a resumed run's shards); a start-up
    fault goes to ``faults``; ``memory``: the bytes a ``shard`` and a ``client`` ask of Ray's ``memory`` resource, so
    that Ray places them where they fit.  On any error the actors started so far are stopped.

    Example:
        >>> actors = start_actors(ray, settings, config, tables, parts, None, Path("ck"), False,
        ...                       restore_args=lambda s: (None,), faults=[])  # doctest: +SKIP
    """
    S, C, T = settings.shards, settings.clients, settings.threads
    cpus = cluster_cpus(ray)
    warning = actor_budget(S, C, cpus)  # before any actor starts: far too many is refused here
    print(f"parvec: starting {S} shard{'s' if S != 1 else ''} and {C} client{'s' if C != 1 else ''} x {T} "
          f"thread{'s' if T != 1 else ''} (Ray actors, one process each) on {cpus} CPUs ...", file=sys.stderr,
          flush=True)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    actors = ShardedActors(ray, settings)
    try:
        _launch(actors, config, tables, parts, init, checkpoint_dir, resuming, memory or {})
        _await_started(actors, resuming, restore_args, faults)
    except BaseException:
        actors.close(drop_snapshots=False)
        raise
    return actors


def _launch(actors: ShardedActors, config: TrainConfig, tables: SamplingTables, parts: list[Any],
            init: tuple[np.ndarray, np.ndarray] | None, checkpoint_dir: Path, resuming: bool,
            memory: dict[str, int]) -> None:
    # The references live in one actor that is never restarted; the shards and clients (restartable) take only
    # plain values and names, so Ray has nothing to warn about (see RunRefs).
    ray, st = actors.ray, actors.settings
    S, C, T = st.shards, st.clients, st.threads
    noise_refs = [ray.put(tables.noise_prob), ray.put(tables.noise_alias)]
    run_id = f"parvec-sharded-{os.getpid()}-{time.time_ns()}"
    held: dict[str, Any] = {"client": [ray.put(tables.keep), parts]}
    for s in range(S):
        lo, hi = K.column_range(s, S, config.dim)
        init_refs = [None, None]
        if init is not None:
            init_refs = [ray.put(np.ascontiguousarray(init[0][:, lo:hi])),
                         ray.put(np.ascontiguousarray(init[1][:, lo:hi]))]
        held[f"shard-{s}"] = [*noise_refs, *init_refs]
    actors.holder = ray.remote(RunRefs).options(name=run_id, num_cpus=0, max_restarts=0).remote(held)
    del held
    names = [f"{run_id}-shard-{s}" for s in range(S)]
    shard_cls = ray.remote(ShardActor)
    # Under a URL --checkpoint-dir each shard uploads its own snapshots from its node (the mirror skips them).
    checkpoint_url = storage.delegate(checkpoint_dir)
    for s in range(S):
        lo, hi = K.column_range(s, S, config.dim)
        spec = ShardSpec(index=s, shards=S, n_words=tables.n_words, dim=config.dim, lo=lo, hi=hi, window=config.window,
                         negative=config.negative, seed=config.seed, negatives_per=st.negatives_per,
                         update_cap=st.update_cap, checkpoint_dir=str(checkpoint_dir), checkpoint_url=checkpoint_url,
                         memory_cap=st.shard_memory_bytes, holder=run_id,
                         timeout_s=st.timeout_s, in_flight=C * T, resume=resuming)
        # max_task_retries=0: a minibatch is never replayed on a restarted shard (the driver restores instead)
        actors.shards.append(shard_cls.options(
            num_cpus=0, max_concurrency=C * T + 4, max_restarts=st.max_restarts, max_task_retries=0,
            scheduling_strategy="SPREAD", name=names[s], **_memory(memory, "shard"),
        ).remote(spec))
    client_spec = ClientSpec(holder=run_id, shard_names=tuple(names), config=config,
                             minibatch_words=st.minibatch_words, timeout_s=st.timeout_s, interleave=st.interleave,
                             wire_floats=st.wire_floats, shard_calls=st.shard_calls)
    client_cls = ray.remote(ClientActor)
    # The clients start (their processes, imports, corpus) while the shards allocate their columns.
    actors.clients = [client_cls.options(
        num_cpus=0, max_concurrency=T + 2, max_restarts=st.max_restarts, max_task_retries=0,
        scheduling_strategy="SPREAD", **_memory(memory, "client"),
    ).remote(c, client_spec) for c in range(C)]
    actors.alive = [True] * C


def _memory(memory: dict[str, int], kind: str) -> dict[str, int]:
    # Ray's memory resource for an actor of this kind, when the run asks for one.
    return {"memory": int(memory[kind])} if memory.get(kind) else {}


def _await_started(actors: ShardedActors, resuming: bool, restore_args: Callable[[int], tuple[Any, ...]],
                   faults: list[FaultRecord]) -> None:
    # Every actor is waited for one by one: one that dies while starting is restarted by Ray like one that dies
    # while training (a restarted shard is given the snapshot the run starts from); the fault is reported.
    timeout = actors.settings.timeout_s

    def started_fault(kind: str, index: int) -> None:
        what = actors.what(kind, index)
        report_fault(faults, FaultRecord(kind, index, "start", None, [f"{kind} {index}"], "lost while starting; "
                                         "Ray restarted it", details={"snapshot": None}),
                     f"{what} was lost while starting; Ray restarted it; nothing to retrain")

    def restore_started_shards(deadline: float) -> None:
        # A shard lost while a client warmed up against it: every shard back, a restarted one restored.
        for s, h in enumerate(actors.shards):
            info, _ = actors.call(h, "info", (), actors.what("shard", s), deadline)
            if info.needs_restore:
                actors.call(h, "restore", restore_args(s), actors.what("shard", s), deadline)
                started_fault("shard", s)
                actors.shard_pids[s] = info.pid

    deadline = time.monotonic() + timeout
    for s, h in enumerate(actors.shards):
        info, restarted = actors.call(h, "info", (), actors.what("shard", s), deadline)
        if info.error:
            raise ParvecError(info.error)
        if restarted or info.needs_restore:  # a resumed run's shards restore its checkpoint's snapshot here
            actors.call(h, "restore", restore_args(s), actors.what("shard", s), deadline)
            if restarted or not resuming:
                started_fault("shard", s)
        actors.shard_infos.append(info)
    actors.shard_pids = [i.pid for i in actors.shard_infos]
    deadline = time.monotonic() + timeout
    for c, h in enumerate(actors.clients):
        _, restarted = actors.call(h, "warm_up", (), f"{actors.what('client', c)} (compiling the kernels)", deadline,
                                   on_refused=restore_started_shards)
        if restarted:
            started_fault("client", c)
    actors.client_pids = [actors.call(h, "ping", (), actors.what("client", c), deadline)[0]
                          for c, h in enumerate(actors.clients)]
