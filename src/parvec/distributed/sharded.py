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
- **Faults.** Shards write their columns to ``.npy`` checkpoints every ``checkpoint_interval_s`` (atomically,
  with the count of minibatches applied).  A shard that dies is restarted by Ray (``max_restarts``) from its
  last checkpoint; the clients drop the minibatches in flight, wait for it, and carry on; the updates it
  applied since the checkpoint are lost and reported.  A client that dies has its unit re-queued (the
  unit's updates made before the death stay: those words are trained twice, and reported).  Every wait
  has a time-out (``Cluster.timeout_s``); a shard or client that cannot come back ends the run with a
  :class:`ParvecError`.
- **Memory.** ``Cluster.shard_memory_bytes`` caps each shard process's data segment (RLIMIT_DATA, set in
  the actor before it allocates); a shard whose columns do not fit stops the run before training with a
  clear error.

:class:`ShardedTrainer` is the driver the :class:`~parvec.word2vec.Word2Vec` API uses (the model fits in
the driver there: it is sent to the shards at the start and gathered back into ``w_in``/``w_out``);
:mod:`parvec.distributed.pipeline` is the four-step pipeline of ``parvec train --mode sharded``, which never
holds the model in one process.
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.distributed.cluster import Cluster
from parvec.distributed.shard_core import (
    Schedule,
    ShardLost,
    Step,
    Unit,
    UnitRunner,
    UnitStats,
    cap_memory,
    client_keep,
    noise_tables,
    pack_call,
    peak_rss_bytes,
    plan_units,
    prepare_part,
    unpack_call,
    vm_data_bytes,
)
from parvec.errors import ParvecError
from parvec.kernels import sharded as K
from parvec.trainer import TrainStats, split_long_sentences

_ROW_BLOCK_BYTES = 32 << 20  # rows gathered/streamed per block: about this many bytes per matrix


# --------------------------------------------------------------------------- configuration
# Input words trained at once over all client threads when minibatch_words is left to parvec: on
# ../shared/data's corpus (5 epochs, S = 2) 2 x 2 x 256 words (1024) made the loss climb from 2.5 to 8.5 in the
# first two epochs (WS-353 -0.09) with contiguous minibatches; 2 clients x 1 thread x 256 (512), interleaved,
# matched one process over 3 seeds (docs/distributed.md).
IN_FLIGHT_WORDS = 512
MIN_MINIBATCH_WORDS = 16


