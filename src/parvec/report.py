"""Pictures of a run: ``parvec report RUN.json [RUN2.json ...] -o report.html``.

Reads the JSON that ``parvec train --report`` (and ``parvec node2vec --report``) writes, or a benchmark's
``--out`` JSON, and draws with matplotlib:

- loss and learning rate over words trained (one line per run; the loss of each window of chunks, and
  each epoch's mean loss as a marker);
- words/s over time, several runs overlaid (compare algorithms or thread counts);
- quality per epoch (WS-353, SimLex-999, analogy) for runs made with ``--eval-every-epoch``;
- a 2-D PCA projection (scikit-learn) of chosen words' vectors (``--words``) or of the most frequent ones,
  read from the run's output vectors (or ``--vectors``);
- for graph runs with labels, micro- and macro-F1 against the training fraction;
- for a benchmark's JSON, words/s per system and thread count as bars, quality beside;
- a table of every run's parameters.

The HTML file is self-contained (images embedded as base64 PNG); the same PNGs are written beside it in
``<name>_files/``.  Every file is written to a temporary name and renamed into place.

Example:
    >>> paths = write_report(["run.json"], "report.html")  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from parvec.errors import ParvecError
from parvec.runlog import EpochRecord, Sample

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

SCORE_TITLES = {"ws353": "WS-353 (Spearman)", "simlex": "SimLex-999 (Spearman)", "analogy": "Google analogy (3CosAdd)",
                "micro_f1": "Node classification micro-F1 (50% train)",
                "macro_f1": "Node classification macro-F1 (50% train)"}


@dataclass
class Run:
    """One report JSON as read: its label, kind (``words``, ``graph`` or ``benchmark``) and data (the JSON as it is,
    for the table of parameters), with its time series and epoch records read into :class:`parvec.runlog.Sample`
    and :class:`parvec.runlog.EpochRecord` (an entry that is not one left out).

    Example:
        >>> run = Run(Path("r.json"), "r", "words", {"timeline": [{"t": 0.0, "words": 0, "lr": 0.025}, "junk"]})
        >>> [s.lr for s in run.timeline], run.epochs
        ([0.025], [])
    """

    path: Path
    label: str
    kind: str
    data: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    timeline: list[Sample] = field(init=False)
    epochs: list[EpochRecord] = field(init=False)

    def __post_init__(self) -> None:
        samples, log = self.data.get("timeline"), self.data.get("epoch_log")
        self.timeline = [s for s in (Sample.from_json(d) for d in _objects(samples)) if s is not None]
        self.epochs = [e for e in (EpochRecord.from_json(d) for d in _objects(log)) if e is not None]


def _objects(entries: object) -> list[dict[str, object]]:
    # The JSON objects of a list read from a report (anything else in it, or no list, is left out).
    return [d for d in entries if isinstance(d, dict)] if isinstance(entries, list) else []


def _label(data: dict[str, Any], path: Path) -> str:
    p = data.get("parameters") or {}
    if not p:
        return path.stem
    cluster = data.get("cluster")
    # Threads: a cluster run's per actor (what each replica or client ran), else the process's.
    per_actor = ((cluster.get("threads_per_actor") if isinstance(cluster, dict) else None)
                 or data.get("threads_per_replica") or data.get("client_threads"))
    bits = [str(p.get("algo", "")), f"{per_actor or p.get('threads', '?')}t", f"d{p.get('dim', '?')}"]
    if isinstance(cluster, dict) and cluster.get("mode"):
        # How many replicas or shards: the cluster block's (as run), else the report's top level (the sharded
        # driver's figures; older reports recorded the Cluster as given, where a default was None).
        key = "shards" if cluster["mode"] == "sharded" else "replicas"
        n = cluster.get(key) or data.get(key)
        bits.append(f"{cluster['mode']}×{n if n else '?'}")
    if data.get("device") and data.get("device") != "cpu":
        bits.append(str(data["device"]))
    return " ".join(b for b in bits if b)


def read_run(path: str | os.PathLike[str]) -> Run:
    """Read one report or benchmark JSON; a :class:`ParvecError` names the file and what is wrong.

    Example:
        >>> read_run("run.json").kind  # doctest: +SKIP
        'words'
    """
    p = Path(path)
    if not p.is_file():
        raise ParvecError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ParvecError(f"{p}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise ParvecError(f"{p}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ParvecError(f"{p}: not a parvec report (expected a JSON object)")
    if isinstance(data.get("runs"), list):
        return Run(p, p.stem, "benchmark", data)
    if "parameters" not in data and "timeline" not in data and "epoch_log" not in data:
        raise ParvecError(
            f"{p}: not a parvec run report (no parameters, timeline or epochs); write one with "
            "`parvec train ... --report RUN.json`"
        )
    kind = str(data.get("kind") or "words")
    run = Run(p, _label(data, p), kind, data)
    if not run.timeline and not run.epochs:
        run.notes.append(f"{p.name}: no time series (written by an older parvec?): only the table is drawn")
    return run


# ---------------------------------------------------------------------- figures
def _plt() -> ModuleType:  # matplotlib.pyplot, imported when a figure is drawn
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return buf.getvalue()


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=10, color="#555555",
            wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


def loss_steps(timeline: Sequence[Sample]) -> tuple[list[float], list[float]]:
    """The loss of a run's time series as steps: ``(edges, losses)``, the loss of sample i covering the words from
    sample i-1's to its own (NaN where it has none); the first sample with a loss starts at word 0 when the series
    has no sample before it.

    Example:
        >>> samples = [Sample.from_json({"words": 0}), Sample.from_json({"words": 100, "loss": 4.0}),
        ...            Sample.from_json({"words": 300, "loss": 3.0})]
        >>> loss_steps([s for s in samples if s is not None])
        ([0.0, 100.0, 300.0], [4.0, 3.0])
    """
    if not timeline:
        return [0.0], []
    first = timeline[0]
    edges = [float(first.words) if first.loss is None else 0.0]
    losses: list[float] = []
    for s in timeline[1:] if first.loss is None else timeline:
        edges.append(float(s.words))
        losses.append(math.nan if s.loss is None else float(s.loss))
    return edges, losses


def figure_loss_lr(runs: Sequence[Run]) -> bytes:
    """Loss (per window of chunks, and per epoch as markers) and learning rate over words trained."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax2 = ax.twinx()
    drawn = False
    for i, run in enumerate(runs):
        color = f"C{i % 10}"
        edges, losses = loss_steps(run.timeline)
        if any(math.isfinite(v) for v in losses):
            # Each sample's loss is the mean over the words since the previous one: a step over that span, so the
            # curve starts where training started, not one sampling interval in.
            ax.stairs(losses, edges, color=color, lw=1.4, label=f"{run.label} loss", baseline=None)
            drawn = True
        words, ends = 0, []
        for e in run.epochs:
            words += e.words
            if e.loss is not None:
                ends.append((words, e.loss))
        if ends:
            ax.plot(*zip(*ends, strict=True), "o", color=color, ms=5, label=f"{run.label} epoch mean")
            drawn = True
        lr = [(s.words, s.lr) for s in run.timeline if s.lr is not None]
        if lr:
            ax2.plot(*zip(*lr, strict=True), color=color, lw=1, ls="--", alpha=0.7)
    if not drawn:
        _empty(ax, "no finite loss recorded (run with the loss on, and --report)")
    ax.set_xlabel("words trained")
    ax.set_ylabel("SGNS loss per positive pair")
    ax2.set_ylabel("learning rate (dashed)")
    ax.set_title("Loss and learning rate")
    if drawn:
        ax.legend(fontsize=8, loc="upper right")
    ax.grid(alpha=0.3)
    return _png(fig)


