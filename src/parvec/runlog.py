"""A run's time series for ``--report``: what ``parvec report`` draws.

The engine (:class:`parvec.engine.RunEngine`) hands its running totals (:class:`Totals`) to
:meth:`RunLog.progress` a few times a second (its progress loop already wakes every 0.25 s); the log keeps one
sample at the start (the learning rate, nothing trained yet), the first one that has trained something (so a
short run's loss curve starts at its start, not an interval in), then one every ``interval_s`` seconds and one
at every epoch's end.  A sample holds the words done, the words/s and the mean loss
*since the previous sample* (so a curve shows the loss of the current window of chunks, not the
epoch's running mean), the learning rate, and the process's resident memory.  Keeping a sample costs
a few sums over per-thread counters and one read of ``/proc/self/statm``: microseconds against seconds of
training (``benchmarks/bench_report_overhead.py`` measures it).  The samples (:class:`Sample`) and the epoch
records (:class:`EpochRecord`) are written into the report JSON by their ``to_json`` and read back by
``from_json`` (:mod:`parvec.report`).

Example:
    >>> log = RunLog(interval_s=0.0)
    >>> log.progress(Totals(t=1.0, words=1000, pairs=500, loss_sum=1000.0, lr=0.02, epoch=0))
    >>> log.timeline[-1].loss, log.timeline[-1].words_per_sec
    (2.0, 1000.0)
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from parvec.evaluation import EvalScores

__all__ = ["EpochRecord", "RunLog", "Sample", "Totals", "headline_scores", "rss_bytes"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int | None:
    """This process's resident memory now (``/proc/self/statm``), None where unknown.

    Example:
        >>> rss_bytes() is None or rss_bytes() > 0
        True
    """
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _finite_or_none(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _number(x: object) -> float | None:
    # A figure read back from a report: a finite int or float, else None (a report written by hand or an older
    # parvec may hold anything).
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return x


@dataclass(frozen=True)
class Totals:
    """The running totals of one ``train`` call, as the engine hands them to ``on_progress``: ``t`` seconds since
    training started, the raw ``words`` and the ``pairs`` trained, the summed loss ``loss_sum``, the learning
    rate ``lr`` now and the ``epoch`` in progress (from 0).

    Example:
        >>> Totals(t=0.5, words=100, pairs=80, loss_sum=240.0, lr=0.02, epoch=0).pairs
        80
    """

    t: float
    words: int
    pairs: int
    loss_sum: float
    lr: float
    epoch: int


@dataclass(frozen=True)
class Sample:
    """One sample of a report's time series: seconds ``t`` since the run started, the ``epoch`` (from 1), the
    ``words`` done, and since the previous sample the ``words_per_sec`` and the mean ``loss`` (None: nothing
    trained, or the kernel did not compute it); the learning rate ``lr`` and the resident memory ``rss_bytes``.

    Example:
        >>> s = Sample(t=1.0, epoch=1, words=1000, words_per_sec=1000.0, lr=0.02, loss=2.0, rss_bytes=None)
        >>> Sample.from_json(s.to_json()) == s
        True
    """

    t: float
    epoch: int
    words: float
    words_per_sec: float | None
    lr: float | None
    loss: float | None
    rss_bytes: int | None

    def to_json(self) -> dict[str, object]:
        """The sample as the report JSON holds it (its keys in this order)."""
        return {"t": self.t, "epoch": self.epoch, "words": self.words, "words_per_sec": self.words_per_sec,
                "lr": self.lr, "loss": self.loss, "rss_bytes": self.rss_bytes}

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> Sample | None:
        """A sample read back from a report; None when it has no number of words (nothing to draw it at); any
        other figure that is missing or not a finite number is None."""
        words = _number(d.get("words"))
        if words is None:
            return None
        epoch, rss = _number(d.get("epoch")), _number(d.get("rss_bytes"))
        return cls(t=_number(d.get("t")) or 0.0, epoch=int(epoch or 0), words=words,
                   words_per_sec=_number(d.get("words_per_sec")), lr=_number(d.get("lr")),
                   loss=_number(d.get("loss")), rss_bytes=None if rss is None else int(rss))


@dataclass(frozen=True)
class EpochRecord:
    """One finished epoch of a report's ``epoch_log``: the ``epoch`` (from 1), its raw ``words``, mean ``loss``,
    ``seconds`` and final learning rate ``lr``; with ``--eval-every-epoch`` its ``scores`` (name -> score, None
    where not computed) and the ``eval_seconds`` they took (None otherwise, and then not in the JSON).

    Example:
        >>> r = EpochRecord(epoch=1, words=1000, loss=2.5, seconds=1.0, lr=0.01, scores={"ws353": 0.6})
        >>> r.to_json()["scores"], EpochRecord.from_json(r.to_json()) == r
        ({'ws353': 0.6}, True)
    """

    epoch: int
    words: int
    loss: float | None
    seconds: float | None
    lr: float | None
    scores: Mapping[str, float | None] | None = None
    eval_seconds: float | None = None

    def to_json(self) -> dict[str, object]:
        """The record as the report JSON holds it (its keys in this order; ``scores`` and ``eval_seconds`` only
        when it was scored)."""
        record: dict[str, object] = {"epoch": self.epoch, "words": self.words, "loss": self.loss,
                                     "seconds": self.seconds, "lr": self.lr}
        if self.scores is not None:
            record["scores"] = dict(self.scores)
            record["eval_seconds"] = self.eval_seconds
        return record

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> EpochRecord | None:
        """A record read back from a report; None without an epoch number; a figure that is missing or not a
        finite number is None, and so is a score."""
        epoch = _number(d.get("epoch"))
        if epoch is None:
            return None
        scores = d.get("scores")
        return cls(epoch=int(epoch), words=int(_number(d.get("words")) or 0), loss=_number(d.get("loss")),
                   seconds=_number(d.get("seconds")), lr=_number(d.get("lr")),
                   scores={str(k): _number(v) for k, v in scores.items()} if isinstance(scores, dict) else None,
                   eval_seconds=_number(d.get("eval_seconds")))


class RunLog:
    """The time series and per-epoch records of one training run.

    ``progress(totals)`` takes the engine's running :class:`Totals` and keeps a :class:`Sample` when
    ``interval_s`` has passed since the last kept one (``force=True`` keeps it regardless); ``epoch_end(...)``
    adds an :class:`EpochRecord`, with evaluation scores when given.  ``to_dict()`` is what goes into the report
    JSON.

    Example:
        >>> log = RunLog(interval_s=0.0)
        >>> log.epoch_end(epoch=0, words=1000, loss=2.5, seconds=1.0, lr=0.01, scores={"ws353": 0.6})
        >>> log.epochs[0].scores
        {'ws353': 0.6}
    """

    def __init__(self, interval_s: float = 2.0) -> None:
        self.interval_s = float(interval_s)
        self.timeline: list[Sample] = []
        self.epochs: list[EpochRecord] = []
        self._last: Totals | None = None
        self._word_base = 0  # words of earlier train() calls, so several calls make one curve
        self._t_base = 0.0
        self._paused = 0.0  # seconds of this call spent outside training (evaluation between epochs)
        self._trained_samples = 0  # samples of this call that trained something (the first is kept at once)

    def new_call(self) -> None:
        """Start a new ``train`` call: its counters restart at zero, the curves continue."""
        if self._last is not None:
            self._word_base += int(self._last.words)
            self._t_base += float(self._last.t)
        self._last = None
        self._paused = 0.0
        self._trained_samples = 0

    def pause(self, seconds: float) -> None:
        """Take ``seconds`` spent outside training (an evaluation) off this call's clock."""
        self._paused += float(seconds)

    def progress(self, totals: Totals, force: bool = False) -> None:
        """Offer the trainer's running totals; a sample is kept every ``interval_s`` seconds, and at once for the
        first that trained something.

        Example:
            >>> log = RunLog(interval_s=2.0)
            >>> log.progress(Totals(t=0.0, words=0, pairs=0, loss_sum=0.0, lr=0.025, epoch=0))
            >>> log.progress(Totals(t=0.25, words=500, pairs=400, loss_sum=1600.0, lr=0.0249, epoch=0))
            >>> log.progress(Totals(t=0.5, words=900, pairs=800, loss_sum=3000.0, lr=0.0248, epoch=0))
            >>> [(s.t, s.words, s.loss) for s in log.timeline]
            [(0.0, 0, None), (0.25, 500, 4.0)]
        """
        totals = dataclasses.replace(totals, t=max(0.0, float(totals.t) - self._paused))
        last = self._last
        first = self._trained_samples == 0 and totals.pairs > 0  # the loss from the start of training
        if last is not None and not force and not first and totals.t - last.t < self.interval_s:
            return
        if last is not None and totals.words == last.words:
            return  # nothing trained since the last sample (the final call after the last one, a pause)
        if last is None and totals.words == 0:  # the start: the learning rate, nothing trained yet
            self.timeline.append(Sample(t=round(self._t_base, 4), epoch=int(totals.epoch) + 1, words=self._word_base,
                                        words_per_sec=None, lr=float(totals.lr), loss=None, rss_bytes=rss_bytes()))
            self._last = dataclasses.replace(totals, t=0.0)
            return
        if last is None:
            last = Totals(t=0.0, words=0, pairs=0, loss_sum=0.0, lr=0.0, epoch=0)
        dt = totals.t - last.t
        dw = totals.words - last.words
        dp = totals.pairs - last.pairs
        dl = totals.loss_sum - last.loss_sum
        self.timeline.append(Sample(
            t=round(self._t_base + float(totals.t), 4),
            epoch=int(totals.epoch) + 1,
            words=self._word_base + int(totals.words),
            words_per_sec=dw / dt if dt > 0 else None,
            lr=float(totals.lr),
            # A kernel told not to compute the loss adds nothing: no loss is not a loss of 0.
            loss=_finite_or_none(dl / dp) if dp > 0 and dl != 0 else None,
            rss_bytes=rss_bytes(),
        ))
        self._last = totals
        self._trained_samples += 1

    def epoch_end(self, epoch: int, words: int, loss: float | None, seconds: float | None, lr: float | None,
                  scores: dict[str, float | None] | None = None, eval_seconds: float | None = None) -> None:
        """Record one finished epoch (1-based in the output), with evaluation scores if given."""
        self.epochs.append(EpochRecord(
            epoch=int(epoch) + 1, words=int(words), loss=_finite_or_none(loss), seconds=seconds, lr=lr,
            scores=None if scores is None else {k: _finite_or_none(v) for k, v in scores.items()},
            eval_seconds=eval_seconds if scores is not None else None))

    def to_dict(self) -> dict[str, object]:
        """The ``timeline`` and ``epoch_log`` entries of the report JSON (``epochs`` stays the epoch count)."""
        return {"timeline_interval_s": self.interval_s, "timeline": [s.to_json() for s in self.timeline],
                "epoch_log": [e.to_json() for e in self.epochs]}


def headline_scores(result: EvalScores) -> dict[str, float | None]:
    """The three numbers a quality curve shows, from :func:`parvec.evaluation.score_sets`' result.

    Example:
        >>> from parvec.evaluation import AnalogyScores, EvalScores, PairSetScores
        >>> ws = PairSetScores("ws.tsv", 0.66, None, 0.6, None, 10, 9, 10.0)
        >>> headline_scores(EvalScores(ws353=ws, analogies=AnalogyScores("q.txt", 9, {"3cosadd": 0.35}, 10, 10,
        ...                                                                   1.0, ())))
        {'ws353': 0.66, 'analogy': 0.35}
    """
    out: dict[str, float | None] = {name: s.spearman for name, s in result.pair_sets()}
    a = result.analogies
    if a is not None:
        out["analogy"] = a.accuracy.get("3cosadd") if a.covered else None  # no question covered: no score
    return out
