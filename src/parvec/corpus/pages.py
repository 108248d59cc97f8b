"""Dropping the resident pages of a memory-mapped token file once they are trained (docs/big_corpora.md).

A corpus bigger than memory is trained from ``np.memmap`` views of its ``tokens.npy``; without this, every
page read stays resident until the process ends and the resident set grows with the corpus.

Example:
    >>> release_pages(np.zeros(10, dtype=np.int32), 0, 10)  # not a memory map: nothing happens
"""

from __future__ import annotations

import mmap

import numpy as np

__all__ = ["release_pages"]

_RELEASE_MARGIN = 1 << 22  # bytes released beyond a chunk's range (release_pages): twice the largest folio


def release_pages(array: np.ndarray, start: int, end: int) -> None:
    """Drop this process's resident pages of ``array[start:end]`` if ``array`` is a read-only memory map.

    The data stays in the file (and the page cache); a later read maps it again.  Training calls it
    after each chunk so that reading a token file bigger than memory through ``np.memmap`` keeps the
    resident set small.  Anything else (an in-memory array) is left alone.

    Example:
        >>> release_pages(np.zeros(10, dtype=np.int32), 0, 10)  # not a memory map: nothing happens
    """
    mm = getattr(array, "_mmap", None)
    if mm is None or not isinstance(array, np.memmap) or array.flags.writeable or end <= start:
        return
    try:
        base = np.frombuffer(mm, dtype=np.uint8).ctypes.data
        first = array.ctypes.data - base + start * array.itemsize
        last = array.ctypes.data - base + end * array.itemsize
        # Every page the range touches and _RELEASE_MARGIN beyond it on each side.  A read fault maps more
        # than its page: the page cache's whole folio (up to 2 MiB: 1 MiB was measured here) and Linux's
        # fault-around, all within the 2 MiB-aligned region of the fault.  So reading one chunk maps pages of
        # its neighbours, and reading a page another chunk shares maps back pages of a chunk already
        # released: releasing only the chunk's own whole pages left one page in ten resident with
        # 10,000-word chunks at 2 threads (0.5 GB of a 4 GB token file after one epoch).  Each page is
        # mapped by a fault of a chunk being trained, within 2 MiB of that chunk, and that chunk's release
        # comes after its faults and covers them.  The mapping is read-only, so dropping a page a neighbour
        # is reading right now loses nothing: it faults back in from the page cache.
        page = mmap.PAGESIZE
        first = max(0, (first - _RELEASE_MARGIN) // page * page)
        last = min(-(-(last + _RELEASE_MARGIN) // page) * page, len(mm))
        if last > first:
            mm.madvise(mmap.MADV_DONTNEED, first, last - first)
    except (ValueError, OSError, AttributeError):
        pass
