"""Mid-epoch checkpoints of the replicas mode: taken at part ends by the replicas together (every row averaged,
replica 0's model written by the driver), and a run resumed from any of them trains the same bytes as the run
that wrote it (1 thread per replica, checkpoints every N words: the same parts in every run)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from topic_corpus import ANIMALS, topic_precision, topic_sentences

from parvec.checkpoints import list_checkpoints
from parvec.distributed.cluster import Cluster

KW = dict(vector_size=16, epochs=2, workers=1, min_count=1, seed=7, sample=1e-3, progress=False)


def _cluster() -> Cluster:
    return Cluster("local:2", sync_words=3000, min_sync_words=8, timeout_s=60)


@pytest.fixture(scope="module")
def checkpointed(ray_session, tmp_path_factory):
    from parvec.word2vec import Word2Vec

    ck = tmp_path_factory.mktemp("replica_ck") / "ck"
    ck.mkdir()
    sentences = topic_sentences(4000, seed=3)
    saved = []
    model = Word2Vec(cluster=_cluster(), checkpoint_dir=ck, checkpoint_every="12k", **KW)
    model.on_checkpoint_saved = lambda path, pos, seconds: saved.append((path.name, pos))
    model.config.chunk_words = 2000  # 10 chunks a replica an epoch: several sync parts
    model.build_vocab(sentences)
    model.train(sentences)
    return ck, sentences, model, saved


@pytest.mark.ray
def test_replicas_take_mid_epoch_checkpoints(checkpointed):
    ck, _, model, saved = checkpointed
    mids = [pos for _, pos in saved if pos is not None and pos.chunks_done]
    words_per_epoch = model.stats.words_per_epoch[0]
    # ~40k words an epoch, one every 12k words: at part ends, so two or three per epoch
    assert len({p.epoch for p in mids}) == 2 and 4 <= len(mids) <= 6, [(p.epoch, p.words_done) for p in mids]
    for p in mids:
        assert 0 < p.words_done < words_per_epoch
    assert model.run_report.get("checkpoints", {}).get("mid_epoch_checkpoints", len(mids)) == len(mids)
    assert topic_precision(model.wv, ANIMALS) > 0.6  # the checkpoints' full syncs do not spoil training


@pytest.mark.ray
def test_replicas_resume_from_a_mid_epoch_checkpoint_is_bit_identical(checkpointed, tmp_path):
    from parvec.word2vec import Word2Vec

    ck, sentences, full, _ = checkpointed
    found = [f for f in list_checkpoints(ck) if f.chunks_done]
    assert found, "no mid-epoch checkpoint was kept"
    for f in found:
        model = Word2Vec.load(f.path)
        model.cluster = _cluster()
        # the same interval: the same parts get the checkpoints' full syncs as in the run that wrote it
        model.checkpoint_dir = tmp_path / f.path.name
        model.checkpoint_dir.mkdir()
        model.checkpoint_every = "12k"
        stats = model.train(sentences, resume=True)
        assert np.array_equal(model.wv.vectors, full.wv.vectors), f.path.name
        assert np.array_equal(model.syn1neg, full.syn1neg), f.path.name
        assert stats.words < full.stats.words_per_epoch[f.epoch] * (KW["epochs"] - f.epoch)
        assert stats.pairs_per_epoch[-1] == full.stats.pairs_per_epoch[-1]


CLUSTER = ["--cluster", "local:2", "--threads", "1", "--sync-words", "3000", "--min-sync-words", "8", "--no-cache"]


@pytest.fixture(scope="module")
def cli_checkpointed(ray_session, tmp_path_factory):
    """A CLI replicas run checkpointed mid-epoch every 12k words: (corpus, checkpoint directory, output)."""
    from parvec.cli import main

    tmp_path = tmp_path_factory.mktemp("cli_replica_ck")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(s) for s in topic_sentences(4000, seed=5)) + "\n", encoding="utf-8")
    ck = tmp_path / "ck"
    full = tmp_path / "full.txt"
    assert main(["train", str(corpus), "-o", str(full), "--dim", "16", "--min-count", "1", "--epochs", "2",
                 "--seed", "7", "--checkpoint-dir", str(ck), "--checkpoint-every", "12k", *CLUSTER]) == 0
    return corpus, ck, full


@pytest.mark.ray
def test_cli_resume_of_a_replicas_run_writes_the_same_file(cli_checkpointed, tmp_path):
    from parvec.cli import main

    corpus, ck, full = cli_checkpointed
    mids = sorted((f for f in list_checkpoints(ck) if f.chunks_done), key=lambda f: (f.epoch, f.chunks_done))
    assert mids, "no mid-epoch checkpoint"
    resumed = tmp_path / "resumed.txt"
    # --checkpoint-every defaults to the checkpoint's (12k): the same parts get their full syncs
    assert main(["train", str(corpus), "-o", str(resumed), "--resume", str(mids[-1].path), *CLUSTER]) == 0
    assert resumed.read_bytes() == full.read_bytes()


@pytest.mark.ray
def test_cli_resume_of_a_replicas_run_without_its_cluster_flags_trains_there_again(cli_checkpointed, tmp_path,
                                                                                   capsys):
    # Left out, --cluster local:2 (2 replicas, 1 thread each) and the sync settings are the checkpoint's: its
    # position counts the replicas' parts (resumed in this process, it was refused with a false "the corpus does
    # not match the checkpoint").
    from parvec.cli import main

    corpus, ck, full = cli_checkpointed
    mid = [f for f in list_checkpoints(ck) if f.chunks_done][-1]
    meta = json.loads((mid.path / "model.json").read_text())
    assert meta["cluster"]["spec"] == "local:2" and meta["cluster"]["replicas"] == 2
    assert meta["cluster"]["threads_per_actor"] == 1 and meta["cluster"]["sync_words"] == 3000
    capsys.readouterr()
    resumed = tmp_path / "resumed.txt"
    assert main(["train", str(corpus), "-o", str(resumed), "--no-cache", "--resume", str(mid.path)]) == 0
    err = capsys.readouterr().err
    assert ("cluster: --cluster local:2 --mode replicas --replicas 2 --threads 1, as the checkpoint was trained"
            in err), err[-3000:]
    assert "2 replicas x 1 thread" in err and "does not match the checkpoint" not in err
    assert resumed.read_bytes() == full.read_bytes()


@pytest.mark.ray
def test_cli_replicas_run_fits_its_threads_silently_and_a_resume_restores_them(ray_session, tmp_path, capsys):
    # --threads left out: each replica's threads are fitted to the cluster's 2 CPUs (1 each) without a note naming a
    # --threads never given; the checkpoint records the 1 thread each replica ran, and a resume restores it and
    # takes --threads 1 (the same value) as no override.
    from parvec.cli import main

    corpus, ck = tmp_path / "corpus.txt", tmp_path / "ck"
    corpus.write_text("\n".join(" ".join(s) for s in topic_sentences(1500, seed=5)) + "\n", encoding="utf-8")
    flags = ["--dim", "16", "--min-count", "1", "--seed", "7", "--no-cache", "--checkpoint-dir", str(ck)]
    capsys.readouterr()
    assert main(["train", str(corpus), "-o", str(tmp_path / "v.txt"), "--epochs", "1", "--cluster", "local:2",
                 *flags]) == 0
    err = capsys.readouterr().err
    assert "2 replicas x 1 thread" in err and "lowered to fit" not in err and "note:" not in err, err[-3000:]
    assert json.loads((ck / "checkpoint" / "model.json").read_text())["cluster"]["threads_per_actor"] == 1
    assert main(["train", str(corpus), "-o", str(tmp_path / "v2.txt"), "--epochs", "2", "--threads", "1",
                 "--resume", str(ck), *flags]) == 0
    err = capsys.readouterr().err
    assert "threads: 1 per replica, as the checkpoint was trained (--threads overrides)" in err.splitlines(), err
    assert "2 replicas x 1 thread" in err and "lowered to fit" not in err
