"""A full disk during a checkpoint or an output: the error names the path and "no space left
on device" (not numpy's "N requested and M written"), exits 2, leaves no temporary file, keeps the previous
checkpoint intact and resumable bit for bit; ``--on-checkpoint-error continue`` trains on instead; an output
that cannot be written after training says which checkpoint holds the trained model and that ``--resume``
writes the outputs from it.

Two kinds of full disk: a real one (a small tmpfs mounted in a private mount namespace, ``unshare``; skipped
with the reason where this machine does not allow it), and one injected in this process that always runs: the
files opened for writing under one directory share a byte budget, and a write past it writes what fits and
raises ``OSError(ENOSPC)``, as the kernel does."""

from __future__ import annotations

import builtins
import errno
import io
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

from parvec.checkpoints import EPOCH_END, list_checkpoints
from parvec.errors import ParvecError
from parvec.word2vec import Word2Vec

REPO = Path(__file__).resolve().parents[2]
NO_SPACE = "no space left on device"
KW = dict(vector_size=16, epochs=2, workers=1, min_count=3, seed=7)
FLAGS = ["--dim", 16, "--epochs", 2, "--min-count", 3, "--seed", 7, "--threads", 1, "--no-cache", "--no-progress"]


# ---------------------------------------------------------------------- the injected full disk
class _Limited:
    """A file opened for writing on the full disk: each write takes its bytes from the disk's budget."""

    def __init__(self, f, disk: Disk) -> None:
        self._f, self._disk = f, disk

    def write(self, data):
        view = memoryview(data).cast("B")
        free = self._disk.free
        if free is not None and len(view) > free:
            self._f.write(view[:free])  # what fits, then the error (as write(2) on a full file system)
            self._f.flush()
            self._disk.free = 0
            self._disk.failures += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if free is not None:
            self._disk.free = free - len(view)
        self._disk.written += len(view)
        return self._f.write(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()

    def __getattr__(self, name):
        return getattr(self._f, name)


class Disk:
    """Files written under ``root`` share ``free`` bytes (None: no limit); ``written`` counts what they wrote."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.free: int | None = None
        self.written = 0
        self.failures = 0

    def owns(self, path) -> bool:
        try:
            return Path(os.path.realpath(path)).is_relative_to(self.root)
        except (TypeError, ValueError):
            return False


@pytest.fixture
def disk(tmp_path, monkeypatch):
    """A directory ``disk.root`` whose files share a byte budget ``disk.free`` (set it; None = unlimited)."""
    root = tmp_path / "disk"
    root.mkdir()
    d = Disk(root)
    real_open, real_fdopen = builtins.open, os.fdopen

    def wrap(f, mode, kwargs):
        if "b" in mode:
            return _Limited(f, d)
        return io.TextIOWrapper(_Limited(f, d), encoding=kwargs.get("encoding") or "utf-8",
                                errors=kwargs.get("errors"), newline=kwargs.get("newline"))

    def fake_open(file, mode="r", *args, **kwargs):
        if isinstance(file, int) or not any(c in mode for c in "wax+") or not d.owns(file):
            return real_open(file, mode, *args, **kwargs)
        names = ("buffering", "encoding", "errors", "newline")
        kwargs |= dict(zip(names, args, strict=False))
        return wrap(real_open(file, mode.replace("t", "") if "b" in mode else mode.replace("t", "") + "b"), mode,
                    kwargs)

    def fake_fdopen(fd, mode="r", *args, **kwargs):
        if not any(c in mode for c in "wax+") or not d.owns(f"/proc/self/fd/{fd}"):
            return real_fdopen(fd, mode, *args, **kwargs)
        return wrap(real_fdopen(fd, "wb"), mode, kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)
    monkeypatch.setattr(os, "fdopen", fake_fdopen)
    return d


def _leftovers(directory: Path) -> list[str]:
    """Temporary files or directories (ours start with a dot) anywhere under ``directory``."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob(".*"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, demo_tokens):
    """The first 60k demo tokens, 100 words a line (six 10k-word chunks an epoch)."""
    path = tmp_path_factory.mktemp("dfcorpus") / "corpus.txt"
    words = demo_tokens[:60_000]
    path.write_text("\n".join(" ".join(words[i : i + 100]) for i in range(0, len(words), 100)) + "\n")
    return path


@pytest.fixture(scope="module")
def uninterrupted(corpus):
    return Word2Vec(corpus_file=corpus, **KW)


def _checkpoint_bytes(corpus, tmp_path) -> int:
    model = Word2Vec(**KW)
    model.build_vocab(corpus_file=corpus)
    model.save(tmp_path / "size-probe")
    return sum(p.stat().st_size for p in (tmp_path / "size-probe").iterdir())


# ---------------------------------------------------------------------- saving a model
def test_save_names_the_path_and_the_cause_and_leaves_nothing(disk, uninterrupted):
    disk.free = 5000  # less than the vectors
    with pytest.raises(ParvecError, match=rf"disk/model: cannot write vectors\.npy: {NO_SPACE}$"):
        uninterrupted.save(disk.root / "model")
    assert disk.failures == 1 and list(disk.root.iterdir()) == []


def test_save_over_an_earlier_model_keeps_it_when_the_disk_is_full(disk, uninterrupted):
    uninterrupted.save(disk.root / "model")
    before = {p.name: p.read_bytes() for p in (disk.root / "model").iterdir()}
    disk.free = 100
    with pytest.raises(ParvecError, match=NO_SPACE):
        uninterrupted.save(disk.root / "model")
    assert {p.name: p.read_bytes() for p in (disk.root / "model").iterdir()} == before
    assert _leftovers(disk.root) == []


def test_work_files_of_the_corpus_name_the_cause(disk, corpus, monkeypatch):
    """The encoded corpus streamed to $TMPDIR, and a sharded run's encoded byte ranges, on a full disk."""
    import parvec.corpus.encode as encode_mod
    from parvec.corpus import EncodedCorpus, ReadOptions
    from parvec.distributed.sharded_source import encode_unit
    from parvec.wordhash import WordLookup

    monkeypatch.setattr(encode_mod, "_SPILL_TOKENS", 1000)
    monkeypatch.setattr("tempfile.tempdir", str(disk.root))
    disk.free = 100
    with pytest.raises(ParvecError, match=rf"cannot write the encoded corpus in {disk.root}/parvec-encoded-\S+: "
                                          f"{NO_SPACE}"):
        EncodedCorpus.from_file(corpus, ReadOptions())
    assert list(disk.root.iterdir()) == []
    monkeypatch.setattr(encode_mod, "_SPILL_TOKENS", 1 << 30)
    vocab = EncodedCorpus.from_file(corpus, ReadOptions(min_count=1)).vocab
    with pytest.raises(ParvecError, match=rf"{disk.root}/tokens_0\.npy: cannot write: {NO_SPACE}"):
        encode_unit(str(corpus), 0, 5000, ReadOptions(min_count=1), WordLookup.from_words(vocab.words), str(disk.root),
                    0, 100_000)


# ---------------------------------------------------------------------- checkpoints: stop (the default)
def test_mid_epoch_checkpoint_on_a_full_disk_stops_and_the_previous_one_resumes_bit_exactly(
        disk, corpus, uninterrupted, tmp_path):
    ck = disk.root / "ck"
    ck.mkdir()
    disk.free = int(2.5 * _checkpoint_bytes(corpus, tmp_path))  # two mid-epoch checkpoints fit, not three
    model = Word2Vec(checkpoint_dir=ck, checkpoint_every="10k", **KW)
    model.build_vocab(corpus_file=corpus)
    with pytest.raises(ParvecError) as err:
        model.train(corpus_file=corpus)
    message = str(err.value)
    assert f"checkpoint {ck}/mid-e0001-c000000003: cannot write" in message and NO_SPACE in message
    assert "training stopped (--on-checkpoint-error stop" in message
    assert f"the previous checkpoint {ck}/mid-e0001-c000000002 (epoch 1, 2 chunks in) is intact" in message
    assert f"--resume {ck}" in message
    assert _leftovers(ck) == []
    assert [f.path.name for f in list_checkpoints(ck)] == ["mid-e0001-c000000001", "mid-e0001-c000000002"]
    disk.free = None  # space freed
    resumed = Word2Vec.load(ck)
    assert resumed.position is not None and resumed.position.chunks_done == 2
    resumed.train(corpus_file=corpus, resume=True)
    assert np.array_equal(resumed.wv.vectors, uninterrupted.wv.vectors)
    assert np.array_equal(resumed.syn1neg, uninterrupted.syn1neg)


def test_epoch_end_checkpoint_on_a_full_disk_keeps_the_last_epochs_and_resumes_bit_exactly(
        disk, corpus, uninterrupted, tmp_path):
    ck = disk.root / "ck"
    ck.mkdir()
    disk.free = int(1.5 * _checkpoint_bytes(corpus, tmp_path))  # epoch 1's fits, epoch 2's does not
    model = Word2Vec(checkpoint_dir=ck, **KW)
    model.build_vocab(corpus_file=corpus)
    with pytest.raises(ParvecError, match=rf"checkpoint {ck}/checkpoint: cannot write \S+: {NO_SPACE}; training "
                                          rf"stopped .*the previous checkpoint {ck}/checkpoint \(after epoch 1\) is "
                                          "intact"):
        model.train(corpus_file=corpus)
    assert _leftovers(disk.root) == []
    disk.free = None
    resumed = Word2Vec.load(ck)
    assert resumed.epochs_trained == 1
    resumed.train(corpus_file=corpus, resume=True)
    assert np.array_equal(resumed.wv.vectors, uninterrupted.wv.vectors)


# ---------------------------------------------------------------------- checkpoints: continue
def test_continue_trains_on_and_checkpoints_again_once_there_is_space(disk, corpus, uninterrupted, tmp_path, caplog):
    ck = disk.root / "ck"
    ck.mkdir()
    disk.free = int(1.5 * _checkpoint_bytes(corpus, tmp_path))  # the first mid-epoch checkpoint fits

    def free_space_at_epoch_end(model, epoch, stats):
        disk.free = None

    model = Word2Vec(checkpoint_dir=ck, checkpoint_every="10k", on_checkpoint_error="continue", **KW)
    model.build_vocab(corpus_file=corpus)
    with caplog.at_level(logging.WARNING, logger="parvec"):
        model.train(corpus_file=corpus, callbacks=[free_space_at_epoch_end])
    assert np.array_equal(model.wv.vectors, uninterrupted.wv.vectors)  # a failed checkpoint changes nothing
    failed = model.checkpoint_report.failed_checkpoints
    assert failed >= 2  # the rest of epoch 1 (mid-epoch ones and its epoch-end one)
    warnings = [r.getMessage() for r in caplog.records if "training continues" in r.getMessage()]
    assert len(warnings) == failed and all(NO_SPACE in w for w in warnings)
    assert _leftovers(disk.root) == []
    last = Word2Vec.load(ck / EPOCH_END)  # epoch 2's checkpoints were written
    assert last.epochs_trained == 2 and np.array_equal(last.wv.vectors, uninterrupted.wv.vectors)


def test_on_checkpoint_error_is_validated():
    with pytest.raises(ParvecError, match="on_checkpoint_error must be 'stop' or 'continue'"):
        Word2Vec(on_checkpoint_error="ignore")


# ---------------------------------------------------------------------- the command line
@pytest.mark.parametrize("policy", ["stop", "continue"])
def test_cli_checkpoint_on_a_full_disk(disk, corpus, tmp_path, capsys, caplog, policy):
    out = tmp_path / "out"
    out.mkdir()
    ck = disk.root / "ck"
    disk.free = int(1.5 * _checkpoint_bytes(corpus, tmp_path))
    with caplog.at_level(logging.WARNING, logger="parvec"):  # the warnings (a process prints them on stderr)
        code, _, err = run(["train", corpus, "-o", out / "v.txt", "--checkpoint-dir", ck, "--checkpoint-every",
                            "10k", "--on-checkpoint-error", policy, *FLAGS], capsys)
    err += "".join(r.getMessage() + "\n" for r in caplog.records)
    assert _leftovers(disk.root) == [] and _leftovers(out) == []
    if policy == "stop":
        assert code == 2 and list(out.iterdir()) == []
        line = err.strip().splitlines()[-1]
        assert line.startswith(f"parvec: error: checkpoint {ck}/mid-e0001-c000000002: cannot write")
        assert NO_SPACE in line
        assert f"the previous checkpoint {ck}/mid-e0001-c000000001 (epoch 1, 1 chunks in) is intact" in line
    else:
        assert code == 0 and (out / "v.txt").is_file()
        assert err.count("training continues (--on-checkpoint-error continue)") >= 2 and NO_SPACE in err


def _output_args(kind: str, where: Path, elsewhere: Path) -> tuple[list, str, Path]:
    """(argv, the flag, the path) with output ``kind`` on the full disk and -o elsewhere if it is not -o."""
    paths = {"-o txt": ("-o", where / "v.txt"), "-o bin": ("-o", where / "v.bin"), "-o npy": ("-o", where / "v.npy"),
             "--save-model": ("--save-model", where / "model"), "--report": ("--report", where / "r.json"),
             "--save-vocab": ("--save-vocab", where / "vocab.txt")}
    flag, path = paths[kind]
    argv = [flag, path] if flag == "-o" else ["-o", elsewhere / "v.txt", flag, path]
    return argv, flag, path


@pytest.mark.parametrize("kind", ["-o txt", "-o bin", "-o npy", "--save-model", "--report", "--save-vocab"])
def test_cli_output_on_a_full_disk(disk, corpus, tmp_path, capsys, kind):
    """Each output kind: exit 2, the flag, path and cause named, no temporary left, nothing written elsewhere;
    written after training, the error says which checkpoint holds the trained model and that --resume writes
    the outputs from it (and it does)."""
    elsewhere, ck = tmp_path / "elsewhere", tmp_path / "ck"
    elsewhere.mkdir()
    argv, flag, path = _output_args(kind, disk.root, elsewhere)
    disk.free = 0
    code, _, err = run(["train", corpus, *argv, "--checkpoint-dir", ck, *FLAGS], capsys)
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"parvec: error: {flag} {path}: cannot write: {NO_SPACE}"), line
    assert "Traceback" not in err and "requested and" not in err
    assert list(disk.root.iterdir()) == [] and list(elsewhere.iterdir()) == []
    if kind == "--save-vocab":  # written before training: there is no trained model to point to
        assert "--resume" not in line
        return
    assert (f"; the checkpoint {ck}/checkpoint (after epoch 2 of 2) holds the trained model: free space, then run "
            f"the same command with --resume {ck}, which writes the outputs without training again") in line
    disk.free = None
    code, _, err = run(["train", corpus, *argv, "--resume", ck, "--no-cache", "--no-progress"], capsys)
    assert code == 0, err
    assert "nothing left to train" in err and "M words/s" not in err  # the outputs come from the checkpoint
    if kind.startswith("-o") and not kind.endswith("npy"):
        from parvec.keyedvectors import KeyedVectors

        kv = KeyedVectors.load_word2vec_format(path, binary=kind.endswith("bin"))
        assert np.allclose(kv.vectors, Word2Vec.load(ck).wv.vectors, atol=1e-6)


