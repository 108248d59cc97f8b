"""A command's :class:`parvec.run.RunOptions` from its flags (:func:`command_options`) and the console line of each
checkpoint written (:func:`print_checkpoint`): the run layer keeps a run, the command line words it.

Example:
    >>> command_options(checkpoint_dir="ck").on_checkpoint_saved is print_checkpoint
    True
"""

from __future__ import annotations

import sys
from pathlib import Path

from parvec.engine import Position
from parvec.errors import ParvecError
from parvec.run import RunOptions

__all__ = ["command_options", "print_checkpoint"]


def print_checkpoint(path: Path, pos: Position | None, seconds: float) -> None:
    """Print one line to stderr for a checkpoint just written (``RunOptions.on_checkpoint_saved`` of every
    command): its path, where in training it is (``pos``: None at an epoch's end) and the seconds it took.

    Example:
        >>> RunOptions(on_checkpoint_saved=print_checkpoint).on_checkpoint_saved is print_checkpoint
        True
    """
    where = "end of epoch" if pos is None else f"epoch {pos.epoch + 1}, {pos.words_done:,} words in"
    print(f"checkpoint: {path} ({where}) written in {seconds:.2f} s", file=sys.stderr, flush=True)


def command_options(*, checkpoint_dir: str | None = None, checkpoint_every: str | None = None,
                    on_checkpoint_error: str = "stop", report: bool = False, report_interval: float = 2.0,
                    eval_every_epoch: bool = False, checkpoint_lines: bool = True) -> RunOptions:
    """A command's :class:`RunOptions` from its flags: a :class:`parvec.runlog.RunLog` when ``--report`` or the
    per-epoch scores ask for one (``--report-interval`` must be positive), and with ``checkpoint_lines`` a console
    line for every checkpoint (:func:`print_checkpoint`).

    Example:
        >>> command_options(report=True, report_interval=0.5).run_log.interval_s
        0.5
    """
    run_log = None
    if report or eval_every_epoch:
        from parvec.runlog import RunLog

        if not report_interval > 0:
            raise ParvecError(f"--report-interval must be positive, got {report_interval}")
        run_log = RunLog(interval_s=report_interval)
    return RunOptions(checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every,
                      on_checkpoint_error=on_checkpoint_error, run_log=run_log, eval_every_epoch=eval_every_epoch,
                      on_checkpoint_saved=print_checkpoint if checkpoint_lines else None)
