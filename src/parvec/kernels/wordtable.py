"""Byte tokeniser and word hash table: the numba kernels that count and encode text files.

A block of UTF-8 text (cut at whitespace by the reader, NUL already turned into a space) is split on the
bytes that ``str.split()`` treats as whitespace in ASCII (space, ``\\t``, ``\\v``, ``\\f``, ``\\r``,
``\\x1c``-``\\x1f``; ``\\n`` ends a line), and every token is looked up by the FNV-1a hash of its bytes in an
open-addressing table (linear probing, at most half full).  A new word is appended: its hash, its bytes in
an arena, and the next id, so ids are in first-seen order.  word2vec.c counts its vocabulary the same way
(a hash of the bytes into an open-addressing table); parvec's reader in Python (``str.split`` and a
``Counter`` of ``str``) made a Python object of every token.

The table's arrays are owned by :class:`parvec.corpus.textscan.WordTable`: when they are full the kernel stops
and says so, the table grows them (twice the size) and the kernel goes on where it stopped; the kernels
allocate nothing.  The slots stay at most half full and sized to the words seen, not to the worst case of a
block, so the hot words' slots stay in the CPU's caches.

Example:
    >>> import numpy as np
    >>> from parvec.kernels.wordtable import CLASSES, scan_block
    >>> buf = np.frombuffer(b"a b a\\nc", dtype=np.uint8)
    >>> slots = np.full(16, -1, np.int32); hashes = np.zeros(8, np.uint64); starts = np.zeros(8, np.int64)
    >>> lengths = np.zeros(8, np.int32); counts = np.zeros(8, np.int64); arena = np.zeros(64, np.uint8)
    >>> state = np.zeros(6, np.int64); ids = np.zeros(8, np.int32); segs = np.zeros(8, np.int64)
    >>> scan_block(buf, CLASSES, slots, hashes, starts, lengths, counts, arena, state, True, ids, segs)
    True
    >>> state.tolist()  # words, arena bytes, position, tokens, segments, open segment
    [3, 3, 7, 4, 2, 0]
    >>> ids[:4].tolist(), segs[:2].tolist(), counts[:3].tolist()
    ([0, 1, 0, 2], [3, 1], [2, 1, 1])
"""

from __future__ import annotations

import numba as nb
import numpy as np

WORD, SPACE, NEWLINE = 0, 1, 2
# The byte classes: what str.split() splits on among ASCII characters, and the line break.
CLASSES = np.zeros(256, dtype=np.uint8)
CLASSES[[0x20, 0x09, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F]] = SPACE
CLASSES[0x0A] = NEWLINE

# 64-bit FNV-1a: a word's hash (parvec.wordhash hashes with these too).
FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


@nb.njit(inline="always")
def word_at(buf, classes, i):  # pragma: no cover - numba
    """The tokeniser's word, one copy for every kernel that splits text (:func:`scan_block`,
    :func:`parvec.wordhash.scan_ids`): the word that starts at ``buf[i]`` runs to ``end`` (the first separator
    after it, or the end of ``buf``) and has the FNV-1a hash ``hash``.  Returns ``(end, hash)``."""
    n = len(buf)
    h = FNV_OFFSET
    j = i
    while j < n and classes[buf[j]] == WORD:
        h = (h ^ np.uint64(buf[j])) * FNV_PRIME
        j += 1
    return j, h


@nb.njit(cache=True, nogil=True)
def _find(buf, i, j, h, slots, hashes, starts, lengths, arena):  # pragma: no cover - numba
    """The slot of the word ``buf[i:j]`` (hash ``h``): its own, or the empty one where it would go."""
    mask = len(slots) - 1
    s = np.int64(h & np.uint64(mask))
    n = j - i
    while True:
        w = slots[s]
        if w < 0:
            return s
        if hashes[w] == h and lengths[w] == n:
            a = starts[w]
            same = True
            for k in range(n):
                if arena[a + k] != buf[i + k]:
                    same = False
                    break
            if same:
                return s
        s = (s + 1) & mask


