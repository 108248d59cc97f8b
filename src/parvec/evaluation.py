"""Intrinsic evaluation: word-pair similarity (WS-353, SimLex-999) and analogies (Google's set).

Pair files have ``word1<TAB>word2<TAB>score`` lines (``#`` starts a comment); analogy files are
``questions-words.txt``: ``: section`` headers followed by ``a b c d`` lines meaning "a is to b as c is
to d".  Matching is case-insensitive by default (as gensim: keys and questions are upper-cased and
the most frequent spelling of a word wins), so ``Jerusalem`` finds ``jerusalem``.

Analogies are solved in batches instead of one ``most_similar`` call per question: for a batch of
questions, the cosines of its distinct question words against the searched vocabulary are one
matrix product ``S = W[words] @ W[:N].T`` (a few hundred distinct words serve thousands of
questions), and a numba kernel scans ``S[b] - S[a] + S[c]`` (3CosAdd, the same ranking as gensim's
normalised mean) or ``(1+S[b])/2 * (1+S[c])/2 / ((1+S[a])/2 + 1e-6)`` (3CosMul) once per question,
skipping the three question words (and their other spellings when case-insensitive).  The Google
set over 30,000 words takes well under a second.

The functions take any set of word vectors that has what :class:`WordVectors` lists (a
:class:`parvec.KeyedVectors`, whose ``evaluate_word_pairs``/``evaluate_word_analogies`` call in here, or
gensim's); this module does not import the class.

Example:
    >>> from parvec.evaluation import format_report, score_sets
    >>> print(format_report(score_sets(kv)))  # doctest: +SKIP
"""

from __future__ import annotations

import itertools
import lzma
import math
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numba import njit, prange

from parvec.errors import ParvecError

__all__ = [
    "EVAL_FILES",
    "AnalogyScores",
    "AnalogySection",
    "EvalScores",
    "NonFiniteVectors",
    "PairScores",
    "PairSetScores",
    "RowVectors",
    "WordVectors",
    "analogy_sections",
    "default_eval_paths",
    "shipped_eval_dir",
    "evaluate",
    "format_report",
    "read_analogy_questions",
    "read_word_pairs",
    "score_sets",
    "solve_analogies",
    "word_analogies",
    "word_pair_scores",
]

PathLike = str | os.PathLike[str]

# Name used in results -> file name looked for in the shared eval directory.
EVAL_FILES = {"ws353": "wordsim353.tsv", "simlex": "simlex999.txt", "analogies": "questions-words.txt"}
_TITLES = {"ws353": "WS-353", "simlex": "SimLex-999"}
METHODS = ("3cosadd", "3cosmul")
_S_BUDGET = 1 << 25  # float32 cells of the cosine block S per batch (128 MiB)


@runtime_checkable
class WordVectors(Protocol):
    """What the evaluations read of a set of word vectors: the keys in row order (most frequent first),
    their number, and the rows scaled to unit length.  :class:`parvec.KeyedVectors` has them, as gensim's
    ``KeyedVectors`` does.

    Example:
        >>> import parvec
        >>> isinstance(parvec.KeyedVectors(np.eye(2, dtype=np.float32), ["a", "b"]), WordVectors)
        True
    """

    @property
    def index_to_key(self) -> Sequence[str]: ...

    def __len__(self) -> int: ...

    def get_normed_vectors(self) -> np.ndarray: ...


@runtime_checkable
class RowVectors(Protocol):
    """Word vectors that assemble the rows asked for, at unit length, instead of holding the whole normalised
    matrix (:class:`parvec.sharded_vectors.ShardedKeyedVectors`): the evaluations then read only the rows they
    use (the pairs' words, the analogies' searched rows).

    Example:
        >>> import parvec
        >>> isinstance(parvec.KeyedVectors(np.eye(2, dtype=np.float32), ["a", "b"]), RowVectors)
        False
    """

    def get_rows(self, rows: slice | Sequence[int] | np.ndarray, norm: bool = False) -> np.ndarray: ...


