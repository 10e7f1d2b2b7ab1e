"""memkit.yaml: the vault's settings, their defaults and their validation (one validator, ``llm:`` included)."""
from __future__ import annotations

import difflib
import re
import urllib.parse
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError, LLMConfigError, MemkitError
from ..base.fsutil import read_regular
from ..formats.safeyaml import MAX_YAML_BYTES, YamlError, load_yaml

CONFIG_NAME = "memkit.yaml"
DEFAULT_MODEL = "minishlab/potion-base-8M"  #: the embedding model when nothing names one and it is cached
MODEL_ENV = "MEMKIT_MODEL"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def check_keys(given: Mapping[Any, Any], cls: Any, where: str, error: type[ConfigError] = ConfigError) -> None:
    """Every key of a settings mapping is a field of dataclass ``cls``; else ``error`` naming the
    unknown key, the nearest allowed one, and all of them."""
    allowed = sorted(f.name for f in fields(cls))
    for key in given:
        if key not in allowed:
            hint = difflib.get_close_matches(str(key), allowed, n=1)
            did_you_mean = f"did you mean {hint[0]!r}? " if hint else ""
            raise error(f"{where}: unknown key {key!r} ({did_you_mean}allowed: {', '.join(allowed)})")


@dataclass
class LLMSettings:
    """How to reach the LLM: an OpenAI-compatible endpoint or a shell command.

    :param base_url: endpoint root, e.g. ``http://127.0.0.1:11434/v1``; requests go to
        ``{base_url}/chat/completions``.
    :param model: the model name the server knows.
    :param api_key_env: NAME of an environment variable holding the API key (never the key).
    :param timeout_s: seconds to wait for the server or command.
    :param command: shell command reading the prompt on stdin, printing the answer on stdout.
    :param temperature: sampling temperature sent to the server.
    :param json_mode: ask the server for a JSON object (``response_format``); dropped
        automatically if the server rejects it.
    """

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 60.0
    command: str | None = None
    temperature: float = 0.0
    json_mode: bool = True

    @classmethod
    def from_config(cls, llm: Mapping[str, Any] | None) -> LLMSettings | None:
        """Build settings from the ``llm:`` mapping of memkit.yaml.

        :param llm: the mapping; empty (or ``None``) means no LLM is configured.
        :returns: the settings, or ``None`` when nothing is configured.
        :raises LLMConfigError: on an unknown key, a value of the wrong type, or an incomplete setup.
        """
        if llm is None:
            return None
        if not isinstance(llm, Mapping):
            raise LLMConfigError(
                f"llm must be a mapping (base_url/model/api_key_env or command), "
                f"not {type(llm).__name__}"
            )
        if not llm:
            return None
        check_keys(llm, cls, "llm", LLMConfigError)
        values: dict[str, Any] = {}
        for key in ("base_url", "model", "api_key_env", "command"):
            value = llm.get(key)
            if value is None:
                continue
            if not isinstance(value, str):
                raise LLMConfigError(f"llm.{key} must be a string, not {describe_value(value)}")
            if value.strip():
                values[key] = value.strip()
        for key in ("timeout_s", "temperature"):
            value = llm.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise LLMConfigError(f"llm.{key} must be a number, not {describe_value(value)}")
            values[key] = float(value)
        if "timeout_s" in values and not values["timeout_s"] > 0:
            raise LLMConfigError(
                f"llm.timeout_s must be a number of seconds > 0, not {llm['timeout_s']!r}"
            )
        if "temperature" in values and not values["temperature"] >= 0:
            raise LLMConfigError(f"llm.temperature must be >= 0, not {llm['temperature']!r}")
        json_mode = llm.get("json_mode")
        if json_mode is not None:
            if not isinstance(json_mode, bool):
                raise LLMConfigError(f"llm.json_mode must be true or false, not {describe_value(json_mode)}")
            values["json_mode"] = json_mode

        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        """Raise if these settings cannot work: nothing to call, or an unusable URL or key name.

        :raises LLMConfigError: naming the setting to fix.
        """
        if self.api_key_env is not None and not _ENV_NAME.match(self.api_key_env):
            # Never echo the value: a common mistake is to paste the key itself here.
            raise LLMConfigError(
                "llm.api_key_env must be the NAME of an environment variable holding the key "
                "(letters, digits and _), not the key itself"
            )
        if self.command:
            if self.base_url:
                raise LLMConfigError(
                    "llm: set either llm.command or llm.base_url (with llm.model), not both"
                )
            return
        if not self.base_url:
            raise LLMConfigError(
                "llm: set llm.base_url and llm.model (an OpenAI-compatible server) "
                "or llm.command (a shell command reading the prompt on stdin)"
            )
        check_url(self.base_url)
        if not self.model:
            raise LLMConfigError(
                "llm.model is missing: with llm.base_url set, also set llm.model "
                "(the model name the server knows)"
            )


