"""A kernel that shows whether numba's CUDA simulator gave every thread of a block the same shared array.

Imported only by tests/gpu/sim_cases.py, in its simulator process (the simulator swaps the ``cuda`` global of
a kernel's module, so the kernel lives at module level).
"""

from __future__ import annotations

import sys

import numpy as np
from numba import cuda, int32

import parvec.gpu  # noqa: F401 - importing it guards the simulator's shared arrays (parvec.gpu.simulator)


@cuda.jit
def rotate(out: np.ndarray) -> None:
    """Each thread writes its slot of a shared array, then reads its neighbour's."""
    s = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    s[t] = t + 1
    cuda.syncthreads()
    out[t] = s[(t + 1) % 8]


def bad_launches(launches: int = 2000) -> int:
    """How many of ``launches`` launches of an 8-thread block saw a shared array another thread did not write.

    numba's simulator creates a shared array on its first use without a lock; with a 1 us switch interval
    about 1 launch in 200 of this kernel went wrong before parvec guarded it.
    """
    want = (np.arange(8) + 1) % 8 + 1
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        bad = 0
        for _ in range(launches):
            got = np.zeros(8, np.int32)
            rotate[1, 8](got)
            bad += int(not np.array_equal(got, want))
    finally:
        sys.setswitchinterval(before)
    return bad
