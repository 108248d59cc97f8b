"""What a new user hit: closed pipes, outputs naming inputs, unwritable outputs, odd flags.

Each test runs the CLI end to end, in-process through ``parvec.cli.main`` where it can, or as a
subprocess where the test is about the process itself (its standard streams, its exit status).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

from parvec.cli import main

FAST = ["--dim", "8", "--epochs", "1", "--threads", "1", "--min-count", "1", "--algo", "classic", "--no-cache"]


@pytest.fixture()
def corpus(tmp_path):
    rng = np.random.default_rng(0)
    a = [f"a{i}" for i in range(20)]
    b = [f"b{i}" for i in range(20)]
    lines = [" ".join(rng.choice(a if i % 2 else b, 12)) for i in range(400)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture()
def graph_file(tmp_path):
    # Two 6-cliques joined by one edge.
    edges = [(i, j) for c in (0, 6) for i in range(c, c + 6) for j in range(i + 1, c + 6)] + [(0, 6)]
    path = tmp_path / "g.edgelist"
    path.write_text("".join(f"{u} {v}\n" for u, v in edges))
    return path




def leftovers(directory: Path) -> list[str]:
    """Temporary files an output reservation could have left behind."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def check_vectors(path: Path, n: int, dim: int) -> None:
    lines = path.read_text().splitlines()
    assert lines[0] == f"{n} {dim}"
    assert len(lines) == n + 1 and all(len(line.split()) == dim + 1 for line in lines[1:])


def parvec_cmd() -> list[str]:
    return [sys.executable, "-m", "parvec"]


# ---------------------------------------------------------------------- 1. closed stdout/stderr
def test_train_into_closed_pipes_still_trains_writes_and_exits_0(corpus, tmp_path):
    # Both streams go to a pipe whose reader is already gone: every write fails with EPIPE.
    out = tmp_path / "v.txt"
    report = tmp_path / "r.json"
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([*parvec_cmd(), "train", str(corpus), "-o", str(out), "--report", str(report),
                               "--progress", *FAST], stdout=w, stderr=w, timeout=300)  # fmt: skip
    finally:
        os.close(w)
    assert proc.returncode == 0
    check_vectors(out, 40, 8)
    assert json.loads(report.read_text())["vocab_size"] == 40


def test_train_piped_into_head_exits_0_with_the_output(corpus, tmp_path):
    # The command line: `parvec train corpus -o v.txt 2>&1 | head -1`, exit status of parvec.
    out = tmp_path / "v.txt"
    script = '"$@" 2>&1 | head -1 >/dev/null; exit "${PIPESTATUS[0]}"'
    proc = subprocess.run(["bash", "-c", script, "bash", *parvec_cmd(), "train", str(corpus), "-o", str(out),
                           "--progress", *FAST], timeout=300)  # fmt: skip
    assert proc.returncode == 0
    check_vectors(out, 40, 8)


def test_a_failing_run_with_closed_stderr_still_exits_2(corpus, tmp_path):
    out = tmp_path / "v.txt"
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([*parvec_cmd(), "train", str(corpus), "-o", str(out), *FAST, "--min-count", "100000"],
                              stdout=w, stderr=w, timeout=300)  # fmt: skip
    finally:
        os.close(w)
    assert proc.returncode == 2
    assert not out.exists() and leftovers(tmp_path) == []


def test_query_into_closed_stdout_is_quiet_and_not_exit_0(tmp_path):
    # `parvec similar ... | head -1`: the reader left, so the output was not all delivered. parvec says nothing
    # (no traceback, no "Exception ignored") and exits 141, as a Unix tool stopped by SIGPIPE reports it.
    vec = tmp_path / "v.txt"
    rng = np.random.default_rng(1)
    vec.write_text("300 4\n" + "".join(f"w{i} " + " ".join(f"{x:.4f}" for x in rng.normal(size=4)) + "\n"
                                       for i in range(300)))  # fmt: skip
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([*parvec_cmd(), "similar", str(vec), "w1", "-k", "200"], stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=300)  # fmt: skip
    finally:
        os.close(w)
    assert proc.stderr == ""
    assert proc.returncode == 141


