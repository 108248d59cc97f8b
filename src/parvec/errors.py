"""User-facing errors.

Every problem a user can cause (bad input file, bad parameter, impossible memory request) is raised as
:class:`ParvecError` with a message that names the file, line or parameter.  The CLI prints the message
and exits with code 2, without a traceback.
"""

from __future__ import annotations


class ParvecError(Exception):
    """An error caused by the user's input or parameters; its message says what to fix.

    Example:
        >>> raise ParvecError("corpus.txt: no word reaches min_count=5")
        Traceback (most recent call last):
        ...
        parvec.errors.ParvecError: corpus.txt: no word reaches min_count=5
    """

    exit_code = 2


class CheckpointError(ParvecError):
    """A saved model or checkpoint that cannot be resumed from: missing or truncated arrays, unreadable
    JSON, a missing position, arrays whose checksum does not match.  The message names the file and,
    when there is one, the previous intact checkpoint to resume from instead.

    Example:
        >>> isinstance(CheckpointError("ck/mid-e0001-c000000004/vectors.npy: truncated"), ParvecError)
        True
    """
