"""Where a cluster run gets its Ray: the one place parvec starts or joins a Ray cluster.

A :class:`Cluster` says *where* to run (``local:N`` starts a private Ray on this machine with N CPUs,
``ray://HOST:PORT`` joins through Ray Client, ``auto`` joins the cluster this machine belongs to) and *how*
(``mode="replicas"``: Ji et al.'s data-parallel replicas with frequency-ranked sub-model sync;
``mode="sharded"``: Ordentlich et al.'s column-sharded parameter servers).  Every driver in
``parvec.distributed`` enters :meth:`Cluster.session` and never calls ``ray.init``/``ray.shutdown`` itself.

House rules kept here, once:

- Ray's usage statistics are off (``RAY_USAGE_STATS_ENABLED=0``) before Ray is imported.
- A Ray that parvec starts binds to 127.0.0.1 (no dashboard); a user-given address is used as given.
- A Ray that parvec starts runs its workers at niceness 0, as a one-process run's threads (Ray's default is
  15: the replicas and shards would then yield the CPU to every other process on the machine, and ran at
  0.61x a two-thread process on a shared 2-core machine); ``RAY_worker_niceness`` set by the user wins.
  A cluster parvec joins keeps its own setting.
- parvec stops only a Ray it started.  A Ray already initialised in this process (a test session, a
  notebook) is used as it is and left running; joining a remote cluster only disconnects at the end.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from parvec.errors import ParvecError

MODES = ("replicas", "sharded")
_LOCAL = re.compile(r"^local(?::(\d+))?$")


def import_ray() -> Any:
    """Import Ray with usage statistics off, or raise a :class:`ParvecError` saying how to install it.

    Example:
        >>> ray = import_ray()  # doctest: +SKIP
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise ParvecError(
            "--cluster needs Ray, which is an optional extra: pip install 'parvec[ray]'"
        ) from None
    return ray


