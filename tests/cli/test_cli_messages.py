"""What the CLI says in the smaller cases a new user met: a word typed in another Unicode form, a resume with
nothing left to train, counts of one."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
from cli_run import run

from parvec.keyedvectors import KeyedVectors

CAFE_NFC = "caf\u00e9"  # precomposed é, as most text has it
CAFE_NFD = "cafe\u0301"  # e + combining acute accent, as macOS file names and some keyboards give it


@pytest.mark.parametrize(("stored", "typed"), [(CAFE_NFC, CAFE_NFD), (CAFE_NFD, CAFE_NFC)], ids=["nfc", "nfd"])
def test_similar_finds_a_word_typed_in_another_unicode_form(stored, typed, tmp_path, capsys):
    assert unicodedata.normalize("NFC", stored) == unicodedata.normalize("NFC", typed) and stored != typed
    rng = np.random.default_rng(0)
    words = [stored, "tea", "coffee", "bar"]
    kv = KeyedVectors(rng.standard_normal((4, 5)).astype(np.float32), words)
    path = tmp_path / "v.txt"
    kv.save_word2vec_format(path)
    code, out, err = run(["similar", path, typed, "-k", "3"], capsys)
    assert code == 0, err
    assert sorted(line.split()[0] for line in out.splitlines()) == ["bar", "coffee", "tea"]  # not the word itself
    code, out, err = run(["analogy", path, "tea", typed, "coffee", "-k", "1"], capsys)
    assert code == 0, err
    # The API looks keys up the same way; the exact key wins when both forms are keys.
    assert typed in kv and kv.get_index(typed) == 0 and kv[typed].tolist() == kv[stored].tolist()
    both = KeyedVectors(np.eye(2, dtype=np.float32), [CAFE_NFC, CAFE_NFD])
    assert both.get_index(CAFE_NFC) == 0 and both.get_index(CAFE_NFD) == 1
    assert "cafe" not in kv and "cafe\u0300" not in kv  # another accent is another word


def test_a_missing_word_still_gets_the_case_hint(tmp_path, capsys):
    kv = KeyedVectors(np.eye(2, dtype=np.float32), ["Paris", "x"])
    kv.save_word2vec_format(tmp_path / "v.txt")
    code, _, err = run(["similar", tmp_path / "v.txt", "paris"], capsys)
    assert code == 2 and err.strip().endswith("word 'paris' is not in the vocabulary of " + str(tmp_path / "v.txt")
                                               + " (but 'Paris' is)")


@pytest.fixture()
def corpus(tmp_path):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(60)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(" ".join(rng.choice(words, 15)) for _ in range(400)) + "\n")
    return path


FAST = ["--dim", "8", "--threads", "1", "--min-count", "1", "--algo", "classic", "--no-cache", "--no-progress"]


def test_a_resume_with_nothing_left_says_so_and_writes_the_checkpoints_vectors(corpus, tmp_path, capsys):
    code, _, err = run(["train", corpus, "-o", tmp_path / "a.txt", "--epochs", 1, "--checkpoint-dir", tmp_path / "ck",
                        *FAST], capsys)
    assert code == 0, err
    assert "trained 6,000 words (1 epoch, classic, 1 thread)" in err and "1 checkpoint " in err  # counts of one
    code, _, err = run(["train", corpus, "-o", tmp_path / "b.txt", "--resume", tmp_path / "ck", "--no-progress"],
                       capsys)
    assert code == 0, err
    resumed = tmp_path / "ck" / "checkpoint"
    assert f"resuming {resumed}: 1 of 1 epochs done: nothing left to train (--epochs N above 1 trains more)" in err
    assert "nothing left to train (the checkpoint had done its 1 epoch); no training ran" in err
    assert "loss per epoch" not in err and "lost: the training after" not in err
    assert (tmp_path / "b.txt").read_text() == (tmp_path / "a.txt").read_text()


def test_a_graph_resume_with_nothing_left_says_so(tmp_path, capsys, shared_data):
    graph = shared_data / "graphs" / "karate" / "karate.edgelist"
    flags = ["--dimensions", 8, "--walk-length", 10, "--num-walks", 2, "--workers", 1, "--epochs", 1]
    code, _, err = run(["node2vec", graph, "-o", tmp_path / "a.emb", "--checkpoint-dir", tmp_path / "ck", *flags],
                       capsys)
    assert code == 0, err
    code, _, err = run(["node2vec", graph, "-o", tmp_path / "b.emb", "--resume", tmp_path / "ck"], capsys)
    assert code == 0, err
    assert "1 of 1 epochs done: nothing left to train" in err
    assert "walks" in err and "nothing left to train; wrote" in err and "M words/s" not in err
    assert (tmp_path / "b.emb").read_text() == (tmp_path / "a.emb").read_text()


def test_the_sharded_snapshot_line_counts_one_in_the_singular(capsys):
    from parvec.checkpoints import CheckpointCounts
    from parvec.cli.sharded import snapshot_line

    err = snapshot_line({"faults": [], "snapshots": 1, "snapshot_interval_s": 60.0, "snapshot_seconds": 0.1,
                         "snapshot_drain_seconds": 0.0, "words_retrained": 0}, None, CheckpointCounts())
    assert err.startswith("snapshots: 1 consistent snapshot of the shards (every epoch's end and every 60 s)")
    assert "0 faults recovered" in err


# ---------------------------------------------------------------------- said before a local Ray starts
@pytest.fixture()
def no_ray_start(monkeypatch):
    """Starting Ray fails the test's run with a line of its own: what is said must come before."""
    from parvec.distributed.cluster import Cluster
    from parvec.errors import ParvecError

    def session(self):
        raise ParvecError("TEST: Ray would start here")

    monkeypatch.setattr(Cluster, "session", session)


