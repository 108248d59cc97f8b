"""``parvec similar``, ``parvec analogy``, ``parvec eval`` and ``parvec verify``: queries and evaluation of saved
vectors, and the check of a model directory's files.

VECTORS may be a ``.npy`` file (with its ``.vocab.txt``) or a word2vec file, text or binary
(detected from the first vectors unless ``--binary``/``--text`` is given), optionally compressed, or a model
directory (a saved model, a checkpoint or checkpoint directory: its input vectors; a sharded model read lazily).
The rules for reading it are in ``READING_RULES``, printed by each command's ``--help``.  A score that is not a
number (a damaged vector) is never printed: it is an error naming the vectors as damaged.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from parvec.errors import ParvecError
from parvec.evaluation import EVAL_FILES, NonFiniteVectors, default_eval_paths, format_report, score_sets
from parvec.keyedvectors import load_vectors

READING_RULES = (
    "Reading VECTORS: a .npy file needs its .vocab.txt beside it.  A word2vec file is read as binary only when "
    "the bytes after its header parse as binary vectors (word, space, DIM float32 values); a file whose first "
    "vector line is a word and numbers is text.  The 'COUNT DIM' header must agree with the file: a line with "
    "another number of values, a value that is not a number, more or fewer vectors than COUNT, or a truncated "
    "file is an error naming the line (text) or the vector and byte (binary), with exit code 2.  A UTF-8 BOM and "
    "CRLF line ends are fine; a file without the header (GloVe's layout) needs --no-header.  A model directory "
    "(Word2Vec.save, parvec train --save-model, a checkpoint, or a --checkpoint-dir: its latest checkpoint) is read "
    "as Word2Vec.load reads it, every CRC-32 checked; a sharded model (--mode sharded) is read lazily, its files' "
    "sizes checked (and their CRC-32s when they are small: parvec verify DIR checks them all)."
)


def positive_int(text: str) -> int:
    """An argparse type: a positive integer.

    Example:
        >>> positive_int("3")
        3
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_vector_options(p: argparse.ArgumentParser) -> None:
    """Add VECTORS and the options that say how to read it (``--binary``/``--text``, ``--no-header``,
    ``--unicode-errors``, ``--limit``) to a sub-command.

    Example:
        >>> p = argparse.ArgumentParser(); add_vector_options(p); p.parse_args(["v.txt", "--limit", "5"]).limit
        5
    """
    p.add_argument("vectors", metavar="VECTORS", help="vectors: .npy, or word2vec text/binary (.gz/.bz2/.xz ok), or a "
                   "model directory (a saved model, a checkpoint or --checkpoint-dir; a sharded model is read lazily)")
    layout = p.add_mutually_exclusive_group()
    layout.add_argument(
        "--binary",
        dest="binary",
        action="store_const",
        const=True,
        default=None,
        help="VECTORS is word2vec binary (default: detect; see below)",
    )
    layout.add_argument(
        "--text",
        dest="binary",
        action="store_const",
        const=False,
        help="VECTORS is word2vec text (default: detect; see below)",
    )
    p.add_argument(
        "--no-header",
        action="store_true",
        help="VECTORS is word2vec text without the 'COUNT DIM' first line (GloVe's layout)",
    )
    p.add_argument(
        "--unicode-errors",
        choices=("strict", "replace", "ignore"),
        default="strict",
        help="what to do with invalid UTF-8 in words (default: %(default)s)",
    )
    p.add_argument(
        "--limit",
        type=positive_int,
        default=None,
        metavar="N",
        help="read only the first N (most frequent) vectors (the rest of the file is not read or checked)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``similar``, ``analogy``, ``eval`` and ``verify`` sub-commands.

    Example:
        >>> parser = argparse.ArgumentParser(prog="parvec")
        >>> register(parser.add_subparsers())
        >>> parser.parse_args(["similar", "vec.txt", "king", "-k", "3"]).k
        3
    """
    p = subparsers.add_parser(
        "similar",
        epilog=READING_RULES,
        help="the words closest to a word",
        description="Print the K words most similar (cosine) to WORD.",
    )
    add_vector_options(p)
    p.add_argument("word", metavar="WORD")
    p.add_argument("-k", type=positive_int, default=10, help="how many words (default: %(default)s)")
    p.add_argument("--cluster", dest="cluster", default=None, metavar="SPEC",
                   help="VECTORS is a sharded model directory (parvec train --mode sharded --save-model DIR): "
                   "compute the nearest words on Ray (local:N, ray://HOST:PORT, auto) from its shards' partial dot "
                   "products and norms, never gathering the vectors (without it a sharded model is read lazily here)")
    p.set_defaults(func=run_similar)

    p = subparsers.add_parser(
        "analogy",
        epilog=READING_RULES,
        help="A is to B as C is to ?",
        description="Solve 'A is to B as C is to ?' (3CosAdd: B - A + C).",
    )
    add_vector_options(p)
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("c", metavar="C")
    p.add_argument("-k", type=positive_int, default=10, help="how many answers (default: %(default)s)")
    p.set_defaults(func=run_analogy)

    p = subparsers.add_parser(
        "eval",
        epilog=READING_RULES,
        help="WS-353, SimLex-999 and Google analogy scores",
        description="Evaluate vectors on word-pair similarity and analogy files.  Without --ws353, --simlex or "
        "--analogies, all three "
        "evaluation sets shipped with parvec are used (WS-353, SimLex-999 and Google's analogy questions; "
        "parvec/data/README.md gives their sources and licences); a copy of "
        f"{', '.join(EVAL_FILES.values())} in $PARVEC_EVAL_DIR or ../shared/data/eval is read first.",
    )
    add_vector_options(p)
    p.add_argument("--ws353", metavar="FILE", help="WS-353 pair file (word1 word2 score)")
    p.add_argument("--simlex", metavar="FILE", help="SimLex-999 pair file (word1 word2 score)")
    p.add_argument("--analogies", metavar="FILE", help="analogy questions (questions-words.txt layout)")
    p.add_argument(
        "--restrict-vocab",
        type=positive_int,
        default=30000,
        metavar="N",
        help="analogies search the N most frequent words (default: %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=run_eval)

    p = subparsers.add_parser(
        "verify",
        help="check a model directory's files against their CRC-32s",
        description="Check every file of a model directory (Word2Vec.save, parvec train --save-model, the sharded "
        "model format, or each checkpoint of a --checkpoint-dir) against the sizes and CRC-32s its model.json "
        "records; prints a line per file.  Exit 0 when all match, 2 naming the damaged files.",
    )
    p.add_argument("model", metavar="MODEL", help="a model directory, or a checkpoint directory")
    p.set_defaults(func=run_verify)


def load_for_command(args: argparse.Namespace) -> Any:
    """The vectors ``add_vector_options``' arguments name (a KeyedVectors, or a sharded model's
    ShardedKeyedVectors); a checkpoint directory's latest checkpoint is said on stderr.

    Example:
        >>> load_for_command(argparse.Namespace(vectors="v.txt", binary=None, unicode_errors="strict", limit=None,
        ...                                     no_header=False))  # doctest: +SKIP
    """
    from parvec.checkpoints import find_for_resume

    if Path(args.vectors).is_dir():
        target, _ = find_for_resume(args.vectors)
        if target != Path(args.vectors):
            print(f"parvec: reading {target}, the latest checkpoint in {args.vectors}", file=sys.stderr)
    return load_vectors(
        args.vectors,
        binary=args.binary,
        unicode_errors=args.unicode_errors,
        limit=args.limit,
        no_header=args.no_header,
    )


def _check_word(kv: Any, word: str, source: str) -> str:
    # The word as the vectors hold it: the same text in another Unicode normal form counts (KeyedVectors); its
    # vector must be numbers (a NaN there would make every answer NaN).
    if kv.has_index_for(word):
        found: str = kv.index_to_key[kv.get_index(word)]
        if not np.isfinite(kv.get_vector(found)).all():
            raise ParvecError(f"{source}: the vectors are damaged: the vector of {found!r} holds NaN or infinite "
                              "values")
        return found
    hint = ""
    for variant in (word.lower(), word.capitalize(), word.upper()):
        if variant != word and kv.has_index_for(variant):
            hint = f" (but {kv.index_to_key[kv.get_index(variant)]!r} is)"
            break
    raise ParvecError(f"word {word!r} is not in the vocabulary of {source}{hint}")


def _print_neighbours(results: Any, source: str) -> None:
    # The answers, one per line; a score that is not a number is a damaged vector, never an answer.
    bad = next(((w, s) for w, s in results if not math.isfinite(s)), None)
    if bad is not None:
        raise ParvecError(f"{source}: the vectors are damaged: the cosine with {bad[0]!r} is {bad[1]} (a vector holds "
                          "NaN or infinite values)")
    width = max((len(w) for w, _ in results), default=0)
    for word, score in results:
        print(f"{word:<{width}}  {score:.4f}")


def run_similar(args: argparse.Namespace) -> int:
    """``parvec similar VECTORS WORD [-k N] [--cluster SPEC]``: print the nearest words with their cosine; with
    ``--cluster`` a sharded model's are computed on Ray from its shards' partial dot products and norms
    (:mod:`parvec.distributed.sharded_query`)."""
    from parvec.sharded_vectors import ShardedKeyedVectors

    kv = load_for_command(args)
    word = _check_word(kv, args.word, args.vectors)
    if vars(args).get("cluster"):
        if not isinstance(kv, ShardedKeyedVectors):
            raise ParvecError(f"--cluster {args.cluster}: {args.vectors} is not a sharded model directory "
                              "(parvec train --mode sharded --save-model DIR); leave out --cluster for vector files")
        from parvec.distributed.cluster import Cluster
        from parvec.distributed.sharded_query import cluster_most_similar

        with Cluster(args.cluster).session() as ray:
            _print_neighbours(cluster_most_similar(ray, kv, [word], topn=args.k), args.vectors)
        return 0
    _print_neighbours(kv.most_similar(positive=[word], topn=args.k), args.vectors)
    return 0


def run_analogy(args: argparse.Namespace) -> int:
    """``parvec analogy VECTORS A B C [-k N]``: A is to B as C is to ? (positive B, C; negative A)."""
    kv = load_for_command(args)
    a, b, c = (_check_word(kv, w, args.vectors) for w in (args.a, args.b, args.c))
    _print_neighbours(kv.most_similar(positive=[b, c], negative=[a], topn=args.k), args.vectors)
    return 0


def run_eval(args: argparse.Namespace) -> int:
    """``parvec eval VECTORS [--ws353 F] [--simlex F] [--analogies F]``: print scores (or JSON)."""
    files = {"ws353": args.ws353, "simlex": args.simlex, "analogies": args.analogies}
    if all(v is None for v in files.values()):
        files = dict(default_eval_paths())
        if not files:
            raise ParvecError(
                "no evaluation files: give --ws353, --simlex or --analogies, or set PARVEC_EVAL_DIR to a "
                f"directory holding {', '.join(EVAL_FILES.values())}"
            )
    for name, path in files.items():
        if path is not None and not Path(path).is_file():
            raise ParvecError(f"{path}: no such {name} file")
    kv = load_for_command(args)
    try:
        result = score_sets(kv, restrict_vocab=args.restrict_vocab, **files)
    except NonFiniteVectors as exc:
        raise ParvecError(f"{args.vectors}: {exc}") from None
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(format_report(result))
    return 0


def run_verify(args: argparse.Namespace) -> int:
    """``parvec verify MODEL``: check every file of a model directory (each checkpoint of a checkpoint directory)
    against the sizes and CRC-32s its ``model.json`` records (:func:`parvec.model_check.verify`); a line per file,
    then exit 0, or 2 naming the damaged files."""
    from parvec.model_check import verify

    checks = verify(args.model)
    damaged = [f for check in checks for f in check.damaged]
    for check in checks:
        print(f"{check.path}:")
        for f in check.files:
            how = "" if f.recorded else " (no CRC-32 recorded: its size checked)"
            state = "ok" if f.ok else f"DAMAGED: {f.problem}"
            print(f"  {os.path.relpath(f.path, check.path)}  {f.size:,} bytes{how}  {state}")
    files = sum(len(check.files) for check in checks)
    if damaged:
        first = damaged[0]
        raise ParvecError(f"{args.model}: {len(damaged)} of {files} files damaged: {first.path}: {first.problem}")
    unchecked = sum(not f.recorded for check in checks for f in check.files)
    print(f"{args.model}: all {files} files match model.json" + (f" ({unchecked} without a CRC-32: sizes checked)"
                                                                   if unchecked else ""))
    return 0
