"""``--mode sharded`` on the session's local Ray: exactness across shard counts, bytes on the wire, the
Word2Vec API and the CLI end to end, streamed export, memory caps, and faults (a shard or a client killed)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from topic_corpus import three_topic_sentences

from parvec.cli import main
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus, ReadOptions, byte_ranges
from parvec.distributed import Cluster
from parvec.distributed.pipeline import parse_bytes
from parvec.distributed.shard_actor import ShardActor, ShardSpec
from parvec.distributed.shard_kernels import reference_train
from parvec.distributed.sharded import ShardedRun, snapshot_dir
from parvec.distributed.sharded_export import ModelFiles
from parvec.distributed.staleness import stale_train
from parvec.distributed.units import SamplingTables
from parvec.errors import ParvecError
from parvec.formats import load_npy, read_word2vec
from parvec.model_tables import init_input_vectors
from parvec.word2vec import Word2Vec
from parvec.wordhash import fnv1a64

pytestmark = pytest.mark.usefixtures("ray_session")


def _cluster(shards: int, clients: int = 1, threads: int = 1, **kw) -> Cluster:
    """float32 on the wire and split calls unless given: the exact tests compare 1, 2 and 4 shards with the
    float32 reference of the paper's calls (one shard fuses its calls by default: test_one_shard_fuses_...)."""
    kw.setdefault("wire_floats", "float32")
    kw.setdefault("shard_calls", "split")
    return Cluster("local:2", mode="sharded", shards=shards, clients=clients, threads_per_actor=threads, **kw)


def _run(corpus: EncodedCorpus, cluster: Cluster, config: TrainConfig, ray) -> ShardedRun:
    parts = [("refs", [ray.put(corpus.tokens), ray.put(corpus.offsets)])]
    return ShardedRun(ray, cluster, config, corpus.vocab.counts, parts, [corpus.offsets])


_EXACT = dict(window=3, negative=3, epochs=2, sample=1e-2, seed=5)


@pytest.fixture(scope="module")
def exact_runs():
    """One client thread, the same minibatches: S = 1, 2, 4 shards at d = 8, through the Word2Vec API."""
    corpus = EncodedCorpus.from_sentences(three_topic_sentences(80), min_count=1)
    out = {"corpus": corpus}
    for shards in (1, 2, 4):
        model = Word2Vec(vector_size=8, workers=1, progress=False, **_EXACT,
                         cluster=_cluster(shards, minibatch_words=24, unit_words=400))
        model.build_vocab(corpus=corpus)
        stats = model.train(corpus=corpus)
        out[shards] = (model.wv.vectors.copy(), model.syn1neg.copy(), model.run_report, stats)
    return out


def _check_bytes(r: dict, shards: int, dim: int, negative: int = 3, width: int = 4) -> None:
    # Bytes per trained input word, measured at the client: the paper's w (n + 1) S 4 received (half of it
    # with float16 on the wire, width 2); the coefficients sent are as many floats, plus the indices.
    assert r["shards"] == shards
    expected = r["contexts_per_input"] * (negative + 1) * shards * width
    assert r["bytes_received_per_word"] == pytest.approx(expected, rel=1e-12)
    assert r["bytes_received_per_word"] * 4 / width == pytest.approx(r["paper_bytes_per_word"], rel=1e-12)
    assert r["bytes_sent_per_word"] - r["index_bytes_sent_per_word"] == pytest.approx(expected, rel=1e-12)
    # Interleaved minibatches send each run of LANE_WORDS inputs with a window of context words on each side:
    # at this tiny setting (d 8, n 3, S 1) the indices are ~0.6x the coefficients (contiguous: < 0.5x); at
    # d 100, n 5, S 2 about 0.14x (docs/benchmarks/clusters.md, "Bytes on the wire").  Never more than the floats
    # the paper counts.
    assert 0 < r["index_bytes_sent_per_word"] < expected * 4 / width
    rowwise = (1 + r["contexts_per_input"] * (negative + 1)) * dim * 4
    assert r["ratio_to_rowwise_ps"] == pytest.approx(r["bytes_received_per_word"] / rowwise)
    assert len(r["shard_peak_memory_bytes"]) == shards and min(r["shard_peak_memory_bytes"]) > 0


