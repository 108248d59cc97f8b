"""The corpus of a column-sharded run, counted and encoded on the cluster (Ordentlich et al. section 6.1): no process
holds a per-word Python object or a per-word table beyond its share.

1. **Inputs** (:func:`plan_inputs`): a file, several files, a directory or a glob; plain files are cut into byte
   ranges just after line breaks (about 64 MiB each, at least two ranges per CPU of the cluster over all files; a
   range holds whole lines, so the sentences and the pieces of long lines are the one-process reader's), and a
   compressed file (``.gz``/``.bz2``/``.xz``) is one unit read whole by one worker (a compressed stream cannot be
   cut).  Standard input is first written out as a plain file in the work directory.  The units are the input's
   identity: a resumed run reads the ones its checkpoint recorded.
2. **Vocabulary** (:func:`parvec.distributed.vocab_count.count_units`): a mapper task per unit counts it with the
   byte tokeniser, reducer actors merge the counts by hash range and apply ``--min-count``/``--max-final-vocab``;
   the driver receives only histograms (count value -> words) and assigns ids from them: by count descending,
   **ties by the word's 64-bit FNV-1a hash** (a one-process run orders ties by first occurrence; the words, their
   counts and each count's set of words are the same).  Each reducer writes its part of the word list to the work
   directory (:mod:`parvec.vocab_parts`) and serves its part of the hashed word lookup.
3. **Encoding**: a task per unit encodes it through the shared lookup (:class:`parvec.wordhash.WordLookup`, one
   copy per node in Ray's object store) straight into ``tokens_K.npy``/``offsets_K.npy`` (block by block) and cuts
   its sentences into the units of work the clients train (:func:`parvec.distributed.units.plan_units`'s rule),
   so the driver never reads a sentence offset.  A unit that reads other bytes than counting read (its CRC-32),
   or a file that changed meanwhile, stops the run.

:func:`prepare_corpus` runs the three and returns a :class:`ShardedCorpus`: the count classes (the sampling tables
come from them: :meth:`parvec.distributed.units.SamplingTables.of_classes`), the parts the clients memory-map, the
units, the partitions of the word list and the figures.  On a multi-node cluster the work directory must be on a
file system every node sees.

Example:
    >>> plan = plan_inputs("corpus.txt", cpus=4, work=Path("work"))  # doctest: +SKIP
    >>> corpus = prepare_corpus(ray, plan, ReadOptions(min_count=5), Path("work"), unit_words=100_000)  # doctest: +SKIP
    >>> corpus.n_words, corpus.tokens  # doctest: +SKIP
    (71290, 16718844)
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parvec.chunks import chunk_bounds, split_long_sentences
from parvec.corpus import RangeSentences, ReadOptions, expand_inputs, file_state, input_changed, line_cuts
from parvec.countclasses import CountClasses
from parvec.distributed.count_merge import CountCheck
from parvec.distributed.units import Unit
from parvec.errors import ParvecError
from parvec.fileio import STDIN, check_input, is_compressed
from parvec.vocab_parts import VocabPart, vocab_crc32, write_part_files

__all__ = ["COMPRESSION_RATIO", "RANGE_BYTES", "CountPlan", "EncodedUnit", "InputPlan", "RecordedUnits",
           "ShardedCorpus", "encode_unit", "encode_unit_here", "estimate_distinct", "object_state", "plan_count",
           "plan_inputs", "prepare_corpus", "reducers_for", "text_bytes"]

RANGE_BYTES = 64 << 20  # at most this many bytes of a plain file per unit
_COPY_BYTES = 1 << 22


# --------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class InputPlan:
    """The input of a sharded run cut into units (module docstring): ``files`` (absolute paths), ``units``
    (``(file index, start, end)``; ``end`` None: the whole compressed file), each file's state when planned
    (:func:`parvec.corpus.file_state`) and ``name``, how messages name the input.

    Example:
        >>> InputPlan(("/c.txt",), ((0, 0, 10), (0, 10, 20)), ((1, 2, 20, 3, 3),), "c.txt").unit(1)
        ('/c.txt', 10, 20)
    """

    files: tuple[str, ...]
    units: tuple[tuple[int, int, int | None], ...]
    states: tuple[tuple[int, ...] | None, ...]
    name: str

    @property
    def remote(self) -> bool:
        """Whether the files are URLs (read by the workers from the object store)."""
        from parvec import storage

        return bool(self.files) and storage.is_url(self.files[0])

    def unit(self, k: int) -> tuple[str, int, int | None]:
        """Unit ``k`` as ``(path, start, end)``."""
        f, a, b = self.units[k]
        return self.files[f], a, b

    def all_units(self) -> list[tuple[str, int, int | None]]:
        """Every unit as ``(path, start, end)``."""
        return [self.unit(k) for k in range(len(self.units))]

    @property
    def total_bytes(self) -> int:
        """Bytes of the files on disk (compressed ones as stored)."""
        return int(sum(s[2] for s in self.states if s is not None))

    def describe_unit(self, k: int) -> str:
        """Unit ``k`` in words: ``c.txt bytes 0-4096`` or ``b.txt.gz (whole)``."""
        path, a, b = self.unit(k)
        return f"{path} (the whole compressed file)" if b is None else f"{path} bytes {a}-{b}"

    def recorded_units(self) -> RecordedUnits:
        """What a checkpoint records (a resumed run reads the same units)."""
        return RecordedUnits(self.files, self.units)


@dataclass(frozen=True)
class RecordedUnits:
    """The units a checkpoint of a sharded run recorded (``model.json``'s ``sharded.input``: its ``files`` and
    ``units``), which a resumed run reads again (:func:`plan_inputs`).

    Example:
        >>> RecordedUnits.from_json({"files": ["/c.txt"], "units": [[0, 0, 10], [0, 10, None]]}).units
        ((0, 0, 10), (0, 10, None))
    """

    files: tuple[str, ...]
    units: tuple[tuple[int, int, int | None], ...]

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RecordedUnits | None:
        """The units of a checkpoint's ``sharded.input`` object; None when it recorded none."""
        if "units" not in d:
            return None
        return cls(tuple(str(f) for f in d["files"]),
                   tuple((int(f), int(a), None if b is None else int(b)) for f, a, b in d["units"]))

    def to_json(self) -> dict[str, list[str] | list[list[int | None]]]:
        """The ``files`` and ``units`` keys of ``sharded.input``."""
        units: list[list[int | None]] = [list(u) for u in self.units]
        return {"files": list(self.files), "units": units}


