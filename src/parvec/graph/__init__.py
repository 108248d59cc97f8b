"""Graph embeddings: CSR graphs, DeepWalk/node2vec walks in numba, ``Node2Vec``/``DeepWalk``, evaluation.

Example:
    >>> from parvec.graph import read_graph, Node2Vec  # doctest: +SKIP
    >>> g = read_graph("karate.edgelist")  # doctest: +SKIP
    >>> kv = Node2Vec(g, dimensions=16, p=0.25, q=4, seed=1).fit()  # doctest: +SKIP
    >>> kv["0"].shape  # doctest: +SKIP
    (16,)
"""

from __future__ import annotations

from parvec.graph.evaluation import (
    Labels,
    align_labels,
    link_prediction,
    node_classification,
    read_labels,
    sample_non_edges,
    split_edges,
)
from parvec.graph.graph_io import Graph, read_edgelist, read_graph, read_mat, read_npz
from parvec.graph.node2vec import DeepWalk, Node2Vec
from parvec.graph.walks import NodeRanking, WalkSpec, generate_walks, iter_walk_batches, rank_nodes, walk_batch

__all__ = [
    "Graph",
    "read_graph",
    "read_edgelist",
    "read_npz",
    "read_mat",
    "Node2Vec",
    "DeepWalk",
    "WalkSpec",
    "NodeRanking",
    "walk_batch",
    "iter_walk_batches",
    "generate_walks",
    "rank_nodes",
    "Labels",
    "read_labels",
    "align_labels",
    "node_classification",
    "split_edges",
    "sample_non_edges",
    "link_prediction",
]
