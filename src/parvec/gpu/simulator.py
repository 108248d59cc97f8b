"""numba's CUDA simulator, made safe for parvec's kernels.

The simulator (``NUMBA_ENABLE_CUDASIM=1``) runs a block's threads as Python threads, and
``cuda.shared.array`` looks the calling line's array up in a dict and creates it when missing, without a
lock (numba-cuda 0.30, ``FakeCUDAShared.array``).  When the interpreter switches threads between that lookup
and the store, two threads of the first block of a launch get different arrays: one writes the sentence into
its own copy, another reads uninitialised memory (seen in CI as a row index of 1207961264).  About 1 launch
in 300 of an 8-thread kernel does it with a short switch interval.  :func:`make_shared_arrays_thread_safe`
puts the lookup and the store under one lock; :mod:`parvec.gpu` calls it on import when the simulator is on.
On a GPU nothing here runs.
"""

from __future__ import annotations

import sys
import threading


def make_shared_arrays_thread_safe() -> bool:
    """Guard the simulator's shared-array allocation with a lock (once); False when the simulator is off.

    Example:
        >>> make_shared_arrays_thread_safe() in (True, False)
        True
    """
    from numba import config

    if not config.ENABLE_CUDASIM:
        return False
    import numpy as np
    import numpy.typing as npt
    from numba.cuda.simulator import kernelapi

    shared = kernelapi.FakeCUDAShared
    if getattr(shared.array, "_parvec_locked", False):
        return True
    unlocked = shared.array
    lock = threading.Lock()

    def array(self: kernelapi.FakeCUDAShared, shape: int | tuple[int, ...], dtype: npt.DTypeLike,
              alignment: int | None = None) -> np.ndarray:
        if alignment is not None or shape == 0:  # an error, or the dynamic array (one buffer, no lookup)
            dynamic: np.ndarray = unlocked(self, shape, dtype, alignment)  # numba's simulator is Any to mypy
            return dynamic
        if isinstance(dtype, kernelapi.types.Type):  # the simulator's own conversion
            dtype = kernelapi.numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)  # as the simulator's: the calling line
        with lock:
            res: np.ndarray | None = self._allocations.get(key)
            if res is None:
                res = np.empty(shape, dtype)
                self._allocations[key] = res
        return res

    setattr(array, "_parvec_locked", True)  # noqa: B010 - a mark on the function numba keeps
    shared.array = array
    return True
