"""`parvec train` end to end: parvec's and word2vec.c's flags, reports, errors, atomic outputs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from cli_run import run


def test_train_writes_vectors_and_report(tiny_corpus, tmp_path, capsys):
    out = tmp_path / "vec.txt"
    report = tmp_path / "report.json"
    code, _, err = run(["train", tiny_corpus, "-o", out, "--dim", 16, "--epochs", 3, "--threads", 1,
                        "--min-count", 1, "--algo", "classic", "--report", report, "--no-cache"], capsys)
    assert code == 0, err
    assert "vocabulary 40" in err and "memory:" in err
    header = out.read_text().splitlines()[0]
    assert header == "40 16"
    rep = json.loads(report.read_text())
    assert rep["vocab_size"] == 40 and rep["corpus_words"] == 7200 and rep["epochs"] == 3
    assert rep["words_trained"] == 3 * 7200
    for key in ("training_seconds", "words_per_sec", "raw_words_per_sec", "peak_memory_bytes"):
        assert rep[key] > 0
    assert len(rep["loss_per_epoch"]) == 3
    assert rep["parameters"]["dim"] == 16 and rep["parameters"]["algo"] == "classic"
    from parvec.keyedvectors import KeyedVectors

    kv = KeyedVectors.load_word2vec_format(out)
    same = [w for w, _ in kv.most_similar("a3", topn=5)]
    assert sum(w.startswith("a") for w in same) >= 4  # topic words rank together


def test_word2vec_c_flags_run_unchanged(tiny_corpus, tmp_path, capsys):
    out = tmp_path / "vec.bin"
    code, _, err = run(["-train", tiny_corpus, "-output", out, "-size", 8, "-window", 3, "-negative", 3,
                        "-sample", "1e-3", "-min-count", 1, "-iter", 1, "-alpha", "0.05", "-threads", 1,
                        "-binary", 1, "-cbow", 0, "-hs", 0, "--algo", "classic", "--no-cache"], capsys)
    assert code == 0, err
    raw = out.read_bytes()
    assert raw.startswith(b"40 8\n") and len(raw) > 40 * 8 * 4  # binary payload


def test_hs_with_what_it_cannot_run_with_is_refused(tiny_corpus, tmp_path, capsys):
    # -cbow 1 trains CBOW (tests/kernels/test_cbow.py), -hs 1 hierarchical softmax (tests/kernels/test_hs.py);
    # what -hs cannot run with is refused by name
    code, _, err = run(["-train", tiny_corpus, "-output", tmp_path / "v.txt", "-hs", 1, "--algo", "par"], capsys)
    assert code == 2 and "algo 'par'" in err
    with pytest.raises(SystemExit) as exc:  # argparse's usage error
        run(["-train", tiny_corpus, "-output", tmp_path / "v.txt", "-hs", 2], capsys)
    assert exc.value.code == 2 and "expected 0 or 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "{missing}", "-o", "{out}"], "no such file"),
        (["train", "{empty}", "-o", "{out}"], "empty"),
        (["train", "{corpus}", "-o", "{out}", "--min-count", "1000"], "no word reaches min_count=1000"),
        (["train", "{corpus}", "-o", "{out}", "--dim", "0"], "dim must be a positive integer"),
        (["train", "{corpus}", "-o", "{out}", "--window", "-2"], "window must be a positive integer"),
        (["train", "{corpus}", "-o", "{out}", "--epochs", "0"], "epochs must be a positive integer"),
        (["train", "{corpus}", "-o", "{out}", "--negative", "0"], "negative must be a positive integer"),
        (["train", "{corpus}", "-o", "{nodir}"], "does not exist"),
        (["train", "{badutf}", "-o", "{out}"], "invalid UTF-8"),
    ],
)
def test_errors_exit_2_with_a_clear_message(argv, message, tiny_corpus, tmp_path, capsys):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "bad.txt").write_bytes(b"ok line\n\xff\xfe\n")
    names = {"missing": tmp_path / "nope.txt", "empty": tmp_path / "empty.txt", "corpus": tiny_corpus,
             "out": tmp_path / "v.txt", "nodir": tmp_path / "no" / "such" / "v.txt", "badutf": tmp_path / "bad.txt"}
    argv = [a.format(**names) for a in argv] + ["--no-cache", "--threads", "1", "--algo", "classic"]
    code, _, err = run(argv, capsys)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "v.txt").exists()  # nothing half-written


def test_bad_utf8_error_names_the_line(tmp_path, capsys):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"a b\nc d\ne \xff\n")
    code, _, err = run(["train", p, "-o", tmp_path / "v.txt", "--no-cache", "--min-count", "1"], capsys)
    assert code == 2 and "bad.txt:3" in err and "--unicode-errors replace" in err


def test_existing_output_survives_a_failed_run(tiny_corpus, tmp_path, capsys):
    out = tmp_path / "v.txt"
    out.write_text("precious")
    code, _, _ = run(["train", tiny_corpus, "-o", out, "--min-count", "100000", "--no-cache"], capsys)
    assert code == 2 and out.read_text() == "precious"


def test_checkpoint_and_resume(tiny_corpus, tmp_path, capsys):
    from parvec.keyedvectors import KeyedVectors
    from parvec.word2vec import Word2Vec

    args = ["train", tiny_corpus, "--dim", 8, "--epochs", 2, "--threads", 1, "--min-count", 1, "--algo",
            "classic", "--no-cache", "--seed", 4]
    code, _, err = run([*args, "-o", tmp_path / "full.txt"], capsys)
    assert code == 0, err
    # The same run, interrupted after its first epoch's checkpoint.
    ck = tmp_path / "ck"
    ck.mkdir()
    model = Word2Vec(vector_size=8, epochs=2, workers=1, min_count=1, algo="classic", seed=4, checkpoint_dir=ck)
    enc = model.build_vocab(corpus_file=tiny_corpus)

    def interrupt(model, epoch, stats):
        raise RuntimeError("power cut")

    with pytest.raises(RuntimeError, match="power cut"):
        model.train(corpus=enc, callbacks=[interrupt])
    assert Word2Vec.load(ck / "checkpoint").epochs_trained == 1
    code, _, err = run(["train", tiny_corpus, "--resume", ck / "checkpoint", "-o", tmp_path / "resumed.txt",
                        "--threads", 1, "--no-cache"], capsys)
    assert code == 0, err
    assert "1 of 2 epochs done" in err
    a = KeyedVectors.load_word2vec_format(tmp_path / "full.txt")
    b = KeyedVectors.load_word2vec_format(tmp_path / "resumed.txt")
    assert a.index_to_key == b.index_to_key
    np.testing.assert_allclose(a.vectors, b.vectors, atol=1e-5)  # text format rounds


def test_console_script_runs(tmp_path):
    out = subprocess.run([sys.executable, "-m", "parvec.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    for cmd in ("train", "similar", "analogy", "eval", "demo"):
        assert cmd in out.stdout


def test_python_m_parvec_and_a_diverging_run_exit_2_without_output(tiny_corpus, tmp_path):
    out = tmp_path / "v.txt"
    r = subprocess.run([sys.executable, "-m", "parvec", "train", str(tiny_corpus), "-o", str(out), "--alpha", "1e6",
                        "--epochs", "1", "--threads", "1", "--min-count", "1", "--dim", "8"],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "training diverged in epoch 1" in r.stderr and "lower alpha" in r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists()


def test_a_directory_input_names_what_it_skips_and_refuses_a_link_to_nothing(tiny_corpus, tmp_path, capsys):
    import os

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_bytes(tiny_corpus.read_bytes())
    (corpus / "sub").mkdir()
    (corpus / "sub" / "more.txt").write_text("never read\n")
    os.mkfifo(corpus / "pipe")
    (corpus / ".hidden").write_text("left out, as documented\n")
    argv = ["train", corpus, "-o", tmp_path / "v.txt", "--dim", 8, "--epochs", 1, "--threads", 1, "--min-count", 1,
            "--no-cache"]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    # one line (the paths are checked before the reading, which says it), naming each entry skipped
    assert [line for line in err.splitlines() if "skipped" in line] == [
        f"parvec: warning: {corpus}: skipped 2 entries that are not a file to read: pipe (a FIFO, not a regular "
        "file), sub/ (a directory: subdirectories are not read)"], err
    assert "7,200 words, vocabulary 40" in err  # a.txt alone
    (corpus / "zz-link").symlink_to(tmp_path / "gone.txt")
    code, _, err = run([*argv[:3], tmp_path / "w.txt", *argv[4:]], capsys)
    assert code == 2 and "Traceback" not in err and err.strip().splitlines()[-1] == (
        f"parvec: error: {corpus / 'zz-link'}: a symbolic link to {tmp_path / 'gone.txt'}, which does not exist "
        f"({corpus} is read as a corpus of its files: remove the link, or restore what it names)"), err
    assert not (tmp_path / "w.txt").exists()


def test_train_help_says_how_a_directory_input_is_read(capsys):
    from parvec.cli import main

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("A directory is read as its own regular files (and links to one), by name, not recursively: hidden and "
            "empty files are left out, subdirectories, FIFOs, sockets and devices are skipped and named in a warning, "
            "a link to nothing is an error") in text
