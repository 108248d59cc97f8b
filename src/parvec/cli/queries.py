"""``parvec neighbours`` and ``parvec index``: queries that serve a big model.

``parvec neighbours VECTORS --queries FILE [--candidates FILE] -k 30 -o OUT`` writes the exact ``k`` nearest words of
every query word (:func:`parvec.neighbours.neighbour_ids`: one pass over the matrix per batch of queries) as a table,
``query<TAB>rank<TAB>neighbour<TAB>score`` under a header line, atomically (a temporary file beside OUT, renamed
when complete; ``.gz``/``.bz2``/``.xz`` compressed by the name).  Query words not in the vocabulary are left out of
the table and counted on standard error (the first ones named); none found is an error.

``parvec index VECTORS -o INDEX`` builds an approximate nearest-neighbour index (:mod:`parvec.ann`) for interactive
queries: ``most_similar(..., indexer=load_index(INDEX, kv))``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from parvec.cli.outputs import OutputPlan
from parvec.cli.paths import Use, check_paths
from parvec.cli.vectors import READING_RULES, add_vector_options, load_for_command, positive_int
from parvec.errors import ParvecError

QUERY_BATCH = 262144  # queries answered in one pass over the matrix (their heaps: 12 bytes per query and neighbour)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``neighbours`` and ``index`` sub-commands.

    Example:
        >>> parser = argparse.ArgumentParser(prog="parvec")
        >>> register(parser.add_subparsers())
        >>> parser.parse_args(["neighbours", "v.txt", "--queries", "q.txt", "-o", "n.tsv"]).k
        30
    """
    p = subparsers.add_parser(
        "neighbours",
        epilog=READING_RULES,
        help="the nearest words of many words, as a table",
        description="Write the K words most similar (cosine) to each word of --queries (one word per line: its first "
        "field), exact, in one pass over the vectors per batch of queries, as a tab-separated table: query, rank, "
        "neighbour, score, under a header line.  Words not in the vocabulary are left out and counted on standard "
        "error.",
    )
    add_vector_options(p)
    p.add_argument("--queries", required=True, metavar="FILE", help="the query words, one per line")
    p.add_argument("--candidates", metavar="FILE", help="search only these words (one per line; words not in the "
                   "vocabulary are counted on standard error) instead of the whole vocabulary")
    p.add_argument("-k", type=positive_int, default=30, help="neighbours per query (default: %(default)s)")
    p.add_argument("--restrict-vocab", type=positive_int, default=None, metavar="N",
                   help="search only the N most frequent words")
    p.add_argument("--batch", type=positive_int, default=QUERY_BATCH, metavar="N",
                   help="queries answered per pass over the vectors (default: %(default)s; memory: 12 bytes per "
                   "query and neighbour)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the table (.gz/.bz2/.xz: compressed)")
    p.set_defaults(func=run_neighbours)

    p = subparsers.add_parser(
        "index",
        epilog=READING_RULES,
        help="build an approximate nearest-neighbour index",
        description="Build an approximate nearest-neighbour index of the vectors (HNSW, by hnswlib: the [ann] extra) "
        "for interactive queries: KeyedVectors.most_similar(word, indexer=parvec.ann.load_index(INDEX, kv)).",
    )
    add_vector_options(p)
    p.add_argument("-o", "--output", required=True, metavar="INDEX", help="the index file")
    p.add_argument("-M", dest="m", type=positive_int, default=16, help="graph links per node (default: %(default)s)")
    p.add_argument("--ef-construction", type=positive_int, default=100, metavar="N",
                   help="candidates kept while building (default: %(default)s)")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads building it (default: every CPU)")
    p.set_defaults(func=run_index)


def read_words(path: str, what: str) -> list[str]:
    """The words of a file of one word per line (its first whitespace-separated field; blank lines skipped),
    distinct, in first-seen order; a file that cannot be read or holds no word is an error naming it.

    Example:
        >>> read_words("queries.txt", "--queries")  # doctest: +SKIP
        ['king', 'paris']
    """
    from parvec.fileio import check_input, open_input

    check_input(path)
    words: dict[str, None] = {}
    with open_input(path) as f:
        for number, raw in enumerate(f, 1):
            try:
                fields = raw.decode("utf-8").split()
            except UnicodeDecodeError:
                raise ParvecError(f"{what} {path}: line {number} is not UTF-8 text") from None
            if fields:
                words.setdefault(fields[0], None)
    if not words:
        raise ParvecError(f"{what} {path}: holds no word")
    return list(words)


