"""A Griffe extension for the API reference: parvec's docstrings title their doctests ``Example:`` (the house
style), which Griffe's Google parser reads as an admonition of prose; renamed ``Examples:``, they render as code."""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.M)


class ExampleSections(griffe.Extension):
    """Rename every ``Example:`` section header of a loaded object's docstring to ``Examples:``."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
