"""Graph sub-commands: ``node2vec``, ``deepwalk``, ``node-eval`` and ``link-eval``.

Example:
    parvec node2vec karate.edgelist -o karate.emb --dimensions 16 --p 0.25 --q 4
    parvec node-eval karate.emb --labels karate.labels --json
    parvec link-eval ppi.edgelist --p 4 --q 1 --json

Warnings that parvec logs while a command runs (nodes that learn nothing, labelled nodes without a
vector, an ignored weight column, ...) are printed to stderr as ``parvec: warning: ...`` (``parvec.cli`` does
this for every command).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parvec.cli.node_eval import add_node_eval
from parvec.cli.resume import note_checkpoint_places
from parvec.cli.train import add_threads_argument
from parvec.config import GRAPH_NS_EXPONENT
from parvec.errors import ParvecError

if TYPE_CHECKING:  # imported where used, so that the command starts fast
    import numpy as np

    from parvec.cli.run_report import RunReport
    from parvec.graph.graph_io import Graph
    from parvec.graph.node2vec import Node2Vec

_DELIMITERS = {"tab": "\t", "\\t": "\t", "space": " ", "comma": ",", "whitespace": None}


def _delimiter(text: str) -> str | None:
    """``--delimiter`` value: a literal string or a name (tab, space, comma, whitespace)."""
    if text in _DELIMITERS:
        return _DELIMITERS[text]
    if text == "":
        raise argparse.ArgumentTypeError("the delimiter must not be empty")
    return text


def _add_graph_input(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "graph", metavar="GRAPH", help="edge list ('u v' or 'u v w' lines), .npz or .mat (variable 'network')"
    )
    p.add_argument("--weighted", action="store_true", help="read edge weights (third column) and walk by them")
    p.add_argument(
        "--unweighted",
        dest="weighted",
        action="store_false",
        help="ignore weights (default; a warning counts the lines that have one, which must still be a number)",
    )
    p.add_argument("--directed", action="store_true", help="edges are directed (walks never go against one)")
    p.add_argument("--undirected", dest="directed", action="store_false", help="edges are undirected (default)")
    p.add_argument(
        "--delimiter",
        type=_delimiter,
        default=None,
        help="column separator: a string or tab/space/comma (default: any whitespace)",
    )
    p.add_argument(
        "--implicit-ids",
        action="store_true",
        help="node IDs are already 0..n-1 integers: faster all-numpy parsing",
    )
    p.add_argument("--mat-variable", default="network", help="adjacency variable of a .mat file (default: %(default)s)")


def _add_walk_train(p: argparse.ArgumentParser, with_pq: bool) -> None:
    g = p.add_argument_group("walks")
    g.add_argument("--walk-length", type=int, default=128, help="nodes per walk, at least 2 (default %(default)s)")
    g.add_argument("--num-walks", type=int, default=10, help="walks per node (default %(default)s)")
    if with_pq:
        g.add_argument("--p", type=float, default=1.0, help="return parameter (default %(default)g)")
        g.add_argument("--q", type=float, default=1.0, help="in-out parameter (default %(default)g)")
    g.add_argument("--batch-walks", type=int, default=None, help="walks generated per batch (default: one round)")
    t = p.add_argument_group("training")
    t.add_argument("--dimensions", type=int, default=100, help="vector size (default %(default)s)")
    t.add_argument("--window-size", type=int, default=5, help="context window (default %(default)s)")
    t.add_argument("--epochs", "--iter", type=int, default=3, help="epochs over the walks (default %(default)s)")
    t.add_argument("--negative", type=int, default=10, help="negative samples (default %(default)s)")
    t.add_argument("--ns-exponent", type=float, default=GRAPH_NS_EXPONENT,
                   help="negatives drawn by walk count ** this (default %(default)g: more negatives for low-degree "
                   "nodes than word2vec's 0.75, which scored lower macro-F1)")
    t.add_argument("--sample", type=float, default=0.0,
                   help="subsampling threshold (default %(default)g: none, as SNAP's node2vec; gensim/PecanPy use "
                   "1e-3)")
    t.add_argument("--alpha", type=float, default=0.025, help="initial learning rate (default %(default)g)")
    t.add_argument("--algo", default=None, help="training algorithm: classic, hogbatch or par (default: parvec's)")
    add_threads_argument(t)
    t.add_argument("--seed", type=int, default=1, help="random seed for walks and training (default %(default)s)")
    t.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    t.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu (default) or cuda: an NVIDIA GPU through numba-cuda (pip install 'parvec[gpu]')")
    # Not for graphs yet: hidden from --help, refused with the API's message when given (_refuse_cluster).
    t.add_argument("--cluster", default=None, metavar="SPEC", help=argparse.SUPPRESS)
    r = p.add_argument_group("report")
    r.add_argument("--report", default=None, help="write a JSON report of the run (time series, loss, timings; "
                   "node classification with --labels); draw it with `parvec report`")
    r.add_argument("--report-interval", type=float, default=2.0,
                   help="seconds between time-series samples (%(default)g)")
    r.add_argument("--labels", default=None, help="node labels: the report gets micro/macro-F1 against the "
                   "training fraction (10%%-90%%) after training")
    r.add_argument("--eval-every-epoch", action="store_true",
                   help="with --labels: score node classification (50%% training) after every epoch")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``node2vec``, ``deepwalk``, ``node-eval`` and ``link-eval`` to the ``parvec`` command.

    Example:
        >>> from parvec.cli import build_parser
        >>> build_parser().parse_args(["node2vec", "g.txt", "-o", "g.emb", "--p", "0.5"]).p
        0.5
    """
    for name, with_pq, text in (
        ("node2vec", True, "node2vec embeddings: biased second-order random walks + skip-gram"),
        ("deepwalk", False, "DeepWalk embeddings: uniform (or weighted) random walks + skip-gram"),
    ):
        p = subparsers.add_parser(name, help=text, description=text, allow_abbrev=False)
        _add_graph_input(p)
        p.add_argument(
            "-o",
            "--output",
            required=True,
            metavar="EMB",
            help="output: word2vec text keyed by node ID, or PREFIX.npy (+ .vocab.txt), or - for standard output "
            "(the text format unless --binary); every node gets a vector, and nodes that never meet another in a walk "
            "keep their random initial one (a warning counts them)",
        )
        p.add_argument("--binary", action="store_true", help="write word2vec binary instead of text")
        _add_walk_train(p, with_pq)
        c = p.add_argument_group("checkpoints (docs/long_runs.md)")
        c.add_argument("--checkpoint-dir", dest="checkpoint_dir", default=None,
                       help="save the run here (DIR/checkpoint) after every epoch; DIR is created if its parent exists")
        c.add_argument("--checkpoint-every", dest="checkpoint_every", default=None, metavar="DURATION|WORDS",
                       help="also checkpoint mid-epoch into --checkpoint-dir at the first chunk boundary after this "
                       "long (30s, 10m, 2h) or this many walk tokens (500k, 50M); the last two are kept as DIR/mid-*")
        c.add_argument("--on-checkpoint-error", dest="on_checkpoint_error", choices=("stop", "continue"),
                       default="stop", help="a checkpoint that cannot be written (a full disk): stop with the error, "
                       "the previous checkpoint intact for --resume (stop, the default), or warn and train on")
        c.add_argument("--resume", default=None, metavar="DIR",
                       help="finish the run saved in this checkpoint (or the latest in a --checkpoint-dir) on the same "
                       "GRAPH from its exact position: the walks are regenerated from the saved seed and parameters, "
                       "which are the checkpoint's")
        p.set_defaults(func=_cmd_embed, with_pq=with_pq)
    add_node_eval(subparsers)
    p = subparsers.add_parser(
        "link-eval",
        help="link prediction ROC-AUC (hide edges, embed the rest)",
        allow_abbrev=False,
        description="Hide a fraction of the edges outside a random spanning forest, "
        "embed the residual graph, score hidden edges against sampled "
        "non-edges with Hadamard features and logistic regression.",
    )
    _add_graph_input(p)
    p.add_argument(
        "--fraction",
        type=float,
        default=0.5,
        help="fraction of edges to hide (default %(default)g); edges needed to keep the graph connected are never "
        "hidden",
    )
    p.add_argument("--eval-seed", type=int, default=0,
                   help="seed of the edge split and non-edges (default %(default)s)")
    p.add_argument("--method", choices=("node2vec", "deepwalk"), default="node2vec")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_walk_train(p, True)
    p.set_defaults(func=_cmd_link_eval, with_pq=True)


