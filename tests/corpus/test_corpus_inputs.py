"""Inputs of the encoded corpus: the cache's key and integrity, streams (FIFO,
``<(...)``, standard input ``-``) read in one pass, NUL as whitespace, and tests kept off the real cache."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import parvec.corpus.cache as cache_mod
import parvec.corpus.encode as encode_mod
import parvec.corpus.readers as readers_mod
import parvec.vocab as vocab_mod
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.errors import ParvecError
from parvec.fileio import check_input, open_input

REPO = Path(__file__).resolve().parents[2]


def entries(cache: Path) -> list[Path]:
    """The cache entries (hidden names are temporaries, never entries)."""
    return sorted(p for p in cache.iterdir() if not p.name.startswith(".")) if cache.exists() else []


def same(a: EncodedCorpus, b: EncodedCorpus) -> None:
    assert a.vocab.words == b.vocab.words
    assert a.vocab.counts.tolist() == b.vocab.counts.tolist()
    np.testing.assert_array_equal(np.asarray(a.tokens), np.asarray(b.tokens))
    np.testing.assert_array_equal(np.asarray(a.offsets), np.asarray(b.offsets))
    assert a.raw_words == b.raw_words


# ---------------------------------------------------------------------- 4. the cache's key
def edit_in_place_keeping_size_and_mtime(path: Path, old: bytes, new: bytes) -> None:
    st = path.stat()
    data = path.read_bytes()
    assert len(old) == len(new) and old in data
    with open(path, "r+b") as f:  # same inode, same size
        f.seek(data.index(old))
        f.write(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)


def test_an_in_place_edit_with_the_mtime_restored_is_seen(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("cat dog cat\n" * 5)
    cache = tmp_path / "cache"
    first = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    second = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    # Right after the file was written: an edit within the same clock tick could keep even the ctime.
    edit_in_place_keeping_size_and_mtime(p, b"dog", b"emu")
    edited = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    assert edited.vocab.words == ["cat", "dog", "emu"] and edited.vocab.counts.tolist() == [10, 4, 1]
    assert edited.tokens.tolist() == [0, 2, 0] + [0, 1, 0] * 4
    assert first.vocab.words == ["cat", "dog"] and first.cache_used is False
    assert second.cache_used is True and edited.cache_used is False
    assert EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache).cache_used is True
    assert len(entries(cache)) == 1  # the stale entry of this file and options is gone


def test_an_old_file_is_told_apart_by_its_ctime_alone(tmp_path, monkeypatch):
    # A file last changed long before it was read: the stat key (inode, size, mtime, ctime) decides,
    # without reading the file again.
    monkeypatch.setattr(readers_mod, "_RACY_NS", 0)
    p = tmp_path / "c.txt"
    p.write_text("cat dog cat\n" * 5)
    time.sleep(0.05)
    cache = tmp_path / "cache"
    EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)

    def no_content_check(*args, **kwargs):
        raise AssertionError("a cache entry of an old file is checked by its stat key, not by reading it")

    monkeypatch.setattr(cache_mod, "input_digest", no_content_check)
    loaded = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    time.sleep(0.05)  # the next change is in a later clock tick
    edit_in_place_keeping_size_and_mtime(p, b"dog", b"emu")
    edited = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    assert edited.vocab.words == ["cat", "dog", "emu"]
    assert loaded.cache_used is True and edited.cache_used is False
    header = json.loads((entries(cache)[0] / "header.json").read_text())
    assert header["input"]["verify_content"] is False


def test_a_content_checked_entry_stops_being_checked_once_its_file_is_old(tmp_path, monkeypatch):
    p = tmp_path / "c.txt"
    p.write_text("cat dog cat\n" * 5)
    cache = tmp_path / "cache"
    EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)  # just written: content recorded
    header = entries(cache)[0] / "header.json"
    assert json.loads(header.read_text())["input"]["verify_content"] is True
    checked = []
    real = cache_mod.input_digest
    monkeypatch.setattr(cache_mod, "input_digest", lambda path: checked.append(path) or real(path))
    assert EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache).cache_used is True
    assert checked == [p] and json.loads(header.read_text())["input"]["verify_content"] is True  # still recent
    monkeypatch.setattr(readers_mod, "_RACY_NS", 0)  # now the file counts as old
    time.sleep(0.01)
    assert EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache).cache_used is True
    assert json.loads(header.read_text())["input"]["verify_content"] is False
    assert EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache).cache_used is True
    assert checked == [p, p]  # the last load trusted the stat key alone
    assert [c.name for c in entries(cache)[0].iterdir() if c.name.startswith(".")] == []


def test_a_file_replaced_by_rename_is_seen(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("cat dog cat\n" * 5)
    cache = tmp_path / "cache"
    EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    st = p.stat()
    new = tmp_path / ".c.txt.swp"  # as an editor saves: a new file renamed over the old one
    new.write_text("cat emu cat\n" * 5)
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, p)
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
    replaced = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    assert replaced.vocab.words == ["cat", "emu"]
    assert replaced.cache_used is False


def test_cache_used_says_whether_the_cache_was_involved(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("a b a\n")
    opts = ReadOptions(min_count=1)
    assert EncodedCorpus.from_file(p, opts).cache_used is None  # no cache directory
    cache = tmp_path / "cache"
    assert EncodedCorpus.from_file(p, opts, cache_dir=cache).cache_used is False
    assert EncodedCorpus.from_file(p, opts, cache_dir=cache).cache_used is True
    vocab = EncodedCorpus.from_file(p, opts).vocab
    assert EncodedCorpus.from_file(p, opts, cache_dir=cache, vocab=vocab).cache_used is None  # continued training
    assert EncodedCorpus.from_sentences([["a"]], min_count=1).cache_used is None


def _swap_two_token_ids(entry: Path) -> None:
    tokens = np.load(entry / "tokens.npy")
    i = int(np.flatnonzero(tokens != tokens[0])[0])
    tokens[[0, i]] = tokens[[i, 0]]  # every id still valid, every length still right
    np.save(entry / "tokens.npy", tokens)


def _truncate(name: str, keep: int | None = None):
    def damage(entry: Path) -> None:
        data = (entry / name).read_bytes()
        (entry / name).write_bytes(data[: len(data) // 2 if keep is None else keep])

    return damage


def _out_of_range_id(entry: Path) -> None:
    tokens = np.load(entry / "tokens.npy")
    tokens[-1] = 1000
    np.save(entry / "tokens.npy", tokens)


def _reordered_offsets(entry: Path) -> None:
    offsets = np.load(entry / "offsets.npy")
    offsets[1], offsets[2] = offsets[2], offsets[1]
    np.save(entry / "offsets.npy", offsets)


def _header_without(field: str):
    def damage(entry: Path) -> None:
        header = json.loads((entry / "header.json").read_text())
        del header[field]
        (entry / "header.json").write_text(json.dumps(header))

    return damage


DAMAGE = {
    "swapped token ids": _swap_two_token_ids,
    "truncated tokens.npy": _truncate("tokens.npy"),
    "tokens.npy cut in its header": _truncate("tokens.npy", keep=20),
    "truncated vocab.json": _truncate("vocab.json"),
    "truncated header.json": _truncate("header.json"),
    "empty offsets.npy": _truncate("offsets.npy", keep=0),
    "missing offsets.npy": lambda e: (e / "offsets.npy").unlink(),
    "token id out of range": _out_of_range_id,
    "offsets out of order": _reordered_offsets,
    "header without checksums": _header_without("files"),
    "vocab.json not JSON": lambda e: (e / "vocab.json").write_bytes(b"\xff\x00{"),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_cache_entry_is_rebuilt_not_trusted(tmp_path, damage):
    p = tmp_path / "c.txt"
    p.write_text("the cat sat on the mat\nthe dog sat\na b c d e f\n" * 3)
    cache = tmp_path / "cache"
    fresh = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    damage(entries(cache)[0])
    again = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    same(again, fresh)
    assert again.cache_used is False
    repaired = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    assert repaired.cache_used is True
    same(repaired, fresh)


def test_an_interrupted_cache_write_leaves_no_entry(tmp_path, monkeypatch):
    p = tmp_path / "c.txt"
    p.write_text("a b a c\n" * 4)
    cache = tmp_path / "cache"

    def interrupted(self):
        raise KeyboardInterrupt  # after tokens.npy and offsets.npy were written

    with monkeypatch.context() as m:
        m.setattr(encode_mod.Vocab, "to_json", interrupted)
        with pytest.raises(KeyboardInterrupt):
            EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    assert entries(cache) == [] and list(cache.iterdir()) == []
    assert EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache).cache_used is False


def test_a_run_killed_while_writing_the_cache_leaves_nothing_trusted(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("a b a c\n" * 4)
    cache = tmp_path / "cache"
    script = (
        "import os, signal, sys\n"
        "import numpy as np\n"
        "import parvec.corpus as c\n"
        "real = np.save\n"
        "def save(path, arr, *a, **k):\n"
        "    real(path, arr, *a, **k)\n"
        "    if str(path).endswith('offsets.npy'):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "np.save = save\n"
        "c.EncodedCorpus.from_file(sys.argv[1], c.ReadOptions(min_count=1), cache_dir=sys.argv[2])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(p), str(cache)], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert entries(cache) == [] and any(cache.iterdir())  # only the killed run's temporary is left
    fresh = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    assert fresh.cache_used is False and fresh.vocab.words == ["a", "b", "c"]


def test_leftover_temporaries_of_killed_runs_are_removed_once_old(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("a b a c\n")
    cache = tmp_path / "cache"
    old = cache / ".tmp-killed"
    old.mkdir(parents=True)
    (old / "tokens.npy").write_bytes(b"x" * 100)
    recent = cache / ".tmp-writing"
    recent.mkdir()
    week_ago = time.time() - 7 * 86400
    os.utime(old, (week_ago, week_ago))
    EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    assert not old.exists() and recent.exists()  # another run may still be writing a recent one


# ---------------------------------------------------------------------- 9. streams
TEXT = (
    "the cat sat on the mat\n"
    "b a c a\n"
    "\n"
    "   z y x w v u t s r q   \n"  # words seen once: ties, pruned by min_count 2
    + "the dog ate the cat and the bird\n" * 3
    + "a b c d e f g h i j k l m n o p\n"  # a line longer than max_sentence_length below
    + "Über über ÜBER café\t\tx\r\n"
    + "last line without newline y x"
)


@contextlib.contextmanager
def fifo_with(tmp_path: Path, data: bytes, name: str = "fifo"):
    path = tmp_path / name
    os.mkfifo(path)

    def write() -> None:
        with open(path, "wb") as f:  # blocks until the reader opens it
            for i in range(0, len(data), 7):  # small writes: the reader sees many partial reads
                f.write(data[i : i + 7])

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield path
    finally:
        if writer.is_alive():  # the reader failed before opening: unblock the writer
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(5)


@contextlib.contextmanager
def pipe_path(data: bytes):
    """What bash's ``<(...)`` gives: ``/dev/fd/N``, the read end of a pipe."""
    r, w = os.pipe()

    def write() -> None:
        with open(w, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield f"/dev/fd/{r}"
    finally:
        os.close(r)
        writer.join(5)


@contextlib.contextmanager
def stdin_with(data: bytes):
    r, w = os.pipe()
    saved = os.dup(0)
    os.dup2(r, 0)
    os.close(r)

    def write() -> None:
        with open(w, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield "-"
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        writer.join(5)


@pytest.fixture()
def small_blocks(monkeypatch):
    # Many read blocks, encoding blocks and counting blocks on a tiny text, so block edges are crossed.
    monkeypatch.setattr(readers_mod, "_BLOCK_BYTES", 16)
    monkeypatch.setattr(encode_mod, "_ENCODE_BLOCK", 5)
    monkeypatch.setattr(vocab_mod, "_COUNT_BLOCK", 5, raising=False)


OPTIONS = {
    "min_count=1": ReadOptions(min_count=1),
    "min_count=2": ReadOptions(min_count=2),
    "max_final_vocab=4": ReadOptions(min_count=1, max_final_vocab=4),
    "short sentences, lowercase": ReadOptions(min_count=1, max_sentence_length=3, lowercase=True),
    "max_vocab_size=6": ReadOptions(min_count=1, max_vocab_size=6),
    "max_vocab_size=10, min_count=2": ReadOptions(min_count=2, max_vocab_size=10),
}


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_a_fifo_is_read_once_as_a_stream_and_equals_the_file(tmp_path, small_blocks, options):
    p = tmp_path / "c.txt"
    p.write_bytes(TEXT.encode())
    from_file = EncodedCorpus.from_file(p, options)
    cache = tmp_path / "cache"
    with fifo_with(tmp_path, TEXT.encode()) as fifo:
        streamed = EncodedCorpus.from_file(fifo, options, cache_dir=cache)
    same(streamed, from_file)
    assert streamed.cache_used is None
    assert not cache.exists() or list(cache.iterdir()) == []  # a stream is never cached, no spool left


def test_one_pass_equals_two_passes_on_a_larger_text_with_ties(tmp_path, monkeypatch):
    monkeypatch.setattr(encode_mod, "_ENCODE_BLOCK", 1000)
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(300)]
    zipf = 1.0 / np.arange(1, 301)
    lines = [" ".join(rng.choice(vocab, size=rng.integers(0, 40), p=zipf / zipf.sum())) for i in range(800)]
    data = ("\n".join(lines) + "\n").encode()
    p = tmp_path / "c.txt"
    p.write_bytes(data)
    for options in (ReadOptions(min_count=3), ReadOptions(min_count=1, max_final_vocab=50, max_sentence_length=7)):
        from_file = EncodedCorpus.from_file(p, options)
        assert len(set(from_file.vocab.counts.tolist())) < len(from_file.vocab)  # ties are there
        with pipe_path(data) as path:
            same(EncodedCorpus.from_file(path, options), from_file)


def test_process_substitution_is_read_as_a_stream(tmp_path):
    p = tmp_path / "c.txt"
    p.write_bytes(TEXT.encode())
    with pipe_path(TEXT.encode()) as path:
        assert check_input(path, allow_stream=True) == Path(path)
        streamed = EncodedCorpus.from_file(path, ReadOptions(min_count=1), cache_dir=tmp_path / "cache")
    same(streamed, EncodedCorpus.from_file(p, ReadOptions(min_count=1)))
    assert not (tmp_path / "cache").exists()


def test_dash_is_standard_input(tmp_path):
    p = tmp_path / "c.txt"
    p.write_bytes(TEXT.encode())
    with stdin_with(TEXT.encode()) as dash:
        streamed = EncodedCorpus.from_file(dash, ReadOptions(min_count=1), cache_dir=tmp_path / "cache")
    same(streamed, EncodedCorpus.from_file(p, ReadOptions(min_count=1)))
    assert streamed.cache_used is None and streamed.source == "<stdin>"
    assert not (tmp_path / "cache").exists()
    with stdin_with(b"hello\n") as dash, open_input(dash, allow_stream=True) as f:
        assert f.read() == b"hello\n"
    assert os.fstat(0)  # standard input is still open


def test_compressed_streams_are_decompressed(tmp_path):
    p = tmp_path / "c.txt"
    p.write_bytes(TEXT.encode())
    expected = EncodedCorpus.from_file(p, ReadOptions(min_count=1))
    packed = gzip.compress(TEXT.encode())
    with stdin_with(packed) as dash:  # by its magic bytes
        same(EncodedCorpus.from_file(dash, ReadOptions(min_count=1)), expected)
    with fifo_with(tmp_path, packed, name="fifo.gz") as fifo:  # by its name
        same(EncodedCorpus.from_file(fifo, ReadOptions(min_count=1)), expected)


def test_continued_training_on_a_stream_encodes_against_the_vocab(tmp_path):
    vocab = EncodedCorpus.from_sentences([["the", "cat", "the"]], min_count=1).vocab
    with stdin_with(b"the dog the cat\nbird\n") as dash:
        c = EncodedCorpus.from_file(dash, ReadOptions(min_count=1), vocab=vocab)
    assert c.tokens.tolist() == [0, 0, 1] and c.offsets.tolist() == [0, 3] and c.raw_words == 5


def test_stream_errors(tmp_path, monkeypatch):
    with stdin_with(b"") as dash, pytest.raises(ParvecError, match="<stdin>: the corpus has no words"):
        EncodedCorpus.from_file(dash, ReadOptions(min_count=1))
    with stdin_with(b"good\nline\nbad \xff\n") as dash, pytest.raises(ParvecError, match="<stdin>:3: invalid UTF-8"):
        EncodedCorpus.from_file(dash, ReadOptions(min_count=1))
    with fifo_with(tmp_path, b"a b\n") as fifo:
        # A reader that needs a file it can read twice (vectors) says so instead of calling it empty.
        with pytest.raises(ParvecError, match=r"fifo: is a pipe.*not a regular file"):
            check_input(fifo)
        EncodedCorpus.from_file(fifo, ReadOptions(min_count=1))
    with pytest.raises(ParvecError, match="standard input"):
        check_input("-")
    monkeypatch.setattr(os, "isatty", lambda fd: True)
    with pytest.raises(ParvecError, match="standard input is a terminal"):
        EncodedCorpus.from_file("-", ReadOptions(min_count=1))


def test_a_stream_is_spooled_only_with_max_vocab_size_and_the_spool_is_removed(tmp_path, small_blocks, monkeypatch):
    seen = []
    real = readers_mod.TextSentences.blocks  # every pass over a text reads its blocks

    def record(self):
        seen.append(str(self.path))
        return real(self)

    monkeypatch.setattr(readers_mod.TextSentences, "blocks", record)
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    monkeypatch.setattr(encode_mod.tempfile, "tempdir", str(spool_dir))
    with stdin_with(TEXT.encode()) as dash:
        EncodedCorpus.from_file(dash, ReadOptions(min_count=1))
    assert seen == ["-"]  # one pass over standard input itself
    seen.clear()
    with stdin_with(TEXT.encode()) as dash:
        EncodedCorpus.from_file(dash, ReadOptions(min_count=1, max_vocab_size=6))
    # Passes over the spool: the byte counter (it stops when the words pass max_vocab_size, so pruning is
    # needed and word2vec.c's pruning in Python counts instead), that count, and the encoding.
    assert len(seen) == 3 and all(Path(s).parent == spool_dir for s in seen)
    assert list(spool_dir.iterdir()) == []


# ---------------------------------------------------------------------- 9. NUL bytes
def test_nul_is_whitespace(tmp_path, monkeypatch):
    p = tmp_path / "nul.txt"
    p.write_bytes(b"a\x00b c\x00\x00d\x00\nb\x00\n\x00")
    c = EncodedCorpus.from_file(p, ReadOptions(min_count=1))
    assert sorted(c.vocab.words) == ["a", "b", "c", "d"]
    assert list(c.sentences()) == [["a", "b", "c", "d"], ["b"]]
    assert not any("\x00" in w for w in c.vocab.words)
    monkeypatch.setattr(readers_mod, "_BLOCK_BYTES", 3)  # NUL at read-block edges
    again = EncodedCorpus.from_file(p, ReadOptions(min_count=1))
    assert list(again.sentences()) == [["a", "b", "c", "d"], ["b"]]
    with stdin_with(b"x\x00y\n") as dash:
        assert EncodedCorpus.from_file(dash, ReadOptions(min_count=1)).vocab.words == ["x", "y"]


def test_nul_never_reaches_the_vectors_file(tmp_path):
    from parvec.cli import main

    p = tmp_path / "nul.txt"
    p.write_bytes(b"a\x00b a b\n" * 20)
    out = tmp_path / "v.txt"
    code = main(["train", str(p), "-o", str(out), "--dim", "4", "--epochs", "1", "--threads", "1",
                 "--min-count", "1", "--algo", "classic", "--no-cache"])
    assert code == 0
    data = out.read_bytes()
    assert b"\x00" not in data and data.startswith(b"2 4\n")


# ---------------------------------------------------------------------- 9. tests never touch the real cache
def test_the_test_session_uses_a_temporary_cache(tmp_path, monkeypatch):
    from parvec.cli.train import default_cache_dir

    real_cache = Path(os.path.expanduser("~")) / ".cache"
    for var in ("PARVEC_CACHE_DIR", "XDG_CACHE_HOME"):
        value = Path(os.environ[var])
        assert value.is_absolute() and real_cache not in value.parents and value != real_cache / "parvec"
    assert default_cache_dir() == Path(os.environ["PARVEC_CACHE_DIR"])
    # default_cache_dir honours each variable, in order, and falls back to ~/.cache/parvec.
    monkeypatch.delenv("PARVEC_CACHE_DIR")
    assert default_cache_dir() == Path(os.environ["XDG_CACHE_HOME"]) / "parvec"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / ".cache" / "parvec"


def test_a_cli_train_writes_its_cache_only_into_the_temporary_cache(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c a b a\n" * 30)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}  # PARVEC_CACHE_DIR and XDG_CACHE_HOME from the session fixture
    cache = Path(env["PARVEC_CACHE_DIR"])
    before = set(entries(cache))
    proc = subprocess.run(
        [sys.executable, "-m", "parvec", "train", str(corpus), "-o", str(tmp_path / "v.txt"), "--dim", "4",
         "--epochs", "1", "--threads", "1", "--min-count", "1", "--algo", "classic"],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert list(home.iterdir()) == []  # nothing under HOME (~/.cache/parvec)
    new = set(entries(cache)) - before
    assert [p.name.split(".")[0] for p in new] == ["c"]  # the entry went into the temporary cache
