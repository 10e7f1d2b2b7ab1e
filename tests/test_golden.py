"""Golden files for the byte-preserving topic edits (in the style of python-frontmatter's tests).

Each case in ``tests/golden/`` is three files sharing a name:

- ``NAME.md``: a topic file as a person wrote it (exact bytes: CRLF or bare CR, a BOM, no final
  newline…);
- ``NAME.json``: the operation, one of

  - ``{"op": "add", "text": ..., "kind": ..., "tags": [...], "date": "YYYY-MM-DD"}``: what
    ``memkit add`` appends to an existing topic — the line :func:`~memkit.formats.topic.format_entry`
    renders, preceded and followed by what :meth:`~memkit.formats.topic.Topic.append_suffix` says (a
    missing newline, the closing of a fence left open), in the file's own line endings;
  - ``{"op": "append", ...same keys..., "updated": "YYYY-MM-DDTHH:MM:SS"}``: what a digest writes
    into a topic — :func:`~memkit.formats.topic.append_line`, then ``updated:`` set with
    :func:`~memkit.formats.topic.set_frontmatter` (when ``updated`` is given);
  - ``{"op": "remove", "match": ..., "removed": ..., "updated": ...}``: the one entry whose text
    contains ``match`` cut with :func:`~memkit.formats.topic.remove_lines`, which must return exactly
    ``removed`` (``memkit forget``; a digest archiving a superseded entry also sets ``updated``);
  - ``{"op": "set", "values": {...}}``: :func:`~memkit.formats.topic.set_frontmatter` (a value written as
    ``YYYY-MM-DDTHH:MM:SS`` is a timestamp);

  and a ``description``;
- ``NAME.result.md``: the exact bytes expected.

The file is read as the store reads it (:func:`~memkit.formats.topic.read_topic`: BOM and line endings
noted, text decoded) and written as the store writes it (:meth:`~memkit.formats.topic.Topic.data`), and
the result is compared byte for byte. Each result was produced once by the code and then read
line by line against the vault format's rules; never regenerate them blindly.
``tests/golden/.gitattributes`` keeps git from touching their line endings.
"""
from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memkit.formats.markdown import encode_topic
from memkit.formats.topic import (
    Topic,
    append_line,
    format_entry,
    parse_topic_text,
    read_topic,
    remove_lines,
    set_frontmatter,
)

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name[: -len(".json")] for p in GOLDEN.glob("*.json"))
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")
_FENCE = re.compile(r"^(`{3,}|~{3,})")


def _value(value: Any) -> Any:
    return datetime.fromisoformat(value) if isinstance(value, str) and _TIMESTAMP.match(value) else value


def parse(text: str) -> Topic:
    return parse_topic_text(text, "golden", "topics/golden.md")


def entry_line(op: dict[str, Any]) -> str:
    return format_entry(op["text"], op.get("kind"), op.get("tags", ()), op.get("date"))


def apply(topic: Topic, op: dict[str, Any]) -> tuple[str, bytes]:
    """Apply one operation to a topic read from disk, as the store does; returns (new text, bytes)."""
    kind = op["op"]
    text = topic.raw
    if kind == "add":  # the store appends these bytes to the file as it is
        suffix = topic.append_suffix(entry_line(op))
        return text + suffix, topic.data() + encode_topic(suffix, cr=topic.cr)
    if kind == "append":
        new = append_line(text, entry_line(op))
    elif kind == "remove":
        found = [e for e in topic.entries if op["match"] in e.text]
        assert len(found) == 1, f"{op['match']!r} matches {len(found)} entries"
        new, removed = remove_lines(text, found[0].line, found[0].end_line)
        assert removed == op["removed"]
    elif kind == "set":
        new = set_frontmatter(text, {k: _value(v) for k, v in op["values"].items()})
    else:
        raise AssertionError(f"unknown op {kind!r}")
    if "updated" in op:
        new = set_frontmatter(new, {"updated": _value(op["updated"])})
    return new, topic.data(new)


def test_the_folder_holds_complete_cases():
    assert len(CASES) >= 15
    for name in CASES:
        assert (GOLDEN / f"{name}.md").is_file(), name
        assert (GOLDEN / f"{name}.result.md").is_file(), name
    stray = {p.name for p in GOLDEN.iterdir() if not p.name.startswith(".")} - {
        f"{n}{suffix}" for n in CASES for suffix in (".md", ".json", ".result.md")}
    assert not stray, f"files in tests/golden/ that belong to no case: {sorted(stray)}"


@pytest.mark.parametrize("name", CASES)
def test_golden(name):
    op = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    topic = read_topic(GOLDEN / f"{name}.md", "golden", "topics/golden.md")
    expected = (GOLDEN / f"{name}.result.md").read_bytes()
    new, got = apply(topic, op)
    assert got == expected, f"{name}: {op.get('description', '')}"
    if op["op"] == "add":
        assert got.startswith((GOLDEN / f"{name}.md").read_bytes())  # an append: every byte before stays

    # The meaning of the result, beside its bytes.
    before, after = topic, parse(new)
    old = [(e.text, e.kind, e.date) for e in before.entries]
    if op["op"] in ("add", "append"):
        # the new entry is the last one, and every entry above it is unchanged -- up to a code
        # fence left open: the lines after it were read as entries and become the fenced block
        # once `add` closes the fence, so their text (and id) changes; no claim is made on them
        assert after.entries[-1].text == entry_line(op)[2:] and after.entries[-1].is_list
        cut = next((i for i, x in enumerate(old) if _FENCE.match(x[0])), len(old))
        assert [(e.text, e.kind, e.date) for e in after.entries[:cut]] == old[:cut]
    elif op["op"] == "remove":
        assert [(e.text, e.kind, e.date) for e in after.entries] == [x for x in old if op["match"] not in x[0]]
    else:
        for key, value in op["values"].items():
            if before.has_frontmatter:
                assert after.meta[key] == _value(value)
            else:
                assert new == before.raw
    if "updated" in op and before.has_frontmatter:
        assert after.meta["updated"] == _value(op["updated"])
    # every frontmatter key the person wrote is still there, with its value unless memkit set it
    changed = set(op.get("values", {})) | ({"updated"} if "updated" in op else set())
    assert {k: v for k, v in after.meta.items() if k not in changed} == \
        {k: v for k, v in before.meta.items() if k not in changed}
