"""parvec: fast word2vec (SGNS) and node2vec/DeepWalk embeddings.

Example:
    >>> import parvec
    >>> model = parvec.Word2Vec(corpus_file="corpus.txt", vector_size=100, epochs=5)  # doctest: +SKIP
    >>> model.wv.most_similar("king", topn=5)  # doctest: +SKIP
    >>> node_vectors = parvec.Node2Vec("graph.edgelist", dimensions=64, p=0.25, q=4).fit()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

from parvec.config import TrainConfig  # noqa: E402
from parvec.corpus import EncodedCorpus, ReadOptions  # noqa: E402
from parvec.distributed.cluster import Cluster  # noqa: E402
from parvec.errors import ParvecError  # noqa: E402
from parvec.keyedvectors import KeyedVectors  # noqa: E402
from parvec.vocab import Vocab  # noqa: E402
from parvec.word2vec import Word2Vec  # noqa: E402

__all__ = ["Cluster", "DeepWalk", "EncodedCorpus", "KeyedVectors", "Node2Vec", "ParvecError", "ReadOptions",
           "TrainConfig", "Vocab", "Word2Vec"]

# Imported on first use: the graph package (walks, graph readers, node classification) would add 10-15 ms to
# `import parvec` (0.433 s; 0.447 s with it: medians of 15 interleaved runs, warm caches, 2 EPYC cores).
_LAZY = {"Node2Vec": "parvec.graph.node2vec", "DeepWalk": "parvec.graph.node2vec"}


def __getattr__(name: str) -> Any:
    """``parvec.Node2Vec`` and ``parvec.DeepWalk`` (``from parvec import Node2Vec``), imported when first asked for.

    Example:
        >>> import parvec
        >>> parvec.DeepWalk.__name__
        'DeepWalk'
    """
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'parvec' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
