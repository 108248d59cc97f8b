"""The flags of ``parvec train`` (parvec's and word2vec.c's spellings), the two styles' defaults and the line
that says which applied (:func:`resolve_defaults`); :mod:`parvec.cli.command` resolves them into a
:class:`parvec.cli.command.TrainCommand`.

Example:
    >>> p = argparse.ArgumentParser(); add_train_flags(p)
    >>> p.parse_args(["c.txt", "-size", "50"]).dim
    50
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from parvec.capabilities import CBOW_ALGORITHMS
from parvec.config import (
    ALL_ALGORITHMS,
    DEFAULT_ALGO,
    DEFAULT_CBOW_ALGO,
    DEFAULT_GPU_ALGO,
    default_threads,
)
from parvec.errors import ParvecError

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
    # Left out, these take their style's default (resolve_defaults, STYLE_DEFAULTS): the help shows parvec's.
    d = STYLE_DEFAULTS["parvec"]
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
                   f"with more (the default {_number(STYLE_DEFAULTS['parvec']['sample'])}) or none, i.e. that / "
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
                   help="sharded mode, split calls: a vector row that takes more than N of the updates in flight "
                   "(the most frequent words' rows; every coefficient read before any update lands) has them summed "
                   "from the call's start and applied once, stepped by a line search (default 16; 0: every row's "
                   "updates applied one by one, the paper's adjust)")
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


def add_train_flags(p: argparse.ArgumentParser) -> None:
    """Add ``parvec train``'s flags to ``p`` (its parser): the input, the outputs, training, the run."""
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
    min_count = STYLE_DEFAULTS["parvec"]["min_count"]
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
    p.set_defaults(dim=None, window=None, negative=None, sample=None, epochs=None, alpha=None, min_count=None)


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
STYLE_DEFAULTS: dict[str, dict[str, Any]] = {
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


def resolve_defaults(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """Every style-dependent flag (``cbow alpha sample epochs min_count window negative hs dim binary``) with its
    style's default where it was left out, and the line that says which applied; ``args`` is only read.

    ``-train FILE`` selects word2vec.c's defaults, ``INPUT`` parvec's (see :mod:`parvec.cli.train`); naming
    the training file both ways is refused.

    Example:
        >>> ns = argparse.Namespace(train_file="c.txt", input=None, cbow=None, hs=None, dim=200, window=None,
        ...     negative=None, sample=None, epochs=None, alpha=None, min_count=None, binary=None)
        >>> values, line = resolve_defaults(ns)
        >>> line[:76]
        'word2vec.c defaults (the corpus given by -train): cbow 1, alpha 0.05, sample'
        >>> values["cbow"], values["alpha"], values["dim"], values["binary"]
        (1, 0.05, 200, 0)
    """
    if args.train_file is not None and args.input:
        raise ParvecError(f"the training file is named twice ({' '.join(args.input)} and -train "
                          f"{args.train_file}): give -train FILE (word2vec.c's defaults) or INPUT (parvec's "
                          "defaults), not both")
    style = "word2vec.c" if args.train_file is not None else "parvec"
    defaults = dict(STYLE_DEFAULTS[style])
    names = _FLAG_NAMES[style]
    values: dict[str, Any] = {}
    applied, given = [], []
    for key in ("cbow", "alpha", "sample", "epochs", "min_count", "window", "negative", "hs", "dim", "binary"):
        value = vars(args)[key]
        if key == "alpha":
            default = 0.05 if values["cbow"] else 0.025  # cbow is resolved first
        else:
            default = defaults[key]
        if value is None:
            values[key] = default
            if default is not None:
                applied.append(f"{names[key]} {_number(default)}")
        else:
            values[key] = value
            given.append(f"{names[key]} {_number(value)}")
    if style == "word2vec.c":
        head = "word2vec.c defaults (the corpus given by -train)"
    else:
        head = "parvec defaults (the corpus given as INPUT)"
        if values["binary"] is None:
            applied.append("binary when the output ends .bin")
    line = f"{head}: {', '.join(applied) if applied else 'none (every flag given)'}"
    if given:
        line += f"; given: {', '.join(given)}"
    return values, line
