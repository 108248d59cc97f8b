"""``parvec train INPUT --cluster SPEC --mode sharded``: the four steps of Ordentlich et al. section 6, on Ray,
without ever holding the model in one process.

1. **Vocabulary.**  The input is cut into byte ranges at whitespace (a compressed input or standard input is
   first written out as plain text in the work directory: compressed streams cannot be split).  One Ray
   task per range counts its words (:func:`parvec.vocab.count_words`); the driver merges the counts in range
   order, so ties keep the file's first-seen order and the vocabulary is the one a single process builds
   (``min_count``, ``max_final_vocab``; with ``max_vocab_size`` each range prunes on its own first).
2. **Encoding.**  One task per range encodes it with that vocabulary (:func:`parvec.corpus._encode`'s rules:
   lines are sentences, long lines split into ``max_sentence_length`` pieces, unknown words dropped) into
   ``tokens_K.npy``/``offsets_K.npy`` in the work directory, which the clients memory-map.  A line that a
   range boundary cuts becomes two sentences (a few window pairs at each boundary; the ranges are many MB).
3. **Training** (:class:`parvec.distributed.sharded.ShardedRun`): the shards generate their columns of
   word2vec.c's initial vectors themselves, the clients train the encoded ranges.
4. **Export.**  Row blocks assembled from the shards' column blocks are streamed into a ``.npy`` in the work
   directory (never the whole matrix in memory); the outputs are then written from its memory map by
   :mod:`parvec.formats` (word2vec text/binary, ``.npy`` + vocabulary + counts), atomically.

The work directory is a temporary directory under ``--cache-dir`` (the system's temporary directory with
``--no-cache``), removed at the end.  On a multi-node cluster it must be on a file system every node sees.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from parvec.corpus import ReadOptions
from parvec.errors import ParvecError
from parvec.formats import atomic_output, check_input, open_input, save_array
from parvec.vocab import Vocab, VocabCounter

_WHITESPACE = b" \t\n\r\x0b\x0c"
_BLOCK_BYTES = 1 << 22
_RANGE_BYTES = 64 << 20  # at most this many bytes per range (more ranges than CPUs in any case)
_COMPRESSED = (".gz", ".bz2", ".xz")


# --------------------------------------------------------------------------- byte ranges
def byte_ranges(path: str | os.PathLike[str], n: int) -> list[tuple[int, int]]:
    """Cut a plain file into at most ``n`` byte ranges, each ending just after a whitespace byte (so no
    word, and no UTF-8 character, is split); empty ranges are dropped.

    Example:
        >>> byte_ranges("corpus.txt", 4)  # doctest: +SKIP
        [(0, 2621449), (2621449, 5242886), ...]
    """
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for k in range(1, max(1, n)):
            pos = max(size * k // n, cuts[-1])
            f.seek(pos)
            while True:
                block = f.read(1 << 16)
                if not block:
                    pos = size
                    break
                hit = min((i for i in (block.find(c) for c in (b" ", b"\n", b"\t", b"\r", b"\x0b", b"\x0c")) if i >= 0),
                          default=-1)
                if hit >= 0:
                    pos += hit + 1
                    break
                pos += len(block)
            cuts.append(min(pos, size))
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


class RangeSentences:
    """Token lists of one byte range of a plain text file, read as :class:`parvec.corpus.EncodedCorpus` reads
    a file: lines are sentences, split on whitespace, lines longer than ``max_sentence_length`` tokens cut
    into pieces, optional lower-casing, ``unicode_errors`` as given.  Restartable (iterated twice).

    Example:
        >>> list(RangeSentences("corpus.txt", 0, 100, ReadOptions()))  # doctest: +SKIP
        [['the', 'cat'], ...]
    """

    def __init__(self, path: str | os.PathLike[str], start: int, end: int, options: ReadOptions) -> None:
        self.path, self.start, self.end, self.options = Path(path), start, end, options
        self.fingerprint: tuple[int, int] | None = None  # (bytes, CRC-32) of the last complete pass

    def __iter__(self) -> Iterator[list[str]]:
        max_len = self.options.max_sentence_length
        current: list[str] = []
        carry = b""
        pos = self.start
        crc = 0
        with open(self.path, "rb") as f:
            f.seek(self.start)
            while pos < self.end or carry:
                block = f.read(min(_BLOCK_BYTES, self.end - pos)) if pos < self.end else b""
                crc = zlib.crc32(block, crc)
                at_end = not block
                offset = pos - len(carry)
                pos += len(block)
                block = carry + block
                if not at_end:
                    cut = max(block.rfind(c) for c in (b" ", b"\n", b"\t"))
                    if cut < 0:
                        carry = block
                        continue
                    carry, block = block[cut + 1:], block[: cut + 1]
                else:
                    carry = b""
                try:
                    text = block.decode("utf-8", errors=self.options.unicode_errors)
                except UnicodeDecodeError as exc:
                    raise ParvecError(f"{self.path}: invalid UTF-8 at byte {offset + exc.start} ({exc.reason}); "
                                      "use --unicode-errors replace (or ignore) to read it anyway") from None
                lines = text.split("\n")
                for i, line in enumerate(lines):
                    if self.options.lowercase:
                        line = line.lower()
                    current.extend(line.split())
                    if i < len(lines) - 1:
                        for s in range(0, len(current), max_len):
                            yield current[s: s + max_len]
                        current = []
                    elif len(current) >= max_len:
                        full = len(current) // max_len * max_len
                        for s in range(0, full, max_len):
                            yield current[s: s + max_len]
                        current = current[full:]
                if at_end:
                    break
        self.fingerprint = (pos - self.start, crc)  # what counting and encoding each read of the range
        if current:
            yield current


def _options_dict(options: ReadOptions) -> dict[str, Any]:
    return dict(options.__dict__)


def count_range(path: str, start: int, end: int, options: dict[str, Any]
                ) -> tuple[dict[str, int], int, tuple[int, int] | None]:
    """Step 1, one range: ``(counts in first-seen order, raw words, (bytes, CRC-32) read)``.

    Example:
        >>> counts, raw = count_range("corpus.txt", 0, 1000, {"min_count": 1})  # doctest: +SKIP
    """
    from parvec.vocab import count_words

    opts = ReadOptions(**options)
    sentences = RangeSentences(path, start, end, opts)
    counter = count_words(sentences, opts.max_vocab_size)
    return counter.counts, counter.raw_words, sentences.fingerprint


def encode_range(path: str, start: int, end: int, options: dict[str, Any], vocab: Vocab, out_dir: str,
                 k: int) -> tuple[int, int, int, tuple[int, int] | None]:
    """Step 2, one range: encode it with ``vocab`` into ``tokens_K.npy``/``offsets_K.npy``; returns
    ``(tokens, sentences, raw words, (bytes, CRC-32) read)``.

    Example:
        >>> encode_range("corpus.txt", 0, 1000, {}, vocab, "work", 0)  # doctest: +SKIP
        (812, 3, 1000, (5210, 2882139113))
    """
    from parvec.corpus import _encode

    opts = ReadOptions(**options)
    sentences = RangeSentences(path, start, end, opts)
    try:
        enc = _encode(sentences, opts, vocab, source=f"{path}[{start}:{end}]")
        tokens, offsets, raw = enc.tokens, enc.offsets, enc.raw_words
    except ParvecError as exc:
        if "no token of the corpus is in the vocabulary" not in str(exc):
            raise
        tokens, offsets = np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64)
        raw = sum(len(s) for s in sentences)
    out = Path(out_dir)
    save_array(out / f"tokens_{k}.npy", tokens)  # a full disk: an error naming the file and the cause
    save_array(out / f"offsets_{k}.npy", offsets)
    return int(len(tokens)), int(len(offsets) - 1), int(raw), sentences.fingerprint


class Encoder:
    """A Ray actor holding the word -> id lookup (built once from the word list) that encodes byte ranges;
    the driver starts one per CPU and stops them after step 2, which frees the lookups.

    Example:
        >>> enc = ray.remote(Encoder).remote([words_ref])  # doctest: +SKIP
    """

    def __init__(self, words: list[Any]) -> None:
        import ray

        w = ray.get(words[0]) if isinstance(words[0], ray.ObjectRef) else words[0]
        self.vocab = Vocab(list(w), np.zeros(len(w), dtype=np.int64))

    def encode(self, path: str, start: int, end: int, options: dict[str, Any], out_dir: str,
               k: int) -> tuple[int, int, int, tuple[int, int] | None]:
        return encode_range(path, start, end, options, self.vocab, out_dir, k)


def plain_input(source: str, work: Path) -> Path:
    """A plain file of the input that byte ranges can cut: the file itself, or (compressed input, standard
    input) a decompressed copy in ``work``.

    Example:
        >>> plain_input("corpus.txt.xz", Path("work"))  # doctest: +SKIP
        PosixPath('work/input.txt')
    """
    if source != "-":
        path = check_input(source)
        if path.suffix.lower() not in _COMPRESSED and path.is_file():
            return path
    out = work / "input.txt"
    with open(out, "wb") as dst:
        src = sys.stdin.buffer if source == "-" else open_input(source)
        try:
            shutil.copyfileobj(src, dst, _BLOCK_BYTES)
        finally:
            if src is not sys.stdin.buffer:
                src.close()
    if out.stat().st_size == 0:
        raise ParvecError(f"{'standard input' if source == '-' else source}: the input is empty")
    return out


def count_and_encode(ray: Any, path: Path, options: ReadOptions, work: Path, n_ranges: int,
                     timeout_s: float = 300.0) -> dict[str, Any]:
    """Steps 1 and 2 as Ray tasks; returns the vocabulary, the encoded parts and the corpus figures.

    Example:
        >>> enc = count_and_encode(ray, Path("corpus.txt"), ReadOptions(), Path("work"), 4)  # doctest: +SKIP
        >>> enc["vocab"].words[:3], enc["tokens"]  # doctest: +SKIP
    """
    from parvec.corpus import _changed, _file_state

    before = _file_state(path)  # the input must not change until every range is encoded (docs/big_corpora.md)
    ranges = byte_ranges(path, n_ranges)
    opts = _options_dict(options)
    read: list[Any] = []
    counter_task = ray.remote(num_cpus=1, max_retries=2)(count_range)
    refs = [counter_task.remote(str(path), a, b, opts) for a, b in ranges]
    merged = VocabCounter(options.max_vocab_size)
    raw_words = 0
    counts = merged.counts
    # Merged in range order (first-seen order is the file's), one range's counts in this process at a time.
    for ref in refs:
        range_counts, raw, fingerprint = _get_all(ray, [ref], "counting words", timeout_s * len(refs))[0]
        raw_words += raw
        read.append((raw, fingerprint))
        for w, c in range_counts.items():
            counts[w] = counts.get(w, 0) + c
        del range_counts
        if options.max_vocab_size is not None and len(counts) > options.max_vocab_size:
            merged._prune()
            counts = merged.counts
    del refs
    if raw_words == 0:
        raise ParvecError(f"{path}: the corpus has no words")
    vocab = merged.finish(options.min_count, options.max_final_vocab)
    if len(vocab) == 0:
        best = max(merged.counts.values()) if merged.counts else 0
        raise ParvecError(f"{path}: no word reaches min_count={options.min_count} (the most frequent word occurs "
                          f"{best} times); lower --min-count")
    del merged, counts
    enc_dir = work / "encoded"
    enc_dir.mkdir(exist_ok=True)
    words_ref = ray.put(vocab.words)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    # One encoder actor per CPU builds the lookup once (the list goes nested, fetched inside) and encodes
    # every other range; they are stopped right after, so no worker keeps a copy of the lookup.
    encoders = [ray.remote(Encoder).options(num_cpus=1).remote([words_ref]) for _ in range(min(cpus, len(ranges)))]
    try:
        sizes = _get_all(ray, [encoders[k % len(encoders)].encode.remote(str(path), a, b, opts, str(enc_dir), k)
                               for k, (a, b) in enumerate(ranges)], "encoding the corpus", timeout_s)
    finally:
        for e in encoders:
            ray.kill(e)
    after = _file_state(path)
    changed = next((k for k, s in enumerate(sizes) if (s[2], s[3]) != read[k]), None)
    if after != before or changed is not None:
        a, b = ranges[changed] if changed is not None else (0, 0)
        raise _changed(str(path), before, after, "while it was read" if after != before else
                       f"between counting and encoding its bytes {a}-{b}", content=after == before)  # type: ignore[arg-type]
    parts, offsets = [], []
    for k, (n_tok, _n_sent, _raw, _read) in enumerate(sizes):
        if n_tok == 0:
            continue
        parts.append(("files", [str(enc_dir / f"tokens_{k}.npy"), str(enc_dir / f"offsets_{k}.npy")]))
        offsets.append(np.load(enc_dir / f"offsets_{k}.npy"))
    n_tokens = sum(s[0] for s in sizes)
    if n_tokens == 0:
        raise ParvecError(f"{path}: no token of the corpus is in the vocabulary")
    return {"vocab": vocab, "parts": parts, "part_offsets": offsets, "raw_words": raw_words, "tokens": n_tokens,
            "sentences": sum(s[1] for s in sizes), "ranges": len(ranges)}


def _get_all(ray: Any, refs: list[Any], what: str, timeout_s: float) -> list[Any]:
    # Every range gets timeout_s (Cluster.timeout_s); ranges run about a CPU's worth at a time.
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    try:
        return ray.get(refs, timeout=timeout_s * -(-len(refs) // cpus))
    except ray.exceptions.GetTimeoutError:
        raise ParvecError(f"{what}: not done within {timeout_s:g} s per byte range (Cluster.timeout_s)") from None
    except ParvecError as exc:
        cause = getattr(exc, "cause", exc)
        raise ParvecError(str(cause)) from None
    except ray.exceptions.RayError as exc:
        raise ParvecError(f"{what} failed: {getattr(exc, 'cause', exc)}") from None


# --------------------------------------------------------------------------- export
def stream_npy(path: Path, blocks: Iterator[np.ndarray], rows: int, dim: int) -> None:
    """Write a float32 ``(rows, dim)`` ``.npy`` from row blocks (atomically), holding one block at a time.

    Example:
        >>> stream_npy(Path("v.npy"), iter([np.zeros((2, 3), np.float32)]), 2, 3)  # doctest: +SKIP
    """
    written = 0
    with atomic_output(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(np.dtype("<f4")),
                                                 "fortran_order": False, "shape": (rows, dim)})
        for block in blocks:
            f.write(np.ascontiguousarray(block, dtype="<f4").tobytes())
            written += len(block)
    if written != rows:
        raise ParvecError(f"{path}: wrote {written} rows of {rows}")


def export_model(run: Any, work: Path, with_output_vectors: bool) -> tuple[Path, Path | None]:
    """Stream the input (and optionally output) vectors from the shards into ``.npy`` files in ``work``.

    Example:
        >>> vectors_npy, syn1neg_npy = export_model(run, Path("work"), with_output_vectors=True)  # doctest: +SKIP
    """
    n, dim = run.n_words, run.config.dim
    vec = work / "vectors.npy"
    out = work / "syn1neg.npy" if with_output_vectors else None
    if out is None:
        stream_npy(vec, (b for _, _, b, _ in run.row_blocks()), n, dim)
        return vec, None
    # Both matrices in one pass over the shards: the output rows go to a second file as they come.
    with atomic_output(out, "wb") as f_out:
        np.lib.format.write_array_header_1_0(f_out, {"descr": "<f4", "fortran_order": False, "shape": (n, dim)})

        def inputs() -> Iterator[np.ndarray]:
            for _, _, a, b in run.row_blocks():
                f_out.write(np.ascontiguousarray(b, dtype="<f4").tobytes())
                yield a

        stream_npy(vec, inputs(), n, dim)
    return vec, out


def write_vectors(vectors_npy: Path, path: Path, vocab: Vocab, binary: bool, npy: bool) -> None:
    """Write the exported vectors as ``-o`` asks, reading them through a memory map.

    Example:
        >>> write_vectors(Path("work/vectors.npy"), Path("vec.bin"), vocab, binary=True, npy=False)  # doctest: +SKIP
    """
    from parvec.formats import save_npy, write_word2vec

    vectors = np.load(vectors_npy, mmap_mode="r")
    if npy:
        save_npy(path, vectors, vocab.words, vocab.counts)
    else:
        write_word2vec(path, vectors, vocab.words, binary=binary)


def write_model_dir(directory: Path, vectors_npy: Path, syn1neg_npy: Path, vocab: Vocab, config: Any,
                    options: ReadOptions, epochs: int, corpus_words: int, raw_words: int) -> None:
    """A :meth:`parvec.word2vec.Word2Vec.save` directory from the exported matrices (moved, not copied).

    Example:
        >>> write_model_dir(Path("model"), vec_npy, syn_npy, vocab, config, options, 5, 10**6, 10**6)  # doctest: +SKIP
    """
    from parvec.word2vec import MODEL_FORMAT, MODEL_VERSION

    shutil.move(str(vectors_npy), directory / "vectors.npy")
    shutil.move(str(syn1neg_npy), directory / "syn1neg.npy")
    (directory / "vocab.json").write_text(vocab.to_json(), encoding="utf-8")
    meta = {"format": MODEL_FORMAT, "version": MODEL_VERSION,
            "config": config.to_dict() | {"min_alpha": config.min_alpha}, "read_options": options.__dict__,
            "epochs_trained": epochs, "corpus_words": corpus_words, "raw_words": raw_words}
    (directory / "model.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")


# --------------------------------------------------------------------------- parvec train --mode sharded
def parse_bytes(text: str, flag: str) -> int:
    """``3G``, ``512M``, ``100000`` (bytes; K/M/G/T are powers of 1024) as an integer.

    Example:
        >>> parse_bytes("1.5G", "--shard-memory")
        1610612736
    """
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in units and t[-1:] else ""
    try:
        value = float(t[: len(t) - len(unit)]) * units[unit]
    except ValueError:
        raise ParvecError(f"{flag} {text!r}: expected bytes like 3G, 512M or 1000000") from None
    if not value >= 1:
        raise ParvecError(f"{flag} {text!r}: must be positive")
    return int(value)


def train_sharded_cli(args: argparse.Namespace, source: str, binary: bool, cache_dir: Any,
                      out: dict[str, Any]) -> list[str]:
    """``parvec train`` with ``--mode sharded``: count, encode, train, export; returns the lines to print once
    the outputs are in place (``out`` holds the outputs :func:`parvec.cli.train.run_train` reserved).

    Example:
        >>> lines = train_sharded_cli(args, "corpus.txt", False, None, out)  # doctest: +SKIP
    """
    from parvec.cli.train import cluster_from_args, peak_memory_bytes
    from parvec.config import TrainConfig
    from parvec.distributed.sharded import ShardedRun, actor_budget, cluster_cpus, resolve

    for flag, value in (("--resume", args.resume), ("--eval-every-epoch", args.eval_every_epoch),
                        ("--cbow (CBOW)", getattr(args, "cbow", 0))):
        if value:
            raise ParvecError(f"{flag} is not available with --mode sharded (the model is never in one process); "
                              "use --mode replicas, or train without it")
    if getattr(args, "device", "cpu") != "cpu":
        raise ParvecError("--device cuda and --cluster cannot be combined yet: choose one")
    cluster = cluster_from_args(args)
    if getattr(args, "minibatch_words", None) is not None:
        cluster.minibatch_words = args.minibatch_words
    cluster.minibatch_formation = getattr(args, "minibatch_formation", "interleaved")
    if cluster.threads_per_actor is None:
        cluster.threads_per_actor = args.threads  # --threads: threads per client actor
    if getattr(args, "shard_memory", None) is not None:
        cluster.shard_memory_bytes = parse_bytes(args.shard_memory, "--shard-memory")
    config = TrainConfig(
        algo="classic", dim=args.dim, window=args.window, negative=args.negative, sample=args.sample,
        alpha=args.alpha, min_alpha=args.min_alpha, epochs=args.epochs, threads=args.threads, seed=args.seed,
        max_sentence_length=args.max_sentence_length, compute_loss=True, progress=args.progress,
    ).validate()
    settings = resolve(cluster, config)
    options = ReadOptions(min_count=args.min_count, max_vocab_size=args.max_vocab_size,
                          max_final_vocab=args.max_final_vocab, max_sentence_length=args.max_sentence_length,
                          lowercase=args.lowercase, unicode_errors=args.unicode_errors)
    options.validate()
    base = Path(cache_dir) if cache_dir is not None else None
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="parvec-sharded-", dir=base))
    done: list[str] = []
    name = "standard input" if source == "-" else source
    try:
        with cluster.session() as ray:
            t0 = time.perf_counter()
            actor_budget(settings["shards"], settings["clients"], cluster_cpus(ray))  # too many: refused before reading
            path = plain_input(source, work)
            cpus = int(ray.cluster_resources().get("CPU", 1))
            n_ranges = max(2 * cpus, -(-os.path.getsize(path) // _RANGE_BYTES))
            enc = count_and_encode(ray, path, options, work, n_ranges, cluster.timeout_s)
            vocab = enc["vocab"]
            read_seconds = time.perf_counter() - t0
            model_bytes = 2 * len(vocab) * config.dim * 4
            print(f"{name}: {enc['raw_words']:,} words, vocabulary {len(vocab):,} (min-count {args.min_count}), "
                  f"{enc['tokens']:,} in-vocabulary tokens in {enc['sentences']:,} sentences, counted and encoded "
                  f"in {enc['ranges']} byte ranges [read in {read_seconds:.1f} s]", file=sys.stderr)
            print(f"model: {model_bytes / 2**30:.2f} GiB in {settings['shards']} shards of "
                  f"{model_bytes / settings['shards'] / 2**30:.2f} GiB; {settings['clients']} clients x "
                  f"{settings['threads']} threads, minibatches of {settings['minibatch_words']} input words",
                  file=sys.stderr)
            from parvec.distributed.memory import estimate_cluster  # every process here, before the actors start

            memory = estimate_cluster(cluster, config, len(vocab), enc["tokens"], enc["sentences"], pipeline=True,
                                      ranges=enc["ranges"])
            if memory.fits:
                print(memory.line(), file=sys.stderr)
            memory.check()  # the error gives the breakdown and what to change
            if args.save_vocab:
                from parvec.vocab import write_vocab_file

                out["save_vocab"].write(lambda p: write_vocab_file(p, vocab, enc["sentences"]))
                done.append(f"wrote the vocabulary ({len(vocab):,} words) to {args.save_vocab}")
            run_log = None
            if args.report:
                from parvec.runlog import RunLog

                if not args.report_interval > 0:
                    raise ParvecError(f"--report-interval must be positive, got {args.report_interval}")
                run_log = RunLog(interval_s=args.report_interval)
            checkpoint_dir = Path(args.checkpoint_dir) / "shards" if args.checkpoint_dir else None
            run = ShardedRun(ray, cluster, config, vocab.counts, enc["parts"], enc["part_offsets"],
                             checkpoint_dir=checkpoint_dir)
            try:
                if run_log is not None:
                    run.on_progress = run_log.progress

                    def epoch_end(epoch: int, stats: Any) -> None:
                        run_log.epoch_end(epoch=epoch, words=stats.words_per_epoch[-1],
                                          loss=stats.loss_per_epoch[-1], seconds=stats.seconds,
                                          lr=run.config.alpha - (run.config.alpha - run.config.final_alpha)
                                          * (epoch + 1) / config.epochs)
                stats = run.train(on_epoch_end=epoch_end if run_log is not None else None)
                losses = ", ".join(f"{x:.4f}" for x in stats.loss_per_epoch)
                t = settings["threads"]
                print(f"trained {stats.words:,} words ({stats.epochs} epochs, sharded: {settings['shards']} shards, "
                      f"{settings['clients']} clients x {t} thread{'s' if t != 1 else ''}) in {stats.seconds:.1f} s: "
                      f"{stats.words_per_sec / 1e6:.3f}M words/s; loss per epoch: {losses}", file=sys.stderr)
                report = run.report()  # the shards' peak memory while training, before the export's copies
                where = checkpoint_dir if checkpoint_dir is not None else "a temporary directory"
                faults = [f for f in report["faults"] if f["phase"] != "start"]
                print(f"snapshots: {report['snapshots']} consistent snapshots of the shards (every epoch's end and "
                      f"every {report['snapshot_interval_s']:g} s) in {where}: {report['snapshot_seconds']:.1f} s "
                      f"writing, {report['snapshot_drain_seconds']:.1f} s draining; {len(faults)} fault"
                      f"{'s' if len(faults) != 1 else ''} recovered, {report['words_retrained']:,} words retrained",
                      file=sys.stderr)
                t_export = time.perf_counter()
                vec_npy, syn_npy = export_model(run, work, with_output_vectors=bool(args.save_model))
                report["shard_peak_memory_after_export_bytes"] = run.report()["shard_peak_memory_bytes"]
            finally:
                run.close()
        if args.output:
            out["output"].write(lambda p: write_vectors(vec_npy, p, vocab, binary, args.output.endswith(".npy")))
            done.append(f"wrote {len(vocab):,} vectors of {config.dim} to {args.output}")
        if args.save_model:
            out["save_model"].write(lambda d: write_model_dir(d, vec_npy, syn_npy, vocab, config, options,
                                                              stats.epochs, enc["tokens"], enc["raw_words"]))
            done.append(f"saved the model to {args.save_model}")
        export_seconds = time.perf_counter() - t_export
        if args.report:
            raw_per_sec = enc["raw_words"] * stats.epochs / stats.seconds if stats.seconds else 0.0
            full = {
                "parameters": config.to_dict() | {
                    "min_count": args.min_count, "max_vocab_size": args.max_vocab_size,
                    "max_final_vocab": args.max_final_vocab, "input": source, "algo": "sharded",
                },
                "vocab_size": len(vocab), "corpus_words": enc["raw_words"], "corpus_tokens_in_vocab": enc["tokens"],
                "sentences": enc["sentences"], "words_trained": stats.words, "epochs": stats.epochs,
                "read_seconds": read_seconds, "training_seconds": stats.seconds, "words_per_sec": stats.words_per_sec,
                "raw_words_per_sec": raw_per_sec, "loss_per_epoch": stats.loss_per_epoch,
                "peak_memory_bytes": peak_memory_bytes(), "kind": "words",
                "output": os.path.abspath(args.output) if args.output else None, "output_binary": binary,
                "device": "cpu", "cluster": cluster.to_dict(), "cache_used": None,
                "byte_ranges": enc["ranges"], "export_seconds": export_seconds, "model_bytes": model_bytes,
                "memory_estimate": memory.to_dict(),
            } | report | (run_log.to_dict() if run_log is not None else {})

            def write_report(p: Path) -> None:
                with atomic_output(p, "w") as f:
                    json.dump(full, f, indent=1)

            out["report"].write(write_report)
            done.append(f"wrote the report to {args.report}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return done