def _flag(args: argparse.Namespace, dest: str, default: Any) -> Any:
    """A flag that some of the commands sharing this code define (``--p``/``--q``: node2vec and link-eval;
    ``--method``: link-eval; the checkpoint and device flags: the embedding commands); ``default`` where the
    command has none."""
    return vars(args).get(dest, default)


def _read(args: argparse.Namespace) -> Graph:
    from parvec.graph.graph_io import read_graph

    return read_graph(
        args.graph,
        weighted=args.weighted,
        directed=args.directed,
        delimiter=args.delimiter,
        implicit_ids=args.implicit_ids,
        variable=args.mat_variable,
    )


def _model(graph: Graph, args: argparse.Namespace) -> Node2Vec:
    from parvec.graph.node2vec import DeepWalk, Node2Vec

    p = _flag(args, "p", 1.0) if args.with_pq else 1.0
    q = _flag(args, "q", 1.0) if args.with_pq else 1.0
    deepwalk = _flag(args, "method", None) == "deepwalk" or args.command == "deepwalk"
    if deepwalk:
        p = q = 1.0
    return (DeepWalk if deepwalk else Node2Vec)(
        graph, dimensions=args.dimensions, walk_length=args.walk_length, num_walks=args.num_walks,
        window=args.window_size, p=p, q=q, epochs=args.epochs, workers=args.threads, seed=args.seed,
        algo=args.algo, negative=args.negative, ns_exponent=args.ns_exponent, sample=args.sample, alpha=args.alpha,
        batch_walks=args.batch_walks, progress=None if not args.quiet else False,
        checkpoint_dir=_flag(args, "checkpoint_dir", None), checkpoint_every=_flag(args, "checkpoint_every", None),
        on_checkpoint_error=_flag(args, "on_checkpoint_error", "stop"),
        **({"device": args.device} if _flag(args, "device", "cpu") != "cpu" else {}),
    )  # fmt: skip


