"""parvec.capabilities: the table in its docstring says what CAPABILITIES holds, and refusals name the modes that
have the feature (so a mode that gains one, as the replicas gained mid-epoch checkpoints, changes every message)."""

from __future__ import annotations

import pytest

from parvec import capabilities
from parvec.capabilities import CAPABILITIES, check, refusal
from parvec.errors import ParvecError

COLUMNS = {"cbow": 2, "hs": 3, "mid_epoch_checkpoints": 4, "graphs": 5}


def _doc_rows() -> dict[str, list[str]]:
    rows = {}
    for line in capabilities.__doc__.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] in CAPABILITIES:
            rows[cells[0]] = cells
    return rows


def test_the_docstring_table_matches_the_capabilities():
    rows = _doc_rows()
    assert set(rows) == set(CAPABILITIES)
    for mode, cells in rows.items():
        for feature, col in COLUMNS.items():
            assert cells[col].startswith("yes") == getattr(CAPABILITIES[mode], feature), (mode, feature, cells[col])


def test_mid_epoch_checkpoints_refused_only_on_the_sharded_mode():
    for mode in ("cpu", "cuda", "replicas"):
        check(mode, mid_epoch_checkpoints=True)
    with pytest.raises(ParvecError) as err:
        check("sharded", mid_epoch_checkpoints=True)
    msg = str(err.value)
    assert msg == str(refusal("sharded", "mid_epoch_checkpoints"))
    assert "--checkpoint-every" in msg and "replicas" in msg and "GPU" in msg and "CPU" in msg
