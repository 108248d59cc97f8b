"""The learning-rate schedule: one rule for every driver, the progress line and the report.

word2vec.c's rule: the rate falls linearly from ``alpha`` to ``final_alpha`` over every raw word of every epoch
(``words_per_epoch * epochs`` words), by the *position* of a word in the run, not by when a thread reaches it,
and stays at ``final_alpha`` after the end.  Every trainer asks it for the rate at the first and just after the
last word of what it trains at once (a chunk of sentences on the CPU, a kernel launch on the GPU, a unit of a
sharded client, a part of a replica's share) and interpolates linearly inside.

A resumed run whose number of epochs was changed (``parvec train --resume ... --epochs N``) keeps the rate it
had at the checkpoint and decays linearly from there to ``final_alpha`` at the new end: the ``anchor``
``(words, alpha)``.  gensim's ``total_words``/``total_examples`` (the size of one epoch for the schedule) set
``words_per_epoch`` to another number than the corpus's tokens.

Example:
    >>> s = Schedule(alpha=0.025, final_alpha=0.0001, words_per_epoch=100, epochs=2)
    >>> s.alpha_at(0), s.alpha_at(200), s.alpha_at(1000)
    (0.025, 0.0001, 0.0001)
    >>> s.span(epoch=1, words_before=0, words=100) == (s.alpha_at(100), s.alpha_at(200))
    True
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Schedule"]


@dataclass(frozen=True)
class Schedule:
    """The learning rate by word position over a whole run (module docstring).

    ``words_per_epoch`` raw words make one epoch of the schedule; ``epochs`` is the run's number of epochs;
    ``anchor`` is ``(words, alpha)``: from that position on the rate decays linearly from ``alpha`` to
    ``final_alpha`` at the run's end (a resumed run whose epochs changed), or None.

    Example:
        >>> Schedule(0.025, 0.0001, 100, 1).alpha_at(50)
        0.01255
    """

    alpha: float
    final_alpha: float
    words_per_epoch: int
    epochs: int
    anchor: tuple[float, float] | None = None

    @classmethod
    def of(cls, config: Any, words_per_epoch: int, epochs: int | None = None,
           anchor: tuple[float, float] | None = None) -> Schedule:
        """The schedule of a :class:`parvec.config.TrainConfig` (its ``alpha`` and final rate) over
        ``epochs`` (default ``config.epochs``) of ``words_per_epoch`` words.

        Example:
            >>> from parvec.config import TrainConfig
            >>> Schedule.of(TrainConfig(alpha=0.05, min_alpha=0.0), 10, 3).total_words
            30
        """
        return cls(float(config.alpha), float(config.final_alpha), int(words_per_epoch),
                   int(config.epochs if epochs is None else epochs), anchor)

    @property
    def total_words(self) -> int:
        """Raw words over which the rate falls to ``final_alpha``: ``words_per_epoch * epochs``."""
        return self.words_per_epoch * self.epochs

    def alpha_at(self, words: float) -> float:
        """The rate ``words`` raw words into the run (never below ``final_alpha``).

        Example:
            >>> Schedule(0.025, 0.0, 100, 1, anchor=(50.0, 0.02)).alpha_at(75)
            0.01
        """
        a_start, a_end = self.alpha, self.final_alpha
        if self.anchor is None:
            return max(a_end, a_start - (a_start - a_end) * min(1.0, words / self.total_words))
        w0, a0 = self.anchor
        end = float(self.total_words)
        if end <= w0:
            return a_end
        return max(a_end, a0 - (a0 - a_end) * min(1.0, (words - w0) / (end - w0)))

    def position(self, epoch: int, words_before: int) -> int:
        """The run position of a point ``words_before`` raw words into epoch ``epoch``.

        Example:
            >>> Schedule(0.025, 0.0, 100, 3).position(2, 5)
            205
        """
        return epoch * self.words_per_epoch + words_before

    def span(self, epoch: int, words_before: int, words: int) -> tuple[float, float]:
        """The rates at the first word and just after the last of ``words`` raw words that start
        ``words_before`` words into epoch ``epoch``: what a kernel interpolates between.

        Example:
            >>> Schedule(0.025, 0.0, 100, 1).span(0, 0, 50)
            (0.025, 0.0125)
        """
        start = self.position(epoch, words_before)
        return self.alpha_at(start), self.alpha_at(start + words)

    def epoch_end_alpha(self, epoch: int) -> float:
        """The rate at the end of epoch ``epoch`` (counted from 0): the report's per-epoch learning rate.

        Example:
            >>> Schedule(0.025, 0.0, 100, 2).epoch_end_alpha(0)
            0.0125
        """
        return self.alpha_at(self.position(epoch + 1, 0))

    def scaled(self, factor: float) -> Schedule:
        """The same schedule with both rates (and the anchor's) multiplied by ``factor`` (replicas: N x alpha).

        Example:
            >>> Schedule(0.025, 0.0001, 100, 1).scaled(2).alpha
            0.05
        """
        if factor == 1:
            return self
        anchor = None if self.anchor is None else (self.anchor[0], self.anchor[1] * factor)
        return replace(self, alpha=self.alpha * factor, final_alpha=self.final_alpha * factor, anchor=anchor)

    def resumed_with(self, epochs: int, words: float) -> Schedule:
        """This run continued at ``words`` with ``epochs`` epochs in all: the rate it had there decays linearly
        to ``final_alpha`` at the new end (an anchored schedule; the same schedule when ``epochs`` is unchanged).

        Example:
            >>> s = Schedule(0.025, 0.0, 100, 2).resumed_with(4, 150.0)
            >>> s.alpha_at(150) == Schedule(0.025, 0.0, 100, 2).alpha_at(150), s.alpha_at(400)
            (True, 0.0)
        """
        if epochs == self.epochs:
            return self
        return replace(self, epochs=int(epochs), anchor=(float(words), self.alpha_at(words)))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for reports and saved models.

        Example:
            >>> Schedule(0.025, 0.0, 100, 1).to_dict()["total_words"]
            100
        """
        return {"alpha": self.alpha, "final_alpha": self.final_alpha, "words_per_epoch": self.words_per_epoch,
                "epochs": self.epochs, "total_words": self.total_words,
                "anchor": None if self.anchor is None else list(self.anchor)}
