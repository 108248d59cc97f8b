"""What each training mode can do: one table, and every refusal worded from it.

A *mode* is where a run trains: ``cpu`` (this process's threads), ``cuda`` (a GPU, ``device="cuda"``),
``replicas`` and ``sharded`` (a Ray cluster, ``cluster=Cluster(..., mode=...)``).  What a mode cannot do is
refused before anything is read, with one message that names the feature in both its spellings (the Python
parameter and the command-line flag), the modes that have it, and how to get there.  Nothing else in parvec
words a mode refusal.

| mode | algorithms | CBOW | hierarchical softmax | mid-epoch checkpoints and resume | node2vec / DeepWalk |
| --- | --- | --- | --- | --- | --- |
| cpu | classic, hogbatch, par | yes (classic, hogbatch) | yes (classic, hogbatch) | yes | yes |
| cuda | full-w2v, par | no | no | yes (at kernel launches) | yes |
| replicas | classic, hogbatch, par | yes | no (the tree's vectors are not synchronised) | yes (part ends) | not yet |
| sharded | its own minibatch SGNS | no | no | no: epoch ends | not yet |

Example:
    >>> check("cpu", hs=True)
    >>> str(refusal("sharded", "cbow")).split(":")[0]
    'CBOW (sg=0, -cbow 1) is not available on the sharded mode (--mode sharded)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parvec.errors import ParvecError

__all__ = ["ALGORITHMS", "CAPABILITIES", "CBOW_ALGORITHMS", "FEATURES", "GPU_ALGORITHMS", "PIPELINE_REFUSES",
           "Capabilities", "check", "check_config", "check_graph_checkpoints", "check_graph_resume", "check_placement",
           "mode_of", "pipeline_refusal", "refusal", "sharded_algo_refusal"]

ALGORITHMS = ("classic", "hogbatch", "par")  # the CPU algorithms (parvec.kernels)
CBOW_ALGORITHMS = ("classic", "hogbatch")  # the CPU algorithms that train CBOW (sg=False): parvec.kernels
GPU_ALGORITHMS = ("full-w2v", "par")  # what --device cuda runs (parvec.gpu)


@dataclass(frozen=True)
class Capabilities:
    """One row of the table (module docstring): ``name`` is how messages name the mode, ``leave`` how to
    leave it for the CPU."""

    name: str
    leave: str
    algorithms: tuple[str, ...]
    cbow: bool
    hs: bool
    mid_epoch_checkpoints: bool
    graphs: bool


CAPABILITIES: dict[str, Capabilities] = {
    "cpu": Capabilities("the CPU (this process)", "", ALGORITHMS, cbow=True, hs=True, mid_epoch_checkpoints=True,
                        graphs=True),
    "cuda": Capabilities("the GPU (device='cuda', --device cuda)", "leave out device='cuda' (--device cuda)",
                         GPU_ALGORITHMS, cbow=False, hs=False, mid_epoch_checkpoints=True, graphs=True),
    "replicas": Capabilities("a cluster's replicas (--mode replicas)", "leave out cluster=... (--cluster)",
                             ALGORITHMS, cbow=True, hs=False, mid_epoch_checkpoints=True, graphs=False),
    "sharded": Capabilities("the sharded mode (--mode sharded)", "leave out cluster=... (--cluster)",
                            ALGORITHMS, cbow=False, hs=False, mid_epoch_checkpoints=False, graphs=False),
}

# The features a mode may lack: (how messages name it, what to do where the mode lacks it).
FEATURES: dict[str, tuple[str, str]] = {
    "cbow": ("CBOW (sg=0, -cbow 1)", "train skip-gram there (sg=1, -cbow 0), or train CBOW elsewhere"),
    "hs": ("hierarchical softmax (hs=1, -hs 1)", "use negative sampling there (hs=0, -hs 0), or train it elsewhere"),
    "mid_epoch_checkpoints": (
        "mid-epoch checkpoints and resuming from one (checkpoint_every, --checkpoint-every)",
        "use epoch-end checkpoints there (checkpoint_dir, --checkpoint-dir: the model after every epoch)"),
    "graphs": ("training node2vec/DeepWalk", "train the graph on one machine (leave out cluster=..., --cluster)"),
}


def mode_of(config: Any = None, cluster: Any = None) -> str:
    """The mode a run trains in: the cluster's (``replicas``/``sharded``), else the config's device.

    Example:
        >>> from types import SimpleNamespace
        >>> mode_of(SimpleNamespace(device="cuda")), mode_of(None, SimpleNamespace(mode="sharded"))
        ('cuda', 'sharded')
    """
    if cluster is not None:
        return str(cluster.mode)
    return str(getattr(config, "device", "cpu") or "cpu")


def _where(feature: str) -> str:
    """The modes that have ``feature``, in words."""
    names = [CAPABILITIES[m].name for m in CAPABILITIES if getattr(CAPABILITIES[m], feature)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def refusal(mode: str, feature: str) -> ParvecError:
    """The one message for ``feature`` (a key of :data:`FEATURES`) refused in ``mode``.

    Example:
        >>> str(refusal("cuda", "hs")).split(":")[0]
        "hierarchical softmax (hs=1, -hs 1) is not available on the GPU (device='cuda', --device cuda)"
    """
    what, remedy = FEATURES[feature]
    cap = CAPABILITIES[mode]
    plural = feature == "mid_epoch_checkpoints"
    be, it, verb = ("are", "they", "work") if plural else ("is", "it", "works" if feature == "graphs" else "runs")
    only = " only" if sum(getattr(c, feature) for c in CAPABILITIES.values()) == 1 else ""
    return ParvecError(f"{what} {be} not available on {cap.name}: {it} {verb} on {_where(feature)}{only}; {remedy}")


def check(mode: str, *, cbow: bool = False, hs: bool = False, mid_epoch_checkpoints: bool = False,
          graphs: bool = False) -> None:
    """Refuse (:class:`ParvecError`) the first feature asked for that ``mode`` lacks.

    Example:
        >>> check("replicas", cbow=True)
    """
    if mode not in CAPABILITIES:
        raise ParvecError(f"unknown training mode {mode!r}; one of {', '.join(CAPABILITIES)}")
    cap = CAPABILITIES[mode]
    for feature, asked in (("graphs", graphs), ("cbow", cbow), ("hs", hs),
                           ("mid_epoch_checkpoints", mid_epoch_checkpoints)):
        if asked and not getattr(cap, feature):
            raise refusal(mode, feature)


def check_placement(device: str, cluster: Any) -> None:
    """Refuse a run asked to train on a GPU and on a cluster at once (each is a mode of its own).

    Example:
        >>> check_placement("cpu", None)
    """
    if cluster is not None and device != "cpu":
        raise ParvecError("a GPU (device='cuda', --device cuda) and a Ray cluster (cluster=..., --cluster) cannot be "
                          "combined yet: choose one")


def check_config(config: Any, mode: str | None = None) -> None:
    """Refuse what ``config`` asks for that its mode lacks: its algorithm, CBOW, hierarchical softmax.
    ``mode`` defaults to the config's device (a cluster's mode is given by the caller).

    Example:
        >>> from types import SimpleNamespace
        >>> check_config(SimpleNamespace(algo="par", sg=True, hs=False, device="cpu"), "replicas")
    """
    mode = mode or mode_of(config)
    cap = CAPABILITIES[mode]
    if config.algo not in cap.algorithms:
        if mode == "cuda":
            raise ParvecError(f"algo {config.algo!r} runs on the CPU only: with --device cuda (device='cuda') choose "
                              f"{' or '.join(cap.algorithms)} ({cap.algorithms[0]} is the default there)")
        gpu_only = config.algo in CAPABILITIES["cuda"].algorithms
        raise ParvecError(f"algo {config.algo!r} runs on the GPU only: add --device cuda (device='cuda'), or "
                          f"choose one of {', '.join(cap.algorithms)} for {cap.name}" if gpu_only else
                          f"algo {config.algo!r} is not available on {cap.name}: choose one of "
                          f"{', '.join(cap.algorithms)}")
    check(mode, cbow=not config.sg, hs=bool(config.hs))
    # What an algorithm trains, on every mode: CBOW (classic, hogbatch), hierarchical softmax (not par).
    if not config.sg and not config.hs and config.algo not in CBOW_ALGORITHMS:
        raise ParvecError(f"algo {config.algo!r} trains skip-gram only: for CBOW (sg=0, --cbow) choose "
                          f"{' or '.join(CBOW_ALGORITHMS)} (classic, the default, is word2vec.c's loop; hogbatch runs "
                          "the fast batched CBOW kernel)")
    if config.hs and config.algo == "par":
        raise ParvecError("hierarchical softmax (hs=1, -hs 1) is not implemented for algo 'par': use classic or "
                          "hogbatch (both run word2vec.c's hierarchical-softmax loop)")


def check_graph_checkpoints(device: str) -> None:
    """Refuse checkpoints of a graph run anywhere but the CPU (its walks' chunks are the CPU driver's units).

    Example:
        >>> check_graph_checkpoints("cpu")
    """
    if device != "cpu":
        raise ParvecError("checkpoints of graph runs (checkpoint_dir, --checkpoint-dir) work with the CPU trainer "
                          "only, not with device='cuda'")


def check_graph_resume(device: str) -> None:
    """Refuse ``--resume`` of a graph run on another device than the CPU.

    Example:
        >>> check_graph_resume("cpu")
    """
    if device != "cpu":
        raise ParvecError("--resume: graph runs resume on the CPU trainer only (leave out --device)")


# What ``parvec train --mode sharded`` (the model never in one process) refuses:
# flag -> why, after "FLAG is not available with --mode sharded".
PIPELINE_REFUSES = {
    "-read-vocab": "",
    "-classes": "",
    "--eval-every-epoch": " (the model is never in one process); use --mode replicas, or train without it",
}


def sharded_algo_refusal(algo: str, name: str = "--algo") -> ParvecError:
    """The refusal of an explicit ``--algo`` by ``parvec train --mode sharded`` (or of ``algo=`` other than
    ``"hogbatch"`` by ``Word2Vec(cluster=Cluster(..., mode="sharded"))``: ``name``), which trains with kernels of its
    own whatever the CPU algorithm would be (an algorithm left unread would say one thing and run another).

    Example:
        >>> str(sharded_algo_refusal("par")).split(":")[0]
        '--algo par is not available with --mode sharded'
        >>> str(sharded_algo_refusal("par", "algo=")).split(":")[0]
        "algo='par' is not available with --mode sharded"
    """
    given = f"--algo {algo}" if name == "--algo" else f"{name}{algo!r}"
    leave = ("leave --algo out" if name == "--algo"
             else "leave algo out (or 'hogbatch', whose step the window batches are)")
    return ParvecError(f"{given} is not available with --mode sharded: the sharded mode trains skip-gram with "
                       "negative sampling in its own minibatch kernels on the shards (--minibatch-words and "
                       f"--negatives-per set them), not one of the CPU algorithms; {leave}")


def pipeline_refusal(flag: str) -> ParvecError:
    """The refusal of a flag (a key of :data:`PIPELINE_REFUSES`) by ``parvec train --mode sharded``.

    Example:
        >>> str(pipeline_refusal("-classes"))
        '-classes is not available with --mode sharded'
    """
    return ParvecError(f"{flag} is not available with --mode sharded{PIPELINE_REFUSES[flag]}")

