"""memkit.formats.words: the one tokeniser (terms), plain words, and the light stemmer."""
from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.formats.words import STOP_WORDS, stem, terms, words

FAST = settings(max_examples=30, deadline=None, derandomize=True)
ascii_words = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=14)


def test_the_docstring_examples():
    assert terms("Caroline's hAP ax3 was painting node-3 in 2026.10") == [
        "caroline", "hap", "ax3", "paint", "node-3", "node", "3", "2026.10", "2026", "10"]
    assert words("Bakes sourdough on Sundays, 2x") == ["bakes", "sourdough", "sundays"]


@pytest.mark.parametrize("group", [
    ("paints", "painted", "painting", "paint"),
    ("making", "makes", "make"),
    ("stories", "story"),
    ("hopping", "hops", "hop"),
])
def test_inflections_merge(group):
    assert len({stem(w) for w in group}) == 1


@pytest.mark.parametrize("word", ["sky", "cat", "node3", "v2s", "café", "niños", "x-ray", "ß"])
def test_short_words_digits_non_ascii_and_non_letters_are_not_stemmed(word):
    assert stem(word) == word


@pytest.mark.parametrize("word, want", [
    ("caresses", "caress"), ("ponies", "poni"), ("ties", "ti"), ("cats", "cat"), ("feed", "feed"),
    ("agreed", "agree"), ("plastered", "plaster"), ("motoring", "motor"), ("sing", "sing"),
    ("filing", "file"), ("happy", "happi"), ("running", "run"), ("fizzed", "fizz"), ("glass", "glass"),
    ("bus", "bus"), ("analysis", "analysis"),
])
def test_porter_step_1(word, want):
    assert stem(word) == want


@FAST
@given(ascii_words)
def test_stem_never_empties_a_word_nor_grows_it_much(word):
    got = stem(word)
    assert got and got.isascii() and got.isalpha()
    assert len(got) <= len(word) + 1  # "hoping" -> "hope"; only an added 'e'


def test_stop_words_and_negations_are_dropped():
    assert terms("the and of was") == []
    assert terms("Don't isn't WON'T can’t") == []
    assert terms("It's Bob's bike") == ["bob", "bike"]
    assert "not" in STOP_WORDS


def test_compounds_are_kept_whole_and_in_parts():
    assert terms("(node-3),") == ["node-3", "node", "3"]
    assert terms("v1.2/rc") == ["v1.2/rc", "v1", "2", "rc"]
    assert terms("snake_case") == ["snake_case", "snake", "case"]
    assert terms("the-end") == ["the-end", "end"]  # a stop word inside a compound only loses its part


@pytest.mark.parametrize("text", ["", "   ", "\r\n\r\n", "...", "!!! ??? ---", "\x00"])
def test_texts_without_words_give_no_terms(text):
    assert terms(text) == []
    assert words(text) == []


def test_newlines_of_any_kind_separate_words():
    assert terms("rice\r\nbeans\rlentils\nsoup\tstew") == ["rice", "bean", "lentil", "soup", "stew"]
    assert words("rice\r\nbeans\rlentils") == ["rice", "beans", "lentils"]


def test_unicode_words():
    assert terms("Straße École Ñandú 東京") == ["straße", "école", "ñandú", "東京"]
    assert words("Über Straße ΣΟΦΙΑ") == ["über", "strasse", "σοφια"]  # casefolded


@FAST
@given(st.text(max_size=120))
def test_terms_are_lowercase_deterministic_and_chunk_by_chunk(text):
    got = terms(text)
    assert terms(text) == got  # the cache changes nothing
    assert all(t and t == t.lower() for t in got)
    assert [t for chunk in text.lower().split() for t in terms(chunk)] == got  # in order, chunk by chunk
    assert all(not any(c.isspace() for c in t) for t in got)


@FAST
@given(st.lists(st.one_of(ascii_words, st.sampled_from(sorted(STOP_WORDS))), max_size=12))
def test_plain_ascii_words_case_does_not_matter_and_stop_words_never_count(ws):
    text = " ".join(ws)
    assert terms(text.upper()) == terms(text) == [stem(w) for w in ws if w not in STOP_WORDS]


@FAST
@given(st.text(max_size=120))
def test_words_are_three_or_more_word_characters_without_digits(text):
    for w in words(text):
        assert len(w) >= 3 and w == w.casefold() and w not in STOP_WORDS
        assert not any(c.isspace() or c in "_-'.,;:!?" or unicodedata.category(c) == "Nd" for c in w)


def test_words_are_letters_only_even_for_vulgar_fractions_and_numerals():
    assert words("abc² ¼¼¼ ⅫⅫⅫ bake") == ["bake"]
