"""The on-disk cache of encoded corpora (``--cache-dir``): a file is counted and encoded once, then memory-mapped.

An entry is a directory of ``tokens.npy``, ``offsets.npy``, ``vocab.json`` and ``header.json``
(:mod:`parvec.corpus.arrays`).  It is keyed on the file's path, device, inode, size, modification time and
inode change time (ctime, in nanoseconds: no tool sets it back, so an in-place edit with the mtime restored, or
a file replaced by a rename, is a new key), and on the reading options; several files are one key.  A file
changed less than a few seconds before it was read (when an edit could still fall in the same clock tick,
:func:`parvec.corpus.readers.changed_recently`) also has its content's SHA-256 checked before its entry is used.
An entry is written into a temporary directory renamed into place, and its files carry SHA-256 checksums in
``header.json``, so a killed run or damaged files are rebuilt, never trusted; an entry of an older version of
the file is removed.  Streams are never cached.

Example:
    >>> from parvec.corpus.readers import ReadOptions
    >>> enc = read_cached(Path("corpus.txt"), ReadOptions(), Path("cache"))  # doctest: +SKIP
    >>> enc.cache_used  # False the first time (read and written), then True  # doctest: +SKIP
    False
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from parvec.corpus.arrays import CACHE_FORMAT_VERSION, DAMAGE_ERRORS, EncodedArrays, read_arrays, write_header
from parvec.corpus.encode import encode_sentences
from parvec.corpus.readers import InputFile, ReadOptions, TextSentences, changed_recently, input_digest
from parvec.errors import ParvecError

__all__ = ["read_cached"]

log = logging.getLogger(__name__)

_STALE_TEMPORARY_SECONDS = 24 * 3600  # a ".tmp-*" this old in the cache is a killed run's leftover


@dataclass(frozen=True)
class FileIdentity:
    """What names this version of a file: nothing a user restores by accident (ctime is never set back).

    Example:
        >>> FileIdentity.of(Path(__file__)).size > 0
        True
    """

    path: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileIdentity:
        """The identity of the file at ``path`` now (OSError when it is not there)."""
        st = path.stat()
        return cls(str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def to_json(self) -> dict[str, object]:
        """The identity as the cache key and the entry's header hold it (its keys in this order)."""
        return {"path": self.path, "dev": self.dev, "ino": self.ino, "size": self.size, "mtime_ns": self.mtime_ns,
                "ctime_ns": self.ctime_ns}


@dataclass(frozen=True)
class InputIdentity:
    """The identity of a cached corpus's input: one file's, or (``several``) each file's, in order.

    Example:
        >>> InputIdentity.of(Path(__file__)).to_json()["path"] == str(Path(__file__).resolve())
        True
    """

    files: tuple[FileIdentity, ...]
    several: bool

    @classmethod
    def of(cls, path: Path | list[Path]) -> InputIdentity:
        """The identity of ``path`` (one file or several) now."""
        if isinstance(path, list):
            return cls(tuple(FileIdentity.of(p) for p in path), True)
        return cls((FileIdentity.of(path),), False)

    def to_json(self) -> dict[str, object]:
        """As the cache key and the header hold it: one file's identity, or the files' paths and identities."""
        if self.several:
            return {"path": [f.path for f in self.files], "files": [f.to_json() for f in self.files]}
        return self.files[0].to_json()

    @property
    def newest_ctime(self) -> int:
        """The latest inode change time of its files (ns)."""
        return max(f.ctime_ns for f in self.files)

    def inputs(self) -> list[InputFile]:
        """Its files as :attr:`parvec.corpus.EncodedCorpus.inputs` records them."""
        return [InputFile(f.path, f.size, f.mtime_ns) for f in self.files]


def _cache_key(path: Path | list[Path], identity: InputIdentity, options: ReadOptions) -> str:
    ident = {"input": identity.to_json(), "options": asdict(options), "version": CACHE_FORMAT_VERSION}
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]
    name = path.name[:100] if isinstance(path, Path) else f"{path[0].name[:80]}+{len(path) - 1}"
    return f"{name}.{digest}"  # short enough for any file system's name limit


