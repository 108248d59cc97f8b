"""How a GPU run is cut into kernel launches: the part of the driver with no GPU in it.

The GPU driver (:mod:`parvec.gpu.driver`) and the reference driver (:func:`parvec.gpu.reference.reference_train`)
walk the same plan, so the reference trains exactly what the kernels train:

- every part (the corpus, or a batch of node2vec walks) has its sentences cut to at most
  :data:`GPU_MAX_SENTENCE` tokens (``split_long_sentences``, the CPU trainer's function), so a sentence's
  subsampled tokens fit in the block's shared memory;
- consecutive sentences are grouped into launches of about ``words_per_launch`` raw words (at least
  :data:`MIN_WORDS_PER_LAUNCH`, and at most :data:`MAX_BLOCKS_PER_LAUNCH` sentences), one thread block
  per sentence;
- each launch gets the learning rate at its first and last word from the run's schedule
  (:class:`parvec.schedule.Schedule`, every driver's); inside a launch a sentence's rate is interpolated at its
  first word;
- each sentence's random numbers are keyed by (seed, epoch) and its index among the epoch's sentences
  (:mod:`parvec.gpu.rng`).

Example:
    >>> launch_bounds(np.array([0, 3, 6, 9]), 6).tolist()
    [0, 2, 3]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from parvec.chunks import Part, split_long_sentences
from parvec.config import TrainConfig
from parvec.gpu.rng import epoch_key
from parvec.schedule import Schedule

GPU_MAX_SENTENCE = 1000  # tokens per sentence (or walk) on the GPU: the block's token buffer
MIN_WORDS_PER_LAUNCH = 20_000
DEFAULT_WORDS_PER_LAUNCH = 1 << 18  # the most full-w2v launches by default (262,144 words: ~260 blocks)
# A launch's sentences run as concurrent blocks that update shared rows Hogwild-style, so the launch size is how
# many sentences' updates pile up on the same frequent rows at once: speed and quality pull against each other.
# Measured on an H200 (docs/gpu.md, benchmarks/gpu_check.sh's launch_quality: 16.9M-token corpus, d 128, 5
# epochs, 3 seeds, WS-353 / SimLex-999 / analogy against CPU hogbatch's 0.684 / 0.314 / 38.2 in the same run):
# full-w2v at 131,072 words per launch 74M words/s, +0.003 / -0.007 / -0.7; at 262,144 129M, -0.006 / -0.007 /
# -0.9; at 524,288 179M, -0.016 / -0.009 / -1.8; at 1,048,576 221M, -0.022 / -0.010 / -2.2.  262,144 is the
# largest size within 0.01 / 0.01 / 1 of CPU hogbatch.  PAR, whose repulsion sums a minibatch's gradients onto
# each shared negative, keeps its 100k cap (its interleaved order scored 0.677 / 0.310 / 36.2 at 1M words per
# launch on the H200, one seed: not yet three).  On the 2M-token demo corpus one launch per epoch (every sentence
# at once) spoils full-w2v's related-words test, so a launch is also at most 1/16 of an epoch.
MAX_WORDS_PER_LAUNCH = {"full-w2v": DEFAULT_WORDS_PER_LAUNCH, "par": 100_000}
LAUNCHES_PER_EPOCH = 16
MAX_BLOCKS_PER_LAUNCH = 1 << 16
# numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1) runs every GPU thread of a block as a Python thread.  Measured
# on a 471-word corpus at dim 100 (docs/gpu.md): 2.6 words/s with a GPU's defaults (64 threads per block, one
# launch, Python's 5 ms switch interval), about 50 words/s with these: 4 threads per block, launches of about
# one sentence (the driver reports progress between them), and a 50 us switch interval while it trains (the
# simulator's barriers poll every thread of the block).
SIM_THREADS_PER_BLOCK = 4
SIM_WORDS_PER_LAUNCH = GPU_MAX_SENTENCE
SIM_SWITCH_INTERVAL_S = 5e-5
SIM_PROGRESS_S = 10.0  # seconds between the simulator's progress lines


@dataclass(frozen=True)
class Launch:
    """One kernel launch: sentences ``s_lo..s_hi`` of a part (after cutting), one block each.

    ``sentence_base`` is the epoch-wide index of sentence ``s_lo`` (the RNG's sentence counter), ``words``
    the raw words of the launch, ``alpha0``/``alpha1`` the schedule's rate at its first and last word.
    """

    epoch: int
    s_lo: int
    s_hi: int
    sentence_base: int
    words: int
    alpha0: float
    alpha1: float
    key: np.uint64


def default_words_per_launch(algo: str, words_per_epoch: int) -> int:
    """Words per launch when none is given: ``words_per_epoch / LAUNCHES_PER_EPOCH``, at least
    :data:`MIN_WORDS_PER_LAUNCH` and at most the algorithm's :data:`MAX_WORDS_PER_LAUNCH` (why: the comment
    above it).

    Example:
        >>> default_words_per_launch("full-w2v", 17_000_000), default_words_per_launch("par", 17_000_000)
        (262144, 100000)
        >>> default_words_per_launch("full-w2v", 2_000_000)
        125000
    """
    cap = MAX_WORDS_PER_LAUNCH.get(algo, DEFAULT_WORDS_PER_LAUNCH)
    return int(min(cap, max(MIN_WORDS_PER_LAUNCH, int(words_per_epoch) // LAUNCHES_PER_EPOCH)))


def launch_bounds(offsets: np.ndarray, words_per_launch: int, max_blocks: int = MAX_BLOCKS_PER_LAUNCH) -> np.ndarray:
    """Sentence indices that cut a part into launches of about ``words_per_launch`` raw words (whole
    sentences; at most ``max_blocks`` sentences each).

    Example:
        >>> launch_bounds(np.array([0, 1, 2, 3, 4, 5]), 100, max_blocks=2).tolist()
        [0, 2, 4, 5]
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    n_sent = len(offsets) - 1
    if n_sent <= 0:
        return np.zeros(1, dtype=np.int64)
    cuts = [0]
    while cuts[-1] < n_sent:
        lo = cuts[-1]
        # the first sentence whose end passes lo's start + words_per_launch ends the launch
        hi = int(np.searchsorted(offsets, offsets[lo] + words_per_launch, side="left"))
        hi = min(max(hi, lo + 1), lo + max_blocks, n_sent)
        cuts.append(hi)
    return np.asarray(cuts, dtype=np.int64)