def test_one_two_and_four_shards_train_the_same_vectors_as_the_reference(exact_runs):
    corpus = exact_runs["corpus"]
    ref_in, ref_out, ref_stats = reference_train(TrainConfig(dim=8, **_EXACT), corpus.vocab.counts,
                                                 [(corpus.tokens, corpus.offsets)], minibatch_words=24,
                                                 unit_words=400)
    w_in, w_out, report, stats = exact_runs[1]
    np.testing.assert_allclose(w_in, ref_in, atol=1e-6)
    np.testing.assert_allclose(w_out, ref_out, atol=1e-6)
    assert stats.loss_per_epoch == pytest.approx(ref_stats.loss_per_epoch, rel=1e-6)
    assert stats.epochs == 2 and stats.words == 2 * corpus.n_tokens
    assert not np.allclose(w_in, init_input_vectors(len(corpus.vocab), 8, 5), atol=1e-3)  # it trained
    for shards in (2, 4):
        np.testing.assert_allclose(exact_runs[shards][0], w_in, atol=1e-5)
        np.testing.assert_allclose(exact_runs[shards][1], w_out, atol=1e-5)
    for shards in (1, 2, 4):
        r = exact_runs[shards][2]
        _check_bytes(r, shards, 8)
        assert r["clients"] == 1 and r["requeued_units"] == 0 and r["dropped_minibatches"] == 0
        assert r["bytes_received_per_word"] == pytest.approx(exact_runs[1][2]["bytes_received_per_word"] * shards)


def test_the_staleness_model_with_one_thread_trains_the_real_run(exact_runs):
    # parvec.distributed.staleness with one lane: the minibatches, kernels and coefficients of a real run with one
    # client thread (S = 1 here: the same sums; S = 2 and 4 match it to 1e-5 above)
    corpus = exact_runs["corpus"]
    cfg = TrainConfig(dim=8, **_EXACT)
    run = stale_train(cfg, SamplingTables.per_word(corpus.vocab.counts, cfg), [(corpus.tokens, corpus.offsets)],
                      minibatch_words=24, unit_words=400)
    w_in, w_out, _, stats = exact_runs[1]
    np.testing.assert_allclose(run.w_in, w_in, atol=1e-6)
    np.testing.assert_allclose(run.w_out, w_out, atol=1e-6)
    assert run.loss_per_epoch == pytest.approx(stats.loss_per_epoch, rel=1e-6) and not run.diverged


def test_negatives_per_pair_trains_the_pair_reference_on_one_and_two_shards(exact_runs):
    # The paper's algorithm (the default runs above share negatives per window): the shards keep each
    # minibatch's rows (inputs, positives and their negatives) from its dot products to its adjust, the same
    # vectors as the one-process reference that draws them twice.
    corpus = exact_runs["corpus"]
    assert exact_runs[1][2]["negatives_per"] == "window"
    ref_in, ref_out, ref_stats = reference_train(TrainConfig(dim=8, **_EXACT), corpus.vocab.counts,
                                                 [(corpus.tokens, corpus.offsets)], minibatch_words=24,
                                                 unit_words=400, negatives_per="pair")
    assert not np.allclose(ref_in, exact_runs[1][0], atol=1e-3)  # not the per-window vectors
    for shards in (1, 2):
        model = Word2Vec(vector_size=8, workers=1, progress=False, **_EXACT,
                         cluster=_cluster(shards, minibatch_words=24, unit_words=400, negatives_per="pair"))
        model.build_vocab(corpus=corpus)
        stats = model.train(corpus=corpus)
        np.testing.assert_allclose(model.wv.vectors, ref_in, atol=1e-6 if shards == 1 else 1e-5)
        np.testing.assert_allclose(model.syn1neg, ref_out, atol=1e-6 if shards == 1 else 1e-5)
        assert stats.loss_per_epoch == pytest.approx(ref_stats.loss_per_epoch, rel=1e-5)
        assert model.run_report["negatives_per"] == "pair"
        _check_bytes(model.run_report, shards, 8)  # the same dot products cross the wire


