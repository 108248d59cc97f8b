"""Inputs and outputs named by URL (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``, ``file://``), through fsspec.

A local path never comes here: :func:`is_url` tells the two apart, and local files keep the code path of
:mod:`parvec.fileio` and :mod:`parvec.corpus.readers` (fsspec is not even imported for them).  A URL's filesystem
library is the one fsspec names for its scheme (``s3fs`` for ``s3://``, ``gcsfs`` for ``gs://``, ``adlfs`` for
``abfs://``, pyarrow for ``hdfs://``); ``pip install 'parvec[cloud]'`` installs fsspec and s3fs.  Credentials
and endpoints are read the way each library reads them (for S3: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``,
``~/.aws``, an instance role; an S3-compatible server's address in ``AWS_ENDPOINT_URL`` or
``FSSPEC_S3_ENDPOINT_URL``).

- :func:`list_inputs`: the objects of an input URL in reading order (one object, a prefix, a glob), as
  :func:`parvec.corpus.expand_inputs` lists local files: hidden and empty objects left out, sorted by name.
- :func:`open_input`: an object opened for reading, ``.gz``/``.bz2``/``.xz`` decompressed by extension.
- :func:`download`/:func:`upload`: a file or a directory tree copied between a URL and a local path.
- :func:`write_output`: an output written to a local temporary file, then uploaded in one piece (an object store
  has no rename: the object appears whole or not at all).
- :class:`MirroredDirectory`: a local directory whose changes are uploaded on request (the checkpoint directory
  of a run whose ``--checkpoint-dir`` is a URL: written locally first, then uploaded, so training waits only for
  the upload of what changed).

A missing object or bucket raises :class:`StorageError` naming the URL; a scheme whose library is not installed
raises it naming the pip extra; both exit 2 like every :class:`parvec.errors.ParvecError`.

Example:
    >>> is_url("s3://bucket/corpus/"), is_url("corpus/part-0.txt"), is_url("C:/data/x.txt")
    (True, False, False)
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "b.txt").write_text("b\\n"); _ = (d / "a.txt").write_text("a\\n")
    >>> [f.name for f in list_inputs(d.as_uri())]
    ['a.txt', 'b.txt']
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import os
import posixpath
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from parvec.errors import ParvecError

__all__ = [
    "MirroredDirectory",
    "RemoteFile",
    "StagedInput",
    "StorageError",
    "delegate",
    "local_copy",
    "local_inputs",
    "remote_output",
    "renamed",
    "with_urls",
    "download",
    "filesystem",
    "is_url",
    "join_url",
    "list_inputs",
    "object_size",
    "object_state",
    "open_input",
    "open_raw",
    "stage_input",
    "upload",
    "url_exists",
    "url_of",
    "write_output",
]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")
_GLOB_CHARS = frozenset("*?[")
# The package that gives fsspec each scheme, and the pip extra of parvec that installs it.
_LIBRARIES = {
    "s3": ("s3fs", "parvec[cloud]"), "s3a": ("s3fs", "parvec[cloud]"),
    "gs": ("gcsfs", "gcsfs"), "gcs": ("gcsfs", "gcsfs"),
    "abfs": ("adlfs", "adlfs"), "abfss": ("adlfs", "adlfs"), "az": ("adlfs", "adlfs"),
    "hdfs": ("pyarrow", "pyarrow"),
}
_DECOMPRESS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open, ".lzma": lzma.open}


class StorageError(ParvecError):
    """A URL that cannot be read or written: a missing bucket or object, no permission, a scheme whose library is
    not installed.  The message names the URL (exit status 2).

    Example:
        >>> raise StorageError("s3://nope/corpus.txt: no such bucket")
        Traceback (most recent call last):
        ...
        parvec.storage.StorageError: s3://nope/corpus.txt: no such bucket
    """


def is_url(path: Any) -> bool:
    """True for ``scheme://...`` (``s3://b/k``, ``file:///tmp/x``); False for a local path, a ``Path``, ``-``.

    Example:
        >>> is_url("gs://b/x"), is_url(Path("s3:/x")), is_url("-")
        (True, False, False)
    """
    return isinstance(path, str) and _URL.match(path) is not None


def _scheme(url: str) -> str:
    m = _URL.match(url)
    return m.group(1).lower() if m else ""


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` and the path inside it; :class:`StorageError` naming the pip extra when
    the scheme's library (or fsspec) is not installed.

    Example:
        >>> fs, path = filesystem("file:///tmp/x.txt")
        >>> path
        '/tmp/x.txt'
    """
    scheme = _scheme(url)
    package, extra = _LIBRARIES.get(scheme, (None, "parvec[cloud]"))
    try:
        import fsspec
    except ImportError:
        raise StorageError(f"{url}: reading and writing URLs needs fsspec: pip install '{extra}'") from None
    # An S3-compatible endpoint named in the environment is passed explicitly, so that fsspec's cache of
    # filesystem instances (keyed by their arguments) never hands back one that talks to another endpoint.
    options = {}
    if scheme in ("s3", "s3a") and os.environ.get("AWS_ENDPOINT_URL"):
        options["endpoint_url"] = os.environ["AWS_ENDPOINT_URL"]
    try:
        fs, path = fsspec.core.url_to_fs(url, **options)
    except ImportError as exc:
        name = package or str(exc)
        raise StorageError(f"{url}: the {scheme}:// scheme needs the {name} package: pip install '{extra}'") from None
    except ValueError as exc:
        raise StorageError(f"{url}: {exc}") from None
    return fs, path


