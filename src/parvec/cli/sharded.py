"""``parvec train --mode sharded``: what the command line adds for the column-sharded mode.

``parvec train`` drives :class:`parvec.distributed.pipeline.ShardedWord2Vec` through the same flow as a
:class:`parvec.Word2Vec` (:mod:`parvec.cli.train`: encode, describe, train through the run layer, write the
outputs, report); this module only turns the flags into that model (the sharded-only flags onto the
:class:`parvec.Cluster`, skip-gram with negative sampling and the loss always computed) and words the console line
of its snapshots.

Example:
    parvec train corpus.txt -o vectors.bin --cluster local:4 --mode sharded --shards 2 --report run.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["new_model", "note_line", "print_note", "sharded_cluster", "snapshot_line"]


def sharded_cluster(args: argparse.Namespace, cluster: Any) -> Any:
    """``cluster`` (``--cluster``/``--mode sharded``: :func:`parvec.cli.train.cluster_from_args`) with the
    sharded-only flags (minibatches, negatives, the wire, fused calls, ``--threads`` per client,
    ``--shard-memory``, ``--snapshot-interval``); returns it.

    Example:
        >>> sharded_cluster(args, cluster_from_args(args)).mode  # doctest: +SKIP
        'sharded'
    """
    from parvec.cli.flags import explicit_flags
    from parvec.distributed.pipeline import parse_bytes

    if getattr(args, "minibatch_words", None) is not None:
        cluster.minibatch_words = args.minibatch_words
    cluster.minibatch_formation = getattr(args, "minibatch_formation", None) or "interleaved"
    for flag in ("negatives_per", "wire_floats", "shard_calls", "update_cap"):
        if getattr(args, flag, None) is not None:
            setattr(cluster, flag, getattr(args, flag))
    if cluster.threads_per_actor is None and "threads" in explicit_flags(args):
        cluster.threads_per_actor = args.threads  # left out: one thread per client (ShardedSettings.of)
    if getattr(args, "shard_memory", None) is not None:
        cluster.shard_memory_bytes = parse_bytes(args.shard_memory, "--shard-memory")
    if getattr(args, "snapshot_interval", None) is not None:
        if not args.snapshot_interval > 0:
            from parvec.errors import ParvecError

            raise ParvecError(f"--snapshot-interval must be positive (seconds), got {args.snapshot_interval}")
        cluster.checkpoint_interval_s = float(args.snapshot_interval)
    return cluster


def new_model(args: argparse.Namespace, cluster: Any, cache_dir: Any) -> Any:
    """A new :class:`parvec.distributed.pipeline.ShardedWord2Vec` from the flags (skip-gram with negative
    sampling, word2vec.c's loop in the sharded kernels, the loss always computed).

    Example:
        >>> with new_model(args, cluster_from_args(args), None) as model:  # doctest: +SKIP
        ...     corpus = model.encode("corpus.txt")
    """
    from parvec.config import TrainConfig
    from parvec.corpus import ReadOptions
    from parvec.distributed.pipeline import ShardedWord2Vec

    config = TrainConfig(
        algo="classic", dim=args.dim, window=args.window, negative=args.negative, sample=args.sample,
        alpha=args.alpha, min_alpha=args.min_alpha, epochs=args.epochs, threads=args.threads, seed=args.seed,
        max_sentence_length=args.max_sentence_length, compute_loss=True, progress=args.progress)
    options = ReadOptions(min_count=args.min_count, max_vocab_size=args.max_vocab_size,
                          max_final_vocab=args.max_final_vocab, max_sentence_length=args.max_sentence_length,
                          lowercase=args.lowercase, unicode_errors=args.unicode_errors)
    options.validate()
    model = ShardedWord2Vec(config, options, sharded_cluster(args, cluster), cache_dir)
    model.on_note = print_note
    return model


def note_line(note: Any) -> str:
    """The console line of what a sharded run tells as it starts (``ShardedWord2Vec.on_note``): when its shards
    snapshot (a :class:`parvec.distributed.snapshot_records.SnapshotPlan`, and the flag that sets it), or that
    they restored a checkpoint's snapshot (:class:`~parvec.distributed.snapshot_records.CheckpointRestored`).

    Example:
        >>> from parvec.distributed.snapshot_records import CheckpointRestored, SnapshotPlan
        >>> note_line(SnapshotPlan(60.0, 1 << 20, 250e6))[:72]
        "parvec: a consistent snapshot of the shards at every epoch's end and eve"
        >>> note_line(CheckpointRestored(3, 1))
        "every shard restored its columns from the checkpoint's snapshot 3 (1 shard, CRC-32 checked)"
    """
    from parvec.distributed.snapshot_records import CheckpointRestored
    from parvec.resources import human_bytes

    if isinstance(note, CheckpointRestored):
        n = note.shards
        return (f"every shard restored its columns from the checkpoint's snapshot {note.snapshot_id} ({n} "
                f"shard{'s' if n != 1 else ''}, CRC-32 checked)")
    return (f"parvec: a consistent snapshot of the shards at every epoch's end and every {note.interval_s:g} s (each "
            f"shard writes {human_bytes(note.shard_bytes)}, about {note.write_seconds:.1f} s at "
            f"{note.bytes_per_s / 1e6:.0f} MB/s; --snapshot-interval sets it)")


def print_note(note: Any) -> None:
    """Print :func:`note_line` on standard error (a sharded model's ``on_note``).

    Example:
        >>> model.on_note = print_note  # doctest: +SKIP
    """
    print(note_line(note), file=sys.stderr, flush=True)


def snapshot_line(report: dict[str, Any], checkpoint_dir: str | Path | None, ck_report: dict[str, Any]) -> str:
    """The console line of a sharded run's snapshots: how many, where, what they cost, the faults recovered.

    Example:
        >>> snapshot_line({"faults": [], "snapshots": 1, "snapshot_interval_s": 60.0, "snapshot_seconds": 0.1,
        ...                "snapshot_drain_seconds": 0.0, "words_retrained": 0}, None, {})[:64]
        "snapshots: 1 consistent snapshot of the shards (every epoch's end"
    """
    from parvec.cli.run_report import count_phrase

    where = Path(checkpoint_dir) / "shards" if checkpoint_dir is not None else "a temporary directory"
    faults = [f for f in report["faults"] if f["phase"] != "start"]
    kept = ""
    if checkpoint_dir is not None:
        from parvec.checkpoints import latest_checkpoint

        latest = latest_checkpoint(Path(checkpoint_dir))
        kept = (f", the newest checkpointed as {latest} (--resume {checkpoint_dir} goes on from it)" if latest
                else ", none checkpointed")
        if ck_report.get("failed_checkpoints"):
            kept += f", {count_phrase(ck_report['failed_checkpoints'], 'checkpoint')} not written"
    return (f"snapshots: {count_phrase(report['snapshots'], 'consistent snapshot')} of the shards (every epoch's end "
            f"and every {report['snapshot_interval_s']:g} s) in {where}{kept}: {report['snapshot_seconds']:.1f} s "
            f"writing, {report['snapshot_drain_seconds']:.1f} s draining; {count_phrase(len(faults), 'fault')} "
            f"recovered, {report['words_retrained']:,} words retrained")

