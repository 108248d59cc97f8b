"""A sharded run's model written out without a gather: the outputs by row ranges in parallel, the model as its
shards' files.

The trained model is on disk once an epoch ends: each shard's columns of both matrices in its snapshot
(``in.npy``, ``out.npy``: :mod:`parvec.distributed.snapshot_files`) and the vocabulary in its partitions
(:mod:`parvec.vocab_parts`).  :class:`ModelFiles` names them.  From there:

- **vectors** (``-o vectors.txt/.bin/.npy``, :class:`ShardedVectors`: the saving half of
  :class:`parvec.keyedvectors.KeyedVectors`): the rows are cut into ranges of about 32 MiB of floats; for each
  range a Ray task on each shard's node reads that shard's columns of the rows from its files (memory-mapped), and
  one more task assembles the rows, takes the words from the partitions (in Ray's object store) and formats them
  (word2vec text or binary, compressed by the output's extension, each piece a stream of its own); the driver
  writes the pieces into the output in order as they come, a few ranges in flight, so no node needs to see
  another's disk and the driver holds a few pieces, never the matrix;
- **the vocabulary** (``--save-vocab``): the same, by id ranges;
- **the model** (``--save-model``, :func:`save_model`): a model directory (:mod:`parvec.model_io`) whose
  ``model.json`` names ``shards/shard-S-of-N/{in,out}.npy`` and ``vocab/part-R.*.npy`` with their CRC-32s: each
  shard's files hard-linked (or copied) where the driver's node holds them, else streamed from the shard's node
  in blocks by tasks placed there: the sharded model format, which :class:`parvec.keyedvectors.KeyedVectors`
  opens lazily and ``Word2Vec.load`` reads whole.

Example:
    >>> files = ModelFiles.of(snap.files, corpus.vocab_dir, corpus.vocab_parts, corpus.n_words, 100)  # doctest: +SKIP
    >>> ShardedVectors(ray, files, work).save_word2vec_format("vectors.bin", binary=True)  # doctest: +SKIP
"""

from __future__ import annotations

import bz2
import collections
import gzip
import lzma
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parvec.distributed.snapshot_records import ShardFiles
from parvec.errors import ParvecError
from parvec.fileio import output_file, write_failure
from parvec.vocab_parts import VocabPart, WordParts

__all__ = ["PIECE_BYTES", "PIECE_ROWS", "ModelFiles", "ShardedVectors", "column_block", "file_block", "on_node",
           "part_file", "piece", "row_ranges", "save_model"]

PIECE_BYTES = 32 << 20  # about this many bytes of floats per row range
PIECE_ROWS = 1 << 18  # and at most this many rows: a text or binary piece makes a few Python objects per row
_COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": lambda b: gzip.compress(b, compresslevel=6), ".bz2": bz2.compress, ".xz": lzma.compress,
    ".lzma": lambda b: lzma.compress(b, format=lzma.FORMAT_ALONE)}


