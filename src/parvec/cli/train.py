"""``parvec train``: text in, word vectors out.

Accepts parvec's flags and word2vec.c's (``-train -output -size -window -negative -sample -min-count
-iter -alpha -threads -binary -cbow -cbow-mean -hs -save-vocab -read-vocab -debug -classes``), so existing word2vec.c
scripts run unchanged: ``parvec -train text8 -output vec.bin -size 200 -binary 1``.

**Which defaults apply** is set by how the training file is named: ``-train FILE`` means word2vec.c's
defaults for every flag left out (CBOW ``-cbow 1``, ``-alpha`` 0.05 for CBOW and 0.025 for skip-gram,
``-sample 1e-3``, ``-iter 5``, ``-min-count 5``, ``-window 5``, ``-negative 5``, ``-hs 0``, ``-size 100``,
``-binary 0``: text output whatever the name); ``parvec train INPUT`` means parvec's (skip-gram, alpha
0.025, the rest as word2vec.c's, binary when the output ends ``.bin``).  A flag given is honoured in
either spelling and either style (``-train c.txt --epochs 3`` trains 3 epochs); naming the training file
both ways is refused.  The first line printed says which defaults applied.
``-cbow 1`` (or ``--cbow``) trains CBOW, ``-hs 1`` (or ``--hs``) hierarchical softmax, alone with ``-negative 0``
or together with negative sampling.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from parvec.capabilities import CBOW_ALGORITHMS
from parvec.cli.outputs import OutputPlan, check_paths, output_name
from parvec.cli.resume import describe_resume, refuse_saved_flags, restore_cluster, threads_line
from parvec.config import (
    ALL_ALGORITHMS,
    DEFAULT_ALGO,
    DEFAULT_CBOW_ALGO,
    DEFAULT_GPU_ALGO,
    default_threads,
)
from parvec.errors import ParvecError
from parvec.resources import human_bytes

# What each CBOW algorithm runs (parvec.kernels), for -cbow's help.
_CBOW_KERNELS = {"classic": "word2vec.c's loop", "hogbatch": "the fast batched CBOW kernel (about 2x faster, 5-6 "
                 "analogy points lower: README, CBOW)"}
_OTHER_CBOW_ALGO = next(a for a in CBOW_ALGORITHMS if a != DEFAULT_CBOW_ALGO)
# Defaults the help states that live in modules too heavy to import for --help (numba kernels, the sharded
# driver): parvec.kernels.cbow_batch.DEFAULT_BATCH and parvec.distributed.sharded_settings' constants.
# tests/cli/test_flag_defaults.py checks each against its source.
CBOW_DEFAULT_BATCH = 8
SHARDED_DEFAULTS = {"fused_minibatch_words": 8192, "in_flight_heavy": 4096, "in_flight_light": 1024,
                    "in_flight_contiguous": 512, "light_subsampling": 1e-4, "min_minibatch_words": 16}


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


THREADS_FLAGS = ("--threads", "--workers")  # every command that trains takes both spellings (dest "threads")


def add_threads_argument(p: Any, note: str = "", word2vec_c: bool = False) -> None:
    """Add ``--threads`` / ``--workers`` (one flag, dest ``threads``, the same help) to a command that trains;
    ``note`` adds what the command does with it, ``word2vec_c`` word2vec.c's ``-threads`` spelling.

    Example:
        >>> p = argparse.ArgumentParser(); add_threads_argument(p)
        >>> p.parse_args(["--workers", "3"]).threads, p.parse_args(["--threads", "2"]).threads
        (3, 2)
    """
    flags = (THREADS_FLAGS[0], "-threads", THREADS_FLAGS[1]) if word2vec_c else THREADS_FLAGS
    p.add_argument(*flags, dest="threads", type=threads_arg, default=default_threads(), metavar="N",
                   help=f"worker threads, at least 1 (default: all cores, {default_threads()} here"
                   + (f"; {note})" if note else ")"))


def add_training_arguments(p: argparse.ArgumentParser) -> None:
    """Flags shared by every command that trains word vectors (train; the graph commands add theirs)."""
    # Left out, these take their style's default (resolve_defaults, _STYLE_DEFAULTS): the help shows parvec's.
    d = _STYLE_DEFAULTS["parvec"]
    p.add_argument("--dim", "-size", "--size", dest="dim", type=int, default=d["dim"],
                   help=f"vector dimension ({d['dim']})")
    p.add_argument("--window", "-window", dest="window", type=int, default=d["window"],
                   help=f"max context window ({d['window']})")
    p.add_argument("--negative", "-negative", dest="negative", type=int, default=d["negative"],
                   help=f"negatives per pair ({d['negative']}; 0 with --hs: hierarchical softmax alone)")
    p.add_argument("--sample", "-sample", dest="sample", type=float, default=d["sample"],
                   help=f"subsampling threshold of frequent words ({_number(d['sample'])}; 0 = off)")
    p.add_argument("--epochs", "-iter", "--iter", dest="epochs", type=int, default=d["epochs"],
                   help=f"passes over the corpus ({d['epochs']})")
    p.add_argument("--alpha", "-alpha", dest="alpha", type=float, default=None,
                   help="starting learning rate (0.025 for skip-gram, 0.05 for CBOW, as word2vec.c)")
    p.add_argument("--min-alpha", dest="min_alpha", type=float, default=None,
                   help="final learning rate (alpha * 1e-4, as word2vec.c)")
    add_threads_argument(p, "with --mode sharded: threads per client actor, default 1", word2vec_c=True)
    p.add_argument("--seed", dest="seed", type=int, default=1, help="random seed (%(default)s)")
    p.add_argument("--algo", choices=ALL_ALGORITHMS, default=None,
                   help=f"training algorithm ({DEFAULT_ALGO} on cpu, classic for CBOW, {DEFAULT_GPU_ALGO} on --device "
                   "cuda); classic = "
                   "word2vec.c's Hogwild SGNS; full-w2v runs on the GPU only, par on both")
    p.add_argument("--batch-size", dest="batch_size", type=int, default=0,
                   help="hogbatch: words sharing one draw of negatives (%(default)s = the algorithm's own: "
                   f"skip-gram, a window's 2*window+1 context words; CBOW, {CBOW_DEFAULT_BATCH} consecutive centers)")
    p.add_argument("--par-batch", dest="par_batch", type=int, default=24,
                   help="par: repulsion minibatch size B (%(default)s; 0 = whole sentence)")
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
                   help="replicas (default): data-parallel copies of the model with frequency-ranked sync (Ji et al.); "
                   "sharded: column-sharded parameter servers for vocabularies too big for one machine "
                   "(Ordentlich et al.)")
    g.add_argument("--replicas", type=int, default=None, help="replica actors (default: N of local:N)")
    g.add_argument("--shards", type=int, default=None,
                   help="sharded mode: parameter-server shards, each a process holding dim / N columns of the model "
                   "(default: 1 on --cluster local:N, one machine; 2 on a cluster joined)")
    g.add_argument("--clients", type=int, default=None, help="sharded mode: client actors")
    g.add_argument("--minibatch-words", dest="minibatch_words", type=int, default=None,
                   help="sharded mode: input words per minibatch, one shard call each (default: "
                   f"{SHARDED_DEFAULTS['fused_minibatch_words']} with one shard and fused calls, the default on "
                   "--cluster local:N; with several shards or --shard-calls split, "
                   f"{SHARDED_DEFAULTS['in_flight_heavy']} words in flight over all client threads with --sample "
                   f"{_number(SHARDED_DEFAULTS['light_subsampling'])} or less, {SHARDED_DEFAULTS['in_flight_light']} "
                   f"with more (the default {_number(_STYLE_DEFAULTS['parvec']['sample'])}) or none, i.e. that / "
                   f"(clients x threads), at least {SHARDED_DEFAULTS['min_minibatch_words']}; --minibatch-formation "
                   f"contiguous: {SHARDED_DEFAULTS['in_flight_contiguous']} / (clients x threads), at most 256)")
    g.add_argument("--minibatch-formation", dest="minibatch_formation", choices=("interleaved", "contiguous"),
                   default="interleaved", help="sharded mode: interleaved (default: a minibatch's input words are "
                   "taken far apart in the corpus, the paper's interleaved formation; a burst of one word in a table "
                   "or markup is spread over many minibatches) or contiguous (consecutive words)")
    g.add_argument("--negatives-per", dest="negatives_per", choices=("window", "pair"), default=None,
                   help="sharded mode: window (default: an input word's context words share its negatives, as "
                   "hogbatch does: the same dot products, a third of the rows a shard touches) or pair (each "
                   "input-context pair draws its own negatives, the paper's algorithm)")
    g.add_argument("--wire-floats", dest="wire_floats", choices=("float32", "float16"), default=None,
                   help="sharded mode: how the dot products and gradient coefficients travel between clients and "
                   "shards (float16, the default: half the bytes, the vectors stay float32; float32: the exact "
                   "partial sums)")
    g.add_argument("--shard-calls", dest="shard_calls", choices=("fused", "split"), default=None,
                   help="sharded mode with one shard: fused (default: a call trains its minibatch whole in the shard, "
                   "which holds every column; only word indices and learning rates travel) or split (partial dot "
                   "products to the client and coefficients back, as with several shards, which always split)")
    g.add_argument("--update-cap", dest="update_cap", type=int, default=None, metavar="N",
                   help="sharded mode, split calls: the most updates one vector row takes from one minibatch's "
                   "dot products, all read before any of them lands; a row with more (the most frequent words' "
                   "output rows) has them scaled down to N (default 16; 0: all summed, the paper's adjust)")
    g.add_argument("--snapshot-interval", dest="snapshot_interval", type=float, default=None, metavar="SECONDS",
                   help="sharded mode: seconds between consistent snapshots of the shards inside an epoch (default: "
                   "scaled with a shard's size, a snapshot's write at most 5%% of the time, at least 60 s)")
    g.add_argument("--shard-memory", dest="shard_memory", default=None, metavar="BYTES",
                   help="sharded mode: cap each shard process's memory (RLIMIT_DATA), e.g. 3G; a shard whose columns "
                   "do not fit stops the run before training")
    g.add_argument("--sync-words", dest="sync_words", type=int, default=200_000,
                   help="replicas: average the hottest rows every this many trained words per replica (%(default)s)")
    g.add_argument("--min-sync-words", dest="min_sync_words", type=int, default=1024,
                   help="replicas: rows averaged at the smallest sync (%(default)s); sync j averages 2^ctz(j) times "
                   "that")
    g.add_argument("--full-sync-times", dest="full_sync_times", type=int, default=0,
                   help="replicas: extra evenly spaced full-model syncs per epoch (%(default)s)")
    g.add_argument("--sync-overlap", dest="sync_overlap", action=argparse.BooleanOptionalAction, default=True,
                   help="replicas: run each sync of the hottest rows while the next part trains and apply it at that "
                   "part's end (default); --no-sync-overlap holds training until every sync ends (the paper's)")
    g.add_argument("--replica-alpha-scale", dest="replica_alpha_scale", choices=("none", "sqrt", "linear"),
                   default="linear", help="replicas: multiply the starting learning rate by 1, sqrt(N) or N for "
                   "N replicas (%(default)s; docs/benchmarks/clusters.md has the measurement)")


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
    from parvec.cli.flags import explicit_flags
    from parvec.distributed.cluster import Cluster

    # --threads given: the threads of each replica (or sharded client), honoured or refused when they do not fit
    # the cluster's CPUs; left out, parvec fits them (parvec.distributed.replicas.replica_threads).
    threads = args.threads if "threads" in explicit_flags(args) or getattr(args, "threads_restored", False) else None
    return Cluster(args.cluster, mode=args.cluster_mode, replicas=args.replicas, shards=args.shards,
                   clients=args.clients, threads_per_actor=threads, sync_words=args.sync_words,
                   min_sync_words=args.min_sync_words, full_sync_times=args.full_sync_times,
                   sync_overlap=getattr(args, "sync_overlap", True),
                   alpha_scale=getattr(args, "replica_alpha_scale", "linear"))


def register(subparsers: Any) -> None:
    """Add ``parvec train``."""
    p = subparsers.add_parser(
        "train",
        help="train word vectors on a text file",
        description="Train word vectors on a text file (one sentence per line; .gz/.bz2/.xz read directly; - reads "
        "standard input). word2vec.c's flags are accepted too. Defaults: `-train FILE` takes word2vec.c's for every "
        "flag left out (-cbow 1, -alpha 0.05 for CBOW and 0.025 for skip-gram, -sample 1e-3, -iter 5, -min-count 5, "
        "-window 5, -negative 5, -hs 0, -size 100, -binary 0); `parvec train INPUT` takes parvec's (skip-gram, "
        "alpha 0.025, the others the same, binary when the output ends .bin). A flag given counts in either "
        "spelling; the first line printed says which defaults applied.",
        epilog="Outputs: before the corpus is read, every output (-o, --report, --save-vocab, --save-model) gets a "
        "temporary file in its directory and --checkpoint-dir is created, so a path that cannot be written fails at "
        "once; the outputs are renamed into place only when the run succeeds. An output that is an input (the "
        "corpus, a --resume model, under any name or hard link) or another output is refused. A closed standard "
        "output or error (e.g. `2>&1 | head`) does not stop the run. Exit status: 0 when every output was written, "
        "2 on an error (the message names the file or flag), 130 when interrupted.",
    )
    p.add_argument("input", nargs="*", help="training text; - reads standard input (or -train FILE: word2vec.c's "
                   "defaults); several files, a directory or a quoted glob ('shards/*.txt.gz') are one corpus. A "
                   "directory is read as its own regular files (and links to one), by name, not recursively: hidden "
                   "and empty files are left out, subdirectories, FIFOs, sockets and devices are skipped and named "
                   "in a warning, a link to nothing is an error")
    p.add_argument("-train", dest="train_file", help=argparse.SUPPRESS)
    p.add_argument("-o", "--output", "-output", dest="output", help="output vectors: .txt/.vec (text), "
                   ".bin (with --binary), .npy (NumPy + vocab file); - writes them to standard output (the text "
                   "format unless --binary)")
    add_training_arguments(p)
    min_count = _STYLE_DEFAULTS["parvec"]["min_count"]
    p.add_argument("--min-count", "-min-count", dest="min_count", type=int, default=min_count,
                   help=f"discard words seen fewer times ({min_count})")
    p.add_argument("--max-vocab-size", dest="max_vocab_size", type=int, default=None,
                   help="prune rare words while counting to keep at most this many (bounded memory)")
    p.add_argument("--max-final-vocab", dest="max_final_vocab", type=int, default=None,
                   help="raise min-count so that at most this many words remain")
    p.add_argument("--max-sentence-length", dest="max_sentence_length", type=int, default=10000,
                   help="split longer lines into pieces of this many tokens (%(default)s)")
    p.add_argument("--lowercase", action="store_true", help="lower-case the text")
    p.add_argument("--unicode-errors", dest="unicode_errors", choices=("strict", "replace", "ignore"),
                   default="strict", help="what to do with invalid UTF-8 (strict, the default: stop with an error "
                   "naming the line; replace or ignore: read it anyway)")
    p.add_argument("--binary", "-binary", dest="binary", type=int, nargs="?", const=1, default=None,
                   help="write word2vec binary format (also -binary 1)")
    p.add_argument("--cache-dir", dest="cache_dir", default=None,
                   help=f"cache of encoded corpora ({default_cache_dir()})")
    p.add_argument("--no-cache", dest="no_cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--save-model", dest="save_model", help="also save the full model (directory) to continue training")
    p.add_argument("--checkpoint-dir", dest="checkpoint_dir", help="save the model here (DIR/checkpoint) after every "
                   "epoch; DIR is created if its parent exists")
    p.add_argument("--checkpoint-every", dest="checkpoint_every", metavar="DURATION|WORDS", default=None,
                   help="also checkpoint mid-epoch into --checkpoint-dir at the first chunk boundary after this long "
                   "(30s, 10m, 2h) or this many words (2000000, 500k, 50M); the last two are kept as DIR/mid-*")
    p.add_argument("--on-checkpoint-error", dest="on_checkpoint_error", choices=("stop", "continue"),
                   default="stop", help="a checkpoint that cannot be written (a full disk): stop with the error, the "
                   "previous checkpoint intact for --resume (stop, the default), or warn and train on (continue)")
    p.add_argument("--resume", dest="resume", help="finish the run saved in this model/checkpoint directory (or the "
                   "latest checkpoint in a --checkpoint-dir) from its exact position; its flags are the saved ones")
    p.add_argument("--report", dest="report", help="write a JSON report of the run to this file, with its time "
                   "series (words/s, loss, learning rate, memory); draw it with `parvec report`")
    p.add_argument("--report-interval", dest="report_interval", type=float, default=2.0,
                   help="seconds between the report's time-series samples (%(default)g)")
    p.add_argument("--eval-every-epoch", dest="eval_every_epoch", action="store_true",
                   help="score WS-353, SimLex-999 and the Google analogies after every epoch, with the sets shipped "
                   "with parvec (a copy in $PARVEC_EVAL_DIR or ../shared/data/eval is read first); the scores go "
                   "into --report and on stderr")
    g = p.add_argument_group("word2vec.c's flags (with -train FILE every default is word2vec.c's; see above)")
    g.add_argument("-cbow", "--cbow", dest="cbow", type=_zero_one_arg, nargs="?", const=1, default=None,
                   metavar="{0,1}", help="1 (or --cbow alone): CBOW (gensim's sg=0), 0: skip-gram (default 1 with "
                   f"-train, 0 with INPUT); --algo {DEFAULT_CBOW_ALGO} (CBOW's default) runs "
                   f"{_CBOW_KERNELS[DEFAULT_CBOW_ALGO]}, --algo {_OTHER_CBOW_ALGO} {_CBOW_KERNELS[_OTHER_CBOW_ALGO]}")
    g.add_argument("--cbow-mean", dest="cbow_mean", type=int, default=1, choices=(0, 1),
                   help="CBOW: 1 averages the window's input vectors (word2vec.c, gensim's default), 0 sums them")
    g.add_argument("-hs", "--hs", dest="hs", type=_zero_one_arg, nargs="?", const=1, default=None,
                   metavar="{0,1}", help="1 (or --hs alone): hierarchical softmax, word2vec.c's Huffman tree; with "
                   "--negative 0 alone, else together with negative sampling; word2vec.c's loop for --algo classic "
                   "or hogbatch, CPU only (0)")
    g.add_argument("-save-vocab", "--save-vocab", dest="save_vocab", metavar="FILE",
                   help="write the vocabulary as word2vec.c does: '</s> SENTENCES', then 'word count' lines by "
                   "descending count")
    g.add_argument("-read-vocab", "--read-vocab", dest="read_vocab", metavar="FILE",
                   help="take the vocabulary and its counts from a 'word count' file (word2vec.c's -save-vocab "
                   "layout) instead of counting the corpus: corpus words not in it are dropped, --min-count applies "
                   "to the file's counts")
    g.add_argument("-debug", "--debug", dest="debug", type=int, default=None, metavar="{0,1,2}",
                   help="0: print nothing but errors; 1: the summary lines; 2 (default): also the progress bar when "
                   "stderr is a terminal (--progress / --no-progress decide the bar when given)")
    g.add_argument("-classes", "--classes", dest="classes", type=int, default=0, metavar="K",
                   help="write 'word class' lines (k-means of the unit-length vectors into K classes, "
                   "scikit-learn's KMeans seeded by --seed) to the output instead of the vectors, as text whatever "
                   "-binary says, as word2vec.c (default 0: the vectors)")
    # Left out, these take the style's defaults (resolve_defaults): None marks "not given".
    p.set_defaults(func=run_train, dim=None, window=None, negative=None, sample=None, epochs=None, alpha=None,
                   min_count=None)


def _zero_one_arg(text: str) -> int:
    """``-cbow`` / ``-hs`` value: 0 or 1.

    Example:
        >>> _zero_one_arg("1")
        1
    """
    if text.strip() not in ("0", "1"):
        raise argparse.ArgumentTypeError(f"expected 0 or 1, got {text!r}")
    return int(text)


# The defaults of the two styles; alpha is 0.05 for CBOW and 0.025 for skip-gram in both (word2vec.c's rule).
_STYLE_DEFAULTS: dict[str, dict[str, Any]] = {
    "word2vec.c": {"cbow": 1, "sample": 1e-3, "epochs": 5, "min_count": 5, "window": 5, "negative": 5, "hs": 0,
                   "dim": 100, "binary": 0},
    "parvec": {"cbow": 0, "sample": 1e-3, "epochs": 5, "min_count": 5, "window": 5, "negative": 5, "hs": 0,
               "dim": 100, "binary": None},
}
# How each setting is spelled in the first line, in each style.
_FLAG_NAMES = {
    "word2vec.c": {"cbow": "cbow", "alpha": "alpha", "sample": "sample", "epochs": "iter", "min_count": "min-count",
                   "window": "window", "negative": "negative", "hs": "hs", "dim": "size", "binary": "binary"},
    "parvec": {"cbow": "cbow", "alpha": "alpha", "sample": "sample", "epochs": "epochs", "min_count": "min-count",
               "window": "window", "negative": "negative", "hs": "hs", "dim": "dim", "binary": "binary"},
}


def _number(value: Any) -> str:
    """A flag's value as word2vec.c's documentation writes it: ``1e-3``, ``0.05``, ``5``.

    Example:
        >>> _number(1e-3), _number(0.05), _number(5), _number(0.0)
        ('1e-3', '0.05', '5', '0')
    """
    if isinstance(value, float) and value != 0 and abs(value) < 0.01:
        mantissa, exponent = f"{value:.6e}".split("e")
        return f"{float(mantissa):g}e{int(exponent)}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def resolve_defaults(args: argparse.Namespace) -> str:
    """Fill every flag left out with its style's default and return the line that says which applied.

    ``-train FILE`` selects word2vec.c's defaults, ``INPUT`` parvec's (see the module's docstring); naming
    the training file both ways is refused.

    Example:
        >>> ns = argparse.Namespace(train_file="c.txt", input=None, cbow=None, hs=None, dim=200, window=None,
        ...     negative=None, sample=None, epochs=None, alpha=None, min_count=None, binary=None)
        >>> resolve_defaults(ns)[:76]
        'word2vec.c defaults (the corpus given by -train): cbow 1, alpha 0.05, sample'
        >>> ns.cbow, ns.alpha, ns.dim, ns.binary
        (1, 0.05, 200, 0)
    """
    if args.train_file is not None and args.input:
        raise ParvecError(f"the training file is named twice ({' '.join(args.input)} and -train "
                          f"{args.train_file}): give -train FILE (word2vec.c's defaults) or INPUT (parvec's "
                          "defaults), not both")
    style = "word2vec.c" if args.train_file is not None else "parvec"
    defaults = dict(_STYLE_DEFAULTS[style])
    names = _FLAG_NAMES[style]
    applied, given = [], []
    for key in ("cbow", "alpha", "sample", "epochs", "min_count", "window", "negative", "hs", "dim", "binary"):
        value = getattr(args, key)
        if key == "alpha":
            default = 0.05 if args.cbow else 0.025  # cbow is resolved first
        else:
            default = defaults[key]
        if value is None:
            setattr(args, key, default)
            if default is not None:
                applied.append(f"{names[key]} {_number(default)}")
        else:
            given.append(f"{names[key]} {_number(value)}")
    if style == "word2vec.c":
        head = "word2vec.c defaults (the corpus given by -train)"
    else:
        head = "parvec defaults (the corpus given as INPUT)"
        if args.binary is None:
            applied.append("binary when the output ends .bin")
    line = f"{head}: {', '.join(applied) if applied else 'none (every flag given)'}"
    if given:
        line += f"; given: {', '.join(given)}"
    return line


def train_inputs(args: argparse.Namespace, source: str) -> list[Any]:
    """Every file ``parvec train`` reads: the corpus (unless ``-``), the resumed model's files, evaluation files.

    Example:
        >>> [u.label for u in train_inputs(argparse.Namespace(resume=None, eval_every_epoch=False), "c.txt")]
        ['the training corpus']
    """
    from parvec.cli.outputs import Use, directory_inputs
    from parvec.corpus import expand_inputs

    uses = [] if source == "-" else [Use("the training corpus", p)
                                   for p in expand_inputs(source, say_skipped=False) or [Path(source)]]
    if getattr(args, "read_vocab", None):
        uses.append(Use("the vocabulary -read-vocab", Path(args.read_vocab)))
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
    from parvec.fileio import is_stream

    why = ("--no-cache" if args.no_cache else "standard input is read once, never cached" if source == "-"
           else f"{source} is a stream (pipe or FIFO), read once, never cached" if isinstance(source, str)
           and is_stream(source)
           else "a resumed run encodes with the model's vocabulary" if args.resume else "no cache for this input")
    return f"encoded-corpus cache: not used ({why})"


def _how_ran(config: Any, report: dict[str, Any] | None = None) -> str:
    """What trained and where, for the summary line: the algorithm (:func:`_what_ran`) and this process's threads,
    or from the driver's report (``model.run_report``) a cluster's replicas and syncs or shards and clients, a
    GPU's device and threads per block.

    Example:
        >>> from parvec.config import TrainConfig
        >>> _how_ran(TrainConfig(threads=2))
        'hogbatch, 2 threads'
        >>> _how_ran(TrainConfig(), {"mode": "replicas", "replicas": 2, "threads_per_replica": 1, "syncs": 42,
        ...                          "bytes_synced": 12_900_000})
        'hogbatch, 2 replicas x 1 thread, 42 syncs, 12.3 MiB synced'
        >>> _how_ran(TrainConfig(), {"shards": 2, "clients": 2, "client_threads": 1})
        'sharded: 2 shards, 2 clients x 1 thread'
    """
    from parvec.cli.run_report import cluster_summary, threads_phrase

    report = report or {}
    cluster = cluster_summary(report)
    if report.get("mode") == "replicas":
        return f"{_what_ran(config)}, {cluster}"
    if cluster is not None:  # the sharded driver trains skip-gram with its own kernels, whatever algo says
        return cluster
    gpu = report.get("gpu")
    if gpu:
        return f"{_what_ran(config)} on {gpu['device']['name']}, {gpu['threads_per_block']} threads per block"
    return f"{_what_ran(config)}, {threads_phrase(config.threads)}"


def _what_ran(config: Any) -> str:
    # "hogbatch" for skip-gram; "CBOW (mean) hogbatch, alpha 0.05" for CBOW: what trained, in words.
    hs = " with hierarchical softmax: word2vec.c loop" if config.hs else ""
    if config.sg:
        return f"{config.algo}{hs}"
    return f"CBOW ({'mean' if config.cbow_mean else 'sum'}) {config.algo}{hs}, alpha {config.alpha:g}"


def save_vectors(kv: Any, output: str, binary: bool) -> None:
    """Write vectors by the output's extension: ``.npy`` or word2vec text/binary."""
    if output.endswith(".npy"):
        kv.save(output)
    else:
        kv.save_word2vec_format(output, binary=binary)


def word_classes(kv: Any, k: int, seed: int = 1) -> np.ndarray:
    """word2vec.c's ``-classes K``: a class in ``0..K-1`` for every word, by k-means of the unit-length vectors.

    word2vec.c assigns each word to the centroid of largest dot product with its unit-length centroids;
    here scikit-learn's ``KMeans`` (``random_state=seed``, so runs repeat) clusters the unit-length vectors,
    whose Euclidean distances order as their cosines do.

    Example:
        >>> from parvec.keyedvectors import KeyedVectors
        >>> kv = KeyedVectors(np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], dtype=np.float32), list("abcd"))
        >>> c = word_classes(kv, 2); bool(c[0] == c[1] and c[2] == c[3] and c[0] != c[2])
        True
    """
    from sklearn.cluster import KMeans

    if not 1 <= k <= len(kv):
        raise ParvecError(f"-classes {k}: must be between 1 and the vocabulary size ({len(kv)})")
    km = KMeans(n_clusters=k, n_init=3, random_state=seed)
    return km.fit_predict(kv.get_normed_vectors().astype(np.float64)).astype(np.int64)


def write_classes(path: str | os.PathLike[str], words: list[str], classes: np.ndarray) -> None:
    """Write word2vec.c's ``-classes`` output atomically: one ``word class`` line per word, in vocabulary order.

    Example:
        >>> write_classes("classes.txt", ["the", "cat"], np.array([1, 0]))  # doctest: +SKIP
    """
    from parvec.fileio import atomic_output

    with atomic_output(path, "w") as f:
        for w, c in zip(words, classes.tolist(), strict=True):
            f.write(f"{w} {c}\n")


def run_train(args: argparse.Namespace) -> int:
    """Run ``parvec train``."""
    debug = 2 if args.debug is None else args.debug
    if debug not in (0, 1, 2):
        raise ParvecError(f"-debug must be 0, 1 or 2, got {args.debug}")
    if args.progress is None and debug < 2:
        args.progress = False
    if debug == 0:  # silent: nothing on stderr but the error, if any (printed by the caller)
        with contextlib.redirect_stderr(io.StringIO()):
            return _run_train(args)
    return _run_train(args)


def _run_train(args: argparse.Namespace) -> int:
    defaults_line = resolve_defaults(args)  # refuses a training file named both ways
    if getattr(args, "cluster", None):
        _check_mode(args)
    inputs = list(args.input or [])
    source: Any = args.train_file or (inputs[0] if len(inputs) == 1 else inputs or None)
    if isinstance(source, list) and "-" in source:
        raise ParvecError("standard input ('-') cannot be one of several inputs")
    if not source:
        raise ParvecError("no training file: parvec train INPUT -o OUTPUT (or word2vec.c's -train FILE -output OUTPUT)")
    if not args.output and not args.save_model:
        raise ParvecError("no output: give -o OUTPUT (and/or --save-model DIR)")
    if args.classes:
        if args.classes < 0:
            raise ParvecError(f"-classes must be 0 (write vectors) or a positive number of classes, got {args.classes}")
        if not args.output:
            raise ParvecError("-classes K writes 'word class' lines to -output: give -output FILE")
        if args.output.endswith(".npy"):
            raise ParvecError(f"-classes K writes 'word class' text lines: -output {args.output} names a .npy file")
    for flag, value in (("-read-vocab", args.read_vocab), ("-classes", args.classes)):
        if value and args.resume:
            raise ParvecError(f"{flag} cannot be combined with --resume (the resumed model has its vocabulary and "
                              "writes its vectors)")
    if getattr(args, "cluster", None) and getattr(args, "cluster_mode", None) == "sharded":
        from parvec.capabilities import pipeline_refusal

        for flag, value in (("-read-vocab", args.read_vocab), ("-classes", args.classes),
                            ("--eval-every-epoch", args.eval_every_epoch)):
            if value:
                raise pipeline_refusal(flag)
    if not args.resume:
        print(defaults_line, file=sys.stderr)
    binary = bool(args.binary) if args.binary is not None else str(args.output or "").endswith(".bin")
    cache_dir = None if args.no_cache else (args.cache_dir or default_cache_dir())
    if args.checkpoint_every is not None:
        from parvec.engine import parse_interval

        parse_interval(args.checkpoint_every)
        if not args.checkpoint_dir and not args.resume:
            raise ParvecError("--checkpoint-every needs --checkpoint-dir DIR (where the checkpoints go)")
    resumed = _prepare_resume(args) if args.resume else None
    if getattr(args, "cluster", None):  # given, or a resumed checkpoint's
        from parvec.config import TrainConfig
        from parvec.distributed import check_cpus

        if args.resume:
            _check_mode(args)  # the resumed checkpoint's cluster, with the flags given now
        # More replicas x threads (or shards and clients) than local:N has CPUs: refused before Ray starts.
        check_cpus(cluster_from_args(args), TrainConfig(threads=args.threads))
    if getattr(args, "device", "cpu") == "cuda":  # before reading the corpus: say now if there is no GPU
        from parvec.config import TrainConfig
        from parvec.gpu import require_device

        TrainConfig(algo=args.algo or DEFAULT_GPU_ALGO, device="cuda", sg=not args.cbow, hs=bool(args.hs),
                    negative=args.negative).validate()  # a CPU-only --algo, CBOW or --hs first
        require_device()

    # Before anything is read: no output may be an input or another output, and every output gets its
    # temporary file (or directory) in its target directory now, so an unwritable path fails at once.
    check_paths(train_inputs(args, source), train_outputs(args))
    with OutputPlan() as plan:
        out = {
            "output": plan.file("-o", args.output, npy=args.output.endswith(".npy"), stdout=True,
                                binary=binary and not args.classes) if args.output else None,
            "report": plan.file("--report", args.report) if args.report else None,
            "save_vocab": plan.file("--save-vocab", args.save_vocab) if args.save_vocab else None,
            "save_model": plan.directory("--save-model", args.save_model) if args.save_model else None,
        }
        if args.checkpoint_dir:
            plan.checkpoint_dir("--checkpoint-dir", args.checkpoint_dir, entry="checkpoint")
        done = _train_and_write(args, source, binary, cache_dir, out, resumed)
        plan.commit()
    for line in done:
        print(line, file=sys.stderr)
    return 0


def _check_mode(args: argparse.Namespace) -> None:
    # What the cluster's mode cannot train (parvec.capabilities), before reading; after the defaults, since
    # word2vec.c's -train FILE means CBOW.  An explicit --algo with --mode sharded (which runs its own kernels).
    from parvec import capabilities

    capabilities.check_placement(getattr(args, "device", "cpu"), args.cluster)
    if args.cluster_mode == "sharded" and getattr(args, "algo", None) is not None:
        raise capabilities.sharded_algo_refusal(args.algo)
    capabilities.check(args.cluster_mode, cbow=bool(args.cbow), hs=bool(args.hs),
                       mid_epoch_checkpoints=args.checkpoint_every is not None)


def _prepare_resume(args: argparse.Namespace) -> Any:
    # Before any output is reserved: load the checkpoint (the latest one when --resume names a checkpoint
    # directory), refuse flags that contradict it, and take its cluster, threads, checkpoint directory and
    # interval.  A sharded run's checkpoint is read without its matrices and words (ShardedWord2Vec).
    from parvec import model_io
    from parvec.checkpoints import EPOCH_END, find_for_resume
    from parvec.cli.flags import explicit_flags
    from parvec.run import graph_run_refusal
    from parvec.word2vec import load_for_resume

    sharded = (model_io.read_meta(find_for_resume(args.resume)[0]) or {}).get("sharded") is not None
    model: Any
    if sharded:  # its matrices are the shards' files, its words the vocabulary's partitions
        from parvec.distributed.pipeline import ShardedWord2Vec

        model, path, note = ShardedWord2Vec.load_for_resume(args.resume)
    else:
        model, path, note = load_for_resume(args.resume)
    if model.graph_run is not None:
        raise ParvecError(graph_run_refusal(model.graph_run, path))
    args.resume = str(path)
    if note:
        print(note, file=sys.stderr)
    given = explicit_flags(args)
    more, cluster_lines = restore_cluster(args, model.saved_cluster, model.saved_cluster_recorded, given)
    refuse_saved_flags(args, model, path, given, more)
    for line in cluster_lines:
        print(line, file=sys.stderr)
    begun = model.epochs_trained + (1 if model.position is not None else 0)
    if "epochs" in given and args.epochs != model.config.epochs:
        if args.epochs < max(begun, 1):
            raise ParvecError(f"cannot resume {path} with --epochs {args.epochs}: it has already "
                              f"{'begun' if model.position is not None else 'done'} {begun} of its "
                              f"{model.config.epochs} epochs")
        print(f"--epochs {args.epochs} (the checkpoint planned {model.config.epochs}): the learning rate now decays "
              f"from its value at the checkpoint to the final rate at the end of epoch {args.epochs}, so the vectors "
              f"differ from an uninterrupted {model.config.epochs}-epoch run", file=sys.stderr)
        resume_epochs = args.epochs
    else:
        resume_epochs = None
    record = model.saved_cluster if model.saved_cluster_recorded else None
    if record is not None:  # threads per replica or client (the cluster's), restored by restore_cluster
        print(threads_line(record, args.threads if "threads" in given else None, model.config.threads),
              file=sys.stderr)
        if "threads" in given:
            model.config.threads = args.threads
        elif record.get("mode") == "replicas" and record.get("threads_per_actor") is None:
            args.threads = model.config.threads  # fitted to the cluster's CPUs again, as it was trained
    elif "threads" in given and args.threads != model.config.threads:
        print(f"--threads {args.threads} overrides the checkpoint's {model.config.threads}", file=sys.stderr)
        model.config.threads = args.threads
    else:
        print(f"threads: {model.config.threads}, as the checkpoint was trained (--threads overrides)", file=sys.stderr)
        args.threads = model.config.threads
    if not args.checkpoint_dir and (path.name == EPOCH_END or path.name.startswith("mid-e")):
        args.checkpoint_dir = str(path.parent)
        print(f"checkpoints continue in {path.parent} (--checkpoint-dir overrides)", file=sys.stderr)
    if args.checkpoint_every is None and args.checkpoint_dir and model.saved_checkpoint_every:
        args.checkpoint_every = model.saved_checkpoint_every
        print(f"mid-epoch checkpoints every {args.checkpoint_every}, as before (--checkpoint-every overrides)",
              file=sys.stderr)
    return model, resume_epochs


def _train_and_write(args: argparse.Namespace, source: str, binary: bool, cache_dir: Any,
                     out: dict[str, Any], resumed: Any = None) -> list[str]:
    # Reads, trains and writes every output into its reserved temporary; returns the lines to print
    # once run_train has renamed them into place.  --mode sharded's model (parvec.distributed.pipeline) holds a
    # Ray session and a work directory while it is open; it goes through the same steps.
    from parvec.distributed.pipeline import ShardedWord2Vec

    pipeline = bool(getattr(args, "cluster", None)) and getattr(args, "cluster_mode", None) == "sharded"
    model = resumed[0] if resumed is not None else None
    if pipeline and model is not None and not isinstance(model, ShardedWord2Vec):  # a whole model's checkpoint
        if not (model.saved_cluster_recorded and (model.saved_cluster or {}).get("mode") == "sharded"):
            raise ParvecError(f"--resume {args.resume} is not a sharded run's checkpoint: resume it without --mode "
                              "sharded (it trains where it was trained)")
        pipeline = False  # Word2Vec(cluster=Cluster(mode="sharded"))'s checkpoint: it resumes as it trained
    if not pipeline:
        return _train_flow(args, source, binary, cache_dir, out, resumed)
    from parvec.cli.sharded import new_model, sharded_cluster

    if model is None:
        model = new_model(args, cluster_from_args(args), cache_dir)
    else:
        model.cluster, model.cache_dir = sharded_cluster(args, cluster_from_args(args)), cache_dir
        model.config = dataclasses.replace(model.config, threads=args.threads, progress=args.progress).validate()
    with model:
        return _train_flow(args, source, binary, cache_dir, out, (model, resumed[1]) if resumed else None, model)


def _train_flow(args: argparse.Namespace, source: Any, binary: bool, cache_dir: Any, out: dict[str, Any],
                resumed: Any, sharded: Any = None) -> list[str]:
    # The one flow of parvec train: the corpus (encoded here, or on the cluster by --mode sharded's model), its
    # lines and memory check, the vocabulary file, training through the run layer, the outputs, the report.
    done: list[str] = []
    t0 = time.perf_counter()
    model, encoded, resume_epochs = _read_corpus(args, source, cache_dir, resumed, sharded)
    read_seconds = time.perf_counter() - t0
    memory_estimate = _describe_corpus(args, source, cache_dir, model, encoded, read_seconds)
    if args.save_vocab:
        if sharded is not None:
            out["save_vocab"].write(model.save_vocab)
        else:
            from parvec.vocab import write_vocab_file

            vocab = encoded.vocab
            out["save_vocab"].write(lambda path: write_vocab_file(path, vocab, encoded.n_sentences))
        done.append(f"wrote the vocabulary ({_vocab_size(encoded):,} words) to {args.save_vocab}")
    stats, resumed_from = _train(args, model, encoded, resume_epochs)
    t_out = time.perf_counter()
    done += _write_outputs(args, out, model, binary, _vocab_size(encoded))
    if args.report:
        from parvec.cli.run_report import write_report

        report = _report(args, source, binary, model, encoded, stats, read_seconds, memory_estimate, resumed_from,
                         time.perf_counter() - t_out if sharded is not None else None)
        out["report"].write(lambda path: write_report(path, report))
        done.append(f"wrote the report to {args.report}")
    return done


def _vocab_size(encoded: Any) -> int:
    # An encoded corpus's vocabulary size (a sharded corpus holds its count classes, not its words).
    n: int = encoded.n_words if hasattr(encoded, "classes") else len(encoded.vocab)
    return n


def _read_corpus(args: argparse.Namespace, source: Any, cache_dir: Any, resumed: Any,
                 sharded: Any = None) -> tuple[Any, Any, int | None]:
    # The model (new, or the resumed checkpoint's with this run's settings) and the corpus it encoded;
    # returns (model, encoded corpus, --epochs of a resumed run or None).
    from parvec.cli.flags import explicit_flags
    from parvec.word2vec import Word2Vec

    if sharded is not None:  # counted and encoded on the cluster; a resumed run's input checked against it
        encoded = sharded.encode(corpus_file=source)
        if args.resume:
            for line in describe_resume(sharded.config, sharded.state, args.resume, encoded.tokens, units="units",
                                        epochs=resumed[1]):
                print(line, file=sys.stderr)
        return sharded, encoded, resumed[1] if resumed else None
    if args.resume:
        model, resume_epochs = resumed
        model.config.progress = args.progress
        model.cache_dir = cache_dir
        model.cluster = _resumed_cluster(args, model)
        # Counted afresh (the cache serves it): train(resume=True) refuses a corpus whose vocabulary or token
        # count differs from the checkpoint's.
        encoded = model.encode(corpus_file=source)
        for line in describe_resume(model.config, model.state, args.resume, encoded.n_tokens, epochs=resume_epochs):
            print(line, file=sys.stderr)
        return model, encoded, resume_epochs
    model = Word2Vec(
        vector_size=args.dim, window=args.window, negative=args.negative, sample=args.sample,
        min_count=args.min_count, max_vocab_size=args.max_vocab_size, max_final_vocab=args.max_final_vocab,
        epochs=args.epochs, alpha=args.alpha, min_alpha=args.min_alpha, workers=args.threads,
        seed=args.seed, algo=args.algo, max_sentence_length=args.max_sentence_length,
        batch_size=args.batch_size, par_batch=args.par_batch, compute_loss=args.compute_loss,
        progress=args.progress, cache_dir=cache_dir, lowercase=args.lowercase,
        unicode_errors=args.unicode_errors, device=args.device, cluster=cluster_from_args(args), hs=args.hs,
        sg=0 if args.cbow else 1, cbow_mean=args.cbow_mean,
    )
    # --threads left out (all cores, its default): a cluster's replicas fit them to its CPUs without a note.
    model.workers_given = "threads" in explicit_flags(args)
    read_vocab = None
    if args.read_vocab:
        from parvec.vocab import read_vocab_file

        read_vocab = read_vocab_file(args.read_vocab, min_count=args.min_count,
                                     max_final_vocab=args.max_final_vocab)
    encoded = model.encode(corpus_file=source, vocab=read_vocab)
    if read_vocab is not None:
        unseen = int(np.count_nonzero(np.bincount(encoded.tokens, minlength=len(read_vocab)) == 0))
        print(f"vocabulary read from {args.read_vocab}: {len(read_vocab):,} words reach min-count "
              f"{args.min_count}; corpus words not in it are dropped"
              + (f"; {unseen:,} of its words never occur in the corpus and keep their random initial "
                 "vectors (as word2vec.c)" if unseen else ""), file=sys.stderr)
    return model, encoded, None


def _resumed_cluster(args: argparse.Namespace, model: Any) -> Any:
    # Where a resumed model trains: the cluster its checkpoint recorded, with what may change given now (another
    # --cluster SPEC, --threads per actor, --clients; _prepare_resume refused the rest); a checkpoint that recorded
    # nothing trains where the flags say.
    if not model.saved_cluster_recorded or model.saved_cluster is None:
        return cluster_from_args(args)
    import dataclasses

    from parvec.cli.flags import explicit_flags
    from parvec.distributed import cluster_from_record

    given = explicit_flags(args)
    changes: dict[str, Any] = {"spec": args.cluster}
    if "threads" in given:
        changes["threads_per_actor"] = args.threads
    if "clients" in given and model.saved_cluster.get("mode") == "sharded":
        changes["clients"] = args.clients
    return dataclasses.replace(cluster_from_record(model.saved_cluster), **changes)


def _describe_corpus(args: argparse.Namespace, source: Any, cache_dir: Any, model: Any, encoded: Any,
                     read_seconds: float) -> Any:
    # The corpus line, the memory line (a cluster run: every process it starts here, refused before Ray
    # starts if over) and the cache line; returns the cluster's memory estimate (None without --cluster).
    from parvec.resources import available_memory
    from parvec.trainer import estimate_memory

    if hasattr(encoded, "classes"):  # --mode sharded: counted and encoded on the cluster, nothing cached
        name = "standard input" if source == "-" else " ".join(source) if isinstance(source, list) else source
        units = len(encoded.inputs.units)
        print(f"{name}: {encoded.raw_words:,} words, vocabulary {encoded.n_words:,} (min-count "
              f"{model.read_options.min_count}), {encoded.tokens:,} in-vocabulary tokens in {encoded.sentences:,} "
              f"sentences, counted and encoded in {units} byte range{'s' if units != 1 else ''} of "
              f"{len(encoded.inputs.files)} file{'s' if len(encoded.inputs.files) != 1 else ''} "
              f"[read in {read_seconds:.1f} s]", file=sys.stderr)
        print(_sharded_model_line(model, encoded), file=sys.stderr)
        estimate = model.memory_estimate()
        if estimate.fits:
            print(estimate.line(), file=sys.stderr)
        estimate.check()  # before a shard or client starts: the error gives the breakdown and what to change
        return estimate

    vocab = encoded.vocab
    need = estimate_memory(len(vocab), model.config.dim, encoded.n_tokens, encoded.n_sentences)
    avail = available_memory()
    name = "standard input" if source == "-" else " ".join(source) if isinstance(source, list) else source
    print(
        f"{name}: {encoded.raw_words:,} words, vocabulary {len(vocab):,} (min-count {model.read_options.min_count}), "
        f"{encoded.n_tokens:,} in-vocabulary tokens in {encoded.n_sentences:,} sentences "
        f"[read in {read_seconds:.1f} s]",
        file=sys.stderr,
    )
    cache_used = getattr(encoded, "cache_used", None)
    pruning = getattr(encoded, "pruning", None)  # parvec.corpus logged a warning saying so
    if pruning and cache_used:  # read back from the cache: say it again
        from parvec.corpus import pruning_note

        print(f"note: {pruning_note(pruning)}", file=sys.stderr)
    mapped = " (memory-mapped from disk)" if isinstance(encoded.tokens, np.memmap) else ""
    memory_estimate = None
    if model.cluster is not None:
        from parvec.distributed.memory import corpus_sizes, estimate_cluster

        cl = model.cluster
        sizes = corpus_sizes(encoded, model.config, cl.replicas if cl.mode == "replicas" else None)
        memory_estimate = estimate_cluster(cl, model.config, len(vocab), sizes.tokens, sizes.sentences, corpus=sizes)
        if memory_estimate.fits:
            print(memory_estimate.line(), file=sys.stderr)
        memory_estimate.check()  # the error gives the breakdown and what to change
    else:
        print(
            f"memory: vectors {human_bytes(2 * len(vocab) * model.config.dim * 4)} + encoded corpus "
            f"{human_bytes(need - 2 * len(vocab) * model.config.dim * 4)}{mapped} = {human_bytes(need)}"
            + (f" of {human_bytes(avail)} available" if avail else ""),
            file=sys.stderr,
        )
    print(_cache_line(cache_used, args, source, cache_dir), file=sys.stderr)
    return memory_estimate


def _sharded_model_line(model: Any, encoded: Any) -> str:
    # The model's size and how it is split: shards, clients, minibatches.
    from parvec.cli.run_report import count_phrase, threads_phrase
    from parvec.distributed.sharded_settings import resolve

    settings = resolve(model.cluster, model.config)
    model_bytes = 2 * encoded.n_words * model.config.dim * 4
    fused = ", fused calls (the shard trains each minibatch whole)" if settings["shard_calls"] == "fused" else ""
    return (f"model: {model_bytes / 2**30:.2f} GiB in {count_phrase(settings['shards'], 'shard')} of "
            f"{model_bytes / settings['shards'] / 2**30:.2f} GiB; {count_phrase(settings['clients'], 'client')} x "
            f"{threads_phrase(settings['threads'])}, minibatches of {settings['minibatch_words']} input words, "
            f"negatives per {settings['negatives_per']}{fused}")


def _train(args: argparse.Namespace, model: Any, encoded: Any, resume_epochs: int | None) -> tuple[Any, Any]:
    # How the run is kept (parvec.run: checkpoints, the report's run log, per-epoch scores, checkpoint lines), then
    # training and its summary lines; returns (stats, the report's resumed_from: where the checkpoint was, read
    # before training moves it).
    from parvec.run import command_options

    model.run_options = command_options(
        checkpoint_dir=args.checkpoint_dir, checkpoint_every=args.checkpoint_every,
        on_checkpoint_error=args.on_checkpoint_error, report=bool(args.report), report_interval=args.report_interval,
        eval_every_epoch=bool(args.eval_every_epoch), checkpoint_lines=args.checkpoint_every is not None)
    resumed_from = None
    if args.resume:
        from parvec.cli.run_report import resumed_from as resumed_entry

        resumed_from = resumed_entry(args.resume, model.saved_at, model.position)
        stats = model.train(corpus=encoded, resume=True, epochs=resume_epochs)
    else:
        model.build_vocab(corpus=encoded)
        stats = model.train(corpus=encoded)
    if args.eval_every_epoch:
        for rec in model.run_log.epochs:
            scores = ", ".join(f"{k} {'n/a' if v is None else format(v, '.4f')}" for k, v in (rec.scores or {}).items())
            print(f"epoch {rec.epoch}: loss {rec.loss if rec.loss is None else format(rec.loss, '.4f')}; "
                  f"{scores}", file=sys.stderr)
    from parvec.cli.run_report import count_phrase, cpu_note

    if stats.epochs == 0:  # a resumed run whose epochs were all done: describe_resume said so
        if hasattr(encoded, "classes"):
            print(f"nothing left to train: the checkpoint holds all {model.config.epochs} epochs; the outputs are "
                  "written from its snapshot", file=sys.stderr)
        else:
            print(f"nothing left to train (the checkpoint had done its {count_phrase(model.epochs_trained, 'epoch')}"
                  "); no training ran", file=sys.stderr)
        return stats, resumed_from
    losses = ", ".join(f"{x:.4f}" for x in stats.loss_per_epoch)
    ck = model.checkpoint_report
    n_ck = ck.get("mid_epoch_checkpoints", 0) + ck.get("epoch_end_checkpoints", 0)
    ck_note = f" (of which {count_phrase(n_ck, 'checkpoint')} {ck['checkpoint_seconds']:.1f} s)" if n_ck else ""
    print(
        f"trained {stats.words:,} words ({count_phrase(stats.epochs, 'epoch')}, "
        f"{_how_ran(model.config, model.run_report)}) "
        f"in {stats.seconds:.1f} s{ck_note}: {stats.words_per_sec / 1e6:.3f}M words/s{cpu_note(stats)}; "
        f"loss per epoch: {losses}",
        file=sys.stderr,
    )
    if hasattr(encoded, "classes"):  # --mode sharded: its snapshots and the faults recovered
        from parvec.cli.sharded import snapshot_line

        print(snapshot_line(model.run_report, args.checkpoint_dir, model.checkpoint_report), file=sys.stderr)
    return stats, resumed_from


def _write_outputs(args: argparse.Namespace, out: dict[str, Any], model: Any, binary: bool, n: int) -> list[str]:
    # -o (the n vectors, or word2vec.c's -classes lines) and --save-model into their reserved temporaries.
    done = []
    if args.output and args.classes:
        classes = word_classes(model.wv, args.classes, seed=args.seed)
        out["output"].write(lambda path: write_classes(path, model.wv.index_to_key, classes))
        done.append(f"wrote the classes of {n:,} words ({args.classes} k-means classes) to "
                    f"{output_name(args.output)}")
    elif args.output:
        out["output"].write(lambda path: save_vectors(model.wv, str(path), binary))
        done.append(f"wrote {n:,} vectors of {model.config.dim} to {output_name(args.output)}")
    if args.save_model:
        out["save_model"].write(model.save)
        done.append(f"saved the model to {args.save_model}")
    return done


def _report(args: argparse.Namespace, source: Any, binary: bool, model: Any, encoded: Any, stats: Any,
            read_seconds: float, memory_estimate: Any, resumed_from: Any,
            export_seconds: float | None = None) -> dict[str, Any]:
    # The common keys (parvec.cli.run_report), train's own, then the driver's figures and the time series.
    from parvec.cli.run_report import (
        CorpusFigures,
        absolute,
        checkpoints,
        cluster_block,
        run_report,
        word_parameters,
    )

    sharded = hasattr(encoded, "classes")
    # A sharded run's algorithm is its own, and its threads each client's (config.threads is unused there).
    shown: dict[str, Any] = {}
    if sharded:
        from parvec.distributed.sharded_settings import ShardedSettings

        shown = {"algo": "sharded", "threads": ShardedSettings.of(model.cluster, model.config).threads}
    pruned = getattr(encoded, "pruning", None)
    extra: dict[str, Any] = {"vocab_pruning": pruned.to_json() if pruned is not None else None,
                             "model": "skip-gram" if model.config.sg else "cbow",
                             "memory_estimate": memory_estimate.to_dict() if memory_estimate is not None else None,
                             "cache_used": getattr(encoded, "cache_used", None)}
    if sharded:  # --mode sharded: its input's units, the steps on the cluster, the outputs' seconds
        extra |= {"byte_ranges": len(encoded.inputs.units), "input_files": len(encoded.inputs.files),
                  "count_seconds": encoded.seconds.get("count"), "encode_seconds": encoded.seconds.get("encode"),
                  "export_seconds": export_seconds, "model_bytes": 2 * encoded.n_words * model.config.dim * 4,
                  "count_estimate": model.count_estimate.to_dict() if model.count_estimate is not None else None}
        corpus = CorpusFigures(encoded.n_words, encoded.raw_words, encoded.tokens, encoded.sentences)
    else:
        corpus = CorpusFigures(len(encoded.vocab), encoded.raw_words, encoded.n_tokens, encoded.n_sentences)
    return run_report(
        "words", word_parameters(model.config, model.read_options, source, **shown),
        stats, read_seconds=read_seconds, device=model.config.device, output=absolute(args.output),
        output_binary=binary,
        cluster=cluster_block(model.cluster.to_dict(), model.run_report) if model.cluster is not None else None,
        checkpoints=checkpoints(model.checkpoint_report, args.checkpoint_every, args.checkpoint_dir),
        resumed_from=resumed_from, corpus=corpus, extra=extra, driver=model.run_report, run_log=model.run_log)
