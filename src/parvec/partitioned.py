"""Partitioned vector outputs: a directory (local, or a URL prefix) of word2vec binary part files and a manifest.

``parvec train ... -o s3://bucket/out/`` (a trailing slash) writes ``part-00000.bin``, ``part-00001.bin``, ... --
each a whole word2vec binary file (its own ``count dimension`` header), the rows in the order of the one-file
output -- and ``manifest.json``, written last, naming the parts, their word counts and sizes::

    {"format": "parvec-partitioned-word2vec", "version": 1, "count": 71290, "dim": 100,
     "parts": [{"name": "part-00000.bin", "count": 35645, "bytes": 14551361}, ...]}

:meth:`parvec.KeyedVectors.load_word2vec_format` and ``parvec similar`` read such a directory (or its URL): the
parts concatenated, each checked against the manifest.  Any part file is also readable alone by any word2vec
reader (gensim's included).

Example:
    >>> import tempfile, numpy as np
    >>> d = Path(tempfile.mkdtemp())
    >>> formats.write_word2vec(d / "v.bin", np.eye(3, dtype=np.float32), ["a", "b", "c"], binary=True)
    >>> write_partitioned(d / "v.bin", str(d / "parts"), rows_per_part=2)
    2
    >>> vectors, words = read_partitioned(d / "parts")
    >>> words, vectors.shape
    (['a', 'b', 'c'], (3, 3))
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parvec import formats, storage
from parvec.errors import ParvecError

__all__ = ["MANIFEST", "Manifest", "PartEntry", "is_partitioned", "part_name", "read_partitioned", "read_url_vectors",
           "part_rows", "write_manifest", "write_partitioned"]

MANIFEST = "manifest.json"
FORMAT = "parvec-partitioned-word2vec"
_BYTES_PER_PART = 256 << 20  # parts of ~256 MiB unless rows_per_part is given


@dataclass(frozen=True)
class PartEntry:
    """One part file of a partitioned output: its name, how many vectors it holds, its size in bytes."""

    name: str
    count: int
    bytes: int


@dataclass(frozen=True)
class Manifest:
    """A partitioned output's ``manifest.json``: the vectors' count and dimension and the parts in order.

    Example:
        >>> Manifest(2, 3, (PartEntry("part-00000.bin", 2, 40),)).to_json()["count"]
        2
    """

    count: int
    dim: int
    parts: tuple[PartEntry, ...]

    def to_json(self) -> dict[str, Any]:
        """The manifest as JSON values."""
        return {"format": FORMAT, "version": 1, "count": self.count, "dim": self.dim,
                "parts": [{"name": p.name, "count": p.count, "bytes": p.bytes} for p in self.parts]}

    @classmethod
    def parse(cls, text: str, where: str) -> Manifest:
        """Read a manifest's JSON text; :class:`ParvecError` naming ``where`` when it is not one."""
        try:
            raw = json.loads(text)
            if raw.get("format") != FORMAT:
                raise ValueError(f"format is {raw.get('format')!r}, not {FORMAT!r}")
            parts = tuple(PartEntry(str(p["name"]), int(p["count"]), int(p["bytes"])) for p in raw["parts"])
            return cls(int(raw["count"]), int(raw["dim"]), parts)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ParvecError(f"{where}: not a partitioned-vectors manifest ({exc})") from None


def is_partitioned(path: Any) -> bool:
    """Whether ``path`` is a partitioned output: a local directory holding ``manifest.json``, or a URL ending in
    ``/`` (or naming the manifest's prefix) under which ``manifest.json`` exists.

    Example:
        >>> is_partitioned("vectors.bin")
        False
    """
    if storage.is_url(path):
        return storage.url_exists(storage.join_url(str(path), MANIFEST))
    p = Path(path)
    return p.is_dir() and (p / MANIFEST).is_file()


def part_name(i: int) -> str:
    """The file name of part ``i``.

    Example:
        >>> part_name(3)
        'part-00003.bin'
    """
    return f"part-{i:05d}.bin"


def part_rows(dim: int) -> int:
    """The vectors of ``dim`` floats a part holds by default (about 256 MiB of binary rows).

    Example:
        >>> part_rows(100)
        645277
    """
    return max(1, _BYTES_PER_PART // (4 * dim + 16))


def write_manifest(target: str, manifest: Manifest) -> None:
    """Write ``manifest.json`` at ``target`` (a URL prefix, or a local directory that exists): last, once every part
    is in place, so a reader that finds it finds the parts.

    Example:
        >>> import tempfile
        >>> write_manifest(tempfile.mkdtemp(), Manifest(0, 2, ()))
    """
    text = json.dumps(manifest.to_json(), indent=1) + "\n"
    if storage.is_url(target):
        with storage.write_output(storage.join_url(target, MANIFEST)) as local:
            local.write_text(text, encoding="utf-8")
        return
    tmp = Path(target) / (MANIFEST + ".partial")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, Path(target) / MANIFEST)