@dataclass(frozen=True)
class ModelFiles:
    """Where a sharded model is on disk: ``shards`` (each shard's files in a snapshot: :class:`parvec.distributed.
    snapshot_records.ShardFiles`), the vocabulary's partitions (``vocab_dir``, ``vocab_parts``: their records;
    ``vocab_files``: their files in Ray's object store, one reference each, where a task on any node reads them),
    ``n_words`` and ``dim``.

    Example:
        >>> ModelFiles((), "vocab", (), 0, 4).n_shards
        0
    """

    shards: tuple[ShardFiles, ...]
    vocab_dir: str
    vocab_parts: tuple[VocabPart, ...]
    n_words: int
    dim: int
    vocab_files: tuple[Any, ...] = ()

    @classmethod
    def of(cls, shard_files: Sequence[ShardFiles], vocab_dir: str | os.PathLike[str],
           vocab_parts: list[VocabPart], n_words: int, dim: int, vocab_files: Sequence[Any] = ()) -> ModelFiles:
        """From a snapshot's ``files`` (absolute directories) and the vocabulary's partitions."""
        return cls(tuple(f.with_directory(str(Path(f.directory).absolute())) for f in shard_files),
                   str(Path(vocab_dir).absolute()), tuple(vocab_parts), int(n_words), int(dim), tuple(vocab_files))

    @property
    def n_shards(self) -> int:
        return len(self.shards)

    def rows(self, lo: int, hi: int, key: str = "in") -> np.ndarray:
        """Rows ``lo .. hi-1`` of the input (``key="in"``) or output (``"out"``) vectors, assembled from every
        shard's columns (memory-mapped: only these rows are read)."""
        return self.assemble([column_block(f.directory, lo, hi, key) for f in self.shards])

    def assemble(self, blocks: Sequence[np.ndarray]) -> np.ndarray:
        """Rows from each shard's block of their columns (:func:`column_block`, in shard order)."""
        out = np.empty((len(blocks[0]) if blocks else 0, self.dim), dtype=np.float32)
        for f, block in zip(self.shards, blocks, strict=True):
            assert f.columns is not None, "a snapshot's files name their columns"
            c_lo, c_hi = f.columns
            out[:, c_lo:c_hi] = block
        return out

    def block_refs(self, ray: Any, lo: int, hi: int, key: str = "in") -> list[Any]:
        """Each shard's columns of rows ``lo .. hi-1`` (:func:`column_block`), read by a Ray task on the node
        that holds its files: object references, in shard order."""
        task = ray.remote(num_cpus=0, max_retries=2)(column_block)
        return [on_node(task, f.node).remote(f.directory, lo, hi, key) for f in self.shards]

    def verify(self, ray: Any, snapshot_id: Any, timeout_s: float = 300.0) -> None:
        """Check every shard's files against the CRC-32s its snapshot record holds, a Ray task per shard (each
        reads its own files): a file altered or damaged stops with the shard's error, as a restore would say it
        (a checkpoint whose epochs are all done is written out without a shard restoring it).

        Example:
            >>> files.verify(ray, 4)  # doctest: +SKIP
        """
        task = ray.remote(num_cpus=0, max_retries=1)(_verify_shard)  # reads on the node that holds the files
        errors = _await(ray, [on_node(task, f.node).remote(f, s, self.n_shards, snapshot_id)
                              for s, f in enumerate(self.shards)],
                        "checking the shards' files", timeout_s)
        bad = next((e for e in errors if e is not None), None)
        if bad is not None:
            raise ParvecError(bad)

    def words(self) -> WordParts:
        """The vocabulary's partitions: from Ray's object store where they are there (in a task), else
        memory-mapped from ``vocab_dir``."""
        if self.vocab_files:
            import ray

            return WordParts.of_files(self.vocab_parts, ray.get(list(self.vocab_files)))
        return WordParts.open(self.vocab_dir, self.vocab_parts)


def on_node(task: Any, node: str | None) -> Any:
    """``task`` (a Ray remote function) placed on ``node`` (a Ray node id) while that node lives, anywhere when
    ``node`` is None or lost.

    Example:
        >>> on_node(task, None) is task  # doctest: +SKIP
        True
    """
    if node is None:
        return task
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=True))


def column_block(directory: str, lo: int, hi: int, key: str = "in") -> np.ndarray:
    """Task: rows ``lo .. hi-1`` of a shard's ``in`` or ``out`` columns, read from its snapshot file in
    ``directory`` (memory-mapped: only these rows are read).

    Example:
        >>> column_block("ck/shards/shard-0-of-2/snap-3", 0, 100).shape  # doctest: +SKIP
        (100, 50)
    """
    return np.array(np.load(Path(directory) / f"{key}.npy", mmap_mode="r")[lo:hi])


def _verify_shard(f: ShardFiles, s: int, shards: int, snapshot_id: Any) -> str | None:
    # Task: shard s's files read through, their data's CRC-32 against the record; the error or None.
    from parvec.distributed.snapshot_files import read_snapshot

    where = Path(f.directory)
    n, width = f.shape
    arrays = {"in": np.empty((n, width), np.float32), "out": np.empty((n, width), np.float32)}
    try:
        read_snapshot(where, arrays, dict(f.crc32) if f.crc32 is not None else None)
    except (OSError, ValueError) as exc:
        return f"shard {s} of {shards} cannot read snapshot {snapshot_id} ({where}): {exc}"
    return None