@dataclass
class EmbedderSettings:
    """An embedding server speaking the OpenAI-compatible ``/v1/embeddings`` (Ollama, llama.cpp,
    vLLM…), used instead of a model2vec model.

    :param base_url: endpoint root, e.g. ``http://127.0.0.1:11434/v1``; requests go to
        ``{base_url}/embeddings``.
    :param model: the model name the server knows.
    :param api_key_env: NAME of an environment variable holding the API key (never the key).
    :param timeout_s: seconds to wait for one request.
    :param batch_size: texts sent per request.
    :param dim: the vectors' dimension, if known (else asked of the server once).
    """

    base_url: str = ""
    model: str = ""
    api_key_env: str | None = None
    timeout_s: float = 30.0
    batch_size: int = 64
    dim: int | None = None

    @classmethod
    def from_config(cls, given: Any, where: str = "embedder") -> EmbedderSettings | None:
        """Settings from the ``embedder:`` mapping (empty or None: no server, the model is used).

        :raises ConfigError: naming the key to fix.
        """
        if given is None or given == {}:
            return None
        if not isinstance(given, Mapping):
            raise ConfigError(f"{where} must be a mapping (base_url, model, api_key_env…), not {type(given).__name__}")
        check_keys(given, cls, where)
        values: dict[str, Any] = {}
        for key, value in given.items():
            if value is None:
                continue
            if key in ("base_url", "model", "api_key_env"):
                if not isinstance(value, str) or not value.strip():
                    raise ConfigError(f"{where}.{key} must be a non-empty string, not {describe_value(value)}")
                values[key] = value.strip()
            elif key == "timeout_s":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                    raise ConfigError(f"{where}.timeout_s must be a number of seconds > 0, not {value!r}")
                values[key] = float(value)
            else:  # batch_size, dim
                if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 65536:
                    raise ConfigError(f"{where}.{key} must be a whole number between 1 and 65536, not {value!r}")
                values[key] = value
        for key in ("base_url", "model"):
            if key not in values:
                raise ConfigError(f"{where}.{key} is missing: an embedding server needs base_url and model")
        parts = urllib.parse.urlsplit(values["base_url"])
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"{where}.base_url must be an http:// or https:// URL, e.g. "
                              f"http://127.0.0.1:11434/v1, not {values['base_url']!r}")
        if "api_key_env" in values and not _ENV_NAME.match(values["api_key_env"]):
            raise ConfigError(f"{where}.api_key_env must be the NAME of an environment variable holding the key "
                              "(letters, digits and _), not the key itself")
        return cls(**values)


