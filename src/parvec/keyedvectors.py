"""``KeyedVectors``: a word -> vector mapping with gensim 4's query API.

A key is found in any Unicode normal form: ``"cafe\u0301"`` (e and a combining accent, as macOS and some
keyboards write it) finds ``"café"`` (precomposed, as most text is), and the other way round; the exact key
wins when both are present.

Rows are ordered as trained (descending word frequency), so ``restrict_vocab=N`` means "the N most
frequent words".  Similarities use unit-normalised rows; the normalised copy is computed on first use
and cached (:meth:`KeyedVectors.get_normed_vectors`).  Top-k selection uses ``argpartition``, so a
query over millions of rows costs one matrix-vector product plus O(n).

Example:
    >>> import numpy as np
    >>> kv = KeyedVectors(np.array([[1, 0], [0.9, 0.1], [0, 1]], dtype=np.float32), ["a", "b", "c"])
    >>> [w for w, _ in kv.most_similar("a", topn=2)]
    ['b', 'c']
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from parvec import formats
from parvec.errors import ParvecError
from parvec.similarity import (
    cosadd_query,
    cosmul_query,
    cosmul_scores,
    indexed_answer,
    unit_rows,
    unit_vector,
)

if TYPE_CHECKING:
    from parvec.sharded_vectors import ShardedKeyedVectors

__all__ = ["KeyedVectors", "load_model_vectors", "load_vectors"]

Key = str | int | np.integer
Query = Key | np.ndarray | tuple[Any, float]


class KeyedVectors:
    """Vectors (float ``[n, dim]``) addressed by string keys, with similarity queries and evaluation.

    ``counts`` (optional, int64 ``[n]``) records the training frequency of each key.

    Example:
        >>> import numpy as np
        >>> kv = KeyedVectors(np.eye(3, dtype=np.float32), ["x", "y", "z"])
        >>> kv["y"].tolist(), kv.get_index("z"), "w" in kv
        ([0.0, 1.0, 0.0], 2, False)
    """

    def __init__(self, vectors: np.ndarray, index_to_key: Sequence[str], counts: np.ndarray | None = None) -> None:
        vectors = np.asarray(vectors)
        if not np.issubdtype(vectors.dtype, np.floating):
            vectors = vectors.astype(np.float32)
        if vectors.ndim != 2:
            raise ValueError(f"vectors must be a 2-D array, got shape {vectors.shape}")
        if len(index_to_key) != len(vectors):
            raise ValueError(f"{len(index_to_key)} keys for {len(vectors)} vectors")
        self.index_to_key: list[str] = list(index_to_key)
        self.key_to_index: dict[str, int] = {key: i for i, key in enumerate(self.index_to_key)}
        if len(self.key_to_index) != len(self.index_to_key):
            seen: set[str] = set()
            for key in self.index_to_key:
                if key in seen:
                    raise ValueError(f"duplicate key {key!r}")
                seen.add(key)
        if counts is not None:
            counts = np.asarray(counts, dtype=np.int64)
            if counts.shape != (len(vectors),):
                raise ValueError(f"counts must have shape ({len(vectors)},), got {counts.shape}")
        self.counts = counts
        self.vectors = vectors
        self._nfc_index: tuple[int, dict[str, int]] | None = None  # _equivalent_index's table, built on demand

    # ------------------------------------------------------------------ basic mapping
    @property
    def vectors(self) -> np.ndarray:
        """The ``[n, dim]`` matrix; assigning a new one drops the cached norms."""
        return self._vectors

    @vectors.setter
    def vectors(self, value: np.ndarray) -> None:
        self._vectors = value
        self.norms: np.ndarray | None = None
        self._normed: np.ndarray | None = None

    @property
    def vector_size(self) -> int:
        """The dimension of the vectors."""
        return int(self._vectors.shape[1])

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, key: object) -> bool:
        return self.has_index_for(key)

    def __getitem__(self, key_or_keys: Key | Iterable[Key]) -> np.ndarray:
        """One key -> its vector; a list of keys -> a ``[len, dim]`` array."""
        if isinstance(key_or_keys, str | int | np.integer):
            return self.get_vector(key_or_keys)
        indices = [self.get_index(k) for k in key_or_keys]
        return self._vectors[np.asarray(indices, dtype=np.int64)]

    def __repr__(self) -> str:
        return f"KeyedVectors({len(self)} keys, vector_size={self.vector_size})"

    def get_index(self, key: Key, default: int | None = None) -> int:
        """Row of ``key`` (an integer in range is its own index); unknown -> ``default`` or KeyError.

        Example:
            >>> import numpy as np
            >>> KeyedVectors(np.eye(2, dtype=np.float32), ["a", "b"]).get_index("b")
            1
        """
        index = self.key_to_index.get(key) if isinstance(key, str) else None
        if index is None and isinstance(key, str):
            index = self._equivalent_index(key)
        if index is not None:
            return index
        if isinstance(key, Integral) and not isinstance(key, bool) and 0 <= int(key) < len(self):
            return int(key)
        if default is not None:
            return default
        raise KeyError(f"Key {key!r} not present in vocabulary")

    def has_index_for(self, key: object) -> bool:
        """Whether ``key`` has a row (gensim's semantics: an in-range integer counts).

        Example:
            >>> import numpy as np
            >>> KeyedVectors(np.eye(2, dtype=np.float32), ["a", "b"]).has_index_for("c")
            False
        """
        if isinstance(key, str):
            return key in self.key_to_index or self._equivalent_index(key) is not None
        return self.get_index(key, -1) >= 0 if isinstance(key, Integral) else False  # type: ignore[arg-type]

    def _equivalent_index(self, key: str) -> int | None:
        """The row of a key that is ``key`` in another Unicode normal form (``'cafe\\u0301'``, e, combining acute,
        and ``'café'``, precomposed, are the same text): keys match as their NFC forms do, the exact key first.

        Example:
            >>> import numpy as np
            >>> KeyedVectors(np.eye(2, dtype=np.float32), ["café", "cafe"])._equivalent_index("cafe\u0301")
            0
        """
        import unicodedata

        nfc = unicodedata.normalize("NFC", key)
        index = self.key_to_index.get(nfc)
        if index is not None:
            return index
        # Keys stored in another form (decomposed text): their NFC forms, built at the first such miss (and again
        # when keys were added); ASCII keys are their own NFC form and already looked up above.
        table = self._nfc_index
        if table is None or table[0] != len(self.index_to_key):
            forms: dict[str, int] = {}
            for i, k in enumerate(self.index_to_key):
                if not k.isascii():
                    forms.setdefault(unicodedata.normalize("NFC", k), i)
            table = self._nfc_index = (len(self.index_to_key), forms)
        return table[1].get(nfc)

    def get_vecattr(self, key: Key, attr: str) -> int:
        """A per-key attribute, as gensim's: ``"count"`` is the key's frequency in the training corpus.

        Raises KeyError for an unknown key, or for ``"count"`` when these vectors carry no counts (a
        word2vec file holds none; a trained model's ``wv`` and :meth:`save`'s files do).

        Example:
            >>> import numpy as np
            >>> KeyedVectors(np.eye(2, dtype=np.float32), ["a", "b"], counts=[7, 3]).get_vecattr("b", "count")
            3
        """
        index = self.get_index(key)
        if attr != "count":
            raise KeyError(f"no attribute {attr!r}: parvec's KeyedVectors keep 'count' only")
        if self.counts is None:
            raise KeyError("no attribute 'count': these vectors carry no counts (a word2vec file holds none)")
        return int(self.counts[index])

    def set_vecattr(self, key: Key, attr: str, value: int) -> None:
        """Set a per-key attribute (``"count"`` only), as gensim's.

        Example:
            >>> import numpy as np
            >>> kv = KeyedVectors(np.eye(2, dtype=np.float32), ["a", "b"]); kv.set_vecattr("a", "count", 5)
            >>> kv.get_vecattr("a", "count"), kv.get_vecattr("b", "count")
            (5, 0)
        """
        index = self.get_index(key)
        if attr != "count":
            raise KeyError(f"no attribute {attr!r}: parvec's KeyedVectors keep 'count' only")
        if self.counts is None:
            self.counts = np.zeros(len(self), dtype=np.int64)
        self.counts[index] = int(value)

    def get_vector(self, key: Key, norm: bool = False) -> np.ndarray:
        """The vector of ``key`` (a view of the row), unit-normalised if ``norm``.

        Example:
            >>> import numpy as np
            >>> kv = KeyedVectors(np.array([[3, 4]], dtype=np.float32), ["a"])
            >>> kv.get_vector("a", norm=True).tolist()
            [0.6000000238418579, 0.800000011920929]
        """
        index = self.get_index(key)
        row: np.ndarray = self._vectors[index]
        if not norm:
            return row
        self.fill_norms()
        assert self.norms is not None
        n = self.norms[index]
        return row / n if n > 0 else row.copy()

    def fill_norms(self, force: bool = False) -> None:
        """Compute the L2 norm of every row into ``self.norms`` (again if ``force``).

        Call with ``force=True`` after changing ``vectors`` in place; assigning ``vectors`` resets them.

        Example:
            >>> import numpy as np
            >>> kv = KeyedVectors(np.array([[3, 4]], dtype=np.float32), ["a"])
            >>> kv.fill_norms(); kv.norms.tolist()
            [5.0]
        """
        if self.norms is None or force:
            self.norms = np.linalg.norm(self._vectors, axis=1)
            self._normed = None

    def get_normed_vectors(self) -> np.ndarray:
        """A cached copy of ``vectors`` with unit-length rows (all-zero rows stay zero).

        Example:
            >>> import numpy as np
            >>> kv = KeyedVectors(np.array([[3, 4], [0, 2]], dtype=np.float32), ["a", "b"])
            >>> kv.get_normed_vectors().tolist()
            [[0.6000000238418579, 0.800000011920929], [0.0, 1.0]]
        """
        if self._normed is None:
            self.fill_norms()
            self._normed = unit_rows(self._vectors, self.norms)
        return self._normed

    def get_rows(self, rows: slice | Sequence[int] | np.ndarray, norm: bool = False) -> np.ndarray:
        """The vectors of ``rows`` (a slice of ids, or ids), unit length if ``norm`` (rows of
        :meth:`get_normed_vectors`), as :meth:`parvec.sharded_vectors.ShardedKeyedVectors.get_rows` gives a sharded
        model's.

        Example:
            >>> import numpy as np
            >>> KeyedVectors(np.array([[3, 4], [1, 0]], np.float32), ["a", "b"]).get_rows([0], norm=True).tolist()
            [[0.6000000238418579, 0.800000011920929]]
        """
        matrix = self.get_normed_vectors() if norm else self._vectors
        return matrix[rows] if isinstance(rows, slice) else matrix[np.asarray(rows, dtype=np.int64)]

    def keys_of(self, ids: Sequence[int] | np.ndarray) -> list[str]:
        """The keys of row ids ``ids``.

        Example:
            >>> import numpy as np
            >>> KeyedVectors(np.eye(2, dtype=np.float32), ["a", "b"]).keys_of([1, 0])
            ['b', 'a']
        """
        return [self.index_to_key[i] for i in np.asarray(ids, dtype=np.int64).tolist()]

    # ------------------------------------------------------------------ similarity queries
    def _restricted_rows(self, restrict_vocab: int | None) -> int:
        return len(self) if restrict_vocab is None else max(0, min(int(restrict_vocab), len(self)))

    def _top(self, dists: np.ndarray, topn: int, exclude: set[int]) -> list[tuple[str, float]]:
        n = len(dists)
        k = min(n, topn + len(exclude))
        if k <= 0:
            return []
        if k < n:
            cand = np.argpartition(-dists, k - 1)[:k]
        else:
            cand = np.arange(n)
        order = cand[np.lexsort((cand, -dists[cand]))]  # by score, ties by index: deterministic
        result = [(self.index_to_key[i], float(dists[i])) for i in order.tolist() if i not in exclude]
        return result[:topn]

    def most_similar(
        self,
        positive: Query | Sequence[Query] | None = None,
        negative: Query | Sequence[Query] | None = None,
        topn: int | None = 10,
        restrict_vocab: int | None = None,
        indexer: Any = None,
    ) -> list[tuple[str, float]] | np.ndarray:
        """The ``topn`` keys closest to the mean of ``positive`` minus ``negative`` (3CosAdd), as gensim.

        Terms are keys (unit-normalised), raw vectors, or ``(term, weight)`` pairs.  Keys given as
        terms are left out of the result.  ``restrict_vocab=N`` searches only the first N rows.
        ``topn=None`` returns the cosine of every (searched) row as an array.  ``indexer`` (an approximate index
        with gensim's ``most_similar(vector, num_neighbors)``, e.g. :func:`parvec.ann.build_index`'s) answers
        instead of the matrix, as gensim's (``restrict_vocab`` is not applied then).

        Example:
            >>> import numpy as np
            >>> kv = KeyedVectors(np.array([[1, 0], [0.8, 0.6], [0, 1]], dtype=np.float32), ["a", "b", "c"])
            >>> [(w, round(s, 2)) for w, s in kv.most_similar("a", topn=1)]
            [('b', 0.8)]
        """
        if isinstance(topn, Integral) and topn < 1:
            return []
        mean, exclude = cosadd_query(self, positive, negative, self._vectors.dtype)
        if indexer is not None and topn:
            return indexed_answer(indexer, self.keys_of, mean, int(topn), exclude)
        rows = self._restricted_rows(restrict_vocab)
        dists: np.ndarray = self.get_normed_vectors()[:rows] @ mean
        if not topn:
            return dists
        return self._top(dists, int(topn), exclude)

    def most_similar_batch(self, words: Sequence[Key], topn: int = 10, restrict_vocab: int | None = None,
                           candidates: Sequence[Key] | None = None) -> list[list[tuple[str, float]]]:
        """``[most_similar(w, topn=topn) for w in words]`` in one pass over the matrix: blocks of rows meet the
        queries in matrix products, each query's best kept in a heap (:func:`parvec.neighbours.neighbour_ids`).
        ``restrict_vocab=N`` searches the first N rows; ``candidates`` (keys) searches only their rows (say, the ads
        among a vocabulary of queries and ads).  An unknown word raises ``KeyError``.

        Example:
            >>> import numpy as np
            >>> kv = KeyedVectors(np.array([[1, 0], [0.8, 0.6], [0, 1]], dtype=np.float32), ["a", "b", "c"])
            >>> [[w for w, _ in found] for found in kv.most_similar_batch(["a", "c"], topn=2)]
            [['b', 'c'], ['b', 'a']]
        """
        from parvec.neighbours import most_similar_batch

        return most_similar_batch(self, words, topn, restrict_vocab, candidates)

    def most_similar_cosmul(
        self,
        positive: Query | Sequence[Query] | None = None,
        negative: Query | Sequence[Query] | None = None,
        topn: int | None = 10,
        restrict_vocab: int | None = None,
    ) -> list[tuple[str, float]] | np.ndarray:
        """Levy & Goldberg's 3CosMul: ``prod((1+cos(x,p))/2) / (prod((1+cos(x,n))/2) + 1e-6)``.

        Cosines are shifted to [0, 1] as in gensim.  Vector terms are unit-normalised first (gensim
        uses them as given, which only differs for non-unit vectors).  Query keys are excluded.

        Example:
            >>> import numpy as np
            >>> v = np.array([[1, 0, 1], [0, 1, 1], [1, 0, 2], [0, 1, 2], [1, 1, 0]], dtype=np.float32)
            >>> kv = KeyedVectors(v, ["man", "woman", "king", "queen", "x"])
            >>> kv.most_similar_cosmul(positive=["king", "woman"], negative=["man"], topn=1)[0][0]
            'queen'
        """
        if isinstance(topn, Integral) and topn < 1:
            return []
        pos_v, neg_v, exclude = cosmul_query(self, positive, negative, self._vectors.dtype)
        rows = self._restricted_rows(restrict_vocab)
        dists = cosmul_scores(self.get_normed_vectors()[:rows], pos_v, neg_v)
        if not topn:
            return dists
        return self._top(dists, int(topn), exclude)

    def similar_by_vector(
        self, vector: np.ndarray, topn: int | None = 10, restrict_vocab: int | None = None
    ) -> list[tuple[str, float]] | np.ndarray:
        """The ``topn`` keys most similar to ``vector`` (nothing is excluded).

        Example:
            >>> import numpy as np
            >>> kv = KeyedVectors(np.eye(2, dtype=np.float32), ["a", "b"])
            >>> kv.similar_by_vector(np.array([0.1, 1.0], dtype=np.float32), topn=1)[0][0]
            'b'
        """
        return self.most_similar(positive=[vector], topn=topn, restrict_vocab=restrict_vocab)

    def similar_by_key(
        self, key: Key, topn: int | None = 10, restrict_vocab: int | None = None
    ) -> list[tuple[str, float]] | np.ndarray:
        """The ``topn`` keys most similar to ``key`` (``key`` itself excluded).

        Example:
            >>> import numpy as np
            >>> kv = KeyedVectors(np.array([[1, 0], [1, 0.1], [0, 1]], dtype=np.float32), ["a", "b", "c"])
            >>> kv.similar_by_key("a", topn=1)[0][0]
            'b'
        """
        return self.most_similar(positive=[key], topn=topn, restrict_vocab=restrict_vocab)

    similar_by_word = similar_by_key

    def similarity(self, w1: Key, w2: Key) -> float:
        """Cosine similarity of two keys.

        Example:
            >>> import numpy as np
            >>> kv = KeyedVectors(np.array([[1, 0], [1, 1]], dtype=np.float32), ["a", "b"])
            >>> round(kv.similarity("a", "b"), 4)
            0.7071
        """
        return float(np.dot(self.get_vector(w1, norm=True), self.get_vector(w2, norm=True)))

    def n_similarity(self, ws1: Sequence[Key], ws2: Sequence[Key]) -> float:
        """Cosine similarity of the means of two key sets.

        Example:
            >>> import numpy as np
            >>> kv = KeyedVectors(np.eye(3, dtype=np.float32), ["a", "b", "c"])
            >>> round(kv.n_similarity(["a", "b"], ["a", "b"]), 4)
            1.0
        """
        if not len(ws1) or not len(ws2):
            raise ZeroDivisionError("At least one of the passed lists is empty.")
        m1 = np.mean([self[k] for k in ws1], axis=0)
        m2 = np.mean([self[k] for k in ws2], axis=0)
        return float(np.dot(unit_vector(m1), unit_vector(m2)))

    def distance(self, w1: Key, w2: Key) -> float:
        """Cosine distance, ``1 - similarity(w1, w2)``.

        Example:
            >>> import numpy as np
            >>> KeyedVectors(np.eye(2, dtype=np.float32), ["a", "b"]).distance("a", "b")
            1.0
        """
        return 1.0 - self.similarity(w1, w2)

    def distances(self, word_or_vector: Key | np.ndarray, other_words: Sequence[Key] = ()) -> np.ndarray:
        """Cosine distances from a key or vector to ``other_words`` (all keys if empty).

        Example:
            >>> import numpy as np
            >>> KeyedVectors(np.eye(2, dtype=np.float32), ["a", "b"]).distances("a").tolist()
            [0.0, 1.0]
        """
        if isinstance(word_or_vector, np.ndarray):
            v = unit_vector(word_or_vector.astype(np.float64)).astype(self._vectors.dtype)
        else:
            v = self.get_vector(word_or_vector, norm=True)
        normed = self.get_normed_vectors()
        if len(other_words):
            normed = normed[[self.get_index(w) for w in other_words]]
        similarities: np.ndarray = normed @ v
        return 1.0 - similarities

    def doesnt_match(self, words: Sequence[str]) -> str:
        """The word furthest from the mean of ``words`` (unknown words are ignored).

        Example:
            >>> import numpy as np
            >>> v = np.array([[1, 0], [1, 0.1], [0.9, 0], [0, 1]], dtype=np.float32)
            >>> KeyedVectors(v, ["a", "b", "c", "d"]).doesnt_match(["a", "b", "c", "d"])
            'd'
        """
        used = [w for w in words if w in self]
        if not used:
            raise ValueError("cannot select a word from an empty list")
        vecs = np.vstack([self.get_vector(w, norm=True) for w in used])
        dists = vecs @ unit_vector(vecs.mean(axis=0))
        return used[int(np.argmin(dists))]

    # ------------------------------------------------------------------ evaluation
    def evaluate_word_pairs(
        self,
        pairs: str | os.PathLike[str],
        delimiter: str | None = "\t",
        restrict_vocab: int = 300000,
        case_insensitive: bool = True,
        dummy4unknown: bool = False,
    ) -> tuple[tuple[float, float], tuple[float, float], float]:
        """Correlate cosine similarities with human scores, as gensim does.

        ``pairs`` has ``word1<delimiter>word2<delimiter>score`` lines; ``#`` lines are comments.
        Pairs with a word outside the first ``restrict_vocab`` rows are skipped (or scored 0 with
        ``dummy4unknown``).  Returns ``((pearson_r, p), (spearman_rho, p), oov_percent)``.

        Example:
            >>> kv.evaluate_word_pairs("wordsim353.tsv")  # doctest: +SKIP
            ((0.61, 1e-35), (0.64, 2e-41), 0.57)
        """
        from parvec.evaluation import word_pair_scores

        result = word_pair_scores(self, pairs, delimiter, restrict_vocab, case_insensitive, dummy4unknown=dummy4unknown)
        return result.pearson, result.spearman, result.oov_percent

    def evaluate_word_analogies(
        self,
        analogies: str | os.PathLike[str],
        restrict_vocab: int = 300000,
        case_insensitive: bool = True,
        dummy4unknown: bool = False,
        method: str = "3cosadd",
    ) -> tuple[float, list[dict[str, Any]]]:
        """Accuracy on an analogy file (Google's ``questions-words.txt`` layout), as gensim does.

        For ``a b c d``, the answer is the word of the first ``restrict_vocab`` rows, other than a, b
        and c, that is closest to ``b - a + c`` (``method="3cosadd"``) or maximises 3CosMul
        (``"3cosmul"``).  Questions with a word outside those rows are skipped (counted wrong with
        ``dummy4unknown``).  Returns ``(accuracy, sections)``; each section is ``{"section", "correct",
        "incorrect"}`` with lists of question tuples, the last one being "Total accuracy".
        The whole file is solved in vectorised batches (see :mod:`parvec.evaluation`).

        Example:
            >>> score, sections = kv.evaluate_word_analogies("questions-words.txt")  # doctest: +SKIP
        """
        from parvec.evaluation import word_analogies

        return word_analogies(self, analogies, restrict_vocab, case_insensitive, dummy4unknown, method)

    # ------------------------------------------------------------------ persistence
    def save_word2vec_format(
        self, path: str | os.PathLike[str], binary: bool = False, write_header: bool = True
    ) -> None:
        """Write word2vec.c's text (or ``binary``) format; compressed if the name ends .gz/.bz2/.xz.

        Example:
            >>> kv.save_word2vec_format("vectors.bin", binary=True)  # doctest: +SKIP
        """
        formats.write_word2vec(path, self._vectors, self.index_to_key, binary=binary, write_header=write_header)

    @classmethod
    def load_word2vec_format(
        cls,
        path: str | os.PathLike[str],
        binary: bool | None = False,
        limit: int | None = None,
        unicode_errors: str = "strict",
        datatype: Any = np.float32,
        no_header: bool = False,
    ) -> KeyedVectors:
        """Read a word2vec text or binary file (``binary=None``: detect); see :func:`formats.read_word2vec`.

        The header must agree with the file (a wrong count or dimension is a :class:`ParvecError` naming
        the line or byte); ``no_header=True`` reads a text file without one (GloVe's layout), as in gensim.

        Example:
            >>> kv = KeyedVectors.load_word2vec_format("vectors.bin", binary=True)  # doctest: +SKIP
            >>> glove = KeyedVectors.load_word2vec_format("glove.6B.100d.txt", no_header=True)  # doctest: +SKIP
        """
        from parvec import partitioned, storage

        if storage.is_url(path):  # s3://..., gs://...: one file, or a partitioned output (parvec.partitioned)
            vectors, words = partitioned.read_url_vectors(str(path), binary, limit, unicode_errors, datatype, no_header)
        elif partitioned.is_partitioned(path):  # a directory of part files and manifest.json
            vectors, words = partitioned.read_partitioned(path, limit, unicode_errors, datatype)
        else:
            vectors, words = formats.read_word2vec(
                path, binary=binary, limit=limit, unicode_errors=unicode_errors, datatype=datatype, no_header=no_header
            )
        return cls(vectors, words)

    def save(self, path: str | os.PathLike[str]) -> Path | str:
        """Save as ``PREFIX.npy`` + ``PREFIX.vocab.txt`` (+ ``PREFIX.counts.npy``); returns the .npy path (its URL
        for a URL prefix such as ``s3://bucket/vectors``: written locally, then uploaded).

        Example:
            >>> kv.save("out/vectors")  # doctest: +SKIP
            PosixPath('out/vectors.npy')
        """
        return formats.save_npy(path, self._vectors, self.index_to_key, self.counts)

    @staticmethod
    def load_sharded(path: str | os.PathLike[str], limit: int | None = None,
                     check: bool | None = None) -> ShardedKeyedVectors:
        """Open a sharded model directory (``parvec train --mode sharded --save-model DIR``) lazily: its shards'
        column files checked and memory-mapped, its words in their partitions, queries computed a block of rows at a
        time (:class:`parvec.sharded_vectors.ShardedKeyedVectors`: this class's surface; ``limit`` and ``check`` as
        its ``open``).

        Example:
            >>> KeyedVectors.load_sharded("model").most_similar("king", topn=3)  # doctest: +SKIP
            [('queen', 0.71), ('prince', 0.66), ('monarch', 0.64)]
        """
        from parvec.sharded_vectors import ShardedKeyedVectors

        return ShardedKeyedVectors.open(path, limit=limit, check=check)

    @classmethod
    def load(cls, path: str | os.PathLike[str], mmap: bool = False) -> KeyedVectors:
        """Load what :meth:`save` wrote (``path`` is the prefix or the ``.npy`` file).

        No pickle is read: gensim's pickled ``.kv`` files are refused with an explanation and the
        conversion (``save_word2vec_format`` in gensim, then :meth:`load_word2vec_format`).

        Example:
            >>> kv = KeyedVectors.load("out/vectors.npy")  # doctest: +SKIP
        """
        from parvec import storage

        if not storage.is_url(path) and not formats.npy_paths(path)[0].exists():
            formats.refuse_pickle(path, "KeyedVectors.load")  # gensim's pickled .kv: say why and how to convert
        vectors, keys, counts = formats.load_npy(path, mmap=mmap)
        return cls(vectors, keys, counts)


def load_vectors(
    path: str | os.PathLike[str],
    binary: bool | None = None,
    unicode_errors: str = "strict",
    limit: int | None = None,
    no_header: bool = False,
) -> Any:
    """Load vectors from ``.npy`` (+ vocab) or a word2vec file, detecting text vs binary unless given, or a model
    directory's input vectors (:func:`load_model_vectors`: a sharded model's opened lazily).

    ``no_header=True``: a word2vec text file without the ``count dimension`` line (GloVe's layout).

    Example:
        >>> kv = load_vectors("vectors.txt.gz")  # doctest: +SKIP
    """
    from parvec import partitioned, storage

    if storage.is_url(path) or partitioned.is_partitioned(path):  # a URL, or -o DIR/'s part files and manifest
        return KeyedVectors.load_word2vec_format(path, binary=binary, limit=limit, unicode_errors=unicode_errors,
                                                 no_header=no_header)
    p = Path(path)
    formats.refuse_pickle(p, "parvec")
    if p.is_dir():
        return load_model_vectors(p, limit=limit)
    if p.suffix.lower() == ".npy":
        if not p.exists():
            raise ParvecError(f"{p}: no such file")
        kv = KeyedVectors.load(p)
        if limit is not None:
            kv = KeyedVectors(
                kv.vectors[:limit], kv.index_to_key[:limit], None if kv.counts is None else kv.counts[:limit]
            )
        return kv
    return KeyedVectors.load_word2vec_format(
        p, binary=binary, limit=limit, unicode_errors=unicode_errors, no_header=no_header
    )


def load_model_vectors(path: str | os.PathLike[str], limit: int | None = None) -> Any:
    """The input vectors of a model directory, read the way :meth:`parvec.Word2Vec.load` reads it: a saved model
    (``Word2Vec.save``, ``parvec train --save-model``), a checkpoint, or the latest checkpoint of a checkpoint
    directory (``--checkpoint-dir``), every array's CRC-32 checked, as a :class:`KeyedVectors` (memory-mapped); the
    sharded model format (``--mode sharded``) opened lazily (:meth:`KeyedVectors.load_sharded`).  ``limit`` keeps
    the most frequent words.  A directory that is none of these raises :class:`ParvecError` saying what it holds
    and what was expected.

    Example:
        >>> load_model_vectors("ck").most_similar("king", topn=1)  # doctest: +SKIP
        [('queen', 0.71)]
    """
    from parvec import checkpoints, model_io

    target, _ = checkpoints.find_for_resume(path)
    if _is_sharded_model(target):
        from parvec.sharded_vectors import ShardedKeyedVectors

        return ShardedKeyedVectors.open(target, limit=limit)
    if not (target / model_io.MODEL_JSON).exists():
        raise ParvecError(f"{path}: a directory, not a vector file or a parvec model directory (no model.json): "
                          f"{model_io.what_is_there(path)}; expected a vector file (.npy with its .vocab.txt, "
                          "word2vec text or binary) or a model directory (Word2Vec.save, parvec train --save-model, a "
                          "--checkpoint-dir)")
    saved, _, _ = checkpoints.load_for_resume(target, model_io.load, mmap="r")
    vocab, vectors = saved.vocab, saved.vectors
    assert vocab is not None and vectors is not None  # a model that is not sharded holds both
    n = len(vocab) if limit is None else max(0, min(int(limit), len(vocab)))
    return KeyedVectors(vectors[:n], vocab.words[:n], vocab.counts[:n])


def _is_sharded_model(path: Path) -> bool:
    # A model directory whose model.json names shards and vocabulary partitions (the sharded model format).
    import json

    try:
        meta = json.loads((path / "model.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and isinstance(meta.get("sharded"), dict) and "vocab" in meta["sharded"]
