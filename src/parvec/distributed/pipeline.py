"""``parvec train INPUT --cluster SPEC --mode sharded``: the four steps of Ordentlich et al. section 6, on Ray,
without ever holding the model in one process.

1. **Vocabulary.**  The input is cut into byte ranges at whitespace (:func:`parvec.corpus.byte_ranges`, each
   read by :class:`parvec.corpus.RangeSentences`; a compressed input or standard input is
   first written out as plain text in the work directory: compressed streams cannot be split).  One Ray
   task per range counts its words (:func:`parvec.vocab.count_words`); the driver merges the counts in range
   order, so ties keep the file's first-seen order and the vocabulary is the one a single process builds
   (``min_count``, ``max_final_vocab``; with ``max_vocab_size`` each range prunes on its own first).
2. **Encoding.**  One task per range encodes it with that vocabulary (:func:`parvec.corpus.encode_sentences`'s rules:
   lines are sentences, long lines split into ``max_sentence_length`` pieces, unknown words dropped) into
   ``tokens_K.npy``/``offsets_K.npy`` in the work directory, which the clients memory-map.  A line that a
   range boundary cuts becomes two sentences (a few window pairs at each boundary; the ranges are many MB).
3. **Training** (:class:`parvec.distributed.sharded.ShardedRun`): the shards generate their columns of
   word2vec.c's initial vectors themselves, the clients train the encoded ranges.  With a checkpoint directory
   every consistent snapshot of the shards is checkpointed there (:class:`ShardCheckpoints`); a resumed run
   reads the input again in the checkpoint's byte ranges, checks it (:func:`check_resume_input`) and has the
   shards restore the checkpoint's snapshot (:func:`resume_snapshot`).
4. **Export.**  Row blocks assembled from the shards' column blocks are streamed into a ``.npy`` in the work
   directory (never the whole matrix in memory); the outputs are then written from its memory map by
   :mod:`parvec.formats` (word2vec text/binary, ``.npy`` + vocabulary + counts), atomically.

The work directory (:func:`work_directory`) is a temporary directory under ``--cache-dir`` (the system's
temporary directory with ``--no-cache``), removed at the end.  On a multi-node cluster it must be on a file
system every node sees.  The steps are functions of typed parameters; the command line (its flags, console
lines, outputs and report) is :mod:`parvec.cli.sharded`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from parvec.corpus import RangeSentences, ReadOptions, byte_ranges
from parvec.errors import ParvecError
from parvec.fileio import atomic_output, check_input, is_compressed, open_input, save_array
from parvec.vocab import Vocab, VocabCounter

_BLOCK_BYTES = 1 << 22
_RANGE_BYTES = 64 << 20  # at most this many bytes per range (more ranges than CPUs in any case)
# --------------------------------------------------------------------------- byte ranges
def count_range(path: str, start: int, end: int, options: ReadOptions
                ) -> tuple[dict[str, int], int, tuple[int, int] | None]:
    """Step 1, one range: ``(counts in first-seen order, raw words, (bytes, CRC-32) read)``.

    Example:
        >>> counts, raw, read = count_range("corpus.txt", 0, 1000, ReadOptions(min_count=1))  # doctest: +SKIP
    """
    from parvec.vocab import count_words

    sentences = RangeSentences(path, start, end, options)
    counter = count_words(sentences, options.max_vocab_size)
    return counter.counts, counter.raw_words, sentences.fingerprint


def encode_range(path: str, start: int, end: int, options: ReadOptions, vocab: Vocab, out_dir: str,
                 k: int) -> tuple[int, int, int, tuple[int, int] | None]:
    """Step 2, one range: encode it with ``vocab`` into ``tokens_K.npy``/``offsets_K.npy``; returns
    ``(tokens, sentences, raw words, (bytes, CRC-32) read)``.

    Example:
        >>> encode_range("corpus.txt", 0, 1000, ReadOptions(), vocab, "work", 0)  # doctest: +SKIP
        (812, 3, 1000, (5210, 2882139113))
    """
    from parvec.corpus import NoTokensError, encode_sentences

    sentences = RangeSentences(path, start, end, options)
    try:
        enc = encode_sentences(sentences, options, vocab, source=f"{path}[{start}:{end}]")
        tokens, offsets, raw = enc.tokens, enc.offsets, enc.raw_words
    except NoTokensError:  # a range without an in-vocabulary token
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

    def encode(self, path: str, start: int, end: int, options: ReadOptions, out_dir: str,
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
        if not is_compressed(path) and path.is_file():
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
    from parvec.corpus import file_state, input_changed

    before = file_state(path)  # the input must not change until every range is encoded (docs/big_corpora.md)
    ranges = byte_ranges(path, n_ranges)
    read: list[Any] = []
    counter_task = ray.remote(num_cpus=1, max_retries=2)(count_range)
    refs = [counter_task.remote(str(path), a, b, options) for a, b in ranges]
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
            merged.prune()
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
        sizes = _get_all(ray, [encoders[k % len(encoders)].encode.remote(str(path), a, b, options, str(enc_dir), k)
                               for k, (a, b) in enumerate(ranges)], "encoding the corpus", timeout_s)
    finally:
        for e in encoders:
            ray.kill(e)
    after = file_state(path)
    changed = next((k for k, s in enumerate(sizes) if (s[2], s[3]) != read[k]), None)
    if after != before or changed is not None:
        a, b = ranges[changed] if changed is not None else (0, 0)
        raise input_changed(str(path), before, after, "while it was read" if after != before else
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
            "sentences": sum(s[1] for s in sizes), "ranges": len(ranges),
            # (bytes, CRC-32) each range read: the input's identity, which a resumed run's input must match
            "fingerprints": [list(fp) if fp is not None else None for _raw, fp in read]}


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
    """A model directory (:mod:`parvec.model_io`, what :meth:`parvec.word2vec.Word2Vec.save` writes) from the
    exported matrices: they are moved in, not copied, and their CRC-32s computed reading them a block of rows
    at a time (never the whole matrix in memory), so the directory is checked on load like any other.

    Example:
        >>> write_model_dir(Path("model"), vec_npy, syn_npy, vocab, config, options, 5, 10**6, 10**6)  # doctest: +SKIP
    """
    from parvec import model_io

    model = model_io.SavedModel(
        config=config, vocab=vocab, vectors=np.load(vectors_npy, mmap_mode="r"),
        syn1neg=np.load(syn1neg_npy, mmap_mode="r"), read_options=options.__dict__, epochs_trained=epochs,
        corpus_words=corpus_words, raw_words=raw_words)
    model_io.save(directory, model, move_files={model_io.VECTORS: vectors_npy, model_io.SYN1NEG: syn1neg_npy})


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


@contextlib.contextmanager
def work_directory(cache_dir: str | os.PathLike[str] | None) -> Iterator[Path]:
    """The pipeline's temporary work directory (the decompressed input, the encoded ranges, the exported
    matrices): under ``cache_dir`` (created if missing), else the system's temporary directory; removed at the end.

    Example:
        >>> with work_directory(None) as work:
        ...     work.is_dir()
        True
        >>> work.exists()
        False
    """
    base = Path(cache_dir) if cache_dir is not None else None
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="parvec-sharded-", dir=base))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def encode_input(ray: Any, source: str, options: ReadOptions, work: Path, timeout_s: float = 300.0,
                 n_ranges: int | None = None) -> dict[str, Any]:
    """Steps 1 and 2 for ``source`` (a file, or ``-`` for standard input): a plain copy in ``work`` where byte
    ranges cannot cut it (:func:`plain_input`), then :func:`count_and_encode` over at least two ranges per CPU of
    the cluster and at most 64 MiB each (``n_ranges``: that many, a resumed run's checkpoint's: a line a range
    boundary cuts becomes two sentences, so other ranges would be another corpus).

    Example:
        >>> enc = encode_input(ray, "corpus.txt.xz", ReadOptions(min_count=5), Path("work"))  # doctest: +SKIP
        >>> len(enc["vocab"]), enc["ranges"]  # doctest: +SKIP
        (71290, 4)
    """
    path = plain_input(source, work)
    if n_ranges is None:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        n_ranges = max(2 * cpus, -(-os.path.getsize(path) // _RANGE_BYTES))
    return count_and_encode(ray, path, options, work, n_ranges, timeout_s)


@contextlib.contextmanager
def sharded_run(ray: Any, cluster: Any, config: Any, encoded: dict[str, Any], checkpoint_dir: Path | None = None,
                resume: dict[str, Any] | None = None, on_snapshot: Any = None) -> Iterator[Any]:
    """Step 3's :class:`parvec.distributed.sharded.ShardedRun` on the encoded ranges of :func:`encode_input`
    (the shards generate their own initial columns, or restore ``resume``, a checkpoint's snapshot:
    :func:`resume_snapshot`), closed (its actors stopped) when the block ends.  ``on_snapshot``: a
    :class:`ShardCheckpoints` that checkpoints every complete snapshot.

    Example:
        >>> with sharded_run(ray, cluster, config, enc) as run:  # doctest: +SKIP
        ...     stats = train_run(run)
        ...     vectors_npy, _ = export_model(run, Path("work"), with_output_vectors=False)
    """
    from parvec.distributed.sharded import ShardedRun

    run = ShardedRun(ray, cluster, config, encoded["vocab"].counts, encoded["parts"], encoded["part_offsets"],
                     checkpoint_dir=checkpoint_dir, resume=resume, on_snapshot=on_snapshot)
    try:
        yield run
    finally:
        run.close()


def train_run(run: Any, run_log: Any = None, start_epoch: int = 0, resume_at: Any = None,
              schedule: Any = None) -> Any:
    """Step 3: train ``run`` for its epochs; ``run_log`` (a :class:`parvec.runlog.RunLog`, or None) gets the
    progress samples and one record per epoch (its words, loss, seconds and the learning rate at its end).  A
    resumed run starts at ``start_epoch`` (the checkpoint's), at ``resume_at`` in it (a mid-epoch checkpoint's
    :class:`parvec.engine.Position`), with ``schedule`` (the checkpoint's learning rate; default the run's).

    Example:
        >>> stats = train_run(run, RunLog(interval_s=2.0))  # doctest: +SKIP
        >>> stats.epochs, len(stats.loss_per_epoch)  # doctest: +SKIP
        (5, 5)
    """
    from parvec.schedule import Schedule

    config = run.config
    schedule = schedule if schedule is not None else Schedule.of(config, run.words_per_epoch)
    if run_log is None:
        return run.train(epochs=schedule.epochs, start_epoch=start_epoch, resume_at=resume_at, schedule=schedule)
    run.on_progress = run_log.progress

    def epoch_end(epoch: int, stats: Any) -> None:
        run_log.epoch_end(epoch=epoch, words=stats.words_per_epoch[-1], loss=stats.loss_per_epoch[-1],
                          seconds=stats.seconds, lr=schedule.epoch_end_alpha(epoch))

    return run.train(epochs=schedule.epochs, start_epoch=start_epoch, on_epoch_end=epoch_end, resume_at=resume_at,
                     schedule=schedule)


# --------------------------------------------------------------------------- checkpoints and resume
class ShardCheckpoints:
    """A sharded run's checkpoints in its checkpoint directory (``--checkpoint-dir DIR``), the layout of every
    parvec checkpoint (:mod:`parvec.checkpoints`): ``DIR/checkpoint`` at an epoch's end, ``DIR/mid-eE-cU`` at a
    snapshot inside an epoch (``U`` units done), each a model directory (:mod:`parvec.model_io`) holding
    ``model.json`` and ``vocab.json``.  The matrices stay where the shards wrote them (``DIR/shards/shard-S-of-N/
    snap-K``, each shard its own columns: the driver never holds the model); ``model.json``'s ``sharded`` names
    those snapshot directories with the CRC-32 of each file, the snapshot's place (epoch, units done, the epochs'
    figures) and the input's identity (its byte ranges' CRC-32s), and ``cluster`` the shards, clients and
    minibatch settings.  Only the newest checkpoint is kept: the shards keep the snapshot it names and remove
    older ones.

    It is the :class:`parvec.distributed.sharded.ShardedRun`'s ``on_snapshot``: called after every complete
    snapshot, it writes the checkpoint through a :class:`parvec.checkpoints.Checkpointer` (a full disk: as
    ``on_error`` says) and returns whether it did.

    Example:
        >>> ck = ShardCheckpoints(Path("ck"), config, enc, options, cluster, run_id="r1")  # doctest: +SKIP
        >>> with sharded_run(ray, cluster, config, enc, Path("ck/shards"), on_snapshot=ck) as run:  # doctest: +SKIP
        ...     stats = train_run(run)
    """

    def __init__(self, directory: Path, config: Any, encoded: dict[str, Any], options: ReadOptions, cluster: Any,
                 run_id: str, on_error: str = "stop", report: dict[str, Any] | None = None, on_saved: Any = None,
                 schedule: Any = None) -> None:
        from parvec.checkpoints import Checkpointer
        from parvec.distributed import cluster_record
        from parvec.distributed.sharded_settings import resolve

        self.directory = Path(directory)
        self.config, self.encoded, self.options, self.schedule = config, encoded, options, schedule
        settings = resolve(cluster, config)
        self.record = cluster_record(cluster) or {}
        self.record.update(shards=settings["shards"], clients=settings["clients"])  # as run, defaults filled in
        self.settings = settings
        self.run_id = run_id
        self.checkpointer = Checkpointer(self.directory, self._describe, run_id, on_error=on_error, report=report,
                                         on_saved=on_saved, only_latest=True)
        self._snap: dict[str, Any] = {}

    def __call__(self, snap: dict[str, Any]) -> bool:
        from parvec.distributed.snapshots import snapshot_position

        self._snap = snap
        position = snapshot_position(snap, self.schedule)
        if position is None:  # an epoch's end (epoch: the epochs done)
            return self.checkpointer.epoch_end(int(snap["epoch"]))
        return self.checkpointer.mid_epoch(position)

    def _describe(self, position: Any, epochs_trained: int) -> Any:
        from parvec import model_io

        snap, enc = self._snap, self.encoded
        inside = self.directory / "checkpoint"  # every checkpoint is a directory in self.directory
        files = [dict(f, directory=os.path.relpath(f["directory"], inside)) for f in snap["files"]]
        state = {k: snap[k] for k in ("id", "epoch", "units_done", "words_done", "total", "epochs", "units",
                                      "units_crc32", "words_per_epoch", "time")}
        sharded = {"files": files, "snapshot": state, "settings": self.settings,
                   "input": {"ranges": enc["ranges"], "fingerprints": enc.get("fingerprints"),
                             "tokens": enc["tokens"], "sentences": enc["sentences"], "raw_words": enc["raw_words"]}}
        schedule = self.schedule
        return model_io.SavedModel(
            config=self.config, vocab=enc["vocab"], vectors=None, syn1neg=None, read_options=self.options.__dict__,
            epochs_trained=epochs_trained, corpus_words=enc["tokens"], raw_words=enc["raw_words"],
            corpus_count=enc["sentences"], position=position, run_id=self.run_id,
            schedule_anchor=schedule.anchor if schedule is not None else None, cluster=self.record,
            sharded=sharded)


def clear_sharded_checkpoints(directory: Path) -> list[Path]:
    """Remove the sharded runs' checkpoints in ``directory`` (a new sharded run there: its shards start their
    snapshots afresh, so the old ones would name removed files); returns what was removed.

    Example:
        >>> clear_sharded_checkpoints(Path("no/such/dir"))
        []
    """
    from parvec.checkpoints import list_checkpoints

    removed = []
    for found in list_checkpoints(directory):
        if found.meta is not None and found.meta.get("sharded") is not None:
            shutil.rmtree(found.path, ignore_errors=True)
            removed.append(found.path)
    return removed


def resume_snapshot(saved: Any, path: Path) -> dict[str, Any]:
    """The snapshot record a :class:`parvec.distributed.sharded.ShardedRun` resumes from (its ``resume=``), from
    a sharded checkpoint read by :func:`parvec.model_io.load` (``arrays=False``) at ``path``: each shard's snapshot
    directory made absolute, the units still to train.

    Example:
        >>> saved = model_io.load("ck/checkpoint", arrays=False)  # doctest: +SKIP
        >>> snap = resume_snapshot(saved, Path("ck/checkpoint"))  # doctest: +SKIP
        >>> snap["epoch"], snap["units_done"]  # doctest: +SKIP
        (2, 0)
    """
    from parvec.model_io import shard_file_paths

    sharded = saved.sharded
    snap = dict(sharded["snapshot"])
    snap["files"] = [dict(f, directory=str(d.resolve()))
                     for f, d in zip(sharded["files"], shard_file_paths(path, sharded), strict=True)]
    snap["queue"] = list(range(int(snap["units_done"]), int(snap["units"])))
    snap["shards"] = len(snap["files"])
    return snap


def check_resume_input(saved: Any, path: Path, encoded: dict[str, Any], source: str) -> None:
    """Refuse an input that is not the one a sharded checkpoint at ``path`` was trained on: its byte ranges read
    other bytes (CRC-32s), or it gives another vocabulary (words and counts) or token count; the message names the
    first difference.

    Example:
        >>> check_resume_input(saved, Path("ck/checkpoint"), enc, "corpus.txt")  # doctest: +SKIP
    """
    was = saved.sharded.get("input", {})
    name = "standard input" if source == "-" else source
    head = f"cannot resume {path}: {name} is not the input the checkpoint was trained on"
    got = encoded.get("fingerprints")
    if was.get("fingerprints") is not None and got is not None and got != was["fingerprints"]:
        k = next((k for k, (a, b) in enumerate(zip(got, was["fingerprints"], strict=False)) if a != b),
                 min(len(got), len(was["fingerprints"])))
        raise ParvecError(f"{head} (its byte range {k + 1} of {len(got)} reads other bytes than the checkpoint's, "
                          "CRC-32); give the same input file")
    mine, theirs = saved.vocab, encoded["vocab"]
    if mine.words != theirs.words or not np.array_equal(mine.counts, theirs.counts):
        raise ParvecError(f"{head} (its vocabulary has {len(theirs):,} words, the checkpoint's {len(mine):,}, or "
                          "other counts); give the same input, --min-count, --max-vocab-size, --max-final-vocab and "
                          "--lowercase")
    if saved.corpus_words and encoded["tokens"] != saved.corpus_words:
        raise ParvecError(f"{head} (it has {encoded['tokens']:,} in-vocabulary tokens, the checkpoint's "
                          f"{saved.corpus_words:,}); give the same input")
