"""How replicas average their hottest rows: two collectives, measured against each other in
``benchmarks/bench_sync.py`` (docs/benchmarks/clusters.md gives the figures).

- :class:`GlooCollective` (the default): an allreduce over gloo through ``torch.distributed``, the library
  ``ray.util.collective``'s CPU backend calls.  parvec forms the process group itself (address published
  through the :class:`Board` actor, a port from Ray's helper) so that every collective has a time-out and
  the group can be formed again after a replica is lost, which ``ray.util.collective`` (one process group
  per process, gloo's 30-minute default time-out) does not allow.  Needs torch (the ``[ray]`` extra).
- :class:`RefCollective`: a reduce-scatter then an all-gather on Ray object references, swapped through the
  :class:`Board`; nothing beyond Ray.  About ten times slower per small sync on one machine (object-store
  puts and the board's round trips dominate), used when torch is missing.

Both leave identical bits on every replica: each slice of the sum is formed once and shared.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import numpy as np


def average_pieces(pieces: list[np.ndarray]) -> np.ndarray:
    """The mean of equally shaped float32 arrays, summed in the given (rank) order, as every replica does.

    Example:
        >>> average_pieces([np.ones(2, np.float32), np.zeros(2, np.float32)]).tolist()
        [0.5, 0.5]
    """
    acc = np.array(pieces[0], dtype=np.float32, copy=True)
    for p in pieces[1:]:
        acc += p
    acc /= np.float32(len(pieces))
    return acc



class SyncAborted(Exception):
    """A replica's sync was called off by the driver (a peer was lost); the epoch is trained again."""


class SyncTimeout(Exception):
    """A replica waited longer than ``Cluster.timeout_s`` for its peers at a sync."""


class Board:
    """Async actor of one run: swaps object references between replicas at each sync phase (no rows pass
    here), publishes the gloo group's address, and keeps references every replica (restarted ones too) reads.
    """

    def __init__(self, n: int, timeout_s: float, shared: list) -> None:
        import asyncio

        self.shared = shared  # references to the run's counts and data description, alive while the board is
        self.n = n
        self.timeout_s = timeout_s
        self.gen = 0
        self.slots: dict[tuple, dict[int, Any]] = {}
        self.events: dict[tuple, Any] = {}
        self.left: dict[tuple, int] = {}
        self.abort_event = asyncio.Event()
        self.epoch = -1
        self.addresses: dict[int, str] = {}
        self.address_events: dict[int, Any] = {}
        self.checkpoints: list = []

    def begin(self, epoch: int) -> int:
        """A new generation for an epoch's (re)try: drops every slot of the previous one."""
        import asyncio

        self.abort_event.set()
        self.gen += 1
        self.abort_event = asyncio.Event()
        self.slots.clear()
        self.events.clear()
        self.left.clear()
        self.checkpoints = []
        self.epoch = epoch
        return self.gen

    def abort(self, gen: int) -> None:
        """Wake every replica waiting in generation ``gen``: their sync fails with SyncAborted."""
        if gen == self.gen:
            self.abort_event.set()

    def publish(self, group_id: int, address: str) -> None:
        """Replica 0's address for sync group ``group_id``."""
        import asyncio

        self.addresses[group_id] = address
        self.address_events.setdefault(group_id, asyncio.Event()).set()

    async def lookup(self, group_id: int) -> str | None:
        """Wait (up to the time-out) for the address of sync group ``group_id``."""
        import asyncio

        event = self.address_events.setdefault(group_id, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), timeout=self.timeout_s)
        except TimeoutError:
            return None
        return self.addresses.get(group_id)

    def put_checkpoint(self, gen: int, payload: dict) -> None:
        """Replica 0's mid-epoch checkpoint of generation ``gen``: the part, every replica's counters and
        references to the fully averaged model (the driver takes it with :meth:`take_checkpoint`)."""
        if gen == self.gen:
            self.checkpoints.append(payload)

    def take_checkpoint(self, gen: int) -> list:
        """The checkpoints of generation ``gen`` put since the last call (oldest first)."""
        if gen != self.gen:
            return []
        out, self.checkpoints = self.checkpoints, []
        return out

    def shared_refs(self) -> list:
        """The references to the run's counts and data description (a restarted replica reads them)."""
        return self.shared

    async def exchange(self, gen: int, sync_id: int, phase: int, rank: int, payload: list) -> tuple[str, Any]:
        import asyncio

        if gen != self.gen or self.abort_event.is_set():
            return "abort", None
        key = (sync_id, phase)
        slot = self.slots.setdefault(key, {})
        slot[rank] = payload
        event = self.events.setdefault(key, asyncio.Event())
        if len(slot) == self.n:
            event.set()
        abort = self.abort_event
        if not event.is_set():
            waiters = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(abort.wait())]
            _, pending = await asyncio.wait(waiters, timeout=self.timeout_s, return_when=asyncio.FIRST_COMPLETED)
            for w in pending:
                w.cancel()
        if not event.is_set():
            if abort.is_set() or gen != self.gen:
                return "abort", None
            missing = sorted(set(range(self.n)) - set(slot))
            return "timeout", missing
        out = [slot[i] for i in range(self.n)]
        self.left[key] = self.left.get(key, 0) + 1
        if self.left[key] == self.n:  # everyone has its answer: drop the references
            self.slots.pop(key, None)
            self.events.pop(key, None)
            self.left.pop(key, None)
        return "ok", out


