"""Byte ranges and whole compressed objects read straight from an S3-compatible object store (a moto server on
loopback), as the workers of a sharded run read their units: the same bytes, cuts, units and sentences as the
local files, without a copy of the object."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import numpy as np
import pytest
from s3_server import bucket, s3_endpoint  # noqa: F401 - fixtures

from parvec import storage
from parvec.corpus import RangeSentences, ReadOptions, line_cuts
from parvec.distributed.sharded_source import estimate_distinct, plan_inputs
from parvec.errors import ParvecError


def _parts(directory: Path, bucket_name: str) -> str:
    """A plain part, a gzip, a bzip2 and an xz part, locally in ``directory`` and under s3://BUCKET/corpus/."""
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(200)]
    directory.mkdir()
    for k, (name, opener) in enumerate([("a.txt", open), ("b.txt.gz", gzip.open), ("c.txt.bz2", bz2.open),
                                        ("d.txt.xz", lzma.open)]):
        lines = [" ".join(rng.choice(words, int(rng.integers(1, 30)))) for _ in range(400 + 100 * k)]
        with opener(directory / name, "wt") as f:
            f.write("\n".join(lines) + "\n")
        storage.upload(directory / name, f"s3://{bucket_name}/corpus/{name}")
    return f"s3://{bucket_name}/corpus/"


def test_compressed_objects_are_decompressed_by_their_extension(bucket, tmp_path):  # noqa: F811
    url = _parts(tmp_path / "c", bucket)
    for name, opener in (("b.txt.gz", gzip.open), ("c.txt.bz2", bz2.open), ("d.txt.xz", lzma.open)):
        with storage.open_input(url + name) as f, opener(tmp_path / "c" / name, "rb") as local:
            assert f.read() == local.read()


def test_a_byte_range_of_an_object_reads_as_the_local_files_range(bucket, tmp_path):  # noqa: F811
    url = _parts(tmp_path / "c", bucket)
    local = tmp_path / "c" / "a.txt"
    cuts = line_cuts(local, 5)
    assert line_cuts(url + "a.txt", 5) == cuts
    opts = ReadOptions(max_sentence_length=7)
    for a, b in zip(cuts, cuts[1:], strict=False):
        remote, here = RangeSentences(url + "a.txt", a, b, opts), RangeSentences(local, a, b, opts)
        assert list(remote) == list(here) and remote.fingerprint == here.fingerprint
    whole = RangeSentences(url + "c.txt.bz2", 0, None, opts)  # a compressed object: read whole, decompressed
    assert list(whole) == list(RangeSentences(tmp_path / "c" / "c.txt.bz2", 0, None, opts))


def test_a_sharded_plan_of_a_prefix_url_has_the_local_directorys_units(bucket, tmp_path):  # noqa: F811
    url = _parts(tmp_path / "c", bucket)
    remote, local = plan_inputs(url, 3, tmp_path, range_bytes=4096), plan_inputs(tmp_path / "c", 3, tmp_path,
                                                                                 range_bytes=4096)
    assert remote.units == local.units and len(remote.units) > 6
    assert remote.remote and not local.remote
    assert list(remote.files) == [url + p.name for p in sorted((tmp_path / "c").iterdir())]
    assert [s[2] for s in remote.states] == [s[2] for s in local.states]  # sizes from the listing
    opts = ReadOptions()
    assert estimate_distinct(remote, opts, 2048) == estimate_distinct(local, opts, 2048)


def test_a_sharded_corpus_of_urls_and_local_paths_is_refused_naming_them(tmp_path):
    local = tmp_path / "b.txt"
    local.write_text("x y\n")
    url = (tmp_path / "b.txt").as_uri()
    with pytest.raises(ParvecError, match=f"all URLs or all local paths, not both: {url} {local}"):
        plan_inputs([url, str(local)], 2, tmp_path)