def test_node2vec_into_closed_pipes_writes_and_exits_0(graph_file, tmp_path):
    out = tmp_path / "g.emb"
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([*parvec_cmd(), "node2vec", str(graph_file), "-o", str(out), "--dimensions", "4",
                               "--walk-length", "5", "--num-walks", "2", "--workers", "1"],
                              stdout=w, stderr=w, timeout=300)  # fmt: skip
    finally:
        os.close(w)
    assert proc.returncode == 0
    check_vectors(out, 12, 4)


def test_tolerant_stream_drops_writes_after_the_first_failure():
    from parvec.cli.outputs import TolerantStream

    class Closed:
        writes = 0

        def write(self, s):
            Closed.writes += 1
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

        def isatty(self):
            return False

    s = TolerantStream(Closed(), redirect=False)
    assert s.write("one\n") == 4 and s.failed is not None and s.failed.errno == 32
    s.write("two\n")
    s.flush()
    assert Closed.writes == 1 and not s.isatty()


# ---------------------------------------------------------------------- 2. an output naming an input
@pytest.mark.parametrize("flag", ["-o", "--report", "--save-vocab"])
def test_an_output_naming_the_corpus_is_refused_before_reading(flag, corpus, capsys):
    before = corpus.read_bytes()
    extra = [] if flag == "-o" else ["-o", corpus.parent / "v.txt"]
    code, _, err = run(["train", corpus, flag, corpus, *extra, *FAST], capsys)
    assert code == 2
    assert f"{flag} {corpus}" in err and "the training corpus" in err and "Traceback" not in err
    assert "vocabulary" not in err  # refused before reading
    assert corpus.read_bytes() == before and not (corpus.parent / "v.txt").exists()


def test_an_output_spelled_differently_or_linked_to_the_corpus_is_refused(corpus, tmp_path, capsys, monkeypatch):
    before = corpus.read_bytes()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "hard.txt").hardlink_to(corpus)
    (tmp_path / "soft.txt").symlink_to(corpus)
    for spelling, why in (("sub/../corpus.txt", ""), ("hard.txt", "same file"), ("soft.txt", "")):
        code, _, err = run(["train", "corpus.txt", "-o", spelling, *FAST], capsys)
        assert code == 2, spelling
        assert f"-o {spelling}" in err and "corpus.txt" in err and why in err, err
    # The corpus given through a hard link, the output under its real name.
    code, _, err = run(["train", "hard.txt", "-o", "corpus.txt", *FAST], capsys)
    assert code == 2 and "same file" in err
    assert corpus.read_bytes() == before


def test_npy_output_companions_are_checked(corpus, tmp_path, capsys):
    # -o v.npy also writes v.vocab.txt and v.counts.npy: none may be an input or another output.
    target = tmp_path / "v.vocab.txt"
    corpus.rename(target)
    code, _, err = run(["train", target, "-o", tmp_path / "v.npy", *FAST], capsys)
    assert code == 2 and "v.vocab.txt" in err and "the training corpus" in err
    code, _, err = run(["train", target, "-o", tmp_path / "w.npy", "--save-vocab", tmp_path / "w.vocab.txt", *FAST],
                       capsys)  # fmt: skip
    assert code == 2 and "--save-vocab" in err and "w.vocab.txt" in err


@pytest.mark.parametrize(
    ("first", "second"),
    [("-o", "--report"), ("-o", "--save-vocab"), ("--report", "--save-vocab")],
)
def test_two_outputs_naming_one_file_are_refused(first, second, corpus, tmp_path, capsys):
    same = tmp_path / "same.txt"
    extra = [] if "-o" in (first, second) else ["-o", tmp_path / "v.txt"]
    code, _, err = run(["train", corpus, first, same, second, same, *extra, *FAST], capsys)
    assert code == 2 and first in err and second in err and str(same) in err
    assert "vocabulary" not in err and not same.exists()