def _url_of(fs: Any, path: str, like: str) -> str:
    # The URL of `path` on the filesystem of the URL `like` (same scheme).
    scheme = _scheme(like)
    return f"{scheme}://{path.lstrip('/')}" if scheme != "file" else f"file://{path}"


def _bucket_exists(url: str) -> bool:
    # Whether the bucket (container) of an object-store URL exists; True for file:// and when it cannot be told.
    if _scheme(url) == "file":
        return True
    try:
        fs, path = filesystem(url)
        return bool(fs.exists(path.split("/", 1)[0]))
    except Exception:  # noqa: BLE001 - the error being reported is the one to show
        return True


def _missing(url: str, exc: BaseException) -> StorageError:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, FileNotFoundError) or "NoSuchBucket" in text or "NoSuchKey" in text:
        bucket = "NoSuchBucket" not in text and _bucket_exists(url)
        return StorageError(f"{url}: {'no such object or prefix' if bucket else 'no such bucket'}")
    if isinstance(exc, PermissionError) or "AccessDenied" in text or "Forbidden" in text:
        return StorageError(f"{url}: permission denied ({text})")
    return StorageError(f"{url}: {text}")


@dataclass(frozen=True)
class RemoteFile:
    """One object of an input URL: its URL, its size in bytes and its name (the last part of its key).

    Example:
        >>> RemoteFile("s3://b/corpus/part-0.txt.gz", 120).name
        'part-0.txt.gz'
    """

    url: str
    size: int

    @property
    def name(self) -> str:
        """The object's name: the last part of its URL."""
        return posixpath.basename(self.url.rstrip("/"))


def list_inputs(url: str) -> list[RemoteFile]:
    """The objects of an input URL, in reading order: the object itself, the objects directly under a prefix
    (``s3://b/corpus/``; deeper ones are not read, as a local directory's subdirectories are not), or a glob's
    matches (``s3://b/corpus/part-*.gz``); sorted by name, hidden (``.name``) and empty objects left out.
    :class:`StorageError` naming the URL when nothing is there.

    Example:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> _ = (d / "x.txt").write_text("x\\n"); _ = (d / "empty.txt").write_text("")
        >>> [(f.name, f.size) for f in list_inputs(d.as_uri() + "/")]
        [('x.txt', 2)]
    """
    fs, path = filesystem(url)
    try:
        if any(c in _GLOB_CHARS for c in path):
            entries = [fs.info(p) for p in fs.glob(path)]
        elif fs.isdir(path):
            entries = fs.ls(path, detail=True)
        else:
            entries = [fs.info(path)]
    except Exception as exc:  # noqa: BLE001 - each library raises its own errors; all name this URL
        raise _missing(url, exc) from None
    files = [RemoteFile(_url_of(fs, e["name"], url), int(e.get("size") or 0)) for e in entries
             if e.get("type") == "file"]
    kept = sorted((f for f in files if f.size > 0 and not f.name.startswith(".")), key=lambda f: f.url)
    if not kept:
        raise StorageError(f"{url}: no input there (no non-empty object to read)")
    return kept


def url_exists(url: str) -> bool:
    """Whether an object or a prefix is at ``url``.

    Example:
        >>> url_exists(Path(tempfile.gettempdir()).as_uri())
        True
    """
    fs, path = filesystem(url)
    try:
        return bool(fs.exists(path.rstrip("/")))
    except Exception as exc:  # noqa: BLE001
        raise _missing(url, exc) from None


