"""The CLI reference page, generated from the ``parvec`` argument parsers at every ``mkdocs build``.

A MkDocs hook (``hooks:`` in mkdocs.yml): :func:`on_files` adds ``reference/cli.md`` to the site, made by
:func:`markdown` from :func:`parvec.cli.build_parser`, so the page always lists every sub-command and flag of the
code it is built from (``tests/test_docs_site.py`` checks that it does).  ``python docs/hooks/cli_reference.py``
prints the page.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

PAGE = "reference/cli.md"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-parsers by name, in the order they were registered."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _summaries(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each sub-command's one-line help (``parvec --help``'s list)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _cell(text: str | None) -> str:
    """Text for a Markdown table cell: one line, pipes escaped, ``%(default)s`` filled by the caller."""
    return re.sub(r"\s+", " ", text or "").replace("|", "\\|").strip()


def _flag(action: argparse.Action) -> str:
    """How a flag is written: its spellings, then its value's name (``--dim N``)."""
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    value = ""
    if action.nargs != 0:
        metavar = action.metavar or (action.dest.upper() if action.choices is None else None)
        if action.choices is not None and action.metavar is None:
            metavar = "{" + ",".join(str(c) for c in action.choices) + "}"
        if action.nargs in ("+", "*"):
            value = f" {metavar} ..."
        elif action.nargs == "?":
            value = f" [{metavar}]"
        elif isinstance(action.nargs, int) and action.nargs > 1:
            value = " " + " ".join([str(metavar)] * action.nargs) if not isinstance(metavar, tuple) \
                else " " + " ".join(metavar)
        else:
            value = f" {metavar}"
    return ", ".join(f"`{s}{value}`" for s in action.option_strings)


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%" in text:  # as argparse expands a help string: %(default)s and the like, and %% for a percent sign
        params = {**vars(action), "prog": "parvec"}
        if action.choices is not None:
            params["choices"] = ", ".join(str(c) for c in action.choices)
        try:
            text = text % params
        except (KeyError, TypeError, ValueError):
            pass
    default = action.default
    if (action.option_strings and action.nargs != 0 and default not in (None, argparse.SUPPRESS)
            and "default" not in text.lower()):
        text += f" (default: `{default}`)"
    return _cell(text)


def _rows(actions: list[argparse.Action]) -> list[str]:
    rows = []
    for action in actions:
        if isinstance(action, argparse._HelpAction):
            continue
        hidden = action.help == argparse.SUPPRESS
        what = "an alias kept out of `--help`" if hidden else _help(action)
        rows.append(f"| {_flag(action)} | {what} |")
    return rows


def _section(name: str, sub: argparse.ArgumentParser, summary: str) -> list[str]:
    first = _cell(summary)
    lines = [f"## parvec {name}", "", f"{first[:1].upper()}{first[1:]}.", "", "```text", sub.format_usage().strip(),
             "```", ""]
    if sub.description and _cell(sub.description).rstrip(".") != first.rstrip("."):
        lines += [sub.description.strip(), ""]
    for group in sub._action_groups:
        rows = _rows(group._group_actions)
        if not rows:
            continue
        title = {"positional arguments": "Arguments", "options": "Options"}.get(group.title, group.title)
        lines += [f"**{title[:1].upper() + title[1:]}**", "", "| flag | what it does |", "| --- | --- |", *rows, ""]
    if sub.epilog:
        lines += [sub.epilog.strip(), ""]
    return lines


def markdown(parser: argparse.ArgumentParser | None = None) -> str:
    """The CLI reference page for ``parser`` (by default ``parvec``'s own).

    Example:
        >>> page = markdown()
        >>> "## parvec train" in page and "`--dim N`" in page
        True
    """
    if parser is None:
        from parvec.cli import build_parser

        parser = build_parser()
    subs, summaries = _subcommands(parser), _summaries(parser)
    lines = ["# Command line reference", "",
             "Generated from `parvec`'s argument parsers when the site is built: every sub-command and every flag "
             "of this version. `parvec COMMAND --help` prints the same. A command line that starts with a "
             "word2vec.c flag (`parvec -train corpus.txt -output vectors.bin ...`) is `parvec train`.", "",
             "```text", parser.format_usage().strip(), "```", "", "| flag | what it does |", "| --- | --- |",
             *_rows([a for a in parser._actions if a.option_strings]), "",
             "| command | what it does |", "| --- | --- |",
             *(f"| [`{n}`](#parvec-{n}) | {_cell(summaries.get(n))} |" for n in subs), ""]
    for name, sub in subs.items():
        lines += _section(name, sub, summaries.get(name, ""))
    return "\n".join(lines).rstrip() + "\n"


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated page to the site's files."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=markdown()))
    return files


if __name__ == "__main__":
    print(markdown(), end="")
