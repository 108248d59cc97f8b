"""A Griffe extension for the API reference, so parvec's docstrings (written for the terminal and doctest) read
well on the site: ``Example:`` sections (the house style), which Griffe's Google parser reads as prose, are renamed
``Examples:`` and render as code; Sphinx roles (``:class:`X```, ``:meth:`~a.b```) become plain code spans."""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.M)
_ROLE = re.compile(r":(?:class|meth|func|mod|attr|data|exc|obj):`~?([^`]+)`")


class ExampleSections(griffe.Extension):
    """Rewrite a loaded object's docstring: ``Example:`` headers to ``Examples:``, Sphinx roles to code spans.

    Example:
        >>> _ROLE.sub(r"`\\1`", "see :meth:`train` and :class:`~parvec.Vocab`")
        'see `train` and `parvec.Vocab`'
    """

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            text = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
            obj.docstring.value = _ROLE.sub(r"`\1`", text)
