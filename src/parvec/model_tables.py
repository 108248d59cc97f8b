"""A model's arrays before training, the same for every driver: word2vec.c's initial input vectors (CBOW: twice
them, gensim 4's range, :func:`init_half_width`; zero output vectors), the subsampling keep probabilities and the
noise distribution's alias table (:class:`ModelTables`, which the CPU and GPU drivers are built on; the shards of
sharded mode, skip-gram only, generate their columns of the same initial vectors,
:func:`parvec.kernels.sharded.init_columns`).

Example:
    >>> t = ModelTables(TrainConfig(dim=4), np.array([5, 3, 1]))
    >>> t.w_in.shape, t.noise_alias.dtype.name
    ((3, 4), 'int32')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from numba import njit

from parvec.chunks import Part
from parvec.config import TrainConfig
from parvec.corpus import EncodedCorpus
from parvec.errors import ParvecError
from parvec.sampling import keep_probabilities, word_noise_tables

__all__ = ["ModelTables", "init_half_width", "init_input_vectors"]


SG_INIT_HALF_WIDTH = 0.5  # skip-gram: word2vec.c's [-0.5, 0.5) / dim
CBOW_INIT_HALF_WIDTH = 1.0  # CBOW: gensim 4's [-1, 1) / dim (docs/guide/words.md#cbow: the small-corpus gap)


def init_half_width(config: TrainConfig) -> float:
    """Half the width of the initial input vectors' range, times ``dim``, for ``config``'s architecture.

    Skip-gram starts from word2vec.c's range, uniform in [-0.5, 0.5) / dim.  CBOW starts from gensim 4's,
    [-1, 1) / dim (the same random stream, every value doubled): the context's *mean* is what meets the output
    vectors, which start at zero, so with word2vec.c's range the first updates of both layers are half as large
    and CBOW spends more of a short run leaving the start; on a 3M-token corpus that cost 0.02-0.03 WS-353 (the
    measurements: the Benchmarks page, CBOW section).

    Example:
        >>> init_half_width(TrainConfig(sg=True)), init_half_width(TrainConfig(sg=False))
        (0.5, 1.0)
    """
    return SG_INIT_HALF_WIDTH if config.sg else CBOW_INIT_HALF_WIDTH


@njit(cache=True)
def _init_input_vectors(n: int, dim: int, seed: int, start: int, width: float) -> np.ndarray:
    # word2vec.c's initialisation: its LCG, uniform in [-0.5, 0.5) / dim (seed 1 = word2vec.c's) times `width`
    # (1 or 2: exact, so the values are word2vec.c's or exactly twice them); rows start..n-1 of that matrix (the
    # stream is advanced past the first `start` rows).
    out = np.empty((n - start, dim), dtype=np.float32)
    state = np.uint64(seed)
    mul = np.uint64(25214903917)
    inc = np.uint64(11)
    w = np.float32(width)
    for _ in range(start * dim):
        state = state * mul + inc
    for a in range(n - start):
        for b in range(dim):
            state = state * mul + inc
            out[a, b] = ((np.float32(state & np.uint64(0xFFFF)) / np.float32(65536.0) - np.float32(0.5)) * w) / dim
    return out


def init_input_vectors(n: int, dim: int, seed: int = 1, start: int = 0,
                       half_width: float = SG_INIT_HALF_WIDTH) -> np.ndarray:
    """Input vectors as word2vec.c initialises them (uniform in [-0.5, 0.5) / dim): rows ``start..n-1``;
    ``half_width`` 1.0 (CBOW's, :func:`init_half_width`) doubles every value: [-1, 1) / dim, gensim 4's range.

    Row ``i`` is the same whatever ``start`` is, so the rows of words added to a vocabulary
    (``build_vocab(update=True)``) are what they would have been in a model built with them.

    Example:
        >>> init_input_vectors(3, 4).shape
        (3, 4)
        >>> bool((init_input_vectors(3, 4, start=2) == init_input_vectors(3, 4)[2:]).all())
        True
        >>> bool((init_input_vectors(3, 4, half_width=1.0) == 2 * init_input_vectors(3, 4)).all())
        True
    """
    if not 0 <= start <= n:
        raise ValueError(f"start must be in [0, {n}], got {start}")
    if half_width not in (SG_INIT_HALF_WIDTH, CBOW_INIT_HALF_WIDTH):
        raise ValueError(f"half_width must be 0.5 or 1.0, got {half_width}")
    vectors: np.ndarray = _init_input_vectors(n, dim, seed, start, 2.0 * half_width)  # jitted: Any to mypy
    return vectors


class ModelTables:
    """What every driver over a model holds: the validated config, the vectors (word2vec.c's initialisation
    unless given), the subsampling keep probabilities and the noise distribution's alias table.

    Example:
        >>> t = ModelTables(TrainConfig(dim=4), np.array([5, 3, 1]))
        >>> t.w_in.shape, t.w_out.shape, t.keep.shape
        ((3, 4), (3, 4), (3,))
    """

    def __init__(self, config: TrainConfig, counts: np.ndarray, w_in: np.ndarray | None = None,
                 w_out: np.ndarray | None = None) -> None:
        self.config = config.validate()
        counts = np.asarray(counts, dtype=np.int64)
        if len(counts) == 0:
            raise ParvecError("the vocabulary is empty")
        n = len(counts)
        self.w_in = (init_input_vectors(n, config.dim, config.seed, half_width=init_half_width(config))
                     if w_in is None else w_in)
        self.w_out = np.zeros((n, config.dim), dtype=np.float32) if w_out is None else w_out
        for name, w in (("w_in", self.w_in), ("w_out", self.w_out)):
            if w.shape != (n, config.dim) or w.dtype != np.float32 or not w.flags.c_contiguous:
                raise ParvecError(f"{name} must be C-contiguous float32 of shape ({n}, {config.dim})")
        self.keep = keep_probabilities(counts, config.sample)
        self.noise_prob, self.noise_alias = word_noise_tables(counts, config.ns_exponent)

    def vectors_finite(self) -> bool:
        """Whether the input vectors hold only finite numbers (~1 ms per 10^6 floats: catches --no-loss runs)."""
        return bool(np.isfinite(self.w_in.sum()))

    def use_corpus(self, corpus: EncodedCorpus) -> Any:
        """Train on ``corpus`` every epoch (its arrays, the same each time); returns self.

        Example:
            >>> driver = CpuDriver(TrainConfig(), corpus.vocab.counts).use_corpus(corpus)  # doctest: +SKIP
        """
        if len(corpus.vocab) != len(self.w_in):
            raise ParvecError(
                f"the corpus vocabulary has {len(corpus.vocab)} words but the model has {len(self.w_in)}"
            )
        return self.bind(lambda epoch: [(corpus.tokens, corpus.offsets)], repeats=True)

    def bind(self, make_parts: Callable[[int], Iterable[Part]], repeats: bool = False) -> Any:
        """Train the parts ``make_parts(epoch)`` yields (``repeats``: the same arrays every epoch); returns self.
        Each driver says how (:meth:`parvec.trainer.CpuDriver.bind`, :meth:`parvec.gpu.driver.GpuDriver.bind`)."""
        raise NotImplementedError
