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
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from parvec.corpus.arrays import compact
from parvec.corpus.readers import RangeSentences, ReadOptions
from parvec.corpus.textscan import normalise
from parvec.kernels.wordtable import piece_lengths
from parvec.wordhash import HashScanner, WordLookup

__all__ = ["encode_blocks", "encode_range", "encode_to_files", "encoded_blocks"]


def encoded_blocks(reader: RangeSentences, lookup: WordLookup) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """The blocks of a text reader (:class:`parvec.corpus.RangeSentences`, or a :class:`parvec.corpus.TextSentences`
    of files) encoded through ``lookup``, one at a time: ``(tokens int32, sentence lengths int64, raw words)``, a
    sentence made only of dropped words kept as a length 0 (what :func:`encode_blocks` and :func:`encode_to_files`
    put together).

    Example:
        >>> blocks = list(encoded_blocks(RangeSentences("c.txt", 0, 100, ReadOptions()), lookup))  # doctest: +SKIP
    """
    scanner = HashScanner(lookup)
    options = reader.options
    max_len = options.max_sentence_length
    carry = np.zeros(0, dtype=np.int32)

    def emit(ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        raw = len(ids)
        ids, lengths = compact(ids, lengths)
        return ids, lengths, raw

    for name, block, where, at_end in reader.blocks():
        if at_end:  # the end of a file or range: its last line ends there
            if len(carry):
                yield emit(carry, np.array([len(carry)], dtype=np.int64))
            carry = carry[:0]
            continue
        text = normalise(block, options.lowercase, functools.partial(reader.decode, where=where, name=name))
        found, segs = scanner.scan(text)
        ids = np.concatenate((carry, found)) if len(carry) else found.copy()
        lengths = np.zeros(len(segs) + len(ids) // max_len + 1, dtype=np.int64)
        n, left = piece_lengths(segs, len(segs), len(carry), max_len, lengths)
        carry = ids[len(ids) - left:].copy()
        yield emit(ids[: len(ids) - left], lengths[:n])


def encode_blocks(reader: RangeSentences, lookup: WordLookup) -> tuple[np.ndarray, np.ndarray, int]:
    """Encode the blocks of a text reader (:class:`parvec.corpus.RangeSentences`, or a
    :class:`parvec.corpus.TextSentences` of files) through ``lookup``: ``(tokens int32, offsets int64, raw words)``.

    Example:
        >>> reader = RangeSentences("c.txt", 0, 100, ReadOptions())
        >>> tokens, offsets, raw = encode_blocks(reader, lookup)  # doctest: +SKIP
    """
    token_blocks: list[np.ndarray] = []
    length_blocks: list[np.ndarray] = []
    raw_words = 0
    for ids, lengths, raw in encoded_blocks(reader, lookup):
        token_blocks.append(ids)
        length_blocks.append(lengths)
        raw_words += raw
    tokens = np.concatenate(token_blocks) if token_blocks else np.zeros(0, dtype=np.int32)
    lengths = np.concatenate(length_blocks) if length_blocks else np.zeros(0, dtype=np.int64)
    lengths = lengths[lengths > 0]  # sentences made only of dropped words carry nothing
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return tokens.astype(np.int32, copy=False), offsets, raw_words


_HEADER_BYTES = 128  # a .npy header of one fixed size: the shape is written once the tokens are counted


def _npy_header(dtype: str, n: int) -> bytes:
    head = f"{{'descr': '{dtype}', 'fortran_order': False, 'shape': ({n},), }}".encode("latin1")
    pad = _HEADER_BYTES - 10 - len(head) - 1
    return b"\x93NUMPY\x01\x00" + (_HEADER_BYTES - 10).to_bytes(2, "little") + head + b" " * pad + b"\n"


def encode_to_files(reader: RangeSentences, lookup: WordLookup, tokens_path: str | os.PathLike[str],
                    offsets_path: str | os.PathLike[str]) -> tuple[int, int, int, np.ndarray]:
    """Encode a reader's blocks through ``lookup`` straight into ``tokens_path`` (int32 ``.npy``, written block by
    block: the tokens are never all in memory) and ``offsets_path`` (int64 sentence offsets, ``.npy``); returns
    ``(tokens, sentences, raw words, offsets)``.  The same arrays as :func:`encode_blocks`; a write that fails
    (a full disk) is a :class:`parvec.fileio.WriteError` naming the file.

    Example:
        >>> encode_to_files(RangeSentences("c.txt", 0, 100, ReadOptions()), lookup, "t.npy", "o.npy")  # doctest: +SKIP
        (17, 3, 20, array([ 0,  5, 12, 17]))
    """
    from parvec.fileio import output_file, save_array, write_failure

    length_blocks: list[np.ndarray] = []
    n_tokens = raw_words = 0
    try:
        with output_file(tokens_path) as f:
            f.write(_npy_header("<i4", 0))
            for ids, lengths, raw in encoded_blocks(reader, lookup):
                f.write(np.ascontiguousarray(ids, dtype="<i4").tobytes())
                n_tokens += len(ids)
                raw_words += raw
                length_blocks.append(lengths[lengths > 0])
            f.seek(0)
            f.write(_npy_header("<i4", n_tokens))
    except OSError as exc:
        raise write_failure(tokens_path, exc) from None
    lengths = np.concatenate(length_blocks) if length_blocks else np.zeros(0, dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    save_array(offsets_path, offsets)
    return n_tokens, len(offsets) - 1, raw_words, offsets


def encode_range(path: str | os.PathLike[str], start: int, end: int, options: ReadOptions,
                 lookup: WordLookup) -> tuple[np.ndarray, np.ndarray, int]:
    """Encode bytes ``[start, end)`` of a plain text file (cut at whitespace: :func:`parvec.corpus.byte_ranges`)
    through ``lookup``: ``(tokens int32, offsets int64, raw words)``, as :func:`encode_blocks`.

    Example:
        >>> encode_range("corpus.txt", 0, 1 << 20, ReadOptions(), lookup)  # doctest: +SKIP
    """
    return encode_blocks(RangeSentences(Path(path), start, end, options), lookup)
