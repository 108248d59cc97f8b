"""The benchmarks' shared module (benchmarks/harness.py): every script imports it (no ``sys.path`` edits), and
every ``--out`` JSON goes through its writer, whose header names the machine."""

from __future__ import annotations

import ast
import json

import pytest
from benchmark_modules import BENCHMARKS, load

# make_zipf_corpus.py makes data and measures nothing; netns_cluster.py is a module bench_cluster_net.py imports
# (network namespaces for Ray nodes); sharded_calls.py is bench_sharded.py's child, run with this tree's and a base
# revision's parvec on PYTHONPATH, which the harness (this checkout's src first on sys.path) would override.
NOT_CONVERTED = {"make_zipf_corpus.py", "harness.py", "netns_cluster.py", "sharded_calls.py"}
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if p.name not in NOT_CONVERTED)


@pytest.fixture(scope="module")
def harness():
    return load("harness")


def test_header_names_the_machine_and_the_code(harness):
    h = harness.header("bench_x", ["benchmarks/bench_x.py", "--out", "x.json"])
    assert set(h) == set(harness.HEADER_KEYS)
    assert h["schema"] == "parvec-benchmark/1" and h["benchmark"] == "bench_x"
    assert h["command"] == "benchmarks/bench_x.py --out x.json"
    m = h["machine"]
    assert m["cpu_model"] and m["cpu_model"] != "?"  # lscpu or /proc/cpuinfo names it on Linux
    assert m["logical_cpus"] >= 1 and isinstance(m["isa"], list) and isinstance(m["gpus"], list)
    assert m["isa_level"] == harness.isa_level(m["isa"])
    assert h["parvec"]["version"]


def test_write_json_keeps_the_scripts_keys_and_refuses_a_header_key(harness, tmp_path):
    path = harness.write_json(tmp_path / "sub" / "b.json", "bench_x", {"runs": [{"words_per_sec": 1.0}]})
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["runs"] == [{"words_per_sec": 1.0}] and data["machine"]["cpu_model"]
    assert list(data)[: len(harness.HEADER_KEYS)] == list(harness.HEADER_KEYS)
    assert [p.name for p in path.parent.iterdir()] == ["b.json"]  # no temporary file left
    with pytest.raises(ValueError, match="machine"):
        harness.write_json(tmp_path / "c.json", "bench_x", {"machine": "mine"})


def test_isa_level_and_machine_line(harness):
    assert harness.isa_level(["sse4_2", "avx", "avx2", "avx512f"]) == "AVX-512"
    assert harness.isa_level(["asimd"]) == "NEON"
    line = harness.machine_line({"cpu_model": "X", "logical_cpus": 4, "isa_level": "AVX2",
                                 "gpus": [{"name": "NVIDIA H100", "memory": "81559 MiB", "driver": "1"}]})
    assert line == "X, 4 logical CPUs, AVX2; GPU: NVIDIA H100 (81559 MiB)"


def test_slicing_and_preparing_a_corpus(harness, tmp_path):
    src = tmp_path / "c.txt"
    src.write_text("a b c\nd e f g\n", encoding="utf-8")
    assert harness.slice_corpus(src, 5, tmp_path / "w", line_tokens=2).read_text() == "a b\nc d\ne\n"
    assert harness.prepare_corpus(src, tmp_path / "p", line_tokens=3).read_text() == "a b c\nd e f\ng\n"


def test_run_child_returns_the_printed_json_and_names_a_failure(harness):
    import sys

    code = "print('noise'); print('RESULT {\"x\": 2}'); print('tail')"
    assert harness.run_child([sys.executable, "-c", code], "ok", prefix="RESULT ") == {"x": 2}
    with pytest.raises(RuntimeError, match="broken failed"):
        harness.run_child([sys.executable, "-c", "import sys; sys.exit('boom')"], "broken")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_script_uses_the_harness_and_edits_no_sys_path(script):
    tree = ast.parse(script.read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "harness" in imported
    edits = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in ("insert", "append")
             and isinstance(n.value, ast.Attribute) and n.value.attr == "path"
             and isinstance(n.value.value, ast.Name) and n.value.value.id == "sys"]
    allowed = {"bench_sync.py"}  # --torch-path: a user's directory holding torch, on the actors' path
    assert edits == [] or script.name in allowed, f"{script.name}: sys.path edited at lines {edits}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_scripts_json_goes_through_the_harness(script):
    # A JSON file written any other way would not name the machine its figures come from.
    text = script.read_text(encoding="utf-8")
    writes_json = "--out" in text or "--json" in text
    assert not writes_json or "harness.write_json(" in text
    assert "json.dump(" not in text and ".write_text(json.dumps" not in text
