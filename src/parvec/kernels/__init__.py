"""The algorithm registry: each CPU training algorithm is one kernel module.

A kernel module provides ``train_chunk`` (the numba function of the contract in
docs/architecture.md) and ``params(config) -> (KernelParams, work_floats)``: the named parameters the kernel
reads (:class:`parvec.kernels.params.KernelParams`, built once per run) and its scratch size in floats; each call
also takes the chunk's learning rates as a :class:`parvec.kernels.params.ChunkRates`.
The CPU driver (:class:`parvec.trainer.CpuDriver`) looks algorithms up here by (name, model): the name is
``config.algo``, the model skip-gram (``sg=True``) or CBOW (``sg=False``), each pair one module:

=========== ===================================== ======================================
algo        skip-gram (sg=1)                      CBOW (sg=0)
=========== ===================================== ======================================
classic     kernels.classic (word2vec.c)          kernels.cbow (word2vec.c ``-cbow 1``)
hogbatch    kernels.hogbatch (Ji et al.)          kernels.cbow_batch (targets share negatives)
par         kernels.par (Moon et al.)             -- (a ParvecError)
=========== ===================================== ======================================

A module that sets ``NEEDS_HS = True`` (hierarchical softmax) gets four more arguments after the
contract's: ``syn1, codes, points, code_len`` (the trainer builds them); :func:`select_algorithm` maps a
config to its kernel (``hs=True`` trains with :mod:`parvec.kernels.hs`, skip-gram or CBOW, whatever the CPU
``algo``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from parvec.errors import ParvecError

if TYPE_CHECKING:
    from parvec.config import TrainConfig
    from parvec.kernels.params import KernelParams

# name -> module path; the module is imported (and its kernel compiled) only when used.
_MODULES = {
    "classic": "parvec.kernels.classic",
    "hogbatch": "parvec.kernels.hogbatch",
    "par": "parvec.kernels.par",
}
# CBOW (sg=False): algo name -> module.  hogbatch, the default, names the fast batched CBOW kernel.
_CBOW_MODULES = {
    "classic": "parvec.kernels.cbow",
    "hogbatch": "parvec.kernels.cbow_batch",
}
# Hierarchical softmax (skip-gram and CBOW): one classic-style kernel, run for algo classic or hogbatch.
_HS_MODULE = "parvec.kernels.hs"
HS_ALGORITHMS = ("classic", "hogbatch")


@dataclass(frozen=True)
class Algorithm:
    """A training algorithm: its name and kernel module.

    Example:
        >>> get_algorithm("classic").name
        'classic'
    """

    name: str
    module: ModuleType
    sg: bool = True  # the model the kernel trains: skip-gram, or CBOW when False

    @property
    def kernel(self) -> str:
        """What runs, in words: ``"hogbatch"`` for skip-gram, ``"cbow-hogbatch"`` for CBOW."""
        return self.name if self.sg else f"cbow-{self.name}"

    @property
    def train_chunk(self) -> Callable[..., tuple[int, int, float]]:
        """The module's numba kernel: ``(words, pairs, loss)`` of the chunk it trains (docs/architecture.md)."""
        kernel: Callable[..., tuple[int, int, float]] = self.module.train_chunk
        return kernel

    @property
    def needs_hs(self) -> bool:
        """Whether the kernel takes the hierarchical-softmax arrays (syn1, codes, points, code_len)."""
        return bool(getattr(self.module, "NEEDS_HS", False))

    def params(self, config: TrainConfig) -> tuple[KernelParams, int]:
        """The kernel's named parameters for ``config`` and its work size in floats (the module's ``params``).

        Example:
            >>> from parvec.config import TrainConfig
            >>> get_algorithm("classic").params(TrainConfig(window=3, dim=8))[0].window
            3
        """
        params: tuple[KernelParams, int] = self.module.params(config)
        return params


def get_algorithm(name: str, sg: bool = True) -> Algorithm:
    """Look an algorithm up by name (``classic``, ``hogbatch``, ``par``) and model (``sg``: skip-gram, or
    CBOW when False).

    Example:
        >>> get_algorithm("hogbatch", sg=False).kernel
        'cbow-hogbatch'
    """
    if name not in _MODULES:
        raise ParvecError(f"unknown algorithm {name!r}; choose one of {', '.join(_MODULES)}")
    modules = _MODULES if sg else _CBOW_MODULES
    if name not in modules:
        raise ParvecError(f"algorithm {name!r} trains skip-gram only: for CBOW (sg=0) choose one of "
                          f"{', '.join(_CBOW_MODULES)}")
    try:
        module = importlib.import_module(modules[name])
    except ModuleNotFoundError as exc:
        if exc.name == modules[name]:
            raise ParvecError(f"algorithm {name!r} is not available in this build") from None
        raise
    return Algorithm(name, module, bool(sg))


def select_algorithm(config: TrainConfig) -> Algorithm:
    """The kernel that trains ``config``: its ``algo``, or with ``hs=True`` the hierarchical-softmax kernel.

    Hierarchical softmax has one kernel (word2vec.c's loop, :mod:`parvec.kernels.hs`), used for ``algo``
    classic and hogbatch (the default); ``par`` with ``hs=True`` is refused.

    Example:
        >>> from parvec.config import TrainConfig
        >>> select_algorithm(TrainConfig(hs=True, negative=0)).name
        'hs'
    """
    if not getattr(config, "hs", False):
        return get_algorithm(str(config.algo), config.sg)  # TrainConfig sets algo (None: the device's default)
    if config.algo not in HS_ALGORITHMS:
        raise ParvecError(f"hierarchical softmax (hs=1) runs with algo {' or '.join(HS_ALGORITHMS)} only, "
                          f"not {config.algo!r}")
    return Algorithm("hs", importlib.import_module(_HS_MODULE), bool(config.sg))