def test_graph_outputs_and_checkpoints_on_a_full_disk(disk, tmp_path, capsys):
    """node2vec/DeepWalk write through the same helpers and checkpoint through the same code."""
    rng = np.random.default_rng(0)
    graph = tmp_path / "g.txt"
    u, v = rng.integers(0, 300, 1500), rng.integers(0, 300, 1500)
    graph.write_text("".join(f"n{a} n{b}\n" for a, b in zip(u.tolist(), v.tolist(), strict=True)))
    flags = ["--dimensions", 8, "--walk-length", 10, "--num-walks", 4, "--workers", 1, "--epochs", 2, "--quiet"]
    disk.free = 0
    for out in ("e.txt", "e.npy"):
        code, _, err = run(["deepwalk", graph, "-o", disk.root / out, *flags], capsys)
        assert code == 2 and f"parvec: error: -o {disk.root / out}: cannot write: {NO_SPACE}" in err, err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, _, err = run(["deepwalk", graph, "-o", elsewhere / "e.txt", "--report", disk.root / "r.json", *flags],
                       capsys)
    assert code == 2 and f"parvec: error: --report {disk.root / 'r.json'}: cannot write: {NO_SPACE}" in err, err
    ck = disk.root / "ck"
    code, _, err = run(["deepwalk", graph, "-o", elsewhere / "e.txt", "--checkpoint-dir", ck, *flags], capsys)
    assert code == 2 and f"parvec: error: checkpoint {ck}/checkpoint: cannot write" in err and NO_SPACE in err
    assert "this run has no earlier checkpoint" in err
    code, _, err = run(["deepwalk", graph, "-o", elsewhere / "e.txt", "--checkpoint-dir", ck,
                        "--on-checkpoint-error", "continue", *flags], capsys)  # its warnings go to stderr
    assert code == 0 and (elsewhere / "e.txt").is_file() and err.count("training continues") == 2, err
    assert list(disk.root.rglob("*")) in ([], [ck])
    assert _leftovers(elsewhere) == []