# Flags a resumed graph run takes from its checkpoint (argparse dest -> (Node2Vec parameter, flag)).
_SAVED_GRAPH_FLAGS = {
    "dimensions": ("dimensions", "--dimensions"), "walk_length": ("walk_length", "--walk-length"),
    "num_walks": ("num_walks", "--num-walks"), "p": ("p", "--p"), "q": ("q", "--q"),
    "window_size": ("window", "--window-size"), "negative": ("negative", "--negative"),
    "ns_exponent": ("ns_exponent", "--ns-exponent"),
    "sample": ("sample", "--sample"), "alpha": ("alpha", "--alpha"), "seed": ("seed", "--seed"),
    "algo": ("algo", "--algo"), "batch_walks": ("batch_walks", "--batch-walks"),
    "weighted": ("weighted", "--weighted/--unweighted"), "directed": ("directed", "--directed/--undirected"),
}


@dataclass(frozen=True)
class _Places:
    """Where a graph run's checkpoints are: the one resumed (None: a new run), the checkpoint directory and
    interval, as given or as a resumed checkpoint continues them."""

    resume: str | None
    checkpoint_dir: str | None
    checkpoint_every: str | None


def _resumed(args: argparse.Namespace) -> tuple[Any, _Places]:
    # --resume: the checkpoint's run on the graph given again (read with the checkpoint's --weighted and
    # --directed); flags given with another value than the checkpoint's are refused, --workers and --epochs
    # applied and said, as `parvec train --resume` does.
    from parvec.capabilities import check_graph_resume
    from parvec.cli.flags import explicit_flags
    from parvec.cli.resume import describe_resume
    from parvec.graph.node2vec import DeepWalk, Node2Vec

    check_graph_resume(_flag(args, "device", "cpu"))
    given = explicit_flags(args, args.command)
    expected = {param: vars(args)[dest] for dest, (param, _) in _SAVED_GRAPH_FLAGS.items() if dest in given}
    names = {param: flag for param, flag in _SAVED_GRAPH_FLAGS.values()}
    cls = DeepWalk if args.command == "deepwalk" else Node2Vec
    model = cls.from_checkpoint(
        args.resume, args.graph, workers=args.threads if "threads" in given else None,
        epochs=args.epochs if "epochs" in given else None, checkpoint_dir=args.checkpoint_dir,
        checkpoint_every=args.checkpoint_every, progress=None if not args.quiet else False,
        delimiter=args.delimiter, implicit_ids=args.implicit_ids, flag_names=names,
        on_checkpoint_error=args.on_checkpoint_error, **expected)
    saved, where = model.resumed_from, model.resumed_path
    checkpoint_dir, checkpoint_every = args.checkpoint_dir, args.checkpoint_every
    if "threads" in given and model.saved_threads != args.threads:
        print(f"--workers {args.threads} overrides the checkpoint's {model.saved_threads}", file=sys.stderr)
    else:
        print(f"threads: {model.config.threads}, as the checkpoint was trained (--workers overrides)", file=sys.stderr)
    if "epochs" in given and model.schedule_anchor is not None:
        print(f"--epochs {args.epochs}: the learning rate now decays from its value at the checkpoint to the final "
              f"rate at the end of epoch {args.epochs}, so the vectors differ from an uninterrupted run",
              file=sys.stderr)
    if not args.checkpoint_dir and model.checkpoint_dir is not None:
        checkpoint_dir = str(model.checkpoint_dir)
        print(f"checkpoints continue in {model.checkpoint_dir} (--checkpoint-dir overrides)", file=sys.stderr)
    if args.checkpoint_every is None and model.checkpoint_every is not None:
        checkpoint_every = str(model.checkpoint_every)
        print(f"mid-epoch checkpoints every {model.checkpoint_every}, as before (--checkpoint-every overrides)",
              file=sys.stderr)
    assert saved is not None and saved.graph_run is not None and where is not None
    for line in describe_resume(saved.config, model.state, where, int(saved.graph_run["walks"]["tokens"]),
                                epochs=args.epochs if "epochs" in given else None):
        print(line, file=sys.stderr)
    return model, _Places(str(where), checkpoint_dir, checkpoint_every)


