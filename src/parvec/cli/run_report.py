"""The ``--report`` JSON of every command that trains (``parvec train``, its ``--mode sharded`` pipeline,
``parvec node2vec`` / ``deepwalk``): one builder, so the keys that every run has are spelled, computed and
ordered in one place, and each command adds only what is its own.

Every report has ``kind``, ``parameters``, ``words_trained``, ``epochs``, ``read_seconds``,
``training_seconds``, ``words_per_sec``, ``loss_per_epoch``, ``peak_memory_bytes`` (this process's, from
:func:`parvec.memory.peak_memory_bytes`), ``device``, ``cluster``, ``output``, ``output_binary``,
``checkpoints`` and ``resumed_from``; word runs add the corpus figures (``vocab_size``, ``corpus_words``,
``corpus_tokens_in_vocab``, ``sentences``, ``raw_words_per_sec``); ``cpu_seconds``, ``cpu_seconds_per_word``
``cpu_processes`` and ``cpu_seconds_by_process`` (by kind: this process, ``ray::_Replica``, ``raylet``, ...)
give the training's cost: the CPU seconds of this process and every process it started on
this machine (a local Ray's processes and actors), from their own accounting (:mod:`parvec.usage`).

Then come the command's own keys, the
driver's figures (``model.run_report``, the sharded run's ``report()``) and the run log's time series
(``timeline``, ``epoch_log``), later ones winning a shared key.  ``parvec report`` (:mod:`parvec.report`)
reads them.

:func:`run_report` gives the report as a :class:`RunReport` record, whose :meth:`RunReport.to_json` is the file.

Example:
    >>> from parvec.engine import TrainStats
    >>> stats = TrainStats(words=10, seconds=2.0, epochs=1, loss_per_epoch=[2.5])
    >>> r = run_report("words", {"dim": 8}, stats, read_seconds=0.5,
    ...                device="cpu", output=None, output_binary=False,
    ...                corpus=CorpusFigures(vocab_size=3, raw_words=12, tokens=10, sentences=2)).to_json()
    >>> r["words_per_sec"], r["raw_words_per_sec"], r["cluster"], r["resumed_from"]
    (5.0, 6.0, None, None)
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from parvec.memory import peak_memory_bytes
from parvec.resources import human_bytes

if TYPE_CHECKING:
    from parvec.checkpoints import CheckpointCounts
    from parvec.config import TrainConfig
    from parvec.corpus import ReadOptions
    from parvec.engine import DriverReport, Position


class _Stats(Protocol):  # what a driver's train() returns (TrainStats)
    words: int
    seconds: float
    epochs: int
    loss_per_epoch: list[float]
    cpu_seconds: float
    cpu_processes: int
    cpu_by_process: dict[str, float]

    @property
    def words_per_sec(self) -> float: ...


@dataclass
class CorpusFigures:
    """A word run's corpus: vocabulary size, raw words read, in-vocabulary tokens, sentences.

    Example:
        >>> CorpusFigures(vocab_size=3, raw_words=12, tokens=10, sentences=2).to_dict()["corpus_words"]
        12
    """

    vocab_size: int
    raw_words: int
    tokens: int
    sentences: int

    def to_dict(self) -> dict[str, int]:
        return {"vocab_size": self.vocab_size, "corpus_words": self.raw_words, "corpus_tokens_in_vocab": self.tokens,
                "sentences": self.sentences}


def word_parameters(config: TrainConfig, options: ReadOptions, source: str | list[str], **extra: Any) -> dict[str, Any]:
    """A word run's ``parameters``: the training config, the vocabulary options and the input (plus ``extra``).

    Example:
        >>> from parvec.config import TrainConfig
        >>> from parvec.corpus import ReadOptions
        >>> p = word_parameters(TrainConfig(), ReadOptions(min_count=3), "c.txt", algo="sharded")
        >>> p["min_count"], p["input"], p["algo"]
        (3, 'c.txt', 'sharded')
    """
    return config.to_dict() | {"min_count": options.min_count, "max_vocab_size": options.max_vocab_size,
                               "max_final_vocab": options.max_final_vocab, "input": source} | extra


@dataclass(frozen=True)
class ResumedFrom:
    """The ``resumed_from`` entry of a resumed run: the checkpoint, when it was saved, where in an epoch.

    Example:
        >>> ResumedFrom("ck/checkpoint", 1.5, None).to_json()
        {'path': 'ck/checkpoint', 'saved_at': 1.5, 'position': None}
    """

    path: str
    saved_at: float | None
    position: Position | None

    def to_json(self) -> dict[str, object]:
        """The entry as the report writes it."""
        return {"path": self.path, "saved_at": self.saved_at,
                "position": None if self.position is None else self.position.to_json()}


def resumed_from(path: str, saved_at: float | None, position: Position | None) -> ResumedFrom:
    """The ``resumed_from`` entry of a resumed run (:class:`ResumedFrom`).

    Example:
        >>> resumed_from("ck/checkpoint", 1.5, None).saved_at
        1.5
    """
    return ResumedFrom(str(path), saved_at, position)


@dataclass(frozen=True)
class CheckpointsEntry:
    """The ``checkpoints`` entry: what the run wrote (:class:`parvec.checkpoints.CheckpointCounts`) and the flags
    that asked for it.

    Example:
        >>> from parvec.checkpoints import CheckpointCounts
        >>> CheckpointsEntry(CheckpointCounts(epoch_end_checkpoints=2), "10m", "ck").to_json()["dir"]
        'ck'
    """

    counts: CheckpointCounts
    every: str | None
    directory: str | None

    def to_json(self) -> dict[str, object]:
        """The counts, then ``every`` and ``dir``, as the report writes them."""
        return {**self.counts.to_json(), "every": self.every, "dir": self.directory}


def checkpoints(counts: CheckpointCounts, every: str | None, directory: str | None) -> CheckpointsEntry:
    """The ``checkpoints`` entry (:class:`CheckpointsEntry`).

    Example:
        >>> from parvec.checkpoints import CheckpointCounts
        >>> checkpoints(CheckpointCounts(epoch_end_checkpoints=2), "10m", "ck").to_json()["epoch_end_checkpoints"]
        2
    """
    return CheckpointsEntry(counts, every, directory)


@dataclass(frozen=True)
class CpuFigures:
    """The training's cost: CPU seconds of this process and every process it started on this machine, per word,
    the processes and their seconds by kind (:mod:`parvec.usage`)."""

    seconds: float
    per_word: float | None
    processes: int
    by_process: dict[str, float]


@dataclass(frozen=True)
class RunReport:
    """The report of one run (module docstring): the keys every run has, typed; ``extra`` the command's own keys,
    ``driver`` the driver's figures (a :class:`parvec.engine.DriverReport`, or None) and ``timeline`` the run
    log's series (later ones winning a shared key), ``after`` what the command added once the run's figures were
    read (a graph run's scores).

    Example:
        >>> from parvec.engine import TrainStats
        >>> r = run_report("graph", {}, TrainStats(words=4, seconds=1.0, epochs=1), read_seconds=0.0,
        ...                device="cpu", output=None, output_binary=False)
        >>> r.words_per_sec, list(r.to_json())[:3]
        (4.0, ['kind', 'parameters', 'words_trained'])
    """

    kind: str
    parameters: dict[str, Any]
    corpus: CorpusFigures | None
    words_trained: int
    epochs: int
    read_seconds: float
    training_seconds: float
    words_per_sec: float
    cpu: CpuFigures | None
    loss_per_epoch: list[float]
    peak_memory_bytes: int
    device: str
    cluster: dict[str, Any] | None
    output: str | None
    output_binary: bool
    checkpoints: CheckpointsEntry | None
    resumed_from: ResumedFrom | None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    driver: DriverReport | None = None
    timeline: dict[str, object] = dataclasses.field(default_factory=dict)
    after: tuple[tuple[str, object], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``--report`` file's object, its keys in the module docstring's order."""
        report: dict[str, Any] = {"kind": self.kind, "parameters": self.parameters}
        corpus = self.corpus
        if corpus is not None:
            report |= corpus.to_dict()
        report |= {"words_trained": self.words_trained, "epochs": self.epochs, "read_seconds": self.read_seconds,
                   "training_seconds": self.training_seconds, "words_per_sec": self.words_per_sec}
        if corpus is not None:
            seconds = self.training_seconds
            report["raw_words_per_sec"] = corpus.raw_words * self.epochs / seconds if seconds else 0.0
        if self.cpu is not None:
            # the whole run's cost, not only its speed: every process it started on this machine (parvec.usage)
            report |= {"cpu_seconds": self.cpu.seconds, "cpu_seconds_per_word": self.cpu.per_word,
                       "cpu_processes": self.cpu.processes, "cpu_seconds_by_process": self.cpu.by_process}
        report |= {
            "loss_per_epoch": self.loss_per_epoch, "peak_memory_bytes": self.peak_memory_bytes, "device": self.device,
            "cluster": self.cluster, "output": self.output, "output_binary": self.output_binary,
            "checkpoints": None if self.checkpoints is None else self.checkpoints.to_json(),
            "resumed_from": None if self.resumed_from is None else self.resumed_from.to_json(),
        }
        driver = self.driver.to_json() if self.driver is not None else {}
        return report | self.extra | driver | self.timeline | dict(self.after)


def run_report(kind: str, parameters: dict[str, Any], stats: _Stats, *, read_seconds: float, device: str,
               output: str | None, output_binary: bool, cluster: dict[str, Any] | None = None,
               checkpoints: CheckpointsEntry | None = None, resumed_from: ResumedFrom | None = None,
               corpus: CorpusFigures | None = None, extra: dict[str, Any] | None = None,
               driver: DriverReport | None = None, run_log: Any = None) -> RunReport:
    """The report of one run (see the module's docstring for the keys); ``peak_memory_bytes`` is read now.

    ``kind`` is ``"words"`` or ``"graph"``; ``extra`` the command's own keys, ``driver`` the driver's figures
    (:meth:`parvec.engine.Driver.report`),
    ``run_log`` the :class:`parvec.runlog.RunLog` (or None).

    Example:
        >>> from parvec.engine import TrainStats
        >>> stats = TrainStats(words=4, seconds=1.0, epochs=1)
        >>> r = run_report("graph", {}, stats, read_seconds=0.0,
        ...                device="cpu", output="g.emb", output_binary=False, extra={"nodes": 2}).to_json()
        >>> r["kind"], r["nodes"], r["words_per_sec"], r["peak_memory_bytes"] > 0
        ('graph', 2, 4.0, True)
    """
    cpu = None
    if stats.cpu_seconds:
        cpu = CpuFigures(stats.cpu_seconds, stats.cpu_seconds / stats.words if stats.words else None,
                         stats.cpu_processes, stats.cpu_by_process)
    return RunReport(
        kind=kind, parameters=parameters, corpus=corpus, words_trained=stats.words, epochs=stats.epochs,
        read_seconds=read_seconds, training_seconds=stats.seconds, words_per_sec=stats.words_per_sec, cpu=cpu,
        loss_per_epoch=stats.loss_per_epoch, peak_memory_bytes=peak_memory_bytes(), device=device, cluster=cluster,
        output=output, output_binary=output_binary, checkpoints=checkpoints, resumed_from=resumed_from,
        extra=extra or {}, driver=driver, timeline=run_log.to_dict() if run_log is not None else {})


def cpu_note(stats: _Stats) -> str:
    """The run's cost for the summary line: CPU seconds of every process it started here (parvec.usage).

    Example:
        >>> from types import SimpleNamespace
        >>> from parvec.engine import TrainStats
        >>> cpu_note(TrainStats(cpu_seconds=12.34, cpu_processes=7))
        ', 12.3 CPU s in 7 processes'
        >>> cpu_note(TrainStats(cpu_seconds=1.0, cpu_processes=1))
        ', 1.0 CPU s'
    """
    cpu, n = stats.cpu_seconds, stats.cpu_processes
    if not cpu:
        return ""
    return f", {cpu:.1f} CPU s" + (f" in {n} processes" if n > 1 else "")


def count_phrase(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1.

    Example:
        >>> count_phrase(1, "shard"), count_phrase(2, "client"), count_phrase(1200, "sync")
        ('1 shard', '2 clients', '1,200 syncs')
    """
    return f"{n:,} {noun}{'s' if n != 1 else ''}"


def threads_phrase(n: int) -> str:
    """``"1 thread"``, ``"2 threads"``.

    Example:
        >>> threads_phrase(1), threads_phrase(2)
        ('1 thread', '2 threads')
    """
    return count_phrase(n, "thread")


def cluster_block(cluster: dict[str, Any] | None, driver: dict[str, Any] | None) -> dict[str, Any] | None:
    """The report's ``cluster`` entry: the :class:`parvec.Cluster` as given (``to_dict()``), with what was left to
    parvec filled in from the driver's figures as it ran (the shards, clients and their threads of a sharded
    run, the replicas and their threads of a replicated one).

    Example:
        >>> cluster_block({"mode": "sharded", "shards": None, "clients": None, "threads_per_actor": None},
        ...               {"shards": 1, "clients": 2, "client_threads": 1})
        {'mode': 'sharded', 'shards': 1, 'clients': 2, 'threads_per_actor': 1}
    """
    if cluster is None:
        return None
    driver = driver or {}
    ran = {"replicas": driver.get("replicas"), "shards": driver.get("shards"), "clients": driver.get("clients"),
           "threads_per_actor": driver.get("threads_per_replica") or driver.get("client_threads")}
    return dict(cluster) | {k: v for k, v in ran.items() if v is not None and cluster.get(k) is None}


def cluster_summary(report: dict[str, Any]) -> str | None:
    """What a cluster run did, in words, from its driver's report (None for a run that was not one).

    Example:
        >>> cluster_summary({"mode": "replicas", "replicas": 2, "threads_per_replica": 1, "syncs": 42,
        ...                  "bytes_synced": 12_900_000})
        '2 replicas x 1 thread, 42 syncs, 12.3 MiB synced'
        >>> cluster_summary({"mode": "replicas", "replicas": 2, "threads_per_replica": 1, "syncs": 42,
        ...                  "syncs_overlapped": 39, "bytes_synced": 12_900_000})
        '2 replicas x 1 thread, 42 syncs (39 overlapped), 12.3 MiB synced'
        >>> cluster_summary({"shards": 2, "clients": 2, "client_threads": 1, "minibatches": 2102,
        ...                  "minibatch_words": 1024, "trained_input_words": 2_000_000, "bytes_sent_per_word": 370.0,
        ...                  "bytes_received_per_word": 288.0}).split(", ")[2:]
        ['2,102 minibatches of 1,024 input words', '705.7 MiB sent', '549.3 MiB received']
        >>> cluster_summary({"shards": 1, "clients": 2, "client_threads": 1, "minibatches": 100, "fused_calls": True,
        ...                  "minibatch_words": 8192, "trained_input_words": 800_000, "bytes_sent_per_word": 60.0,
        ...                  "bytes_received_per_word": 0.001}).split(", ")[2]
        '100 minibatches of 8,192 input words (fused calls: trained whole in the shard)'
    """
    if report.get("mode") == "replicas":
        overlapped = f" ({report['syncs_overlapped']:,} overlapped)" if report.get("syncs_overlapped") else ""
        return (f"{report['replicas']} replicas x {threads_phrase(report['threads_per_replica'])}, "
                f"{count_phrase(report['syncs'], 'sync')}{overlapped}, {human_bytes(report['bytes_synced'])} synced")
    if "shards" in report:
        clients = f"{count_phrase(report['clients'], 'client')} x {threads_phrase(report['client_threads'])}"
        text = f"sharded: {count_phrase(report['shards'], 'shard')}, {clients}"
        if report.get("minibatches") is not None:
            inputs = report.get("trained_input_words") or 0
            fused = " (fused calls: trained whole in the shard)" if report.get("fused_calls") else ""
            text += (f", {report['minibatches']:,} minibatches of {report['minibatch_words']:,} input words{fused}, "
                     f"{human_bytes((report.get('bytes_sent_per_word') or 0) * inputs)} sent, "
                     f"{human_bytes((report.get('bytes_received_per_word') or 0) * inputs)} received")
        return text
    return None


def absolute(path: str | None) -> str | None:
    """An output path as the report records it: absolute (symbolic links kept), ``-`` for standard output, None
    when not given.

    Example:
        >>> absolute(None) is None and absolute("/tmp/v.txt") == "/tmp/v.txt" and absolute("-") == "-"
        True
    """
    if path == "-":
        return path
    return os.path.abspath(path) if path else None


def write_report(path: str | os.PathLike[str], report: RunReport) -> None:
    """Write ``report`` as indented JSON (:meth:`RunReport.to_json`), atomically (a full disk names the path:
    :func:`parvec.fileio.atomic_output`).

    Example:
        >>> write_report("run.json", report)  # doctest: +SKIP
    """
    from parvec.fileio import atomic_output

    with atomic_output(path, "w") as f:
        json.dump(report.to_json(), f, indent=1)