@pytest.mark.parametrize("shards, negatives_per", [(1, "pair"), (2, "window")])
def test_a_float16_wire_trains_the_float16_reference(exact_runs, shards, negatives_per):
    corpus = exact_runs["corpus"]
    ref_in, ref_out, ref_stats = reference_train(TrainConfig(dim=8, **_EXACT), corpus.vocab.counts,
                                                 [(corpus.tokens, corpus.offsets)], minibatch_words=24,
                                                 unit_words=400, negatives_per=negatives_per, wire="float16")
    model = Word2Vec(vector_size=8, workers=1, progress=False, **_EXACT,
                     cluster=_cluster(shards, minibatch_words=24, unit_words=400, negatives_per=negatives_per,
                                      wire_floats="float16"))
    model.build_vocab(corpus=corpus)
    stats = model.train(corpus=corpus)
    if shards == 1:  # the same roundings in the same order
        assert np.array_equal(model.wv.vectors, ref_in) and np.array_equal(model.syn1neg, ref_out)
    else:  # float16 partials summed on the client: their own rounding
        np.testing.assert_allclose(model.wv.vectors, ref_in, atol=1e-3)
    assert stats.loss_per_epoch == pytest.approx(ref_stats.loss_per_epoch, rel=1e-3)
    assert model.run_report["wire_floats"] == "float16"
    _check_bytes(model.run_report, shards, 8, width=2)


def test_one_shard_fuses_its_calls_and_trains_the_fused_reference(exact_runs):
    # One shard holds every column: each call trains its minibatch whole (shard_calls="fused", the default), only
    # indices and learning rates go out and one loss comes back; one client thread: the reference's vectors.
    corpus = exact_runs["corpus"]
    ref_in, ref_out, ref_stats = reference_train(TrainConfig(dim=8, **_EXACT), corpus.vocab.counts,
                                                 [(corpus.tokens, corpus.offsets)], minibatch_words=24,
                                                 unit_words=400, fused=True)
    assert not np.allclose(ref_in, exact_runs[1][0], atol=1e-4)  # not the split calls' vectors
    model = Word2Vec(vector_size=8, workers=1, progress=False, **_EXACT,
                     cluster=Cluster("local:2", mode="sharded", clients=1, threads_per_actor=1, minibatch_words=24,
                                     unit_words=400))  # 1 shard and fused calls: the defaults on local:N
    model.build_vocab(corpus=corpus)
    stats = model.train(corpus=corpus)
    np.testing.assert_allclose(model.wv.vectors, ref_in, atol=1e-6)
    np.testing.assert_allclose(model.syn1neg, ref_out, atol=1e-6)
    assert stats.loss_per_epoch == pytest.approx(ref_stats.loss_per_epoch, rel=1e-6)
    r = model.run_report
    assert r["shards"] == 1 and r["fused_calls"] is True and r["dropped_minibatches"] == 0
    split = exact_runs[1][2]
    assert split["fused_calls"] is False
    # 8 bytes (the loss) back per call; out, the indices alone, no coefficients
    assert r["bytes_received_per_word"] == pytest.approx(8 * r["minibatches"] / r["trained_input_words"])
    assert r["bytes_sent_per_word"] == r["index_bytes_sent_per_word"] < split["bytes_sent_per_word"] / 2