def object_size(url: str) -> int:
    """Bytes of the object at ``url`` (as stored: a compressed object's compressed size).

    Example:
        >>> p = Path(tempfile.mkdtemp()) / "a.txt"; _ = p.write_text("abc")
        >>> object_size(p.as_uri())
        3
    """
    fs, path = filesystem(url)
    try:
        return int(fs.info(path).get("size") or 0)
    except Exception as exc:  # noqa: BLE001
        raise _missing(url, exc) from None


def object_state(url: str) -> tuple[int, ...]:
    """What must not change between two reads of an object, as :func:`parvec.corpus.file_state` says it of a
    local file: ``(0, 0, size, mtime_ns, tag)``, ``tag`` a number made from the object's ETag (its content's
    identity on an object store; 0 where the filesystem has none), ``mtime_ns`` 0 where there is none.

    Example:
        >>> p = Path(tempfile.mkdtemp()) / "a.txt"; _ = p.write_text("abc")
        >>> object_state(p.as_uri())[2]
        3
    """
    import zlib

    fs, path = filesystem(url)
    try:
        info = fs.info(path)
    except Exception as exc:  # noqa: BLE001
        raise _missing(url, exc) from None
    modified = info.get("LastModified") or info.get("mtime") or info.get("last_modified")
    mtime = modified.timestamp() if hasattr(modified, "timestamp") else float(modified or 0)
    tag = str(info.get("ETag") or info.get("etag") or "")
    return (0, 0, int(info.get("size") or 0), int(mtime * 1e9), zlib.crc32(tag.encode()) if tag else 0)


def open_raw(url: str) -> IO[bytes]:
    """The object at ``url`` opened for reading as stored, seekable (a byte range is read with ``seek`` and
    ``read``: the filesystem library asks the store for those bytes only, never the whole object).

    Example:
        >>> p = Path(tempfile.mkdtemp()) / "a.txt"; _ = p.write_text("the cat")
        >>> with open_raw(p.as_uri()) as f:
        ...     _ = f.seek(4); f.read(3)
        b'cat'
    """
    fs, path = filesystem(url)
    try:
        f: IO[bytes] = fs.open(path, "rb")  # fsspec is untyped
        return f
    except Exception as exc:  # noqa: BLE001
        raise _missing(url, exc) from None


def open_input(url: str) -> IO[bytes]:
    """An object opened for reading in binary, decompressed by its extension (``.gz``, ``.bz2``, ``.xz``).

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "a.txt.gz"
        >>> with gzip.open(p, "wb") as f:
        ...     _ = f.write(b"the cat\\n")
        >>> with open_input(p.as_uri()) as f:
        ...     f.read()
        b'the cat\\n'
    """
    fs, path = filesystem(url)
    try:
        raw: IO[bytes] = fs.open(path, "rb")  # fsspec is untyped
    except Exception as exc:  # noqa: BLE001
        raise _missing(url, exc) from None
    opener = _DECOMPRESS.get(os.path.splitext(path)[1].lower())
    return opener(raw, "rb") if opener is not None else raw  # type: ignore[operator]


def download(url: str, local: str | os.PathLike[str]) -> Path:
    """Copy the object (or every object under the prefix) at ``url`` to the local path ``local``.

    Example:
        >>> import tempfile
        >>> src = Path(tempfile.mkdtemp()); _ = (src / "m.json").write_text("{}")
        >>> dst = Path(tempfile.mkdtemp()) / "copy"
        >>> sorted(p.name for p in download(src.as_uri(), dst).iterdir())
        ['m.json']
    """
    fs, path = filesystem(url)
    local = Path(local)
    try:
        if fs.isdir(path):
            local.mkdir(parents=True, exist_ok=True)
            for remote in fs.find(path):
                rel = posixpath.relpath(remote, path.rstrip("/"))
                target = local / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                fs.get_file(remote, str(target))
        else:
            local.parent.mkdir(parents=True, exist_ok=True)
            fs.get_file(path, str(local))
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise _missing(url, exc) from None
    return local


def join_url(url: str, *parts: str) -> str:
    """``url`` with ``parts`` appended, one ``/`` between each.

    Example:
        >>> join_url("s3://b/ck/", "checkpoint", "model.json")
        's3://b/ck/checkpoint/model.json'
    """
    return "/".join([url.rstrip("/"), *(p.strip("/") for p in parts)])


