"""parvec.engine.RunEngine with a scripted driver: what the engine owns (the clock, the counters, the errors,
the epoch callbacks, mid-epoch checkpoints and the resume hand-over) checked without any kernel."""

from __future__ import annotations

import math
import time

import pytest

from parvec.config import TrainConfig
from parvec.engine import DriverBase, EpochResult, NoPairs, RunEngine
from parvec.errors import ParvecError
from parvec.schedule import Schedule

UNIT = 100  # words per unit of the scripted driver


class Scripted(DriverBase):
    """Trains ``units`` units of UNIT words an epoch, 3 pairs and loss 1.5 each; asks for checkpoints at unit
    boundaries as a real driver does; optional sleeps in prepare/finish and a non-finite loss in one epoch.  The
    Driver members it does not word (error_label, divergence_hint, report) are DriverBase's defaults."""

    mode, label = "cpu", "scripted"

    def __init__(self, units: int = 5, pairs: int = 3, sleep_s: float = 0.0, bad_epoch: int | None = None):
        self.config = TrainConfig()
        self.units, self.pair_count, self.sleep_s, self.bad_epoch = units, pairs, sleep_s, bad_epoch
        self.seen_resume: list = []
        self.finished = False

    def prepare(self, start_epoch, epochs):
        time.sleep(self.sleep_s)

    def train_epoch(self, ctx):
        self.seen_resume.append(ctx.resume)
        skip = ctx.resume.units_done if ctx.resume else 0
        pairs = ctx.resume.pairs if ctx.resume else 0
        loss = ctx.resume.loss if ctx.resume else 0.0
        words = 0
        for u in range(skip, self.units):
            if u > skip and ctx.checkpoint_due(words):
                ctx.checkpoint(u, u * UNIT, words, pairs, loss)
            words += UNIT
            pairs += self.pair_count
            loss += 1.5 * self.pair_count
            ctx.progress(words, pairs, loss)
        if ctx.epoch == self.bad_epoch:
            loss = math.inf
        return EpochResult(words=words, pairs=pairs, loss=loss)

    def vectors_finite(self):
        return True

    def finish(self):
        self.finished = True
        time.sleep(self.sleep_s)


def _run(driver, epochs=3, **kw):
    cfg = TrainConfig(epochs=epochs, progress=False)
    return RunEngine(driver, cfg, Schedule.of(cfg, driver.units * UNIT), **kw).run()


def test_counters_per_epoch_and_the_clock_excludes_prepare_and_finish():
    driver = Scripted(sleep_s=0.4)
    t0 = time.perf_counter()
    stats = _run(driver)
    wall = time.perf_counter() - t0
    assert stats.words == 3 * 5 * UNIT and stats.pairs == 3 * 5 * 3
    assert stats.words_per_epoch == [500, 500, 500] and stats.loss_per_epoch == [1.5, 1.5, 1.5]
    # starting and stopping a cluster is not training: the clock (and the CPU count) leave out prepare() and
    # finish(), each of which sleeps at least 0.4 s, however slow the machine is
    assert stats.seconds <= wall - 2 * driver.sleep_s and driver.finished
    assert stats.cpu_processes >= 1 and stats.cpu_seconds >= 0


def test_no_pairs_is_an_error_unless_the_driver_trains_a_share():
    with pytest.raises(NoPairs):
        _run(Scripted(pairs=0))
    cfg = TrainConfig(epochs=1, progress=False)
    stats = RunEngine(Scripted(pairs=0), cfg, Schedule.of(cfg, 500), require_pairs=False).run()
    assert stats.pairs == 0


def test_a_non_finite_loss_names_the_epoch_and_finishes_the_driver():
    driver = Scripted(bad_epoch=1)
    with pytest.raises(ParvecError, match=r"training diverged in epoch 2 \(hogbatch\): the loss became inf"):
        _run(driver)
    assert driver.finished


def test_epoch_callbacks_see_the_epochs_so_far():
    seen = []
    _run(Scripted(), on_epoch_end=lambda e, s: seen.append((e, s.epochs, s.words)))
    assert seen == [(0, 1, 500), (1, 2, 1000), (2, 3, 1500)]


def test_mid_epoch_checkpoints_by_words_then_a_resume_continues_the_counters():
    saved = []
    full = _run(Scripted(), checkpoint_every=("words", 200), on_checkpoint=saved.append)
    # at the first unit boundary 200 words after the last checkpoint or the epoch's start
    assert [(p.epoch, p.chunks_done, p.words_done) for p in saved] == [
        (e, u, u * UNIT) for e in range(3) for u in (2, 4)]
    pos = saved[3]  # epoch 1, 4 units done
    assert pos.pairs == [15, 12] and pos.words == [500, 400]
    assert pos.alpha == pytest.approx(Schedule.of(TrainConfig(epochs=3), 500).alpha_at(500 + 400))
    driver = Scripted()
    resumed = _run(driver, start_epoch=1, resume_at=pos)
    r = driver.seen_resume[0]
    assert (r.units_done, r.words_done, r.pairs) == (4, 400, 12) and driver.seen_resume[1] is None
    assert resumed.words == 100 + 500  # this call's words
    assert resumed.loss_per_epoch == full.loss_per_epoch[1:] and resumed.pairs_per_epoch == [15, 15]


def test_bad_starts_are_refused():
    cfg = TrainConfig(epochs=2, progress=False)
    with pytest.raises(ParvecError, match="start_epoch must be in"):
        RunEngine(Scripted(), cfg, Schedule.of(cfg, 500), start_epoch=2)
    with pytest.raises(ParvecError, match="no in-vocabulary tokens"):
        RunEngine(Scripted(), cfg, Schedule.of(cfg, 0))
