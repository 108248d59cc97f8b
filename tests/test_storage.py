"""``parvec train`` reading its corpus from, and writing its outputs to, an S3-compatible object store (a moto
server on loopback, reached over HTTP through s3fs): the vectors equal those of the same run on local files, bit
for bit at one thread; a missing bucket or object and a scheme whose library is missing are errors naming the URL."""

from __future__ import annotations

import bz2
import gzip
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from s3_server import bucket, s3_endpoint  # noqa: F401 - fixtures

from parvec import partitioned, storage
from parvec.keyedvectors import KeyedVectors

FLAGS = ["--dim", "16", "--epochs", "2", "--threads", "1", "--min-count", "1", "--no-cache", "--seed", "3"]


def _fs():
    import s3fs

    return s3fs.S3FileSystem(skip_instance_cache=True)


def _corpus(directory: Path) -> Path:
    """Four parts of a small two-topic corpus: plain, gzip, bzip2, and plain again."""
    rng = np.random.default_rng(5)
    a, b = [f"a{i}" for i in range(30)], [f"b{i}" for i in range(30)]
    directory.mkdir()
    for k, (name, opener) in enumerate([("part-0.txt", open), ("part-1.txt.gz", gzip.open),
                                        ("part-2.txt.bz2", bz2.open), ("part-3.txt", open)]):
        lines = [" ".join(rng.choice(a if (i + k) % 2 else b, 10)) for i in range(300)]
        with opener(directory / name, "wt") as f:
            f.write("\n".join(lines) + "\n")
    return directory


def _upload_dir(local: Path, url: str) -> None:
    for p in sorted(local.iterdir()):
        storage.upload(p, f"{url.rstrip('/')}/{p.name}")


def test_list_inputs_reads_a_prefix_by_name_without_hidden_or_empty_objects(bucket, tmp_path):  # noqa: F811
    fs = _fs()
    for name, data in (("c/b.txt", b"b\n"), ("c/a.txt.gz", gzip.compress(b"a\n")), ("c/.hidden", b"h\n"),
                       ("c/empty.txt", b""), ("c/deeper/x.txt", b"x\n")):
        fs.pipe(f"{bucket}/{name}", data)
    files = storage.list_inputs(f"s3://{bucket}/c/")
    assert [(f.url, f.size) for f in files] == [(f"s3://{bucket}/c/a.txt.gz", len(gzip.compress(b"a\n"))),
                                               (f"s3://{bucket}/c/b.txt", 2)]
    with storage.open_input(files[0].url) as f:
        assert f.read() == b"a\n"
    assert [f.name for f in storage.list_inputs(f"s3://{bucket}/c/*.txt")] == ["b.txt"]


