"""The sharded run's records (snapshots, their files and figures, the report, the settings) write the JSON the
formats on disk hold, key for key and byte for byte, and read back what they and older checkpoints wrote."""

import json

from parvec.config import TrainConfig
from parvec.distributed import Cluster
from parvec.distributed.sharded_report import ClientInfo, ShardedReport, ShardInfo
from parvec.distributed.sharded_settings import ShardedSettings
from parvec.distributed.snapshot_records import (
    CheckpointRestored,
    ClientFailure,
    EpochFigures,
    ShardFiles,
    Snapshot,
    SnapshotCost,
    SnapshotFigures,
    SnapshotPlan,
)
from parvec.distributed.snapshots import IdleEpoch
from parvec.distributed.supervise import ActorLost, FaultRecord
from parvec.distributed.units import UnitStats

# A manifest.json as the snapshots wrote it (json.dump of the snapshot's record), its keys in their order.
_TOTAL = {"words": 120, "inputs": 100, "pairs": 700, "loss": 3.25, "minibatches": 4, "bytes_sent": 900,
          "bytes_received": 800, "index_bytes_sent": 400, "acks": [4, 4], "seconds": 1.5, "wait_seconds": 0.5,
          "form_seconds": 0.25, "client_seconds": 0.125}
_MANIFEST = {"id": 7, "epoch": 1, "units_done": 3, "words_done": 1200, "queue": [3, 4, 5], "total": _TOTAL,
             "epochs": [{"epoch": 1, "words": 2000, "pairs": 9000, "loss": 41.5}], "time": 1700000000.25,
             "shards": 2, "directory": "/ck/shards",
             "files": [{"directory": "/ck/shards/shard-0-of-2/snap-7", "shape": [50, 4], "crc32": {"in": 1, "out": 2},
                        "columns": [0, 4]},
                       {"directory": "/ck/shards/shard-1-of-2/snap-7", "shape": [50, 4], "crc32": {"in": 3, "out": 4},
                        "columns": [4, 8]}],
             "words_per_epoch": 2000, "units": 6, "units_crc32": 123456}


def test_a_snapshot_writes_the_manifest_it_reads_byte_for_byte():
    snap = Snapshot.from_json(json.loads(json.dumps(_MANIFEST)))
    assert json.dumps(snap.to_json()) == json.dumps(_MANIFEST)
    assert snap.complete and snap.queue == (3, 4, 5) and snap.total.acks == [4, 4]
    assert snap.files is not None and snap.files[1] == ShardFiles("/ck/shards/shard-1-of-2/snap-7", (50, 4),
                                                                  {"in": 3, "out": 4}, (4, 8))
    assert snap.epochs == (EpochFigures(1, 2000, 9000, 41.5),)


def test_a_checkpoint_records_the_snapshot_state_in_its_order_and_its_files_relative_to_it():
    snap = Snapshot.from_json(_MANIFEST)
    state = snap.checkpoint_state()
    assert list(state) == ["id", "epoch", "units_done", "words_done", "total", "epochs", "units", "units_crc32",
                           "words_per_epoch", "time", "queue"]
    assert state == {k: _MANIFEST[k] for k in state}
    files = snap.files_json(relative_to="/ck/checkpoint")
    assert files[0] == {"directory": "../shards/shard-0-of-2/snap-7", "shape": [50, 4], "crc32": {"in": 1, "out": 2},
                        "columns": [0, 4]}


def test_an_older_checkpoint_without_the_queue_still_has_every_later_unit_to_train():
    state = {k: v for k, v in _MANIFEST.items() if k not in ("queue", "files", "shards", "directory")}
    snap = Snapshot.from_json(state)
    assert snap.queue == (3, 4, 5) and snap.files is None
    # a checkpoint's files carry no columns where an older parvec wrote none
    assert ShardFiles.from_json({"directory": "d", "shape": [5, 2]}).to_json() == {"directory": "d", "shape": [5, 2]}


def test_a_snapshot_s_running_total_is_a_copy_and_its_place_a_position():
    snap = Snapshot.from_json(_MANIFEST)
    total = snap.running_total()
    total.add(UnitStats(words=5, acks=[1, 1]))
    assert snap.total.words == 120 and snap.total.acks == [4, 4]
    position = snap.position()
    assert position is not None and (position.chunks_done, position.words) == (3, [2000, 120])
    assert snap.describe() == "the snapshot of epoch 2 unit 3" and snap.completed_epoch == 2
    start = Snapshot(None, 0, 0, 0, (0, 1), UnitStats(acks=[0]), (), 0.0)
    assert start.position() is None and not start.complete
    assert start.describe() == "the model the run started from (epoch 1 unit 0)"
    # an initial snapshot's record has no part of a complete one
    assert list(start.to_json()) == ["id", "epoch", "units_done", "words_done", "queue", "total", "epochs", "time"]


