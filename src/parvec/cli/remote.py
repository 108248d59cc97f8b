"""``parvec train`` with URLs: its inputs read from, and its outputs written to, object storage (:mod:`parvec.storage`).

:func:`staged_train` maps the URL arguments of a ``parvec train`` (a :class:`TrainPaths` record) to local paths for
the length of the run, and puts the results where the URLs say when it ends:

- an input URL of a ``--mode sharded`` run is left as it is: the driver plans from its listing and the workers
  read their units from it (:func:`reads_urls_on_workers`, :mod:`parvec.distributed.sharded_source`);
- another input URL (an object, a prefix ``s3://b/corpus/``, a glob) is listed and its objects copied into a local
  staging directory under their own names (``.gz``/``.bz2``/``.xz`` kept compressed), which the run reads as it
  reads a local directory, in the same order (by name): the vectors are those of the same run on local files
  (the encoded-corpus cache, keyed on local paths, is not used for such a copy);
- ``-o``, ``--save-vocab``, ``--report`` and ``--save-model`` are written locally and uploaded once the run has
  written them all (``-o x.npy``'s companion files too); ``-o URL/`` or ``-o DIR/`` (a trailing slash, or an
  existing local directory) writes the vectors as part files and a manifest (:mod:`parvec.partitioned`);
- ``--checkpoint-dir URL`` is a local directory mirrored to the URL: each checkpoint is uploaded when written
  (:func:`parvec.storage.synced`, called by :class:`parvec.checkpoints.Checkpointer`), so a run killed after a
  checkpoint resumes from the URL: ``--resume URL`` copies the checkpoint directory back and continues
  checkpointing to it.

Local paths are left as they are: a run without URLs (and without a partitioned ``-o``) does not come here.

Nothing here writes to the parsed namespace: :meth:`TrainPaths.of` reads the flags staging needs once, staging
maps that frozen record to another (:func:`dataclasses.replace`) with the local stand-ins, and
:func:`parvec.cli.command.resolve` takes the staged record over the namespace's values.

Example:
    >>> uses_urls(TrainPaths(inputs=("corpus.txt",), output="v.txt"))
    False
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import posixpath
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parvec import storage
from parvec.checkpoints import EPOCH_END
from parvec.errors import ParvecError

__all__ = ["StagedRun", "TrainPaths", "partitioned_output", "reads_urls_on_workers", "renaming_stderr", "run_staged",
           "staged_train",
           "uses_urls"]

_OUTPUT_FLAGS = (("output", "-o"), ("save_vocab", "--save-vocab"), ("report", "--report"))


@dataclass(frozen=True)
class TrainPaths:
    """The flags of a ``parvec train`` that staging reads or rewrites, by their destinations: the corpus
    (``input``, ``train_file``), the outputs, the checkpoint directory, the checkpoint resumed, the vocabulary
    read, ``--binary`` (None: not given), ``--no-cache``, and where it trains (``cluster``, ``cluster_mode``: only
    read).  :func:`staged_train` maps it to the record of the local stand-ins.

    Example:
        >>> TrainPaths(inputs=("s3://b/corpus/",), output="v.txt").input
        ['s3://b/corpus/']
    """

    inputs: tuple[str, ...] = ()
    train_file: str | None = None
    output: str | None = None
    save_model: str | None = None
    save_vocab: str | None = None
    report: str | None = None
    checkpoint_dir: str | None = None
    resume: str | None = None
    read_vocab: str | None = None
    binary: int | None = None
    no_cache: bool = False
    cluster: str | None = None
    cluster_mode: str | None = None
    resumes_sharded: bool = False  # set by staging: the --resume URL holds a sharded run's checkpoint
    output_parts: str | None = None  # set by staging: -o URL/ of a sharded run, its parts written by the workers

    @classmethod
    def of(cls, args: argparse.Namespace) -> TrainPaths:
        """The record of ``parvec train``'s parsed flags (only read).

        Example:
            >>> from parvec.cli import build_parser
            >>> TrainPaths.of(build_parser().parse_args(["train", "c.txt", "-o", "s3://b/v.bin"])).output
            's3://b/v.bin'
        """
        return cls(inputs=tuple(args.input or ()), train_file=args.train_file, output=args.output,
                   save_model=args.save_model, save_vocab=args.save_vocab, report=args.report,
                   checkpoint_dir=args.checkpoint_dir, resume=args.resume, read_vocab=args.read_vocab,
                   binary=args.binary, no_cache=bool(args.no_cache), cluster=args.cluster,
                   cluster_mode=args.cluster_mode)

    @property
    def input(self) -> list[str] | None:
        """The positional inputs as the parsed flags hold them (None: none given)."""
        return list(self.inputs) or None

    def flag_values(self) -> tuple[tuple[str, object], ...]:
        """Each flag's destination and value, as :func:`parvec.cli.command.resolve` takes them over the parsed
        flags' (``input`` a list or None, as argparse gives it).

        Example:
            >>> dict(TrainPaths(output="v.txt").flag_values())["output"]
            'v.txt'
        """
        return (("input", self.input), ("train_file", self.train_file), ("output", self.output),
                ("save_model", self.save_model), ("save_vocab", self.save_vocab), ("report", self.report),
                ("checkpoint_dir", self.checkpoint_dir), ("resume", self.resume), ("read_vocab", self.read_vocab),
                ("binary", self.binary), ("no_cache", self.no_cache), ("output_parts", self.output_parts))

    def output_flag(self, name: str) -> str | None:
        """The value of the output flag ``name`` (``output``, ``save_vocab``, ``report`` or ``save_model``).

        Example:
            >>> TrainPaths(report="s3://b/r.json").output_flag("report")
            's3://b/r.json'
        """
        outputs = {"output": self.output, "save_vocab": self.save_vocab, "report": self.report,
                   "save_model": self.save_model}
        return outputs[name]


def uses_urls(paths: TrainPaths) -> bool:
    """Whether any input or output of a ``parvec train`` is a URL.

    Example:
        >>> uses_urls(TrainPaths(inputs=("s3://b/corpus/",), output="v.txt"))
        True
    """
    values = [*paths.inputs, paths.train_file, paths.output, paths.save_model, paths.save_vocab, paths.report,
              paths.checkpoint_dir, paths.resume, paths.read_vocab]
    return any(storage.is_url(v) for v in values) or partitioned_output(paths.output)


def reads_urls_on_workers(paths: TrainPaths) -> bool:
    """Whether the run's input URLs are read by the cluster's workers themselves (``--mode sharded``, or
    ``--resume`` of a sharded run's checkpoint: the driver lists the objects and reads a few bytes around each cut;
    each unit is read from the URL by the task or the client that needs it), so the input is not copied to the
    driver.

    Example:
        >>> reads_urls_on_workers(TrainPaths(cluster="local:2", cluster_mode="sharded"))
        True
    """
    return paths.resumes_sharded or (bool(paths.cluster) and paths.cluster_mode == "sharded")


def partitioned_output(output: str | None) -> bool:
    """Whether ``-o OUTPUT`` asks for a partitioned output: a URL or a path ending in ``/``, or an existing local
    directory.

    Example:
        >>> partitioned_output("s3://b/out/"), partitioned_output("out/v.bin"), partitioned_output(None)
        (True, False, False)
    """
    if not output or output == "-":
        return False
    return output.endswith("/") or (not storage.is_url(output) and Path(output).is_dir())


@dataclass
class StagedRun:
    """The local stand-ins of a run's URLs: ``root`` (the staging directory), the uploads to make when the run
    succeeds (local path, URL) and the mirrored checkpoint directory.

    Example:
        >>> StagedRun(Path("/tmp/x")).uploads
        []
    """

    root: Path
    uploads: list[tuple[Path, str]] = field(default_factory=list)
    partitioned: list[tuple[Path, str]] = field(default_factory=list)
    mirrored: storage.MirroredDirectory | None = None
    names: dict[str, str] = field(default_factory=dict)  # a local stand-in -> the URL it stands for
    inputs: list[str] = field(default_factory=list)  # the URLs of the objects read

    def rename(self, text: str) -> str:
        """``text`` with every local stand-in named by its URL (for the run's messages).

        Example:
            >>> run = StagedRun(Path("/tmp/s"), names={"/tmp/s/in-0": "s3://b/corpus"})
            >>> run.rename("/tmp/s/in-0/a.txt:3: invalid UTF-8")
            's3://b/corpus/a.txt:3: invalid UTF-8'
        """
        return storage.with_urls(text, self.names)

    def finish(self) -> list[str]:
        """Upload every output; returns the lines saying where each went."""
        from parvec.partitioned import write_partitioned

        lines = []
        for local, url in self.uploads:
            if local.is_dir():
                storage.upload(local, url)
            else:  # the file and its companions (-o x.npy's .vocab and .json)
                for f in sorted(local.parent.iterdir()):
                    storage.upload(f, posixpath.join(posixpath.dirname(url), f.name))
            lines.append(f"uploaded {url}")
        for local, url in self.partitioned:
            parts = write_partitioned(local, url)
            lines.append(f"wrote {parts} part file{'s' if parts != 1 else ''} and the manifest to {url}")
        return lines


def _stage_input(url: str, run: StagedRun, i: int) -> str:
    staged = storage.stage_input(url, run.root / f"in-{i}")
    run.inputs += staged.urls
    run.names.update(staged.names)
    return str(staged.local)


def _checkpoint_root(url: str) -> tuple[str, str]:
    # (the checkpoint directory's URL, the entry inside it --resume names or "")
    base = posixpath.basename(url.rstrip("/"))
    if base == EPOCH_END or base.startswith("mid-e"):
        return url.rstrip("/")[: -len(base) - 1], base
    return url.rstrip("/"), ""


def _stage_checkpoints(paths: TrainPaths, run: StagedRun) -> TrainPaths:
    resume_url = paths.resume if storage.is_url(paths.resume) else None
    ck_url = paths.checkpoint_dir if storage.is_url(paths.checkpoint_dir) else None
    resume, checkpoint_dir, resumes_sharded = paths.resume, paths.checkpoint_dir, paths.resumes_sharded
    local = run.root / "checkpoints"
    if resume_url is not None:
        root_url, entry = _checkpoint_root(resume_url)
        if not storage.url_exists(root_url):
            raise storage.StorageError(f"--resume {resume_url}: no such object or prefix")
        storage.download(root_url, local)
        resume = str(local / entry) if entry else str(local)
        resumes_sharded = _sharded_checkpoint(local)
        if checkpoint_dir is None or (ck_url is not None and ck_url.rstrip("/") == root_url):
            ck_url = root_url  # checkpoints continue where they were
            checkpoint_dir = str(local)
    if ck_url is not None:
        storage.check_writable(storage.join_url(ck_url, EPOCH_END))
        if checkpoint_dir == ck_url:
            local.mkdir(parents=True, exist_ok=True)
            checkpoint_dir = str(local)
        run.mirrored = storage.mirror(local, ck_url)
        run.names[str(local)] = ck_url.rstrip("/")
        run.mirrored.sync()  # what was downloaded counts as sent
    return dataclasses.replace(paths, resume=resume, checkpoint_dir=checkpoint_dir, resumes_sharded=resumes_sharded)


def _sharded_checkpoint(local: Path) -> bool:
    # Whether a checkpoint directory copied here is a sharded run's (its model.json has a "sharded" record).
    for meta in local.rglob("model.json"):
        with contextlib.suppress(OSError, ValueError):
            if json.loads(meta.read_text(encoding="utf-8")).get("sharded"):
                return True
    return False


def _stage_outputs(paths: TrainPaths, run: StagedRun) -> TrainPaths:
    staged: dict[str, str | None] = {}
    binary, output_parts = paths.binary, None
    for name, _flag in _OUTPUT_FLAGS:
        url = paths.output_flag(name)
        if url is None:
            continue
        parts = name == "output" and partitioned_output(url)
        if not (storage.is_url(url) or parts):
            continue
        if storage.is_url(url):
            storage.check_writable(url)
        if parts and storage.is_url(url) and reads_urls_on_workers(paths):
            staged[name], output_parts = None, url  # the sharded run's tasks write the parts to the URL themselves
            continue
        where = run.root / f"out-{name}"
        where.mkdir()
        if parts:
            local = where / "vectors.bin"  # a binary word2vec file, cut into parts when the run ends
            run.partitioned.append((local, url))
            binary = 1 if binary is None else binary
        else:
            local = where / posixpath.basename(url)
            run.uploads.append((local, url))
        staged[name] = str(local)
        run.names[str(local)] = url
    model_url = paths.save_model
    if model_url is not None and storage.is_url(model_url):
        storage.check_writable(model_url)
        local = run.root / "out-save_model" / posixpath.basename(model_url.rstrip("/"))
        local.parent.mkdir()
        run.uploads.append((local, model_url))
        staged["save_model"] = str(local)
        run.names[str(local)] = model_url
    return dataclasses.replace(paths, binary=binary, output=staged.get("output", paths.output),
                               save_vocab=staged.get("save_vocab", paths.save_vocab),
                               report=staged.get("report", paths.report),
                               save_model=staged.get("save_model", paths.save_model), output_parts=output_parts)


def _refuse_overwriting_inputs(paths: TrainPaths, run: StagedRun) -> None:
    # An output URL that is one of the input's objects: refused as a local output that is an input is.
    read = set(run.inputs)
    for name, flag in (*_OUTPUT_FLAGS, ("save_model", "--save-model")):
        url = run.names.get(str(paths.output_flag(name)))
        if url is not None and url in read:
            raise ParvecError(f"{flag} {url} is an object of the training corpus: refusing to overwrite an input; "
                              "choose another URL")


def _stage_inputs(paths: TrainPaths, run: StagedRun) -> TrainPaths:
    # The corpus: listed (read by the workers of a sharded run) or copied here; the encoded-corpus cache is not
    # used for a copy.
    inputs, train_file = list(paths.inputs), paths.train_file
    on_workers = reads_urls_on_workers(paths)
    if on_workers:  # the workers read their units from the URLs: nothing is copied here
        urls = [u for u in [*inputs, train_file] if u is not None and storage.is_url(u)]
        run.inputs += [f.url for u in urls for f in storage.list_inputs(u)]
        return paths
    staged_inputs = tuple(_stage_input(u, run, i) if storage.is_url(u) else u for i, u in enumerate(inputs))
    staged_train_file = train_file
    if train_file is not None and storage.is_url(train_file):
        staged_train_file = _stage_input(train_file, run, len(inputs))
    no_cache = paths.no_cache
    if (any(storage.is_url(u) for u in inputs) or storage.is_url(train_file)) and not no_cache:
        # The encoded-corpus cache is keyed on the file's path: a copy made for one run would leave an entry
        # no later run uses.
        no_cache = True
        print("encoded-corpus cache: not used for a corpus read from a URL (it is copied for this run)",
              file=sys.stderr)
    return dataclasses.replace(paths, inputs=staged_inputs, train_file=staged_train_file, no_cache=no_cache)


@contextlib.contextmanager
def staged_train(paths: TrainPaths) -> Iterator[tuple[StagedRun | None, TrainPaths]]:
    """The run's local stand-ins for the body of the ``with``: the :class:`StagedRun` and ``paths`` with every URL
    replaced by its local stand-in; ``(None, paths)`` when there is no URL.  ``paths`` itself is not changed.
    Call :meth:`StagedRun.finish` after a successful run to upload its outputs; the staging directory is removed
    either way.

    Example:
        >>> with staged_train(TrainPaths(inputs=("c.txt",), output="v.txt")) as (run, staged):
        ...     run is None, staged.output
        (True, 'v.txt')
    """
    if not uses_urls(paths):
        yield None, paths
        return
    run = StagedRun(Path(tempfile.mkdtemp(prefix="parvec-staged-")))
    try:
        staged = _stage_outputs(paths, run)  # first: a missing output bucket is refused before any download
        staged = _stage_checkpoints(staged, run)
        staged = _stage_inputs(staged, run)
        _refuse_overwriting_inputs(staged, run)
        if staged.read_vocab is not None and storage.is_url(staged.read_vocab):
            vocab = storage.download(staged.read_vocab, run.root / "read-vocab" / "vocab.txt")
            staged = dataclasses.replace(staged, read_vocab=str(vocab))
        yield run, staged
    finally:
        if run.mirrored is not None:
            try:
                run.mirrored.sync()  # the checkpoints written before a failure are kept at the URL
            except storage.StorageError as exc:
                print(f"warning: {exc}", file=sys.stderr)
            storage.unmirror(run.mirrored.local)
        shutil.rmtree(run.root, ignore_errors=True)


class _RenamingStream(io.TextIOBase):
    # Standard error, with every local stand-in of a staged run named by its URL (StagedRun.rename).
    def __init__(self, stream: Any, run: StagedRun) -> None:
        self._stream, self._run = stream, run

    def write(self, s: str) -> int:
        self._stream.write(self._run.rename(s))
        return len(s)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return bool(self._stream.isatty())

    def fileno(self) -> int:
        return int(self._stream.fileno())

    def __getattr__(self, name: str) -> Any:
        # A stream proxy: whatever else a writer asks of standard error (encoding, errors, buffer, ...) is the
        # wrapped stream's, whichever stream that is (a terminal, a pipe, pytest's capture).
        return getattr(self._stream, name)


@contextlib.contextmanager
def renaming_stderr(run: StagedRun) -> Iterator[None]:
    """Standard error (and the message of a :class:`parvec.errors.ParvecError` leaving the block) with every local
    stand-in of ``run`` named by its URL.

    Example:
        >>> run = StagedRun(Path("/tmp/s"), names={"/tmp/s/out/v.bin": "s3://b/v.bin"})
        >>> with renaming_stderr(run):
        ...     print("wrote 60 vectors to /tmp/s/out/v.bin", file=sys.stderr)  # doctest: +SKIP
    """
    try:
        with contextlib.redirect_stderr(_RenamingStream(sys.stderr, run)):
            yield
    except ParvecError as exc:
        if exc.args and isinstance(exc.args[0], str):
            exc.args = (run.rename(exc.args[0]), *exc.args[1:])
        raise


def run_staged(paths: TrainPaths, body: Callable[[TrainPaths | None], int]) -> int:
    """``body`` run on the local stand-ins of ``paths`` (:func:`staged_train`; ``None`` when there is no URL), its
    messages naming the URLs, and the outputs uploaded (and said) when it returns 0; returns its exit code.

    Example:
        >>> run_staged(TrainPaths(inputs=("c.txt",), output="v.txt"), lambda staged: 0)
        0
    """
    with staged_train(paths) as (run, local):
        if run is None:
            return body(None)
        with renaming_stderr(run):  # the run's messages name the URLs, not their local stand-ins
            code = body(local)
            if code == 0:
                for line in run.finish():
                    print(line, file=sys.stderr)
    return code
