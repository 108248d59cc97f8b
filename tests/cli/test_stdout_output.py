"""``-o -`` writes the vectors to standard output, as ``-`` reads standard input: word2vec text (binary only when
asked for, and never to a terminal), nothing on standard output when the run fails, no file named ``-`` and no
temporary left; ``-`` for any other output is refused in one line."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

FAST = ["--dim", "8", "--epochs", "1", "--threads", "1", "--min-count", "1", "--algo", "classic", "--no-cache",
        "--no-progress"]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(" ".join(rng.choice(words, 12)) for _ in range(300)) + "\n")
    return path


def _parvec(argv: list, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = os.environ | {"TMPDIR": str(cwd / "tmp")}
    (cwd / "tmp").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "parvec", *map(str, argv)], cwd=cwd, env=env, timeout=600, **kwargs)


def _no_leftovers(cwd: Path) -> None:
    assert not (cwd / "-").exists(), "a file named '-' was written"
    assert not [p.name for p in cwd.iterdir() if p.name.startswith(".parvec-")]
    assert list((cwd / "tmp").iterdir()) == [], "the staged vectors were left in $TMPDIR"


def test_train_o_dash_writes_word2vec_text_to_stdout_that_gensim_reads(corpus, tmp_path):
    proc = _parvec(["train", corpus, "-o", "-", *FAST], tmp_path, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    lines = proc.stdout.decode().splitlines()
    assert lines[0] == "40 8" and len(lines) == 41
    assert "wrote 40 vectors of 8 to standard output" in proc.stderr.decode()
    _no_leftovers(tmp_path)
    gensim = pytest.importorskip("gensim")
    text = tmp_path / "from-stdout.txt"
    text.write_bytes(proc.stdout)
    kv = gensim.models.KeyedVectors.load_word2vec_format(str(text), binary=False)
    assert len(kv) == 40 and kv.vector_size == 8


def test_word2vec_c_style_binary_to_a_pipe_and_refused_to_a_terminal(corpus, tmp_path):
    from parvec.formats import read_word2vec

    proc = _parvec(["-train", corpus, "-output", "-", "-binary", "1", *FAST], tmp_path, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    (tmp_path / "v.bin").write_bytes(proc.stdout)
    vectors, words = read_word2vec(tmp_path / "v.bin", binary=True)
    assert vectors.shape == (40, 8) and len(words) == 40
    _no_leftovers(tmp_path)
    leader, follower = pty.openpty()  # standard output a terminal
    try:
        proc = _parvec(["-train", corpus, "-output", "-", "-binary", "1", *FAST], tmp_path, stdout=follower,
                       stderr=subprocess.PIPE)
    finally:
        os.close(follower)
        os.close(leader)
    err = proc.stderr.decode()
    assert proc.returncode == 2
    assert err.strip().splitlines()[-1] == ("parvec: error: -o -: binary vectors would be written to a terminal: "
                                             "redirect standard output (> vectors.bin) or write the text format")
    assert "trained" not in err  # refused before the corpus is read
    _no_leftovers(tmp_path)


def test_a_failed_run_prints_no_vectors(tmp_path):
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("hello world\n")
    proc = _parvec(["train", tiny, "-o", "-", "--no-cache"], tmp_path, capture_output=True)
    assert proc.returncode == 2 and proc.stdout == b""
    assert "no word reaches min_count=5" in proc.stderr.decode()
    _no_leftovers(tmp_path)


@pytest.mark.parametrize("command", ["node2vec", "deepwalk"])
def test_the_graph_commands_write_their_vectors_to_stdout(command, tmp_path, shared_data):
    graph = shared_data / "graphs" / "karate" / "karate.edgelist"
    proc = _parvec([command, graph, "-o", "-", "--dimensions", 4, "--walk-length", 10, "--num-walks", 2, "--workers",
                    1, "--quiet"], tmp_path, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    lines = proc.stdout.decode().splitlines()
    assert lines[0] == "34 4" and len(lines) == 35
    _no_leftovers(tmp_path)


@pytest.mark.parametrize(("argv", "message"), [
    (["train", "CORPUS", "-o", "v.txt", "--report", "-"],
     "--report -: '-' (standard output) is only for the vectors of -o; give a file name (./- for a file named '-')"),
    (["train", "CORPUS", "-o", "v.txt", "--save-model", "-"],
     "--save-model -: '-' (standard output) is only for the vectors of -o; give a file name (./- for a file named "
     "'-')"),
    (["train", "CORPUS", "-o", "v.txt", "--checkpoint-dir", "-"],
     "--checkpoint-dir -: '-' (standard output) is only for the vectors of -o; give a file name (./- for a file "
     "named '-')"),
    (["demo", "-o", "-"], "-o -: parvec demo prints its results on standard output; give a file name for the vectors"),
    (["report", "r.json", "-o", "-"], "-o -: the report is an HTML file with its PNGs in a folder beside it; it "
     "cannot go to standard output: give a file name (report.html)"),
], ids=["report", "save-model", "checkpoint-dir", "demo", "parvec-report"])
def test_dash_for_another_output_is_refused(argv, message, corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run([corpus if a == "CORPUS" else a for a in argv], capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines()[-1] == f"parvec: error: {message}"
    assert not (tmp_path / "-").exists() and not (tmp_path / "v.txt").exists()


def test_dot_slash_dash_is_a_file_named_dash(corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["train", corpus, "-o", "./-", *FAST], capsys)
    assert code == 0, err
    assert out == "" and (tmp_path / "-").read_text().startswith("40 8\n")