def test_the_snapshot_figures_are_the_report_keys_in_their_order():
    fault = FaultRecord("shard", 1, "train", 2, ["shard 1"], "died", words_retrained=40).to_dict()
    figures = SnapshotFigures((fault,), 2, 40, 1, (ClientFailure(0, 2, 5, "RayActorError: gone"),),
                              (SnapshotCost(1, 0, 0.5, 0.25, 800, 0.4), SnapshotCost(2, 3, 0.75, 0.0, 900, 0.5)), 60.0)
    assert figures.to_json() == {
        "faults": [fault], "words_retrained": 40, "requeued_units": 2, "requeued_words": 40,
        "dropped_minibatches": 1,
        "client_failures": [{"client": 0, "epoch": 2, "unit": 5, "error": "RayActorError: gone"}],
        "snapshots": 2, "snapshot_interval_s": 60.0, "snapshot_seconds": 1.25, "snapshot_drain_seconds": 0.25,
        "snapshot_bytes": 900, "snapshot_shard_seconds_max": 0.5}
    assert list(figures.to_json())[:3] == ["faults", "words_retrained", "requeued_units"]
    assert ClientFailure.from_json(figures.client_failures[0].to_json()) == figures.client_failures[0]


def test_the_sharded_report_has_the_report_file_s_keys_in_their_order():
    settings = ShardedSettings.of(Cluster("local:2", mode="sharded", shards=2), TrainConfig(dim=8))
    info = ShardInfo(0, None, 3, 30, None, False, 1, 0.5, 0, 10, 8, 0.2, 3, 0.4, 64, 9, 123, "n1")
    client = ClientInfo(0, False, 10, 42, "n2", 0.5, 1)
    totals = UnitStats(words=10, inputs=10, pairs=40, bytes_sent=100, bytes_received=200, acks=[1, 1])
    figures = SnapshotFigures((), 0, 0, 0, (), (), 60.0)
    report = ShardedReport.of(settings, TrainConfig(dim=8), totals, [info], [client], figures, None)
    totals.add(UnitStats(words=5))  # the run's figures go on; the report's do not
    d = report.to_json()
    assert list(d) == [
        "shards", "clients", "client_threads", "minibatch_words", "minibatch_words_in_flight", "minibatch_formation",
        "negatives_per", "update_cap", "wire_floats", "fused_calls", "unit_words", "trained_input_words",
        "minibatches", "contexts_per_input", "bytes_sent_per_word", "bytes_received_per_word",
        "index_bytes_sent_per_word", "paper_bytes_per_word", "rowwise_ps_bytes_per_word", "ratio_to_rowwise_ps",
        "shard_peak_memory_bytes", "shard_data_bytes", "shard_model_bytes", "shard_restarts", "shard_nodes",
        "client_nodes", *figures.to_json(), "checkpoint_dir", "client_unit_seconds", "client_wait_seconds",
        "client_form_seconds", "client_coefficient_seconds", "shard_kernel_seconds", "shard_calls",
        "shard_cpu_seconds", "client_cpu_seconds"]
    assert d["shards"] == report.shards == 2 and d["contexts_per_input"] == 4.0 and d["bytes_sent_per_word"] == 10.0
    assert d["paper_bytes_per_word"] == 4.0 * 6 * 2 * 4 and d["shard_nodes"] == ["n1"] and d["client_nodes"] == ["n2"]
    assert report.totals.words == 10
    assert ShardInfo.from_json(info.to_json()) == info and ClientInfo.from_json(client.to_json()) == client


def test_the_settings_record_reads_back_what_it_wrote():
    settings = ShardedSettings.of(Cluster("local:2", mode="sharded", shard_calls="split"), TrainConfig())
    d = settings.to_json()
    assert list(d)[:5] == ["shards", "clients", "threads", "minibatch_words", "minibatch_words_in_flight"]
    assert ShardedSettings.from_json(json.loads(json.dumps(d))) == settings


def test_an_idle_epoch_has_nothing_in_flight():
    assert IdleEpoch(1, ()).stop_in_flight(ActorLost("shard", 0, "died"), 1.0) == []


def test_the_command_line_words_the_run_s_notes():
    from parvec.cli.sharded import note_line

    assert note_line(SnapshotPlan(60.0, 3 << 20, 250e6)) == (
        "parvec: a consistent snapshot of the shards at every epoch's end and every 60 s (each shard writes 3.0 MiB, "
        "about 0.0 s at 250 MB/s; --snapshot-interval sets it)")
    assert note_line(CheckpointRestored(4, 2)) == ("every shard restored its columns from the checkpoint's snapshot 4 "
                                                   "(2 shards, CRC-32 checked)")


def test_the_replicas_report_has_the_report_file_s_keys_in_their_order():
    from parvec.distributed.replicas import ReplicasReport

    fault = FaultRecord("replica", 1, "train", 1, ["replica 1"], "died", details={"replica": [1]})
    report = ReplicasReport(2, 1, None, 0.025, 3, 1, 0, 4, 300, 0.5, 0.1, [0.5, 0.5], [2.0, 2.0], 4800, 2.5,
                            48000, 10.0, 0.1, 1.0, 2.0, 3.0, [100, 100], ["n1", "n1"], ["cache", "cache"], (fault,),
                            "gloo")
    d = report.to_json()
    assert list(d) == [
        "mode", "replicas", "threads_per_replica", "alpha_scale", "alpha_per_replica", "syncs", "syncs_overlapped",
        "sync_overlap_rows", "parts_per_epoch", "rows_synced", "sync_seconds", "sync_share",
        "sync_seconds_per_replica", "replica_train_seconds", "bytes_synced", "bytes_synced_per_word",
        "bytes_full_model_same_syncs", "traffic_reduction", "model_fetch_seconds", "setup_seconds",
        "ray_start_seconds", "start_seconds", "share_words", "nodes", "data", "faults", "collective"]
    assert d["mode"] == "replicas" and d["faults"] == [fault.to_dict()] and d["faults"][0]["replica"] == [1]