@dataclass
class Cluster:
    """Where and how a distributed run trains.

    ``spec`` is ``local:N`` (start a local Ray with N CPUs; ``local`` alone uses every core),
    ``ray://HOST:PORT`` (join a running cluster through Ray Client) or ``auto`` (join the cluster this
    machine belongs to, as ``ray.init(address="auto")``).  ``mode`` is ``replicas`` (default) or
    ``sharded``.  ``replicas`` defaults to N for ``local:N`` and must be given otherwise; ``shards`` and
    ``clients`` are for ``sharded`` mode.  The replica-sync knobs follow Intel's pWord2Vec: every
    ``sync_words`` trained words per replica the top ``min(2**ctz(j) * min_sync_words, V)`` rows are
    averaged at sync number j, plus ``full_sync_times`` evenly spaced full syncs per epoch.

    Example:
        >>> Cluster("local:2").replicas
        2
        >>> Cluster("local:4", mode="sharded", shards=2, clients=2).mode
        'sharded'
    """

    spec: str = "local:2"
    mode: str = "replicas"
    replicas: int | None = None
    shards: int | None = None
    clients: int | None = None
    threads_per_actor: int | None = None
    sync_words: int = 200_000
    min_sync_words: int = 1024
    full_sync_times: int = 0
    timeout_s: float = 300.0
    # replicas: the starting learning rate times 1 ("none"), sqrt(N) ("sqrt") or N ("linear"), the paper's
    # adjustment for N nodes (docs/distributed.md, Replicas, has the measurement behind the default).
    alpha_scale: str = "linear"
    # sharded mode (parvec.distributed.sharded; checked there): input words per minibatch (one shard call
    # adjusts one minibatch and computes the next one's dot products), words per unit of work (what a client
    # trains per call; re-queued if the client dies), shard checkpoints (directory, None = a temporary one;
    # seconds between them), a memory cap per shard process (RLIMIT_DATA bytes, None = none) and how many
    # times a lost shard or client actor is restarted.
    minibatch_words: int | None = None  # None: 512 words in flight over all client threads, at most 256 each
    # sharded: "interleaved" (each minibatch takes one input word from each of minibatch_words lanes spread
    # over the unit: the paper's interleaved minibatch formation) or "contiguous" (consecutive input words).
    minibatch_formation: str = "interleaved"
    unit_words: int = 100_000
    checkpoint_dir: str | None = None
    checkpoint_interval_s: float = 60.0
    shard_memory_bytes: int | None = None
    max_restarts: int = 3
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.spec = str(self.spec).strip()
        if self.mode not in MODES:
            raise ParvecError(f"cluster mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        local = _LOCAL.match(self.spec)
        if local is None and not self.spec.startswith("ray://") and self.spec != "auto":
            raise ParvecError(
                f"--cluster {self.spec!r}: expected local:N (start a local Ray with N CPUs), "
                "ray://HOST:PORT (join a running cluster) or auto (join this machine's cluster)"
            )
        self.local_cpus = int(local.group(1)) if local and local.group(1) else None
        if local and self.local_cpus == 0:
            raise ParvecError(f"--cluster {self.spec}: N must be at least 1")
        if self.mode == "replicas" and self.replicas is None:
            if local is None:
                raise ParvecError(f"--cluster {self.spec}: give the number of replicas (--replicas N)")
            self.replicas = self.local_cpus or _cpu_count()
        for name in ("replicas", "shards", "clients", "threads_per_actor"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ParvecError(f"{name} must be a positive integer, got {value!r}")
        for name in ("sync_words", "min_sync_words"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ParvecError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.full_sync_times, int) or self.full_sync_times < 0:
            raise ParvecError(f"full_sync_times must be a non-negative integer, got {self.full_sync_times!r}")
        if not self.timeout_s > 0:
            raise ParvecError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.alpha_scale not in ("none", "sqrt", "linear"):
            raise ParvecError(f"alpha_scale must be none, sqrt or linear; got {self.alpha_scale!r}")

    @property
    def is_local(self) -> bool:
        """True when this cluster is a Ray parvec starts on this machine."""
        return self.spec.startswith("local")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for reports and saved models."""
        return {
            "spec": self.spec, "mode": self.mode, "replicas": self.replicas, "shards": self.shards,
            "clients": self.clients, "threads_per_actor": self.threads_per_actor, "sync_words": self.sync_words,
            "min_sync_words": self.min_sync_words, "full_sync_times": self.full_sync_times,
            "timeout_s": self.timeout_s, "alpha_scale": self.alpha_scale,
        }

    @contextlib.contextmanager
    def session(self) -> Iterator[Any]:
        """Enter Ray for one run and yield the ``ray`` module; stop only a Ray started here.

        Example:
            >>> with Cluster("local:2").session() as ray:  # doctest: +SKIP
            ...     ray.cluster_resources()["CPU"]
            2.0
        """
        ray = import_ray()
        started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True,
                                      "configure_logging": False}
            user_niceness = os.environ.get("RAY_worker_niceness")
            if self.is_local:
                os.environ["RAY_worker_niceness"] = user_niceness or "0"  # read by the raylet ray.init starts
                kwargs |= {"address": "local", "num_cpus": self.local_cpus or _cpu_count(),
                           "_node_ip_address": "127.0.0.1"}
            else:
                kwargs = {"address": self.spec, "log_to_driver": True}
            try:
                ray.init(**kwargs)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise ParvecError(f"--cluster {self.spec}: could not start or join Ray: {exc}") from None
            finally:  # this process's environment as it was
                if user_niceness is None:
                    os.environ.pop("RAY_worker_niceness", None)
            started = True
        try:
            yield ray
        finally:
            if started:
                ray.shutdown()  # a local Ray started here stops; a joined cluster is only disconnected


def _cpu_count() -> int:
    from parvec.config import default_threads

    return default_threads()


def as_cluster(value: Cluster | str | None) -> Cluster | None:
    """Accept a :class:`Cluster`, a spec string (``"local:2"``) or None.

    Example:
        >>> as_cluster("local:3").replicas
        3
    """
    if value is None or isinstance(value, Cluster):
        return value
    if isinstance(value, str):
        return Cluster(value)
    raise ParvecError(f"cluster must be a parvec.Cluster or a spec string like 'local:2', got {value!r}")
