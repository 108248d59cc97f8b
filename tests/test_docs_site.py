"""The documentation site's generated CLI reference (docs/hooks/cli_reference.py, run by ``mkdocs build``) against
the parsers it is generated from: every sub-command, every flag; and every page of mkdocs.yml's nav exists.
(``mkdocs build --strict`` itself runs in .ci/run.)  The benchmarks page names the GPU the GPU page measured on."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

import pytest

from parvec.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
HOOK = REPO / "docs" / "hooks" / "cli_reference.py"


@pytest.fixture(scope="module")
def reference():
    spec = importlib.util.spec_from_file_location("cli_reference", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _sections(page: str) -> dict[str, str]:
    parts = re.split(r"^## parvec (\S+)$", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_subcommand_has_its_section(reference):
    parser = build_parser()
    sections = _sections(reference.markdown(parser))
    assert list(sections) == list(_subparsers(parser))
    assert len(sections) >= 10  # train, similar, analogy, eval, node2vec, deepwalk, node-eval, link-eval, ...


def test_every_flag_of_every_subcommand_is_in_its_section(reference):
    parser = build_parser()
    sections = _sections(reference.markdown(parser))
    missing = []
    for name, sub in _subparsers(parser).items():
        rows = [ln for ln in sections[name].splitlines() if ln.startswith("| `")]
        listed = {m for ln in rows for m in re.findall(r"`(-{1,2}[\w-]+)", ln.split(" | ")[0])}
        positional = {m for ln in rows for m in re.findall(r"^\| `([^`-][^`]*)`", ln)}
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if action.option_strings:
                missing += [f"{name} {s}" for s in action.option_strings if s not in listed]
            elif (action.metavar or action.dest) not in positional:
                missing.append(f"{name} {action.metavar or action.dest}")
    assert missing == []


def test_top_level_flags_and_command_table(reference):
    parser = build_parser()
    page = reference.markdown(parser)
    head = page.split("\n## parvec ", 1)[0]
    assert "`--version`" in head
    for name in _subparsers(parser):
        assert f"[`{name}`](#parvec-{name})" in head


def test_a_new_flag_appears_in_the_generated_page(reference):
    parser = build_parser()
    train = _subparsers(parser)["train"]
    train.add_argument("--a-flag-added-later", type=int, default=3, help="what it does")
    row = next(ln for ln in reference.markdown(parser).splitlines() if ln.startswith("| `--a-flag-added-later"))
    assert row == "| `--a-flag-added-later A_FLAG_ADDED_LATER` | what it does (default: `3`) |"


def test_every_nav_page_exists():
    nav = re.findall(r":\s+(\S+\.md)\s*$", (REPO / "mkdocs.yml").read_text(encoding="utf-8"), flags=re.M)
    assert "reference/cli.md" in nav and "reference/api.md" in nav
    generated = {"reference/cli.md"}
    assert [p for p in nav if p not in generated and not (REPO / "docs" / p).is_file()] == []


def test_the_benchmarks_page_names_the_gpu_the_gpu_page_measured_on():
    gpu_page = (REPO / "docs" / "gpu.md").read_text(encoding="utf-8")
    benchmarks = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    measured = re.search(r"\*\*Measured on an NVIDIA (\w+)\*\*", gpu_page)
    assert measured, "docs/gpu.md no longer opens with the GPU it measured on"
    row = next(line for line in benchmarks.splitlines() if line.startswith("| NVIDIA") and "(gpu.md)" in line)
    section = benchmarks.split("\n## GPUs\n", 1)[1].split("\n## ", 1)[0]
    for where, text in (("the machines table", row), ("the GPUs section", section)):
        named = re.search(r"NVIDIA (\w+)", text)
        assert named and named.group(1) == measured.group(1), (where, text)


def test_the_api_page_shows_no_internal_base_class():
    # mkdocstrings writes "Bases: X" under a class: a base of parvec's must be public (exported by parvec or one of
    # its packages) or hidden for that entry (show_bases: false), as Word2Vec's and Node2Vec's KeptRun is.
    import importlib
    import inspect

    page = (REPO / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    public = set()
    for package in ("parvec", "parvec.graph", "parvec.corpus"):
        module = importlib.import_module(package)
        public |= {getattr(module, name) for name in getattr(module, "__all__", ()) if hasattr(module, name)}
    shown = []
    for entry, options in re.findall(r"^::: (\S+)\n((?:    .*\n)*)", page, flags=re.M):
        module_name, _, name = entry.rpartition(".")
        obj = getattr(importlib.import_module(module_name), name)
        if not inspect.isclass(obj) or "show_bases: false" in options:
            continue
        shown += [f"{entry}: Bases: {base.__qualname__}" for base in obj.__bases__
                  if base.__module__.startswith("parvec") and base not in public]
    assert shown == []
