"""``parvec demo``: train on the shipped 2M-token Wikipedia slice and show what was learned."""

from __future__ import annotations

import argparse
import time
from importlib import resources
from pathlib import Path
from typing import Any

from parvec.capabilities import ALGORITHMS
from parvec.cli.outputs import OutputPlan
from parvec.cli.paths import Use, check_paths, is_stdout
from parvec.cli.train import add_threads_argument
from parvec.config import DEFAULT_ALGO
from parvec.errors import ParvecError

DEMO_WORDS = ("king", "france", "computer", "music", "three", "war", "paris", "water")
DEMO_ANALOGIES = (("man", "king", "woman"), ("france", "paris", "germany"), ("big", "bigger", "small"))


def demo_corpus_path() -> Path:
    """Path of the shipped demo corpus (2,000,000 tokens of English Wikipedia, xz-compressed).

    Example:
        >>> demo_corpus_path().name
        'demo_corpus.txt.xz'
    """
    return Path(str(resources.files("parvec") / "data" / "demo_corpus.txt.xz"))


def register(subparsers: Any) -> None:
    """Add ``parvec demo``."""
    p = subparsers.add_parser("demo", help="train on the built-in corpus and show neighbours and scores",
                              description="Train on the shipped 2M-token English Wikipedia slice, then print "
                              "nearest neighbours, a few analogies and the evaluation scores.")
    p.add_argument("--algo", choices=ALGORITHMS, default=DEFAULT_ALGO, help="training algorithm (default %(default)s)")
    p.add_argument("--epochs", type=int, default=5, help="passes over the corpus (%(default)s)")
    p.add_argument("--dim", type=int, default=100, help="vector dimension (%(default)s)")
    add_threads_argument(p)
    p.add_argument("--seed", type=int, default=1, help="random seed (%(default)s)")
    p.add_argument("-o", "--output", help="also write the vectors here (word2vec text format); checked, and its "
                   "temporary file created, before training")
    p.set_defaults(func=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    """Run ``parvec demo``."""
    path = demo_corpus_path()
    with OutputPlan() as plan:
        pending = None
        if args.output:
            if is_stdout(args.output):
                raise ParvecError("-o -: parvec demo prints its results on standard output; give a file name for "
                                  "the vectors")
            check_paths([Use("the demo corpus", path)], [Use("-o", Path(args.output))])
            pending = plan.file("-o", args.output)  # an unwritable -o fails now, not after training
        _demo(args, path, pending)
        plan.commit()
    if args.output:
        print(f"\nwrote the vectors to {args.output}")
    return 0


def _demo(args: argparse.Namespace, path: Path, pending: Any) -> None:
    from parvec.evaluation import default_eval_paths, format_report, score_sets, shipped_eval_dir
    from parvec.word2vec import Word2Vec

    print(f"parvec demo: training {args.algo} on {path.name} (2M tokens of English Wikipedia), "
          f"dim {args.dim}, {args.epochs} epochs, {args.threads} threads", flush=True)
    t0 = time.perf_counter()
    model = Word2Vec(corpus_file=path, vector_size=args.dim, window=5, negative=5, sample=1e-4,
                     min_count=5, epochs=args.epochs, workers=args.threads, seed=args.seed, algo=args.algo)
    wv = model.wv
    assert wv is not None
    print(f"vocabulary {len(wv):,} words; trained {model.stats.words:,} words in {model.stats.seconds:.1f} s "
          f"({model.stats.words_per_sec / 1e6:.2f}M words/s); loss per epoch "
          + ", ".join(f"{x:.3f}" for x in model.stats.loss_per_epoch)
          + f"; total {time.perf_counter() - t0:.1f} s")
    print("\nnearest neighbours:")
    for word in DEMO_WORDS:
        if word in wv:
            neighbours = ", ".join(w for w, _ in wv.most_similar(word, topn=8))
            print(f"  {word:>9}: {neighbours}")
    print("\nanalogies (a : b :: c : ?):")
    for a, b, c in DEMO_ANALOGIES:
        if all(w in wv for w in (a, b, c)):
            guesses = ", ".join(w for w, _ in wv.most_similar(positive=[b, c], negative=[a], topn=3))
            print(f"  {a} : {b} :: {c} : {guesses}")
    # The sets parvec ships (parvec/data) unless $PARVEC_EVAL_DIR or ../shared/data/eval has them.
    paths = default_eval_paths()
    shipped = shipped_eval_dir()
    where = sorted({"shipped with parvec" if p.parent == shipped else str(p.parent) for p in paths.values()})
    print(f"\nevaluation ({', '.join(where) or 'no files'}; small corpus: expect modest scores; the full corpus "
          "gives ~0.66 / 0.31 / 35%):")
    files = {name: str(p) for name, p in paths.items()}
    print(format_report(score_sets(wv, files.get("ws353"), files.get("simlex"), files.get("analogies"))))
    if pending is not None:
        pending.write(wv.save_word2vec_format)