def test_model_directories_must_not_hold_or_be_other_paths(corpus, tmp_path, capsys):
    # --save-model replaces a whole directory: one holding the corpus, or another output, is refused.
    code, _, err = run(["train", corpus, "--save-model", tmp_path, *FAST], capsys)
    assert code == 2 and "--save-model" in err and "the training corpus" in err
    code, _, err = run(["train", corpus, "--save-model", tmp_path / "m", "-o", tmp_path / "m" / "v.txt", *FAST],
                       capsys)  # fmt: skip
    assert code == 2 and "--save-model" in err and "-o" in err
    code, _, err = run(["train", corpus, "--checkpoint-dir", tmp_path / "ck", "--save-model",
                        tmp_path / "ck" / "checkpoint", *FAST], capsys)  # fmt: skip
    assert code == 2 and "--checkpoint-dir" in err and "--save-model" in err
    # An existing directory that is not a parvec model is never replaced.
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "notes.txt").write_text("mine")
    code, _, err = run(["train", corpus, "--save-model", tmp_path / "stuff", *FAST], capsys)
    assert code == 2 and "not a parvec model" in err
    assert (tmp_path / "stuff" / "notes.txt").read_text() == "mine"


@pytest.fixture()
def checkpoint(corpus, tmp_path, capsys):
    code, _, err = run(["train", corpus, "--save-model", tmp_path / "model", *FAST], capsys)
    assert code == 0, err
    return tmp_path / "model"


@pytest.mark.parametrize(
    ("flag", "target"),
    [
        ("-o", "{m}/vectors.npy"),
        ("-o", "{m}/model.json"),
        ("--report", "{m}/model.json"),
        ("--save-vocab", "{m}/vocab.json"),
        ("--save-model", "{m}"),
    ],
)
def test_outputs_must_not_overwrite_the_resumed_model(flag, target, corpus, checkpoint, tmp_path, capsys):
    model = tmp_path / "ck" / "checkpoint"
    model.parent.mkdir()
    checkpoint.rename(model)
    files = {p.name: p.read_bytes() for p in model.iterdir()}
    path = target.format(m=model, parent=model.parent)
    extra = [] if flag == "-o" else ["-o", tmp_path / "v.txt"]
    code, _, err = run(["train", corpus, "--resume", model, flag, path, *extra, "--threads", "1", "--no-cache"],
                       capsys)  # fmt: skip
    assert code == 2, err
    assert flag in err and "--resume" in err and "resuming" not in err
    assert {p.name: p.read_bytes() for p in model.iterdir()} == files


def test_resuming_keeps_checkpointing_where_the_run_was_checkpointed(corpus, checkpoint, tmp_path, capsys):
    # --checkpoint-dir D with --resume D/checkpoint: the new checkpoints supersede the resumed one (a later
    # state of the same run, written atomically after the model was read whole); other outputs stay refused.
    from parvec.word2vec import Word2Vec

    model = tmp_path / "ck" / "checkpoint"
    model.parent.mkdir()
    checkpoint.rename(model)
    done = Word2Vec.load(model).epochs_trained
    meta = json.loads((model / "model.json").read_text())
    meta["config"]["epochs"] = done + 1  # one more epoch to run
    (model / "model.json").write_text(json.dumps(meta))
    code, _, err = run(["train", corpus, "--resume", model, "--checkpoint-dir", model.parent, "-o",
                        tmp_path / "v.txt", "--threads", "1", "--no-cache"], capsys)  # fmt: skip
    assert code == 0, err
    assert Word2Vec.load(model).epochs_trained == done + 1
    assert (tmp_path / "v.txt").exists()


def test_eval_files_read_every_epoch_are_inputs(corpus, tmp_path, capsys, monkeypatch):
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    (eval_dir / "wordsim353.tsv").write_text("a1\ta2\t5.0\n")
    monkeypatch.setenv("PARVEC_EVAL_DIR", str(eval_dir))
    code, _, err = run(["train", corpus, "-o", eval_dir / "wordsim353.tsv", "--eval-every-epoch", *FAST], capsys)
    assert code == 2 and "wordsim353.tsv" in err and "--eval-every-epoch" in err
    assert (eval_dir / "wordsim353.tsv").read_text() == "a1\ta2\t5.0\n"


