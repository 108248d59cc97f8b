"""FULL-W2V's concurrency in the CPU model of the GPU's Hogwild (no GPU needed): what the resident sentences collide
on, and the loss and quality as their number grows, with and without the concurrent-writers scale.

Each run trains the corpus's head (``--words`` tokens, whole 1,000-token GPU sentences) with
:func:`parvec.gpu.reference.hogwild_train` (or the sequential reference for ``seq``) and prints, per run, the
mean sentences in flight, the loss per positive pair of each epoch, WS-353 / SimLex-999 / analogy % of the input
vectors (:mod:`parvec.evaluation` on the shared data) and, with ``--collisions``, the collision table of
:mod:`parvec.gpu.collisions` (rows written per tick, the share that another block held, the other blocks then).

A run is ``NAME=RESIDENT@WORDS_PER_LAUNCH[:P[o][/CAP]]``: ``RESIDENT`` block slots (1,320: full-w2v's 10 blocks
per SM on an H200's 132 SMs at d 100 and 128), launches of ``WORDS_PER_LAUNCH`` raw words and, with ``P``, the
concurrent writers' scale ``(CAP / c) ** P`` above ``CAP`` holders (``CAP`` 1 when left out), on the output and
input rows (``P`` 1 with ``CAP``: the kernel's ``gpu_writers_cap``), or with ``o`` on the output rows only;
``seq`` is the sequential reference.  docs/gpu.md ("Concurrency in the model") has the figures and the
commands that made them, e.g.::

    python benchmarks/bench_gpu_concurrency.py --words 6000000 --dim 100 --epochs 2 --collisions \\
        --runs seq today=1320@262144 4t=2640@1500000 4t-cap16=2640@1500000:1/16
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import harness
import numpy as np

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "corpus" / "enwiki2015_text8style_100M.txt.xz"


@dataclass(frozen=True)
class Run:
    """One configuration of the model: ``resident`` 0 is the sequential reference."""

    name: str
    resident: int
    words_per_launch: int
    power: float
    inputs: bool = True
    cap: int = 1


def parse_run(text: str) -> Run:
    """``NAME=RESIDENT@WORDS[:P[o][/CAP]]`` or ``seq`` (the module docstring).

    Example:
        >>> parse_run("4x=5280@2640000:1o/8")
        Run(name='4x', resident=5280, words_per_launch=2640000, power=1.0, inputs=False, cap=8)
        >>> parse_run("seq").resident, parse_run("o=1320@660000:0.5o").inputs
        (0, False)
    """
    if text == "seq":
        return Run("seq", 0, 0, 0.0)
    name, _, spec = text.partition("=")
    if not spec:
        raise argparse.ArgumentTypeError(f"run {text!r}: NAME=RESIDENT@WORDS_PER_LAUNCH[:P] or seq")
    slots, _, rest = spec.partition("@")
    wpl, _, power = rest.partition(":")
    power, _, cap = power.partition("/")
    outputs_only = power.endswith("o")
    return Run(name, int(slots), int(wpl or 0), float(power.rstrip("o") or 0.0), not outputs_only, int(cap or 1))


def train(corpus, run: Run, dim: int, epochs: int, seed: int, collisions: bool) -> tuple[np.ndarray, dict]:
    """One run: (input vectors, facts)."""
    from parvec.config import TrainConfig
    from parvec.gpu.plan import default_words_per_launch
    from parvec.gpu.reference import hogwild_train, reference_train
    from parvec.model_tables import init_input_vectors

    cfg = TrainConfig(device="cuda", algo="full-w2v", dim=dim, window=5, negative=5, sample=1e-4, epochs=epochs,
                      seed=seed, progress=False)
    n = len(corpus.vocab)
    w_in = init_input_vectors(n, dim, seed)
    w_out = np.zeros((n, dim), np.float32)
    parts = lambda epoch: [(corpus.tokens, corpus.offsets)]  # noqa: E731
    t0 = time.perf_counter()
    facts: dict = {"run": run.name, "seed": seed, "resident": run.resident, "words_per_launch": run.words_per_launch,
                   "writers_scale": run.power, "writers_inputs": run.inputs}
    if run.resident == 0:
        facts["losses"] = reference_train(cfg, corpus.vocab.counts, w_in, w_out, parts, corpus.n_tokens,
                                          words_per_launch=default_words_per_launch("full-w2v", corpus.n_tokens))
        facts["mean_in_flight"] = [1.0] * epochs
    else:
        st = hogwild_train(cfg, corpus.vocab.counts, w_in, w_out, parts, corpus.n_tokens, run.resident,
                           words_per_launch=run.words_per_launch, writers_cap=run.cap if run.power > 0 else 0,
                           writers_power=run.power, writers_inputs=run.inputs,
                           collisions=collisions,
                           parallel=False)
        facts["losses"] = st.losses
        facts["mean_in_flight"] = st.mean_in_flight
        if st.collisions is not None:
            facts["collisions"] = st.collisions.rows()
    facts["seconds"] = time.perf_counter() - t0
    return w_in, facts


def main(argv: list[str] | None = None) -> int:
    """Run the configurations; print and write (``--out``) their facts."""
    from bench_gpu import evaluate_vectors, head_corpus, scores

    from parvec.corpus import EncodedCorpus, ReadOptions

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=SHARED)
    ap.add_argument("--words", type=int, default=6_000_000, help="train on the corpus's first WORDS tokens")
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--runs", type=parse_run, nargs="+", required=True)
    ap.add_argument("--collisions", action="store_true", help="tally the collisions (model runs)")
    ap.add_argument("--out", type=Path, default=None, help="JSON of every run, rewritten after each")
    ns = ap.parse_args(argv)
    corpus = head_corpus(EncodedCorpus.from_file(ns.corpus, ReadOptions(min_count=5)), ns.words)
    print(f"{corpus.n_tokens:,} tokens of {ns.corpus.name}, d {ns.dim}, {ns.epochs} epochs, window 5, negative 5, "
          "sample 1e-4", flush=True)
    results = []
    for seed in ns.seeds:
        for run in ns.runs:
            w, facts = train(corpus, run, ns.dim, ns.epochs, seed, ns.collisions)
            facts["quality"] = scores(evaluate_vectors(w, corpus))
            results.append(facts)
            ws, sl, an = facts["quality"]
            print(f"{run.name} seed {seed}: in flight {facts['mean_in_flight'][0]:.0f}, loss "
                  + " / ".join(f"{x:.4f}" for x in facts["losses"])
                  + f", {ws:.3f} / {sl:.3f} / {an:.1f}, {facts['seconds']:.0f} s", flush=True)
            for row in facts.get("collisions", []):
                print(f"    {row['kind']:34s} {row['ranks']:7s} {row['per_tick']:9.1f} per tick, "
                      f"{100 * row['collided']:5.1f}% held by another, {row['others_when_collided']:6.1f} others",
                      flush=True)
            if ns.out is not None:
                harness.write_json(ns.out, "bench_gpu_concurrency", {"runs": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
