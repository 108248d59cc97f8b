"""The settings of a sharded run (``Cluster(mode="sharded")``): one typed, validated object, with the help text of
each setting, filled in from a :class:`~parvec.distributed.cluster.Cluster` and a
:class:`~parvec.config.TrainConfig` (:meth:`ShardedSettings.of`), and the checks made before any actor starts.

The defaults come from measurements (docs/benchmarks.md, "Clusters: sharded settings"):

- **input words in flight** over all client threads when ``minibatch_words`` is left to parvec
  (:data:`IN_FLIGHT_WORDS`): more makes the dot products a split call trains from staler and diverges;
- **a row's updates from one minibatch** with split calls (:data:`UPDATE_CAP`): more, all from one stale dot
  product each, made the most frequent words' output rows diverge (docs/benchmarks/clusters.md, "Words in flight");
- **a fused call's minibatch** (:data:`FUSED_MINIBATCH_WORDS`, one shard with ``shard_calls="fused"``): nothing is
  trained from stale dot products there, so its size is chosen for the calls' cost;
- **actors per CPU** (:data:`ACTORS_PER_CPU_WARN`, :data:`ACTORS_PER_CPU_MAX`): every shard and client is a
  process, each one beyond the CPUs adds seconds to the start and every minibatch calls every shard.

Example:
    >>> s = ShardedSettings.of(Cluster("local:4", mode="sharded"), TrainConfig(dim=100))
    >>> s.shards, s.clients, s.fused, s.minibatch_words
    (1, 2, True, 8192)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from parvec.config import TrainConfig
from parvec.distributed.cluster import Cluster
from parvec.errors import ParvecError

__all__ = ["ACTORS_PER_CPU_MAX", "ACTORS_PER_CPU_WARN", "FUSED_MINIBATCH_WORDS", "IN_FLIGHT_WORDS", "NEGATIVES_PER",
           "ROW_BLOCK_BYTES", "SHARD_CALLS", "UPDATE_CAP", "WIRE_FLOATS", "ShardedSettings", "actor_budget",
           "check_shard_calls", "check_wire", "cluster_cpus", "in_flight_words", "resolve", "snapshot_interval"]

# Input words in flight over all client threads when minibatch_words is left to parvec, by minibatch formation.
IN_FLIGHT_WORDS = {"interleaved": 4096, "interleaved, light subsampling": 1024, "contiguous": 512}
LIGHT_SUBSAMPLING = 1e-4  # a sample threshold above this (or none) is light subsampling
MIN_MINIBATCH_WORDS = 16
FUSED_MINIBATCH_WORDS = 8192  # input words per minibatch of a fused call when left to parvec
# With split calls (window batches), a row that takes more than this many of one minibatch's stale updates has them
# summed from the call's start and applied once, stepped by a line search (parvec.kernels.sharded_combine;
# docs/benchmarks/clusters.md, "Words in flight").  0 applies every update one by one, as the paper's adjust.
UPDATE_CAP = 16
ACTORS_PER_CPU_WARN = 2  # beyond this many shards + clients per CPU parvec warns
ACTORS_PER_CPU_MAX = 8  # beyond this many it refuses (on one machine more shards never hold more memory)
ROW_BLOCK_BYTES = 32 << 20  # rows gathered/exported per block: about this many bytes per matrix
# Snapshots inside an epoch, when their interval is left out: a shard's write at most SNAPSHOT_SHARE of the time at
# SNAPSHOT_BYTES_PER_S (a 24 GB shard: ~94 s to write at this machine's 254 MB/s, docs/scale.md), every 60 s at least
SNAPSHOT_BYTES_PER_S = 250e6
SNAPSHOT_SHARE = 0.05
MIN_SNAPSHOT_INTERVAL_S = 60.0

WIRE_FLOATS = ("float32", "float16")
NEGATIVES_PER = ("pair", "window")
SHARD_CALLS = ("fused", "split")
FORMATIONS = ("interleaved", "contiguous")


def _one_of(name: str, value: str, choices: Sequence[str]) -> str:
    # ``value`` if it is one of ``choices``, else a ParvecError naming the parameter and the choices.
    if value not in choices:
        raise ParvecError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def check_wire(wire: str) -> str:
    """``wire`` if it is one of :data:`WIRE_FLOATS`, else a ParvecError naming them.

    Example:
        >>> check_wire("float16")
        'float16'
    """
    return _one_of("wire_floats", wire, WIRE_FLOATS)


def check_shard_calls(calls: str) -> str:
    """``calls`` if it is one of :data:`SHARD_CALLS`, else a ParvecError naming them.

    Example:
        >>> check_shard_calls("fused")
        'fused'
    """
    return _one_of("shard_calls", calls, SHARD_CALLS)


def actor_budget(shards: int, clients: int, cpus: int) -> str | None:
    """Check ``shards + clients`` Ray actors against the cluster's ``cpus``: None when they suit it, a warning
    line when they oversubscribe it, a :class:`ParvecError` (naming the flags) when far beyond it.

    Example:
        >>> actor_budget(2, 2, 2) is None
        True
        >>> actor_budget(50, 4, 2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        parvec.errors.ParvecError: --shards 50 --clients 4 start 54 Ray actors ...
    """
    actors = shards + clients
    if cpus < 1:
        return None  # a cluster that reports no CPUs (Ray Client before a node joined): nothing to compare
    if actors > ACTORS_PER_CPU_MAX * cpus:
        fit_s = max(1, min(shards, cpus))
        fit_c = max(1, min(clients, cpus))
        raise ParvecError(
            f"--shards {shards} --clients {clients} start {actors} Ray actors (every shard and client is a process) "
            f"but the Ray cluster has {cpus} CPU{'s' if cpus != 1 else ''}: more than {ACTORS_PER_CPU_MAX} actors "
            f"per CPU take minutes to start and train slower than fewer (every minibatch calls every shard); use "
            f"--shards and --clients adding up to at most {ACTORS_PER_CPU_MAX * cpus} (e.g. --shards {fit_s} "
            f"--clients {fit_c}), or a cluster with more CPUs")
    if actors > ACTORS_PER_CPU_WARN * cpus:
        return (f"parvec: warning: {shards} shards + {clients} clients are {actors} Ray actors (one process each) on "
                f"{cpus} CPU{'s' if cpus != 1 else ''}: each actor beyond the CPUs adds seconds to the start-up and "
                "every minibatch calls every shard; fewer shards and clients train faster on this cluster")
    return None


def cluster_cpus(ray: Any) -> int:
    """The CPUs the Ray cluster reports (0 when it reports none).

    Example:
        >>> cluster_cpus(ray)  # doctest: +SKIP
        2
    """
    return int(ray.cluster_resources().get("CPU", 0))


def in_flight_words(config: TrainConfig, formation: str = "interleaved") -> int:
    """Input words in flight over all client threads when the minibatch size is left to parvec.

    Example:
        >>> in_flight_words(TrainConfig(sample=1e-4)), in_flight_words(TrainConfig(sample=1e-3))
        (4096, 1024)
        >>> in_flight_words(TrainConfig(sample=1e-5), "contiguous")
        512
    """
    if formation == "contiguous":
        return IN_FLIGHT_WORDS["contiguous"]
    light = not (0 < config.sample <= LIGHT_SUBSAMPLING)
    return IN_FLIGHT_WORDS["interleaved, light subsampling" if light else "interleaved"]


def _help(text: str) -> Any:
    return field(metadata={"help": text})


@dataclass(frozen=True)
class ShardedSettings:
    """A sharded run's settings, every default filled in and checked (``help`` of each field:
    ``ShardedSettings.help()``).  A run resolves them once (:meth:`of`) and hands this object down: to the shard
    and client actors, the memory estimate and the command line's lines; reports and checkpoints record
    :meth:`to_json`.

    Example:
        >>> ShardedSettings.of(Cluster("auto", mode="sharded"), TrainConfig(dim=100)).shards
        2
        >>> ShardedSettings.help()["unit_words"]
        'input words a client trains in one call to it (what a fault retrains at most)'
    """

    shards: int = _help("column blocks of both matrices, one shard actor each (1 on local:N, 2 on a joined cluster)")
    clients: int = _help("client actors that train units of the corpus against the shards (default 2)")
    threads: int = _help("threads per client, each a minibatch in flight (default 1)")
    minibatch_words: int = _help("input words per minibatch: one call to every shard")
    minibatch_formation: str = _help("interleaved (one run of words from each of several lanes of a unit) or "
                                     "contiguous (consecutive words)")
    negatives_per: str = _help("draw the negatives per window (shared by an input word's context) or per pair")
    wire_floats: str = _help("how floats travel between clients and shards: float32 or float16")
    shard_calls: str = _help("fused (one shard trains each minibatch whole in one call) or split (dot products, "
                             "then the adjust in the next call)")
    unit_words: int = _help("input words a client trains in one call to it (what a fault retrains at most)")
    update_cap: int = _help("split calls, window batches: a row with more of one minibatch's stale updates has them "
                            "combined and stepped by a line search (0: each applied, the paper's adjust)")
    timeout_s: float = _help("seconds any wait on an actor may take before the run stops")
    checkpoint_interval_s: float | None = _help("seconds between consistent snapshots inside an epoch (None: scaled "
                                                "with a shard's size, snapshot_interval)")
    shard_memory_bytes: int | None = _help("a cap on each shard process's data segment (RLIMIT_DATA), None: none")
    max_restarts: int = _help("times Ray restarts a lost shard or client")

    def __post_init__(self) -> None:
        for name in ("shards", "clients", "threads", "minibatch_words", "unit_words", "max_restarts", "update_cap"):
            value = getattr(self, name)
            least = 0 if name in ("max_restarts", "update_cap") else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ParvecError(f"{name} must be a {'non-negative' if least == 0 else 'positive'} integer, "
                                  f"got {value!r}")
        if self.checkpoint_interval_s is not None and not self.checkpoint_interval_s > 0:
            raise ParvecError(f"checkpoint_interval_s must be positive, got {self.checkpoint_interval_s}")
        cap = self.shard_memory_bytes
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
            raise ParvecError(f"shard_memory_bytes must be a positive integer (bytes), got {cap!r}")
        if self.minibatch_formation not in FORMATIONS:
            raise ParvecError("minibatch_formation must be interleaved or contiguous; got "
                              f"{self.minibatch_formation!r}")
        _one_of("negatives_per", self.negatives_per, NEGATIVES_PER)
        check_wire(self.wire_floats)
        check_shard_calls(self.shard_calls)

    @classmethod
    def of(cls, cluster: Cluster, config: TrainConfig) -> ShardedSettings:
        """``cluster``'s sharded settings for ``config``, defaults filled in and checked.

        ``minibatch_words`` left out (None) is ``in_flight_words(config, formation) // (clients x threads)``, at
        least 16 (at most 256 contiguous): every client thread has one minibatch in flight, trained from vectors
        without the others' updates.  With one shard and fused calls (``shard_calls="fused"``, the default) nothing
        is trained from stale dot products, and it is :data:`FUSED_MINIBATCH_WORDS`.  ``shards`` left out is 1 on
        ``local:N`` (one machine: more shards buy no memory there, only more row visits and calls) and 2 on a
        cluster joined (give the machines the model should be split over).

        Example:
            >>> two_by_two = Cluster("local:4", mode="sharded", clients=2, threads_per_actor=2)
            >>> [ShardedSettings.of(two_by_two, TrainConfig(sample=s)).minibatch_words for s in (1e-3, 1e-4)]
            [8192, 8192]
            >>> split = Cluster("local:4", mode="sharded", clients=2, threads_per_actor=2, shard_calls="split")
            >>> [ShardedSettings.of(split, TrainConfig(sample=s)).minibatch_words for s in (1e-3, 1e-4)]
            [256, 1024]
        """
        shards = cluster.shards or (1 if cluster.is_local else 2)
        clients = cluster.clients or 2
        threads = cluster.threads_per_actor or 1  # more threads split the same words in flight into more calls
        if shards > config.dim:
            raise ParvecError(f"--shards {shards}: more shards than vector dimensions ({config.dim}); every shard "
                              "needs at least one column")
        if config.window > 65535:
            raise ParvecError(f"window {config.window}: sharded mode sends each window shrink in 16 bits (at most "
                              "65535)")
        minibatch_words = cluster.minibatch_words
        formation = cluster.minibatch_formation
        fused = shards == 1 and cluster.shard_calls == "fused"
        if minibatch_words is None and fused:
            minibatch_words = FUSED_MINIBATCH_WORDS
        if minibatch_words is None and formation in FORMATIONS:  # in flight: the staleness
            minibatch_words = in_flight_words(config, formation) // (clients * threads)
            if formation == "contiguous":
                minibatch_words = min(minibatch_words, 256)
            minibatch_words = max(MIN_MINIBATCH_WORDS, minibatch_words)
        check_shard_calls(cluster.shard_calls)
        return cls(shards=shards, clients=clients, threads=threads, minibatch_words=minibatch_words,  # type: ignore[arg-type]
                   minibatch_formation=formation, negatives_per=cluster.negatives_per,
                   wire_floats=cluster.wire_floats, shard_calls="fused" if fused else "split",
                   unit_words=cluster.unit_words,
                   update_cap=UPDATE_CAP if cluster.update_cap is None else cluster.update_cap,
                   timeout_s=float(cluster.timeout_s),
                   checkpoint_interval_s=(float(cluster.checkpoint_interval_s)
                                          if cluster.checkpoint_interval_s is not None else None),
                   shard_memory_bytes=cluster.shard_memory_bytes, max_restarts=cluster.max_restarts)

    @property
    def fused(self) -> bool:
        """Whether the one shard trains each minibatch whole (``shard_calls="fused"``)."""
        return self.shard_calls == "fused"

    @property
    def interleave(self) -> bool:
        """Whether minibatches interleave lanes of a unit."""
        return self.minibatch_formation == "interleaved"

    @property
    def minibatch_words_in_flight(self) -> int:
        """Input words in flight over every client thread."""
        return self.clients * self.threads * self.minibatch_words

    def to_json(self) -> dict[str, Any]:
        """The settings as a report or a checkpoint records them (``minibatch_words_in_flight`` included).

        Example:
            >>> ShardedSettings.of(Cluster("local:2", mode="sharded"), TrainConfig()).to_json()["threads"]
            1
        """
        d = dataclasses.asdict(self)
        keys = list(d)
        at = keys.index("minibatch_words") + 1
        return {k: d[k] for k in keys[:at]} | {"minibatch_words_in_flight": self.minibatch_words_in_flight} | {
            k: d[k] for k in keys[at:]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ShardedSettings:
        """The settings :meth:`to_json` recorded (checked again); a key a record lacks (a setting parvec did not
        have when it was written) is refused, naming it.

        Example:
            >>> s = ShardedSettings.of(Cluster("local:2", mode="sharded"), TrainConfig())
            >>> ShardedSettings.from_json(s.to_json()) == s
            True
        """
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if n not in d]
        if missing:
            raise ParvecError(f"the recorded sharded settings lack {', '.join(missing)}")
        return cls(**{n: d[n] for n in names})

    @classmethod
    def help(cls) -> dict[str, str]:
        """Each setting's help text, by name."""
        return {f.name: f.metadata["help"] for f in dataclasses.fields(cls)}


