"""Every setting of memkit.yaml, declared once: its name (the field), type, default, kind (what it
takes) and help. The defaults, the checks (:mod:`memkit.config.validate`), the commented memkit.yaml
that ``memkit init`` writes and docs/configuration.md (:mod:`memkit.config.render`) all come from here.

To add a setting: add a field with :func:`setting` to :class:`Config` (or to a section's class),
then regenerate the docs: ``python -m memkit.config.docs > docs/configuration.md``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping

from ..base.limits import SESSION_STRATEGIES
from ..errors import ConfigError, LLMConfigError
from ..formats.globs import DEFAULT_EXCLUDE, DEFAULT_INCLUDE
from ..formats.redact import DEFAULT_RULES, Redacted, Rule, compile_rules, redact
from .kinds import (
    ENV_NAME,
    Choice,
    Cosine,
    EnvName,
    Flag,
    FlagOrAuto,
    Folder,
    GlobList,
    Lifetimes,
    Number,
    QuietHours,
    Regexes,
    Text,
    Url,
    Whole,
    Words,
    is_http_url,
)
from .validate import Section, Setting, flat, section, setting

DEFAULT_EXPIRE: dict[str, int | None] = {"context": 1, "conversation": 30, "pending": 7}
_KEY_HELP = "NAME of an environment variable holding the API key (never the key: memkit.yaml is tracked in git)."


@dataclass
class LLMSettings:
    """How to reach the LLM (``llm:``): an OpenAI-compatible endpoint or a shell command."""

    base_url: str | None = setting(
        None, Url(), "Endpoint root (most servers want the /v1); requests go to {base_url}/chat/completions.",
        example="http://127.0.0.1:11434/v1")
    model: str | None = setting(None, Text(), "The model name the server knows (needed with base_url).",
                                example="llama3.2")
    api_key_env: str | None = setting(None, EnvName("key"), _KEY_HELP, example="OPENAI_API_KEY")
    timeout_s: float = setting(60.0, Number(over=0, unit="seconds"), "Seconds to wait for the server or the command.")
    command: str | None = setting(
        None, Text(), "Instead of a server: a shell command reading the prompt on stdin and printing the "
        "answer on stdout.", example="llm -m mistral")
    temperature: float = setting(0.0, Number(least=0), "The sampling temperature sent to the server.")
    json_mode: bool = setting(
        True, Flag(), "Ask the server for a JSON object (response_format); dropped automatically if the server "
        "refuses it. The prompts that want plain text are sent without it.")

    @classmethod
    def from_config(cls, llm: Mapping[str, Any] | None, source: str = "") -> LLMSettings | None:
        """Settings from the ``llm:`` mapping of memkit.yaml; empty (or None): no LLM, None.

        :raises LLMConfigError: on an unknown key, a value of the wrong type, or an incomplete setup.
        """
        return section(Section(cls, optional=True, error=LLMConfigError), llm, source, "llm")

    def check(self) -> None:
        """Raise if these settings cannot work: nothing to call, or an unusable URL or key name.

        :raises LLMConfigError: naming the setting to fix.
        """
        if self.api_key_env is not None and not ENV_NAME.match(self.api_key_env):
            # Never echo the value: a common mistake is to paste the key itself here.
            raise LLMConfigError(
                "llm.api_key_env must be the NAME of an environment variable holding the key "
                "(letters, digits and _), not the key itself"
            )
        if self.command:
            if self.base_url:
                raise LLMConfigError("llm: set either llm.command or llm.base_url (with llm.model), not both")
            return
        if not self.base_url:
            raise LLMConfigError(
                "llm: set llm.base_url and llm.model (an OpenAI-compatible server) "
                "or llm.command (a shell command reading the prompt on stdin)"
            )
        check_url(self.base_url)
        if not self.model:
            raise LLMConfigError(
                "llm.model is missing: with llm.base_url set, also set llm.model (the model name the server knows)"
            )


def check_url(url: str) -> None:
    """Raise :class:`LLMConfigError` unless ``url`` is an http(s) URL with a host."""
    if not is_http_url(url):
        raise LLMConfigError(f"llm.base_url must be {Url.expected}, not {url!r}")


@dataclass
class EmbedderSettings:
    """An embedding server speaking the OpenAI-compatible ``/v1/embeddings`` (Ollama, llama.cpp,
    vLLM…), used instead of a model2vec model (``embedder:``)."""

    base_url: str = setting("", Url(), "Endpoint root; requests go to {base_url}/embeddings.",
                            example="http://127.0.0.1:11434/v1")
    model: str = setting("", Text(required=True), "The model name the server knows.", example="nomic-embed-text")
    api_key_env: str | None = setting(None, EnvName("key"), _KEY_HELP, example="EMBED_API_KEY")
    timeout_s: float = setting(30.0, Number(over=0, unit="seconds"), "Seconds to wait for one request.")
    batch_size: int = setting(64, Whole(1, 65536), "Texts sent per request.")
    dim: int | None = setting(None, Whole(1, 65536), "The vectors' dimension, if known (else the server is asked "
                              "once).", example=768)

    @classmethod
    def from_config(cls, given: Any, source: str = "") -> EmbedderSettings | None:
        """Settings from the ``embedder:`` mapping (empty or None: no server, the model is used).

        :raises ConfigError: naming the key to fix.
        """
        return section(Section(cls, optional=True), given, source, "embedder")

    def check(self) -> None:
        for key in ("base_url", "model"):
            if not getattr(self, key):
                raise ConfigError(f"embedder.{key} is missing: an embedding server needs base_url and model")


@dataclass
class ServeSettings:
    """``memkit serve``'s defaults (``serve:``; its options win over them)."""

    host: str = setting("127.0.0.1", Text(required=True), "The address to bind; any but a loopback one needs a token.")
    port: int = setting(8765, Whole(0, 65535, what="a port number"), "The TCP port.")
    token_env: str | None = setting(
        None, EnvName("token"), "NAME of an environment variable holding the bearer token (never the token: "
        "memkit.yaml is tracked in git).", example="MEMKIT_SERVE_TOKEN")
    header_timeout_s: float = setting(
        10.0, Number(over=0, most=86400, unit="seconds"), "A client must send a request's header within this many "
        "seconds (idle connections are closed after it too).")
    body_timeout_s: float = setting(60.0, Number(over=0, most=86400, unit="seconds"),
                                    "… and, once the header is in, its whole body within this many.")
    max_connections: int = setting(64, Whole(1, 100_000), "Connections open at once; one more gets a 503 and is closed.")

    @classmethod
    def from_config(cls, given: Any, source: str = "") -> ServeSettings:
        """Settings from the ``serve:`` mapping (empty or None: the defaults).

        :raises ConfigError: naming the key to fix.
        """
        return section(Section(cls, optional=False), given, source, "serve")