def read_cached(path: Path | list[Path], options: ReadOptions, root: Path, threads: int | None = None) -> EncodedArrays:
    """The cached encoding of ``path`` (one file or several) if its entry in ``root`` is intact and current (then
    memory-mapped, ``cache_used`` True), else read it, streaming the tokens into a new entry (a temporary
    directory renamed into place; ``cache_used`` False).  A cache that cannot be written costs only the
    speed-up: the corpus is still read, and a warning says why.  ``threads`` count and encode a big plain file
    in parallel (:func:`parvec.corpus.encode.encode_sentences`); the entry is the same for any number.

    Example:
        >>> read_cached(Path("corpus.txt"), ReadOptions(), Path("cache")).cache_used  # doctest: +SKIP
        True
    """
    now_ns = time.time_ns()
    identity = InputIdentity.of(path)
    source = str(path) if isinstance(path, Path) else " ".join(str(p) for p in path)
    entry = root / _cache_key(path, identity, options)
    cached = _load_cache(entry, path, identity, options)
    if cached is not None:
        cached.cache_used = True
        return cached
    verify = changed_recently(identity.newest_ctime, now_ns)
    reader = TextSentences(path, options, name=source, digest=verify)
    tmp = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        _remove_stale_temporaries(root)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    except OSError as exc:
        log.warning("cannot write the encoded-corpus cache in %s: %s", root, exc)  # only a lost speed-up
        result = encode_sentences(reader, options, None, source=source, threads=threads)
        result.cache_used = False
        return result
    try:
        result = encode_sentences(reader, options, None, source=source, directory=tmp, threads=threads)
        result.cache_used = False
        try:
            unchanged = InputIdentity.of(path) == identity and len(set(reader.digests)) <= 1
        except OSError:
            unchanged = False
        if not unchanged:
            log.warning("%s changed while it was read: its encoded corpus is not cached", source)
            return result
        info = {**identity.to_json(), "verify_content": verify, "sha256": reader.digests[-1] if verify else None}
        extra = {"input": info, "options": asdict(options),
                 "pruning": None if result.pruning is None else result.pruning.to_json()}
        write_header(result, tmp, extra)
        if entry.exists():  # a damaged entry under this key (or a concurrent run's)
            shutil.rmtree(entry)
        os.replace(tmp, entry)
        tmp = None
    except OSError as exc:
        log.warning("cannot write the encoded-corpus cache in %s: %s", root, exc)
        return result
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)  # an entry not kept (the mapping keeps its data)
    _remove_superseded(root, entry, info["path"], options)
    return result


def _remove_stale_temporaries(root: Path) -> None:
    """Remove what killed runs left (``.tmp-*`` older than a day; a recent one may still be written)."""
    limit = time.time() - _STALE_TEMPORARY_SECONDS
    for child in root.iterdir():
        try:
            if child.name.startswith(".tmp-") and child.lstat().st_mtime < limit:
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink()
        except OSError:
            pass


def _remove_superseded(root: Path, entry: Path, input_path: object, options: ReadOptions) -> None:
    """Remove the other entries of this file and these options: they encode an older version of it."""
    wanted = asdict(options)
    try:
        siblings = [c for c in root.iterdir() if c.name.startswith(entry.name.rsplit(".", 1)[0] + ".")]
    except OSError:
        return
    for child in siblings:
        if child.name == entry.name or not child.is_dir():
            continue
        try:
            header = json.loads((child / "header.json").read_text(encoding="utf-8"))
            given = header.get("input")
            if (given.get("path") if isinstance(given, dict) else given) == input_path and header.get(
                "options"
            ) == wanted:
                shutil.rmtree(child, ignore_errors=True)
        except (*DAMAGE_ERRORS, ParvecError):
            continue


def _load_cache(
    entry: Path, path: Path | list[Path], identity: InputIdentity, options: ReadOptions
) -> EncodedArrays | None:
    """The entry's corpus if it is intact and encodes this version of ``path`` with ``options``."""
    if not entry.is_dir():
        return None
    try:
        corpus, header = read_arrays(entry, mmap=True, verify=True)
        info, recorded = header["input"], identity.to_json()
        if {k: info.get(k) for k in recorded} != recorded or header.get("options") != asdict(options):
            return None
        if info["verify_content"]:
            now_ns = time.time_ns()
            if input_digest(path) != info["sha256"]:
                return None  # changed within the clock tick of its last change
            if not changed_recently(identity.newest_ctime, now_ns):
                # Unchanged until now, and any later change gets a later ctime: the stat key suffices.
                _rewrite_header(entry, {**header, "input": {**info, "verify_content": False}})
    except (*DAMAGE_ERRORS, ParvecError) as exc:
        log.warning("the encoded-corpus cache %s is damaged (%s): reading the corpus again", entry, exc)
        return None
    corpus.inputs = identity.inputs()
    return corpus


def _rewrite_header(entry: Path, header: Mapping[str, object]) -> None:
    """Replace the entry's header.json atomically (a failure only keeps the content check)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=entry, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(header, f, indent=1)
        os.replace(tmp, entry / "header.json")
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
