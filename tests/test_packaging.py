"""What the package declares and ships: one version (``parvec.__version__``, read by setuptools and printed by
``parvec --version``), the MIT licence, and package data that covers every shipped data file (the wheel that
``.ci/run`` builds and installs in a clean venv trains and evaluates with them)."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import parvec
from parvec.cli import main

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_is_declared_once_in_the_package():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "parvec.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?(?:\.dev\d+)?", parvec.__version__)


def test_version_flag_prints_the_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"parvec {parvec.__version__}"


def test_version_flag_from_the_shell():
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    out = subprocess.run([sys.executable, "-m", "parvec", "--version"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"parvec {parvec.__version__}"


def test_changelog_has_a_section_for_this_version():
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(parvec.__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)


def test_licences_are_declared_as_shipped():
    # parvec's code is MIT; the Google analogy set it ships is Apache-2.0, whose text must travel with it
    assert PYPROJECT["project"]["license"] == "MIT AND Apache-2.0"
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "the parvec authors" in text
    files = PYPROJECT["project"]["license-files"]
    assert "LICENSE" in files and "src/parvec/data/LICENSE-Apache-2.0.txt" in files
    assert all((REPO / f).is_file() for f in files)


def test_package_data_covers_every_shipped_data_file():
    # A data file no pattern matches would be left out of the wheel: the installed package would then fall back
    # to nothing (the evaluation sets) or fail (`parvec demo`'s corpus).
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["parvec"]
    data = REPO / "src" / "parvec" / "data"
    shipped = sorted(p.relative_to(data.parent).as_posix() for p in data.iterdir() if p.is_file())
    assert {"data/demo_corpus.txt.xz", "data/questions-words.txt.xz", "data/wordsim353.tsv",
            "data/simlex999.txt"} <= set(shipped)
    missing = [f for f in shipped if not any(fnmatch.fnmatch(f, pat) for pat in patterns)]
    assert missing == []
