"""Training on a Ray cluster: drivers over the same corpus, config, kernels and model as one machine.

- :mod:`parvec.distributed.cluster`: :class:`Cluster` (where and how), and the one place Ray is started
  or joined.
- :mod:`parvec.distributed.replicas`: Ji et al.'s data-parallel replicas with frequency-ranked sub-model
  synchronisation (``mode="replicas"``; its plan, actor and actor group: ``replica_plan``, ``replica_actor``,
  ``replica_group``).
- :mod:`parvec.distributed.sharded`: Ordentlich et al.'s column-sharded parameter servers (``mode="sharded"``; its
  settings, actors, wire format, units and snapshots: ``sharded_settings``, ``shard_actor``, ``client_actor``,
  ``wire``, ``units``, ``shard_kernels``, ``sharded_start``, ``snapshots``, ``snapshot_files``).
- :mod:`parvec.distributed.supervise`: the actors of both modes through their restarts, and their fault records.

A driver is a :class:`parvec.engine.Driver` like the CPU and GPU drivers: it is built from
``(cluster, config, counts, w_in, w_out)``, takes its corpus with ``use_corpus(corpus)``, trains each epoch the
run engine asks for and leaves the trained vectors in ``w_in``/``w_out``; ``report()`` returns the run's
distributed figures for ``--report``.

Example:
    >>> from parvec.distributed import Cluster
    >>> Cluster("local:2").mode
    'replicas'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np

from parvec.capabilities import check_config
from parvec.cluster_record import RECORDED, ClusterRecord
from parvec.config import TrainConfig
from parvec.distributed.cluster import Cluster, as_cluster, import_ray

if TYPE_CHECKING:
    from parvec.corpus import ReadOptions
    from parvec.engine import CorpusDriver

__all__ = ["Cluster", "as_cluster", "check_cpus", "cluster_from_record", "cluster_record", "describe_record",
           "import_ray", "make_driver"]


def make_driver(cluster: Cluster, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray, w_out: np.ndarray, *,
                read_options: ReadOptions | None = None, workers_given: bool = False) -> CorpusDriver:
    """The driver for ``cluster.mode`` (a :class:`parvec.engine.CorpusDriver`; call ``use_corpus(corpus)`` on it).
    The replicas' also take ``read_options`` (how a node that cannot see the cache re-reads the input) and
    ``workers_given`` (``config.threads`` given explicitly: lowering it to fit the CPUs is said).

    Example:
        >>> driver = make_driver(Cluster("local:2"), TrainConfig(), counts, w_in, w_out)  # doctest: +SKIP
        >>> stats = RunEngine(driver.use_corpus(corpus), config, schedule).run()  # doctest: +SKIP
    """
    check_config(config, cluster.mode)  # what the mode cannot train (parvec.capabilities), before Ray is imported
    import_ray()  # a clear error naming the extra before anything else
    if cluster.mode == "replicas":
        from parvec.distributed.replicas import ReplicaDriver

        return ReplicaDriver(cluster, config, counts, w_in, w_out, read_options=read_options,
                             workers_given=workers_given)
    from parvec.distributed.sharded import ShardedDriver

    return ShardedDriver(cluster, config, counts, w_in, w_out)


def check_cpus(cluster: Cluster, config: TrainConfig) -> None:
    """Refuse, before Ray starts, what ``cluster`` cannot run on the CPUs of ``local:N`` (every core for
    ``local``): more replicas x threads than CPUs (:func:`parvec.distributed.replica_plan.replica_threads`), or far
    more shards and clients than CPUs (:func:`parvec.distributed.sharded_settings.actor_budget`).  A cluster joined
    (``auto``, ``ray://``) is checked once Ray reports its CPUs.  Never imports Ray.

    Example:
        >>> check_cpus(Cluster("local:2", mode="sharded", shards=50, clients=4), TrainConfig())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        parvec.errors.ParvecError: --shards 50 --clients 4 start 54 Ray actors ...
    """
    if not cluster.is_local:
        return
    from parvec.config import default_threads

    cpus = cluster.local_cpus or default_threads()
    if cluster.mode == "replicas":
        from parvec.distributed.replica_plan import replica_threads

        replica_threads(cluster, config, cpus)
    else:
        from parvec.distributed.sharded_settings import actor_budget

        actor_budget(cluster.shards or 1, cluster.clients or 2, cpus)  # ShardedSettings.of's defaults on local:N


def cluster_record(cluster: Cluster | None, actor_threads: int | None = None) -> ClusterRecord | None:
    """What a checkpoint records of where its run trained (``model.json``'s ``cluster``, a
    :class:`parvec.cluster_record.ClusterRecord`): every setting of the :class:`Cluster` (spec, mode, replicas,
    shards, clients, threads per actor, the sync and minibatch settings) but where its own snapshots go and the
    test-only options, or None for a run in this process (or on a GPU).  Threads per actor left out of the cluster
    are the ``actor_threads`` its actors ran (fitted to the CPUs), when given.  A resumed run trains there again,
    with those threads (:func:`cluster_from_record`).

    Example:
        >>> r = cluster_record(Cluster("local:2")); r.spec, r.mode, r.replicas, r.threads_per_actor
        ('local:2', 'replicas', 2, None)
        >>> cluster_record(Cluster("local:2"), actor_threads=1).threads_per_actor
        1
    """
    if cluster is None:
        return None
    values = vars(cluster)
    record = ClusterRecord.from_json({k: values[k] for k in RECORDED})
    if record.threads_per_actor is None and actor_threads is not None:
        record = record.with_settings(threads_per_actor=int(actor_threads))
    return record


@overload
def cluster_from_record(record: ClusterRecord) -> Cluster: ...


@overload
def cluster_from_record(record: None) -> None: ...


def cluster_from_record(record: ClusterRecord | None) -> Cluster | None:
    """The :class:`Cluster` a checkpoint recorded (None: a run in this process); a setting it did not record takes
    the :class:`Cluster`'s default.

    Example:
        >>> record = ClusterRecord.from_json({"spec": "local:2", "mode": "replicas", "replicas": 2})
        >>> cluster_from_record(record).replicas
        2
    """
    if record is None:
        return None
    return Cluster(**record.to_json())


def describe_record(record: ClusterRecord | None) -> str:
    """A checkpoint's place of training, in flags (:meth:`parvec.cluster_record.ClusterRecord.describe`), or "this
    process (no --cluster)".

    Example:
        >>> describe_record(ClusterRecord.from_json({"spec": "local:2", "mode": "sharded", "shards": 2,
        ...                                          "clients": 1, "threads_per_actor": None}))
        '--cluster local:2 --mode sharded --shards 2 --clients 1'
        >>> describe_record(None)
        'this process (no --cluster)'
    """
    if record is None:
        return "this process (no --cluster)"
    return record.describe()
