"""Ray actors through their restarts, one way for both cluster modes (replicas and sharded).

Every replica, shard and client is a restartable Ray actor (``max_restarts``): when its process dies Ray runs its
constructor again in a new one, and calls meanwhile fail with ``ActorUnavailableError`` (restarting) or
``ActorDiedError`` (it cannot come back).  The drivers supervise them through this module:

- :func:`call_through_restarts`: call an actor while it starts, waiting through its restarts (a start-up fault);
- :func:`await_restart`: wait until a lost actor answers again, or say why it cannot;
- :func:`await_calls`: the results of one call per actor, an actor lost meanwhile raised as :class:`ActorLost`;
- :func:`cause`, :func:`first_line`: the error an actor raised, unwrapped from Ray's, in one line;
- :func:`was_restarted`: inside an actor, whether Ray restarted it; :func:`named_actor`: there, a peer's handle;
- :class:`RunRefs`: the object references a restarted actor is handed again (restartable actors take none among
  their constructor arguments);
- :class:`FaultRecord` and :func:`report_fault`: one record per fault in the report (``faults``), the same keys in
  both modes, and one line on standard error.

Example:
    >>> first_line(ValueError("bad\\nmore"))
    'bad'
    >>> FaultRecord("replica", 1, "train", 2, ["replica 1"], "its process died").to_dict()["lost"]
    ['replica 1']
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from parvec.errors import ParvecError

__all__ = ["ActorLost", "FaultRecord", "Restart", "RunRefs", "await_calls", "await_restart", "call_through_restarts",
           "cause", "first_line", "named_actor", "node_id", "report_fault", "was_restarted"]


def cause(exc: BaseException) -> BaseException:
    """The exception an actor raised (a ``ParvecError``, ``ShardLost``, ...), unwrapped from Ray's task error;
    ``exc`` itself when it wraps none.

    Example:
        >>> isinstance(cause(KeyError("k")), KeyError)
        True
    """
    inner = getattr(exc, "cause", None)
    return inner if isinstance(inner, BaseException) else exc


def first_line(exc: BaseException) -> str:
    """The first line of an error's text (at most 200 characters), else its type's name.

    Example:
        >>> first_line(RuntimeError()), first_line(OSError("disk\\nfull"))
        ('RuntimeError', 'disk')
    """
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def was_restarted() -> bool:
    """True inside an actor that Ray restarted (its process died and Ray ran its constructor again).

    Example:
        >>> was_restarted()  # outside an actor  # doctest: +SKIP
        False
    """
    import ray

    try:
        with warnings.catch_warnings():  # Ray's property reads its own deprecated actor_id (Ray 2.60)
            warnings.simplefilter("ignore", DeprecationWarning)
            return bool(ray.get_runtime_context().was_current_actor_reconstructed)
    except Exception:  # noqa: BLE001 - not inside an actor
        return False


def node_id() -> str | None:
    """The Ray node this process runs on (its hex id, as ``ray.nodes()`` names it), None outside a Ray worker: a
    run's report says where each actor ran.

    Example:
        >>> node_id()  # outside Ray  # doctest: +SKIP
        None
    """
    import ray

    try:
        return str(ray.get_runtime_context().get_node_id()) if ray.is_initialized() else None
    except Exception:  # noqa: BLE001 - not connected to a Ray node
        return None


def named_actor(name: str) -> Any:
    """Inside an actor: the handle of the actor named ``name`` (a run's board, holder or shards, found by name: a
    handle among a restartable actor's constructor arguments would stop its restarts).  Typed ``Any``, as every
    handle here: Ray types a handle's methods ``Never`` (``ActorHandle.__getattr__``), so a type checker would take
    every line after a call on it for unreachable and check none of them.

    Example:
        >>> board = named_actor("parvec-board-1f2e")  # doctest: +SKIP
    """
    import ray

    handle: Any = ray.get_actor(name)
    return handle


class ActorLost(Exception):
    """An actor lost while the driver waited on it: ``kind`` ("shard", "client", "replica"), its index, what was
    seen."""

    def __init__(self, kind: str, index: int, detail: str) -> None:
        super().__init__(kind, index, detail)
        self.kind, self.index, self.detail = kind, index, detail


@dataclass(frozen=True)
class Restart:
    """How waiting for a lost actor ended: ``back`` (it answers again), else ``why`` it cannot come back (its
    restarts are used up or its node is gone: Ray's error, in one line), or None when the time ran out."""

    back: bool
    why: str | None = None


def await_restart(ray: Any, handle: Any, deadline: float) -> Restart:
    """Wait until the actor ``handle`` answers ``ping()`` again (Ray restarting it), at most until ``deadline``
    (``time.monotonic()``).

    Example:
        >>> await_restart(ray, shard, time.monotonic() + 60).back  # doctest: +SKIP
        True
    """
    while time.monotonic() < deadline:
        try:
            ray.get(handle.ping.remote(), timeout=max(0.1, deadline - time.monotonic()))
            return Restart(True)
        except (ray.exceptions.ActorUnavailableError, ray.exceptions.GetTimeoutError):
            time.sleep(0.05)  # restarting
        except ray.exceptions.RayError as exc:  # ActorDiedError: its restarts used up, or its node gone
            return Restart(False, first_line(cause(exc)))
    return Restart(False)


def call_through_restarts(ray: Any, handle: Any, method: str, args: tuple = (), *, what: str, deadline: float,
                          timeout_s: float, max_restarts: int, late: str | None = None,
                          refused: tuple[type[BaseException], ...] = (),
                          on_refused: Callable[[float], None] | None = None) -> tuple[Any, bool]:
    """Call ``handle.method(*args)`` on an actor that is starting until it answers; an actor lost meanwhile is
    waited for while Ray restarts it.  Returns ``(answer, restarted)``.

    A ``ParvecError`` the actor raised (a shard whose columns do not fit, ...) ends the start with its message; an
    actor that cannot come back ends it naming ``what`` and ``max_restarts``; no answer by ``deadline`` ends it with
    ``late`` (default: ``starting WHAT: no answer within T s``).  An error of a type in ``refused`` (a shard that
    refused a client's warm-up call because it was restarted) calls ``on_refused(deadline)`` and calls again.

    Example:
        >>> info, restarted = call_through_restarts(ray, shard, "info", what="shard 0 of 2",
        ...                                         deadline=time.monotonic() + 60, timeout_s=60,
        ...                                         max_restarts=3)  # doctest: +SKIP
    """
    restarted = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ParvecError(late or f"starting {what}: no answer within {timeout_s:g} s (Cluster.timeout_s)")
        try:
            return ray.get(getattr(handle, method).remote(*args), timeout=left), restarted
        except ray.exceptions.GetTimeoutError:
            continue
        except ray.exceptions.RayActorError as exc:
            inner = cause(exc)
            if isinstance(inner, ParvecError):
                raise ParvecError(str(inner)) from None
            restarted = True
            if not await_restart(ray, handle, deadline).back:
                raise ParvecError(f"{what} was lost while starting and cannot be restarted (Cluster.max_restarts="
                                  f"{max_restarts}): {first_line(exc)}") from None
        except refused:
            assert on_refused is not None
            on_refused(deadline)
        except ParvecError as exc:
            raise ParvecError(str(cause(exc))) from None
        except ray.exceptions.RayError as exc:
            raise ParvecError(f"starting {what} failed: {cause(exc)}") from None


def await_calls(ray: Any, refs: Sequence[Any], *, kind: str, what: str, timeout_s: float,
                lost: tuple[type[BaseException], ...] = ()) -> list[Any]:
    """The answers of one call per actor (``refs[i]`` to ``kind`` ``i``).  An actor lost meanwhile (its process
    died, or it answered with an error of a type in ``lost``) raises :class:`ActorLost`, once every call has
    ended; an error the actor raised (a snapshot it cannot write) ends the run, as does no answer in ``timeout_s``.

    Example:
        >>> await_calls(ray, [h.info.remote() for h in shards], kind="shard", what="reading the shards' state",
        ...             timeout_s=60)  # doctest: +SKIP
    """
    ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
    if len(ready) < len(refs):
        late = [i for i, r in enumerate(refs) if r not in ready]
        raise ParvecError(f"{what}: {kind}(s) {', '.join(map(str, late))} did not answer within {timeout_s:g} s "
                          "(Cluster.timeout_s)")
    out = []
    for i, ref in enumerate(refs):
        try:
            out.append(ray.get(ref, timeout=timeout_s))
        except (ray.exceptions.RayActorError, *lost) as exc:
            raise ActorLost(kind, i, first_line(cause(exc))) from None
        except ParvecError as exc:
            raise ParvecError(str(cause(exc))) from None
        except ray.exceptions.RayError as exc:
            raise ParvecError(f"{what} failed on {kind} {i}: {cause(exc)}") from None
    return out


class RunRefs:
    """The object references of one run (tables, initial columns, corpus parts), held for the run and handed to
    an actor when it starts or Ray restarts it.

    Restartable actors take no object reference or actor handle among their constructor arguments: Ray cannot
    promise those to a restart, and says so on the console at error level (ray-project/ray#53727).  This actor
    is not restarted (``max_restarts=0``), so its arguments may hold them; the others find it by name.

    Example:
        >>> holder = ray.remote(RunRefs).options(name="run-1").remote({"client": [keep_ref]})  # doctest: +SKIP
    """

    def __init__(self, refs: dict[str, Any]) -> None:
        self.refs = refs

    def get(self, key: str) -> Any:
        """The references stored under ``key``."""
        return self.refs[key]


@dataclass
class FaultRecord:
    """One fault in a cluster run's report (``faults``): the same keys in both modes.

    ``kind``/``index``: the (first) actor lost ("shard", "client" or "replica"); ``lost``: every actor lost in it
    (``"shard 1"``); ``phase``: "start" (before training), "train" or "gather" (between epochs, or reading the
    model back); ``epoch``: 1-based, None while starting; ``error``: what was seen; ``restored``: what every actor
    went back to, in words (None: nothing to restore); ``words_retrained``, ``units_retrained`` (sharded: units,
    replicas: parts); ``recovery_seconds``; ``details``: the mode's own figures (sharded: the ``snapshot``
    restored; replicas: the ``replica`` list, ``syncs_done_before_loss``, ``words_retrained_by_lost``), kept
    beside the common keys.

    Example:
        >>> FaultRecord("shard", 0, "start", None, ["shard 0"], "lost while starting").to_dict()["words_retrained"]
        0
    """

    kind: str
    index: int
    phase: str
    epoch: int | None
    lost: list[str]
    error: str
    restored: str | None = None
    words_retrained: int = 0
    units_retrained: int = 0
    recovery_seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The report's record: the common keys, then the mode's ``details``."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "details"}
        d["error"] = d["error"][:300]
        return d | self.details


def report_fault(faults: list[FaultRecord], record: FaultRecord, line: str) -> None:
    """Keep ``record`` in the run's ``faults`` (the report's, :meth:`FaultRecord.to_dict` each) and print
    ``parvec: LINE`` on standard error (one line per fault).

    Example:
        >>> faults = []
        >>> report_fault(faults, FaultRecord("replica", 0, "start", None, ["replica 0"], "died"),
        ...              "replica 0 of 2 was lost while starting")  # doctest: +SKIP
    """
    faults.append(record)
    print(f"parvec: {line}", file=sys.stderr, flush=True)
