"""Evaluation files, the combined report and locating the shared evaluation data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from shared_files import needs_shared

from parvec import evaluation
from parvec.errors import ParvecError
from parvec.evaluation import (
    default_eval_paths,
    evaluate,
    format_report,
    read_analogy_questions,
    read_word_pairs,
    score_sets,
    solve_analogies,
)
from parvec.keyedvectors import KeyedVectors

# Where parvec.evaluation looks beside the repository (not $PARVEC_SHARED_DATA: evaluation does not read it).
SHARED_EVAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "eval"
needs_shared_eval = needs_shared(SHARED_EVAL)


@pytest.fixture
def kv() -> KeyedVectors:
    # Axes: capital-ness, country-ness, france, germany, italy; plus unrelated words.
    rows = {
        "paris": [1, 0, 1, 0, 0],
        "france": [0, 1, 1, 0, 0],
        "berlin": [1, 0, 0, 1, 0],
        "germany": [0, 1, 0, 1, 0],
        "rome": [1, 0, 0, 0, 1],
        "italy": [0, 1, 0, 0, 1],
        "jerusalem": [1, 0.2, 0, 0, 0],
        "cat": [0, 0, 0.1, 0.1, 0.1],
        "dog": [0, 0, 0.1, 0.1, 0.12],
    }
    return KeyedVectors(np.array(list(rows.values()), dtype=np.float32), list(rows))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    ws = tmp_path / "ws.tsv"
    ws.write_text("# w1\tw2\tscore\ncat\tdog\t9\nParis\tfrance\t7\nJerusalem\tcat\t1\nberlin\tunicorn\t5\n")
    simlex = tmp_path / "simlex.txt"
    simlex.write_text("cat dog 8\nrome italy 6\nparis cat 2\n")  # whitespace-separated is fine too
    an = tmp_path / "q.txt"
    an.write_text(
        ": capitals\nParis France Berlin Germany\nberlin germany rome italy\nrome italy paris france\n"
        "paris france rome unicornland\n: other\ncat dog paris france\n"
    )
    return {"ws353": ws, "simlex": simlex, "analogies": an}


# ---------------------------------------------------------------------- parsing
def test_read_word_pairs(files):
    assert read_word_pairs(files["ws353"]) == [
        ("cat", "dog", 9.0),
        ("Paris", "france", 7.0),
        ("Jerusalem", "cat", 1.0),
        ("berlin", "unicorn", 5.0),
    ]
    assert len(read_word_pairs(files["simlex"], delimiter=None)) == 3


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a\tb\n", ":1: expected 'word1 word2 score' separated by tab, got 2 fields"),
        ("# c\na\tb\tlots\n", ":2: the score 'lots' is not a number"),
    ],
)
def test_bad_pair_file(tmp_path, text, fragment):
    path = tmp_path / "p.tsv"
    path.write_text(text)
    with pytest.raises(ParvecError) as exc:
        read_word_pairs(path)
    assert str(path) in str(exc.value) and fragment in str(exc.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a b c d\n", ":1: a question before the first ': section' header"),
        (": s\na b c d\na b c\n", ":3: expected 4 words 'a b c d', got 3"),
    ],
)
def test_bad_analogy_file(tmp_path, text, fragment):
    path = tmp_path / "q.txt"
    path.write_text(text)
    with pytest.raises(ParvecError) as exc:
        read_analogy_questions(path)
    assert str(path) in str(exc.value) and fragment in str(exc.value)


def test_missing_and_non_utf8_files(tmp_path):
    with pytest.raises(ParvecError, match="nope.txt: no such file"):
        read_word_pairs(tmp_path / "nope.txt")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b": s\na b c d\n\xff b c d\n")
    with pytest.raises(ParvecError, match=r"bad\.txt:3: invalid UTF-8"):
        read_analogy_questions(bad)


@needs_shared_eval
def test_real_eval_files_parse_with_expected_counts():
    ws = read_word_pairs(SHARED_EVAL / "wordsim353.tsv")
    simlex = read_word_pairs(SHARED_EVAL / "simlex999.txt")
    sections = read_analogy_questions(SHARED_EVAL / "questions-words.txt")
    assert len(ws) == 353 and len(simlex) == 999
    assert len(sections) == 14
    assert sum(len(q) for _, q in sections) == 19544
    assert sections[0][0] == "capital-common-countries" and sections[-1][0] == "gram9-plural-verbs"
    assert ("Jerusalem", "Israel", 8.46) in ws


@needs_shared_eval
def test_default_paths_find_the_shared_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("PARVEC_EVAL_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # not found from the current directory: found from the repository
    found = default_eval_paths()
    assert found == {name: SHARED_EVAL / f for name, f in evaluation.EVAL_FILES.items()}


def test_default_paths_prefer_the_environment(monkeypatch, tmp_path):
    (tmp_path / "wordsim353.tsv").write_text("a\tb\t1\n")
    monkeypatch.setenv("PARVEC_EVAL_DIR", str(tmp_path))
    assert default_eval_paths()["ws353"] == tmp_path / "wordsim353.tsv"


def test_default_paths_from_the_current_directory(monkeypatch, tmp_path):
    eval_dir = tmp_path / "shared" / "data" / "eval"
    eval_dir.mkdir(parents=True)
    (eval_dir / "simlex999.txt").write_text("a b 1\n")
    (tmp_path / "repo").mkdir()
    monkeypatch.delenv("PARVEC_EVAL_DIR", raising=False)
    monkeypatch.chdir(tmp_path / "repo")  # ../shared/data/eval from here
    assert default_eval_paths()["simlex"].resolve() == (eval_dir / "simlex999.txt").resolve()


# ---------------------------------------------------------------------- evaluate
def test_evaluate_handcrafted(kv, files):
    result = evaluate(kv, **files, restrict_vocab=30000)
    json.dumps(result, allow_nan=False)  # strictly JSON-serialisable
    ws = result["ws353"]
    assert ws["pairs"] == 4 and ws["covered"] == 3 and ws["oov_percent"] == pytest.approx(25.0)
    # cat~dog 0.99 > paris~france 0.5 > jerusalem~cat 0: same order as 9 > 7 > 1.
    assert ws["spearman"] == pytest.approx(1.0)
    assert -1 <= ws["pearson"] <= 1
    sl = result["simlex"]
    assert sl["pairs"] == 3 and sl["covered"] == 3 and sl["spearman"] == pytest.approx(1.0)
    an = result["analogies"]
    assert an["questions"] == 5 and an["covered"] == 4 and an["coverage"] == pytest.approx(0.8)
    assert an["3cosadd"] == pytest.approx(3 / 4) and an["3cosmul"] == pytest.approx(3 / 4)
    assert [(s["section"], s["questions"], s["covered"]) for s in an["sections"]] == [
        ("capitals", 4, 3),
        ("other", 1, 1),
    ]
    assert an["sections"][0]["3cosadd"] == 1.0 and an["sections"][1]["3cosadd"] == 0.0
    report = format_report(score_sets(kv, **files, restrict_vocab=30000))
    assert "WS-353" in report and "SimLex-999" in report and "75.00%" in report
    assert "capitals" in report and "4/5 covered" in report


def test_the_scores_record_is_the_evaluate_json_key_for_key(kv, files):
    result = evaluate(kv, **files, restrict_vocab=30000)
    scores = score_sets(kv, **files, restrict_vocab=30000)
    assert json.dumps(scores.to_json()) == json.dumps(result)  # the same keys, in the same order
    assert list(result) == ["ws353", "simlex", "analogies"]
    assert list(result["ws353"]) == ["path", "spearman", "spearman_p", "pearson", "pearson_p", "pairs", "covered",
                                     "oov_percent"]
    assert list(result["analogies"]) == ["path", "restrict_vocab", "3cosadd", "3cosmul", "questions", "covered",
                                         "coverage", "sections"]
    assert list(result["analogies"]["sections"][0]) == ["section", "questions", "covered", "3cosadd", "3cosmul"]
    assert scores.analogies is not None and scores.analogies.accuracy["3cosadd"] == pytest.approx(3 / 4)
    assert [s.section for s in scores.analogies.sections] == ["capitals", "other"]
    assert scores.ws353 is not None and scores.ws353.covered == 3


def test_evaluate_restricted_vocabulary_drops_questions(kv, files):
    result = evaluate(kv, analogies=files["analogies"], restrict_vocab=4)  # paris france berlin germany
    an = result["analogies"]
    assert set(result) == {"analogies"}
    assert an["covered"] == 1 and an["restrict_vocab"] == 4
    # Paris France Berlin ? over 4 words: germany is the only word left, and right.
    assert an["3cosadd"] == 1.0 and an["questions"] == 5


def test_evaluate_without_enough_pairs_gives_none(kv, tmp_path):
    path = tmp_path / "p.tsv"
    path.write_text("cat\tdog\t3\nfoo\tbar\t2\n")
    r = evaluate(kv, ws353=path)["ws353"]
    assert r["spearman"] is None and r["pearson"] is None and r["covered"] == 1
    assert "n/a" in format_report(score_sets(kv, ws353=path))
    json.dumps(r, allow_nan=False)


def test_evaluate_without_files(kv, monkeypatch):
    monkeypatch.setattr(evaluation, "default_eval_paths", lambda: {})
    with pytest.raises(ParvecError, match="no evaluation files"):
        evaluate(kv)


def test_evaluate_uses_default_files(kv):  # ../shared/data/eval's, else the sets parvec ships
    result = evaluate(kv)
    assert result["ws353"]["pairs"] == 353 and result["simlex"]["pairs"] == 999
    assert result["analogies"]["questions"] == 19544
    assert result["ws353"]["covered"] < 20  # a nine-word vocabulary covers few pairs


def test_solve_analogies_direct():
    w = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 1, 1], [1, 1, 1]], dtype=np.float32)
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    q = np.array([[0, 1, 2], [2, 3, 0]])  # man:woman::king:? -> queen; king:queen::man:? -> woman
    out = solve_analogies(w, q)
    assert out["3cosadd"].tolist() == [3, 1] and out["3cosmul"].tolist() == [3, 1]
    # canon maps row 3 onto row 1 ("Queen" spelled two ways): row 3 is then excluded for question 2.
    canon = np.array([0, 1, 2, 1, 4])
    assert solve_analogies(w, q[1:], canon, methods=("3cosadd",))["3cosadd"].tolist() == [4]
    assert solve_analogies(w, np.zeros((0, 3), dtype=np.int64))["3cosadd"].shape == (0,)
    tiny = solve_analogies(w[:3], np.array([[0, 1, 2]]))  # nothing left to answer with
    assert tiny["3cosadd"].tolist() == [-1]


def test_solve_analogies_batches_under_a_small_budget(monkeypatch):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((60, 6)).astype(np.float32)
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    q = rng.integers(0, 60, size=(40, 3))
    whole = solve_analogies(w, q)
    monkeypatch.setattr(evaluation, "_S_BUDGET", 60 * 5)  # at most 5 distinct words per batch
    batched = solve_analogies(w, q)
    for m in evaluation.METHODS:
        np.testing.assert_array_equal(whole[m], batched[m])
    ref = []
    for a, b, c in q.tolist():
        s = w @ w[b] - w @ w[a] + w @ w[c]
        s[[a, b, c]] = -np.inf
        ref.append(int(np.argmax(s)))
    assert whole["3cosadd"].tolist() == ref
