"""``parvec node-eval``: multi-label node classification of node vectors (micro/macro-F1 over repeated random
splits), the DeepWalk/node2vec protocol; registered with the graph commands (:mod:`parvec.cli.graph`).

Example:
    parvec node-eval karate.emb --labels karate.labels --json
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from parvec.errors import ParvecError

__all__ = ["add_node_eval", "run_node_eval"]


def _fractions(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not values or any(not 0 < v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"fractions must be in (0, 1), got {text!r}")
    return values


def add_node_eval(subparsers: Any) -> None:
    """Add ``parvec node-eval``.

    Example:
        >>> from parvec.cli import build_parser
        >>> build_parser().parse_args(["node-eval", "g.emb", "--labels", "g.labels"]).repeats
        10
    """
    p = subparsers.add_parser(
        "node-eval",
        help="multi-label node classification (micro/macro-F1)",
        allow_abbrev=False,
        description="One-vs-rest logistic regression on node vectors, repeated "
        "random splits, top-k labels per node (DeepWalk/node2vec protocol).",
    )
    p.add_argument("embeddings", metavar="EMB", help="word2vec text/binary file or PREFIX.npy")
    p.add_argument(
        "--labels",
        required=True,
        help="label file: 'node label [label ...]' lines; labelled nodes without a vector are left out (a warning "
        "counts them); labels must tell nodes apart (a single class is refused)",
    )
    p.add_argument(
        "--train-fractions",
        type=_fractions,
        default=None,
        help="comma-separated training fractions (default 0.1,0.2,...,0.9)",
    )
    p.add_argument("--repeats", type=int, default=10, help="random splits per fraction (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the splits (default %(default)s)")
    p.add_argument("--C", type=float, default=1.0,
                   help="inverse regularisation of the classifier (default %(default)g)")
    p.add_argument("--workers", type=int, default=1, help="parallel one-vs-rest fits (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=run_node_eval)


def _load_vectors(path: str) -> tuple[Any, list[str]]:
    from parvec.keyedvectors import load_vectors

    kv = load_vectors(path)
    return kv.vectors, kv.index_to_key


def run_node_eval(args: argparse.Namespace) -> int:
    """Run ``parvec node-eval``: the scores of each training fraction, as a table or JSON."""
    from parvec.graph.evaluation import DEFAULT_FRACTIONS, align_labels, node_classification, read_labels

    vectors, keys = _load_vectors(args.embeddings)
    labels = read_labels(args.labels)
    rows, y = align_labels(keys, labels, source=args.labels)
    fractions = args.train_fractions or list(DEFAULT_FRACTIONS)
    if args.workers is not None and args.workers < 1:
        raise ParvecError(f"workers must be a positive integer, got {args.workers}")
    result = node_classification(
        vectors[rows], y, fractions, repeats=args.repeats, seed=args.seed, C=args.C, workers=args.workers,
        source=args.labels, label_names=labels.label_names,
    )  # fmt: skip
    result["n_labelled_without_vector"] = len(labels.node_ids) - len(rows)
    result["embeddings"] = args.embeddings
    result["labels"] = args.labels
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{result['n_nodes']} labelled nodes with vectors, {result['n_labels']} labels, "
        f"{args.repeats} random splits per fraction"
    )
    print("| train | micro-F1 | macro-F1 |")
    print("| ---: | --- | --- |")
    for r in result["results"]:
        print(
            f"| {r['train_fraction']:.0%} | {r['micro_f1_mean']:.4f} ± {r['micro_f1_std']:.4f} "
            f"| {r['macro_f1_mean']:.4f} ± {r['macro_f1_std']:.4f} |"
        )
    return 0
