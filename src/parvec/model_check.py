"""Checking a model directory's files against what its ``model.json`` records: sizes, and CRC-32s.

:func:`check_npy` is the cheap check a reader makes when it opens an array (its header, and a size that fits the
shape: a truncated file is named, never memory-mapped); :func:`npy_crc32` reads an array's data through once for
its CRC-32 (what ``model.json`` records, :func:`parvec.model_io.array_crc32`).  :func:`verify` checks every file
of a model directory (``Word2Vec.save``, ``parvec train --save-model``, the sharded model format, each
checkpoint of a ``--checkpoint-dir``) against its recorded CRC-32, a block at a time: ``parvec verify MODEL``.

Example:
    >>> [check.damaged for check in verify("model")]  # doctest: +SKIP
    [[]]
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from parvec.errors import CheckpointError, ParvecError

if TYPE_CHECKING:
    from parvec.model_io import ArrayEntry

__all__ = ["FileCheck", "ModelCheck", "NpyLayout", "check_npy", "npy_crc32", "npy_layout", "verify"]

_READ_BYTES = 16 << 20  # bytes read at a time for a CRC-32


@dataclass(frozen=True)
class NpyLayout:
    """What a ``.npy`` file's header says and how long the file is: ``offset`` is where the data starts.

    Example:
        >>> NpyLayout((3, 4), np.dtype("float32"), False, 128, 176).data_bytes
        48
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran: bool
    offset: int
    size: int

    @property
    def data_bytes(self) -> int:
        """The bytes of data the header's shape and dtype need."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def npy_layout(path: str | os.PathLike[str]) -> NpyLayout:
    """Read the header of the ``.npy`` file ``path``; a missing file or a damaged header raises
    :class:`parvec.errors.CheckpointError` naming it.

    Example:
        >>> npy_layout("model/vectors.npy").shape  # doctest: +SKIP
        (71290, 100)
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            shape, fortran, dtype = (np.lib.format.read_array_header_1_0(f) if version == (1, 0)
                                     else np.lib.format.read_array_header_2_0(f))
            offset = f.tell()
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing (the model directory is incomplete)") from None
    except (OSError, ValueError, EOFError, SyntaxError) as exc:
        raise CheckpointError(f"{path}: not a readable .npy array (its header is damaged: "
                              f"{getattr(exc, 'strerror', None) or exc})") from None
    return NpyLayout(tuple(int(x) for x in shape), np.dtype(dtype), bool(fortran), offset, size)


def check_npy(path: str | os.PathLike[str], shape: tuple[int, ...] | list[int] | None = None,
              dtype: str | None = None) -> NpyLayout:
    """:func:`npy_layout` of ``path``, checked: the ``shape`` and ``dtype`` expected (when given), C order, and a
    file exactly as long as its header and data (a truncated or extended file is a
    :class:`parvec.errors.CheckpointError` naming it and both sizes).

    Example:
        >>> check_npy("model/vectors.npy", (71290, 100), "float32").size  # doctest: +SKIP
        28516128
    """
    layout = npy_layout(path)
    if (shape is not None and list(layout.shape) != list(shape)) or (dtype is not None and str(layout.dtype) != dtype):
        raise CheckpointError(f"{path}: holds {layout.dtype} {layout.shape}, but model.json records "
                              f"{dtype or layout.dtype} {tuple(shape) if shape is not None else layout.shape}")
    if layout.fortran:
        raise CheckpointError(f"{path}: a Fortran-order array; parvec writes C order (the file was altered)")
    need = layout.offset + layout.data_bytes
    if layout.size != need:
        how = "truncated" if layout.size < need else "longer than its array"
        raise CheckpointError(f"{path}: {how}: the file has {layout.size:,} bytes, its {layout.dtype} "
                              f"{'x'.join(map(str, layout.shape))} array needs {need:,} (the file was cut short or "
                              "altered: copy the model again)")
    return layout


def npy_crc32(path: str | os.PathLike[str], layout: NpyLayout | None = None) -> int:
    """The CRC-32 of the data of the ``.npy`` file ``path`` (the bytes after its header: what
    :func:`parvec.model_io.array_crc32` gives for the array), read a block at a time.

    Example:
        >>> recorded = json.load(open("model/model.json"))["arrays"]["vectors.npy"]["crc32"]  # doctest: +SKIP
        >>> npy_crc32("model/vectors.npy") == recorded  # doctest: +SKIP
        True
    """
    layout = layout if layout is not None else npy_layout(path)
    crc = 0
    with open(path, "rb") as f:
        f.seek(layout.offset)
        left = layout.size - layout.offset
        while left > 0 and (block := f.read(min(left, _READ_BYTES))):
            crc = zlib.crc32(block, crc)
            left -= len(block)
    return crc & 0xFFFFFFFF


def _file_crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(_READ_BYTES):
            crc = zlib.crc32(block, crc)
    return crc & 0xFFFFFFFF


