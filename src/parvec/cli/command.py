"""``parvec train``'s command, resolved once: :func:`resolve` turns the parsed flags, the style's defaults
(:func:`parvec.cli.train_flags.resolve_defaults`) and a ``--resume`` checkpoint (what it restores where a flag was
left out, what it refuses where one was repeated with another value) into a frozen :class:`TrainCommand`,
validated in one place.  Nothing writes to the parsed namespace: every later step reads the command.

Example:
    >>> from parvec.cli import build_parser
    >>> cmd, checkpoint = resolve(build_parser().parse_args(["train", "c.txt", "-o", "v.bin", "--dim", "8"]))
    ... # doctest: +SKIP
    >>> cmd.dim, cmd.binary, checkpoint  # doctest: +SKIP
    (8, True, None)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parvec.cli.flags import explicit_flags
from parvec.cli.resume import Checkpoint, prepare_resume
from parvec.cli.train_flags import default_cache_dir, resolve_defaults
from parvec.config import DEFAULT_GPU_ALGO
from parvec.errors import ParvecError

if TYPE_CHECKING:
    from parvec.cli.remote import TrainPaths
    from parvec.distributed.cluster import Cluster

__all__ = ["TrainCommand", "cluster_from_args", "resolve"]


@dataclass(frozen=True)
class TrainCommand:
    """``parvec train`` as resolved (module docstring): every flag by its destination, with the style's defaults
    and a resumed checkpoint's values in place; ``source`` the corpus (a path, ``-``, or several paths),
    ``binary`` whether ``-o`` is written in word2vec's binary format, ``cache_dir`` the encoded-corpus cache (None:
    not used), ``given`` the flags the command line gave, ``threads_per_actor`` the threads of each replica or
    sharded client (None: fitted to the cluster's CPUs), ``resume_epochs`` another number of epochs for a resumed
    run (None: its own), ``defaults_line`` the line saying which defaults applied.

    Example:
        >>> TrainCommand.__dataclass_params__.frozen
        True
    """

    source: str | list[str]
    output: str | None
    binary: bool
    cache_dir: str | Path | None
    given: frozenset[str]
    defaults_line: str
    # training
    dim: int
    window: int
    negative: int
    sample: float
    epochs: int
    alpha: float
    min_alpha: float | None
    threads: int
    seed: int
    algo: str | None
    batch_size: int
    par_batch: int
    compute_loss: bool
    progress: bool | None
    cbow: int
    cbow_mean: int
    hs: int
    # reading
    min_count: int
    max_vocab_size: int | None
    max_final_vocab: int | None
    max_sentence_length: int
    lowercase: bool
    unicode_errors: str
    read_vocab: str | None
    # where it trains
    device: str
    cluster: str | None
    cluster_mode: str
    replicas: int | None
    shards: int | None
    clients: int | None
    threads_per_actor: int | None
    minibatch_words: int | None
    minibatch_formation: str | None
    negatives_per: str | None
    wire_floats: str | None
    shard_calls: str | None
    update_cap: int | None
    snapshot_interval: float | None
    shard_memory: str | None
    sync_words: int
    min_sync_words: int
    full_sync_times: int
    sync_overlap: bool
    replica_alpha_scale: str
    # the run and its outputs
    save_model: str | None
    save_vocab: str | None
    classes: int
    checkpoint_dir: str | None
    checkpoint_every: str | None
    on_checkpoint_error: str
    resume: str | None
    resume_epochs: int | None
    report: str | None
    report_interval: float
    eval_every_epoch: bool
    no_cache: bool
    output_parts: str | None = None  # -o URL/ of a sharded run: its parts written by the cluster's tasks

    @property
    def sharded(self) -> bool:
        """``--cluster ... --mode sharded``: the column-sharded pipeline trains (unless a whole model's
        checkpoint resumes: :func:`parvec.cli.train_models.open_model`)."""
        return bool(self.cluster) and self.cluster_mode == "sharded"

    @property
    def source_name(self) -> str:
        """The corpus as the lines name it."""
        src = self.source
        return "standard input" if src == "-" else " ".join(src) if isinstance(src, list) else src

    def corpus_file(self) -> str | list[str | os.PathLike[str]]:
        """The corpus as :meth:`parvec.Word2Vec.encode` takes it."""
        return self.source if isinstance(self.source, str) else list[str | os.PathLike[str]](self.source)

    def make_cluster(self) -> Cluster | None:
        """The :class:`parvec.Cluster` the command describes, or None without ``--cluster``."""
        if not self.cluster:
            return None
        from parvec.distributed.cluster import Cluster

        return Cluster(self.cluster, mode=self.cluster_mode, replicas=self.replicas, shards=self.shards,
                       clients=self.clients, threads_per_actor=self.threads_per_actor, sync_words=self.sync_words,
                       min_sync_words=self.min_sync_words, full_sync_times=self.full_sync_times,
                       sync_overlap=self.sync_overlap, alpha_scale=self.replica_alpha_scale)


def cluster_from_args(args: argparse.Namespace) -> Cluster | None:
    """The :class:`parvec.Cluster` the parsed flags describe (``--threads`` given: the threads of each replica or
    client), or None without ``--cluster``; ``--replicas``, ``--shards`` or ``--clients`` without it are refused.

    Example:
        >>> cluster_from_args(argparse.Namespace(cluster=None, replicas=None, shards=None, clients=None)) is None
        True
    """
    values = vars(args)
    if not values.get("cluster"):
        _refuse_cluster_flags(values)
        return None
    from parvec.distributed.cluster import Cluster

    threads = values["threads"] if "threads" in explicit_flags(args) else None
    return Cluster(values["cluster"], mode=values["cluster_mode"], replicas=values["replicas"],
                   shards=values["shards"], clients=values["clients"], threads_per_actor=threads,
                   sync_words=values["sync_words"], min_sync_words=values["min_sync_words"],
                   full_sync_times=values["full_sync_times"], sync_overlap=values.get("sync_overlap", True),
                   alpha_scale=values.get("replica_alpha_scale", "linear"))


def _refuse_cluster_flags(values: dict[str, Any]) -> None:
    for flag in ("replicas", "shards", "clients"):
        if values.get(flag) is not None:
            raise ParvecError(f"--{flag} needs --cluster (e.g. --cluster local:2)")


def resolve(args: argparse.Namespace, paths: TrainPaths | None = None) -> tuple[TrainCommand, Checkpoint | None]:
    """``parvec train``'s command from its parsed flags (module docstring; ``paths``, when given, the staged local
    stand-ins of its URLs, :func:`parvec.cli.remote.staged_train`, taken over the flags'), with the checkpoint
    ``--resume`` loaded; prints the defaults line (a new run) or the lines that say what a resumed run takes from
    its checkpoint.
    Refuses, before anything is read or reserved, what cannot run: a missing input or output, flags that conflict
    with each other, the cluster's mode or the checkpoint, more threads than ``local:N`` has CPUs, no GPU.

    Example:
        >>> resolve(build_parser().parse_args(["train", "c.txt"]))  # doctest: +SKIP
        Traceback (most recent call last):
        ...
        parvec.errors.ParvecError: no output: give -o OUTPUT (and/or --save-model DIR)
    """
    given = explicit_flags(args)
    if paths is not None:  # a copy of the flags with the staged paths: the parsed namespace is only read
        args = argparse.Namespace(**(vars(args) | dict(paths.flag_values())))
    style, defaults_line = resolve_defaults(args)  # refuses a training file named both ways
    values = dict(vars(args)) | style
    debug = 2 if values["debug"] is None else values["debug"]
    if values["progress"] is None and debug < 2:
        values["progress"] = False
    if values["cluster"]:
        _check_mode(values)
    source = _check_command(values)
    if not values["resume"]:
        print(defaults_line, file=sys.stderr)
    binary = bool(values["binary"]) if values["binary"] is not None else str(values["output"] or "").endswith(".bin")
    cache_dir = None if values["no_cache"] else (values["cache_dir"] or default_cache_dir())
    if values["checkpoint_every"] is not None:
        from parvec.engine import parse_interval

        parse_interval(values["checkpoint_every"])
        if not values["checkpoint_dir"] and not values["resume"]:
            raise ParvecError("--checkpoint-every needs --checkpoint-dir DIR (where the checkpoints go)")
    checkpoint, threads_restored, resume_epochs = None, False, None
    if values["resume"]:
        checkpoint, threads_restored, resume_epochs = prepare_resume(values, given)
    if not values["cluster"]:
        _refuse_cluster_flags(values)
    fields = {f.name for f in dataclasses.fields(TrainCommand)}
    cmd = TrainCommand(**{k: v for k, v in values.items() if k in fields and k not in (
        "source", "binary", "cache_dir", "given", "defaults_line", "threads_per_actor", "resume_epochs")},
        source=source, binary=binary, cache_dir=cache_dir, given=given, defaults_line=defaults_line,
        threads_per_actor=values["threads"] if "threads" in given or threads_restored else None,
        resume_epochs=resume_epochs)
    _check_where(cmd, values)
    return cmd, checkpoint


def _check_command(values: dict[str, Any]) -> str | list[str]:
    # The corpus and the outputs named, and the flags that cannot go together; returns the corpus.
    inputs = list(values["input"] or [])
    source: Any = values["train_file"] or (inputs[0] if len(inputs) == 1 else inputs or None)
    if isinstance(source, list) and "-" in source:
        raise ParvecError("standard input ('-') cannot be one of several inputs")
    if not source:
        raise ParvecError("no training file: parvec train INPUT -o OUTPUT (or word2vec.c's -train FILE -output OUTPUT)")
    output, classes = values["output"], values["classes"]
    if not output and not values["save_model"] and not values.get("output_parts"):
        raise ParvecError("no output: give -o OUTPUT (and/or --save-model DIR)")
    if classes:
        if classes < 0:
            raise ParvecError(f"-classes must be 0 (write vectors) or a positive number of classes, got {classes}")
        if not output:
            raise ParvecError("-classes K writes 'word class' lines to -output: give -output FILE")
        if output.endswith(".npy"):
            raise ParvecError(f"-classes K writes 'word class' text lines: -output {output} names a .npy file")
    for flag, value in (("-read-vocab", values["read_vocab"]), ("-classes", classes)):
        if value and values["resume"]:
            raise ParvecError(f"{flag} cannot be combined with --resume (the resumed model has its vocabulary and "
                              "writes its vectors)")
    if values["cluster"] and values["cluster_mode"] == "sharded":
        from parvec.capabilities import pipeline_refusal

        for flag, value in (("-read-vocab", values["read_vocab"]), ("-classes", classes),
                            ("--eval-every-epoch", values["eval_every_epoch"])):
            if value:
                raise pipeline_refusal(flag)
    result: str | list[str] = source
    return result


def _check_mode(values: dict[str, Any]) -> None:
    # What the cluster's mode cannot train (parvec.capabilities), before reading; after the defaults, since
    # word2vec.c's -train FILE means CBOW.  An explicit --algo with --mode sharded (which runs its own kernels).
    from parvec import capabilities

    capabilities.check_placement(values["device"], values["cluster"])
    if values["cluster_mode"] == "sharded" and values["algo"] is not None:
        raise capabilities.sharded_algo_refusal(values["algo"])
    capabilities.check(values["cluster_mode"], cbow=bool(values["cbow"]), hs=bool(values["hs"]),
                       mid_epoch_checkpoints=values["checkpoint_every"] is not None)


def _check_where(cmd: TrainCommand, values: dict[str, Any]) -> None:
    # Where it trains, before any output is reserved: the cluster (given, or a resumed checkpoint's) and its CPUs,
    # the GPU.
    if cmd.cluster:
        from parvec.config import TrainConfig
        from parvec.distributed import check_cpus

        if cmd.resume:
            _check_mode(values)  # the resumed checkpoint's cluster, with the flags given now
        # More replicas x threads (or shards and clients) than local:N has CPUs: refused before Ray starts.
        cluster = cmd.make_cluster()
        assert cluster is not None
        check_cpus(cluster, TrainConfig(threads=cmd.threads))
    if cmd.device == "cuda":  # before reading the corpus: say now if there is no GPU
        from parvec.config import TrainConfig
        from parvec.gpu import require_device

        TrainConfig(algo=cmd.algo or DEFAULT_GPU_ALGO, device="cuda", sg=not cmd.cbow, hs=bool(cmd.hs),
                    negative=cmd.negative).validate()  # a CPU-only --algo, CBOW or --hs first
        require_device()
