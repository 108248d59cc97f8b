"""The graph sub-commands: node2vec, deepwalk, node-eval, link-eval."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from parvec.cli import build_parser, main
from parvec.formats import load_npy, read_word2vec
from parvec.graph.graph_io import Graph

FAST = ["--dimensions", "8", "--walk-length", "10", "--num-walks", "4", "--window-size", "3", "--workers", "1",
        "--algo", "classic", "--quiet"]  # fmt: skip


@pytest.fixture()
def string_graph(tmp_path):
    p = tmp_path / "friends.txt"
    p.write_text(
        "# who knows whom\nalice bob\nbob carol\ncarol alice\ncarol dave\ndave eve\neve frank\nfrank dave\n",
        encoding="utf-8",
    )
    return p


# The node2vec/DeepWalk defaults docs/guide/graphs.md documents (chosen by benchmarks/bench_graphs.py's sweep on
# BlogCatalog and PPI: GRAPE's node2vec F1 at under a tenth of its time; none depends on the graph).
DOCUMENTED = {"dimensions": 100, "walk_length": 128, "num_walks": 10, "window": 5, "epochs": 3, "negative": 10,
              "ns_exponent": 0.25, "p": 1.0, "q": 1.0, "sample": 0.0, "alpha": 0.025}  # fmt: skip
CLI_DEST = {"window": "window_size"}


def test_the_command_line_and_the_api_default_to_the_documented_settings():
    import inspect

    from parvec.graph.node2vec import DeepWalk, Node2Vec

    api = inspect.signature(Node2Vec.__init__).parameters
    assert {k: api[k].default for k in DOCUMENTED} == DOCUMENTED
    for command in ("node2vec", "deepwalk", "link-eval"):
        rest = ["-o", "g.emb"] if command != "link-eval" else []
        a = build_parser().parse_args([command, "g.txt", *rest])
        assert {k: getattr(a, CLI_DEST.get(k, k), 1.0) for k in DOCUMENTED} == DOCUMENTED, command
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "graphs.md").read_text(encoding="utf-8")
    for flag, key in (("--dimensions", "dimensions"), ("--walk-length", "walk_length"), ("--num-walks", "num_walks"),
                      ("--window-size", "window"), ("--epochs", "epochs"), ("--negative", "negative"),
                      ("--ns-exponent", "ns_exponent")):  # fmt: skip
        assert f"| `{flag}` | {DOCUMENTED[key]:g} |" in guide, flag
    # The model the command builds from the parsed defaults is the API's default model.
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], n_nodes=3)
    for cls, command in ((Node2Vec, "node2vec"), (DeepWalk, "deepwalk")):
        from parvec.cli.graph import _model

        args = build_parser().parse_args([command, "g.txt", "-o", "g.emb", "--workers", "1"])
        cli, api_model = _model(g, args), cls(g, workers=1)
        same_config = cli.config.to_dict() | {"progress": None} == api_model.config.to_dict() | {"progress": None}
        assert cli.spec == api_model.spec and same_config, command


def test_parser_defaults_match_node2vec():
    a = build_parser().parse_args(["node2vec", "g.txt", "-o", "g.emb"])
    assert (a.dimensions, a.walk_length, a.num_walks, a.window_size, a.p, a.q, a.epochs) == (100, 128, 10, 5, 1, 1, 3)
    assert not a.weighted and not a.directed and a.delimiter is None and a.seed == 1
    b = build_parser().parse_args(["node2vec", "g.txt", "-o", "x", "--weighted", "--directed", "--p", "0.25",
                                   "--q", "4", "--iter", "3", "--delimiter", "tab", "--implicit-ids"])  # fmt: skip
    assert (b.weighted, b.directed, b.p, b.q, b.epochs, b.delimiter, b.implicit_ids) == (
        True, True, 0.25, 4.0, 3, "\t", True
    )  # fmt: skip
    extra = {"node2vec": ["-o", "y"], "deepwalk": ["-o", "y"], "node-eval": ["--labels", "l"], "link-eval": []}
    for cmd, rest in extra.items():
        assert callable(build_parser().parse_args([cmd, "x", *rest]).func)


def test_node2vec_writes_word2vec_text_keyed_by_original_ids(tmp_path, string_graph, capsys):
    out = tmp_path / "friends.emb"
    assert main(["node2vec", str(string_graph), "-o", str(out), "--p", "0.5", "--q", "2", *FAST]) == 0
    vectors, keys = read_word2vec(out)
    assert sorted(keys) == ["alice", "bob", "carol", "dave", "eve", "frank"]
    assert vectors.shape == (6, 8) and np.isfinite(vectors).all()
    assert out.read_text().splitlines()[0] == "6 8"


def test_deepwalk_npy_output_and_reproducible(tmp_path, string_graph):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    assert main(["deepwalk", str(string_graph), "-o", str(a), *FAST]) == 0
    assert main(["deepwalk", str(string_graph), "-o", str(b), *FAST]) == 0
    va, ka, ca = load_npy(a)
    vb, kb, _ = load_npy(b)
    assert ka == kb and np.array_equal(va, vb)  # one worker: bit-for-bit repeatable
    assert ca is not None and np.all(np.diff(ca) <= 0) and int(ca.sum()) == 6 * 4 * 10


def test_node_eval_json(tmp_path, shared_data, capsys):
    graphs = shared_data / "graphs/karate"
    emb = tmp_path / "karate.emb"
    assert main(["node2vec", str(graphs / "karate.edgelist"), "-o", str(emb), "--epochs", "3",
                 "--num-walks", "10", *FAST[:-1]]) == 0  # fmt: skip
    capsys.readouterr()
    code = main(["node-eval", str(emb), "--labels", str(graphs / "karate.labels"), "--train-fractions", "0.5,0.8",
                 "--repeats", "3", "--json"])  # fmt: skip
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["train_fraction"] for r in result["results"]] == [0.5, 0.8]
    assert result["n_nodes"] == 34 and result["n_labels"] == 2
    assert all(0 <= r["micro_f1_mean"] <= 1 for r in result["results"])
    assert main(["node-eval", str(emb), "--labels", str(graphs / "karate.labels"), "--repeats", "2"]) == 0
    assert "| 90% |" in capsys.readouterr().out


def test_link_eval_json(tmp_path, capsys):
    rng = np.random.default_rng(0)
    a = np.triu(rng.random((40, 40)) < np.where((np.arange(40)[:, None] < 20) == (np.arange(40) < 20), 0.4, 0.02), 1)
    src, dst = np.nonzero(a)
    p = tmp_path / "g.txt"
    p.write_text("".join(f"n{u} n{v}\n" for u, v in zip(src, dst, strict=True)), encoding="utf-8")
    assert main(["link-eval", str(p), "--json", "--fraction", "0.3", *FAST]) == 0
    result = json.loads(capsys.readouterr().out)
    assert 0.0 <= result["roc_auc"] <= 1.0 and result["n_hidden"] == round(0.3 * len(src))
    assert result["method"] == "node2vec" and result["walk_seconds"] is not None


def test_errors_exit_2_with_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("a b\nb c\nc\n", encoding="utf-8")
    assert main(["node2vec", str(bad), "-o", str(tmp_path / "x.emb"), *FAST]) == 2
    assert "bad.txt:3: expected 'u v' or 'u v w'" in capsys.readouterr().err
    assert main(["deepwalk", str(tmp_path / "missing.txt"), "-o", str(tmp_path / "x.emb")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["node2vec", str(bad), "-o", str(tmp_path / "nodir" / "x.emb")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "x.emb").exists()
    ok = tmp_path / "ok.txt"
    ok.write_text("a b\n", encoding="utf-8")
    assert main(["node2vec", str(ok), "-o", str(tmp_path / "y.emb"), "--p", "0", *FAST]) == 2
    assert "p must be a positive number" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["deepwalk", str(ok), "-o", "y", "--q", "2"])  # DeepWalk has no p/q (and no abbreviations)
