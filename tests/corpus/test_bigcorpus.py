"""Corpora bigger than memory: tokens streamed to disk and memory-mapped, the same encoding as in
memory, several files as one corpus, automatic vocabulary pruning with a note, and the encoder's peak memory
bounded well under the token array's size (measured in a subprocess from /proc/self/status VmHWM)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import parvec.corpus as corpus_mod
import parvec.corpus.encode as encode_mod
import parvec.corpus.readers as readers_mod
import parvec.vocab as vocab_mod
from parvec.corpus import EncodedCorpus, ReadOptions, release_pages
from parvec.errors import ParvecError
from parvec.vocab import Pruning, VocabCounter

REPO = Path(__file__).resolve().parents[2]


def same(a: EncodedCorpus, b: EncodedCorpus) -> None:
    assert a.vocab.words == b.vocab.words
    assert a.vocab.counts.tolist() == b.vocab.counts.tolist()
    np.testing.assert_array_equal(np.asarray(a.tokens), np.asarray(b.tokens))
    np.testing.assert_array_equal(np.asarray(a.offsets), np.asarray(b.offsets))
    assert a.raw_words == b.raw_words


def random_text(seed: int, lines: int, crlf: bool = False) -> str:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(40)] + ["é", "日本", "a\u00a0b"]
    out = []
    for i in range(lines):
        n = int(rng.integers(0, 30))
        line = " ".join(words[int(j)] for j in rng.zipf(1.5, size=n) % len(words))
        out.append(line + ("\r\n" if crlf and i % 2 else "\n"))
    return "".join(out)


@pytest.fixture
def streamed(monkeypatch):
    """Every corpus (however small) takes the streaming path: tokens written to disk block by block."""
    monkeypatch.setattr(encode_mod, "_SPILL_TOKENS", 1)
    monkeypatch.setattr(encode_mod, "_ENCODE_BLOCK", 7)  # many blocks, sentences cut across none
    monkeypatch.setattr(readers_mod, "_BLOCK_BYTES", 64)


def in_memory(path, options: ReadOptions) -> EncodedCorpus:
    saved = encode_mod._SPILL_TOKENS
    encode_mod._SPILL_TOKENS = 1 << 62
    try:
        return EncodedCorpus.from_file(path, options)
    finally:
        encode_mod._SPILL_TOKENS = saved


OPTIONS = {
    "min_count=1": ReadOptions(min_count=1),
    "min_count=3 (OOV dropped, empty sentences)": ReadOptions(min_count=3),
    "max_sentence_length=4": ReadOptions(min_count=2, max_sentence_length=4),
    "max_vocab_size=8": ReadOptions(min_count=1, max_vocab_size=8),
    "lowercase, max_final_vocab": ReadOptions(min_count=1, lowercase=True, max_final_vocab=10),
}


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
@pytest.mark.parametrize("opener", [open, gzip.open, bz2.open, lzma.open], ids=["plain", "gz", "bz2", "xz"])
def test_the_streaming_encoder_equals_the_in_memory_one(tmp_path, streamed, options, opener):
    suffix = {open: ".txt", gzip.open: ".txt.gz", bz2.open: ".txt.bz2", lzma.open: ".txt.xz"}[opener]
    p = tmp_path / f"c{suffix}"
    with opener(p, "wb") as f:
        f.write(random_text(1, 200, crlf=True).encode())
    reference = in_memory(p, options)
    assert not isinstance(reference.tokens, np.memmap)
    for cache in (None, tmp_path / "cache", tmp_path / "cache"):  # no cache, a new entry, the entry read back
        got = EncodedCorpus.from_file(p, options, cache_dir=cache)
        assert isinstance(got.tokens, np.memmap)  # read from disk, never held whole
        same(got, reference)
    assert got.cache_used is True


def test_the_streamed_cache_entry_is_a_valid_entry_and_its_header_says_so(tmp_path, streamed):
    p = tmp_path / "c.txt"
    p.write_text(random_text(2, 100))
    cache = tmp_path / "cache"
    first = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    (entry,) = [c for c in cache.iterdir() if not c.name.startswith(".")]
    loaded = corpus_mod.load_encoded(entry)  # checksums, shapes, id ranges all checked
    same(loaded, first)
    tokens = np.load(entry / "tokens.npy")  # an ordinary .npy file
    assert tokens.dtype == np.int32 and len(tokens) == first.n_tokens


def test_no_token_in_the_vocabulary_is_an_error_when_streamed(tmp_path, streamed):
    p = tmp_path / "c.txt"
    p.write_text("a b c\n")
    with pytest.raises(ParvecError, match="no word reaches min_count=2"):
        EncodedCorpus.from_file(p, ReadOptions(min_count=2))


# ---------------------------------------------------------------------- several files are one corpus
def shards(tmp_path: Path) -> tuple[list[Path], Path]:
    """Four shards (plain, gz, CR/LF, xz) and the concatenation of their texts."""
    d = tmp_path / "shards"
    d.mkdir()
    texts = [random_text(s, 40 + s, crlf=s == 2) for s in range(4)]
    paths = []
    for i, (text, opener, suffix) in enumerate(zip(texts, [open, gzip.open, open, lzma.open],
                                                    [".txt", ".txt.gz", ".txt", ".txt.xz"], strict=True)):
        path = d / f"part-{i:03d}{suffix}"
        with opener(path, "wb") as f:
            f.write(text.encode())
        paths.append(path)
    (d / ".hidden").write_text("never read\n")
    whole = tmp_path / "whole.txt"
    whole.write_text("".join(texts))
    return paths, whole


@pytest.mark.parametrize("mode", ["streamed", "in memory"])
def test_several_files_are_the_concatenation(tmp_path, mode, monkeypatch):
    if mode == "streamed":
        monkeypatch.setattr(encode_mod, "_SPILL_TOKENS", 1)
    paths, whole = shards(tmp_path)
    options = ReadOptions(min_count=2, max_sentence_length=7)
    reference = in_memory(whole, options)
    for given in (paths, [str(p) for p in paths], paths[0].parent, str(paths[0].parent / "part-*")):
        for cache in (None, tmp_path / "cache"):
            got = EncodedCorpus.from_file(given, options, cache_dir=cache)
            same(got, reference)
            assert got.source.split() == [str(p) for p in paths]


def test_a_file_without_a_final_newline_ends_its_last_sentence(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("x y\nz")
    b.write_text("w x\n")
    got = EncodedCorpus.from_file([a, b], ReadOptions(min_count=1))
    assert list(got.sentences()) == [["x", "y"], ["z"], ["w", "x"]]


def test_the_cache_key_covers_every_file(tmp_path):
    paths, _ = shards(tmp_path)
    cache = tmp_path / "cache"
    options = ReadOptions(min_count=1)
    assert EncodedCorpus.from_file(paths, options, cache_dir=cache).cache_used is False
    assert EncodedCorpus.from_file(paths, options, cache_dir=cache).cache_used is True
    assert EncodedCorpus.from_file(paths[:3], options, cache_dir=cache).cache_used is False  # other files
    os.utime(paths[2], ns=(1, 1))  # the last shard but one changes (its stat key does)
    again = EncodedCorpus.from_file(paths, options, cache_dir=cache)
    assert again.cache_used is False
    assert EncodedCorpus.from_file(paths, options, cache_dir=cache).cache_used is True


def test_several_inputs_errors_name_the_file(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("x y\n")
    bad = tmp_path / "b.txt"
    bad.write_bytes(b"ok\n\xff\xfe\n")
    with pytest.raises(ParvecError, match=r"b\.txt:2: invalid UTF-8"):
        EncodedCorpus.from_file([a, bad], ReadOptions(min_count=1))
    with pytest.raises(ParvecError, match="missing.txt: no such file"):
        EncodedCorpus.from_file([a, tmp_path / "missing.txt"], ReadOptions(min_count=1))
    with pytest.raises(ParvecError, match="standard input"):
        EncodedCorpus.from_file([a, "-"], ReadOptions(min_count=1))
    with pytest.raises(ParvecError, match="empty list"):
        EncodedCorpus.from_file([], ReadOptions(min_count=1))


def test_the_cli_trains_on_a_directory_of_shards_and_on_several_paths(tmp_path):
    paths, whole = shards(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    outs = []
    for i, given in enumerate(([str(whole)], [str(paths[0].parent)], [str(p) for p in paths])):
        out = tmp_path / f"v{i}.txt"
        proc = subprocess.run(
            [sys.executable, "-m", "parvec", "train", *given, "-o", str(out), "--min-count", "1", "--dim", "8",
             "--epochs", "1", "--threads", "1", "--seed", "3", "--cache-dir", str(tmp_path / "cache")],
            capture_output=True, text=True, env=env, timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == outs[2]  # the same corpus, the same vectors (1 thread, one seed)


# ---------------------------------------------------------------------- automatic pruning
def test_counting_prunes_by_default_past_the_automatic_cap_and_says_so(monkeypatch):
    monkeypatch.setattr(vocab_mod, "default_max_vocab_size", lambda: 5)
    monkeypatch.setattr(vocab_mod, "_COUNT_BLOCK", 4)
    counter = vocab_mod.count_words([["a", "a", "a", "b", "b"], ["c", "d", "e", "f", "g"], ["a", "b"]])
    assert len(counter.counts) <= 5
    assert counter.counts["a"] == 4 and counter.counts["b"] == 3
    assert counter.pruning == Pruning(words_dropped=5, max_count_cut=1, max_vocab_size=5, automatic=True)
    assert VocabCounter(max_vocab_size=100).pruning is None


def test_the_automatic_cap_follows_the_memory_limit(monkeypatch):
    monkeypatch.setattr(vocab_mod, "memory_budget", lambda: None)
    assert vocab_mod.default_max_vocab_size() == 21_000_000  # word2vec.c's rule
    monkeypatch.setattr(vocab_mod, "memory_budget", lambda: 4 * 200 * 3_000_000)
    assert vocab_mod.default_max_vocab_size() == 3_000_000
    monkeypatch.setattr(vocab_mod, "memory_budget", lambda: 0)
    assert vocab_mod.default_max_vocab_size() == 1_000_000


def test_the_cli_notes_pruning_and_the_report_records_it(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text(" ".join(f"u{i}" for i in range(3000)) + "\n" + "the cat sat\n" * 50)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    report = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "parvec", "train", str(p), "-o", str(tmp_path / "v.txt"), "--min-count", "1",
         "--max-vocab-size", "1000", "--dim", "4", "--epochs", "1", "--sample", "0", "--report", str(report),
         "--cache-dir", str(tmp_path / "k")],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "vocabulary counting pruned 3,000 rare words (counts up to 1 cut)" in proc.stderr
    assert json.loads(report.read_text())["vocab_pruning"]["words_dropped"] == 3000
    again = subprocess.run(proc.args, capture_output=True, text=True, env=env, timeout=300)  # from the cache
    assert again.returncode == 0 and "encoded-corpus cache: used" in again.stderr, again.stderr
    assert "note: vocabulary counting pruned 3,000 rare words" in again.stderr


# ---------------------------------------------------------------------- memory
def test_release_pages_drops_a_memory_maps_resident_pages(tmp_path):
    arr = np.arange(1 << 22, dtype=np.int32)  # 16 MiB
    np.save(tmp_path / "a.npy", arr)
    m = np.load(tmp_path / "a.npy", mmap_mode="r")

    def rss_file_kb() -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("RssFile:"))

    before = rss_file_kb()
    assert int(m.sum(dtype=np.int64)) == int(arr.sum(dtype=np.int64))
    touched = rss_file_kb()
    release_pages(m, 0, len(m))
    after = rss_file_kb()
    assert touched - before > 12_000 and touched - after > 12_000, (before, touched, after)
    np.testing.assert_array_equal(m[-5:], arr[-5:])  # still readable


def test_releasing_chunk_by_chunk_leaves_none_of_the_file_resident(tmp_path):
    # Training releases each chunk (10,000 words: 40,000 bytes, not a whole number of pages) after it, two
    # threads at a time.  A read fault maps a whole page-cache folio and its neighbourhood, so pages of chunks
    # already released come back: without release_pages' margin one page in ten stayed resident at 1B tokens.
    arr = np.arange(1 << 22, dtype=np.int32)  # 16 MiB
    path = tmp_path / "tokens.npy"
    np.save(path, arr)  # a 128-byte header: the data does not start on a page either
    m = np.load(path, mmap_mode="r")

    def resident_kib() -> int:  # this file's mapping only (smaps), not the libraries'
        total, current = 0, False
        with open("/proc/self/smaps") as f:
            for line in f:
                head = line.split()
                if head and "-" in head[0] and ":" not in head[0]:
                    current = line.rstrip().endswith(str(path))
                elif current and line.startswith("Rss:"):
                    total += int(head[1])
        return total

    total = 0
    starts = list(range(0, len(m), 10_000))
    for i in range(0, len(starts), 2):  # two "threads": both read their chunk, then both release
        pair = starts[i : i + 2]
        for lo in pair:
            total += int(m[lo : lo + 10_000].sum(dtype=np.int64))
        for lo in pair[::-1]:
            release_pages(m, lo, min(lo + 10_000, len(m)))
    assert total == int(arr.sum(dtype=np.int64))
    assert resident_kib() < 64, resident_kib()


PEAK_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import parvec.corpus as c

    def status(field):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field))

    path, n_tokens, cache, warm = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    # Load the byte tokeniser's compiled kernels (numba's runtime and LLVM: ~40 MB, once a process, whatever
    # the corpus) on a one-line file first: the bound below is on what encoding holds for the corpus.
    c.EncodedCorpus.from_file(warm, c.ReadOptions(min_count=1))
    base = status("VmRSS:")
    for cache_dir in (None, cache):  # a temporary file (no cache), then a new cache entry
        e = c.EncodedCorpus.from_file(path, c.ReadOptions(min_count=1), cache_dir=cache_dir)
        assert e.n_tokens == n_tokens, e.n_tokens
        assert int(e.tokens[-1]) >= 0 and isinstance(e.tokens, np.memmap)
        del e
    print(status("VmHWM:") - base)
""")

