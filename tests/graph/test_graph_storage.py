"""``parvec node2vec``/``deepwalk`` with URLs (an S3-compatible server, moto on loopback): the graph read from an
object, the embedding, the report and the checkpoints written to objects; the vectors are those of the same run on
local files, bit for bit at one thread; a missing object is one line naming the URL, exit 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from cli_run import run
from s3_server import bucket, s3_endpoint  # noqa: F401 - fixtures
from s3_server import s3_client as _fs

FLAGS = ["--dimensions", "8", "--walk-length", "10", "--num-walks", "2", "--window-size", "3", "--epochs", "1",
         "--threads", "1", "--seed", "5"]


def _graph(path: Path) -> Path:
    rng = np.random.default_rng(3)
    edges = {(int(a), int(b)) for a, b in rng.integers(0, 60, size=(240, 2)) if a != b}
    path.write_text("".join(f"{a} {b}\n" for a, b in sorted(edges)))
    return path


def test_node2vec_reads_and_writes_urls_as_the_local_run(bucket, tmp_path, capsys):  # noqa: F811
    graph = _graph(tmp_path / "g.edges")
    _fs().put(str(graph), f"{bucket}/graphs/g.edges")
    code, _, err = run(["node2vec", graph, "-o", tmp_path / "local.emb", *FLAGS], capsys)
    assert code == 0, err
    code, _, err = run(["node2vec", f"s3://{bucket}/graphs/g.edges", "-o", f"s3://{bucket}/out/g.emb",
                        "--report", f"s3://{bucket}/out/report.json", "--checkpoint-dir", f"s3://{bucket}/ck",
                        *FLAGS], capsys)
    assert code == 0, err
    assert _fs().cat(f"{bucket}/out/g.emb") == (tmp_path / "local.emb").read_bytes()
    assert _fs().exists(f"{bucket}/out/report.json")
    assert _fs().exists(f"{bucket}/ck/checkpoint/model.json")
    assert f"uploaded s3://{bucket}/out/g.emb" in err and "parvec-staged-" not in err


def test_a_missing_graph_object_names_its_url(bucket, tmp_path, capsys):  # noqa: F811
    code, _, err = run(["deepwalk", f"s3://{bucket}/none.edges", "-o", tmp_path / "g.emb", *FLAGS], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == f"parvec: error: s3://{bucket}/none.edges: no such object or prefix"
    assert not (tmp_path / "g.emb").exists()
