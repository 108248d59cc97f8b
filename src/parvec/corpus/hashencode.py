"""Encoding text against a hashed word lookup (:class:`parvec.wordhash.WordLookup`): a file, or one byte range of
one, into int32 tokens and int64 sentence offsets, on bytes, with no Python object per word or per token.

The same tokens and sentences as :func:`parvec.corpus.encode_sentences` gives with the vocabulary the lookup was
built from (lines are sentences, lines longer than ``max_sentence_length`` tokens cut into pieces, words out of
the vocabulary dropped, a file's or range's last line ending there): the blocks are read and normalised as the
byte tokeniser reads them (:func:`parvec.corpus.textscan.normalise`), then :func:`parvec.wordhash.scan_ids` splits
and hashes them and looks every token up.  Memory: the lookup (shared, ~12.5 bytes a vocabulary word) and the
encoded tokens.

Example:
    >>> import tempfile
    >>> from parvec.wordhash import WordLookup
    >>> path = Path(tempfile.mkdtemp()) / "c.txt"
    >>> _ = path.write_text("the cat sat\\non the mat\\n")
    >>> tokens, offsets, raw = encode_range(path, 0, path.stat().st_size, ReadOptions(),
    ...                                     WordLookup.from_words(["the", "cat", "mat"]))
    >>> tokens.tolist(), offsets.tolist(), raw
    ([0, 1, 0, 2], [0, 2, 4], 6)
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from parvec.corpus.arrays import compact
from parvec.corpus.readers import RangeSentences, ReadOptions
from parvec.corpus.textscan import normalise
from parvec.kernels.wordtable import piece_lengths
from parvec.wordhash import HashScanner, WordLookup

__all__ = ["encode_blocks", "encode_range"]


def encode_blocks(reader: RangeSentences, lookup: WordLookup) -> tuple[np.ndarray, np.ndarray, int]:
    """Encode the blocks of a text reader (:class:`parvec.corpus.RangeSentences`, or a
    :class:`parvec.corpus.TextSentences` of files) through ``lookup``: ``(tokens int32, offsets int64, raw words)``.

    Example:
        >>> reader = RangeSentences("c.txt", 0, 100, ReadOptions())
        >>> tokens, offsets, raw = encode_blocks(reader, lookup)  # doctest: +SKIP
    """
    scanner = HashScanner(lookup)
    options = reader.options
    max_len = options.max_sentence_length
    token_blocks: list[np.ndarray] = []
    length_blocks: list[np.ndarray] = []
    raw_words = 0
    carry = np.zeros(0, dtype=np.int32)

    def emit(ids: np.ndarray, lengths: np.ndarray) -> None:
        nonlocal raw_words
        raw_words += len(ids)
        ids, lengths = compact(ids, lengths)
        token_blocks.append(ids)
        length_blocks.append(lengths)

    for name, block, where, at_end in reader.blocks():
        if at_end:  # the end of a file or range: its last line ends there
            if len(carry):
                emit(carry, np.array([len(carry)], dtype=np.int64))
            carry = carry[:0]
            continue
        text = normalise(block, options.lowercase, functools.partial(reader.decode, where=where, name=name))
        found, segs = scanner.scan(text)
        ids = np.concatenate((carry, found)) if len(carry) else found.copy()
        lengths = np.zeros(len(segs) + len(ids) // max_len + 1, dtype=np.int64)
        n, left = piece_lengths(segs, len(segs), len(carry), max_len, lengths)
        carry = ids[len(ids) - left:].copy()
        emit(ids[: len(ids) - left], lengths[:n])
    tokens = np.concatenate(token_blocks) if token_blocks else np.zeros(0, dtype=np.int32)
    lengths = np.concatenate(length_blocks) if length_blocks else np.zeros(0, dtype=np.int64)
    lengths = lengths[lengths > 0]  # sentences made only of dropped words carry nothing
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return tokens.astype(np.int32, copy=False), offsets, raw_words


def encode_range(path: str | os.PathLike[str], start: int, end: int, options: ReadOptions,
                 lookup: WordLookup) -> tuple[np.ndarray, np.ndarray, int]:
    """Encode bytes ``[start, end)`` of a plain text file (cut at whitespace: :func:`parvec.corpus.byte_ranges`)
    through ``lookup``: ``(tokens int32, offsets int64, raw words)``, as :func:`encode_blocks`.

    Example:
        >>> encode_range("corpus.txt", 0, 1 << 20, ReadOptions(), lookup)  # doctest: +SKIP
    """
    return encode_blocks(RangeSentences(Path(path), start, end, options), lookup)
