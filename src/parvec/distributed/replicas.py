"""Data-parallel replicas with frequency-ranked sub-model synchronisation (Ji et al., Intel's pWord2Vec): the
replicas driver, ``Cluster(mode="replicas")``.

``N`` replica actors each hold the whole model and train their own share of the corpus with parvec's one CPU
driver (:mod:`~parvec.distributed.replica_actor`); every replica starts from the driver's model, so averaging
starts from one point.  The pieces, one module each: the plan (:mod:`~parvec.distributed.replica_plan`: shares,
parts, the ruler's syncs, overlapped syncs, threads), the actor (:mod:`~parvec.distributed.replica_actor`), the
actors started and supervised (:mod:`~parvec.distributed.replica_group`), the averaging
(:mod:`~parvec.distributed.collectives`: a reduce-scatter then an all-gather, summed in rank order so every
replica ends with identical bits).

This module drives (:class:`ReplicaDriver`): one epoch's call to every replica, the learning rate by the global
word count (``Cluster.alpha_scale`` optionally raises the starting rate with ``N``), mid-epoch checkpoints taken by
the replicas together, the averaged model back into ``w_in``/``w_out``, and the report.

**Faults.** Replica actors restart (``max_restarts``).  When one is lost mid-epoch the driver aborts the epoch's
syncs, waits for Ray to bring the actor back, and every replica reloads the last model all of them agreed on (the
epoch's last checkpoint, else its start) and trains on from there: with one thread per replica the result is bit
for bit the run without the fault.  A replica lost while starting is waited for the same way and the group formed
anew.  The report names the replica lost and the words retrained, and each fault prints one line
(:class:`parvec.distributed.supervise.FaultRecord`).  A replica that cannot come back ends the run with a
``ParvecError``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parvec.chunks import split_long_sentences
from parvec.config import TrainConfig, default_threads
from parvec.corpus import EncodedCorpus, ReadOptions, save_encoded
from parvec.distributed.cluster import Cluster
from parvec.distributed.collectives import SyncAborted
from parvec.distributed.replica_actor import (
    EpochCall,
    ReplicaData,
    ReplicaDescription,
    ReplicaEpoch,
    ReplicaRestarted,
)
from parvec.distributed.replica_group import ReplicaGroup
from parvec.distributed.replica_plan import (
    alpha_factor,
    overlap_rows,
    plan_parts,
    replica_threads,
    share_chunks,
    sync_plan,
)
from parvec.distributed.supervise import FaultRecord, cause, report_fault
from parvec.engine import Diverged, DriverBase, EpochContext, EpochResult, SelfRunning, TrainStats
from parvec.errors import ParvecError

__all__ = ["ReplicaDriver", "ReplicaFigures", "ReplicaTrainer", "ReplicasReport", "share_data"]


class ReplicaDriver(DriverBase):
    """The ``replicas`` cluster driver: a :class:`parvec.engine.CorpusDriver` whose epoch is every replica's share of
    it, trained by the CPU driver in each replica actor and averaged by the ruler's syncs (module docstring).

    :meth:`prepare` enters the cluster's Ray session and starts the replicas (before the engine's clock),
    :meth:`train_epoch` trains one epoch on all of them (a replica lost mid-epoch: every replica reloads the
    previous epoch's model and the epoch is trained again) and leaves the averaged model in ``w_in``/``w_out``,
    :meth:`finish` stops them.  ``read_options``: how a node that cannot see the cache re-reads the input text;
    ``workers_given``: ``config.threads`` was given explicitly (``Word2Vec(workers=...)``), so lowering it to fit
    the CPUs is said.

    Example:
        >>> driver = ReplicaDriver(Cluster("local:2"), TrainConfig(threads=1), counts, w_in, w_out)  # doctest: +SKIP
        >>> RunEngine(driver.use_corpus(corpus), config, schedule).run(); driver.report().syncs  # doctest: +SKIP
    """

    mode = "replicas"

    def __init__(self, cluster: Cluster, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray,
                 w_out: np.ndarray, *, read_options: ReadOptions | None = None, workers_given: bool = False) -> None:
        self.cluster = cluster
        self.config = config.validate()
        self.counts = np.asarray(counts, dtype=np.int64)
        self.w_in, self.w_out = w_in, w_out
        self.read_options = read_options
        self.workers_given = workers_given
        self.corpus: EncodedCorpus | None = None
        self.last_report: ReplicasReport | None = None  # the last run's figures
        self.group: ReplicaGroup | None = None
        self._stack: contextlib.ExitStack | None = None
        self.stats = TrainStats()  # when it runs itself (ReplicaTrainer): the last run's
        # A run's state, from prepare() on: Ray (the module, in the cluster's session), the model the next epoch's
        # call loads (object references to w_in, w_out; None: the one the replicas hold), the sync group's id, the
        # faults reported, the clock of the training (None until prepare() is through).
        self.ray: Any = None
        self._model: tuple[Any, Any] | None = None
        self._group_id = 0
        self._faults: list[FaultRecord] = []
        self._t0: float | None = None

    @property
    def label(self) -> str:
        """The progress bar's name."""
        return f"{self.config.algo} x {int(self.cluster.replicas or 1)} replicas"

    @property
    def actors(self) -> list[Any]:
        """The replica actors' handles."""
        return self.group.actors if self.group is not None else []

    def report(self) -> ReplicasReport | None:
        """The last run's distributed figures (:class:`ReplicasReport`), as the run layer keeps them."""
        return self.last_report

    def use_corpus(self, corpus: EncodedCorpus) -> ReplicaDriver:
        """Train on ``corpus`` (each replica memory-maps its share of the cache, or encodes it); returns self."""
        if len(corpus.vocab) != len(self.w_in):
            raise ParvecError(f"the corpus vocabulary has {len(corpus.vocab)} words but the model has {len(self.w_in)}")
        if corpus.n_tokens == 0:
            raise ParvecError("the corpus has no in-vocabulary tokens to train on")
        self.corpus = corpus
        return self

    def vectors_finite(self) -> bool:
        """Whether the averaged input vectors hold only finite numbers."""
        return bool(np.isfinite(self.w_in.sum()))

    # ------------------------------------------------------------------ the Driver contract
    def prepare(self, start_epoch: int, epochs: int) -> None:
        """Refuse fewer chunks than replicas, enter Ray, start the replicas and form their sync group (untimed)."""
        assert self.corpus is not None, "use_corpus() first"
        corpus, cfg = self.corpus, self.config
        n = int(self.cluster.replicas or 1)
        self._scale = alpha_factor(self.cluster.alpha_scale, n)
        if self.cluster.is_local:  # too many replicas or threads for local:N's CPUs: refused before Ray starts
            replica_threads(self.cluster, cfg, self.cluster.local_cpus or default_threads(), n)
        shares = share_chunks(split_long_sentences(corpus.offsets, cfg.max_sentence_length), cfg.chunk_words, n)
        self._faults = []
        self._t0 = None
        self._stack = stack = contextlib.ExitStack()
        try:
            t_ray = time.perf_counter()
            self.ray = ray = stack.enter_context(self.cluster.session())
            self._ray_start_seconds = time.perf_counter() - t_ray
            threads = self._threads(ray, n)  # first: too many replicas for the CPUs are refused before any work
            data, tmp_dir = share_data(corpus, self.config, self.cluster, self.read_options, n, shares)
            if tmp_dir is not None:
                stack.callback(shutil.rmtree, tmp_dir, ignore_errors=True)
            stack.callback(self._stop)
            assert cfg.alpha is not None  # set by TrainConfig.__post_init__
            rcfg = TrainConfig.from_dict(cfg.to_dict() | {"threads": threads, "progress": False,
                                                          "alpha": cfg.alpha * self._scale,
                                                          "min_alpha": cfg.final_alpha * self._scale})
            rcfg.chunk_words = cfg.chunk_words
            rcfg.par_h_factor = cfg.par_h_factor
            t_setup = time.perf_counter()
            self.described = self._start(ray, rcfg, data, n, threads)
            self.plan = plan_parts([d.chunk_words for d in self.described], self.cluster.sync_words)
            if self.plan.words_per_epoch != corpus.n_tokens:
                raise ParvecError(f"the replicas hold {self.plan.words_per_epoch:,} tokens but the corpus has "
                                  f"{corpus.n_tokens:,}: the input changed since it was read, or a node read it "
                                  "with other options")
            self._rows_plan = sync_plan(self.plan.parts_per_epoch, epochs, self.cluster.min_sync_words,
                                        len(self.counts), self.cluster.full_sync_times)
            self._setup_seconds = time.perf_counter() - t_setup
        except BaseException:
            stack.close()
            self._stack = None
            raise
        self._n, self.actor_threads, self.replica_config = n, threads, rcfg
        self._start_epoch = start_epoch
        self.sync_overlap_rows = overlap_rows(self.cluster, len(self.counts))
        self._figures = ReplicaFigures(n, self._faults, self._ray_start_seconds, self._setup_seconds)
        self._attempt = self._last_checkpoint = (0, 0, 0, 0.0)
        self._t0 = time.perf_counter()

    def train_epoch(self, ctx: EpochContext) -> EpochResult:
        """Train one epoch on every replica; the averaged model ends in ``w_in``/``w_out``.  A resumed epoch
        starts after the checkpoint's parts; mid-epoch checkpoints are taken at part ends by the replicas
        together (``_Replica._checkpoint_after``) and written here; a replica lost mid-epoch makes every replica
        reload the model of this epoch's last checkpoint (else of its start) and train on from there."""
        ray, epoch = self.ray, ctx.epoch
        assert self.group is not None
        schedule = ctx.schedule.scaled(self._scale)
        attempt_model = self._model
        r0 = ctx.resume
        # (first part, then this call's words, the epoch's pairs and loss) where the current attempt starts
        self._attempt = (r0.units_done, 0, r0.pairs, r0.loss) if r0 is not None else (0, 0, 0, 0.0)
        self._last_checkpoint = self._attempt
        while True:
            gen = ray.get(self.group.board.begin.remote(epoch), timeout=self.cluster.timeout_s)
            refs = [a.train_epoch.remote(EpochCall(epoch, schedule, gen, self._group_id, self.plan,
                                                   self._rows_plan[epoch], attempt_model, r == 0, self._attempt[0],
                                                   ctx.checkpoint_every, self.sync_overlap_rows))
                    for r, a in enumerate(self.actors)]
            results, lost = self._wait(ray, refs, gen, ctx)
            if not lost:
                break
            self._lost_mid_epoch(ray, lost, epoch, self._last_checkpoint[0])
            attempt_model = (ray.put(self.w_in), ray.put(self.w_out))  # the last checkpoint's, or the epoch's start
            self._attempt = self._last_checkpoint
            self._group_id += 1  # the survivors and the restarted replica form a new sync group
        t_fetch = time.perf_counter()
        w_in, w_out = results[0].carried_model()
        np.copyto(self.w_in, w_in)
        np.copyto(self.w_out, w_out)
        del w_in, w_out
        self._figures.fetch_seconds += time.perf_counter() - t_fetch
        _, words, pairs, loss = self._attempt
        for res in results.values():
            done: EpochResult = res.result
            words, pairs, loss = words + done.words, pairs + done.pairs, loss + done.loss
        self._figures.add_epoch(results, words)
        self._model = None
        return EpochResult(words=words, pairs=pairs, loss=loss)

    def _take_checkpoints(self, ray: Any, gen: int, ctx: EpochContext) -> None:
        # The checkpoints replica 0 put on the board: the model into w_in/w_out, then the engine writes it.
        assert self.group is not None
        for cp in ray.get(self.group.board.take_checkpoint.remote(gen), timeout=self.cluster.timeout_s):
            w_in, w_out = ray.get(cp["model"], timeout=self.cluster.timeout_s)
            np.copyto(self.w_in, w_in)
            np.copyto(self.w_out, w_out)
            del w_in, w_out
            _, words, pairs, loss = self._attempt
            for c in cp["counters"]:
                words, pairs, loss = words + int(c[0]), pairs + int(c[1]), loss + float(c[2])
            ctx.checkpoint(cp["part"] + 1, int(cp["words_done"]), words, pairs, loss)
            self._last_checkpoint = (cp["part"] + 1, words, pairs, loss)

    def finish(self) -> None:
        """The report, then the replicas stopped and the Ray session left."""
        if self._stack is None:
            return
        try:
            if self._t0 is not None:  # prepare() went through
                self.last_report = self._figures.report(self, time.perf_counter() - self._t0)
        finally:
            self._stack.close()
            self._stack = None

    def _lost_mid_epoch(self, ray: Any, lost: list[int], epoch: int, from_part: int) -> None:
        # Wait for Ray to bring the lost replicas back; the epoch is trained again from its last checkpoint's
        # part (its start without one).
        assert self.group is not None
        t0 = time.monotonic()
        plan = self.plan
        synced = max(self.group.syncs_done(lost, epoch), from_part)
        for r in lost:
            self.group.await_restart(r)
        retrained = plan.part_words[:, from_part:synced].sum(axis=1)
        if from_part:
            where = f"the model of this epoch's checkpoint after part {from_part}"
        elif epoch == self._start_epoch:
            where = "the model the run started from"
        else:
            where = f"the model of epoch {epoch}'s end"
        words = int(retrained.sum())
        record = FaultRecord("replica", lost[0], "train", epoch + 1, [f"replica {r}" for r in lost],
                             "its process died; Ray restarted it", restored=where, words_retrained=words,
                             units_retrained=int(synced - from_part), recovery_seconds=time.monotonic() - t0,
                             details={"replica": lost, "syncs_done_before_loss": int(synced),
                                      "words_retrained_by_lost": {str(r): int(retrained[r]) for r in lost}})
        report_fault(self._faults, record, f"replica {', '.join(map(str, lost))} of {self._n} was lost in epoch "
                     f"{epoch + 1} after {synced} of its {plan.parts_per_epoch} syncs; Ray restarted it and every "
                     f"replica reloaded {where}; {words:,} words retrained")

    def _threads(self, ray: Any, n: int) -> int:
        per, note = replica_threads(self.cluster, self.config, int(ray.cluster_resources().get("CPU", 0)), n,
                                    workers_given=self.workers_given)
        if note:
            print(note, file=sys.stderr, flush=True)
        return per

    def _start(self, ray: Any, rcfg: TrainConfig, data: ReplicaData, n: int, threads: int) -> list[ReplicaDescription]:
        # Start the replicas and form their first sync group.  A replica lost while starting (in its
        # constructor, or while the group forms) follows the rule of a replica lost while training: Ray
        # restarts it (max_restarts), the driver waits for it and forms the group again; the fault is reported.
        group = self.group = ReplicaGroup(ray, self.cluster, n, threads, self._faults)
        group.launch(rcfg, self.counts, data)
        described = group.describe_all()
        # The run's first model is copied in while the replicas start, not on the first epoch's clock (~0.1 s for
        # 68,000 x 100 on a 2-core Zen 4, and the first sync waited for the slower copy).  The first epoch's call
        # names the same model, so a replica lost after this (while the group forms) loads it there.
        self._model = (ray.put(self.w_in), ray.put(self.w_out))
        while lost := self._load_all(ray):
            group.bring_back(lost, "lost while it loaded the model; Ray restarted it", described)
        group_id = 0
        while lost := self._connect_all(ray, group_id):
            group.bring_back(lost, "lost while the replicas formed their sync group; Ray restarted it", described)
            group_id += 1  # a new group: the old one's rendezvous may hold the lost process's address
        self._group_id = group_id
        return described

    def _load_all(self, ray: Any) -> list[int]:
        # Every replica copies in the model at self._model; returns the replicas lost meanwhile.
        assert self.group is not None
        return self.group.call_all("load the model", "load_model", self._model)

    def _connect_all(self, ray: Any, group_id: int) -> list[int]:
        # Every replica joins sync group ``group_id``; returns the replicas lost meanwhile.
        assert self.group is not None
        return self.group.call_all("form their sync group", "connect", group_id)

    def _stop(self) -> None:
        if self.group is not None:
            self.group.stop()

    def _wait(self, ray: Any, refs: list[Any], gen: int, ctx: EpochContext
              ) -> tuple[dict[int, ReplicaEpoch], list[int]]:
        # Collect the epoch's results; a replica lost calls off its peers' syncs (they come back
        # SyncAborted) so the epoch can be trained again.  Any other failure ends the run.
        assert self.group is not None
        board = self.group.board
        pending = {ref: r for r, ref in enumerate(refs)}
        results: dict[int, ReplicaEpoch] = {}
        lost: list[int] = []
        errors: list[str] = []
        aborted: list[str] = []
        last_words, last_change = -1, time.perf_counter()
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:
                r = pending.pop(ref)
                try:
                    results[r] = ray.get(ref, timeout=self.cluster.timeout_s)
                except ray.exceptions.RayActorError:
                    lost.append(r)
                    board.abort.remote(gen)
                except Exception as exc:  # noqa: BLE001 - sorted below
                    inner = cause(exc)
                    board.abort.remote(gen)
                    if isinstance(inner, ReplicaRestarted):  # lost between two epochs: lost in this one
                        lost.append(r)
                        continue
                    if isinstance(inner, Diverged):  # worded by the engine, as for one process
                        raise Diverged(inner.epoch, inner.what) from None
                    (aborted if isinstance(inner, SyncAborted) else errors).append(f"replica {r}: {inner}")
            if ctx.checkpoint_every is not None:
                self._take_checkpoints(ray, gen, ctx)
            words = self._poll(ctx)
            if words != last_words:
                last_words, last_change = words, time.perf_counter()
            elif time.perf_counter() - last_change > self.cluster.timeout_s + 60:
                board.abort.remote(gen)
                raise ParvecError(f"the replicas made no progress for {self.cluster.timeout_s + 60:.0f} s in epoch "
                                  f"{ctx.epoch + 1}; stopping")
        if not lost and (errors or aborted):
            raise ParvecError("replica training failed: " + "; ".join(errors + aborted))
        return results, lost

    def _poll(self, ctx: EpochContext) -> int:
        # The replicas' running totals of the epoch for the engine's progress (and the no-progress watchdog).
        assert self.group is not None
        totals = self.group.progress()
        if totals is None:  # a replica restarting: skip this sample
            return -1
        _, words, pairs, loss = self._attempt
        ctx.progress(words + totals[0], pairs + totals[1], loss + totals[2])
        return words + totals[0]


@dataclass(frozen=True)
class ReplicasReport:
    """A replicas run's report figures (:meth:`ReplicaFigures.report`), each field one of the ``--report`` file's
    keys in its order (:meth:`to_json`): the replicas, their threads and learning rates, the syncs (overlapped,
    rows, seconds, bytes against full-model syncs), each replica's seconds, the start's seconds, the words of each
    share, the replicas' nodes and data, the faults (:class:`~parvec.distributed.supervise.FaultRecord`), the
    collective.

    Example:
        >>> report = driver.last_report  # doctest: +SKIP
        >>> report.syncs, report.to_json()["mode"]  # doctest: +SKIP
        (12, 'replicas')
    """

    replicas: int
    threads_per_replica: int | None
    alpha_scale: Any
    alpha_per_replica: float | None
    syncs: int
    syncs_overlapped: int
    sync_overlap_rows: Any
    parts_per_epoch: int
    rows_synced: int
    sync_seconds: float
    sync_share: float | None
    sync_seconds_per_replica: list[float]
    replica_train_seconds: list[float]
    bytes_synced: int
    bytes_synced_per_word: float | None
    bytes_full_model_same_syncs: int
    traffic_reduction: float | None
    model_fetch_seconds: float
    setup_seconds: float
    ray_start_seconds: float
    start_seconds: float
    share_words: list[int]
    nodes: list[Any]
    data: list[Any]
    faults: tuple[FaultRecord, ...]
    collective: Any

    def to_json(self) -> dict[str, Any]:
        """The report's keys, in the ``--report`` file's order (``mode`` first)."""
        out: dict[str, Any] = {"mode": "replicas"}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = [r.to_dict() for r in value] if f.name == "faults" else value
        return out


class ReplicaFigures:
    """What a replicas run measured, for its report: each replica's sync and training seconds and bytes, the
    syncs (overlapped, rows, bytes), the words trained, the model's fetch seconds, the start's seconds, the faults.

    Example:
        >>> figures = ReplicaFigures(2, [], 2.1, 3.4)
        >>> figures.words_done
        0
    """

    def __init__(self, n: int, faults: list[FaultRecord], ray_start_seconds: float, setup_seconds: float) -> None:
        self.per_replica = {r: {"sync_seconds": 0.0, "bytes": 0, "train_seconds": 0.0} for r in range(n)}
        self.sync_totals = {"syncs": 0, "rows": 0, "bytes": 0, "overlapped": 0}
        self.faults, self.ray_start_seconds, self.setup_seconds = faults, ray_start_seconds, setup_seconds
        self.fetch_seconds = 0.0
        self.words_done = 0

    def add_epoch(self, results: dict[int, ReplicaEpoch], words: int) -> None:
        """Count one epoch: every replica's answer (its seconds and its syncs') and the words trained."""
        for res in results.values():
            per = self.per_replica[res.rank]
            per["sync_seconds"] += res.sync.seconds
            per["train_seconds"] += res.seconds
            per["bytes"] += res.sync.bytes
        first = results[0].sync
        self.sync_totals["syncs"] += first.syncs
        self.sync_totals["rows"] += first.rows
        self.sync_totals["overlapped"] += first.overlapped
        self.sync_totals["bytes"] += sum(res.sync.bytes for res in results.values())
        self.words_done += words

    def report(self, driver: ReplicaDriver, seconds: float) -> ReplicasReport:
        """The report's figures of ``driver``'s run (``seconds``: its training's), with the full-model syncs'
        bytes the ruler's replace."""
        per, totals, plan, described = self.per_replica, self.sync_totals, driver.plan, driver.described
        n = len(per)
        sync_seconds = float(np.mean([p["sync_seconds"] for p in per.values()]))
        full_bytes = totals["syncs"] * 2 * (n - 1) * len(driver.counts) * driver.config.dim * 4 * 2
        words = self.words_done
        return ReplicasReport(
            replicas=n, threads_per_replica=driver.actor_threads,
            alpha_scale=driver.cluster.alpha_scale, alpha_per_replica=driver.replica_config.alpha,
            syncs=totals["syncs"],
            # syncs that ran while the next part trained (sync_seconds counts only the time training waited)
            syncs_overlapped=totals["overlapped"], sync_overlap_rows=driver.sync_overlap_rows,
            parts_per_epoch=plan.parts_per_epoch, rows_synced=totals["rows"],
            sync_seconds=sync_seconds, sync_share=sync_seconds / seconds if seconds else None,
            sync_seconds_per_replica=[p["sync_seconds"] for p in per.values()],
            # each replica's own clock for its epochs (its syncs included), beside the driver's: the gap is the
            # epochs' start and end (model shipped, results gathered) and Ray's calls
            replica_train_seconds=[p["train_seconds"] for p in per.values()],
            bytes_synced=totals["bytes"], bytes_synced_per_word=totals["bytes"] / words if words else None,
            bytes_full_model_same_syncs=full_bytes,
            traffic_reduction=full_bytes / totals["bytes"] if totals["bytes"] else None,
            model_fetch_seconds=self.fetch_seconds, setup_seconds=self.setup_seconds,
            # Ray's start (or connect) and the replicas' start, before the first trained word
            ray_start_seconds=self.ray_start_seconds, start_seconds=self.ray_start_seconds + self.setup_seconds,
            share_words=[int(x) for x in plan.part_words.sum(axis=1)],
            nodes=[x.node for x in described], data=[x.data for x in described],
            faults=tuple(self.faults), collective=described[0].collective)


class ReplicaTrainer(SelfRunning, ReplicaDriver):
    """The replicas driver that runs itself: ``ReplicaTrainer(cluster, config, counts, w_in, w_out).train(corpus)``.

    Example:
        >>> trainer = ReplicaTrainer(Cluster("local:2"), TrainConfig(threads=1), counts, w_in, w_out)  # doctest: +SKIP
        >>> stats = trainer.train(corpus)  # doctest: +SKIP
    """


def share_data(corpus: EncodedCorpus, config: TrainConfig, cluster: Cluster, read_options: ReadOptions | None,
               n: int, shares: list[tuple[int, int]] | None = None) -> tuple[ReplicaData, str | None]:
    """Where ``n`` replicas find their shares of ``corpus``, and the temporary directory to remove at the end (None
    when the corpus came from its cache): the cache directory the actors memory-map (the corpus's own, else one
    written now), each replica's sentences (``shares``, :func:`parvec.distributed.replica_plan.share_chunks`,
    computed here when None), and the input text and how it was read (a node that cannot see the cache re-reads
    its byte range); on a Ray cluster of several nodes, when the cache is a copy written now and there is no input
    file to re-read (a corpus copied from a URL, a directory), each share in Ray's object store too.

    Example:
        >>> data, tmp = share_data(corpus, TrainConfig(), Cluster("local:2"), None, 2)  # doctest: +SKIP
    """
    tmp_dir = None
    cache = _cache_dir_of(corpus)
    if cache is None:
        tmp_dir = tempfile.mkdtemp(prefix="parvec-replicas-")
        save_encoded(corpus, tmp_dir)
        cache = Path(tmp_dir)
    if shares is None:
        shares = share_chunks(split_long_sentences(corpus.offsets, config.max_sentence_length), config.chunk_words, n)
    opts = read_options or ReadOptions(max_sentence_length=config.max_sentence_length)
    source = corpus.source if corpus.source and Path(corpus.source).is_file() else None
    # A temporary copy of the encoded corpus and no input file to re-read (a corpus copied from a URL, a
    # directory): a node that shares no disk with the driver finds its share in the object store.
    held = tmp_dir is not None and source is None and cluster.options.get("data", "auto") == "auto"
    data = ReplicaData(
        shares=tuple(shares), tokens=corpus.n_tokens,
        words=tuple(corpus.vocab.words), counts=corpus.vocab.counts, read_options=opts, cache=str(cache),
        source=source, inputs=corpus.inputs,  # (path, size, mtime) read: a node that re-reads the file checks it
        mode=cluster.options.get("data", "auto"),
        refs=_shares_in_object_store(corpus, config, shares) if held else None)
    return data, tmp_dir


def _shares_in_object_store(corpus: EncodedCorpus, config: TrainConfig,
                            shares: list[tuple[int, int]]) -> tuple[Any, ...] | None:
    # On a Ray cluster of several nodes, each replica's tokens and sentence offsets (from 0) put in the object
    # store once (held by the driver for the run): a replica whose node sees neither the cache nor the input
    # fetches its own share from there.  One node: None (every replica memory-maps the cache).
    import ray

    if sum(1 for n in ray.nodes() if n.get("Alive")) < 2:
        return None
    offsets = split_long_sentences(corpus.offsets, config.max_sentence_length)
    refs = []
    for lo, hi in shares:
        a, b = int(offsets[lo]), int(offsets[hi])
        refs.append(ray.put((np.ascontiguousarray(corpus.tokens[a:b]), offsets[lo:hi + 1] - a)))
    return tuple(refs)


def _cache_dir_of(corpus: EncodedCorpus) -> Path | None:
    name = getattr(corpus.tokens, "filename", None)
    if not name:
        return None
    directory = Path(name).parent
    return directory if (directory / "header.json").exists() else None
