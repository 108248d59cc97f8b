"""What ``parvec train`` trains, behind one protocol: :class:`TrainModel` (encode the corpus into a
:class:`CorpusSummary`, say it and check the memory, write the vocabulary, train through the run layer, say how
it went, write the outputs, the report), implemented by :class:`WordModel` over a :class:`parvec.Word2Vec` (one
process, a GPU, replicas on a cluster) and by :class:`parvec.cli.sharded.ShardedModel` over a
:class:`parvec.distributed.pipeline.ShardedWord2Vec` (``--mode sharded``); :func:`parvec.cli.train.open_model`
picks one for a :class:`parvec.cli.command.TrainCommand`.

Example:
    >>> with open_model(cmd, checkpoint) as model:  # doctest: +SKIP
    ...     corpus = model.encode()
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from parvec.cli.command import TrainCommand
from parvec.cli.outputs import PendingDirectory, PendingFile, PendingStdout
from parvec.cli.paths import output_name
from parvec.cli.resume import Checkpoint, describe_resume
from parvec.cli.train_text import cache_line, how_ran, save_vectors, word_classes, write_classes
from parvec.resources import human_bytes

if TYPE_CHECKING:
    from parvec.cli.run_report import ResumedFrom, RunReport
    from parvec.corpus import EncodedCorpus
    from parvec.distributed.cluster import Cluster
    from parvec.distributed.memory import MemoryEstimate
    from parvec.engine import TrainStats
    from parvec.vocab import Pruning
    from parvec.word2vec import Word2Vec

__all__ = ["CorpusSummary", "Outputs", "TrainModel", "TrainedModel", "WordModel"]


@dataclass(frozen=True)
class CorpusSummary:
    """An encoded corpus as ``parvec train`` says and reports it: its vocabulary size, raw words read,
    in-vocabulary tokens and sentences, the vocabulary's pruning while counting and whether the encoded-corpus
    cache served it (None: no cache involved, as for a corpus encoded on a cluster).

    Example:
        >>> CorpusSummary(vocab_size=30, raw_words=1440, tokens=1440, sentences=120).vocab_size
        30
    """

    vocab_size: int
    raw_words: int
    tokens: int
    sentences: int
    pruning: Pruning | None = None
    cache_used: bool | None = None


@dataclass(frozen=True)
class Outputs:
    """The outputs of ``parvec train``, each reserved in its directory before the corpus is read (None: not
    asked for): ``-o``, ``--report``, ``--save-vocab``, ``--save-model``."""

    output: PendingFile | PendingStdout | None
    report: PendingFile | PendingStdout | None
    save_vocab: PendingFile | PendingStdout | None
    save_model: PendingDirectory | None


class TrainModel(Protocol):
    """The steps of ``parvec train``'s one flow (:func:`parvec.cli.train.train_flow`), whatever trains."""

    def encode(self) -> CorpusSummary:
        """Read and encode the command's corpus (a resumed run's lines say where it resumes)."""

    def describe(self, corpus: CorpusSummary, read_seconds: float) -> None:
        """Print the corpus, model or memory, and cache lines; refuse a cluster whose memory does not fit."""

    def save_vocab(self, out: PendingFile | PendingStdout) -> None:
        """Write ``--save-vocab`` into its reserved temporary."""

    def train(self) -> TrainStats:
        """Train (or finish the resumed run) through the run layer."""

    def summary(self, stats: TrainStats) -> list[str]:
        """The lines that say how the training went."""

    def write(self, outputs: Outputs, vocab_size: int) -> list[str]:
        """Write ``-o`` and ``--save-model``; returns the lines to print once they are in place."""

    def report(self, corpus: CorpusSummary, stats: TrainStats, read_seconds: float,
               export_seconds: float) -> RunReport:
        """The ``--report`` of the run (:func:`parvec.cli.run_report.run_report`)."""