def figure_throughput(runs: Sequence[Run]) -> bytes:
    """Words/s over training time, one line per run."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    drawn = False
    for i, run in enumerate(runs):
        pts = [(s.t, s.words_per_sec / 1e6) for s in run.timeline if s.words_per_sec is not None]
        if pts:
            ax.plot(*zip(*pts, strict=True), marker=".", color=f"C{i % 10}", label=run.label)
            drawn = True
    if drawn:
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    else:
        _empty(ax, "no throughput samples (the run was shorter than one sampling interval)")
    ax.set_xlabel("seconds of training")
    ax.set_ylabel("M words/s")
    ax.set_title("Throughput")
    ax.grid(alpha=0.3)
    return _png(fig)


def figure_quality(runs: Sequence[Run]) -> bytes:
    """The scores recorded after each epoch: WS-353, SimLex-999 and analogy for words, F1 for graphs."""
    names: list[str] = []
    for run in runs:
        for e in run.epochs:
            for k in e.scores or {}:
                if k not in names:
                    names.append(k)
    if not names:
        names = ["micro_f1", "macro_f1"] if all(r.kind == "graph" for r in runs) else ["ws353", "simlex", "analogy"]
    plt = _plt()
    fig, axes = plt.subplots(1, len(names), figsize=(3.7 * len(names), 3.8), layout="constrained", squeeze=False)
    axes = axes[0]
    any_scores = False
    for name, ax in zip(names, axes, strict=True):
        drawn = False
        for i, run in enumerate(runs):
            pts = [(e.epoch, score) for e in run.epochs if (score := (e.scores or {}).get(name)) is not None]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", color=f"C{i % 10}", label=run.label)
                drawn = True
        if drawn:
            any_scores = True
            ax.set_xlabel("epoch")
            ax.grid(alpha=0.3)
            ax.xaxis.get_major_locator().set_params(integer=True)
        else:
            _empty(ax, "no scores")
        ax.set_title(SCORE_TITLES.get(name, name), fontsize=10)
    if any_scores:
        axes[0].legend(fontsize=8)
    fig.suptitle("Quality per epoch" + ("" if any_scores else " (train with --eval-every-epoch to record it)"))
    return _png(fig)


# Where a label may go around its point, in points: right, left, above, below, then the diagonals further out.
_LABEL_SPOTS = [(dx, dy, ha) for r in (1.0, 2.0, 3.5) for dx, dy, ha in (
    (4 * r, 2, "left"), (-4 * r, 2, "right"), (0, 5 * r, "center"), (0, -11 * r, "center"),
    (4 * r, 5 * r, "left"), (-4 * r, 5 * r, "right"), (4 * r, -10 * r, "left"), (-4 * r, -10 * r, "right"))]


def place_labels(ax: Any, xy: Any, words: Sequence[str], fontsize: float = 8) -> tuple[list[Any], list[str]]:
    """Label the points ``xy`` (data coordinates) of ``ax`` with ``words``, in order, each at the first spot around
    its point (:data:`_LABEL_SPOTS`) where it overlaps no label placed before, no point and stays in the axes; a
    word with no free spot is left out.  Returns the labels drawn (matplotlib ``Annotation``) and the words left
    out.

    Example:
        >>> texts, left_out = place_labels(ax, xy, ["king", "queen"])  # doctest: +SKIP
    """
    fig = ax.figure
    fig.canvas.draw()  # the transforms and a renderer, for the labels' extents
    renderer = fig.canvas.get_renderer()
    from matplotlib.transforms import Bbox

    points = ax.transData.transform(xy)
    pad = fig.dpi / 72 * 3  # a point's marker, in pixels
    taken = [Bbox.from_extents(x - pad, y - pad, x + pad, y + pad) for x, y in points]
    area = ax.get_window_extent(renderer)
    placed, left_out = [], []
    for (px, py), word in zip(xy, words, strict=True):
        text = ax.annotate(word, (px, py), xytext=(0, 0), textcoords="offset points", fontsize=fontsize)
        for dx, dy, ha in _LABEL_SPOTS:
            text.set_position((dx, dy))
            text.set_horizontalalignment(ha)
            box = text.get_window_extent(renderer)
            inside = area.x0 <= box.x0 and box.x1 <= area.x1 and area.y0 <= box.y0 and box.y1 <= area.y1
            if inside and not any(box.overlaps(other) for other in taken):
                taken.append(box)
                if abs(dx) > 4 or abs(dy) > 11:  # away from its point: a thin line leads to it
                    text.remove()
                    text = ax.annotate(word, (px, py), xytext=(dx, dy), textcoords="offset points", ha=ha,
                                       fontsize=fontsize, arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.6",
                                                                      "shrinkA": 0, "shrinkB": 2})
                placed.append(text)
                break
        else:
            text.remove()
            left_out.append(word)
    return placed, left_out


def figure_projection(vectors: Any, words: Sequence[str] | None, top: int = 40) -> tuple[bytes, list[str]]:
    """A 2-D PCA projection of ``words`` (or the ``top`` most frequent) and the words not found.

    ``vectors`` is a :class:`~parvec.keyedvectors.KeyedVectors`; its rows are in frequency order.  The labels are
    placed so that none overlaps another or a point (:func:`place_labels`); the title says how many were left
    out where the points are too crowded.
    """
    import numpy as np
    from sklearn.decomposition import PCA

    keys = list(vectors.index_to_key)
    index = {k: i for i, k in enumerate(keys)}
    missing: list[str] = []
    if words:
        chosen = [w for w in words if w in index]
        missing = [w for w in words if w not in index]
    else:
        chosen = keys[:top]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 6))
    unlabelled: list[str] = []
    if len(chosen) < 2:
        _empty(ax, "fewer than two of the chosen words have vectors")
    else:
        x = np.asarray(vectors.vectors, dtype=np.float64)[[index[w] for w in chosen]]
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        x = x / np.where(norms > 0, norms, 1.0)  # cosine geometry, as the queries use
        xy = PCA(n_components=2, random_state=0).fit_transform(x)
        ax.scatter(xy[:, 0], xy[:, 1], s=14, color="C0")
        ax.margins(0.12)  # room for the labels of the outermost points
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
        ax.grid(alpha=0.3)
        _, unlabelled = place_labels(ax, xy, chosen)
    note = f"; {len(unlabelled)} labels left out where points crowd" if unlabelled else ""
    ax.set_title(f"PCA of {len(chosen)} word vectors" + (" (most frequent)" if not words else "") + note)
    return _png(fig), missing


def figure_node_classification(runs: Sequence[Run]) -> bytes | None:
    """Micro- and macro-F1 against the training fraction, for graph runs evaluated with labels."""
    series = [(i, r, r.data.get("node_classification")) for i, r in enumerate(runs)]
    series = [(i, r, nc) for i, r, nc in series if isinstance(nc, list) and nc]
    if not series:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for i, run, nc in series:
        pts = sorted((float(e["fraction"]), e.get("micro_f1"), e.get("macro_f1")) for e in nc or [])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=f"C{i % 10}",
                label=f"{run.label} micro-F1")
        ax.plot([p[0] for p in pts], [p[2] for p in pts], marker="s", ls="--", color=f"C{i % 10}",
                label=f"{run.label} macro-F1")
    ax.set_xlabel("training fraction of labelled nodes")
    ax.set_ylabel("F1")
    ax.set_title("Node classification")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def benchmark_speeds(data: dict[str, Any]) -> dict[tuple[str, int], float]:
    """Median words/s per (system, threads) of a benchmark JSON's speed runs.

    Example:
        >>> benchmark_speeds({"runs": [{"system": "a", "threads": 1, "words_per_sec": 2.0},
        ...                            {"system": "a", "threads": 1, "words_per_sec": 4.0}]})
        {('a', 1): 3.0}
    """
    by: dict[tuple[str, int], list[float]] = {}
    for r in data.get("runs", []):
        if not isinstance(r, dict) or r.get("quality") or not _finite(r.get("words_per_sec")):
            continue  # quality runs are timed too, but at other settings: speed comes from speed runs
        by.setdefault((str(r.get("system")), int(r.get("threads") or 0)), []).append(float(r["words_per_sec"]))
    return {k: statistics.median(v) for k, v in by.items()}


def figure_benchmark(run: Run) -> bytes:
    """Words/s per system, grouped by thread count (a benchmark JSON's speed runs)."""
    import numpy as np

    speeds = benchmark_speeds(run.data)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    if not speeds:
        _empty(ax, "no speed runs in this benchmark")
    else:
        systems = sorted({s for s, _ in speeds}, key=lambda s: max(v for (x, _), v in speeds.items() if x == s))
        threads = sorted({t for _, t in speeds})
        width = 0.8 / len(threads)
        for j, t in enumerate(threads):
            vals = [speeds.get((s, t), 0.0) / 1e6 for s in systems]
            bars = ax.bar(np.arange(len(systems)) + j * width, vals, width, label=f"{t} thread{'s' * (t != 1)}")
            ax.bar_label(bars, fmt="%.2f", fontsize=7)
        ax.set_xticks(np.arange(len(systems)) + width * (len(threads) - 1) / 2, systems)
        ax.legend(fontsize=8)
    ax.set_ylabel("M words/s (median of rounds)")
    ax.set_title(f"Speed: {run.label}")
    ax.grid(alpha=0.3, axis="y")
    return _png(fig)


def _projection_sources(trained: Sequence[Run], vectors: str | os.PathLike[str] | None,
                        notes: list[str]) -> list[tuple[Path, bool | None, list[str]]]:
    """The vector files to project: ``--vectors``, else every run's output (one figure per file, with the labels
    of the runs that wrote it); a run whose output is missing (or went to standard output) gets a note."""
    if vectors is not None:
        if not Path(vectors).exists():
            raise ParvecError(f"--vectors {vectors}: no such file")
        return [(Path(vectors), None, [])]
    found: dict[str, tuple[Path, bool | None, list[str]]] = {}
    for run in trained:
        output = run.data.get("output")
        if output in (None, "-"):  # none, or written to standard output
            continue
        path = Path(output)
        if not path.exists():
            notes.append(f"{run.label}: its vectors {path} are not there any more (give --vectors FILE)")
            continue
        key = os.path.realpath(path)
        if key not in found:
            found[key] = (path, run.data.get("output_binary"), [])
        found[key][2].append(run.label)
    if not found:
        notes.append("no vectors file found for the projection (give --vectors FILE)")
    return list(found.values())


# ---------------------------------------------------------------------- HTML
def _parameters_table(runs: Sequence[Run]) -> str:
    rows: dict[str, list[str]] = {}
    facts = ("vocab_size", "corpus_words", "words_trained", "epochs", "training_seconds", "words_per_sec",
             "peak_memory_bytes", "cache_used", "device")
    for j, run in enumerate(runs):
        items = dict(run.data.get("parameters") or {})
        items |= {k: run.data[k] for k in facts if k in run.data}
        if run.kind == "benchmark":
            items |= {f"args.{k}": v for k, v in (run.data.get("args") or {}).items()}
        for k, v in items.items():
            rows.setdefault(k, [""] * len(runs))[j] = _fmt_value(v)
    head = "".join(f"<th>{html.escape(r.label)}<br><small>{html.escape(r.path.name)}</small></th>" for r in runs)
    body = "".join(f"<tr><th>{html.escape(k)}</th>" + "".join(f"<td>{html.escape(v)}</td>" for v in vals) + "</tr>"
                   for k, vals in rows.items())
    return f"<table><tr><th>parameter</th>{head}</tr>{body}</table>"


def _fmt_value(v: Any) -> str:
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else f"{v:.6g}"
    if isinstance(v, (list, dict)):
        return json.dumps(v)[:200]
    return "" if v is None else str(v)


def _benchmark_table(run: Run) -> str:
    speeds = benchmark_speeds(run.data)
    rows = "".join(f"<tr><td>{html.escape(s)}</td><td>{t}</td><td>{v / 1e6:.3f}</td></tr>"
                   for (s, t), v in sorted(speeds.items()))
    quality = [r for r in run.data.get("runs", []) if isinstance(r, dict) and isinstance(r.get("quality"), dict)]
    qrows = ""
    for r in quality:
        q = r["quality"]
        cells = []
        for name, key in (("ws353", "spearman"), ("simlex", "spearman"), ("analogies", "3cosadd")):
            v = q.get(name, {}).get(key) if isinstance(q.get(name), dict) else None
            cells.append("n/a" if not _finite(v) else f"{v:.4f}")
        qrows += (f"<tr><td>{html.escape(str(r.get('system')))}</td><td>{html.escape(str(r.get('seed', '')))}</td>"
                  + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out = f"<table><tr><th>system</th><th>threads</th><th>M words/s</th></tr>{rows}</table>"
    if qrows:
        out += ("<h3>Quality runs</h3><table><tr><th>system</th><th>seed</th><th>WS-353</th><th>SimLex-999</th>"
                f"<th>analogy</th></tr>{qrows}</table>")
    return out


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f3f3f3}.note{color:#a05a00}"""


def write_report(
    paths: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    words: Sequence[str] | None = None,
    vectors: str | os.PathLike[str] | None = None,
    top: int = 40,
) -> list[Path]:
    """Draw the report of one or more runs into ``output`` (HTML) and PNGs beside it; returns the files.

    Example:
        >>> write_report(["hogbatch.json", "par.json"], "report.html", words=["king", "queen"])  # doctest: +SKIP
    """
    from parvec.fileio import atomic_output

    if not paths:
        raise ParvecError("parvec report: give at least one RUN.json")
    out = Path(output)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ParvecError(f"-o {out}: the report is an HTML file (name it .html)")
    if not out.parent.is_dir():
        raise ParvecError(f"-o {out}: the directory {out.parent} does not exist")
    runs = [read_run(p) for p in paths]
    for run in runs:
        if run.path.resolve() == out.resolve() or (out.exists() and os.path.samefile(run.path, out)):
            raise ParvecError(f"-o {out} is the input {run.path}: refusing to overwrite it")
    trained = [r for r in runs if r.kind != "benchmark"]
    benches = [r for r in runs if r.kind == "benchmark"]
    figures: list[tuple[str, str, bytes]] = []  # (file stem, title, png)
    notes = [n for r in runs for n in r.notes]
    if trained:
        figures.append(("loss", "Loss and learning rate over words", figure_loss_lr(trained)))
        figures.append(("throughput", "Words/s over time", figure_throughput(trained)))
        figures.append(("quality", "Quality per epoch", figure_quality(trained)))
        nc = figure_node_classification(trained)
        if nc is not None:
            figures.append(("node_classification", "Node classification", nc))
        for n, (vec_path, binary, owners) in enumerate(_projection_sources(trained, vectors, notes)):
            from parvec.keyedvectors import load_vectors

            kv = load_vectors(str(vec_path), binary=binary if vec_path.suffix != ".npy" else None)
            png, missing = figure_projection(kv, words, top=top)
            whose = f"{', '.join(owners)}: " if owners else ""  # the runs whose vectors these are
            figures.append(("projection" if n == 0 else f"projection{n + 1}",
                            f"PCA projection of {whose}{vec_path.name}", png))
            if missing:
                notes.append(f"not in {vec_path.name}: {', '.join(missing)}")
    for i, run in enumerate(benches):
        figures.append((f"benchmark{i + 1}" if len(benches) > 1 else "benchmark", f"Benchmark {run.label}",
                        figure_benchmark(run)))
    files_dir = out.with_name(out.stem + "_files")
    files_dir.mkdir(exist_ok=True)
    written: list[Path] = []
    for stem, _, png in figures:
        target = files_dir / f"{stem}.png"
        with atomic_output(target, "wb") as f:
            f.write(png)
        written.append(target)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>parvec report</title><style>{_CSS}</style>"
             f"</head><body><h1>parvec report</h1><p>{len(runs)} run(s): "
             + ", ".join(html.escape(f"{r.label} ({r.path.name})") for r in runs) + "</p>"]
    parts += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
    for stem, title, png in figures:
        b64 = base64.b64encode(png).decode("ascii")
        parts.append(f"<h2>{html.escape(title)}</h2><img id='{stem}' alt='{html.escape(title)}' "
                     f"src='data:image/png;base64,{b64}'>")
    for run in benches:
        parts.append(f"<h2>Benchmark table: {html.escape(run.label)}</h2>{_benchmark_table(run)}")
    parts.append(f"<h2>Parameters</h2>{_parameters_table(runs)}</body></html>")
    with atomic_output(out, "w") as f:
        f.write("".join(parts))
    return [out, *written]
