"""The shaped-network benchmark's time model and projections (benchmarks/bench_cluster_net.py)."""

from __future__ import annotations

import math

import pytest
from benchmark_modules import load


@pytest.fixture(scope="module")
def net():
    return load("bench_cluster_net")


def test_rates_in_tc_notation(net):
    assert net.rate_bytes("10gbit") == 1.25e9 and net.rate_bytes("200mbit") == 25e6
    assert net.rate_bytes("0") == math.inf
    with pytest.raises(SystemExit, match="not a rate"):
        net.rate_bytes("fast")


def test_mean_value_analysis_meets_its_asymptotes(net):
    # no link time: k customers each every think_s; a saturated link: calls x link_s; in between: above both
    assert net.mva_time(1000, 4, 0.004, 0.0) == pytest.approx(1.0)
    assert net.mva_time(10_000, 8, 1e-6, 0.001) == pytest.approx(10.0, rel=1e-3)
    mid = net.mva_time(1000, 2, 0.016, 0.0105)
    assert mid > max(1000 * 0.016 / 2, 1000 * 0.0105)


SHARDED = {"training_seconds": 4.0, "clients": 2, "client_threads": 1, "minibatches": 500, "shards": 2,
           "bytes_sent_per_word": 370.0, "bytes_received_per_word": 290.0, "trained_input_words": 1_000_000}
# five syncs of one epoch, the ruler from 1,000 rows of 10,000: 1,000, 2,000, 1,000, 4,000 and the full 10,000
REPLICAS = {"training_seconds": 0.6, "replicas": 2, "syncs": 5, "bytes_synced": 47e6, "rows_synced": 18_000,
            "sync_seconds": 0.1, "parts_per_epoch": 5, "epochs": 1, "vocab_size": 10_000,
            "cluster": {"min_sync_words": 1000, "full_sync_times": 0}}


def test_sharded_model_is_the_busier_resource(net):
    fast = net.predict("sharded", SHARDED, net.rate_bytes("10gbit"), 2e-5)
    slow = net.predict("sharded", SHARDED, net.rate_bytes("200mbit"), 2e-5)
    assert fast == pytest.approx(4.0)  # the CPU: the unshaped time
    assert slow == pytest.approx(660e6 / 25e6 + 500 * 2e-5 / 2)  # the link: its bytes at its rate
    pessimistic = net.predict("sharded", SHARDED, net.rate_bytes("1gbit"), 2e-5, pessimistic=True)
    assert pessimistic > net.predict("sharded", SHARDED, net.rate_bytes("1gbit"), 2e-5)


def test_replicas_model_adds_the_sync_transfer(net):
    # every sync blocking (a run without overlapped syncs): the bulk-synchronous model
    t = net.predict("replicas", REPLICAS, net.rate_bytes("1gbit"), 4e-5)
    assert t == pytest.approx(0.6 + 47e6 / 125e6 + 5 * 2 * 1 * 2e-5)
    # syncs of up to 2,000 rows overlapped: each holds training up only beyond a part's 0.1 s of training
    over = dict(REPLICAS, sync_overlap_rows=2000)
    assert [o for _, o in net.run_syncs(over)] == [True, True, True, False, False]
    per_row = 47e6 / 18_000
    fast = net.predict("replicas", over, net.rate_bytes("1gbit"), 4e-5)
    assert fast == pytest.approx(0.6 + 14_000 * per_row / 125e6 + 2 * 4e-5)  # the three small ones hidden
    slow = net.predict("replicas", over, net.rate_bytes("200mbit"), 4e-5)
    held = [max(0.0, rows * per_row / 25e6 + 4e-5 - 0.1) for rows in (1000, 2000, 1000)]
    assert held[0] > 0 and slow == pytest.approx(0.6 + sum(held) + 14_000 * per_row / 25e6 + 2 * 4e-5)


def test_projections_scale_with_nodes_and_links(net):
    ji = [net.project_replicas(n, 5.8e6, net.rate_bytes("56gbit"), 2e-4, 1_000_000, 300) for n in (8, 32, 128)]
    assert ji[0]["words_per_s"] < ji[1]["words_per_s"] < ji[2]["words_per_s"]
    assert ji[0]["efficiency"] > ji[1]["efficiency"] > ji[2]["efficiency"]
    slow = net.project_replicas(32, 5.8e6, net.rate_bytes("1gbit"), 2e-4, 1_000_000, 300)
    assert slow["sync_share"] > ji[1]["sync_share"]
    # every sync blocking: the bulk-synchronous sum of the bytes at the link's rate and the ring's latencies
    block = net.project_replicas(32, 5.8e6, net.rate_bytes("1gbit"), 2e-4, 1_000_000, 300, overlap=False)
    assert block["words_per_s"] < slow["words_per_s"]
    train_s = 1e9 / 32 / 5.8e6
    sync_s = block["gb_per_node"] * 1e9 / 125e6 + block["syncs"] * 2 * 31 * 2e-4
    assert block["words_per_s"] == pytest.approx(1e9 / (train_s + sync_s))
    one = net.project_sharded(10, 1e9, 1e-6, 16, 4e-9, net.rate_bytes("1gbit"), 2e-4, 3.3, 5, 320_000, 200)
    ten = net.project_sharded(10, 1e9, 1e-6, 16, 4e-9, net.rate_bytes("10gbit"), 2e-4, 3.3, 5, 320_000, 200)
    assert one["limit"] == "shard link" and ten["limit"] == "shard CPU"
    assert ten["inputs_per_s"] > one["inputs_per_s"]