class TrainedModel:
    """What every :class:`TrainModel` shares over its model (``self.model``: its ``config``, ``wv``, run state and
    driver figures): the run's options, the summary line, the outputs and the report's common part."""

    model: Any
    memory: MemoryEstimate | None = None

    def __init__(self, cmd: TrainCommand) -> None:
        self.cmd = cmd
        self.resumed_from: ResumedFrom | None = None

    def keep_run(self) -> None:
        """How the run is kept (:mod:`parvec.run`: checkpoints, the report's run log, per-epoch scores, checkpoint
        lines), set on the model before it trains; a resumed run's report names where its checkpoint was, read
        before training moves it."""
        from parvec.cli.run_options import command_options

        cmd = self.cmd
        self.model.run_options = command_options(
            checkpoint_dir=cmd.checkpoint_dir, checkpoint_every=cmd.checkpoint_every,
            on_checkpoint_error=cmd.on_checkpoint_error, report=bool(cmd.report), report_interval=cmd.report_interval,
            eval_every_epoch=bool(cmd.eval_every_epoch), checkpoint_lines=cmd.checkpoint_every is not None)
        if cmd.resume:
            from parvec.cli.run_report import resumed_from

            self.resumed_from = resumed_from(cmd.resume, self.model.saved_at, self.model.position)

    def trained_line(self, stats: TrainStats) -> str:
        """The summary line of a run that trained: words, epochs, how and where, seconds, speed, losses."""
        from parvec.cli.run_report import count_phrase, cpu_note

        model = self.model
        losses = ", ".join(f"{x:.4f}" for x in stats.loss_per_epoch)
        ck = model.checkpoint_report
        n_ck = ck.written
        ck_note = f" (of which {count_phrase(n_ck, 'checkpoint')} {ck.checkpoint_seconds:.1f} s)" if n_ck else ""
        return (f"trained {stats.words:,} words ({count_phrase(stats.epochs, 'epoch')}, "
                f"{how_ran(model.config, model.run_report)}) "
                f"in {stats.seconds:.1f} s{ck_note}: {stats.words_per_sec / 1e6:.3f}M words/s{cpu_note(stats)}; "
                f"loss per epoch: {losses}")

    def write(self, outputs: Outputs, vocab_size: int) -> list[str]:
        """``-o`` (the vectors, or word2vec.c's ``-classes`` lines) and ``--save-model`` into their temporaries."""
        cmd, model, done = self.cmd, self.model, []
        if outputs.output is not None and cmd.classes:
            classes = word_classes(model.wv, cmd.classes, seed=cmd.seed)
            outputs.output.write(lambda path: write_classes(path, model.wv.index_to_key, classes))
            done.append(f"wrote the classes of {vocab_size:,} words ({cmd.classes} k-means classes) to "
                        f"{output_name(cmd.output)}")
        elif outputs.output is not None:
            outputs.output.write(lambda path: save_vectors(model.wv, str(path), cmd.binary))
            done.append(f"wrote {vocab_size:,} vectors of {model.config.dim} to {output_name(cmd.output)}")
        if outputs.save_model is not None:
            outputs.save_model.write(model.save)
            done.append(f"saved the model to {cmd.save_model}")
        return done

    def common_report(self, corpus: CorpusSummary, stats: TrainStats, read_seconds: float,
                      shown: dict[str, Any], extra: dict[str, Any]) -> RunReport:
        """The report (:func:`parvec.cli.run_report.run_report`) with the parameters ``shown`` as run and the
        model's ``extra`` keys."""
        from parvec.cli.run_report import (
            CorpusFigures,
            absolute,
            checkpoints,
            cluster_block,
            run_report,
            word_parameters,
        )

        cmd, model = self.cmd, self.model
        pruning = corpus.pruning.to_json() if corpus.pruning is not None else None
        extra = {"vocab_pruning": pruning, "model": "skip-gram" if model.config.sg else "cbow",
                 "memory_estimate": self.memory.to_dict() if self.memory is not None else None,
                 "cache_used": corpus.cache_used} | extra
        figures = CorpusFigures(corpus.vocab_size, corpus.raw_words, corpus.tokens, corpus.sentences)
        return run_report(
            "words", word_parameters(model.config, model.read_options, cmd.source, **shown),
            stats, read_seconds=read_seconds, device=model.config.device, output=absolute(cmd.output),
            output_binary=cmd.binary,
            cluster=cluster_block(model.cluster.to_dict(), model.run_report) if model.cluster is not None else None,
            checkpoints=checkpoints(model.checkpoint_report, cmd.checkpoint_every, cmd.checkpoint_dir),
            resumed_from=self.resumed_from, corpus=figures, extra=extra, driver=model.driver_report,
            run_log=model.run_log)


