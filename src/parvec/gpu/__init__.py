"""Training on an NVIDIA GPU with numba-cuda: a driver over the same corpus, config and model.

``pip install 'parvec[gpu]'`` adds numba-cuda.  The kernels (FULL-W2V, Randall et al.; PAR-Word2Vec's GPU
kernel, Moon et al.) live beside each other in this package; :func:`make_driver` returns the driver
(:class:`parvec.gpu.driver.GpuTrainer`: a :class:`parvec.engine.Driver` that can also run itself,
``train(corpus)``, leaving the vectors in ``w_in``/``w_out``).  docs/gpu.md has the design.

Example:
    >>> from parvec.gpu import make_driver
    >>> driver = make_driver(TrainConfig(device="cuda", algo="full-w2v"), counts, w_in, w_out)  # doctest: +SKIP
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from parvec.config import TrainConfig
from parvec.errors import ParvecError
from parvec.gpu.simulator import make_shared_arrays_thread_safe

if TYPE_CHECKING:
    from parvec.gpu.driver import GpuTrainer

make_shared_arrays_thread_safe()  # numba's CUDA simulator only: see parvec.gpu.simulator

MISSING_EXTRA = "--device cuda needs numba-cuda, an optional extra: pip install 'parvec[gpu]'"


def _driver() -> ModuleType:
    try:
        from parvec.gpu import driver
    except ImportError as exc:
        if "numba.cuda" in str(exc) or "numba_cuda" in str(exc) or "cuda" in (exc.name or ""):
            raise ParvecError(MISSING_EXTRA) from None
        raise
    return driver


def require_device() -> str:
    """The CUDA device's name, or a :class:`ParvecError` naming what is missing (the extra, or a GPU).

    Example:
        >>> require_device()  # doctest: +SKIP
        'NVIDIA H100 80GB HBM3'
    """
    name: str = _driver().require_device()  # a module found at run time: Any to mypy
    return name


def make_driver(config: TrainConfig, counts: np.ndarray, w_in: np.ndarray, w_out: np.ndarray) -> GpuTrainer:
    """The GPU driver, or a :class:`ParvecError` naming what is missing (the extra, or a device).

    Example:
        >>> stats = make_driver(config, counts, w_in, w_out).train(corpus)  # doctest: +SKIP
    """
    trainer: GpuTrainer = _driver().GpuTrainer(config, counts, w_in, w_out)
    return trainer
