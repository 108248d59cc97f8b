"""``parvec train`` with URLs: its inputs read from, and its outputs written to, object storage (:mod:`parvec.storage`).

:func:`staged_train` rewrites the URL arguments of a ``parvec train`` into local paths for the length of the run,
and puts the results where the URLs say when it ends:

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

Example:
    >>> import argparse
    >>> ns = argparse.Namespace(input=["corpus.txt"], train_file=None, output="v.txt", save_model=None,
    ...                         save_vocab=None, report=None, checkpoint_dir=None, resume=None, read_vocab=None)
    >>> uses_urls(ns)
    False
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import posixpath
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parvec import storage
from parvec.checkpoints import EPOCH_END
from parvec.errors import ParvecError

__all__ = ["StagedRun", "partitioned_output", "reads_urls_on_workers", "renaming_stderr", "staged_train",
           "uses_urls"]

_OUTPUT_FLAGS = (("output", "-o"), ("save_vocab", "--save-vocab"), ("report", "--report"))


def uses_urls(args: argparse.Namespace) -> bool:
    """Whether any input or output of a ``parvec train`` is a URL.

    Example:
        >>> uses_urls(argparse.Namespace(input=["s3://b/corpus/"], output="v.txt"))
        True
    """
    values = list(getattr(args, "input", None) or []) + [getattr(args, name, None) for name in (
        "train_file", "output", "save_model", "save_vocab", "report", "checkpoint_dir", "resume", "read_vocab")]
    return any(storage.is_url(v) for v in values) or partitioned_output(getattr(args, "output", None))


def reads_urls_on_workers(args: argparse.Namespace) -> bool:
    """Whether the run's input URLs are read by the cluster's workers themselves (``--mode sharded``, or
    ``--resume`` of a sharded run's checkpoint: the driver lists the objects and reads a few bytes around each cut;
    each unit is read from the URL by the task or the client that needs it), so the input is not copied to the
    driver.

    Example:
        >>> reads_urls_on_workers(argparse.Namespace(cluster="local:2", cluster_mode="sharded"))
        True
    """
    if getattr(args, "resumes_sharded", False):
        return True
    return bool(getattr(args, "cluster", None)) and getattr(args, "cluster_mode", None) == "sharded"


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
        for local in sorted(self.names, key=len, reverse=True):
            text = text.replace(local, self.names[local])
        return text

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
    files = storage.list_inputs(url)
    run.inputs += [f.url for f in files]
    where = run.root / f"in-{i}"
    where.mkdir(parents=True)
    for f in files:
        storage.download(f.url, where / f.name)
    single = len(files) == 1 and not url.endswith("/") and not any(c in url for c in "*?[") and \
        files[0].url.rstrip("/") == url.rstrip("/")
    if single:
        run.names[str(where / files[0].name)] = url
        return str(where / files[0].name)
    run.names[str(where)] = posixpath.dirname(files[0].url)  # a prefix or a glob: its objects' "directory"
    return str(where)


def _checkpoint_root(url: str) -> tuple[str, str]:
    # (the checkpoint directory's URL, the entry inside it --resume names or "")
    base = posixpath.basename(url.rstrip("/"))
    if base == EPOCH_END or base.startswith("mid-e"):
        return url.rstrip("/")[: -len(base) - 1], base
    return url.rstrip("/"), ""


def _stage_checkpoints(args: argparse.Namespace, run: StagedRun) -> None:
    resume_url = args.resume if storage.is_url(args.resume) else None
    ck_url = args.checkpoint_dir if storage.is_url(args.checkpoint_dir) else None
    local = run.root / "checkpoints"
    if resume_url is not None:
        root_url, entry = _checkpoint_root(resume_url)
        if not storage.url_exists(root_url):
            raise storage.StorageError(f"--resume {resume_url}: no such object or prefix")
        storage.download(root_url, local)
        args.resume = str(local / entry) if entry else str(local)
        args.resumes_sharded = _sharded_checkpoint(local)
        if args.checkpoint_dir is None or (ck_url is not None and ck_url.rstrip("/") == root_url):
            ck_url = root_url  # checkpoints continue where they were
            args.checkpoint_dir = str(local)
    if ck_url is not None:
        storage.check_writable(storage.join_url(ck_url, EPOCH_END))
        if args.checkpoint_dir == ck_url:
            local.mkdir(parents=True, exist_ok=True)
            args.checkpoint_dir = str(local)
        run.mirrored = storage.mirror(local, ck_url)
        run.names[str(local)] = ck_url.rstrip("/")
        run.mirrored.sync()  # what was downloaded counts as sent


def _sharded_checkpoint(local: Path) -> bool:
    # Whether a checkpoint directory copied here is a sharded run's (its model.json has a "sharded" record).
    for meta in local.rglob("model.json"):
        with contextlib.suppress(OSError, ValueError):
            if json.loads(meta.read_text(encoding="utf-8")).get("sharded"):
                return True
    return False


def _stage_outputs(args: argparse.Namespace, run: StagedRun) -> None:
    for name, _flag in _OUTPUT_FLAGS:
        url = getattr(args, name, None)
        if not isinstance(url, str):
            continue
        parts = name == "output" and partitioned_output(url)
        if not (storage.is_url(url) or parts):
            continue
        if storage.is_url(url):
            storage.check_writable(url)
        where = run.root / f"out-{name}"
        where.mkdir()
        if parts:
            local = where / "vectors.bin"  # a binary word2vec file, cut into parts when the run ends
            run.partitioned.append((local, url))
            args.binary = 1 if args.binary is None else args.binary
        else:
            local = where / posixpath.basename(url)
            run.uploads.append((local, url))
        setattr(args, name, str(local))
        run.names[str(local)] = url
    model_url = args.save_model
    if isinstance(model_url, str) and storage.is_url(model_url):
        storage.check_writable(model_url)
        local = run.root / "out-save_model" / posixpath.basename(model_url.rstrip("/"))
        local.parent.mkdir()
        run.uploads.append((local, model_url))
        args.save_model = str(local)
        run.names[str(local)] = model_url


def _refuse_overwriting_inputs(args: argparse.Namespace, run: StagedRun) -> None:
    # An output URL that is one of the input's objects: refused as a local output that is an input is.
    read = set(run.inputs)
    for name, flag in (*_OUTPUT_FLAGS, ("save_model", "--save-model")):
        url = run.names.get(str(getattr(args, name, None)))
        if url is not None and url in read:
            raise ParvecError(f"{flag} {url} is an object of the training corpus: refusing to overwrite an input; "
                              "choose another URL")


@contextlib.contextmanager
def staged_train(args: argparse.Namespace) -> Iterator[StagedRun | None]:
    """Rewrite the URL arguments of ``args`` into local stand-ins for the body of the ``with``; None (and nothing
    changed) when there is no URL.  Call :meth:`StagedRun.finish` after a successful run to upload its outputs; the
    staging directory is removed either way.

    Example:
        >>> ns = argparse.Namespace(input=["c.txt"], train_file=None, output="v.txt", save_model=None,
        ...                         save_vocab=None, report=None, checkpoint_dir=None, resume=None, read_vocab=None)
        >>> with staged_train(ns) as run:
        ...     run is None
        True
    """
    if not uses_urls(args):
        yield None
        return
    run = StagedRun(Path(tempfile.mkdtemp(prefix="parvec-staged-")))
    try:
        _stage_outputs(args, run)  # first: a missing output bucket is refused before any download
        _stage_checkpoints(args, run)
        inputs, train_file = list(args.input or []), args.train_file
        if reads_urls_on_workers(args):  # the workers read their units from the URLs: nothing is copied here
            run.inputs += [f.url for u in inputs + [train_file] if storage.is_url(u) for f in storage.list_inputs(u)]
        elif args.input:
            args.input = [_stage_input(u, run, i) if storage.is_url(u) else u for i, u in enumerate(args.input)]
        if storage.is_url(args.train_file) and not reads_urls_on_workers(args):
            args.train_file = _stage_input(args.train_file, run, len(args.input or []))
        if (any(storage.is_url(u) for u in inputs) or storage.is_url(train_file)) and not args.no_cache \
                and not reads_urls_on_workers(args):
            # The encoded-corpus cache is keyed on the file's path: a copy made for one run would leave an entry
            # no later run uses.
            args.no_cache = True
            print("encoded-corpus cache: not used for a corpus read from a URL (it is copied for this run)",
                  file=sys.stderr)
        _refuse_overwriting_inputs(args, run)
        if storage.is_url(getattr(args, "read_vocab", None)):
            args.read_vocab = str(storage.download(args.read_vocab, run.root / "read-vocab" / "vocab.txt"))
        yield run
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
