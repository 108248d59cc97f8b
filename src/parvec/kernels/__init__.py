"""The algorithm registry: each CPU training algorithm is one kernel module.

A kernel module provides ``train_chunk`` (the numba function of the contract in
docs/architecture.md) and ``params(config) -> (iparams, extra_fparams, work_floats)``.
The :class:`parvec.trainer.Trainer` looks algorithms up here by name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from parvec.errors import ParvecError

# name -> module path; the module is imported (and its kernel compiled) only when used.
_MODULES = {
    "classic": "parvec.kernels.classic",
    "hogbatch": "parvec.kernels.hogbatch",
    "par": "parvec.kernels.par",
}


@dataclass(frozen=True)
class Algorithm:
    """A training algorithm: its name and kernel module.

    Example:
        >>> get_algorithm("classic").name
        'classic'
    """

    name: str
    module: ModuleType

    @property
    def train_chunk(self):
        return self.module.train_chunk

    def params(self, config):
        return self.module.params(config)


def get_algorithm(name: str) -> Algorithm:
    """Look an algorithm up by name (``classic``, ``hogbatch``, ``par``)."""
    if name not in _MODULES:
        raise ParvecError(f"unknown algorithm {name!r}; choose one of {', '.join(_MODULES)}")
    try:
        module = importlib.import_module(_MODULES[name])
    except ModuleNotFoundError as exc:
        if exc.name == _MODULES[name]:
            raise ParvecError(f"algorithm {name!r} is not available in this build") from None
        raise
    return Algorithm(name, module)