class WordModel(TrainedModel):
    """:class:`TrainModel` over a :class:`parvec.Word2Vec`: new from the command, or a resumed checkpoint's with
    this run's settings; the corpus encoded in this process (the cache serves it)."""

    model: Word2Vec

    def __init__(self, cmd: TrainCommand, checkpoint: Checkpoint | None) -> None:
        from parvec.word2vec import Word2Vec

        super().__init__(cmd)
        self.checkpoint = checkpoint
        if checkpoint is not None:
            assert isinstance(checkpoint.model, Word2Vec)
            self.model = checkpoint.model
            self.model.config.progress = cmd.progress
            self.model.cache_dir = cmd.cache_dir
            self.model.cluster = _resumed_cluster(cmd, self.model)
            return
        self.model = Word2Vec(
            vector_size=cmd.dim, window=cmd.window, negative=cmd.negative, sample=cmd.sample,
            min_count=cmd.min_count, max_vocab_size=cmd.max_vocab_size, max_final_vocab=cmd.max_final_vocab,
            epochs=cmd.epochs, alpha=cmd.alpha, min_alpha=cmd.min_alpha, workers=cmd.threads,
            seed=cmd.seed, algo=cmd.algo, max_sentence_length=cmd.max_sentence_length,
            batch_size=cmd.batch_size, par_batch=cmd.par_batch, compute_loss=cmd.compute_loss,
            progress=cmd.progress, cache_dir=cmd.cache_dir, lowercase=cmd.lowercase,
            unicode_errors=cmd.unicode_errors, device=cmd.device, cluster=cmd.make_cluster(), hs=cmd.hs,
            sg=0 if cmd.cbow else 1, cbow_mean=cmd.cbow_mean,
        )
        # --threads left out (all cores, its default): a cluster's replicas fit them to its CPUs without a note.
        self.model.workers_given = "threads" in cmd.given

    def encode(self) -> CorpusSummary:
        """The corpus counted and encoded here; a resumed run's counted afresh (``train(resume=True)`` refuses a
        corpus whose vocabulary or token count differs from the checkpoint's), a ``-read-vocab`` run's against
        that vocabulary."""
        cmd, model = self.cmd, self.model
        if self.checkpoint is not None:
            self.corpus = model.encode(corpus_file=cmd.corpus_file())
            for line in describe_resume(model.config, model.state, str(cmd.resume), self.corpus.n_tokens,
                                        epochs=cmd.resume_epochs):
                print(line, file=sys.stderr)
            return self._summary()
        read_vocab = None
        if cmd.read_vocab:
            from parvec.vocab import read_vocab_file

            read_vocab = read_vocab_file(cmd.read_vocab, min_count=cmd.min_count, max_final_vocab=cmd.max_final_vocab)
        self.corpus = model.encode(corpus_file=cmd.corpus_file(), vocab=read_vocab)
        if read_vocab is not None:
            unseen = int(np.count_nonzero(np.bincount(self.corpus.tokens, minlength=len(read_vocab)) == 0))
            print(f"vocabulary read from {cmd.read_vocab}: {len(read_vocab):,} words reach min-count "
                  f"{cmd.min_count}; corpus words not in it are dropped"
                  + (f"; {unseen:,} of its words never occur in the corpus and keep their random initial "
                     "vectors (as word2vec.c)" if unseen else ""), file=sys.stderr)
        return self._summary()

    def _summary(self) -> CorpusSummary:
        c = self.corpus
        return CorpusSummary(len(c.vocab), c.raw_words, c.n_tokens, c.n_sentences, c.pruning, c.cache_used)

    def describe(self, corpus: CorpusSummary, read_seconds: float) -> None:
        """The corpus line, the memory line (a cluster run: every process it starts here, refused before Ray
        starts if over) and the cache line."""
        from parvec.resources import available_memory
        from parvec.trainer import estimate_memory

        cmd, model, encoded = self.cmd, self.model, self.corpus
        dim, n = model.config.dim, corpus.vocab_size
        print(f"{cmd.source_name}: {encoded.raw_words:,} words, vocabulary {n:,} (min-count "
              f"{model.read_options.min_count}), {encoded.n_tokens:,} in-vocabulary tokens in "
              f"{encoded.n_sentences:,} sentences [read in {read_seconds:.1f} s]", file=sys.stderr)
        if encoded.pruning and encoded.cache_used:  # read back from the cache: say again what parvec.corpus logged
            from parvec.corpus import pruning_note

            print(f"note: {pruning_note(encoded.pruning)}", file=sys.stderr)
        if model.cluster is not None:
            self.memory = _cluster_memory(model.cluster, model, encoded)
        else:
            need = estimate_memory(n, dim, encoded.n_tokens, encoded.n_sentences)
            avail = available_memory()
            mapped = " (memory-mapped from disk)" if isinstance(encoded.tokens, np.memmap) else ""
            print(f"memory: vectors {human_bytes(2 * n * dim * 4)} + encoded corpus "
                  f"{human_bytes(need - 2 * n * dim * 4)}{mapped} = {human_bytes(need)}"
                  + (f" of {human_bytes(avail)} available" if avail else ""), file=sys.stderr)
        print(cache_line(encoded.cache_used, cmd), file=sys.stderr)

    def save_vocab(self, out: PendingFile | PendingStdout) -> None:
        """word2vec.c's ``-save-vocab`` file of the corpus's vocabulary."""
        from parvec.vocab import write_vocab_file

        vocab, sentences = self.corpus.vocab, self.corpus.n_sentences
        out.write(lambda path: write_vocab_file(path, vocab, sentences))

    def train(self) -> TrainStats:
        """A new model's vocabulary built and trained, or the checkpoint's run finished."""
        self.keep_run()
        if self.checkpoint is not None:
            return self.model.train(corpus=self.corpus, resume=True, epochs=self.cmd.resume_epochs)
        self.model.build_vocab(corpus=self.corpus)
        return self.model.train(corpus=self.corpus)

    def summary(self, stats: TrainStats) -> list[str]:
        """The per-epoch scores (``--eval-every-epoch``), then the summary line, or that nothing was left."""
        from parvec.cli.run_report import count_phrase

        lines = []
        if self.cmd.eval_every_epoch and self.model.run_log is not None:
            for rec in self.model.run_log.epochs:
                scores = ", ".join(f"{k} {'n/a' if v is None else format(v, '.4f')}"
                                   for k, v in (rec.scores or {}).items())
                loss = rec.loss if rec.loss is None else format(rec.loss, ".4f")
                lines.append(f"epoch {rec.epoch}: loss {loss}; {scores}")
        if stats.epochs == 0:  # a resumed run whose epochs were all done: describe_resume said so
            return lines + [f"nothing left to train (the checkpoint had done its "
                            f"{count_phrase(self.model.epochs_trained, 'epoch')}); no training ran"]
        return lines + [self.trained_line(stats)]

    def report(self, corpus: CorpusSummary, stats: TrainStats, read_seconds: float,
               export_seconds: float) -> RunReport:
        """The report: the common keys, the vocabulary's pruning and the cache."""
        return self.common_report(corpus, stats, read_seconds, {}, {})


