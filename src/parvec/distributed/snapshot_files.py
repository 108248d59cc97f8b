"""A shard's snapshots on disk: its columns of both matrices written as one consistent snapshot, and read back.

Shard ``s`` of ``S`` keeps snapshot ``K`` in ``DIR/shard-s-of-S/snap-K`` (:func:`snapshot_dir`): ``in.npy`` and
``out.npy`` (its input and output columns, streamed from the arrays, each file synced) and ``meta.json``, written
into ``snap-K.partial`` and renamed into place, so a snapshot directory is whole or absent.  Reading one back
(:func:`read_snapshot`) fills the shard's arrays in place, row block by row block, and checks each file's CRC-32
against the one the checkpoint recorded.

Example:
    >>> snapshot_dir("ck", 0, 2, 3).as_posix()
    'ck/shard-0-of-2/snap-3'
"""

from __future__ import annotations

import json
import os
import shutil
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parvec.fileio import fsync_dir, output_file, write_array
from parvec.model_io import array_crc32

__all__ = ["read_npy_into", "read_snapshot", "snapshot_dir", "write_snapshot"]

_COPY_BYTES = 32 << 20  # bytes read at a time when a shard restores a snapshot


def snapshot_dir(directory: str | os.PathLike[str], shard: int, shards: int, snap_id: int) -> Path:
    """Where shard ``shard`` of ``shards`` keeps snapshot ``snap_id``: ``in.npy``, ``out.npy`` (its input and
    output columns) and ``meta.json``, written into ``snap-ID.partial`` and renamed into place.

    Example:
        >>> snapshot_dir("ck", 0, 2, 3).as_posix()
        'ck/shard-0-of-2/snap-3'
    """
    return Path(directory) / f"shard-{shard}-of-{shards}" / f"snap-{snap_id}"


def write_snapshot(base: Path, snap_id: int, keep: Sequence[int | None], arrays: dict[str, np.ndarray],
                   meta: dict[str, Any]) -> tuple[Path, dict[str, int]]:
    """Write ``arrays`` (``{"in": w_in, "out": w_out}``) as snapshot ``snap_id`` under ``base`` (a shard's
    directory) with ``meta`` (and the time and CRC-32s) in ``meta.json``; the snapshots of ``base`` other than
    ``keep`` are removed first.  Returns the snapshot's directory and each file's CRC-32.  An ``OSError`` (a
    full disk, a directory that cannot be written) is the caller's to word.

    Example:
        >>> write_snapshot(Path("ck/shard-0-of-1"), 1, [None], {"in": w_in, "out": w_out}, {})  # doctest: +SKIP
        (PosixPath('ck/shard-0-of-1/snap-1'), {'in': 1234, 'out': 5678})
    """
    final = base / f"snap-{snap_id}"
    partial = base / f"snap-{snap_id}.partial"
    base.mkdir(parents=True, exist_ok=True)
    kept = {f"snap-{k}" for k in keep if k is not None}
    for old in base.iterdir():
        if old.name.startswith("snap-") and old.name not in kept:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    partial.mkdir()
    crcs = {}
    for key, w in arrays.items():
        with output_file(partial / f"{key}.npy") as f:
            write_array(f, w)  # streamed from the array in blocks: no copy; ENOSPC is named
            f.flush()
            os.fsync(f.fileno())
        crcs[key] = array_crc32(w)
    (partial / "meta.json").write_text(json.dumps(meta | {"time": time.time(), "crc32": crcs}), encoding="utf-8")
    os.rename(partial, final)
    fsync_dir(base)
    return final, crcs


def read_snapshot(at: Path, arrays: dict[str, np.ndarray], crc32: dict[str, int] | None = None) -> None:
    """Fill ``arrays`` (``{"in": w_in, "out": w_out}``) in place from the snapshot directory ``at``; with
    ``crc32`` (what a checkpoint recorded) a file whose data does not match is refused (``ValueError``).

    Example:
        >>> read_snapshot(Path("ck/shard-0-of-1/snap-1"), {"in": w_in, "out": w_out})  # doctest: +SKIP
    """
    for key, w in arrays.items():
        got = read_npy_into(at / f"{key}.npy", w)
        if crc32 is not None and got != crc32.get(key):
            raise ValueError(f"{key}.npy: its data does not match the CRC-32 the checkpoint recorded (the file was "
                             "altered or damaged)")


def read_npy_into(path: Path, out: np.ndarray) -> int:
    """Read a C-order ``.npy`` of ``out``'s shape and dtype straight into ``out`` (a C-contiguous array), row
    block by row block: no second copy of the array and no memory map resident beside it.  Returns the CRC-32 of
    the data read (:func:`parvec.model_io.array_crc32` of ``out``).

    Example:
        >>> read_npy_into(Path("snap-3/in.npy"), w_in)  # doctest: +SKIP
    """
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        shape, fortran, dtype = (np.lib.format.read_array_header_1_0(f) if version == (1, 0)
                                 else np.lib.format.read_array_header_2_0(f))
        if tuple(shape) != out.shape or dtype != out.dtype or fortran:
            raise ValueError(f"{path.name} holds {dtype} {tuple(shape)}{' (Fortran order)' if fortran else ''}, "
                             f"expected {out.dtype} {out.shape}")
        flat = out.reshape(-1).view(np.uint8)
        crc = 0
        for at in range(0, flat.nbytes, _COPY_BYTES):
            chunk = flat[at:at + _COPY_BYTES].data  # a memoryview of those bytes
            got = f.readinto(chunk)
            if got != len(chunk):
                raise ValueError(f"{path.name} is truncated: {at + (got or 0):,} of {flat.nbytes:,} bytes of data")
            crc = zlib.crc32(chunk, crc)
    return crc & 0xFFFFFFFF