class NonFiniteVectors(ParvecError):
    """A vector an evaluation reads holds NaN or an infinity: the vectors are damaged (or training diverged), and
    no score computed from them means anything.

    Example:
        >>> raise NonFiniteVectors("the vector of 'x' (row 3) holds NaN or infinite values")
        Traceback (most recent call last):
        ...
        parvec.evaluation.NonFiniteVectors: the vector of 'x' (row 3) holds NaN or infinite values
    """


def _normed_rows(kv: WordVectors, rows: slice | np.ndarray) -> np.ndarray:
    # The unit rows `rows` (a slice of ids, or ids), checked finite: read on demand where the vectors offer it.
    normed = kv.get_rows(rows, norm=True) if isinstance(kv, RowVectors) else kv.get_normed_vectors()[rows]
    finite = np.isfinite(normed).all(axis=1)
    if not finite.all():
        ids = np.arange(len(kv))[rows] if isinstance(rows, slice) else np.asarray(rows)
        bad = int(ids[int(np.flatnonzero(~finite)[0])])
        raise NonFiniteVectors(f"the vector of {kv.index_to_key[bad]!r} (row {bad}) holds NaN or infinite values: "
                               "the vectors are damaged (or their training diverged)")
    return normed


# ---------------------------------------------------------------------- locating the files
def _candidate_dirs() -> list[Path]:
    dirs = []
    env = os.environ.get("PARVEC_EVAL_DIR")
    if env:
        dirs.append(Path(env))
    dirs.append(Path.cwd().parent / "shared" / "data" / "eval")
    repo_root = Path(__file__).resolve().parents[2]  # src/parvec/evaluation.py -> the repository
    dirs.append(repo_root.parent / "shared" / "data" / "eval")
    return dirs


def shipped_eval_dir() -> Path:
    """The folder of the evaluation sets parvec ships (``parvec/data``: WS-353, SimLex-999, and Google's
    analogies xz-compressed; sources, licences and checksums in its README.md).

    Example:
        >>> sorted(p.name for p in shipped_eval_dir().glob("*") if p.name.startswith(("word", "sim", "quest")))
        ['questions-words.txt.xz', 'simlex999.txt', 'wordsim353.tsv']
    """
    from importlib import resources

    return Path(str(resources.files("parvec") / "data"))


def default_eval_paths() -> dict[str, Path]:
    """The evaluation files found, by name (``ws353``, ``simlex``, ``analogies``); missing ones are absent.

    Looks in ``$PARVEC_EVAL_DIR``, then ``../shared/data/eval`` from the current directory, then
    ``shared/data/eval`` next to the repository, then the copies parvec ships (:func:`shipped_eval_dir`);
    for each file the first directory holding it (or it with ``.xz``) wins.

    Example:
        >>> sorted(default_eval_paths())
        ['analogies', 'simlex', 'ws353']
    """
    found: dict[str, Path] = {}
    for name, filename in EVAL_FILES.items():
        for d in [*_candidate_dirs(), shipped_eval_dir()]:
            path = next((d / f for f in (filename, filename + ".xz") if (d / f).is_file()), None)
            if path is not None:
                found[name] = path
                break
    return found


def require_eval_paths() -> dict[str, Path]:
    """:func:`default_eval_paths`, or a :class:`ParvecError` when none is found (``eval_every_epoch``,
    ``--eval-every-epoch``: checked before training, not at its first epoch).

    Example:
        >>> sorted(require_eval_paths())
        ['analogies', 'simlex', 'ws353']
    """
    files = default_eval_paths()
    if not files:
        raise ParvecError(
            "eval_every_epoch: no evaluation files found (looked for "
            f"{', '.join(EVAL_FILES.values())} in $PARVEC_EVAL_DIR and shared/data/eval)"
        )
    return files


def epoch_scorer(wv: Any) -> Callable[[], dict[str, float | None]]:
    """What ``eval_every_epoch`` scores after every epoch: the word-similarity and analogy sets
    (:func:`require_eval_paths`, found now, before training) on ``wv`` (a :class:`parvec.keyedvectors.KeyedVectors`)
    as its vectors are then, as :func:`parvec.runlog.headline_scores`.

    Example:
        >>> score = epoch_scorer(model.wv); sorted(score())  # doctest: +SKIP
        ['analogy', 'simlex', 'ws353']
    """
    from parvec.runlog import headline_scores

    files = {k: str(v) for k, v in require_eval_paths().items()}

    def score() -> dict[str, float | None]:
        wv.fill_norms(force=True)  # the vectors moved since the norms were cached
        return headline_scores(score_sets(wv, files.get("ws353"), files.get("simlex"), files.get("analogies")))

    return score


