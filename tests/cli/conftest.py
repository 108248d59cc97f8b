"""Fixtures of the CLI tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


@pytest.fixture()
def tiny_corpus(tmp_path: Path) -> Path:
    """600 lines of 12 words from two topics of 20 words: words of a topic co-occur, so vectors have something to
    learn."""
    rng = np.random.default_rng(0)
    a = [f"a{i}" for i in range(20)]
    b = [f"b{i}" for i in range(20)]
    lines = [" ".join(rng.choice(a if i % 2 else b, 12)) for i in range(600)]
    path = tmp_path / "tiny.txt"
    path.write_text("\n".join(lines) + "\n")
    return path
