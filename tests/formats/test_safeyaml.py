"""memkit.formats.safeyaml: safe, bounded YAML whose errors name the line."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.formats.safeyaml import MAX_DEPTH, MAX_EXPANDED, MAX_YAML_BYTES, YamlError, dump_yaml, load_yaml

FAST = settings(max_examples=30, deadline=None, derandomize=True)

BOMB = ("a: &a [x,x,x,x,x,x,x,x,x,x]\n"
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n")


def test_plain_frontmatter():
    text = "title: Cooking\nsummary: 'rice: and oven'\ntags: [a, b]\nn: 3\n"
    assert load_yaml(text) == {"title": "Cooking", "summary": "rice: and oven", "tags": ["a", "b"], "n": 3}


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n", "~\n"])
def test_empty_documents_are_none(text):
    assert load_yaml(text) is None


@pytest.mark.parametrize("text, line", [
    ("a: 1\nb: [1, 2\nc: 3\n", 3),
    ("a: 1\n  b: 2\n", 2),
    ("a: 1\nb: *nope\n", 2),
    ("\tx: 1\n", 1),
    ("a: 1\nb: 'unclosed\n", 3),
    ("a: 1\r\nb: [\r\n", 3),  # CRLF
    ("a: 1\rb: :\r", 2),  # CR only: YAML's own line breaks
    ("a: 1\nb: 2\na: 3\nc: {x: 1, x: 2\n", 5),
])
def test_invalid_yaml_names_the_line(text, line):
    with pytest.raises(YamlError) as exc:
        load_yaml(text)
    assert exc.value.line == line
    assert str(exc.value).startswith(f"line {line}: ") and exc.value.problem in str(exc.value)


@pytest.mark.parametrize("text", [
    "a: !!python/object/apply:os.system ['true']\n",
    "a: !!python/name:os.system\n",
    "a: !!python/object:collections.OrderedDict {}\n",
])
def test_python_tags_are_refused_not_run(text):
    with pytest.raises(YamlError, match="constructor") as exc:
        load_yaml(text)
    assert exc.value.line == 1


def test_a_billion_laughs_is_refused_at_the_first_alias():
    with pytest.raises(YamlError, match=f"more than {MAX_EXPANDED:,} values") as exc:
        load_yaml(BOMB)
    assert exc.value.line == 2
    with pytest.raises(YamlError) as exc:
        load_yaml(BOMB.replace("\n", "\r\n"))
    assert exc.value.line == 2


def test_a_billion_laughs_with_cr_only_newlines_names_its_line():
    with pytest.raises(YamlError) as exc:
        load_yaml(BOMB.replace("\n", "\r"))
    assert exc.value.line == 2


def test_small_aliases_and_a_recursive_alias_load():
    assert load_yaml("a: &x 1\nb: *x\n") == {"a": 1, "b": 1}
    data = load_yaml("a: &x [*x]\n")  # counted once, not forever
    assert data["a"][0] is data["a"]


def test_deep_flow_nesting_is_refused_before_parsing():
    with pytest.raises(YamlError, match=f"more than {MAX_DEPTH} levels") as exc:
        load_yaml("a: 1\nx: " + "[" * 100_000)
    assert exc.value.line == 2
    assert load_yaml("x: " + "[" * 10 + "]" * 10) == {"x": [[[[[[[[[[]]]]]]]]]]}


def test_deep_block_nesting_is_refused_naming_the_line():
    text = "a: 1\nx:\n" + "".join("  " * i + "k:\n" for i in range(1, MAX_DEPTH + 10))
    with pytest.raises(YamlError, match="levels deep") as exc:
        load_yaml(text)
    assert exc.value.line == len(text.splitlines())  # the deepest line


def test_size_limit():
    assert load_yaml("a: " + "x" * (MAX_YAML_BYTES - 10)) == {"a": "x" * (MAX_YAML_BYTES - 10)}
    with pytest.raises(YamlError, match="kB limit") as exc:
        load_yaml("a: " + "x" * MAX_YAML_BYTES)
    assert exc.value.line is None


def test_yaml_error_is_a_value_error_with_its_parts():
    err = YamlError("bad", 4)
    assert isinstance(err, ValueError) and err.line == 4 and err.problem == "bad" and str(err) == "line 4: bad"
    assert str(YamlError("bad")) == "bad"


texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
scalars = st.one_of(texts, st.integers(-10**12, 10**12), st.booleans(), st.none())
docs = st.dictionaries(texts.filter(bool), st.one_of(scalars, st.lists(scalars, max_size=4)), max_size=6)


@FAST
@given(docs)
def test_dump_then_load_round_trips(data):
    text = dump_yaml(data)
    assert load_yaml(text) == (data if data else {})


def test_dump_then_load_keeps_a_next_line_character():
    assert load_yaml(dump_yaml({"summary": "a\x85b"})) == {"summary": "a\x85b"}


def test_dump_keeps_key_order_block_style_and_unicode():
    text = dump_yaml({"title": "x: y", "z": 1, "a": ["b"], "u": "Zürich 東京"})
    assert text == "title: 'x: y'\nz: 1\na:\n- b\nu: Zürich 東京\n"


def test_memkit_yaml_with_an_unclosed_brace_names_where_it_opened(tmp_path):
    from memkit.config import load_config
    from memkit.errors import ConfigError

    (tmp_path / "memkit.yaml").write_text("llm: {base_url: http://127.0.0.1:11434/v1\nmax_memories_per_search: 5\n")
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path)
    assert str(exc.value).endswith("memkit.yaml line 2: not valid YAML: did not find expected ',' or '}' "
                                   "(while parsing a flow mapping started on line 1)")