@dataclass
class ServeSettings:
    """``memkit serve``'s defaults (its options win over them).

    :param host: the address to bind; any but a loopback one needs a token.
    :param port: the TCP port.
    :param token_env: NAME of an environment variable holding the bearer token (never the token:
        memkit.yaml is tracked in git).
    """

    host: str = "127.0.0.1"
    port: int = 8765
    token_env: str | None = None
    #: a connection must send its request's header within this many seconds (idle ones are closed)
    header_timeout_s: float = 10.0
    #: and, once the header is in, its whole body within this many
    body_timeout_s: float = 60.0
    #: connections open at once; one more gets a 503 and is closed
    max_connections: int = 64

    @classmethod
    def from_config(cls, given: Any, where: str = "serve") -> ServeSettings:
        """Settings from the ``serve:`` mapping (empty or None: the defaults).

        :raises ConfigError: naming the key to fix.
        """
        if given is None:
            return cls()
        if not isinstance(given, Mapping):
            raise ConfigError(f"{where} must be a mapping (host, port, token_env, header_timeout_s, body_timeout_s, "
                              f"max_connections), not {type(given).__name__}")
        check_keys(given, cls, where)
        values: dict[str, Any] = {}
        for key, value in given.items():
            if value is None:
                continue
            if key == "port":
                if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
                    raise ConfigError(f"{where}.port must be a port number (0 to 65535), not {value!r}")
            elif key in ("header_timeout_s", "body_timeout_s"):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
                    raise ConfigError(f"{where}.{key} must be a number of seconds (over 0, at most 86400), "
                                      f"not {value!r}")
                value = float(value)
            elif key == "max_connections":
                if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100_000:
                    raise ConfigError(f"{where}.max_connections must be a whole number from 1 to 100000, "
                                      f"not {value!r}")
            elif not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}.{key} must be a non-empty string, not {describe_value(value)}")
            elif key == "token_env" and not _ENV_NAME.match(value.strip()):
                raise ConfigError(f"{where}.token_env must be the NAME of an environment variable holding the "
                                  "token (letters, digits and _), not the token itself")
            values[key] = value.strip() if isinstance(value, str) else value
        return cls(**values)


