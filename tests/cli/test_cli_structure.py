"""The command line's place in the code: CLI code lives only in ``parvec.cli`` (no module
outside it imports it, so the library never depends on its command line), no CLI function grows past 120
lines, one helper reads a process's peak memory, and every training command's ``--report`` carries the keys
that every run has (one builder, ``parvec.cli.run_report``)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from parvec.cli import main

SRC = Path(__file__).resolve().parents[2] / "src" / "parvec"
MAX_FUNCTION_LINES = 120
# The keys every run report has, whatever the command (parvec.cli.run_report's module docstring).
COMMON_KEYS = ("kind", "parameters", "words_trained", "epochs", "read_seconds", "training_seconds", "words_per_sec",
               "loss_per_epoch", "peak_memory_bytes", "device", "cluster", "output", "output_binary", "checkpoints",
               "resumed_from")
WORD_KEYS = ("vocab_size", "corpus_words", "corpus_tokens_in_vocab", "sentences", "raw_words_per_sec")


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import in the module, those inside functions included."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def test_no_module_outside_the_cli_imports_it():
    # parvec/__main__.py is `python -m parvec`: the command line's entry point, as parvec/cli/__main__.py.
    offenders = []
    for path in _modules():
        rel = path.relative_to(SRC)
        if rel.parts[0] == "cli" or rel == Path("__main__.py"):
            continue
        for line, module in _imported(ast.parse(path.read_text(encoding="utf-8"))):
            if module == "parvec.cli" or module.startswith("parvec.cli."):
                offenders.append(f"src/parvec/{rel}:{line} imports {module}")
    assert offenders == []


def test_no_cli_function_is_longer_than_120_lines():
    long = []
    for path in sorted((SRC / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"src/parvec/cli/{path.name}: {node.name} has {n} lines")
    assert long == []


def test_one_helper_reads_the_peak_memory():
    # ru_maxrss (getrusage) and VmHWM (/proc/self/status) are the same high-water mark: read in parvec.memory only.
    readers = [f"src/parvec/{p.relative_to(SRC)}" for p in _modules() if p != SRC / "memory.py"
               and ("ru_maxrss" in (text := p.read_text(encoding="utf-8")) or "VmHWM" in text)]
    assert readers == []
    from parvec.memory import peak_memory_bytes

    assert peak_memory_bytes() > 1 << 20


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("structure") / "c.txt"
    words = [f"w{i}" for i in range(30)]
    path.write_text("".join(" ".join(words[(i * 7 + j) % 30] for j in range(12)) + "\n" for i in range(120)),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("structure") / "g.txt"
    path.write_text("".join(f"n{i} n{(i + 1) % 20}\nn{i} n{(i + 7) % 20}\n" for i in range(20)), encoding="utf-8")
    return path


def test_train_and_graph_reports_carry_the_common_keys(tmp_path, corpus, graph, capsys):
    assert main(["train", str(corpus), "-o", str(tmp_path / "v.txt"), "--dim", "8", "--epochs", "1", "--min-count",
                 "1", "--threads", "1", "--no-cache", "--no-progress", "--report", str(tmp_path / "w.json")]) == 0
    assert main(["deepwalk", str(graph), "-o", str(tmp_path / "g.emb"), "--dimensions", "8", "--walk-length", "10",
                 "--num-walks", "2", "--epochs", "1", "--workers", "1", "--quiet", "--report",
                 str(tmp_path / "g.json")]) == 0
    capsys.readouterr()
    words = json.loads((tmp_path / "w.json").read_text(encoding="utf-8"))
    walks = json.loads((tmp_path / "g.json").read_text(encoding="utf-8"))
    for report in (words, walks):
        assert [k for k in COMMON_KEYS if k not in report] == []
        assert report["peak_memory_bytes"] > 1 << 20 and report["epochs"] == 1 and report["words_trained"] > 0
        assert report["resumed_from"] is None and report["checkpoints"]["dir"] is None
    assert [k for k in WORD_KEYS if k not in words] == []
    assert words["kind"] == "words" and walks["kind"] == "graph"
    assert words["cluster"] is None and walks["cluster"] is None  # node2vec/DeepWalk refuse --cluster
    assert words["output"] == str(tmp_path / "v.txt") and walks["output"] == str((tmp_path / "g.emb").resolve())
    assert words["vocab_size"] == 30 and words["corpus_words"] == 120 * 12 == words["corpus_tokens_in_vocab"]
    assert walks["nodes"] == 20 and walks["edges"] == 40