@dataclass
class RedactSettings:
    """What is never stored (``redact:``): secrets replaced by ``[redacted]`` before memkit writes a
    text (an add, an edit, a digest's conclusions, a session message, a captured transcript)."""

    defaults: list[str] = setting(
        list(DEFAULT_RULES), Words(*DEFAULT_RULES),
        "The built-in rules in use: api-key (sk-…, AKIA…, ghp_…, xoxb-…, AIza…, hf_…, Bearer tokens), password "
        "(what follows \"password is\", \"password:\", \"pin is\"…), card (card numbers passing the Luhn check), "
        "iban (IBANs whose check digits are right); [] for none.")
    patterns: list[str] = setting(
        [], Regexes(), "Regular expressions of your own (Python syntax, quoted); a match is replaced, or only its "
        "first group when it has one.")

    @classmethod
    def from_config(cls, given: Any, source: str = "") -> RedactSettings:
        """Settings from the ``redact:`` mapping (empty or None: the defaults)."""
        return section(Section(cls, optional=False), given, source, "redact")

    @cached_property
    def rules(self) -> tuple[Rule, ...]:
        return compile_rules(self.patterns, self.defaults)

    def apply(self, text: str) -> Redacted:
        """``text`` with every secret these rules find replaced by ``[redacted]``, and how many."""
        return redact(text, self.rules)


