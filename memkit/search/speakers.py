"""Who is speaking in an entry: ``Name: text`` in a file that reads like a dialogue (the
ranking's speaker signal, :mod:`memkit.search.rank`)."""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..base.lazy_re import lazy

__all__ = ["LABELS", "speaker_of", "speakers"]

_UPPER = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮİĲĴĶĹĻĽĿŁŃŅŇŊŌŎŐŒŔŖŘŚŜŞŠŢŤŦŨŪŬŮŰŲŴŶŸŹŻŽΑ-ΩА-Я"
_NAME = rf"[{_UPPER}][\w'’.-]{{0,30}}(?:[ \t][{_UPPER}][\w'’.-]{{0,30}}){{0,2}}"
# What may stand before the colon of "Name: text": a list marker, a "[kind]", the name.
_PREFIX_RE = lazy(rf"[ \t]*(?:[-*+][ \t]+)?(?:\[[^\]\n]{{1,30}}\][ \t]*)?({_NAME})[ \t]*")
_MAX_PREFIX = 40


#: words often written ``Word: text`` in notes that are labels, never people
LABELS = frozenset("""
note notes todo to-do idea ideas step tip tips warning important reminder question answer summary update
decision action actions goal goals plan status result problem solution context fix bug pro con pros cons
ingredients method methods recipe source sources edit edited see also example examples tldr misc other
monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday morning evening
january february march april may june july august september october november december
""".split())


def speaker_of(text: str) -> str | None:
    """The name of ``Name: text`` (after an optional list marker or ``[kind]``), if it looks like a
    name: capitalised words with a lower-case letter (not ``TODO``, ``Q``), not a common label
    (``Note``, ``Monday``), with something said after the colon. Whether someone is speaking
    depends on the entry's file (:func:`speakers`)."""
    colon = text.find(":", 0, _MAX_PREFIX + 1)
    if colon < 1 or colon + 1 >= len(text) or not text[colon + 1].isspace() or not text[colon + 1:].strip():
        return None
    m = _PREFIX_RE.fullmatch(text[:colon])
    if not m or not any(c.islower() for c in m.group(1)) or m.group(1).casefold() in LABELS:
        return None
    return m.group(1)


def speakers(texts: Sequence[str], file_ids: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The speaker of every entry (index into the names returned; -1: none).

    ``Name:`` names a speaker only in a file that reads like a dialogue: at least half of its
    entries start with a name, at least two names start two entries or more each, and they take
    turns (most consecutive ``Name:`` entries change name); a name the file also uses in lower
    case (``Rice:`` beside "bomba rice") is a word, not a person. A notes file's ``Rice: soak it
    overnight`` or a pantry list's ``Rice: …`` / ``Water: …`` is nobody speaking, and neither is
    an entry with a ``[kind]``."""
    n = len(texts)
    sp = np.full(n, -1, dtype=np.int32)
    names: dict[str, int] = {}
    # a conversation turn never carries a [kind]: "[tip] Rice: rinse it" is a note
    prefix = [speaker_of(t) if ":" in t[:_MAX_PREFIX + 1] and not t.lstrip("-*+ \t").startswith("[") else None
              for t in texts]
    starts = np.flatnonzero(np.diff(file_ids, prepend=-1)) if n else np.zeros(0, np.int64)
    for a, b in zip(starts.tolist(), [*starts[1:].tolist(), n]):
        said = [p for p in prefix[a:b] if p is not None]
        counts: dict[str, int] = {}
        for p in said:
            counts[p] = counts.get(p, 0) + 1
        real = {p for p, c in counts.items() if c >= 2}
        if len(real) < 2 or 2 * len(said) < b - a:
            continue
        turns = sum(x != y for x, y in zip(said, said[1:]))
        if 2 * turns < len(said) - 1:
            continue
        words = {w for t in texts[a:b] for w in re.findall(r"\w+", t) if w.islower()}
        real = {p for p in real if not any(part.lower() in words for part in p.split())}
        if len(real) < 2:
            continue
        for i in range(a, b):
            if prefix[i] in real:
                sp[i] = names.setdefault(prefix[i], len(names))  # type: ignore[arg-type]
    return sp, list(names)
