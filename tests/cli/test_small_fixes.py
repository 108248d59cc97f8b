"""Small behaviours: epoch callbacks see the seconds so far, -cbow's help names the real default,
``from parvec import Node2Vec`` works (lazily), the graph commands refuse ``--cluster`` with the API's message,
and the evaluation sets parvec ships (the demo scores with them alone)."""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from parvec import evaluation
from parvec.cli import build_parser, main
from parvec.config import TrainConfig
from parvec.errors import ParvecError
from parvec.word2vec import Word2Vec

DATA = Path(__file__).resolve().parents[2] / "src" / "parvec" / "data"


def _sentences(n: int = 300, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[f"w{j}" for j in rng.integers(0, 60, 20)] for _ in range(n)]


# ---------------------------------------------------------------------- callbacks see the seconds
def test_plain_function_callbacks_see_the_seconds_so_far():
    seen: list[tuple[int, float, int]] = []

    def record(model, epoch, stats):
        seen.append((epoch, stats.seconds, stats.words))

    model = Word2Vec(sentences=_sentences(), vector_size=8, min_count=1, epochs=3, workers=1, callbacks=[record])
    assert [e for e, _, _ in seen] == [0, 1, 2]
    seconds = [s for _, s, _ in seen]
    assert all(s > 0 for s in seconds), seconds  # was 0.0 during training
    assert seconds == sorted(seconds)
    assert seconds[-1] <= model.stats.seconds + 1.0  # so far, not beyond the run
    assert all(w / s > 0 for _, s, w in seen)  # words/s can be computed in the callback


# ---------------------------------------------------------------------- -cbow's help
def test_cbow_help_names_the_default_that_train_config_resolves():
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    action = next(a for a in sub.choices["train"]._actions if "-cbow" in a.option_strings)
    named = re.findall(r"--algo ([\w-]+) \((?:the|CBOW's) default\)", " ".join(action.help.split()))
    assert named == [TrainConfig(sg=False).algo], action.help
    # and the error for a skip-gram-only algorithm says the same
    with pytest.raises(ParvecError, match=rf"\({TrainConfig(sg=False).algo}, the default"):
        TrainConfig(sg=False, algo="par").validate()


# ---------------------------------------------------------------------- parvec.Node2Vec
def test_node2vec_and_deepwalk_are_exported_from_parvec():
    import parvec
    from parvec import DeepWalk, Node2Vec
    from parvec.graph import node2vec

    assert Node2Vec is node2vec.Node2Vec and DeepWalk is node2vec.DeepWalk
    assert parvec.Node2Vec is Node2Vec and {"Node2Vec", "DeepWalk"} <= set(parvec.__all__) <= set(dir(parvec))
    with pytest.raises(AttributeError, match="no attribute 'Node2Vek'"):
        parvec.Node2Vek  # noqa: B018


def test_import_parvec_does_not_import_the_graph_package():
    # lazy: `import parvec` stays as fast as before; the graph package loads on first use
    code = ("import sys, parvec; a = 'parvec.graph' in sys.modules; parvec.Node2Vec; "
            "print(a, 'parvec.graph' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA.parents[1]), *filter(None, [os.environ.get(
        "PYTHONPATH")])]))  # this checkout's parvec
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         env=env)
    assert out.stdout.split() == ["False", "True"]


def test_readme_python_example_imports_what_it_uses():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert re.search(r"(?<![.\w])Node2Vec\.from_checkpoint", readme) is None  # parvec.Node2Vec.from_checkpoint
    assert "parvec.Node2Vec(" in readme


# ---------------------------------------------------------------------- graph commands and --cluster
@pytest.mark.parametrize("command", ["node2vec", "deepwalk", "link-eval"])
def test_graph_commands_refuse_cluster_with_the_api_message(command, tmp_path, capsys):
    from parvec.distributed.cluster import Cluster
    from parvec.graph.node2vec import Node2Vec

    edges = tmp_path / "g.edgelist"
    edges.write_text("0 1\n1 2\n2 0\n", encoding="utf-8")
    out = tmp_path / "g.emb"
    argv = [command, str(edges)] + (["-o", str(out)] if command != "link-eval" else []) + ["--cluster", "local:2"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    with pytest.raises(ParvecError) as api:
        Node2Vec(str(edges), cluster=Cluster("local:2"))
    # one message, from parvec.capabilities, the same from the CLI and the API
    assert err == f"parvec: error: {api.value}"
    assert "training node2vec/DeepWalk is not available on a cluster's replicas" in err and not out.exists()


# ---------------------------------------------------------------------- the shipped evaluation sets
def _readme_sha256(name: str) -> str:
    text = (DATA / "README.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith(f"| `{name}`"))
    return re.findall(r"`([0-9a-f]{64})`", row)[0]


def test_shipped_evaluation_sets_match_their_readme_and_counts():
    for name in ("wordsim353.tsv", "simlex999.txt", "questions-words.txt.xz"):
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == _readme_sha256(name), name
    assert len(evaluation.read_word_pairs(DATA / "wordsim353.tsv")) == 353
    assert len(evaluation.read_word_pairs(DATA / "simlex999.txt")) == 999
    sections = evaluation.read_analogy_questions(DATA / "questions-words.txt.xz")
    assert len(sections) == 14 and sum(len(q) for _, q in sections) == 19544
    # the .xz holds Google's file unmodified (its sha256, as shared/data/PROVENANCE.md gives it)
    assert hashlib.sha256(lzma.decompress((DATA / "questions-words.txt.xz").read_bytes())).hexdigest() == (
        "8c29b3332afc46f3fb8be04cb5297bf96f39aa7131272dff57869b4485b22a36")
    assert (DATA / "LICENSE-Apache-2.0.txt").read_text(encoding="utf-8").split()[:3] == ["Apache", "License",
                                                                                         "Version"]


def test_package_data_ships_the_evaluation_sets():
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["parvec"]
    for name in ("wordsim353.tsv", "simlex999.txt", "questions-words.txt.xz", "LICENSE-Apache-2.0.txt"):
        assert any(Path("data", name).match(p) for p in patterns), name


def test_bad_xz_evaluation_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "questions-words.txt.xz"
    bad.write_bytes(b"not xz at all")
    with pytest.raises(ParvecError, match=r"questions-words\.txt\.xz: not a valid \.xz file"):
        evaluation.read_analogy_questions(bad)


@pytest.fixture
def shipped_only(monkeypatch, tmp_path):
    """default_eval_paths with no $PARVEC_EVAL_DIR and no shared/data/eval anywhere: the shipped sets alone."""
    monkeypatch.delenv("PARVEC_EVAL_DIR", raising=False)
    monkeypatch.setattr(evaluation, "_candidate_dirs", lambda: [tmp_path / "nowhere"])


def test_default_eval_paths_fall_back_to_the_shipped_sets(shipped_only):
    assert evaluation.default_eval_paths() == {"ws353": DATA / "wordsim353.tsv", "simlex": DATA / "simlex999.txt",
                                               "analogies": DATA / "questions-words.txt.xz"}


def test_demo_prints_its_scores_from_the_shipped_sets_alone(shipped_only, capsys):
    assert main(["demo", "--epochs", "1", "--dim", "16", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    head = out[out.index("\nevaluation ("):]
    assert "shipped with parvec" in head.splitlines()[1]
    for title in ("WS-353", "SimLex-999", "Analogies"):
        assert title in head
    assert re.search(r"pairs \d+/353 ", head) and re.search(r"pairs \d+/999 ", head)
    assert re.search(r"questions \d+/19544 covered", head)
