"""Training on a Ray cluster: drivers over the same corpus, config, kernels and model as one machine.

- :mod:`parvec.distributed.cluster`: :class:`Cluster` (where and how), and the one place Ray is started
  or joined.
- :mod:`parvec.distributed.replicas`: Ji et al.'s data-parallel replicas with frequency-ranked sub-model
  synchronisation (``mode="replicas"``).
- :mod:`parvec.distributed.sharded`: Ordentlich et al.'s column-sharded parameter servers
  (``mode="sharded"``).

A driver looks like :class:`parvec.trainer.Trainer` to the model: it is built from
``(cluster, config, counts, w_in, w_out)``, its ``train(corpus, epochs=, on_epoch_end=, start_epoch=)``
returns a :class:`~parvec.trainer.TrainStats` and leaves the trained vectors in ``w_in``/``w_out``, and
``report()`` returns the run's distributed figures for ``--report``.

Example:
    >>> from parvec.distributed import Cluster
    >>> Cluster("local:2").mode
    'replicas'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from parvec.config import TrainConfig
from parvec.distributed.cluster import Cluster, as_cluster, import_ray
from parvec.errors import ParvecError

__all__ = ["Cluster", "as_cluster", "import_ray", "make_trainer"]


def make_trainer(cluster: Cluster, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray,
                 w_out: np.ndarray) -> Any:
    """The driver for ``cluster.mode``, shaped like :class:`parvec.trainer.Trainer`.

    Example:
        >>> trainer = make_trainer(Cluster("local:2"), TrainConfig(), counts, w_in, w_out)  # doctest: +SKIP
        >>> stats = trainer.train(corpus)  # doctest: +SKIP
    """
    if cluster.mode == "sharded" and not config.sg:
        raise ParvecError("CBOW (sg=0) is not available with the sharded mode (its kernels train skip-gram "
                          "only): use the replicas mode, or train on one machine")
    import_ray()  # a clear error naming the extra before anything else
    if cluster.mode == "replicas":
        from parvec.distributed.replicas import ReplicaTrainer

        return ReplicaTrainer(cluster, config, counts, w_in, w_out)
    from parvec.distributed.sharded import ShardedTrainer

    return ShardedTrainer(cluster, config, counts, w_in, w_out)
