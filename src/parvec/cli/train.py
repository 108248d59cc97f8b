"""``parvec train``: text in, word vectors out.

Accepts parvec's flags and word2vec.c's (``-train -output -size -window -negative -sample -min-count
-iter -alpha -threads -binary -cbow 0 -hs 0``), so existing word2vec.c scripts run unchanged:
``parvec -train text8 -output vec.bin -size 200 -binary 1``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

from parvec.cli.outputs import OutputPlan, check_paths
from parvec.config import ALL_ALGORITHMS, DEFAULT_ALGO, DEFAULT_GPU_ALGO, default_threads
from parvec.errors import ParvecError


def default_cache_dir() -> Path:
    """Where ``parvec train`` caches encoded corpora: ``$PARVEC_CACHE_DIR`` or ``~/.cache/parvec``.

    Example:
        >>> default_cache_dir().name in ("parvec", os.environ.get("PARVEC_CACHE_DIR", "parvec").split("/")[-1])
        True
    """
    env = os.environ.get("PARVEC_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "parvec"


def threads_arg(text: str) -> int:
    """``--threads`` value: a positive integer (0 is refused, not read as "all cores": that is the default).

    Example:
        >>> threads_arg("2")
        2
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"must be at least 1, got {value} (leave --threads out to use all cores: {default_threads()} here)"
        )
    return value


def add_training_arguments(p: argparse.ArgumentParser) -> None:
    """Flags shared by every command that trains word vectors (train; the graph commands add theirs)."""
    p.add_argument("--dim", "-size", "--size", dest="dim", type=int, default=100, help="vector dimension (100)")
    p.add_argument("--window", "-window", dest="window", type=int, default=5, help="max context window (5)")
    p.add_argument("--negative", "-negative", dest="negative", type=int, default=5, help="negatives per pair (5)")
    p.add_argument("--sample", "-sample", dest="sample", type=float, default=1e-3,
                   help="subsampling threshold of frequent words (1e-3; 0 = off)")
    p.add_argument("--epochs", "-iter", "--iter", dest="epochs", type=int, default=5, help="passes over the corpus (5)")
    p.add_argument("--alpha", "-alpha", dest="alpha", type=float, default=0.025, help="starting learning rate (0.025)")
    p.add_argument("--min-alpha", dest="min_alpha", type=float, default=None,
                   help="final learning rate (alpha * 1e-4, as word2vec.c)")
    p.add_argument("--threads", "-threads", "--workers", dest="threads", type=threads_arg, default=default_threads(),
                   help=f"worker threads, at least 1 (default: all cores, {default_threads()} here)")
    p.add_argument("--seed", dest="seed", type=int, default=1, help="random seed (1)")
    p.add_argument("--algo", choices=ALL_ALGORITHMS, default=None,
                   help=f"training algorithm ({DEFAULT_ALGO} on cpu, {DEFAULT_GPU_ALGO} on --device cuda); classic = "
                   "word2vec.c's Hogwild SGNS; full-w2v runs on the GPU only, par on both")
    p.add_argument("--batch-size", dest="batch_size", type=int, default=0,
                   help="hogbatch: context words sharing negatives (0 = 2*window+1)")
    p.add_argument("--par-batch", dest="par_batch", type=int, default=24,
                   help="par: repulsion minibatch size B (24; 0 = whole sentence)")
    p.add_argument("--no-loss", dest="compute_loss", action="store_false", help="do not compute the loss")
    p.add_argument("--progress", dest="progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show a progress bar (default: when stderr is a terminal)")
    g = p.add_argument_group("where to train (GPU, Ray cluster)")
    g.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu (default) or cuda: an NVIDIA GPU through numba-cuda (pip install 'parvec[gpu]')")
    g.add_argument("--cluster", dest="cluster", default=None, metavar="SPEC",
                   help="train on Ray (pip install 'parvec[ray]'): local:N starts a local Ray with N CPUs, "
                   "ray://HOST:PORT or auto joins a running cluster")
    g.add_argument("--mode", dest="cluster_mode", choices=("replicas", "sharded"), default="replicas",
                   help="replicas: data-parallel copies of the model with frequency-ranked sync (Ji et al.); "
                   "sharded: column-sharded parameter servers for vocabularies too big for one machine "
                   "(Ordentlich et al.)")
    g.add_argument("--replicas", type=int, default=None, help="replica actors (default: N of local:N)")
    g.add_argument("--shards", type=int, default=None, help="sharded mode: parameter-server shards")
    g.add_argument("--clients", type=int, default=None, help="sharded mode: client actors")
    g.add_argument("--minibatch-words", dest="minibatch_words", type=int, default=None,
                   help="sharded mode: input words per minibatch, one shard call each (default: 512 words in flight "
                   "over all client threads, i.e. 512 / (clients x threads), between 16 and 256)")
    g.add_argument("--shard-memory", dest="shard_memory", default=None, metavar="BYTES",
                   help="sharded mode: cap each shard process's memory (RLIMIT_DATA), e.g. 3G; a shard whose columns "
                   "do not fit stops the run before training")
    g.add_argument("--sync-words", dest="sync_words", type=int, default=200_000,
                   help="replicas: average the hottest rows every this many trained words per replica (200000)")
    g.add_argument("--min-sync-words", dest="min_sync_words", type=int, default=1024,
                   help="replicas: rows averaged at the smallest sync (1024); sync j averages 2^ctz(j) times that")
    g.add_argument("--full-sync-times", dest="full_sync_times", type=int, default=0,
                   help="replicas: extra evenly spaced full-model syncs per epoch (0)")
    g.add_argument("--replica-alpha-scale", dest="replica_alpha_scale", choices=("none", "sqrt", "linear"),
                   default="linear", help="replicas: multiply the starting learning rate by 1, sqrt(N) or N for "
                   "N replicas (linear; docs/distributed.md has the measurement)")


