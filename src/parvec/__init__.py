"""parvec: fast word2vec (SGNS) and node2vec/DeepWalk embeddings.

Example:
    >>> import parvec
    >>> model = parvec.Word2Vec(corpus_file="corpus.txt", vector_size=100, epochs=5)  # doctest: +SKIP
    >>> model.wv.most_similar("king", topn=5)  # doctest: +SKIP
"""

from __future__ import annotations

__version__ = "0.1.0"

from parvec.config import TrainConfig  # noqa: E402
from parvec.corpus import EncodedCorpus, ReadOptions  # noqa: E402
from parvec.distributed.cluster import Cluster  # noqa: E402
from parvec.errors import ParvecError  # noqa: E402
from parvec.keyedvectors import KeyedVectors  # noqa: E402
from parvec.vocab import Vocab  # noqa: E402
from parvec.word2vec import Word2Vec  # noqa: E402

__all__ = ["Cluster", "EncodedCorpus", "KeyedVectors", "ParvecError", "ReadOptions", "TrainConfig", "Vocab", "Word2Vec"]
