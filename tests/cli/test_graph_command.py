"""``parvec node2vec`` / ``deepwalk --resume``: what the checkpoint continues is the command's, never written into
the parsed flags; the line of an interrupted resumed run names the checkpoint directory it continued."""

from __future__ import annotations

from pathlib import Path

from parvec.cli import build_parser, main

FAST = ["--dimensions", "8", "--walk-length", "10", "--num-walks", "2", "--workers", "1", "--quiet"]


def _graph(path: Path) -> Path:
    path.write_text("".join(f"n{i} n{(i + 1) % 20}\nn{i} n{(i + 7) % 20}\n" for i in range(20)), encoding="utf-8")
    return path


def test_a_resumed_graph_run_writes_nothing_to_the_parsed_flags(tmp_path, capsys):
    graph = _graph(tmp_path / "g.txt")
    (tmp_path / "ck").mkdir()
    assert main(["deepwalk", str(graph), "-o", str(tmp_path / "a.emb"), "--epochs", "1", "--checkpoint-dir",
                 str(tmp_path / "ck"), *FAST]) == 0
    args = build_parser().parse_args(["deepwalk", str(graph), "-o", str(tmp_path / "b.emb"), "--epochs", "2",
                                      "--resume", str(tmp_path / "ck"), *FAST])
    before = dict(vars(args))
    assert args.func(args) == 0
    assert vars(args) == before
    err = capsys.readouterr().err
    assert f"checkpoints continue in {tmp_path / 'ck'} (--checkpoint-dir overrides)" in err
    assert (tmp_path / "b.emb").exists()
