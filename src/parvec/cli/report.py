"""``parvec report``: pictures of one or more runs, as one self-contained HTML file and PNGs beside it."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add ``parvec report``."""
    p = subparsers.add_parser(
        "report",
        help="draw a run's loss, throughput, quality and vectors (HTML + PNG)",
        description="Draw the JSON reports of `parvec train --report` / `parvec node2vec --report` runs (several "
        "runs are overlaid) or a benchmark's --out JSON: loss and learning rate over words, words/s over time, "
        "quality per epoch (--eval-every-epoch runs), a PCA projection of word vectors, node-classification F1 "
        "for graph runs, and a table of parameters. Writes one self-contained HTML file and the PNGs in "
        "NAME_files/ beside it.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN.json", help="report JSON files (parvec train --report)")
    p.add_argument("-o", "--output", required=True, help="the HTML file to write (e.g. report.html)")
    p.add_argument("--words", nargs="+", default=None,
                   help="words to place in the PCA projection (default: the --top most frequent)")
    p.add_argument("--top", type=int, default=40,
                   help="how many frequent words to project without --words (%(default)s)")
    p.add_argument("--vectors", default=None,
                   help="vectors for the projection (default: the first run's output file)")
    p.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    """Run ``parvec report``."""
    from parvec.errors import ParvecError
    from parvec.report import write_report

    if args.output == "-":
        raise ParvecError("-o -: the report is an HTML file with its PNGs in a folder beside it; it cannot go to "
                          "standard output: give a file name (report.html)")
    if args.top < 2:
        raise ParvecError(f"--top must be at least 2, got {args.top}")
    files = write_report(args.runs, args.output, words=args.words, vectors=args.vectors, top=args.top)
    print(f"wrote {files[0]} ({len(files) - 1} figures, also in {files[0].with_name(files[0].stem + '_files')})",
          file=sys.stderr)
    return 0