def _refuse_cluster(args: argparse.Namespace) -> None:
    # Before anything is read: node2vec/DeepWalk on Ray is refused with the API's error (parvec.graph.node2vec).
    if _flag(args, "cluster", None):
        from parvec.capabilities import check

        check(_flag(args, "cluster_mode", None) or "replicas", graphs=True)


def _cmd_embed(args: argparse.Namespace) -> int:
    # GRAPH, -o, --report, --checkpoint-dir and --resume may be URLs, staged as parvec train stages them
    # (parvec.cli.remote): the graph copied here, the outputs written here and uploaded after a successful run, each
    # checkpoint uploaded when written.
    from parvec import storage

    _refuse_cluster(args)
    places = (args.graph, args.output, args.report, args.checkpoint_dir, args.resume)
    if not any(storage.is_url(p) for p in places):
        return _embed(args)
    from parvec.cli.remote import TrainPaths, run_staged

    def embed(local: TrainPaths | None) -> int:
        assert local is not None  # a URL is given
        return _embed(argparse.Namespace(**{**vars(args), "graph": local.inputs[0], "output": local.output,
                                            "report": local.report, "checkpoint_dir": local.checkpoint_dir,
                                            "resume": local.resume}))

    return run_staged(TrainPaths(inputs=(args.graph,), output=args.output, report=args.report,
                                 checkpoint_dir=args.checkpoint_dir, resume=args.resume, no_cache=True), embed)


def _embed(args: argparse.Namespace) -> int:
    out = Path(args.output)
    is_npy = out.suffix.lower() == ".npy"
    # Before reading (parvec.cli.outputs): -o must not be the graph, and its temporary is made now, so an
    # unwritable path fails before the (long) walks and training; parvec's main removes it on failure.
    from parvec.cli.outputs import OutputPlan
    from parvec.cli.paths import Use, check_paths, output_name, vector_outputs

    if args.checkpoint_every is not None:
        from parvec.engine import parse_interval

        parse_interval(args.checkpoint_every)
        if not args.checkpoint_dir and not args.resume:
            raise ParvecError("--checkpoint-every needs --checkpoint-dir DIR (where the checkpoints go)")
    if args.eval_every_epoch and not args.labels:
        raise ParvecError("--eval-every-epoch scores node classification: give --labels FILE")
    if not args.report_interval > 0:
        raise ParvecError(f"--report-interval must be positive, got {args.report_interval}")
    inputs = [Use("the graph", Path(args.graph))] + ([Use("--labels", Path(args.labels))] if args.labels else [])
    outputs = vector_outputs("-o", out, npy=is_npy) + ([Use("--report", Path(args.report))] if args.report else [])
    check_paths(inputs, outputs)
    plan = OutputPlan()
    pending = plan.file("-o", out, npy=is_npy, stdout=True, binary=args.binary)
    pending_report = plan.file("--report", args.report) if args.report else None
    if args.checkpoint_dir:
        plan.checkpoint_dir("--checkpoint-dir", args.checkpoint_dir, entry="checkpoint")
    labels = None
    if args.labels:
        from parvec.graph.evaluation import read_labels

        labels = read_labels(args.labels)  # read before the walks: a bad line fails now, not after training
    t0 = time.perf_counter()
    places = _Places(args.resume, args.checkpoint_dir, args.checkpoint_every)
    if args.resume:
        model, places = _resumed(args)
        note_checkpoint_places(places.checkpoint_dir, places.resume)
        graph = model.graph
    else:
        graph = _read(args)
    t_read = time.perf_counter() - t0
    bad = next((k for k in graph.node_ids if "\n" in k or (not is_npy and any(c.isspace() for c in k))), None)
    if bad is not None:  # word2vec files separate key and values by a space: refuse before training
        raise ParvecError(f"{args.graph}: node ID {bad!r} contains whitespace; write .npy output instead")
    if not args.resume:
        model = _model(graph, args)
    from parvec.cli.run_options import command_options

    model.run_options = command_options(  # how the run is kept (parvec.run)
        checkpoint_dir=model.checkpoint_dir, checkpoint_every=model.checkpoint_every,
        on_checkpoint_error=args.on_checkpoint_error, report=bool(args.report), report_interval=args.report_interval,
        checkpoint_lines=bool(places.checkpoint_dir or places.checkpoint_every is not None))
    if labels is not None and args.eval_every_epoch:
        model.eval_labels, model.eval_labels_source = labels, args.labels
    kv = model.fit()
    pending.write(lambda tmp: kv.save(tmp) if is_npy else kv.save_word2vec_format(tmp, binary=args.binary))
    if pending_report is not None:
        from parvec.cli.run_report import write_report

        report = _graph_report(args, places, graph, model, labels, out, t_read)
        pending_report.write(lambda tmp: write_report(tmp, report))
    plan.commit()
    if not args.quiet:
        tm = model.timings
        trained = (f"training {tm['train']:.2f}s ({model.train_stats.words_per_sec / 1e6:.2f}M words/s)"
                   if model.train_stats.epochs else "nothing left to train")  # a resumed run whose epochs were done
        print(
            f"parvec {args.command}: {graph.n_nodes} nodes, {graph.n_edges} edges; read {t_read:.2f}s, "
            f"walks {tm['walks']:.2f}s, {trained}; wrote {output_name(args.output)}",
            file=sys.stderr,
        )
    return 0


