"""Where a model trained, as its ``model.json`` records it (its ``cluster`` object): a :class:`ClusterRecord`.

A cluster run's checkpoint records every setting of its :class:`parvec.Cluster` but where its own snapshots go
and the test-only options (:func:`parvec.distributed.cluster_record`); a resumed run trains there again
(:func:`parvec.distributed.cluster_from_record`).  A record read from a checkpoint written by another parvec
version keeps which settings it held: one it did not hold reads as None (or the default given to
:meth:`ClusterRecord.value`), a key it held that this version does not know is left out.  This module imports
neither Ray nor the cluster code, so a model directory is read without them.

Example:
    >>> record = ClusterRecord.from_json({"spec": "local:2", "mode": "replicas", "replicas": 2})
    >>> record.replicas, record.shards, record.to_json()
    (2, None, {'spec': 'local:2', 'mode': 'replicas', 'replicas': 2})
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["RECORDED", "ClusterRecord"]


@dataclass(frozen=True)
class ClusterRecord:
    """A checkpoint's record of its cluster (module docstring): the :class:`parvec.Cluster`'s settings, each None
    where it was not recorded, and ``recorded``, the settings the record holds (in ``model.json``, by
    :meth:`to_json`, in this order).

    Example:
        >>> record = ClusterRecord(spec="local:2", mode="sharded", shards=2,
        ...                        recorded=frozenset({"spec", "mode", "shards"}))
        >>> record.describe()
        '--cluster local:2 --mode sharded --shards 2'
    """

    spec: str | None = None
    mode: str | None = None
    replicas: int | None = None
    shards: int | None = None
    clients: int | None = None
    threads_per_actor: int | None = None
    sync_words: int | None = None
    min_sync_words: int | None = None
    full_sync_times: int | None = None
    sync_overlap: bool | None = None
    timeout_s: float | None = None
    alpha_scale: str | None = None
    minibatch_words: int | None = None
    minibatch_formation: str | None = None
    negatives_per: str | None = None
    wire_floats: str | None = None
    shard_calls: str | None = None
    update_cap: int | None = None
    unit_words: int | None = None
    checkpoint_interval_s: float | None = None
    shard_memory_bytes: int | None = None
    max_restarts: int | None = None
    recorded: frozenset[str] = frozenset()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ClusterRecord:
        """The record of ``model.json``'s ``cluster`` object; keys this version does not know are left out.

        Example:
            >>> ClusterRecord.from_json({"spec": "auto", "mode": "replicas", "later": 1}).recorded == {"spec", "mode"}
            True
        """
        known = {k: v for k, v in d.items() if k in RECORDED}
        return cls(**known, recorded=frozenset(known))

    def to_json(self) -> dict[str, Any]:
        """``model.json``'s ``cluster`` object: the settings recorded, in the :class:`parvec.Cluster`'s order.

        Example:
            >>> ClusterRecord.from_json({"mode": "replicas", "spec": "local:2"}).to_json()
            {'spec': 'local:2', 'mode': 'replicas'}
        """
        return {k: self.value(k) for k in RECORDED if k in self.recorded}

    def value(self, key: str, absent: object = None) -> object:
        """The recorded value of setting ``key`` (a field's name), or ``absent`` where the record does not hold it.

        Example:
            >>> ClusterRecord.from_json({"mode": "sharded"}).value("update_cap", 0)
            0
        """
        if key not in self.recorded:
            return absent
        values: dict[str, object] = vars(self)
        return values[key]

    def with_settings(self, **changes: object) -> ClusterRecord:
        """The record with ``changes`` recorded (a sharded run's shards and clients as it ran them).

        Example:
            >>> ClusterRecord.from_json({"spec": "local:2"}).with_settings(shards=2).to_json()
            {'spec': 'local:2', 'shards': 2}
        """
        unknown = set(changes) - set(RECORDED)
        if unknown:
            raise TypeError(f"not a recorded cluster setting: {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes, recorded=self.recorded | frozenset(changes))  # type: ignore[arg-type]

    def describe(self) -> str:
        """The place of training, in flags: ``--cluster local:2 --mode replicas --replicas 2``.

        Example:
            >>> ClusterRecord.from_json({"spec": "local:2", "mode": "replicas", "replicas": 2,
            ...                          "threads_per_actor": 1}).describe()
            '--cluster local:2 --mode replicas --replicas 2 --threads 1'
        """
        words = [f"--cluster {self.spec}", f"--mode {self.mode}"]
        keys = ("replicas",) if self.mode == "replicas" else ("shards", "clients")
        for key in (*keys, "threads_per_actor"):
            value = self.value(key)
            if value is not None:
                words.append(f"--{'threads' if key == 'threads_per_actor' else key} {value}")
        return " ".join(words)


# The settings a record holds, in model.json's order (the Cluster's fields but checkpoint_dir and options).
RECORDED = tuple(f.name for f in dataclasses.fields(ClusterRecord) if f.name != "recorded")
