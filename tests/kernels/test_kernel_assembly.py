"""The CPU kernels compile with one set of fast-math flags, without approximate reciprocals or functions.

``fastmath=True`` (or any set with ``arcp`` or ``afn``) lets LLVM compile a float division to ``rcpps``/``vrcp14ps``
and a Newton step, whose bits differ between Intel and AMD.  The assembly itself is scanned in the golden run
(``tests/test_golden.py``, through ``asm_probe.py``), for x86-64's baseline; this test checks the source, so a new
kernel cannot bring the flags back for a host-tuned build either.
"""

from __future__ import annotations

import ast
from pathlib import Path

from parvec.kernels.fastmath import FASTMATH

SRC = Path(__file__).resolve().parents[2] / "src" / "parvec"
NJIT = ("njit", "numba.njit", "nb.njit", "jit", "numba.jit", "nb.jit")


def _fastmath_values() -> list[tuple[str, int, str]]:
    # every fastmath= keyword of a CPU numba decorator in src/parvec, as its source text
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in NJIT:
                found += [(str(path.relative_to(SRC)), node.lineno, ast.unparse(k.value))
                          for k in node.keywords if k.arg == "fastmath"]
    return found


def test_cpu_kernels_take_their_fast_math_flags_from_one_place() -> None:
    values = _fastmath_values()
    assert len(values) > 40, values  # the scan sees the kernels' decorators
    allowed = {"FASTMATH", "{'nnan', 'ninf', 'nsz'}"}
    assert [v for v in values if v[2] not in allowed] == []


def test_the_flags_allow_no_reciprocal_or_function_estimates() -> None:
    assert not FASTMATH & {"fast", "arcp", "afn"}
    assert {"nnan", "ninf", "nsz", "reassoc", "contract"} <= FASTMATH  # what lets LLVM vectorise the kernels
