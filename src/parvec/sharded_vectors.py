"""A sharded model's vectors, queried where they lie: memory-mapped column blocks, no gathered copy.

A model saved by ``parvec train --mode sharded --save-model DIR`` (the sharded model format,
:mod:`parvec.model_io`) is each shard's columns of the input vectors (``shards/shard-S-of-N/in.npy``) and the
vocabulary's partitions (:mod:`parvec.vocab_parts`).  :class:`ShardedKeyedVectors` opens it lazily
(:meth:`parvec.keyedvectors.KeyedVectors.load_sharded`, :func:`parvec.keyedvectors.load_vectors`, every ``parvec``
vector command given the directory) and offers :class:`parvec.keyedvectors.KeyedVectors`' surface: a word's vector
is its row read from every shard's columns; the queries that scan the vocabulary (``most_similar``,
``most_similar_cosmul``, ``distances``) assemble one block of rows at a time (about 16 MiB), scale it to unit
length and keep the best ``topn`` of each block: memory of one block, whatever the vocabulary; the evaluations
(``evaluate_word_pairs``, ``evaluate_word_analogies``) read the rows they use (the pairs' words, the
``restrict_vocab`` most frequent words).  The arithmetic is :class:`parvec.keyedvectors.KeyedVectors`' on the
gathered vectors, row for row (blocks start at multiples of 16 rows, as the matrix-vector kernels group them), so
the answers and scores are the gathered vectors'.  ``vectors`` and ``get_normed_vectors()`` **gather** the whole
matrix into this process (once, then kept), for code that wants the matrix.

Opening checks the files: each shard's ``in.npy`` is there with the shape ``model.json`` records and the size that
shape needs (a truncated file is named, never memory-mapped), and each file's CRC-32 when the files the queries
read add up to at most :data:`CHECK_AT_OPEN_BYTES` (``check=True`` always, ``check=False`` never; ``parvec verify
DIR`` checks every file of any size).  A row found holding NaN or an infinity in a query is an error naming the
model as damaged, never a score.

:func:`partial_scores` is one shard's part of a block (its columns' dot products with the query's and their
squared norms), which a cluster query (:mod:`parvec.distributed.sharded_query`) runs as Ray tasks on the shards'
nodes.

Example:
    >>> kv = KeyedVectors.load_sharded("model")  # doctest: +SKIP
    >>> kv.most_similar("king", topn=3)  # doctest: +SKIP
    [('queen', 0.71), ('prince', 0.66), ('monarch', 0.64)]
"""

from __future__ import annotations

import json
import os
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np

from parvec.errors import CheckpointError, ParvecError
from parvec.model_io import ShardFile
from parvec.similarity import (
    cosadd_query,
    cosmul_query,
    cosmul_scores,
    indexed_answer,
    unit_rows,
    unit_vector,
)
from parvec.vocab_parts import VocabPart, WordParts

__all__ = ["BLOCK_BYTES", "BLOCK_ROWS", "CHECK_AT_OPEN_BYTES", "ROW_ALIGN", "ShardColumns", "ShardedKeyedVectors",
           "merge_top", "partial_scores", "top_of_block", "top_of_scores"]

BLOCK_ROWS = 1 << 16  # rows scored at a time (at most)
BLOCK_BYTES = 16 << 20  # bytes of float32 rows a local query assembles at a time
ROW_ALIGN = 16  # a local query's blocks start at multiples of this: BLAS's kernels take rows in groups
CHECK_AT_OPEN_BYTES = 256 << 20  # files the queries read up to this size are CRC-checked when opened


