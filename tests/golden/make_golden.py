"""Golden vectors: what every training mode produced before the run engine was built.

``python tests/golden/make_golden.py OUT.json [MODE ...]`` trains each mode on a small fixed slice of the shipped
demo corpus (or a small fixed graph), with one thread, and writes the SHA-256 of every mode's input and output
vectors (with their shape and sums, to tell a changed bit from a changed algorithm) into one JSON file.
``tests/test_golden.py`` runs the same function in a fresh process and asserts the vectors are bit-identical to
``tests/golden/vectors.json``, which was written by the code of commit c9b23cc, before the refactor.

Bits depend on the machine code, so both runs compile for one fixed target (``GOLDEN_ENV``):
``NUMBA_CPU_NAME=generic`` (x86-64's baseline instruction set; the same code on every x86-64 CPU) with their own
numba cache, numpy without its AVX2/AVX-512 kernels, and OpenBLAS (scipy's, which numba's ``np.dot`` calls: PAR's
repulsion) on one thread with its Haswell kernels (``OPENBLAS_CORETYPE``; left alone, OpenBLAS picks SkylakeX,
Cooperlake or Zen kernels by the CPU, and their sgemm sums in another order).  The corpus, the graph and every
parameter are fixed.

The modes whose arithmetic goes through BLAS (``BLAS_MODES``) also depend on the OpenBLAS build, which scipy's
version decides: the script records the BLAS it ran (``"blas"``), trains those modes twice (``"MODE#2/in"``: the
same bits run to run), and ``--arrays DIR`` saves their vectors (``tests/golden/MODE.npz``), against which the test
checks a tolerance where the BLAS differs from the recorded one.

Example:
    python tests/golden/make_golden.py /tmp/vectors.json classic hogbatch
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "src" / "parvec" / "data" / "demo_corpus.txt.xz"
TOKENS = 40_000  # the first tokens of the demo corpus, 500 a line
COMMON = {"vector_size": 12, "window": 3, "negative": 4, "sample": 1e-3, "min_count": 4, "epochs": 2,
          "workers": 1, "seed": 3}


def corpus_file(directory: str | os.PathLike[str]) -> Path:
    """Write the golden corpus (the first ``TOKENS`` demo tokens, 500 a line) into ``directory``.

    Example:
        >>> corpus_file(tempfile.mkdtemp()).name
        'golden.txt'
    """
    with lzma.open(DEMO_CORPUS, "rt", encoding="utf-8") as f:
        words = f.read(TOKENS * 12).split()[:TOKENS]
    path = Path(directory) / "golden.txt"
    path.write_text("\n".join(" ".join(words[i:i + 500]) for i in range(0, len(words), 500)) + "\n",
                    encoding="utf-8")
    return path


def _word2vec(path: Path, **options) -> tuple[np.ndarray, np.ndarray]:
    import parvec

    model = parvec.Word2Vec(corpus_file=str(path), **(COMMON | options))
    return np.array(model.wv.vectors), np.array(model.syn1neg)


def _graph() -> object:
    # A fixed small graph: two rings of 40 nodes joined by 6 chords, and some random edges from a fixed seed.
    from parvec.graph.graph_io import Graph

    rng = np.random.default_rng(11)
    src, dst = [], []
    for base in (0, 40):
        for i in range(40):
            src.append(base + i)
            dst.append(base + (i + 1) % 40)
    for _ in range(30):
        a, b = (int(x) for x in rng.integers(0, 80, size=2))
        if a != b:
            src.append(a)
            dst.append(b)
    return Graph.from_edges(np.array(src), np.array(dst), n_nodes=80)


def _node2vec(deepwalk: bool) -> tuple[np.ndarray, np.ndarray]:
    from parvec.graph.node2vec import DeepWalk, Node2Vec

    options = {"dimensions": 12, "walk_length": 20, "num_walks": 4, "window": 3, "workers": 1, "seed": 5,
               "epochs": 2, "algo": "hogbatch", "negative": 5,
               "ns_exponent": 0.75}  # the golden run's own settings, not the defaults (0.75: the recorded runs')
    model = DeepWalk(_graph(), **options) if deepwalk else Node2Vec(_graph(), p=0.5, q=2.0, **options)
    vectors = np.array(model.fit_vectors())
    return vectors, np.zeros((0, vectors.shape[1]), dtype=np.float32)


MODES: dict[str, Callable[[Path], tuple[np.ndarray, np.ndarray]]] = {
    "classic": lambda p: _word2vec(p, algo="classic"),
    "hogbatch": lambda p: _word2vec(p, algo="hogbatch"),
    "par": lambda p: _word2vec(p, algo="par"),
    "cbow_classic": lambda p: _word2vec(p, sg=0, algo="classic"),
    "cbow_hogbatch": lambda p: _word2vec(p, sg=0, algo="hogbatch"),
    "hs_skipgram": lambda p: _word2vec(p, hs=1, negative=0, algo="classic"),
    "hs_cbow_negative": lambda p: _word2vec(p, hs=1, sg=0, algo="classic"),
    "node2vec": lambda p: _node2vec(deepwalk=False),
    "deepwalk": lambda p: _node2vec(deepwalk=True),
    "replicas_local1": lambda p: _cluster(p, "replicas"),
    "sharded_s1": lambda p: _cluster(p, "sharded"),
}
CLUSTER_MODES = ("replicas_local1", "sharded_s1")
# Modes whose vectors go through BLAS (numba's np.dot -> scipy's OpenBLAS): PAR's repulsion products.
BLAS_MODES = ("par",)


def _cluster(path: Path, mode: str) -> tuple[np.ndarray, np.ndarray]:
    import parvec

    if mode == "replicas":
        cluster = parvec.Cluster("local:1")
    else:
        # 256 input words per minibatch: what c9b23cc's default gave one client thread (512 words in flight,
        # at most 256); the default is 4096 in flight since, so the size is given to compare the same run; and
        # the paper's negatives per pair, the default until negatives per window replaced it; float32 on the
        # wire, the default until float16 replaced it; split calls, what one shard made until fused calls
        cluster = parvec.Cluster("local:1", mode="sharded", shards=1, clients=1, threads_per_actor=1,
                                 minibatch_words=256, negatives_per="pair", wire_floats="float32",
                                 shard_calls="split")
    return _word2vec(path, algo="hogbatch", cluster=cluster)


def train_modes(modes: list[str]) -> dict[str, np.ndarray]:
    """Train each of ``modes`` and return ``{"MODE/in": w_in, "MODE/out": w_out}``; a mode of ``BLAS_MODES`` is
    trained twice, the second run as ``"MODE#2/in"`` and ``"MODE#2/out"``.

    Example:
        >>> sorted(train_modes(["classic"]))  # doctest: +SKIP
        ['classic/in', 'classic/out']
    """
    out: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory(prefix="parvec-golden-") as tmp:
        path = corpus_file(tmp)
        for mode in modes:
            for name in (mode, f"{mode}#2") if mode in BLAS_MODES else (mode,):
                w_in, w_out = MODES[mode](path)
                out[f"{name}/in"], out[f"{name}/out"] = w_in, w_out
    return out


def blas_in_use() -> dict[str, str]:
    """The BLAS libraries this process loaded (threadpoolctl): ``{file stem: "API VERSION ARCHITECTURE"}``.

    Example:
        >>> isinstance(blas_in_use(), dict)
        True
    """
    import scipy.linalg  # noqa: F401 - loads scipy's OpenBLAS, the one numba's np.dot calls
    from threadpoolctl import threadpool_info

    return {Path(i["filepath"]).name.split("-")[0]: f"{i['internal_api']} {i.get('version')} {i.get('architecture')}"
            for i in threadpool_info() if i.get("user_api") == "blas"}


GOLDEN_ENV = {"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": "", "OPENBLAS_CORETYPE": "Haswell",
              "OPENBLAS_NUM_THREADS": "1", "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"}


def fingerprint(w: np.ndarray) -> dict[str, object]:
    """SHA-256 of an array's float32 bytes, with its shape and sums (shown when the bits differ).

    Example:
        >>> fingerprint(np.zeros((2, 3), np.float32))["shape"]
        [2, 3]
    """
    w = np.ascontiguousarray(w, dtype=np.float32)
    return {"sha256": hashlib.sha256(w.tobytes()).hexdigest(), "shape": list(w.shape),
            "sum": float(w.sum(dtype=np.float64)), "abs_sum": float(np.abs(w).sum(dtype=np.float64))}


def run_golden(target: str | os.PathLike[str], modes: list[str], cache_dir: str | os.PathLike[str],
               timeout: float = 900, arrays: str | os.PathLike[str] | None = None,
               asm: str | os.PathLike[str] | None = None) -> dict[str, dict[str, object]]:
    """Run this script in a fresh process with ``GOLDEN_ENV`` and return the fingerprints it wrote (and, with
    ``arrays``, the vectors of its ``BLAS_MODES`` as ``arrays/MODE.npz``; with ``asm``, the estimate instructions
    in the compiled kernels' assembly as ``tests/kernels/asm_probe.py`` writes them).

    Example:
        >>> run_golden("/tmp/g.json", ["classic"], "/tmp/numba-golden")  # doctest: +SKIP
    """
    env = os.environ | GOLDEN_ENV | {"NUMBA_CACHE_DIR": str(cache_dir)}
    extra = ["--arrays", str(arrays)] if arrays is not None else []
    extra += ["--asm", str(asm)] if asm is not None else []
    subprocess.run([sys.executable, __file__, str(target), *modes, *extra], env=env, check=True, timeout=timeout)
    return json.loads(Path(target).read_text(encoding="utf-8"))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    options: dict[str, Path | None] = {"--arrays": None, "--asm": None}
    for flag in options:
        if flag in argv:
            at = argv.index(flag)
            options[flag], argv = Path(argv[at + 1]), argv[:at] + argv[at + 2:]
    arrays, asm = options["--arrays"], options["--asm"]
    target, modes = Path(argv[0]), argv[1:] or list(MODES)
    if any(os.environ.get(k) != v for k, v in GOLDEN_ENV.items()):
        run_golden(target, modes, tempfile.mkdtemp(prefix="parvec-golden-numba-"), arrays=arrays, asm=asm)
        return 0
    os.environ.setdefault("PARVEC_CACHE_DIR", tempfile.mkdtemp(prefix="parvec-golden-cache-"))
    if asm is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kernels"))
        import asm_probe

        asm_probe.call_shard_kernels()  # compiled here before a cluster mode's workers put them in numba's cache
    trained = train_modes(modes)
    prints: dict[str, object] = {k: fingerprint(v) for k, v in trained.items()}
    prints["blas"] = blas_in_use()
    if arrays is not None:
        arrays.mkdir(parents=True, exist_ok=True)
        for mode in (m for m in modes if m in BLAS_MODES):
            np.savez_compressed(arrays / f"{mode}.npz", **{side: trained[f"{mode}/{side}"] for side in ("in", "out")})
    if asm is not None:  # every kernel compiled in this process: read their assembly
        asm.write_text(json.dumps(asm_probe.scan(), indent=1) + "\n", encoding="utf-8")
    Path(target).write_text(json.dumps(prints, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(modes)} modes to {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
