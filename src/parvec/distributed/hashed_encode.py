"""Encoding a corpus on Ray through the hashed word lookup (Ordentlich et al. section 6.1.2's preprocessing).

One Ray task per byte range encodes it (:func:`parvec.corpus.hashencode.encode_range`) into
``tokens_K.npy``/``offsets_K.npy`` in a work directory.  The lookup (:class:`parvec.wordhash.WordLookup`, ~13
bytes a vocabulary word) is passed as one object reference: Ray keeps one copy per node in its object store and
every task on the node reads it zero-copy, where today's encoder actors each build a Python dict of the vocabulary
(~154 bytes a word, one per CPU).  Each task returns the range's figures and the ``(bytes, CRC-32)`` it read, which
the caller compares with what counting read (:class:`parvec.distributed.vocab_count.RangeCount`).

Example:
    >>> parts = count_vocabulary(ray, "corpus.txt", ReadOptions(), 8, 4)  # doctest: +SKIP
    >>> work = Path("work")
    >>> sizes = encode_ranges(ray, "corpus.txt", ReadOptions(), parts.ranges, parts.lookup, work)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from parvec.corpus import RangeSentences, ReadOptions
from parvec.corpus.hashencode import encode_blocks
from parvec.errors import ParvecError
from parvec.fileio import save_array
from parvec.wordhash import WordLookup

__all__ = ["encode_one", "encode_ranges"]


def encode_one(path: str, start: int, end: int, options: dict[str, Any], lookup: WordLookup, out_dir: str,
               k: int) -> tuple[int, int, int, tuple[int, int] | None]:
    """Encode bytes ``[start, end)`` of ``path`` into ``out_dir/tokens_K.npy`` and ``offsets_K.npy``; returns
    ``(tokens, sentences, raw words, (bytes, CRC-32) read)``.

    Example:
        >>> encode_one("corpus.txt", 0, 1000, {}, lookup, "work", 0)  # doctest: +SKIP
        (812, 3, 1000, (1000, 2882139113))
    """
    reader = RangeSentences(Path(path), start, end, ReadOptions(**options))
    tokens, offsets, raw = encode_blocks(reader, lookup)
    out = Path(out_dir)
    save_array(out / f"tokens_{k}.npy", tokens)
    save_array(out / f"offsets_{k}.npy", offsets)
    return int(len(tokens)), int(len(offsets) - 1), int(raw), reader.fingerprint


def encode_ranges(ray: Any, path: str | os.PathLike[str], options: ReadOptions, ranges: list[tuple[int, int]],
                  lookup: Any, out_dir: Path, timeout_s: float = 300.0
                  ) -> list[tuple[int, int, int, tuple[int, int] | None]]:
    """Encode every range of ``path`` as a Ray task (``lookup``: an object reference to the
    :class:`parvec.wordhash.WordLookup`); returns each range's :func:`encode_one` figures, in range order.

    Example:
        >>> encode_ranges(ray, "corpus.txt", ReadOptions(), [(0, 100)], lookup_ref, Path("work"))  # doctest: +SKIP
        [(17, 1, 20, (100, 12345))]
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    task = ray.remote(num_cpus=1, max_retries=2)(encode_one)
    refs = [task.remote(str(path), a, b, dict(options.__dict__), lookup, str(out_dir), k)
            for k, (a, b) in enumerate(ranges)]
    try:
        encoded: list[tuple[int, int, int, tuple[int, int] | None]] = ray.get(refs,
                                                                             timeout=timeout_s * max(1, len(refs)))
        return encoded
    except ray.exceptions.GetTimeoutError:
        raise ParvecError(f"encoding the corpus: not done within {timeout_s:g} s per range (Cluster.timeout_s)"
                          ) from None
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", exc)
        raise ParvecError(str(cause) if isinstance(cause, ParvecError) else f"encoding the corpus failed: {cause}"
                          ) from None
