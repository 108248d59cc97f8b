"""The replica actors of one replicas run: started, supervised through their start and restarts, and stopped.

:class:`ReplicaGroup` starts the sync board (:class:`parvec.distributed.collectives.Board`: the shared counts and
:class:`~parvec.distributed.replica_actor.ReplicaData`, which a restarted replica reads again) and ``N`` replica
actors, waits for each to describe itself (a replica lost while starting is waited for while Ray restarts it:
:func:`parvec.distributed.supervise.call_through_restarts`), runs a step of the start on every replica
(:meth:`ReplicaGroup.call_all`: the replicas lost meanwhile come back as a list), brings lost replicas back
(:meth:`ReplicaGroup.await_restart`) and reports each start-up fault.

Example:
    >>> group = ReplicaGroup(ray, Cluster("local:2"), 2, threads=1, faults=[])  # doctest: +SKIP
    >>> group.launch(config, counts, data); described = group.describe_all()  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np

from parvec.config import TrainConfig
from parvec.distributed.cluster import Cluster
from parvec.distributed.collectives import Board
from parvec.distributed.replica_actor import ReplicaActor, ReplicaData, ReplicaDescription
from parvec.distributed.supervise import FaultRecord, await_restart, call_through_restarts, cause, report_fault
from parvec.errors import ParvecError

__all__ = ["ReplicaGroup"]


class ReplicaGroup:
    """The ``n`` replica actors of a run and their sync board (module docstring); start-up faults go to
    ``faults`` (the report's).

    Example:
        >>> group.call_all("form their sync group", "connect", 0)  # doctest: +SKIP
        []
    """

    def __init__(self, ray: Any, cluster: Cluster, n: int, threads: int, faults: list[FaultRecord]) -> None:
        self.ray, self.cluster, self.n, self.threads, self.faults = ray, cluster, n, threads, faults
        self.timeout_s = float(cluster.timeout_s)
        self.actors: list[Any] = []
        self.board: Any = None

    @property
    def max_restarts(self) -> int:
        """How often Ray restarts a lost replica (``Cluster.max_restarts``)."""
        return int(self.cluster.options.get("max_restarts", getattr(self.cluster, "max_restarts", 3)))

    def launch(self, config: TrainConfig, counts: np.ndarray, data: ReplicaData) -> None:
        """Start the sync board and the replica actors (each with ``config``: the run's, its threads and rates
        per replica)."""
        ray, n, threads = self.ray, self.n, self.threads
        board_cls = ray.remote(num_cpus=0, max_restarts=0)(Board)
        board_name = f"parvec-replicas-board-{os.getpid()}-{time.time_ns()}"
        self.board = board_cls.options(name=board_name).remote(n, self.timeout_s, [ray.put(counts), ray.put(data)])
        replica_cls = ray.remote(ReplicaActor)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        print(f"parvec: starting {n} replica{'s' if n != 1 else ''} x {threads} thread{'s' if threads != 1 else ''} "
              f"(Ray actors, one process each) on {cpus} CPUs ...", file=sys.stderr, flush=True)
        self.actors = [
            # max_concurrency: train_epoch, the driver's progress polls, and a rendezvous abandoned after a fault
            replica_cls.options(num_cpus=threads, max_restarts=self.max_restarts, max_concurrency=4,
                                scheduling_strategy="SPREAD", name=None).remote(
                r, n, config, board_name, self.timeout_s, self.cluster.options.get("collective", "auto"))
            for r in range(n)
        ]

    def describe(self, r: int, deadline: float) -> ReplicaDescription:
        """Replica ``r``'s description once its constructor has run; a restart in between (Ray runs the
        constructor again) only delays it."""
        late = (f"the {self.n} replica actors did not start within {self.timeout_s:.0f} s (timeout_s): does the Ray "
                f"cluster have {self.n} x {self.threads} free CPUs?")
        described: ReplicaDescription  # the actor's answer (Any to mypy)
        described, _ = call_through_restarts(self.ray, self.actors[r], "describe", what=f"replica {r} of {self.n}",
                                             deadline=deadline, timeout_s=self.timeout_s,
                                             max_restarts=self.max_restarts, late=late)
        return described

    def describe_all(self) -> list[ReplicaDescription]:
        """Every replica's description; one Ray restarted while it started is reported."""
        deadline = time.monotonic() + self.timeout_s
        described = [self.describe(r, deadline) for r in range(self.n)]
        for r, d in enumerate(described):
            if d.restarted:
                self.start_fault([r], "its process died while it started; Ray restarted it")
        return described

    def bring_back(self, lost: list[int], what: str, described: list[ReplicaDescription]) -> None:
        """Wait for Ray to restart the ``lost`` replicas, describe them again and report the fault."""
        for r in lost:
            self.await_restart(r)
            described[r] = self.describe(r, time.monotonic() + self.timeout_s)
        self.start_fault(lost, what)

    def start_fault(self, lost: list[int], what: str) -> None:
        """Report replicas lost while the run started (nothing to retrain)."""
        record = FaultRecord("replica", lost[0], "start", None, [f"replica {r}" for r in lost], what,
                             details={"replica": lost, "syncs_done_before_loss": 0,
                                      "words_retrained_by_lost": {str(r): 0 for r in lost}})
        names = ", ".join(str(r) for r in lost)
        report_fault(self.faults, record, f"replica {names} of {len(self.actors)} was lost while starting ({what}); "
                                          "nothing to retrain")

    def call_all(self, step: str, method: str, *args: Any) -> list[int]:
        """Every replica runs ``method(*args)``, a step of the start; returns the replicas lost meanwhile, as soon
        as one is: a survivor may still wait in the lost one's rendezvous (up to timeout_s) and is not waited for,
        since the next group forms in another of its threads and the old rendezvous is dropped
        (``collectives.GlooCollective``); a load already done or still running is not done again
        (``load_model``).  Any other failure ends the run naming ``step``."""
        ray = self.ray
        pending = {getattr(a, method).remote(*args): r for r, a in enumerate(self.actors)}
        lost: list[int] = []
        errors: list[str] = []
        deadline = time.perf_counter() + self.timeout_s + 60
        while pending and not lost:
            left = deadline - time.perf_counter()
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=max(0.0, left))
            if not ready:
                waiting = ", ".join(str(r) for r in sorted(pending.values()))
                raise ParvecError(f"the replicas could not {step}: replica(s) {waiting} did not answer within "
                                  f"{self.timeout_s + 60:.0f} s")
            for ref in ready:
                r = pending.pop(ref)
                try:
                    ray.get(ref, timeout=self.timeout_s)
                except ray.exceptions.RayActorError:
                    lost.append(r)
                except Exception as exc:  # noqa: BLE001 - a peer's loss, or a real failure (sorted below)
                    errors.append(f"replica {r}: {cause(exc)}")
        if errors and not lost:
            raise ParvecError(f"the replicas could not {step}: " + "; ".join(errors))
        return lost

    def progress(self) -> tuple[int, int, float] | None:
        """The replicas' running totals of the epoch (words, pairs, summed loss); None when one does not answer
        (restarting)."""
        try:
            parts = self.ray.get([a.progress.remote() for a in self.actors], timeout=5)
        except Exception:  # noqa: BLE001 - a replica restarting: no sample
            return None
        return (sum(p.words for p in parts), sum(p.pairs for p in parts), sum(p.loss_sum for p in parts))

    def syncs_done(self, lost: list[int], epoch: int) -> int:
        """The syncs of ``epoch`` the replicas not ``lost`` completed (all replicas sync in step, so a lost one had
        completed as many, give or take the one in progress)."""
        counts = []
        for r, a in enumerate(self.actors):
            if r in lost:
                continue
            try:
                e, k = self.ray.get(a.progress.remote(), timeout=10).synced
            except Exception:  # noqa: BLE001 - another one lost: counted when its turn comes
                continue
            counts.append(k if e == epoch else 0)
        return max(counts, default=0)

    def await_restart(self, r: int) -> None:
        """Wait for Ray to restart replica ``r`` (its constructor maps its share again); one that cannot come back
        ends the run."""
        outcome = await_restart(self.ray, self.actors[r], time.monotonic() + self.timeout_s)
        if outcome.back:
            return
        if outcome.why is None:
            raise ParvecError(f"replica {r} was lost and did not come back within {self.timeout_s:.0f} s (timeout_s)")
        raise ParvecError(f"replica {r} was lost and could not be restarted (max_restarts={self.max_restarts}): "
                          f"{outcome.why}")

    def stop(self) -> None:
        """Stop the replicas and the board."""
        for a in [*self.actors, *([self.board] if self.board is not None else [])]:
            try:
                self.ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.actors, self.board = [], None