def _spool_stdin(work: Path) -> Path:
    # Standard input as a plain file in the work directory: byte ranges need a file to seek in.
    out = work / "input.txt"
    with open(out, "wb") as dst:
        shutil.copyfileobj(sys.stdin.buffer, dst, _COPY_BYTES)
    if out.stat().st_size == 0:
        raise ParvecError("standard input: the input is empty")
    return out


def plan_inputs(source: Any, cpus: int, work: Path, range_bytes: int = RANGE_BYTES,
                recorded: RecordedUnits | None = None) -> InputPlan:
    """Cut ``source`` (a path, ``-``, a directory, a glob, or a list of them: one corpus, read in order) into units:
    each plain file into byte ranges just after line breaks (:func:`parvec.corpus.line_cuts`: about ``range_bytes``
    each, ``2 x cpus`` ranges at least over all plain files, shared by size; no line is cut, so a file of fewer
    lines makes fewer ranges and a line longer than ``range_bytes`` is one range), each compressed file one unit.
    ``recorded`` (a checkpoint's :class:`RecordedUnits`) gives the units to read instead (a resumed run reads its
    checkpoint's).

    Example:
        >>> plan_inputs(["a.txt", "b.txt.gz"], cpus=2, work=Path("work")).units  # doctest: +SKIP
        ((0, 0, 512), (0, 512, 1024), (0, 1024, 1530), (0, 1530, 2041), (1, 0, None))
    """
    if _urls(source):
        return _plan_urls(source, cpus, range_bytes, recorded)
    if isinstance(source, str | os.PathLike) and os.fspath(source) == STDIN:
        files = [_spool_stdin(work)]
        name = "standard input"
    else:
        found = expand_inputs(source)
        files = found if found is not None else [check_input(source)]
        name = os.fspath(source) if not isinstance(source, list | tuple) else " ".join(map(os.fspath, source))
    for f in files:
        check_input(f)
    paths = tuple(str(Path(f).absolute()) for f in files)
    states = tuple(file_state(p) for p in paths)
    return _cut(paths, states, name, cpus, range_bytes, recorded)


