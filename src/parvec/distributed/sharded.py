"""Column-sharded parameter servers on Ray (Ordentlich et al., CIKM 2016): ``Cluster(mode="sharded")``.

- **Shards** (:class:`ShardActor`, ``S`` Ray actors).  Shard ``s`` holds columns ``[s*d//S, (s+1)*d//S)`` of
  both matrices for every word, float32, rows in vocabulary order, and the alias table of the noise
  distribution.  It answers one call, :meth:`ShardActor.step`: adjust the previous minibatch with the
  coefficients the client sends, then return the partial dot products of the next minibatch
  (:mod:`parvec.kernels.sharded`; the kernels release the GIL, so a shard serves several clients at once in
  Ray's thread pool).  Shards start from word2vec.c's initial vectors, generated column block by column
  block (so ``S`` shards hold exactly the one-process initial model), or from the driver's matrices.
- **Clients** (:class:`ClientActor`, ``C`` Ray actors, ``threads_per_actor`` threads each) train units of the
  encoded corpus: they form minibatches, sum the shards' partial dot products, apply the sigmoid, form the
  coefficients and the loss (:class:`parvec.distributed.shard_core.UnitRunner`).  Only indices, seeds and
  scalars travel; the client counts the bytes of every array it sends and receives.
- **Driver** (:class:`ShardedRun`): hands out units (each epoch's units in corpus order; an epoch ends
  when all are trained), keeps the learning-rate schedule by global words, gathers or streams the model
  back from the shards in row blocks, and reports.
- **Faults: consistent snapshots coordinated by the driver.**  At every epoch's end and every
  ``checkpoint_interval_s`` the driver stops handing out units, lets the units in flight finish, and tells
  every shard to write its columns (streamed to ``.npy`` files in a ``.partial`` directory renamed into place)
  tagged with a snapshot id; once all have answered, the driver records the snapshot as complete (its position:
  epoch, units done, the units still to train and the epoch's running figures; ``manifest.json``).  The
  model the run starts from is snapshot zero (the shards regenerate it).  When a shard or a client is lost, the
  driver fences the shards (the units in flight stop at their next call), waits for Ray to restart the lost
  actors (``max_restarts``), has every shard restore the newest complete snapshot, re-queues every unit trained
  since it, and goes on: with one client thread the run is bit for bit the run without the fault.  One line per
  fault goes to standard error; the report keeps them (``faults``, ``words_retrained``).  A shard that cannot
  come back, or a snapshot that cannot be written or read, ends the run with a :class:`ParvecError` naming the
  shard.  Every wait has a time-out (``Cluster.timeout_s``).
- **Memory.** ``Cluster.shard_memory_bytes`` caps each shard process's data segment (RLIMIT_DATA, set in
  the actor before it allocates); a shard whose columns do not fit stops the run before training with a
  clear error.
- **Checkpoints and resume.**  Each complete snapshot goes to ``on_snapshot`` (the CLI's
  :class:`parvec.distributed.pipeline.ShardCheckpoints` writes it as a checkpoint naming every shard's files, with
  their CRC-32s); a run started with ``resume=`` (such a checkpoint's record) has every shard restore those files
  instead of generating its initial columns, and trains on from the snapshot's place (its epoch; the units of it
  done are not trained again): with one client thread, bit for bit the run that was not interrupted.

:class:`ShardedDriver` is the driver the :class:`~parvec.word2vec.Word2Vec` API uses (the model fits in
the driver there: it is sent to the shards at the start and gathered back into ``w_in``/``w_out``);
:mod:`parvec.distributed.pipeline` is the four-step pipeline of ``parvec train --mode sharded``, which never
holds the model in one process.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parvec.chunks import split_long_sentences
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.distributed.cluster import Cluster
from parvec.distributed.shard_core import (
    ShardLost,
    Step,
    Unit,
    UnitRunner,
    UnitStats,
    check_shard_calls,
    check_wire,
    client_keep,
    pack_call,
    pack_train_call,
    plan_units,
    prepare_part,
    shard_kernels,
    sum_partials,
    to_half,
    unpack_call,
    unpack_train_call,
)
from parvec.engine import EpochContext, EpochResult, Position, RunEngine, SelfRunning, TrainStats
from parvec.errors import ParvecError
from parvec.fileio import fsync_dir, output_file, write_array, write_reason
from parvec.kernels import sharded as K
from parvec.memory import peak_memory_bytes
from parvec.model_io import array_crc32
from parvec.resources import cap_data_segment, vm_data_bytes
from parvec.sampling import word_noise_tables
from parvec.schedule import Schedule

_ROW_BLOCK_BYTES = 32 << 20  # rows gathered/streamed per block: about this many bytes per matrix


# --------------------------------------------------------------------------- configuration
# Input words trained at once over all client threads when minibatch_words is left to parvec (docs/distributed.md,
# "Sharded: speed"; AMD EPYC Zen 4, 4M tokens of ../shared/data's corpus, 1 epoch, S = 2, loss per pair against
# one process's):
# - interleaved, sample <= 1e-4: 2 clients x 2 threads x 1024 (4096 in flight) matched one process over 3 seeds
#   (5 epochs, the whole corpus); 1 x 1 x 8192 diverged in its first epoch;
# - interleaved, sample 1e-3 (parvec's default; frequent words kept ~10x as often, so a minibatch holds ~10x
#   their updates): 1024 in flight (1 x 1 x 1024, 2 x 1 x 512) within 0.03 of one process's loss, 2048 0.1 above,
#   4096 (2 x 2 x 1024) exploded (loss 32.9);
# - contiguous: 2 x 2 x 256 (1024) made the loss climb from 2.5 to 8.5 in two epochs; 2 x 1 x 256 (512) matched.
# A call of 1024 words costs Ray a quarter of what four calls of 256 do (0.17M words/s at 512 in flight, 0.41M at
# 4096, sample 1e-4).
IN_FLIGHT_WORDS = {"interleaved": 4096, "interleaved, light subsampling": 1024, "contiguous": 512}
LIGHT_SUBSAMPLING = 1e-4  # a sample threshold above this (or none) is light subsampling
MIN_MINIBATCH_WORDS = 16
# Input words per minibatch of a fused call (one shard, shard_calls="fused") when left to parvec.  The in-flight
# rule above bounds how stale a split call's dot products may be; a fused call has none to be stale (the shard
# trains each input word's batch on the rows as they are, as hogbatch does), so its minibatches are sized for the
# calls' cost: on a 2-core Zen 4 (4M tokens, 1 x (1 client x 2 threads)) 2,048 words per call trained 1.06-1.22M
# words/s, 8,192 1.76-2.03M, 16,384 1.69-2.23M (docs/distributed.md, "Sharded: fused calls").
FUSED_MINIBATCH_WORDS = 8192

# Every shard and client is a Ray actor, i.e. a process.  Start-up measured on a 2-core machine (local:2, shards
# = clients, one thread each; docs/distributed.md): 2 actors 1.9 s, 4 actors 9.4 s, 8 actors 15.2 s, 16 actors
# 36 s, each actor beyond the CPUs a few more seconds before anything trains; and every minibatch is a call to
# every shard, so more shards than CPUs only add calls.  Beyond ACTORS_PER_CPU_WARN actors per CPU parvec warns,
# beyond ACTORS_PER_CPU_MAX it refuses (on one machine more shards never hold more than the machine's memory).
ACTORS_PER_CPU_WARN = 2
ACTORS_PER_CPU_MAX = 8


def actor_budget(shards: int, clients: int, cpus: int) -> str | None:
    """Check ``shards + clients`` Ray actors against the cluster's ``cpus``: None when they suit it, a warning
    line when they oversubscribe it, a :class:`ParvecError` (naming the flags) when far beyond it.

    Example:
        >>> actor_budget(2, 2, 2) is None
        True
        >>> actor_budget(50, 4, 2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        parvec.errors.ParvecError: --shards 50 --clients 4 start 54 Ray actors ...
    """
    actors = shards + clients
    if cpus < 1:
        return None  # a cluster that reports no CPUs (Ray Client before a node joined): nothing to compare
    if actors > ACTORS_PER_CPU_MAX * cpus:
        fit_s = max(1, min(shards, cpus))
        fit_c = max(1, min(clients, cpus))
        raise ParvecError(
            f"--shards {shards} --clients {clients} start {actors} Ray actors (every shard and client is a process) "
            f"but the Ray cluster has {cpus} CPU{'s' if cpus != 1 else ''}: more than {ACTORS_PER_CPU_MAX} actors "
            f"per CPU take minutes to start and train slower than fewer (every minibatch calls every shard); use "
            f"--shards and --clients adding up to at most {ACTORS_PER_CPU_MAX * cpus} (e.g. --shards {fit_s} "
            f"--clients {fit_c}), or a cluster with more CPUs")
    if actors > ACTORS_PER_CPU_WARN * cpus:
        return (f"parvec: warning: {shards} shards + {clients} clients are {actors} Ray actors (one process each) on "
                f"{cpus} CPU{'s' if cpus != 1 else ''}: each actor beyond the CPUs adds seconds to the start-up and "
                "every minibatch calls every shard; fewer shards and clients train faster on this cluster")
    return None


def cluster_cpus(ray: Any) -> int:
    """The CPUs the Ray cluster reports (0 when it reports none).

    Example:
        >>> cluster_cpus(ray)  # doctest: +SKIP
        2
    """
    return int(ray.cluster_resources().get("CPU", 0))


def in_flight_words(config: TrainConfig, formation: str = "interleaved") -> int:
    """Input words in flight over all client threads when the minibatch size is left to parvec.

    Example:
        >>> in_flight_words(TrainConfig(sample=1e-4)), in_flight_words(TrainConfig(sample=1e-3))
        (4096, 1024)
        >>> in_flight_words(TrainConfig(sample=1e-5), "contiguous")
        512
    """
    if formation == "contiguous":
        return IN_FLIGHT_WORDS["contiguous"]
    light = not (0 < config.sample <= LIGHT_SUBSAMPLING)
    return IN_FLIGHT_WORDS["interleaved, light subsampling" if light else "interleaved"]


def resolve(cluster: Cluster, config: TrainConfig) -> dict[str, Any]:
    """The sharded settings of ``cluster``, defaults filled in and checked.

    ``minibatch_words`` left out (None) is ``in_flight_words(config, formation) // (clients x threads)``, at
    least 16 (at most 256 contiguous): every client thread has one minibatch in flight, trained from vectors
    without the others' updates.  With one shard and fused calls (``shard_calls="fused"``, the default) nothing
    is trained from stale dot products, and it is :data:`FUSED_MINIBATCH_WORDS`.

    ``shards`` left out is 1 on ``local:N`` (one machine: more shards buy no memory there, only more row visits
    and calls; 1.38x faster than 2 on 2 cores, docs/distributed.md) and 2 on a cluster joined (give the machines
    the model should be split over).

    Example:
        >>> resolve(Cluster("local:4", mode="sharded"), TrainConfig(dim=100))["shards"]
        1
        >>> resolve(Cluster("auto", mode="sharded"), TrainConfig(dim=100))["shards"]
        2
        >>> two_by_two = Cluster("local:4", mode="sharded", clients=2, threads_per_actor=2)
        >>> [resolve(two_by_two, TrainConfig(sample=s))["minibatch_words"] for s in (1e-3, 1e-4)]
        [8192, 8192]
        >>> split = Cluster("local:4", mode="sharded", clients=2, threads_per_actor=2, shard_calls="split")
        >>> [resolve(split, TrainConfig(sample=s))["minibatch_words"] for s in (1e-3, 1e-4)]
        [256, 1024]
        >>> resolve(Cluster("local:2", mode="sharded"), TrainConfig())["threads"]  # per client
        1
    """
    shards = cluster.shards or (1 if cluster.is_local else 2)
    clients = cluster.clients or 2
    threads = cluster.threads_per_actor or 1  # more threads split the same words in flight into more calls
    if shards > config.dim:
        raise ParvecError(f"--shards {shards}: more shards than vector dimensions ({config.dim}); every shard "
                          "needs at least one column")
    minibatch_words = cluster.minibatch_words
    formation = cluster.minibatch_formation
    fused = shards == 1 and cluster.shard_calls == "fused"
    if minibatch_words is None and fused:
        minibatch_words = FUSED_MINIBATCH_WORDS
    if minibatch_words is None and formation in ("interleaved", "contiguous"):  # in flight: the staleness
        minibatch_words = in_flight_words(config, formation) // (clients * threads)
        if formation == "contiguous":
            minibatch_words = min(minibatch_words, 256)
        minibatch_words = max(MIN_MINIBATCH_WORDS, minibatch_words)
    for name, value in (("minibatch_words", minibatch_words), ("unit_words", cluster.unit_words),
                        ("max_restarts", cluster.max_restarts)):
        if not isinstance(value, int) or isinstance(value, bool) or value < (0 if name == "max_restarts" else 1):
            raise ParvecError(f"{name} must be a {'non-negative' if name == 'max_restarts' else 'positive'} "
                              f"integer, got {value!r}")
    if not cluster.checkpoint_interval_s > 0:
        raise ParvecError(f"checkpoint_interval_s must be positive, got {cluster.checkpoint_interval_s}")
    cap = cluster.shard_memory_bytes
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
        raise ParvecError(f"shard_memory_bytes must be a positive integer (bytes), got {cap!r}")
    if cluster.minibatch_formation not in ("interleaved", "contiguous"):
        raise ParvecError(f"minibatch_formation must be interleaved or contiguous; got {cluster.minibatch_formation!r}")
    shard_kernels(cluster.negatives_per)  # a ParvecError naming the choices
    check_wire(cluster.wire_floats)
    check_shard_calls(cluster.shard_calls)
    if config.window > 65535:
        raise ParvecError(f"window {config.window}: sharded mode sends each window shrink in 16 bits (at most 65535)")
    return {"shards": shards, "clients": clients, "threads": threads, "minibatch_words": minibatch_words,
            "minibatch_words_in_flight": clients * threads * minibatch_words,
            "minibatch_formation": cluster.minibatch_formation, "negatives_per": cluster.negatives_per,
            "wire_floats": cluster.wire_floats, "shard_calls": "fused" if fused else "split",
            "unit_words": cluster.unit_words, "timeout_s": float(cluster.timeout_s),
            "checkpoint_interval_s": float(cluster.checkpoint_interval_s), "shard_memory_bytes": cap,
            "max_restarts": cluster.max_restarts}


def _config_dict(config: TrainConfig) -> dict[str, Any]:
    d = config.to_dict()
    d["min_alpha"] = config.min_alpha
    return d


def _cause(exc: BaseException) -> BaseException:
    """The user's exception inside a Ray task error (a ParvecError raised in an actor), else ``exc``."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


# --------------------------------------------------------------------------- the shard
def snapshot_dir(directory: str | os.PathLike[str], shard: int, shards: int, snap_id: int) -> Path:
    """Where shard ``shard`` of ``shards`` keeps snapshot ``snap_id``: ``in.npy``, ``out.npy`` (its input and
    output columns) and ``meta.json``, written into ``snap-ID.partial`` and renamed into place.

    Example:
        >>> snapshot_dir("ck", 0, 2, 3).as_posix()
        'ck/shard-0-of-2/snap-3'
    """
    return Path(directory) / f"shard-{shard}-of-{shards}" / f"snap-{snap_id}"


_COPY_BYTES = 32 << 20  # rows copied at a time when a shard restores a snapshot


class RunRefs:
    """The object references of one sharded run (noise table, keep table, initial columns, corpus parts), held
    for the run and handed to a shard or client when it starts or Ray restarts it.

    Restartable actors take no object reference or actor handle among their constructor arguments: Ray cannot
    promise those to a restart, and says so on the console at error level (ray-project/ray#53727).  This
    actor is not restarted (``max_restarts=0``), so its arguments may hold them; the others find it by name.

    Example:
        >>> holder = ray.remote(RunRefs).options(name="run-1").remote({"client": [keep_ref]})  # doctest: +SKIP
    """

    def __init__(self, refs: dict[str, Any]) -> None:
        self.refs = refs

    def get(self, key: str) -> Any:
        """The references stored under ``key``."""
        return self.refs[key]


class ShardActor:
    """One column block of both matrices and the noise table; the server side of every minibatch.

    Made a Ray actor by :class:`ShardedRun` (``ray.remote(ShardActor).options(...)``).  ``spec`` holds
    ``index, shards, n_words, dim, lo, hi, window, negative, seed, checkpoint_dir, memory_cap`` and, for a
    run's shards, ``holder``: the name of the :class:`RunRefs` actor that hands out ``refs`` =
    ``[noise_prob, noise_alias, init_in, init_out]`` (object references or arrays; init None: word2vec.c's
    initial input vectors for ``seed`` and zero output vectors), which may also be given directly.

    A shard that Ray restarts (its process died) allocates its columns and waits: it refuses every call
    until the driver has it :meth:`restore` a snapshot.  :meth:`fence` makes a live shard refuse minibatches
    too, so that the units in flight stop while the driver restores; :meth:`snapshot` writes the columns.

    Example:
        >>> shard = ray.remote(ShardActor).remote(spec, [prob, alias, None, None])  # doctest: +SKIP
    """

    def __init__(self, spec: dict[str, Any], refs: list[Any] | None = None) -> None:
        import ray

        self.spec = spec
        self.error: str | None = None
        self.index = spec["index"]
        self.window = int(spec["window"])
        self.negative = int(spec["negative"])
        self.kernels = shard_kernels(spec.get("negatives_per", Cluster.negatives_per), self.window, self.negative)
        self.applied = 0  # minibatches adjusted
        self.kernel_seconds = 0.0  # CPU seconds in unpacking, dotprod and adjust, summed over Ray's threads
        self.calls = 0
        self.applied_inputs = 0
        self.snapshots = 0
        self.snapshot_seconds = 0.0
        self.restores = 0
        self.baseline_rss = peak_memory_bytes()
        # The rows (inputs, positives, negatives) of each minibatch whose dot products were sent and whose
        # adjust has not come yet, by minibatch seed: one per client thread in flight, a few more kept.
        self._rows: dict[int, tuple[np.ndarray, ...]] = {}
        self._rows_cap = 2 * int(spec.get("in_flight", 8)) + 4
        self._rows_lock = threading.Lock()
        self._cv = threading.Condition()
        self._active = 0  # steps running (Ray runs several at once in its threads)
        self._state_lock = threading.Lock()  # one snapshot or restore at a time
        self.fenced = False
        n, lo, hi = int(spec["n_words"]), int(spec["lo"]), int(spec["hi"])
        width = hi - lo
        self.model_bytes = 2 * n * width * 4
        self.what = f"shard {self.index} of {spec['shards']}"
        what = f"{self.what} (columns {lo}..{hi - 1} of {spec['dim']})"
        self.restarted = was_restarted()
        self.restart_info = {"pid": os.getpid(), "time": time.time()} if self.restarted else None
        # Restarted, or resuming a checkpoint: nothing to serve until the driver restores a snapshot (the initial
        # model included).
        self.needs_restore = bool(self.restarted or spec.get("resume"))
        self.base = (Path(spec["checkpoint_dir"]) / f"shard-{self.index}-of-{spec['shards']}"
                     if spec.get("checkpoint_dir") else None)
        try:
            if refs is None:
                holder = ray.get_actor(spec["holder"])
                refs = ray.get(holder.get.remote(f"shard-{self.index}"), timeout=float(spec.get("timeout_s", 300)))
            noise_prob, noise_alias, self._init_in, self._init_out = refs
            self.noise_prob, self.noise_alias = (ray.get(r) if isinstance(r, ray.ObjectRef) else r
                                                 for r in (noise_prob, noise_alias))
            if spec.get("memory_cap") is not None:
                cap = int(spec["memory_cap"])
                cap_data_segment(cap, what)
                used = vm_data_bytes() or 0
                if used + self.model_bytes > cap:
                    raise ParvecError(
                        f"{what} needs {self.model_bytes / 2**30:.2f} GiB for its columns of {n:,} words, but its "
                        f"memory cap of {cap / 2**30:.2f} GiB leaves {(cap - used) / 2**30:.2f} GiB; use more shards "
                        "or a higher --shard-memory")
            self.w_in = np.empty((n, width), dtype=np.float32)
            self.w_out = np.zeros((n, width), dtype=np.float32)
            if not self.restarted and not spec.get("resume"):
                self._initial(fresh=True)
                if self.base is not None:  # a new run never sees another run's snapshots
                    if self.base.is_dir():
                        shutil.rmtree(self.base, ignore_errors=True)
                    try:
                        self.base.mkdir(parents=True, exist_ok=True)
                    except OSError as exc:
                        raise ParvecError(f"{self.what} cannot keep its snapshots in {self.base}: "
                                          f"{exc.strerror or exc}") from None
        except MemoryError as exc:
            self.error = (f"{what}: out of memory allocating its columns ({self.model_bytes / 2**30:.2f} GiB for "
                          f"{n:,} words): {exc}; use more shards or a higher memory cap")
        except ParvecError as exc:
            self.error = str(exc)

    def _initial(self, fresh: bool = False) -> None:
        # The columns the run starts from, written into the arrays in place: word2vec.c's initial vectors
        # (generated) or the driver's model, and zero output vectors.
        import ray

        spec = self.spec
        init_in, init_out = (ray.get(r) if isinstance(r, ray.ObjectRef) else r
                             for r in (self._init_in, self._init_out))
        if init_in is None:
            K.init_columns(int(spec["n_words"]), int(spec["dim"]), int(spec["lo"]), int(spec["hi"]),
                           int(spec["seed"]), out=self.w_in)
        else:
            np.copyto(self.w_in, init_in)
        if init_out is not None:
            np.copyto(self.w_out, init_out)
        elif not fresh:
            self.w_out.fill(0.0)

    # ------------------------------------------------------------ fences, snapshots, restores
    def _check(self) -> None:
        if self.error is not None:
            raise ParvecError(self.error)

    def _refuse(self) -> None:
        # Under self._cv: a restarted shard serves nothing until restored; a fenced one no minibatch.
        if self.needs_restore:
            raise ShardLost(self.index, f"{self.what} was restarted and waits for the driver to restore a snapshot")
        if self.fenced:
            raise ShardLost(self.index, f"{self.what} is fenced: the driver is restoring a snapshot")

    def _quiet(self) -> None:
        # Wait (under self._cv) until no step runs.
        timeout = float(self.spec.get("timeout_s", 300))
        if not self._cv.wait_for(lambda: self._active == 0, timeout=timeout):
            raise ParvecError(f"{self.what}: minibatches still running after {timeout:g} s (Cluster.timeout_s)")

    def fence(self) -> int:
        """Refuse minibatches from now until the next :meth:`restore` (the units in flight stop at their next
        call); returns this process's id."""
        with self._cv:
            self.fenced = True
        return os.getpid()

    def snapshot(self, snap_id: int, keep: int | Sequence[int | None] | None) -> dict[str, Any]:
        """Write this shard's columns as snapshot ``snap_id`` (``in.npy``, ``out.npy``, ``meta.json``) into
        ``snap-ID.partial``, then rename it to ``snap-ID``; snapshots other than ``keep`` (the newest complete
        one, and the one the newest checkpoint names when that is older) are removed first, so a shard keeps at
        most two or three.  The arrays are streamed to the files (no copy).  Returns the seconds and bytes
        written, the directory and each file's CRC-32 (what a checkpoint records and a resume checks)."""
        self._check()
        if self.base is None:
            raise ParvecError(f"{self.what}: no snapshot directory")
        t0 = time.perf_counter()
        with self._state_lock:
            with self._cv:
                self._refuse()
                self._quiet()
                self.fenced = True  # no minibatch while the columns are written (none is expected: the driver drained)
            try:
                final = self.base / f"snap-{snap_id}"
                partial = self.base / f"snap-{snap_id}.partial"
                try:
                    self.base.mkdir(parents=True, exist_ok=True)
                    kept = {f"snap-{k}" for k in (keep if isinstance(keep, list | tuple) else [keep]) if k is not None}
                    for old in self.base.iterdir():
                        if old.name.startswith("snap-") and old.name not in kept:
                            shutil.rmtree(old) if old.is_dir() else old.unlink()
                    partial.mkdir()
                    crcs = {}
                    for key, w in (("in", self.w_in), ("out", self.w_out)):
                        with output_file(partial / f"{key}.npy") as f:
                            write_array(f, w)  # streamed from the array in blocks: no copy; ENOSPC is named
                            f.flush()
                            os.fsync(f.fileno())
                        crcs[key] = array_crc32(w)
                    meta = {"shard": self.index, "shards": self.spec["shards"], "snapshot": snap_id,
                            "shape": list(self.w_in.shape), "time": time.time(), "crc32": crcs}
                    (partial / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
                    os.rename(partial, final)
                    fsync_dir(self.base)
                except OSError as exc:
                    raise ParvecError(f"{self.what} could not write its snapshot to {self.base}: "
                                      f"{write_reason(exc)}{f' ({exc.filename})' if exc.filename else ''}") from None
            finally:
                with self._cv:
                    self.fenced = False
        seconds = time.perf_counter() - t0
        self.snapshots += 1
        self.snapshot_seconds += seconds
        return {"seconds": seconds, "bytes": 2 * self.w_in.nbytes, "pid": os.getpid(), "directory": str(final),
                "shape": list(self.w_in.shape), "crc32": crcs}

    def restore(self, snap_id: int | None, where: str | None = None,
                crc32: dict[str, int] | None = None) -> dict[str, Any]:
        """Overwrite the columns with snapshot ``snap_id`` (None: the model the run started from), read row
        block by row block into the arrays in place, and serve again.  ``where`` is the snapshot's directory when
        it is not this run's own (a resumed run's, in the checkpoint it resumes); ``crc32`` the CRC-32 of each
        file's data (``in``, ``out``) the checkpoint recorded: a file that does not match is refused."""
        self._check()
        t0 = time.perf_counter()
        with self._state_lock:
            with self._cv:
                self.fenced = True
                self._quiet()
            if snap_id is None:
                self._initial()
            else:
                at = Path(where) if where else self.base / f"snap-{snap_id}" if self.base is not None else None
                try:
                    if at is None:
                        raise FileNotFoundError("no snapshot directory")
                    for key, w in (("in", self.w_in), ("out", self.w_out)):
                        got = _read_npy_into(at / f"{key}.npy", w)
                        if crc32 is not None and got != crc32.get(key):
                            raise ValueError(f"{key}.npy: its data does not match the CRC-32 the checkpoint recorded "
                                             "(the file was altered or damaged)")
                except (OSError, ValueError) as exc:
                    with self._cv:  # nothing valid to serve: the driver ends the run
                        self.needs_restore = True
                    raise ParvecError(f"{self.what} cannot read snapshot {snap_id} ({at}): {exc}") from None
            with self._cv:
                self.needs_restore = False
                self.fenced = False
        self.restores += 1
        return {"seconds": time.perf_counter() - t0, "pid": os.getpid()}

    def drop_snapshots(self) -> None:
        """Remove this shard's snapshot directory (a run's temporary snapshots, at its end)."""
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)

    # ------------------------------------------------------------ serving
    def step(self, call: np.ndarray) -> np.ndarray | None:
        """Adjust the previous minibatch (if any), then return the next one's partial dot products (if any).

        ``call`` is one packed byte array (:func:`parvec.distributed.shard_core.pack_call`); a fenced or
        restarted shard answers with :class:`ShardLost`."""
        with self._serving():
            t0 = time.thread_time()  # this thread's CPU time: the machine's load does not inflate it
            p_seq, p_seg, p_shrink, p_seed, p_coef, n_seq, n_seg, n_shrink, n_seed, n_out, half = unpack_call(call)
            self.calls += 1
            if p_seq is not None:
                with self._rows_lock:
                    kept = self._rows.pop(int(p_seed), None)
                if kept is not None and len(kept[0]) * (1 + self.negative) == len(p_coef):  # its dotprod's rows
                    self.kernels.adjust_rows(self.w_in, self.w_out, kept, p_seg, p_shrink, p_coef)
                else:  # not kept (a restarted shard, a minibatch retried): drawn again, the same rows
                    self.kernels.adjust(self.w_in, self.w_out, p_seq, p_seg, p_shrink, self.window, self.negative,
                                        self.noise_prob, self.noise_alias, np.uint64(p_seed), p_coef)
                self.applied += 1  # under the GIL; Ray's threads only (the kernels run without it)
                self.applied_inputs += len(p_shrink)
            if n_seq is None:
                self.kernel_seconds += time.thread_time() - t0
                return None
            out = np.empty(int(n_out), dtype=np.float32)
            kept = self.kernels.rows(n_seq, n_seg, n_shrink, int(n_out) // (1 + self.negative), np.uint64(n_seed),
                                     self.noise_prob, self.noise_alias)
            self.kernels.dotprod_rows(self.w_in, self.w_out, kept, out)
            # Kept for this minibatch's adjust (the next call of its client thread), which then draws no
            # negatives: 45% of the shard kernels' time went to drawing them twice (docs/distributed.md).
            with self._rows_lock:
                self._rows[int(n_seed)] = kept
                while len(self._rows) > self._rows_cap:  # minibatches whose adjust never came (a unit dropped)
                    self._rows.pop(next(iter(self._rows)))
            self.kernel_seconds += time.thread_time() - t0
            return to_half(out) if half else out

    def train(self, call: np.ndarray) -> np.ndarray:
        """Train one minibatch whole (``shard_calls="fused"``, one shard holding every column): its rows, dot
        products, coefficients and update in this call; returns ``array([loss])``.

        ``call`` is one packed byte array (:func:`parvec.distributed.shard_core.pack_train_call`); a fenced or
        restarted shard answers with :class:`ShardLost`."""
        with self._serving():
            t0 = time.thread_time()
            seq, seg, shrink, seed, alpha, n_ctx = unpack_train_call(call)
            self.calls += 1
            pairs = int(n_ctx.sum())
            kept = self.kernels.rows(seq, seg, shrink, pairs, seed, self.noise_prob, self.noise_alias)
            loss = self.kernels.train_rows(self.w_in, self.w_out, kept, seg, shrink, alpha, n_ctx)
            self.applied += 1
            self.applied_inputs += len(shrink)
            self.kernel_seconds += time.thread_time() - t0
            return np.array([loss], dtype=np.float64)

    @contextlib.contextmanager
    def _serving(self) -> Iterator[None]:
        # One minibatch call: refused while fenced or not restored; counted as active until it returns, so that a
        # snapshot or restore waits for it (_quiet).
        self._check()
        with self._cv:
            self._refuse()
            self._active += 1
        try:
            yield
        finally:
            with self._cv:
                self._active -= 1
                if not self._active:
                    self._cv.notify_all()

    def rows(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``lo .. hi`` of this shard's columns of both matrices (copies), for gathering and export."""
        self._check()
        with self._cv:
            if self.needs_restore:
                self._refuse()
        return self.w_in[lo:hi].copy(), self.w_out[lo:hi].copy()

    def info(self) -> dict[str, Any]:
        """Status and figures: error, applied minibatches, restart, snapshots, memory."""
        return {"index": self.index, "error": self.error, "applied": self.applied,
                "applied_inputs": self.applied_inputs, "restarted": self.restart_info,
                "needs_restore": self.needs_restore, "snapshots": self.snapshots,
                "snapshot_seconds": self.snapshot_seconds, "restores": self.restores,
                "peak_rss_bytes": peak_memory_bytes(), "baseline_rss_bytes": self.baseline_rss,
                "kernel_seconds": self.kernel_seconds, "calls": self.calls, "cpu_seconds": _cpu_seconds(),
                "model_bytes": self.model_bytes, "vm_data_bytes": vm_data_bytes(), "pid": os.getpid()}

    def ping(self) -> int:
        return os.getpid()

    def try_allocate(self, nbytes: int) -> str | None:
        """Allocate and touch ``nbytes`` (then free them): None if it worked, else the error (tests the cap)."""
        try:
            a = np.ones(int(nbytes), dtype=np.uint8)
            del a
            return None
        except MemoryError as exc:
            return f"MemoryError: {exc}"


def _read_npy_into(path: Path, out: np.ndarray) -> int:
    """Read a C-order ``.npy`` of ``out``'s shape and dtype straight into ``out`` (a C-contiguous array), row
    block by row block: no second copy of the array and no memory map resident beside it.  Returns the CRC-32 of
    the data read (:func:`parvec.model_io.array_crc32` of ``out``).

    Example:
        >>> _read_npy_into(Path("snap-3/in.npy"), w_in)  # doctest: +SKIP
    """
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        shape, fortran, dtype = (np.lib.format.read_array_header_1_0(f) if version == (1, 0)
                                 else np.lib.format.read_array_header_2_0(f))
        if tuple(shape) != out.shape or dtype != out.dtype or fortran:
            raise ValueError(f"{path.name} holds {dtype} {tuple(shape)}{' (Fortran order)' if fortran else ''}, "
                             f"expected {out.dtype} {out.shape}")
        flat = out.reshape(-1).view(np.uint8)
        step = max(1, _COPY_BYTES)
        crc = 0
        for at in range(0, flat.nbytes, step):
            chunk = memoryview(flat[at:at + step])
            got = f.readinto(chunk)
            if got != len(chunk):
                raise ValueError(f"{path.name} is truncated: {at + (got or 0):,} of {flat.nbytes:,} bytes of data")
            crc = zlib.crc32(chunk, crc)
    return crc & 0xFFFFFFFF


def was_restarted() -> bool:
    """True inside an actor that Ray restarted (its process died and Ray ran its constructor again).

    Example:
        >>> was_restarted()  # outside an actor  # doctest: +SKIP
        False
    """
    import warnings

    import ray

    try:
        with warnings.catch_warnings():  # Ray's property reads its own deprecated actor_id (Ray 2.60)
            warnings.simplefilter("ignore", DeprecationWarning)
            return bool(ray.get_runtime_context().was_current_actor_reconstructed)
    except Exception:  # noqa: BLE001 - not inside an actor
        return False


# --------------------------------------------------------------------------- the client
class _RayStep(Step):
    """One client thread's way to the shards: every shard gets the same call, each answer has a time-out."""

    def __init__(self, ray: Any, shards: list[Any], negative: int, timeout_s: float, wire: str = "float32",
                 fused: bool = False) -> None:
        self.ray = ray
        self.handles = shards
        self.shards = len(shards)
        self.negative = negative
        self.timeout_s = timeout_s
        self.wire = wire
        self.fused = fused  # resolve() fuses only one shard's calls

    def submit(self, prev, nxt):
        buf = pack_call(prev, nxt, self.negative, self.wire)
        self.sent = buf.nbytes
        return [h.step.remote(buf) for h in self.handles]

    def train(self, mb):
        buf = pack_train_call(mb)
        self.sent = buf.nbytes
        return [self.handles[0].train.remote(buf)]

    def result(self, handle):
        ray = self.ray
        try:
            out = ray.get(handle, timeout=self.timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise ParvecError(f"a shard did not answer within {self.timeout_s:g} s (Cluster.timeout_s); "
                              "the cluster is overloaded or a shard hangs") from None
        except (ray.exceptions.RayActorError, ShardLost) as exc:
            # A shard died (or was fenced by the driver, or restarted and not yet restored).  Wait for this call's
            # other shards to answer too, so that none of this unit's adjusts is still on its way to a shard when
            # the driver restores a snapshot; then the unit ends.
            ray.wait(list(handle), num_returns=len(handle), timeout=self.timeout_s)
            bad = next((s for s, r in enumerate(handle) if _failed(ray, r)), -1)
            cause = _cause(exc)
            detail = cause.args[1] if isinstance(cause, ShardLost) and len(cause.args) > 1 else _first_line(cause)
            raise ShardLost(bad, str(detail)) from None
        return [] if out[0] is None else out


def _cpu_seconds() -> float:
    """CPU seconds this process has used (user + system)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _failed(ray: Any, ref: Any) -> bool:
    try:
        ray.get(ref, timeout=0)
        return False
    except Exception:
        return True


class ClientActor:
    """Trains units of the encoded corpus against the shards (``threads_per_actor`` units at once).

    ``spec`` holds ``holder`` (the :class:`RunRefs` actor's name: the keep table and the corpus parts come from
    it), ``shard_names`` (the shards are found by name), ``config``, ``minibatch_words``, ``timeout_s`` and
    ``interleave``.  The corpus parts are ``("refs", [tokens_ref, offsets_ref])`` (arrays in Ray's object store)
    or ``("files", [tokens.npy, offsets.npy])`` (memory-mapped; every client must see the files).  A unit whose
    shard call fails (a shard lost or fenced) ends with :class:`ShardLost`; the driver restores and re-queues.

    Example:
        >>> client = ray.remote(ClientActor).remote(0, spec)  # doctest: +SKIP
    """

    def __init__(self, index: int, spec: dict[str, Any]) -> None:
        import ray

        self.ray = ray
        self.index = index
        self.timeout_s = float(spec["timeout_s"])
        holder = ray.get_actor(spec["holder"])
        keep_ref, parts = ray.get(holder.get.remote("client"), timeout=self.timeout_s)
        self.shards = [ray.get_actor(name) for name in spec["shard_names"]]
        self.config = TrainConfig.from_dict(spec["config"])
        self.keep = ray.get(keep_ref, timeout=self.timeout_s)
        self.minibatch_words = int(spec["minibatch_words"])
        self.interleave = bool(spec["interleave"])
        self.wire = spec.get("wire_floats", Cluster.wire_floats)
        self.fused = spec.get("shard_calls", "split") == "fused"  # one shard only (resolve)
        self.parts = []
        for kind, (a, b) in parts:
            if kind == "refs":
                tokens, offsets = ray.get([a, b], timeout=self.timeout_s)
            else:
                tokens, offsets = np.load(a, mmap_mode="r"), np.load(b)
            self.parts.append(prepare_part(tokens, offsets, self.config.max_sentence_length))
        self._local = threading.local()
        self.restarted = was_restarted()

    def _runner(self) -> UnitRunner:
        runner = getattr(self._local, "runner", None)
        if runner is None:
            runner = self._local.runner = UnitRunner(self.config, self.keep, self.minibatch_words,
                                                             self.interleave)
        return runner

    def warm_up(self) -> None:
        """Compile the kernels on both sides (a minibatch of two words whose coefficients are zero, so the
        model does not change)."""
        from parvec.distributed.shard_core import Minibatch

        mb = Minibatch(np.zeros(2, np.int32), np.array([[0, 2, 0, 2]], np.int32), np.zeros(2, np.uint16),
                       np.uint64(1), np.ones(2, np.int32), np.zeros(2, np.float32), 2)
        step = _RayStep(self.ray, self.shards, self.config.negative, self.timeout_s, self.wire, self.fused)
        if self.fused:  # learning rates zero: the model does not change
            step.result(step.train(mb))
        else:
            f = sum_partials(step.result(step.submit(None, mb)))  # float16 from a float16 wire
            coef = np.zeros_like(f)
            K.coefficients(f, mb.n_ctx, mb.alpha, self.config.negative, coef)
            step.result(step.submit((mb, np.zeros_like(f)), None))
        runner = self._runner()
        if self.parts:
            tokens, offsets = self.parts[0]
            empty = Unit(0, 0, 0, 0, 0, 0)
            runner.run(tokens, offsets, empty, 0, Schedule(0.025, 0.0001, 1, 1), step)

    def train_unit(self, unit: tuple[int, ...], epoch: int, schedule: Schedule) -> dict[str, Any]:
        """Train one unit; returns its :class:`UnitStats` as a dict."""
        u = Unit(*unit)
        tokens, offsets = self.parts[u.part]
        step = _RayStep(self.ray, self.shards, self.config.negative, self.timeout_s, self.wire, self.fused)
        stats = self._runner().run(tokens, offsets, u, epoch, schedule, step)  # ShardLost: the unit ends
        return stats.to_dict()

    def info(self) -> dict[str, Any]:
        return {"index": self.index, "restarted": self.restarted, "peak_rss_bytes": peak_memory_bytes(),
                "pid": os.getpid(), "cpu_seconds": _cpu_seconds()}

    def ping(self) -> int:
        return os.getpid()


# --------------------------------------------------------------------------- the driver
class _Fault(Exception):
    """An actor lost while the driver waited on it: ``kind`` "shard" or "client", its index, what was seen."""

    def __init__(self, kind: str, index: int, detail: str) -> None:
        super().__init__(kind, index, detail)
        self.kind, self.index, self.detail = kind, index, detail


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def units_crc32(units: Sequence[Unit]) -> int:
    """The CRC-32 of a run's units (part, sentences, words of each, in order): a resumed run must cut its corpus
    into the same units, or the checkpoint's position (units done) would name other words.

    Example:
        >>> units_crc32([Unit(0, 0, 2, 0, 0, 6)]) == units_crc32([Unit(0, 0, 2, 0, 0, 6)])
        True
    """
    table = np.array([(u.part, u.s_lo, u.s_hi, u.words) for u in units], dtype=np.int64).reshape(-1, 4)
    return zlib.crc32(table.tobytes()) & 0xFFFFFFFF


def _check_resume(snap: dict[str, Any], shards: int, n_words: int, dim: int, units: Sequence[Unit],
                  crc: int) -> None:
    """Refuse a snapshot record that this run cannot continue (another shard count, vocabulary, dimension or cut
    of the corpus into units), naming what differs."""
    files = snap.get("files") or []
    if snap.get("id") is None or len(files) != shards:
        raise ParvecError(f"the checkpoint's snapshot holds {len(files)} shards' columns but this run has {shards} "
                          "shards: resume with the checkpoint's --shards")
    for s, f in enumerate(files):
        lo, hi = K.column_range(s, shards, dim)
        if list(f.get("shape", [])) != [n_words, hi - lo]:
            raise ParvecError(f"the checkpoint's snapshot of shard {s} holds columns of shape {f.get('shape')}, but "
                              f"this run's shard {s} holds {n_words} words x columns {lo}..{hi - 1}")
    if snap.get("units") != len(units) or snap.get("units_crc32") != crc:
        raise ParvecError(f"the corpus is cut into other units of work than the checkpoint's ({len(units)} units, the "
                          f"checkpoint's {snap.get('units')}): give the same input, the same --max-sentence-length "
                          "and the checkpoint's byte ranges")


def snapshot_position(snap: dict[str, Any], schedule: Schedule | None = None) -> Position | None:
    """A mid-epoch snapshot record's place as a :class:`parvec.engine.Position` (units for chunks), None for one
    at an epoch's start; ``schedule`` gives the learning rate there (informational).

    Example:
        >>> snapshot_position({"epoch": 0, "units_done": 0}) is None
        True
    """
    if not snap.get("units_done"):
        return None
    epoch = int(snap["epoch"])
    figures = list(snap.get("epochs", []))[:epoch]
    if len(figures) != epoch:
        raise ParvecError(f"the snapshot in epoch {epoch + 1} has the figures of {len(figures)} earlier epochs")
    total = snap["total"]
    words_done = int(snap["words_done"])
    alpha = schedule.alpha_at(schedule.position(epoch, words_done)) if schedule is not None else 0.0
    return Position(epoch, int(snap["units_done"]), words_done,
                    [int(f["words"]) for f in figures] + [int(total["words"])],
                    [int(f["pairs"]) for f in figures] + [int(total["pairs"])],
                    [float(f["loss"]) for f in figures] + [float(total["loss"])], alpha)


class ShardedRun:
    """One sharded training run on a Ray session: shards, clients, units, epochs, snapshots and faults,
    gathering, the report.

    ``parts`` are the corpus parts as the clients get them (see :class:`ClientActor`); ``part_offsets``
    their (unsplit) sentence offsets, from which the driver plans the units.  ``init`` is None (word2vec.c's
    initial vectors, generated on the shards) or ``(w_in, w_out)`` to start from.  The shards keep their
    snapshots under ``checkpoint_dir`` (``Cluster.checkpoint_dir``; a temporary directory, removed at the end,
    otherwise), each on its own node's disk; the driver writes ``manifest.json`` there once a snapshot is
    complete, then calls ``on_snapshot(snapshot)`` (the record :meth:`snapshot_record` describes), which returns
    True when it saved a checkpoint naming it (:class:`parvec.distributed.pipeline.ShardCheckpoints`): the shards
    then keep that snapshot until a newer one is checkpointed.

    ``resume`` is such a record read back from a checkpoint (its ``files`` name each shard's snapshot directory
    and the CRC-32 of its files): the shards start from it instead of the initial vectors, and training goes on
    from its place (:meth:`train` with ``start_epoch`` its epoch; the units it had done are not trained again).
    The corpus must cut into the same units (``units_crc32``), else the run is refused.

    Example:
        >>> with cluster.session() as ray:  # doctest: +SKIP
        ...     run = ShardedRun(ray, cluster, config, counts, parts, part_offsets)
        ...     stats = run.train()
    """

    def __init__(self, ray: Any, cluster: Cluster, config: TrainConfig, counts: np.ndarray, parts: list[Any],
                 part_offsets: Sequence[np.ndarray], init: tuple[np.ndarray, np.ndarray] | None = None,
                 checkpoint_dir: str | os.PathLike[str] | None = None, resume: dict[str, Any] | None = None,
                 on_snapshot: Callable[[dict[str, Any]], bool] | None = None) -> None:
        self.ray = ray
        self.cluster = cluster
        self.config = config.validate()
        self.settings = resolve(cluster, self.config)
        counts = np.asarray(counts, dtype=np.int64)
        self.n_words = len(counts)
        if self.n_words < 2:
            raise ParvecError("sharded training needs a vocabulary of at least two words (negatives must differ "
                              "from the positive word)")
        self.timeout_s = self.settings["timeout_s"]
        self._temp_checkpoints = None
        if checkpoint_dir is None and cluster.checkpoint_dir is not None:
            checkpoint_dir = cluster.checkpoint_dir
        if checkpoint_dir is None:
            checkpoint_dir = self._temp_checkpoints = tempfile.mkdtemp(prefix="parvec-shard-checkpoints-")
        self.checkpoint_dir = Path(checkpoint_dir).absolute()  # the shards' processes may run elsewhere
        try:
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            if resume is None:  # a new run starts from no snapshot
                (self.checkpoint_dir / "manifest.json").unlink(missing_ok=True)
        except OSError as exc:
            raise ParvecError(f"{self.checkpoint_dir}: cannot hold the shards' snapshots: "
                              f"{exc.strerror or exc}") from None
        units = plan_units([split_long_sentences(np.asarray(o, dtype=np.int64), self.config.max_sentence_length)
                            for o in part_offsets], self.settings["unit_words"])
        self.units = units
        self.words_per_epoch = sum(u.words for u in units)
        if self.words_per_epoch <= 0:
            raise ParvecError("the corpus has no in-vocabulary tokens to train on")
        self.units_crc32 = units_crc32(units)
        if resume is not None:
            _check_resume(resume, self.settings["shards"], self.n_words, self.config.dim, units, self.units_crc32)
        self.shard_infos: list[dict[str, Any]] = []
        self.totals = UnitStats(acks=[0] * self.settings["shards"])
        self.requeued_units = 0  # units trained again after a fault (they were done or in flight since the snapshot)
        self.requeued_words = 0
        self.dropped = 0  # unit attempts a fault stopped (their updates were rolled back by the restore)
        self.client_failures: list[dict[str, Any]] = []
        self.faults: list[dict[str, Any]] = []
        self.snapshot_log: list[dict[str, Any]] = []
        self.on_progress: Callable[..., None] | None = None
        self.position = (-1, 0)  # (epoch, units of it done): where the run is, for progress and tests
        self.on_snapshot = on_snapshot
        # Finished epochs' figures (words, pairs, summed loss), kept in every snapshot: a resumed run's report.
        self.epoch_figures: list[dict[str, Any]] = []
        self._snapshot: dict[str, Any] = self._initial_snapshot(0)
        self._snap_seq = 1
        self._checkpointed: int | None = None  # the snapshot the newest checkpoint names (kept by the shards)
        if resume is not None:
            self._snapshot = copy.deepcopy(resume)
            self._snap_seq = int(resume["id"]) + 1
            self._checkpointed = int(resume["id"])
            self.epoch_figures = list(resume.get("epochs", []))
        self._at_snapshot = True  # the shards hold exactly the newest complete snapshot (no unit since)
        try:
            self._start(counts, parts, init, resume is not None)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ start and stop
    def _start(self, counts: np.ndarray, parts: list[Any], init: tuple[np.ndarray, np.ndarray] | None,
               resuming: bool = False) -> None:
        ray, cfg, st = self.ray, self.config, self.settings
        S, C, T = st["shards"], st["clients"], st["threads"]
        cpus = cluster_cpus(ray)
        warning = actor_budget(S, C, cpus)  # before any actor starts: far too many is refused here
        print(f"parvec: starting {S} shard{'s' if S != 1 else ''} and {C} client{'s' if C != 1 else ''} x {T} "
              f"thread{'s' if T != 1 else ''} (Ray actors, one process each) on {cpus} CPUs ...", file=sys.stderr,
              flush=True)
        if warning:
            print(warning, file=sys.stderr, flush=True)
        prob, alias = word_noise_tables(counts, cfg.ns_exponent)
        noise_refs = [ray.put(prob), ray.put(alias)]
        del prob, alias
        run_id = f"{os.getpid()}-{time.time_ns()}"
        held: dict[str, Any] = {"client": [ray.put(client_keep(counts, cfg)), parts]}
        for s in range(S):
            lo, hi = K.column_range(s, S, cfg.dim)
            init_refs = [None, None]
            if init is not None:
                init_refs = [ray.put(np.ascontiguousarray(init[0][:, lo:hi])),
                             ray.put(np.ascontiguousarray(init[1][:, lo:hi]))]
            held[f"shard-{s}"] = [*noise_refs, *init_refs]
        # The references live in one actor that is never restarted; the shards and clients (restartable) take
        # only plain values and names, so Ray has nothing to warn about (see RunRefs).
        self.holder = ray.remote(RunRefs).options(name=f"parvec-sharded-{run_id}", num_cpus=0, max_restarts=0
                                                  ).remote(held)
        del held
        self.shard_names = [f"parvec-sharded-{run_id}-shard-{s}" for s in range(S)]
        shard_cls = ray.remote(ShardActor)
        self.shards = []
        for s in range(S):
            lo, hi = K.column_range(s, S, cfg.dim)
            spec = {"index": s, "shards": S, "n_words": self.n_words, "dim": cfg.dim, "lo": lo, "hi": hi,
                    "window": cfg.window, "negative": cfg.negative, "seed": cfg.seed,
                    "checkpoint_dir": str(self.checkpoint_dir), "memory_cap": st["shard_memory_bytes"],
                    "holder": f"parvec-sharded-{run_id}", "timeout_s": self.timeout_s,
                    "in_flight": st["clients"] * st["threads"], "negatives_per": st["negatives_per"],
                    "resume": resuming}
            # max_task_retries=0: a minibatch is never replayed on a restarted shard (the driver restores instead)
            self.shards.append(shard_cls.options(
                num_cpus=0, max_concurrency=C * T + 4, max_restarts=st["max_restarts"], max_task_retries=0,
                scheduling_strategy="SPREAD", name=self.shard_names[s],
            ).remote(spec))
        client_cls = ray.remote(ClientActor)
        client_spec = {"holder": f"parvec-sharded-{run_id}", "shard_names": self.shard_names,
                       "config": _config_dict(cfg), "minibatch_words": st["minibatch_words"],
                       "timeout_s": self.timeout_s, "interleave": st["minibatch_formation"] == "interleaved",
                       "wire_floats": st["wire_floats"], "shard_calls": st["shard_calls"]}
        # The clients start (their processes, imports, corpus) while the shards allocate their columns.
        self.clients = [client_cls.options(
            num_cpus=0, max_concurrency=T + 2, max_restarts=st["max_restarts"], max_task_retries=0,
            scheduling_strategy="SPREAD",
        ).remote(c, client_spec) for c in range(C)]
        self.alive = [True] * C
        # Every actor is waited for one by one: one that dies while starting is restarted by Ray like one that
        # dies while training (a restarted shard is given the initial columns); the fault is reported.
        deadline = time.monotonic() + self.timeout_s
        infos = []
        for s, h in enumerate(self.shards):
            info, restarted = self._call_through_restarts(h, "info", (), f"shard {s} of {S}", deadline)
            if info["error"]:
                self.close()
                raise ParvecError(info["error"])
            if restarted or info["needs_restore"]:  # a resumed run's shards restore its checkpoint's snapshot here
                self._call_through_restarts(h, "restore", self._restore_args(s), f"shard {s} of {S}", deadline)
                if restarted or not resuming:
                    self._start_fault("shard", s)
            infos.append(info)
        self.shard_infos = infos
        self._shard_pids = [i["pid"] for i in infos]
        deadline = time.monotonic() + self.timeout_s
        for c, h in enumerate(self.clients):
            _, restarted = self._call_through_restarts(h, "warm_up", (), f"client {c} of {C} (compiling the kernels)",
                                                       deadline)
            if restarted:
                self._start_fault("client", c)
        self._client_pids = [self._call_through_restarts(h, "ping", (), f"client {c} of {C}", deadline)[0]
                             for c, h in enumerate(self.clients)]

    def _call_through_restarts(self, handle: Any, method: str, args: tuple, what: str,
                               deadline: float) -> tuple[Any, bool]:
        # Call ``method`` until it answers; an actor lost meanwhile is waited for while Ray restarts it.
        ray = self.ray
        restarted = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise ParvecError(f"starting {what}: no answer within {self.timeout_s:g} s (Cluster.timeout_s)")
            try:
                return ray.get(getattr(handle, method).remote(*args), timeout=left), restarted
            except ray.exceptions.GetTimeoutError:
                continue
            except ray.exceptions.RayActorError as exc:
                cause = _cause(exc)
                if isinstance(cause, ParvecError):
                    self.close()
                    raise ParvecError(str(cause)) from None
                restarted = True
                if not self._back(handle, deadline):
                    self.close()
                    raise ParvecError(f"{what} was lost while starting and cannot be restarted (Cluster.max_restarts="
                                      f"{self.settings['max_restarts']}): {_first_line(exc)}") from None
            except ShardLost:  # a shard lost while a client warmed up against it: restart it, then again
                self._restore_started_shards(deadline)
            except ParvecError as exc:
                self.close()
                raise ParvecError(str(_cause(exc))) from None
            except ray.exceptions.RayError as exc:
                self.close()
                raise ParvecError(f"starting {what} failed: {_cause(exc)}") from None

    def _restore_started_shards(self, deadline: float) -> None:
        # Before training: every shard back, a restarted one given the initial columns.
        S = len(self.shards)
        for s, h in enumerate(self.shards):
            info, _ = self._call_through_restarts(h, "info", (), f"shard {s} of {S}", deadline)
            if info["needs_restore"]:
                self._call_through_restarts(h, "restore", self._restore_args(s), f"shard {s} of {S}", deadline)
                self._start_fault("shard", s)
                self._shard_pids[s] = info["pid"]

    def _start_fault(self, kind: str, index: int) -> None:
        n = len(self.shards) if kind == "shard" else len(self.clients)
        self.faults.append({"kind": kind, "index": index, "phase": "start", "epoch": None,
                            "snapshot": None, "words_retrained": 0, "units_retrained": 0})
        print(f"parvec: {kind} {index} of {n} was lost while starting; Ray restarted it; nothing to retrain",
              file=sys.stderr, flush=True)

    def _back(self, handle: Any, deadline: float) -> bool:
        # Wait for an actor to answer again (Ray restarting it); False once it cannot come back.
        ray = self.ray
        while time.monotonic() < deadline:
            try:
                ray.get(handle.ping.remote(), timeout=max(0.1, deadline - time.monotonic()))
                return True
            except ray.exceptions.ActorDiedError:
                return False
            except (ray.exceptions.ActorUnavailableError, ray.exceptions.GetTimeoutError):
                time.sleep(0.05)
        return False

    def _get(self, refs: Any, what: str) -> Any:
        ray = self.ray
        try:
            return ray.get(refs, timeout=self.timeout_s)
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise ParvecError(f"{what}: no answer within {self.timeout_s:g} s (Cluster.timeout_s)") from None
        except ParvecError as exc:
            self.close()
            raise ParvecError(str(_cause(exc))) from None
        except ray.exceptions.RayError as exc:
            self.close()
            raise ParvecError(f"{what} failed: {_cause(exc)}") from None

    def close(self) -> None:
        """Stop the actors (the Ray session itself is the cluster's) and drop temporary snapshots."""
        ray = self.ray
        shards = getattr(self, "shards", [])
        if self._temp_checkpoints is not None and shards:  # each shard removes its own (on its own node's disk)
            with contextlib.suppress(Exception):
                ray.wait([h.drop_snapshots.remote() for h in shards], num_returns=len(shards), timeout=30)
        for h in getattr(self, "clients", []) + shards + [getattr(self, "holder", None)]:
            if h is not None:
                with contextlib.suppress(Exception):
                    ray.kill(h, no_restart=True)
        self.clients, self.shards, self.holder = [], [], None
        if self._temp_checkpoints is not None:
            shutil.rmtree(self._temp_checkpoints, ignore_errors=True)
            self._temp_checkpoints = None

    # ------------------------------------------------------------ training
    def train(self, epochs: int | None = None, start_epoch: int = 0,
              on_epoch_end: Callable[[int, TrainStats], None] | None = None, resume_at: Any = None,
              schedule: Schedule | None = None) -> TrainStats:
        """Train epochs ``start_epoch .. epochs-1`` through the run engine (:mod:`parvec.engine`);
        ``on_epoch_end(epoch, stats)`` after each (the shards then hold the snapshot of that epoch's end).  A
        resumed run (``resume=``) passes its snapshot's epoch and, from a mid-epoch snapshot, its
        :class:`parvec.engine.Position` (``resume_at``: :meth:`resume_position`); ``schedule`` is the learning
        rate's (default: linear over ``epochs`` of this corpus).

        Example:
            >>> stats = run.train(epochs=5)  # doctest: +SKIP
        """
        cfg = self.config
        epochs = cfg.epochs if epochs is None else epochs
        schedule = schedule if schedule is not None else Schedule.of(cfg, self.words_per_epoch, epochs)
        engine = RunEngine(ShardedRunDriver(self), cfg, schedule, epochs=epochs, start_epoch=start_epoch,
                           resume_at=resume_at, on_epoch_end=on_epoch_end, on_progress=self.on_progress)
        self.stats = engine.run()
        return self.stats

    def resume_position(self, schedule: Schedule | None = None) -> Position | None:
        """Where the newest complete snapshot stands as a :class:`parvec.engine.Position` (its epoch, the units
        and words of it done, every epoch's figures up to it): what a checkpoint records and a resumed run's
        engine continues from; None at an epoch's start (nothing of the epoch done).

        Example:
            >>> run.resume_position().chunks_done  # doctest: +SKIP
            12
        """
        return snapshot_position(self._snapshot, schedule)

    def begin(self, start_epoch: int) -> None:
        """Before the first epoch of a call: what the shards hold now is the model the run started from, or
        (after an earlier call) the newest snapshot."""
        self._start_epoch = start_epoch
        snap = self._snapshot
        if snap["epoch"] != start_epoch or snap["units_done"] == 0:  # a resumed snapshot in start_epoch stays
            self._snapshot = self._initial_snapshot(start_epoch, snap["id"], snap.get("files"))
        self._last_snapshot_t = time.monotonic()

    def _initial_snapshot(self, epoch: int, snap_id: int | None = None,
                          files: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        # The state at the start of ``epoch``: snapshot None is the model the run starts from, which every shard
        # regenerates (nothing on disk); after an earlier train() (or resumed), the newest snapshot (its end).
        snap = {"id": snap_id, "epoch": epoch, "units_done": 0, "words_done": 0, "queue": [u.index for u in self.units],
                "total": UnitStats(acks=[0] * self.settings["shards"]).to_dict(), "epochs": list(self.epoch_figures),
                "time": time.time()}
        if files is not None:
            snap["files"] = files
        return snap

    def _restore_args(self, s: int) -> tuple[Any, ...]:
        # What shard s restores the newest complete snapshot from: its id, its directory and the files' CRC-32s.
        snap = self._snapshot
        files = snap.get("files")
        if snap["id"] is None or not files:
            return (snap["id"],)
        return (snap["id"], files[s]["directory"], files[s]["crc32"])

    def _restore_all(self, what: str) -> list[Any]:
        # Every shard restores the newest complete snapshot (a resumed run's start).
        return self._await_shards([h.restore.remote(*self._restore_args(s)) for s, h in enumerate(self.shards)],
                                  what)

    def _submit(self, c: int, unit: Unit, epoch: int, schedule: Schedule) -> Any:
        return self.clients[c].train_unit.remote(
            (unit.part, unit.s_lo, unit.s_hi, unit.index, unit.base, unit.words), epoch, schedule)

    def train_epoch(self, ctx: EpochContext) -> UnitStats:
        # Hand out the epoch's units; at the epoch's end and every checkpoint_interval_s, drain and snapshot; on a
        # fault, restore the newest complete snapshot and re-queue the units trained since.  Returns once the
        # snapshot of the epoch's end is complete.
        ray = self.ray
        epoch, schedule = ctx.epoch, ctx.schedule
        T = self.settings["threads"]
        interval = self.settings["checkpoint_interval_s"]
        queue, total = self._from_snapshot(self._snapshot)
        in_flight: dict[Any, tuple[int, Unit, float]] = {}
        busy = [0] * len(self.clients)
        last_progress = 0.0
        draining_since: float | None = None
        self.position = (epoch, len(self.units) - len(queue))
        while True:
            fault: _Fault | None = None
            interrupted: list[Unit] = []  # units a fault stopped
            if not queue and not in_flight:  # the epoch's end: the snapshot the next epoch (or the export) starts from
                try:
                    figures = {"epoch": epoch + 1, "words": total.words, "pairs": total.pairs, "loss": total.loss}
                    self._take_snapshot(epoch + 1, collections.deque(self.units),
                                        UnitStats(acks=[0] * len(self.shards)), draining_since,
                                        [*self.epoch_figures, figures])
                    return total
                except _Fault as f:
                    fault = f
            elif draining_since is None and queue and time.monotonic() - self._last_snapshot_t >= interval:
                draining_since = time.monotonic()  # hand out nothing until the units in flight are done
            if fault is None and draining_since is not None and not in_flight and queue:
                try:
                    self._take_snapshot(epoch, queue, total, draining_since)
                except _Fault as f:
                    fault = f
                draining_since = None
            if fault is None and draining_since is None:
                for c in range(len(self.clients)):
                    while self.alive[c] and busy[c] < T and queue:
                        unit = queue.popleft()
                        in_flight[self._submit(c, unit, epoch, schedule)] = (c, unit, time.monotonic())
                        busy[c] += 1
                        self._at_snapshot = False
                if not in_flight and queue:
                    raise ParvecError("every client was lost and none can be restarted: the run cannot continue")
            if fault is None and in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.25)
                for ref in ready:
                    c, unit, _t = in_flight.pop(ref)
                    busy[c] -= 1
                    try:
                        result = ray.get(ref, timeout=self.timeout_s)
                    except ray.exceptions.RayActorError as exc:  # the client died
                        self.client_failures.append({"client": c, "epoch": epoch + 1, "unit": unit.index,
                                                     "error": _first_line(exc)})
                        fault = _Fault("client", c, _first_line(exc))
                        interrupted.append(unit)
                        break
                    except ShardLost as exc:  # a shard call of the unit failed: a shard was lost
                        lost = _cause(exc)
                        shard = lost.args[0] if lost.args else -1
                        detail = lost.args[1] if len(lost.args) > 1 else _first_line(lost)
                        fault = _Fault("shard", int(shard), str(detail))
                        interrupted.append(unit)
                        self.dropped += 1
                        break
                    except ParvecError as exc:
                        raise ParvecError(str(_cause(exc))) from None
                    except ray.exceptions.RayTaskError as exc:
                        raise ParvecError(f"client {c} failed: {_cause(exc)}") from None
                    done = UnitStats.from_dict(result)
                    total.add(done)
                    self.totals.add(done)
                    self.position = (epoch, self.position[1] + 1)
            if fault is not None:
                queue, total = self._recover(epoch, fault, queue, in_flight, busy, interrupted)
                draining_since = None
                self.position = (epoch, len(self.units) - len(queue))
                continue
            now = time.monotonic()
            for c, unit, started in in_flight.values():
                if now - started > self.timeout_s:
                    raise ParvecError(f"client {c} did not finish unit {unit.index} of epoch {epoch + 1} within "
                                      f"{self.timeout_s:g} s (Cluster.timeout_s)")
            if now - last_progress > 0.25 or not (queue or in_flight):
                last_progress = now
                ctx.progress(total.words, total.pairs, total.loss)

    # ------------------------------------------------------------ snapshots and faults
    def _from_snapshot(self, snap: dict[str, Any]) -> tuple[collections.deque[Unit], UnitStats]:
        # The units still to train at a snapshot, in order, and the epoch's figures then.
        return (collections.deque(self.units[i] for i in snap["queue"]),
                UnitStats.from_dict(copy.deepcopy(snap["total"])))

    def _describe_snapshot(self, snap: dict[str, Any]) -> str:
        if snap["id"] is None:
            return f"the model the run started from (epoch {snap['epoch'] + 1} unit 0)"
        if snap["units_done"] == 0 and snap["epoch"] > 0:
            return f"the snapshot of epoch {snap['epoch']}'s end"
        return f"the snapshot of epoch {snap['epoch'] + 1} unit {snap['units_done']}"

    def _await_shards(self, refs: list[Any], what: str) -> list[Any]:
        # Results of one call per shard.  A shard lost meanwhile raises _Fault (after every call has ended);
        # an error the shard raised (a snapshot it cannot write or read) ends the run.
        ray = self.ray
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.timeout_s)
        if len(ready) < len(refs):
            late = [s for s, r in enumerate(refs) if r not in ready]
            raise ParvecError(f"{what}: shard(s) {', '.join(map(str, late))} did not answer within "
                              f"{self.timeout_s:g} s (Cluster.timeout_s)")
        out = []
        for s, ref in enumerate(refs):
            try:
                out.append(ray.get(ref, timeout=self.timeout_s))
            except (ray.exceptions.RayActorError, ShardLost) as exc:
                raise _Fault("shard", s, _first_line(_cause(exc))) from None
            except ParvecError as exc:
                raise ParvecError(str(_cause(exc))) from None
            except ray.exceptions.RayError as exc:
                raise ParvecError(f"{what} failed on shard {s}: {_cause(exc)}") from None
        return out

    def _take_snapshot(self, epoch: int, queue: collections.deque[Unit], total: UnitStats,
                       draining_since: float | None, epochs: list[dict[str, Any]] | None = None) -> None:
        # Every shard writes its columns (no unit in flight: the state is one all shards agree on); the snapshot
        # counts once all have answered and the manifest names it.  ``epochs``: the finished epochs' figures,
        # with this one's at an epoch's end.
        t0 = time.monotonic()
        snap_id = self._snap_seq
        self._snap_seq += 1
        keep = [self._snapshot["id"], self._checkpointed]
        results = self._await_shards([h.snapshot.remote(snap_id, keep) for h in self.shards], "writing a snapshot")
        units_done = len(self.units) - len(queue)
        snap = {"id": snap_id, "epoch": epoch, "units_done": units_done,
                "words_done": self.units[units_done].base if queue else 0,
                "queue": [u.index for u in queue], "total": copy.deepcopy(total.to_dict()),
                "epochs": list(self.epoch_figures if epochs is None else epochs), "time": time.time(),
                "shards": len(self.shards), "directory": str(self.checkpoint_dir),
                "files": [{"directory": r["directory"], "shape": r["shape"], "crc32": r["crc32"],
                           "columns": list(K.column_range(s, len(self.shards), self.config.dim))}
                          for s, r in enumerate(results)],
                "words_per_epoch": self.words_per_epoch, "units": len(self.units), "units_crc32": self.units_crc32}
        from parvec.fileio import atomic_output

        try:
            with atomic_output(self.checkpoint_dir / "manifest.json", "w") as f:
                json.dump(snap, f)
        except (OSError, ParvecError) as exc:
            raise ParvecError(f"{self.checkpoint_dir}: cannot write the snapshot manifest: {exc}") from None
        self._snapshot = snap
        self.epoch_figures = list(snap["epochs"])
        self._at_snapshot = True
        if self.on_snapshot is not None and self.on_snapshot(copy.deepcopy(snap)):
            self._checkpointed = snap_id
        now = time.monotonic()
        self._last_snapshot_t = now
        self.snapshot_log.append({"epoch": epoch + 1 if snap["units_done"] else epoch, "units_done": snap["units_done"],
                                  "seconds": now - t0, "drain_seconds": t0 - draining_since if draining_since else 0.0,
                                  "bytes": int(sum(r["bytes"] for r in results)),
                                  "shard_seconds_max": max(r["seconds"] for r in results)})

    def _recover(self, epoch: int, fault: _Fault, queue: collections.deque[Unit],
                 in_flight: dict[Any, tuple[int, Unit, float]], busy: list[int],
                 interrupted: list[Unit]) -> tuple[collections.deque[Unit], UnitStats]:
        # Stop the units in flight, bring every shard and client back, restore the newest complete snapshot on
        # every shard, and return the units to train again (every unit since the snapshot: those done and those
        # the fault interrupted) with the epoch's figures at the snapshot.
        ray = self.ray
        t0 = time.monotonic()
        faults = [fault]
        not_started = {u.index for u in queue}
        fences = [h.fence.remote() for h in self.shards]  # the units in flight stop at their next shard call
        deadline = time.monotonic() + self.timeout_s
        while in_flight:
            ready, _ = ray.wait(list(in_flight), num_returns=len(in_flight),
                                timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                raise ParvecError(f"after {fault.kind} {fault.index} was lost, the units in flight did not stop within "
                                  f"{self.timeout_s:g} s (Cluster.timeout_s)")
            for ref in ready:
                c, unit, _t = in_flight.pop(ref)
                busy[c] -= 1
                interrupted.append(unit)
                try:
                    ray.get(ref, timeout=self.timeout_s)
                except ray.exceptions.RayActorError as exc:
                    self.client_failures.append({"client": c, "epoch": epoch + 1, "unit": unit.index,
                                                 "error": _first_line(exc)})
                    faults.append(_Fault("client", c, _first_line(exc)))
                except ShardLost:
                    self.dropped += 1
                except Exception:  # noqa: BLE001 - the unit is trained again whatever stopped it
                    pass
        lost_shards: dict[int, str] = {}
        for _attempt in range(len(self.shards) * (self.settings["max_restarts"] + 1) + 1):
            self._shards_back(epoch)
            ray.wait(fences, num_returns=len(fences), timeout=self.timeout_s)  # no fence may land after the restore
            infos = self._await_shards([h.info.remote() for h in self.shards], "reading the shards' state")
            for s, info in enumerate(infos):
                if info["pid"] != self._shard_pids[s]:
                    lost_shards[s] = f"its process {self._shard_pids[s]} died; Ray restarted it as {info['pid']}"
                    self._shard_pids[s] = info["pid"]
            snap = self._snapshot
            try:
                restored = self._restore_all(f"restoring {self._describe_snapshot(snap)}")
                break
            except _Fault as again:  # another shard lost while restoring: bring it back and restore again
                faults.append(again)
                fences = [h.fence.remote() for h in self.shards]
        else:  # pragma: no cover - bounded by the restarts Ray grants
            raise ParvecError("the shards kept failing while restoring a snapshot: the run cannot continue")
        lost_clients: dict[int, str] = {}
        for c, h in enumerate(self.clients):
            if not self.alive[c]:
                continue
            if not self._back(h, time.monotonic() + self.timeout_s):
                self.alive[c] = False
                lost_clients[c] = (f"its process {self._client_pids[c]} died and cannot be restarted (Cluster."
                                   f"max_restarts={self.settings['max_restarts']}); training goes on without it")
                continue
            pid = ray.get(h.ping.remote(), timeout=self.timeout_s)
            if pid != self._client_pids[c]:
                lost_clients[c] = f"its process {self._client_pids[c]} died; Ray restarted it as {pid}"
                self._client_pids[c] = pid
        if not any(self.alive):
            raise ParvecError("every client was lost and none can be restarted: the run cannot continue")
        queue, total = self._from_snapshot(snap)
        again = [u for u in queue if u.index not in not_started]
        words = sum(u.words for u in again)
        self.requeued_units += len(again)
        self.requeued_words += words
        seconds = time.monotonic() - t0
        self._last_snapshot_t = time.monotonic()
        self._at_snapshot = True
        lost = [("shard", s) for s in sorted(lost_shards)] + [("client", c) for c in sorted(lost_clients)]
        reasons = [lost_shards[s] for s in sorted(lost_shards)] + [lost_clients[c] for c in sorted(lost_clients)]
        if not lost:  # nothing restarted: a shard or client that did not answer for a while
            lost, reasons = [(fault.kind, fault.index)], [fault.detail]
        names = " and ".join(f"{k} {i} of {len(self.shards) if k == 'shard' else len(self.clients)}" for k, i in lost)
        why = "; ".join(reasons)
        idle = not interrupted and len(not_started) == len(self.units)  # between epochs or after training
        when = f"after epoch {epoch + 1}" if idle else f"in epoch {epoch + 1}"
        record = {"kind": lost[0][0], "index": lost[0][1], "lost": [f"{k} {i}" for k, i in lost],
                  "phase": "gather" if idle else "train",
                  "epoch": epoch + 1, "error": why[:300], "snapshot": {
                      "id": snap["id"], "epoch": snap["epoch"] + 1 if snap["units_done"] or snap["id"] is None
                      else snap["epoch"], "units_done": snap["units_done"],
                      "description": self._describe_snapshot(snap)},
                  "units_retrained": len(again), "words_retrained": words, "recovery_seconds": seconds,
                  "restore_seconds_max": max(r["seconds"] for r in restored)}
        self.faults.append(record)
        print(f"parvec: {names} {'was' if len(lost) == 1 else 'were'} lost {when} ({why[:200]}); every "
              f"shard restored {self._describe_snapshot(snap)}; {words:,} words retrained "
              f"[recovered in {seconds:.1f} s]", file=sys.stderr, flush=True)
        return queue, total

    def _shards_back(self, epoch: int) -> None:
        # Wait for every shard to answer; one that cannot come back ends the run, naming it.
        deadline = time.monotonic() + self.timeout_s
        for s, h in enumerate(self.shards):
            if self._back(h, deadline):
                continue
            if time.monotonic() < deadline:
                why = (f"its restarts, Cluster.max_restarts={self.settings['max_restarts']}, are used up, or its node "
                       "is gone")
            else:
                why = f"not back within {self.timeout_s:g} s, Cluster.timeout_s"
            raise ParvecError(f"shard {s} was lost and cannot be restarted ({why}) in epoch {epoch + 1}: the run "
                              "cannot continue without its columns")

    def _recover_idle(self, fault: _Fault) -> None:
        # A shard lost between epochs or after training (gathering, export): the newest complete snapshot is the
        # model as trained, so restoring it loses nothing.
        if not self._at_snapshot:
            raise ParvecError(f"{fault.kind} {fault.index} was lost while no snapshot held the shards' state "
                              f"({fault.detail}): the run cannot continue")
        epoch = self._snapshot["epoch"]
        queue, _ = self._from_snapshot(self._snapshot)
        self._recover(max(epoch - 1, 0) if not self._snapshot["units_done"] else epoch, fault, queue, {},
                      [0] * len(self.clients), [])

    # ------------------------------------------------------------ the model back
    def row_blocks(self, block_rows: int | None = None) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
        """Yield ``(lo, hi, w_in rows, w_out rows)`` block by block, each assembled from the shards' column
        blocks; the next block is requested while the caller handles this one.  A shard lost meanwhile is
        restored from the snapshot of the last epoch's end (the model as trained) and the block asked again."""
        dim = self.config.dim
        if block_rows is None:
            block_rows = max(1, _ROW_BLOCK_BYTES // (4 * dim))
        starts = list(range(0, self.n_words, block_rows))

        def request(lo: int) -> list[Any]:
            hi = min(self.n_words, lo + block_rows)
            return [h.rows.remote(lo, hi) for h in self.shards]

        pending = request(starts[0]) if starts else None
        for k, lo in enumerate(starts):
            hi = min(self.n_words, lo + block_rows)
            while True:
                try:
                    parts = self._await_shards(pending, "reading the model from the shards")
                    break
                except _Fault as fault:
                    self._recover_idle(fault)
                    pending = request(lo)
            pending = request(starts[k + 1]) if k + 1 < len(starts) else None
            w_in = np.empty((hi - lo, dim), dtype=np.float32)
            w_out = np.empty((hi - lo, dim), dtype=np.float32)
            for s, (a, b) in enumerate(parts):
                c_lo, c_hi = K.column_range(s, len(self.shards), dim)
                w_in[:, c_lo:c_hi] = a
                w_out[:, c_lo:c_hi] = b
            yield lo, hi, w_in, w_out

    def gather(self, w_in: np.ndarray, w_out: np.ndarray) -> None:
        """Copy the model from the shards into ``w_in``/``w_out`` (in place)."""
        for lo, hi, a, b in self.row_blocks():
            w_in[lo:hi] = a
            w_out[lo:hi] = b

    def report(self) -> dict[str, Any]:
        """The run's sharded figures (bytes per trained input word measured at the clients, memory, snapshots,
        faults)."""
        st, cfg = self.settings, self.config
        infos: list[dict[str, Any]] = []
        if self.shards:
            while True:
                try:
                    infos = self._await_shards([h.info.remote() for h in self.shards], "reading the shards' figures")
                    break
                except _Fault as fault:
                    self._recover_idle(fault)
        client_infos = []
        for c, h in enumerate(self.clients):
            if self.alive[c]:
                with contextlib.suppress(Exception):
                    client_infos.append(self.ray.get(h.info.remote(), timeout=self.timeout_s))
        t = self.totals
        inputs = max(t.inputs, 1)
        w_bar = t.pairs / inputs  # positives per input word
        S, d, n = st["shards"], cfg.dim, cfg.negative
        paper = w_bar * (n + 1) * S * 4
        rowwise = (1 + w_bar + w_bar * n) * d * 4
        snaps = self.snapshot_log
        return {
            "shards": S, "clients": st["clients"], "client_threads": st["threads"],
            "minibatch_words": st["minibatch_words"], "minibatch_words_in_flight": st["minibatch_words_in_flight"],
            "minibatch_formation": st["minibatch_formation"], "negatives_per": st["negatives_per"],
            "wire_floats": st["wire_floats"], "fused_calls": st["shard_calls"] == "fused",
            "unit_words": st["unit_words"], "trained_input_words": t.inputs, "minibatches": t.minibatches,
            "contexts_per_input": w_bar,
            "bytes_sent_per_word": t.bytes_sent / inputs, "bytes_received_per_word": t.bytes_received / inputs,
            "index_bytes_sent_per_word": t.index_bytes_sent / inputs,
            "paper_bytes_per_word": paper, "rowwise_ps_bytes_per_word": rowwise,
            "ratio_to_rowwise_ps": (t.bytes_received / inputs) / rowwise if rowwise else None,
            "shard_peak_memory_bytes": [i["peak_rss_bytes"] for i in infos],
            # Private writable memory now (what --shard-memory caps; the object store's shared pages are not in it).
            "shard_data_bytes": [i["vm_data_bytes"] for i in infos],
            "shard_model_bytes": [i["model_bytes"] for i in infos],
            # Faults: each lost shard or client, the snapshot every shard restored, the words trained again.
            "faults": self.faults,
            "shard_restarts": [i["restarted"] for i in infos],
            "words_retrained": sum(f["words_retrained"] for f in self.faults),
            "requeued_units": self.requeued_units, "requeued_words": self.requeued_words,
            "dropped_minibatches": self.dropped, "client_failures": self.client_failures,
            # Consistent snapshots (every epoch's end and every checkpoint_interval_s): how many, their cost.
            "snapshots": len(snaps), "snapshot_interval_s": st["checkpoint_interval_s"],
            "snapshot_seconds": sum(x["seconds"] for x in snaps),
            "snapshot_drain_seconds": sum(x["drain_seconds"] for x in snaps),
            "snapshot_bytes": snaps[-1]["bytes"] if snaps else 0,
            "snapshot_shard_seconds_max": max((x["shard_seconds_max"] for x in snaps), default=0.0),
            "checkpoint_dir": None if self._temp_checkpoints is not None else str(self.checkpoint_dir),
            # Where the time goes (seconds summed over client threads / shard threads).
            "client_unit_seconds": t.seconds, "client_wait_seconds": t.wait_seconds,
            "client_form_seconds": t.form_seconds, "client_coefficient_seconds": t.client_seconds,
            "shard_kernel_seconds": [i["kernel_seconds"] for i in infos], "shard_calls": [i["calls"] for i in infos],
            # CPU seconds of each actor process since it started (warm-up and compilation included).
            "shard_cpu_seconds": [i["cpu_seconds"] for i in infos],
            "client_cpu_seconds": [i["cpu_seconds"] for i in client_infos],
        }


# --------------------------------------------------------------------------- the drivers
class ShardedRunDriver:
    """A :class:`ShardedRun`'s epochs as a :class:`parvec.engine.Driver` (the run's owner starts and closes it).

    ``gather_into`` (``(w_in, w_out)``): copy the model from the shards into these arrays after every epoch (the
    ``Word2Vec`` API, whose epoch callbacks and checkpoints read them); None leaves it on the shards (the CLI
    pipeline streams it out at the end).

    Example:
        >>> RunEngine(ShardedRunDriver(run), config, Schedule.of(config, run.words_per_epoch)).run()  # doctest: +SKIP
    """

    mode = "sharded"
    label = "sharded"
    error_label = "sharded"

    def __init__(self, run: ShardedRun | None = None, gather_into: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.run = run
        self.gather_into = gather_into

    @property
    def divergence_hint(self) -> str:
        """What else to lower when a sharded run diverges."""
        assert self.run is not None
        return f"minibatch_words (now {self.run.settings['minibatch_words']})"

    def prepare(self, start_epoch: int, epochs: int) -> None:
        assert self.run is not None
        self.run.begin(start_epoch)

    def train_epoch(self, ctx: EpochContext) -> EpochResult:
        assert self.run is not None
        carried = 0
        if ctx.resume is not None:  # a resumed epoch: the run's snapshot holds its first units, done before
            done = self.run._snapshot["units_done"] if self.run._snapshot["epoch"] == ctx.epoch else 0
            if ctx.resume.units_done != done:
                raise ParvecError(f"the resumed position is {ctx.resume.units_done} units into epoch {ctx.epoch + 1} "
                                  f"but the shards' snapshot {done}")
            carried = ctx.resume.words
        total = self.run.train_epoch(ctx)
        if self.gather_into is not None:
            self.run.gather(*self.gather_into)
        # words: this call's (the units before a resumed snapshot were counted by the run that trained them)
        return EpochResult(words=total.words - carried, pairs=total.pairs, loss=total.loss)

    def vectors_finite(self) -> bool:
        # The loss is checked by the engine; the vectors, when they are here.
        return self.gather_into is None or bool(np.isfinite(self.gather_into[0].sum()))

    def finish(self) -> None:
        pass


class ShardedDriver(ShardedRunDriver):
    """The sharded driver behind ``Word2Vec(..., cluster=Cluster(..., mode="sharded"))``.

    The model fits in the driver here: the shards start from ``w_in``/``w_out``'s column blocks and the trained
    model is gathered back into them after every epoch (the callbacks and checkpoints read it).  It enters the
    cluster's Ray session in :meth:`prepare` and leaves it in :meth:`finish`.  For models no process holds, use
    the CLI pipeline (``parvec train --cluster ... --mode sharded``, :mod:`parvec.distributed.pipeline`).

    Example:
        >>> driver = ShardedDriver(Cluster("local:4", mode="sharded", shards=2, clients=1), config, counts,
        ...                        w_in, w_out).use_corpus(corpus)  # doctest: +SKIP
        >>> stats = RunEngine(driver, config, Schedule.of(config, corpus.n_tokens)).run()  # doctest: +SKIP
    """

    def __init__(self, cluster: Cluster, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray,
                 w_out: np.ndarray) -> None:
        super().__init__(None, (w_in, w_out))
        self.cluster = cluster
        self.config = config.validate()
        self.settings = resolve(cluster, self.config)
        self.counts = np.asarray(counts, dtype=np.int64)
        n = len(self.counts)
        for name, w in (("w_in", w_in), ("w_out", w_out)):
            if w.shape != (n, config.dim) or w.dtype != np.float32:
                raise ParvecError(f"{name} must be float32 of shape ({n}, {config.dim})")
        self.w_in, self.w_out = w_in, w_out
        self.corpus: EncodedCorpus | None = None
        self._session: contextlib.ExitStack | None = None
        self._report: dict[str, Any] = {}
        self.on_progress: Callable[..., None] | None = None  # when it runs itself (ShardedTrainer)
        self.stats = TrainStats()

    @property
    def divergence_hint(self) -> str:
        return f"minibatch_words (now {self.settings['minibatch_words']})"

    def use_corpus(self, corpus: EncodedCorpus) -> ShardedDriver:
        """Train on ``corpus`` (put into Ray's object store when the run starts); returns self."""
        if len(corpus.vocab) != len(self.w_in):
            raise ParvecError(f"the corpus vocabulary has {len(corpus.vocab)} words but the model has "
                              f"{len(self.w_in)}")
        self.corpus = corpus
        return self

    def prepare(self, start_epoch: int, epochs: int) -> None:
        assert self.corpus is not None, "use_corpus() first"
        corpus = self.corpus
        self._session = contextlib.ExitStack()
        ray = self._session.enter_context(self.cluster.session())
        parts = [("refs", [ray.put(np.ascontiguousarray(corpus.tokens)),
                           ray.put(np.asarray(corpus.offsets, dtype=np.int64))])]
        self.run = ShardedRun(ray, self.cluster, self.config, self.counts, parts, [corpus.offsets],
                              init=(self.w_in, self.w_out))
        self._session.callback(self.run.close)
        super().prepare(start_epoch, epochs)

    def finish(self) -> None:
        if self._session is not None:
            try:
                if self.run is not None:
                    self._report = self.run.report()
            finally:
                self._session.close()
                self._session = None
                self.run = None

    def report(self) -> dict[str, Any]:
        """The last run's sharded figures (see :meth:`ShardedRun.report`)."""
        return dict(self._report)


class ShardedTrainer(SelfRunning, ShardedDriver):
    """The sharded driver that runs itself: ``ShardedTrainer(cluster, config, counts, w_in, w_out).train(corpus)``.

    Example:
        >>> trainer = ShardedTrainer(Cluster("local:4", mode="sharded"), config, counts, w_in, w_out)  # doctest: +SKIP
        >>> stats = trainer.train(corpus)  # doctest: +SKIP
    """