def partial_scores(columns: np.ndarray, query: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """One shard's part of rows ``lo .. hi-1``: their dot products with the query's same columns and their squared
    norms over those columns (float64), to be summed over the shards.

    Example:
        >>> partial_scores(np.array([[3.0, 0.0], [0.0, 2.0]], np.float32), np.array([1.0, 1.0]), 0, 2)
        (array([3., 2.]), array([9., 4.]))
    """
    block = np.asarray(columns[lo:hi], dtype=np.float64)
    return block @ query, np.einsum("ij,ij->i", block, block)


def top_of_scores(scores: np.ndarray, lo: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of a block's ``scores`` (rows ``lo ..``): ``(ids, scores)``.

    Example:
        >>> top_of_scores(np.array([0.1, 0.9, 0.5]), 10, 2)
        (array([11, 12]), array([0.9, 0.5]))
    """
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, np.int64), scores[:0]
    idx = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    return idx + lo, scores[idx]


def top_of_block(dots: np.ndarray, sq_norms: np.ndarray, lo: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows of a block by cosine (``dots / norm``; a zero row scores 0): ``(ids, cosines)``.

    Example:
        >>> top_of_block(np.array([1.0, 3.0, 2.0]), np.array([1.0, 9.0, 16.0]), 10, 2)
        (array([10, 11]), array([1., 1.]))
    """
    norms = np.sqrt(sq_norms)
    cos = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return top_of_scores(cos, lo, k)


def merge_top(found: list[tuple[np.ndarray, np.ndarray]], topn: int, exclude: set[int]) -> list[tuple[int, float]]:
    """The best ``topn`` of every block's candidates, by cosine, ties by id (as
    :class:`parvec.keyedvectors.KeyedVectors` orders them), ``exclude`` left out.

    Example:
        >>> merge_top([(np.array([4, 7]), np.array([0.5, 0.9]))], 1, set())
        [(7, 0.9)]
    """
    ids = np.concatenate([f[0] for f in found]) if found else np.zeros(0, np.int64)
    cos = np.concatenate([f[1] for f in found]) if found else np.zeros(0)
    order = np.lexsort((ids, -cos))
    out = [(int(ids[i]), float(cos[i])) for i in order.tolist() if int(ids[i]) not in exclude]
    return out[:topn]


@dataclass(frozen=True)
class ShardColumns:
    """One shard's columns ``lo .. hi-1`` of the input vectors: its ``in.npy`` (``file``) memory-mapped
    (``array``, one row per word).

    Example:
        >>> ShardColumns(0, 2, Path("in.npy"), np.zeros((3, 2), np.float32)).width
        2
    """

    lo: int
    hi: int
    file: Path
    array: np.ndarray

    @property
    def width(self) -> int:
        return self.hi - self.lo


def _damaged_words(model: Path, exc: Exception) -> CheckpointError:
    return CheckpointError(f"{model}: the model is damaged: its vocabulary's partitions do not read ({exc}); "
                           f"`parvec verify {model}` checks every file against model.json's CRC-32s")


class _Words(Sequence[str]):
    """``index_to_key`` of a sharded model: words read from the partitions when asked (the first ``n``)."""

    def __init__(self, parts: WordParts, n: int, model: Path) -> None:
        self.parts, self.n, self.model = parts, n, model

    def between(self, lo: int, hi: int) -> list[str]:
        """The words of ids ``lo .. hi-1``."""
        if hi <= lo:
            return []
        try:
            return [w.decode("utf-8") for w in self.parts.words_between(lo, hi)]
        except (UnicodeDecodeError, ValueError, IndexError) as exc:
            raise _damaged_words(self.model, exc) from None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            lo, hi, step = i.indices(len(self))
            return self.between(lo, hi)[::step] if step > 0 else self.between(hi + 1, lo + 1)[::-1][::-step]
        i = int(i) + (len(self) if int(i) < 0 else 0)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.between(i, i + 1)[0]

    def __iter__(self) -> Iterator[str]:
        for lo in range(0, len(self), BLOCK_ROWS):
            yield from self.between(lo, min(len(self), lo + BLOCK_ROWS))


class _KeyIndex(Mapping[str, int]):
    """``key_to_index`` of a sharded model: a word's id looked up in the partitions by its hash when asked."""

    def __init__(self, kv: ShardedKeyedVectors) -> None:
        self.kv = kv

    def __getitem__(self, key: str) -> int:
        found = self.kv.parts.index(key) if isinstance(key, str) else None
        if found is None or found >= len(self.kv):
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __len__(self) -> int:
        return len(self.kv)

    def __iter__(self) -> Iterator[str]:
        return iter(self.kv.index_to_key)


def _open_columns(path: Path, f: ShardFile, n_words: int) -> ShardColumns:
    # One shard's in.npy: there, of the recorded shape, as long as that shape needs; then memory-mapped.
    from parvec.model_check import check_npy

    lo, hi = f.columns
    file = path / f.directory / "in.npy"
    check_npy(file, (n_words, hi - lo), "float32")
    try:
        array = np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{file}: cannot be memory-mapped ({getattr(exc, 'strerror', None) or exc})") from None
    return ShardColumns(lo, hi, file, array)


def _check_crcs(columns: list[ShardColumns], files: list[ShardFile]) -> None:
    # Each shard's in.npy against the CRC-32 model.json records for it.
    from parvec.model_check import npy_crc32

    for c, f in zip(columns, files, strict=True):
        want = f.crc32.get("in")
        if want is not None and npy_crc32(c.file) != want:
            raise CheckpointError(f"{c.file}: its data does not match the CRC-32 model.json records (the file was "
                                  "altered or damaged)")


def _bytes_to_check(path: Path, sharded: Mapping[str, Any]) -> int:
    from parvec.vocab_parts import part_paths

    total = 0
    files = [path / ShardFile.from_json(f).directory / "in.npy" for f in sharded["files"]]
    vocab = sharded["vocab"]
    for rec in vocab["parts"]:
        files += part_paths(path / str(vocab["directory"]), int(rec["part"])).values()
    for file in files:
        try:
            total += file.stat().st_size
        except OSError:
            pass  # missing: named when opened
    return total


class ShardedKeyedVectors:
    """A sharded model's input vectors, memory-mapped column block by column block, with
    :class:`parvec.keyedvectors.KeyedVectors`' surface (module docstring): ``most_similar``,
    ``most_similar_cosmul``, ``similar_by_key``/``similar_by_word``/``similar_by_vector``, ``similarity``,
    ``n_similarity``, ``distance``, ``distances``, ``doesnt_match``, ``evaluate_word_pairs``,
    ``evaluate_word_analogies``, ``save_word2vec_format``, ``get_vector``, ``get_index``, ``get_vecattr``,
    ``index_to_key``, ``key_to_index``, ``in``, ``len``; ``vectors`` and ``get_normed_vectors()`` gather the
    matrix.  ``get_rows`` assembles the rows asked for, from every shard's columns.

    Example:
        >>> kv = ShardedKeyedVectors.open("model")  # doctest: +SKIP
        >>> len(kv), kv.vector_size  # doctest: +SKIP
        (32000000, 8)
    """

    def __init__(self, columns: list[ShardColumns], parts: WordParts, dim: int, path: str | os.PathLike[str],
                 limit: int | None = None) -> None:
        self.columns = columns
        self.parts = parts
        self.dim = dim
        self.path = Path(path)
        self.n = parts.n_words if limit is None else max(0, min(int(limit), parts.n_words))
        self.index_to_key: Sequence[str] = _Words(parts, self.n, self.path)
        self.key_to_index: Mapping[str, int] = _KeyIndex(self)
        self._gathered: np.ndarray | None = None
        self._normed: np.ndarray | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str], limit: int | None = None,
             check: bool | None = None) -> ShardedKeyedVectors:
        """Open the sharded model directory ``path`` (module docstring): its files checked (shapes and sizes; the
        CRC-32s with ``check=True``, or when they add up to at most :data:`CHECK_AT_OPEN_BYTES`, the default) and
        memory-mapped.  ``limit`` keeps the ``limit`` most frequent words.  A damaged file raises
        :class:`parvec.errors.CheckpointError` naming it.

        Example:
            >>> ShardedKeyedVectors.open("not-a-model")  # doctest: +SKIP
            Traceback (most recent call last):
            parvec.errors.ParvecError: not-a-model: not a sharded model (no model.json naming shards and ...)
        """
        path = Path(path)
        try:
            meta = json.loads((path / "model.json").read_text(encoding="utf-8"))
            sharded = meta["sharded"]
            vocab = sharded["vocab"]
            dim = int(meta["config"]["dim"])
            files = list(sharded["files"])
            records = [VocabPart.from_json(p) for p in vocab["parts"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ParvecError(f"{path}: not a sharded model (no model.json naming shards and vocabulary partitions: "
                              f"{exc})") from None
        try:
            crc = check if check is not None else _bytes_to_check(path, sharded) <= CHECK_AT_OPEN_BYTES
            parts = WordParts.open(path / str(vocab["directory"]), records, check=crc)
            shards = [ShardFile.from_json(f) for f in files]
            columns = [_open_columns(path, f, parts.n_words) for f in shards]
            if crc:
                _check_crcs(columns, shards)
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{path / 'model.json'}: incomplete or damaged description of the shards "
                                  f"({type(exc).__name__}: {exc})") from None
        if [c.lo for c in columns] != [0] + [c.hi for c in columns[:-1]] or not columns or columns[-1].hi != dim:
            raise CheckpointError(f"{path / 'model.json'}: the shards' columns do not cover 0..{dim - 1} in order")
        return cls(columns, parts, dim, path, limit)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"ShardedKeyedVectors({self.path}: {len(self)} keys, vector_size={self.dim}, {len(self.columns)} shards)"

    @property
    def vector_size(self) -> int:
        """The dimension of the vectors."""
        return self.dim

    # ------------------------------------------------------------------ words
    def get_index(self, key: Any, default: int | None = None) -> int:
        """The id of ``key`` (a word, in any Unicode normal form, or an id in range); ``default`` (else a KeyError)
        when it is not there.

        Example:
            >>> kv.get_index("king")  # doctest: +SKIP
            1234
        """
        if isinstance(key, str):
            found = self.parts.index(key)
            if found is not None and found < self.n:
                return found
            for form in dict.fromkeys((unicodedata.normalize("NFC", key), unicodedata.normalize("NFD", key))):
                found = self.parts.index(form) if form != key else None
                if found is not None and found < self.n:
                    return found
        elif isinstance(key, Integral) and not isinstance(key, bool) and 0 <= int(key) < self.n:
            return int(key)
        if default is not None:
            return default
        raise KeyError(f"Key {key!r} not present in vocabulary")

    def has_index_for(self, key: object) -> bool:
        """Whether ``key`` is a word of the vocabulary (or an id in range).

        Example:
            >>> kv.has_index_for("king"), kv.has_index_for("no-such-word")  # doctest: +SKIP
            (True, False)
        """
        return isinstance(key, str | Integral) and self.get_index(key, -1) >= 0

    def __contains__(self, key: object) -> bool:
        return self.has_index_for(key)

    def get_vecattr(self, key: Any, attr: str) -> int:
        """A per-key attribute, as gensim's: ``"count"`` is the word's frequency in the training corpus.

        Example:
            >>> kv.get_vecattr("the", "count")  # doctest: +SKIP
            1061396
        """
        i = self.get_index(key)
        if attr != "count":
            raise KeyError(f"no attribute {attr!r}: parvec's KeyedVectors keep 'count' only")
        return int(self.parts.counts_between(i, i + 1)[0])

    # ------------------------------------------------------------------ rows
    def _damaged(self, c: ShardColumns, rows: np.ndarray, block: np.ndarray) -> CheckpointError:
        bad = int(rows[int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])])
        try:
            word = f"the vector of {self.index_to_key[bad]!r} (row {bad})"
        except ParvecError:
            word = f"row {bad}"
        return CheckpointError(f"{self.path}: the model is damaged: {word} holds NaN or infinite values in {c.file} "
                               f"(columns {c.lo}..{c.hi - 1}); `parvec verify {self.path}` checks every file against "
                               "model.json's CRC-32s")

    def get_rows(self, rows: slice | Sequence[int] | np.ndarray, norm: bool = False) -> np.ndarray:
        """The vectors of ``rows`` (a slice of ids, or ids) as a float32 ``[len, dim]`` array assembled from every
        shard's columns (unit length if ``norm``, as ``get_normed_vectors()`` holds them); a row holding NaN or an
        infinity raises :class:`parvec.errors.CheckpointError` naming the model as damaged.

        Example:
            >>> kv.get_rows(slice(0, 3)).shape  # doctest: +SKIP
            (3, 300)
        """
        if isinstance(rows, slice):
            lo, hi, step = rows.indices(self.n)
            ids = np.arange(lo, hi, step)
            select: Any = slice(lo, hi, step) if step > 0 else ids
        else:
            ids = np.asarray(rows, dtype=np.int64).reshape(-1)
            if len(ids) and (ids.min() < 0 or ids.max() >= self.n):
                raise IndexError(f"row ids outside 0..{self.n - 1}")
            select = ids
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        for c in self.columns:
            block = c.array[select]
            if not np.isfinite(block).all():
                raise self._damaged(c, ids, block)
            out[:, c.lo:c.hi] = block
        return unit_rows(out) if norm else out

    def keys_of(self, ids: Sequence[int] | np.ndarray) -> list[str]:
        """The words of row ids ``ids`` (from the partitions, without reading the ids between them).

        Example:
            >>> kv.keys_of([3, 0])  # doctest: +SKIP
            ['a', 'the']
        """
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) and (ids.min() < 0 or ids.max() >= self.n):
            raise IndexError(f"row ids outside 0..{self.n - 1}")
        try:
            return [w.decode("utf-8") for w in self.parts.words_of(ids)]
        except (UnicodeDecodeError, ValueError, IndexError) as exc:
            raise _damaged_words(self.path, exc) from None

    def get_vector(self, key: Any, norm: bool = False) -> np.ndarray:
        """The vector of ``key``, assembled from its row in every shard's columns (unit length if ``norm``).

        Example:
            >>> kv.get_vector("king").shape  # doctest: +SKIP
            (300,)
        """
        row: np.ndarray = self.get_rows([self.get_index(key)], norm=norm)[0]
        return row

    def __getitem__(self, key_or_keys: Any) -> np.ndarray:
        """One key -> its vector; a list of keys -> a ``[len, dim]`` array."""
        if isinstance(key_or_keys, str | Integral):
            return self.get_vector(key_or_keys)
        return self.get_rows([self.get_index(k) for k in key_or_keys])

    def _block_rows(self) -> int:
        rows = min(BLOCK_ROWS, max(ROW_ALIGN, BLOCK_BYTES // (4 * max(1, self.dim))))
        return max(ROW_ALIGN, rows - rows % ROW_ALIGN)

    def normed_blocks(self, rows: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """The first ``rows`` rows (all by default) at unit length, a block at a time: ``(first id, block)``.

        Example:
            >>> sum(len(b) for _, b in kv.normed_blocks()) == len(kv)  # doctest: +SKIP
            True
        """
        rows = self.n if rows is None else max(0, min(int(rows), self.n))
        step = self._block_rows()
        for lo in range(0, rows, step):
            yield lo, self.get_rows(slice(lo, min(rows, lo + step)), norm=True)

    @property
    def vectors(self) -> np.ndarray:
        """The whole ``[n, dim]`` matrix, **gathered** from every shard's columns into this process the first time
        it is asked for (then kept): memory of the whole model.  The queries never need it.

        Example:
            >>> kv.vectors.shape  # doctest: +SKIP
            (71290, 300)
        """
        if self._gathered is None:
            self._gathered = self.get_rows(slice(0, self.n))
        return self._gathered

    def get_normed_vectors(self) -> np.ndarray:
        """The whole matrix at unit length, **gathered** (:attr:`vectors`) and kept, as
        :meth:`parvec.keyedvectors.KeyedVectors.get_normed_vectors` gives it.

        Example:
            >>> kv.get_normed_vectors().shape  # doctest: +SKIP
            (71290, 300)
        """
        if self._normed is None:
            self._normed = unit_rows(self.vectors)
        return self._normed

    # ------------------------------------------------------------------ queries
    def _searched(self, restrict_vocab: int | None) -> int:
        return self.n if restrict_vocab is None else max(0, min(int(restrict_vocab), self.n))

    def _ranked(self, scores: Iterator[tuple[int, np.ndarray]], topn: int | None,
                exclude: set[int]) -> list[tuple[str, float]] | np.ndarray:
        # Every score (topn None or 0, as gensim), or the best topn words of all blocks, exclude left out.
        if not topn:
            return np.concatenate([s for _, s in scores]) if self.n else np.zeros(0, np.float32)
        found = [top_of_scores(s, lo, int(topn) + len(exclude)) for lo, s in scores]
        return [(self.index_to_key[i], cos) for i, cos in merge_top(found, int(topn), exclude)]

    def query(self, positive: Any = None, negative: Any = None) -> tuple[np.ndarray, set[int]]:
        """The unit query vector of ``positive`` minus ``negative`` (3CosAdd, float32, as
        :meth:`parvec.keyedvectors.KeyedVectors.most_similar` forms it) and the ids of the words in it.

        Example:
            >>> q, exclude = kv.query(["king", "woman"], ["man"])  # doctest: +SKIP
        """
        return cosadd_query(self, positive, negative, np.float32)

    def most_similar(self, positive: Any = None, negative: Any = None, topn: int | None = 10,
                     restrict_vocab: int | None = None, indexer: Any = None) -> list[tuple[str, float]] | np.ndarray:
        """The ``topn`` words closest to the mean of ``positive`` minus ``negative`` (3CosAdd), as
        :meth:`parvec.keyedvectors.KeyedVectors.most_similar`: one block of rows at a time, the query's words left
        out; ``topn=None`` gives every (searched) row's cosine; ``indexer`` (:func:`parvec.ann.build_index`'s)
        answers from an approximate index instead.

        Example:
            >>> kv.most_similar(positive=["king", "woman"], negative=["man"], topn=1)  # doctest: +SKIP
            [('queen', 0.71)]
        """
        if isinstance(topn, Integral) and topn < 1:
            return []
        mean, exclude = self.query(positive, negative)
        if indexer is not None and topn:
            return indexed_answer(indexer, self.keys_of, mean, int(topn), exclude)
        blocks = self.normed_blocks(self._searched(restrict_vocab))
        return self._ranked(((lo, normed @ mean) for lo, normed in blocks), topn, exclude)

    def most_similar_batch(self, words: Sequence[Any], topn: int = 10, restrict_vocab: int | None = None,
                           candidates: Sequence[Any] | None = None) -> list[list[tuple[str, float]]]:
        """``[most_similar(w, topn=topn) for w in words]`` in one pass over the rows, as
        :meth:`parvec.keyedvectors.KeyedVectors.most_similar_batch` (blocks of rows assembled from the shards'
        columns, each read once for the whole batch).

        Example:
            >>> kv.most_similar_batch(["king", "paris"], topn=1)  # doctest: +SKIP
            [[('queen', 0.71)], [('france', 0.68)]]
        """
        from parvec.neighbours import most_similar_batch

        return most_similar_batch(self, words, topn, restrict_vocab, candidates)

    def most_similar_cosmul(self, positive: Any = None, negative: Any = None, topn: int | None = 10,
                            restrict_vocab: int | None = None) -> list[tuple[str, float]] | np.ndarray:
        """Levy & Goldberg's 3CosMul, as :meth:`parvec.keyedvectors.KeyedVectors.most_similar_cosmul`, a block of
        rows at a time.

        Example:
            >>> kv.most_similar_cosmul(positive=["king", "woman"], negative=["man"], topn=1)  # doctest: +SKIP
            [('queen', 0.93)]
        """
        if isinstance(topn, Integral) and topn < 1:
            return []
        pos_v, neg_v, exclude = cosmul_query(self, positive, negative, np.float32)
        blocks = self.normed_blocks(self._searched(restrict_vocab))
        return self._ranked(((lo, cosmul_scores(normed, pos_v, neg_v)) for lo, normed in blocks), topn, exclude)

    def similar_by_vector(self, vector: np.ndarray, topn: int | None = 10,
                          restrict_vocab: int | None = None) -> list[tuple[str, float]] | np.ndarray:
        """The ``topn`` words most similar to ``vector`` (nothing is left out).

        Example:
            >>> kv.similar_by_vector(kv["king"], topn=1)  # doctest: +SKIP
            [('king', 1.0)]
        """
        return self.most_similar(positive=[vector], topn=topn, restrict_vocab=restrict_vocab)

    def similar_by_key(self, key: Any, topn: int | None = 10,
                       restrict_vocab: int | None = None) -> list[tuple[str, float]] | np.ndarray:
        """The ``topn`` words most similar to ``key`` (``key`` itself left out).

        Example:
            >>> kv.similar_by_key("king", topn=1)  # doctest: +SKIP
            [('queen', 0.71)]
        """
        return self.most_similar(positive=[key], topn=topn, restrict_vocab=restrict_vocab)

    similar_by_word = similar_by_key

    def similarity(self, w1: Any, w2: Any) -> float:
        """Cosine similarity of two words.

        Example:
            >>> round(kv.similarity("king", "queen"), 2)  # doctest: +SKIP
            0.71
        """
        return float(np.dot(self.get_vector(w1, norm=True), self.get_vector(w2, norm=True)))

    def n_similarity(self, ws1: Sequence[Any], ws2: Sequence[Any]) -> float:
        """Cosine similarity of the means of two sets of words.

        Example:
            >>> round(kv.n_similarity(["king"], ["queen"]), 2)  # doctest: +SKIP
            0.71
        """
        if not len(ws1) or not len(ws2):
            raise ZeroDivisionError("At least one of the passed lists is empty.")
        m1, m2 = np.mean(self[list(ws1)], axis=0), np.mean(self[list(ws2)], axis=0)
        return float(np.dot(unit_vector(m1), unit_vector(m2)))

    def distance(self, w1: Any, w2: Any) -> float:
        """Cosine distance, ``1 - similarity(w1, w2)``.

        Example:
            >>> round(kv.distance("king", "queen"), 2)  # doctest: +SKIP
            0.29
        """
        return 1.0 - self.similarity(w1, w2)

    def distances(self, word_or_vector: Any, other_words: Sequence[Any] = ()) -> np.ndarray:
        """Cosine distances from a word or vector to ``other_words`` (every word, a block at a time, if empty).

        Example:
            >>> kv.distances("king", ["queen", "apple"]).round(2)  # doctest: +SKIP
            array([0.29, 0.93], dtype=float32)
        """
        if isinstance(word_or_vector, np.ndarray):
            v = unit_vector(word_or_vector.astype(np.float64)).astype(np.float32)
        else:
            v = self.get_vector(word_or_vector, norm=True)
        if len(other_words):
            return 1.0 - self.get_rows([self.get_index(w) for w in other_words], norm=True) @ v
        parts = [normed @ v for _, normed in self.normed_blocks()]
        return 1.0 - (np.concatenate(parts) if parts else np.zeros(0, np.float32))

    def doesnt_match(self, words: Sequence[str]) -> str:
        """The word furthest from the mean of ``words`` (unknown words are ignored).

        Example:
            >>> kv.doesnt_match(["king", "queen", "apple"])  # doctest: +SKIP
            'apple'
        """
        used = [w for w in words if w in self]
        if not used:
            raise ValueError("cannot select a word from an empty list")
        vecs = self.get_rows([self.get_index(w) for w in used], norm=True)
        return used[int(np.argmin(vecs @ unit_vector(vecs.mean(axis=0))))]

    # ------------------------------------------------------------------ evaluation and writing
    def evaluate_word_pairs(self, pairs: str | os.PathLike[str], delimiter: str | None = "\t",
                            restrict_vocab: int = 300000, case_insensitive: bool = True,
                            dummy4unknown: bool = False) -> tuple[tuple[float, float], tuple[float, float], float]:
        """Correlate cosine similarities with human scores, as
        :meth:`parvec.keyedvectors.KeyedVectors.evaluate_word_pairs` (reading the rows of the pairs' words only).

        Example:
            >>> kv.evaluate_word_pairs("wordsim353.tsv")  # doctest: +SKIP
            ((0.61, 1e-35), (0.64, 2e-41), 0.57)
        """
        from parvec.evaluation import word_pair_scores

        result = word_pair_scores(self, pairs, delimiter, restrict_vocab, case_insensitive, dummy4unknown=dummy4unknown)
        return result.pearson, result.spearman, result.oov_percent

    def evaluate_word_analogies(self, analogies: str | os.PathLike[str], restrict_vocab: int = 300000,
                                case_insensitive: bool = True, dummy4unknown: bool = False,
                                method: str = "3cosadd") -> tuple[float, list[dict[str, Any]]]:
        """Accuracy on an analogy file, as :meth:`parvec.keyedvectors.KeyedVectors.evaluate_word_analogies`
        (reading the ``restrict_vocab`` most frequent rows only).

        Example:
            >>> score, sections = kv.evaluate_word_analogies("questions-words.txt")  # doctest: +SKIP
        """
        from parvec.evaluation import word_analogies

        return word_analogies(self, analogies, restrict_vocab, case_insensitive, dummy4unknown, method)

    def save_word2vec_format(self, path: str | os.PathLike[str], binary: bool = False,
                             write_header: bool = True) -> None:
        """Write word2vec.c's text (or ``binary``) format, compressed if the name ends .gz/.bz2/.xz, a block of rows
        at a time (:func:`parvec.formats.write_word2vec_blocks`): the same bytes as the gathered vectors give.

        Example:
            >>> kv.save_word2vec_format("vectors.bin", binary=True)  # doctest: +SKIP
        """
        from parvec.formats import word2vec_block_rows, write_word2vec_blocks

        step = word2vec_block_rows(self.dim)
        words = self.index_to_key
        blocks = ((words[lo:min(self.n, lo + step)], self.get_rows(slice(lo, min(self.n, lo + step))))
                  for lo in range(0, self.n, step))
        write_word2vec_blocks(path, self.n, self.dim, blocks, binary=binary, write_header=write_header)