def _put(fs: Any, local: Path, path: str, url: str) -> None:
    try:
        fs.put_file(str(local), path)
    except Exception as exc:  # noqa: BLE001
        raise _missing(url, exc) from None


def _check_bucket(fs: Any, path: str, url: str) -> None:
    # An object store writes a key into an existing bucket only: say so before the run, naming the URL.
    if _scheme(url) == "file":
        return
    bucket = path.split("/", 1)[0]
    try:
        ok = fs.exists(bucket)
    except Exception as exc:  # noqa: BLE001
        raise _missing(url, exc) from None
    if not ok:
        raise StorageError(f"{url}: no such bucket")


def upload(local: str | os.PathLike[str], url: str) -> None:
    """Copy a local file, or a directory tree, to ``url`` (files first, ``*.json`` last, so a reader that sees a
    model directory's ``model.json`` finds its arrays).

    Example:
        >>> import tempfile
        >>> src = Path(tempfile.mkdtemp()) / "v.txt"; _ = src.write_text("1 1\\nx 0.5\\n")
        >>> dst = Path(tempfile.mkdtemp()) / "up.txt"
        >>> upload(src, dst.as_uri()); dst.read_text()
        '1 1\\nx 0.5\\n'
    """
    fs, path = filesystem(url)
    local = Path(local)
    if _scheme(url) == "file":
        fs.makedirs(posixpath.dirname(path.rstrip("/")) or "/", exist_ok=True)
    if local.is_dir():
        files = sorted((p for p in local.rglob("*") if p.is_file()), key=lambda p: (p.suffix == ".json", str(p)))
        for p in files:
            target = posixpath.join(path.rstrip("/"), p.relative_to(local).as_posix())
            if _scheme(url) == "file":
                fs.makedirs(posixpath.dirname(target), exist_ok=True)
            _put(fs, p, target, url)
    else:
        _put(fs, local, path, url)
    fs.invalidate_cache()


def check_writable(url: str) -> None:
    """Refuse, before a run, an output URL whose bucket does not exist (naming the URL).

    Example:
        >>> check_writable(Path(tempfile.gettempdir()).as_uri() + "/out.txt")
    """
    fs, path = filesystem(url)
    _check_bucket(fs, path, url)


@contextlib.contextmanager
def write_output(url: str, suffix: str = "") -> Iterator[Path]:
    """A local temporary path to write an output to; uploaded to ``url`` when the block ends without an error,
    removed either way.

    Example:
        >>> import tempfile
        >>> dst = Path(tempfile.mkdtemp()) / "out.txt"
        >>> with write_output(dst.as_uri()) as tmp:
        ...     _ = tmp.write_text("hello\\n")
        >>> dst.read_text()
        'hello\\n'
    """
    check_writable(url)
    tmpdir = Path(tempfile.mkdtemp(prefix="parvec-out-"))
    try:
        local = tmpdir / (posixpath.basename(url.rstrip("/")) or "output")
        yield local
        upload(local, url)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


@dataclass
class MirroredDirectory:
    """A local directory kept in step with a URL: :meth:`sync` uploads the files new or changed since the last
    sync (``*.json`` last) and removes the objects of files removed locally; the subdirectories in ``delegated``
    (relative paths) are left to their writers, who upload them themselves (:func:`delegate`).

    Example:
        >>> import tempfile
        >>> local, remote = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp()) / "ck"
        >>> m = MirroredDirectory(local, remote.as_uri())
        >>> _ = (local / "a.npy").write_bytes(b"x"); m.sync()
        1
        >>> (local / "a.npy").unlink(); m.sync(); sorted(p.name for p in remote.iterdir())
        0
        []
    """

    local: Path
    url: str
    _sent: dict[str, tuple[int, int]] = field(default_factory=dict)
    delegated: set[str] = field(default_factory=set)

    def sync(self) -> int:
        """Upload what changed under :attr:`local` since the last sync; returns how many files were uploaded."""
        fs, root = filesystem(self.url)
        root = root.rstrip("/")
        now: dict[str, tuple[int, int]] = {}
        for p in self.local.rglob("*"):
            rel_parts = p.relative_to(self.local).parts
            if any(part.startswith(".parvec-") or part.endswith(".partial") for part in rel_parts):
                continue  # temporaries: renamed into place, then uploaded
            if any("/".join(rel_parts[:k]) in self.delegated for k in range(1, len(rel_parts))):
                continue  # uploaded by its writers
            try:
                st = p.stat()
            except FileNotFoundError:  # removed meanwhile (an older snapshot pruned by its shard)
                continue
            if stat.S_ISREG(st.st_mode):
                now[p.relative_to(self.local).as_posix()] = (st.st_size, st.st_mtime_ns)
        changed = sorted((rel for rel, state in now.items() if self._sent.get(rel) != state),
                         key=lambda rel: (rel.endswith(".json"), rel))
        for rel in changed:
            target = posixpath.join(root, rel)
            if _scheme(self.url) == "file":
                fs.makedirs(posixpath.dirname(target), exist_ok=True)
            if not (self.local / rel).exists():  # removed since it was listed: the next sync drops its object
                del now[rel]
                continue
            _put(fs, self.local / rel, target, join_url(self.url, rel))
        for rel in sorted(set(self._sent) - set(now)):
            with contextlib.suppress(FileNotFoundError):
                fs.rm_file(posixpath.join(root, rel))
        self._sent = now
        fs.invalidate_cache()
        return len(changed)


