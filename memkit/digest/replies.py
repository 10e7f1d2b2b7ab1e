"""The LLM of a digest, with the answers a dry run got kept for the real digest after it
(``.memkit/digest-cache/SHA.json``): ``digest --dry-run`` then ``digest`` pays the LLM once."""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging

from ..base.fsutil import atomic_write
from ..llm import LLM
from ..store import Store

log = logging.getLogger("memkit")

__all__ = ["CACHE_DIR", "Replies"]

CACHE_DIR = "digest-cache"  #: under .memkit/: a dry run's LLM answers, until the real digest (:class:`Replies`)


class Replies:
    """The LLM, with the answers a dry run got kept for the real digest of the same transcript by
    the same model (``.memkit/digest-cache/SHA.json``): ``digest --dry-run`` then ``digest`` pays
    the LLM once. An answer is found by the request it answered (the prompt holds the day, the
    topics and the entries shown), so a vault that changed in between is asked again. The answers
    are kept with their secrets redacted (docs/privacy.md); the real digest removes the file."""

    def __init__(self, store: Store, sha: str, llm: LLM) -> None:
        self.llm = llm
        self.path = store.state_dir / CACHE_DIR / f"{sha}.json"
        self.redact = store.config.redact.apply
        settings = getattr(llm, "settings", None)
        self.model = " ".join([type(llm).__name__] + [str(getattr(settings, a, None) or "")
                                                      for a in ("base_url", "model", "command")])
        self.replies: dict[str, str] = {}
        self.fresh: dict[str, str] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("model") == self.model and isinstance(data.get("replies"), dict):
                self.replies = {str(k): v for k, v in data["replies"].items() if isinstance(v, str)}
        except (OSError, ValueError):
            pass

    def chat(self, messages: list[dict[str, str]]) -> str:
        key = hashlib.sha256(json.dumps([self.model, messages], ensure_ascii=False, sort_keys=True)
                             .encode("utf-8", errors="surrogatepass")).hexdigest()
        if key in self.replies:
            return self.replies[key]
        reply = self.llm.chat(messages)
        self.fresh[key] = reply
        return reply

    def keep(self) -> None:
        """A dry run, or a digest that stopped to ask (TooManySupersedes): keep the answers for the
        digest after it."""
        if not self.fresh:
            return
        replies = {**self.replies, **{k: self.redact(v).text for k, v in self.fresh.items()}}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps({"model": self.model, "replies": replies}, ensure_ascii=False))
        except OSError as exc:
            log.warning("could not keep the dry run's answers (%s): the digest asks the LLM again", exc)

    def drop(self) -> None:
        """The real digest is done: its dry run's answers are no longer needed."""
        with contextlib.suppress(OSError):
            self.path.unlink()
