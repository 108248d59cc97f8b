"""What ``--resume`` does with the command line, for every mode (``parvec train`` one process, replicas and
sharded; the graph commands print :func:`describe_resume`'s lines too): the flags a resumed run takes from its
checkpoint (:data:`SAVED_FLAGS`, refused with another value), the cluster it trained on (:func:`restore_cluster`:
``model.json``'s ``cluster``, restored where the flags leave it out), and the lines that say where it resumes.

Example:
    >>> restore_cluster({"cluster": "local:4"}, None, True, frozenset({"cluster"})).conflicts[0][:17]
    '--cluster local:4'
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parvec.errors import ParvecError

if TYPE_CHECKING:
    from parvec.cluster_record import ClusterRecord
    from parvec.distributed.pipeline import ShardedWord2Vec
    from parvec.word2vec import Word2Vec

@dataclass(frozen=True)
class Checkpoint:
    """The model ``--resume`` loaded (read without its matrices when a sharded run's) and where it is."""

    model: Word2Vec | ShardedWord2Vec
    path: Path


# Flags a resumed run takes from its checkpoint: given with another value, they are refused.
SAVED_FLAGS = {
    "dim": ("--dim", lambda m: m.config.dim), "window": ("--window", lambda m: m.config.window),
    "negative": ("--negative", lambda m: m.config.negative), "sample": ("--sample", lambda m: m.config.sample),
    "alpha": ("--alpha", lambda m: m.config.alpha), "min_alpha": ("--min-alpha", lambda m: m.config.min_alpha),
    "seed": ("--seed", lambda m: m.config.seed), "algo": ("--algo", lambda m: m.config.algo),
    "batch_size": ("--batch-size", lambda m: m.config.batch_size),
    "par_batch": ("--par-batch", lambda m: m.config.par_batch),
    "compute_loss": ("--no-loss", lambda m: m.config.compute_loss),
    "max_sentence_length": ("--max-sentence-length", lambda m: m.config.max_sentence_length),
    "device": ("--device", lambda m: m.config.device),
    "min_count": ("--min-count", lambda m: m.read_options.min_count),
    "max_vocab_size": ("--max-vocab-size", lambda m: m.read_options.max_vocab_size),
    "max_final_vocab": ("--max-final-vocab", lambda m: m.read_options.max_final_vocab),
    "lowercase": ("--lowercase", lambda m: m.read_options.lowercase),
    "unicode_errors": ("--unicode-errors", lambda m: m.read_options.unicode_errors),
}
# Where a resumed run trains (model.json's "cluster", parvec.distributed.cluster_record): flag, record key, and
# whether another value is refused ("saved": it decides what is trained and where a mid-epoch position is) or
# overrides ("where": another cluster to run on, other clients, a memory cap or snapshot interval).
_CLUSTER_FLAGS = {
    "cluster": ("--cluster", "spec", "where"),
    "cluster_mode": ("--mode", "mode", "saved"),
    "replicas": ("--replicas", "replicas", "saved"),
    "sync_words": ("--sync-words", "sync_words", "saved"),
    "min_sync_words": ("--min-sync-words", "min_sync_words", "saved"),
    "full_sync_times": ("--full-sync-times", "full_sync_times", "saved"),
    "sync_overlap": ("--sync-overlap", "sync_overlap", "saved"),
    "replica_alpha_scale": ("--replica-alpha-scale", "alpha_scale", "saved"),
    "shards": ("--shards", "shards", "saved"),
    "clients": ("--clients", "clients", "where"),
    "minibatch_words": ("--minibatch-words", "minibatch_words", "saved"),
    "minibatch_formation": ("--minibatch-formation", "minibatch_formation", "saved"),
    "negatives_per": ("--negatives-per", "negatives_per", "saved"),
    "wire_floats": ("--wire-floats", "wire_floats", "saved"),
    "shard_calls": ("--shard-calls", "shard_calls", "saved"),
    "update_cap": ("--update-cap", "update_cap", "saved"),
    "snapshot_interval": ("--snapshot-interval", "checkpoint_interval_s", "where"),
}
_REPLICAS_ONLY = ("replicas", "sync_words", "min_sync_words", "full_sync_times", "sync_overlap",
                  "replica_alpha_scale")
_SHARDED_ONLY = ("shards", "clients", "minibatch_words", "minibatch_formation", "negatives_per", "wire_floats",
                 "shard_calls", "update_cap", "snapshot_interval")
# What a sharded checkpoint that recorded no such key trained with: the setting did not exist yet.
_SHARDED_BEFORE = {"update_cap": 0}  # every update summed


@dataclass(frozen=True)
class RestoredCluster:
    """What a resumed run takes from its checkpoint's cluster record (:func:`restore_cluster`): ``conflicts``, the
    flags given with a value the checkpoint cannot resume with (each with the checkpoint's value, for the one
    refusal); ``lines``, the lines to print; and the flags left out that take the record's values, by destination
    (``flags``; ``threads`` among them: the threads of each replica or client, as before).

    Example:
        >>> RestoredCluster((), (), (("replicas", 2),)).restores("replicas")
        True
    """

    conflicts: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    flags: tuple[tuple[str, object], ...] = ()

    def restores(self, dest: str) -> bool:
        """Whether the flag ``dest`` (a destination) takes the checkpoint's value."""
        return any(d == dest for d, _ in self.flags)


def restore_cluster(values: dict[str, Any], record: ClusterRecord | None, recorded: bool,
                    given: frozenset[str]) -> RestoredCluster:
    """The cluster flags a resumed run takes from its checkpoint's record (``model.json``'s ``cluster``; None: it
    trained in this process) where they were left out (``values``: the flags as resolved so far, only read), as a
    :class:`RestoredCluster`.  A checkpoint that recorded nothing (``recorded`` False: written before parvec
    recorded it) keeps the flags as given.

    Example:
        >>> from parvec.cluster_record import ClusterRecord
        >>> values = {"cluster": None, "cluster_mode": "replicas", "replicas": None, "threads": 1}
        >>> record = ClusterRecord.from_json({"spec": "local:2", "mode": "replicas", "replicas": 2})
        >>> restored = restore_cluster(values, record, True, frozenset())
        >>> restored.conflicts, dict(restored.flags)["cluster"], dict(restored.flags)["replicas"]
        ((), 'local:2', 2)
    """
    if not recorded:
        return RestoredCluster()
    if record is None:
        if values.get("cluster"):
            return RestoredCluster((f"--cluster {values['cluster']} (the checkpoint was trained in this process, "
                                    "without --cluster: its position and learning rate are this process's)",))
        return RestoredCluster()
    conflicts: list[str] = []
    restored: list[tuple[str, object]] = []
    mode = record.mode
    for dest, (flag, key, kind) in _CLUSTER_FLAGS.items():
        if (dest in _REPLICAS_ONLY and mode != "replicas") or (dest in _SHARDED_ONLY and mode != "sharded"):
            continue
        saved = record.value(key, _SHARDED_BEFORE.get(dest) if mode == "sharded" else None)
        if dest in given and values.get(dest) != saved and kind == "saved":
            conflicts.append(f"{flag} {values[dest]} (the checkpoint has {saved}: {record.describe()})")
        elif dest not in given:
            restored.append((dest, saved))
    lines = []
    if "cluster" in given and values["cluster"] != record.spec:
        lines.append(f"--cluster {values['cluster']}: the run goes on there (the checkpoint trained on --cluster "
                     f"{record.spec}; its --mode and {'--replicas' if mode == 'replicas' else '--shards'} "
                     "are kept)")
    elif "cluster" not in given:
        lines.append(f"cluster: {record.describe()}, as the checkpoint was trained (give --cluster SPEC to run "
                     "it elsewhere with the same mode)")
    per = record.threads_per_actor
    if per is not None and "threads" not in given:
        restored.append(("threads", int(per)))
    if mode == "sharded" and record.shard_memory_bytes is not None and "shard_memory" not in given:
        restored.append(("shard_memory", str(record.shard_memory_bytes)))
    if mode == "sharded" and record.checkpoint_interval_s is not None and "snapshot_interval" not in given:
        lines.append(f"snapshots inside an epoch every {record.checkpoint_interval_s:g} s, as the checkpoint was "
                     "trained (--snapshot-interval overrides)")
    return RestoredCluster(tuple(conflicts), tuple(lines), tuple(restored))


def threads_line(record: ClusterRecord, given: int | None, trained_threads: int) -> str:
    """The line ``--resume`` prints of a cluster run's threads per replica or client: the checkpoint's
    (``record``: ``model.json``'s ``cluster``; its replicas' threads fitted to the CPUs when it recorded none, at
    most ``trained_threads``), or the ``--threads`` ``given`` that overrides them.  ``--threads`` given with the
    checkpoint's value is no override.

    Example:
        >>> from parvec.cluster_record import ClusterRecord
        >>> threads_line(ClusterRecord.from_json({"mode": "replicas", "threads_per_actor": 1}), None, 2)
        'threads: 1 per replica, as the checkpoint was trained (--threads overrides)'
        >>> threads_line(ClusterRecord.from_json({"mode": "replicas", "threads_per_actor": 1}), 1, 2)
        'threads: 1 per replica, as the checkpoint was trained (--threads overrides)'
        >>> threads_line(ClusterRecord.from_json({"mode": "sharded", "threads_per_actor": None}), 2, 4)
        "--threads 2 per client overrides the checkpoint's 1"
    """
    unit = "client" if record.mode == "sharded" else "replica"
    per = record.threads_per_actor
    if per is None and unit == "client":
        per = 1  # a sharded run's clients run one thread each unless told (ShardedSettings.of)
    trained = f"{per}" if per is not None else "threads fitted to the CPUs"
    if given is not None and given != per:
        return f"--threads {given} per {unit} overrides the checkpoint's {trained}"
    if per is None:
        return (f"threads: fitted to the cluster's CPUs for each replica (at most {trained_threads}), as the "
                "checkpoint was trained (--threads N per replica overrides)")
    return f"threads: {per} per {unit}, as the checkpoint was trained (--threads overrides)"


def refuse_saved_flags(values: dict[str, Any], model: Any, path: Path, given: frozenset[str],
                       more: list[str]) -> None:
    """Refuse, in one line naming each with the checkpoint's value, the training flags given (``given``:
    :func:`parvec.cli.flags.explicit_flags`, their ``values`` by destination) with another value than ``model``'s
    (its ``config`` and ``read_options``), and ``more`` (:func:`restore_cluster`'s conflicts).

    Example:
        >>> from types import SimpleNamespace
        >>> m = SimpleNamespace(config=SimpleNamespace(dim=16), read_options=None)
        >>> refuse_saved_flags({"dim": 16}, m, Path("ck"), frozenset({"dim"}), [])
    """
    conflicts = []
    for dest, (flag, saved) in SAVED_FLAGS.items():
        if dest in given and values[dest] != saved(model):
            value = values[dest]
            shown = "off" if dest == "compute_loss" else value
            conflicts.append(f"{flag} {shown} (the checkpoint has {saved(model)})")
    conflicts += more
    if conflicts:
        raise ParvecError(f"cannot resume {path} with different training flags: {'; '.join(conflicts)}; a resumed "
                          "run keeps its saved flags (leave these out), or start a new run without --resume")


# Where the command running in this process keeps its checkpoints, as resolved (a resumed run's checkpoint
# directory may be its checkpoint's): the line of an interrupted run names them (parvec.cli.main).
_PLACES: dict[str, str | None] = {}


def note_checkpoint_places(directory: str | None, resumed: str | None) -> None:
    """Record the resolved ``--checkpoint-dir`` and ``--resume`` of the command running, for
    :func:`checkpoint_places`.

    Example:
        >>> note_checkpoint_places("ck", None); checkpoint_places(None, None)
        ('ck', None)
    """
    _PLACES.clear()
    _PLACES.update(directory=directory, resumed=resumed)


def checkpoint_places(directory: str | None, resumed: str | None) -> tuple[str | None, str | None]:
    """The checkpoint directory and resumed checkpoint a command resolved (:func:`note_checkpoint_places`), else
    the flags' ``directory`` and ``resumed``.

    Example:
        >>> forget_checkpoint_places(); checkpoint_places("ck", "old")
        ('ck', 'old')
    """
    if not _PLACES:
        return directory, resumed
    return _PLACES["directory"], _PLACES["resumed"]


def forget_checkpoint_places() -> None:
    """A new command begins: no places are noted.

    Example:
        >>> forget_checkpoint_places()
    """
    _PLACES.clear()


def prepare_resume(values: dict[str, Any], given: frozenset[str]) -> tuple[Any, bool, int | None]:
    """``parvec train --resume``, before any output is reserved: load the checkpoint (the latest one when
    ``--resume`` names a checkpoint directory; a sharded run's without its matrices and words), refuse the flags
    given that contradict it, and take its cluster, threads, checkpoint directory and interval into ``values``
    (the command's flags as :func:`parvec.cli.command.resolve` resolves them) where they were left out, printing
    what it takes.  Returns ``(checkpoint, threads restored, --epochs of the resumed run or None)``.

    Example:
        >>> prepare_resume({"resume": "ck", ...}, frozenset())  # doctest: +SKIP
    """
    from parvec import model_io
    from parvec.checkpoints import EPOCH_END, find_for_resume
    from parvec.run import graph_run_refusal
    from parvec.word2vec import load_for_resume

    sharded = (model_io.read_meta(find_for_resume(values["resume"])[0]) or {}).get("sharded") is not None
    model: Any
    if sharded:  # its matrices are the shards' files, its words the vocabulary's partitions
        from parvec.distributed.pipeline import ShardedWord2Vec

        model, path, note = ShardedWord2Vec.load_for_resume(values["resume"])
    else:
        model, path, note = load_for_resume(values["resume"])
    if model.graph_run is not None:
        raise ParvecError(graph_run_refusal(model.graph_run, path))
    values["resume"] = str(path)
    if note:
        print(note, file=sys.stderr)
    restored = restore_cluster(values, model.saved_cluster, model.saved_cluster_recorded, given)
    values |= dict(restored.flags)
    refuse_saved_flags(values, model, path, given, list(restored.conflicts))
    for line in restored.lines:
        print(line, file=sys.stderr)
    resume_epochs = _resume_epochs(values, given, model, path)
    record = model.saved_cluster if model.saved_cluster_recorded else None
    if record is not None:  # threads per replica or client (the cluster's), restored by restore_cluster
        print(threads_line(record, values["threads"] if "threads" in given else None, model.config.threads),
              file=sys.stderr)
        if "threads" in given:
            model.config.threads = values["threads"]
        elif record.mode == "replicas" and record.threads_per_actor is None:
            values["threads"] = model.config.threads  # fitted to the cluster's CPUs again, as it was trained
    elif "threads" in given and values["threads"] != model.config.threads:
        print(f"--threads {values['threads']} overrides the checkpoint's {model.config.threads}", file=sys.stderr)
        model.config.threads = values["threads"]
    else:
        print(f"threads: {model.config.threads}, as the checkpoint was trained (--threads overrides)", file=sys.stderr)
        values["threads"] = model.config.threads
    if not values["checkpoint_dir"] and (path.name == EPOCH_END or path.name.startswith("mid-e")):
        values["checkpoint_dir"] = str(path.parent)
        print(f"checkpoints continue in {path.parent} (--checkpoint-dir overrides)", file=sys.stderr)
    if values["checkpoint_every"] is None and values["checkpoint_dir"] and model.saved_checkpoint_every:
        values["checkpoint_every"] = model.saved_checkpoint_every
        print(f"mid-epoch checkpoints every {values['checkpoint_every']}, as before (--checkpoint-every overrides)",
              file=sys.stderr)
    return Checkpoint(model, path), restored.restores("threads"), resume_epochs


def _resume_epochs(values: dict[str, Any], given: frozenset[str], model: Any, path: Path) -> int | None:
    # --epochs given with another number than the checkpoint planned: refused below the epochs begun, else said.
    begun = model.epochs_trained + (1 if model.position is not None else 0)
    epochs = values["epochs"]
    if "epochs" not in given or epochs == model.config.epochs:
        return None
    if epochs < max(begun, 1):
        raise ParvecError(f"cannot resume {path} with --epochs {epochs}: it has already "
                          f"{'begun' if model.position is not None else 'done'} {begun} of its "
                          f"{model.config.epochs} epochs")
    print(f"--epochs {epochs} (the checkpoint planned {model.config.epochs}): the learning rate now decays "
          f"from its value at the checkpoint to the final rate at the end of epoch {epochs}, so the vectors "
          f"differ from an uninterrupted {model.config.epochs}-epoch run", file=sys.stderr)
    return int(epochs)


def kept_checkpoints(directory: str | None, started: float, resumed: str | None) -> str:
    """What the line of an interrupted run says of its ``--checkpoint-dir`` (the same for every mode: one process,
    replicas, sharded, the graph commands): ``--resume DIR`` when it holds a checkpoint of this run (written since
    ``started``, a ``time.time()``, or of the run ``resumed`` from), else that none was written, so there is nothing
    to resume (but the checkpoint ``resumed`` from, if any); empty without a directory.

    Example:
        >>> kept_checkpoints("no/such/ck", 0.0, None)
        ' (no checkpoint of this run was written in no/such/ck: there is nothing to --resume)'
    """
    if not directory:
        return ""
    from parvec import model_io
    from parvec.checkpoints import find_for_resume, latest_checkpoint

    latest = latest_checkpoint(directory)
    meta = model_io.read_meta(latest) if latest is not None else None
    if meta is not None:
        own = float(meta.get("saved_at") or 0.0) >= started
        if not own and resumed:
            before = model_io.read_meta(find_for_resume(resumed)[0]) or {}
            own = meta.get("run_id") is not None and meta.get("run_id") == before.get("run_id")
        if own:
            return f" (checkpoints in {directory} are kept: --resume {directory})"
    if resumed:
        return f" (no checkpoint of this run was written in {directory}: --resume {resumed} starts again from it)"
    return f" (no checkpoint of this run was written in {directory}: there is nothing to --resume)"


def describe_resume(config: Any, state: Any, path: str, words_per_epoch: int, units: str = "chunks",
                    epochs: int | None = None) -> list[str]:
    """The lines ``--resume`` prints: where the run resumes (epoch, chunks and words done) and, for a checkpoint,
    what is lost (the training after it, written so long ago) and redone; or, when the run's ``epochs`` (the
    checkpoint's own, ``config.epochs``, unless ``--epochs`` gives more) are all done, that nothing is left to
    train.  ``state`` is the checkpoint's :class:`parvec.run.RunState`.  ``train`` and the graph commands print
    them (a sharded run's position counts ``units`` of work).

    Example:
        >>> m = Word2Vec.load("ck/checkpoint")  # doctest: +SKIP
        >>> describe_resume(m.config, m.state, "ck/checkpoint", 10**6)[0]  # doctest: +SKIP
        'resuming ck/checkpoint: 2 of 5 epochs done'
    """
    e = config.epochs if epochs is None else epochs
    if state.position is not None:
        pos = state.position
        where = (f"resuming {path}: epoch {pos.epoch + 1} of {e}, {pos.chunks_done} {units} ({pos.words_done:,} of "
                 f"{words_per_epoch:,} words) done")
    else:
        where = f"resuming {path}: {state.epochs_trained} of {e} epochs done"
    if state.position is None and state.epochs_trained >= e:
        return [f"{where}: nothing left to train (--epochs N above {state.epochs_trained} trains more); the outputs "
                "are written from the checkpoint's vectors"]
    lines = [where]
    if state.saved_at is not None and (state.position is not None or Path(path).name == "checkpoint"):
        age = max(0.0, time.time() - state.saved_at)
        every = f"; checkpoints every {state.saved_checkpoint_every}" if state.saved_checkpoint_every else ""
        lines.append(f"lost: the training after this checkpoint, written {age:.1f} s ago at "
                     f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(state.saved_at))} (saved_at "
                     f"{state.saved_at:.3f}){every}, is redone")
    return lines
