"""The figures of a sharded run as records: what a shard or a client says of itself (:class:`ShardInfo`,
:class:`ClientInfo`, their ``info()`` answers) and the run's report (:class:`ShardedReport`, the ``--report``
file's sharded keys, :meth:`parvec.distributed.sharded.ShardedRun.report`).

Example:
    >>> info = ShardInfo(0, None, 3, 30, None, False, 1, 0.5, 0, 10, 8, 0.2, 3, 0.4, 64, 9, 123, "n1")
    >>> ShardInfo.from_json(info.to_json()) == info
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from parvec.config import TrainConfig
from parvec.distributed.sharded_settings import ShardedSettings
from parvec.distributed.snapshot_records import SnapshotFigures
from parvec.distributed.units import UnitStats

__all__ = ["ClientInfo", "ShardInfo", "ShardedReport"]

JSON = dict[str, Any]  # a record's JSON object


@dataclass(frozen=True)
class ShardInfo:
    """A shard's status and figures (its ``info()``): its index, the error that stopped it (None), the
    minibatches and inputs it applied, its restart (the new process and when, None), whether it must restore a
    snapshot before serving, its snapshots and restores, memory (peak and baseline resident, the model's, the data
    segment's), its kernels' seconds and calls, the process's CPU seconds, id and Ray node.

    Example:
        >>> ShardInfo(0, None, 3, 30, None, False, 1, 0.5, 0, 10, 8, 0.2, 3, 0.4, 64, 9, 123, "n1").needs_restore
        False
    """

    index: int
    error: str | None
    applied: int
    applied_inputs: int
    restarted: Mapping[str, Any] | None
    needs_restore: bool
    snapshots: int
    snapshot_seconds: float
    restores: int
    peak_rss_bytes: int
    baseline_rss_bytes: int
    kernel_seconds: float
    calls: int
    cpu_seconds: float
    model_bytes: int
    vm_data_bytes: int | None
    pid: int
    node: str | None

    def to_json(self) -> JSON:
        """The figures as a JSON object (the fields' names)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ShardInfo:
        """The record :meth:`to_json` gave."""
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls)})


@dataclass(frozen=True)
class ClientInfo:
    """A client's figures (its ``info()``): its index, whether Ray restarted it, its peak memory, process id, Ray
    node, CPU seconds and the corpus parts it loaded.

    Example:
        >>> ClientInfo(1, False, 10, 42, None, 0.5, 2).parts_loaded
        2
    """

    index: int
    restarted: bool
    peak_rss_bytes: int
    pid: int
    node: str | None
    cpu_seconds: float
    parts_loaded: int

    def to_json(self) -> JSON:
        """The figures as a JSON object (the fields' names)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ClientInfo:
        """The record :meth:`to_json` gave."""
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls)})


@dataclass(frozen=True)
class ShardedReport:
    """A sharded run's report figures (:meth:`of`): its settings, the bytes per trained input word measured at the
    clients (and the paper's and a row-wise parameter server's for comparison), memory, the shards' and clients'
    nodes, the snapshots' and faults' figures (:class:`~parvec.distributed.snapshot_records.SnapshotFigures`),
    where the time went.  :meth:`to_json` gives the ``--report`` file's keys in their order.

    Example:
        >>> report = run.report()  # doctest: +SKIP
        >>> report.shards, report.to_json()["bytes_sent_per_word"]  # doctest: +SKIP
        (2, 41.2)
    """

    settings: ShardedSettings
    totals: UnitStats
    paper_bytes_per_word: float
    rowwise_ps_bytes_per_word: float
    shards_info: tuple[ShardInfo, ...]
    clients_info: tuple[ClientInfo, ...]
    snapshots: SnapshotFigures
    checkpoint_dir: str | None

    @classmethod
    def of(cls, st: ShardedSettings, config: TrainConfig, t: UnitStats, infos: list[ShardInfo],
           client_infos: list[ClientInfo], figures: SnapshotFigures, checkpoint_dir: str | None) -> ShardedReport:
        """The report of a run with settings ``st`` and ``config`` whose clients' figures sum to ``t``.

        Example:
            >>> ShardedReport.of(settings, config, totals, infos, [], figures, None).shards  # doctest: +SKIP
            2
        """
        w_bar = t.pairs / max(t.inputs, 1)  # positives per input word
        S, d, n = st.shards, config.dim, config.negative
        totals = dataclasses.replace(t, acks=list(t.acks))  # the run's go on adding up
        return cls(st, totals, w_bar * (n + 1) * S * 4, (1 + w_bar + w_bar * n) * d * 4, tuple(infos),
                   tuple(client_infos), figures, checkpoint_dir)

    @property
    def shards(self) -> int:
        """The run's shards."""
        return self.settings.shards

    def to_json(self) -> JSON:
        """The report's keys, in the ``--report`` file's order."""
        st, t, infos, client_infos = self.settings, self.totals, self.shards_info, self.clients_info
        inputs = max(t.inputs, 1)
        rowwise = self.rowwise_ps_bytes_per_word
        return {
            "shards": st.shards, "clients": st.clients, "client_threads": st.threads,
            "minibatch_words": st.minibatch_words, "minibatch_words_in_flight": st.minibatch_words_in_flight,
            "minibatch_formation": st.minibatch_formation, "negatives_per": st.negatives_per,
            "update_cap": st.update_cap, "wire_floats": st.wire_floats, "fused_calls": st.fused,
            "unit_words": st.unit_words, "trained_input_words": t.inputs, "minibatches": t.minibatches,
            "contexts_per_input": t.pairs / inputs,
            "bytes_sent_per_word": t.bytes_sent / inputs, "bytes_received_per_word": t.bytes_received / inputs,
            "index_bytes_sent_per_word": t.index_bytes_sent / inputs,
            "paper_bytes_per_word": self.paper_bytes_per_word, "rowwise_ps_bytes_per_word": rowwise,
            "ratio_to_rowwise_ps": (t.bytes_received / inputs) / rowwise if rowwise else None,
            "shard_peak_memory_bytes": [i.peak_rss_bytes for i in infos],
            # Private writable memory now (what --shard-memory caps; the object store's shared pages are not in it).
            "shard_data_bytes": [i.vm_data_bytes for i in infos],
            "shard_model_bytes": [i.model_bytes for i in infos],
            "shard_restarts": [dict(i.restarted) if i.restarted is not None else None for i in infos],
            # The Ray node of each shard and client (placement by memory decides them on a joined cluster).
            "shard_nodes": [i.node for i in infos], "client_nodes": [i.node for i in client_infos],
            **self.snapshots.to_json(),
            "checkpoint_dir": self.checkpoint_dir,
            # Where the time goes (seconds summed over client threads / shard threads).
            "client_unit_seconds": t.seconds, "client_wait_seconds": t.wait_seconds,
            "client_form_seconds": t.form_seconds, "client_coefficient_seconds": t.client_seconds,
            "shard_kernel_seconds": [i.kernel_seconds for i in infos], "shard_calls": [i.calls for i in infos],
            # CPU seconds of each actor process since it started (warm-up and compilation included).
            "shard_cpu_seconds": [i.cpu_seconds for i in infos],
            "client_cpu_seconds": [i.cpu_seconds for i in client_infos],
        }
