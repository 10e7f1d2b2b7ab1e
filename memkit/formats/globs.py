"""The ``include``/``exclude`` globs of memkit.yaml: which files under topics/ are topics.

A glob is matched against a file's path under topics/, ``/``-separated (``work/harbor.md``), as
``.gitignore`` and Obsidian's excluded files read them:

- ``*`` matches within one part of the path, ``?`` one character, ``[abc]`` one of them;
- ``**`` matches any number of folders (``**/*.md``, ``archive/**``);
- a glob without a ``/`` matches a file or folder of that name at any depth (``attachments``);
- a glob ending in ``/`` matches a folder and everything in it (``.trash/``).

A file is a topic when it ends in ``.md``, matches an ``include`` glob and no ``exclude`` glob, and
no part of its path is hidden (starts with a dot: ``.obsidian/``, ``.git/``, editors' temp files),
whatever the globs say.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

__all__ = ["compile_glob", "Globs", "DEFAULT_INCLUDE", "DEFAULT_EXCLUDE"]

DEFAULT_INCLUDE = ("**/*.md",)
DEFAULT_EXCLUDE = (".obsidian/", ".trash/", "attachments/", "_attachments/")


@lru_cache(maxsize=256)
def compile_glob(glob: str) -> re.Pattern[str]:
    """The regular expression of one glob (see the module docstring); matches a whole path.

    A folder glob (``name/``) matches the folder's own path and everything under it."""
    folder = glob.endswith("/")
    body = glob.strip("/")
    if "/" not in body and not body.startswith("**"):
        body = "**/" + body
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if body.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
            continue
        if body.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = body.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                inner = body[i + 1:end]
                out.append("[" + ("^" + re.escape(inner[1:]) if inner.startswith("!") else re.escape(inner)) + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    pattern = "".join(out)
    if folder or not pattern.endswith(".*"):
        pattern += "(?:/.*)?"  # a glob naming a folder takes everything in it
    return re.compile(pattern, re.DOTALL)


class Globs:
    """What ``include`` and ``exclude`` make of a path under topics/ (see the module docstring)."""

    def __init__(self, include: Sequence[str] = DEFAULT_INCLUDE, exclude: Sequence[str] = DEFAULT_EXCLUDE) -> None:
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self._inc = [compile_glob(g) for g in self.include]
        self._exc = [compile_glob(g) for g in self.exclude]
        self.default_include = self.include == DEFAULT_INCLUDE

    def is_topic(self, rel: str) -> bool:
        """Whether the file at ``rel`` (its path under topics/) is a topic."""
        if not rel.endswith(".md") or len(rel) <= 3:
            return False
        parts = rel.split("/")
        if any(not p or p.startswith(".") for p in parts) or parts[-1] == ".md":
            return False
        if not self.default_include and not any(p.fullmatch(rel) for p in self._inc):
            return False
        return not any(p.fullmatch(rel) for p in self._exc)

    def skips_folder(self, rel: str) -> bool:
        """Whether nothing under the folder at ``rel`` can be a topic (a hidden or excluded folder:
        the scan does not go in)."""
        if any(p.startswith(".") for p in rel.split("/")):
            return True
        return any(p.fullmatch(rel) and p.fullmatch(rel + "/x.md") for p in self._exc)
