"""A run's time series for ``--report``: what ``parvec report`` draws.

The :class:`~parvec.trainer.Trainer` hands its running totals to :meth:`RunLog.progress` a few times a
second (its progress loop already wakes every 0.25 s); the log keeps one sample at the start (the learning
rate, nothing trained yet), the first one that has trained something (so a short run's loss curve starts at
its start, not an interval in), then one every ``interval_s`` seconds and one at every epoch's end.  A sample
holds the words done, the words/s and the mean loss
*since the previous sample* (so a curve shows the loss of the current window of chunks, not the
epoch's running mean), the learning rate, and the process's resident memory.  Keeping a sample costs
a few sums over per-thread counters and one read of ``/proc/self/statm``: microseconds against seconds of
training (``benchmarks/bench_report_overhead.py`` measures it).

Example:
    >>> log = RunLog(interval_s=0.0)
    >>> log.progress({"t": 1.0, "words": 1000, "pairs": 500, "loss_sum": 1000.0, "lr": 0.02, "epoch": 0})
    >>> log.timeline[-1]["loss"], log.timeline[-1]["words_per_sec"]
    (2.0, 1000.0)
"""

from __future__ import annotations

import math
import os
from typing import Any

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


class RunLog:
    """The time series and per-epoch records of one training run.

    ``progress(totals)`` takes the trainer's running totals (``t`` seconds since training started,
    ``words``, ``pairs``, ``loss_sum``, ``lr``, ``epoch``) and keeps a sample when ``interval_s`` has
    passed since the last kept one (``force=True`` keeps it regardless); ``epoch_end(...)`` adds an
    epoch record, with evaluation scores when given.  ``to_dict()`` is what goes into the report JSON.

    Example:
        >>> log = RunLog(interval_s=0.0)
        >>> log.epoch_end(epoch=0, words=1000, loss=2.5, seconds=1.0, lr=0.01, scores={"ws353": 0.6})
        >>> log.to_dict()["epoch_log"][0]["scores"]
        {'ws353': 0.6}
    """

    def __init__(self, interval_s: float = 2.0) -> None:
        self.interval_s = float(interval_s)
        self.timeline: list[dict[str, Any]] = []
        self.epochs: list[dict[str, Any]] = []
        self._last: dict[str, Any] | None = None
        self._word_base = 0  # words of earlier train() calls, so several calls make one curve
        self._t_base = 0.0
        self._paused = 0.0  # seconds of this call spent outside training (evaluation between epochs)
        self._trained_samples = 0  # samples of this call that trained something (the first is kept at once)

    def new_call(self) -> None:
        """Start a new ``train`` call: its counters restart at zero, the curves continue."""
        if self._last is not None:
            self._word_base += int(self._last["words"])
            self._t_base += float(self._last["t"])
        self._last = None
        self._paused = 0.0
        self._trained_samples = 0

    def pause(self, seconds: float) -> None:
        """Take ``seconds`` spent outside training (an evaluation) off this call's clock."""
        self._paused += float(seconds)

    def progress(self, totals: dict[str, Any], force: bool = False) -> None:
        """Offer the trainer's running totals; a sample is kept every ``interval_s`` seconds, and at once for the
        first that trained something.

        Example:
            >>> log = RunLog(interval_s=2.0)
            >>> log.progress({"t": 0.0, "words": 0, "pairs": 0, "loss_sum": 0.0, "lr": 0.025, "epoch": 0})
            >>> log.progress({"t": 0.25, "words": 500, "pairs": 400, "loss_sum": 1600.0, "lr": 0.0249, "epoch": 0})
            >>> log.progress({"t": 0.5, "words": 900, "pairs": 800, "loss_sum": 3000.0, "lr": 0.0248, "epoch": 0})
            >>> [(s["t"], s["words"], s["loss"]) for s in log.timeline]
            [(0.0, 0, None), (0.25, 500, 4.0)]
        """
        totals = dict(totals, t=max(0.0, float(totals["t"]) - self._paused))
        last = self._last
        first = self._trained_samples == 0 and totals["pairs"] > 0  # the loss from the start of training
        if last is not None and not force and not first and totals["t"] - last["t"] < self.interval_s:
            return
        if last is not None and totals["words"] == last["words"]:
            return  # nothing trained since the last sample (the final call after the last one, a pause)
        if last is None and totals["words"] == 0:  # the start: the learning rate, nothing trained yet
            self.timeline.append({"t": round(self._t_base, 4), "epoch": int(totals["epoch"]) + 1,
                                  "words": self._word_base, "words_per_sec": None, "lr": float(totals["lr"]),
                                  "loss": None, "rss_bytes": rss_bytes()})
            self._last = dict(totals, t=0.0)
            return
        if last is None:
            last = {"t": 0.0, "words": 0, "pairs": 0, "loss_sum": 0.0}
        dt = totals["t"] - last["t"]
        dw = totals["words"] - last["words"]
        dp = totals["pairs"] - last["pairs"]
        dl = totals["loss_sum"] - last["loss_sum"]
        self.timeline.append({
            "t": round(self._t_base + float(totals["t"]), 4),
            "epoch": int(totals["epoch"]) + 1,
            "words": self._word_base + int(totals["words"]),
            "words_per_sec": dw / dt if dt > 0 else None,
            "lr": float(totals["lr"]),
            # A kernel told not to compute the loss adds nothing: no loss is not a loss of 0.
            "loss": _finite_or_none(dl / dp) if dp > 0 and dl != 0 else None,
            "rss_bytes": rss_bytes(),
        })
        self._last = dict(totals)
        self._trained_samples += 1

    def epoch_end(self, epoch: int, words: int, loss: float | None, seconds: float | None, lr: float | None,
                  scores: dict[str, float | None] | None = None, eval_seconds: float | None = None) -> None:
        """Record one finished epoch (1-based in the output), with evaluation scores if given."""
        record: dict[str, Any] = {
            "epoch": int(epoch) + 1,
            "words": int(words),
            "loss": _finite_or_none(loss),
            "seconds": seconds,
            "lr": lr,
        }
        if scores is not None:
            record["scores"] = {k: _finite_or_none(v) for k, v in scores.items()}
            record["eval_seconds"] = eval_seconds
        self.epochs.append(record)

    def to_dict(self) -> dict[str, Any]:
        """The ``timeline`` and ``epoch_log`` entries of the report JSON (``epochs`` stays the epoch count)."""
        return {"timeline_interval_s": self.interval_s, "timeline": self.timeline, "epoch_log": self.epochs}


def headline_scores(result: dict[str, Any]) -> dict[str, float | None]:
    """The three numbers a quality curve shows, from :func:`parvec.evaluation.evaluate`'s result.

    Example:
        >>> headline_scores({"ws353": {"spearman": 0.66}, "analogies": {"3cosadd": 0.35, "covered": 10}})
        {'ws353': 0.66, 'analogy': 0.35}
    """
    out: dict[str, float | None] = {}
    for name in ("ws353", "simlex"):
        if name in result:
            out[name] = result[name].get("spearman")
    if "analogies" in result:
        a = result["analogies"]
        out["analogy"] = a.get("3cosadd") if a.get("covered") else None  # no question covered: no score
    return out