# ---------------------------------------------------------------------- reading the files
def _read_lines(path: PathLike) -> list[str]:
    # An .xz file (the shipped analogy set) is read decompressed; line numbers are the decompressed text's.
    p = Path(path)
    if not p.is_file():
        raise ParvecError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    raw = p.read_bytes()
    if p.suffix == ".xz":
        try:
            raw = lzma.decompress(raw)
        except lzma.LZMAError as exc:
            raise ParvecError(f"{p}: not a valid .xz file ({exc})") from None
    try:
        return raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ParvecError(f"{p}:{line}: invalid UTF-8 ({exc.reason})") from None


def read_word_pairs(path: PathLike, delimiter: str | None = "\t") -> list[tuple[str, str, float]]:
    """Read ``word1 word2 score`` lines (``delimiter=None``: any whitespace); ``#`` lines are comments.

    Blank lines are skipped; a malformed line raises :class:`ParvecError` naming the file and line.

    Example:
        >>> read_word_pairs("wordsim353.tsv")[:1]  # doctest: +SKIP
        [('love', 'sex', 6.77)]
    """
    pairs = []
    for line_no, line in enumerate(_read_lines(path), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(delimiter)]
        if len(fields) != 3:
            how = "tab" if delimiter == "\t" else repr(delimiter) if delimiter else "whitespace"
            raise ParvecError(
                f"{path}:{line_no}: expected 'word1 word2 score' separated by {how}, got {len(fields)} fields"
            )
        try:
            score = float(fields[2])
        except ValueError:
            raise ParvecError(f"{path}:{line_no}: the score {fields[2]!r} is not a number") from None
        pairs.append((fields[0], fields[1], score))
    return pairs


def read_analogy_questions(path: PathLike) -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    """Read a ``questions-words.txt`` file: ``[(section name, [(a, b, c, d), ...]), ...]``.

    Example:
        >>> sections = read_analogy_questions("questions-words.txt")  # doctest: +SKIP
        >>> len(sections), sum(len(q) for _, q in sections)  # doctest: +SKIP
        (14, 19544)
    """
    sections: list[tuple[str, list[tuple[str, str, str, str]]]] = []
    for line_no, line in enumerate(_read_lines(path), 1):
        if line.startswith(":"):
            sections.append((line[1:].strip(), []))
            continue
        words = line.split()
        if not words:
            continue
        if not sections:
            raise ParvecError(f"{path}:{line_no}: a question before the first ': section' header")
        if len(words) != 4:
            raise ParvecError(f"{path}:{line_no}: expected 4 words 'a b c d', got {len(words)}")
        sections[-1][1].append((words[0], words[1], words[2], words[3]))
    return sections


def _keys(kv: WordVectors, rows: int) -> list[str]:
    # The first `rows` keys, read in one pass (a sharded model's words come from its partitions a block at a time).
    return list(itertools.islice(iter(kv.index_to_key), rows))


def _lookup(kv: WordVectors, rows: int, case_insensitive: bool, wanted: set[str] | None = None) -> dict[str, int]:
    """Word (upper-cased if case-insensitive) -> row, over the first ``rows`` rows; only the words of ``wanted``
    when given.  The first row of a word wins: the most frequent spelling when case-insensitive."""
    found: dict[str, int] = {}
    for i, key in enumerate(itertools.islice(iter(kv.index_to_key), rows)):
        word = key.upper() if case_insensitive else key
        if (wanted is None or word in wanted) and word not in found:
            found[word] = i
    return found


def _rows(kv: WordVectors, restrict_vocab: int | None) -> int:
    return len(kv) if restrict_vocab is None else max(0, min(int(restrict_vocab), len(kv)))


