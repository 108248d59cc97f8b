"""The model directory: how a saved :class:`parvec.Word2Vec`, a checkpoint and a sharded run's ``--save-model``
are laid out on disk, written and read.  No pickle: arrays and JSON.

==================  ==================================================================================
file                what it holds
==================  ==================================================================================
``model.json``      the description (below); written last, so a directory with it is whole
``vectors.npy``     the input vectors, float32 ``(V, dim)`` (``model.wv.vectors``)
``syn1neg.npy``     the output vectors of negative sampling, float32 ``(V, dim)``
``syn1.npy``        hierarchical softmax only: the Huffman tree's inner nodes, float32 ``(V-1, dim)``
``vocab.json``      ``{"words": [...], "counts": [...]}`` in index order (:meth:`parvec.vocab.Vocab.to_json`)
==================  ==================================================================================

**The sharded model format.**  A model of ``parvec train --mode sharded`` (its checkpoints, ``DIR/checkpoint``
and ``DIR/mid-eE-cU``, and ``--save-model DIR``) has no ``vectors.npy``, ``syn1neg.npy`` or ``vocab.json``: no
process holds the whole model or its word list.  Each shard wrote its own columns (``in.npy``, ``out.npy``: a
checkpoint's are the shards' snapshots, ``DIR/shards/shard-S-of-N/snap-K``; a saved model's are
``shards/shard-S-of-N`` inside it) and each reducer its part of the vocabulary (:mod:`parvec.vocab_parts`), and
``model.json``'s ``sharded`` names them: ``files`` (per shard: its ``directory``, relative to the model directory,
its ``columns``, ``shape`` and the CRC-32 of each file), ``vocab`` (the partitions' ``directory``, each
partition's ``words`` and file CRC-32s, the vocabulary's size), and for a checkpoint the ``snapshot`` record (id,
epoch, units done, the epoch's figures) and the ``input`` it was trained on (its units and their CRC-32s).
:func:`load` assembles the matrices from the shards' files and the words from the partitions (checking every
CRC-32); ``load(..., arrays=False)`` reads the rest and checks that the files are there, the way a resumed sharded
run reads it (``vocab`` then None: :func:`n_words` gives the size);
:meth:`parvec.keyedvectors.KeyedVectors.load_sharded` opens a saved one lazily.

``model.json``: ``format`` (``"parvec-word2vec"``), ``version`` (1), ``config``
(:meth:`parvec.config.TrainConfig.to_dict`), ``read_options``, ``epochs_trained``, ``corpus_words``,
``raw_words``, ``corpus_count``, ``kind`` (``"model"`` or ``"mid-epoch checkpoint"``), ``position`` (a mid-epoch
checkpoint's place in its epoch: :class:`parvec.engine.Position`), ``run_id``, ``saved_at``,
``checkpoint_every``, ``schedule_anchor``, ``cluster`` (where the run trained: the Ray cluster's spec, mode,
replicas or shards and clients, threads, sync and minibatch settings; null for this process or a GPU: a
resumed run trains there again), ``arrays`` (each array's shape, dtype and CRC-32),
``vocab_crc32`` (of ``vocab.json``'s bytes), and where they apply ``graph_run`` (a node2vec/DeepWalk run: its
graph's SHA-256, the walk parameters, the walk stream's CRC-32) and ``huffman_fingerprint`` (the tree the
model was trained with: it is rebuilt from the counts on load, as word2vec.c's ``CreateBinaryTree``, and must
match).  ``model.json`` itself carries no checksum: users edit it (its epochs, to extend a run).

:func:`save` writes into a temporary directory beside the target, ``fsync``\\ s every file, then renames it into
place (a kill leaves the old directory or the new one, never half of one; a full disk raises
:class:`parvec.fileio.WriteError` naming the file and ``no space left on device``, the old one intact).
:func:`load` checks everything it reads: a missing or truncated array, unreadable JSON, a checksum that does
not match, a damaged ``.npy`` header raise :class:`parvec.errors.CheckpointError` naming the file.  Directories
written before the checksums (``arrays``, ``vocab_crc32`` absent) load unchecked.

Example:
    >>> saved = load("model.parvec")  # doctest: +SKIP
    >>> saved.vectors.shape, saved.vocab.words[:3], saved.epochs_trained  # doctest: +SKIP
    ((71290, 100), ['the', 'of', 'and'], 5)
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import tempfile
import time
import tokenize
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from parvec.cluster_record import ClusterRecord
from parvec.config import TrainConfig
from parvec.engine import Position
from parvec.errors import CheckpointError, ParvecError
from parvec.fileio import fsync_dir, output_file, write_array, write_failure
from parvec.formats import refuse_pickle
from parvec.vocab import Vocab

__all__ = [
    "MODEL_FORMAT", "MODEL_JSON", "MODEL_VERSION", "SYN1", "SYN1NEG", "VECTORS", "VOCAB_JSON", "ArrayEntry",
    "SavedModel", "ShardFile", "array_crc32", "errors_named", "load", "n_words", "read_meta", "save",
    "shard_file_paths", "shard_files", "what_is_there",
]

MODEL_FORMAT = "parvec-word2vec"
MODEL_VERSION = 1
MODEL_JSON = "model.json"
VOCAB_JSON = "vocab.json"
VECTORS = "vectors.npy"
SYN1NEG = "syn1neg.npy"
SYN1 = "syn1.npy"  # hierarchical softmax
KIND_MODEL = "model"
KIND_MID_EPOCH = "mid-epoch checkpoint"

_MmapMode = Literal["r+", "r", "w+", "c"] | None  # np.load's mmap_mode
_CRC_BLOCK = 1 << 24  # bytes of an array checksummed (or read from a file) at a time


@dataclass(frozen=True)
class ArrayEntry:
    """What ``model.json``'s ``arrays`` records of one array: its ``shape``, ``dtype`` and the ``crc32`` of its
    values (:func:`array_crc32`).  Read back from a file, a field that is missing or of a wrong type is None (the
    array then does not match it; ``crc32`` None: not checked).

    Example:
        >>> entry = ArrayEntry((2, 3), "float32", 1234)
        >>> entry.to_json(), ArrayEntry.from_json(entry.to_json()) == entry
        ({'shape': [2, 3], 'dtype': 'float32', 'crc32': 1234}, True)
    """

    shape: tuple[int, ...] | None
    dtype: str | None
    crc32: int | None = None

    def to_json(self) -> dict[str, object]:
        """The entry as ``model.json`` holds it (no ``crc32`` key when there is none)."""
        entry: dict[str, object] = {"shape": None if self.shape is None else list(self.shape), "dtype": self.dtype}
        if self.crc32 is not None:
            entry["crc32"] = self.crc32
        return entry

    @classmethod
    def from_json(cls, d: object) -> ArrayEntry | None:
        """The entry of a ``model.json`` (None when it is not a JSON object: nothing to check against)."""
        if not isinstance(d, dict):
            return None
        shape, dtype, crc = d.get("shape"), d.get("dtype"), d.get("crc32")
        if not isinstance(shape, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in shape):
            shape = None
        return cls(None if shape is None else tuple(shape), dtype if isinstance(dtype, str) else None,
                   crc if isinstance(crc, int) and not isinstance(crc, bool) else None)


@dataclass(frozen=True)
class ShardFile:
    """One shard's files in a sharded model's ``model.json`` (``sharded.files``, the module docstring): its
    ``directory`` (relative to the model directory), the ``columns`` ``lo..hi-1`` it holds, the ``shape`` of each
    file and their CRC-32s by file (``"in"``, ``"out"``).

    Example:
        >>> f = ShardFile("shards/shard-0-of-1", (0, 4), (10, 4), {"in": 1, "out": 2})
        >>> ShardFile.from_json(f.to_json()) == f, f.file_entry("in")
        (True, ArrayEntry(shape=(10, 4), dtype='float32', crc32=1))
    """

    directory: str
    columns: tuple[int, int]
    shape: tuple[int, ...]
    crc32: Mapping[str, int]

    def to_json(self) -> dict[str, object]:
        """The record as ``model.json`` holds it."""
        return {"directory": self.directory, "columns": list(self.columns), "shape": list(self.shape),
                "crc32": dict(self.crc32)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ShardFile:
        """The record of a ``model.json``; KeyError/TypeError/ValueError when a field is missing or of a wrong
        type."""
        lo, hi = (int(x) for x in d["columns"])
        directory, crcs = d.get("directory"), d.get("crc32") or {}
        if not isinstance(directory, str):
            raise ValueError("no directory")
        if not isinstance(crcs, dict):
            raise TypeError("crc32 must be an object")
        return cls(directory, (lo, hi), tuple(int(x) for x in d["shape"]), {str(k): int(v) for k, v in crcs.items()})

    def file_entry(self, key: str, n_words: int | None = None) -> ArrayEntry:
        """What the shard's file ``key`` (``"in"`` or ``"out"``) must hold: float32 of ``n_words`` (default: the
        recorded shape's) rows and the shard's columns, with its recorded CRC-32 if there is one."""
        lo, hi = self.columns
        return ArrayEntry((self.shape[0] if n_words is None else n_words, hi - lo), "float32", self.crc32.get(key))


@dataclass
class SavedModel:
    """What a model directory holds: the configuration, the vocabulary, the arrays and where the run stands.

    ``read_options`` are :class:`parvec.corpus.ReadOptions`' fields; ``position`` is set for a mid-epoch
    checkpoint; ``saved_at`` is when it was written (``time.time()``, set by :func:`save`); ``graph_run`` is a
    node2vec/DeepWalk run's record; ``cluster`` where it trained (:func:`parvec.distributed.cluster_record`;
    None: this process or a GPU; ``cluster_recorded`` is False for a directory written before it was recorded);
    ``sharded`` a column-sharded run's checkpoint or model (module docstring), whose ``vectors`` and ``syn1neg``
    are None when read with ``arrays=False``, as is ``vocab`` when its words are in partitions (``sharded["vocab"]``;
    :func:`n_words` gives the vocabulary's size whichever holds it).

    Example:
        >>> from parvec.config import TrainConfig
        >>> m = SavedModel(TrainConfig(dim=2), Vocab(["a"], np.array([3])), np.zeros((1, 2), np.float32),
        ...                np.zeros((1, 2), np.float32))
        >>> m.kind
        'model'
    """

    config: TrainConfig
    vocab: Vocab | None
    vectors: np.ndarray | None
    syn1neg: np.ndarray | None
    syn1: np.ndarray | None = None
    read_options: Mapping[str, Any] | None = None
    epochs_trained: int = 0
    corpus_words: int = 0
    raw_words: int = 0
    corpus_count: int = 0
    position: Position | None = None
    run_id: str | None = None
    saved_at: float | None = None
    checkpoint_every: str | None = None
    schedule_anchor: tuple[float, float] | None = None
    graph_run: dict[str, Any] | None = None
    cluster: ClusterRecord | None = None
    cluster_recorded: bool = True
    sharded: dict[str, Any] | None = None

    @property
    def kind(self) -> str:
        """``"mid-epoch checkpoint"`` when it has a position, else ``"model"``."""
        return KIND_MID_EPOCH if self.position is not None else KIND_MODEL


def n_words(model: SavedModel) -> int:
    """The vocabulary's size: its words', or (a sharded model whose words are in partitions) its record's.

    Example:
        >>> from parvec.config import TrainConfig
        >>> n_words(SavedModel(TrainConfig(dim=2), None, None, None, sharded={"vocab": {"words": 7}}))
        7
    """
    if model.vocab is not None:
        return len(model.vocab)
    assert model.sharded is not None and "vocab" in model.sharded, "a model without a vocabulary"
    return int(model.sharded["vocab"]["words"])


# ---------------------------------------------------------------------- writing
def save(path: str | os.PathLike[str], model: SavedModel, move_files: Mapping[str, Path] | None = None,
         fill: Callable[[Path], None] | None = None) -> None:
    """Write ``model`` as a model directory at ``path``: into a temporary directory beside it, every file synced,
    ``model.json`` last, then renamed into place (an existing one is replaced whole).  A failed write (a full
    disk) raises :class:`parvec.fileio.WriteError` naming the file, and leaves no temporary and the old one intact.

    ``move_files`` names arrays already written as ``.npy`` files (the sharded pipeline's export, streamed
    from the shards): each is moved into the directory instead of written again, and its CRC-32 computed by
    reading it in blocks; ``model``'s array of that name gives only the shape to check (a memory map of it).
    ``fill(temporary directory)`` puts more files in before ``model.json`` is written (a sharded model's shard files
    and vocabulary partitions: the sharded model format, below).

    Example:
        >>> save("model.parvec", SavedModel(config, vocab, vectors, syn1neg))  # doctest: +SKIP
    """
    from parvec import storage

    if storage.is_url(path):  # a directory written locally, then uploaded (model.json last)
        with storage.write_output(os.fspath(path)) as local:
            save(local, model, move_files, fill)
        return
    path = Path(path)
    files = dict(move_files or {})
    arrays = _arrays(model) if model.sharded is None else {}  # a sharded checkpoint's arrays are the shards' files
    unknown = set(files) - set(arrays)
    if unknown:
        raise ValueError(f"move_files: {sorted(unknown)} are not arrays of this model")
    _check_shapes(model)
    for name, src in files.items():  # before anything is moved
        _check_npy(src, arrays[name])
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ParvecError(f"{parent}: the output directory does not exist")
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=parent))
    except OSError as exc:
        raise write_failure(path, exc) from None
    writing = None  # the file being written, named when a write fails (a full disk)
    try:
        sums: dict[str, ArrayEntry] = {}
        for writing, a in arrays.items():
            if writing in files:
                sums[writing] = _move_array(files[writing], tmp / writing)
            else:
                sums[writing] = _write_array(tmp / writing, a)
        vocab_bytes = model.vocab.to_json().encode("utf-8") if model.vocab is not None else None
        writing = VOCAB_JSON
        if vocab_bytes is not None:
            _write_synced(tmp / VOCAB_JSON, vocab_bytes)
        if fill is not None:
            writing = None
            fill(tmp)
        writing = MODEL_JSON
        meta = _describe(model, sums, vocab_bytes)
        _write_synced(tmp / MODEL_JSON, json.dumps(meta, indent=1).encode("utf-8"))  # last: marks it whole
        fsync_dir(tmp)
        writing = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=parent))
            os.replace(path, old / "x")
            try:
                os.replace(tmp, path)
            except OSError:
                os.replace(old / "x", path)  # the previous one back in place
                old.rmdir()
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
        fsync_dir(parent)
    except OSError as exc:
        raise write_failure(path, exc, what=writing) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _arrays(model: SavedModel) -> dict[str, np.ndarray]:
    assert model.vectors is not None and model.syn1neg is not None  # read with arrays=False: not written back
    arrays = {VECTORS: model.vectors, SYN1NEG: model.syn1neg}
    if model.syn1 is not None:
        arrays[SYN1] = model.syn1
    return arrays


def _check_shapes(model: SavedModel) -> None:
    # A directory that load would refuse is never written.
    n, dim = n_words(model), model.config.dim
    if model.sharded is not None:
        _check_sharded(model.sharded, n, dim)
        return
    want = {VECTORS: (n, dim), SYN1NEG: (n, dim), SYN1: (n - 1, dim)}
    for name, a in _arrays(model).items():
        if tuple(a.shape) != want[name]:
            raise ValueError(f"{name}: shape {tuple(a.shape)}, expected {want[name]} ({n} words, dimension {dim})")


def _describe(model: SavedModel, sums: dict[str, ArrayEntry], vocab_bytes: bytes | None) -> dict[str, object]:
    # model.json (module docstring); the keys in this order since the first version.
    config = model.config
    meta: dict[str, object] = {
        "format": MODEL_FORMAT,
        "version": MODEL_VERSION,
        "config": config.to_dict() | {"min_alpha": config.min_alpha},
        "read_options": dict(model.read_options or {}),
        "epochs_trained": int(model.epochs_trained),
        "corpus_words": int(model.corpus_words),
        "raw_words": int(model.raw_words),
        "corpus_count": int(model.corpus_count),
        "kind": model.kind,
        "position": model.position.to_json() if model.position is not None else None,
        "run_id": model.run_id,
        "saved_at": time.time(),
        "checkpoint_every": None if model.checkpoint_every is None else str(model.checkpoint_every),
        "schedule_anchor": list(model.schedule_anchor) if model.schedule_anchor is not None else None,
        "arrays": {name: entry.to_json() for name, entry in sums.items()},
    }
    if vocab_bytes is not None:  # a flipped byte in vocab.json would rename a word ("the" read as "uhe"): checked
        meta["vocab_crc32"] = zlib.crc32(vocab_bytes) & 0xFFFFFFFF
    if model.cluster_recorded:  # a directory read without it (written before it was recorded) stays so
        meta["cluster"] = model.cluster.to_json() if model.cluster is not None else None
    if model.sharded is not None:
        meta["sharded"] = model.sharded
    if model.graph_run is not None:
        meta["graph_run"] = model.graph_run
    if model.syn1 is not None and model.vocab is not None:
        from parvec.huffman import build_huffman_tree

        meta["huffman_fingerprint"] = build_huffman_tree(model.vocab.counts).fingerprint()
    return meta


def array_crc32(a: np.ndarray) -> int:
    """The CRC-32 of an array's values in C order (what ``model.json`` records), computed a block of rows at a
    time: a memory-mapped array is never read whole.

    Example:
        >>> array_crc32(np.arange(4, dtype=np.float32)) == zlib.crc32(np.arange(4, dtype=np.float32).tobytes())
        True
    """
    a = np.asarray(a)
    if a.ndim == 0 or len(a) == 0:
        return zlib.crc32(np.ascontiguousarray(a).data.cast("B")) & 0xFFFFFFFF
    rows = max(1, _CRC_BLOCK // max(1, a[0].nbytes))
    crc = 0
    for start in range(0, len(a), rows):
        crc = zlib.crc32(np.ascontiguousarray(a[start:start + rows]).data.cast("B"), crc)
    return crc & 0xFFFFFFFF


def _write_array(path: Path, a: np.ndarray) -> ArrayEntry:
    # One array as .npy, synced; returns what load checks it against.
    with output_file(path) as f:
        write_array(f, a)
        f.flush()
        os.fsync(f.fileno())
    return ArrayEntry(tuple(a.shape), str(a.dtype), array_crc32(a))


def _npy_header(f: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    version = np.lib.format.read_magic(f)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    return read_header(f)


def _check_npy(src: Path, like: np.ndarray) -> None:
    # An exported .npy must hold what ``like`` describes, in C order.
    with open(src, "rb") as f:
        shape, fortran, dtype = _npy_header(f)
    if fortran or tuple(shape) != like.shape or dtype != like.dtype:
        raise ValueError(f"{src}: {dtype} of shape {shape}{' in Fortran order' if fortran else ''}, expected "
                         f"{like.dtype} of shape {like.shape} in C order")


def _move_array(src: Path, dst: Path) -> ArrayEntry:
    # An array already written as a .npy (checked by _check_npy): moved in, its data checksummed block by block.
    shutil.move(str(src), dst)
    with open(dst, "rb") as f:
        file_shape, _, dtype = _npy_header(f)
        left = int(np.prod(file_shape, dtype=np.int64)) * dtype.itemsize
        crc = 0
        while left:
            block = f.read(min(left, _CRC_BLOCK))
            if not block:
                raise ValueError(f"{src}: {left} bytes of its data are missing")
            crc = zlib.crc32(block, crc)
            left -= len(block)
        if f.read(1):
            raise ValueError(f"{src}: longer than its header says")
    fd = os.open(dst, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return ArrayEntry(tuple(file_shape), str(dtype), crc & 0xFFFFFFFF)


def _write_synced(path: Path, data: bytes) -> None:
    with output_file(path) as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


# ---------------------------------------------------------------------- reading
def read_meta(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """A model directory's ``model.json`` as it is (no check beyond being a JSON object), or None when it is
    missing or unreadable: what a listing of checkpoints shows.

    Example:
        >>> read_meta("no/such/model") is None
        True
    """
    try:
        meta = json.loads((Path(path) / MODEL_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return meta if isinstance(meta, dict) else None


@contextlib.contextmanager
def errors_named(path: str | os.PathLike[str]) -> Iterator[None]:
    """Inside the block, every error reading the model at ``path`` becomes a :class:`ParvecError` that names
    it: one that names it already passes, another is prefixed with it, and what the readers raise on damaged
    data (numpy's header parser, JSON, a bad field) says ``damaged or incomplete parvec model``.

    Example:
        >>> with errors_named("m"):
        ...     raise KeyError("dim")
        Traceback (most recent call last):
        ...
        parvec.errors.ParvecError: m: damaged or incomplete parvec model (KeyError: 'dim')
    """
    try:
        yield
    except ParvecError as exc:
        if str(path) in str(exc):
            raise
        raise ParvecError(f"{path}: not a usable parvec model: {exc}") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, EOFError, SyntaxError,
            OverflowError, MemoryError, UnicodeDecodeError, RecursionError, tokenize.TokenError) as exc:
        raise ParvecError(f"{path}: damaged or incomplete parvec model ({type(exc).__name__}: {exc})"[:600]) from None


def load(path: str | os.PathLike[str], mmap: str | None = None, arrays: bool = True) -> SavedModel:
    """Read the model directory at ``path``, checking everything: a missing or truncated array, unreadable or
    incomplete JSON, a checksum that does not match ``model.json``, shapes that do not fit the vocabulary, a
    mid-epoch checkpoint without a valid position raise :class:`parvec.errors.CheckpointError` naming the file;
    a directory that is no model (or a gensim pickle) a :class:`ParvecError` saying what it holds.  ``mmap``
    (``"r"``) memory-maps the arrays.  ``arrays=False`` leaves ``vectors`` and ``syn1neg`` None (a sharded run's
    checkpoint: only checks that the shards' files are there, with the shapes it records).

    Example:
        >>> load("model.parvec").vocab.words[:2]  # doctest: +SKIP
        ['the', 'of']
    """
    from parvec import storage

    if storage.is_url(path):  # copied here for the load; memory-mapped arrays outlive the copy's removal
        with storage.local_copy(os.fspath(path)) as local:
            try:
                return load(local, mmap, arrays)
            except ParvecError as exc:
                raise storage.renamed(exc, {str(local): os.fspath(path).rstrip("/")}) from None
    path = Path(path)
    refuse_pickle(path, "Word2Vec.load")  # gensim's pickled .model: say why and how to convert
    with errors_named(path):
        saved = _load_dir(path, mmap, arrays)
    return saved


def _load_dir(path: Path, mmap: str | None, arrays: bool = True) -> SavedModel:
    meta_path = path / MODEL_JSON
    if not meta_path.exists():
        if path.is_dir() and any((path / name).exists() for name in (VECTORS, SYN1NEG, VOCAB_JSON)):
            raise CheckpointError(f"{meta_path}: missing (the model directory is incomplete)")
        raise ParvecError(f"{path}: not a parvec model directory (no model.json): {what_is_there(path)}")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{meta_path}: unreadable model description: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != MODEL_FORMAT:
        raise ParvecError(f"{meta_path}: not a parvec Word2Vec model")
    try:
        fields = _fields(meta)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise CheckpointError(f"{meta_path}: incomplete or damaged model description ({what})") from None
    config = fields.config
    parts = (fields.sharded or {}).get("vocab")
    vocab = _parts_vocab(path, parts, arrays) if parts is not None else _vocab_json(path, meta.get("vocab_crc32"))
    n = len(vocab) if vocab is not None else int((parts or {})["words"])
    sums = meta["arrays"] if isinstance(meta.get("arrays"), dict) else {}
    if fields.sharded is not None:
        w_in, w_out = _sharded_arrays(path, fields.sharded, n, config.dim, arrays)
    elif not arrays:
        w_in = w_out = None
    else:
        w_in, w_out = (_read_array(path / name, mmap, ArrayEntry.from_json(sums.get(name)))
                       for name in (VECTORS, SYN1NEG))
    if w_in is not None and w_out is not None:
        if w_in.shape != (n, config.dim) or w_out.shape != w_in.shape:
            raise CheckpointError(f"{path}: array shapes {w_in.shape} and {w_out.shape} do not match the vocabulary "
                                  f"({n} words) and dimension ({config.dim})")
        if w_in.dtype != np.float32 or w_out.dtype != np.float32:
            raise CheckpointError(f"{path}: the arrays must be float32, found {w_in.dtype} and {w_out.dtype}")
        w_in, w_out = np.ascontiguousarray(w_in), np.ascontiguousarray(w_out)
    syn1 = (_load_syn1(path, meta.get("huffman_fingerprint"), vocab, config.dim, mmap,
                       ArrayEntry.from_json(sums.get(SYN1))) if config.hs and arrays and vocab is not None else None)
    position = None
    if str(meta.get("kind", "")).startswith("mid-epoch"):
        try:
            position = Position.from_json(meta["position"])
            if position.epoch != fields.epochs_trained:
                raise ValueError(f"position in epoch {position.epoch + 1} but {fields.epochs_trained} epochs done")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise CheckpointError(f"{meta_path}: a mid-epoch checkpoint without a valid position ({what})") from None
    return dataclasses.replace(fields, vocab=vocab, vectors=w_in, syn1neg=w_out, syn1=syn1, position=position)


def _vocab_json(path: Path, crc: object) -> Vocab:
    # vocab.json, checked against model.json's CRC-32 (None: a directory written before it was recorded).
    try:
        vocab_bytes = (path / VOCAB_JSON).read_bytes()
        if crc is not None and zlib.crc32(vocab_bytes) & 0xFFFFFFFF != crc:
            raise ValueError("its checksum does not match model.json (the file was altered or damaged)")
        return Vocab.from_json(vocab_bytes.decode("utf-8"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"{path / VOCAB_JSON}: missing or damaged vocabulary: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None


def _parts_vocab(path: Path, parts: Any, arrays: bool) -> Vocab | None:
    # A sharded model's vocabulary partitions (parvec.vocab_parts): every file there (and, read whole, its CRC-32
    # checked); the Vocab only when the arrays are read too (a resumed run reads neither).
    from parvec.vocab_parts import VocabPart, WordParts

    try:
        directory = path / str(parts["directory"])
        found = WordParts.open(directory, [VocabPart.from_json(p) for p in parts["parts"]], check=arrays)
        if found.n_words != int(parts["words"]):
            raise ValueError(f"the partitions hold {found.n_words} words, model.json records {parts['words']}")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CheckpointError(f"{path / MODEL_JSON}: incomplete or damaged description of the vocabulary's "
                              f"partitions ({exc})") from None
    return found.vocab() if arrays else None


def _fields(meta: Mapping[str, Any]) -> SavedModel:
    # model.json's fields but the vocabulary, the arrays and the position (KeyError/TypeError/ValueError/
    # AttributeError when one is missing or of a wrong type).
    config = TrainConfig.from_dict(meta["config"]).validate()
    options = meta.get("read_options", {})
    if not isinstance(options, dict):
        raise TypeError("read_options must be an object")
    anchor = meta.get("schedule_anchor")
    graph_run = meta.get("graph_run")
    if graph_run is not None and not isinstance(graph_run, dict):
        raise ValueError("graph_run must be an object")
    every = meta.get("checkpoint_every")
    cluster = meta.get("cluster")
    if cluster is not None and not isinstance(cluster, dict):
        raise ValueError("cluster must be an object or null")
    sharded = meta.get("sharded")
    if sharded is not None and not isinstance(sharded, dict):
        raise ValueError("sharded must be an object")
    return SavedModel(
        config=config, vocab=None, vectors=None, syn1neg=None,
        read_options=options,
        epochs_trained=int(meta.get("epochs_trained", 0)),
        corpus_words=int(meta.get("corpus_words", 0)),
        raw_words=int(meta.get("raw_words", 0)),
        corpus_count=int(meta.get("corpus_count", 0)),
        run_id=meta.get("run_id"),
        saved_at=float(meta["saved_at"]) if meta.get("saved_at") is not None else None,
        checkpoint_every=None if every is None else str(every),
        schedule_anchor=(float(anchor[0]), float(anchor[1])) if anchor else None,
        graph_run=graph_run,
        cluster=ClusterRecord.from_json(cluster) if cluster is not None else None,
        cluster_recorded="cluster" in meta,
        sharded=sharded,
    )


def _load_syn1(path: Path, saved: object, vocab: Vocab, dim: int, mmap: str | None,
               expect: ArrayEntry | None) -> np.ndarray:
    # The output layer of hierarchical softmax, and the check that the tree rebuilt from the saved counts is
    # the one it was trained with.
    from parvec.huffman import build_huffman_tree

    if not (path / SYN1).exists():
        raise ParvecError(f"{path}: the model uses hierarchical softmax (hs=1) but has no {SYN1}")
    syn1 = _read_array(path / SYN1, mmap, expect)
    if syn1.shape != (len(vocab) - 1, dim) or syn1.dtype != np.float32:
        raise ParvecError(f"{path / SYN1}: expected float32 of shape ({len(vocab) - 1}, {dim}) (one row per "
                          f"inner node of the Huffman tree), got {syn1.dtype} {syn1.shape}")
    if saved is None:
        raise ParvecError(f"{path / MODEL_JSON}: no huffman_fingerprint for a hierarchical-softmax model")
    if build_huffman_tree(vocab.counts).fingerprint() != saved:
        raise ParvecError(f"{path}: the Huffman tree rebuilt from {VOCAB_JSON}'s counts differs from the one the "
                          f"model was trained with ({VOCAB_JSON} was changed?)")
    return np.ascontiguousarray(syn1)


def _read_array(path: Path, mmap: str | None, expect: ArrayEntry | None) -> np.ndarray:
    # An array of a saved model; CheckpointError naming the file when it is missing, truncated or altered.
    try:
        a: np.ndarray = np.load(path, mmap_mode=cast(_MmapMode, mmap), allow_pickle=False)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing (the model directory is incomplete)") from None
    except (OSError, ValueError, EOFError, SyntaxError, tokenize.TokenError) as exc:  # numpy parses the header
        raise CheckpointError(f"{path}: truncated or damaged array ({getattr(exc, 'strerror', None) or exc})") from None
    if expect is not None:
        if tuple(a.shape) != expect.shape or str(a.dtype) != expect.dtype:
            recorded = None if expect.shape is None else list(expect.shape)
            raise CheckpointError(f"{path}: shape {a.shape} {a.dtype}, but model.json recorded "
                                  f"{recorded} {expect.dtype}")
        if expect.crc32 is not None and array_crc32(a) != expect.crc32:
            raise CheckpointError(f"{path}: the array's checksum does not match model.json (the file was altered "
                                  "or damaged)")
    return a


# ---------------------------------------------------------------------- a sharded run's checkpoint
def _check_sharded(sharded: Mapping[str, Any], n: int, dim: int) -> None:
    # model.json's "sharded": every column of the model in exactly one shard's files, each (n, width) float32.
    at = 0
    for s, f in enumerate(shard_files(sharded)):
        lo, hi = f.columns
        if lo != at or hi <= lo or f.shape != (n, hi - lo) or set(f.crc32) != {"in", "out"}:
            raise ValueError(f"sharded.files[{s}]: columns {lo}..{hi - 1} and shape {list(f.shape)} do not continue "
                             f"the columns before ({at}) for {n} words")
        at = hi
    if at != dim:
        raise ValueError(f"sharded.files cover {at} of {dim} columns")


def shard_files(sharded: Mapping[str, Any]) -> list[ShardFile]:
    """The shards' files a sharded model's ``model.json`` records (its ``sharded`` object); ValueError (or
    KeyError/TypeError) when they are not there or a record is damaged.

    Example:
        >>> shard_files({"files": [{"directory": "s0", "columns": [0, 2], "shape": [5, 2]}]})[0].columns
        (0, 2)
    """
    files = sharded.get("files")
    if not isinstance(files, list) or not files:
        raise ValueError("sharded.files must name each shard's snapshot")
    found = []
    for s, f in enumerate(files):
        try:
            found.append(ShardFile.from_json(f))
        except ValueError as exc:
            raise ValueError(f"sharded.files[{s}]: {exc}") from None
    return found


def shard_file_paths(path: str | os.PathLike[str], sharded: Mapping[str, Any]) -> list[Path]:
    """The snapshot directory of each shard that a sharded checkpoint at ``path`` names (its ``directory``
    entries are relative to ``path``).

    Example:
        >>> shard_file_paths("ck/checkpoint", {"files": [{"directory": "../shards/shard-0-of-1/snap-3"}]})
        [PosixPath('ck/shards/shard-0-of-1/snap-3')]
    """
    return [Path(os.path.normpath(Path(path) / f["directory"])) for f in sharded["files"]]


def _sharded_arrays(path: Path, sharded: Mapping[str, Any], n: int, dim: int,
                    arrays: bool) -> tuple[np.ndarray | None, np.ndarray | None]:
    # The shards' files: checked to be there with their shapes; with ``arrays``, assembled column block by column
    # block into whole matrices, each file's CRC-32 checked.
    try:
        _check_sharded(sharded, n, dim)
        files = shard_files(sharded)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CheckpointError(f"{path / MODEL_JSON}: incomplete or damaged description of the shards ({exc})") from None
    w_in = np.empty((n, dim), dtype=np.float32) if arrays else None
    w_out = np.empty((n, dim), dtype=np.float32) if arrays else None
    for s, (f, where) in enumerate(zip(files, shard_file_paths(path, sharded), strict=True)):
        try:
            _read_shard(path, f, where, n, w_in, w_out)
        except CheckpointError as exc:
            raise CheckpointError(f"{path}: shard {s}'s snapshot: {exc}") from None
    return w_in, w_out


def _read_shard(path: Path, f: ShardFile, where: Path, n: int, w_in: np.ndarray | None,
                w_out: np.ndarray | None) -> None:
    # One shard's files: present with the recorded shape, or (w_in given) read into its columns, CRC-32 checked.
    lo, hi = f.columns
    for key, whole in (("in", w_in), ("out", w_out)):
        file = where / f"{key}.npy"
        expect = f.file_entry(key, n)
        if whole is not None:
            whole[:, lo:hi] = _read_array(file, "r", expect)
            continue
        try:
            with open(file, "rb") as fh:
                shape, fortran, dtype = _npy_header(fh)
        except FileNotFoundError:
            raise CheckpointError(f"{file}: missing (the shard's snapshot is gone)") from None
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{file}: truncated or damaged array ({exc})") from None
        if tuple(shape) != expect.shape or str(dtype) != "float32" or fortran:
            raise CheckpointError(f"{file}: shape {tuple(shape)} {dtype}, but {path / MODEL_JSON} recorded "
                                  f"{list(expect.shape or ())} float32")


def what_is_there(path: str | os.PathLike[str]) -> str:
    """What ``path`` holds, in words, for a message about a directory that is not a model: nothing, a file, an
    empty directory, a sharded run's snapshots without a checkpoint, or its first entries.

    Example:
        >>> what_is_there("no/such/dir")
        'there is no such file or directory'
    """
    path = Path(path)
    if not path.exists():
        return "there is no such file or directory"
    if not path.is_dir():
        return "it is a file, not a directory"
    try:
        entries = sorted(path.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        return f"it cannot be listed ({exc.strerror or exc})"
    if not entries:
        return "the directory is empty"
    shards = path / "shards"
    if shards.is_dir() and any(p.name.startswith("shard-") for p in shards.iterdir()):
        snaps = sorted(f"{p.parent.name}/{p.name}" for p in shards.glob("shard-*/snap-*"))
        return (f"it holds a sharded run's shard snapshots ({', '.join(snaps[:4])}{', ...' if len(snaps) > 4 else ''}"
                f" in {shards}) but no checkpoint naming them ({path}/checkpoint or {path}/mid-*, with a model.json): "
                "the run stopped before its first checkpoint, or was written by a parvec that did not checkpoint "
                "sharded runs; train it again")
    shown = [p.name + ("/" if p.is_dir() else "") for p in entries[:5]]
    more = f" and {len(entries) - 5} more" if len(entries) > 5 else ""
    return f"it holds {', '.join(shown)}{more}"
