"""A shard's snapshots on disk: its columns of both matrices written as one consistent snapshot, and read back.

Shard ``s`` of ``S`` keeps snapshot ``K`` in ``DIR/shard-s-of-S/snap-K`` (:func:`snapshot_dir`): ``in.npy`` and
``out.npy`` (its input and output columns, streamed from the arrays, each file synced) and ``meta.json``, written
into ``snap-K.partial`` and renamed into place, so a snapshot directory is whole or absent.  Reading one back
(:func:`read_snapshot`) fills the shard's arrays in place, row block by row block, and checks each file's CRC-32
against the one the checkpoint recorded.  Where the checkpoint directory is a URL each shard uploads its own
snapshot from its node (:func:`upload_snapshot`) and reads one its node does not hold from there
(:func:`download_snapshot`): no node needs to see another's disk.

Example:
    >>> snapshot_dir("ck", 0, 2, 3).as_posix()
    'ck/shard-0-of-2/snap-3'
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parvec.errors import ParvecError
from parvec.fileio import fsync_dir, output_file, write_array, write_reason
from parvec.model_io import array_crc32

__all__ = ["ShardStore", "SnapshotUpload", "download_snapshot", "read_npy_into", "read_snapshot", "snapshot_dir",
           "upload_snapshot", "write_snapshot"]

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


def upload_snapshot(final: Path, url: str, keep: Sequence[int | None]) -> None:
    """Upload the snapshot directory ``final`` (``DIR/shard-s-of-S/snap-K``) to ``url`` (the same shard's
    directory at the checkpoint URL: ``URL/shard-s-of-S``) as ``URL/shard-s-of-S/snap-K/`` (``meta.json``
    last), then remove the shard's snapshots there other than this one and ``keep``, as :func:`write_snapshot`
    does on disk.  A storage error (:class:`parvec.storage.StorageError`) is the caller's to word.

    Example:
        >>> snap = Path("ck/shards/shard-0-of-2/snap-3")
        >>> upload_snapshot(snap, "s3://b/ck/shards/shard-0-of-2", [2])  # doctest: +SKIP
    """
    from parvec import storage

    storage.upload(final, storage.join_url(url, final.name))
    fs, root = storage.filesystem(url)
    kept = {f"snap-{k}" for k in keep if k is not None} | {final.name}
    try:
        listed = fs.ls(root, detail=False, refresh=True)
    except FileNotFoundError:
        listed = []
    for path in listed:
        name = str(path).rstrip("/").rsplit("/", 1)[-1]
        if name.startswith("snap-") and name not in kept:
            fs.rm(path, recursive=True)
    fs.invalidate_cache()


def download_snapshot(url: str, local: Path) -> Path:
    """Copy a snapshot directory (``URL/shard-s-of-S/snap-K``) from the checkpoint URL to ``local`` (this node's
    disk: a shard whose node does not hold the snapshot reads it from there).

    Example:
        >>> download_snapshot("s3://b/ck/shards/shard-0-of-2/snap-3", Path("/tmp/snap-3"))  # doctest: +SKIP
        PosixPath('/tmp/snap-3')
    """
    from parvec import storage

    return storage.download(url, local)


class SnapshotUpload:
    """A shard's snapshot being uploaded to the checkpoint URL (:func:`upload_snapshot`) by a thread of its
    own, while the shard serves minibatches again; :meth:`wait` waits for it and raises its error.

    Example:
        >>> SnapshotUpload(3, Path("ck/shards/shard-0-of-2/snap-3"), "s3://b/ck/shards/shard-0-of-2", [2],
        ...                "shard 0 of 2").wait()  # doctest: +SKIP
    """

    def __init__(self, snap_id: int, final: Path, url: str, keep: Sequence[int | None], what: str) -> None:
        self.snap_id, self.final, self.url, self.what = snap_id, final, url, what
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, args=(list(keep),), daemon=True,
                                        name=f"parvec-upload-{snap_id}")
        self._thread.start()

    def _run(self, keep: list[int | None]) -> None:
        try:
            upload_snapshot(self.final, self.url, keep)
        except Exception as exc:  # noqa: BLE001 - said by wait(), in the driver's words
            self.error = f"{self.what} could not upload snapshot {self.snap_id} to {self.url}: {exc}"

    def wait(self) -> None:
        """Wait until the upload is done; a :class:`parvec.errors.ParvecError` when it failed."""
        self._thread.join()
        if self.error is not None:
            raise ParvecError(self.error)


class ShardStore:
    """Where one shard keeps its snapshots: ``base`` (``DIR/shard-s-of-S`` on its node's disk; None: nowhere) and,
    under a URL checkpoint directory, ``url`` (the same directory there), where each snapshot is uploaded from the
    shard's node after it is written (:class:`SnapshotUpload`) and read back from by a node that does not hold it.
    Its errors are :class:`parvec.errors.ParvecError` naming the shard (``what``).

    Example:
        >>> store = ShardStore.of("ck/shards", None, 0, 2, "shard 0 of 2")
        >>> store.base.as_posix(), store.url
        ('ck/shards/shard-0-of-2', None)
    """

    def __init__(self, base: Path | None, url: str | None, what: str) -> None:
        self.base, self.url, self.what = base, url, what
        self.upload: SnapshotUpload | None = None  # the newest snapshot's upload to url

    @classmethod
    def of(cls, directory: str | None, url: str | None, shard: int, shards: int, what: str) -> ShardStore:
        """Shard ``shard`` of ``shards``'s store under the run's snapshot ``directory`` and its ``url``."""
        name = f"shard-{shard}-of-{shards}"
        return cls(Path(directory) / name if directory else None, f"{url.rstrip('/')}/{name}" if url else None, what)

    def clear(self) -> None:
        """A new run's empty directory (another run's snapshots removed)."""
        if self.base is None:
            return
        if self.base.is_dir():
            shutil.rmtree(self.base, ignore_errors=True)
        try:
            self.base.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ParvecError(f"{self.what} cannot keep its snapshots in {self.base}: {exc.strerror or exc}") from None

    def write(self, snap_id: int, keep: Sequence[int | None], arrays: dict[str, np.ndarray],
              meta: dict[str, Any]) -> tuple[Path, dict[str, int]]:
        """:func:`write_snapshot` into ``base``, then its upload started (under a URL); the previous snapshot's
        upload is waited for first (its files are read until then)."""
        if self.base is None:
            raise ParvecError(f"{self.what}: no snapshot directory")
        if self.upload is not None:
            self.upload.wait()
        try:
            final, crcs = write_snapshot(self.base, snap_id, keep, arrays, meta)
        except OSError as exc:
            raise ParvecError(f"{self.what} could not write its snapshot to {self.base}: "
                              f"{write_reason(exc)}{f' ({exc.filename})' if exc.filename else ''}") from None
        if self.url is not None:
            self.upload = SnapshotUpload(snap_id, final, self.url, keep, self.what)
        return final, crcs

    def uploaded(self, snap_id: int) -> None:
        """Wait until snapshot ``snap_id`` is at the URL (nothing without one)."""
        if self.url is None:
            return
        if self.upload is not None and self.upload.snap_id == snap_id:
            self.upload.wait()
            return
        from parvec import storage  # written by this shard's previous process: uploaded whole, or not at all

        if not storage.url_exists(f"{self.url}/snap-{snap_id}/meta.json"):
            raise ParvecError(f"{self.what}: snapshot {snap_id} is not at {self.url} (the shard was restarted before "
                              "uploading it)")

    def read(self, snap_id: int, where: str | None, url: str | None, arrays: dict[str, np.ndarray],
             crc32: dict[str, int] | None) -> None:
        """Fill ``arrays`` from snapshot ``snap_id``: at ``where`` (a resumed checkpoint's) or in ``base``, read
        from ``url`` (or this store's URL) when this node does not hold it."""
        at = Path(where) if where else self.base / f"snap-{snap_id}" if self.base is not None else None
        url = url or (f"{self.url}/snap-{snap_id}" if self.url is not None else None)
        try:
            if at is None:
                raise FileNotFoundError("no snapshot directory")
            if url is not None and not (at / "meta.json").is_file():
                with tempfile.TemporaryDirectory(prefix="parvec-restore-") as tmp:
                    read_snapshot(download_snapshot(url, Path(tmp) / at.name), arrays, crc32)
            else:
                read_snapshot(at, arrays, crc32)
        except (OSError, ValueError, ParvecError) as exc:
            raise ParvecError(f"{self.what} cannot read snapshot {snap_id} ({at}): {exc}") from None

    def drop(self) -> None:
        """Remove the directory (a run's temporary snapshots, at its end)."""
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
