"""What a node writes for the others without a file system they share, checked without Ray: a vocabulary
partition held as its files' bytes (what a reducer hands to Ray's object store) reads as the files on disk; a
shard's snapshot store uploads each snapshot to a URL checkpoint directory, prunes the older ones there, and reads
one its node does not hold back from the URL; the driver's mirror of the checkpoint directory leaves the shards'
directory to the shards.  (``file://`` URLs stand for the object store; tests/distributed/test_object_storage_nodes.py
runs the whole on two nodes with S3.)"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from parvec import storage
from parvec.distributed.snapshot_files import ShardStore
from parvec.errors import ParvecError
from parvec.vocab_parts import VocabPart, WordParts, crc32_file, part_files, part_paths, write_part


def test_a_partition_in_memory_is_the_partition_on_disk_byte_for_byte(tmp_path):
    words = [b"the", b"cat", "na\u00efve".encode(), b"sat"]
    ids, counts = np.array([3, 0, 2, 1]), np.array([2, 9, 4, 6])
    on_disk = write_part(tmp_path, 5, ids, counts, words=words)
    record, files = part_files(5, ids, counts, words=words)
    assert record == on_disk
    for name, path in part_paths(tmp_path, 5).items():
        assert files[name].tobytes() == path.read_bytes()
        assert zlib.crc32(files[name]) == crc32_file(path) == record["crc32"][name]
    held = WordParts.of_files([VocabPart.from_json(record)], [files])
    read = WordParts.open(tmp_path, [VocabPart.from_json(on_disk)])
    assert held.words_between(0, 4) == read.words_between(0, 4) == [b"cat", b"sat", "na\u00efve".encode(), b"the"]
    assert held.counts_between(0, 4).tolist() == read.counts_between(0, 4).tolist() == [9, 6, 4, 2]
    assert held.index("na\u00efve") == 2


def _columns(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"in": rng.random((6, 3), dtype=np.float32), "out": rng.random((6, 3), dtype=np.float32)}


def test_a_shard_uploads_its_snapshots_prunes_the_old_ones_and_reads_one_back_from_the_url(tmp_path):
    url = (tmp_path / "bucket" / "ck" / "shards").as_uri()
    store = ShardStore.of(str(tmp_path / "node-a" / "shards"), url, 1, 2, "shard 1 of 2")
    store.clear()
    remote = tmp_path / "bucket" / "ck" / "shards" / "shard-1-of-2"
    written = {}
    for snap in (1, 2, 3):
        written[snap] = _columns(snap)
        _, crcs = store.write(snap, [snap - 1], written[snap], {"snapshot": snap})
        store.uploaded(snap)
        assert sorted(p.name for p in (remote / f"snap-{snap}").iterdir()) == ["in.npy", "meta.json", "out.npy"]
    assert sorted(p.name for p in remote.iterdir()) == ["snap-2", "snap-3"]  # as on the shard's disk
    assert sorted(p.name for p in store.base.iterdir()) == ["snap-2", "snap-3"]

    # The same shard restarted on another node: its disk does not hold snapshot 3; read from the URL.
    elsewhere = ShardStore.of(str(tmp_path / "node-b" / "shards"), url, 1, 2, "shard 1 of 2")
    got = {k: np.zeros_like(v) for k, v in written[3].items()}
    elsewhere.read(3, None, None, got, crcs)
    assert all(np.array_equal(got[k], written[3][k]) for k in got)
    elsewhere.uploaded(3)  # written whole by its previous process: nothing to wait for
    with pytest.raises(ParvecError, match="snapshot 7 is not at"):
        elsewhere.uploaded(7)
    # Without a URL a snapshot the node does not hold is an error naming the shard.
    with pytest.raises(ParvecError, match="shard 1 of 2 cannot read snapshot 3"):
        ShardStore.of(str(tmp_path / "node-c" / "shards"), None, 1, 2, "shard 1 of 2").read(3, None, None, got, None)


def test_the_checkpoint_mirror_leaves_the_shards_directory_to_the_shards(tmp_path):
    local, remote = tmp_path / "ck", tmp_path / "remote"
    (local / "shards" / "shard-0-of-1" / "snap-1").mkdir(parents=True)
    (local / "shards" / "shard-0-of-1" / "snap-1" / "in.npy").write_bytes(b"x")
    (local / "checkpoint").mkdir()
    (local / "checkpoint" / "model.json").write_text("{}")
    mirror = storage.mirror(local, remote.as_uri())
    try:
        assert mirror.sync() == 2  # a resumed checkpoint's files, as they were downloaded, count as sent
        assert storage.delegate(local / "shards") == remote.as_uri() + "/shards"
        assert storage.url_of(local / "checkpoint" / "model.json") == remote.as_uri() + "/checkpoint/model.json"
        (local / "shards" / "shard-0-of-1" / "snap-1" / "in.npy").unlink()  # pruned by the shard on its disk
        (local / "shards" / "shard-0-of-1" / "snap-2").mkdir()
        (local / "shards" / "shard-0-of-1" / "snap-2" / "in.npy").write_bytes(b"y")
        (local / "checkpoint" / "model.json").write_text('{"x": 1}')
        assert mirror.sync() == 1  # the checkpoint; the shards' directory is theirs to upload and prune
    finally:
        storage.unmirror(local)
    assert sorted(p.relative_to(remote).as_posix() for p in remote.rglob("*") if p.is_file()) == [
        "checkpoint/model.json", "shards/shard-0-of-1/snap-1/in.npy"]
    assert storage.url_of(Path("/no/such/dir")) is None


def test_a_snapshot_that_cannot_be_uploaded_is_an_error_at_the_checkpoint_naming_the_shard_and_url(tmp_path):
    (tmp_path / "a-file").write_text("x")
    url = (tmp_path / "a-file").as_uri() + "/ck/shards"  # under a file: nothing can be written there
    store = ShardStore.of(str(tmp_path / "node" / "shards"), url, 0, 2, "shard 0 of 2")
    store.clear()
    store.write(1, [None], _columns(1), {"snapshot": 1})  # written on the node; the upload fails in its thread
    with pytest.raises(ParvecError, match=r"shard 0 of 2 could not upload snapshot 1 to file://.*/a-file/ck/shards/"
                                          r"shard-0-of-2: "):
        store.uploaded(1)
    assert (store.base / "snap-1" / "in.npy").is_file()
