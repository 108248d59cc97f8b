"""Shared fixtures: a temporary parvec cache for the whole session, where the shared data lives, and small
real corpora.

Where a test goes: tests/ mirrors src/parvec.  A test of a package ``parvec/PKG/`` goes in ``tests/PKG/``
(cli, corpus, kernels, graph, distributed, gpu), a test of a top-level module (``parvec/MODULE.py``) or of the
whole package stays in tests/ itself, and a test of a benchmarks/ script goes in ``tests/benchmarks/``; a test that
starts or uses Ray goes in tests/distributed/ (or carries the ``ray`` mark).  A file is named ``test_TOPIC.py``,
its name unique in the whole tree (pytest imports each test file by its bare name).  What several test files share
is a helper module, imported by name and never from a test file: the ones every folder uses here in tests/
(``cli_run.py``, ``related_words.py``, ...; this file puts tests/ on ``sys.path``), one folder's beside its tests
(``tests/distributed/topic_corpus.py``).  A folder has a conftest.py only for fixtures of its own (the session's
Ray, the GPU simulator's subprocess).  tests/test_structure.py checks the names and the imports."""

from __future__ import annotations

import lzma
import os
from collections.abc import Iterator
from pathlib import Path

# The suite runs in three workers on CI's two cores (pytest -n 3: the worker that runs the session-Ray unit mostly
# waits on Ray's calls): numba's OpenMP threads wait for work asleep, not spinning, so that a parallel region in one
# worker does not burn the core another worker needs.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
from shared_files import REQUIRE_SHARED, SHARED_DATA, shared_skip_reason

REPO = Path(__file__).resolve().parents[1]
DEMO_CORPUS = REPO / "src" / "parvec" / "data" / "demo_corpus.txt.xz"


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown (and unused) without the plugin
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``pytest -n N --dist loadfile`` (pytest-xdist) keeps every test file whole in one worker, so that a file's
    module and session fixtures are built once; here, in addition, every file of ``tests/distributed`` that uses
    the session's local Ray (the ``ray_session`` fixture) joins one unit: those tests run one after the other in
    one worker, on that worker's one local Ray.  The cluster tests that start Ray only in the ``parvec``
    processes they run (signals, kills, the console) go file by file like the rest.  Other ``--dist`` modes are
    xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    uses_session_ray: dict[str, bool] = {}

    def session_ray(path: str) -> bool:
        if path not in uses_session_ray:
            uses_session_ray[path] = "ray_session" in (Path(str(config.rootpath)) / path).read_text("utf-8")
        return uses_session_ray[path]

    class SessionRayTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/distributed" if path.startswith("tests/distributed/") and session_ray(path) else path

    return SessionRayTestsTogether(config, log)


@pytest.fixture(scope="session", autouse=True)
def temporary_parvec_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Keep every test (and every process a test starts) off the real ``~/.cache/parvec``: the encoded-corpus
    cache of ``parvec train`` goes to ``$PARVEC_CACHE_DIR``, here a temporary directory, and
    ``$XDG_CACHE_HOME`` (the fallback) points into one too."""
    base = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("PARVEC_CACHE_DIR", str(base / "parvec"))
        m.setenv("XDG_CACHE_HOME", str(base / "xdg"))
        yield base / "parvec"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder (../shared/data beside the checkout); skips when absent, saying where it comes from
    (fails instead with ``$PARVEC_REQUIRE_SHARED_DATA`` set)."""
    if not SHARED_DATA.is_dir():
        if REQUIRE_SHARED:
            pytest.fail(f"$PARVEC_REQUIRE_SHARED_DATA is set but {SHARED_DATA} is absent")
        pytest.skip(shared_skip_reason(SHARED_DATA))
    return SHARED_DATA


@pytest.fixture(scope="session")
def demo_tokens() -> list[str]:
    """The shipped demo corpus as a token list (2M tokens of English Wikipedia)."""
    with lzma.open(DEMO_CORPUS, "rt", encoding="utf-8") as f:
        return f.read().split()


@pytest.fixture(scope="session")
def demo_slice(tmp_path_factory: pytest.TempPathFactory, demo_tokens: list[str]) -> Path:
    """The first 500k demo tokens, 1000 words a line: a small real corpus file."""
    path = tmp_path_factory.mktemp("corpus") / "slice.txt"
    words = demo_tokens[:500_000]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(0, len(words), 1000):
            f.write(" ".join(words[i : i + 1000]) + "\n")
    return path
