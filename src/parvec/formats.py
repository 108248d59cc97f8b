"""Word-vector file formats: word2vec.c's text and binary layouts, and ``.npy`` + vocabulary.

word2vec format (what ``word2vec.c -output`` writes and gensim reads):

* header ``"{count} {dimension}\\n"``;
* text: one ``word v1 v2 ... vD \\n`` line per vector.  word2vec.c prints ``"%lf "`` per value, so
  every line ends with a space before the newline; we keep that layout.  Values are written with
  ``%.9g``: 9 significant digits is the shortest fixed precision that round-trips every float32
  exactly (``%.6g``/``%lf`` lose precision; numpy's shortest repr is ~40% slower to produce);
* binary: ``word`` + a space + ``dimension`` little-endian float32 values + ``\\n``.  Some writers
  (gensim 4) omit the ``\\n``; the reader accepts both.

Files ending in ``.gz``, ``.bz2`` or ``.xz`` are (de)compressed by extension.  Every reading problem
raises :class:`ParvecError` naming the file and the line (text) or vector number (binary).

``.npy`` format: ``save_npy("out/vec", ...)`` writes ``out/vec.npy`` (the float32 matrix),
``out/vec.vocab.txt`` (one UTF-8 key per line, in row order, each line ended by ``\\n``) and, when
counts are given, ``out/vec.counts.npy`` (int64).  A path ending in ``.npy`` is taken as the same
prefix, so ``save_npy("vec.npy", ...)`` and ``save_npy("vec", ...)`` write the same files.

Every write goes through :func:`atomic_output`: an interrupted run never leaves a half-written file.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import logging
import lzma
import os
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from parvec.errors import ParvecError

__all__ = [
    "atomic_output",
    "detect_binary",
    "load_npy",
    "npy_paths",
    "check_input",
    "open_input",
    "read_word2vec",
    "save_npy",
    "write_word2vec",
]

log = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]

_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open, ".lzma": lzma.open}
_READ_BLOCK = 1 << 22  # binary reader refill size (4 MiB)
_MAX_WORD_BYTES = 1 << 20  # a "word" longer than this means the file is not what we think
_SNIFF_BYTES = 1 << 20
_UNICODE_ERRORS = ("strict", "replace", "ignore")


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once at import, before any threads write files.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


# ---------------------------------------------------------------------- atomic writes
@contextlib.contextmanager
def atomic_output(
    path: PathLike, mode: str = "wb", *, compress: bool = False, encoding: str = "utf-8"
) -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it only appears, complete, when the block succeeds.

    Data goes to a temporary file in the same directory (``.NAME.XXXX.tmp``), which is flushed,
    fsynced and moved onto ``path`` with :func:`os.replace` when the ``with`` block ends without an
    exception.  On any exception (including ``KeyboardInterrupt``) the temporary file is removed and
    an existing ``path`` is left untouched.  ``mode`` is ``"wb"`` (bytes) or ``"w"``/``"wt"`` (text,
    ``encoding``, ``\\n`` newlines).  With ``compress=True`` a ``.gz``/``.bz2``/``.xz`` path is
    compressed by its extension.  A missing directory raises :class:`ParvecError` naming it.

    Example:
        >>> with atomic_output("vectors.txt", "w") as f:  # doctest: +SKIP
        ...     f.write("1 2\\nword 0.5 0.25 \\n")
    """
    if mode not in ("wb", "w", "wt"):
        raise ValueError(f"atomic_output: mode must be 'wb', 'w' or 'wt', got {mode!r}")
    target = Path(path)
    directory = target.parent
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise ParvecError(f"{target}: cannot write: output directory {directory} {what}")
    if target.is_dir():
        raise ParvecError(f"{target}: cannot write: it is a directory")
    try:
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise ParvecError(f"{target}: cannot write in {directory}: {exc.strerror or exc}") from None
    tmp = Path(tmp_name)
    raw = os.fdopen(fd, "wb")
    stream: IO[Any] = raw
    layers: list[IO[Any]] = []  # wrappers to close (outermost first) before the raw file
    try:
        opener = _COMPRESSED.get(target.suffix.lower()) if compress else None
        if opener is gzip.open:
            # mtime=0 and no file name: identical content gives identical bytes.
            stream = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
            layers.append(stream)
        elif opener is not None:
            stream = opener(raw, "wb")
            layers.append(stream)
        if mode != "wb":
            stream = io.TextIOWrapper(stream, encoding=encoding, newline="\n")
            layers.insert(0, stream)
        yield stream
        try:
            for layer in layers:
                if isinstance(layer, io.TextIOWrapper):
                    layer.flush()
                    layer.detach()  # keep the layers below open; they are closed next
                else:
                    layer.close()
            raw.flush()
            os.fsync(raw.fileno())
            raw.close()
            existing_mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_UMASK
            os.chmod(tmp, existing_mode)  # mkstemp makes 0600; keep what a plain open() would give
            os.replace(tmp, target)
        except OSError as exc:
            raise ParvecError(f"{target}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        for layer in layers:  # release the wrappers first so none flushes into a closed file later
            with contextlib.suppress(Exception):
                layer.detach() if isinstance(layer, io.TextIOWrapper) else layer.close()
        with contextlib.suppress(Exception):
            raw.close()
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


# ---------------------------------------------------------------------- reading helpers
def check_input(path: PathLike) -> Path:
    """Raise :class:`ParvecError` naming ``path`` if it is missing, a directory, unreadable or empty.

    Example:
        >>> check_input("corpus.txt")  # doctest: +SKIP
        PosixPath('corpus.txt')
    """
    p = Path(path)
    if not p.exists():
        raise ParvecError(f"{p}: no such file")
    if p.is_dir():
        raise ParvecError(f"{p}: is a directory, expected a file")
    if not os.access(p, os.R_OK):
        raise ParvecError(f"{p}: not readable (permission denied)")
    if p.stat().st_size == 0:
        raise ParvecError(f"{p}: the file is empty")
    return p


def open_input(path: PathLike) -> IO[bytes]:
    """Open ``path`` for binary reading, decompressing ``.gz``/``.bz2``/``.xz`` by extension.

    A missing, unreadable or empty file raises :class:`ParvecError` naming it.

    Example:
        >>> with open_input("vectors.txt.gz") as f:  # doctest: +SKIP
        ...     header = f.readline()
    """
    p = check_input(path)
    opener = _COMPRESSED.get(p.suffix.lower())
    if opener is not None:
        return opener(p, "rb")
    return open(p, "rb")


def _read_header(f: IO[bytes], path: Path) -> tuple[int, int]:
    line = f.readline(4096)
    if not line:
        raise ParvecError(f"{path}: the file is empty (expected a '<count> <dimension>' header)")
    fields = line.split()
    try:
        count, dim = (int(x) for x in fields)
        ok = count >= 0 and dim > 0 and line.endswith(b"\n")
    except ValueError:
        ok = False
    if not ok:
        shown = line[:60].decode("utf-8", "replace").rstrip("\n")
        raise ParvecError(
            f"{path}:1: malformed header {shown!r}: expected '<count> <dimension>' as word2vec writes "
            "(files without a header, such as GloVe's, need one added)"
        )
    return count, dim


def _check_options(limit: int | None, unicode_errors: str) -> None:
    if limit is not None and limit < 0:
        raise ParvecError(f"limit must be >= 0, got {limit}")
    if unicode_errors not in _UNICODE_ERRORS:
        raise ParvecError(f"unicode_errors must be 'strict', 'replace' or 'ignore', got {unicode_errors!r}")


def _parse_text_values(rest: bytes, dim: int) -> np.ndarray | None:
    """Parse one text row's values; None when it is not exactly ``dim`` numbers."""
    try:
        # fromstring parses in C; with the warnings filter (set by the caller) trailing junk raises.
        values = np.fromstring(rest, dtype=np.float32, sep=" ")
    except (DeprecationWarning, ValueError):
        return None
    return values if values.size == dim else None


def _looks_like_text(body: bytes, dim: int) -> bool:
    """Whether the first vector of a word2vec body is a text row of ``dim`` numbers."""
    line, newline, _ = body.partition(b"\n")
    if not newline and len(body) >= _SNIFF_BYTES:
        return False
    _, space, rest = line.rstrip().partition(b" ")
    if not space:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        return _parse_text_values(rest, dim) is not None


def _sniff(path: Path) -> tuple[int, int, bool]:
    try:
        with open_input(path) as f:
            count, dim = _read_header(f, path)
            body = f.read(_SNIFF_BYTES)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise ParvecError(f"{path}: cannot read: {exc}") from None
    return count, dim, bool(body) and not _looks_like_text(body, dim)


def detect_binary(path: PathLike) -> bool:
    """Whether a word2vec file is in the binary layout (False: text), judged from its first vector.

    Example:
        >>> detect_binary("GoogleNews-vectors-negative300.bin.gz")  # doctest: +SKIP
        True
    """
    return _sniff(Path(path))[2]


def _decode_word(raw: bytes, unicode_errors: str, path: Path, where: str) -> str:
    try:
        return raw.decode("utf-8", errors=unicode_errors)
    except UnicodeDecodeError as exc:
        raise ParvecError(
            f"{path}:{where}: invalid UTF-8 in word {raw!r} ({exc.reason}); "
            "use --unicode-errors replace (unicode_errors='replace') to read it anyway"
        ) from None


def _read_text_body(
    f: IO[bytes], path: Path, count: int, dim: int, out: np.ndarray, unicode_errors: str, promised: int
) -> list[str]:
    words: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        i = 0
        for line in f:
            if i == count:
                break
            line_no = i + 2
            word_raw, _, rest = line.rstrip().partition(b" ")
            words.append(_decode_word(word_raw, unicode_errors, path, str(line_no)))
            values = _parse_text_values(rest, dim)
            if values is None:
                _text_row_error(path, line_no, word_raw, rest, dim)
            out[i] = values
            i += 1
    if i < count:
        raise ParvecError(f"{path}:{i + 2}: truncated file: the header promises {promised} vectors but only {i} follow")
    return words


def _text_row_error(path: Path, line_no: int, word_raw: bytes, rest: bytes, dim: int) -> None:
    fields = rest.split()
    hint = ""
    if _sniff(path)[2]:
        hint = " (this looks like a binary word2vec file: use binary=True / --binary)"
    for field in fields:
        try:
            float(field)
        except ValueError:
            shown = field[:30].decode("utf-8", "replace")
            raise ParvecError(
                f"{path}:{line_no}: non-numeric value {shown!r} in the vector of "
                f"{word_raw[:50].decode('utf-8', 'replace')!r}{hint}"
            ) from None
    raise ParvecError(f"{path}:{line_no}: dimension mismatch: {len(fields)} values, but the header says {dim}{hint}")


def _read_binary_body(
    f: IO[bytes], path: Path, count: int, dim: int, out: np.ndarray, unicode_errors: str, promised: int
) -> list[str]:
    words: list[str] = []
    vec_bytes = 4 * dim
    buf = b""
    pos = 0
    base = 0  # file offset (after the header) of buf[0], for messages
    eof = False
    little = np.dtype("<f4")
    for i in range(count):
        # Fill until the word's terminating space and the whole vector after it are in buf.
        while True:
            sp = buf.find(b" ", pos)
            if sp >= 0 and sp + 1 + vec_bytes <= len(buf):
                break
            if eof:
                where = f"vector {i + 1} (byte {base + pos} after the header)"
                if sp < 0:
                    if buf[pos:].strip(b"\n"):
                        raise ParvecError(f"{path}: {where}: truncated file: a word without its vector")
                    raise ParvecError(
                        f"{path}: {where}: truncated file: the header promises {promised} vectors but only {i} follow"
                    )
                raise ParvecError(
                    f"{path}: {where}: truncated vector: expected {vec_bytes} bytes, found {len(buf) - sp - 1}"
                )
            if sp < 0 and len(buf) - pos > _MAX_WORD_BYTES:
                raise ParvecError(
                    f"{path}: vector {i + 1}: no space after the word within {_MAX_WORD_BYTES} bytes; "
                    "is this really a binary word2vec file?"
                )
            block = f.read(_READ_BLOCK)
            eof = not block
            base += pos
            buf = buf[pos:] + block
            pos = 0
        # word2vec.c writes "\n" after each vector, gensim 4 does not: skip it when present.
        word_raw = buf[pos:sp].lstrip(b"\n")
        words.append(_decode_word(word_raw, unicode_errors, path, f" vector {i + 1}"))
        out[i] = np.frombuffer(buf, dtype=little, count=dim, offset=sp + 1)
        pos = sp + 1 + vec_bytes
    return words


def read_word2vec(
    path: PathLike,
    binary: bool | None = False,
    limit: int | None = None,
    unicode_errors: str = "strict",
    datatype: Any = np.float32,
) -> tuple[np.ndarray, list[str]]:
    """Read a word2vec text or binary file; return ``(vectors [n, dim], words)``.

    ``binary=None`` detects the layout from the first vector.  ``limit`` reads only the first
    ``limit`` vectors (word2vec files are sorted by descending frequency).  ``unicode_errors`` is
    passed to ``bytes.decode`` for the words.  A word that occurs twice keeps its first vector, as
    gensim does.  Bad input raises :class:`ParvecError` naming the file and line or vector.

    Example:
        >>> vectors, words = read_word2vec("vectors.bin", binary=True, limit=100000)  # doctest: +SKIP
    """
    p = Path(path)
    _check_options(limit, unicode_errors)
    if binary is None:
        binary = detect_binary(p)
    elif binary:
        _, _, is_binary = _sniff(p)
        if not is_binary:
            raise ParvecError(f"{p}: this looks like a text word2vec file: use binary=False / --text")
    try:
        with open_input(p) as f:
            count, dim = _read_header(f, p)
            n = count if limit is None else min(count, limit)
            try:
                out = np.empty((n, dim), dtype=np.float32)
            except (MemoryError, ValueError):
                raise ParvecError(
                    f"{p}:1: the header asks for {count} x {dim} float32 values, which do not fit in "
                    "memory; use limit= to read fewer vectors"
                ) from None
            reader = _read_binary_body if binary else _read_text_body
            words = reader(f, p, n, dim, out, unicode_errors, count)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise ParvecError(f"{p}: cannot read: {exc}") from None
    if len(set(words)) != len(words):
        words, out = _drop_duplicates(words, out, p)
    return out.astype(datatype, copy=False), words


def _drop_duplicates(words: list[str], out: np.ndarray, path: Path) -> tuple[list[str], np.ndarray]:
    seen: set[str] = set()
    keep = np.zeros(len(words), dtype=bool)
    for i, w in enumerate(words):
        if w not in seen:
            seen.add(w)
            keep[i] = True
    dropped = [w for w, k in zip(words, keep, strict=True) if not k]
    log.warning("%s: %d duplicate words (e.g. %r); keeping the first vector of each", path, len(dropped), dropped[0])
    return [w for w, k in zip(words, keep, strict=True) if k], out[keep]


# ---------------------------------------------------------------------- writing
def _check_keys(keys: Sequence[str], n: int, forbidden: str, what: str) -> None:
    if len(keys) != n:
        raise ParvecError(f"{what}: {len(keys)} keys for {n} vectors")
    for i, key in enumerate(keys):
        if not isinstance(key, str) or not key or (" " in forbidden and " " in key) or "\n" in key:
            raise ParvecError(
                f"{what}: key {i} ({key!r}) cannot be written: keys must be non-empty strings "
                f"without {' or '.join(repr(c) for c in forbidden)}"
            )


def write_word2vec(
    path: PathLike,
    vectors: np.ndarray,
    keys: Sequence[str],
    binary: bool = False,
    write_header: bool = True,
) -> None:
    """Write vectors in word2vec.c's text or binary layout (compressed if the name ends .gz/.bz2/.xz).

    The write is atomic (see :func:`atomic_output`).  Keys must not contain spaces or newlines.

    Example:
        >>> import numpy as np
        >>> write_word2vec("vec.txt", np.eye(2, dtype=np.float32), ["a", "b"])  # doctest: +SKIP
        >>> open("vec.txt").read()  # doctest: +SKIP
        '2 2\\na 1 0 \\nb 0 1 \\n'
    """
    vectors = np.asarray(vectors)
    if vectors.ndim != 2:
        raise ParvecError(f"{path}: vectors must be a 2-D array, got shape {vectors.shape}")
    n, dim = vectors.shape
    _check_keys(keys, n, " \n", str(path))
    data = np.ascontiguousarray(vectors, dtype="<f4")
    rows_per_write = max(1, (1 << 22) // max(1, 12 * dim))
    with atomic_output(path, "wb", compress=True) as f:
        if write_header:
            f.write(f"{n} {dim}\n".encode())
        if binary:
            for start in range(0, n, rows_per_write):
                stop = min(n, start + rows_per_write)
                f.write(
                    b"".join(keys[i].encode("utf-8") + b" " + data[i].tobytes() + b"\n" for i in range(start, stop))
                )
        else:
            fmt = "%.9g " * dim + "\n"  # word2vec.c's trailing space, then the newline
            for start in range(0, n, rows_per_write):
                stop = min(n, start + rows_per_write)
                rows = data[start:stop].astype(np.float64).tolist()
                text = "".join(
                    f"{keys[i]} " + fmt % tuple(row) for i, row in zip(range(start, stop), rows, strict=True)
                )
                f.write(text.encode("utf-8"))


# ---------------------------------------------------------------------- .npy + vocabulary
def npy_paths(path: PathLike) -> tuple[Path, Path, Path]:
    """The ``(vectors .npy, vocabulary .vocab.txt, counts .counts.npy)`` paths for a prefix or ``.npy`` path.

    Example:
        >>> [p.name for p in npy_paths("out/vec.npy")]
        ['vec.npy', 'vec.vocab.txt', 'vec.counts.npy']
    """
    text = os.fspath(path)
    for suffix in (".vocab.txt", ".counts.npy", ".npy"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
            break
    return Path(text + ".npy"), Path(text + ".vocab.txt"), Path(text + ".counts.npy")


def save_npy(path_prefix: PathLike, vectors: np.ndarray, keys: Sequence[str], counts: np.ndarray | None = None) -> Path:
    """Save ``PREFIX.npy`` (vectors), ``PREFIX.vocab.txt`` (keys) and optionally ``PREFIX.counts.npy``.

    Returns the ``.npy`` path.  Each file is written atomically.  Keys must not contain newlines.

    Example:
        >>> import numpy as np
        >>> save_npy("out/vec", np.eye(2, dtype=np.float32), ["a", "b"])  # doctest: +SKIP
        PosixPath('out/vec.npy')
    """
    vec_path, vocab_path, counts_path = npy_paths(path_prefix)
    vectors = np.asarray(vectors)
    if vectors.ndim != 2:
        raise ParvecError(f"{vec_path}: vectors must be a 2-D array, got shape {vectors.shape}")
    _check_keys(keys, len(vectors), "\n", str(vocab_path))
    if counts is not None and len(counts) != len(vectors):
        raise ParvecError(f"{counts_path}: {len(counts)} counts for {len(vectors)} vectors")
    with atomic_output(vec_path, "wb") as f:
        np.save(f, vectors, allow_pickle=False)
    with atomic_output(vocab_path, "wb") as f:
        f.write("".join(key + "\n" for key in keys).encode("utf-8"))
    if counts is not None:
        with atomic_output(counts_path, "wb") as f:
            np.save(f, np.asarray(counts, dtype=np.int64), allow_pickle=False)
    elif counts_path.exists():
        counts_path.unlink()  # a stale counts file from an earlier save would no longer match
    return vec_path


def load_npy(path_prefix: PathLike, mmap: bool = False) -> tuple[np.ndarray, list[str], np.ndarray | None]:
    """Load what :func:`save_npy` wrote: ``(vectors, keys, counts or None)``.

    ``mmap=True`` memory-maps the vectors read-only instead of reading them.

    Example:
        >>> vectors, keys, counts = load_npy("out/vec.npy")  # doctest: +SKIP
    """
    vec_path, vocab_path, counts_path = npy_paths(path_prefix)
    for p in (vec_path, vocab_path):
        if not p.is_file():
            raise ParvecError(f"{p}: no such file (a .npy vector file needs {vocab_path.name} next to it)")
    try:
        vectors = np.load(vec_path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise ParvecError(f"{vec_path}: not a readable .npy array: {exc}") from None
    if vectors.ndim != 2 or not np.issubdtype(vectors.dtype, np.floating):
        raise ParvecError(f"{vec_path}: expected a 2-D float array, got {vectors.dtype} {vectors.shape}")
    raw = vocab_path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ParvecError(f"{vocab_path}:{line}: invalid UTF-8 ({exc.reason})") from None
    keys = text.split("\n")
    if keys and keys[-1] == "":
        keys.pop()  # every key ends with "\n"; the split leaves one empty string after the last
    if len(keys) != len(vectors):
        raise ParvecError(f"{vocab_path}: {len(keys)} keys, but {vec_path.name} has {len(vectors)} vectors")
    if len(set(keys)) != len(keys):
        raise ParvecError(f"{vocab_path}: duplicate keys")
    counts = None
    if counts_path.is_file():
        counts = np.load(counts_path, allow_pickle=False)
        if counts.shape != (len(keys),):
            raise ParvecError(f"{counts_path}: {counts.shape} counts for {len(keys)} keys")
    return vectors, keys, counts