def _cluster_memory(cluster: Cluster, model: Word2Vec, encoded: EncodedCorpus) -> MemoryEstimate:
    # A cluster run's memory: every process it starts here; refused before Ray starts if over (the error gives the
    # breakdown and what to change).
    from parvec.distributed.memory import corpus_sizes, estimate_cluster

    sizes = corpus_sizes(encoded, model.config, cluster.replicas if cluster.mode == "replicas" else None)
    estimate = estimate_cluster(cluster, model.config, len(encoded.vocab), sizes.tokens, sizes.sentences,
                                corpus=sizes)
    if estimate.fits:
        print(estimate.line(), file=sys.stderr)
    estimate.check()
    return estimate


def _resumed_cluster(cmd: TrainCommand, model: Word2Vec) -> Cluster | None:
    # Where a resumed model trains: the cluster its checkpoint recorded, with what may change given now (another
    # --cluster SPEC, --threads per actor, --clients; prepare_resume refused the rest); a checkpoint that recorded
    # nothing trains where the command says.
    if not model.saved_cluster_recorded or model.saved_cluster is None:
        return cmd.make_cluster()
    from parvec.distributed import cluster_from_record

    changes: dict[str, Any] = {"spec": cmd.cluster}
    if "threads" in cmd.given:
        changes["threads_per_actor"] = cmd.threads
    if "clients" in cmd.given and model.saved_cluster.mode == "sharded":
        changes["clients"] = cmd.clients
    base: Cluster = cluster_from_record(model.saved_cluster)
    return dataclasses.replace(base, **changes)
