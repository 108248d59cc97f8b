"""Where a cluster run gets its Ray: the one place parvec starts or joins a Ray cluster.

A :class:`Cluster` says *where* to run (``local:N`` starts a private Ray on this machine with N CPUs,
``ray://HOST:PORT`` joins through Ray Client, ``auto`` joins the cluster this machine belongs to) and *how*
(``mode="replicas"``: Ji et al.'s data-parallel replicas with frequency-ranked sub-model sync;
``mode="sharded"``: Ordentlich et al.'s column-sharded parameter servers).  Every driver in
``parvec.distributed`` enters :meth:`Cluster.session` and never calls ``ray.init``/``ray.shutdown`` itself.

House rules kept here, once:

- Ray's usage statistics are off (``RAY_USAGE_STATS_ENABLED=0``) before Ray is imported.
- A Ray that parvec starts listens on the loopback interface only (no dashboard): its node address is
  127.0.0.1, which Ray's own servers (GCS, raylet, object manager, the workers' and actors' gRPC servers, the
  runtime-env agent, and with ``ray[default]`` the dashboard agent and its metrics endpoint) bind to.  Ray on
  Linux turns a loopback ``_node_ip_address`` into the machine's outside address and then listens on every
  interface unless its single-machine mode is on (the mode macOS and Windows use,
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``): :func:`_start_settings` turns that mode on for the start, and
  the session refuses to run on a Ray that did not take 127.0.0.1.  A user-given address is used as given.
- SIGINT and SIGTERM stop Ray's start at once (:func:`_interruptible_start`), but are held from the moment
  Ray creates its C++ core worker in this process to the end of ``ray.init``, and while Ray stops
  (:func:`deferred_signals`), and delivered right after.  A Ctrl-C landing inside ``ray.init`` after Ray's C++
  core worker was created, but before Python held it, orphaned that core worker: nothing shut it down, and at
  exit Ray's C++ exit handler destroyed it while its io thread still ran (``TaskManager::RecordMetrics`` on
  freed memory: SIGSEGV, exit -11).
  ``ray.init`` also sets SIGTERM handlers of its own (``sys.exit``, and a C++ failure-signal handler that
  printed ``*** SIGTERM received``, exited 1 and, at shutdown, left SIGTERM at its default action): the
  driver's C++ handler is not installed (:func:`_start_settings`) and the process's own handlers come back.
- A Ray that parvec starts is stopped with every process of it: ``ray.shutdown`` waits for the processes it
  started, then the workers and agents the raylet started that are still alive after a short grace are
  killed (a raylet killed before it could stop them left its agents running for up to a minute).  When the
  driver itself dies (``kill -9``, the OOM killer), Ray's fate-sharing SIGKILLs its GCS and raylet, whose
  agents then lived 60-90 s; a watcher process (:mod:`parvec.distributed.reaper`) started with the Ray kills
  the Ray's processes (the run's ``PARVEC_LOCAL_RAY`` marker, or a file held in its session directory) the
  moment the driver's pipe to it closes.  An interrupted or failed run's Ray is stopped without the grace.
- Ray's console lines are off for a session (:func:`_quiet_console`): parvec's lines are the ones a user needs.
- A Ray that parvec starts runs its workers at niceness 0, as a one-process run's threads (Ray's default is
  15: the replicas and shards would then yield the CPU to every other process on the machine, and ran at
  0.61x a two-thread process on a shared 2-core machine); ``RAY_worker_niceness`` set by the user wins.
  A cluster parvec joins keeps its own setting.
- parvec stops only a Ray it started.  A Ray already initialised in this process (a test session, a
  notebook) is used as it is and left running; joining a remote cluster only disconnects at the end.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import signal
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, overload

from parvec.errors import ParvecError
from parvec.interrupts import deferred_signals

MODES = ("replicas", "sharded")
_LOCAL = re.compile(r"^local(?::(\d+))?$")


# Ray settings of a local start (``ray.init(_system_config=...)``; a cluster started with ``ray start`` takes the same
# as environment variables, e.g. ``RAY_max_direct_call_object_size=8388608 ray start --head``):
# - max_direct_call_object_size: an actor call's arguments and results up to this size travel inside the call
#   (gRPC, peer to peer) instead of through the object store.  Ray's default, 100 KiB, sent every sharded-mode
#   call of more than ~170 input words through the object store and the raylet: on a 2-core Zen 4, 4M tokens,
#   2 shards x 2 clients x 1024 input words, 0.21M words/s and 7.3 CPU s in the raylet; inline, 0.35M and 0.06 s
#   (benchmarks/bench_sharded.py speed).
# - raylet_client_connect_timeout_milliseconds / raylet_client_num_connect_attempts: how a process waits for a Ray
#   socket that is not listening yet (Ray's default: 10 tries, 1 s apart).  A starting raylet connects to its own
#   object store this way, usually a moment before the store listens, and lost a whole second there in about half
#   of the starts (ray.init 3.2-3.6 s against 2.5 s otherwise, 2-core Zen 4); 100 tries 0.1 s apart keep the same
#   10-s budget and cost 0.1 s.
LOCAL_SYSTEM_CONFIG: dict[str, Any] = {"max_direct_call_object_size": 8 << 20,
                                       "raylet_client_connect_timeout_milliseconds": 100,
                                       "raylet_client_num_connect_attempts": 100}


def import_ray() -> Any:
    """Import Ray with usage statistics off, or raise a :class:`ParvecError` saying how to install it.

    Example:
        >>> ray = import_ray()  # doctest: +SKIP
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise ParvecError(
            "--cluster needs Ray, which is an optional extra: pip install 'parvec[ray]'"
        ) from None
    return ray


