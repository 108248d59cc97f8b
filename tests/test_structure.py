"""The shape of the source, checked from it: no import circle between parvec's modules; no function longer than 120
lines except the numba kernels and their factories; ``parvec.distributed`` cut by concern (no module over 700 lines,
no class over 300); the front-end classes (Word2Vec, Node2Vec) within 450 lines; no driver member probed with
getattr/hasattr; and no module using another parvec module's private (``_name``) names: imported, read off the
module, or called or read on an object whose class another module defines (the CLI's rules:
test_cli_structure.py; the corpus package's: test_corpus_structure.py)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "parvec"
MAX_FUNCTION_LINES = 120
DISTRIBUTED_MAX_FILE_LINES = 700
DISTRIBUTED_MAX_CLASS_LINES = 300


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, name: str) -> set[str]:
    """The parvec modules ``path`` imports anywhere (in functions too; not under ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for n in ast.walk(node)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("parvec")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            if base.startswith("parvec"):
                found.add(base)
                found |= {f"{base}.{a.name}" for a in node.names}  # `from parvec import model_io`
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path, name):
            while imported and imported not in modules:  # a name imported from a module: the module
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not name.startswith(imported + "."):
                targets.add(imported)  # a package's own __init__ imported by its modules is not a circle
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    # Tarjan's strongly connected components: every component of more than one module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_between_modules():
    assert _cycles(_graph()) == []


def test_the_circle_check_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _is_kernel(node: ast.AST, compiled: frozenset[str] = frozenset()) -> bool:
    # A numba function (njit, jit, cuda.jit; decorated, or named in ``compiled``: passed to one, as in
    # ``njit(parallel=True)(loop)``), or a factory that builds one (its body defines a decorated kernel).
    def decorated(n: ast.AST) -> bool:
        return isinstance(n, ast.FunctionDef) and (n.name in compiled or any("jit" in ast.unparse(d)
                                                                            for d in n.decorator_list))

    return decorated(node) or any(decorated(n) for n in ast.walk(node) if n is not node)


def _compiled_by_call(tree: ast.AST) -> frozenset[str]:
    """The functions of a module handed to a jit call: ``njit(...)(name)``, ``jit(name)``."""
    return frozenset(arg.id for c in ast.walk(tree) if isinstance(c, ast.Call) and "jit" in ast.unparse(c.func)
                     for arg in c.args if isinstance(arg, ast.Name))


def test_no_function_is_longer_than_120_lines_except_numba_kernels():
    long = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        compiled = _compiled_by_call(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not _is_kernel(node, compiled):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(SRC.parent)}: {node.name} has {n} lines")
    assert long == []


MAX_FRONT_END_LINES = 450  # Word2Vec and Node2Vec state what to run; the run layer (parvec.run) keeps it
FRONT_ENDS = {"word2vec.py": "Word2Vec", "graph/node2vec.py": "Node2Vec"}


def _class_lines(path: Path, name: str) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    return node.end_lineno - node.lineno + 1


def test_the_front_end_classes_stay_under_450_lines():
    sizes = {name: _class_lines(SRC / path, name) for path, name in FRONT_ENDS.items()}
    assert all(n <= MAX_FRONT_END_LINES for n in sizes.values()), sizes


# The run engine and the layers that hand it a driver reach the driver through the typed Driver protocol
# (parvec.engine.Driver, defaults in DriverBase), never by probing for a member; nor do the drivers probe their own
# members (every one is set in __init__, typed).
NO_DRIVER_PROBING = ["engine.py", "word2vec.py", "run.py", "drivers.py", "graph/node2vec.py", "trainer.py",
                     "gpu/driver.py", "distributed/__init__.py", "distributed/replicas.py", "distributed/sharded.py"]


def _is_probe(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
            and bool(node.args))


