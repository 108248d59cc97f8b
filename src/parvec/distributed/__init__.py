"""Training on a Ray cluster: drivers over the same corpus, config, kernels and model as one machine.

- :mod:`parvec.distributed.cluster`: :class:`Cluster` (where and how), and the one place Ray is started
  or joined.
- :mod:`parvec.distributed.replicas`: Ji et al.'s data-parallel replicas with frequency-ranked sub-model
  synchronisation (``mode="replicas"``).
- :mod:`parvec.distributed.sharded`: Ordentlich et al.'s column-sharded parameter servers
  (``mode="sharded"``).

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

from typing import Any

import numpy as np

from parvec.capabilities import check_config
from parvec.config import TrainConfig
from parvec.distributed.cluster import Cluster, as_cluster, import_ray

__all__ = ["Cluster", "as_cluster", "import_ray", "make_driver"]


def make_driver(cluster: Cluster, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray,
                w_out: np.ndarray) -> Any:
    """The driver for ``cluster.mode`` (a :class:`parvec.engine.Driver`; call ``use_corpus(corpus)`` on it).

    Example:
        >>> driver = make_driver(Cluster("local:2"), TrainConfig(), counts, w_in, w_out)  # doctest: +SKIP
        >>> stats = RunEngine(driver.use_corpus(corpus), config, schedule).run()  # doctest: +SKIP
    """
    check_config(config, cluster.mode)  # what the mode cannot train (parvec.capabilities), before Ray is imported
    import_ray()  # a clear error naming the extra before anything else
    if cluster.mode == "replicas":
        from parvec.distributed.replicas import ReplicaDriver

        return ReplicaDriver(cluster, config, counts, w_in, w_out)
    from parvec.distributed.sharded import ShardedDriver

    return ShardedDriver(cluster, config, counts, w_in, w_out)