def test_a_missing_bucket_or_object_is_an_error_naming_the_url(s3_endpoint, tmp_path, capsys):  # noqa: F811
    (tmp_path / "c.txt").write_text("a b c\n")
    code, _, err = run(["train", "s3://no-such-bucket-parvec/corpus/", "-o", tmp_path / "v.txt", *FLAGS], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == "parvec: error: s3://no-such-bucket-parvec/corpus/: no such bucket"
    _fs().mkdir("parvec-empty-bucket")
    code, _, err = run(["train", "s3://parvec-empty-bucket/nothing.txt", "-o", tmp_path / "v.txt", *FLAGS], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == ("parvec: error: s3://parvec-empty-bucket/nothing.txt: "
                                           "no such object or prefix")
    code, _, err = run(["train", tmp_path / "c.txt", "-o", "s3://no-such-bucket-parvec/v.txt", *FLAGS], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == "parvec: error: s3://no-such-bucket-parvec/v.txt: no such bucket"
    assert "Traceback" not in err


def test_a_scheme_whose_library_is_missing_names_the_extra(tmp_path, capsys):
    if importlib.util.find_spec("gcsfs") is not None:
        pytest.skip("gcsfs is installed here")
    code, _, err = run(["train", "gs://bucket/corpus/", "-o", tmp_path / "v.txt", *FLAGS], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == ("parvec: error: gs://bucket/corpus/: the gs:// scheme needs the gcsfs "
                                           "package: pip install 'gcsfs'")


def test_one_process_train_from_and_to_s3_equals_the_local_run_bit_for_bit(bucket, tmp_path, capsys):  # noqa: F811
    corpus = _corpus(tmp_path / "corpus")
    _upload_dir(corpus, f"s3://{bucket}/corpus/")
    local = tmp_path / "local"
    local.mkdir()
    code, _, err = run(["train", corpus, "-o", local / "v.bin", "--save-model", local / "model",
                        "--checkpoint-dir", local / "ck", "--save-vocab", local / "vocab.txt", *FLAGS], capsys)
    assert code == 0, err[-2000:]
    s3 = f"s3://{bucket}"
    code, _, err = run(["train", f"{s3}/corpus/", "-o", f"{s3}/out/v.bin", "--save-model", f"{s3}/out/model",
                        "--checkpoint-dir", f"{s3}/ck", "--save-vocab", f"{s3}/out/vocab.txt",
                        "--report", f"{s3}/out/report.json", *[f for f in FLAGS if f != "--no-cache"]], capsys)
    assert code == 0, err[-2000:]
    assert f"uploaded {s3}/out/v.bin" in err
    assert "encoded-corpus cache: not used for a corpus read from a URL (it is copied for this run)" in err
    # The messages name the URLs, not their local copies.
    assert "parvec-staged" not in err, err
    assert f"{s3}/corpus: 12,000 words" in err and f"to {s3}/out/v.bin" in err, err
    fs = _fs()
    assert fs.cat(f"{bucket}/out/v.bin") == (local / "v.bin").read_bytes()
    assert fs.cat(f"{bucket}/out/vocab.txt") == (local / "vocab.txt").read_bytes()
    assert fs.exists(f"{bucket}/out/report.json")
    assert sorted(p.rsplit("/", 1)[1] for p in fs.find(f"{bucket}/out/model")) == sorted(
        p.name for p in (local / "model").rglob("*") if p.is_file())
    assert fs.exists(f"{bucket}/ck/checkpoint/model.json")
    # The vectors read back through the URL, and the checkpoint resumed from the URL, are those of the run.
    kv = KeyedVectors.load_word2vec_format(f"{s3}/out/v.bin", binary=True)
    want = KeyedVectors.load_word2vec_format(local / "v.bin", binary=True)
    assert kv.index_to_key == want.index_to_key and np.array_equal(kv.vectors, want.vectors)
    code, _, err = run(["train", f"{s3}/corpus/", "--resume", f"{s3}/ck", "-o", f"{s3}/out/again.bin", "--no-cache"],
                       capsys)
    assert code == 0, err[-2000:]
    assert f"resuming {s3}/ck/checkpoint: 2 of 2 epochs done" in err, err
    assert fs.cat(f"{bucket}/out/again.bin") == (local / "v.bin").read_bytes()


def test_partitioned_output_reads_back_as_the_one_file_output(bucket, tmp_path, capsys, monkeypatch):  # noqa: F811
    monkeypatch.setattr(partitioned, "_BYTES_PER_PART", 2000)  # parts of 2,000 bytes: several of them
    corpus = _corpus(tmp_path / "corpus")
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.bin", *FLAGS], capsys)
    assert code == 0, err[-2000:]
    url = f"s3://{bucket}/parts/"
    code, _, err = run(["train", corpus, "-o", url, *FLAGS], capsys)
    assert code == 0, err[-2000:]
    names = sorted(p.rsplit("/", 1)[1] for p in _fs().find(f"{bucket}/parts"))
    assert names == ["manifest.json", *(f"part-{i:05d}.bin" for i in range(len(names) - 1))] and len(names) > 3
    kv = KeyedVectors.load_word2vec_format(url)
    want = KeyedVectors.load_word2vec_format(tmp_path / "v.bin", binary=True)
    assert kv.index_to_key == want.index_to_key and np.array_equal(kv.vectors, want.vectors)
    word = want.index_to_key[0]
    code, out, err = run(["similar", url, word, "-k", "3"], capsys)
    assert code == 0, err
    code2, out2, _ = run(["similar", tmp_path / "v.bin", word, "-k", "3"], capsys)
    assert out == out2


def test_a_local_partitioned_output_is_read_back_and_a_damaged_part_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(partitioned, "_BYTES_PER_PART", 2000)
    corpus = _corpus(tmp_path / "corpus")
    code, _, err = run(["train", corpus, "-o", tmp_path / "v.bin", *FLAGS], capsys)
    assert code == 0, err[-2000:]
    parts = tmp_path / "parts"
    code, _, err = run(["train", corpus, "-o", f"{parts}/", *FLAGS], capsys)
    assert code == 0, err[-2000:]
    assert f"and the manifest to {parts}/" in err
    kv = KeyedVectors.load_word2vec_format(parts)
    want = KeyedVectors.load_word2vec_format(tmp_path / "v.bin", binary=True)
    assert kv.index_to_key == want.index_to_key and np.array_equal(kv.vectors, want.vectors)
    # Each part is a whole word2vec binary file.
    first = KeyedVectors.load_word2vec_format(parts / "part-00000.bin", binary=True)
    assert first.index_to_key == want.index_to_key[:len(first.index_to_key)]
    second = parts / "part-00001.bin"
    size = second.stat().st_size
    second.write_bytes(second.read_bytes()[:-7])
    code, _, err = run(["similar", parts, want.index_to_key[0]], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == (f"parvec: error: {parts}/part-00001.bin: {size - 7} bytes, the manifest "
                                           f"says {size} (a damaged or partly written part)")
    second.unlink()
    code, _, err = run(["similar", parts, want.index_to_key[0]], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == (f"parvec: error: {parts}: the part part-00001.bin named by manifest.json "
                                           "is missing")


def test_an_input_prefix_with_nothing_to_read_is_an_error(bucket, tmp_path, capsys):  # noqa: F811
    _fs().pipe(f"{bucket}/corpus/empty.txt", b"")
    code, _, err = run(["train", f"s3://{bucket}/corpus/", "-o", tmp_path / "v.txt", *FLAGS], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == (f"parvec: error: s3://{bucket}/corpus/: no input there (no non-empty "
                                           "object to read)")


def test_a_run_on_local_files_does_not_import_fsspec(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    code = ("import sys\nfrom parvec.cli import main\n"
            f"rc = main(['train', {str(corpus)!r}, '-o', {str(tmp_path / 'v.bin')!r}, '--dim', '8', '--epochs', '1', "
            "'--min-count', '1', '--no-cache', '--debug', '0'])\n"
            "from parvec.keyedvectors import load_vectors\n"
            f"load_vectors({str(tmp_path / 'v.bin')!r})\n"
            "print(rc, 'fsspec' in sys.modules, 's3fs' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")})
    assert out.stdout.split() == ["0", "False", "False"], out.stderr[-2000:]


def test_an_error_in_an_object_names_its_url(bucket, tmp_path, capsys):  # noqa: F811
    _fs().pipe(f"{bucket}/bad.txt", b"abc \xff\xfe def\n")
    code, _, err = run(["train", f"s3://{bucket}/bad.txt", "-o", tmp_path / "v.txt", *FLAGS], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == (f"parvec: error: s3://{bucket}/bad.txt:1: invalid UTF-8 (invalid start "
                                           "byte); use --unicode-errors replace (or ignore) to read it anyway")
    assert not (tmp_path / "v.txt").exists()


def test_an_output_url_that_is_an_input_object_is_refused(bucket, tmp_path, capsys):  # noqa: F811
    _fs().pipe(f"{bucket}/c/part-0.txt", b"a b c\n")
    code, _, err = run(["train", f"s3://{bucket}/c/", "-o", f"s3://{bucket}/c/part-0.txt", *FLAGS], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == (f"parvec: error: -o s3://{bucket}/c/part-0.txt is an object of the "
                                           "training corpus: refusing to overwrite an input; choose another URL")
    assert _fs().cat(f"{bucket}/c/part-0.txt") == b"a b c\n"


def test_a_run_with_urls_leaves_the_parsed_flags_as_given(bucket, tmp_path, capsys):  # noqa: F811
    # Staging maps the flags' record to the local stand-ins: the parsed namespace still names the URLs after
    # the run, and the outputs are at the URLs.
    from parvec.cli import build_parser
    from parvec.cli.train import run_train

    corpus = _corpus(tmp_path / "corpus")
    s3 = f"s3://{bucket}"
    _upload_dir(corpus, f"{s3}/corpus/")
    args = build_parser().parse_args(["train", f"{s3}/corpus/", "-o", f"{s3}/out/v.bin", "--report",
                                      f"{s3}/out/r.json", "--checkpoint-dir", f"{s3}/ck",
                                      *[f for f in FLAGS if f != "--no-cache"]])
    before = dict(vars(args))
    assert run_train(args) == 0
    assert vars(args) == before
    assert args.input == [f"{s3}/corpus/"] and args.output == f"{s3}/out/v.bin" and args.no_cache is False
    assert {"out/v.bin", "out/r.json", "ck/checkpoint/model.json"} <= {
        p.split("/", 1)[1] for p in _fs().find(bucket)}
    capsys.readouterr()