@pytest.mark.parametrize("command", ["node2vec", "deepwalk"])
def test_graph_embedding_output_naming_the_graph_is_refused(command, graph_file, tmp_path, capsys):
    before = graph_file.read_bytes()
    (tmp_path / "link.edgelist").hardlink_to(graph_file)
    for out, why in ((graph_file, "the graph"), (tmp_path / "link.edgelist", "same file")):
        code, _, err = run([command, graph_file, "-o", out, "--dimensions", 4, "--walk-length", 5, "--num-walks", 2,
                            "--workers", 1], capsys)  # fmt: skip
        assert code == 2 and f"-o {out}" in err and str(graph_file) in err and why in err, err
    assert graph_file.read_bytes() == before


# ---------------------------------------------------------------------- 5. unwritable outputs, before training
@pytest.mark.parametrize("flag", ["-o", "--report", "--save-vocab", "--save-model", "--checkpoint-dir"])
def test_an_unwritable_output_is_refused_before_reading(flag, corpus, tmp_path, capsys):
    # Root can write almost anywhere, but not into /proc.
    target = "/proc/parvec-test-out" if flag == "--checkpoint-dir" else "/proc/parvec-test.txt"
    extra = [] if flag == "-o" else ["-o", tmp_path / "v.txt"]
    code, _, err = run(["train", corpus, flag, target, *extra, *FAST], capsys)
    assert code == 2 and flag in err and "/proc" in err and "Traceback" not in err
    assert "vocabulary" not in err and "trained" not in err  # nothing read, nothing trained
    assert leftovers(tmp_path) == [] and not (tmp_path / "v.txt").exists()


def test_node2vec_unwritable_output_is_refused_before_walking(graph_file, capsys):
    code, _, err = run(["node2vec", graph_file, "-o", "/proc/parvec-test.emb", "--dimensions", 4, "--walk-length", 5,
                        "--num-walks", 2, "--workers", 1], capsys)  # fmt: skip
    assert code == 2 and "-o" in err and "/proc" in err and "walks" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory; /proc covers root above")
def test_a_read_only_directory_is_refused_before_reading(corpus, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        code, _, err = run(["train", corpus, "-o", ro / "v.txt", *FAST], capsys)
    finally:
        ro.chmod(stat.S_IRWXU)
    assert code == 2 and str(ro) in err and "vocabulary" not in err


def test_demo_unwritable_output_is_refused_before_training(capsys):
    code, out, err = run(["demo", "-o", "/proc/parvec-demo.txt", "--threads", 1], capsys)
    assert code == 2 and "-o /proc/parvec-demo.txt" in err and "training" not in out


def test_the_temporary_output_exists_during_training_and_is_renamed(corpus, tmp_path, capsys, monkeypatch):
    from parvec.word2vec import Word2Vec

    seen: list[list[str]] = []
    real_train = Word2Vec.train

    def spy(self, *a, **k):
        seen.append(leftovers(tmp_path))
        return real_train(self, *a, **k)

    monkeypatch.setattr(Word2Vec, "train", spy)
    out = tmp_path / "v.txt"
    code, _, err = run(["train", corpus, "-o", out, "--report", tmp_path / "r.json", "--save-vocab",
                        tmp_path / "vocab.txt", "--save-model", tmp_path / "m", *FAST], capsys)  # fmt: skip
    assert code == 0, err
    assert len(seen) == 1 and len(seen[0]) == 4  # one temporary per output, made before training started
    assert all(name.startswith(".parvec-") for name in seen[0])
    assert leftovers(tmp_path) == []
    check_vectors(out, 40, 8)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask  # what a plain open() gives, not mkstemp's 0600
    assert (tmp_path / "m" / "model.json").is_file()


def test_a_failed_run_removes_its_temporary_outputs(corpus, tmp_path, capsys):
    out = tmp_path / "v.txt"
    out.write_text("precious")
    code, _, err = run(["train", corpus, "-o", out, "--report", tmp_path / "r.json", "--save-model", tmp_path / "m",
                        "--checkpoint-dir", tmp_path / "ck", *FAST, "--algo", "hogbatch", "--alpha", "1e6"],
                       capsys)  # fmt: skip
    assert code == 2 and "diverged" in err
    assert out.read_text() == "precious" and leftovers(tmp_path) == []
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "m").exists()
    assert not (tmp_path / "ck").exists()  # made for this run and still empty: removed