def epoch_launches(config: TrainConfig, parts: Iterable[Part], epoch: int, schedule: Schedule,
                   words_per_launch: int) -> Iterator[tuple[np.ndarray, np.ndarray, Launch]]:
    """The launches of one epoch: ``(tokens, cut_offsets, launch)`` for each, part after part.

    Each launch's rates are ``schedule``'s (:class:`parvec.schedule.Schedule`, the one every driver uses) at its
    first word and just after its last; parts beyond the schedule's ``words_per_epoch`` train at the final rate.

    Example:
        >>> cfg = TrainConfig(device="cuda", algo="full-w2v")
        >>> [l.words for _, _, l in epoch_launches(cfg, [(np.zeros(5, np.int32), np.array([0, 2, 5]))],
        ...                                         0, Schedule.of(cfg, 5, 1), 100_000)]
        [5]
    """
    key = epoch_key(config.seed, epoch)
    max_len = min(config.max_sentence_length, GPU_MAX_SENTENCE)
    position = 0
    sentence_base = 0
    for tokens, offsets in parts:
        cut = split_long_sentences(offsets, max_len)
        bounds = launch_bounds(cut, max(words_per_launch, 1))
        for c in range(len(bounds) - 1):
            lo, hi = int(bounds[c]), int(bounds[c + 1])
            words = int(cut[hi] - cut[lo])
            alpha0, alpha1 = schedule.span(epoch, position, words)
            yield tokens, cut, Launch(epoch, lo, hi, sentence_base + lo, words, alpha0, alpha1, key)
            position += words
        sentence_base += len(cut) - 1


def sentence_alpha(launch: Launch, offsets: np.ndarray, s: int) -> np.float32:
    """The rate sentence ``s`` of a launch trains at: the launch's rates interpolated at its first word
    (the kernels compute the same expression).

    Example:
        >>> l = Launch(0, 0, 2, 0, 10, 0.02, 0.01, np.uint64(1))
        >>> round(float(sentence_alpha(l, np.array([0, 5, 10]), 1)), 6)
        0.015
    """
    frac = float(offsets[s] - offsets[launch.s_lo]) / float(max(launch.words, 1))
    return np.float32(launch.alpha0 + (launch.alpha1 - launch.alpha0) * frac)
