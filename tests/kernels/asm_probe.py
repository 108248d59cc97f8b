"""Compile parvec's CPU kernels in this process and list the reciprocal/square-root *estimate* instructions in them.

``python tests/kernels/asm_probe.py OUT.json`` trains every one-process mode on a small slice of the demo corpus
(skip-gram and CBOW with each algorithm, hierarchical softmax, node2vec walks) and calls the shard-side kernels of
the sharded mode on a tiny minibatch, so that every CPU kernel is compiled here; it then reads the assembly of every
numba function of ``parvec`` that has been compiled and writes ``{"scanned": [names], "cached": [names loaded from
numba's cache, which have no assembly to read], "estimates": {name: [instructions]}}``.  Run it with a fresh
``NUMBA_CACHE_DIR``.  The golden run (``tests/golden/make_golden.py --asm``) scans the same way after training
every mode, and ``tests/test_golden.py`` asserts that no estimate instruction is there: ``rcpps``/``vrcp14ps`` (or
``rsqrt*``) return implementation-specific bits, which made Intel and AMD CPUs train different vectors from one
seed.

Example:
    NUMBA_CACHE_DIR=$(mktemp -d) NUMBA_CPU_NAME=generic python tests/kernels/asm_probe.py /tmp/asm.json
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
ESTIMATE = re.compile(r"\b(v?rcp\w*|v?rsqrt\w*)\b")


def _train_every_mode(directory: str) -> None:
    sys.path.insert(0, str(GOLDEN))
    import make_golden

    corpus = make_golden.corpus_file(directory)
    for mode in ("classic", "hogbatch", "par", "cbow_classic", "cbow_hogbatch", "hs_skipgram", "hs_cbow_negative",
                 "node2vec"):
        make_golden.MODES[mode](corpus)


def call_shard_kernels() -> None:
    """Compile the sharded mode's kernels in this process (they run in Ray's workers) on a tiny minibatch.

    Example:
        >>> call_shard_kernels()
    """
    # The sharded mode's kernels run in Ray's workers; here they are called on a tiny minibatch in this process.
    from parvec.config import TrainConfig
    from parvec.kernels import sharded as K
    from parvec.sampling import word_noise_tables

    rng = np.random.default_rng(1)
    vocab, dim, window, negative = 12, 10, 2, 3
    prob, alias = word_noise_tables(rng.integers(1, 50, vocab), TrainConfig().ns_exponent)
    w_in = rng.standard_normal((vocab, dim)).astype(np.float32)
    w_out = rng.standard_normal((vocab, dim)).astype(np.float32)
    seq = rng.integers(0, vocab, 8).astype(np.int32)
    seg = np.array([[0, 8, 0, 8]], np.int32)
    shrink = np.zeros(8, np.uint16)
    seed = np.uint64(7)
    for per_pair in (True, False):
        dot, adj = (K.dotprod, K.adjust) if per_pair else (K.dotprod_window, K.adjust_window)
        out = np.empty(8 * 2 * window * (1 + negative), np.float32)
        k = dot(w_in, w_out, seq, seg, shrink, window, negative, prob, alias, seed, out)
        n_ctx = np.array([k // (1 + negative)], np.int32)  # the minibatch's pairs as one input's
        coef = np.empty(k, np.float32)
        K.coefficients(out[:k], n_ctx, np.full(1, 0.025, np.float32), negative, coef)
        adj(w_in, w_out, seq, seg, shrink, window, negative, prob, alias, seed, coef)
    ins = np.empty(8 * 2 * window, np.int64)
    outs = np.empty(8 * (1 + negative), np.int64)
    first = np.empty(9, np.int64)
    K.window_rows(seq, seg, shrink, window, negative, prob, alias, seed, ins, outs, first)
    from parvec.kernels.sharded_combine import adjust_window_rows_combined

    bounds = np.array([0, dim // 2, dim], np.int64)
    for hot in (0, 1_000_000):  # every row combined; none
        adjust_window_rows_combined(w_in, w_out, ins, outs, first, coef, hot, 2.0, bounds)
    K.train_window_rows(w_in, w_out, ins, outs, first, np.full(8, 0.025, np.float32))


def scan() -> dict[str, object]:
    """The compiled numba functions of ``parvec`` and the estimate instructions found in each one's assembly.

    Example:
        >>> sorted(scan())
        ['cached', 'estimates', 'scanned']
    """
    from numba.core.registry import CPUDispatcher

    scanned: list[str] = []
    cached: list[str] = []
    estimates: dict[str, list[str]] = {}
    for name, module in sorted(sys.modules.items()):
        if not name.startswith("parvec.") or module is None:
            continue
        for attr, obj in sorted(vars(module).items()):
            if isinstance(obj, CPUDispatcher) and obj.signatures and obj.__module__ == name:
                where = f"{name}.{attr}"
                if obj.stats.cache_hits:  # loaded from numba's cache: its assembly cannot be read
                    cached.append(where)
                    continue
                scanned.append(where)
                found = sorted(set(ESTIMATE.findall("\n".join(obj.inspect_asm().values()))))
                if found:
                    estimates[where] = found
    return {"scanned": scanned, "cached": cached, "estimates": estimates}


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="parvec-asm-") as tmp:
        _train_every_mode(tmp)
    call_shard_kernels()
    Path(argv[0]).write_text(json.dumps(scan(), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
