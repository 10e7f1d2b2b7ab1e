"""The redaction data set (issue 41.8, tests/formats/redaction_set.json): every secret-bearing
sentence (PINs and codes next to the words naming them, login/password pairs, keys, cards, IBANs…)
loses each of its secrets; every harmless sentence with numbers (dates, prices, phone numbers,
versions, addresses, times) is left exactly as it was. bench/redaction_rates.py prints the rates."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from memkit.formats.redact import redact

DATA = json.loads((Path(__file__).parent / "redaction_set.json").read_text(encoding="utf-8"))


def test_the_set_is_large_enough():
    assert len(DATA["secret"]) >= 50 and len(DATA["harmless"]) >= 50


@pytest.mark.parametrize("item", DATA["secret"], ids=lambda item: item["text"][:40])
def test_every_secret_is_redacted(item):
    got = redact(item["text"])
    assert got.count >= 1 and [s for s in item["secrets"] if s in got.text] == [], got.text


@pytest.mark.parametrize("text", DATA["harmless"], ids=lambda text: text[:40])
def test_every_harmless_sentence_is_kept(text):
    got = redact(text)
    assert got.text == text and got.count == 0
