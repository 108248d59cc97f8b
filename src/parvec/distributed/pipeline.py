"""``parvec train INPUT --cluster SPEC --mode sharded``: the model no process holds, as a front end of the one
train flow.

:class:`ShardedWord2Vec` is to the column-sharded mode what :class:`parvec.word2vec.Word2Vec` is to the others, for
models too big for one machine: the command line drives both alike (encode the corpus, describe it, train through
the run layer, write the outputs, report).  Its parts:

- **the corpus source** (:meth:`ShardedWord2Vec.encode`): the input counted and encoded on the cluster
  (:mod:`parvec.distributed.sharded_source`: a map-reduce vocabulary whose ids tie by hash, the corpus encoded
  through the shared hashed lookup, the units of work planned where the corpus is encoded); the driver holds the
  count classes and a few figures, no word;
- **training** (:meth:`ShardedWord2Vec.train`): a :class:`parvec.distributed.sharded.ShardedRun` (shards that
  draw negatives from count-class tables, clients that subsample with the head table:
  :meth:`parvec.distributed.units.SamplingTables.of_classes`) driven by a :class:`parvec.run.Run` like every mode:
  its checkpoints (every consistent snapshot of the shards, ``DIR/checkpoint`` and ``DIR/mid-eE-cU``: the sharded
  model format, naming the shards' snapshot files and the vocabulary's partitions, only the newest kept),
  ``--resume`` (the shards restore the checkpoint's snapshot), the report's records from the engine's schedule;
- **the vector sink** (:attr:`ShardedWord2Vec.wv`, :meth:`ShardedWord2Vec.save`,
  :meth:`ShardedWord2Vec.save_vocab`): the outputs written by row ranges in parallel from the shards' column
  files (:mod:`parvec.distributed.sharded_export`), the model saved as the shards' files.

The work directory (the encoded corpus, the vocabulary's partitions, the shards' snapshots without
``--checkpoint-dir``) is a temporary directory under ``--cache-dir`` (the system's temporary directory with
``--no-cache``), removed when the model is closed.  On a multi-node cluster it must be on a file system every node
sees.

Example:
    >>> with ShardedWord2Vec(config, ReadOptions(min_count=5), Cluster("local:2", mode="sharded")) as model:
    ...     corpus = model.encode("corpus.txt")  # doctest: +SKIP
    ...     stats = model.train(corpus)  # doctest: +SKIP
    ...     model.wv.save_word2vec_format("vectors.bin", binary=True)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from parvec.config import TrainConfig
from parvec.corpus import ReadOptions
from parvec.distributed.cluster import Cluster
from parvec.distributed.sharded_export import ModelFiles, ShardedVectors, save_model
from parvec.distributed.sharded_settings import ShardedSettings
from parvec.distributed.sharded_source import (
    CountPlan,
    RecordedUnits,
    ShardedCorpus,
    plan_count,
    plan_inputs,
    prepare_corpus,
)
from parvec.distributed.snapshot_records import CheckpointRestored, ShardFiles, Snapshot, SnapshotPlan
from parvec.engine import Position, TrainStats
from parvec.errors import ParvecError
from parvec.run import KeptRun, Run, RunOptions, RunState
from parvec.schedule import Schedule

__all__ = ["ShardedWord2Vec", "clear_sharded_checkpoints", "parse_bytes", "resume_snapshot", "work_directory"]


def parse_bytes(text: str, flag: str) -> int:
    """``3G``, ``512M``, ``100000`` (bytes; K/M/G/T are powers of 1024) as an integer.

    Example:
        >>> parse_bytes("1.5G", "--shard-memory")
        1610612736
    """
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in units and t[-1:] else ""
    try:
        value = float(t[: len(t) - len(unit)]) * units[unit]
    except ValueError:
        raise ParvecError(f"{flag} {text!r}: expected bytes like 3G, 512M or 1000000") from None
    if not value >= 1:
        raise ParvecError(f"{flag} {text!r}: must be positive")
    return int(value)


@contextlib.contextmanager
def work_directory(cache_dir: str | os.PathLike[str] | None) -> Iterator[Path]:
    """The work directory of a sharded run (the encoded corpus, the vocabulary's partitions, the shards'
    snapshots without a checkpoint directory): under ``cache_dir`` (created if missing), else the system's
    temporary directory; removed at the end.

    Example:
        >>> with work_directory(None) as work:
        ...     work.is_dir()
        True
        >>> work.exists()
        False
    """
    base = Path(cache_dir) if cache_dir is not None else None
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="parvec-sharded-", dir=base))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def clear_sharded_checkpoints(directory: Path) -> list[Path]:
    """Remove the sharded runs' checkpoints in ``directory`` (a new sharded run there: its shards start their
    snapshots afresh, so the old ones would name removed files); returns what was removed.

    Example:
        >>> clear_sharded_checkpoints(Path("no/such/dir"))
        []
    """
    from parvec.checkpoints import list_checkpoints

    removed = []
    for found in list_checkpoints(directory):
        if found.meta is not None and found.meta.get("sharded") is not None:
            shutil.rmtree(found.path, ignore_errors=True)
            removed.append(found.path)
    return removed


def resume_snapshot(saved: Any, path: Path, node: str | None = None) -> Snapshot:
    """The snapshot record a :class:`parvec.distributed.sharded.ShardedRun` resumes from (its ``resume=``), from
    a sharded checkpoint read by :func:`parvec.model_io.load` (``arrays=False``) at ``path``: each shard's snapshot
    directory made absolute (on ``node``'s disk: the Ray node of the process that reads the checkpoint), the units
    still to train.

    Example:
        >>> saved = model_io.load("ck/checkpoint", arrays=False)  # doctest: +SKIP
        >>> snap = resume_snapshot(saved, Path("ck/checkpoint"))  # doctest: +SKIP
        >>> snap.epoch, snap.units_done  # doctest: +SKIP
        (2, 0)
    """
    from parvec.model_io import shard_file_paths

    sharded = saved.sharded
    files = tuple(dataclasses.replace(ShardFiles.from_json(f).with_directory(str(d.resolve())), node=node)
                  for f, d in zip(sharded["files"], shard_file_paths(path, sharded), strict=True))
    snap = Snapshot.from_json(sharded["snapshot"])
    return dataclasses.replace(snap, files=files, shards=len(files))


class ShardedWord2Vec(KeptRun):
    """The model of ``parvec train --mode sharded`` (module docstring): ``config`` (skip-gram, negative sampling),
    ``read_options``, ``cluster`` (``mode="sharded"``) and ``cache_dir`` (where the work directory goes).  Use it
    as a context manager: it holds the cluster's Ray session, the work directory and the run's ``settings``
    (resolved once, on entering, from ``cluster`` and ``config``) until it is closed.

    Example:
        >>> with ShardedWord2Vec(TrainConfig(dim=100), ReadOptions(), Cluster("local:2", mode="sharded")) as m:
        ...     m.train(m.encode("corpus.txt")).epochs  # doctest: +SKIP
        5
    """

    def __init__(self, config: TrainConfig, read_options: ReadOptions, cluster: Cluster,
                 cache_dir: str | os.PathLike[str] | None = None) -> None:
        if cluster.mode != "sharded":
            raise ParvecError(f"ShardedWord2Vec trains column-sharded (Cluster(mode='sharded')), not {cluster.mode}")
        self.config, self.read_options, self.cluster = config.validate(), read_options, cluster
        self.cache_dir = cache_dir
        self.run_options, self.state = RunOptions(), RunState()
        self.corpus: ShardedCorpus | None = None
        self.files: ModelFiles | None = None  # the trained model on disk (its newest epoch-end snapshot)
        self.saved: Any = None  # a resumed checkpoint (model_io.load(..., arrays=False)) and its path
        self.saved_path: Path | None = None
        self.stats: TrainStats | None = None
        self._stack = contextlib.ExitStack()
        self._ray: Any = None
        self._work: Path | None = None
        self._run: Any = None
        self._describing: int | None = None  # the snapshot a checkpoint being written names
        self._settings: ShardedSettings | None = None  # resolved when the run starts (__enter__)
        self.count_plan: CountPlan | None = None  # what counting takes, planned before it (encode)
        self.on_note: Callable[[SnapshotPlan | CheckpointRestored], None] = lambda note: None  # the CLI words them

    # ------------------------------------------------------------ the session
    def __enter__(self) -> ShardedWord2Vec:
        self._settings = ShardedSettings.of(self.cluster, self.config)
        self._work = self._stack.enter_context(work_directory(self.cache_dir))
        self._ray = self._stack.enter_context(self.cluster.session())
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the actors, leave the Ray session, remove the work directory."""
        try:
            if self._run is not None:
                self._run.close()
                self._run = None
        finally:
            self._stack.close()
            self._ray = self._work = None

    @property
    def ray(self) -> Any:
        if self._ray is None:
            raise ParvecError("ShardedWord2Vec: use it as a context manager (with ShardedWord2Vec(...) as model:)")
        return self._ray

    @property
    def settings(self) -> ShardedSettings:
        """The run's sharded settings (:class:`~parvec.distributed.sharded_settings.ShardedSettings`)."""
        assert self._settings is not None, "use it as a context manager"
        return self._settings

    @property
    def work(self) -> Path:
        assert self._work is not None, "use it as a context manager"
        return self._work

    # ------------------------------------------------------------ resuming
    @classmethod
    def load_for_resume(cls, path: str | os.PathLike[str],
                        cache_dir: str | os.PathLike[str] | None = None) -> tuple[ShardedWord2Vec, Path, str | None]:
        """A sharded checkpoint to resume (the latest in a checkpoint directory): ``(model, path, note)``; the
        matrices stay in the shards' files and the words in the partitions (read with ``arrays=False``).

        Example:
            >>> model, path, note = ShardedWord2Vec.load_for_resume("ck")  # doctest: +SKIP
        """
        from parvec import model_io
        from parvec.checkpoints import load_for_resume
        from parvec.distributed import cluster_from_record

        saved, where, note = load_for_resume(path, lambda p, _mmap: model_io.load(p, arrays=False))
        if saved.sharded is None:
            raise ParvecError(f"{where}: not a sharded run's checkpoint")
        cluster = cluster_from_record(saved.cluster) or Cluster("local", mode="sharded")
        model = cls(saved.config, ReadOptions(**(saved.read_options or {})), cluster, cache_dir)
        model.saved, model.saved_path = saved, where
        model.state = RunState.from_saved(saved)
        model.state.saved_checkpoint_every = None
        return model, where, note

    # ------------------------------------------------------------ the corpus source
    def encode(self, corpus_file: Any) -> ShardedCorpus:
        """Count, assign ids and encode ``corpus_file`` (a path, ``-``, a directory, a glob or a list) on the
        cluster (:func:`parvec.distributed.sharded_source.prepare_corpus`); a resumed model reads the units its
        checkpoint recorded and refuses another input.

        Example:
            >>> corpus = model.encode("corpus.txt")  # doctest: +SKIP
        """
        from parvec.distributed.sharded_settings import cluster_cpus

        ray, settings = self.ray, self.settings
        recorded = self.saved.sharded["input"] if self.saved is not None else None
        try:
            plan = plan_inputs(corpus_file, cluster_cpus(ray), self.work,
                               recorded=RecordedUnits.from_json(recorded) if recorded is not None else None)
        except ParvecError as exc:
            raise ParvecError(f"cannot resume {self.saved_path}: {exc}" if recorded is not None else str(exc)) from None
        self.count_plan = counting = plan_count(ray, plan, self.read_options, self.cluster)
        corpus = prepare_corpus(ray, plan, self.read_options, self.work, settings.unit_words, settings.timeout_s,
                                memory=counting.placement(ray, self.cluster), distinct=counting.distinct)
        if self.saved is not None:
            _check_resume_input(self.saved, self.saved_path, corpus)
        self.corpus = corpus
        return corpus

    def memory_estimate(self) -> Any:
        """What training takes, every process of it, once the vocabulary is known
        (:func:`parvec.distributed.memory.estimate_cluster`; its ``check`` refuses a run that does not fit).

        Example:
            >>> model.memory_estimate().line()  # doctest: +SKIP
            'memory: 1.2 GiB of 20.1 GiB available, --cluster local:2 (sharded), every process ...'
        """
        from parvec.distributed.memory import estimate_cluster

        corpus = self.corpus
        assert corpus is not None
        return estimate_cluster(self.cluster, self.config, corpus.n_words, corpus.tokens, corpus.sentences,
                                pipeline=True, ranges=len(corpus.parts), settings=self.settings)

    def build_vocab(self, corpus: ShardedCorpus) -> None:
        """Nothing to do: the vocabulary is the corpus's (:meth:`encode`)."""
        self.corpus = corpus

    # ------------------------------------------------------------ training
    def train(self, corpus: ShardedCorpus | None = None, resume: bool = False, epochs: int | None = None) -> TrainStats:
        """Train on the encoded corpus through a :class:`parvec.run.Run` (module docstring); ``resume`` continues
        the loaded checkpoint (``epochs``: another number of epochs, from the checkpoint on).

        Example:
            >>> stats = model.train(model.encode("corpus.txt"))  # doctest: +SKIP
        """
        from parvec.distributed.sharded import ShardedRun, ShardedRunDriver
        from parvec.distributed.units import SamplingTables

        corpus = corpus if corpus is not None else self.corpus
        if corpus is None:
            raise ParvecError("encode the corpus first (model.encode(corpus_file))")
        self.corpus = corpus
        config, state = self.config, self.state
        begin = Run.start(config, state, resume=resume, epochs=epochs, words_per_epoch=corpus.tokens)
        start, resume_at, total_epochs, snap = begin.epoch, begin.at, begin.epochs, None
        if resume:
            assert self.saved_path is not None, "resume=True needs a model read by load_for_resume"
            snap = resume_snapshot(self.saved, self.saved_path, self.ray.get_runtime_context().get_node_id())
            if start >= total_epochs:  # the checkpoint holds every epoch: its snapshot is the model, checked
                self.files = self._files(snap.files or ())
                self.files.verify(self.ray, snap.id, self.settings.timeout_s)
                self.stats = TrainStats()
                return self.stats
        options = self._options()
        ck = Path(options.checkpoint_dir) if options.checkpoint_dir is not None else None
        if ck is not None and not resume:
            clear_sharded_checkpoints(ck)  # a new run's shards start their snapshots afresh
        schedule = Schedule.of(config, corpus.tokens, total_epochs, anchor=state.schedule_anchor)
        tables = SamplingTables.of_classes(corpus.classes, config)
        self._run = ShardedRun(self.ray, self.cluster, config, tables, corpus.parts,
                               checkpoint_dir=ck / "shards" if ck is not None else self.work / "snapshots",
                               resume=snap, units=corpus.units(), client_parts=True, memory=self._placement(),
                               settings=self.settings, on_plan=self.on_note)
        if snap is not None:
            self.on_note(CheckpointRestored(snap.id, len(snap.files or ())))
        try:
            run = Run(ShardedRunDriver(self._run, checkpoints=ck is not None), config, schedule, options, state,
                      describe=self.saved_model if ck is not None else None, start_epoch=start, resume_at=resume_at,
                      only_latest=True)
            self.stats = run.execute() if start < total_epochs else TrainStats()
            self.files = self._files(self._run.snapshots.newest.files or ())
        finally:
            self._run.close()
            self._run = None
        return self.stats

    def _placement(self) -> dict[str, int]:
        # What a shard and a client ask of Ray's memory resource (their parts of the estimate).
        from parvec.distributed.memory import placement

        est = self.memory_estimate()
        each = {p.name: p.each for p in est.parts + est.elsewhere}
        return placement(self.ray, {k: each[k] for k in ("shard", "client") if k in each}, self.cluster)

    def _options(self) -> RunOptions:
        # The run's options, with every checkpoint written marking the snapshot it names as checkpointed (the
        # shards keep it until a newer one is).
        told = self.run_options.on_checkpoint_saved

        def saved(path: Path, position: Position | None, seconds: float) -> None:
            if self._run is not None and self._describing is not None:
                self._run.snapshots.mark_checkpointed(self._describing)
            if told is not None:
                told(path, position, seconds)

        return dataclasses.replace(self.run_options, on_checkpoint_saved=saved)

    def _files(self, snapshot_files: tuple[ShardFiles, ...]) -> ModelFiles:
        corpus = self.corpus
        assert corpus is not None
        return ModelFiles.of(snapshot_files, corpus.vocab_dir, corpus.vocab_parts, corpus.n_words, self.config.dim,
                             corpus.vocab_files)

    def saved_model(self, position: Position | None = None, epochs_trained: int | None = None) -> Any:
        """The checkpoint of the newest complete snapshot (what :class:`parvec.run.Run` writes): the sharded model
        format, naming the shards' snapshot files and the vocabulary's partitions (put beside the checkpoints,
        ``DIR/vocab``, once), with the input's identity and the run's place.

        Example:
            >>> model.saved_model(None, 2).sharded["snapshot"]["epoch"]  # doctest: +SKIP
            2
        """
        from parvec import model_io
        from parvec.distributed import cluster_record

        corpus, run = self.corpus, self._run
        assert corpus is not None and run is not None and self.run_options.checkpoint_dir is not None
        directory = Path(self.run_options.checkpoint_dir)
        inside = directory / "checkpoint"  # every checkpoint is a directory in it
        snap = run.snapshots.newest
        self._describing = snap.id
        run.snapshots.await_uploads(snap.id)  # under a URL: each shard's files there first
        vocab_dir = _place_vocab(corpus, directory / "vocab")
        settings = self.settings
        record = cluster_record(self.cluster)
        assert record is not None
        record = record.with_settings(shards=settings.shards, clients=settings.clients)
        sharded = {"files": snap.files_json(relative_to=inside), "snapshot": snap.checkpoint_state(),
                   "settings": settings.to_json(), "input": corpus.identity(),
                   "vocab": {"directory": os.path.relpath(vocab_dir, inside),
                             "parts": [p.to_json() for p in corpus.vocab_parts],
                             "words": corpus.n_words}}
        return model_io.SavedModel(
            config=self.config, vocab=None, vectors=None, syn1neg=None, read_options=self.read_options.__dict__,
            epochs_trained=self.state.epochs_trained if epochs_trained is None else epochs_trained,
            corpus_words=corpus.tokens, raw_words=corpus.raw_words, corpus_count=corpus.sentences,
            position=position, run_id=self.state.run_id, schedule_anchor=self.state.schedule_anchor,
            cluster=record, sharded=sharded)

    # ------------------------------------------------------------ the vector sink
    @property
    def wv(self) -> ShardedVectors:
        """The trained vectors as an output (``save_word2vec_format``, ``save``), written by row ranges."""
        if self.files is None:
            raise ParvecError("nothing to write: the model has not been trained")
        return ShardedVectors(self.ray, self.files, self.work, self.cluster.timeout_s)

    def save_vocab(self, path: str | os.PathLike[str]) -> None:
        """word2vec.c's ``-save-vocab`` file, written by id ranges from the vocabulary's partitions."""
        corpus = self.corpus
        assert corpus is not None
        files = self.files or self._files(())
        ShardedVectors(self.ray, files, self.work, self.cluster.timeout_s).save_vocab(path, corpus.sentences)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the sharded model format (:func:`parvec.distributed.sharded_export.save_model`): ``model.json``,
        each shard's column files and the vocabulary's partitions, no gather; ``Word2Vec.load`` reads it whole,
        :meth:`parvec.keyedvectors.KeyedVectors.load` lazily."""
        from parvec import model_io

        corpus, files = self.corpus, self.files
        if corpus is None or files is None:
            raise ParvecError("nothing to save: the model has not been trained")
        from parvec.distributed import cluster_record

        def describe(sharded: dict[str, Any]) -> Any:
            return model_io.SavedModel(
                config=self.config, vocab=None, vectors=None, syn1neg=None, read_options=self.read_options.__dict__,
                epochs_trained=self.state.epochs_trained, corpus_words=corpus.tokens, raw_words=corpus.raw_words,
                corpus_count=corpus.sentences, run_id=self.state.run_id, schedule_anchor=self.state.schedule_anchor,
                cluster=cluster_record(self.cluster), sharded=dict(sharded, input=corpus.identity()))

        save_model(self.ray, files, path, describe, self.cluster.timeout_s)


def _place_vocab(corpus: ShardedCorpus, directory: Path) -> Path:
    # The vocabulary's partitions beside the checkpoints (hard links, else copies), once: a resumed run's are
    # there already (the same files: its input was checked).
    from parvec.vocab_parts import crc32_file

    for rec in corpus.vocab_parts:
        for name, dst in rec.paths(directory).items():
            if dst.exists() and crc32_file(dst) == rec.crc32[name]:
                continue
            src = rec.paths(corpus.vocab_dir)[name]
            directory.mkdir(parents=True, exist_ok=True)
            tmp = dst.with_name(dst.name + ".tmp")
            tmp.unlink(missing_ok=True)
            try:
                os.link(src, tmp)
            except OSError:
                shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
    return directory


def _check_resume_input(saved: Any, path: Path | None, corpus: ShardedCorpus) -> None:
    # Refuse an input other than the checkpoint's: its units read other bytes, or it gives another vocabulary or
    # token count; the message names the first difference.
    was = saved.sharded.get("input", {})
    head = f"cannot resume {path}: {corpus.inputs.name} is not the input the checkpoint was trained on"
    got, had = corpus.fingerprints, was.get("fingerprints")
    if had is not None and got != had:
        k = next((k for k, (a, b) in enumerate(zip(got, had, strict=False)) if a != b), min(len(got), len(had)))
        raise ParvecError(f"{head} (its byte range {k + 1} of {len(got)} reads other bytes than the checkpoint's, "
                          "CRC-32); give the same input file")
    if was.get("vocab_crc32") is not None and was["vocab_crc32"] != corpus.vocab_crc32:
        theirs = int(saved.sharded.get("vocab", {}).get("words", 0))
        raise ParvecError(f"{head} (its vocabulary has {corpus.n_words:,} words, the checkpoint's {theirs:,}, or "
                          "other counts); give the same input, --min-count, --max-vocab-size, --max-final-vocab and "
                          "--lowercase")
    if saved.corpus_words and corpus.tokens != saved.corpus_words:
        raise ParvecError(f"{head} (it has {corpus.tokens:,} in-vocabulary tokens, the checkpoint's "
                          f"{saved.corpus_words:,}); give the same input")