def write_partitioned(vectors_file: str | os.PathLike[str], target: str, rows_per_part: int | None = None) -> int:
    """Cut a word2vec binary file into part files and a manifest at ``target`` (a local directory, created, or a
    URL prefix); returns the number of parts.  The manifest is written last.

    Example:
        >>> write_partitioned("v.bin", "s3://bucket/out/")  # doctest: +SKIP
        4
    """
    vectors, words = formats.read_word2vec(vectors_file, binary=True)
    n, dim = vectors.shape
    rows = rows_per_part or part_rows(dim)
    tmp = Path(tempfile.mkdtemp(prefix="parvec-parts-"))
    try:
        entries = []
        for i, lo in enumerate(range(0, max(n, 1), rows)):
            hi = min(n, lo + rows)
            name = part_name(i)
            formats.write_word2vec(tmp / name, vectors[lo:hi], words[lo:hi], binary=True)
            entries.append(PartEntry(name, hi - lo, (tmp / name).stat().st_size))
        manifest = Manifest(n, dim, tuple(entries))
        (tmp / MANIFEST).write_text(json.dumps(manifest.to_json(), indent=1) + "\n", encoding="utf-8")
        if storage.is_url(target):
            storage.upload(tmp, target)  # model files first, the manifest (.json) last
        else:
            out = Path(target)
            out.mkdir(parents=True, exist_ok=True)
            for e in entries:
                shutil.move(str(tmp / e.name), out / e.name)
            shutil.move(str(tmp / MANIFEST), out / MANIFEST)
        return len(entries)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _read_local(directory: Path, where: str, limit: int | None, unicode_errors: str,
                datatype: Any) -> tuple[np.ndarray, list[str]]:
    manifest = Manifest.parse((directory / MANIFEST).read_text(encoding="utf-8"), f"{where}/{MANIFEST}")
    want = manifest.count if limit is None else min(limit, manifest.count)
    blocks: list[np.ndarray] = []
    words: list[str] = []
    for part in manifest.parts:
        if len(words) >= want:
            break
        path = directory / part.name
        if not path.is_file():
            raise ParvecError(f"{where}: the part {part.name} named by {MANIFEST} is missing")
        if path.stat().st_size != part.bytes:
            raise ParvecError(f"{where}/{part.name}: {path.stat().st_size} bytes, the manifest says {part.bytes} "
                              "(a damaged or partly written part)")
        vectors, part_words = formats.read_word2vec(path, binary=True, limit=want - len(words),
                                                    unicode_errors=unicode_errors, datatype=datatype)
        if vectors.shape[1] != manifest.dim:
            raise ParvecError(f"{where}/{part.name}: dimension {vectors.shape[1]}, the manifest says {manifest.dim}")
        blocks.append(vectors)
        words += part_words
    if len(words) != want:
        raise ParvecError(f"{where}: the parts hold {len(words)} vectors, the manifest says {manifest.count}")
    out = np.concatenate(blocks) if blocks else np.zeros((0, manifest.dim), dtype=datatype)
    return out, words


def read_partitioned(path: str | os.PathLike[str], limit: int | None = None, unicode_errors: str = "strict",
                     datatype: Any = np.float32) -> tuple[np.ndarray, list[str]]:
    """The vectors and words of a partitioned output (a local directory or a URL prefix), parts in order.

    Example:
        >>> vectors, words = read_partitioned("s3://bucket/out/")  # doctest: +SKIP
    """
    if not storage.is_url(path):
        return _read_local(Path(path), str(path), limit, unicode_errors, datatype)
    url = str(path)
    tmp = Path(tempfile.mkdtemp(prefix="parvec-parts-"))
    try:
        storage.download(url, tmp)
        return _read_local(tmp, url.rstrip("/"), limit, unicode_errors, datatype)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_url_vectors(url: str, binary: bool | None, limit: int | None, unicode_errors: str,
                     datatype: Any, no_header: bool) -> tuple[np.ndarray, list[str]]:
    """The vectors of a URL: a partitioned output, or one word2vec file (read from a local copy).

    Example:
        >>> vectors, words = read_url_vectors("s3://b/v.bin", None, None, "strict", np.float32, False)  # doctest: +SKIP
    """
    if is_partitioned(url):
        return read_partitioned(url, limit, unicode_errors, datatype)
    tmp = Path(tempfile.mkdtemp(prefix="parvec-vectors-"))
    try:
        local = storage.download(url, tmp / Path(url.rstrip("/")).name)
        return formats.read_word2vec(local, binary=binary, limit=limit, unicode_errors=unicode_errors,
                                     datatype=datatype, no_header=no_header)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
