"""Reading text into the encoded corpus: tokenisation, long lines, compression, cache, errors."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os

import numpy as np
import pytest

from parvec.corpus import EncodedCorpus, ReadOptions, load_encoded, save_encoded
from parvec.errors import ParvecError
from parvec.vocab import Vocab, VocabCounter


def write(path, text: str | bytes):
    data = text.encode("utf-8") if isinstance(text, str) else text
    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(path.suffix, open)
    with opener(path, "wb") as f:
        f.write(data)
    return path


def test_lines_are_sentences_and_vocab_is_sorted_by_count(tmp_path):
    p = write(tmp_path / "c.txt", "b a c a\n\n  a  b\tz \r\nc a\n")
    c = EncodedCorpus.from_file(p, ReadOptions(min_count=2))
    assert c.vocab.words == ["a", "b", "c"]  # z (1) dropped, ties b/c in first-seen order
    assert c.vocab.counts.tolist() == [4, 2, 2]
    assert list(c.sentences()) == [["b", "a", "c", "a"], ["a", "b"], ["c", "a"]]
    assert c.raw_words == 9
    assert c.tokens.dtype == np.int32 and c.offsets.dtype == np.int64


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_compressed_inputs_read_the_same(tmp_path, suffix):
    text = "the cat sat on the mat\nthe dog sat\n" * 50
    plain = EncodedCorpus.from_file(write(tmp_path / "c.txt", text), ReadOptions(min_count=1))
    packed = EncodedCorpus.from_file(write(tmp_path / f"c.txt{suffix}", text), ReadOptions(min_count=1))
    assert packed.vocab.words == plain.vocab.words
    np.testing.assert_array_equal(packed.tokens, plain.tokens)
    np.testing.assert_array_equal(packed.offsets, plain.offsets)


def test_long_line_is_split_into_pieces_not_truncated(tmp_path, monkeypatch):
    import parvec.corpus.readers as readers_mod

    monkeypatch.setattr(readers_mod, "_BLOCK_BYTES", 64)  # force the line across many read blocks
    words = [f"w{i % 7}" for i in range(1003)]
    p = write(tmp_path / "long.txt", " ".join(words))  # one line, no newline (text8 style)
    c = EncodedCorpus.from_file(p, ReadOptions(min_count=1, max_sentence_length=100))
    lengths = np.diff(c.offsets).tolist()
    assert lengths == [100] * 10 + [3]
    assert [w for s in c.sentences() for w in s] == words


def test_lowercase_and_unicode(tmp_path):
    p = write(tmp_path / "u.txt", "Über ÜBER über café\n")
    assert EncodedCorpus.from_file(p, ReadOptions(min_count=1)).vocab.words == ["Über", "ÜBER", "über", "café"]
    low = EncodedCorpus.from_file(p, ReadOptions(min_count=1, lowercase=True))
    assert low.vocab.words == ["über", "café"] and low.vocab.counts.tolist() == [3, 1]


def test_invalid_utf8_names_the_line_and_suggests_replace(tmp_path):
    p = write(tmp_path / "bad.txt", b"good line\nsecond line\nbad \xff\xfe byte\n")
    with pytest.raises(ParvecError, match=r"bad\.txt:3: invalid UTF-8.*unicode-errors replace"):
        EncodedCorpus.from_file(p, ReadOptions(min_count=1))
    c = EncodedCorpus.from_file(p, ReadOptions(min_count=1, unicode_errors="replace"))
    assert "\ufffd\ufffd" in c.vocab.words


def test_input_errors(tmp_path):
    with pytest.raises(ParvecError, match="no such file"):
        EncodedCorpus.from_file(tmp_path / "missing.txt")
    with pytest.raises(ParvecError, match="empty"):
        EncodedCorpus.from_file(write(tmp_path / "empty.txt", ""))
    with pytest.raises(ParvecError, match="no words"):
        EncodedCorpus.from_file(write(tmp_path / "blank.txt", "\n  \n"))
    with pytest.raises(ParvecError, match=r"no word reaches min_count=5 \(the most frequent word occurs 2"):
        EncodedCorpus.from_file(write(tmp_path / "rare.txt", "a b a c\n"), ReadOptions(min_count=5))
    # A directory is a corpus of its files; one with no non-empty file is an error naming it.
    (tmp_path / "no_files").mkdir()
    write(tmp_path / "no_files" / "e.txt", "")
    with pytest.raises(ParvecError, match="no_files: the directory holds no"):
        EncodedCorpus.from_file(tmp_path / "no_files")
    with pytest.raises(ParvecError, match="pattern matches no"):
        EncodedCorpus.from_file(tmp_path / "nothing*.txt")
    with pytest.raises(ParvecError, match="min_count must be >= 0"):
        EncodedCorpus.from_file(write(tmp_path / "x.txt", "a"), ReadOptions(min_count=-1))
    # min_count=0 keeps every word, as 1 does (gensim's semantics)
    zero = EncodedCorpus.from_file(write(tmp_path / "y.txt", "a b a\n"), ReadOptions(min_count=0))
    assert zero.vocab.words == ["a", "b"] and zero.vocab.counts.tolist() == [2, 1]


def test_a_glob_or_directory_reads_regular_files_names_the_rest_and_refuses_a_link_to_nothing(tmp_path, caplog):
    from parvec.corpus import expand_inputs

    write(tmp_path / "a.txt", "a b\n")
    (tmp_path / "b.txt").symlink_to(tmp_path / "a.txt")  # a link to a file is read
    (tmp_path / "c.txt").mkdir()
    with caplog.at_level("WARNING", logger="parvec"):
        assert [p.name for p in expand_inputs(str(tmp_path / "*.txt"))] == ["a.txt", "b.txt"]
        assert [p.name for p in expand_inputs(tmp_path, say_skipped=False)] == ["a.txt", "b.txt"]
    assert [r.getMessage() for r in caplog.records] == [
        f"{tmp_path / '*.txt'}: skipped 1 entry that is not a file to read: {tmp_path / 'c.txt'}/ (a directory: "
        "subdirectories are not read)"]
    (tmp_path / "d.txt").symlink_to(tmp_path / "d.txt")  # a loop: no file either
    for given in (tmp_path, str(tmp_path / "*.txt"), [tmp_path / "a.txt", tmp_path]):
        with pytest.raises(ParvecError, match=r"d\.txt: a symbolic link to .*d\.txt, which cannot be read \("):
            EncodedCorpus.from_file(given)


def test_unreadable_file(tmp_path):
    p = write(tmp_path / "secret.txt", "a b c")
    os.chmod(p, 0)
    try:
        if os.access(p, os.R_OK):
            pytest.skip("running as a user who can read any file (root)")
        with pytest.raises(ParvecError, match="not readable"):
            EncodedCorpus.from_file(p)
    finally:
        os.chmod(p, 0o644)


def test_max_vocab_size_prunes_while_counting_and_max_final_vocab():
    counter = VocabCounter(max_vocab_size=3)
    counter.update(["a"] * 5 + ["b"] * 4 + ["c", "d", "e"])  # 5 distinct > 3: words seen once go
    assert set(counter.counts) == {"a", "b"} and counter.pruned
    v = Vocab.from_counts({"a": 9, "b": 5, "c": 5, "d": 2}, min_count=1, max_final_vocab=2)
    assert v.words == ["a"]  # gensim's rule: raise min_count above the (max_final_vocab+1)-th count
    v = Vocab.from_counts({"a": 9, "b": 5, "c": 4, "d": 2}, min_count=1, max_final_vocab=2)
    assert v.words == ["a", "b"]


def test_from_sentences_refuses_one_shot_generators():
    gen = (s for s in [["a", "b"]])
    with pytest.raises(ParvecError, match="one-shot iterator"):
        EncodedCorpus.from_sentences(gen, min_count=1)
    with pytest.raises(ParvecError, match="is a string"):
        EncodedCorpus.from_sentences(["a b c"], min_count=1)

    class Restartable:
        def __iter__(self):
            yield ["a", "b", "a"]

    assert EncodedCorpus.from_sentences(Restartable(), min_count=1).n_tokens == 3


def test_from_arrays_and_encoding_against_a_given_vocab():
    c = EncodedCorpus.from_arrays(np.array([0, 1, 0, 2], dtype=np.int64), np.array([0, 2, 4]))
    assert c.vocab.counts.tolist() == [2, 1, 1] and c.n_sentences == 2
    with pytest.raises(ParvecError, match="offsets must start at 0"):
        EncodedCorpus.from_arrays(np.array([0, 1]), np.array([1, 2]))
    vocab = Vocab(["x", "y"], np.array([3, 1]))
    c = EncodedCorpus.from_sentences([["y", "new", "x"], ["new"]], vocab=vocab)
    assert c.tokens.tolist() == [1, 0] and c.offsets.tolist() == [0, 2]  # OOV skipped, empty line gone


def test_cache_is_reused_while_the_file_is_unchanged(tmp_path):
    p = write(tmp_path / "c.txt", "a b c a b a\n" * 10)
    cache = tmp_path / "cache"
    first = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    entries = list(cache.iterdir())
    assert len(entries) == 1 and (entries[0] / "header.json").exists()
    again = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    assert isinstance(again.tokens, np.memmap)  # came from the cache
    np.testing.assert_array_equal(again.tokens, first.tokens)
    # A different setting is a different cache entry; a changed file is re-read.
    EncodedCorpus.from_file(p, ReadOptions(min_count=2), cache_dir=cache)
    assert len(list(cache.iterdir())) == 2
    write(p, "z z z\n")
    changed = EncodedCorpus.from_file(p, ReadOptions(min_count=1), cache_dir=cache)
    assert changed.vocab.words == ["z"]


def test_save_and_load_encoded_round_trip(tmp_path):
    c = EncodedCorpus.from_sentences([["a", "b"], ["b", "b", "c"]], min_count=1)
    save_encoded(c, tmp_path / "enc")
    back = load_encoded(tmp_path / "enc")
    assert back.vocab.words == c.vocab.words and back.vocab.counts.tolist() == c.vocab.counts.tolist()
    np.testing.assert_array_equal(back.tokens, c.tokens)
    np.testing.assert_array_equal(back.offsets, c.offsets)


def test_real_corpus_slice_counts(demo_slice):
    c = EncodedCorpus.from_file(demo_slice, ReadOptions(min_count=5))
    assert c.raw_words == 500_000 and c.n_sentences == 500
    assert c.vocab.words[:3] == ["the", "of", "and"]
    assert np.all(np.diff(c.vocab.counts) <= 0)
    assert c.n_tokens == int(c.vocab.counts.sum())


def test_the_cache_key_hashes_the_input_identity_as_the_cache_has_always_written_it(tmp_path):
    # An entry written before the identity was a record keeps its key: the same JSON, the same SHA-256.
    import hashlib
    import json
    from dataclasses import asdict

    from parvec.corpus import cache

    a = tmp_path / "a.txt"
    a.write_text("x y\n")
    st = a.stat()
    one = {"path": str(a.resolve()), "dev": st.st_dev, "ino": st.st_ino, "size": st.st_size,
           "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}
    options = ReadOptions(min_count=1)

    def key(identity: dict) -> str:
        ident = {"input": identity, "options": asdict(options), "version": cache.CACHE_FORMAT_VERSION}
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]

    assert cache._cache_key(a, cache.InputIdentity.of(a), options) == f"a.txt.{key(one)}"
    several = cache.InputIdentity.of([a, a])
    assert several.to_json() == {"path": [one["path"]] * 2, "files": [one, one]}
    assert cache._cache_key([a, a], several, options) == f"a.txt+1.{key(several.to_json())}"