def row_ranges(n: int, dim: int, pieces_at_least: int = 1, piece_bytes: int = PIECE_BYTES,
               piece_rows: int = PIECE_ROWS) -> list[tuple[int, int]]:
    """Rows ``0 .. n-1`` cut into ranges of about ``piece_bytes`` bytes of floats and at most ``piece_rows`` rows
    (a writer's memory is that of one range whatever the vocabulary and ``dim``), at least ``pieces_at_least``.

    Example:
        >>> row_ranges(10, 4, pieces_at_least=3)
        [(0, 4), (4, 8), (8, 10)]
        >>> len(row_ranges(10**6, 8)), len(row_ranges(10**6, 300))  # rows, then floats, bound a range
        (4, 36)
    """
    per = max(1, min(-(-n // max(1, pieces_at_least)), piece_bytes // max(1, 4 * dim), piece_rows))
    return [(lo, min(n, lo + per)) for lo in range(0, n, per)]


def _piece_bytes(files: ModelFiles, lo: int, hi: int, fmt: str, blocks: Sequence[np.ndarray] | None = None) -> bytes:
    # What rows lo..hi-1 add to an output of format fmt; blocks: each shard's columns of those rows (read here
    # from the files when None).
    def rows(key: str = "in") -> np.ndarray:
        return files.rows(lo, hi, key) if blocks is None else files.assemble(blocks)

    if fmt in ("npy", "npy-out"):
        return np.ascontiguousarray(rows("out" if fmt == "npy-out" else "in"), "<f4").tobytes()
    parts = files.words()
    if fmt == "counts":
        return np.ascontiguousarray(parts.counts_between(lo, hi), "<i8").tobytes()
    words = parts.words_between(lo, hi)
    if fmt == "keys":
        return b"".join(w + b"\n" for w in words)
    if fmt == "vocab":
        counts = parts.counts_between(lo, hi).tolist()
        return b"".join(w + b" " + str(c).encode() + b"\n" for w, c in zip(words, counts, strict=True))
    matrix = rows()
    if fmt == "binary":
        data = np.ascontiguousarray(matrix, dtype="<f4")
        return b"".join(w + b" " + data[i].tobytes() + b"\n" for i, w in enumerate(words))
    line = "%.9g " * files.dim + "\n"  # parvec.formats.write_word2vec's text (word2vec.c's trailing space)
    values = matrix.astype(np.float64).tolist()
    return b"".join(w + b" " + (line % tuple(v)).encode() for w, v in zip(words, values, strict=True))


_ROW_FORMATS = frozenset({"npy", "npy-out", "binary", "text"})


def piece(files: ModelFiles, lo: int, hi: int, fmt: str, suffix: str, *blocks: np.ndarray) -> np.ndarray:
    """Task: the bytes rows (or words) ``lo .. hi-1`` add to an output of format ``fmt`` (``text``, ``binary``,
    ``npy``, ``npy-out``, ``keys``, ``counts``, ``vocab``), compressed as ``suffix`` (a compressed output's
    extension: each piece a stream of its own) says, from each shard's ``blocks`` of those rows (a format of
    rows; :meth:`ModelFiles.block_refs`); returned through Ray's object store (``uint8``).

    Example:
        >>> piece(files, 0, 1000, "keys", "").nbytes  # doctest: +SKIP
        5120
    """
    data = _piece_bytes(files, lo, hi, fmt, blocks if fmt in _ROW_FORMATS else None)
    compress = _COMPRESSORS.get(suffix)
    if compress is not None:
        data = compress(data)
    return np.frombuffer(data, dtype=np.uint8)


def part_file(files: ModelFiles, lo: int, hi: int, url: str, *blocks: np.ndarray) -> int:
    """Task: rows ``lo .. hi-1`` as a whole word2vec binary file (its own ``count dimension`` header) written to
    ``url`` from the node that runs it (one part of a partitioned output, :mod:`parvec.partitioned`), from each
    shard's ``blocks`` of those rows; returns its size in bytes.

    Example:
        >>> part_file(files, 0, 1000, "s3://bucket/out/part-00000.bin", *blocks)  # doctest: +SKIP
        404890
    """
    from parvec import storage

    data = f"{hi - lo} {files.dim}\n".encode() + _piece_bytes(files, lo, hi, "binary", blocks)
    with storage.write_output(url) as local:
        local.write_bytes(data)
    return len(data)


class ShardedVectors:
    """The trained vectors as an output (module docstring): what the commands call on a model's ``wv`` to write
    ``-o`` (:meth:`save_word2vec_format`, :meth:`save`), for a model no process holds.  ``sentences`` is the
    corpus's (``--save-vocab``'s first line).

    Example:
        >>> ShardedVectors(ray, files, Path("work")).save("vectors.npy")  # doctest: +SKIP
    """

    def __init__(self, ray: Any, files: ModelFiles, work: Path, timeout_s: float = 300.0) -> None:
        self.ray, self.files, self.work, self.timeout_s = ray, files, Path(work), timeout_s

    def __len__(self) -> int:
        return self.files.n_words

    @property
    def vector_size(self) -> int:
        return self.files.dim

    def _write(self, target: Path, fmt: str, header: bytes = b"", suffix: str | None = None) -> None:
        # The pieces by Ray tasks, written into target in order as they come, 2 per CPU in flight.
        ray = self.ray
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        ranges = row_ranges(self.files.n_words, self.files.dim, 2 * cpus)
        suffix = Path(target).suffix.lower() if suffix is None else suffix
        task = ray.remote(num_cpus=1, max_retries=2)(piece)
        files_ref = ray.put(self.files)
        rows = fmt in _ROW_FORMATS

        def submit(k: int) -> Any:
            lo, hi = ranges[k]
            blocks = self.files.block_refs(ray, lo, hi, "out" if fmt == "npy-out" else "in") if rows else []
            return task.remote(files_ref, lo, hi, fmt, suffix, *blocks)

        compress = _COMPRESSORS.get(suffix)
        flight = collections.deque(submit(k) for k in range(min(len(ranges), 2 * cpus)))
        following = len(flight)
        try:
            with output_file(target) as dst:
                if header:
                    dst.write(compress(header) if compress is not None else header)
                while flight:
                    data = _await(ray, [flight.popleft()], f"writing {target}", self.timeout_s)[0]
                    if following < len(ranges):
                        flight.append(submit(following))
                        following += 1
                    dst.write(memoryview(data))
                    del data
        except OSError as exc:
            raise write_failure(target, exc) from None

    def save_word2vec_format(self, path: str | os.PathLike[str], binary: bool = False) -> None:
        """Write word2vec.c's text or binary layout (compressed by the name's extension), by row ranges."""
        self._write(Path(path), "binary" if binary else "text", f"{self.files.n_words} {self.files.dim}\n".encode())

    def save_partitioned(self, url: str, rows_per_part: int | None = None) -> int:
        """A partitioned output at the URL prefix ``url`` (:mod:`parvec.partitioned`): each part file formatted and
        uploaded by a Ray task from the shards' columns (never on this node), the manifest last; returns the
        number of parts.

        Example:
            >>> model.wv.save_partitioned("s3://bucket/out/")  # doctest: +SKIP
            3
        """
        from parvec.partitioned import Manifest, PartEntry, part_name, part_rows, write_manifest
        from parvec.storage import join_url

        ray, n, dim = self.ray, self.files.n_words, self.files.dim
        rows = rows_per_part or part_rows(dim)
        ranges = [(lo, min(n, lo + rows)) for lo in range(0, max(n, 1), rows)]
        task = ray.remote(num_cpus=1, max_retries=2)(part_file)
        files_ref = ray.put(self.files)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))

        def submit(k: int) -> Any:
            lo, hi = ranges[k]
            return task.remote(files_ref, lo, hi, join_url(url, part_name(k)),
                               *self.files.block_refs(ray, lo, hi, "in"))

        flight = collections.deque(submit(k) for k in range(min(len(ranges), 2 * cpus)))
        following, sizes = len(flight), []
        while flight:
            sizes.append(_await(ray, [flight.popleft()], f"writing the parts of {url}", self.timeout_s)[0])
            if following < len(ranges):
                flight.append(submit(following))
                following += 1
        write_manifest(url, Manifest(n, dim, tuple(PartEntry(part_name(k), hi - lo, int(size))
                                                   for k, ((lo, hi), size) in enumerate(zip(ranges, sizes,
                                                                                           strict=True)))))
        return len(ranges)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """``PREFIX.npy`` (float32), ``PREFIX.vocab.txt`` and ``PREFIX.counts.npy``, as
        :meth:`parvec.keyedvectors.KeyedVectors.save` writes them; returns the ``.npy`` path."""
        from parvec.formats import npy_paths

        vec, vocab, counts = npy_paths(path)
        n, dim = self.files.n_words, self.files.dim
        self._write(vec, "npy", _npy_header("<f4", (n, dim)), suffix="")
        self._write(vocab, "keys", suffix="")
        self._write(counts, "counts", _npy_header("<i8", (n,)), suffix="")
        return vec

    def save_vocab(self, path: str | os.PathLike[str], sentences: int) -> None:
        """word2vec.c's ``-save-vocab`` file (:func:`parvec.vocab.write_vocab_file`'s layout), by id ranges."""
        from parvec.vocab import SENTENCE_END

        self._write(Path(path), "vocab", f"{SENTENCE_END} {int(sentences)}\n".encode(), suffix="")


def _npy_header(dtype: str, shape: tuple[int, ...]) -> bytes:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def file_block(path: str, offset: int, size: int) -> np.ndarray:
    """Task: ``size`` bytes of the file ``path`` from ``offset`` (a shard's snapshot file streamed from its node).

    Example:
        >>> file_block("ck/shards/shard-0-of-2/snap-3/in.npy", 0, 128).nbytes  # doctest: +SKIP
        128
    """
    with open(path, "rb") as f:
        f.seek(offset)
        return np.frombuffer(f.read(size), dtype=np.uint8)


def _file_size(path: str) -> int:
    return os.stat(path).st_size


def _stream_file(ray: Any, node: str | None, src: str, dst: Path, timeout_s: float) -> None:
    # src (on node's disk) copied into dst here by blocks of PIECE_BYTES, a few read ahead by tasks on that node.
    sized = ray.remote(num_cpus=0, max_retries=2)(_file_size)
    size = _await(ray, [on_node(sized, node).remote(src)], f"reading {src}", timeout_s)[0]
    task = on_node(ray.remote(num_cpus=0, max_retries=2)(file_block), node)
    offsets = range(0, size, PIECE_BYTES)
    flight = collections.deque(task.remote(src, o, PIECE_BYTES) for o in offsets[:4])
    following = len(flight)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "wb") as f:
        while flight:
            data = _await(ray, [flight.popleft()], f"copying {src}", timeout_s)[0]
            if following < len(offsets):
                flight.append(task.remote(src, offsets[following], PIECE_BYTES))
                following += 1
            f.write(memoryview(data))
        f.flush()
        os.fsync(f.fileno())