# ---------------------------------------------------------------------- word pairs
@dataclass
class PairScores:
    """Outcome of a word-pair evaluation (correlations are NaN with fewer than two pairs).

    Example:
        >>> PairScores((0.5, 0.01), (0.6, 0.001), 1.5, 353, 348).spearman[0]
        0.6
    """

    pearson: tuple[float, float]
    spearman: tuple[float, float]
    oov_percent: float
    pairs: int
    covered: int


def word_pair_scores(
    kv: WordVectors,
    path: PathLike,
    delimiter: str | None = "\t",
    restrict_vocab: int | None = 300000,
    case_insensitive: bool = True,
    dummy4unknown: bool = False,
) -> PairScores:
    """Pearson and Spearman correlation of cosine similarities with a pair file's scores.

    This is :meth:`KeyedVectors.evaluate_word_pairs` with the counts kept.

    Example:
        >>> word_pair_scores(kv, "simlex999.txt").spearman  # doctest: +SKIP
        (0.33, 1.2e-26)
    """
    from scipy import stats

    pairs = read_word_pairs(path, delimiter)
    if case_insensitive:
        pairs = [(a.upper(), b.upper(), score) for a, b, score in pairs]
    rows = _rows(kv, restrict_vocab)
    lookup = _lookup(kv, rows, case_insensitive, {w for a, b, _ in pairs for w in (a, b)})
    ids = np.array(sorted(set(lookup.values())), dtype=np.int64)
    normed = dict(zip(ids.tolist(), _normed_rows(kv, ids), strict=True))  # the pairs' rows only
    gold: list[float] = []
    model: list[float] = []
    oov = 0
    for a, b, score in pairs:
        ia, ib = lookup.get(a), lookup.get(b)
        if ia is None or ib is None:
            oov += 1
            if dummy4unknown:
                gold.append(score)
                model.append(0.0)
            continue
        gold.append(score)
        model.append(float(np.dot(normed[ia], normed[ib])))
    nan2 = (math.nan, math.nan)
    pearson, spearman = nan2, nan2
    if len(gold) >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant input: scipy warns and returns NaN
            pr = stats.pearsonr(gold, model)
            sr = stats.spearmanr(gold, model)
        pearson = (float(pr[0]), float(pr[1]))
        spearman = (float(sr[0]), float(sr[1]))
    # gensim's ratio: over all pairs, or over the scored ones when unknown pairs are scored too.
    denominator = len(gold) if dummy4unknown else len(gold) + oov
    oov_percent = 100.0 * oov / denominator if denominator else 0.0
    return PairScores(pearson, spearman, oov_percent, pairs=len(pairs), covered=len(pairs) - oov)


# ---------------------------------------------------------------------- analogies
_COLUMN_TILE = 1024  # columns of S scanned per pass, so the rows being read stay in cache


@njit(inline="always")
def _score(sims: np.ndarray, ra: int, rb: int, rc: int, j: int, method: int) -> np.float32:  # pragma: no cover
    score: np.float32  # sims' elements are Any to mypy
    if method == 0:
        score = sims[rb, j] - sims[ra, j] + sims[rc, j]
        return score
    one = np.float32(1.0)
    score = ((one + sims[rb, j]) * (one + sims[rc, j]) * np.float32(0.25)) / (
        (one + sims[ra, j]) * np.float32(0.5) + np.float32(1e-6)
    )
    return score


# nnan/ninf/nsz only let LLVM vectorise the max reduction; arithmetic stays IEEE exact.
@njit(parallel=True, cache=True, fastmath={"nnan", "ninf", "nsz"})
def _solve_kernel(sims: np.ndarray, qa: np.ndarray, qb: np.ndarray, qc: np.ndarray, ea: np.ndarray,  # pragma: no cover
                  eb: np.ndarray, ec: np.ndarray, canon: np.ndarray, method: int) -> np.ndarray:
    n_q = qa.shape[0]
    n_v = sims.shape[1]
    best = np.full(n_q, -np.inf, dtype=np.float32)
    pred = np.full(n_q, -1, dtype=np.int64)
    # Tile over columns: every question of the batch scans the same slice of S, which stays in cache
    # (scanning whole rows would stream three random rows of S from memory per question).
    for lo in range(0, n_v, _COLUMN_TILE):
        hi = min(n_v, lo + _COLUMN_TILE)
        for q in prange(n_q):
            ra, rb, rc = qa[q], qb[q], qc[q]
            top = best[q]
            # Pass 1, vectorised: the tile's best score.  Pass 2 (rare after the first tiles, and
            # in the tiles holding a question word): find it, skipping the question words.
            m = np.float32(-np.inf)
            for j in range(lo, hi):
                m = max(m, _score(sims, ra, rb, rc, j, method))
            if m > top:
                xa, xb, xc = ea[q], eb[q], ec[q]
                arg = pred[q]
                for j in range(lo, hi):
                    s = _score(sims, ra, rb, rc, j, method)
                    if s > top:
                        g = canon[j]
                        if g != xa and g != xb and g != xc:
                            top = s
                            arg = j
                best[q] = top
                pred[q] = arg
    return pred


