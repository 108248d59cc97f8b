"""The fast-math flags every CPU kernel compiles with: the same bits on every x86-64 vendor.

``fastmath=True`` turns on all of LLVM's fast-math flags, among them ``arcp`` (a division may become a
multiplication by a reciprocal) and ``afn`` (approximate functions).  With them LLVM compiles the sigmoid's
``1 / (1 + e)`` in a vectorised loop to ``rcpps`` (or ``vrcp14ps``) and a Newton step: the reciprocal
*estimate* instructions, whose bits are implementation-specific, so Intel and AMD CPUs trained different
vectors from the same seed.  :data:`FASTMATH` keeps the flags that let LLVM vectorise and fold (no NaN or
infinity, signed zeros ignored, reassociation, contraction into FMA where the target has it) and leaves out
``arcp`` and ``afn``, so every division is an IEEE division and no estimate instruction is emitted
(``tests/kernels/test_kernel_assembly.py`` scans the compiled kernels for ``rcp*``/``rsqrt*``).

Example:
    >>> from numba import njit
    >>> @njit(fastmath=FASTMATH)
    ... def half(x):
    ...     return x / 2.0
    >>> half(3.0)
    1.5
"""

from __future__ import annotations

FASTMATH: set[str] = {"nnan", "ninf", "nsz", "reassoc", "contract"}  # numba takes a set (not a frozenset)
"""LLVM fast-math flags of the CPU kernels: all but ``arcp`` and ``afn`` (no reciprocal or function estimates)."""