def _here(ray: Any, node: str | None) -> bool:
    # Whether files a process of ``node`` wrote are on this process's disk (the same node, or a node not known).
    return node is None or node == ray.get_runtime_context().get_node_id()


def save_model(ray: Any, files: ModelFiles, directory: str | os.PathLike[str],
               describe: Callable[[dict[str, Any]], Any], timeout_s: float = 300.0) -> None:
    """Write the sharded model format into ``directory`` (:mod:`parvec.model_io`, written into a temporary
    directory and renamed into place): each shard's files into ``shards/shard-S-of-N/`` (hard links where this
    node holds them and the file system allows, else copies; a shard's files on another node streamed from there
    by tasks placed on it) and each vocabulary partition into ``vocab/`` (from the driver's work directory);
    ``describe(sharded)`` gives the :class:`parvec.model_io.SavedModel` (its ``sharded`` record naming them).

    Example:
        >>> save_model(ray, files, "model", lambda sharded: SavedModel(..., sharded=sharded))  # doctest: +SKIP
    """
    from parvec import model_io

    n = files.n_shards
    shard_files = [f.with_directory(f"shards/shard-{s}-of-{n}") for s, f in enumerate(files.shards)]
    record = {"files": [f.to_json() for f in shard_files],
              "vocab": {"directory": "vocab", "parts": [p.to_json() for p in files.vocab_parts],
                        "words": files.n_words}}

    def fill(tmp: Path) -> None:
        try:
            for s, f in enumerate(files.shards):
                for name in ("in.npy", "out.npy"):
                    src, dst = Path(f.directory) / name, tmp / shard_files[s].directory / name
                    if _here(ray, f.node):
                        _link_or_copy(src, dst)
                    else:
                        _stream_file(ray, f.node, str(src), dst, timeout_s)
            for r in files.vocab_parts:
                for p in r.paths(files.vocab_dir).values():
                    _link_or_copy(p, tmp / "vocab" / p.name)
        except OSError as exc:
            raise write_failure(directory, exc) from None

    model_io.save(directory, describe(record), fill=fill)


def _await(ray: Any, refs: list[Any], what: str, timeout_s: float) -> list[Any]:
    try:
        return list(ray.get(refs, timeout=timeout_s * max(1, len(refs))))
    except ray.exceptions.GetTimeoutError:
        raise ParvecError(f"{what}: not done within {timeout_s:g} s per piece (Cluster.timeout_s)") from None
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", exc)
        raise (cause if isinstance(cause, ParvecError) else ParvecError(f"{what} failed: {cause}")) from None