def _probes(path: Path, root: Path = SRC.parent) -> list[str]:
    """The getattr/hasattr calls of a module whose object is a driver (a name or attribute mentioning one, or
    ``self`` in a driver class: a class named ``...Driver`` or ``...Trainer``), and in engine.py every
    getattr/hasattr (it holds only the driver and its own state)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {id(node) for cls in ast.walk(tree)
           if isinstance(cls, ast.ClassDef) and cls.name.endswith(("Driver", "Trainer"))
           for node in ast.walk(cls) if _is_probe(node) and ast.unparse(node.args[0]) == "self"}
    found = []
    for node in ast.walk(tree):
        if _is_probe(node):
            target = ast.unparse(node.args[0])
            if (path.name == "engine.py" or id(node) in own
                    or any(w in target.lower() for w in ("driver", "trainer"))):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_driver_member_is_probed_with_getattr_or_hasattr():
    assert [p for f in NO_DRIVER_PROBING for p in _probes(SRC / f)] == []


def test_the_probing_check_finds_a_probe(tmp_path):
    for name, source, n in (("engine.py", "getattr(self, 'x', None), hasattr(ctx, 'y')", 2),
                            ("word2vec.py", "getattr(driver, 'report', None), getattr(cb, 'on_epoch_end', None)", 1)):
        (tmp_path / name).write_text(f"def f(self, ctx, driver, cb):\n    return {source}\n")
        assert len(_probes(tmp_path / name, tmp_path)) == n
    # a driver's own member, not another class's
    (tmp_path / "replicas.py").write_text("class ReplicaDriver:\n    def finish(self):\n"
                                          "        return hasattr(self, '_t0')\n"
                                          "class Plan:\n    def f(self):\n        return getattr(self, 'x', 0)\n")
    assert len(_probes(tmp_path / "replicas.py", tmp_path)) == 1


def test_no_distributed_module_is_over_700_lines_and_no_class_there_over_300():
    big, long = [], []
    for path in sorted((SRC / "distributed").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > DISTRIBUTED_MAX_FILE_LINES:
            big.append(f"{path.name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > DISTRIBUTED_MAX_CLASS_LINES:
                long.append(f"{path.name}: class {node.name} has {node.end_lineno - node.lineno + 1} lines")
    assert big == [] and long == []


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_definitions(tree: ast.AST) -> set[str]:
    """The private names a module defines: its functions, classes, methods, variables and attributes (assigned,
    or named in a string: ``setattr(self, "_x", ...)``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return {n for n in names if _is_private(n)}


def _parvec_module_aliases(tree: ast.AST, modules: set[str]) -> set[str]:
    """The names under which a module holds another parvec module (``import parvec.x as y``,
    ``from parvec import trainer``)."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.asname and a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("parvec"):
            aliases |= {a.asname or a.name for a in node.names if f"{node.module}.{a.name}" in modules}
    return aliases


def _private_uses(sources: dict[str, str]) -> list[str]:
    """Where a module uses a private name of another parvec module (``sources``: module name -> source)."""
    trees = {name: ast.parse(text) for name, text in sources.items()}
    defined = {name: _private_definitions(tree) for name, tree in trees.items()}
    modules = set(sources)
    found: list[tuple[str, int, str]] = []
    for name, tree in trees.items():
        elsewhere = set().union(*(d for other, d in defined.items() if other != name)) - defined[name]
        aliases = _parvec_module_aliases(tree, modules)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in modules and node.module != name:
                found += [(name, node.lineno, f"imports {node.module}.{a.name}") for a in node.names
                          if _is_private(a.name)]
            elif isinstance(node, ast.Attribute) and _is_private(node.attr):
                on_module = isinstance(node.value, ast.Name) and node.value.id in aliases
                if on_module or node.attr in elsewhere:
                    found.append((name, node.lineno, f"uses {ast.unparse(node)}"))
    return [f"{name}:{line} {what}" for name, line, what in sorted(found)]


def test_no_module_uses_another_modules_private_names():
    sources = {_module_name(p): p.read_text(encoding="utf-8") for p in sorted(SRC.rglob("*.py"))}
    assert _private_uses(sources) == []


def test_the_private_name_check_finds_imports_calls_and_attributes():
    sources = {
        "parvec.a": "def _helper():\n    pass\n\nclass Run:\n    def __init__(self):\n        self._state = 1\n",
        "parvec.b": ("from parvec import a\nfrom parvec.a import _helper\n\ndef go(run):\n    a._helper()\n"
                     "    return run._state\n"),
        "parvec.c": "class Own:\n    def __init__(self):\n        self._state = 2\n\ndef go(x):\n    return x._state\n",
    }
    assert _private_uses(sources) == ["parvec.b:2 imports parvec.a._helper", "parvec.b:5 uses a._helper",
                                      "parvec.b:6 uses run._state"]


# ---------------------------------------------------------------------- the tests' own layout (tests/conftest.py)
TESTS = SRC.parents[1] / "tests"


def _misplaced_tests(tests: Path, packages: set[str]) -> list[str]:
    """Test files outside tests/ itself and its folders named after a package of parvec (or benchmarks/), and
    test file names used twice."""
    files = sorted(tests.rglob("test_*.py"))
    where = [str(f.relative_to(tests)) for f in files if f.parent != tests
             and (f.parent.parent != tests or f.parent.name not in packages)]
    seen: dict[str, list[str]] = {}
    for f in files:
        seen.setdefault(f.name, []).append(str(f.relative_to(tests)))
    return where + [" and ".join(paths) for paths in seen.values() if len(paths) > 1]


def _test_module_imports(tests: Path) -> list[str]:
    """The imports of a test module (``import test_x``, ``from test_x import ...``) in any file under tests/."""
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(tests)}:{node.lineno} imports {n}" for n in names
                      if n.split(".")[0].startswith("test_")]
    return found


def test_test_files_mirror_the_source_and_have_unique_names():
    packages = {p.parent.name for p in SRC.glob("*/__init__.py")} | {"benchmarks"}
    assert {"cli", "corpus", "kernels", "graph", "distributed", "gpu"} <= packages
    assert _misplaced_tests(TESTS, packages) == []


def test_no_test_file_imports_another():
    assert _test_module_imports(TESTS) == []


def test_the_layout_checks_find_a_misplaced_file_a_repeated_name_and_a_test_import(tmp_path):
    for name in ("test_a.py", "cli/test_b.py", "corpus/test_a.py", "misc/test_c.py", "cli/deep/test_d.py",
                 "cli/helper.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    (tmp_path / "cli" / "test_b.py").write_text("import os\nfrom test_a import x\n", encoding="utf-8")
    (tmp_path / "cli" / "helper.py").write_text("import test_c\n", encoding="utf-8")
    assert _misplaced_tests(tmp_path, {"cli", "corpus"}) == ["cli/deep/test_d.py", "misc/test_c.py",
                                                             "corpus/test_a.py and test_a.py"]
    assert _test_module_imports(tmp_path) == ["cli/helper.py:1 imports test_c", "cli/test_b.py:2 imports test_a"]
