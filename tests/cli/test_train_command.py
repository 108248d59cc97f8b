"""``parvec train``'s command resolved once (parvec.cli.command): the flags given known from the one parse, the
namespace never written, a resumed run's restored flags in the frozen command."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from parvec.cli import build_parser
from parvec.cli.command import resolve
from parvec.cli.flags import explicit_flags
from parvec.cli.train import run_train
from parvec.config import default_threads

FAST = ["--dim", "8", "--epochs", "2", "--min-count", "1", "--no-cache", "--no-progress"]


def test_flags_given_with_their_default_value_are_known_from_the_one_parse(monkeypatch):
    # --threads given as all cores (its default) is still given: a cluster fits its actors' threads only when it
    # is left out.  Known from parse_args alone, without parsing the command line again.
    argv = ["train", "c.txt", "-o", "v.txt", "--threads", str(default_threads()), "--unicode-errors", "strict"]
    args = build_parser().parse_args(argv)
    monkeypatch.setattr("parvec.cli.build_parser", lambda: pytest.fail("the command line was parsed again"))
    assert args.threads == default_threads() and args.unicode_errors == "strict"
    assert {"threads", "unicode_errors", "output"} <= explicit_flags(args)
    assert not {"dim", "seed", "report_interval", "sync_overlap"} & explicit_flags(args)
    # Left out, every flag has argparse's own default.
    left = build_parser().parse_args(["train", "c.txt", "-o", "v.txt"])
    assert (left.threads, left.seed, left.report_interval, left.sync_overlap, left.dim) == (default_threads(), 1,
                                                                                           2.0, True, None)
    assert explicit_flags(argparse.Namespace(threads=2)) == frozenset()


def test_resolving_the_command_writes_nothing_to_the_parsed_flags(tiny_corpus, tmp_path, capsys):
    args = build_parser().parse_args(["train", str(tiny_corpus), "-o", str(tmp_path / "v.txt"), "--threads", "1",
                                      "--checkpoint-dir", str(tmp_path / "ck"), *FAST])
    before = dict(vars(args))
    assert run_train(args) == 0
    assert vars(args) == before
    # --resume: the checkpoint's threads, checkpoint directory and epochs are the command's, not the namespace's.
    args = build_parser().parse_args(["train", str(tiny_corpus), "-o", str(tmp_path / "w.txt"), "--resume",
                                      str(tmp_path / "ck"), "--no-cache", "--no-progress"])
    before = dict(vars(args))
    cmd, checkpoint = resolve(args)
    assert vars(args) == before
    assert checkpoint is not None and checkpoint.path == tmp_path / "ck" / "checkpoint"
    assert (cmd.threads, cmd.checkpoint_dir, cmd.resume) == (1, str(tmp_path / "ck"),
                                                             str(tmp_path / "ck" / "checkpoint"))
    assert checkpoint.model.config.dim == 8  # the saved flags are the checkpoint's
    assert "threads" not in cmd.given and cmd.threads_per_actor is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        cmd.threads = 2  # type: ignore[misc]
    err = capsys.readouterr().err
    assert "threads: 1, as the checkpoint was trained (--threads overrides)" in err
    assert f"checkpoints continue in {tmp_path / 'ck'} (--checkpoint-dir overrides)" in err
