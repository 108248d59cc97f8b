"""``parvec train INPUT --cluster SPEC --mode sharded``: the command line of the column-sharded pipeline.

The flags become a :class:`parvec.Cluster`, a :class:`parvec.config.TrainConfig` and
:class:`parvec.corpus.ReadOptions`; the distributed steps are :mod:`parvec.distributed.pipeline`'s (count and
encode byte ranges, train through a ``ShardedRun``, export row blocks), and this module prints their console
lines, writes the outputs that :func:`parvec.cli.train.run_train` reserved and the report
(:mod:`parvec.cli.run_report`).  The model is never in this process.

Example:
    parvec train corpus.txt -o vectors.bin --cluster local:4 --mode sharded --shards 2 --report run.json
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parvec.errors import ParvecError


def train_sharded(args: argparse.Namespace, cluster: Any, source: str, binary: bool, cache_dir: Any,
                  out: dict[str, Any], resumed: ShardedResume | None = None) -> list[str]:
    """``parvec train`` with ``--mode sharded`` on ``cluster`` (:func:`parvec.cli.train.cluster_from_args`, made
    after :func:`refuse_flags`): count, encode, train, export; returns the lines to print once the outputs are in
    place (``out`` holds the outputs :func:`parvec.cli.train.run_train` reserved).  With ``--checkpoint-dir`` every
    consistent snapshot of the shards is checkpointed there (:class:`parvec.distributed.pipeline.ShardCheckpoints`);
    ``resumed`` (:func:`prepare_resume`) continues such a checkpoint on the same input.

    Example:
        >>> refuse_flags(args)  # doctest: +SKIP
        >>> lines = train_sharded(args, cluster_from_args(args), "corpus.txt", False, None, out)  # doctest: +SKIP
    """
    from parvec.cli.run_report import write_report
    from parvec.config import default_threads
    from parvec.distributed.pipeline import (
        ShardCheckpoints,
        check_resume_input,
        clear_sharded_checkpoints,
        encode_input,
        export_model,
        resume_snapshot,
        sharded_run,
        train_run,
        work_directory,
    )
    from parvec.distributed.sharded import actor_budget, cluster_cpus, resolve, snapshot_position

    _sharded_flags(args, cluster)
    config = _config(args, resumed)
    settings = resolve(cluster, config)
    if cluster.is_local:  # far too many actors for local:N's CPUs: refused before Ray starts
        actor_budget(settings["shards"], settings["clients"], cluster.local_cpus or default_threads())
    options = _read_options(args)
    done: list[str] = []
    name = "standard input" if source == "-" else source
    ck_dir = Path(args.checkpoint_dir) if args.checkpoint_dir else None
    ck_report: dict[str, Any] = {}
    with work_directory(cache_dir) as work:
        with cluster.session() as ray:
            t0 = time.perf_counter()
            actor_budget(settings["shards"], settings["clients"], cluster_cpus(ray))  # too many: refused before reading
            ranges = resumed.saved.sharded["input"]["ranges"] if resumed is not None else None
            enc = encode_input(ray, source, options, work, cluster.timeout_s, n_ranges=ranges)
            read_seconds = time.perf_counter() - t0
            if resumed is not None:
                check_resume_input(resumed.saved, resumed.path, enc, source)
            memory = _describe(name, enc, read_seconds, cluster, config, settings, args.min_count)
            if args.save_vocab:
                done.append(_write_vocab(out["save_vocab"], enc, args.save_vocab))
            run_log = _run_log(args)
            snap = resume_snapshot(resumed.saved, resumed.path) if resumed is not None else None
            schedule = _schedule(config, enc, snap, resumed)
            writer = None
            if ck_dir is not None:
                if resumed is None:  # a new run's shards start their snapshots afresh: older checkpoints would
                    clear_sharded_checkpoints(ck_dir)  # name removed files
                run_id = resumed.saved.run_id if resumed is not None and resumed.saved.run_id else uuid.uuid4().hex
                writer = ShardCheckpoints(ck_dir, config, enc, options, cluster, run_id,
                                          on_error=args.on_checkpoint_error, report=ck_report, schedule=schedule)
            with sharded_run(ray, cluster, config, enc, ck_dir / "shards" if ck_dir is not None else None,
                             resume=snap, on_snapshot=writer) as run:
                if resumed is not None:
                    for line in _resume_lines(resumed, run):
                        print(line, file=sys.stderr)
                start = int(snap["epoch"]) if snap is not None else 0
                stats = None
                if start < schedule.epochs:
                    stats = train_run(run, run_log, start, snapshot_position(snap, schedule) if snap else None,
                                      schedule)
                report = run.report()  # the shards' peak memory while training, before the export's copies
                _print_trained(stats, report, schedule.epochs)
                _print_snapshots(report, ck_dir, ck_report)
                t_export = time.perf_counter()
                vec_npy, syn_npy = export_model(run, work, with_output_vectors=bool(args.save_model))
                report["shard_peak_memory_after_export_bytes"] = run.report()["shard_peak_memory_bytes"]
        if stats is None:
            from parvec.engine import TrainStats

            stats = TrainStats()
        done += _write_outputs(args, out, enc, config, options, schedule.epochs, vec_npy, syn_npy, binary)
        export_seconds = time.perf_counter() - t_export
        if args.report:
            full = _report(args, source, binary, cluster, config, options, enc, stats, read_seconds, memory,
                           report, run_log, export_seconds, resumed, ck_report)
            out["report"].write(lambda p: write_report(p, full))
            done.append(f"wrote the report to {args.report}")
    return done


@dataclass
class ShardedResume:
    """A sharded run's checkpoint to resume (:func:`prepare_resume`): what :func:`parvec.model_io.load` read of it
    (``arrays=False``: the matrices stay in the shards' files), where, and the ``--epochs`` given to change the
    run's (None: the checkpoint's)."""

    saved: Any
    path: Path
    epochs: int | None = None


def prepare_resume(args: argparse.Namespace) -> ShardedResume:
    """``--resume`` of a sharded run's checkpoint (:class:`parvec.distributed.pipeline.ShardCheckpoints`), before
    any output is reserved: read it (the latest in a checkpoint directory; a damaged one names the previous intact
    one), refuse flags that contradict it (as ``parvec train --resume`` does for the other modes:
    :mod:`parvec.cli.resume`), and take its training flags, read options, cluster (``--cluster``, ``--mode
    sharded``, ``--shards``, clients, minibatch settings) and checkpoint directory for those left out, saying so.

    Example:
        >>> resumed = prepare_resume(args)  # doctest: +SKIP
        >>> resumed.path.name  # doctest: +SKIP
        'checkpoint'
    """
    from types import SimpleNamespace

    from parvec import model_io
    from parvec.checkpoints import load_for_resume
    from parvec.cli.flags import explicit_flags
    from parvec.cli.resume import SAVED_FLAGS, refuse_saved_flags, restore_cluster
    from parvec.corpus import ReadOptions

    saved, path, note = load_for_resume(args.resume, lambda p, _mmap: model_io.load(p, arrays=False))
    if saved.sharded is None:
        raise ParvecError(f"{path}: not a sharded run's checkpoint")
    args.resume = str(path)
    if note:
        print(note, file=sys.stderr)
    given = explicit_flags(args)
    view = SimpleNamespace(config=saved.config, read_options=ReadOptions(**(saved.read_options or {})))
    more, lines = restore_cluster(args, saved.cluster, saved.cluster_recorded, given)
    refuse_saved_flags(args, view, path, given, more)
    for dest, (_flag, value) in SAVED_FLAGS.items():
        if dest not in given:
            setattr(args, dest, value(view))
    for line in lines:
        print(line, file=sys.stderr)
    epochs = None
    begun = saved.epochs_trained + (1 if saved.position is not None else 0)
    if "epochs" in given and args.epochs != saved.config.epochs:
        if args.epochs < max(begun, 1):
            raise ParvecError(f"cannot resume {path} with --epochs {args.epochs}: it has already "
                              f"{'begun' if saved.position is not None else 'done'} {begun} of its "
                              f"{saved.config.epochs} epochs")
        print(f"--epochs {args.epochs} (the checkpoint planned {saved.config.epochs}): the learning rate now decays "
              f"from its value at the checkpoint to the final rate at the end of epoch {args.epochs}, so the vectors "
              f"differ from an uninterrupted {saved.config.epochs}-epoch run", file=sys.stderr)
        epochs = args.epochs
    else:
        args.epochs = saved.config.epochs
    per = (saved.cluster or {}).get("threads_per_actor") or 1
    if "threads" in given and args.threads != per:
        print(f"--threads {args.threads} per client overrides the checkpoint's {per}", file=sys.stderr)
    elif "threads" not in given:
        print(f"threads: {per} per client, as the checkpoint was trained (--threads overrides)", file=sys.stderr)
    if not args.checkpoint_dir:
        args.checkpoint_dir = str(path.parent)
        print(f"checkpoints continue in {path.parent} (--checkpoint-dir overrides)", file=sys.stderr)
    return ShardedResume(saved, path, epochs)


def _schedule(config: Any, enc: dict[str, Any], snap: dict[str, Any] | None, resumed: ShardedResume | None) -> Any:
    # The learning rate: linear over the run's epochs of this corpus; a resumed run's as the checkpoint had it
    # (its anchor), re-anchored at the checkpoint when --epochs changed the run's length.
    from parvec.schedule import Schedule

    words = int(enc["tokens"])  # every unit's words: one epoch (ShardedRun.words_per_epoch)
    if resumed is None:
        return Schedule.of(config, words)
    schedule = Schedule.of(resumed.saved.config, words, anchor=resumed.saved.schedule_anchor)
    if resumed.epochs is not None:
        assert snap is not None
        at = schedule.position(int(snap["epoch"]), int(snap["words_done"]))
        schedule = schedule.resumed_with(resumed.epochs, at)
    return schedule


def _resume_lines(resumed: ShardedResume, run: Any) -> list[str]:
    # Where the run resumes and what is lost (parvec.cli.resume.describe_resume's lines, in units).
    from parvec.cli.resume import describe_resume
    from parvec.run import RunState

    saved = resumed.saved
    state = RunState.from_saved(saved)
    state.saved_checkpoint_every = None
    lines = describe_resume(saved.config, state, str(resumed.path), run.words_per_epoch, units="units")
    shards = len(saved.sharded["files"])
    lines.append(f"every shard restored its columns from the checkpoint's snapshot {saved.sharded['snapshot']['id']} "
                 f"({shards} shard{'s' if shards != 1 else ''}, CRC-32 checked)")
    return lines


def refuse_flags(args: argparse.Namespace) -> None:
    """Refuse what needs the model in one process (``--eval-every-epoch``), before anything starts (what the
    sharded mode cannot train, CBOW, a GPU, mid-epoch checkpoints, :mod:`parvec.capabilities` refuses first).

    Example:
        >>> refuse_flags(argparse.Namespace(resume=None, eval_every_epoch=True))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        parvec.errors.ParvecError: --eval-every-epoch is not available with --mode sharded (the model is never ...
    """
    if args.eval_every_epoch:
        from parvec.capabilities import pipeline_refusal

        raise pipeline_refusal("--eval-every-epoch")


def _sharded_flags(args: argparse.Namespace, cluster: Any) -> None:
    # The sharded-only flags onto the Cluster of --cluster/--shards/--clients (--threads: threads per client actor).
    from parvec.distributed.pipeline import parse_bytes

    if getattr(args, "minibatch_words", None) is not None:
        cluster.minibatch_words = args.minibatch_words
    cluster.minibatch_formation = getattr(args, "minibatch_formation", "interleaved")
    if getattr(args, "negatives_per", None) is not None:
        cluster.negatives_per = args.negatives_per
    if getattr(args, "wire_floats", None) is not None:
        cluster.wire_floats = args.wire_floats
    if getattr(args, "shard_calls", None) is not None:
        cluster.shard_calls = args.shard_calls
    from parvec.cli.flags import explicit_flags

    if cluster.threads_per_actor is None and "threads" in explicit_flags(args):
        cluster.threads_per_actor = args.threads  # left out: one thread per client (sharded.resolve)
    if getattr(args, "shard_memory", None) is not None:
        cluster.shard_memory_bytes = parse_bytes(args.shard_memory, "--shard-memory")


def _config(args: argparse.Namespace, resumed: ShardedResume | None = None) -> Any:
    # Skip-gram with negative sampling, word2vec.c's loop (the sharded kernels), the loss always computed; a
    # resumed run's is its checkpoint's (threads and the progress bar as given now).
    import dataclasses

    from parvec.config import TrainConfig

    if resumed is not None:
        return dataclasses.replace(resumed.saved.config, threads=args.threads, progress=args.progress).validate()
    return TrainConfig(
        algo="classic", dim=args.dim, window=args.window, negative=args.negative, sample=args.sample,
        alpha=args.alpha, min_alpha=args.min_alpha, epochs=args.epochs, threads=args.threads, seed=args.seed,
        max_sentence_length=args.max_sentence_length, compute_loss=True, progress=args.progress,
    ).validate()


def _read_options(args: argparse.Namespace) -> Any:
    from parvec.corpus import ReadOptions

    options = ReadOptions(min_count=args.min_count, max_vocab_size=args.max_vocab_size,
                          max_final_vocab=args.max_final_vocab, max_sentence_length=args.max_sentence_length,
                          lowercase=args.lowercase, unicode_errors=args.unicode_errors)
    options.validate()
    return options


def _describe(name: str, enc: dict[str, Any], read_seconds: float, cluster: Any, config: Any,
              settings: dict[str, Any], min_count: int) -> Any:
    # The corpus, model and memory lines; the memory check of every process here, before the actors start
    # (its error gives the breakdown and what to change). Returns the estimate.
    from parvec.cli.run_report import count_phrase, threads_phrase
    from parvec.distributed.memory import estimate_cluster

    vocab = enc["vocab"]
    model_bytes = _model_bytes(enc, config)
    print(f"{name}: {enc['raw_words']:,} words, vocabulary {len(vocab):,} (min-count {min_count}), "
          f"{enc['tokens']:,} in-vocabulary tokens in {enc['sentences']:,} sentences, counted and encoded "
          f"in {enc['ranges']} byte ranges [read in {read_seconds:.1f} s]", file=sys.stderr)
    print(f"model: {model_bytes / 2**30:.2f} GiB in {count_phrase(settings['shards'], 'shard')} of "
          f"{model_bytes / settings['shards'] / 2**30:.2f} GiB; {count_phrase(settings['clients'], 'client')} x "
          f"{threads_phrase(settings['threads'])}, minibatches of {settings['minibatch_words']} input words, negatives "
          f"per {settings['negatives_per']}"
          f"{', fused calls (the shard trains each minibatch whole)' if settings['shard_calls'] == 'fused' else ''}",
          file=sys.stderr)
    memory = estimate_cluster(cluster, config, len(vocab), enc["tokens"], enc["sentences"], pipeline=True,
                              ranges=enc["ranges"])
    if memory.fits:
        print(memory.line(), file=sys.stderr)
    memory.check()
    return memory


def _model_bytes(enc: dict[str, Any], config: Any) -> int:
    return 2 * len(enc["vocab"]) * config.dim * 4  # input and output vectors, float32


def _write_vocab(pending: Any, enc: dict[str, Any], path: str) -> str:
    from parvec.vocab import write_vocab_file

    vocab = enc["vocab"]
    pending.write(lambda p: write_vocab_file(p, vocab, enc["sentences"]))
    return f"wrote the vocabulary ({len(vocab):,} words) to {path}"


def _run_log(args: argparse.Namespace) -> Any:
    # --report's time series (None without --report).
    if not args.report:
        return None
    from parvec.runlog import RunLog

    if not args.report_interval > 0:
        raise ParvecError(f"--report-interval must be positive, got {args.report_interval}")
    return RunLog(interval_s=args.report_interval)


def _print_trained(stats: Any, report: dict[str, Any], epochs: int) -> None:
    from parvec.cli.run_report import cluster_summary, count_phrase, cpu_note

    if stats is None:  # a resumed checkpoint of the run's last epoch's end
        print(f"nothing left to train: the checkpoint holds all {epochs} epochs; the outputs are written from its "
              "snapshot", file=sys.stderr)
        return
    losses = ", ".join(f"{x:.4f}" for x in stats.loss_per_epoch)
    print(f"trained {stats.words:,} words ({count_phrase(stats.epochs, 'epoch')}, {cluster_summary(report)}) in "
          f"{stats.seconds:.1f} s: "
          f"{stats.words_per_sec / 1e6:.3f}M words/s{cpu_note(stats)}; loss per epoch: {losses}", file=sys.stderr)


def _print_snapshots(report: dict[str, Any], checkpoint_dir: Path | None, ck_report: dict[str, Any]) -> None:
    from parvec.cli.run_report import count_phrase

    where = checkpoint_dir / "shards" if checkpoint_dir is not None else "a temporary directory"
    faults = [f for f in report["faults"] if f["phase"] != "start"]
    kept = ""
    if checkpoint_dir is not None:
        from parvec.checkpoints import latest_checkpoint

        latest = latest_checkpoint(checkpoint_dir)
        kept = (f", the newest checkpointed as {latest} (--resume {checkpoint_dir} goes on from it)" if latest
                else ", none checkpointed")
        if ck_report.get("failed_checkpoints"):
            kept += f", {count_phrase(ck_report['failed_checkpoints'], 'checkpoint')} not written"
    print(f"snapshots: {count_phrase(report['snapshots'], 'consistent snapshot')} of the shards (every epoch's end "
          f"and every {report['snapshot_interval_s']:g} s) in {where}{kept}: {report['snapshot_seconds']:.1f} s "
          f"writing, {report['snapshot_drain_seconds']:.1f} s draining; {count_phrase(len(faults), 'fault')} "
          f"recovered, {report['words_retrained']:,} words retrained", file=sys.stderr)


def _write_outputs(args: argparse.Namespace, out: dict[str, Any], enc: dict[str, Any], config: Any, options: Any,
                   epochs: int, vec_npy: Path, syn_npy: Path | None, binary: bool) -> list[str]:
    # -o from the exported vectors' memory map; --save-model moves the exported matrices into its directory.
    from parvec.cli.outputs import output_name
    from parvec.distributed.pipeline import write_model_dir, write_vectors

    vocab, done = enc["vocab"], []
    if args.output:
        out["output"].write(lambda p: write_vectors(vec_npy, p, vocab, binary, args.output.endswith(".npy")))
        done.append(f"wrote {len(vocab):,} vectors of {config.dim} to {output_name(args.output)}")
    if args.save_model:
        out["save_model"].write(lambda d: write_model_dir(d, vec_npy, syn_npy, vocab, config, options,
                                                          epochs, enc["tokens"], enc["raw_words"]))
        done.append(f"saved the model to {args.save_model}")
    return done


def _report(args: argparse.Namespace, source: str, binary: bool, cluster: Any, config: Any, options: Any,
            enc: dict[str, Any], stats: Any, read_seconds: float, memory: Any, sharded: dict[str, Any],
            run_log: Any, export_seconds: float, resumed: ShardedResume | None = None,
            ck_report: dict[str, Any] | None = None) -> dict[str, Any]:
    # The common keys (parvec.cli.run_report), the pipeline's own, then the sharded run's figures and time series.
    from parvec.cli.run_report import (
        CorpusFigures,
        absolute,
        checkpoints,
        cluster_block,
        resumed_from,
        run_report,
        word_parameters,
    )

    return run_report(
        "words", word_parameters(config, options, source, algo="sharded"), stats, read_seconds=read_seconds,
        device="cpu", output=absolute(args.output), output_binary=binary,
        cluster=cluster_block(cluster.to_dict(), sharded),
        checkpoints=checkpoints(ck_report or {}, None, args.checkpoint_dir),
        resumed_from=(resumed_from(str(resumed.path), resumed.saved.saved_at, resumed.saved.position)
                      if resumed is not None else None),
        corpus=CorpusFigures(len(enc["vocab"]), enc["raw_words"], enc["tokens"], enc["sentences"]),
        extra={"cache_used": None, "byte_ranges": enc["ranges"], "export_seconds": export_seconds,
               "model_bytes": _model_bytes(enc, config), "memory_estimate": memory.to_dict()},
        driver=sharded, run_log=run_log)
