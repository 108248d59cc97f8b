"""docs/errors.md's table holds what parvec prints: each simple bad input below is run through the CLI and its
message must contain the text the table shows for it, and the table must show that text."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import run

DOC = (Path(__file__).resolve().parents[1] / "docs" / "errors.md").read_text(encoding="utf-8")


@pytest.fixture()
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demo_tokens: list[str]) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.txt").write_text(" ".join(demo_tokens[:20_000]) + "\n", encoding="utf-8")
    (tmp_path / "bad.txt").write_bytes(b"abc \xff\xfe def\n")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "tiny.txt").write_text("hello world\n", encoding="utf-8")
    (tmp_path / "lonely.txt").write_text("".join(f"w{i % 7}\n" for i in range(200)), encoding="utf-8")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x", encoding="utf-8")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "a.txt").write_text("hello world\n", encoding="utf-8")
    (tmp_path / "linked" / "gone.txt").symlink_to("nowhere.txt")
    return tmp_path


CASES = [
    (["train", "missing.txt", "-o", "v.txt"], "missing.txt: no such file"),
    (["train", "empty.txt", "-o", "v.txt"], "empty.txt: the file is empty"),
    (["train", "bad.txt", "-o", "v.txt", "--min-count", "1"],
     "bad.txt:1: invalid UTF-8 (invalid start byte); use --unicode-errors replace (or ignore) to read it anyway"),
    (["train", "tiny.txt", "-o", "v.txt"],
     "tiny.txt: no word reaches min_count=5 (the most frequent word occurs 1 times); lower --min-count"),
    (["train", "lonely.txt", "-o", "v.txt", "--min-count", "1", "--epochs", "1", "--dim", "4"],
     "training made no (context, center) pair in 1 epoch(s) over"),
    (["train", "linked", "-o", "v.txt"],
     "linked/gone.txt: a symbolic link to nowhere.txt, which does not exist (linked is read as a corpus of its files: "
     "remove the link, or restore what it names)"),
    (["train", "corpus.txt"], "no output: give -o OUTPUT (and/or --save-model DIR)"),
    (["train", "corpus.txt", "-o", "v.txt", "--dim", "0"], "dim must be a positive integer, got 0"),
    (["train", "corpus.txt", "-o", "v.txt", "--checkpoint-every", "10x", "--checkpoint-dir", "ck"],
     "checkpoint interval must be a duration (30s, 10m, 2h) or a word count (2000000, 500k, 50M), got '10x'"),
    (["train", "corpus.txt", "-o", "v.txt", "--resume", "nowhere"],
     "nowhere: not a parvec model directory (no model.json)"),
    (["train", "corpus.txt", "-o", "v.txt", "--cluster", "foo"],
     "--cluster 'foo': expected local:N (start a local Ray with N CPUs), ray://HOST:PORT (join a running cluster) "
     "or auto (join this machine's cluster)"),
    (["train", "corpus.txt", "-o", "v.txt", "--replicas", "2"], "--replicas needs --cluster (e.g. --cluster local:2)"),
    (["train", "corpus.txt", "-o", "corpus.txt"],
     "-o corpus.txt is the training corpus corpus.txt: refusing to overwrite an input; choose another path"),
    (["train", "corpus.txt", "-o", "/nonexistent/v.txt"],
     "-o /nonexistent/v.txt: cannot write: the directory /nonexistent does not exist"),
    (["train", "corpus.txt", "-o", "v.txt", "--report", "-"],
     "--report -: '-' (standard output) is only for the vectors of -o; give a file name (./- for a file named '-')"),
    (["demo", "-o", "-"], "-o -: parvec demo prints its results on standard output; give a file name for the vectors"),
    (["similar", "notes", "king"],
     "notes: a directory, not a vector file or a parvec model directory (no model.json): it holds todo.txt; expected a "
     "vector file (.npy with its .vocab.txt, word2vec text or binary) or a model directory (Word2Vec.save, parvec "
     "train --save-model, a --checkpoint-dir)"),
    (["verify", "corpus.txt"],
     "corpus.txt: not a model directory (a file): parvec verify checks a model directory (Word2Vec.save, parvec train "
     "--save-model, a --checkpoint-dir) against the CRC-32s its model.json records; a vector file records none"),
    (["verify", "notes"], "notes: not a parvec model directory (no model.json): it holds todo.txt"),
]


@pytest.mark.parametrize(("argv", "message"), CASES, ids=[" ".join(a[1:]) for a, _ in CASES])
def test_the_table_shows_what_parvec_prints(argv: list[str], message: str, files: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    code, _, err = run(argv, capsys)
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("parvec: error: ") and message in last, last
    assert message in DOC, f"docs/errors.md does not show {message!r}"
    assert not (files / "v.txt").exists()
