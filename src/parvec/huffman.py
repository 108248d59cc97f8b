"""The Huffman tree of hierarchical softmax, built exactly as word2vec.c's ``CreateBinaryTree``.

word2vec.c builds the tree over the vocabulary sorted by descending count with two queues: the
leaves, read from the rarest (position ``V-1``) towards the most frequent, and the inner nodes in the
order they are made (position ``V`` on).  Each step takes the smaller of the two queue heads twice; a
leaf is taken only when its count is *strictly* smaller than the inner node's, so ties go to the inner
node.  The first node taken is the parent's ``0`` child, the second its ``1`` child.  Inner node ``a``
(made at step ``a``) sits at position ``V + a`` and owns row ``a`` of ``syn1``; the root is inner node
``V - 2``.  A word's ``code`` lists the branches from the root down to its leaf and ``points`` the inner
nodes passed on the way (root first), so ``code[d]`` is the label taken at node ``points[d]``.

The arrays are flat, for numba kernels:

- ``codes``: uint8 ``[V, L]``, word ``w``'s code in ``codes[w, :code_len[w]]``, zero-padded;
- ``points``: int32 ``[V, L]``, the inner nodes (``syn1`` rows, ``0 .. V-2``), padded with -1;
- ``code_len``: int32 ``[V]``,

where ``L`` is the longest code.  word2vec.c stores codes in fixed arrays of ``MAX_CODE_LENGTH = 40``
and writes past them on a longer code; here a longer code is a :class:`~parvec.errors.ParvecError`.
A vocabulary whose counts are not in descending order (a grown vocabulary) is ranked first by
descending count, ties by index (a stable sort), which is the identity for a sorted vocabulary.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from parvec.errors import ParvecError

MAX_CODE_LENGTH = 40  # word2vec.c's


@dataclass(frozen=True)
class HuffmanTree:
    """The codes and inner-node paths of every word (see the module docstring for the layout).

    Example:
        >>> t = build_huffman_tree(np.array([5, 3, 2]))
        >>> t.code_of(0), t.points_of(0), t.n_inner
        ([1], [1], 2)
    """

    codes: np.ndarray  # uint8 [V, L]
    points: np.ndarray  # int32 [V, L]
    code_len: np.ndarray  # int32 [V]

    @property
    def n_inner(self) -> int:
        """Inner nodes, i.e. rows of ``syn1`` (``V - 1``)."""
        return max(0, len(self.code_len) - 1)

    def code_of(self, word: int) -> list[int]:
        """Word ``word``'s code, root first."""
        code: list[int] = self.codes[word, : self.code_len[word]].tolist()
        return code

    def points_of(self, word: int) -> list[int]:
        """The inner nodes (``syn1`` rows) on word ``word``'s path, root first."""
        points: list[int] = self.points[word, : self.code_len[word]].tolist()
        return points

    def fingerprint(self) -> str:
        """SHA-256 of the codes and paths: equal fingerprints, equal trees (saved models check it)."""
        h = hashlib.sha256()
        for a in (self.code_len, self.codes, self.points):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()


def build_huffman_tree(counts: np.ndarray, max_code_length: int = MAX_CODE_LENGTH) -> HuffmanTree:
    """word2vec.c's ``CreateBinaryTree`` over ``counts`` (index = word), as flat arrays.

    Raises :class:`ParvecError` for fewer than 2 words (there is no tree) or a code longer than
    ``max_code_length``.

    Example:
        >>> t = build_huffman_tree(np.array([4, 2, 1, 1]))
        >>> [t.code_of(w) for w in range(4)]
        [[1], [0, 1], [0, 0, 1], [0, 0, 0]]
    """
    counts = np.asarray(counts, dtype=np.int64)
    v = len(counts)
    if v < 2:
        raise ParvecError(f"hierarchical softmax needs at least 2 words in the vocabulary, got {v}")
    if (counts < 0).any():
        raise ParvecError("hierarchical softmax: word counts must be >= 0")
    # Rank by descending count (stable), so position r holds the r-th most frequent word.
    order = np.argsort(-counts, kind="stable")
    count = np.empty(2 * v - 1, dtype=np.int64)
    count[:v] = counts[order]
    parent = np.zeros(2 * v - 1, dtype=np.int64)
    binary = np.zeros(2 * v - 1, dtype=np.uint8)
    _merge(count, parent, binary, v)
    # Walk each leaf up to the root; code and points are written root first.
    code_len = np.zeros(v, dtype=np.int32)
    depth = np.zeros(2 * v - 1, dtype=np.int64)  # root depth 0; parents are made after children
    for node in range(2 * v - 3, -1, -1):
        depth[node] = depth[parent[node]] + 1
    longest = int(depth[:v].max())
    if longest > max_code_length:
        worst = int(order[int(np.argmax(depth[:v]))])
        raise ParvecError(
            f"hierarchical softmax: the Huffman code of word {worst} (count {int(counts[worst])}) is {longest} "
            f"branches long, more than word2vec.c's MAX_CODE_LENGTH of {max_code_length}; the counts are too "
            "skewed (raise min_count, or use negative sampling: hs=0)"
        )
    codes = np.zeros((v, longest), dtype=np.uint8)
    points = np.full((v, longest), -1, dtype=np.int32)
    _paths(parent, binary, depth, v, order, codes, points, code_len)
    return HuffmanTree(codes=codes, points=points, code_len=code_len)


def _merge(count: np.ndarray, parent: np.ndarray, binary: np.ndarray, v: int) -> None:
    # The two-queue merge of CreateBinaryTree; count[v:] is filled as inner nodes are made.
    pos1, pos2 = v - 1, v
    cnt = count.tolist() + [0]  # Python ints: faster to index one by one than numpy scalars
    par = [0] * (2 * v - 1)
    bit = [0] * (2 * v - 1)
    for a in range(v - 1):
        picked = []
        for _ in range(2):
            # Inner nodes not made yet count as infinite (word2vec.c: 1e15); pos2 < v + a always holds a made one
            # when the leaves are used up.
            if pos1 >= 0 and (pos2 >= v + a or cnt[pos1] < cnt[pos2]):
                picked.append(pos1)
                pos1 -= 1
            else:
                picked.append(pos2)
                pos2 += 1
        m1, m2 = picked
        cnt[v + a] = cnt[m1] + cnt[m2]
        par[m1] = v + a
        par[m2] = v + a
        bit[m2] = 1
    count[:] = cnt[: 2 * v - 1]
    parent[:] = par
    binary[:] = bit


def _paths(parent: np.ndarray, binary: np.ndarray, depth: np.ndarray, v: int, order: np.ndarray, codes: np.ndarray,
           points: np.ndarray, code_len: np.ndarray) -> None:
    par = parent.tolist()
    bit = binary.tolist()
    dep = depth.tolist()
    for r in range(v):
        w = int(order[r])
        n = dep[r]
        code_len[w] = n
        node = r
        for i in range(n - 1, -1, -1):  # leaf end first
            codes[w, i] = bit[node]
            node = par[node]
            points[w, i] = node - v
