"""A synthetic Zipf-distributed corpus with a vocabulary of millions of words (seeded), for the sharded mode's
beyond-one-machine memory benchmark.

Every word ``w0 .. w{V-1}`` occurs at least once (so ``--min-count 1`` gives a vocabulary of exactly ``V``
words); ``extra`` more tokens are drawn from a Zipf law ``p(rank) ~ rank^-s`` over the same words, and all
tokens are shuffled into lines of ``line_words`` words.  Written under /tmp by default; never commit it.

    python benchmarks/make_zipf_corpus.py --words 5000000 --extra 15000000 --out /tmp/zipf5m.txt
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def zipf_tokens(vocab: int, extra: int, exponent: float, seed: int) -> np.ndarray:
    """Token ids: each of ``vocab`` ids once plus ``extra`` Zipf draws, shuffled (int32).

    Example:
        >>> t = zipf_tokens(10, 90, 1.0, 1); len(t), len(set(t.tolist()))
        (100, 10)
    """
    rng = np.random.default_rng(seed)
    weights = np.arange(1, vocab + 1, dtype=np.float64) ** -exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    draws = np.searchsorted(cdf, rng.random(extra), side="right").astype(np.int32)
    tokens = np.concatenate([np.arange(vocab, dtype=np.int32), np.minimum(draws, vocab - 1)])
    rng.shuffle(tokens)
    return tokens


def write_corpus(path: str, tokens: np.ndarray, line_words: int) -> None:
    """Write ``w{id}`` tokens, ``line_words`` per line, through a temporary file renamed into place."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        for start in range(0, len(tokens), line_words):
            f.write(" ".join(f"w{t}" for t in tokens[start:start + line_words].tolist()))
            f.write("\n")
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--words", type=int, default=5_000_000, help="vocabulary size V (every word occurs)")
    ap.add_argument("--extra", type=int, default=15_000_000, help="tokens drawn from the Zipf law on top")
    ap.add_argument("--exponent", type=float, default=1.0, help="Zipf exponent s (1.0)")
    ap.add_argument("--line-words", type=int, default=1000, help="words per line (1000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="/tmp/zipf_corpus.txt")
    args = ap.parse_args()
    t0 = time.perf_counter()
    tokens = zipf_tokens(args.words, args.extra, args.exponent, args.seed)
    write_corpus(args.out, tokens, args.line_words)
    print(f"{args.out}: {len(tokens):,} tokens, {args.words:,} distinct words, Zipf s={args.exponent}, "
          f"{os.path.getsize(args.out) / 2**20:.0f} MiB in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