N_PEAK_TOKENS = 6_000_000  # a 24 MB int32 array; the in-memory encoder peaks at twice that plus its working set


@pytest.fixture(scope="module")
def big_text(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.txt"
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(2000)])
    with open(path, "w") as f:
        for _ in range(N_PEAK_TOKENS // 1_000_000):
            toks = words[rng.zipf(1.3, size=1_000_000) % len(words)]
            f.write("\n".join(" ".join(toks[i : i + 1000]) for i in range(0, len(toks), 1000)) + "\n")
    return path


def test_encoding_peak_memory_stays_well_under_the_token_array(tmp_path, big_text):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    warm = tmp_path / "warm.txt"
    warm.write_text("a b a\n")
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, str(big_text), str(N_PEAK_TOKENS), str(tmp_path / "cache"), str(warm)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    extra = int(proc.stdout.split()[-1])
    # The streamed encoder's working set (a block of text, its ids, the word table) measured 9 MiB; holding the
    # token array (24 MB) and joining its blocks (another 24 MB) does not fit (measured: the in-memory
    # encoder, _SPILL_TOKENS raised above the corpus, 57 MiB, fails this bound).
    assert extra < 36 * 2**20, f"encoding {N_PEAK_TOKENS:,} tokens raised the peak RSS by {extra / 2**20:.0f} MiB"
