"""The table of settings (:mod:`memkit.config.table`) written out: the commented memkit.yaml that
``memkit init`` writes (:data:`DEFAULT_CONFIG_TEXT`) and docs/configuration.md (:func:`docs_page`)."""
from __future__ import annotations

import textwrap

from .table import Config
from .validate import Setting, rows

WIDTH = 100  #: the YAML's and the docs' source lines wrap here
REGENERATE = "python -m memkit.config.docs > docs/configuration.md"
NOTES = "settings-notes.md"  #: examples of llm: and embedder: set-ups, beside the generated page


def _comment(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent + "# ", subsequent_indent=indent + "# ",
                         break_on_hyphens=False, break_long_words=False)


def _value_line(row: Setting) -> str:
    """``key: default``, or, for a setting unset by default, ``# key: example``."""
    if row.default is None or (row.default == "" and row.example is not None):
        return f"# {row.name}: {row.kind.yaml(row.example)}" if row.example is not None else f"# {row.name}:"
    return f"{row.name}: {row.kind.yaml(row.default)}"


def _section_lines(row: Setting) -> list[str]:
    """A section's keys, one a line with its help after it. An optional section (empty by default)
    stays ``name: {}``, and its keys follow commented out, each with a value to show how."""
    assert row.section is not None
    children = rows(row.section.cls)
    if row.section.optional:
        lead, out = "#   ", [f"{row.name}: {{}}", f"# To set it, replace `{row.name}: {{}}` with the lines below "
                                                  "that you need, uncommented:", f"# {row.name}:"]
        lines = [f"{c.name}: {c.kind.yaml(c.example if c.example is not None else c.default)}" for c in children]
    else:
        lead, out = "  ", [f"{row.name}:"]
        lines = [_value_line(c) for c in children]
    column = len(lead) + min(max(len(line) for line in lines) + 2, 40)
    for line, child in zip(lines, children):
        start = (lead + line + "  ").ljust(column)  # a value longer than the column: its comment after 2 spaces
        wrapped = textwrap.wrap(child.help, WIDTH - len(start) - 2, break_on_hyphens=False, break_long_words=False)
        out.append(f"{start}# {wrapped[0]}")
        pad = "#" + " " * (len(start) - 1) if row.section.optional else " " * len(start)
        out += [f"{pad}# {more}" for more in wrapped[1:]]
    return out


def default_yaml(config: type = Config) -> str:
    """memkit.yaml with every setting at its default, each after its help: what ``memkit init`` writes
    (``config``: the settings' class, :class:`memkit.config.Config`)."""
    out = ["# memkit settings. Every key is optional; the values below are the defaults (a commented-out",
           "# key is unset). What each one takes: docs/configuration.md in memkit's sources."]
    for row in rows(config):
        out += [""] + _comment(row.help)
        if row.section:
            out += _section_lines(row)
        else:
            out += row.kind.yaml_lines(row.name, row.default) if row.default is not None else [_value_line(row)]
    return "\n".join(out) + "\n"


DEFAULT_CONFIG_TEXT = default_yaml()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default_cell(row: Setting) -> str:
    if row.section:
        return "`{}` (none)" if row.section.optional else "(below)"
    if row.default is None or (row.default == "" and row.example is not None):
        return f"unset (e.g. `{row.kind.yaml(row.example)}`)" if row.example is not None else "unset"
    return f"`{row.kind.yaml(row.default)}`"


def _table(prefix: str, settings: list[Setting]) -> list[str]:
    out = ["| setting | default | type / range | what it does |", "|---|---|---|---|"]
    for row in settings:
        kind = row.kind.docs_type or row.kind.expected
        if row.section:
            kind = f"a mapping ([below](#{row.name}))"
        out.append(f"| `{prefix}{row.name}` | {_cell(_default_cell(row))} | {_cell(kind)} | {_cell(row.help)} |")
    return out


def docs_page(config: type = Config) -> str:
    """docs/configuration.md: a table of the settings of ``config``, then one of each section's."""
    out = [
        "# Configuration",
        "",
        f"<!-- Generated from memkit/config/table.py by `{REGENERATE}`: edit the table, not this page. -->",
        "",
        "A vault's settings are in `memkit.yaml`, at its root. Every key is optional; `memkit init` writes",
        "them all, each with its default and a comment saying what it does. An unknown key, or a value of the",
        "wrong type or out of range, is an error naming the file, the key and what it takes; a key left",
        "empty (`model:`) means its default. A flag, then an environment variable, win over `memkit.yaml`.",
        "",
        f"Examples of `llm:` and `embedder:` set-ups: [settings notes]({NOTES}).",
        "",
    ]
    out += _table("", rows(config))
    for row in rows(config):
        if row.section:
            out += ["", f"## {row.name}", "", *textwrap.wrap(row.help, WIDTH, break_on_hyphens=False), ""]
            if row.section.optional:
                out += [f"Empty (`{row.name}: {{}}`, the default) or absent: none.", ""]
            out += _table(row.name + ".", rows(row.section.cls))
    return "\n".join(out) + "\n"