# The local:N specs above this machine's cores already warned of in this command (or this process, through the
# API); the CLI starts every command with an empty set (new_command_warnings).
_OVERSUBSCRIBED: set[str] = set()


def new_command_warnings() -> None:
    """Let the next command warn again of a ``--cluster local:N`` above this machine's cores.

    A command builds the same :class:`Cluster` more than once (flags, checkpoint, resume) and says the
    warning once; a second command in the same process (``parvec.cli.main`` called twice) says it again.

    Example:
        >>> new_command_warnings()
    """
    _OVERSUBSCRIBED.clear()


@dataclass
class Cluster:
    """Where and how a distributed run trains.

    ``spec`` is ``local:N`` (start a local Ray with N CPUs; ``local`` alone uses every core),
    ``ray://HOST:PORT`` (join a running cluster through Ray Client) or ``auto`` (join the cluster this
    machine belongs to, as ``ray.init(address="auto")``).  ``mode`` is ``replicas`` (default) or
    ``sharded``.  ``replicas`` defaults to N for ``local:N`` and must be given otherwise; ``shards`` and
    ``clients`` are for ``sharded`` mode.  The replica-sync knobs follow Intel's pWord2Vec: every
    ``sync_words`` trained words per replica the top ``min(2**ctz(j) * min_sync_words, V)`` rows are
    averaged at sync number j, plus ``full_sync_times`` evenly spaced full syncs per epoch; with ``sync_overlap``
    the smaller syncs run while the next part trains (parvec.distributed.replica_actor.OverlappedSync).

    Example:
        >>> Cluster("local:2").replicas
        2
        >>> Cluster("local:4", mode="sharded", shards=2, clients=2).mode
        'sharded'
    """

    spec: str = "local:2"
    mode: str = "replicas"
    replicas: int | None = None
    shards: int | None = None
    clients: int | None = None
    threads_per_actor: int | None = None
    sync_words: int = 200_000
    min_sync_words: int = 1024
    full_sync_times: int = 0
    # replicas: a sync of the hottest rows runs while the next part trains and is applied at its end (the
    # average plus this replica's training since); the epoch's last sync and the largest ones stay blocking.
    sync_overlap: bool = True
    timeout_s: float = 300.0
    # replicas: the starting learning rate times 1 ("none"), sqrt(N) ("sqrt") or N ("linear"), the paper's
    # adjustment for N nodes (docs/benchmarks/clusters.md has the measurement behind the default).
    alpha_scale: str = "linear"
    # sharded mode (parvec.distributed.sharded; checked there): input words per minibatch (one shard call
    # adjusts one minibatch and computes the next one's dot products), words per unit of work (what a client
    # trains per call; re-queued if the client dies), shard checkpoints (directory, None = a temporary one;
    # seconds between them, None = scaled with a shard's size: sharded_settings.snapshot_interval), a memory cap
    # per shard process (RLIMIT_DATA bytes, None = none) and how many
    # times a lost shard or client actor is restarted.
    minibatch_words: int | None = None  # None: sharded.in_flight_words (4096, 1024 or 512) over all client threads
    # sharded: "interleaved" (each minibatch takes one input word from each of minibatch_words lanes spread
    # over the unit: the paper's interleaved minibatch formation) or "contiguous" (consecutive input words).
    minibatch_formation: str = "interleaved"
    # sharded: "window" (each input word's context words share its negatives, Ji et al.'s batches: the same dot
    # products per pair, a third of the rows; the default since it matched one process over 3 seeds at sample
    # 1e-3 and 1e-4, docs/benchmarks/clusters.md) or "pair" (each (input, positive) pair draws its own: the paper's).
    negatives_per: str = "window"
    # sharded: how the dot products and coefficients travel, "float16" (half the bytes; the coefficients scaled by
    # the minibatch's largest learning rate first, parvec.distributed.wire.to_wire; the default since it matched one
    # process over 3 seeds at sample 1e-3 and 1e-4, was even with float32 on one machine and 1.35-1.76x faster on
    # 1 Gb/s and 200 Mb/s links, docs/benchmarks/clusters.md) or "float32".
    wire_floats: str = "float16"
    # sharded, one shard: "fused" (a call trains its minibatch whole in the shard, which holds every column and so
    # the whole dot products: nothing but indices and learning rates travel, one call per minibatch) or "split"
    # (the paper's two calls' work, partial dot products out and coefficients back, as with several shards).
    # Several shards always split.
    shard_calls: str = "fused"
    # sharded, split calls with window batches: the most updates one row takes from one minibatch's stale dot
    # products (more are scaled down to this many); None: sharded_settings.UPDATE_CAP, 0: all summed (the paper's).
    update_cap: int | None = None
    unit_words: int = 100_000
    checkpoint_dir: str | None = None
    checkpoint_interval_s: float | None = None
    shard_memory_bytes: int | None = None
    max_restarts: int = 3
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.spec = str(self.spec).strip()
        if self.mode not in MODES:
            raise ParvecError(f"cluster mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        local = _LOCAL.match(self.spec)
        if local is None and not self.spec.startswith("ray://") and self.spec != "auto":
            raise ParvecError(
                f"--cluster {self.spec!r}: expected local:N (start a local Ray with N CPUs), "
                "ray://HOST:PORT (join a running cluster) or auto (join this machine's cluster)"
            )
        self.local_cpus = int(local.group(1)) if local and local.group(1) else None
        if local and self.local_cpus == 0:
            raise ParvecError(f"--cluster {self.spec}: N must be at least 1")
        cores = _cpu_count()
        if self.local_cpus is not None and self.local_cpus > cores and self.spec not in _OVERSUBSCRIBED:
            # said once, before anything is read or started (the CLI makes the same Cluster more than once)
            import logging

            _OVERSUBSCRIBED.add(self.spec)

            logging.getLogger("parvec.distributed").warning(
                f"--cluster {self.spec} gives Ray {self.local_cpus} CPUs but this machine has {cores} core"
                f"{'s' if cores != 1 else ''}: its actors (replicas, or shards and clients) will share them, each "
                f"slower than on a core of its own, and Ray starts slower; --cluster local:{cores} matches it")
        if self.mode == "replicas" and self.replicas is None:
            if local is None:
                raise ParvecError(f"--cluster {self.spec}: give the number of replicas (--replicas N)")
            self.replicas = self.local_cpus or _cpu_count()
        for name in ("replicas", "shards", "clients", "threads_per_actor"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ParvecError(f"{name} must be a positive integer, got {value!r}")
        for name in ("sync_words", "min_sync_words"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ParvecError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.full_sync_times, int) or self.full_sync_times < 0:
            raise ParvecError(f"full_sync_times must be a non-negative integer, got {self.full_sync_times!r}")
        if not isinstance(self.sync_overlap, bool):
            raise ParvecError(f"sync_overlap must be True or False, got {self.sync_overlap!r}")
        if not self.timeout_s > 0:
            raise ParvecError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.alpha_scale not in ("none", "sqrt", "linear"):
            raise ParvecError(f"alpha_scale must be none, sqrt or linear; got {self.alpha_scale!r}")

    @property
    def is_local(self) -> bool:
        """True when this cluster is a Ray parvec starts on this machine."""
        return self.spec.startswith("local")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for reports and saved models."""
        return {
            "spec": self.spec, "mode": self.mode, "replicas": self.replicas, "shards": self.shards,
            "clients": self.clients, "threads_per_actor": self.threads_per_actor, "sync_words": self.sync_words,
            "min_sync_words": self.min_sync_words, "full_sync_times": self.full_sync_times,
            "sync_overlap": self.sync_overlap,
            "timeout_s": self.timeout_s, "alpha_scale": self.alpha_scale,
        }

    @contextlib.contextmanager
    def session(self) -> Iterator[Any]:
        """Enter Ray for one run and yield the ``ray`` module; stop only a Ray started here.

        A Ray started here (``local:N``) listens on 127.0.0.1 only and is stopped at the end with every
        process of it (and by its watcher, :mod:`parvec.distributed.reaper`, if this process dies first);
        SIGINT and SIGTERM stop its start at once, but from the creation of Ray's core worker to the end of
        ``ray.init`` and while Ray stops, where they are delivered right after (module docstring).  A joined
        cluster (``auto``, ``ray://``) is only disconnected.  Ray's console lines are off for the session
        (:func:`_quiet_console`).

        Example:
            >>> with Cluster("local:2").session() as ray:  # doctest: +SKIP
            ...     ray.cluster_resources()["CPU"]
            2.0
        """
        ray = import_ray()
        if ray.is_initialized():  # a test session's or a notebook's Ray: used as it is and left running
            yield ray
            return
        ours: list[Any] = []  # the processes this process started with the local Ray
        watcher: Any = None  # parvec.distributed.reaper's process: kills the local Ray if this process dies
        stopping = False  # an error or a signal ends the session: the Ray goes without the grace of a normal end
        with _quiet_console(ray):
            try:
                with deferred_signals():
                    before = {p.pid for p in _children()}
                    token = None
                    if self.is_local:
                        from parvec.distributed import reaper

                        token = uuid.uuid4().hex
                        watcher = reaper.start(token)
                        before.add(getattr(watcher, "pid", -1))
                try:
                    with _interruptible_start(ray):  # Ctrl-C stops the start at once (but inside the crash window)
                        self._init(ray, token)
                finally:  # also after a start that failed or was stopped half-way
                    ours = [p for p in _children() if p.pid not in before]
                with deferred_signals():
                    if watcher is not None:
                        reaper.tell(watcher, _session_dir(ray), os.path.dirname(ray.__file__))
                    if self.is_local:
                        _check_loopback(ray, self.spec)
                yield ray
            except BaseException:
                stopping = True
                raise
            finally:
                with deferred_signals():
                    if self.is_local:
                        processes = _with_descendants(ours)  # now, while the raylet still holds its workers
                        ray.shutdown(wait_for_processes=not stopping)
                        _release(watcher)  # it kills whatever of this Ray is left, then exits
                        _stop_processes(processes, grace_s=0.5 if stopping else 5.0)
                    else:
                        ray.shutdown()  # a joined cluster is only disconnected

    def _init(self, ray: Any, token: str | None = None) -> None:
        """``ray.init`` for this spec; Ray's errors become one :class:`ParvecError` line.  ``token``: the marker
        every process of a local Ray inherits (:mod:`parvec.distributed.reaper`)."""
        from parvec.distributed.reaper import MARKER

        user_niceness = os.environ.get("RAY_worker_niceness")
        if self.is_local:
            os.environ["RAY_worker_niceness"] = user_niceness or "0"  # read by the raylet ray.init starts
            if token is not None:
                os.environ[MARKER] = token  # inherited by the GCS and raylet, and from the raylet by the rest
            kwargs: dict[str, Any] = {"address": "local", "num_cpus": self.local_cpus or _cpu_count(),
                                      "_node_ip_address": "127.0.0.1", "include_dashboard": False,
                                      "log_to_driver": True, "configure_logging": False,
                                      "_system_config": LOCAL_SYSTEM_CONFIG}
        elif self.spec.startswith("ray://"):
            kwargs = {"address": self.spec}  # Ray Client: the server's ray.init gets no other arguments
        else:
            kwargs = {"address": self.spec, "log_to_driver": True}
        try:
            with _start_settings(ray, self.is_local), warnings.catch_warnings():
                # Ray Client's own warning on a connection time-out would be a second message
                warnings.filterwarnings("ignore", message="Ray Client connection timed out")
                ray.init(**kwargs)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            if self.spec.startswith("ray://") and isinstance(exc, ConnectionError):
                raise ParvecError(
                    f"--cluster {self.spec}: could not connect to a Ray Client server at {self.spec[6:]} "
                    f"({exc}; Ray Client gives up after about {_client_wait_s():.0f} s): is the cluster's head "
                    "running (ray start --head) and its client server port (10001 by default) reachable from "
                    "here?") from None
            raise ParvecError(f"--cluster {self.spec}: could not start or join Ray: {exc}") from None
        finally:  # this process's environment as it was
            if user_niceness is None:
                os.environ.pop("RAY_worker_niceness", None)
            os.environ.pop(MARKER, None)


@contextlib.contextmanager
def _start_settings(ray: Any, local: bool) -> Iterator[None]:
    """Two of Ray's documented switches, set for this process while ``ray.init`` runs and put back after.

    Both are read from ``ray._private.ray_constants`` (their environment variables are read once, when Ray
    is imported, which may have happened before):

    - ``RAY_DISABLE_FAILURE_SIGNAL_HANDLER``: the core worker ``ray.init`` creates in this process installs no
      C++ failure-signal handler.  That handler took SIGTERM over (it printed ``*** SIGTERM received`` and
      the run exited 1) and, when the core worker shut down, reset SIGTERM to its default action, so a
      SIGTERM while Ray stopped killed the process before it could clean up.  Ray's own processes keep it.
    - local starts only, ``ENABLE_RAY_CLUSTER`` off (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, Ray's
      single-machine mode, the default on macOS and Windows): ``ray.init(_node_ip_address="127.0.0.1")``
      alone is not enough on Linux, where Ray replaces a loopback address by the machine's outside one
      (``services.resolve_ip_for_localhost``); its servers listen on every interface unless their node address
      is loopback.
    """
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    wanted: dict[str, bool] = {"RAY_DISABLE_FAILURE_SIGNAL_HANDLER": True}
    if local:
        wanted["ENABLE_RAY_CLUSTER"] = False
    saved = {name: getattr(constants, name) for name in wanted if hasattr(constants, name)}
    for name in saved:  # a Ray without a switch: _check_loopback refuses a local Ray off loopback
        setattr(constants, name, wanted[name])
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(constants, name, value)


@contextlib.contextmanager
def _interruptible_start(ray: Any) -> Iterator[None]:
    """SIGINT and SIGTERM while ``ray.init`` runs: raised at once (the start stops there, and the session's
    cleanup kills what it had started), except from the moment Ray builds its C++ core worker in this process
    to the end of ``ray.init``, where they are held and raised right after: a signal in that window orphaned the
    core worker, which crashed the process at exit (module docstring).  Holding the whole start made Ctrl-C
    wait for it (5-10 s, more on a busy machine).  Handlers Ray installs meanwhile are dropped, as
    :func:`deferred_signals` drops them.
    """
    raylet = getattr(ray, "_raylet", None)
    real = getattr(raylet, "CoreWorker", None)
    if threading.current_thread() is not threading.main_thread() or raylet is None or real is None:
        with deferred_signals():  # no core worker to watch for: hold every signal, as before
            yield
        return
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    previous: dict[int, Callable[[int, FrameType | None], Any] | int] = {
        signum: handler for signum, handler in handlers.items() if handler is not None}
    held: list[int] = []
    holding = [False]
    set_handler = signal.signal

    def on_signal(signum: int, frame: Any) -> None:
        handler = previous[signum]
        if holding[0] or not callable(handler):
            held.append(signum)  # raised once ray.init is over (a default action, too, then)
            return
        handler(signum, frame)  # parvec's: KeyboardInterrupt (Ctrl-C) or Terminated (SIGTERM), here and now

    def keep_handlers(signum: int, handler: Any) -> Any:
        if signum in previous:  # ray.init's own SIGTERM handler (sys.exit): the process keeps its handlers
            return previous[signum]
        return set_handler(signum, handler)

    def core_worker(*args: Any, **kwargs: Any) -> Any:
        holding[0] = True  # from here to the end of ray.init a signal waits
        return real(*args, **kwargs)

    for signum in previous:
        set_handler(signum, on_signal)
    signal.signal = keep_handlers  # type: ignore[assignment]
    raylet.CoreWorker = core_worker
    try:
        yield
    finally:
        raylet.CoreWorker = real
        signal.signal = set_handler
        for signum in previous:
            set_handler(signum, previous[signum])
        if held:
            signal.raise_signal(signal.SIGTERM if signal.SIGTERM in held else signal.SIGINT)


@contextlib.contextmanager
def _quiet_console(ray: Any) -> Iterator[None]:
    """Ray's own console lines off for a session, so that parvec's lines are the only ones a user needs:

    - Ray's Python loggers (``ray.*``) say only errors: not ``Token authentication is enabled for this Ray
      cluster ...`` on every local start (token authentication stays on, Ray's default), nor its other notes,
      such as Ray Client's ``INFO client_builder.py:262 -- Passing the following kwargs to ray.init() on the
      server: log_to_driver`` on joining ``ray://`` (``ray.init`` sets the ``ray`` logger back to INFO there,
      so its handlers drop what is below ERROR too);
    - the messages the raylet publishes to the driver (``A worker died or was killed ...`` when a replica or
      shard is lost, which parvec reports itself in one line) go to the ``parvec.ray`` logger at INFO level
      instead of standard output, where they were printed in yellow (raw escape codes in a redirected stream,
      and lines in the vectors of ``-o -``);
    - lines the actors print reach standard error without colour codes when it is not a terminal
      (``RAY_COLOR_PREFIX=0``, Ray's switch; a value the user set is kept).
    """
    import logging
    import sys

    ray_logger = logging.getLogger("ray")
    level = ray_logger.level
    ray_logger.setLevel(logging.ERROR)
    handlers = list(ray_logger.handlers)  # Ray's own, which print its records (and those of ray.*) on stderr

    def errors_only(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR

    for handler in handlers:
        handler.addFilter(errors_only)
    worker = getattr(getattr(ray, "_private", None), "worker", None)
    printer = getattr(worker, "print_to_stdstream", None)
    published = logging.getLogger("parvec.ray")
    if worker is not None and printer is not None:
        ray_printer = printer

        def print_to_stdstream(data: dict[str, Any], ignore_prefix: bool) -> None:
            if data.get("pid") == "raylet" and not data.get("is_err"):
                for line in data.get("lines", []):
                    published.info("Ray: %s", line)
                return
            ray_printer(data, ignore_prefix)

        worker.print_to_stdstream = print_to_stdstream  # what Ray's error listener calls for each message
    color = os.environ.get("RAY_COLOR_PREFIX")
    stream = sys.stderr
    if color is None and not (stream is not None and stream.isatty()):
        os.environ["RAY_COLOR_PREFIX"] = "0"
    try:
        yield
    finally:
        ray_logger.setLevel(level)
        for handler in handlers:
            handler.removeFilter(errors_only)
        if worker is not None and printer is not None:
            worker.print_to_stdstream = printer
        if color is None:
            os.environ.pop("RAY_COLOR_PREFIX", None)


def _check_loopback(ray: Any, spec: str) -> None:
    """Refuse a local Ray whose node address is not loopback: its servers would listen on every interface."""
    address = str(ray.util.get_node_ip_address())
    try:
        loopback = ipaddress.ip_address(address).is_loopback
    except ValueError:
        loopback = address == "localhost"
    if not loopback:
        raise ParvecError(f"--cluster {spec}: the local Ray took the address {address} instead of 127.0.0.1, so "
                          "its servers would listen on the network; this Ray version is not supported for a "
                          "private local Ray (install the tested one: pip install 'parvec[ray]')")


def listening_socket(host: str) -> tuple[int, int]:
    """A TCP socket bound to ``host`` (not every interface) on a free port, listening: ``(fd, port)``.

    For a server a replica or shard starts itself, such as torch's ``TCPStore`` (whose own socket listens on
    every interface): ``TCPStore(host, port, n, True, master_listen_fd=fd)``, which then owns ``fd``.  With
    ``host`` the node's address (``ray.util.get_node_ip_address()``), a local Ray's servers stay on
    127.0.0.1 and a cluster's on the node's own address.

    Example:
        >>> fd, port = listening_socket("127.0.0.1")
        >>> port > 0
        True
        >>> os.close(fd)
    """
    import socket

    family, kind, proto, _, address = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.bind(address)
        sock.listen()
        port = int(sock.getsockname()[1])
    except OSError:
        sock.close()
        raise
    return sock.detach(), port


def gloo_options(dist: Any, host: str, timeout: Any) -> Any:
    """Options for ``torch.distributed.ProcessGroupGloo`` whose device listens on ``host`` only.

    Gloo's default device listens on the address the machine's host name resolves to, which on most
    machines is its network address even for a local Ray; this one uses the node's address.

    Example:
        >>> import torch.distributed as dist  # doctest: +SKIP
        >>> pg = dist.ProcessGroupGloo(store, rank, n, gloo_options(dist, "127.0.0.1", timeout))  # doctest: +SKIP
    """
    options = dist.ProcessGroupGloo._Options()
    options._timeout = timeout
    options._devices = [dist.ProcessGroupGloo.create_device(hostname=host)]
    return options


def _client_wait_s() -> float:
    """How long Ray Client tries to connect before it gives up: 3 tries, waiting 5, 10 and 15 s by default."""
    first = float(os.environ.get("RAY_CLIENT_INITIAL_CONNECTION_TIMEOUT_S", 5))
    most = float(os.environ.get("RAY_CLIENT_MAX_CONNECTION_TIMEOUT_S", 30))
    return sum(min(first + 5 * k, most) for k in range(3))


def _psutil() -> Any:
    try:
        import psutil  # after Ray: Ray's own copy when psutil is not installed separately
    except ImportError:
        return None
    return psutil


def _children() -> list[Any]:
    """This process's child processes (empty without psutil)."""
    psutil = _psutil()
    if psutil is None:
        return []
    try:
        children: list[Any] = psutil.Process().children()  # psutil is untyped
        return children
    except psutil.Error:
        return []


def _with_descendants(processes: list[Any]) -> list[Any]:
    """The processes and every process under them (the raylet's workers and agents)."""
    psutil = _psutil()
    found = {p.pid: p for p in processes}
    for p in processes:
        try:
            found.update((c.pid, c) for c in p.children(recursive=True))
        except psutil.Error:
            pass
    return list(found.values())


def _running(process: Any) -> bool:
    psutil = _psutil()
    try:
        running: bool = process.is_running() and process.status() != psutil.STATUS_ZOMBIE  # psutil is untyped
        return running
    except psutil.Error:
        return False


def _stop_processes(processes: list[Any], grace_s: float = 5.0) -> None:
    """Wait up to ``grace_s`` for the processes to end, then kill the ones still running.

    ``ray.shutdown`` stops the processes it started (GCS, raylet, log monitor...); the raylet stops its
    workers and agents, unless it was killed first (it is, after a second): those are killed here.
    """
    deadline = time.monotonic() + grace_s
    alive = [p for p in processes if _running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if _running(p)]
    for p in alive:
        with contextlib.suppress(Exception):
            p.kill()
    deadline = time.monotonic() + grace_s
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _running(p)]
        if alive:
            time.sleep(0.1)


def _session_dir(ray: Any) -> str:
    """The directory where the local Ray started in this process keeps its sockets and logs."""
    try:
        return str(ray._private.worker._global_node.get_session_dir_path())
    except AttributeError:  # another Ray version: the watcher goes by the environment marker alone
        return ""


def _release(watcher: Any) -> None:
    """Close the pipe to the watcher of a local Ray that has stopped; it kills what is left and exits."""
    if watcher is None:
        return
    with contextlib.suppress(OSError):
        watcher.stdin.close()
    with contextlib.suppress(Exception):
        watcher.wait(timeout=5)


def _cpu_count() -> int:
    from parvec.config import default_threads

    return default_threads()


@overload
def as_cluster(value: Cluster | str) -> Cluster: ...


@overload
def as_cluster(value: None) -> None: ...


def as_cluster(value: Cluster | str | None) -> Cluster | None:
    """Accept a :class:`Cluster`, a spec string (``"local:2"``) or None.

    Example:
        >>> as_cluster("local:3").replicas
        3
    """
    if value is None or isinstance(value, Cluster):
        return value
    if isinstance(value, str):
        return Cluster(value)
    raise ParvecError(f"cluster must be a parvec.Cluster or a spec string like 'local:2', got {value!r}")