# The file `memkit init` writes: every key with its default, commented so a person can tune it.
DEFAULT_CONFIG_TEXT = """\
# memkit settings. Every key is optional; the values below are the defaults.

# Minutes without new lines before an inbox/ transcript is digested by `memkit watch`.
session_timeout_minutes: 7

# A topic with more entry lines than this is split into subtopics.
topic_split_threshold_lines: 50

# Conclusions that match no topic start a new topic only when there are at least this many.
min_conclusions_for_new_topic: 3

# Minimum cosine similarity for a memory to count as relevant. The right value depends on the
# model: "auto" uses the value calibrated for it (see "Choosing the threshold" in the README).
embedding_similarity_threshold: auto

# How many memories a search or a context returns by default.
max_memories_per_search: 5

# The second search stage: a small transformer (memkit's judge, memkit/embeddings/models/memkit-judge) re-scores
# the best candidates the static model and words found, and decides which are confident. false:
# the static stage alone (faster, weaker on questions worded unlike their answer; `search --fast`
# does this for one search). judge_threshold: the judge's cosine a confident hit reaches ("auto":
# its calibrated value).
judge: true
judge_threshold: auto

# Lines kept in index.txt (recent topics, newest first).
index_max_entries: 20

# The embedding model: a model2vec model id (fetched once into the Hugging Face cache) or a local
# folder. Unset (the default): minishlab/potion-base-8M when it is cached, else memkit's own
# built-in model (shipped with memkit, no download).
# model: minishlab/potion-base-8M

# An embedding server instead of a model (Ollama, llama.cpp, vLLM: OpenAI-compatible /v1/embeddings):
#   embedder: {base_url: "http://127.0.0.1:11434/v1", model: "nomic-embed-text"}
embedder: {}

# How long entries of a kind stay (1d, 2w, 6m, 1y or never); other kinds never expire. An entry
# may also carry its own end: "(until 2026-12-31)". Expired entries leave search and context at
# once; `memkit tidy` (and the watcher, daily) moves them to archive.md. A follow-up ([pending])
# due later than its lifetime stays until its due day.
expire:
  context: 1d
  conversation: 30d
  pending: 7d

# The most entries `memkit distill` keeps in the pinned profile (topics/profile.md).
profile_max_entries: 20

# `memkit upkeep` (and `memkit watch`, daily from upkeep_hour) re-distils the pinned profile after
# this many new conclusions (0: never); distill_apply: true writes it at once, false leaves it as a
# proposal (`memkit distill --proposed` shows and applies it).
distill_after: 0
distill_apply: false
upkeep_hour: 4

# How a long conversation session is fitted to a token budget (`memkit session load`): simple
# (the newest messages that fit), summary (older ones condensed by the LLM, cached in the session
# file) or hybrid (system and important messages kept verbatim, routine ones condensed, at most
# session_keep_recent newest verbatim). Without an LLM, summary and hybrid fall back to windowing.
session_strategy: simple
session_keep_recent: 6

# Conversations that age (`memkit upkeep`, with an LLM): a session idle this many days becomes a
# summary with key points and emotional highlights, then a core memory of 100-200 characters
# (0: never). The raw conversation is kept in sessions/archive/raw/. A session that never goes
# idle is digested into memories every digest_every_messages new messages (0: never).
session_summary_days: 3
session_core_days: 7
digest_every_messages: 0

# `memkit proactive`: never a follow-up during these hours ("22:00-07:30"; empty: none), nor
# within this many hours of the last conversation.
quiet_hours: ""
proactive_gap_hours: 4

# `memkit serve` (the HTTP API): its address and port. Any address but a loopback one needs a token,
# read from the environment variable token_env names (never the token itself: this file is in git).
#   serve: {host: 127.0.0.1, port: 8765, token_env: MEMKIT_SERVE_TOKEN}
# A client must send a request's header within header_timeout_s (idle connections are closed after
# it too) and its body within body_timeout_s; at most max_connections are open at once.
#   serve: {header_timeout_s: 10, body_timeout_s: 60, max_connections: 64}

# LLM for digest and split naming; empty = none. Examples:
#   llm: {base_url: "http://127.0.0.1:11434/v1", model: "llama3.2"}          # Ollama
#   llm: {base_url: "https://api.openai.com/v1", model: "gpt-4o-mini", api_key_env: OPENAI_API_KEY}
#   llm: {command: "llm -m mistral"}                                            # any shell command
llm: {}
"""


@dataclass
class Config:
    """The settings of one vault (every key is documented in the README's "Configuration")."""

    session_timeout_minutes: float = 7
    topic_split_threshold_lines: int = 50
    min_conclusions_for_new_topic: int = 3
    embedding_similarity_threshold: float | str = "auto"  #: a cosine, or "auto" (calibrated per model)
    max_memories_per_search: int = 5
    judge: bool = True  #: the second search stage (memkit.embeddings.judge) re-scores the best candidates
    judge_threshold: float | str = "auto"  #: the judge's cosine a confident hit reaches, or "auto"
    index_max_entries: int = 20
    model: str | None = None  #: None: potion-base-8M when cached, else the built-in model
    llm: LLMSettings | None = None  #: None: no LLM configured
    embedder: EmbedderSettings | None = None  #: None: the model embeds
    #: kind -> lifetime in days (None: never expires); memkit.yaml's ``expire:`` is merged over the defaults
    expire: dict[str, int | None] = field(default_factory=lambda: dict(DEFAULT_EXPIRE))
    profile_max_entries: int = 20  #: the most entries `memkit distill` keeps in the pinned profile
    distill_after: int = 0  #: `memkit upkeep` re-distils the profile after this many new conclusions (0: never)
    distill_apply: bool = False  #: apply that rewrite at once (else it waits as a proposal for review)
    upkeep_hour: int = 4  #: `memkit watch` runs `memkit upkeep` once a day, from this hour (0-23)
    session_strategy: str = "simple"  #: simple, summary or hybrid (see memkit.sessions.budget)
    session_keep_recent: int = 6  #: hybrid: the most newest messages kept verbatim
    session_summary_days: int = 3  #: an idle session becomes a summary after this many days (0: never)
    session_core_days: int = 7  #: … and a core memory after this many (0: never)
    digest_every_messages: int = 0  #: digest a session every this many new messages (0: never)
    quiet_hours: str = ""  #: "22:00-07:30": when `memkit proactive` never says now ("": none)
    proactive_gap_hours: float = 4  #: a follow-up waits this long after the last conversation
    serve: ServeSettings = field(default_factory=ServeSettings)  #: `memkit serve`'s host, port, token variable


