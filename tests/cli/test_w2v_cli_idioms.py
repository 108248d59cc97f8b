"""word2vec.c command lines: the defaults rule, -save-vocab/-read-vocab, -debug, -classes (end to end)."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from cli_run import run

from parvec.cli import build_parser
from parvec.cli.train import resolve_defaults
from parvec.keyedvectors import KeyedVectors

FAST = ["-threads", 1, "--no-cache", "-min-count", 1, "-size", 8, "-iter", 2]


@pytest.fixture()
def corpus(tiny_corpus):
    return tiny_corpus




def parsed(*argv):
    values, line = resolve_defaults(build_parser().parse_args(["train", *argv]))
    return SimpleNamespace(**values), line


def test_train_flag_selects_word2vec_c_defaults():
    args, line = parsed("-train", "c.txt", "-output", "v.bin")
    assert (args.cbow, args.alpha, args.sample, args.epochs, args.min_count, args.window, args.negative, args.hs,
            args.dim, args.binary) == (1, 0.05, 1e-3, 5, 5, 5, 5, 0, 100, 0)
    assert line.startswith("word2vec.c defaults (the corpus given by -train): cbow 1, alpha 0.05, sample 1e-3, iter 5")
    args, line = parsed("-train", "c.txt", "-output", "v.bin", "-cbow", "0", "-size", "200", "--epochs", "3")
    assert (args.cbow, args.alpha, args.dim, args.epochs) == (0, 0.025, 200, 3)  # alpha follows the model
    assert "alpha 0.025" in line.split(";")[0] and line.endswith("given: cbow 0, iter 3, size 200")
    args, line = parsed("-train", "c.txt", "-cbow", "1", "-alpha", "0.01")
    assert args.alpha == 0.01 and "given: cbow 1, alpha 0.01" in line


def test_input_keeps_parvec_defaults():
    args, line = parsed("c.txt", "-o", "v.bin")
    assert (args.cbow, args.alpha, args.sample, args.epochs, args.min_count, args.binary) == (0, 0.025, 1e-3, 5, 5,
                                                                                              None)
    assert line.startswith("parvec defaults (the corpus given as INPUT): cbow 0, alpha 0.025")
    args, _ = parsed("c.txt", "-o", "v.txt", "-cbow", "1")
    assert args.alpha == 0.05  # CBOW's rate in both styles


def test_training_file_named_both_ways_is_refused(corpus, tmp_path, capsys):
    code, _, err = run(["train", corpus, "-train", corpus, "-output", tmp_path / "v.txt"], capsys)
    assert code == 2 and "named twice" in err and "-train FILE (word2vec.c's defaults) or INPUT" in err
    with pytest.raises(SystemExit) as info:  # argparse's usage error
        run(["-train", corpus, "-output", tmp_path / "v.txt", "-cbow", 2], capsys)
    assert info.value.code == 2 and "-cbow/--cbow: expected 0 or 1, got '2'" in capsys.readouterr().err


def test_word2vec_c_command_line_end_to_end(corpus, tmp_path, capsys):
    # No -cbow: CBOW trains, as word2vec.c: the same vectors as an explicit -cbow 1 (one thread: deterministic).
    report = tmp_path / "r.json"
    code, _, err = run(["-train", corpus, "-output", tmp_path / "cbow.txt", "--report", report, *FAST], capsys)
    assert code == 0, err
    assert err.splitlines()[0].startswith("word2vec.c defaults (the corpus given by -train): cbow 1, alpha 0.05")
    params = json.loads(report.read_text())["parameters"]
    assert params["sg"] is False and params["alpha"] == 0.05 and params["sample"] == 1e-3 and params["epochs"] == 2
    code, _, err = run(["-train", corpus, "-output", tmp_path / "cbow1.txt", "-cbow", 1, *FAST], capsys)
    assert code == 0, err
    implicit = KeyedVectors.load_word2vec_format(tmp_path / "cbow.txt")
    explicit = KeyedVectors.load_word2vec_format(tmp_path / "cbow1.txt")
    assert implicit.index_to_key == explicit.index_to_key
    np.testing.assert_array_equal(implicit.vectors, explicit.vectors)
    code, _, err = run(["-train", corpus, "-output", tmp_path / "sg.txt", "-cbow", 0, *FAST], capsys)
    assert code == 0, err
    assert not np.allclose(KeyedVectors.load_word2vec_format(tmp_path / "sg.txt").vectors, implicit.vectors)
    # Skip-gram, as word2vec.c: -binary defaults to 0, so a .bin name still gets text.
    out = tmp_path / "v.bin"
    code, _, err = run(["-train", corpus, "-output", out, "-cbow", 0, "--report", report, *FAST], capsys)
    assert code == 0, err
    assert err.splitlines()[0].startswith("word2vec.c defaults (the corpus given by -train): alpha 0.025")
    assert out.read_text().splitlines()[0] == "40 8"  # text
    params = json.loads(report.read_text())["parameters"]
    assert params["sg"] is True and params["alpha"] == 0.025 and params["epochs"] == 2 and params["sample"] == 1e-3
    # parvec's style: binary by the name.
    code, _, err = run(["train", corpus, "-o", out, "--threads", 1, "--no-cache", "--dim", 8, "--epochs", 1,
                        "--min-count", 1], capsys)
    assert code == 0 and err.splitlines()[0].startswith("parvec defaults")
    assert out.read_bytes().startswith(b"40 8\n") and len(out.read_bytes()) > 40 * 8 * 4


def test_debug_levels(corpus, tmp_path, capsys):
    base = ["-train", corpus, "-output", tmp_path / "v.txt", "-cbow", 0, *FAST]
    code, out, err = run([*base, "-debug", 0], capsys)
    assert code == 0 and err == "" and out == ""
    code, _, err = run([*base, "-debug", 1], capsys)
    assert code == 0 and "word2vec.c defaults" in err and "trained" in err and "\r" not in err
    code, _, err = run([*base, "-debug", 2, "--progress"], capsys)
    assert code == 0 and "\r" in err  # the progress bar
    code, _, err = run([*base, "-debug", 0, "-size", 0], capsys)
    assert code == 2 and "dim must be a positive integer" in err  # errors still show
    code, _, err = run([*base, "-debug", 3], capsys)
    assert code == 2 and "-debug must be 0, 1 or 2" in err


def test_save_vocab_read_vocab_round_trip(corpus, tmp_path, capsys):
    vocab, out_a, out_b = tmp_path / "vocab.txt", tmp_path / "a.txt", tmp_path / "b.txt"
    code, _, err = run(["-train", corpus, "-output", out_a, "-cbow", 0, "-save-vocab", vocab, *FAST], capsys)
    assert code == 0, err
    lines = vocab.read_text().splitlines()
    assert lines[0] == "</s> 600"  # word2vec.c's first line: the sentence-end token, once per line
    words = [ln.split()[0] for ln in lines[1:]]
    counts = [int(ln.split()[1]) for ln in lines[1:]]
    assert dict(zip(words, counts, strict=True)) == Counter(corpus.read_text().split())
    assert counts == sorted(counts, reverse=True)
    # Reading it back gives the same vocabulary, so the same run (1 thread, same seed) gives the same vectors.
    code, _, err = run(["-train", corpus, "-output", out_b, "-cbow", 0, "-read-vocab", vocab, *FAST], capsys)
    assert code == 0, err
    a, b = KeyedVectors.load_word2vec_format(out_a), KeyedVectors.load_word2vec_format(out_b)
    assert a.index_to_key == b.index_to_key == words
    np.testing.assert_array_equal(a.vectors, b.vectors)


def test_read_vocab_sets_words_and_counts(corpus, tmp_path, capsys):
    # A word2vec.c-written file (CRLF, any order): counts from the file, sorted; min-count on the file's counts;
    # corpus words not in it dropped; a word the corpus lacks keeps its initial vector and is reported.
    vocab = tmp_path / "vocab.txt"
    vocab.write_bytes(b"</s> 600\r\na3 50\r\nb1 2\r\nb2 900\r\nghost 40\r\na4 50\r\n")
    out = tmp_path / "v.txt"
    code, _, err = run(["-train", corpus, "-output", out, "-cbow", 0, "-read-vocab", vocab, *FAST[:-4],
                        "-min-count", 5, "-size", 8, "-iter", 1], capsys)
    assert code == 0, err
    kv = KeyedVectors.load_word2vec_format(out)
    assert kv.index_to_key == ["b2", "a3", "a4", "ghost"]
    assert "4 words reach min-count 5" in err and "1 of its words never occur in the corpus" in err
    n_tokens = sum(corpus.read_text().split().count(w) for w in ("b2", "a3", "a4"))
    assert f"{n_tokens:,} in-vocabulary tokens" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"a0 5\n\nb0 3\n", ":2: expected 'word count', but the line is blank"),
        (b"a0 5\nb0 3 7\n", ":2: expected 'word count', but the line has 3 fields"),
        (b"a0 5\nb0 3x\n", ":2: the count of 'b0' is not a non-negative integer"),
        (b"a0 5\nb0 -3\n", ":2: the count of 'b0' is not a non-negative integer"),
        (b"a0 5\nb0 3\na0 4\n", ":3: 'a0' is listed twice (first on line 1)"),
        (b"a0 5\n\xff\xfe 3\n", ":2: invalid UTF-8"),
        (b"</s> 5\n", "lists no words"),
        (b"a0 1\nb0 2\n", "no word of the vocabulary file reaches min_count=5"),
    ],
)
def test_bad_vocabulary_files(corpus, tmp_path, capsys, content, message):
    vocab = tmp_path / "bad.txt"
    vocab.write_bytes(content)
    out = tmp_path / "v.txt"
    code, _, err = run(["-train", corpus, "-output", out, "-cbow", 0, "-read-vocab", vocab, "-threads", 1,
                        "--no-cache"], capsys)
    assert code == 2 and f"{vocab}" in err and message in err, err
    assert not out.exists()


def test_vocabulary_paths_are_checked(corpus, tmp_path, capsys):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a0 5\n")
    code, _, err = run(["-train", corpus, "-output", tmp_path / "v.txt", "-cbow", 0, "-read-vocab", vocab,
                        "-save-vocab", vocab, *FAST], capsys)
    assert code == 2 and "-save-vocab" in err and "-read-vocab" in err
    assert vocab.read_text() == "a0 5\n"
    code, _, err = run(["-train", corpus, "-output", tmp_path / "v.txt", "-read-vocab", tmp_path / "none.txt",
                        "-cbow", 0, *FAST], capsys)
    assert code == 2 and "none.txt: no such vocabulary file" in err


def test_classes_output(corpus, tmp_path, capsys):
    outs = [tmp_path / "c1.txt", tmp_path / "c2.txt"]
    for out in outs:
        code, _, err = run(["-train", corpus, "-output", out, "-cbow", 0, "-classes", 2, "-binary", 1,
                            "-threads", 1, "--no-cache", "-min-count", 1, "-size", 16, "-iter", 5, "-sample", 0],
                           capsys)
        assert code == 0, err
    lines = outs[0].read_text().splitlines()
    assert lines == outs[1].read_text().splitlines()  # seeded
    classes = {w: int(c) for w, c in (ln.split(" ") for ln in lines)}
    assert len(lines) == 40 and set(classes.values()) == {0, 1}
    # The two topics are the two classes.
    assert len({classes[f"a{i}"] for i in range(20)}) == 1 and len({classes[f"b{i}"] for i in range(20)}) == 1
    assert classes["a0"] != classes["b0"]
    code, _, err = run(["-train", corpus, "-output", tmp_path / "c.npy", "-classes", 2, "-cbow", 0, *FAST], capsys)
    assert code == 2 and "names a .npy file" in err
    code, _, err = run(["-train", corpus, "-output", tmp_path / "c.txt", "-classes", 41, "-cbow", 0, *FAST], capsys)
    assert code == 2 and "-classes 41: must be between 1 and the vocabulary size (40)" in err
    assert not (tmp_path / "c.txt").exists()