class RefCollective:
    """Average the top rows of float32 matrices across replicas: reduce-scatter, then all-gather, on Ray
    object references swapped through the board actor.  ``bytes_received`` counts rows fetched from peers.

    Example:
        >>> coll = RefCollective(ray, board, rank=0, n=2, timeout_s=60)  # doctest: +SKIP
        >>> coll.average(gen, sync_id=1, mats=[w_in, w_out], rows=1024)  # doctest: +SKIP
    """

    name = "refs"

    def __init__(self, ray: Any, board: Any, rank: int, n: int, timeout_s: float) -> None:
        self.ray = ray
        self.board = board
        self.rank = rank
        self.n = n
        self.timeout_s = timeout_s
        self.bytes_received = 0

    def connect(self, group_id: int) -> None:
        """Nothing to form: the board is the meeting point."""

    def start_average(self, gen: int, sync_id: int, arrays: list[np.ndarray]) -> None:
        """:meth:`average` of ``arrays`` in place, whole (the board's exchange is one blocking round): the same
        two steps as :meth:`GlooCollective.start_average`, so an overlapped sync trains the same either way."""
        self.average(gen, sync_id, arrays, len(arrays[0]))

    def wait(self, pending: None) -> None:
        """Nothing left: :meth:`start_average` ended the average."""

    def _swap(self, gen: int, sync_id: int, phase: int, payload: list) -> list:
        out: list[Any]  # the board's answer (Ray's get is Any to mypy)
        try:
            status, out = self.ray.get(self.board.exchange.remote(gen, sync_id, phase, self.rank, payload),
                                       timeout=self.timeout_s + 30)
        except self.ray.exceptions.GetTimeoutError:
            raise SyncTimeout(f"sync {sync_id}: no answer from the sync board in {self.timeout_s + 30:.0f} s") from None
        if status == "abort":
            raise SyncAborted(f"sync {sync_id} called off")
        if status == "timeout":
            raise SyncTimeout(f"sync {sync_id}: replica(s) {', '.join(map(str, out))} did not arrive within "
                              f"{self.timeout_s:.0f} s (timeout_s)")
        return out

    def _fetch(self, refs: list) -> list:
        try:
            fetched: list[Any] = self.ray.get(refs, timeout=self.timeout_s)
            return fetched
        except self.ray.exceptions.GetTimeoutError:
            raise SyncTimeout(f"a peer's rows did not arrive within {self.timeout_s:.0f} s") from None
        except self.ray.exceptions.RayError as exc:  # the peer that owned them is gone
            raise SyncAborted(f"a peer's rows were lost: {type(exc).__name__}") from None

    def average(self, gen: int, sync_id: int, mats: list[np.ndarray], rows: int) -> None:
        """Replace ``mats[i][:rows]`` by its mean over the replicas, identically on every replica."""
        n, rank = self.n, self.rank
        if n == 1 or rows == 0:
            return
        cut = np.linspace(0, rows, n + 1).round().astype(np.int64)
        put = self.ray.put
        # Reduce-scatter: slice j of my rows goes to replica j.
        out = [None if j == rank else put([m[cut[j]:cut[j + 1]] for m in mats]) for j in range(n)]
        got = self._swap(gen, sync_id, 1, out)
        peers = [i for i in range(n) if i != rank]
        fetched = dict(zip(peers, self._fetch([got[i][rank] for i in peers]), strict=True))
        mine = slice(int(cut[rank]), int(cut[rank + 1]))
        averaged = []
        for k, m in enumerate(mats):
            pieces = [m[mine] if i == rank else fetched[i][k] for i in range(n)]
            self.bytes_received += sum(p.nbytes for i, p in enumerate(pieces) if i != rank)
            averaged.append(average_pieces(pieces))
        # All-gather: everyone's averaged slice.
        got = self._swap(gen, sync_id, 2, [put(averaged)])
        slices = dict(zip(peers, self._fetch([got[i][0] for i in peers]), strict=True))
        for k, m in enumerate(mats):
            m[mine] = averaged[k]
            for i in peers:
                m[cut[i]:cut[i + 1]] = slices[i][k]
                self.bytes_received += slices[i][k].nbytes