@dataclass
class FileCheck:
    """One file of a model checked: its ``path``, ``size`` in bytes, whether a CRC-32 was ``recorded`` for it (a
    directory written before checksums has none: its sizes are checked), and the ``problem`` found (None: it
    matches).

    Example:
        >>> FileCheck(Path("m/vectors.npy"), 4096, True, None).ok
        True
    """

    path: Path
    size: int
    recorded: bool
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass
class ModelCheck:
    """The files of one model directory (``path``) checked against its ``model.json``.

    Example:
        >>> ModelCheck(Path("m"), [FileCheck(Path("m/vectors.npy"), 4096, True, "missing")]).damaged[0].problem
        'missing'
    """

    path: Path
    files: list[FileCheck] = field(default_factory=list)

    @property
    def damaged(self) -> list[FileCheck]:
        """The files with a problem."""
        return [f for f in self.files if not f.ok]


def _check_array(path: Path, expect: ArrayEntry | None) -> FileCheck:
    # An array of the model: its header and size, then its data's CRC-32 against the record.
    from parvec.model_io import ArrayEntry

    expect = expect or ArrayEntry(None, None)
    checked = expect.crc32 is not None
    try:
        layout = check_npy(path, expect.shape, expect.dtype)
        if checked and npy_crc32(path, layout) != expect.crc32:
            return FileCheck(path, layout.size, True, "its data does not match the CRC-32 model.json records (the "
                                                      "file was altered or damaged)")
    except CheckpointError as exc:
        return FileCheck(path, _size(path), checked, str(exc).removeprefix(f"{path}: "))
    except OSError as exc:
        return FileCheck(path, _size(path), checked, f"cannot be read ({exc.strerror or exc})")
    return FileCheck(path, layout.size, checked, None)


def _check_file(path: Path, crc: int | None) -> FileCheck:
    # A file checked whole against a recorded CRC-32 of its bytes (vocab.json, a vocabulary partition).
    try:
        if crc is not None and _file_crc32(path) != crc:
            return FileCheck(path, _size(path), True, "its bytes do not match the CRC-32 model.json records (the "
                                                      "file was altered or damaged)")
    except FileNotFoundError:
        return FileCheck(path, 0, crc is not None, "missing (the model directory is incomplete)")
    except OSError as exc:
        return FileCheck(path, _size(path), crc is not None, f"cannot be read ({exc.strerror or exc})")
    return FileCheck(path, _size(path), crc is not None, None)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _model_files(path: Path, meta: Mapping[str, Any]) -> list[FileCheck]:
    # Every file model.json names, checked.
    from parvec import model_io
    from parvec.vocab_parts import part_paths

    sharded = meta.get("sharded")
    if isinstance(sharded, dict):
        n = int(sharded["vocab"]["words"]) if "vocab" in sharded else None
        checks = []
        for f, where in zip(sharded["files"], model_io.shard_file_paths(path, sharded), strict=True):
            shard = model_io.ShardFile.from_json(f)
            for key in ("in", "out"):
                checks.append(_check_array(where / f"{key}.npy", shard.file_entry(key, n)))
        if "vocab" in sharded:
            vocab = sharded["vocab"]
            for rec in vocab["parts"]:
                for name, file in part_paths(path / str(vocab["directory"]), int(rec["part"])).items():
                    checks.append(_check_file(file, (rec.get("crc32") or {}).get(name)))
        return checks
    arrays = meta["arrays"] if isinstance(meta.get("arrays"), dict) else {}
    names = [model_io.VECTORS, model_io.SYN1NEG] + ([model_io.SYN1] if (path / model_io.SYN1).exists() else [])
    checks = [_check_file(path / model_io.VOCAB_JSON, meta.get("vocab_crc32"))]
    return checks + [_check_array(path / name, model_io.ArrayEntry.from_json(arrays.get(name))) for name in names]


def _verify_one(path: Path) -> ModelCheck:
    from parvec import model_io

    meta_path = path / model_io.MODEL_JSON
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{meta_path}: unreadable model description ({getattr(exc, 'strerror', None) or exc})"
                              ) from None
    if not isinstance(meta, dict) or meta.get("format") != model_io.MODEL_FORMAT:
        raise ParvecError(f"{meta_path}: not a parvec Word2Vec model")
    try:
        files = _model_files(path, meta)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CheckpointError(f"{meta_path}: incomplete or damaged description of the model's files "
                              f"({type(exc).__name__}: {exc})") from None
    return ModelCheck(path, files)


def verify(path: str | os.PathLike[str]) -> list[ModelCheck]:
    """Check every file of the model directory ``path`` against what its ``model.json`` records (each array's
    shape, size and CRC-32, ``vocab.json``'s and each vocabulary partition's CRC-32); a checkpoint directory
    (``--checkpoint-dir``) has each of its checkpoints checked.  A path that is no model directory raises
    :class:`parvec.errors.ParvecError` saying what it holds.

    Example:
        >>> [f.path.name for f in verify("model")[0].files]  # doctest: +SKIP
        ['vocab.json', 'vectors.npy', 'syn1neg.npy']
    """
    from parvec import checkpoints, model_io

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ParvecError(f"{path}: not a model directory (a file): parvec verify checks a model directory "
                          "(Word2Vec.save, parvec train --save-model, a --checkpoint-dir) against the CRC-32s its "
                          "model.json records; a vector file records none")
    if (path / model_io.MODEL_JSON).exists():
        return [_verify_one(path)]
    found = checkpoints.list_checkpoints(path)
    if not found:
        raise ParvecError(f"{path}: not a parvec model directory (no model.json): {model_io.what_is_there(path)}")
    return [_verify_one(f.path) for f in found]
