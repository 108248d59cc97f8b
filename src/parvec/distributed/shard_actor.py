"""The shard of a sharded run: one Ray actor holding a column block of both matrices for every word.

Shard ``s`` of ``S`` holds columns ``[s*d//S, (s+1)*d//S)`` of the input and output vectors (float32, rows in
vocabulary order) and the noise distribution's alias table.  It answers one call per minibatch,
:meth:`ShardActor.step`: adjust the previous minibatch with the coefficients the client sends, then return the
partial dot products of the next one (:mod:`parvec.distributed.shard_kernels`; the kernels release the GIL, so a
shard serves several clients at once in Ray's thread pool); with one shard and fused calls,
:meth:`ShardActor.train` trains a minibatch whole.  It starts from word2vec.c's initial vectors, generated column
block by column block (so ``S`` shards hold exactly the one-process initial model), or from the driver's
matrices.

For the driver's consistent snapshots it can be fenced (refuse minibatches, so the units in flight stop), write
its columns as a snapshot (:mod:`parvec.distributed.snapshot_files`) and restore one; a shard that Ray restarted
refuses every call until the driver has it restore a snapshot.  ``Cluster.shard_memory_bytes`` caps its data
segment (RLIMIT_DATA, set before it allocates): columns that do not fit stop the run before training.

Example:
    >>> spec = ShardSpec(index=0, shards=1, n_words=3, dim=4, lo=0, hi=4, window=2, negative=2, seed=1)
    >>> spec.describe()
    'shard 0 of 1 (columns 0..3 of 4)'
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from parvec.distributed.shard_kernels import shard_kernels
from parvec.distributed.sharded_report import ShardInfo
from parvec.distributed.snapshot_files import ShardStore
from parvec.distributed.snapshot_records import ShardFiles, ShardRestored, ShardSnapshot
from parvec.distributed.supervise import named_actor, node_id, was_restarted
from parvec.distributed.wire import (
    AdjustCall,
    ShardLost,
    answer_parts,
    join_parts,
    split_answer,
    to_half,
    unpack_call,
    unpack_train_call,
)
from parvec.errors import ParvecError
from parvec.kernels import sharded as K
from parvec.kernels.sharded_combine import combined_step, combined_threshold
from parvec.memory import peak_memory_bytes
from parvec.resources import cap_data_segment, vm_data_bytes
from parvec.usage import own_cpu_seconds

__all__ = ["ShardActor", "ShardSpec", "cap_memory"]


@dataclass(frozen=True)
class ShardSpec:
    """What one shard is: its place (``index`` of ``shards``, columns ``lo..hi-1`` of ``dim``, ``n_words`` rows),
    the training settings its kernels need, where it keeps its snapshots (``checkpoint_dir``, on its node's disk;
    None: nowhere) and the URL it uploads them to (``checkpoint_url``: a URL ``--checkpoint-dir``; None: none), its
    memory cap (bytes, None: none), ``holder`` (the name of the :class:`~parvec.distributed.supervise.RunRefs`
    actor that hands it ``[noise_prob, noise_alias, init_in, init_out]``), the longest wait, the minibatches in
    flight over every client thread, and whether the run resumes a checkpoint (its columns then come from the
    checkpoint's snapshot).

    Example:
        >>> ShardSpec(index=1, shards=2, n_words=3, dim=4, lo=2, hi=4, window=2, negative=2, seed=1).what
        'shard 1 of 2'
    """

    index: int
    shards: int
    n_words: int
    dim: int
    lo: int
    hi: int
    window: int
    negative: int
    seed: int
    negatives_per: str = "window"
    update_cap: int = 0
    checkpoint_dir: str | None = None
    checkpoint_url: str | None = None
    memory_cap: int | None = None
    holder: str | None = None
    timeout_s: float = 300.0
    in_flight: int = 8
    resume: bool = False

    @property
    def what(self) -> str:
        """The shard in words, for its errors."""
        return f"shard {self.index} of {self.shards}"

    def describe(self) -> str:
        """The shard and its columns in words."""
        return f"{self.what} (columns {self.lo}..{self.hi - 1} of {self.dim})"

    @property
    def model_bytes(self) -> int:
        """Bytes of its columns of both matrices."""
        return 2 * self.n_words * (self.hi - self.lo) * 4


def cap_memory(spec: ShardSpec) -> None:
    """Cap this shard process's data segment at ``spec.memory_cap`` (before its columns are allocated): a
    :class:`ParvecError` when its columns would not fit under the cap.

    Example:
        >>> cap_memory(ShardSpec(0, 1, 3, 4, 0, 4, 2, 2, 1, memory_cap=64 << 30))  # doctest: +SKIP
    """
    assert spec.memory_cap is not None
    cap = spec.memory_cap
    cap_data_segment(cap, spec.describe())
    used = vm_data_bytes() or 0
    if used + spec.model_bytes > cap:
        raise ParvecError(f"{spec.describe()} needs {spec.model_bytes / 2**30:.2f} GiB for its columns of "
                          f"{spec.n_words:,} words, but its memory cap of {cap / 2**30:.2f} GiB leaves "
                          f"{(cap - used) / 2**30:.2f} GiB; use more shards or a higher --shard-memory")


class ShardActor:
    """One column block of both matrices and the noise table; the server side of every minibatch (module docstring).

    Made a Ray actor by the sharded driver (``ray.remote(ShardActor).options(...)``); ``refs`` (object references
    or arrays: ``[noise_prob, noise_alias, init_in, init_out]``, init None: word2vec.c's initial input vectors for
    ``spec.seed`` and zero output vectors) come from ``spec.holder`` when not given.  A restarted shard allocates
    its columns and waits: it refuses every call until the driver has it :meth:`restore` a snapshot.
    :meth:`fence` makes a live shard refuse minibatches too; :meth:`snapshot` writes the columns.

    Example:
        >>> shard = ray.remote(ShardActor).remote(spec, [prob, alias, None, None])  # doctest: +SKIP
    """

    def __init__(self, spec: ShardSpec, refs: list[Any] | None = None) -> None:
        self.spec = spec
        self.error: str | None = None
        self.index = spec.index
        self.kernels = shard_kernels(spec.negatives_per, spec.window, spec.negative,
                                     combined_threshold(spec.update_cap, spec.in_flight),
                                     combined_step(spec.in_flight, spec.shards))
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
        self._rows_cap = 2 * spec.in_flight + 4
        self._rows_lock = threading.Lock()
        self._cv = threading.Condition()
        self._active = 0  # steps running (Ray runs several at once in its threads)
        self._state_lock = threading.Lock()  # one snapshot or restore at a time
        self.fenced = False
        self.model_bytes = spec.model_bytes
        self.what = spec.what
        self.restarted = was_restarted()
        self.restart_info = {"pid": os.getpid(), "time": time.time()} if self.restarted else None
        # Restarted, or resuming a checkpoint: nothing to serve until the driver restores a snapshot (the initial
        # model included).
        self.needs_restore = bool(self.restarted or spec.resume)
        self.store = ShardStore.of(spec.checkpoint_dir, spec.checkpoint_url, self.index, spec.shards, self.what)
        try:
            self._allocate(refs)
        except MemoryError as exc:
            self.error = (f"{spec.describe()}: out of memory allocating its columns ({self.model_bytes / 2**30:.2f} "
                          f"GiB for {spec.n_words:,} words): {exc}; use more shards or a higher memory cap")
        except ParvecError as exc:
            self.error = str(exc)

    def _allocate(self, refs: list[Any] | None) -> None:
        # The tables and the columns (capped first); a new run's shard starts from the initial model and clears
        # the snapshots another run left.
        import ray

        spec = self.spec
        if refs is None:
            assert spec.holder is not None, "a shard started without its refs finds them at the run's holder"
            holder = named_actor(spec.holder)
            refs = ray.get(holder.get.remote(f"shard-{self.index}"), timeout=spec.timeout_s)
        noise_prob, noise_alias, self._init_in, self._init_out = refs
        self.noise_prob, self.noise_alias = (ray.get(r) if isinstance(r, ray.ObjectRef) else r
                                             for r in (noise_prob, noise_alias))
        if spec.memory_cap is not None:
            cap_memory(spec)
        self.w_in = np.empty((spec.n_words, spec.hi - spec.lo), dtype=np.float32)
        self.w_out = np.zeros((spec.n_words, spec.hi - spec.lo), dtype=np.float32)
        if self.restarted or spec.resume:
            return
        self._initial(fresh=True)
        self.store.clear()  # a new run never sees another run's snapshots

    def _initial(self, fresh: bool = False) -> None:
        # The columns the run starts from, written into the arrays in place: word2vec.c's initial vectors
        # (generated) or the driver's model, and zero output vectors.
        import ray

        spec = self.spec
        init_in, init_out = (ray.get(r) if isinstance(r, ray.ObjectRef) else r
                             for r in (self._init_in, self._init_out))
        if init_in is None:
            K.init_columns(spec.n_words, spec.dim, spec.lo, spec.hi, spec.seed, out=self.w_in)
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
        timeout = self.spec.timeout_s
        if not self._cv.wait_for(lambda: self._active == 0, timeout=timeout):
            raise ParvecError(f"{self.what}: minibatches still running after {timeout:g} s (Cluster.timeout_s)")

    def fence(self) -> int:
        """Refuse minibatches from now until the next :meth:`restore` (the units in flight stop at their next
        call); returns this process's id."""
        with self._cv:
            self.fenced = True
        return os.getpid()

    def snapshot(self, snap_id: int, keep: int | Sequence[int | None] | None) -> ShardSnapshot:
        """Write this shard's columns as snapshot ``snap_id`` (:func:`parvec.distributed.snapshot_files.
        write_snapshot`); snapshots other than ``keep`` (the newest complete one, and the one the newest checkpoint
        names when that is older) are removed first, so a shard keeps at most two or three.  Returns the seconds
        and bytes written, the directory and each file's CRC-32 (what a checkpoint records and a resume checks)."""
        self._check()
        t0 = time.perf_counter()
        with self._state_lock:
            with self._cv:
                self._refuse()
                self._quiet()
                self.fenced = True  # no minibatch while the columns are written (none is expected: the driver drained)
            try:
                meta = {"shard": self.index, "shards": self.spec.shards, "snapshot": snap_id,
                        "shape": list(self.w_in.shape)}
                final, crcs = self.store.write(snap_id, [keep] if keep is None or isinstance(keep, int)
                                               else list(keep), {"in": self.w_in, "out": self.w_out}, meta)
            finally:
                with self._cv:
                    self.fenced = False
        seconds = time.perf_counter() - t0
        self.snapshots += 1
        self.snapshot_seconds += seconds
        return ShardSnapshot(seconds, 2 * self.w_in.nbytes, os.getpid(),
                             ShardFiles(str(final), tuple(self.w_in.shape), crcs, node=node_id()))

    def uploaded(self, snap_id: int) -> int:
        """Wait until snapshot ``snap_id`` is at the checkpoint URL (nothing to wait for without one); returns
        this process's id.  A failed upload is this call's error."""
        self._check()
        self.store.uploaded(snap_id)
        return os.getpid()

    def restore(self, snap_id: int | None, where: str | None = None,
                crc32: dict[str, int] | None = None, url: str | None = None) -> ShardRestored:
        """Overwrite the columns with snapshot ``snap_id`` (None: the model the run started from), read row
        block by row block into the arrays in place, and serve again.  ``where`` is the snapshot's directory when
        it is not this run's own (a resumed run's, in the checkpoint it resumes); ``crc32`` the CRC-32 of each
        file's data (``in``, ``out``) the checkpoint recorded: a file that does not match is refused.  ``url``:
        the snapshot's directory at a URL checkpoint directory, read from there when this node does not hold it
        (a shard restarted on another node, or a run resumed from a URL)."""
        self._check()
        t0 = time.perf_counter()
        with self._state_lock:
            with self._cv:
                self.fenced = True
                self._quiet()
            if snap_id is None:
                self._initial()
            else:
                try:
                    self.store.read(snap_id, where, url, {"in": self.w_in, "out": self.w_out}, crc32)
                except ParvecError:
                    with self._cv:  # nothing valid to serve: the driver ends the run
                        self.needs_restore = True
                    raise
            with self._cv:
                self.needs_restore = False
                self.fenced = False
        self.restores += 1
        return ShardRestored(time.perf_counter() - t0, os.getpid())

    def drop_snapshots(self) -> None:
        """Remove this shard's snapshot directory (a run's temporary snapshots, at its end)."""
        self.store.drop()

    # ------------------------------------------------------------ serving
    def step(self, *call: np.ndarray) -> np.ndarray | list[np.ndarray] | None:
        """Adjust the previous minibatch (if any), then return the next one's partial dot products (if any).

        ``call`` is a packed byte array (:func:`parvec.distributed.wire.pack_call`) in parts (``split_call``), the
        answer in ``answer_parts`` parts; a fenced or restarted shard answers with :class:`~.wire.ShardLost`."""
        with self._serving():
            t0 = time.thread_time()  # this thread's CPU time: the machine's load does not inflate it
            buf = join_parts(call)
            adjust, dots, half = unpack_call(buf)
            self.calls += 1
            if adjust is not None:
                self._adjust(adjust)
            if dots is None:
                self.kernel_seconds += time.thread_time() - t0
                return None
            negative, n_out, n_seed = self.spec.negative, dots.n_out, dots.seed
            out = np.empty(n_out, dtype=np.float32)
            kept = self.kernels.rows(dots.seq, dots.seg, dots.shrink, n_out // (1 + negative), np.uint64(n_seed),
                                     self.noise_prob, self.noise_alias)
            self.kernels.dotprod_rows(self.w_in, self.w_out, kept, out)
            # Kept for this minibatch's adjust (the next call of its client thread), which then draws no
            # negatives (drawing them twice took 45% of the shard kernels' time).
            with self._rows_lock:
                self._rows[int(n_seed)] = kept
                while len(self._rows) > self._rows_cap:  # minibatches whose adjust never came (a unit dropped)
                    self._rows.pop(next(iter(self._rows)))
            self.kernel_seconds += time.thread_time() - t0
            return split_answer(to_half(out) if half else out, answer_parts(n_out, half))

    def _adjust(self, call: AdjustCall) -> None:
        # The previous minibatch's update, from the rows kept at its dot products when they are here.
        spec = self.spec
        seq, seg, shrink, seed, coef = call
        with self._rows_lock:
            kept = self._rows.pop(int(seed), None)
        if kept is not None and len(kept[0]) * (1 + spec.negative) == len(coef):  # its dotprod's rows
            self.kernels.adjust_rows(self.w_in, self.w_out, kept, seg, shrink, coef)
        else:  # not kept (a restarted shard, a minibatch retried): drawn again, the same rows
            self.kernels.adjust(self.w_in, self.w_out, seq, seg, shrink, spec.window, spec.negative,
                                self.noise_prob, self.noise_alias, np.uint64(seed), coef)
        self.applied += 1  # under the GIL; Ray's threads only (the kernels run without it)
        self.applied_inputs += len(shrink)

    def train(self, *call: np.ndarray) -> np.ndarray:
        """Train one minibatch whole (``shard_calls="fused"``, one shard holding every column): its rows, dot
        products, coefficients and update in this call; returns ``array([loss])``.

        ``call`` is a packed byte array (:func:`parvec.distributed.wire.pack_train_call`) in parts (``split_call``);
        a fenced or restarted shard answers with :class:`~parvec.distributed.wire.ShardLost`."""
        with self._serving():
            t0 = time.thread_time()
            seq, seg, shrink, seed, alpha, n_ctx = unpack_train_call(join_parts(call))
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

    def info(self) -> ShardInfo:
        """Status and figures: error, applied minibatches, restart, snapshots, memory, process and Ray node."""
        return ShardInfo(index=self.index, error=self.error, applied=self.applied, applied_inputs=self.applied_inputs,
                         restarted=self.restart_info, needs_restore=self.needs_restore, snapshots=self.snapshots,
                         snapshot_seconds=self.snapshot_seconds, restores=self.restores,
                         peak_rss_bytes=peak_memory_bytes(), baseline_rss_bytes=self.baseline_rss,
                         kernel_seconds=self.kernel_seconds, calls=self.calls, cpu_seconds=own_cpu_seconds(),
                         model_bytes=self.model_bytes, vm_data_bytes=vm_data_bytes(), pid=os.getpid(),
                         node=node_id())

    def ping(self) -> int:
        """This process's id (the driver's way to see that the shard answers, and whether it was restarted)."""
        return os.getpid()

    def try_allocate(self, nbytes: int) -> str | None:
        """Allocate and touch ``nbytes`` (then free them): None if it worked, else the error (tests the cap)."""
        try:
            a = np.ones(int(nbytes), dtype=np.uint8)
            del a
            return None
        except MemoryError as exc:
            return f"MemoryError: {exc}"