@dataclass
class Config:
    """The settings of one vault: memkit.yaml, every key optional (docs/configuration.md)."""

    session_timeout_minutes: float = setting(
        7, Number(least=0, unit="minutes"), "Minutes without new lines before `memkit watch` digests an inbox/ "
        "transcript.")
    topic_split_threshold_lines: int = setting(
        50, Whole(1), "A topic with more entry lines than this is split into subtopics.")
    min_conclusions_for_new_topic: int = setting(
        3, Whole(1), "Conclusions that match no topic open a new topic only when there are at least this many "
        "(fewer go to general.md).")
    embedding_similarity_threshold: float | str = setting(
        "auto", Cosine(), "The static model's minimum cosine for a search hit without the judge (`search --fast`, "
        "`judge: false`). The right value depends on the model: auto uses the value calibrated for it.")
    max_memories_per_search: int = setting(
        5, Whole(1), "How many memories a search or a context returns by default (their -k).")
    judge: bool | str = setting(
        True, FlagOrAuto(), "The second search stage: a small transformer (memkit's judge) re-scores the best "
        "candidates the static model and words found, and decides which are confident. false: the static stage "
        "alone (faster, weaker on questions worded unlike their answer; `search --fast` does this for one search). "
        "auto: the judge runs where one query's pass takes at most 40 ms (timed once on each machine, kept in "
        ".memkit/judge/speed.json), else the static stage alone: for a small board.")
    judge_threshold: float | str = setting(
        "auto", Cosine(), "When a judged hit is confident. auto: its calibrated relevance reaches 0.7 and the judge's "
        "cosine 0.40 (or the cosine 0.55, or it holds the query's rare identifier); a number: the judge's cosine alone "
        "from that value.")
    duplicate_similarity: float | str = setting(
        "auto", Cosine(), "The static model's cosine from which a digest takes a conclusion for a near duplicate "
        "of an entry and does not store it. Lower: fewer memories stored twice, but different memories on one "
        "subject may be taken for one another and dropped; higher: the reverse. auto: the value calibrated for "
        "the model (bench/calibrate_duplicates.py).")
    topics_folder: str = setting(
        "topics", Folder(), "The folder the topic files are in, relative to the vault; `.`: the vault's own folder "
        "(a notes folder adopted as it is: `memkit init --existing DIR`). memkit's own files (archive.md, "
        "people.md, inbox/, sessions/) are never topics.")
    include: list[str] = setting(
        list(DEFAULT_INCLUDE), GlobList(), "The files under the topics folder that are topics, as globs of their "
        "path there (`*` within a folder, `**` any folders; docs/folders.md). Only .md files are ever topics.")
    exclude: list[str] = setting(
        list(DEFAULT_EXCLUDE), GlobList(), "Files and folders under the topics folder that are not topics, as "
        "globs (a glob ending in / takes a folder and all in it; one without / a name at any depth). Hidden "
        "files and folders (.obsidian/, .git/) are never topics.")
    index_max_entries: int = setting(20, Whole(1), "Lines kept in index.txt (recent topics, newest first).")
    model: str | None = setting(
        None, Text(), "The embedding model: a model2vec model id (fetched once into the Hugging Face cache) or a "
        "local folder; memkit-m2v names the built-in one. Unset: minishlab/potion-base-8M when it is cached, "
        "else memkit's built-in model (shipped with memkit, no download). --model and MEMKIT_MODEL win over it.",
        example="minishlab/potion-base-8M")
    llm: LLMSettings | None = setting(
        None, Section(LLMSettings, optional=True, error=LLMConfigError),
        "The LLM for digest, split naming, session summaries and follow-ups: an OpenAI-compatible server "
        "(base_url and model) or a shell command (command); empty: none.")
    embedder: EmbedderSettings | None = setting(
        None, Section(EmbedderSettings, optional=True),
        "An embedding server instead of a model: anything speaking the OpenAI-compatible POST /v1/embeddings "
        "(Ollama, llama.cpp, vLLM, LM Studio); empty: none, the model embeds. A named model (--model, "
        "MEMKIT_MODEL, model:) wins over it.")
    expire: dict[str, int | None] = setting(
        DEFAULT_EXPIRE, Lifetimes(DEFAULT_EXPIRE),
        "How long entries of a kind stay (1d, 2w, 6m, 1y or never), merged over the defaults; other kinds never "
        "expire. An entry may also carry its own end: \"(until 2026-12-31)\". Expired entries leave search and "
        "context at once; `memkit tidy` (and the watcher, daily) moves them to archive.md. A follow-up "
        "([pending]) due later than its lifetime stays until its due day.")
    profile_max_entries: int = setting(
        20, Whole(1), "The most entries `memkit distill` keeps in the pinned profile (topics/profile.md).")
    distill_after: int = setting(
        0, Whole(0), "`memkit upkeep` (and `memkit watch`, daily from upkeep_hour) re-distils the pinned profile "
        "after this many new conclusions; 0: never.")
    distill_apply: bool = setting(
        False, Flag(), "true: write that re-distilled profile at once; false: keep it as a proposal "
        "(`memkit distill --proposed` shows and applies it).")
    upkeep_hour: int = setting(4, Whole(0, 23, what="an hour"),
                               "`memkit watch` runs `memkit upkeep` once a day, from this hour.")
    session_strategy: str = setting(
        "simple", Choice(*SESSION_STRATEGIES),
        "How `memkit session load` fits a long conversation to its token budget: simple (the newest messages "
        "that fit), summary (older ones condensed by the LLM, cached in the session file) or hybrid (system and "
        "important messages kept verbatim, routine ones condensed). Without an LLM, summary and hybrid fall "
        "back to windowing (hybrid still keeps the system and important messages).")
    session_keep_recent: int = setting(6, Whole(1), "hybrid: the most newest messages kept verbatim.")
    context_turns: int = setting(
        6, Whole(0), "`memkit context --session ID`: the conversation's last this many messages (user and "
        "assistant) go into the block, beside the memories; 0: none.")
    session_summary_days: int = setting(
        3, Whole(0), "`memkit upkeep` (with an LLM) condenses a session idle this many days into a summary with "
        "key points and emotional highlights; 0: never. The raw conversation is kept in sessions/archive/raw/.")
    session_core_days: int = setting(
        7, Whole(0), "… and into a core memory of 100-200 characters after this many days; 0: never.")
    digest_every_messages: int = setting(
        0, Whole(0), "A session that never goes idle is digested into memories every this many new messages, "
        "only what the LLM has not seen; 0: never.")
    quiet_hours: str = setting(
        "", QuietHours(), "`memkit proactive` never offers a follow-up during these hours, e.g. \"22:00-07:30\"; "
        "empty: none.")
    proactive_gap_hours: float = setting(
        4, Number(least=0, unit="hours"), "`memkit proactive` waits this many hours after the last conversation.")
    serve: ServeSettings = setting(
        ServeSettings(), Section(ServeSettings, optional=False),
        "`memkit serve` (the HTTP API): where it listens, its token and its bounds; its options win over these.")
    redact: RedactSettings = setting(
        RedactSettings(), Section(RedactSettings, optional=False),
        "What is never stored: secrets replaced by [redacted] before memkit writes an add, an edit, a digest's "
        "conclusions, a session message or a captured transcript (docs/privacy.md). On by default.")


#: every setting, a section's own keys (dotted: ``serve.port``) after the section's row
SETTINGS: tuple[Setting, ...] = tuple(flat(Config))
