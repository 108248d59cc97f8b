"""Counting and encoding one plain file in parts, one thread each (parvec.corpus.encode._count_in_parts,
_encode_in_parts): for any number of threads, the vocabulary (words, counts, order), tokens, offsets and raw word
count are exactly the one-thread result and the Python reader's, on awkward inputs, in memory and streamed to
disk, through the cache and the CLI; the errors are the one-thread path's."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parvec.corpus.encode as encode_mod
from parvec.corpus import EncodedCorpus, ReadOptions, TextSentences, encode_sentences
from parvec.corpus.readers import input_digest, line_cuts
from parvec.corpus.textscan import WordTable
from parvec.errors import ParvecError
from tests.cli_run import run

THREADS = [1, 2, 3, 7]


@pytest.fixture(autouse=True)
def parallel_from_the_first_byte(monkeypatch):
    """Every file of these tests is counted in parts (the threshold is 64 MiB outside them)."""
    monkeypatch.setattr(encode_mod, "PARALLEL_MIN_BYTES", 0)


@pytest.fixture
def parts_used(monkeypatch):
    """How many parts each counting pass in parts used (a list, one entry per call)."""
    used: list[int] = []
    original = encode_mod._count_in_parts

    def spy(reader, ranges, options):
        used.append(len(ranges))
        return original(reader, ranges, options)

    monkeypatch.setattr(encode_mod, "_count_in_parts", spy)
    return used


def _mixed_text(seed: int, lines: int = 1500) -> bytes:
    """Lines of Zipf-drawn words (ASCII, accented, Greek, CJK) joined by every kind of whitespace str.split()
    knows (ASCII, NUL, U+00A0, U+2028, U+3000), with CR/LF line ends, empty and blank lines and lines far
    longer than the others."""
    rng = np.random.default_rng(seed)
    pool = ["the", "The", "cat", "É", "été", "ΣΑΣ", "ßtraße", "İstanbul", "日本", "x1", "y", "q" * 30, "naïve", "Ωmega"]
    pool += [f"w{i}" for i in range(400)]
    seps = [" ", " ", " ", "\t", "\x0b", "\x0c", "\x1c", "\x00", "\u00a0", "\u2028", "\u3000", "  "]
    out = []
    for _ in range(lines):
        kind = rng.random()
        if kind < 0.08:
            out.append("")
        elif kind < 0.12:
            out.append(" \t ")
        else:
            n = int(rng.integers(1, 120 if kind > 0.97 else 25))
            words = [pool[min(int(z) - 1, len(pool) - 1)] for z in rng.zipf(1.4, n)]
            line = ""
            for w in words:
                line += w + seps[int(rng.integers(len(seps)))]
            out.append(line)
    text = "".join(line + ("\r\n" if rng.random() < 0.3 else "\n") for line in out)
    return text.encode("utf-8")


INPUTS = {
    "mixed": _mixed_text(1),
    "mixed_no_final_newline": _mixed_text(2).rstrip(b"\n") + b" tail words",
    "crlf": b"".join(b"a b c\r\n" if i % 3 else b"b d\r\n\r\n" for i in range(400)),
    "empty_lines": b"\n\n\n" + b"\n".join(b"x y" if i % 7 == 0 else b"" for i in range(600)) + b"\n\n",
    "long_line": b"p q\n" + b" ".join(b"t%d" % (i % 9) for i in range(997)) + b"\nr s\n" * 30 + b"u " * 300,
    "tiny": b"b a\na b\nc\n",  # fewer lines than parts
    # ties: every word occurs twice; 'k' first appears last, 'z' first: the order among ties is first-seen order
    "ties": b"z y\n" + b"x w v\n" * 2 + b"y z\n" + b"u t s r\n" * 2 + b"q\nq\nk\nk\n" + b"\n" * 50,
}


def _vocab_tokens(enc) -> tuple[list[str], list[int], list[int], list[int], int]:
    return (enc.vocab.words, np.asarray(enc.vocab.counts).tolist(), np.asarray(enc.tokens).tolist(),
            np.asarray(enc.offsets).tolist(), enc.raw_words)


def _python_reference(path, options):
    """The reader in Python (str.split, a dict of the vocabulary): the rules the byte counter follows."""
    sentences = list(TextSentences(path, options))
    return encode_sentences(sentences, options, None, source="ref")


@pytest.mark.parametrize("name", sorted(INPUTS))
@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("threads", THREADS)
def test_parts_give_the_one_thread_result(tmp_path, parts_used, name, lowercase, threads):
    path = tmp_path / f"{name}.txt"
    path.write_bytes(INPUTS[name])
    options = ReadOptions(min_count=2, max_sentence_length=7, lowercase=lowercase)
    one = encode_sentences(TextSentences(path, options), options, None, source=str(path), threads=1)
    assert parts_used == []  # one thread: today's path
    got = encode_sentences(TextSentences(path, options), options, None, source=str(path), threads=threads)
    assert _vocab_tokens(got) == _vocab_tokens(one)
    assert _vocab_tokens(got) == _vocab_tokens(_python_reference(path, options))
    if threads > 1:
        assert parts_used and 1 < parts_used[-1] <= threads  # it did run in parts


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from([b"a", b"B", "\u00e9".encode(), b"\xc3", b"\xff", "x\u00a0y".encode(), b"z\x00",
                                 b"\t", b" ", b"\r", b"\n", b"\n", b"\r\n", "\u3000".encode(), b"q q q"]),
                max_size=80),
       st.integers(2, 7), st.integers(1, 4), st.booleans())
def test_any_bytes_in_any_parts_give_the_one_thread_result(pieces, threads, max_len, lowercase):
    """Arbitrary bytes (invalid UTF-8 replaced), cut into any number of parts."""
    options = ReadOptions(min_count=1, max_sentence_length=max_len, lowercase=lowercase, unicode_errors="replace")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.txt"
        path.write_bytes(b"".join(pieces) or b"\n")
        results = []
        for n in (1, threads):
            try:
                results.append(_vocab_tokens(encode_sentences(TextSentences(path, options), options, None,
                                                              source="c", threads=n)))
            except ParvecError as exc:
                results.append(str(exc))
    assert results[0] == results[1]


@pytest.mark.parametrize("threads", [2, 3, 7])
@pytest.mark.parametrize("spill", [False, True])
def test_parts_streamed_to_disk_and_into_a_cache_entry_equal_one_thread(tmp_path, monkeypatch, parts_used, threads,
                                                                         spill):
    if spill:
        monkeypatch.setattr(encode_mod, "_SPILL_TOKENS", 10)  # tokens.npy written by each part at its place
    path = tmp_path / "c.txt"
    path.write_bytes(_mixed_text(3, lines=4000))
    options = ReadOptions(min_count=3, max_sentence_length=11, max_final_vocab=150)
    one = EncodedCorpus.from_file(path, options, cache_dir=tmp_path / "cache1", threads=1)
    assert parts_used == []
    got = EncodedCorpus.from_file(path, options, cache_dir=tmp_path / "cache_n", threads=threads)
    assert parts_used == [threads if threads < 7 else parts_used[0]]
    assert got.cache_used is False and isinstance(got.tokens, np.memmap) == spill
    assert _vocab_tokens(got) == _vocab_tokens(one)
    assert got.inputs == one.inputs
    # no cache: streamed into a temporary directory (spill) or in memory
    plain = EncodedCorpus.from_file(path, options, threads=threads)
    assert _vocab_tokens(plain) == _vocab_tokens(one)
    # the entries are the same files: either is used by a run with any number of threads
    (entry1,) = (tmp_path / "cache1").iterdir()
    (entry_n,) = (tmp_path / "cache_n").iterdir()
    assert entry1.name == entry_n.name
    for f in ("tokens.npy", "offsets.npy", "vocab.json"):
        assert (entry1 / f).read_bytes() == (entry_n / f).read_bytes()
    again = EncodedCorpus.from_file(path, options, cache_dir=tmp_path / "cache_n", threads=1)
    assert again.cache_used is True and _vocab_tokens(again) == _vocab_tokens(one)


def test_a_just_written_file_is_hashed_in_each_pass_read_in_parts(tmp_path):
    """A file changed within the clock tick is hashed in every pass; the cache entry records its SHA-256."""
    path = tmp_path / "c.txt"
    path.write_bytes(_mixed_text(4))
    options = ReadOptions(min_count=1)
    reader = TextSentences(path, options, digest=True)
    encode_sentences(reader, options, None, source=str(path), threads=3)
    assert reader.digests == [input_digest(path)] * 2
    EncodedCorpus.from_file(path, options, cache_dir=tmp_path / "cache", threads=3)
    (entry,) = (tmp_path / "cache").iterdir()
    info = json.loads((entry / "header.json").read_text())["input"]
    assert info["verify_content"] is True and info["sha256"] == input_digest(path)


@pytest.mark.parametrize("threads", [2, 3])
def test_pruning_falls_back_to_the_one_thread_count_and_its_result(tmp_path, parts_used, threads):
    path = tmp_path / "c.txt"
    path.write_bytes(_mixed_text(5))
    options = ReadOptions(min_count=1, max_vocab_size=60)
    one = encode_sentences(TextSentences(path, options), options, None, source="c", threads=1)
    got = encode_sentences(TextSentences(path, options), options, None, source="c", threads=threads)
    assert parts_used == [threads]
    assert got.pruning == one.pruning is not None
    assert _vocab_tokens(got) == _vocab_tokens(one)


def test_invalid_utf8_names_the_same_line_as_one_thread(tmp_path):
    path = tmp_path / "c.txt"
    data = bytearray(_mixed_text(6))
    at = len(data) * 4 // 5
    at = data.index(b"\n", at) + 1
    data[at:at] = b"ok \xff bad\n"  # in the last part of three
    path.write_bytes(bytes(data))
    errors = []
    for threads in (1, 3):
        with pytest.raises(ParvecError) as info:
            encode_sentences(TextSentences(path, ReadOptions()), ReadOptions(), None, source=str(path),
                             threads=threads)
        errors.append(str(info.value))
    line = data[:at].count(b"\n") + 1
    assert errors[0] == errors[1] and errors[0].startswith(f"{path}:{line}: invalid UTF-8")
    # --unicode-errors replace reads it, the same in parts
    options = ReadOptions(min_count=1, unicode_errors="replace")
    results = [encode_sentences(TextSentences(path, options), options, None, source="c", threads=t) for t in (1, 3)]
    assert _vocab_tokens(results[0]) == _vocab_tokens(results[1]) and "\ufffd" in results[1].vocab.words


def test_a_file_changed_between_the_passes_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "c.txt"
    path.write_bytes(_mixed_text(7))
    original = encode_mod._encode_in_parts

    def append_then_encode(reader, *args, **kwargs):
        with open(path, "ab") as f:
            f.write(b"the cat\n")
        return original(reader, *args, **kwargs)

    monkeypatch.setattr(encode_mod, "_encode_in_parts", append_then_encode)
    with pytest.raises(ParvecError, match="the input changed"):
        encode_sentences(TextSentences(path, ReadOptions()), ReadOptions(), None, source=str(path), threads=3)


def test_errors_of_the_vocabulary_are_the_one_thread_ones(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"a b c\n" * 40 + b"\n" * 40)
    for threads in (1, 3):
        with pytest.raises(ParvecError, match="no word reaches min_count=100"):
            encode_sentences(TextSentences(path, ReadOptions(min_count=100)), ReadOptions(min_count=100), None,
                             source="c", threads=threads)


def test_default_threads_and_the_threshold_choose_the_parts(tmp_path, monkeypatch):
    path = tmp_path / "c.txt"
    path.write_bytes(_mixed_text(8))
    reader = TextSentences(path, ReadOptions())
    monkeypatch.setattr(encode_mod, "default_threads", lambda: 4)
    assert len(encode_mod._parallel_ranges(reader, None)) == 4
    assert encode_mod._parallel_ranges(reader, 1) is None
    monkeypatch.setattr(encode_mod, "PARALLEL_MIN_BYTES", path.stat().st_size + 1)
    assert encode_mod._parallel_ranges(reader, 4) is None  # below the threshold: one thread
    monkeypatch.setattr(encode_mod, "PARALLEL_MIN_BYTES", 0)
    gz = tmp_path / "c.txt.gz"
    gz.write_bytes(b"")
    assert encode_mod._parallel_ranges(TextSentences(gz, ReadOptions()), 4) is None  # compressed: one range
    assert encode_mod._parallel_ranges(TextSentences([path, path], ReadOptions()), 4) is None  # several files
    assert encode_mod._parallel_ranges(reader.__class__(path, ReadOptions(), once=True), 4) is None  # a stream


@pytest.mark.parametrize("n", [1, 2, 3, 7, 50])
def test_line_cuts_cut_only_after_line_breaks_and_keep_every_sentence(tmp_path, n):
    data = _mixed_text(9, lines=300)
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    cuts = line_cuts(path, n)
    assert cuts[0] == 0 and cuts[-1] == len(data) and cuts == sorted(cuts) and len(cuts) == n + 1
    assert all(c in (0, len(data)) or data[c - 1 : c] == b"\n" for c in cuts)
    options = ReadOptions(max_sentence_length=7)
    reader = TextSentences(path, options)
    parts = [s for a, b in zip(cuts, cuts[1:], strict=False) if b > a for s in reader.part(a, b)]
    assert parts == list(reader)


def test_absorbing_tables_of_consecutive_parts_gives_the_whole_table():
    rng = np.random.default_rng(0)
    words = [f"w{i}".encode() * int(rng.integers(1, 4)) for i in range(3000)]
    stream = [words[i] for i in rng.zipf(1.2, 30_000) % len(words)]
    whole = WordTable()
    whole.scan(b" ".join(stream), insert=True)
    merged = WordTable(capacity=1)
    for a in range(0, len(stream), 7000):
        part = WordTable(capacity=1)
        local, _ = part.scan(b" ".join(stream[a : a + 7000]), insert=True)
        local = local.copy()
        to_merged = merged.absorb(part)
        assert [merged.words()[i] for i in to_merged[local]] == [w.decode() for w in stream[a : a + 7000]]
    assert merged.words() == whole.words() and merged.counts().tolist() == whole.counts().tolist()


def test_a_shared_table_looks_words_up_without_touching_the_original():
    t = WordTable()
    t.scan(b"a b c", insert=True)
    views = [t.shared() for _ in range(2)]
    assert views[0].scan(b"c x a", insert=False)[0].tolist() == [2, -1, 0]
    assert views[1].scan(b"b", insert=False)[0].tolist() == [1]
    assert len(t) == 3 and t.counts().tolist() == [1, 1, 1]


def test_cli_train_reads_a_file_in_its_threads_parts_with_the_one_thread_vocabulary(tmp_path, monkeypatch, capsys,
                                                                                     parts_used):
    path = tmp_path / "c.txt"
    path.write_bytes(_mixed_text(10, lines=2500))
    vocabs = {}
    # the run's --threads decide the parts, not the machine's cores (4 here): --threads 1 reads on one core
    monkeypatch.setattr(encode_mod, "default_threads", lambda: 4)
    for threads in (1, 3):
        out = tmp_path / f"v{threads}.txt"
        code, _, err = run(["train", path, "-o", out, "--save-vocab", tmp_path / f"vocab{threads}.txt", "--dim", "8",
                            "--epochs", "1", "--threads", threads, "--min-count", "2", "--algo", "classic",
                            "--cache-dir", tmp_path / f"cache{threads}"], capsys)
        assert code == 0, err
        vocabs[threads] = (tmp_path / f"vocab{threads}.txt").read_text(encoding="utf-8")
        assert out.exists()
    assert parts_used == [3]
    assert vocabs[3] == vocabs[1] and len(vocabs[1].splitlines()) > 100
    reference = _python_reference(path, ReadOptions(min_count=2))
    words = [line.split(" ")[0] for line in vocabs[1].splitlines()]
    assert words[0] == "</s>" and words[1:] == reference.vocab.words  # word2vec.c's file: </s> first
