"""``parvec train --mode sharded``: what the command line adds for the column-sharded mode.

``parvec train`` drives :class:`parvec.distributed.pipeline.ShardedWord2Vec` through the same flow as a
:class:`parvec.Word2Vec` (:mod:`parvec.cli.train`: encode, describe, train through the run layer, write the
outputs, report) as a :class:`ShardedModel`, the :class:`parvec.cli.train_models.TrainModel` that turns the
command into that model (the sharded-only flags onto the :class:`parvec.Cluster`, skip-gram with negative sampling
and the loss always computed) and words its lines: the corpus's byte ranges, the model's split, its snapshots.

Example:
    parvec train corpus.txt -o vectors.bin --cluster local:4 --mode sharded --shards 2 --report run.json
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parvec.cli.command import TrainCommand
from parvec.cli.outputs import PendingFile, PendingStdout
from parvec.cli.resume import Checkpoint
from parvec.cli.train_models import CorpusSummary, Outputs, TrainedModel
from parvec.errors import ParvecError

if TYPE_CHECKING:
    from parvec.checkpoints import CheckpointCounts
    from parvec.cli.run_report import RunReport
    from parvec.distributed.cluster import Cluster
    from parvec.distributed.pipeline import ShardedWord2Vec
    from parvec.engine import TrainStats

__all__ = ["ShardedModel", "note_line", "print_note", "sharded_cluster", "snapshot_line"]


def sharded_cluster(cmd: TrainCommand, cluster: Cluster) -> Cluster:
    """``cluster`` (``--cluster``/``--mode sharded``: :meth:`parvec.cli.command.TrainCommand.make_cluster`) with the
    sharded-only flags (minibatches, negatives, the wire, fused calls, ``--threads`` per client,
    ``--shard-memory``, ``--snapshot-interval``); returns it.

    Example:
        >>> sharded_cluster(cmd, cmd.make_cluster()).mode  # doctest: +SKIP
        'sharded'
    """
    from parvec.distributed.pipeline import parse_bytes

    if cmd.minibatch_words is not None:
        cluster.minibatch_words = cmd.minibatch_words
    cluster.minibatch_formation = cmd.minibatch_formation or "interleaved"
    if cmd.negatives_per is not None:
        cluster.negatives_per = cmd.negatives_per
    if cmd.wire_floats is not None:
        cluster.wire_floats = cmd.wire_floats
    if cmd.shard_calls is not None:
        cluster.shard_calls = cmd.shard_calls
    if cmd.update_cap is not None:
        cluster.update_cap = cmd.update_cap
    if cluster.threads_per_actor is None and "threads" in cmd.given:
        cluster.threads_per_actor = cmd.threads  # left out: one thread per client (ShardedSettings.of)
    if cmd.shard_memory is not None:
        cluster.shard_memory_bytes = parse_bytes(cmd.shard_memory, "--shard-memory")
    if cmd.snapshot_interval is not None:
        if not cmd.snapshot_interval > 0:
            raise ParvecError(f"--snapshot-interval must be positive (seconds), got {cmd.snapshot_interval}")
        cluster.checkpoint_interval_s = float(cmd.snapshot_interval)
    return cluster


class ShardedModel(TrainedModel):
    """:class:`parvec.cli.train_models.TrainModel` over a :class:`parvec.distributed.pipeline.ShardedWord2Vec`:
    new from the command (skip-gram with negative sampling, word2vec.c's loop in the sharded kernels, the loss
    always computed), or a resumed checkpoint's with this run's cluster, threads and progress; the corpus counted
    and encoded on the cluster.  The model is a context manager (a Ray session, a work directory): open it around
    the flow (:func:`parvec.cli.train_models.open_model`)."""

    model: ShardedWord2Vec

    def __init__(self, cmd: TrainCommand, checkpoint: Checkpoint | None) -> None:
        from parvec.config import TrainConfig
        from parvec.corpus import ReadOptions
        from parvec.distributed.pipeline import ShardedWord2Vec

        super().__init__(cmd)
        self.resuming = checkpoint is not None
        cluster = cmd.make_cluster()
        assert cluster is not None
        if checkpoint is not None:
            assert isinstance(checkpoint.model, ShardedWord2Vec)
            self.model = checkpoint.model
            self.model.cluster, self.model.cache_dir = sharded_cluster(cmd, cluster), cmd.cache_dir
            self.model.config = dataclasses.replace(self.model.config, threads=cmd.threads,
                                                    progress=cmd.progress).validate()
            self.model.on_note = print_note
            return
        config = TrainConfig(
            algo="classic", dim=cmd.dim, window=cmd.window, negative=cmd.negative, sample=cmd.sample,
            alpha=cmd.alpha, min_alpha=cmd.min_alpha, epochs=cmd.epochs, threads=cmd.threads, seed=cmd.seed,
            max_sentence_length=cmd.max_sentence_length, compute_loss=True, progress=cmd.progress)
        options = ReadOptions(min_count=cmd.min_count, max_vocab_size=cmd.max_vocab_size,
                              max_final_vocab=cmd.max_final_vocab, max_sentence_length=cmd.max_sentence_length,
                              lowercase=cmd.lowercase, unicode_errors=cmd.unicode_errors)
        options.validate()
        self.model = ShardedWord2Vec(config, options, sharded_cluster(cmd, cluster), cmd.cache_dir)
        self.model.on_note = print_note

    def encode(self) -> CorpusSummary:
        """The corpus counted and encoded on the cluster; a resumed run's input checked against its checkpoint."""
        from parvec.cli.resume import describe_resume

        model = self.model
        self.corpus = c = model.encode(corpus_file=self.cmd.source)
        if self.resuming:
            for line in describe_resume(model.config, model.state, str(self.cmd.resume), c.tokens, units="units",
                                        epochs=self.cmd.resume_epochs):
                print(line, file=sys.stderr)
        return CorpusSummary(c.n_words, c.raw_words, c.tokens, c.sentences)

    def describe(self, corpus: CorpusSummary, read_seconds: float) -> None:
        """The corpus line (its byte ranges), the model line (its shards, clients, minibatches) and the memory
        line; a cluster whose memory does not fit is refused before a shard or client starts."""
        c, model = self.corpus, self.model
        units, files = len(c.inputs.units), len(c.inputs.files)
        print(f"{self.cmd.source_name}: {c.raw_words:,} words, vocabulary {c.n_words:,} (min-count "
              f"{model.read_options.min_count}), {c.tokens:,} in-vocabulary tokens in {c.sentences:,} "
              f"sentences, counted and encoded in {units} byte range{'s' if units != 1 else ''} of "
              f"{files} file{'s' if files != 1 else ''} [read in {read_seconds:.1f} s]", file=sys.stderr)
        print(self.model_line(), file=sys.stderr)
        self.memory = estimate = model.memory_estimate()
        if estimate.fits:
            print(estimate.line(), file=sys.stderr)
        estimate.check()  # the error gives the breakdown and what to change

    def model_line(self) -> str:
        """The model's size and how it is split: shards, clients, minibatches."""
        from parvec.cli.run_report import count_phrase, threads_phrase

        st = self.model.settings  # resolved once, when the run started
        model_bytes = 2 * self.corpus.n_words * self.model.config.dim * 4
        fused = ", fused calls (the shard trains each minibatch whole)" if st.shard_calls == "fused" else ""
        return (f"model: {model_bytes / 2**30:.2f} GiB in {count_phrase(st.shards, 'shard')} of "
                f"{model_bytes / st.shards / 2**30:.2f} GiB; {count_phrase(st.clients, 'client')} x "
                f"{threads_phrase(st.threads)}, minibatches of {st.minibatch_words} input words, "
                f"negatives per {st.negatives_per}{fused}")

    def save_vocab(self, out: PendingFile | PendingStdout) -> None:
        """The vocabulary's partitions as word2vec.c's ``-save-vocab`` file."""
        out.write(self.model.save_vocab)

    def train(self) -> TrainStats:
        """Train on the cluster, or finish the checkpoint's run."""
        self.keep_run()
        if self.resuming:
            return self.model.train(corpus=self.corpus, resume=True, epochs=self.cmd.resume_epochs)
        self.model.build_vocab(corpus=self.corpus)
        return self.model.train(corpus=self.corpus)

    def write(self, outputs: Outputs, vocab_size: int) -> list[str]:
        """The outputs (:meth:`TrainedModel.write`), and ``-o URL/``'s parts, each written and uploaded by a task of
        the cluster from the shards' columns, then the manifest (:meth:`parvec.distributed.sharded_export.
        ShardedVectors.save_partitioned`)."""
        from parvec.cli.run_report import count_phrase

        done = super().write(outputs, vocab_size)
        url = self.cmd.output_parts
        if url is not None:
            parts = self.model.wv.save_partitioned(url)
            done.insert(0, f"wrote {vocab_size:,} vectors of {self.model.config.dim} as {count_phrase(parts, 'part')} "
                           f"(written by the cluster's tasks) and the manifest to {url}")
        return done

    def summary(self, stats: TrainStats) -> list[str]:
        """The summary line and the snapshots' (and faults') line, or that nothing was left to train."""
        model = self.model
        if stats.epochs == 0:  # a resumed run whose epochs were all done: describe_resume said so
            return [f"nothing left to train: the checkpoint holds all {model.config.epochs} epochs; the outputs are "
                    "written from its snapshot"]
        return [self.trained_line(stats),
                snapshot_line(model.run_report, self.cmd.checkpoint_dir, model.checkpoint_report)]

    def report(self, corpus: CorpusSummary, stats: TrainStats, read_seconds: float,
               export_seconds: float) -> RunReport:
        """The report: the common keys with the sharded run's algorithm and client threads, its input's units,
        the steps on the cluster and the outputs' seconds."""
        c, model = self.corpus, self.model
        shown = {"algo": "sharded", "threads": model.settings.threads}
        extra = {"byte_ranges": len(c.inputs.units), "input_files": len(c.inputs.files),
                 "count_seconds": c.seconds.get("count"), "encode_seconds": c.seconds.get("encode"),
                 "export_seconds": export_seconds, "model_bytes": 2 * c.n_words * model.config.dim * 4,
                 "count_estimate": model.count_plan.estimate.to_dict() if model.count_plan is not None else None,
                 "count_check": c.count_check.to_dict() if c.count_check is not None else None}
        return self.common_report(corpus, stats, read_seconds, shown, extra)


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


def snapshot_line(report: dict[str, Any], checkpoint_dir: str | Path | None, ck_report: CheckpointCounts) -> str:
    """The console line of a sharded run's snapshots: how many, where, what they cost, the faults recovered.

    Example:
        >>> from parvec.checkpoints import CheckpointCounts
        >>> snapshot_line({"faults": [], "snapshots": 1, "snapshot_interval_s": 60.0, "snapshot_seconds": 0.1,
        ...                "snapshot_drain_seconds": 0.0, "words_retrained": 0}, None, CheckpointCounts())[:64]
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
        if ck_report.failed_checkpoints:
            kept += f", {count_phrase(ck_report.failed_checkpoints, 'checkpoint')} not written"
    return (f"snapshots: {count_phrase(report['snapshots'], 'consistent snapshot')} of the shards (every epoch's end "
            f"and every {report['snapshot_interval_s']:g} s) in {where}{kept}: {report['snapshot_seconds']:.1f} s "
            f"writing, {report['snapshot_drain_seconds']:.1f} s draining; {count_phrase(len(faults), 'fault')} "
            f"recovered, {report['words_retrained']:,} words retrained")