def solve_analogies(
    normed: np.ndarray,
    questions: np.ndarray,
    canon: np.ndarray | None = None,
    methods: Sequence[str] = METHODS,
) -> dict[str, np.ndarray]:
    """Answer analogy questions given as row indices; returns the predicted row per question and method.

    ``normed`` holds the unit-length rows to search; ``questions`` is ``int [Q, 3]`` with the rows of
    ``a, b, c`` (answer: closest to ``b - a + c``).  ``canon[j]`` is the row that stands for row j's
    word (its most frequent spelling when matching is case-insensitive; default ``j``); a candidate
    whose ``canon`` is one of the question rows is skipped.  -1 means no candidate was left.

    Example:
        >>> import numpy as np
        >>> w = np.array([[1, 0], [0, 1], [0.8, 0.6], [0.6, 0.8]], dtype=np.float32)  # man woman king queen
        >>> w /= np.linalg.norm(w, axis=1, keepdims=True)
        >>> solve_analogies(w, np.array([[0, 1, 2]]))["3cosadd"].tolist()
        [3]
    """
    for m in methods:
        if m not in METHODS:
            raise ParvecError(f"unknown analogy method {m!r}; choose from {', '.join(METHODS)}")
    n_v = len(normed)
    questions = np.asarray(questions, dtype=np.int64).reshape(-1, 3)
    if canon is None:
        canon = np.arange(n_v, dtype=np.int64)
    out = {m: np.full(len(questions), -1, dtype=np.int64) for m in methods}
    if not len(questions) or not n_v:
        return out
    budget = max(3, _S_BUDGET // n_v)  # distinct words per batch, so S stays within the budget
    as_lists = questions.tolist()
    start = 0
    while start < len(questions):
        # Grow the batch while its distinct words fit the budget.
        seen: set[int] = set()
        stop = start
        for row in as_lists[start:]:
            new = [w for w in row if w not in seen]
            if len(seen) + len(set(new)) > budget and stop > start:
                break
            seen.update(new)
            stop += 1
        batch = questions[start:stop]
        words, inverse = np.unique(batch, return_inverse=True)
        inverse = inverse.reshape(batch.shape)
        sims = np.ascontiguousarray(normed[words] @ normed.T, dtype=np.float32)
        ex = canon[batch]
        for m in methods:
            out[m][start:stop] = _solve_kernel(
                sims,
                inverse[:, 0].copy(),
                inverse[:, 1].copy(),
                inverse[:, 2].copy(),
                ex[:, 0].copy(),
                ex[:, 1].copy(),
                ex[:, 2].copy(),
                canon,
                0 if m == "3cosadd" else 1,
            )
        start = stop
    return out


@dataclass
class _AnalogyOutcome:
    """Per section: the questions (as compared), which were covered, and correctness per method."""

    names: list[str] = field(default_factory=list)
    questions: list[list[tuple[str, str, str, str]]] = field(default_factory=list)
    covered: list[np.ndarray] = field(default_factory=list)
    correct: list[dict[str, np.ndarray]] = field(default_factory=list)


def _solve_file(
    kv: WordVectors,
    path: PathLike,
    restrict_vocab: int | None,
    case_insensitive: bool,
    methods: Sequence[str],
) -> _AnalogyOutcome:
    sections = read_analogy_questions(path)
    rows = _rows(kv, restrict_vocab)
    lookup = _lookup(kv, rows, case_insensitive)
    if case_insensitive:
        keys = _keys(kv, rows)
        canon = np.fromiter((lookup[keys[i].upper()] for i in range(rows)), dtype=np.int64, count=rows)
    else:
        canon = np.arange(rows, dtype=np.int64)
    outcome = _AnalogyOutcome()
    all_idx: list[list[int]] = []
    for name, qs in sections:
        if case_insensitive:
            qs = [(a.upper(), b.upper(), c.upper(), d.upper()) for a, b, c, d in qs]
        covered = np.zeros(len(qs), dtype=bool)
        for i, q in enumerate(qs):
            idx = [lookup.get(w) for w in q]
            if None not in idx:
                covered[i] = True
                all_idx.append(idx)  # type: ignore[arg-type]
        outcome.names.append(name)
        outcome.questions.append(qs)
        outcome.covered.append(covered)
    idx_arr = np.array(all_idx, dtype=np.int64).reshape(-1, 4)
    normed = _normed_rows(kv, slice(0, rows))
    preds = solve_analogies(normed, idx_arr[:, :3], canon, methods)
    # A prediction is right when it is a spelling of the expected word (its canon row).
    right = {m: (p >= 0) & (canon[np.maximum(p, 0)] == idx_arr[:, 3]) for m, p in preds.items()}
    offset = 0
    for covered in outcome.covered:
        n = int(covered.sum())
        per = {}
        for m in methods:
            full = np.zeros(len(covered), dtype=bool)
            full[covered] = right[m][offset : offset + n]
            per[m] = full
        outcome.correct.append(per)
        offset += n
    return outcome


def analogy_sections(
    kv: WordVectors,
    path: PathLike,
    restrict_vocab: int | None = 300000,
    case_insensitive: bool = True,
    dummy4unknown: bool = False,
    methods: Sequence[str] = ("3cosadd",),
) -> dict[str, list[dict[str, Any]]]:
    """gensim-style sections ``{"section", "correct", "incorrect"}`` (plus "Total accuracy") per method.

    Example:
        >>> analogy_sections(kv, "questions-words.txt")["3cosadd"][-1]["section"]  # doctest: +SKIP
        'Total accuracy'
    """
    outcome = _solve_file(kv, path, restrict_vocab, case_insensitive, methods)
    result: dict[str, list[dict[str, Any]]] = {}
    for m in methods:
        sections: list[dict[str, Any]] = []
        for name, qs, covered, correct in zip(
            outcome.names, outcome.questions, outcome.covered, outcome.correct, strict=True
        ):
            ok = correct[m]
            sections.append(
                {
                    "section": name,
                    "correct": [q for q, c in zip(qs, ok, strict=True) if c],
                    "incorrect": [
                        q for q, c, cov in zip(qs, ok, covered, strict=True) if not c and (cov or dummy4unknown)
                    ],
                }
            )
        sections.append(
            {
                "section": "Total accuracy",
                "correct": [q for s in sections for q in s["correct"]],
                "incorrect": [q for s in sections for q in s["incorrect"]],
            }
        )
        result[m] = sections
    return result


def word_analogies(
    kv: WordVectors,
    path: PathLike,
    restrict_vocab: int | None = 300000,
    case_insensitive: bool = True,
    dummy4unknown: bool = False,
    method: str = "3cosadd",
) -> tuple[float, list[dict[str, Any]]]:
    """gensim's ``evaluate_word_analogies``: ``(accuracy, sections)`` for one method (:func:`analogy_sections`).

    Example:
        >>> score, sections = word_analogies(kv, "questions-words.txt")  # doctest: +SKIP
    """
    results = analogy_sections(kv, path, restrict_vocab, case_insensitive, dummy4unknown, methods=(method,))
    sections = results[method]
    total = sections[-1]
    n = len(total["correct"]) + len(total["incorrect"])
    return (len(total["correct"]) / n if n else 0.0), sections


# ---------------------------------------------------------------------- the report
def _finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass(frozen=True)
class PairSetScores:
    """A word-pair set's scores (:func:`evaluate`): the file, Spearman's and Pearson's correlations and their
    p-values (None where they cannot be computed), the pairs, those covered, and the out-of-vocabulary share in
    percent.

    Example:
        >>> PairSetScores("ws.tsv", 0.66, 0.0, 0.64, 0.0, 353, 351, 0.57).to_json()["covered"]
        351
    """

    path: str
    spearman: float | None
    spearman_p: float | None
    pearson: float | None
    pearson_p: float | None
    pairs: int
    covered: int
    oov_percent: float

    def to_json(self) -> dict[str, str | float | int | None]:
        """The set's entry of :func:`evaluate`'s JSON."""
        return {"path": self.path, "spearman": self.spearman, "spearman_p": self.spearman_p, "pearson": self.pearson,
                "pearson_p": self.pearson_p, "pairs": self.pairs, "covered": self.covered,
                "oov_percent": self.oov_percent}



@dataclass(frozen=True)
class AnalogySection:
    """One section of an analogy file: its name, questions, those covered, and each method's accuracy over the
    covered ones (None: none covered).

    Example:
        >>> AnalogySection("capitals", 4, 3, {"3cosadd": 1.0, "3cosmul": 1.0}).to_json()["3cosadd"]
        1.0
    """

    section: str
    questions: int
    covered: int
    accuracy: dict[str, float | None]

    def to_json(self) -> dict[str, str | int | float | None]:
        """The section's entry of :func:`evaluate`'s JSON (one key per method)."""
        out: dict[str, str | int | float | None] = {"section": self.section, "questions": self.questions,
                                                    "covered": self.covered}
        return out | self.accuracy


@dataclass(frozen=True)
class AnalogyScores:
    """An analogy file's scores (:func:`evaluate`): the file, the words searched (``restrict_vocab``), each
    method's accuracy over the covered questions, the questions, those covered, the coverage, and the sections.

    Example:
        >>> AnalogyScores("q.txt", 30000, {"3cosadd": 0.5, "3cosmul": 0.5}, 4, 2, 0.5, ()).to_json()["coverage"]
        0.5
    """

    path: str
    restrict_vocab: int
    accuracy: dict[str, float]
    questions: int
    covered: int
    coverage: float
    sections: tuple[AnalogySection, ...]

    def to_json(self) -> dict[str, Any]:
        """The file's entry of :func:`evaluate`'s JSON."""
        return ({"path": self.path, "restrict_vocab": self.restrict_vocab} | self.accuracy
                | {"questions": self.questions, "covered": self.covered, "coverage": self.coverage,
                   "sections": [s.to_json() for s in self.sections]})



@dataclass(frozen=True)
class EvalScores:
    """:func:`score_sets`' result: each word-pair set's :class:`PairSetScores` and the analogy file's
    :class:`AnalogyScores` (None: not evaluated).  :meth:`to_json` is :func:`evaluate`'s JSON.

    Example:
        >>> EvalScores().to_json()
        {}
    """

    ws353: PairSetScores | None = None
    simlex: PairSetScores | None = None
    analogies: AnalogyScores | None = None

    def pair_sets(self) -> list[tuple[str, PairSetScores]]:
        """The word-pair sets evaluated, by name (``ws353``, ``simlex``)."""
        return [(name, s) for name, s in (("ws353", self.ws353), ("simlex", self.simlex)) if s is not None]

    def to_json(self) -> dict[str, Any]:
        """The sets evaluated, by name, as :func:`evaluate` returns them."""
        out = {name: s.to_json() for name, s in self.pair_sets()}
        if self.analogies is not None:
            out["analogies"] = self.analogies.to_json()
        return out



def evaluate(
    kv: WordVectors,
    ws353: PathLike | None = None,
    simlex: PathLike | None = None,
    analogies: PathLike | None = None,
    restrict_vocab: int = 30000,
) -> dict[str, Any]:
    """Evaluate on word-pair and analogy files; returns a JSON-serialisable dict (:func:`score_sets`' record,
    as JSON).

    With no file given, the default files (:func:`default_eval_paths`) are used.  Pair files are
    split on any whitespace and use the whole vocabulary; analogies search the ``restrict_vocab``
    most frequent words and only count questions whose four words are among them, as word2vec's
    ``compute-accuracy`` does.  Accuracies and coverage are fractions in [0, 1]; a correlation that
    cannot be computed is ``None``.

    Example:
        >>> evaluate(kv, ws353="wordsim353.tsv")["ws353"]["spearman"]  # doctest: +SKIP
        0.66
    """
    return score_sets(kv, ws353, simlex, analogies, restrict_vocab).to_json()


def score_sets(
    kv: WordVectors,
    ws353: PathLike | None = None,
    simlex: PathLike | None = None,
    analogies: PathLike | None = None,
    restrict_vocab: int = 30000,
) -> EvalScores:
    """:func:`evaluate`'s scores as an :class:`EvalScores` record.

    Example:
        >>> score_sets(kv, ws353="wordsim353.tsv").ws353.spearman  # doctest: +SKIP
        0.66
    """
    files = {"ws353": ws353, "simlex": simlex, "analogies": analogies}
    if all(v is None for v in files.values()):
        files = dict(default_eval_paths())
        if not files:
            raise ParvecError(
                "no evaluation files given and none found (looked for "
                f"{', '.join(EVAL_FILES.values())} in $PARVEC_EVAL_DIR and shared/data/eval)"
            )
    pairs: dict[str, PairSetScores] = {}
    for name in ("ws353", "simlex"):
        path = files.get(name)
        if path is None:
            continue
        s = word_pair_scores(kv, path, delimiter=None, restrict_vocab=None)
        pairs[name] = PairSetScores(str(path), _finite(s.spearman[0]), _finite(s.spearman[1]), _finite(s.pearson[0]),
                                 _finite(s.pearson[1]), s.pairs, s.covered, s.oov_percent)
    path = files.get("analogies")
    scores = None
    if path is not None:
        outcome = _solve_file(kv, path, restrict_vocab, True, METHODS)
        sections = []
        for name, covered, correct in zip(outcome.names, outcome.covered, outcome.correct, strict=True):
            n_cov = int(covered.sum())
            sections.append(AnalogySection(name, len(covered), n_cov, {
                m: int(correct[m].sum()) / n_cov if n_cov else None for m in METHODS}))
        n_q = sum(len(c) for c in outcome.covered)
        n_cov = sum(int(c.sum()) for c in outcome.covered)
        accuracy = {m: sum(int(c[m].sum()) for c in outcome.correct) / n_cov if n_cov else 0.0 for m in METHODS}
        scores = AnalogyScores(str(path), _rows(kv, restrict_vocab), accuracy, n_q, n_cov,
                               n_cov / n_q if n_q else 0.0, tuple(sections))
    return EvalScores(pairs.get("ws353"), pairs.get("simlex"), scores)


def _fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def format_report(result: EvalScores) -> str:
    """Render :func:`score_sets`' result as a short human-readable report.

    Example:
        >>> print(format_report(EvalScores(ws353=PairSetScores("ws.tsv", 0.66, None, 0.64, None, 353, 351, 0.57))))
        WS-353      Spearman 0.6600  Pearson 0.6400  pairs 351/353 (OOV 0.6%)
    """
    lines = []
    for name, r in result.pair_sets():
        lines.append(
            f"{_TITLES[name]:<11} Spearman {_fmt(r.spearman, '.4f')}  "
            f"Pearson {_fmt(r.pearson, '.4f')}  "
            f"pairs {r.covered}/{r.pairs} (OOV {r.oov_percent:.1f}%)"
        )
    a = result.analogies
    if a is not None:
        lines.append(
            f"Analogies   3CosAdd {a.accuracy['3cosadd']:.2%}  3CosMul {a.accuracy['3cosmul']:.2%}  "
            f"questions {a.covered}/{a.questions} covered ({a.coverage:.1%}, "
            f"top {a.restrict_vocab} words)"
        )
        for s in a.sections:
            lines.append(
                f"  {s.section:<28} 3CosAdd {_fmt(s.accuracy['3cosadd'], '7.2%')}  "
                f"3CosMul {_fmt(s.accuracy['3cosmul'], '7.2%')}  ({s.covered}/{s.questions})"
            )
    return "\n".join(lines)