_TYPES: dict[str, tuple[type, ...]] = {
    "session_timeout_minutes": (int, float),
    "topic_split_threshold_lines": (int,),
    "min_conclusions_for_new_topic": (int,),
    "embedding_similarity_threshold": (int, float, str),
    "max_memories_per_search": (int,),
    "judge": (bool,),
    "judge_threshold": (int, float, str),
    "index_max_entries": (int,),
    "model": (str,),
    "profile_max_entries": (int,),
    "session_strategy": (str,),
    "session_keep_recent": (int,),
    "session_summary_days": (int,),
    "session_core_days": (int,),
    "digest_every_messages": (int,),
    "quiet_hours": (str,),
    "distill_after": (int,),
    "distill_apply": (bool,),
    "upkeep_hour": (int,),
    "proactive_gap_hours": (int, float),
}
DEFAULT_EXPIRE: dict[str, int | None] = {"context": 1, "conversation": 30, "pending": 7}
_LIFETIME = re.compile(r"^(\d{1,5})\s*([dwmy])$")
_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}


def parse_lifetime(value: Any, where: str) -> int | None:
    """``"1d"``, ``"2w"``, ``"6m"``, ``"1y"``, a number of days, or ``never`` -> days (None: never)."""
    if isinstance(value, bool):
        raise ConfigError(f"{where} must be like 1d, 2w, 6m, 1y or never, got {value!r}")
    if isinstance(value, int) and value >= 0:
        return value
    text = str(value).strip().lower()
    if text in ("never", "none", "forever", ""):
        return None
    m = _LIFETIME.match(text)
    if not m:
        raise ConfigError(f"{where} must be like 1d, 2w, 6m, 1y or never, got {value!r}")
    return int(m.group(1)) * _DAYS[m.group(2)]


_QUIET = re.compile(r"^\s*([01]?\d|2[0-3]):([0-5]\d)\s*-\s*([01]?\d|2[0-3]):([0-5]\d)\s*$")


def parse_quiet_hours(text: str) -> tuple[int, int] | None:
    """``"22:00-07:30"`` -> (start, end) in minutes after midnight; None when it is not like that."""
    m = _QUIET.match(text)
    if not m:
        return None
    h1, m1, h2, m2 = (int(x) for x in m.groups())
    return h1 * 60 + m1, h2 * 60 + m2


