"""A package's face: the names its ``__init__.py`` exports, each imported from its module when first used.

memkit's packages are layers (``.importlinter``); outside a package only its face is imported
(``tests/test_layers.py``). The face is lazy, so that importing a package costs nothing until a name
is used: ``memkit search`` never loads the digest's LLM client, although both are in the tree.

    __getattr__, __dir__ = face(__name__, {".captured": "Captured capture", ".digest": "DigestReport"})

A face names no module of its own package: ``from memkit.digest import capture`` must give the
function, not a submodule that happens to be called ``capture``.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def face(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``where`` maps a module (relative to the
    package) to the names it gives the face, space-separated."""
    home = {name: module for module, names in where.items() for name in names.split()}

    def get(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # the next use is an ordinary attribute
        return value

    def names() -> list[str]:
        return sorted(set(home) | set(vars(sys.modules[package])))

    return get, names
