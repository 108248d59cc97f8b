"""``parvec similar``, ``parvec analogy``, ``parvec eval`` (of vector files and of model directories) and ``parvec
verify``."""

from __future__ import annotations

import json
import re
import shutil
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


def _word2vec_model(tmp_path: Path) -> Path:
    from parvec.word2vec import Word2Vec

    sentences = [["man", "king", "prince", "queen"], ["woman", "queen", "princess", "king"],
                 ["apple", "pear", "apple", "pear"]] * 40
    model = Word2Vec(sentences=sentences, vector_size=8, min_count=1, epochs=2, workers=1, seed=3)
    model.save(tmp_path / "model")
    model.wv.save(tmp_path / "vec")
    return tmp_path / "model"


def test_similar_analogy_and_eval_read_a_model_directory_as_its_vectors(tmp_path, capsys):
    from parvec.checkpoints import EPOCH_END

    model = _word2vec_model(tmp_path)
    shutil.copytree(model, tmp_path / "ck" / EPOCH_END)  # a checkpoint directory: its latest checkpoint is read
    pairs, questions = _eval_files(tmp_path)
    commands = (["similar", "{}", "king", "-k", "4"], ["analogy", "{}", "man", "king", "woman", "-k", "3"],
                ["eval", "{}", "--ws353", str(pairs), "--analogies", str(questions)],
                ["similar", "--limit", "5", "{}", "king"])
    for argv in commands:
        assert main([a.format(tmp_path / "vec.npy") for a in argv]) == 0
        want = capsys.readouterr().out
        for directory in (model, tmp_path / "ck"):
            assert main([a.format(directory) for a in argv]) == 0
            got = capsys.readouterr()
            assert got.out == want and want
        assert f"reading {tmp_path / 'ck' / EPOCH_END}, the latest checkpoint in {tmp_path / 'ck'}" in got.err


def test_a_directory_that_is_no_model_is_named_with_what_was_expected(tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x")
    pairs, _ = _eval_files(tmp_path)
    for argv in (["similar", "{}", "king"], ["analogy", "{}", "a", "b", "c"], ["eval", "{}", "--ws353", str(pairs)]):
        assert main([a.format(tmp_path / "notes") for a in argv]) == 2
        err = capsys.readouterr().err
        assert (f"parvec: error: {tmp_path / 'notes'}: a directory, not a vector file or a parvec model directory (no "
                "model.json): it holds todo.txt; expected a vector file (.npy with its .vocab.txt, word2vec text or "
                "binary) or a model directory (Word2Vec.save, parvec train --save-model, a --checkpoint-dir)") in err


def _damage(path: Path, how: str) -> Path:
    shard = path / "shards" / "shard-1-of-2" / "in.npy"
    if how == "truncated":
        with open(shard, "r+b") as f:
            f.truncate(shard.stat().st_size // 2)
    else:
        with open(shard, "r+b") as f:
            f.seek(128)
            f.write(b"\xff" * 64)  # the first row's columns of that shard: NaN
    return shard


@pytest.mark.parametrize("command", ["similar", "analogy", "eval"])
@pytest.mark.parametrize("how", ["truncated", "0xff"])
def test_a_damaged_sharded_model_is_an_error_never_a_traceback_or_a_nan(tmp_path, capsys, monkeypatch, how, command):
    from sharded_model_dir import topic_vectors, write_sharded_model

    import parvec.sharded_vectors as sharded_vectors

    vectors, words = topic_vectors(40, 8)
    path = write_sharded_model(tmp_path / "model", vectors, words)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("t0w0\tt0w3\t9\nt0w0\tt1w1\t1\nt1w4\tt2w2\t3\n")
    argv = {"similar": ["similar", path, "t1w4"], "analogy": ["analogy", path, "t0w3", "t0w0", "t1w4"],
            "eval": ["eval", path, "--ws353", pairs]}[command]
    assert main([str(a) for a in argv]) == 0  # intact
    capsys.readouterr()
    shard = _damage(path, how)
    for big in (False, True):  # a model small enough for its CRC-32s at open; one too big (sizes, then the rows)
        if big:
            monkeypatch.setattr(sharded_vectors, "CHECK_AT_OPEN_BYTES", 100)
        assert main([str(a) for a in argv]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and "nan" not in err.split(":")[-1], err
        if how == "truncated":
            assert f"parvec: error: {shard}: truncated: the file has " in err
        elif not big:
            assert f"parvec: error: {shard}: its data does not match the CRC-32 model.json records" in err
        else:
            assert re.search(rf"^parvec: error: {path}: the model is damaged: the vector of 't0w(\d)' \(row \1\) "
                             rf"holds NaN or infinite values in {shard} \(columns 4..7\); `parvec verify {path}`",
                             err), err  # rows 0-3, the first one the command reads


def test_a_nan_vector_is_never_printed_as_a_score(tmp_path, capsys):
    vectors = VECTORS.copy()
    vectors[WORDS.index("king"), 1] = np.nan
    path = save_npy(tmp_path / "vec", vectors, WORDS)
    pairs, questions = _eval_files(tmp_path)
    for argv, word in ((["similar", path, "king"], "king"), (["analogy", path, "man", "king", "woman"], "king"),
                       (["eval", path, "--ws353", pairs], "king"), (["eval", path, "--analogies", questions], "king")):
        assert main([str(a) for a in argv]) == 2
        out, err = capsys.readouterr()
        assert out == "" and f"parvec: error: {path}: " in err and f"{word!r}" in err and "NaN" in err, err


def test_verify_checks_a_model_a_checkpoint_directory_and_a_sharded_model(tmp_path, capsys):
    from sharded_model_dir import topic_vectors, write_sharded_model

    from parvec.checkpoints import EPOCH_END

    model = _word2vec_model(tmp_path)
    shutil.copytree(model, tmp_path / "ck" / EPOCH_END)
    sharded = write_sharded_model(tmp_path / "sharded", *topic_vectors(40, 8))
    for path, files in ((model, 3), (tmp_path / "ck", 3), (sharded, 2 * 2 + 2 * 5)):
        assert main(["verify", str(path)]) == 0
        out = capsys.readouterr().out
        assert out.count(" ok\n") == files and out.endswith(f"{path}: all {files} files match model.json\n"), out
    with open(model / "vectors.npy", "r+b") as f:  # a finite value changed: only the CRC-32 tells
        f.seek(200)
        f.write(np.float32(0.25).tobytes())
    shard = _damage(sharded, "truncated")
    for path, file, problem in ((model, model / "vectors.npy", "its data does not match the CRC-32 model.json "
                                 "records (the file was altered or damaged)"),
                                (sharded, shard, "truncated: the file has ")):
        assert main(["verify", str(path)]) == 2
        out, err = capsys.readouterr()
        assert f"DAMAGED: {problem}" in out
        assert err.startswith(f"parvec: error: {path}: 1 of ") and f"files damaged: {file}: {problem}" in err
    assert main(["verify", str(tmp_path / "vec.npy")]) == 2
    assert "vec.npy: not a model directory (a file): parvec verify checks a model directory" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "nowhere")]) == 2
    assert ("nowhere: not a parvec model directory (no model.json): there is no such file or directory"
            in capsys.readouterr().err)
