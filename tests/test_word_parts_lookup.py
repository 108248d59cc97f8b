"""A sharded model's word -> id: the vocabulary partition's hashed lookup (parvec.wordhash.WordLookup, as the encoders
use), built for a partition at its first lookup; after that a lookup reads no partition's list of hashes (no scan).
The speed on a 16M-word model: benchmarks/bench_word_lookup.py."""

from __future__ import annotations

import json
import unicodedata

import numpy as np
from sharded_model_dir import topic_vectors, write_sharded_model

from parvec.sharded_vectors import ShardedKeyedVectors
from parvec.vocab_parts import PART_FILES, VocabPart, WordParts, write_part
from parvec.wordhash import fnv1a64


class _NoScan:
    """Stands for a partition's hashes once its lookup is built: any use of them fails the test."""

    def __array__(self, *args, **kwargs):
        raise AssertionError("a lookup read the partition's hashes (a scan)")

    def __eq__(self, other):
        raise AssertionError("a lookup compared the partition's hashes (a scan)")

    __hash__ = None


def test_every_word_is_found_through_its_partitions_hashed_lookup_without_a_scan(tmp_path):
    vectors, words = topic_vectors(500, 4)
    words[7] = unicodedata.normalize("NFC", "café")
    path = write_sharded_model(tmp_path / "model", vectors, words, shards=2, parts=3)
    kv = ShardedKeyedVectors.open(path)
    for p in kv.parts.parts:  # each partition's lookup built (its first lookup), then its hashes taken away
        p.table()
        p.hashes = _NoScan()
    assert [kv.get_index(w) for w in words] == list(range(500))
    assert [kv.key_to_index[w] for w in words[::50]] == list(range(0, 500, 50))
    assert kv.get_index(unicodedata.normalize("NFD", "café")) == 7
    assert kv.get_index("no-such-word", -1) == -1 and "t0w500" not in kv
    assert kv.parts.index("t1w1") == 1 and kv.parts.index("") is None


def test_a_hash_two_words_share_is_told_apart_by_their_bytes(tmp_path):
    # a partition recording one hash for two words (never written by a run, which leaves colliding words out)
    h = fnv1a64("a")
    rec = write_part(tmp_path, 0, np.array([0, 1, 2]), np.array([9, 8, 7]), words=[b"b", b"a", b"c"],
                     hashes=np.array([h, h, fnv1a64("c")], np.uint64))
    parts = WordParts.open(tmp_path, [VocabPart.from_json(rec)])
    assert (parts.index("a"), parts.index("c"), parts.index("b"), parts.index("d")) == (1, 2, None, None)
    assert parts.parts[0].repeated == frozenset({h})


def test_a_partition_record_is_written_back_as_write_part_wrote_it(tmp_path):
    written = write_part(tmp_path, 3, np.array([1, 0]), np.array([3, 5]), words=[b"cat", b"the"])
    rec = VocabPart.from_json(written)
    assert (rec.part, rec.words, rec.bytes) == (3, 2, 6) and set(rec.crc32) == set(PART_FILES)
    assert json.dumps(rec.to_json()) == json.dumps(written)  # the same keys, in the same order
    assert WordParts.open(tmp_path, [rec], check=True).n_words == 2
