"""Names: topic names (lowercase words joined by '-', safe on every OS, never able to leave topics/)
and the file names memkit makes from any text (session ids)."""
from __future__ import annotations

import hashlib
import re
import unicodedata

from ..base.lazy_re import lazy
from ..errors import TopicNameError

TOPICS_DIR = "topics"
MAX_NAME = 64  #: the longest part of a topic's name
MAX_DEPTH = 16  #: the most folders (and the file) a topic's name may have
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def is_topic_filename(filename: str) -> bool:
    """Whether a file name in topics/ names a topic: ``NAME.md``, not hidden (editors' swap and
    temp files, and memkit's own ``.NAME.md.XXXX.tmp``, start with a dot)."""
    return filename.endswith(".md") and len(filename) > 3 and not filename.startswith(".")


def topic_relpath(name: str) -> str:
    """The vault-relative path of topic ``name``'s file, as messages, diffs and entries show it
    (``topics/cooking.md``)."""
    return f"{TOPICS_DIR}/{name}.md"


def topic_stem(name: str) -> str:
    """A topic name as a person gave it, without surrounding spaces and without a ``.md`` suffix."""
    raw = name.strip()
    return raw[:-3] if raw.endswith(".md") else raw


def in_topic(name: str, topic: str) -> bool:
    """Whether topic ``name`` is ``topic`` or one of its subtopics: ``topic-*`` (as a split names
    them) or, for a folder, any topic under it (``work`` holds ``work/harbor``). Names a person
    wrote (``Work/Harbor Project``) are compared by their canonical form."""
    if name == topic or name.startswith(topic + "-") or name.startswith(topic + "/"):
        return True
    if is_canonical_path(name):
        return False
    canonical = canonical_name(name)
    return canonical == topic or canonical.startswith(topic + "-") or canonical.startswith(topic + "/")


def canonical_name(name: str) -> str:
    """``name``'s canonical form (:func:`check_topic_name`), or ``name`` itself when it has none."""
    try:
        return check_topic_name(name)
    except TopicNameError:
        return name


def is_canonical_path(name: str) -> bool:
    """Whether every ``/``-separated part of ``name`` is canonical (:func:`is_canonical`)."""
    return all(is_canonical(part) for part in name.split("/"))


def topic_folder(name: str) -> str:
    """The folder of topic ``name`` under topics/ (``work`` for ``work/harbor``; '' at the top)."""
    return name.rpartition("/")[0]


def topic_leaf(name: str) -> str:
    """The last part of topic ``name`` (``harbor`` for ``work/harbor``), as Obsidian's links name it."""
    return name.rpartition("/")[2]


def slugify(text: str, max_len: int = MAX_NAME) -> str:
    """Make any text a safe topic name (``"Home Lab!"`` -> ``home-lab``; a Cyrillic or Greek
    look-alike of a Latin letter is that letter: an LLM's ``сooking`` is ``cooking``); may return ''."""
    text = unicodedata.normalize("NFKD", text.translate(_AS_LATIN)).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    slug = slug[:max_len].rstrip("-")
    if slug in _RESERVED:
        slug = f"{slug}-topic"
    return slug


_CANONICAL = lazy(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def is_canonical(stem: str) -> bool:
    """Whether ``stem`` is its own canonical topic name (:func:`check_topic_name` gives it back),
    checked without the full rules: a listing of 20,000 files compares names with it."""
    return len(stem) <= MAX_NAME and stem not in _RESERVED and _CANONICAL.fullmatch(stem) is not None


def check_topic_name(name: str) -> str:
    """Validate a topic name a person typed, returning its canonical form.

    Case and spaces are forgiven (``"Home Lab"`` -> ``home-lab``); a topic in a folder is named
    by its path under topics/, its parts joined by ``/`` (``Work/Harbor`` -> ``work/harbor``);
    ``\\``, ``..``, a part that starts with a dot, reserved device names (``CON``), empty and
    over-long names are refused.

    :raises TopicNameError: with a message that says what is allowed.
    """
    raw = topic_stem(name)
    if "/" in raw:
        parts = raw.split("/")
        if any(not p.strip() or p.strip().startswith(".") for p in parts) or len(parts) > MAX_DEPTH:
            raise TopicNameError(f"invalid topic name {name!r}: a topic in a folder is folder/name under topics/ "
                                 f"(no leading '/', no '..', at most {MAX_DEPTH} parts)")
        return "/".join(check_topic_name(p.strip()) for p in parts)
    if not raw:
        raise TopicNameError("topic name is empty")
    if "\\" in raw or ".." in raw or raw.startswith(".") or "\x00" in raw:
        raise TopicNameError(
            f"invalid topic name {name!r}: use lowercase words joined by '-' (no '/', '\\' or '..')"
        )
    if len(raw) > MAX_NAME:
        raise TopicNameError(f"topic name is {len(raw)} characters long; the limit is {MAX_NAME}")
    if raw.lower() in _RESERVED:
        raise TopicNameError(f"invalid topic name {name!r}: it is a reserved device name on Windows")
    _refuse_foreign_letters(name, raw)
    slug = slugify(raw)
    if not slug:
        raise TopicNameError(f"invalid topic name {name!r}: use letters, digits and '-'")
    return slug


#: Cyrillic and Greek letters that look like a Latin one (what a topic name typed with them would
#: be mistaken for)
_LOOKALIKES = dict(zip(
    "аеорсухіјѕԁԛԝһӏкАВЕКМНОРСТХУІЈЅοαεικνρτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdqwhlkABEKMHOPCTXYIJSoaeikvptuxABEZHIKMNOPTYX"))
_AS_LATIN = str.maketrans(_LOOKALIKES)


def _refuse_foreign_letters(name: str, raw: str) -> None:
    """Refuse a letter or digit that has no Latin form (accents are forgiven: ``é`` is ``e``).
    Silently dropping it made ``сooking`` (a Cyrillic ``с``) the topic ``ooking``, and a file of
    that name would stand beside ``cooking`` looking the same.

    :raises TopicNameError: naming the character (and the Latin letter it looks like)."""
    for ch in raw:
        if ch.isascii() or unicodedata.category(ch)[0] not in "LN":
            continue
        if unicodedata.normalize("NFKD", ch).encode("ascii", "ignore"):
            continue
        what = unicodedata.name(ch, f"U+{ord(ch):04X}")
        like = _LOOKALIKES.get(ch)
        hint = f", which looks like the Latin {like!r} but is not" if like else ", not a Latin letter"
        raise TopicNameError(f"invalid topic name {name!r}: {ch!r} is {what}{hint}; use Latin letters, "
                             f"digits and '-'")


def session_file_name(session: str, key: str, suffix: str) -> str:
    """A file name for session ``session``: ``<slug>-<hash>SUFFIX``. The slug keeps it readable
    (``session`` when the id has no letter or digit), the hash of ``key`` keeps distinct ids
    apart (and the same id on the same file); neither can hold a path separator or start with a
    dot, so the file never leaves its folder.

    :param session: the id the name is read from.
    :param key: what the hash is computed from (usually the id itself).
    :param suffix: the extension, with its dot (``.json``).
    """
    digest = hashlib.sha256(key.encode("utf-8", errors="surrogatepass")).hexdigest()[:12]
    return f"{slugify(session, max_len=40) or 'session'}-{digest}{suffix}"