# Local directories whose contents mirror a URL: registered by the command that stages a run, synced by the
# writers of checkpoints (parvec.checkpoints.Checkpointer) after each checkpoint.
_MIRRORS: dict[Path, MirroredDirectory] = {}


def mirror(local: str | os.PathLike[str], url: str) -> MirroredDirectory:
    """Register ``local`` as the local copy of ``url``: :func:`synced` uploads its changes.

    Example:
        >>> m = mirror(tempfile.mkdtemp(), Path(tempfile.mkdtemp()).as_uri()); unmirror(m.local)
    """
    m = MirroredDirectory(Path(local).resolve(), url)
    _MIRRORS[m.local] = m
    return m


def unmirror(local: str | os.PathLike[str]) -> None:
    """Forget the mirror of ``local`` (nothing when there is none).

    Example:
        >>> unmirror("/no/such/dir")
    """
    _MIRRORS.pop(Path(local).resolve(), None)


def url_of(path: str | os.PathLike[str]) -> str | None:
    """The URL of ``path`` when it is inside a local directory that mirrors a URL (:func:`mirror`), else None.

    Example:
        >>> url_of("/no/such/dir") is None
        True
    """
    p = Path(path).resolve()
    for local, m in _MIRRORS.items():
        if p != local and p.is_relative_to(local):
            return join_url(m.url, p.relative_to(local).as_posix())
    return None


def delegate(path: str | os.PathLike[str]) -> str | None:
    """:func:`url_of` ``path``; its mirror then leaves ``path`` to its writers, who upload what they write there
    themselves (the shards of a sharded run, each from its own node, under a URL ``--checkpoint-dir``).

    Example:
        >>> delegate("/no/such/dir") is None
        True
    """
    url = url_of(path)
    if url is not None:
        p = Path(path).resolve()
        for local, m in _MIRRORS.items():
            if p.is_relative_to(local) and p != local:
                rel = p.relative_to(local).as_posix()
                m.delegated.add(rel)
                # what was there (a resumed checkpoint's downloaded snapshots) is the writers' too: never removed
                m._sent = {k: v for k, v in m._sent.items() if not k.startswith(rel + "/")}
    return url


def synced(local: str | os.PathLike[str]) -> None:
    """Upload the changes of ``local`` when it mirrors a URL (:func:`mirror`); nothing for another directory.

    Example:
        >>> synced("/no/such/dir")
    """
    m = _MIRRORS.get(Path(local).resolve())
    if m is not None:
        m.sync()


@dataclass(frozen=True)
class StagedInput:
    """An input URL copied to local disk by :func:`stage_input`: the local path a reader opens (one file, or the
    directory of a prefix's or glob's objects), the URLs of the objects copied, and the local name standing for
    the URL in messages.

    Example:
        >>> StagedInput(Path("/tmp/in-0/a.txt"), ("s3://b/a.txt",), {"/tmp/in-0/a.txt": "s3://b/a.txt"}).local.name
        'a.txt'
    """

    local: Path
    urls: tuple[str, ...]
    names: dict[str, str]


