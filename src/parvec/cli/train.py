"""``parvec train``: text in, word vectors out.

Accepts parvec's flags and word2vec.c's (``-train -output -size -window -negative -sample -min-count
-iter -alpha -threads -binary -cbow -cbow-mean -hs -save-vocab -read-vocab -debug -classes``), so existing word2vec.c
scripts run unchanged: ``parvec -train text8 -output vec.bin -size 200 -binary 1``.

**Which defaults apply** is set by how the training file is named: ``-train FILE`` means word2vec.c's
defaults for every flag left out (CBOW ``-cbow 1``, ``-alpha`` 0.05 for CBOW and 0.025 for skip-gram,
``-sample 1e-3``, ``-iter 5``, ``-min-count 5``, ``-window 5``, ``-negative 5``, ``-hs 0``, ``-size 100``,
``-binary 0``: text output whatever the name); ``parvec train INPUT`` means parvec's (skip-gram, alpha
0.025, the rest as word2vec.c's, binary when the output ends ``.bin``).  A flag given is honoured in
either spelling and either style (``-train c.txt --epochs 3`` trains 3 epochs); naming the training file
both ways is refused.  The first line printed says which defaults applied.
``-cbow 1`` (or ``--cbow``) trains CBOW, ``-hs 1`` (or ``--hs``) hierarchical softmax, alone with ``-negative 0``
or together with negative sampling.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parvec.cli.command import TrainCommand, cluster_from_args, resolve
from parvec.cli.outputs import OutputPlan
from parvec.cli.paths import Use, check_paths, directory_inputs, vector_outputs
from parvec.cli.resume import Checkpoint, note_checkpoint_places
from parvec.cli.train_flags import (
    CBOW_DEFAULT_BATCH,
    SHARDED_DEFAULTS,
    STYLE_DEFAULTS,
    add_threads_argument,
    add_train_flags,
    add_training_arguments,
    default_cache_dir,
    resolve_defaults,
)
from parvec.cli.train_models import Outputs, TrainModel, WordModel
from parvec.cli.train_text import save_vectors, word_classes, write_classes
from parvec.errors import ParvecError

if TYPE_CHECKING:
    from parvec.cli.remote import TrainPaths

# Re-exported: the flags' helpers the other training commands and the tests use.
__all__ = ["CBOW_DEFAULT_BATCH", "SHARDED_DEFAULTS", "STYLE_DEFAULTS", "add_threads_argument",
           "add_training_arguments", "cluster_from_args", "default_cache_dir", "register", "resolve_defaults",
           "open_model", "run_train", "save_vectors", "train_flow", "train_inputs", "train_outputs", "word_classes",
           "write_classes"]


def register(subparsers: Any) -> None:
    """Add ``parvec train``: its flags (:mod:`parvec.cli.train_flags`), run by :func:`run_train`."""
    p = subparsers.add_parser(
        "train",
        help="train word vectors on a text file",
        description="Train word vectors on a text file (one sentence per line; .gz/.bz2/.xz read directly; - reads "
        "standard input). word2vec.c's flags are accepted too. Defaults: `-train FILE` takes word2vec.c's for every "
        "flag left out (-cbow 1, -alpha 0.05 for CBOW and 0.025 for skip-gram, -sample 1e-3, -iter 5, -min-count 5, "
        "-window 5, -negative 5, -hs 0, -size 100, -binary 0); `parvec train INPUT` takes parvec's (skip-gram, "
        "alpha 0.025, the others the same, binary when the output ends .bin). A flag given counts in either "
        "spelling; the first line printed says which defaults applied.",
        epilog="Outputs: before the corpus is read, every output (-o, --report, --save-vocab, --save-model) gets a "
        "temporary file in its directory and --checkpoint-dir is created, so a path that cannot be written fails at "
        "once; the outputs are renamed into place only when the run succeeds. An output that is an input (the "
        "corpus, a --resume model, under any name or hard link) or another output is refused. A closed standard "
        "output or error (e.g. `2>&1 | head`) does not stop the run. Exit status: 0 when every output was written, "
        "2 on an error (the message names the file or flag), 130 when interrupted.",
    )
    add_train_flags(p)
    p.set_defaults(func=run_train)


def run_train(args: argparse.Namespace) -> int:
    """Run ``parvec train``: ``-debug 0`` prints nothing on stderr but the error, if any (printed by the caller)."""
    debug = 2 if args.debug is None else args.debug
    if debug not in (0, 1, 2):
        raise ParvecError(f"-debug must be 0, 1 or 2, got {args.debug}")
    if debug == 0:
        with contextlib.redirect_stderr(io.StringIO()):
            return _run_train_staged(args)
    return _run_train_staged(args)


def _run_train_staged(args: argparse.Namespace) -> int:
    # URLs (s3://, gs://, ...) in the inputs and outputs: local stand-ins for the run, uploads after it
    # (parvec.cli.remote); the command is resolved with the stand-ins, the parsed flags are only read.
    from parvec.cli.remote import TrainPaths, run_staged

    return run_staged(TrainPaths.of(args), lambda paths: _run_train(args, paths))


def _run_train(args: argparse.Namespace, paths: TrainPaths | None) -> int:
    # The command resolved (and a --resume checkpoint loaded) before anything is read; then no output may be an
    # input or another output, and every output gets its temporary file (or directory) in its target directory
    # now, so an unwritable path fails at once; they are renamed into place only when the run succeeds.
    cmd, checkpoint = resolve(args, paths)
    note_checkpoint_places(cmd.checkpoint_dir, cmd.resume)
    check_paths(train_inputs(cmd), train_outputs(cmd))
    with OutputPlan() as plan:
        outputs = Outputs(
            output=plan.file("-o", cmd.output, npy=cmd.output.endswith(".npy"), stdout=True,
                             binary=cmd.binary and not cmd.classes) if cmd.output else None,
            report=plan.file("--report", cmd.report) if cmd.report else None,
            save_vocab=plan.file("--save-vocab", cmd.save_vocab) if cmd.save_vocab else None,
            save_model=plan.directory("--save-model", cmd.save_model) if cmd.save_model else None)
        if cmd.checkpoint_dir:
            plan.checkpoint_dir("--checkpoint-dir", cmd.checkpoint_dir, entry="checkpoint")
        with open_model(cmd, checkpoint) as model:
            done = train_flow(cmd, model, outputs)
        plan.commit()
    for line in done:
        print(line, file=sys.stderr)
    return 0


def train_flow(cmd: TrainCommand, model: TrainModel, outputs: Outputs) -> list[str]:
    """The one flow of ``parvec train``, whatever trains (:class:`parvec.cli.train_models.TrainModel`): the corpus
    encoded, its lines and memory check, the vocabulary file, training through the run layer and its lines, the
    outputs, the report, each written into its reserved temporary.  Returns the lines to print once the outputs
    are in place.

    Example:
        >>> with open_model(cmd, None) as model:  # doctest: +SKIP
        ...     done = train_flow(cmd, model, outputs)
    """
    done: list[str] = []
    t0 = time.perf_counter()
    corpus = model.encode()
    read_seconds = time.perf_counter() - t0
    model.describe(corpus, read_seconds)
    if outputs.save_vocab is not None:
        model.save_vocab(outputs.save_vocab)
        done.append(f"wrote the vocabulary ({corpus.vocab_size:,} words) to {cmd.save_vocab}")
    stats = model.train()
    for line in model.summary(stats):
        print(line, file=sys.stderr)
    t_out = time.perf_counter()
    done += model.write(outputs, corpus.vocab_size)
    if outputs.report is not None:
        from parvec.cli.run_report import write_report

        report = model.report(corpus, stats, read_seconds, time.perf_counter() - t_out)
        outputs.report.write(lambda path: write_report(path, report))
        done.append(f"wrote the report to {cmd.report}")
    return done


@contextlib.contextmanager
def open_model(cmd: TrainCommand, checkpoint: Checkpoint | None) -> Iterator[TrainModel]:
    """The :class:`TrainModel` of ``cmd`` (``checkpoint``: the run ``--resume`` loaded), open for the flow:
    ``--mode sharded``'s holds a Ray session and a work directory until the block ends.  A whole model's checkpoint
    (``Word2Vec(cluster=Cluster(mode="sharded"))``'s) resumes as it trained.

    Example:
        >>> with open_model(cmd, None) as model:  # doctest: +SKIP
        ...     model.encode().vocab_size
        71290
    """
    from parvec.distributed.pipeline import ShardedWord2Vec

    pipeline = cmd.sharded
    if pipeline and checkpoint is not None and not isinstance(checkpoint.model, ShardedWord2Vec):
        model = checkpoint.model
        saved = model.saved_cluster if model.saved_cluster_recorded else None
        if not (saved is not None and saved.mode == "sharded"):
            raise ParvecError(f"--resume {cmd.resume} is not a sharded run's checkpoint: resume it without --mode "
                              "sharded (it trains where it was trained)")
        pipeline = False
    if not pipeline:
        yield WordModel(cmd, checkpoint)
        return
    from parvec.cli.sharded import ShardedModel

    sharded = ShardedModel(cmd, checkpoint)
    with sharded.model:
        yield sharded


def train_inputs(cmd: TrainCommand) -> list[Use]:
    """Every file ``parvec train`` reads: the corpus (unless ``-``), the resumed model's files, evaluation files.

    Example:
        >>> from types import SimpleNamespace
        >>> cmd = SimpleNamespace(source="c.txt", read_vocab=None, resume=None, eval_every_epoch=False)
        >>> [u.label for u in train_inputs(cmd)]
        ['the training corpus']
    """
    from parvec.corpus import expand_inputs

    source = cmd.source
    uses = [] if source == "-" else [Use("the training corpus", p)
                                   for p in expand_inputs(source, say_skipped=False) or [Path(str(source))]]
    if cmd.read_vocab:
        uses.append(Use("the vocabulary -read-vocab", Path(cmd.read_vocab)))
    if cmd.resume:
        uses += directory_inputs("the resumed model --resume", cmd.resume)
    if cmd.eval_every_epoch:
        from parvec.evaluation import default_eval_paths

        uses += [Use("the evaluation file of --eval-every-epoch", p) for p in default_eval_paths().values()]
    return uses


def train_outputs(cmd: TrainCommand) -> list[Use]:
    """Every path ``parvec train`` writes, by flag (``-o`` of a ``.npy`` is three files).

    Example:
        >>> from types import SimpleNamespace
        >>> cmd = SimpleNamespace(output="v.txt", report=None, save_vocab=None, save_model="m", checkpoint_dir=None)
        >>> [u.describe() for u in train_outputs(cmd)]
        ['-o v.txt', '--save-model m']
    """
    uses = vector_outputs("-o", cmd.output) if cmd.output else []
    uses += [Use(flag, Path(path)) for flag, path in (("--report", cmd.report), ("--save-vocab", cmd.save_vocab))
             if path]
    if cmd.save_model:
        uses.append(Use("--save-model", Path(cmd.save_model), tree=True))
    if cmd.checkpoint_dir and not _continues_checkpoint(cmd):
        uses.append(Use("--checkpoint-dir", Path(cmd.checkpoint_dir) / "checkpoint", tree=True,
                        given=Path(cmd.checkpoint_dir)))
    return uses


def _continues_checkpoint(cmd: TrainCommand) -> bool:
    # `--resume D/checkpoint --checkpoint-dir D` keeps checkpointing a run where it was checkpointed: the
    # resumed model is read whole before training and each new checkpoint replaces it atomically with a
    # later state of the same run, so this one output may supersede that one input.
    if not (cmd.resume and cmd.checkpoint_dir):
        return False
    target, resumed = Path(cmd.checkpoint_dir) / "checkpoint", Path(cmd.resume)
    try:
        return target.exists() and os.path.samefile(target, resumed)
    except OSError:
        return False

