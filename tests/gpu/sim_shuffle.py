"""Warp shuffles for numba's CUDA simulator, so the shuffle reduction runs there too (tests only).

numba-cuda 0.30's simulator has no ``cuda.shfl_xor_sync`` or ``cuda.shfl_sync``: the kernels' shuffle reduction
(the default on a GPU) and the lanes' sharing of the gradients could only be checked on hardware.
:func:`emulate_warp_shuffles` gives the simulator both: every thread of the block leaves its value, all meet at
a barrier, each takes its partner's (lane ``xor`` the mask, or the source lane, within its warp) and all meet
again before the slot is reused.  A barrier of the whole block stands in for the warp's lockstep, which is right
wherever every thread of the block shuffles at the same point -- as parvec's kernels do.

Imported only by tests/gpu/sim_cases.py, in its simulator process.
"""

from __future__ import annotations

import threading
from typing import TypeVar

_V = TypeVar("_V")  # a lane's value (a numpy or Python scalar)


def emulate_warp_shuffles() -> bool:
    """Give the simulator's ``cuda`` module ``shfl_xor_sync`` and ``shfl_sync`` (once); False when the simulator
    is off."""
    from numba import config

    if not config.ENABLE_CUDASIM:
        return False
    from numba.cuda.simulator import kernelapi

    module = kernelapi.FakeCUDAModule
    if getattr(module, "_parvec_shuffles", False):
        return True

    def shfl_xor_sync(self: object, mask: int, value: _V, lane_mask: int) -> _V:
        me = threading.current_thread()
        slots = me._manager.__dict__.setdefault("_parvec_shuffle_slots", {})
        slots[me.thread_id] = value
        me.syncthreads()  # every thread's value is in
        partner = me.thread_id ^ int(lane_mask)
        got = slots.get(partner, value)
        me.syncthreads()  # every thread has read before the next shuffle overwrites
        return type(value)(got) if not isinstance(got, type(value)) else got

    def shfl_sync(self: object, mask: int, value: _V, src_lane: int) -> _V:
        me = threading.current_thread()
        slots = me._manager.__dict__.setdefault("_parvec_shuffle_slots", {})
        slots[me.thread_id] = value
        me.syncthreads()
        got = slots.get(me.thread_id - me.thread_id % 32 + int(src_lane), value)
        me.syncthreads()
        return type(value)(got) if not isinstance(got, type(value)) else got

    module.shfl_xor_sync = shfl_xor_sync
    module.shfl_sync = shfl_sync
    module._parvec_shuffles = True
    return True
