"""The module paths of memkit 0.1's flat layout, kept for one release as deprecated aliases.

memkit's modules moved into packages (``memkit.topic`` is now ``memkit.formats.topic``). Importing an
old path still works, with a :class:`DeprecationWarning` naming the new one; the alias is a module of
its own holding the new module's names. The old paths that are now packages (``memkit.search``,
``memkit.digest``, ``memkit.config``…) need no alias: each package's face exports the names people
used from the old module.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Optional, Sequence

#: old module (under memkit.) -> its new home
MOVED = {
    "topic": "formats.topic",
    "session_format": "formats.session",
    "archive": "formats.archive",
    "transcript": "formats.transcript",
    "names": "formats.names",
    "text": "formats.words",
    "recent": "formats.recent",
    "lifecycle": "formats.lifecycle",
    "safeyaml": "formats.safeyaml",
    "limits": "base.limits",
    "deadline": "base.deadline",
    "fsutil": "base.fsutil",
    "blas": "base.blas",
    "similarity": "base.similarity",
    "layout": "store.layout",
    "inbox": "store.inbox",
    "recent_file": "store.recent_file",
    "newvault": "store.newvault",
    "recovery": "store.recovery",
    "seen": "store.seen",
    "embed": "embeddings.static",
    "http_embed": "embeddings.remote",
    "judge": "embeddings.judge",
    "sidecar": "index.sidecar",
    "sources": "index.sources",
    "embedqueue": "index.queue",
    "matrix": "index.matrix",
    "view": "index.view",
    "judge_index": "index.judge_vectors",
    "rank": "search.rank",
    "lexical": "search.lexical",
    "judge_rank": "search.judge_rank",
    "route": "search.route",
    "split_parts": "split.parts",
    "split_naming": "split.naming",
    "split_cluster": "split.cluster",
    "digest_extract": "digest.extract",
    "capture": "digest.captured",
    "session_window": "sessions.budget",
    "session_io": "sessions.io",
    "session_search": "sessions.search",
    "session_aging": "sessions.aging",
    "session_digest": "sessions.live_digest",
    "check": "upkeep.check",
    "schedule": "upkeep.schedule",
    "gitsync": "git.sync",
    "session_merge": "git.session_merge",
    "proactive": "context.nudge",
    "cli": "frontends.cli.group",
    "cli_common": "frontends.cli.common",
    "cli_jobs": "frontends.cli.jobs",
    "cli_memories": "frontends.cli.memories",
    "cli_search": "frontends.cli.search",
    "cli_serve": "frontends.cli.serve",
    "cli_session": "frontends.cli.session",
    "cli_vault": "frontends.cli.vault",
    "http_api": "frontends.http.api",
    "http_routes": "frontends.http.routes",
    "http_conn": "frontends.http.conn",
    "http_spec": "frontends.http.spec",
    "mcp_server": "frontends.mcp.server",
    "mcp_tools": "frontends.mcp.tools",
    "watch": "frontends.watch",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return None  # the default: a fresh module, filled below

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(f"{module.__name__} moved to {self.new}; the old path goes in memkit's next release",
                      DeprecationWarning, stacklevel=2)
        target = importlib.import_module(self.new)
        module.__dict__.update({k: v for k, v in vars(target).items() if not k.startswith("__")})


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None
                  ) -> Optional[importlib.machinery.ModuleSpec]:
        old = fullname.partition("memkit.")[2] if fullname.startswith("memkit.") else ""
        if old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias("memkit." + MOVED[old]))


def install() -> None:
    """Let the old paths import (once per process)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())
