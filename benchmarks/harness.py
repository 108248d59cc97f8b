"""What every benchmark script shares: where the checkout and the data are, corpus preparation and slicing, the
runner of measurement subprocesses, the machine's description and the JSON every script writes.

A script imports it as a plain module (``import harness``): ``python benchmarks/bench_x.py`` puts the script's
own directory first on ``sys.path``.  Importing it also makes ``import parvec`` find this checkout's ``src/``
(the benchmarks measure the code beside them, not whatever parvec is installed), and :func:`child_env` gives
measurement subprocesses the same.

Every ``--out`` JSON is :func:`write_json`'s: the script's own keys (``runs``, ``table``, ...) beside a header
that names the machine, so no figure is ever quoted without it::

    {"schema": "parvec-benchmark/1", "benchmark": "bench_words", "command": "benchmarks/bench_words.py --out ...",
     "recorded_at": "2026-11-27T14:00:00+00:00", "parvec": {"version": "0.1.0", "commit": "d337dcb"},
     "machine": {"cpu_model": "AMD EPYC 9R14 96-Core Processor", "logical_cpus": 2, "isa": ["avx2", ...],
                 "isa_level": "AVX-512", "gpus": [], ...},
     "load_average": [1.0, 0.9, 0.8], ...the script's keys...}
"""

from __future__ import annotations

import datetime
import functools
import json
import lzma
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
if str(SRC) not in sys.path:  # the one place the benchmarks point `import parvec` at this checkout
    sys.path.insert(0, str(SRC))
SHARED_DATA = REPO.parent / "shared" / "data"
DEFAULT_CORPUS = SHARED_DATA / "corpus" / "enwiki2015_text8style_100M.txt.xz"
DEMO_CORPUS = SRC / "parvec" / "data" / "demo_corpus.txt.xz"
SCHEMA = "parvec-benchmark/1"
HEADER_KEYS = ("schema", "benchmark", "command", "recorded_at", "parvec", "machine", "load_average")
# The instruction-set extensions a numerical kernel's speed depends on, as lscpu/cpuinfo name them.
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl",
             "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "asimd", "sve", "sve2")


# ------------------------------------------------------------------------------------------------ corpora
def corpus_or_demo(corpus: Path | None = None) -> Path:
    """``corpus`` if given, else the shared corpus when it is there, else the demo corpus parvec ships.

    Example:
        >>> corpus_or_demo(Path("x.txt")).name
        'x.txt'
    """
    if corpus is not None:
        return corpus
    return DEFAULT_CORPUS if DEFAULT_CORPUS.exists() else DEMO_CORPUS


def prepare_corpus(xz_path: Path, work: Path, line_tokens: int = 10000) -> Path:
    """The whole corpus decompressed once under ``work`` into lines of ``line_tokens`` tokens (gensim's
    ``corpus_file`` mode needs lines of at most 10,000).

    Example:
        >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "c.txt").write_text("a b c d e")
        9
        >>> prepare_corpus(d / "c.txt", d / "w", line_tokens=2).read_text()
        'a b\\nc d\\ne\\n'
    """
    work.mkdir(parents=True, exist_ok=True)
    out = work / f"{xz_path.name.removesuffix('.xz')}.{line_tokens}.txt"
    if out.exists():
        return out
    with lzma.open(xz_path, "rt", encoding="utf-8") if xz_path.suffix == ".xz" else open(xz_path) as f:
        words = f.read().split()
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for i in range(0, len(words), line_tokens):
            f.write(" ".join(words[i : i + line_tokens]) + "\n")
    os.replace(tmp, out)
    return out


def slice_corpus(source: Path, tokens: int, work: Path, line_tokens: int = 1000) -> Path:
    """The first ``tokens`` tokens of ``source`` (xz or text), ``line_tokens`` a line, written once under
    ``work`` (read in 4 MiB blocks until there are enough; a word cut at a block's end is rare: a slice, not a
    reproduction).

    Example:
        >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "c.txt").write_text("a b c d e")
        9
        >>> slice_corpus(d / "c.txt", 3, d, line_tokens=2).read_text()
        'a b\\nc\\n'
    """
    work.mkdir(parents=True, exist_ok=True)
    out = work / f"{source.name.removesuffix('.xz')}.{tokens}.{line_tokens}.txt"
    if out.exists():
        return out
    opener = lzma.open if source.suffix == ".xz" else open
    words: list[str] = []
    with opener(source, "rt", encoding="utf-8") as f:
        while len(words) < tokens:
            block = f.read(1 << 22)
            if not block:
                break
            words.extend(block.split())
    words = words[:tokens]
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for i in range(0, len(words), line_tokens):
            f.write(" ".join(words[i : i + line_tokens]) + "\n")
    os.replace(tmp, out)
    return out