def _cut(paths: tuple[str, ...], states: tuple[tuple[int, ...] | None, ...], name: str, cpus: int,
         range_bytes: int, recorded: RecordedUnits | None) -> InputPlan:
    # The units of the files `paths` (local paths or URLs; `states[i][2]` their sizes): module docstring.
    if recorded is not None:
        if len(recorded.files) != len(paths):  # the units name files by their place; the bytes are checked later
            raise ParvecError(f"{name} is not the input the checkpoint was trained on (it has {len(paths)} "
                              f"file{'s' if len(paths) != 1 else ''}, the checkpoint {len(recorded.files)}); give "
                              "the same input")
        return InputPlan(paths, recorded.units, states, name)
    sizes = [s[2] if s is not None else 0 for s in states]
    plain = [i for i, p in enumerate(paths) if not is_compressed(p)]
    plain_bytes = sum(sizes[i] for i in plain)
    wanted = max(2 * max(1, cpus), -(-plain_bytes // range_bytes)) if plain_bytes else 0
    out: list[tuple[int, int, int | None]] = []
    for i, p in enumerate(paths):
        if is_compressed(p):
            out.append((i, 0, None))
            continue
        size = sizes[i]
        n = max(1, -(-size // range_bytes), round(wanted * size / plain_bytes) if plain_bytes else 1)
        cuts = line_cuts(p, n)  # a line cut in two would be two sentences (the one-process reader's one)
        out += [(i, a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    if not out:
        raise ParvecError(f"{name}: the input is empty")
    return InputPlan(paths, tuple(out), states, name)


def _urls(source: Any) -> bool:
    # Whether `source` (a path, a URL or a list of them) names a URL; a list mixing URLs and local paths is refused.
    from parvec import storage

    items = list(source) if isinstance(source, list | tuple) else [source]
    urls = [storage.is_url(s) for s in items]
    if any(urls) and not all(urls):
        raise ParvecError("the inputs of a sharded run are all URLs or all local paths, not both: "
                          + " ".join(map(os.fspath, items)))
    return bool(urls) and all(urls)


def _plan_urls(source: Any, cpus: int, range_bytes: int, recorded: RecordedUnits | None) -> InputPlan:
    # The input's objects listed (their sizes in the listing), line cuts found by ranged reads near each cut: the
    # driver reads no more of the corpus than that; the workers read their units from the URLs.
    from parvec import storage

    items = [str(s) for s in (source if isinstance(source, list | tuple) else [source])]
    objects = [f for url in items for f in storage.list_inputs(url)]
    paths = tuple(f.url for f in objects)
    states = tuple(object_state(p) for p in paths)
    return _cut(paths, states, " ".join(items), cpus, range_bytes, recorded)


def object_state(path: str) -> tuple[int, ...] | None:
    """:func:`parvec.corpus.file_state` of a local path, :func:`parvec.storage.object_state` of a URL.

    Example:
        >>> object_state("/no/such/file") is None
        True
    """
    from parvec import storage

    if storage.is_url(path):
        try:
            return storage.object_state(path)
        except storage.StorageError:
            return None
    return file_state(path)



# --------------------------------------------------------------------------- before counting
COMPRESSION_RATIO = 5  # text bytes per byte of a compressed input, for the estimates before counting
_SAMPLE_BYTES = 8 << 20


def text_bytes(inputs: InputPlan) -> int:
    """About the bytes of text the input holds: plain files' sizes, compressed files' times
    :data:`COMPRESSION_RATIO`.

    Example:
        >>> text_bytes(InputPlan(("/a.txt", "/b.gz"), ((0, 0, 10), (1, 0, None)), ((1, 1, 10, 0, 0), (1, 2, 4, 0, 0)),
        ...                      "in"))
        30
    """
    return int(sum((COMPRESSION_RATIO if is_compressed(f) else 1) * s[2]
                   for f, s in zip(inputs.files, inputs.states, strict=True) if s is not None))


def estimate_distinct(inputs: InputPlan, options: ReadOptions, sample_bytes: int = _SAMPLE_BYTES) -> int:
    """The distinct words the whole input is expected to hold, before it is counted: the byte tokeniser counts the
    first ``sample_bytes`` of the input here (no Python object per word), and the growth of its distinct words
    from a quarter of the sample to all of it (Heaps' law, ``D = K n^beta``, ``beta`` clamped to 0.3-1) is carried
    to the input's :func:`text_bytes`, at most one word per two bytes.  A sample that is the whole input is exact.

    Example:
        >>> estimate_distinct(plan_inputs("corpus.txt", 2, Path("work")), ReadOptions()) > 0  # doctest: +SKIP
        True
    """
    import math

    from parvec.corpus.textscan import WordTable, normalise

    table = WordTable()
    seen, points = 0, list[tuple[int, int]]()
    whole = True  # every unit read to its end
    for k in range(len(inputs.units)):
        path, start, end = inputs.unit(k)
        reader = RangeSentences(path, start, end, options)
        blocks = reader.blocks()
        for name, block, where, at_end in blocks:  # a generator: closed below, its file with it
            if at_end:
                continue
            text = normalise(block, options.lowercase, functools.partial(reader.decode, where=where, name=name))
            table.scan(text, insert=True)
            seen += len(block)
            if not points or seen >= 4 * points[0][0]:
                points.append((seen, len(table)))
            if seen >= sample_bytes:
                whole = False
                break
        close = getattr(blocks, "close", None)
        if close is not None:
            close()
        if not whole:
            break
    total = text_bytes(inputs)
    if whole or not points:
        return len(table)
    (n1, d1), (n2, d2) = points[0], points[-1]
    beta = math.log(max(d2, 1) / max(d1, 1)) / math.log(n2 / n1) if n2 > n1 else 1.0
    beta = min(1.0, max(0.3, beta))
    return int(min(total // 2, d2 * (total / n2) ** beta))

# --------------------------------------------------------------------------- encoding
@dataclass(frozen=True)
class EncodedUnit:
    """What encoding one input unit gave (:func:`encode_unit`): its in-vocabulary tokens, sentences and raw words,
    the ``(bytes, CRC-32)`` it read and its plan of units of work (``(s_lo, s_hi, words)`` rows).

    Example:
        >>> EncodedUnit(0, 0, 0, (0, 0), np.zeros((0, 3), np.int64)).tokens
        0
    """

    tokens: int
    sentences: int
    raw_words: int
    fingerprint: tuple[int, int]
    plan: np.ndarray


def encode_unit(path: str, start: int, end: int | None, options: ReadOptions, lookup: Any, out_dir: str, k: int,
                unit_words: int) -> EncodedUnit:
    """Task: encode unit ``k`` (``path`` bytes ``[start, end)``, or the whole compressed file) through ``lookup``
    into ``out_dir/tokens_K.npy`` and ``offsets_K.npy`` (:func:`parvec.corpus.hashencode.encode_to_files`) and
    plan its units of work (``(s_lo, s_hi, words)`` per unit of about ``unit_words`` tokens, over its long
    sentences split); returns the figures, the plan and the ``(bytes, CRC-32)`` read.

    Example:
        >>> encode_unit("c.txt", 0, 1000, ReadOptions(), lookup, "work", 0, 100_000).tokens  # doctest: +SKIP
        812
    """
    from parvec.corpus.hashencode import encode_to_files

    reader = RangeSentences(path, start, end, options)
    out = Path(out_dir)
    n_tok, n_sent, raw, offsets = encode_to_files(reader, lookup, out / f"tokens_{k}.npy", out / f"offsets_{k}.npy")
    split = split_long_sentences(offsets, options.max_sentence_length)
    bounds = chunk_bounds(split, unit_words) if n_tok else np.zeros(1, np.int64)
    plan = np.array([(int(bounds[c]), int(bounds[c + 1]), int(split[bounds[c + 1]] - split[bounds[c]]))
                     for c in range(len(bounds) - 1)], dtype=np.int64).reshape(-1, 3)
    assert reader.fingerprint is not None  # set by the complete pass encode_to_files made
    return EncodedUnit(int(n_tok), int(n_sent), int(raw), reader.fingerprint, plan)


def encode_unit_here(path: str, start: int, end: int | None, options: ReadOptions, lookup: Any, k: int,
                     unit_words: int) -> tuple[EncodedUnit, np.ndarray, np.ndarray]:
    """Task (``num_returns=3``): :func:`encode_unit` into this node's own temporary directory (``$TMPDIR``, not the
    driver's work directory), returning the figures and the encoded part's ``tokens`` and ``offsets`` (each its own
    object in Ray's object store on this node, fetched by the client that trains it; Ray re-runs this task, reading
    ``path`` again, when the node holding them is lost).

    Example:
        >>> figures, tokens, offsets = encode_unit_here("s3://b/c.txt", 0, 1000, ReadOptions(), lookup, 0,
        ...                                             100_000)  # doctest: +SKIP
    """
    import tempfile

    scratch = tempfile.mkdtemp(prefix="parvec-encode-")
    try:
        figures = encode_unit(path, start, end, options, lookup, scratch, k, unit_words)
        tokens = np.load(Path(scratch) / f"tokens_{k}.npy")
        offsets = np.load(Path(scratch) / f"offsets_{k}.npy")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return figures, tokens, offsets


# --------------------------------------------------------------------------- the result
@dataclass
class ShardedCorpus:
    """A corpus counted and encoded on the cluster (module docstring).  ``parts`` are the encoded units the clients
    memory-map (``("files", [tokens.npy, offsets.npy])``, empty units left out), ``plans`` each part's units of
    work, ``fingerprints`` each input unit's ``(bytes, CRC-32)``, ``vocab_parts`` the partitions of the word list
    in ``vocab_dir`` (:class:`parvec.vocab_parts.VocabPart` records of what :func:`parvec.vocab_parts.write_part`
    wrote) and, one object reference each, in Ray's object store (``vocab_files``: their files' bytes,
    :func:`parvec.vocab_parts.part_files`), ``count_check`` the distinct-word estimate against the words counted,
    and the reducers that spilled or were run again.

    Example:
        >>> corpus.n_words, len(corpus.units())  # doctest: +SKIP
        (71290, 168)
    """

    inputs: InputPlan
    classes: CountClasses
    min_count: int
    raw_words: int
    tokens: int
    sentences: int
    parts: list[tuple[str, list[str]]]
    plans: list[np.ndarray]
    fingerprints: list[list[int] | None]
    vocab_dir: Path
    vocab_parts: list[VocabPart]
    vocab_files: list[Any] = field(default_factory=list)
    collisions: list[Any] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    count_check: CountCheck | None = None

    @property
    def n_words(self) -> int:
        """The vocabulary's size."""
        return self.classes.n_words

    @property
    def vocab_crc32(self) -> int:
        """One CRC-32 of the vocabulary (:func:`parvec.vocab_parts.vocab_crc32`)."""
        return vocab_crc32(self.vocab_parts)

    def units(self) -> list[Unit]:
        """The units of work of an epoch, in corpus order (part by part)."""
        units: list[Unit] = []
        base = 0
        for p, plan in enumerate(self.plans):
            for s_lo, s_hi, words in plan.tolist():
                units.append(Unit(p, int(s_lo), int(s_hi), len(units), base, int(words)))
                base += int(words)
        return units

    def identity(self) -> dict[str, Any]:
        """What a checkpoint records of the input and vocabulary (a resumed run's must match)."""
        return {**self.inputs.recorded_units().to_json(), "fingerprints": self.fingerprints, "tokens": self.tokens,
                "sentences": self.sentences, "raw_words": self.raw_words, "vocab_crc32": self.vocab_crc32,
                "classes": {"values": self.classes.values.tolist(), "first": self.classes.first.tolist()}}


def reducers_for(ray: Any) -> int:
    # One reducer per CPU of the cluster (each holds ~165 bytes per distinct word of its hash range at its peak).
    return max(2, int(ray.cluster_resources().get("CPU", 1)))


@dataclass(frozen=True)
class CountPlan:
    """What counting an input takes, planned from its sizes before anything is counted: the ``distinct`` words
    expected (:func:`estimate_distinct`; the reducers' spill budget) and the memory ``estimate`` of the count
    (:func:`parvec.distributed.memory.count_step`).

    Example:
        >>> CountPlan(1000, None).distinct
        1000
    """

    distinct: int
    estimate: Any

    def placement(self, ray: Any, cluster: Any) -> dict[str, int]:
        """Refuse a count that does not fit (the estimate's ``check``, naming the parts), then the bytes each
        reducer, mapper and encoder asks of Ray's ``memory`` resource on a cluster joined
        (:func:`parvec.distributed.memory.placement`).

        Example:
            >>> plan_count(ray, inputs, ReadOptions(), cluster).placement(ray, cluster)  # doctest: +SKIP
            {}
        """
        from parvec.distributed.memory import ENCODER_BLOCK_BYTES, WORKER_BASELINE, placement

        self.estimate.check()
        each = {p.name: p.each for p in self.estimate.parts + self.estimate.elsewhere}
        return placement(ray, {"reducer": each["reducer"], "mapper": each["mapper"],
                               "encoder": WORKER_BASELINE + ENCODER_BLOCK_BYTES}, cluster)


def plan_count(ray: Any, inputs: InputPlan, options: ReadOptions, cluster: Any) -> CountPlan:
    """Plan the count of ``inputs`` (:class:`CountPlan`; its ``placement`` refuses one that does not fit).

    Example:
        >>> plan_count(ray, plan_inputs("corpus.txt", 2, work), ReadOptions(), cluster).distinct  # doctest: +SKIP
        71290
    """
    from parvec.distributed.memory import count_step

    distinct = estimate_distinct(inputs, options)
    largest = max((b - a if b is not None else text_bytes(inputs) // max(1, len(inputs.units))
                   for _, a, b in inputs.units), default=0)
    return CountPlan(distinct, count_step(cluster, text_bytes(inputs), largest, len(inputs.units), distinct,
                                          reducers_for(ray)))


def prepare_corpus(ray: Any, inputs: InputPlan, options: ReadOptions, work: Path, unit_words: int,
                   timeout_s: float = 300.0, memory: dict[str, int] | None = None,
                   distinct: int | None = None) -> ShardedCorpus:
    """Count, assign ids and encode ``inputs`` on the cluster (module docstring) into ``work`` (``encoded/``,
    ``vocab/``); ``memory`` the bytes each kind of task or actor asks of Ray (``reducer``, ``mapper``,
    ``encoder``: placement by memory), ``distinct`` the distinct words expected (the reducers spill past it:
    :func:`parvec.distributed.count_merge.spill_budget`).  The reducers are stopped before it returns (their word
    lists are on disk).

    Example:
        >>> corpus = prepare_corpus(ray, plan_inputs("c.txt", 2, work), ReadOptions(), work, 100_000)  # doctest: +SKIP
    """
    from parvec.distributed.vocab_count import count_units

    memory = memory or {}
    t0 = time.perf_counter()
    parts = count_units(ray, inputs.all_units(), options, reducers_for(ray), timeout_s, name=inputs.name,
                        reducer_memory=memory.get("reducer"), mapper_memory=memory.get("mapper"),
                        distinct_estimate=distinct)
    try:
        vocab_dir = work / "vocab"
        vocab_dir.mkdir(parents=True, exist_ok=True)
        # Each reducer's partition travels through the object store (no shared file system): the driver keeps
        # the references (the export's tasks read the words from them) and writes a copy into its work directory.
        handed = [r.part_files.options(num_returns=2).remote(i) for i, r in enumerate(parts.reducers)]
        records = _await(ray, [h[0] for h in handed], "writing the vocabulary's partitions", timeout_s)
        vocab_files = [h[1] for h in handed]
        for rec, ref in zip(records, vocab_files, strict=True):
            write_part_files(vocab_dir, int(rec["part"]), _await(ray, [ref], "writing the vocabulary's partitions",
                                                                 timeout_s)[0])
        t1 = time.perf_counter()
        enc_dir = work / "encoded"
        opts: dict[str, Any] = {"num_cpus": 1, "max_retries": 2}
        if memory.get("encoder"):
            opts["memory"] = int(memory["encoder"])
        if inputs.remote:  # read from URLs: encoded where the task runs, kept in Ray's object store (no shared disk)
            task = ray.remote(encode_unit_here).options(num_returns=3, **opts)
            refs = [task.remote(p, a, b, options, parts.lookup, k, unit_words)
                    for k, (p, a, b) in enumerate(inputs.all_units())]
            sizes = _await(ray, [r[0] for r in refs], "encoding the corpus", timeout_s)
            held: list[tuple[str, list[Any]]] = [("refs", [r[1], r[2]]) for r in refs]
        else:
            enc_dir.mkdir(exist_ok=True)
            task = ray.remote(encode_unit).options(**opts)
            sizes = _await(ray, [task.remote(p, a, b, options, parts.lookup, str(enc_dir), k, unit_words)
                                 for k, (p, a, b) in enumerate(inputs.all_units())], "encoding the corpus", timeout_s)
            held = [("files", [str(enc_dir / f"tokens_{k}.npy"), str(enc_dir / f"offsets_{k}.npy")])
                    for k in range(len(sizes))]
    finally:
        parts.close(ray)
    _check_unchanged(inputs, [c.fingerprint for c in parts.counted], [s.fingerprint for s in sizes])
    kept = [k for k, s in enumerate(sizes) if s.tokens]
    n_tokens = sum(s.tokens for s in sizes)
    if n_tokens == 0:
        raise ParvecError(f"{inputs.name}: no token of the corpus is in the vocabulary")
    return ShardedCorpus(
        inputs=inputs, classes=parts.classes, min_count=parts.min_count, raw_words=parts.raw_words,
        tokens=n_tokens, sentences=sum(s.sentences for s in sizes),
        parts=[held[k] for k in kept],
        plans=[sizes[k].plan for k in kept],
        fingerprints=[list(c.fingerprint) if c.fingerprint is not None else None for c in parts.counted],
        vocab_dir=vocab_dir, vocab_parts=[VocabPart.from_json(r) for r in records], vocab_files=vocab_files,
        collisions=parts.collisions,
        seconds={"count": t1 - t0, "encode": time.perf_counter() - t1}, count_check=parts.check)


def _check_unchanged(inputs: InputPlan, counted: list[Any], encoded: list[Any]) -> None:
    # Each unit read the same bytes twice (counting, encoding), and no file changed meanwhile.
    for i, (path, before) in enumerate(zip(inputs.files, inputs.states, strict=True)):
        after = object_state(path)
        if before is not None and after != before:
            raise input_changed(path, before, after, "while it was read")
        del i
    for k, (a, b) in enumerate(zip(counted, encoded, strict=True)):
        if a is not None and b is not None and tuple(a) != tuple(b):
            path, start, end = inputs.unit(k)
            state = inputs.states[inputs.units[k][0]]
            assert state is not None
            raise input_changed(path, state, state, "between counting and encoding its bytes "
                                f"{start}-{end if end is not None else 'end'}", content=True)


def _await(ray: Any, refs: list[Any], what: str, timeout_s: float) -> list[Any]:
    # Every task's answer; a task's ParvecError is this run's error, any other failure named with the step.
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    try:
        return list(ray.get(refs, timeout=timeout_s * -(-len(refs) // cpus)))
    except ray.exceptions.GetTimeoutError:
        raise ParvecError(f"{what}: not done within {timeout_s:g} s per unit (Cluster.timeout_s)") from None
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", exc)
        raise ParvecError(str(cause) if isinstance(cause, ParvecError) else f"{what} failed: {cause}") from None
    except ray.exceptions.RayError as exc:
        raise ParvecError(f"{what} failed: {getattr(exc, 'cause', exc)}") from None