def known_ids(kv: Any, words: list[str], what: str, path: str) -> tuple[list[str], np.ndarray]:
    """The words of ``words`` in the vocabulary and their ids; the others counted (the first five named) on
    standard error; none known is an error.

    Example:
        >>> known_ids(kv, ["king", "zzz"], "--queries", "q.txt")  # doctest: +SKIP
        (['king'], array([1234]))
    """
    ids = [kv.get_index(w, -1) for w in words]
    unknown = [w for w, i in zip(words, ids, strict=True) if i < 0]
    if unknown:
        shown = ", ".join(repr(w) for w in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        print(f"parvec: note: {what} {path}: {len(unknown):,} of {len(words):,} words are not in the vocabulary "
              f"and are left out: {shown}", file=sys.stderr)
    if len(unknown) == len(words):
        raise ParvecError(f"{what} {path}: none of its {len(words):,} words is in the vocabulary")
    return [w for w, i in zip(words, ids, strict=True) if i >= 0], np.array([i for i in ids if i >= 0], np.int64)


def _write_table(tmp: Path, kv: Any, words: list[str], ids: np.ndarray, args: argparse.Namespace,
                 candidates: np.ndarray | None) -> None:
    from parvec.fileio import atomic_output
    from parvec.neighbours import neighbour_ids

    with atomic_output(tmp, "w", compress=True) as f:
        f.write("query\trank\tneighbour\tscore\n")
        for lo in range(0, len(ids), args.batch):
            found = neighbour_ids(kv, ids[lo:lo + args.batch], args.k, args.restrict_vocab, candidates)
            used = np.unique(found.ids[found.ids >= 0])
            names = dict(zip(used.tolist(), kv.keys_of(used), strict=True))
            for query, row_ids, row_scores in zip(words[lo:lo + args.batch], found.ids.tolist(),
                                                  found.scores.tolist(), strict=True):
                f.write("".join(f"{query}\t{rank}\t{names[i]}\t{s:.6f}\n"
                                for rank, (i, s) in enumerate(zip(row_ids, row_scores, strict=True), 1) if i >= 0))


def run_neighbours(args: argparse.Namespace) -> int:
    """``parvec neighbours VECTORS --queries FILE [--candidates FILE] [-k K] -o OUT``: the module docstring."""
    inputs = [Use("--queries", Path(args.queries)), Use("VECTORS", Path(args.vectors))]
    if args.candidates:
        inputs.append(Use("--candidates", Path(args.candidates)))
    check_paths(inputs, [Use("-o", Path(args.output))])
    queries = read_words(args.queries, "--queries")
    candidate_words = read_words(args.candidates, "--candidates") if args.candidates else None
    with OutputPlan() as plan:
        pending = plan.file("-o", args.output)  # an unwritable OUT fails now, before the vectors are read
        kv = load_for_command(args)
        words, ids = known_ids(kv, queries, "--queries", args.queries)
        candidates = None
        if candidate_words is not None:
            candidates = known_ids(kv, candidate_words, "--candidates", args.candidates)[1]
        started = time.perf_counter()
        try:
            pending.write(lambda tmp: _write_table(Path(tmp), kv, words, ids, args, candidates))
        except ValueError as exc:  # a row holding NaN or an infinity
            raise ParvecError(f"{args.vectors}: the vectors are damaged: {exc}") from None
        plan.commit()
    seconds = time.perf_counter() - started
    print(f"parvec: wrote the {args.k} nearest words of {len(words):,} queries to {args.output} in {seconds:.1f} s "
          f"({len(words) / max(seconds, 1e-9):,.0f} queries/s)", file=sys.stderr)
    return 0


def run_index(args: argparse.Namespace) -> int:
    """``parvec index VECTORS -o INDEX``: build an HNSW index of the vectors (:func:`parvec.ann.build_index`)."""
    from parvec.ann import build_index, require_backend

    require_backend()  # the [ann] extra missing: said before anything is read
    check_paths([Use("VECTORS", Path(args.vectors))], [Use("-o", Path(args.output))])
    with OutputPlan() as plan:
        pending = plan.file("-o", args.output)
        kv = load_for_command(args)
        started = time.perf_counter()
        index = build_index(kv, m=args.m, ef_construction=args.ef_construction, threads=args.threads)
        pending.write(index.save)
        plan.commit()
    print(f"parvec: indexed {len(kv):,} vectors of {kv.vector_size} in {time.perf_counter() - started:.1f} s; wrote "
          f"{args.output}", file=sys.stderr)
    return 0