# ---------------------------------------------------------------------- a real full file system
def _can_mount_tmpfs(tmp_path: Path) -> str | None:
    """None if a tmpfs can be mounted in a private user+mount namespace here, else why not."""
    if shutil.which("unshare") is None:
        return "unshare(1) is not installed"
    probe = tmp_path / "probe"
    probe.mkdir()
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                           f"mount -t tmpfs -o size=64k tmpfs {probe}"], capture_output=True, text=True)
    if proc.returncode != 0:
        return f"cannot mount a tmpfs in a user+mount namespace here: {proc.stderr.strip() or proc.returncode}"
    return None


def _in_full_tmpfs(tmp_path: Path, size: str, script: str) -> subprocess.CompletedProcess:
    """Run ``script`` (sh) with a tmpfs of ``size`` mounted on $MNT, in a private mount namespace."""
    why = _can_mount_tmpfs(tmp_path)
    if why is not None:
        pytest.skip(why)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    env = os.environ | {"MNT": str(mnt), "PY": sys.executable,
                        "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                           f'mount -t tmpfs -o size={size} tmpfs "$MNT" && {script}'],
                          capture_output=True, text=True, env=env, timeout=600)


def test_real_full_disk_during_a_checkpoint(corpus, tmp_path, uninterrupted):
    size = _checkpoint_bytes(corpus, tmp_path)
    kept = tmp_path / "kept"
    args = " ".join(map(str, ["train", corpus, "-o", tmp_path / "v.txt", "--checkpoint-dir", "$MNT/ck",
                              "--checkpoint-every", "10k", *FLAGS]))
    proc = _in_full_tmpfs(tmp_path, str(int(2.5 * size)),
                          f'"$PY" -m parvec {args}; echo "exit=$?"; ls -A "$MNT/ck"; cp -a "$MNT/ck" {kept}')
    err = proc.stderr
    assert "exit=2" in proc.stdout, proc.stdout + err
    line = [x for x in err.splitlines() if x.startswith("parvec: error:")][-1]
    assert line.startswith("parvec: error: checkpoint ") and f"{NO_SPACE}; training stopped" in line, err
    assert "requested and" not in err and "Traceback" not in err
    listed = proc.stdout.split()[1:]
    assert listed and all(n.startswith("mid-e0001-") for n in listed), proc.stdout  # no temporary left
    assert not (tmp_path / "v.txt").exists()
    resumed = Word2Vec.load(kept)
    resumed.train(corpus_file=corpus, resume=True)
    assert np.array_equal(resumed.wv.vectors, uninterrupted.wv.vectors)


