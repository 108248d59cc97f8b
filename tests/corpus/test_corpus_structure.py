"""Where the corpus and file I/O code lives: no module imports another module's private
(``_name``) names; the modules of ``parvec.corpus`` import each other, never the package itself (so no import
circle runs through it); general file I/O lives in ``parvec.fileio`` and ``parvec.formats`` keeps the
word-vector formats, defining none of it."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "parvec"


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path: Path) -> str:
    parts = ("parvec",) + path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for path in _modules():
        own = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("parvec"):
                if node.module == own:
                    continue
                offenders += [f"src/parvec/{path.relative_to(SRC)}:{node.lineno} imports {node.module}.{a.name}"
                              for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert offenders == []


def test_the_corpus_modules_do_not_import_their_package():
    for path in sorted((SRC / "corpus").glob("*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "parvec.corpus", f"{path.name}:{node.lineno}"
            elif isinstance(node, ast.Import):
                assert "parvec.corpus" not in [a.name for a in node.names], f"{path.name}:{node.lineno}"


def test_formats_defines_no_general_file_io():
    from parvec import fileio

    tree = ast.parse((SRC / "formats.py").read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert defined & set(fileio.__all__) == set()
    assert set(fileio.__all__) <= set(dir(fileio))