def _graph_report(args: argparse.Namespace, places: _Places, graph: Any, model: Any, labels: Any, out: Path,
                  t_read: float) -> RunReport:
    # The common keys (parvec.cli.run_report, kind "graph"), plus the walk settings and, with labels,
    # micro/macro-F1 against the training fraction (scored after the peak memory of training is read).
    from parvec.cli.run_report import absolute, checkpoints, resumed_from, run_report

    saved = model.resumed_from
    report = run_report(
        "graph", model.config.to_dict() | {
            "walk_length": model.spec.walk_length, "num_walks": model.spec.num_walks, "p": model.spec.p,
            "q": model.spec.q, "graph": args.graph, "command": args.command},
        model.train_stats, read_seconds=t_read, device=model.config.device, output=absolute(args.output),
        output_binary=bool(args.binary),
        checkpoints=checkpoints(model.checkpoint_report, places.checkpoint_every, places.checkpoint_dir),
        resumed_from=None if saved is None else resumed_from(model.resumed_path, saved.saved_at, saved.position),
        extra={"nodes": graph.n_nodes, "edges": graph.n_edges, "walk_seconds": model.timings.get("walks")},
        run_log=model.run_log)
    if labels is not None:
        model.eval_labels, model.eval_labels_source = labels, args.labels
        scores = model.classify(model.node_vectors, repeats=3)
        report = dataclasses.replace(report, after=(("labels", args.labels), ("node_classification", scores)))
    return report


def _cmd_link_eval(args: argparse.Namespace) -> int:
    from parvec.graph.evaluation import link_prediction

    _refuse_cluster(args)
    graph = _read(args)
    timings: dict[str, float] = {}

    def embed(residual: Graph) -> np.ndarray:
        model = _model(residual, args)
        vectors = model.fit_vectors()
        timings.update(model.timings)
        return vectors

    result = link_prediction(graph, embed, fraction=args.fraction, seed=args.eval_seed)
    result.update(
        {
            "graph": args.graph,
            "method": args.method,
            "p": _flag(args, "p", 1.0),
            "q": _flag(args, "q", 1.0),
            "walk_seconds": timings.get("walks"),
            "train_seconds": timings.get("train"),
        }
    )
    if args.method == "deepwalk":
        result["p"] = result["q"] = 1.0
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        total = result["n_hidden"] + result["residual_edges"]
        print(
            f"{args.graph}: hid {result['n_hidden']} of {total} edges; "
            f"ROC-AUC {result['roc_auc']:.4f} ({result['n_test_pairs']} test pairs)"
        )
    return 0
