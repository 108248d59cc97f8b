"""``parvec similar``, ``parvec analogy`` and ``parvec eval``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import parvec.cli.vectors as cli_vectors
from parvec.cli import main
from parvec.formats import save_npy, write_word2vec

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


def test_eval_default_files(tmp_path, capsys, monkeypatch):  # ../shared/data/eval's, else the shipped sets
    monkeypatch.delenv("PARVEC_EVAL_DIR", raising=False)
    path = tmp_path / "v.txt"
    write_word2vec(path, VECTORS, WORDS)
    assert main(["eval", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ws353"]["pairs"] == 353 and result["simlex"]["pairs"] == 999
    assert result["analogies"]["questions"] == 19544


# ---------------------------------------------------------------------- malformed vectors files
def _valid(binary: bool) -> bytes:
    def values(v: np.ndarray) -> bytes:
        return v.astype("<f4").tobytes() if binary else "".join(f"{x:.9g} " for x in v).encode()

    return b"8 4\n" + b"".join(w.encode() + b" " + values(v) + b"\n" for w, v in zip(WORDS, VECTORS, strict=True))


def _row_start(i: int) -> int:
    return 4 + sum(len(w.encode()) + 2 + 16 for w in WORDS[:i])


def _header(new: bytes):
    return lambda d: new + d[d.index(b"\n") :]


def _edit_row(index: int, edit):
    def mutate(d: bytes) -> bytes:
        lines = d.split(b"\n")
        lines[index] = edit(lines[index])
        return b"\n".join(lines)

    return mutate


AS_TEXT = [r":2: this looks like a text word2vec file", r"--text"]
AS_BINARY = [r":2: ", r"--binary"]
# name: (layout of the valid file, mutation, error fragments in its own layout (None: reads correctly),
#        error fragments when forced to the other layout)
CLI_CASES = {
    "text header dim larger": ("text", _header(b"8 5"), [r":2: dimension mismatch: 4 values, .* says 5"], AS_TEXT),
    "text header dim smaller": ("text", _header(b"8 3"), [r":2: dimension mismatch: 4 values, .* says 3"], AS_TEXT),
    "text header count larger": ("text", _header(b"9 4"), [r":10: truncated file: the header promises 9"], AS_TEXT),
    "text header count smaller": ("text", _header(b"7 4"), [r":9: the header promises 7 vectors, but more"], AS_TEXT),
    "text row missing a value": (
        "text",
        _edit_row(3, lambda l: l.rsplit(b" ", 2)[0] + b" "),
        [r":4: dimension mismatch: 3 values, but the header says 4"],
        AS_TEXT,
    ),
    "text row with an extra value": ("text", _edit_row(3, lambda l: l + b"7 "), [r":4: .*: 5 values"], AS_TEXT),
    "text non-numeric value": ("text", _edit_row(3, lambda l: l + b"x "), [r":4: non-numeric value 'x'"], AS_TEXT),
    "text CRLF": ("text", lambda d: d.replace(b"\n", b"\r\n"), None, AS_TEXT),
    "text UTF-8 BOM": ("text", lambda d: b"\xef\xbb\xbf" + d, None, AS_TEXT),
    "header-less text": ("text", lambda d: d[4:], [r":1: malformed header.*--no-header"], [r":1: .*--no-header"]),
    "empty file": ("text", lambda d: b"", [r"the file is empty"], [r"the file is empty"]),
    "binary cut inside a vector": (
        "binary",
        lambda d: d[: _row_start(2) + 10],
        [rf"vector 3 at byte {_row_start(2)}: truncated vector: expected 16 bytes, found 5"],
        AS_BINARY,
    ),
    "binary header dim larger": ("binary", _header(b"8 5"), [r"header.s dimension 5", r"fit dimension 4"], AS_BINARY),
    "binary header dim smaller": ("binary", _header(b"8 3"), [r"header.s dimension 3", r"fit dimension 4"], AS_BINARY),
    "binary header count larger": (
        "binary",
        _header(b"9 4"),
        [rf"vector 9 at byte {_row_start(8)}: the file ends: the header promises 9 vectors but only 8 follow"],
        AS_BINARY,
    ),
    "binary header count smaller": (
        "binary",
        _header(b"7 4"),
        [rf"byte {_row_start(7)}: data after the 7 vectors the header promises"],
        AS_BINARY,
    ),
    "binary UTF-8 BOM": ("binary", lambda d: b"\xef\xbb\xbf" + d, None, AS_BINARY),
}


def _run_command(command: str, path: Path, flags: list[str], tmp_path: Path) -> int:
    if command == "similar":
        return main(["similar", *flags, str(path), "apple", "-k", "2"])
    if command == "analogy":
        return main(["analogy", *flags, str(path), "man", "king", "woman", "-k", "1"])
    pairs, questions = _eval_files(tmp_path)
    return main(["eval", *flags, str(path), "--ws353", str(pairs), "--analogies", str(questions), "--json"])


def _check_output(command: str, out: str) -> None:
    if command == "similar":
        assert [r[0] for r in _lines(out)] == ["pear", "prince"]
    elif command == "analogy":
        assert _lines(out)[0][0] == "queen"
    else:
        result = json.loads(out)
        assert result["ws353"]["covered"] == 3 and result["analogies"]["3cosadd"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("flag", ["", "--text", "--binary"])
@pytest.mark.parametrize("command", ["similar", "analogy", "eval"])
@pytest.mark.parametrize("case", list(CLI_CASES))
def test_malformed_vectors_files(tmp_path, capsys, case, command, flag):
    layout, mutate, own_errors, other_errors = CLI_CASES[case]
    path = tmp_path / ("v.bin" if layout == "binary" else "v.txt")
    path.write_bytes(mutate(_valid(layout == "binary")))
    own_layout = flag == "" or flag == f"--{layout}"
    expected = own_errors if own_layout else other_errors
    code = _run_command(command, path, [flag] if flag else [], tmp_path)
    out, err = capsys.readouterr()
    if expected is None:
        assert code == 0, err
        _check_output(command, out)
        return
    assert code == 2 and out == "", (code, out)  # never garbage words and exit 0
    assert err.startswith(f"parvec: error: {path}") and "Traceback" not in err, err
    for fragment in expected:
        assert re.search(fragment, err), (fragment, err)
    assert ("--binary" if layout == "text" else "--text") not in err, err  # never the wrong layout


@pytest.mark.parametrize("command", ["similar", "analogy", "eval"])
def test_header_less_file_with_no_header_flag(tmp_path, capsys, command):
    path = tmp_path / "glove.txt"
    path.write_bytes(_valid(False)[4:])
    assert _run_command(command, path, ["--no-header"], tmp_path) == 0
    _check_output(command, capsys.readouterr().out)
    assert _run_command(command, path, ["--no-header", "--binary"], tmp_path) == 2
    assert "no_header" in capsys.readouterr().err


def test_vectors_help_states_the_reading_rules(capsys):
    for command in ("similar", "analogy", "eval"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--no-header" in text
        assert "binary only when" in text and "naming the line" in text, text
