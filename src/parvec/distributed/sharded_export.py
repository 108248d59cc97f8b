"""A sharded run's model written out without a gather: the outputs by row ranges in parallel, the model as its
shards' files.

The trained model is on disk once an epoch ends: each shard's columns of both matrices in its snapshot
(``in.npy``, ``out.npy``: :mod:`parvec.distributed.snapshot_files`) and the vocabulary in its partitions
(:mod:`parvec.vocab_parts`).  :class:`ModelFiles` names them.  From there:

- **vectors** (``-o vectors.txt/.bin/.npy``, :class:`ShardedVectors`: the saving half of
  :class:`parvec.keyedvectors.KeyedVectors`): the rows are cut into ranges of about 32 MiB of floats; one Ray task
  per range assembles its rows from the shards' column files (memory-mapped) and its words from the partitions,
  formats them (word2vec text or binary, compressed by the output's extension, each piece a stream of its own)
  and writes a piece file; the pieces are then put one after another into the output by the kernel
  (``os.copy_file_range``), so the matrix never passes through this process's memory;
- **the vocabulary** (``--save-vocab``): the same, by id ranges;
- **the model** (``--save-model``, :func:`save_model`): a model directory (:mod:`parvec.model_io`) whose
  ``model.json`` names ``shards/shard-S-of-N/{in,out}.npy`` and ``vocab/part-R.*.npy`` with their CRC-32s, each
  shard's files hard-linked (or copied) by a task of its own: the sharded model format, which
  :class:`parvec.keyedvectors.KeyedVectors` opens lazily and ``Word2Vec.load`` reads whole.

Example:
    >>> files = ModelFiles.of(snap.files, corpus.vocab_dir, corpus.vocab_parts, corpus.n_words, 100)  # doctest: +SKIP
    >>> ShardedVectors(ray, files, work).save_word2vec_format("vectors.bin", binary=True)  # doctest: +SKIP
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parvec.distributed.snapshot_records import ShardFiles
from parvec.errors import ParvecError
from parvec.fileio import output_file, write_failure
from parvec.vocab_parts import VocabPart, WordParts

__all__ = ["PIECE_BYTES", "PIECE_ROWS", "ModelFiles", "ShardedVectors", "row_ranges", "save_model", "write_piece"]

PIECE_BYTES = 32 << 20  # about this many bytes of floats per row range
PIECE_ROWS = 1 << 18  # and at most this many rows: a text or binary piece makes a few Python objects per row
_COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": lambda b: gzip.compress(b, compresslevel=6), ".bz2": bz2.compress, ".xz": lzma.compress,
    ".lzma": lambda b: lzma.compress(b, format=lzma.FORMAT_ALONE)}


@dataclass(frozen=True)
class ModelFiles:
    """Where a sharded model is on disk: ``shards`` (each shard's files in a snapshot: :class:`parvec.distributed.
    snapshot_records.ShardFiles`), the vocabulary's partitions (``vocab_dir``, ``vocab_parts``: their records),
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

    @classmethod
    def of(cls, shard_files: Sequence[ShardFiles], vocab_dir: str | os.PathLike[str],
           vocab_parts: list[VocabPart], n_words: int, dim: int) -> ModelFiles:
        """From a snapshot's ``files`` (absolute directories) and the vocabulary's partitions."""
        return cls(tuple(f.with_directory(str(Path(f.directory).absolute())) for f in shard_files),
                   str(Path(vocab_dir).absolute()), tuple(vocab_parts), int(n_words), int(dim))

    @property
    def n_shards(self) -> int:
        return len(self.shards)

    def rows(self, lo: int, hi: int, key: str = "in") -> np.ndarray:
        """Rows ``lo .. hi-1`` of the input (``key="in"``) or output (``"out"``) vectors, assembled from every
        shard's columns (memory-mapped: only these rows are read)."""
        out = np.empty((hi - lo, self.dim), dtype=np.float32)
        for f in self.shards:
            assert f.columns is not None, "a snapshot's files name their columns"
            c_lo, c_hi = f.columns
            cols = np.load(Path(f.directory) / f"{key}.npy", mmap_mode="r")
            out[:, c_lo:c_hi] = cols[lo:hi]
        return out

    def verify(self, ray: Any, snapshot_id: Any, timeout_s: float = 300.0) -> None:
        """Check every shard's files against the CRC-32s its snapshot record holds, a Ray task per shard (each
        reads its own files): a file altered or damaged stops with the shard's error, as a restore would say it
        (a checkpoint whose epochs are all done is written out without a shard restoring it).

        Example:
            >>> files.verify(ray, 4)  # doctest: +SKIP
        """
        task = ray.remote(num_cpus=1, max_retries=1)(_verify_shard)
        errors = _await(ray, [task.remote(f, s, self.n_shards, snapshot_id) for s, f in enumerate(self.shards)],
                        "checking the shards' files", timeout_s)
        bad = next((e for e in errors if e is not None), None)
        if bad is not None:
            raise ParvecError(bad)

    def words(self) -> WordParts:
        """The vocabulary's partitions, memory-mapped."""
        return WordParts.open(self.vocab_dir, self.vocab_parts)


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


def _piece_bytes(files: ModelFiles, lo: int, hi: int, fmt: str) -> bytes:
    # What rows lo..hi-1 add to an output of format fmt.
    if fmt in ("npy", "npy-out"):
        return np.ascontiguousarray(files.rows(lo, hi, "out" if fmt == "npy-out" else "in"), "<f4").tobytes()
    parts = files.words()
    if fmt == "counts":
        return np.ascontiguousarray(parts.counts_between(lo, hi), "<i8").tobytes()
    words = parts.words_between(lo, hi)
    if fmt == "keys":
        return b"".join(w + b"\n" for w in words)
    if fmt == "vocab":
        counts = parts.counts_between(lo, hi).tolist()
        return b"".join(w + b" " + str(c).encode() + b"\n" for w, c in zip(words, counts, strict=True))
    rows = files.rows(lo, hi)
    if fmt == "binary":
        data = np.ascontiguousarray(rows, dtype="<f4")
        return b"".join(w + b" " + data[i].tobytes() + b"\n" for i, w in enumerate(words))
    line = "%.9g " * files.dim + "\n"  # parvec.formats.write_word2vec's text (word2vec.c's trailing space)
    values = rows.astype(np.float64).tolist()
    return b"".join(w + b" " + (line % tuple(v)).encode() for w, v in zip(words, values, strict=True))


def write_piece(files: ModelFiles, lo: int, hi: int, fmt: str, out: str, suffix: str = "") -> int:
    """Task: write rows (or words) ``lo .. hi-1`` of an output of format ``fmt`` (``text``, ``binary``, ``npy``,
    ``npy-out``, ``keys``, ``counts``, ``vocab``) into the piece file ``out``, compressed as ``suffix`` (a
    compressed output's extension: each piece a stream of its own) says; returns its bytes.

    Example:
        >>> write_piece(files, 0, 1000, "text", "work/pieces/0")  # doctest: +SKIP
        118234
    """
    data = _piece_bytes(files, lo, hi, fmt)
    compress = _COMPRESSORS.get(suffix)
    if compress is not None:
        data = compress(data)
    try:
        with output_file(out) as f:
            f.write(data)
    except OSError as exc:
        raise write_failure(out, exc) from None
    return len(data)


def _append(dst: Any, src: Path) -> None:
    # The piece's bytes after what dst holds, copied by the kernel where it can (never through this process).
    with open(src, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        done = 0
        try:
            while done < size:
                n = os.copy_file_range(f.fileno(), dst.fileno(), size - done)
                if n == 0:
                    break
                done += n
        except OSError:
            f.seek(done)
            dst.flush()
            shutil.copyfileobj(f, dst, 1 << 22)
            return
        if done < size:
            shutil.copyfileobj(f, dst, 1 << 22)


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
        # The pieces by Ray tasks into a work directory, then header + pieces into target, in order.
        ray = self.ray
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        ranges = row_ranges(self.files.n_words, self.files.dim, 2 * cpus)
        suffix = Path(target).suffix.lower() if suffix is None else suffix
        pieces = Path(tempfile.mkdtemp(prefix="pieces-", dir=self.work))
        try:
            task = ray.remote(num_cpus=1, max_retries=2)(write_piece)
            files_ref = ray.put(self.files)
            refs = [task.remote(files_ref, lo, hi, fmt, str(pieces / f"{k:06d}"), suffix)
                    for k, (lo, hi) in enumerate(ranges)]
            _await(ray, refs, f"writing {target}", self.timeout_s)
            compress = _COMPRESSORS.get(suffix)
            try:
                with output_file(target) as dst:
                    if header:
                        dst.write(compress(header) if compress is not None else header)
                        dst.flush()
                    for k in range(len(ranges)):
                        _append(dst, pieces / f"{k:06d}")
            except OSError as exc:
                raise write_failure(target, exc) from None
        finally:
            shutil.rmtree(pieces, ignore_errors=True)

    def save_word2vec_format(self, path: str | os.PathLike[str], binary: bool = False) -> None:
        """Write word2vec.c's text or binary layout (compressed by the name's extension), by row ranges."""
        self._write(Path(path), "binary" if binary else "text", f"{self.files.n_words} {self.files.dim}\n".encode())

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


def _place(src_dir: str, dst_dir: str, names: list[str]) -> int:
    # Task: hard-link (or copy) the named files of src_dir into dst_dir; returns the bytes placed.
    total = 0
    for name in names:
        src = Path(src_dir) / name
        _link_or_copy(src, Path(dst_dir) / name)
        total += src.stat().st_size
    return total


def save_model(ray: Any, files: ModelFiles, directory: str | os.PathLike[str],
               describe: Callable[[dict[str, Any]], Any], timeout_s: float = 300.0) -> None:
    """Write the sharded model format into ``directory`` (:mod:`parvec.model_io`, written into a temporary
    directory and renamed into place): each shard's files into ``shards/shard-S-of-N/`` and each vocabulary
    partition into ``vocab/`` by a Ray task of its own (hard links where the file system allows, else copies);
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
        task = ray.remote(num_cpus=0, max_retries=2)(_place)
        refs = [task.remote(f.directory, str(tmp / shard_files[s].directory), ["in.npy", "out.npy"])
                for s, f in enumerate(files.shards)]
        refs += [task.remote(files.vocab_dir, str(tmp / "vocab"),
                             [p.name for p in r.paths(files.vocab_dir).values()])
                 for r in files.vocab_parts]
        _await(ray, refs, f"writing the model {directory}", timeout_s)

    model_io.save(directory, describe(record), fill=fill)


def _await(ray: Any, refs: list[Any], what: str, timeout_s: float) -> list[Any]:
    try:
        return list(ray.get(refs, timeout=timeout_s * max(1, len(refs))))
    except ray.exceptions.GetTimeoutError:
        raise ParvecError(f"{what}: not done within {timeout_s:g} s per piece (Cluster.timeout_s)") from None
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", exc)
        raise (cause if isinstance(cause, ParvecError) else ParvecError(f"{what} failed: {cause}")) from None