# ------------------------------------------------------------------------------------------------ the runner
def child_env(src: Path = SRC, **extra: str) -> dict[str, str]:
    """The environment of a measurement subprocess: this one's, ``parvec`` from ``src`` (this checkout's by
    default), Ray's usage reporting off, and ``extra``.

    Example:
        >>> env = child_env(PYTHONHASHSEED="0"); env["PYTHONPATH"] == str(SRC), env["PYTHONHASHSEED"]
        (True, '0')
    """
    return dict(os.environ, PYTHONPATH=str(src), RAY_USAGE_STATS_ENABLED="0", **extra)


def run_child(cmd: list[str], what: str, env: dict[str, str] | None = None, prefix: str = "",
              timeout: float | None = None, cwd: Path | None = None) -> dict[str, Any]:
    """Run one measurement in its own process and return the JSON it printed: its last stdout line, or with
    ``prefix`` the last line starting with it.  A failure raises ``RuntimeError`` naming ``what``, with the
    end of its stderr.

    Example:
        >>> run_child([sys.executable, "-c", "print('x'); print('{\\"a\\": 1}')"], "demo")
        {'a': 1}
    """
    out = subprocess.run(cmd, capture_output=True, text=True, env=child_env() if env is None else env,
                         timeout=timeout, cwd=cwd)
    lines = [ln for ln in out.stdout.strip().splitlines() if ln.startswith(prefix)]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{what} failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(lines[-1][len(prefix):])


# ------------------------------------------------------------------------------------------------ the machine
def _lscpu() -> dict[str, str]:
    """``lscpu``'s fields (empty where it is missing)."""
    if shutil.which("lscpu") is None:
        return {}
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10,
                              env=dict(os.environ, LC_ALL="C")).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in text.splitlines()) if v}


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where unreadable)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.split("\n\n")[0].splitlines():
        k, _, v = line.partition(":")
        fields.setdefault(k.strip(), v.strip())
    return fields


def isa_level(flags: list[str]) -> str:
    """The widest x86 vector extension among ``flags`` (or ``"-"``).

    Example:
        >>> isa_level(["sse4_2", "avx", "avx2", "fma"]), isa_level(["avx2", "avx512f"]), isa_level([])
        ('AVX2', 'AVX-512', '-')
    """
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse4_2", "SSE4.2"),
                       ("sve", "SVE"), ("asimd", "NEON")):
        if flag in flags:
            return name
    return "-"


def gpus() -> list[dict[str, str]]:
    """The NVIDIA GPUs ``nvidia-smi`` lists (name, memory, driver), or ``[]`` where there is none.

    Example:
        >>> isinstance(gpus(), list)
        True
    """
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    found = []
    for line in out.stdout.splitlines() if out.returncode == 0 else []:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            found.append({"name": parts[0], "memory": parts[1], "driver": parts[2]})
    return found


def machine() -> dict[str, Any]:
    """This machine, as every benchmark JSON names it (a copy of what :func:`_machine` found once): the CPU model,
    family and model numbers and its ISA extensions (``lscpu``, else /proc/cpuinfo), the logical CPUs and those
    this process may use, memory, the GPUs (``nvidia-smi``), the OS and the versions of Python, numpy and numba.

    Example:
        >>> m = machine(); sorted(k for k in m if k in ("cpu_model", "gpus", "isa", "logical_cpus"))
        ['cpu_model', 'gpus', 'isa', 'logical_cpus']
    """
    return json.loads(json.dumps(_machine()))


