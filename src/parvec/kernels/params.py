"""The CPU kernels' named parameters: what ``train_chunk`` reads besides the arrays (docs/architecture.md).

Two records, one per concern, both ``typing.NamedTuple`` so that numba compiles them as arguments (a field read is
a struct field read in the compiled kernel, and a kernel cached with ``cache=True`` loads in a later process):

- :class:`KernelParams`: the run's settings, built once per driver by the kernel module's ``params(config)``;
  every kernel takes the same record and reads the fields it uses.
- :class:`ChunkRates`: the learning rate at a chunk's first and last raw word, built for each chunk.

Fields always hold Python ``int``/``float``/``bool`` (the constructors below convert), so every run compiles the
one signature ``KernelParams(int64 x 4, float64, bool x 3)``, ``ChunkRates(float64 x 2)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from parvec.config import TrainConfig


class KernelParams(NamedTuple):
    """The settings a CPU kernel reads, by name.

    ``batch`` and ``h_max`` mean what their kernel says (0 where a kernel has none): hogbatch's centers' contexts
    per batch, the fast CBOW's centers sharing one set of negatives, par's words per minibatch (0 = the whole
    sentence); ``h_max`` and ``h_factor`` are par's largest number of shared negatives and its rule's factor.

    Example:
        >>> KernelParams.of(TrainConfig(window=8, negative=5), batch=17)[:3]
        (8, 5, 17)
    """

    window: int
    negative: int
    batch: int
    h_max: int
    h_factor: float
    sg: bool
    cbow_mean: bool
    compute_loss: bool

    @classmethod
    def of(cls, config: TrainConfig, batch: int = 0, h_max: int = 0, h_factor: float = 0.0) -> KernelParams:
        """The record for ``config``, with a kernel's derived ``batch``, ``h_max`` and ``h_factor``.

        Example:
            >>> KernelParams.of(TrainConfig(sg=False, cbow_mean=False)).cbow_mean
            False
        """
        return cls(int(config.window), int(config.negative), int(batch), int(h_max), float(h_factor),
                   bool(config.sg), bool(config.cbow_mean), bool(config.compute_loss))


class ChunkRates(NamedTuple):
    """The learning rate at a chunk's first raw word (``alpha0``) and after its last (``alpha1``); the kernel
    moves it linearly between them.

    Example:
        >>> ChunkRates.of(0.025, 0.0249)
        ChunkRates(alpha0=0.025, alpha1=0.0249)
    """

    alpha0: float
    alpha1: float

    @classmethod
    def of(cls, alpha0: float, alpha1: float) -> ChunkRates:
        """The record with both rates as Python floats (float64 in the kernel, whatever type they came as).

        Example:
            >>> import numpy as np
            >>> type(ChunkRates.of(np.float32(0.5), 0.25).alpha0)
            <class 'float'>
        """
        return cls(float(alpha0), float(alpha1))
