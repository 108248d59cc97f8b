"""The paths a command reads and writes, checked against each other before anything is read
(:func:`check_paths`: no output over an input or another output, by resolved path and by device and inode, so
another spelling, a symbolic link or a hard link is caught too), and how outputs are named (``-``: standard
output, for the vectors of ``-o`` only).

Example:
    >>> check_paths([Use("the training corpus", Path("c.txt"))], [Use("-o", Path("v.txt"))])
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from parvec.errors import ParvecError

__all__ = ["STDOUT", "Use", "check_paths", "directory_inputs", "is_stdout", "output_name", "refuse_stdout",
           "vector_outputs"]

STDOUT = "-"  # as an output name: standard output (-o - only)


# ---------------------------------------------------------------------- inputs against outputs
@dataclass(frozen=True)
class Use:
    """One path a run reads or writes, and how the user named it.

    ``label`` says where it came from (``"-o"``, ``"--report"``, ``"the training corpus"``); ``given``
    is the path the user typed when ``path`` is a file derived from it (``v.vocab.txt`` of ``-o v.npy``,
    the files of ``--resume DIR``); ``tree`` marks a directory used as a whole: an input directory
    whose files are read, or an output directory that is replaced (``--save-model``).

    Example:
        >>> Use("-o", Path("v.vocab.txt"), given=Path("v.npy")).describe()
        '-o v.npy (file v.vocab.txt)'
    """

    label: str
    path: Path
    tree: bool = False
    given: Path | None = None

    def describe(self) -> str:
        """The label and the path as given, e.g. ``--report run.json``."""
        if self.given is None or self.given == self.path:
            return f"{self.label} {self.path}"
        return f"{self.label} {self.given} ({'directory' if self.tree else 'file'} {self.path})"


def is_stdout(path: str | os.PathLike[str] | None) -> bool:
    """Whether an output named ``path`` is standard output (``-``, not ``./-``).

    Example:
        >>> is_stdout("-"), is_stdout("./-"), is_stdout(None)
        (True, False, False)
    """
    return path is not None and os.fspath(path) == STDOUT


def output_name(path: str | os.PathLike[str] | None) -> str:
    """How the console lines name an output: ``standard output`` for ``-``, else the path as given.

    Example:
        >>> output_name("-"), output_name("v.txt")
        ('standard output', 'v.txt')
    """
    return "standard output" if is_stdout(path) else str(path)


def refuse_stdout(label: str, path: str | os.PathLike[str]) -> None:
    """Refuse ``-`` as an output other than the vectors of ``-o``.

    Example:
        >>> refuse_stdout("--report", "run.json")
    """
    if is_stdout(path):
        raise ParvecError(f"{label} -: '-' (standard output) is only for the vectors of -o; give a file name "
                          "(./- for a file named '-')")


def vector_outputs(label: str, path: str | os.PathLike[str], npy: bool | None = None) -> list[Use]:
    """The files a vector output writes: one word2vec file, or a ``.npy`` with its ``.vocab.txt``/``.counts.npy``.

    Example:
        >>> [str(u.path) for u in vector_outputs("-o", "out/v.npy")]
        ['out/v.npy', 'out/v.vocab.txt', 'out/v.counts.npy']
    """
    from parvec.formats import npy_paths

    if is_stdout(path):
        return []  # nothing on disk: no input can be overwritten
    path = Path(path)
    if npy is None:
        npy = str(path).endswith(".npy")
    if not npy:
        return [Use(label, path)]
    return [Use(label, p, given=path) for p in npy_paths(path)]


def directory_inputs(label: str, path: str | os.PathLike[str]) -> list[Use]:
    """An input directory (a model to resume) and the files in it, each an input.

    Example:
        >>> directory_inputs("--resume", "no/such/dir")
        [Use(label='--resume', path=PosixPath('no/such/dir'), tree=True, given=None)]
    """
    path = Path(path)
    uses = [Use(label, path, tree=True)]
    if path.is_dir():
        for root, _dirs, files in os.walk(path):
            uses.extend(Use(label, Path(root) / name, given=path) for name in sorted(files))
    return uses


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _same_file(a: Path, b: Path) -> bool:
    if _real(a) == _real(b):
        return True
    try:
        return os.path.samefile(a, b)  # another name of the same file: a hard link, a bind mount
    except OSError:
        return False


def _inside(child: Path, directory: Path) -> bool:
    """``child`` is ``directory`` or lies under it (by resolved path, or by the inode of an ancestor)."""
    real_child, real_dir = _real(child), _real(directory)
    if real_child == real_dir or real_dir in real_child.parents:
        return True
    try:
        target = os.stat(directory)
    except OSError:
        return False
    for ancestor in (real_child, *real_child.parents):
        try:
            st = os.stat(ancestor)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
            return True
    return False


def _conflict(out: Use, other: Use) -> str | None:
    """Why writing ``out`` would destroy ``other`` (an input or another output), or None."""
    if out.tree and _inside(other.path, out.path):
        if _real(other.path) == _real(out.path):
            return "is the same path as"
        return "would replace the directory holding"
    if other.tree:
        # A file written inside an input directory only matters when it is one of its files (listed
        # separately); an output directory holding this output replaces it.
        if _same_file(out.path, other.path):
            return "is the same path as"
        return None
    if _same_file(out.path, other.path):
        return "is" if _real(out.path) == _real(other.path) else "is the same file (another name for it) as"
    return None


def check_paths(inputs: Iterable[Use], outputs: Iterable[Use]) -> None:
    """Refuse an output that is one of the inputs, or another output, before anything is read.

    Paths are compared resolved (``./a/../b``, symbolic links) and by device and inode (hard links).
    An output directory (``tree=True``, replaced as a whole) must not hold an input or another output.

    Example:
        >>> check_paths([Use("the training corpus", Path("corpus.txt"))], [Use("-o", Path("corpus.txt"))])
        Traceback (most recent call last):
        ...
        parvec.errors.ParvecError: -o corpus.txt is the training corpus corpus.txt: refusing to overwrite \
an input; choose another path
    """
    inputs, outputs = list(inputs), list(outputs)
    for i, out in enumerate(outputs):
        for inp in inputs:
            why = _conflict(out, inp)
            if why is not None:
                raise ParvecError(f"{out.describe()} {why} {inp.describe()}: refusing to overwrite an input; "
                                  "choose another path")
        for other in outputs[:i] + outputs[i + 1:]:
            if other.label == out.label:
                continue  # the files of one flag (a .npy output's vectors and vocabulary)
            why = _conflict(out, other)
            if why is not None:
                raise ParvecError(f"{out.describe()} {why} {other.describe()}: two outputs cannot share a path; "
                                  "choose another path")


# ---------------------------------------------------------------------- outputs reserved before the run