def test_real_full_disk_for_the_output(corpus, tmp_path):
    ck = tmp_path / "ck"
    args = " ".join(map(str, ["train", corpus, "-o", "$MNT/v.txt", "--checkpoint-dir", ck, *FLAGS]))
    proc = _in_full_tmpfs(tmp_path, "16k", f'"$PY" -m parvec {args}; echo "exit=$?"; ls -A "$MNT"')
    err = proc.stderr
    assert "exit=2" in proc.stdout and proc.stdout.split()[1:] == [], proc.stdout + err  # no temporary left
    line = [x for x in err.splitlines() if x.startswith("parvec: error:")][-1]
    assert f": cannot write: {NO_SPACE}; the checkpoint {ck}/checkpoint (after epoch 2 of 2) holds the trained " \
           "model" in line and line.startswith("parvec: error: -o ") and "/v.txt" in line, err
    meta = json.loads((ck / EPOCH_END / "model.json").read_text())
    assert meta["epochs_trained"] == 2


def test_a_shard_snapshot_on_a_full_disk_names_the_shard_and_no_space_left(tmp_path, monkeypatch):
    # A sharded run's shard writes its columns through the same writer as every other file: a full disk is
    # named, not numpy's "N requested and M written" (the run then stops naming the shard, exit 2).
    pytest.importorskip("ray")
    from parvec.distributed import snapshot_files
    from parvec.distributed.shard_actor import ShardActor, ShardSpec
    from parvec.sampling import alias_table

    n, dim = 50, 8
    prob, alias = alias_table(np.full(n, 1.0 / n))
    spec = ShardSpec(index=1, shards=2, n_words=n, dim=dim, lo=4, hi=8, window=2, negative=2, seed=1,
                     checkpoint_dir=str(tmp_path / "ck"))
    shard = ShardActor(spec, [prob, alias, None, None])
    assert shard.error is None, shard.error
    real_open = snapshot_files.output_file

    def full(path):
        f = real_open(path)
        real_write = f.write

        def write(data):
            if f.tell() > 100:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(data)

        f.write = write
        return f

    monkeypatch.setattr(snapshot_files, "output_file", full)
    with pytest.raises(ParvecError, match=r"shard 1 of 2 could not write its snapshot to .*: no space left on device"):
        shard.snapshot(1, None)