def snapshot_interval(given: float | None, shard_bytes: int) -> float:
    """Seconds between consistent snapshots inside an epoch: ``given`` (``--snapshot-interval``,
    ``Cluster.checkpoint_interval_s``), else scaled with a shard's size so that writing one takes at most
    :data:`SNAPSHOT_SHARE` of the time at :data:`SNAPSHOT_BYTES_PER_S` (this machine's disk, measured), at least
    :data:`MIN_SNAPSHOT_INTERVAL_S`: 60 s up to a shard of 750 MB, 32 minutes for a shard of 24 GB.

    Example:
        >>> snapshot_interval(None, 10 << 20), snapshot_interval(None, 24 * 10**9), snapshot_interval(5.0, 10**12)
        (60.0, 1920.0, 5.0)
    """
    if given is not None:
        return float(given)
    return max(MIN_SNAPSHOT_INTERVAL_S, shard_bytes / SNAPSHOT_BYTES_PER_S / SNAPSHOT_SHARE)


def resolve(cluster: Cluster, config: TrainConfig) -> ShardedSettings:
    """The sharded settings of ``cluster`` for ``config`` (:meth:`ShardedSettings.of`): a run resolves them once,
    when it starts, and hands them down.

    Example:
        >>> resolve(Cluster("local:4", mode="sharded"), TrainConfig(dim=100)).shards
        1
        >>> resolve(Cluster("local:2", mode="sharded"), TrainConfig()).threads  # per client
        1
    """
    return ShardedSettings.of(cluster, config)