class GlooCollective:
    """Average the top rows of float32 matrices across replicas with gloo's allreduce (``torch.distributed``),
    every operation bounded by ``timeout_s``.  ``bytes_received`` counts what a ring allreduce moves into
    this replica: ``2 (N-1)/N`` of the rows' bytes per matrix.

    Each sync group is its own ``ProcessGroupGloo`` on its own ``TCPStore`` (replica 0 serves it; its address
    goes through the board), not torch's one global default group: a replica still waiting in the rendezvous
    of a group whose peer died (it waits up to ``timeout_s``) does not stop it from forming the next group in
    another thread; the abandoned rendezvous fails on its own later and is dropped.

    Example:
        >>> coll = GlooCollective(ray, board, rank=0, n=2, timeout_s=60)  # doctest: +SKIP
        >>> coll.connect(group_id=0); coll.average(0, 1, [w_in, w_out], rows=1024)  # doctest: +SKIP
    """

    name = "gloo"

    def __init__(self, ray: Any, board: Any, rank: int, n: int, timeout_s: float) -> None:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        self.ray, self.board, self.rank, self.n, self.timeout_s = ray, board, rank, n, timeout_s
        self.torch, self.dist = torch, dist
        self.group_id: int | None = None
        self.wanted: int | None = None  # the newest group asked for (an older rendezvous still running is stale)
        self.pg: Any = None
        self.store: Any = None
        self.lock = threading.Lock()
        self.bytes_received = 0

    def connect(self, group_id: int) -> None:
        """Join sync group ``group_id`` (a new one after a fault); an earlier group is dropped."""
        if self.n == 1 or self.group_id == group_id:
            return
        with self.lock:
            self.wanted = group_id
        dist, ray = self.dist, self.ray
        node, listen_fd = ray.util.get_node_ip_address(), None  # gloo and the store listen on the node's address only
        if self.rank == 0:
            from parvec.distributed.cluster import listening_socket

            addr, (listen_fd, port) = node, listening_socket(node)
            ray.get(self.board.publish.remote(group_id, f"{addr}:{port}"), timeout=self.timeout_s)
        else:
            where = ray.get(self.board.lookup.remote(group_id), timeout=self.timeout_s + 30)
            if where is None:
                raise SyncTimeout(f"replica 0 did not publish the sync group's address within {self.timeout_s:.0f} s")
            addr, port = where.rsplit(":", 1)
        timeout = timedelta(seconds=self.timeout_s)
        try:
            from parvec.distributed.cluster import gloo_options

            store = dist.TCPStore(addr, int(port), self.n, self.rank == 0, timeout=timeout, master_listen_fd=listen_fd)
            pg = dist.ProcessGroupGloo(dist.PrefixStore(f"parvec-sync-{group_id}", store), self.rank, self.n,
                                       gloo_options(dist, node, timeout))
        except RuntimeError as exc:
            raise SyncTimeout(f"could not form sync group {group_id} at {addr}:{port}: {str(exc)[:300]}") from None
        with self.lock:
            if self.wanted != group_id:  # a newer group was asked for while this one formed: drop it
                return
            self.pg, self.store, self.group_id = pg, store, group_id

    def average(self, gen: int, sync_id: int, mats: list[np.ndarray], rows: int) -> None:
        """Replace ``mats[i][:rows]`` by its mean over the replicas, identically on every replica."""
        if self.n == 1 or rows == 0:
            return
        self.wait(self.start_average(gen, sync_id, [m[:rows] for m in mats]))

    def start_average(self, gen: int, sync_id: int, arrays: list[np.ndarray]) -> tuple[int, list]:
        """Start replacing each of ``arrays`` (C-contiguous float32) by its mean over the replicas, in place, and
        return at once: gloo's threads move the rows while the caller goes on; :meth:`wait` ends it.  The arrays
        must not be touched until then.

        Every array's allreduce is started before any is waited for: gloo runs them at once, so their round trips
        overlap (two processes on a 2-core Zen 4, 1,024 rows x 100 of each matrix: median 1.0-2.7 ms a sync against
        3.8 ms one after the other; 16,384 rows 8.8 ms against 11.4-12.9 ms).  Each sum is the same either way.

        Example:
            >>> pending = coll.start_average(gen, 7, [buf_in, buf_out]); coll.wait(pending)  # doctest: +SKIP
        """
        tensors = [self.torch.from_numpy(a) for a in arrays]
        try:
            works = [self.pg.allreduce([t]) for t in tensors]
        except RuntimeError as exc:  # a peer gone (connection reset)
            raise SyncAborted(f"sync {sync_id}: {str(exc)[:300]}") from None
        self.bytes_received += sum(2 * (self.n - 1) * a.nbytes // self.n for a in arrays)
        return sync_id, list(zip(works, tensors, strict=True))  # the tensors stay referenced until the wait

    def wait(self, pending: tuple[int, list]) -> None:
        """End a :meth:`start_average` (bounded by ``timeout_s``): the sums, divided by the replicas;
        :class:`SyncAborted` if it failed."""
        sync_id, works = pending
        try:
            for work, _tensor in works:
                work.wait()
        except RuntimeError as exc:  # a peer gone (connection reset) or the time-out
            raise SyncAborted(f"sync {sync_id}: {str(exc)[:300]}") from None
        for _work, tensor in works:
            tensor /= self.n


def make_collective(name: str, ray: Any, board: Any, rank: int, n: int, timeout_s: float) -> Any:
    """The collective called ``name`` ("gloo", or "refs"; "auto": gloo when torch imports, else refs).

    Example:
        >>> make_collective("refs", ray, board, 0, 2, 60.0).name  # doctest: +SKIP
        'refs'
    """
    if n == 1:
        return RefCollective(ray, board, rank, n, timeout_s)  # nothing to average: no torch to import
    if name in ("auto", "gloo"):
        try:
            return GlooCollective(ray, board, rank, n, timeout_s)
        except ImportError:
            if name == "gloo":
                raise
    return RefCollective(ray, board, rank, n, timeout_s)
