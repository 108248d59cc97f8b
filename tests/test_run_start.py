"""Where a run starts (:meth:`parvec.run.Run.start`): new, or from a saved state, one rule for every front end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from parvec.config import TrainConfig
from parvec.run import Run, RunState
from parvec.word2vec import Word2Vec, load_for_resume


def test_a_new_run_gets_a_new_id_and_no_anchor():
    state = RunState(run_id="old", epochs_trained=3, schedule_anchor=(10.0, 0.01))
    start = Run.start(TrainConfig(epochs=2), state, resume=False, epochs=None, words_per_epoch=100)
    assert (start.epoch, start.at, start.epochs, start.done) == (0, None, 2, False)
    assert state.run_id not in (None, "old") and state.schedule_anchor is None


def test_a_resumed_run_keeps_its_id_and_anchors_other_epochs():
    cfg = TrainConfig(epochs=2, alpha=0.025, min_alpha=0.0)
    state = RunState(run_id="r1", epochs_trained=1)
    start = Run.start(cfg, state, resume=True, epochs=4, words_per_epoch=100)
    assert (start.epoch, start.epochs, state.run_id, state.schedule_anchor, cfg.epochs) == (1, 4, "r1",
                                                                                              (100.0, 0.0125), 4)
    done = Run.start(TrainConfig(epochs=1), RunState(run_id="r", epochs_trained=1), resume=True, epochs=None,
                     words_per_epoch=100)
    assert done.done


def _corpus(path: Path) -> Path:
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    path.write_text("".join(" ".join(rng.choice(words, 12)) + "\n" for _ in range(200)), encoding="utf-8")
    return path


def test_a_checkpoint_without_a_run_id_resumed_with_more_epochs_keeps_its_schedule(tmp_path):
    # A checkpoint that recorded no run id (written before parvec recorded one) resumes as one that did: its run
    # goes on under a new id, and the learning rate decays from its value at the checkpoint (the anchor that
    # --epochs sets), not from the start of a fresh schedule.
    corpus = _corpus(tmp_path / "c.txt")
    model = Word2Vec(vector_size=8, min_count=1, epochs=2, workers=1, seed=3, progress=False)
    (tmp_path / "ck").mkdir()
    model.checkpoint_dir = tmp_path / "ck"
    model.build_vocab(corpus_file=str(corpus))
    model.train(corpus_file=str(corpus))
    plain, bare = tmp_path / "plain", tmp_path / "bare"
    shutil.copytree(tmp_path / "ck" / "checkpoint", plain)
    shutil.copytree(tmp_path / "ck" / "checkpoint", bare)
    meta = json.loads((bare / "model.json").read_text(encoding="utf-8"))
    assert meta.pop("run_id") is not None
    (bare / "model.json").write_text(json.dumps(meta), encoding="utf-8")
    resumed = []
    for path in (plain, bare):
        m, _, _ = load_for_resume(path)
        m.train(corpus_file=str(corpus), resume=True, epochs=4)
        resumed.append(m)
    a, b = resumed
    assert b.run_id is not None and a.schedule_anchor is not None
    assert b.schedule_anchor == a.schedule_anchor
    np.testing.assert_array_equal(a.wv.vectors, b.wv.vectors)
