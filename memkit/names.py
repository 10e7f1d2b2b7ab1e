"""Topic names: lowercase words joined by '-', safe on every OS, never able to leave topics/."""
from __future__ import annotations

import re
import unicodedata

from .errors import TopicNameError

MAX_NAME = 64
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def is_topic_filename(filename: str) -> bool:
    """Whether a file name in topics/ names a topic: ``NAME.md``, not hidden (editors' swap and
    temp files, and memkit's own ``.NAME.md.XXXX.tmp``, start with a dot)."""
    return filename.endswith(".md") and len(filename) > 3 and not filename.startswith(".")


def slugify(text: str, max_len: int = MAX_NAME) -> str:
    """Make any text a safe topic name (``"Home Lab!"`` -> ``home-lab``); may return ''."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    slug = slug[:max_len].rstrip("-")
    if slug in _RESERVED:
        slug = f"{slug}-topic"
    return slug


def check_topic_name(name: str) -> str:
    """Validate a topic name a person typed, returning its canonical form.

    Case and spaces are forgiven (``"Home Lab"`` -> ``home-lab``); path separators, ``..``,
    reserved device names (``CON``), empty and over-long names are refused.

    :raises TopicNameError: with a message that says what is allowed.
    """
    raw = name.strip()
    if raw.endswith(".md"):
        raw = raw[:-3]
    if not raw:
        raise TopicNameError("topic name is empty")
    if "/" in raw or "\\" in raw or ".." in raw or raw.startswith(".") or "\x00" in raw:
        raise TopicNameError(
            f"invalid topic name {name!r}: use lowercase words joined by '-' (no '/', '\\' or '..')"
        )
    if len(raw) > MAX_NAME:
        raise TopicNameError(f"topic name is {len(raw)} characters long; the limit is {MAX_NAME}")
    if raw.lower() in _RESERVED:
        raise TopicNameError(f"invalid topic name {name!r}: it is a reserved device name on Windows")
    slug = slugify(raw)
    if not slug:
        raise TopicNameError(f"invalid topic name {name!r}: use letters, digits and '-'")
    return slug
