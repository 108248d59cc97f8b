"""``parvec similar``, ``parvec analogy`` and ``parvec eval``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import parvec.cli.vectors as cli_vectors
from parvec.cli import main
from parvec.formats import save_npy, write_word2vec

SHARED_EVAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "eval"

WORDS = ["man", "woman", "king", "queen", "prince", "princess", "apple", "pear"]
VECTORS = np.array(
    [
        [0.0, 0.1, 1.0, 0.0],
        [0.0, 0.1, 0.0, 1.0],
        [0.0, 1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0, 1.0],
        [0.3, 0.8, 1.0, 0.0],
        [0.3, 0.8, 0.0, 1.0],
        [1.0, 0.0, 0.0, 0.0],
        [0.9, 0.0, 0.3, 0.0],
    ],
    dtype=np.float32,
)


@pytest.fixture(params=["text", "binary", "gz", "npy"])
def vec_path(request, tmp_path) -> Path:
    kind = request.param
    if kind == "npy":
        return save_npy(tmp_path / "vec", VECTORS, WORDS)
    path = tmp_path / {"text": "vec.txt", "binary": "vec.bin", "gz": "vec.bin.gz"}[kind]
    write_word2vec(path, VECTORS, WORDS, binary=kind != "text")
    return path


def _lines(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def test_similar(vec_path, capsys):
    assert main(["similar", str(vec_path), "apple", "-k", "2"]) == 0
    rows = _lines(capsys.readouterr().out)
    assert [r[0] for r in rows] == ["pear", "prince"]
    assert float(rows[0][1]) == pytest.approx(0.9 / np.hypot(0.9, 0.3), abs=1e-4)


def test_analogy(vec_path, capsys):
    assert main(["analogy", str(vec_path), "man", "king", "woman", "-k", "1"]) == 0
    assert _lines(capsys.readouterr().out)[0][0] == "queen"
    assert main(["analogy", str(vec_path), "man", "woman", "prince"]) == 0
    rows = _lines(capsys.readouterr().out)
    assert rows[0][0] == "princess" and len(rows) == 5  # 8 words minus the 3 in the question
    assert all(r[0] not in ("man", "woman", "prince") for r in rows)


def test_unknown_word(tmp_path, capsys):
    path = tmp_path / "v.txt"
    write_word2vec(path, VECTORS, WORDS)
    assert main(["similar", str(path), "Apple"]) == 2
    err = capsys.readouterr().err
    assert "'Apple' is not in the vocabulary" in err and "'apple' is" in err and str(path) in err
    assert main(["analogy", str(path), "man", "king", "empress"]) == 2
    assert "'empress'" in capsys.readouterr().err


def test_layout_override_and_errors(tmp_path, capsys):
    path = tmp_path / "v.bin"
    write_word2vec(path, VECTORS, WORDS, binary=True)
    assert main(["similar", "--binary", str(path), "apple", "-k", "1"]) == 0
    assert "pear" in capsys.readouterr().out
    assert main(["similar", "--text", str(path), "apple"]) == 2
    assert "--binary" in capsys.readouterr().err
    assert main(["similar", str(tmp_path / "missing.txt"), "apple"]) == 2
    assert "missing.txt: no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"2 4\nman 1 2 3 4 \nw\xe9 1 2 3 4 \n")
    assert main(["similar", str(bad), "man"]) == 2
    assert "bad.txt:3" in capsys.readouterr().err
    assert main(["similar", "--unicode-errors", "replace", str(bad), "man", "-k", "1"]) == 0
    assert "w\ufffd" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["similar", str(path), "apple", "-k", "0"])


def test_limit(tmp_path, capsys):
    path = tmp_path / "v.txt"
    write_word2vec(path, VECTORS, WORDS)
    assert main(["similar", "--limit", "4", str(path), "king"]) == 0
    assert {r[0] for r in _lines(capsys.readouterr().out)} == {"man", "woman", "queen"}


def _eval_files(tmp_path: Path) -> tuple[Path, Path]:
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("# test\napple\tpear\t8\nking\tprince\t9\nman\tapple\t1\nKING\tunicorn\t3\n")
    questions = tmp_path / "q.txt"
    questions.write_text(": royals\nman woman king queen\nMan Woman Prince Princess\nman woman apple pear\n")
    return pairs, questions


def test_eval_json(tmp_path, capsys):
    path = tmp_path / "v.txt"
    write_word2vec(path, VECTORS, WORDS)
    pairs, questions = _eval_files(tmp_path)
    code = main(["eval", str(path), "--ws353", str(pairs), "--analogies", str(questions), "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"ws353", "analogies"}
    assert result["ws353"]["pairs"] == 4 and result["ws353"]["covered"] == 3
    assert result["ws353"]["spearman"] == pytest.approx(1.0)
    assert result["analogies"]["3cosadd"] == pytest.approx(2 / 3)
    assert result["analogies"]["questions"] == 3 and result["analogies"]["covered"] == 3


def test_eval_text_report_and_restrict_vocab(tmp_path, capsys):
    path = tmp_path / "v.txt"
    write_word2vec(path, VECTORS, WORDS)
    pairs, questions = _eval_files(tmp_path)
    assert (
        main(["eval", str(path), "--simlex", str(pairs), "--analogies", str(questions), "--restrict-vocab", "4"]) == 0
    )
    out = capsys.readouterr().out
    assert "SimLex-999" in out and "1/3 covered" in out and "top 4 words" in out


def test_eval_errors(tmp_path, capsys, monkeypatch):
    path = tmp_path / "v.txt"
    write_word2vec(path, VECTORS, WORDS)
    monkeypatch.setattr(cli_vectors, "default_eval_paths", lambda: {})
    assert main(["eval", str(path)]) == 2
    assert "no evaluation files" in capsys.readouterr().err
    assert main(["eval", str(path), "--ws353", str(tmp_path / "nope.tsv")]) == 2
    assert "nope.tsv" in capsys.readouterr().err


@pytest.mark.skipif(not SHARED_EVAL.is_dir(), reason="shared/data/eval is absent")
def test_eval_default_files(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PARVEC_EVAL_DIR", raising=False)
    path = tmp_path / "v.txt"
    write_word2vec(path, VECTORS, WORDS)
    assert main(["eval", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ws353"]["pairs"] == 353 and result["simlex"]["pairs"] == 999
    assert result["analogies"]["questions"] == 19544
