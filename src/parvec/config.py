"""Typed, validated training parameters shared by every trainer, the CLI and the graph layer."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from parvec.capabilities import check_config
from parvec.errors import ParvecError
from parvec.resources import cpu_count

DEFAULT_ALGO = "hogbatch"
DEFAULT_CBOW_ALGO = "classic"  # CBOW (sg=False) when no algo is named: see default_algo
SG_ALPHA = 0.025  # the default starting learning rate of skip-gram (word2vec.c, gensim)
CBOW_ALPHA = 0.05  # ... and of CBOW (word2vec.c -cbow 1; gensim keeps 0.025 for sg=0: pass alpha=0.025 there)
DEVICES = ("cpu", "cuda")
DEFAULT_GPU_ALGO = "full-w2v"
ALL_ALGORITHMS = ("classic", "hogbatch", "par", "full-w2v")  # every name --algo accepts
# node2vec/DeepWalk draw negatives by a node's walk count ** this (words: ns_exponent 0.75, word2vec's): the
# flatter draw gives low-degree nodes more negatives, which raised macro-F1 on BlogCatalog and PPI
# (docs/guide/graphs.md)
GRAPH_NS_EXPONENT = 0.25


def default_algo(device: str, sg: bool = True) -> str:
    """The algorithm a device trains with when none is named: on cpu hogbatch for skip-gram and classic for
    CBOW, full-w2v on cuda.

    CBOW defaults to word2vec.c's loop because the batched CBOW kernel (``algo="hogbatch"``, about 2x the words
    per second) scored 4.8 analogy points below gensim at the same learning rate and 6.2 below word2vec.c on the
    Wikipedia corpus (docs/benchmarks.md); classic CBOW matched both.

    Example:
        >>> default_algo("cpu"), default_algo("cpu", sg=False), default_algo("cuda")
        ('hogbatch', 'classic', 'full-w2v')
    """
    if device == "cuda":
        return DEFAULT_GPU_ALGO
    return DEFAULT_ALGO if sg else DEFAULT_CBOW_ALGO


def default_alpha(sg: bool) -> float:
    """The starting learning rate when none is given: 0.025 for skip-gram, 0.05 for CBOW (word2vec.c's rule;
    gensim's ``Word2Vec`` starts CBOW at 0.025 too, so pass ``alpha=0.025`` to reproduce a gensim run).

    Example:
        >>> default_alpha(True), default_alpha(False)
        (0.025, 0.05)
    """
    return SG_ALPHA if sg else CBOW_ALPHA


def default_threads() -> int:
    """The number of cores this process may use (:func:`parvec.resources.cpu_count`): every run's default threads.

    Example:
        >>> default_threads() >= 1
        True
    """
    return cpu_count()


@dataclass
class TrainConfig:
    """Skip-gram (``sg=True``) or CBOW (``sg=False``) with negative sampling: every knob a trainer reads.

    Defaults follow word2vec.c (window 5, negative 5, sample 1e-3, min_alpha = alpha * 1e-4; alpha
    0.025 for skip-gram and 0.05 for CBOW when ``alpha`` is left None: the resolved number is what
    ``alpha`` holds after construction, and what reports and saved models record) except ``epochs``
    (5, as gensim) and ``dim`` (100).

    Example:
        >>> TrainConfig(dim=50, algo="classic").validate().dim
        50
    """

    algo: str | None = None  # None: hogbatch on device "cpu", full-w2v on "cuda" (default_algo)
    dim: int = 100
    window: int = 5
    negative: int = 5
    sg: bool = True  # skip-gram (gensim's sg=1); False: CBOW (word2vec.c -cbow 1)
    hs: bool = False  # hierarchical softmax (word2vec.c -hs 1, gensim hs=1), alone (negative 0) or with negatives
    cbow_mean: bool = True  # CBOW: average the window's input vectors (word2vec.c); False: sum them
    sample: float = 1e-3
    alpha: float | None = None  # None: 0.025 for skip-gram, 0.05 for CBOW (default_alpha), set at construction
    min_alpha: float | None = None  # None: alpha * 1e-4, as word2vec.c
    epochs: int = 5
    threads: int = field(default_factory=default_threads)
    seed: int = 1
    ns_exponent: float = 0.75
    max_sentence_length: int = 10000
    # HogBatch (Ji et al.): how many context words share one set of negatives; 0 = 2*window+1.
    batch_size: int = 0
    # PAR-Word2Vec (Moon et al.): repulsion minibatch size B; 0 = the whole sentence.
    par_batch: int = 24
    # PAR-Word2Vec: negatives per minibatch H = par_h_factor * T * C_rep (see kernels/par.py).
    par_h_factor: float = 1.0
    # full-w2v on cuda: each block's change of an output row times min(1, gpu_writers_cap / c), c the blocks
    # holding the row at once, and of an input row leaving its ring, c the other blocks' copies of it plus one
    # (parvec.gpu.collisions); 0 adds every change whole.
    gpu_writers_cap: int = 0
    chunk_words: int = 10000
    compute_loss: bool = True
    progress: bool | None = None  # None: a bar when stderr is a terminal
    # Where the kernels run: "cpu" (the numba CPU kernels) or "cuda" (parvec.gpu, the [gpu] extra).
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.algo is None:
            self.algo = default_algo(self.device, bool(self.sg))
        if self.alpha is None:
            self.alpha = default_alpha(bool(self.sg))

    @property
    def final_alpha(self) -> float:
        """The learning rate at the end of training."""
        assert self.alpha is not None  # set by __post_init__
        return self.alpha * 1e-4 if self.min_alpha is None else self.min_alpha

    def validate(self) -> TrainConfig:
        """Raise :class:`ParvecError` naming the first bad parameter; returns self."""
        if self.device not in DEVICES:
            raise ParvecError(f"device must be one of {', '.join(DEVICES)}; got {self.device!r}")
        if self.algo not in ALL_ALGORITHMS:
            raise ParvecError(f"algo must be one of {', '.join(ALL_ALGORITHMS)}; got {self.algo!r}")
        for name in ("sg", "hs", "cbow_mean"):
            if not isinstance(getattr(self, name), bool):
                raise ParvecError(f"{name} must be True or False (1 or 0), got {getattr(self, name)!r}")
        check_config(self)  # what the device and algorithm run: CBOW, hierarchical softmax (parvec.capabilities)
        for name in ("dim", "window", "negative", "epochs", "threads", "max_sentence_length", "chunk_words"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                if name == "negative" and self.hs and value == 0 and not isinstance(value, bool):
                    continue  # hierarchical softmax alone
                if name == "negative" and isinstance(value, int) and not isinstance(value, bool) and value == 0:
                    raise ParvecError("negative must be a positive integer, got 0: negative sampling needs at "
                                      "least one noise word (negative=0 only with hierarchical softmax, hs=1)")
                raise ParvecError(f"{name} must be a positive integer, got {value!r}")
        alpha = self.alpha
        if alpha is None or not alpha > 0:
            raise ParvecError(f"alpha must be positive, got {alpha}")
        if self.min_alpha is not None and not (0 <= self.min_alpha <= alpha):
            raise ParvecError(f"min_alpha must be in [0, alpha], got {self.min_alpha}")
        if self.sample < 0:
            raise ParvecError(f"sample must be >= 0, got {self.sample}")
        if self.batch_size < 0:
            raise ParvecError(f"batch_size must be >= 0, got {self.batch_size}")
        if self.par_batch < 0:
            raise ParvecError(f"par_batch must be >= 0, got {self.par_batch}")
        if not self.par_h_factor > 0:
            raise ParvecError(f"par_h_factor must be positive, got {self.par_h_factor}")
        cap = self.gpu_writers_cap
        if not isinstance(cap, int) or isinstance(cap, bool) or cap < 0:
            raise ParvecError(f"gpu_writers_cap must be an integer >= 0 (0: off), got {cap!r}")
        if not (0 <= self.seed < 2**63):
            raise ParvecError(f"seed must be in [0, 2**63), got {self.seed}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON reports and model files (``gpu_writers_cap`` only when set, so the files of runs
        without it stay what they were)."""
        d = asdict(self)
        d["min_alpha"] = self.final_alpha
        if not d["gpu_writers_cap"]:
            del d["gpu_writers_cap"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        """Inverse of :meth:`to_dict`; unknown keys are ignored (files from newer versions)."""
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)