def parse_config(data: Any, source: str = CONFIG_NAME) -> Config:
    """Validate a loaded memkit.yaml mapping and return a :class:`Config`.

    :param data: what YAML loaded (``None`` for an empty file).
    :param source: the file name used in error messages.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings, got {type(data).__name__}")
    known = {f.name for f in fields(Config)}
    values: dict[str, Any] = {}
    for key, given in data.items():
        if key not in known:
            raise ConfigError(
                f"{source}: unknown key {key!r}; allowed keys: {', '.join(sorted(known))}"
            )
        if key == "expire":  # kind -> lifetime, merged over the defaults
            if given is None:
                continue
            if not isinstance(given, dict):
                raise ConfigError(f"{source}: expire must be a mapping of kinds to lifetimes (context: 1d), "
                                  f"got {type(given).__name__}")
            merged = dict(DEFAULT_EXPIRE)
            for kind, life in given.items():
                if not isinstance(kind, str) or not re.fullmatch(r"[^\W\d_][\w-]{0,39}", kind):
                    raise ConfigError(f"{source}: expire: {kind!r} is not a kind (one word)")
                merged[kind.lower()] = parse_lifetime(life, f"{source}: expire.{kind}")
            values[key] = merged
            continue
        if key == "embedder":
            values[key] = EmbedderSettings.from_config(given, f"{source}: embedder")
            continue
        if key == "serve":
            values[key] = ServeSettings.from_config(given, f"{source}: serve")
            continue
        if key == "llm":  # LLMSettings.from_config checks the whole section, its type included
            try:
                values[key] = LLMSettings.from_config(given)
            except LLMConfigError as exc:
                raise LLMConfigError(f"{source}: {exc}") from None
            continue
        types = _TYPES[key]
        if (isinstance(given, bool) and bool not in types) or not isinstance(given, types):
            want = " or ".join(t.__name__ for t in types)
            raise ConfigError(f"{source}: {key} must be {want}, got {given!r}")
        value: Any = given
        if key in ("topic_split_threshold_lines", "max_memories_per_search", "index_max_entries",
                   "min_conclusions_for_new_topic", "profile_max_entries", "session_keep_recent") and value < 1:
            raise ConfigError(f"{source}: {key} must be at least 1, got {value}")
        if key == "quiet_hours" and value.strip() and parse_quiet_hours(value) is None:
            raise ConfigError(f"{source}: {key} must be like \"22:00-07:30\" (or empty), got {value!r}")
        if key in ("session_timeout_minutes", "proactive_gap_hours", "distill_after", "session_summary_days",
                   "session_core_days", "digest_every_messages") and value < 0:
            raise ConfigError(f"{source}: {key} must be 0 or more, got {value}")
        if key == "upkeep_hour" and not 0 <= value <= 23:
            raise ConfigError(f"{source}: {key} must be an hour from 0 to 23, got {value}")
        if key == "session_strategy":
            value = value.strip().lower()
            if value not in ("simple", "summary", "hybrid"):
                raise ConfigError(f"{source}: {key} must be simple, summary or hybrid, got {given!r}")
        if key in ("embedding_similarity_threshold", "judge_threshold"):
            if isinstance(value, str) and value.strip().lower() != "auto":
                raise ConfigError(f"{source}: {key} must be a number between -1 and 1 or 'auto', got {value!r}")
            if not isinstance(value, str) and not -1.0 <= value <= 1.0:
                raise ConfigError(f"{source}: {key} must be between -1 and 1, got {value}")
        values[key] = value
    return Config(**values)


def load_config(root: Path) -> Config:
    """Read ``root/memkit.yaml``; a missing file means all defaults.

    :param root: the vault folder.
    """
    path = root / CONFIG_NAME
    try:
        raw, _ = read_regular(path, MAX_YAML_BYTES)
        text = raw.decode("utf-8-sig")
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError, MemkitError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    try:
        data = load_yaml(text)
    except YamlError as exc:
        line = f" line {exc.line}" if exc.line else ""
        raise ConfigError(f"{path}{line}: not valid YAML: {exc.problem}") from None
    return parse_config(data, str(path))


def resolve_model(explicit: str | None, config: Config, env: Mapping[str, str]) -> str | None:
    """The embedding model to use: ``explicit`` (``--model``), then ``MEMKIT_MODEL``, then memkit.yaml
    (None: none named, the default applies).

    :param explicit: a model given by the caller, or None.
    :param config: the vault's settings.
    :param env: the environment to read ``MEMKIT_MODEL`` from (the caller passes it: see :class:`memkit.Vault`).
    """
    return explicit or env.get(MODEL_ENV) or config.model


def describe_value(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def check_url(url: str) -> None:
    """Raise :class:`LLMConfigError` unless ``url`` is an http(s) URL with a host."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise LLMConfigError(
            f"llm.base_url must be an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1, "
            f"not {url!r}"
        )