def test_word2vec_api_with_several_clients_ranks_topic_words_together():
    corpus = EncodedCorpus.from_sentences(three_topic_sentences(400, seed=1), min_count=1)
    model = Word2Vec(corpus=corpus, vector_size=16, window=4, negative=4, epochs=4, sample=0, seed=2, progress=False,
                     cluster=Cluster("local:2", mode="sharded", shards=2, clients=2, threads_per_actor=2,
                                     minibatch_words=32, unit_words=1000))
    hits = 0
    for word in ("a0", "b3", "c7"):
        top = [w for w, _ in model.wv.most_similar(word, topn=5)]
        hits += sum(w[0] == word[0] for w in top)
    assert hits >= 13, hits
    r = model.run_report
    assert r["shards"] == 2 and r["clients"] == 2 and r["client_threads"] == 2
    assert r["requeued_units"] == 0 and r["dropped_minibatches"] == 0
    assert model.stats.loss_per_epoch[-1] < model.stats.loss_per_epoch[0]


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sharded") / "topics.txt"
    path.write_text("\n".join(" ".join(s) for s in three_topic_sentences(300, seed=3)) + "\n", encoding="utf-8")
    return path


def _cli(*argv: str, shards: int = 2, calls: str = "split") -> int:
    return main(["train", *argv, "--cluster", "local:2", "--mode", "sharded", "--shards", str(shards), "--clients", "1",
                 "--threads", "1", "--dim", "12", "--epochs", "2", "--min-count", "1", "--window", "3", "--seed", "4",
                 "--no-cache", "--shard-calls", calls])


def test_cli_writes_text_binary_npy_and_the_report(tmp_path, corpus_file, capsys):
    # float32 on the wire: the shards' partial sums exact, so 1 and 2 shards train the same vectors to 1e-5
    exact = ("--wire-floats", "float32")
    assert _cli(str(corpus_file), "-o", str(tmp_path / "v.txt"), "--report", str(tmp_path / "r.json"),
                "--save-vocab", str(tmp_path / "vocab.txt"), *exact) == 0
    assert _cli(str(corpus_file), "-o", str(tmp_path / "v.bin"), "--save-model", str(tmp_path / "model"), *exact,
                shards=1) == 0
    assert _cli(str(corpus_file), "-o", str(tmp_path / "v.npy"), *exact, shards=1) == 0
    text = read_word2vec(tmp_path / "v.txt")
    binary = read_word2vec(tmp_path / "v.bin", binary=True)
    vectors, keys, counts = load_npy(tmp_path / "v.npy")
    enc = EncodedCorpus.from_file(corpus_file, ReadOptions(min_count=1))
    # One process's vocabulary, its ties ordered by the words' 64-bit FNV-1a hash (the distributed count's ids)
    by_hash = sorted(zip(enc.vocab.words, enc.vocab.counts.tolist(), strict=True), key=lambda w: (-w[1], fnv1a64(w[0])))
    assert list(zip(keys, counts.tolist(), strict=True)) == by_hash
    assert text[1] == keys and binary[1] == keys
    # One client thread: the same run whatever the output format (and, to 1e-5, whatever the shards).
    np.testing.assert_allclose(text[0], vectors, atol=1e-5)
    assert np.array_equal(binary[0], vectors)
    model = Word2Vec.load(tmp_path / "model")
    assert np.array_equal(model.wv.vectors, vectors) and model.syn1neg.shape == vectors.shape
    assert np.abs(model.syn1neg).sum() > 0 and model.epochs_trained == 2
    report = json.loads((tmp_path / "r.json").read_text())
    for key in ("vocab_size", "words_trained", "epochs", "training_seconds", "words_per_sec", "loss_per_epoch",
                "peak_memory_bytes", "read_seconds", "corpus_words", "cluster", "shards", "clients",
                "bytes_sent_per_word", "bytes_received_per_word", "shard_peak_memory_bytes", "timeline", "epoch_log"):
        assert key in report, key
    assert report["shards"] == 2 and report["clients"] == 1 and len(report["shard_peak_memory_bytes"]) == 2
    # the cost: the driver, 2 shards, 1 client and the private Ray's processes, from their own accounting
    assert report["cpu_processes"] >= 4 and report["cpu_seconds"] > 0
    assert report["cpu_seconds_per_word"] == report["cpu_seconds"] / report["words_trained"]
    assert report["vocab_size"] == len(keys) and len(report["loss_per_epoch"]) == 2
    vocab_lines = (tmp_path / "vocab.txt").read_text().split("\n")  # word2vec.c's layout: "</s> SENTENCES" first
    assert vocab_lines[0] == f"</s> {report['sentences']}" and vocab_lines[1] == f"{keys[0]} {counts[0]}"
    assert "sharded: 2 shards" in capsys.readouterr().err
    assert report["minibatch_formation"] == "interleaved"
    # Contiguous minibatches (the flag): the same pairs in another order, so other vectors.
    assert _cli(str(corpus_file), "-o", str(tmp_path / "c.npy"), "--report", str(tmp_path / "c.json"),
                "--minibatch-formation", "contiguous", shards=1) == 0
    c_report = json.loads((tmp_path / "c.json").read_text())
    assert c_report["minibatch_formation"] == "contiguous"
    assert (c_report["negatives_per"], c_report["wire_floats"]) == ("window", "float16")  # the defaults
    contiguous, keys_c, _ = load_npy(tmp_path / "c.npy")
    assert keys_c == keys and not np.allclose(contiguous, vectors, atol=1e-4)
    capsys.readouterr()
    # Negatives per pair and float16 on the wire (the flags): another algorithm, half the bytes received.
    assert _cli(str(corpus_file), "-o", str(tmp_path / "w.npy"), "--report", str(tmp_path / "w.json"),
                "--negatives-per", "pair", "--wire-floats", "float16", shards=1) == 0
    assert "negatives per pair" in capsys.readouterr().err
    w_report = json.loads((tmp_path / "w.json").read_text())
    assert (w_report["negatives_per"], w_report["wire_floats"]) == ("pair", "float16")
    assert (report["negatives_per"], report["wire_floats"]) == ("window", "float32")  # as given
    assert w_report["bytes_received_per_word"] == pytest.approx(w_report["paper_bytes_per_word"] / 2)
    windowed, keys_w, _ = load_npy(tmp_path / "w.npy")
    assert keys_w == keys and not np.allclose(windowed, vectors, atol=1e-4)
    # One shard's default: fused calls (the flag), said on the console and in the report; other vectors.
    assert _cli(str(corpus_file), "-o", str(tmp_path / "f.npy"), "--report", str(tmp_path / "f.json"), shards=1,
                calls="fused") == 0
    err = capsys.readouterr().err
    assert "fused calls (the shard trains each minibatch whole)" in err and "fused calls: trained whole" in err
    f_report = json.loads((tmp_path / "f.json").read_text())
    assert f_report["fused_calls"] is True and report["fused_calls"] is False
    fused, keys_f, _ = load_npy(tmp_path / "f.npy")
    assert keys_f == keys and np.isfinite(fused).all() and not np.allclose(fused, vectors, atol=1e-4)


