"""Where a model trains: the one choice of driver, and what must hold before it starts.

:func:`make_driver` picks what trains a model's arrays: this process's CPU threads
(:class:`parvec.trainer.CpuDriver`), the GPU (``device="cuda"``, :func:`parvec.gpu.make_driver`) or a Ray
cluster's replicas or shards (``cluster=``, :func:`parvec.distributed.make_driver`); each is a typed
:class:`parvec.engine.CorpusDriver`.  :func:`parts_driver` is the CPU or GPU driver of parts streamed per
epoch (graph walks).  :func:`check_memory` refuses, before training, a model and corpus that do not fit this
machine (or its process limit, or a cluster's processes here); :func:`resume_cluster` says where a resumed run
trains (the cluster its checkpoint recorded).

Example:
    >>> from parvec.config import TrainConfig
    >>> d = make_driver(TrainConfig(algo="classic", dim=4), np.array([3, 2, 1]))
    >>> d.mode, d.label, d.w_in.shape
    ('cpu', 'classic', (3, 4))
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from parvec.config import TrainConfig
from parvec.engine import CorpusDriver, PartsDriver
from parvec.errors import ParvecError
from parvec.model_tables import init_half_width, init_input_vectors
from parvec.resources import available_memory, rlimit_headroom
from parvec.trainer import CpuDriver, estimate_memory

if TYPE_CHECKING:
    from parvec.cluster_record import ClusterRecord
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.distributed.cluster import Cluster
    from parvec.run import RunState

__all__ = ["check_memory", "cluster_record", "make_driver", "parts_driver", "resume_cluster"]

log = logging.getLogger(__name__)


def make_driver(config: TrainConfig, counts: np.ndarray, w_in: np.ndarray | None = None,
                w_out: np.ndarray | None = None, syn1: np.ndarray | None = None, *, cluster: Cluster | None = None,
                read_options: ReadOptions | None = None, workers_given: bool = False) -> CorpusDriver:
    """The driver that trains ``w_in``/``w_out`` (when None: word2vec.c's initial vectors, twice them for CBOW,
    and zeros) in place: the cluster's (``read_options``: how a node that cannot see the cache re-reads the input;
    ``workers_given``: threads given and lowered to fit the CPUs are said), the GPU's for
    ``config.device == "cuda"``, else the CPU's (``syn1``: hierarchical softmax's inner nodes).

    Example:
        >>> make_driver(TrainConfig(dim=2), np.array([2, 1])).use_corpus(corpus)  # doctest: +SKIP
    """
    _check_writable(w_in, w_out, syn1)
    if cluster is not None:
        if w_in is None or w_out is None:
            raise ValueError("a cluster driver trains the arrays it is given")
        return _cluster_driver(cluster, config, counts, w_in, w_out, read_options, workers_given)
    if config.device == "cuda":
        return _gpu_driver(config, counts, w_in, w_out)
    return CpuDriver(config, counts, w_in=w_in, w_out=w_out, syn1=syn1)


def _check_writable(*arrays: np.ndarray | None) -> None:
    # A driver trains its arrays in place: a memory map opened read-only cannot be (numba would refuse it with a
    # typing error).
    if any(a is not None and not a.flags.writeable for a in arrays):
        raise ParvecError("this model's arrays are read-only (Word2Vec.load(..., mmap='r') maps them): load it "
                          "without mmap to train it")


def parts_driver(config: TrainConfig, counts: np.ndarray, w_in: np.ndarray | None = None,
                 w_out: np.ndarray | None = None) -> PartsDriver:
    """The CPU or GPU driver for parts streamed per epoch (``bind(make_parts)``: a graph's walks).

    Example:
        >>> parts_driver(TrainConfig(dim=2), np.array([2, 1])).bind(lambda epoch: iter(()))  # doctest: +SKIP
    """
    _check_writable(w_in, w_out)
    if config.device == "cuda":
        return _gpu_driver(config, counts, w_in, w_out)
    return CpuDriver(config, counts, w_in=w_in, w_out=w_out)


def _gpu_driver(config: TrainConfig, counts: np.ndarray, w_in: np.ndarray | None,
                w_out: np.ndarray | None) -> PartsDriver:
    from parvec.gpu import make_driver as make_gpu_driver

    n, dim = len(counts), config.dim
    return make_gpu_driver(config, counts, init_input_vectors(n, dim, config.seed, half_width=init_half_width(config))
                           if w_in is None else w_in,
                           np.zeros((n, dim), dtype=np.float32) if w_out is None else w_out)


def _cluster_driver(cluster: Cluster, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray,
                    w_out: np.ndarray, read_options: ReadOptions | None, workers_given: bool) -> CorpusDriver:
    from parvec.distributed import make_driver as make_cluster_driver

    return make_cluster_driver(cluster, config, counts, w_in, w_out, read_options=read_options,
                               workers_given=workers_given)


def cluster_record(cluster: Cluster | None, actor_threads: int | None = None) -> ClusterRecord | None:
    """Where a model trains, as its ``model.json`` records it (:func:`parvec.distributed.cluster_record`, with the
    ``actor_threads`` its actors ran; None: this process, which never imports Ray).

    Example:
        >>> cluster_record(None) is None
        True
    """
    if cluster is None:
        return None
    from parvec.distributed import cluster_record as record

    return record(cluster, actor_threads)


def check_memory(config: TrainConfig, encoded: EncodedCorpus, cluster: Cluster | None = None) -> int:
    """Bytes the model and encoded corpus take here; a :class:`ParvecError` when over the available memory, over
    this process's memory limit (RLIMIT_DATA/RLIMIT_AS), or (``cluster``) when every process a cluster run starts
    on this machine does not fit, before Ray starts.

    Example:
        >>> check_memory(TrainConfig(dim=100), corpus) > 0  # doctest: +SKIP
        True
    """
    # A memory-mapped token array (a large corpus, or one from the cache) is read from disk, not held.
    in_memory_tokens = 0 if isinstance(encoded.tokens, np.memmap) else encoded.n_tokens
    need = estimate_memory(len(encoded.vocab), config.dim, in_memory_tokens, encoded.n_sentences)
    avail = available_memory()
    if avail is not None and need > avail:
        raise ParvecError(
            f"training needs about {need / 2**30:.1f} GiB (vectors {len(encoded.vocab)} x {config.dim} x 2, "
            f"plus the encoded corpus) but only {avail / 2**30:.1f} GiB is available; "
            "lower --dim, raise --min-count or set --max-final-vocab"
        )
    if cluster is not None:  # every process a cluster run starts on this machine, before Ray starts
        from parvec.distributed.memory import check_corpus

        check_corpus(cluster, config, encoded)
    # A process capped below the model (ulimit -d / -v, prlimit; RLIMIT_DATA or RLIMIT_AS) stops here, before
    # training, with the numbers, rather than failing inside an allocation.
    # The vectors, the per-word tables beside them (counts, keep, alias) and some working room.
    vectors = 2 * len(encoded.vocab) * config.dim * 4
    vectors_and_tables = vectors + 24 * len(encoded.vocab) + (64 << 20)
    room = rlimit_headroom()
    if room is not None and vectors_and_tables > room:
        raise ParvecError(
            f"out of memory: the model needs {vectors / 2**30:.2f} GiB (vectors {len(encoded.vocab):,} x "
            f"{config.dim} x 2) but this process's memory limit (RLIMIT_DATA/RLIMIT_AS, e.g. ulimit -d) "
            f"leaves {room / 2**30:.2f} GiB; raise the limit, lower --dim, raise --min-count, or train it "
            "column-sharded across processes (--cluster ... --mode sharded)"
        )
    return need


def resume_cluster(cluster: Cluster | None, state: RunState) -> Cluster | None:
    """Where a resumed run trains: a checkpoint trained on a cluster trains there again (its recorded cluster, when
    ``cluster`` is None); a cluster that cannot continue it (another mode, replicas, shards or sync settings, or a
    cluster for a checkpoint of this process) is refused, naming both.  Returns the cluster (None: this process).

    Example:
        >>> from parvec.run import RunState
        >>> resume_cluster(None, RunState()) is None
        True
    """
    if not state.saved_cluster_recorded:
        return cluster
    from parvec.distributed import cluster_from_record, cluster_record, describe_record

    saved = state.saved_cluster
    if cluster is None:
        if saved is not None:
            cluster = cluster_from_record(saved)
            log.info("resuming on %s, as the checkpoint was trained", describe_record(saved))
        return cluster
    mine = cluster_record(cluster)
    assert mine is not None
    if saved is None:
        raise ParvecError(f"cannot resume on {describe_record(mine)}: the checkpoint was trained in this process "
                          "(its position and learning rate are this process's); resume it with cluster=None")
    keys = ("mode", "replicas", "sync_words", "min_sync_words", "full_sync_times", "sync_overlap", "alpha_scale")
    if saved.mode == "sharded":
        keys = ("mode", "shards", "minibatch_words", "minibatch_formation", "negatives_per", "wire_floats",
                "shard_calls")
    differ = [f"{k} {mine.value(k)!r} (the checkpoint's {saved.value(k)!r})" for k in keys
              if mine.value(k) != saved.value(k)]
    if differ:
        raise ParvecError(f"cannot resume on this cluster: {'; '.join(differ)}; the checkpoint was trained on "
                          f"{describe_record(saved)}: resume it with the same mode and settings (leave "
                          "model.cluster as loaded)")
    return cluster
