"""``model.json``'s ``cluster`` object as a :class:`parvec.cluster_record.ClusterRecord`: the settings of the
:class:`parvec.Cluster` it records, written back key for key, and a record of another version read as it was."""

from __future__ import annotations

import dataclasses
import json

from parvec.cluster_record import RECORDED, ClusterRecord
from parvec.distributed import cluster_from_record, cluster_record
from parvec.distributed.cluster import Cluster


def test_a_record_holds_every_cluster_setting_but_the_snapshot_directory_and_options():
    fields = [f.name for f in dataclasses.fields(Cluster) if f.name not in ("checkpoint_dir", "options")]
    assert list(RECORDED) == fields  # a new Cluster setting is recorded too, in the Cluster's order


def test_a_clusters_record_is_written_as_its_settings_in_order_and_read_back_to_the_same_cluster():
    cluster = Cluster("local:2", mode="sharded", shards=2, clients=1, update_cap=8, checkpoint_dir="ck",
                      checkpoint_interval_s=30.0)
    record = cluster_record(cluster, actor_threads=3)
    assert record is not None
    written = json.loads(json.dumps(record.to_json()))
    assert list(written) == list(RECORDED)
    assert written["threads_per_actor"] == 3 and written["update_cap"] == 8 and "checkpoint_dir" not in written
    again = ClusterRecord.from_json(written)
    assert again == record
    back = cluster_from_record(again)
    assert (back.shards, back.clients, back.update_cap, back.threads_per_actor, back.checkpoint_dir) == (
        2, 1, 8, 3, None)


def test_a_record_of_another_version_keeps_what_it_held_and_no_more():
    old = ClusterRecord.from_json({"spec": "local:2", "mode": "sharded", "shards": 2, "clients": 1,
                                   "a_later_setting": 5})
    assert old.to_json() == {"spec": "local:2", "mode": "sharded", "shards": 2, "clients": 1}
    assert old.value("update_cap", 0) == 0 and old.update_cap is None  # not recorded: the caller's default
    assert cluster_from_record(old).sync_words == Cluster("local:2", mode="sharded").sync_words
    recorded_none = ClusterRecord.from_json({"spec": "local:2", "mode": "sharded", "update_cap": None})
    assert recorded_none.value("update_cap", 0) is None
    assert old.with_settings(shards=4).to_json()["shards"] == 4
