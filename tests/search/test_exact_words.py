"""Exact words are never lost to the judge (issue 40): an entry holding a query's rare identifying
word (an identifier, model number, code, name, date) comes first and is confident."""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from memkit import Vault
from memkit.embeddings.judge import judge_status
from memkit.formats.words import terms
from memkit.search.exact import RARE_MAX, exact_words, identifying

needs_judge = pytest.mark.skipif(judge_status() is not None, reason=f"judge unavailable: {judge_status()}")
SAMPLE = Path(__file__).resolve().parents[2] / "vault"


def test_identifying_terms_have_a_digit_or_a_joiner():
    assert all(identifying(t) for t in ("node-3", "item7x3", "ds224", "adr-0042", "v1.31.4", "2019", "a@b.org"))
    assert not any(identifying(t) for t in ("3", "30", "paella", "node", "x", "plain-text"))


def _pick(texts: list[str], query: str) -> list[int]:
    vocab: dict[str, set[int]] = {}
    for i, text in enumerate(texts):
        for t in terms(text):
            vocab.setdefault(t, set()).add(i)
    qterms = terms(query)
    ids = list(range(len(qterms)))
    holders = {n: np.array(sorted(vocab.get(t, ())), dtype=np.int64) for n, t in enumerate(qterms)}
    return exact_words(query, qterms, ids, lambda n: len(holders[n]), holders.__getitem__, texts.__getitem__).rows.tolist()


def test_the_rarest_identifier_picks_its_holders():
    texts = ["NAS is a DS224 with two drives", "Router is a hAP ax3", "Old router was a hAP ac2",
             "Lunch with Garcima", "paella is made with rice", "Paella night on Friday",
             "Tutor comes in November at 10:00", "Call Kelly about the lease"]
    assert _pick(texts, "DS224") == [0]
    assert _pick(texts, "hAP ax3") == [1]  # "hap" is not identifying; "ax3" is, and held once
    assert _pick(texts, "garcima") == [3]  # a name: written capitalised inside its sentence
    assert _pick(texts, "Kelly's number") == [7]  # found by the word as written, not its stem ("kelli")
    assert _pick(texts, "paella") == []  # capitalised only where a sentence starts: a plain word
    assert _pick(texts, "best book to read in November") == []  # a month is not a name
    assert _pick(texts, "anything at 10?") == []  # a bare two-digit number identifies nothing
    common = [f"node-7 log line {i}" for i in range(RARE_MAX + 1)]
    assert _pick(common, "node-7") == []  # held by more than RARE_MAX entries: not rare


@needs_judge
def test_one_entry_holding_an_identifier_comes_first_among_two_thousand(tmp_path):
    rng = random.Random(7)
    words = "router switch cable drive backup photo garden recipe train ticket invoice meeting".split()
    lines = [" ".join(rng.choice(words) for _ in range(8)) + f" item{n}" for n in range(2000)]
    lines[1234] = "The spare part for the dishwasher is item7x3, ordered from the shop"
    root = Vault.init(tmp_path / "v", profile=False).root
    for part in range(4):
        body = "\n".join(f"- {line}" for line in lines[part * 500:(part + 1) * 500])
        (root / "topics" / f"part{part}.md").write_text(f"---\ntitle: part {part}\n---\n{body}\n")
    v = Vault(root)
    for query in ("item7x3", "where did I order item7x3?", "ITEM7X3"):
        hits = v.search(query)
        assert hits[0].text.startswith("The spare part") and hits[0].confident, query


@needs_judge
@pytest.mark.parametrize("query, expected", [
    ("node-3", "Pi 5 8GB board `node-3`"),
    ("what runs on node-3?", "Pi 5 8GB board `node-3`"),
    ("DS224+", "NAS is a Synology DS224+"),
    ("v1.31.4", "k3s cluster:"),
    ("BX950MI", "UPS is an APC Back-UPS BX950MI"),
    ("Garcima", "Paella pan is a 38 cm"),
])
def test_sample_vault_lookups_by_identifier(tmp_path, expected, query):
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".memkit"))
    hits = Vault(root).search(query)
    assert any(expected in h.text for h in hits[:1]), [h.text[:50] for h in hits]
    assert hits[0].confident


def _filler(rng: random.Random, chars: int) -> str:
    words = "the we went to market and bought some bread with friends later walked home along river".split()
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(words))
    return " ".join(out)


def test_a_plain_rare_word_counts_where_the_judge_cannot_read_it():
    rng = random.Random(3)
    long_end = _filler(rng, 3000) + " quintessor at the end"
    long_start = "quintessor " + _filler(rng, 3000)
    texts = [long_end, "short note about paella", "Paella night", long_start, _filler(rng, 300) + " velocitrax"]
    assert _pick(texts, "quintessor") == [0, 3]  # past the judge's window in one of them: both held it
    assert _pick(["quintessor " + _filler(rng, 3000)], "quintessor") == []  # read by the judge: as before
    assert _pick(texts, "velocitrax") == []  # a short entry: the judge reads it
    assert _pick(texts, "paella") == []


PLAIN = ("quelvarine", "morvantic")


@needs_judge
@pytest.mark.parametrize("where", ["middle", "end"])
def test_a_long_entry_is_found_by_its_own_unique_word(tmp_path, where):
    """Issue 41 item 17: an entry of 2,000-5,000 characters with one rare word was not found by it."""
    rng = random.Random(11)
    root = Vault.init(tmp_path / "v", profile=False).root
    lines = [f"- {_filler(rng, 60)} {w}" for w in ("garden", "river", "bread", "friends", "market")]
    for n, size in enumerate((2000, 5000)):
        body = _filler(rng, size)
        cut = len(body) // 2 if where == "middle" else len(body)
        lines.append(f"- {body[:cut].rstrip()} zanthorium{n} {PLAIN[n]} {body[cut:].lstrip()}".rstrip())
    (root / "topics" / "notes.md").write_text("# Notes\n\n" + "\n".join(lines) + "\n")
    v = Vault(root)
    for n in range(2):
        for query in (PLAIN[n], f"zanthorium{n}"):  # a plain word, and one with a digit
            hits = v.search(query)
            assert hits and PLAIN[n] in hits[0].text and hits[0].confident, (query, [h.text[:30] for h in hits])
            fast = v.search(query, fast=True)
            assert fast and PLAIN[n] in fast[0].text, query
