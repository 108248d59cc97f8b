"""The SGNS pair arithmetic shared by the GPU kernels and their CPU references.

The same formulas as :func:`parvec.kernels.classic.sgns_step`: the gradient's sigmoid saturates beyond
+-MAX_EXP (word2vec.c), the loss uses the exact sigmoid with the score clamped to +-20.  They are split in
two so a kernel computes the logarithm only when it reports the loss; :func:`pair_error_loss` gives both from
one exponential (the same values as the two).  Like :mod:`parvec.gpu.rng` these
are ``numba.njit`` functions that numba-cuda compiles as device functions when a kernel calls them.

Example:
    >>> float(pair_error(np.float32(7.0), np.float32(1.0)))
    0.0
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from parvec.kernels.classic import MAX_EXP

_MAX_EXP = np.float32(MAX_EXP)
_CLAMP = np.float32(20.0)
_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)


@njit(inline="always")
def pair_error(f: np.float32, label: np.float32) -> np.float32:
    """``label - sigmoid(f)``, the sigmoid saturated to 0/1 beyond +-MAX_EXP.

    Example:
        >>> round(float(pair_error(np.float32(0.0), np.float32(1.0))), 3)
        0.5
    """
    if f > _MAX_EXP:
        return label - _ONE
    if f < -_MAX_EXP:
        return label
    return label - _ONE / (_ONE + np.float32(math.exp(-f)))


@njit(inline="always")
def pair_loss(f: np.float32, label: np.float32) -> np.float64:
    """``-log p`` of the pair: ``log(1 + e^-f)`` for label 1, ``log(1 + e^-f) + f`` for label 0 (f clamped
    to +-20).

    Example:
        >>> round(float(pair_loss(np.float32(0.0), np.float32(0.0))), 4)
        0.6931
    """
    fc = min(max(f, -_CLAMP), _CLAMP)
    return np.float64(math.log(_ONE + np.float32(math.exp(-fc)))) + np.float64((_ONE - label) * fc)


@njit(inline="always")
def pair_error_loss(f: np.float32, label: np.float32) -> tuple[np.float32, np.float32, np.float32]:
    """:func:`pair_error` and :func:`pair_loss` from one exponential: ``(error, log term, linear term)``, the
    loss being ``float64(log term) + float64(linear term)`` -- exactly :func:`pair_loss`'s value.

    Example:
        >>> err, lg, lin = pair_error_loss(np.float32(0.0), np.float32(0.0))
        >>> float(err), round(float(lg) + float(lin), 4)
        (-0.5, 0.6931)
    """
    fc = min(max(f, -_CLAMP), _CLAMP)
    e = np.float32(math.exp(-fc))
    if f > _MAX_EXP:
        err = label - _ONE
    elif f < -_MAX_EXP:
        err = label
    else:
        err = label - _ONE / (_ONE + e)
    return err, np.float32(math.log(_ONE + e)), (_ONE - label) * fc