# ---------------------------------------------------------------------- 9. odd flags
@pytest.mark.parametrize("command", ["train", "demo"])
@pytest.mark.parametrize("value", ["0", "-2"])
def test_threads_zero_or_negative_is_refused(command, value, corpus, tmp_path, capsys):
    argv = [command, "-o", str(tmp_path / "v.txt"), "--threads", value]
    with pytest.raises(SystemExit) as exc:
        main(argv[:1] + [str(corpus)] + argv[1:] if command == "train" else argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--threads" in err and "all cores" in err and value in err
    assert not (tmp_path / "v.txt").exists()


def test_workers_zero_is_refused_and_none_means_all_cores():
    from parvec.config import default_threads
    from parvec.errors import ParvecError
    from parvec.word2vec import Word2Vec

    for bad in (0, -1):
        with pytest.raises(ParvecError, match=r"workers.*None.*all cores"):
            Word2Vec(workers=bad)
    assert Word2Vec(workers=None).workers == default_threads()
    assert Word2Vec(workers=1).workers == 1


def test_a_missing_checkpoint_dir_is_created_when_its_parent_exists(corpus, tmp_path, capsys):
    from parvec.word2vec import Word2Vec

    ck = tmp_path / "ck"
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.txt", "--checkpoint-dir", ck, *FAST], capsys)
    assert code == 0, err
    assert Word2Vec.load(ck / "checkpoint").epochs_trained == 1


def test_a_checkpoint_dir_without_its_parent_is_refused_naming_the_parent(corpus, tmp_path, capsys):
    ck = tmp_path / "no" / "ck"
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.txt", "--checkpoint-dir", ck, *FAST], capsys)
    assert code == 2 and "--checkpoint-dir" in err and str(tmp_path / "no") in err and "vocabulary" not in err
    assert not (tmp_path / "no").exists()


def test_help_says_dash_is_standard_input(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "- reads standard input" in out
    assert "at least 1" in out


def test_train_reads_standard_input(corpus, tmp_path):
    out = tmp_path / "v.txt"
    with open(corpus, "rb") as f:
        proc = subprocess.run([*parvec_cmd(), "train", "-", "-o", str(out), *FAST], stdin=f, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    check_vectors(out, 40, 8)


# ---------------------------------------------------------------------- the encoded-corpus cache in the report
def test_report_says_whether_the_cache_was_used(corpus, tmp_path, capsys):
    report = tmp_path / "r.json"
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.txt", "--report", report, *FAST], capsys)
    assert code == 0, err
    assert json.loads(report.read_text())["cache_used"] is None  # --no-cache: no cache involved
    assert "encoded-corpus cache: not used (--no-cache)" in err


def test_report_says_the_cache_was_used_on_the_second_run(corpus, tmp_path, capsys):
    args = ["train", corpus, "-o", tmp_path / "v.txt", "--report", tmp_path / "r.json", "--cache-dir",
            tmp_path / "cache", *[a for a in FAST if a != "--no-cache"]]
    used = []
    for _ in range(2):
        code, _, err = run(args, capsys)
        assert code == 0, err
        used.append(json.loads((tmp_path / "r.json").read_text())["cache_used"])
    assert used == [False, True]
    assert "encoded-corpus cache: used" in err


def test_a_process_substitution_is_read_as_a_stream_and_said_not_cached(corpus, tmp_path):
    # bash's <(...) is /dev/fd/N, a pipe: read once, never cached, and the run says so.
    cmd = " ".join([*map(str, parvec_cmd()), "train", f"<(cat {corpus})", "-o", str(tmp_path / "v.txt"),
                    *(str(a) for a in FAST if a != "--no-cache"), "--cache-dir", str(tmp_path / "cache")])
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "a stream (pipe or FIFO), read once, never cached" in proc.stderr
    assert (tmp_path / "v.txt").exists()
    assert not any((tmp_path / "cache").glob("**/*.npy"))
