"""The words of ``parvec train``'s lines that are not a step of its flow: the cache line, what trained and where
(:func:`how_ran`), and the ``-o`` writers (vectors by extension, word2vec.c's ``-classes``).

Example:
    >>> from parvec.config import TrainConfig
    >>> how_ran(TrainConfig(threads=2))
    'hogbatch, 2 threads'
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from parvec.errors import ParvecError

if TYPE_CHECKING:
    from parvec.cli.command import TrainCommand


def cache_line(cache_used: bool | None, cmd: TrainCommand) -> str:
    """The line that says whether the encoded-corpus cache served the corpus, and why not.

    Example:
        >>> from types import SimpleNamespace
        >>> cache_line(True, SimpleNamespace(cache_dir="c"))
        'encoded-corpus cache: used (c)'
    """
    if cache_used:
        return f"encoded-corpus cache: used ({cmd.cache_dir})"
    if cache_used is False:
        return (f"encoded-corpus cache: not used (no cached encoding of this input and these options in "
                f"{cmd.cache_dir})")
    from parvec.fileio import is_stream

    source = cmd.source
    why = ("--no-cache" if cmd.no_cache else "standard input is read once, never cached" if source == "-"
           else f"{source} is a stream (pipe or FIFO), read once, never cached" if isinstance(source, str)
           and is_stream(source)
           else "a resumed run encodes with the model's vocabulary" if cmd.resume else "no cache for this input")
    return f"encoded-corpus cache: not used ({why})"


def how_ran(config: Any, report: dict[str, Any] | None = None) -> str:
    """What trained and where, for the summary line: the algorithm (:func:`_what_ran`) and this process's threads,
    or from the driver's report (``model.run_report``) a cluster's replicas and syncs or shards and clients, a
    GPU's device and threads per block.

    Example:
        >>> from parvec.config import TrainConfig
        >>> how_ran(TrainConfig(threads=2))
        'hogbatch, 2 threads'
        >>> how_ran(TrainConfig(), {"mode": "replicas", "replicas": 2, "threads_per_replica": 1, "syncs": 42,
        ...                          "bytes_synced": 12_900_000})
        'hogbatch, 2 replicas x 1 thread, 42 syncs, 12.3 MiB synced'
        >>> how_ran(TrainConfig(), {"shards": 2, "clients": 2, "client_threads": 1})
        'sharded: 2 shards, 2 clients x 1 thread'
    """
    from parvec.cli.run_report import cluster_summary, threads_phrase

    report = report or {}
    cluster = cluster_summary(report)
    if report.get("mode") == "replicas":
        return f"{what_ran(config)}, {cluster}"
    if cluster is not None:  # the sharded driver trains skip-gram with its own kernels, whatever algo says
        return cluster
    gpu = report.get("gpu")
    if gpu:
        return f"{what_ran(config)} on {gpu['device']['name']}, {gpu['threads_per_block']} threads per block"
    return f"{what_ran(config)}, {threads_phrase(config.threads)}"


def what_ran(config: Any) -> str:
    # "hogbatch" for skip-gram; "CBOW (mean) hogbatch, alpha 0.05" for CBOW: what trained, in words.
    hs = " with hierarchical softmax: word2vec.c loop" if config.hs else ""
    if config.sg:
        return f"{config.algo}{hs}"
    return f"CBOW ({'mean' if config.cbow_mean else 'sum'}) {config.algo}{hs}, alpha {config.alpha:g}"


def save_vectors(kv: Any, output: str, binary: bool) -> None:
    """Write vectors by the output's extension: ``.npy`` or word2vec text/binary."""
    if output.endswith(".npy"):
        kv.save(output)
    else:
        kv.save_word2vec_format(output, binary=binary)


def word_classes(kv: Any, k: int, seed: int = 1) -> np.ndarray:
    """word2vec.c's ``-classes K``: a class in ``0..K-1`` for every word, by k-means of the unit-length vectors.

    word2vec.c assigns each word to the centroid of largest dot product with its unit-length centroids;
    here scikit-learn's ``KMeans`` (``random_state=seed``, so runs repeat) clusters the unit-length vectors,
    whose Euclidean distances order as their cosines do.

    Example:
        >>> from parvec.keyedvectors import KeyedVectors
        >>> kv = KeyedVectors(np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], dtype=np.float32), list("abcd"))
        >>> c = word_classes(kv, 2); bool(c[0] == c[1] and c[2] == c[3] and c[0] != c[2])
        True
    """
    from sklearn.cluster import KMeans

    if not 1 <= k <= len(kv):
        raise ParvecError(f"-classes {k}: must be between 1 and the vocabulary size ({len(kv)})")
    km = KMeans(n_clusters=k, n_init=3, random_state=seed)
    labels: np.ndarray = km.fit_predict(kv.get_normed_vectors().astype(np.float64))  # sklearn is untyped
    return labels.astype(np.int64)


def write_classes(path: str | os.PathLike[str], words: list[str], classes: np.ndarray) -> None:
    """Write word2vec.c's ``-classes`` output atomically: one ``word class`` line per word, in vocabulary order.

    Example:
        >>> write_classes("classes.txt", ["the", "cat"], np.array([1, 0]))  # doctest: +SKIP
    """
    from parvec.fileio import atomic_output

    with atomic_output(path, "w") as f:
        for w, c in zip(words, classes.tolist(), strict=True):
            f.write(f"{w} {c}\n")