def stage_input(url: str, where: str | os.PathLike[str]) -> StagedInput:
    """Copy the objects of the input URL ``url`` (one object, a prefix, a glob: :func:`list_inputs`) into the new
    local directory ``where``, under their own names (compressed ones kept compressed), for a reader that reads
    local files: one object gives its file, several the directory (read by name, as :func:`list_inputs` orders them).

    Example:
        >>> import tempfile
        >>> src = Path(tempfile.mkdtemp()); _ = (src / "a.txt").write_text("x y\\n")
        >>> stage_input((src / "a.txt").as_uri(), Path(tempfile.mkdtemp()) / "in").local.read_text()
        'x y\\n'
    """
    files = list_inputs(url)
    where = Path(where)
    where.mkdir(parents=True)
    for f in files:
        download(f.url, where / f.name)
    urls = tuple(f.url for f in files)
    single = len(files) == 1 and not url.endswith("/") and not any(c in url for c in _GLOB_CHARS) and \
        files[0].url.rstrip("/") == url.rstrip("/")
    if single:
        return StagedInput(where / files[0].name, urls, {str(where / files[0].name): url})
    return StagedInput(where, urls, {str(where): posixpath.dirname(files[0].url)})  # a prefix or glob's "directory"


def with_urls(text: str, names: dict[str, str]) -> str:
    """``text`` with every local stand-in of ``names`` (local path -> the URL it stands for) replaced by its URL,
    the longest first.

    Example:
        >>> with_urls("/tmp/s/in-0/a.txt:3: invalid UTF-8", {"/tmp/s/in-0": "s3://b/c"})
        's3://b/c/a.txt:3: invalid UTF-8'
    """
    for local in sorted(names, key=len, reverse=True):
        text = text.replace(local, names[local])
    return text


def renamed(exc: ParvecError, names: dict[str, str]) -> ParvecError:
    """``exc`` with every local stand-in of ``names`` in its message replaced by the URL it stands for (the
    longest first), so an error about a staged copy names the object.

    Example:
        >>> str(renamed(ParvecError("/tmp/s/in-0/a.txt:3: invalid UTF-8"), {"/tmp/s/in-0": "s3://b/c"}))
        's3://b/c/a.txt:3: invalid UTF-8'
    """
    exc.args = (with_urls(str(exc), names), *exc.args[1:])
    return exc


@contextlib.contextmanager
def local_inputs(paths: Any) -> Iterator[Any]:
    """``paths`` (one path or URL, or a list of them) with every URL replaced by a local copy of its objects
    (:func:`stage_input`) for the block; the copies are removed after it, and a :class:`ParvecError` raised in it
    names the URLs, not the copies.  Without a URL, ``paths`` as given and nothing copied.

    Example:
        >>> with local_inputs(["corpus.txt"]) as local:
        ...     local
        ['corpus.txt']
    """
    many = isinstance(paths, (list, tuple))
    items = list(paths) if many else [paths]
    if not any(is_url(p) for p in items):
        yield paths
        return
    root = Path(tempfile.mkdtemp(prefix="parvec-in-"))
    names: dict[str, str] = {}
    try:
        local: list[Any] = []
        for i, p in enumerate(items):
            if is_url(p):
                staged = stage_input(str(p), root / f"in-{i}")
                names.update(staged.names)
                local.append(str(staged.local))
            else:
                local.append(p)
        try:
            yield local if many else local[0]
        except ParvecError as exc:
            raise renamed(exc, names) from None
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def local_copy(url: str) -> Iterator[Path]:
    """A local copy of the object or directory tree at ``url`` (a saved model, a checkpoint directory) for the
    block, removed after it (arrays memory-mapped from it stay readable: the files are unlinked, not truncated).

    Example:
        >>> import tempfile
        >>> src = Path(tempfile.mkdtemp()) / "m"; src.mkdir(); _ = (src / "model.json").write_text("{}")
        >>> with local_copy(src.as_uri()) as d:
        ...     sorted(p.name for p in d.iterdir())
        ['model.json']
    """
    root = Path(tempfile.mkdtemp(prefix="parvec-copy-"))
    try:
        yield download(url, root / (posixpath.basename(url.rstrip("/")) or "copy"))
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def remote_output(path: Any) -> Iterator[Any]:
    """Where to write an output named ``path``: itself for a local path; for a URL, a local temporary path
    uploaded to the URL when the block ends without an error (a file, or a directory tree such as a saved model),
    and removed either way.

    Example:
        >>> with remote_output("vectors.txt") as out:
        ...     out
        'vectors.txt'
    """
    if not is_url(path):
        yield path
        return
    with write_output(str(path)) as local:
        yield local