def test_cli_refuses_what_sharded_mode_cannot_do(tmp_path, corpus_file, capsys):
    assert _cli(str(corpus_file), "-o", str(tmp_path / "v.txt"), "--eval-every-epoch") == 2
    assert "--eval-every-epoch is not available with --mode sharded" in capsys.readouterr().err
    assert _cli(str(corpus_file), "-o", str(tmp_path / "v.txt"), "--shard-memory", "lots") == 2
    assert "--shard-memory 'lots'" in capsys.readouterr().err
    assert not (tmp_path / "v.txt").exists()
    assert parse_bytes("3G", "x") == 3 << 30 and parse_bytes("512M", "x") == 512 << 20


def test_byte_ranges_cut_at_whitespace_and_cover_the_file(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("één twee drie\nvier vijf zes zeven acht\nnegen".encode())
    ranges = byte_ranges(path, 5)
    assert ranges[0][0] == 0 and ranges[-1][1] == path.stat().st_size
    data = path.read_bytes()
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    assert all(data[a - 1:a] in (b" ", b"\n") for a, _ in ranges[1:])
    assert b"".join(data[a:b] for a, b in ranges) == data


def test_streamed_export_equals_the_gathered_model_and_bytes_do_not_grow_with_d(ray_session, tmp_path, exact_runs):
    corpus = exact_runs["corpus"]
    config = TrainConfig(dim=32, progress=False, **_EXACT)
    run = _run(corpus, _cluster(2, minibatch_words=24, unit_words=400), config, ray_session)
    try:
        run.train()
        # the model on disk: the shards' column files of the last epoch's snapshot, assembled row range by range
        files = ModelFiles.of(run.snapshots.newest.files or (), tmp_path, [], len(corpus.vocab), 32)
        vec, syn = files.rows(0, len(corpus.vocab)), files.rows(0, len(corpus.vocab), "out")
        middle = files.rows(3, 9)  # a range of rows (the files are the run's: removed when it closes)
        w_in = np.zeros((len(corpus.vocab), 32), np.float32)
        w_out = np.zeros_like(w_in)
        run.gather(w_in, w_out)
        blocks = list(run.row_blocks(block_rows=7))  # small row blocks: the stream is assembled block by block
        report = run.report().to_json()
    finally:
        run.close()
    assert np.array_equal(vec, w_in) and np.array_equal(syn, w_out)
    assert np.array_equal(middle, w_in[3:9])
    assert np.array_equal(np.vstack([b[2] for b in blocks]), w_in) and len(blocks) == -(-len(w_in) // 7)
    assert np.abs(w_out).sum() > 0
    # The same minibatches at d = 32 as at d = 8 move exactly the same bytes; a row-wise server 4x more.
    _check_bytes(report, 2, 32)
    at_8 = exact_runs[2][2]
    assert report["bytes_sent_per_word"] == at_8["bytes_sent_per_word"]
    assert report["bytes_received_per_word"] == at_8["bytes_received_per_word"]
    assert report["ratio_to_rowwise_ps"] == pytest.approx(at_8["ratio_to_rowwise_ps"] / 4)


def test_a_shard_over_its_memory_cap_stops_the_run_before_training(ray_session):
    corpus = EncodedCorpus.from_sentences(three_topic_sentences(20), min_count=1)
    # 2 x 36 words x 1,000,000 columns x 4 bytes = 288 MB per shard, above what a cap of the process's data
    # segment + 150 MB leaves.
    config = TrainConfig(dim=2_000_000, epochs=1, progress=False)
    probe = ray_session.remote(ShardActor).remote(
        ShardSpec(index=0, shards=1, n_words=2, dim=2, lo=0, hi=2, window=2, negative=2, seed=1),
        [np.ones(2, np.float32), np.zeros(2, np.int32), None, None])
    baseline = ray_session.get(probe.info.remote()).vm_data_bytes
    ray_session.kill(probe)
    cap = baseline + (150 << 20)
    with pytest.raises(ParvecError, match="memory cap"):
        _run(corpus, _cluster(2, shard_memory_bytes=cap), config, ray_session)
    # The cap is what the shard process gets: an allocation above it fails, one below works.
    capped = ray_session.remote(ShardActor).remote(
        ShardSpec(index=0, shards=1, n_words=2, dim=2, lo=0, hi=2, window=2, negative=2, seed=1, memory_cap=cap),
        [np.ones(2, np.float32), np.zeros(2, np.int32), None, None])
    try:
        info = ray_session.get(capped.info.remote())
        assert info.error is None and info.vm_data_bytes < cap
        assert "MemoryError" in ray_session.get(capped.try_allocate.remote(cap))
        assert ray_session.get(capped.try_allocate.remote(50 << 20)) is None
    finally:
        ray_session.kill(capped)


def test_one_process_capped_below_its_model_stops_before_training(tmp_path, corpus_file):
    out = tmp_path / "v.txt"
    cap = 1536 << 20

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (cap, resource.getrlimit(resource.RLIMIT_DATA)[1]))

    # 36 words x 6,000,000 dimensions x 2 x 4 bytes = 1.6 GiB of vectors, above what 1.5 GiB leaves.
    proc = subprocess.run([sys.executable, "-m", "parvec", "train", str(corpus_file), "-o", str(out), "--min-count",
                           "1", "--dim", "6000000", "--epochs", "1", "--no-cache", "--threads", "1"],
                          capture_output=True, text=True, preexec_fn=limit, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src")))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "out of memory: the model needs" in proc.stderr and "memory limit" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


def _kill_when(predicate, action, timeout=60.0):
    def watch():
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                action()
                return
            time.sleep(0.02)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def test_a_killed_shard_restarts_from_the_newest_snapshot_and_training_goes_on(ray_session, tmp_path):
    # Every shard restores the newest complete snapshot and the units since are trained again (none of the
    # updates since is lost): tests/distributed/test_faults.py has the bit-for-bit test.
    corpus = EncodedCorpus.from_sentences(three_topic_sentences(1000, seed=5), min_count=1)
    config = TrainConfig(dim=16, window=4, negative=4, epochs=2, sample=0, seed=1, progress=False)
    cluster = _cluster(2, clients=1, threads=2, minibatch_words=32, unit_words=2000, checkpoint_interval_s=0.2,
                       checkpoint_dir=str(tmp_path / "ck"))
    run = _run(corpus, cluster, config, ray_session)
    manifest = tmp_path / "ck" / "manifest.json"
    killed = []
    watcher = _kill_when(lambda: manifest.exists() and run.totals.words > 0,
                         lambda: (killed.append(time.monotonic()), ray_session.kill(run.shards[1], no_restart=False)))
    try:
        stats = run.train()
        report = run.report().to_json()
    finally:
        watcher.join()
        run.close()
    assert killed, "the shard was never killed: the run ended first"
    assert stats.epochs == 2 and stats.words == 2 * corpus.n_tokens and np.isfinite(stats.loss_per_epoch).all()
    assert report["shard_restarts"][1] is not None and report["shard_restarts"][0] is None
    [fault] = [f for f in report["faults"] if f["phase"] == "train"]
    assert fault["kind"] == "shard" and fault["index"] == 1 and fault["lost"] == ["shard 1"]
    assert fault["snapshot"]["id"] is not None  # a snapshot the shards wrote, not the initial model
    assert report["words_retrained"] == fault["words_retrained"] >= 0
    assert "lost_updates_minibatches" not in report  # nothing is lost any more
    last = json.loads(manifest.read_text())  # the newest complete snapshot: the end of the last epoch
    assert last["epoch"] == 2 and last["units_done"] == 0 and report["snapshots"] >= 2
    assert snapshot_dir(tmp_path / "ck", 1, 2, last["id"]).is_dir()


def test_a_killed_client_has_its_unit_requeued(ray_session):
    corpus = EncodedCorpus.from_sentences(three_topic_sentences(1000, seed=6), min_count=1)
    config = TrainConfig(dim=16, window=4, negative=4, epochs=2, sample=0, seed=1, progress=False)
    run = _run(corpus, _cluster(2, clients=2, threads=1, minibatch_words=32, unit_words=3000), config, ray_session)
    killed = []
    watcher = _kill_when(lambda: run.totals.words > 0,
                         lambda: (killed.append(1), ray_session.kill(run.clients[0], no_restart=False)))
    try:
        stats = run.train()
        report = run.report().to_json()
    finally:
        watcher.join()
        run.close()
    assert killed
    assert report["requeued_units"] >= 1 and report["requeued_words"] > 0 and report["client_failures"]
    assert stats.words == 2 * corpus.n_tokens  # every unit trained to the end exactly once per epoch
    assert np.isfinite(stats.loss_per_epoch).all()


def test_a_shard_that_cannot_come_back_ends_the_run_with_a_clear_error(ray_session):
    corpus = EncodedCorpus.from_sentences(three_topic_sentences(1000, seed=7), min_count=1)
    config = TrainConfig(dim=16, window=4, negative=4, epochs=3, sample=0, progress=False)
    run = _run(corpus, _cluster(2, minibatch_words=32, unit_words=2000, max_restarts=0, timeout_s=30.0), config,
               ray_session)
    watcher = _kill_when(lambda: run.totals.words > 0, lambda: ray_session.kill(run.shards[0], no_restart=True))
    try:
        with pytest.raises(ParvecError, match="shard 0 was lost and cannot be restarted"):
            run.train()
    finally:
        watcher.join()
        run.close()
