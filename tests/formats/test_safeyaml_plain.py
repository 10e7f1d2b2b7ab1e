"""plain_mapping: the plainest frontmatter read without the YAML parser, to the same values;
anything else is left to the parser (None). Compared with PyYAML's safe loader on generated
blocks of plain and tricky lines."""
from __future__ import annotations

import random
from datetime import date, datetime

import pytest
import yaml

from memkit.formats.safeyaml import YamlError, load_yaml, plain_mapping

KEYS = ["title", "summary", "created", "updated", "pinned", "my-key", "_x", "Key2", "on", "yes", "null", "No", "y"]
VALUES = [
    "Abandoned manchester", "arena upper teacher attached", "Café au lait", "日本語のメモ", "don't forget",
    "C# and F#", "a, b, [c] {d}", "x:y", "path/to/file.md", "Yes please", "No.", "NaN", "inf", "e5", "y", "n",
    "yes", "Yes", "YES", "no", "NO", "true", "False", "on", "OFF", "null", "Null", "NULL", "~",
    "0", "7", "42", "123456789012345678", "1234567890123456789", "00", "012", "-1", "+1", "1_000", "0x1F",
    "1.5", ".inf", "1e5", "1:20", "2024-08-11", "2024-8-1", "2024-02-30", "2024-08-11T10:14:00",
    "2024-08-11t10:14:00", "2024-08-11 10:14:00", "2024-08-11T10:14:00Z", "2024-08-11T10:14:00.5",
    "2024-08-11T24:00:00", "a # comment", "a#b", "a: b", "ends with:", "tab\there", "nbsp\u00a0here",
    "'quoted'", '"quoted"', "[a, b]", "{a: 1}", "- item", "&anchor x", "*alias", "!tag x", "|", ">", "%x",
    "@x", "`x`", "? x", "x ", "x\r",
]


def both(text: str):
    return plain_mapping(text), yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


def test_common_frontmatter_is_read_plainly():
    text = ("title: Abandoned manchester\nsummary: arena upper teacher attached\ncreated: 2024-08-11T10:14:00\n"
            "updated: 2024-11-30\npinned: true\nsplit_from: cooking\nentries: 12\n")
    got, parsed = both(text)
    assert got == parsed == {"title": "Abandoned manchester", "summary": "arena upper teacher attached",
                             "created": datetime(2024, 8, 11, 10, 14), "updated": date(2024, 11, 30), "pinned": True,
                             "split_from": "cooking", "entries": 12}
    assert load_yaml(text) == parsed


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("key", ["title", "on", "my-key"])
def test_one_line_reads_as_yaml_or_is_left_to_it(key, value):
    text = f"{key}: {value}\n"
    try:
        parsed = both(text)[1]
    except (yaml.YAMLError, ValueError):  # the parser refuses it: so must the plain reading
        assert plain_mapping(text) is None
        return
    got = plain_mapping(text)
    assert got is None or (got == parsed and [type(v) for v in got.values()] == [type(v) for v in parsed.values()])


def test_generated_blocks_read_as_yaml():
    rng = random.Random(5)
    plain = 0
    for _ in range(3000):
        lines = []
        for _ in range(rng.randint(1, 6)):
            shape = rng.random()
            key, value = rng.choice(KEYS), rng.choice(VALUES)
            if shape < 0.8:
                lines.append(f"{key}:{' ' * rng.randint(1, 3)}{value}{' ' * rng.randint(0, 2)}")
            elif shape < 0.9:
                lines.append(rng.choice(["", "# a comment", "  indented: x", f"{key}:", f"{key}:{value}", "- x"]))
            else:
                lines.append(f"{key}: {value}")
        text = rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["\n", "", "\n\n", "\r\n"])
        try:
            parsed = both(text)[1]
        except (yaml.YAMLError, ValueError):
            assert plain_mapping(text) is None, text
            continue
        got = plain_mapping(text)
        if got is not None:
            plain += 1
            assert got == parsed, text
            assert [type(v) for v in got.values()] == [type(v) for v in parsed.values()], text
    assert plain > 100  # the plain reading is taken, not only for one-liners (most values here are tricky)


@pytest.mark.parametrize("text", ["", "\n", "\n\n", "# only a comment\n", "title:\n", "title: x\n  more: y\n",
                                  "tags: [a, b]\n", "title: 'quoted'\n", "on: x\n", "title: a: b\n",
                                  "title: a\r\rmore: b\n", "k" * 1025 + ": v\n", "a: b\n" + "k" * 1025 + ": v\n"])
def test_left_to_the_parser(text):
    assert plain_mapping(text) is None


def test_a_key_of_yaml_s_longest_and_crlf_lines():
    """A simple key may have 1,024 characters (one more and the parser refuses the line, as
    load_yaml still does); a CRLF file's lines read as its LF lines."""
    text = "k" * 1024 + ": v\r\ntitle: Abandoned manchester\r\ncreated: 2024-08-11T10:14:00\r\n"
    got, parsed = both(text)
    assert got == parsed and len(got) == 3
    with pytest.raises(YamlError, match="line 2"):
        load_yaml("a: b\n" + "k" * 1025 + ": v\n")


def test_deep_brackets_in_a_plain_word_read_as_yaml_reads_them():
    text = "title: a" + "[" * 100 + "\n"
    assert plain_mapping(text) == both(text)[1] == {"title": "a" + "[" * 100}


@pytest.mark.parametrize("value", ["2024-13-45", "2024-02-30", "2024-01-01 25:00:00", "'x'\nupdated: 2024-02-30"])
def test_an_impossible_date_is_a_yaml_error_naming_its_line(value):
    """PyYAML reads 2024-13-45 as a date and Python refuses it (ValueError): a frontmatter
    problem naming the line, not an unexpected error that stops every command."""
    with pytest.raises(YamlError, match="a value that cannot be read") as got:
        load_yaml(f"title: T\nupdated: {value}\n")
    assert got.value.line == (3 if "\n" in value else 2)


@pytest.mark.parametrize("value", ["!!int ''", "!!float ''", "!!bool maybe", "!!timestamp soon", "!!int abc"])
def test_a_value_a_constructor_refuses_is_a_yaml_error(value):
    """Explicit tags PyYAML's safe constructors refuse with KeyError, IndexError, AttributeError or
    ValueError: a frontmatter problem naming the line, not an unexpected error."""
    with pytest.raises(YamlError, match="a value that cannot be read") as got:
        load_yaml(f"title: T\nupdated: {value}\n")
    assert got.value.line == 2