@functools.cache
def _machine() -> dict[str, Any]:
    lscpu, cpuinfo = _lscpu(), _cpuinfo()
    flags = (lscpu.get("Flags") or cpuinfo.get("flags") or cpuinfo.get("Features") or "").split()
    facts: dict[str, Any] = {
        "cpu_model": lscpu.get("Model name") or cpuinfo.get("model name") or platform.processor() or "?",
        "architecture": platform.machine(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "isa_level": isa_level(flags),
        "isa": [f for f in ISA_FLAGS if f in flags],
        "gpus": gpus(),
        "os": platform.platform(),
        "python": platform.python_version(),
    }
    for key in ("Vendor ID", "CPU family", "Model", "Thread(s) per core", "Core(s) per socket", "Socket(s)",
                "L2 cache", "L3 cache", "Hypervisor vendor"):
        if key in lscpu:
            facts[key.lower().replace("(s)", "s").replace(" ", "_")] = lscpu[key]
    try:
        facts["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    for name in ("numpy", "numba"):
        try:
            facts[name] = __import__(name).__version__
        except ImportError:
            pass
    return facts


def cpu_model() -> str:
    """The CPU's model name (``lscpu``'s, else /proc/cpuinfo's; ``?`` when neither says).

    Example:
        >>> isinstance(cpu_model(), str)
        True
    """
    return machine()["cpu_model"]


def machine_line(m: dict[str, Any]) -> str:
    """One line naming a :func:`machine`: CPU (with its family and model numbers where lscpu gives them), logical
    CPUs, ISA, GPUs.

    Example:
        >>> machine_line({"cpu_model": "AMD EPYC", "cpu_family": "25", "model": "17", "logical_cpus": 2,
        ...               "isa_level": "AVX-512", "gpus": []})
        'AMD EPYC (family 25 model 17), 2 logical CPUs, AVX-512; no GPU'
        >>> machine_line({"cpu_model": "Xeon", "logical_cpus": 16, "isa_level": "AVX2",
        ...               "gpus": [{"name": "NVIDIA H200", "memory": "143771 MiB", "driver": "570"}]})
        'Xeon, 16 logical CPUs, AVX2; GPU: NVIDIA H200 (143771 MiB)'
    """
    gpu = "; ".join(f"{g['name']} ({g['memory']})" for g in m.get("gpus", []))
    family = f" (family {m['cpu_family']} model {m['model']})" if m.get("cpu_family") and m.get("model") else ""
    return (f"{m.get('cpu_model', '?')}{family}, {m.get('logical_cpus', '?')} logical CPUs, "
            f"{m.get('isa_level', '-')}; " + (f"GPU: {gpu}" if gpu else "no GPU"))


# ------------------------------------------------------------------------------------------------ the output
def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def header(benchmark: str, argv: list[str] | None = None) -> dict[str, Any]:
    """The keys every benchmark JSON starts with (:data:`HEADER_KEYS`).

    Example:
        >>> h = header("bench_demo", ["benchmarks/bench_demo.py", "--rounds", "1"])
        >>> h["schema"], h["benchmark"], h["command"], "cpu_model" in h["machine"]
        ('parvec-benchmark/1', 'bench_demo', 'benchmarks/bench_demo.py --rounds 1', True)
    """
    import parvec

    return {"schema": SCHEMA, "benchmark": benchmark, "command": " ".join(sys.argv if argv is None else argv),
            "recorded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "parvec": {"version": parvec.__version__, "commit": _commit()}, "machine": machine(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


def with_header(benchmark: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` (the script's own keys) after the :func:`header`; a payload key may not reuse a header key.

    Example:
        >>> d = with_header("bench_demo", {"runs": [], "table": "| a |"})
        >>> list(d)[:2], d["runs"], d["table"]
        (['schema', 'benchmark'], [], '| a |')
    """
    clash = sorted(set(payload) & set(HEADER_KEYS))
    if clash:
        raise ValueError(f"{benchmark}: the JSON's own keys {clash} are header keys")
    return header(benchmark) | payload


def write_json(path: Path | str, benchmark: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` with the header naming the machine, atomically (a temporary file renamed into place, so
    a script that rewrites its JSON after every run never leaves half a file); the parent directory is made.

    Example:
        >>> import tempfile; p = Path(tempfile.mkdtemp()) / "out" / "b.json"
        >>> data = json.loads(write_json(p, "bench_demo", {"runs": [1]}).read_text())
        >>> data["benchmark"], data["runs"], "machine" in data
        ('bench_demo', [1], True)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(with_header(benchmark, payload), indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)
    return path