def cluster_from_args(args: argparse.Namespace) -> Any:
    """The :class:`parvec.Cluster` the flags describe, or None without ``--cluster``.

    Example:
        >>> cluster_from_args(argparse.Namespace(cluster=None)) is None
        True
    """
    if not getattr(args, "cluster", None):
        for flag in ("replicas", "shards", "clients"):
            if getattr(args, flag, None) is not None:
                raise ParvecError(f"--{flag} needs --cluster (e.g. --cluster local:2)")
        return None
    from parvec.distributed.cluster import Cluster

    return Cluster(args.cluster, mode=args.cluster_mode, replicas=args.replicas, shards=args.shards,
                   clients=args.clients, sync_words=args.sync_words, min_sync_words=args.min_sync_words,
                   full_sync_times=args.full_sync_times,
                   alpha_scale=getattr(args, "replica_alpha_scale", "linear"))


def register(subparsers: Any) -> None:
    """Add ``parvec train``."""
    p = subparsers.add_parser(
        "train",
        help="train word vectors on a text file",
        description="Train skip-gram negative-sampling word vectors on a text file (one sentence per line; "
        ".gz/.bz2/.xz read directly; - reads standard input). word2vec.c's flags are accepted too.",
        epilog="Outputs: before the corpus is read, every output (-o, --report, --save-vocab, --save-model) gets a "
        "temporary file in its directory and --checkpoint-dir is created, so a path that cannot be written fails at "
        "once; the outputs are renamed into place only when the run succeeds. An output that is an input (the "
        "corpus, a --resume model, under any name or hard link) or another output is refused. A closed standard "
        "output or error (e.g. `2>&1 | head`) does not stop the run. Exit status: 0 when every output was written, "
        "2 on an error (the message names the file or flag), 130 when interrupted.",
    )
    p.add_argument("input", nargs="?", help="training text; - reads standard input (or -train FILE)")
    p.add_argument("-train", dest="train_file", help=argparse.SUPPRESS)
    p.add_argument("-o", "--output", "-output", dest="output", help="output vectors: .txt/.vec (text), "
                   ".bin (with --binary), .npy (NumPy + vocab file)")
    add_training_arguments(p)
    p.add_argument("--min-count", "-min-count", dest="min_count", type=int, default=5,
                   help="discard words seen fewer times (5)")
    p.add_argument("--max-vocab-size", dest="max_vocab_size", type=int, default=None,
                   help="prune rare words while counting to keep at most this many (bounded memory)")
    p.add_argument("--max-final-vocab", dest="max_final_vocab", type=int, default=None,
                   help="raise min-count so that at most this many words remain")
    p.add_argument("--max-sentence-length", dest="max_sentence_length", type=int, default=10000,
                   help="split longer lines into pieces of this many tokens (10000)")
    p.add_argument("--lowercase", action="store_true", help="lower-case the text")
    p.add_argument("--unicode-errors", dest="unicode_errors", choices=("strict", "replace", "ignore"),
                   default="strict", help="what to do with invalid UTF-8 (strict = stop with an error)")
    p.add_argument("--binary", "-binary", dest="binary", type=int, nargs="?", const=1, default=None,
                   help="write word2vec binary format (also -binary 1)")
    p.add_argument("--cache-dir", dest="cache_dir", default=None,
                   help=f"cache of encoded corpora ({default_cache_dir()})")
    p.add_argument("--no-cache", dest="no_cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--save-model", dest="save_model", help="also save the full model (directory) to continue training")
    p.add_argument("--checkpoint-dir", dest="checkpoint_dir", help="save the model here (DIR/checkpoint) after every "
                   "epoch; DIR is created if its parent exists")
    p.add_argument("--resume", dest="resume", help="finish the run saved in this model/checkpoint directory")
    p.add_argument("--report", dest="report", help="write a JSON report of the run to this file, with its time "
                   "series (words/s, loss, learning rate, memory); draw it with `parvec report`")
    p.add_argument("--report-interval", dest="report_interval", type=float, default=2.0,
                   help="seconds between the report's time-series samples (2)")
    p.add_argument("--eval-every-epoch", dest="eval_every_epoch", action="store_true",
                   help="score WS-353, SimLex-999 and the Google analogies after every epoch (files from "
                   "$PARVEC_EVAL_DIR or shared/data/eval); the scores go into --report and on stderr")
    p.add_argument("-save-vocab", "--save-vocab", dest="save_vocab", help="write 'word count' lines")
    p.add_argument("-cbow", dest="cbow", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("-hs", dest="hs", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("-debug", dest="debug", type=int, default=0, help=argparse.SUPPRESS)
    p.set_defaults(func=run_train)


def train_inputs(args: argparse.Namespace, source: str) -> list[Any]:
    """Every file ``parvec train`` reads: the corpus (unless ``-``), the resumed model's files, evaluation files.

    Example:
        >>> [u.label for u in train_inputs(argparse.Namespace(resume=None, eval_every_epoch=False), "c.txt")]
        ['the training corpus']
    """
    from parvec.cli.outputs import Use, directory_inputs

    uses = [] if source == "-" else [Use("the training corpus", Path(source))]
    if args.resume:
        uses += directory_inputs("the resumed model --resume", args.resume)
    if getattr(args, "eval_every_epoch", False):
        from parvec.evaluation import default_eval_paths

        uses += [Use("the evaluation file of --eval-every-epoch", p) for p in default_eval_paths().values()]
    return uses


def train_outputs(args: argparse.Namespace) -> list[Any]:
    """Every path ``parvec train`` writes, by flag (``-o`` of a ``.npy`` is three files).

    Example:
        >>> ns = argparse.Namespace(output="v.txt", report=None, save_vocab=None, save_model="m", checkpoint_dir=None)
        >>> [u.describe() for u in train_outputs(ns)]
        ['-o v.txt', '--save-model m']
    """
    from parvec.cli.outputs import Use, vector_outputs

    uses = vector_outputs("-o", args.output) if args.output else []
    uses += [Use(flag, Path(path)) for flag, path in (("--report", args.report), ("--save-vocab", args.save_vocab))
             if path]
    if args.save_model:
        uses.append(Use("--save-model", Path(args.save_model), tree=True))
    if args.checkpoint_dir and not _continues_checkpoint(args):
        uses.append(Use("--checkpoint-dir", Path(args.checkpoint_dir) / "checkpoint", tree=True,
                        given=Path(args.checkpoint_dir)))
    return uses


def _continues_checkpoint(args: argparse.Namespace) -> bool:
    # `--resume D/checkpoint --checkpoint-dir D` keeps checkpointing a run where it was checkpointed: the
    # resumed model is read whole before training and each new checkpoint replaces it atomically with a
    # later state of the same run, so this one output may supersede that one input.
    if not (getattr(args, "resume", None) and args.checkpoint_dir):
        return False
    target, resumed = Path(args.checkpoint_dir) / "checkpoint", Path(args.resume)
    try:
        return target.exists() and os.path.samefile(target, resumed)
    except OSError:
        return False


def _cache_line(cache_used: bool | None, args: argparse.Namespace, source: str, cache_dir: Any) -> str:
    if cache_used:
        return f"encoded-corpus cache: used ({cache_dir})"
    if cache_used is False:
        return f"encoded-corpus cache: not used (no cached encoding of this input and these options in {cache_dir})"
    from parvec.formats import is_stream

    why = ("--no-cache" if args.no_cache else "standard input is read once, never cached" if source == "-"
           else f"{source} is a stream (pipe or FIFO), read once, never cached" if is_stream(source)
           else "a resumed run encodes with the model's vocabulary" if args.resume else "no cache for this input")
    return f"encoded-corpus cache: not used ({why})"


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def peak_memory_bytes() -> int:
    """Peak resident memory of this process so far (ru_maxrss).

    Example:
        >>> peak_memory_bytes() > 0
        True
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def save_vectors(kv: Any, output: str, binary: bool) -> None:
    """Write vectors by the output's extension: ``.npy`` or word2vec text/binary."""
    if output.endswith(".npy"):
        kv.save(output)
    else:
        kv.save_word2vec_format(output, binary=binary)


def run_train(args: argparse.Namespace) -> int:
    """Run ``parvec train``."""
    if args.cbow:
        raise ParvecError("-cbow 1: parvec trains skip-gram only; use -cbow 0")
    if args.hs:
        raise ParvecError("-hs 1: parvec trains with negative sampling only; use -hs 0")
    source = args.train_file or args.input
    if args.input and args.train_file and args.input != args.train_file:
        raise ParvecError("give the training file once (either INPUT or -train)")
    if not source:
        raise ParvecError("no training file: parvec train INPUT -o OUTPUT")
    if not args.output and not args.save_model:
        raise ParvecError("no output: give -o OUTPUT (and/or --save-model DIR)")
    binary = bool(args.binary) if args.binary is not None else str(args.output or "").endswith(".bin")
    cache_dir = None if args.no_cache else (args.cache_dir or default_cache_dir())
    if getattr(args, "device", "cpu") == "cuda":  # before reading the corpus: say now if there is no GPU
        from parvec.config import TrainConfig
        from parvec.gpu import require_device

        TrainConfig(algo=args.algo or DEFAULT_GPU_ALGO, device="cuda").validate()  # a CPU-only --algo first
        require_device()

    # Before anything is read: no output may be an input or another output, and every output gets its
    # temporary file (or directory) in its target directory now, so an unwritable path fails at once.
    check_paths(train_inputs(args, source), train_outputs(args))
    with OutputPlan() as plan:
        out = {
            "output": plan.file("-o", args.output, npy=args.output.endswith(".npy")) if args.output else None,
            "report": plan.file("--report", args.report) if args.report else None,
            "save_vocab": plan.file("--save-vocab", args.save_vocab) if args.save_vocab else None,
            "save_model": plan.directory("--save-model", args.save_model) if args.save_model else None,
        }
        if args.checkpoint_dir:
            plan.checkpoint_dir("--checkpoint-dir", args.checkpoint_dir, entry="checkpoint")
        done = _train_and_write(args, source, binary, cache_dir, out)
        plan.commit()
    for line in done:
        print(line, file=sys.stderr)
    return 0


def _train_and_write(args: argparse.Namespace, source: str, binary: bool, cache_dir: Any,
                     out: dict[str, Any]) -> list[str]:
    # Reads, trains and writes every output into its reserved temporary; returns the lines to print
    # once run_train has renamed them into place.
    from parvec.trainer import available_memory, estimate_memory
    from parvec.word2vec import Word2Vec

    if getattr(args, "cluster", None) and getattr(args, "cluster_mode", None) == "sharded":
        # Column-sharded parameter servers: count, encode, train and export on Ray without ever holding the
        # model in this process (parvec.distributed.pipeline).
        from parvec.distributed.pipeline import train_sharded_cli

        return train_sharded_cli(args, source, binary, cache_dir, out)
    done: list[str] = []
    t0 = time.perf_counter()
    if args.resume:
        model = Word2Vec.load(args.resume)
        model.config.threads = args.threads
        model.config.progress = args.progress
        model.cache_dir = cache_dir
        model.checkpoint_dir = args.checkpoint_dir
        resumed_cluster = cluster_from_args(args)
        if resumed_cluster is not None:  # a run may be resumed on a cluster (or a different one)
            model.cluster = resumed_cluster
        encoded = model.encode(corpus_file=source, vocab=model.vocab)
        print(f"resuming {args.resume}: {model.epochs_trained} of {model.config.epochs} epochs done",
              file=sys.stderr)
    else:
        model = Word2Vec(
            vector_size=args.dim, window=args.window, negative=args.negative, sample=args.sample,
            min_count=args.min_count, max_vocab_size=args.max_vocab_size, max_final_vocab=args.max_final_vocab,
            epochs=args.epochs, alpha=args.alpha, min_alpha=args.min_alpha, workers=args.threads,
            seed=args.seed, algo=args.algo, max_sentence_length=args.max_sentence_length,
            batch_size=args.batch_size, par_batch=args.par_batch, compute_loss=args.compute_loss,
            progress=args.progress, cache_dir=cache_dir, lowercase=args.lowercase,
            unicode_errors=args.unicode_errors, checkpoint_dir=args.checkpoint_dir,
            device=args.device, cluster=cluster_from_args(args),
        )
        encoded = model.encode(corpus_file=source)
    read_seconds = time.perf_counter() - t0
    vocab = encoded.vocab
    need = estimate_memory(len(vocab), model.config.dim, encoded.n_tokens, encoded.n_sentences)
    avail = available_memory()
    cache_used = getattr(encoded, "cache_used", None)
    name = "standard input" if source == "-" else source
    print(
        f"{name}: {encoded.raw_words:,} words, vocabulary {len(vocab):,} (min-count {args.min_count}), "
        f"{encoded.n_tokens:,} in-vocabulary tokens in {encoded.n_sentences:,} sentences "
        f"[read in {read_seconds:.1f} s]",
        file=sys.stderr,
    )
    print(
        f"memory: vectors {_human_bytes(2 * len(vocab) * model.config.dim * 4)} + encoded corpus "
        f"{_human_bytes(need - 2 * len(vocab) * model.config.dim * 4)} = {_human_bytes(need)}"
        + (f" of {_human_bytes(avail)} available" if avail else ""),
        file=sys.stderr,
    )
    print(_cache_line(cache_used, args, source, cache_dir), file=sys.stderr)
    if args.save_vocab:

        def write_vocab(path: Path) -> None:
            from parvec.formats import atomic_output

            with atomic_output(path, "w") as f:
                for w, c in zip(vocab.words, vocab.counts.tolist(), strict=True):
                    f.write(f"{w} {c}\n")

        out["save_vocab"].write(write_vocab)
        done.append(f"wrote the vocabulary ({len(vocab):,} words) to {args.save_vocab}")
    if args.report or args.eval_every_epoch:
        from parvec.runlog import RunLog

        if not args.report_interval > 0:
            raise ParvecError(f"--report-interval must be positive, got {args.report_interval}")
        model.run_log = RunLog(interval_s=args.report_interval)
        model.eval_every_epoch = bool(args.eval_every_epoch)
    if args.resume:
        stats = model.train(corpus=encoded, resume=True)
    else:
        model.build_vocab(corpus=encoded)
        stats = model.train(corpus=encoded)
    raw_per_sec = encoded.raw_words * stats.epochs / stats.seconds if stats.seconds else 0.0
    if args.eval_every_epoch:
        for rec in model.run_log.epochs:
            scores = ", ".join(f"{k} {'n/a' if v is None else format(v, '.4f')}" for k, v in rec["scores"].items())
            print(f"epoch {rec['epoch']}: loss {rec['loss'] if rec['loss'] is None else format(rec['loss'], '.4f')}; "
                  f"{scores}", file=sys.stderr)
    losses = ", ".join(f"{x:.4f}" for x in stats.loss_per_epoch)
    print(
        f"trained {stats.words:,} words ({stats.epochs} epochs, {model.config.algo}, {model.config.threads} threads) "
        f"in {stats.seconds:.1f} s: {stats.words_per_sec / 1e6:.3f}M words/s; loss per epoch: {losses}",
        file=sys.stderr,
    )
    if args.output:
        out["output"].write(lambda path: save_vectors(model.wv, str(path), binary))
        done.append(f"wrote {len(vocab):,} vectors of {model.config.dim} to {args.output}")
    if args.save_model:
        out["save_model"].write(model.save)
        done.append(f"saved the model to {args.save_model}")
    if args.report:
        report = {
            "parameters": model.config.to_dict() | {
                "min_count": args.min_count, "max_vocab_size": args.max_vocab_size,
                "max_final_vocab": args.max_final_vocab, "input": source,
            },
            "vocab_size": len(vocab),
            "corpus_words": encoded.raw_words,
            "corpus_tokens_in_vocab": encoded.n_tokens,
            "sentences": encoded.n_sentences,
            "words_trained": stats.words,
            "epochs": stats.epochs,
            "read_seconds": read_seconds,
            "training_seconds": stats.seconds,
            "words_per_sec": stats.words_per_sec,
            "raw_words_per_sec": raw_per_sec,
            "loss_per_epoch": stats.loss_per_epoch,
            "peak_memory_bytes": peak_memory_bytes(),
            "kind": "words",
            "output": os.path.abspath(args.output) if args.output else None,
            "output_binary": binary,
            "device": model.config.device,
            "cluster": model.cluster.to_dict() if model.cluster is not None else None,
            "cache_used": cache_used,
        } | model.run_report | (model.run_log.to_dict() if model.run_log is not None else {})

        def write_report(path: Path) -> None:
            from parvec.formats import atomic_output

            with atomic_output(path, "w") as f:
                json.dump(report, f, indent=1)

        out["report"].write(write_report)
        done.append(f"wrote the report to {args.report}")
    return done