def test_far_too_many_shards_for_a_local_ray_are_refused_before_it_starts(corpus, tmp_path, capsys, no_ray_start):
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.txt", "--cluster", "local:2", "--mode", "sharded",
                        "--shards", 50, "--clients", 4, "--no-cache"], capsys)
    assert code == 2 and "TEST: Ray would start here" not in err
    assert err.strip().splitlines()[-1].startswith("parvec: error: --shards 50 --clients 4 start 54 Ray actors")
    assert "2 CPUs" in err and "words, vocabulary" not in err  # before the corpus is read, too


def test_a_local_ray_with_more_cpus_than_cores_is_warned_of_before_the_corpus_is_read(corpus, tmp_path, capsys,
                                                                                     no_ray_start):
    from parvec.config import default_threads

    n = default_threads() * 2
    # a corpus of at least n chunks of about 10,000 words, so that n replicas are not refused (before Ray) for
    # having no chunk each
    big = tmp_path / "big.txt"
    big.write_text("".join(f"w{i % 50} w{(i * 7) % 50} w{(i * 3) % 50} w{(i * 11) % 50}\n"
                           for i in range(n * 3000)), encoding="utf-8")
    for _ in range(2):  # every command warns once, also the second in the same process
        code, _, err = run(["train", big, "-o", tmp_path / "v.txt", "--cluster", f"local:{n}", "--no-cache"],
                           capsys)
        assert code == 2 and "TEST: Ray would start here" in err
        lines = err.splitlines()
        warned = [i for i, line in enumerate(lines) if line.startswith(
            f"parvec: warning: --cluster local:{n} gives Ray {n} CPUs but this machine has {n // 2} core")]
        read = [i for i, line in enumerate(lines) if "in-vocabulary tokens" in line]
        assert len(warned) == 1 and read and warned[0] < read[0], err
        assert f"--cluster local:{n // 2} matches it" in lines[warned[0]]
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.txt", "--cluster", f"local:{n // 2}", "--no-cache"],
                       capsys)
    assert "warning" not in err
