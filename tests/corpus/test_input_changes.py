"""A corpus that changes while parvec reads it: every reader of input files reads it twice
(count, then encode) and must refuse, naming the file, an input that changed between or during the passes,
instead of training on tokens that disagree with the vocabulary's counts (words counted but never encoded kept
their random vectors, exit 0).  Each layer is tested on its own: the file's identity (size, mtime, ctime,
inode) before and after each pass, the content hash of a recently changed file, and the encoding pass's
per-word counts against the vocabulary's (the check that still holds when stat says nothing changed).  The
change is made deterministic by running it right after the counting pass returns (a wrapped counting
function), never by timing."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import parvec.corpus.encode as encode_mod
import parvec.corpus.readers as readers_mod
from parvec.corpus import EncodedCorpus, ReadOptions
from parvec.errors import ParvecError

OPTS = ReadOptions(min_count=1)
REPO = Path(__file__).resolve().parents[2]


def _text(n_lines: int = 400, seed: int = 0, words: int = 60) -> str:
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(300)]
    return "".join(" ".join(vocab[j] for j in rng.zipf(1.5, words) % 300) + "\n" for _ in range(n_lines))


@pytest.fixture
def after_counting(monkeypatch):
    """``after_counting(fn)``: call ``fn()`` once, right after the counting pass over a file returns (the byte
    counter, or word2vec.c's pruning counter in Python when it falls back to it)."""

    def install(fn):
        done = []
        original = encode_mod.count_vocabulary

        def counting_then_change(sentences, options):
            result = original(sentences, options)
            if not done:
                done.append(True)
                fn()
            return result

        monkeypatch.setattr(encode_mod, "count_vocabulary", counting_then_change)
        return done

    return install


def _truncate(path: Path, size: int):
    return lambda: os.truncate(path, size)


def _append(path: Path, text: str):
    def go():
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
    return go


def _rewrite_same_size(path: Path, keep_mtime: bool = True):
    """Replace the bytes in place, same size (two words swapped for two others of the same length), and put
    the modification time back as it was: only ctime (and the content) show the change."""

    def go():
        st = path.stat()
        data = path.read_bytes()
        new = data.replace(b"w1 ", b"w9 ").replace(b"w2 ", b"w8 ")
        assert len(new) == len(data) and new != data
        with open(path, "r+b") as f:
            f.write(new)
        if keep_mtime:
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    return go


def test_truncated_between_the_passes_is_refused(tmp_path, after_counting):
    """The issue's repro made deterministic: the file shrinks after its words were counted."""
    path = tmp_path / "c.txt"
    path.write_text(_text())
    after_counting(_truncate(path, 3000))
    with pytest.raises(ParvecError, match=r"c\.txt: the input changed .*size went from [\d,]+ to 3,000 bytes"):
        EncodedCorpus.from_file(path, OPTS)


def test_appended_between_the_passes_is_refused(tmp_path, after_counting):
    path = tmp_path / "c.txt"
    path.write_text(_text())
    after_counting(_append(path, _text(50, seed=1)))
    with pytest.raises(ParvecError, match=r"c\.txt: the input changed"):
        EncodedCorpus.from_file(path, OPTS)


def test_same_size_rewrite_with_mtime_restored_is_refused(tmp_path, after_counting):
    path = tmp_path / "c.txt"
    path.write_text(_text())
    after_counting(_rewrite_same_size(path))
    with pytest.raises(ParvecError, match=r"c\.txt: the input changed .*modified \(same size\)"):
        EncodedCorpus.from_file(path, OPTS)


def test_same_size_rewrite_in_one_clock_tick_is_caught_by_the_content_hash(tmp_path, after_counting, monkeypatch):
    """A change within one tick of a coarse file-system clock keeps size, mtime and ctime: a file changed that
    recently has its bytes hashed in both passes."""
    path = tmp_path / "c.txt"
    path.write_text(_text())
    frozen = readers_mod.file_state(path)
    monkeypatch.setattr(readers_mod, "file_state", lambda p: frozen)  # stat shows nothing
    after_counting(_rewrite_same_size(path))
    with pytest.raises(ParvecError, match=r"c\.txt: the input changed between two reads .*bytes differ"):
        EncodedCorpus.from_file(path, OPTS)


@pytest.mark.parametrize("change", ["truncate", "append"])
def test_the_token_counts_must_match_the_vocabulary_counts(tmp_path, after_counting, monkeypatch, change):
    """The last line of defence, when neither stat nor a hash sees the change (a file system whose clock or
    stat lies, a file older than the hashing window): the encoding pass counts each word's tokens, and they
    must be the vocabulary's counts."""
    path = tmp_path / "c.txt"
    path.write_text(_text())
    frozen = readers_mod.file_state(path)
    monkeypatch.setattr(readers_mod, "file_state", lambda p: frozen)
    monkeypatch.setattr(readers_mod, "_RACY_NS", 0)  # not hashed (the cache's window: unused without a cache)
    after_counting(_truncate(path, 5000) if change == "truncate" else _append(path, "w1 w1 w1\n"))
    with pytest.raises(ParvecError, match=r"c\.txt: the input changed while parvec read it \(the counting pass read "
                                          r"[\d,]+ words, the encoding pass [\d,]+"):
        EncodedCorpus.from_file(path, OPTS)


def test_counts_check_holds_with_word2vec_pruning(tmp_path, after_counting):
    """With max_vocab_size the counts are word2vec.c's approximate ones (pruned words restart from zero), so a
    word's count may be below its tokens, never above, and the number of words must match: an unchanged file
    passes, a truncated one is refused."""
    path = tmp_path / "c.txt"
    path.write_text(_text(800, words=80))
    opts = ReadOptions(min_count=1, max_vocab_size=60)
    ok = EncodedCorpus.from_file(path, opts)
    assert ok.pruning is not None and ok.n_tokens > 0
    after_counting(_truncate(path, 4000))
    with pytest.raises(ParvecError, match=r"c\.txt: the input changed"):
        EncodedCorpus.from_file(path, opts)


def test_an_iterable_that_changes_between_passes_is_refused():
    class Drifting:
        def __init__(self):
            self.passes = 0

        def __iter__(self):
            self.passes += 1  # a different number of sentences every time (e.g. sampled afresh)
            return iter([["a", "b", "c"]] * (10 * self.passes))

    with pytest.raises(ParvecError, match="the sentences changed between the two passes"):
        EncodedCorpus.from_sentences(Drifting(), min_count=1)


def test_one_of_several_files_changed_is_named(tmp_path, after_counting):
    files = []
    for i in range(3):
        p = tmp_path / f"part{i}.txt"
        p.write_text(_text(100, seed=i))
        files.append(p)
    after_counting(_truncate(files[1], 100))
    with pytest.raises(ParvecError, match=r"part1\.txt: the input changed") as err:
        EncodedCorpus.from_file(files, OPTS)
    assert "part0" not in str(err.value) and "part2" not in str(err.value)


def test_compressed_input_changed_is_refused(tmp_path, after_counting):
    path = tmp_path / "c.txt.gz"
    path.write_bytes(gzip.compress(_text().encode()))
    after_counting(lambda: path.write_bytes(gzip.compress(_text(100, seed=5).encode())))
    with pytest.raises(ParvecError, match=r"c\.txt\.gz: the input changed"):
        EncodedCorpus.from_file(path, OPTS)


def test_cached_read_that_changes_leaves_no_entry(tmp_path, after_counting):
    path = tmp_path / "c.txt"
    path.write_text(_text())
    cache = tmp_path / "cache"
    after_counting(_append(path, "w3 w4\n"))
    with pytest.raises(ParvecError, match=r"c\.txt: the input changed"):
        EncodedCorpus.from_file(path, OPTS, cache_dir=cache)
    assert list(cache.iterdir()) == []  # no entry, no temporary directory


def test_spilled_encoding_that_changes_leaves_no_temporary(tmp_path, after_counting, monkeypatch):
    """A corpus big enough to be streamed into a memory-mapped token file (here: the threshold lowered)."""
    path = tmp_path / "c.txt"
    path.write_text(_text())
    monkeypatch.setattr(encode_mod, "_SPILL_TOKENS", 1000)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    assert EncodedCorpus.from_file(path, OPTS).n_tokens > 1000  # the spilled path, unchanged: fine
    after_counting(_truncate(path, 2000))
    with pytest.raises(ParvecError, match=r"c\.txt: the input changed"):
        EncodedCorpus.from_file(path, OPTS)
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("how", ["same size, mtime restored", "appended"])
def test_cache_entry_of_a_file_changed_later_is_not_served(tmp_path, how):
    """A file changed after its encoding was cached is read again, never served from the stale entry."""
    path = tmp_path / "c.txt"
    path.write_text(_text())
    cache = tmp_path / "cache"
    first = EncodedCorpus.from_file(path, OPTS, cache_dir=cache)
    again = EncodedCorpus.from_file(path, OPTS, cache_dir=cache)
    assert again.cache_used is True
    if how == "appended":
        _append(path, "zz " * 50 + "\n")()
    else:
        _rewrite_same_size(path)()
    changed = EncodedCorpus.from_file(path, OPTS, cache_dir=cache)
    fresh = EncodedCorpus.from_file(path, OPTS)
    assert changed.cache_used is False
    assert changed.vocab.words == fresh.vocab.words and np.array_equal(changed.tokens, fresh.tokens)
    assert changed.vocab.words != first.vocab.words or not np.array_equal(changed.vocab.counts, first.vocab.counts)


def test_unchanged_files_read_as_before(tmp_path):
    """No false alarm: a file, several files, a compressed one and a cached one, each read twice."""
    a, b = tmp_path / "a.txt", tmp_path / "b.txt.gz"
    a.write_text(_text())
    b.write_bytes(gzip.compress(_text(seed=3).encode()))
    for src in (a, b, [a, b]):
        c1 = EncodedCorpus.from_file(src, OPTS)
        c2 = EncodedCorpus.from_file(src, OPTS, cache_dir=tmp_path / "cache")
        assert np.array_equal(c1.tokens, c2.tokens) and c1.vocab.words == c2.vocab.words


def test_growing_a_vocabulary_refuses_a_file_changed_between_its_reads(tmp_path, monkeypatch):
    """build_vocab(update=True) reads the new corpus twice (its words, then encoded against the grown
    vocabulary): the two reads must be of the same file."""
    from parvec.word2vec import Word2Vec

    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_text(_text())
    new.write_text(_text(seed=4) + "fresh fresh fresh\n")
    model = Word2Vec(corpus_file=old, vector_size=8, min_count=1, epochs=1, workers=1)
    original = Word2Vec.encode
    calls = []

    def encode_then_change(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            _append(new, "fresher words\n")()
        return result

    monkeypatch.setattr(Word2Vec, "encode", encode_then_change)
    with pytest.raises(ParvecError, match=r"new\.txt: the input changed between its two reads"):
        model.build_vocab(corpus_file=new, update=True)


def test_replica_reencoding_its_range_refuses_a_changed_file(tmp_path):
    """A replica whose node cannot read the encoded corpus re-reads its byte range of the input: that file must
    still be the one the vocabulary was counted from."""
    from parvec.config import TrainConfig
    from parvec.distributed.replica_actor import ReplicaData, encode_share

    path = tmp_path / "c.txt"
    path.write_text(_text())
    enc = EncodedCorpus.from_file(path, OPTS)
    read = {"min_count": 1, "max_vocab_size": None, "max_final_vocab": None, "max_sentence_length": 10000,
            "lowercase": False, "unicode_errors": "strict"}
    data = ReplicaData(shares=(), tokens=enc.n_tokens, words=tuple(enc.vocab.words), counts=enc.vocab.counts,
                       read_options=ReadOptions(**read), source=str(path), inputs=getattr(enc, "inputs", None))
    config = TrainConfig(threads=1)
    tokens, _ = encode_share(0, 2, config, data)  # unchanged: fine
    assert len(tokens) > 0
    _rewrite_same_size(path, keep_mtime=False)()
    with pytest.raises(ParvecError, match=r"c\.txt: not the file the corpus was read from"):
        encode_share(0, 2, config, data)


# ---------------------------------------------------------------------- the command line, end to end
_HOOKED_CLI = textwrap.dedent("""
    import os, sys
    import parvec.corpus.encode as c
    original = c.count_vocabulary
    def counting_then_truncate(sentences, options):
        result = original(sentences, options)
        os.truncate(sys.argv[1], int(sys.argv[2]))  # what `truncate -s` did in the issue, between the passes
        return result
    c.count_vocabulary = counting_then_truncate
    from parvec.cli import main
    sys.exit(main(sys.argv[3:]))
""")


@pytest.mark.parametrize("cache", [False, True])
def test_cli_exits_2_naming_the_file_and_writes_nothing(tmp_path, cache):
    """``parvec train c.txt -o v.txt`` in a fresh process, the corpus truncated between the two passes (right
    after counting returns, so no timing is involved): exit 2, one error line naming the file, no output, no
    temporary file, no cache entry."""
    corpus = tmp_path / "c.txt"
    corpus.write_text(_text(2000))
    out = tmp_path / "out"
    out.mkdir()
    flags = ["--cache-dir", str(tmp_path / "cache")] if cache else ["--no-cache"]
    argv = ["train", str(corpus), "-o", str(out / "v.txt"), "--epochs", "1", "--dim", "8", "--threads", "1",
            "--min-count", "1", "--no-progress", "--save-model", str(out / "model"), "--report",
            str(out / "r.json"), *flags]
    env = os.environ | {"PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", _HOOKED_CLI, str(corpus), "3000", *argv], capture_output=True,
                          text=True, timeout=600, env=env)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("parvec: error:")]
    assert len(errors) == 1 and f"{corpus}: the input changed" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(out.iterdir()) == []
    if cache:
        assert not any((tmp_path / "cache").rglob("header.json"))