def resolve(cluster: Cluster, config: TrainConfig) -> dict[str, Any]:
    """The sharded settings of ``cluster``, defaults filled in and checked.

    ``minibatch_words`` left out (None) is ``IN_FLIGHT_WORDS // (clients x threads)``, between 16 and 256:
    every client thread has one minibatch in flight, trained from vectors without the others' updates.

    Example:
        >>> resolve(Cluster("local:4", mode="sharded"), TrainConfig(dim=100))["shards"]
        2
        >>> two_by_two = Cluster("local:4", mode="sharded", clients=2, threads_per_actor=2)
        >>> resolve(two_by_two, TrainConfig())["minibatch_words"]
        128
    """
    shards = cluster.shards or 2
    clients = cluster.clients or 2
    threads = cluster.threads_per_actor or 2
    if shards > config.dim:
        raise ParvecError(f"--shards {shards}: more shards than vector dimensions ({config.dim}); every shard "
                          "needs at least one column")
    minibatch_words = cluster.minibatch_words
    if minibatch_words is None:  # the words in flight decide the staleness (docs/distributed.md): 512 at most
        minibatch_words = max(MIN_MINIBATCH_WORDS, min(256, IN_FLIGHT_WORDS // (clients * threads)))
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
    if config.window > 65535:
        raise ParvecError(f"window {config.window}: sharded mode sends each window shrink in 16 bits (at most 65535)")
    return {"shards": shards, "clients": clients, "threads": threads, "minibatch_words": minibatch_words,
            "minibatch_words_in_flight": clients * threads * minibatch_words,
            "minibatch_formation": cluster.minibatch_formation,
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
def checkpoint_paths(directory: str | os.PathLike[str], shard: int, shards: int) -> dict[str, Path]:
    """The files of shard ``shard``'s checkpoint: its input and output columns (.npy) and meta.json.

    Example:
        >>> sorted(checkpoint_paths("ck", 0, 2))
        ['in', 'meta', 'out']
    """
    base = Path(directory) / f"shard-{shard}-of-{shards}"
    return {"in": base / "in.npy", "out": base / "out.npy", "meta": base / "meta.json"}


class ShardActor:
    """One column block of both matrices and the noise table; the server side of every minibatch.

    Made a Ray actor by :class:`ShardedRun` (``ray.remote(ShardActor).options(...)``).  ``spec`` holds
    ``index, shards, n_words, dim, lo, hi, window, negative, seed, checkpoint_dir, checkpoint_interval_s,
    memory_cap``; ``init_in``/``init_out`` are the column blocks to start from (None: word2vec.c's initial
    input vectors for ``seed`` and zero output vectors).  A restarted actor (Ray runs ``__init__`` again)
    starts from its last checkpoint when there is one.

    Example:
        >>> shard = ray.remote(ShardActor).remote(spec, [prob, alias, None, None])  # doctest: +SKIP
    """

    def __init__(self, spec: dict[str, Any], refs: list[Any]) -> None:
        # ``refs``: [noise_prob, noise_alias, init_in, init_out], object references (or arrays; init: None)
        # nested in a list so that Ray does not resolve them before __init__ (it warns about restartable
        # actors with arguments in the object store; the driver keeps them alive for the whole run).
        import ray

        noise_prob, noise_alias, init_in, init_out = (
            ray.get(r) if isinstance(r, ray.ObjectRef) else r for r in refs)
        self.spec = spec
        self.error: str | None = None
        self.index = spec["index"]
        self.window = int(spec["window"])
        self.negative = int(spec["negative"])
        self.noise_prob, self.noise_alias = noise_prob, noise_alias
        self.applied = 0  # minibatches adjusted (restored from the checkpoint on a restart)
        self.kernel_seconds = 0.0  # CPU seconds in unpacking, dotprod and adjust, summed over Ray's threads
        self.calls = 0
        self.applied_inputs = 0
        self.restored: dict[str, Any] | None = None
        self.checkpoints = 0
        self.baseline_rss = peak_rss_bytes()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        n, lo, hi = int(spec["n_words"]), int(spec["lo"]), int(spec["hi"])
        width = hi - lo
        self.model_bytes = 2 * n * width * 4
        what = f"shard {self.index} of {spec['shards']} (columns {lo}..{hi - 1} of {spec['dim']})"
        try:
            if spec.get("memory_cap") is not None:
                cap = int(spec["memory_cap"])
                cap_memory(cap, what)
                used = vm_data_bytes() or 0
                if used + self.model_bytes > cap:
                    raise ParvecError(
                        f"{what} needs {self.model_bytes / 2**30:.2f} GiB for its columns of {n:,} words, but its "
                        f"memory cap of {cap / 2**30:.2f} GiB leaves {(cap - used) / 2**30:.2f} GiB; use more shards "
                        "or a higher --shard-memory")
            paths = (checkpoint_paths(spec["checkpoint_dir"], self.index, spec["shards"])
                     if spec.get("checkpoint_dir") else None)
            restarted = False
            if paths is not None:
                # The driver clears this directory when a run starts: a marker already there means Ray restarted us.
                marker = paths["meta"].parent / "started"
                restarted = marker.exists()
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
            if paths is not None and paths["meta"].exists():
                self._restore(paths, n, width)
            else:
                if restarted:
                    # Restarted before its first checkpoint: back to the initial columns, every update lost.
                    self.restored = {"checkpoint_applied": 0, "checkpoint_time": None, "pid": os.getpid()}
                self.w_in = (K.init_columns(n, int(spec["dim"]), lo, hi, int(spec["seed"])) if init_in is None
                             else np.array(init_in, dtype=np.float32, order="C"))
                self.w_out = (np.zeros((n, width), dtype=np.float32) if init_out is None
                              else np.array(init_out, dtype=np.float32, order="C"))
        except MemoryError as exc:
            self.error = (f"{what}: out of memory allocating its columns ({self.model_bytes / 2**30:.2f} GiB for "
                          f"{n:,} words): {exc}; use more shards or a higher memory cap")
            return
        except ParvecError as exc:
            self.error = str(exc)
            return
        if paths is not None:
            self._paths = paths
            threading.Thread(target=self._checkpoint_loop, name=f"shard-{self.index}-checkpoints",
                             daemon=True).start()

    # ------------------------------------------------------------ checkpoints
    def _restore(self, paths: dict[str, Path], n: int, width: int) -> None:
        meta = json.loads(paths["meta"].read_text(encoding="utf-8"))
        w_in = np.load(paths["in"])
        w_out = np.load(paths["out"])
        if w_in.shape != (n, width) or w_out.shape != (n, width):
            raise ParvecError(f"{paths['in'].parent}: checkpoint shape {w_in.shape} does not match ({n}, {width})")
        self.w_in, self.w_out = np.ascontiguousarray(w_in), np.ascontiguousarray(w_out)
        self.applied = int(meta["applied"])
        self.applied_inputs = int(meta["applied_inputs"])
        self.restored = {"checkpoint_applied": self.applied, "checkpoint_time": meta["time"], "pid": os.getpid()}

    def _checkpoint_loop(self) -> None:
        interval = float(self.spec["checkpoint_interval_s"])
        while not self._stop.wait(interval):
            try:
                self.checkpoint()
            except Exception as exc:  # a failed checkpoint is reported, never fatal to training
                print(f"parvec shard {self.index}: checkpoint failed: {exc}", file=sys.stderr)

    def checkpoint(self) -> dict[str, Any]:
        """Write this shard's columns (``in.npy``, ``out.npy``) and then ``meta.json``, each atomically.

        Other threads keep training meanwhile (Hogwild: a row may be caught mid-update)."""
        self._check()
        from parvec.formats import atomic_output

        paths = self._paths
        paths["meta"].parent.mkdir(parents=True, exist_ok=True)
        with self._lock:  # one checkpoint at a time
            applied, applied_inputs = self.applied, self.applied_inputs
            for key, w in (("in", self.w_in), ("out", self.w_out)):
                with atomic_output(paths[key], "wb") as f:
                    np.save(f, w, allow_pickle=False)
            meta = {"shard": self.index, "shards": self.spec["shards"], "applied": applied,
                    "applied_inputs": applied_inputs, "time": time.time()}
            with atomic_output(paths["meta"], "w") as f:
                json.dump(meta, f)
            self.checkpoints += 1
        return meta

    # ------------------------------------------------------------ serving
    def _check(self) -> None:
        if self.error is not None:
            raise ParvecError(self.error)

    def step(self, call: np.ndarray) -> np.ndarray | None:
        """Adjust the previous minibatch (if any), then return the next one's partial dot products (if any).

        ``call`` is one packed byte array (:func:`parvec.distributed.shard_core.pack_call`)."""
        self._check()
        t0 = time.thread_time()  # this thread's CPU time: the machine's load does not inflate it
        p_seq, p_seg, p_shrink, p_seed, p_coef, n_seq, n_seg, n_shrink, n_seed, n_out = unpack_call(call)
        self.calls += 1
        if p_seq is not None:
            K.adjust(self.w_in, self.w_out, p_seq, p_seg, p_shrink, self.window, self.negative, self.noise_prob,
                     self.noise_alias, np.uint64(p_seed), p_coef)
            self.applied += 1  # under the GIL; Ray's threads only (the kernels run without it)
            self.applied_inputs += len(p_shrink)
        if n_seq is None:
            self.kernel_seconds += time.thread_time() - t0
            return None
        out = np.empty(int(n_out), dtype=np.float32)
        K.dotprod(self.w_in, self.w_out, n_seq, n_seg, n_shrink, self.window, self.negative, self.noise_prob,
                  self.noise_alias, np.uint64(n_seed), out)
        self.kernel_seconds += time.thread_time() - t0
        return out

    def rows(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``lo .. hi`` of this shard's columns of both matrices (copies), for gathering and export."""
        self._check()
        return self.w_in[lo:hi].copy(), self.w_out[lo:hi].copy()

    def info(self) -> dict[str, Any]:
        """Status and figures: error, applied minibatches, restarts, memory."""
        return {"index": self.index, "error": self.error, "applied": self.applied,
                "applied_inputs": self.applied_inputs, "restored": self.restored, "checkpoints": self.checkpoints,
                "peak_rss_bytes": peak_rss_bytes(), "baseline_rss_bytes": self.baseline_rss,
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


# --------------------------------------------------------------------------- the client
class _RayStep(Step):
    """One client thread's way to the shards: every shard gets the same call, each answer has a time-out."""

    def __init__(self, ray: Any, shards: list[Any], negative: int, timeout_s: float) -> None:
        self.ray = ray
        self.handles = shards
        self.shards = len(shards)
        self.negative = negative
        self.timeout_s = timeout_s

    def submit(self, prev, nxt):
        buf = pack_call(prev, nxt, self.negative)
        self.sent = buf.nbytes
        return [h.step.remote(buf) for h in self.handles]

    def result(self, handle):
        ray = self.ray
        try:
            out = ray.get(handle, timeout=self.timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise ParvecError(f"a shard did not answer within {self.timeout_s:g} s (Cluster.timeout_s); "
                              "the cluster is overloaded or a shard hangs") from None
        except ray.exceptions.RayActorError as exc:
            bad = next((s for s, r in enumerate(handle) if _failed(ray, r)), -1)
            raise ShardLost(bad, str(exc)) from None
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

    ``parts`` lists the corpus parts: ``("refs", [tokens_ref, offsets_ref])`` (arrays in Ray's object store)
    or ``("files", [tokens.npy, offsets.npy])`` (memory-mapped; every client must see the files).

    Example:
        >>> client = ray.remote(ClientActor).remote(0, shards, config, keep, parts, 256, 300.0)  # doctest: +SKIP
    """

    def __init__(self, index: int, shards: list[Any], config: dict[str, Any], keep: list[Any], parts: list[Any],
                 minibatch_words: int, timeout_s: float, interleave: bool = True) -> None:
        import ray

        self.ray = ray
        self.index = index
        self.shards = shards
        self.config = TrainConfig.from_dict(config)
        self.keep = ray.get(keep[0])  # nested: resolved here, not before __init__ (see ShardActor)
        self.minibatch_words = minibatch_words
        self.interleave = interleave
        self.timeout_s = timeout_s
        self.parts = []
        for kind, (a, b) in parts:
            if kind == "refs":
                tokens, offsets = ray.get([a, b])
            else:
                tokens, offsets = np.load(a, mmap_mode="r"), np.load(b)
            self.parts.append(prepare_part(tokens, offsets, self.config.max_sentence_length))
        self._local = threading.local()
        self.lost_events: list[dict[str, Any]] = []

    def _runner(self) -> UnitRunner:
        runner = getattr(self._local, "runner", None)
        if runner is None:
            runner = self._local.runner = UnitRunner(self.config, self.keep, self.minibatch_words,
                                                             self.interleave)
        return runner

    def _wait_for_shards(self, lost: ShardLost) -> None:
        # A shard died: Ray restarts it from its checkpoint.  Wait until every shard answers again.
        ray = self.ray
        deadline = time.monotonic() + self.timeout_s
        for s, h in enumerate(self.shards):
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ParvecError(f"shard {s} did not come back within {self.timeout_s:g} s (Cluster.timeout_s)")
                try:
                    ray.get(h.ping.remote(), timeout=left)
                    break
                except ray.exceptions.ActorDiedError:
                    raise ParvecError(f"shard {s} was lost and cannot be restarted (its restarts, Cluster.max_restarts,"
                                      " are used up, or its node is gone): the run cannot continue") from None
                except ray.exceptions.ActorUnavailableError:
                    time.sleep(0.05)
                except ray.exceptions.GetTimeoutError:
                    continue
        self.lost_events.append({"shard": lost.args[0] if lost.args else -1, "time": time.time()})

    def warm_up(self) -> None:
        """Compile the kernels on both sides (a minibatch of two words whose coefficients are zero, so the
        model does not change)."""
        from parvec.distributed.shard_core import Minibatch

        mb = Minibatch(np.zeros(2, np.int32), np.array([[0, 2, 0, 2]], np.int32), np.zeros(2, np.uint16),
                       np.uint64(1), np.ones(2, np.int32), np.zeros(2, np.float32), 2)
        step = _RayStep(self.ray, self.shards, self.config.negative, self.timeout_s)
        f = step.result(step.submit(None, mb))
        coef = np.zeros_like(f[0])
        K.coefficients(f[0], mb.n_ctx, mb.alpha, self.config.negative, coef)
        step.result(step.submit((mb, np.zeros_like(f[0])), None))
        runner = self._runner()
        if self.parts:
            tokens, offsets = self.parts[0]
            empty = Unit(0, 0, 0, 0, 0, 0)
            runner.run(tokens, offsets, empty, 0, Schedule(0.025, 0.0001, 1, 1), step)

    def train_unit(self, unit: tuple[int, ...], epoch: int, schedule: tuple[float, float, int, int]) -> dict[str, Any]:
        """Train one unit; returns its :class:`UnitStats` as a dict."""
        u = Unit(*unit)
        tokens, offsets = self.parts[u.part]
        step = _RayStep(self.ray, self.shards, self.config.negative, self.timeout_s)
        stats = self._runner().run(tokens, offsets, u, epoch, Schedule(*schedule), step, on_lost=self._wait_for_shards)
        return stats.to_dict()

    def info(self) -> dict[str, Any]:
        return {"index": self.index, "lost_events": self.lost_events, "peak_rss_bytes": peak_rss_bytes(),
                "pid": os.getpid(), "cpu_seconds": _cpu_seconds()}

    def ping(self) -> int:
        return os.getpid()


# --------------------------------------------------------------------------- the driver
class ShardedRun:
    """One sharded training run on a Ray session: shards, clients, units, epochs, gathering, the report.

    ``parts`` are the corpus parts as the clients get them (see :class:`ClientActor`); ``part_offsets``
    their (unsplit) sentence offsets, from which the driver plans the units.  ``init`` is None (word2vec.c's
    initial vectors, generated on the shards) or ``(w_in, w_out)`` to start from.

    Example:
        >>> with cluster.session() as ray:  # doctest: +SKIP
        ...     run = ShardedRun(ray, cluster, config, counts, parts, part_offsets)
        ...     stats = run.train()
    """

    def __init__(self, ray: Any, cluster: Cluster, config: TrainConfig, counts: np.ndarray, parts: list[Any],
                 part_offsets: Sequence[np.ndarray], init: tuple[np.ndarray, np.ndarray] | None = None,
                 checkpoint_dir: str | os.PathLike[str] | None = None) -> None:
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
        self.checkpoint_dir = Path(checkpoint_dir)
        self._clear_checkpoints()
        units = plan_units([split_long_sentences(np.asarray(o, dtype=np.int64), self.config.max_sentence_length)
                            for o in part_offsets], self.settings["unit_words"])
        self.units = units
        self.words_per_epoch = sum(u.words for u in units)
        if self.words_per_epoch <= 0:
            raise ParvecError("the corpus has no in-vocabulary tokens to train on")
        self.shard_infos: list[dict[str, Any]] = []
        self.totals = UnitStats(acks=[0] * self.settings["shards"])
        self.requeued_units = 0
        self.requeued_words = 0
        self.client_failures: list[dict[str, Any]] = []
        self.on_progress: Callable[..., None] | None = None
        self._start(counts, parts, init)

    # ------------------------------------------------------------ start and stop
    def _clear_checkpoints(self) -> None:
        # A new run never starts from another run's checkpoints.
        for s in range(self.settings["shards"]):
            base = checkpoint_paths(self.checkpoint_dir, s, self.settings["shards"])["meta"].parent
            if base.exists():
                shutil.rmtree(base)

    def _start(self, counts: np.ndarray, parts: list[Any], init: tuple[np.ndarray, np.ndarray] | None) -> None:
        ray, cfg, st = self.ray, self.config, self.settings
        S, C, T = st["shards"], st["clients"], st["threads"]
        prob, alias = noise_tables(counts, cfg)
        self._noise_refs = [ray.put(prob), ray.put(alias)]
        del prob, alias
        self._keep_ref = ray.put(client_keep(counts, cfg))
        self._init_refs: list[Any] = []
        shard_cls = ray.remote(ShardActor)
        self.shards = []
        for s in range(S):
            lo, hi = K.column_range(s, S, cfg.dim)
            spec = {"index": s, "shards": S, "n_words": self.n_words, "dim": cfg.dim, "lo": lo, "hi": hi,
                    "window": cfg.window, "negative": cfg.negative, "seed": cfg.seed,
                    "checkpoint_dir": str(self.checkpoint_dir),
                    "checkpoint_interval_s": st["checkpoint_interval_s"], "memory_cap": st["shard_memory_bytes"]}
            init_refs = [None, None]
            if init is not None:
                init_refs = [ray.put(np.ascontiguousarray(init[0][:, lo:hi])),
                             ray.put(np.ascontiguousarray(init[1][:, lo:hi]))]
                self._init_refs += init_refs
            self.shards.append(shard_cls.options(
                num_cpus=0, max_concurrency=C * T + 4, max_restarts=st["max_restarts"], max_task_retries=0,
                scheduling_strategy="SPREAD", name=None,
            ).remote(spec, [*self._noise_refs, *init_refs]))
        client_cls = ray.remote(ClientActor)
        # The clients start (their processes, imports, corpus) while the shards allocate their columns.
        self.clients = [client_cls.options(
            num_cpus=0, max_concurrency=T + 2, max_restarts=st["max_restarts"], max_task_retries=0,
            scheduling_strategy="SPREAD",
        ).remote(c, self.shards, _config_dict(cfg), [self._keep_ref], parts, st["minibatch_words"], self.timeout_s,
                  st["minibatch_formation"] == "interleaved")
            for c in range(C)]
        infos = self._get([h.info.remote() for h in self.shards], "starting the shards")
        for info in infos:
            if info["error"]:
                self.close()
                raise ParvecError(info["error"])
        self.shard_infos = infos
        self._get([c.warm_up.remote() for c in self.clients], "starting the clients (compiling the kernels)")
        self.alive = [True] * C

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
        """Stop the actors (the Ray session itself is the cluster's) and drop temporary checkpoints."""
        ray = self.ray
        for h in getattr(self, "clients", []) + getattr(self, "shards", []):
            with contextlib.suppress(Exception):
                ray.kill(h, no_restart=True)
        self.clients, self.shards = [], []
        if self._temp_checkpoints is not None:
            shutil.rmtree(self._temp_checkpoints, ignore_errors=True)
            self._temp_checkpoints = None

    # ------------------------------------------------------------ training
    def train(self, epochs: int | None = None, start_epoch: int = 0,
              on_epoch_end: Callable[[int, TrainStats], None] | None = None) -> TrainStats:
        """Train epochs ``start_epoch .. epochs-1``; ``on_epoch_end(epoch, stats)`` after each."""
        cfg = self.config
        epochs = cfg.epochs if epochs is None else epochs
        if not 0 <= start_epoch < epochs:
            raise ParvecError(f"start_epoch must be in [0, {epochs}), got {start_epoch}")
        schedule = Schedule(cfg.alpha, cfg.final_alpha, self.words_per_epoch, epochs)
        stats = TrainStats()
        bar = _progress_bar(cfg, self.words_per_epoch * (epochs - start_epoch))
        t0 = time.perf_counter()
        self._t0 = t0
        try:
            for epoch in range(start_epoch, epochs):
                total = self._train_epoch(epoch, schedule, bar, stats)
                stats.words += total.words
                stats.pairs += total.pairs
                stats.words_per_epoch.append(total.words)
                stats.pairs_per_epoch.append(total.pairs)
                stats.loss_per_epoch.append(total.loss / total.pairs if total.pairs else float("nan"))
                stats.epochs += 1
                stats.seconds = time.perf_counter() - t0
                if not math.isfinite(total.loss):
                    raise ParvecError(f"training diverged in epoch {epoch + 1} (sharded): the loss became "
                                      f"{total.loss}; lower alpha (now {cfg.alpha}) or minibatch_words (now "
                                      f"{self.settings['minibatch_words']})")
                if on_epoch_end is not None:
                    t_cb = time.perf_counter()
                    on_epoch_end(epoch, stats)
                    t0 += time.perf_counter() - t_cb  # gathering for the callback is not training time
        finally:
            if bar is not None:
                bar.close()
        stats.seconds = time.perf_counter() - t0
        if stats.pairs == 0:
            raise ParvecError("training made no (input, context) pair: no sentence keeps two in-vocabulary words; "
                              "lower --min-count or --sample, or use a larger corpus")
        self.stats = stats
        return stats

    def _submit(self, c: int, unit: Unit, epoch: int, schedule: Schedule) -> Any:
        return self.clients[c].train_unit.remote(
            (unit.part, unit.s_lo, unit.s_hi, unit.index, unit.base, unit.words), epoch,
            (schedule.alpha, schedule.final_alpha, schedule.words_per_epoch, schedule.epochs))

    def _train_epoch(self, epoch: int, schedule: Schedule, bar: Any, stats: TrainStats) -> UnitStats:
        ray = self.ray
        T = self.settings["threads"]
        queue = collections.deque(self.units)
        in_flight: dict[Any, tuple[int, Unit, float]] = {}
        busy = [0] * len(self.clients)
        total = UnitStats(acks=[0] * len(self.shards))
        last_progress = 0.0
        while queue or in_flight:
            for c in range(len(self.clients)):
                while self.alive[c] and busy[c] < T and queue:
                    unit = queue.popleft()
                    in_flight[self._submit(c, unit, epoch, schedule)] = (c, unit, time.monotonic())
                    busy[c] += 1
            if not in_flight:
                raise ParvecError("every client was lost and none can be restarted: the run cannot continue")
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.25)
            for ref in ready:
                c, unit, _t = in_flight.pop(ref)
                busy[c] -= 1
                try:
                    result = ray.get(ref, timeout=self.timeout_s)
                except ray.exceptions.RayActorError as exc:
                    # The client died: its unit goes back to the queue (another client, or this one restarted).
                    queue.appendleft(unit)
                    self.requeued_units += 1
                    self.requeued_words += unit.words
                    self.client_failures.append({"client": c, "epoch": epoch, "unit": unit.index,
                                                 "error": str(exc).splitlines()[0][:200]})
                    self.alive[c] = self._client_back(c)
                    continue
                except ParvecError as exc:
                    raise ParvecError(str(_cause(exc))) from None
                except ray.exceptions.RayTaskError as exc:
                    raise ParvecError(f"client {c} failed: {_cause(exc)}") from None
                done = UnitStats.from_dict(result)
                total.add(done)
                self.totals.add(done)
                if bar is not None:
                    bar.update(done.words)
                    pairs = total.pairs
                    bar.set_postfix(loss=f"{total.loss / pairs:.4f}" if pairs else "nan", refresh=False)
            now = time.monotonic()
            for c, unit, started in in_flight.values():
                if now - started > self.timeout_s:
                    raise ParvecError(f"client {c} did not finish unit {unit.index} of epoch {epoch + 1} within "
                                      f"{self.timeout_s:g} s (Cluster.timeout_s)")
            if self.on_progress is not None and (now - last_progress > 0.5 or not (queue or in_flight)):
                last_progress = now
                words = stats.words + total.words
                loss_before = sum(lv * pv for lv, pv in zip(stats.loss_per_epoch, stats.pairs_per_epoch, strict=True))
                self.on_progress({"t": time.perf_counter() - self._t0, "words": words, "pairs": stats.pairs
                                  + total.pairs, "loss_sum": loss_before + total.loss,
                                  "lr": schedule.alpha_at(epoch * self.words_per_epoch + total.words),
                                  "epoch": epoch})
        return total

    def _client_back(self, c: int) -> bool:
        ray = self.ray
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            try:
                ray.get(self.clients[c].ping.remote(), timeout=max(0.1, deadline - time.monotonic()))
                return True
            except ray.exceptions.ActorDiedError:
                return False
            except (ray.exceptions.ActorUnavailableError, ray.exceptions.GetTimeoutError):
                time.sleep(0.05)
        return False

    # ------------------------------------------------------------ the model back
    def row_blocks(self, block_rows: int | None = None) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
        """Yield ``(lo, hi, w_in rows, w_out rows)`` block by block, each assembled from the shards' column
        blocks; the next block is requested while the caller handles this one."""
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
            parts = self._get(pending, "reading the model from the shards")
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
        """The run's sharded figures (bytes per trained input word measured at the clients, memory, faults)."""
        st, cfg = self.settings, self.config
        infos = self._get([h.info.remote() for h in self.shards], "reading the shards' figures") if self.shards else []
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
        lost = [max(0, a - i["applied"]) for a, i in zip(t.acks, infos, strict=False)]
        return {
            "shards": S, "clients": st["clients"], "client_threads": st["threads"],
            "minibatch_words": st["minibatch_words"], "minibatch_words_in_flight": st["minibatch_words_in_flight"],
            "minibatch_formation": st["minibatch_formation"],
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
            "shard_restarts": [i["restored"] for i in infos],
            "shard_checkpoints": [i["checkpoints"] for i in infos],
            "lost_updates_minibatches": lost, "dropped_minibatches": t.dropped,
            "requeued_units": self.requeued_units, "requeued_words": self.requeued_words,
            "client_failures": self.client_failures,
            "checkpoint_dir": None if self._temp_checkpoints is not None else str(self.checkpoint_dir),
            # Where the time goes (seconds summed over client threads / shard threads).
            "client_unit_seconds": t.seconds, "client_wait_seconds": t.wait_seconds,
            "client_form_seconds": t.form_seconds, "client_coefficient_seconds": t.client_seconds,
            "shard_kernel_seconds": [i["kernel_seconds"] for i in infos], "shard_calls": [i["calls"] for i in infos],
            # CPU seconds of each actor process since it started (warm-up and compilation included).
            "shard_cpu_seconds": [i["cpu_seconds"] for i in infos],
            "client_cpu_seconds": [i["cpu_seconds"] for i in client_infos],
        }


def _progress_bar(config: TrainConfig, total_words: int):
    show = config.progress
    if show is None:
        show = sys.stderr.isatty()
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total_words, unit="w", unit_scale=True, dynamic_ncols=True, file=sys.stderr,
                desc="sharded", smoothing=0.1)


# --------------------------------------------------------------------------- the Word2Vec driver
class ShardedTrainer:
    """The sharded driver behind ``Word2Vec(..., cluster=Cluster(..., mode="sharded"))``.

    The model fits in the driver here: the shards start from ``w_in``/``w_out``'s column blocks and the
    trained model is gathered back into them (after every epoch when there is an epoch callback, so
    checkpoints see it, and at the end).  For models no process holds, use the CLI pipeline
    (``parvec train --cluster ... --mode sharded``, :mod:`parvec.distributed.pipeline`).

    Example:
        >>> trainer = ShardedTrainer(Cluster("local:4", mode="sharded", shards=2, clients=1), config, counts,
        ...                          w_in, w_out)  # doctest: +SKIP
        >>> stats = trainer.train(corpus)  # doctest: +SKIP
    """

    def __init__(self, cluster: Cluster, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray,
                 w_out: np.ndarray) -> None:
        self.cluster = cluster
        self.config = config.validate()
        self.settings = resolve(cluster, self.config)
        self.counts = np.asarray(counts, dtype=np.int64)
        n = len(self.counts)
        for name, w in (("w_in", w_in), ("w_out", w_out)):
            if w.shape != (n, config.dim) or w.dtype != np.float32:
                raise ParvecError(f"{name} must be float32 of shape ({n}, {config.dim})")
        self.w_in, self.w_out = w_in, w_out
        self.on_progress: Callable[..., None] | None = None
        self._report: dict[str, Any] = {}
        self.stats = TrainStats()

    def train(self, corpus: EncodedCorpus, epochs: int | None = None,
              on_epoch_end: Callable[[int, TrainStats], None] | None = None, start_epoch: int = 0) -> TrainStats:
        """Train on ``corpus`` on the cluster; the trained vectors end in ``w_in``/``w_out``."""
        if len(corpus.vocab) != len(self.w_in):
            raise ParvecError(f"the corpus vocabulary has {len(corpus.vocab)} words but the model has "
                              f"{len(self.w_in)}")
        with self.cluster.session() as ray:
            parts = [("refs", [ray.put(np.ascontiguousarray(corpus.tokens)),
                               ray.put(np.asarray(corpus.offsets, dtype=np.int64))])]
            run = ShardedRun(ray, self.cluster, self.config, self.counts, parts, [corpus.offsets],
                             init=(self.w_in, self.w_out))
            try:
                run.on_progress = self.on_progress

                def epoch_end(epoch: int, stats: TrainStats) -> None:
                    run.gather(self.w_in, self.w_out)
                    on_epoch_end(epoch, stats)  # type: ignore[misc]

                stats = run.train(epochs, start_epoch, epoch_end if on_epoch_end is not None else None)
                if on_epoch_end is None:
                    run.gather(self.w_in, self.w_out)
                if self.on_progress is not None:
                    self.on_progress({"t": stats.seconds, "words": stats.words, "pairs": stats.pairs,
                                      "loss_sum": float(np.nansum(np.array(stats.loss_per_epoch)
                                                                  * np.array(stats.pairs_per_epoch))),
                                      "lr": self.config.final_alpha, "epoch": start_epoch + stats.epochs - 1},
                                     force=True)
                self._report = run.report()
            finally:
                run.close()
        self.stats = stats
        return stats

    def report(self) -> dict[str, Any]:
        """The last run's sharded figures (see :meth:`ShardedRun.report`)."""
        return dict(self._report)
