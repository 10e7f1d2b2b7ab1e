"""Offline training sentences for bench/make_model.py.

- ``wordnet``: WordNet 3.0 as Debian's ``wordnet-base`` installs it (/usr/share/wordnet/data.*):
  for each synset its lemmas with its definition ("car, auto: a motor vehicle ..."), the definition
  alone, each quoted example, and the lemma list. WordNet licence (BSD-like, Princeton).
- ``fortunes``: the English fortune cookies of Debian's ``fortunes`` / ``fortunes-min`` packages
  (/usr/share/games/fortunes, the non-offensive files; BSD licence), one text per cookie, cut to
  its first 400 characters, attributions dropped.
"""
from __future__ import annotations

import re
from pathlib import Path

WORDNET_DIR = Path("/usr/share/wordnet")
FORTUNES_DIR = Path("/usr/share/games/fortunes")
_ADJ_MARKER = re.compile(r"\((a|p|ip)\)$")
_QUOTE = re.compile(r'"([^"]+)"')


def _synsets(path: Path):
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith("  ") or "|" not in line:
            continue  # licence header
        head, gloss = line.split("|", 1)
        fields = head.split()
        n_words = int(fields[3], 16)
        lemmas = []
        for i in range(n_words):
            word = _ADJ_MARKER.sub("", fields[4 + 2 * i]).replace("_", " ")
            if word.lower() not in (w.lower() for w in lemmas):
                lemmas.append(word)
        yield lemmas, gloss.strip()


def wordnet_texts(folder: Path = WORDNET_DIR) -> list[str]:
    """About 337k distinct texts from WordNet's four data files, in file order."""
    files = [folder / f"data.{pos}" for pos in ("noun", "verb", "adj", "adv")]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"WordNet not found ({', '.join(missing)}): apt-get install wordnet-base")
    seen: dict[str, None] = {}
    for path in files:
        for lemmas, gloss in _synsets(path):
            examples = [e.strip() for e in _QUOTE.findall(gloss)]
            definition = _QUOTE.sub("", gloss).strip(" ;:")
            definition = re.sub(r"\s*;\s*(;\s*)*", "; ", definition).strip(" ;")
            texts = []
            if definition:
                texts.append(f"{', '.join(lemmas)}: {definition}")
                texts.append(definition)
            texts.extend(e for e in examples if len(e) > 3)
            if len(lemmas) > 1:
                texts.append(", ".join(lemmas))
            for t in texts:
                seen.setdefault(t, None)
    return list(seen)


_FORTUNE_FILES = ("art computers cookie definitions education ethnic food fortunes goedel humorists kids "
                  "law linuxcookie literature love magic medicine men-women miscellaneous news pets "
                  "platitudes people politics riddles science songs-poems sports wisdom work").split()


def fortune_texts(folder: Path = FORTUNES_DIR) -> list[str]:
    """The English fortune cookies, one whitespace-joined text each (about 12k)."""
    missing = [name for name in _FORTUNE_FILES if not (folder / name).is_file()]
    if missing:
        raise SystemExit(f"fortune files missing in {folder} ({', '.join(missing)}): "
                         "apt-get install fortunes fortunes-min")
    seen: dict[str, None] = {}
    for name in _FORTUNE_FILES:
        path = folder / name
        for cookie in path.read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            lines = [ln for ln in cookie.splitlines() if not re.match(r"\s*(--|-- )\s*\S", ln)]
            text = " ".join(" ".join(lines).split())
            if 10 <= len(text):
                seen.setdefault(text[:400], None)
    return list(seen)


CORPORA = {"wordnet": wordnet_texts, "fortunes": fortune_texts}