@nb.njit(cache=True, nogil=True)
def scan_block(buf, classes, slots, hashes, starts, lengths, counts, arena, state, insert, ids,  # pragma: no cover
               segs):
    """Tokenise ``buf`` and look every token up; returns True when done, False when the table is full.

    ``state`` is ``[words, arena bytes used, position in buf, tokens, segments, tokens of the open
    segment]``, updated in place: a call that returns False (no room for one more word: ``hashes`` full,
    ``slots`` half full, or the arena short of the word's bytes) stops before that word, and the caller
    grows the table (:func:`rehash`) and calls again with the same ``state`` to go on.  Start a block with
    ``state[2:] = 0``.

    ``ids[t]`` is the table id of token ``t`` (-1: not in the table and ``insert`` false).  ``segs`` holds
    the number of tokens of each line: one entry per ``\\n`` in ``buf`` and a last one for the text after
    the last ``\\n`` (possibly 0), written when the block is done.  With ``insert`` new words are added and
    ``counts`` of every token incremented.  ``ids`` needs room for ``len(buf) // 2 + 1`` tokens, ``segs``
    for the line breaks + 1.
    """
    n_words = state[0]
    used = state[1]
    i = state[2]
    n_tok = state[3]
    n_seg = state[4]
    seg = state[5]
    n = len(buf)
    max_words = min(len(hashes), len(slots) // 2)
    done = True
    while i < n:
        c = classes[buf[i]]
        if c != WORD:
            if c == NEWLINE:
                segs[n_seg] = seg
                n_seg += 1
                seg = 0
            i += 1
            continue
        j, h = word_at(buf, classes, i)
        s = _find(buf, i, j, h, slots, hashes, starts, lengths, arena)
        w = slots[s]
        if w < 0 and insert:
            if n_words >= max_words or used + (j - i) > len(arena):
                done = False
                break
            w = n_words
            n_words += 1
            slots[s] = w
            hashes[w] = h
            starts[w] = used
            lengths[w] = j - i
            for k in range(j - i):
                arena[used + k] = buf[i + k]
            used += j - i
        if insert:
            counts[w] += 1
        ids[n_tok] = w
        n_tok += 1
        seg += 1
        i = j
    if done:
        segs[n_seg] = seg
        n_seg += 1
        seg = 0
    state[0] = n_words
    state[1] = used
    state[2] = i
    state[3] = n_tok
    state[4] = n_seg
    state[5] = seg
    return done


@nb.njit(cache=True, nogil=True)
def rehash(hashes, n_words, slots):  # pragma: no cover - numba
    """Fill the empty (all -1) ``slots`` with the first ``n_words`` words (after the table grew)."""
    mask = len(slots) - 1
    for w in range(n_words):
        s = np.int64(hashes[w] & np.uint64(mask))
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = w


@nb.njit(cache=True, nogil=True)
def piece_lengths(segs, n_seg, carry, max_len, out):  # pragma: no cover - numba
    """Sentence lengths from line token counts, cutting lines into pieces of at most ``max_len`` tokens.

    ``carry`` tokens of an unfinished line come before ``segs[0]``; every segment but the last ends a line.
    Returns ``(pieces, carry)``: the last, unfinished line's tokens not yet in a piece (< ``max_len``).
    ``out`` needs room for ``n_seg + tokens // max_len + 1`` lengths.
    """
    k = 0
    for s in range(n_seg):
        total = carry + segs[s]
        while total >= max_len:
            out[k] = max_len
            k += 1
            total -= max_len
        if s == n_seg - 1:
            return k, total
        if total > 0:
            out[k] = total
            k += 1
        carry = 0
    return k, carry


@nb.njit(cache=True, nogil=True)
def join_words(arena, starts, lengths, n_words, out):  # pragma: no cover - numba
    """Copy the first ``n_words`` words' bytes into ``out``, each followed by ``\\n`` (one decode for all)."""
    k = 0
    for w in range(n_words):
        a = starts[w]
        for b in range(lengths[w]):
            out[k] = arena[a + b]
            k += 1
        out[k] = 10
        k += 1
