"""parvec: fast word2vec (SGNS) and node2vec/DeepWalk embeddings.

Example:
    >>> import parvec
    >>> model = parvec.Word2Vec(corpus_file="corpus.txt", vector_size=100, epochs=5)  # doctest: +SKIP
    >>> model.wv.most_similar("king", topn=5)  # doctest: +SKIP
"""

from __future__ import annotations

__version__ = "0.1.0"
