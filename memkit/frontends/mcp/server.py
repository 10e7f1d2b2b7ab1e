"""`memkit mcp`: the vault as an MCP server over stdio, on the official MCP Python SDK (2.x).

Tools: ``search_memories``, ``add_memory``, ``edit_memory``, ``forget_memory``, ``get_context``,
``list_topics``, ``read_topic``, ``recent_topics``, ``pending_follow_ups``, ``mark_done``, the
conversation sessions' ``list_sessions``, ``start_session``, ``load_session``, ``save_message`` and
``search_sessions``, ``proactive``, ``run_upkeep`` and, when memkit.yaml configures an LLM,
``digest_transcript``. The HTTP API (:mod:`memkit.frontends.http.spec`) and the CLI offer the same
operations with the same limits (:mod:`memkit.base.limits`).
Topic files are resources too: ``memkit://topics/NAME``.

Same guarantees as the CLI: every write goes through the public :class:`memkit.Vault` methods
(the vault's write lock, atomic writes); the Vault and its model are created once and kept warm
(the model loads in the background right after start-up, so ``initialize`` is answered at once);
calls on the vault are serialised in one worker thread, so the event loop keeps serving; a
library error (:class:`memkit.MemkitError`) or a bad argument becomes a tool error (``isError``)
carrying the same one-line message the CLI prints, and the next call works as before. Nothing but
protocol is written to stdout: the SDK points file descriptor 1 at stderr while it serves, and
memkit's log goes to stderr.

Each tool is a method of :class:`Memory` whose annotated signature is its input: the SDK's
typed-tool machinery (``Tool.from_function``, a pydantic model of the signature) makes the schema
the client sees and checks the arguments; a validation error becomes one line the way the CLI says
it ("invalid value for k: 0 is below the minimum 1"), an unknown argument is refused.

The ``mcp`` package is imported only when the server is built, so ``memkit --help`` stays fast and
memkit works without it (``pip install 'mcp>=2'`` adds it).

An interface-layer module: it uses memkit's public API, and the library's own limits
(:mod:`memkit.base.limits`) on a query, an entry, a session message and a transcript in its schemas.
"""
from __future__ import annotations

import importlib.metadata
import json
import logging
import traceback
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Callable, Literal
from urllib.parse import quote, unquote

from ... import InvalidValue, MemkitError, Vault, __version__
from ...base.limits import (MAX_ENTRY_CHARS, MAX_QUERY_CHARS, MAX_SEARCH_RESULTS, MAX_SESSION_MESSAGE_CHARS,
                           MAX_TRANSCRIPT_BYTES)
from .tools import INSTRUCTIONS, TOOLS, TOPIC_NAME
from ...vault import parse_day

try:  # the tools' argument constraints; pydantic comes with the MCP SDK, the only reader of them
    from pydantic import Field, ValidationError
except ImportError:  # memkit without the mcp extra: the tools are never built
    def Field(*args: Any, **kwargs: Any) -> Any:  # type: ignore[no-redef]  # noqa: N802
        return None

    class ValidationError(ValueError):  # type: ignore[no-redef]
        """Stands for pydantic's (never raised without it)."""

log = logging.getLogger("memkit")

INSTALL_HINT = "pip install 'mcp>=2'"
TOPIC_URI = "memkit://topics/"

# The query and entry limits are the library's own (MAX_QUERY_CHARS, MAX_ENTRY_CHARS): search cuts
# a longer query and Vault.add refuses a longer entry; here both are refused by the schema.
MAX_MESSAGE_CHARS = 20_000  #: get_context's message
MAX_ID_CHARS = 200


class ArgumentError(MemkitError):
    """A tool argument that does not fit the tool's input schema."""


# ---- the tools: typed methods of Memory ----------------------------------------------------------
# Each tool is a method whose annotated signature is its input: the MCP SDK's typed-tool machinery
# (``Tool.from_function``: a pydantic model of the signature) makes the JSON schema the client
# sees and validates the arguments; memkit turns a validation error into the one-line message the
# CLI would print (:func:`argument_error`). The metadata (title, description, hints) is the rest of
# each tool's listing: :data:`memkit.frontends.mcp.tools.TOOLS`.



def _text(description: str, max_length: int, required: bool = False) -> Any:
    """A string argument's constraints. A required one is advertised with ``minLength: 1`` but an
    empty value reaches the library, whose message says what to do (as the CLI's does)."""
    return Field(description=description, max_length=max_length,
                 json_schema_extra={"minLength": 1} if required else None)


def _count(description: str, low: int, high: int) -> Any:
    return Field(description=description, ge=low, le=high, strict=True)


def _flag(description: str) -> Any:
    return Field(description=description, strict=True)


@dataclass
class Outcome:
    """A tool's answer: the text the model reads and the structured result for the client."""

    text: str
    structured: dict[str, Any] | None = None


def _moment(at: str | None) -> datetime | None:
    if at is None or not at.strip():
        return None
    try:
        return datetime.fromisoformat(at.strip())
    except ValueError:
        raise InvalidValue(f"at must be like '2026-11-28 09:00', got {at!r}") from None


def _as_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


@dataclass
class Memory:
    """The served vault: one :class:`Vault` kept warm, and the work done on it (one method per tool)."""

    vault: Vault
    #: a second Vault for digest (its own in-process index, the same model), so a slow LLM does not
    #: hold up searches; None when no LLM is configured
    digest_vault: Vault | None = None

    @classmethod
    def open(cls, vault: Vault) -> "Memory":
        digest_vault = None
        if vault.config.llm:
            digest_vault = Vault(vault.root, config=vault.config, model=vault.model)
        return cls(vault, digest_vault)

    def tool_names(self) -> list[str]:
        return [name for name in TOOLS if name != "digest_transcript" or self.digest_vault is not None]

    def warm_up(self) -> None:
        """Load the model and bring the index up to date, so the first search is fast."""
        try:
            self.vault.index(judge=False)
            self.vault.search("warm up", k=1)
            self.vault.fill_judge_aside()  # the judge's vectors while serving (a daemon thread)
        except MemkitError as exc:
            log.warning("%s", exc)  # each tool call will report it again

    # each tool runs in a worker thread, one at a time (see build_server())
    def search_memories(
            self,
            query: Annotated[str, _text("What to look for: a question, keywords, a name or a part number.",
                                        MAX_QUERY_CHARS, required=True)],
            k: Annotated[int, _count("How many results at most.", 1, MAX_SEARCH_RESULTS)] = 10,
            topic: Annotated[str | None, _text(f"Only this topic and its subtopics (topic-*). {TOPIC_NAME}", 200)] = None,
            kind: Annotated[str | None, _text("Only entries of this [kind]: fact, preference, decision, discovery, "
                                              "event, context, observation…", 40)] = None,
            tag: Annotated[str | None, _text("Only entries with this #tag (without the '#').", 40)] = None,
            since: Annotated[str | None, _text("Only entries dated on or after this day, YYYY-MM-DD.", 10)] = None,
            mode: Annotated[Literal["hybrid", "vector", "lexical"],
                            Field(description="hybrid: words and meaning fused; vector or lexical: one side "
                                              "only.")] = "hybrid",
            min_importance: Annotated[float | None, Field(description="Only entries whose (importance X) is at "
                                                                      "least this, 0..1 (none given counts as 0.5).",
                                                          ge=0, le=1)] = None,
            fast: Annotated[bool, Field(description="Skip the second stage (the judge transformer re-scoring "
                                                    "the best candidates): faster, weaker on questions worded "
                                                    "unlike their answer.")] = False,
    ) -> Outcome:
        hits = [h.to_dict() for h in self.vault.search(query, k=k, topic=topic, kind=kind, tag=tag, since=since,
                                                        mode=mode, min_importance=min_importance, refresh=True,
                                                        judge=False if fast else None)]
        return Outcome(_as_json(hits), {"hits": hits})

    def add_memory(
            self,
            text: Annotated[str, _text("The memory, one self-contained sentence.", MAX_ENTRY_CHARS, required=True)],
            topic: Annotated[str | None, _text(f"Where it belongs (default: general). {TOPIC_NAME}", 200)] = None,
            kind: Annotated[str | None, _text("One word: fact, preference, decision, discovery, event, context, "
                                              "observation…", 40)] = None,
            tags: Annotated[list[Annotated[str, Field(max_length=40)]],
                            Field(description="#tags, one word each, without the '#'.", max_length=20)] = [],  # noqa: B006
            due: Annotated[str | None, _text("A follow-up due this day, YYYY-MM-DD: adds '(due DAY)' (kind pending "
                                             "unless given); pending_follow_ups lists it.", 10)] = None,
            until: Annotated[str | None, _text("The memory expires after this day, YYYY-MM-DD: adds '(until DAY)'.",
                                               10)] = None,
    ) -> Outcome:
        entry = self.vault.add(text, topic=topic, kind=kind, tags=tags,
                               due=parse_day(due, "due") if due is not None else None,
                               until=parse_day(until, "until") if until is not None else None).to_dict()
        return Outcome(_as_json(entry), entry)

    def edit_memory(
            self,
            id: Annotated[str, _text("The entry id, e.g. '3f2a9c1e'.", MAX_ID_CHARS, required=True)],  # noqa: A002
            text: Annotated[str, _text("The new text, one self-contained sentence.", MAX_ENTRY_CHARS, required=True)],
    ) -> Outcome:
        entry = self.vault.edit(id, text).to_dict()
        return Outcome(_as_json(entry), entry)

    def pending_follow_ups(self) -> Outcome:
        items = [f.to_dict() for f in self.vault.pending()]
        return Outcome(_as_json(items), {"pending": items})

    def mark_done(
            self,
            id: Annotated[str, _text("The follow-up's id, e.g. '3f2a9c1e'.", MAX_ID_CHARS, required=True)],  # noqa: A002
    ) -> Outcome:
        entry = self.vault.done(id).to_dict()
        entry["archive"] = "archive.md"
        return Outcome(_as_json(entry), entry)

    def forget_memory(
            self,
            id: Annotated[str, _text("The entry id, e.g. '3f2a9c1e'.", MAX_ID_CHARS, required=True)],  # noqa: A002
    ) -> Outcome:
        entry = self.vault.forget(id).to_dict()
        entry["archive"] = "archive.md"
        return Outcome(_as_json(entry), entry)

    def get_context(
            self,
            message: Annotated[str, _text("The user's latest message (may be empty).", MAX_MESSAGE_CHARS)],
            session: Annotated[str | None, _text("A conversation id: memories accumulate across calls that share "
                                                 "it. Without it the block is for this message alone.",
                                                 MAX_ID_CHARS)] = None,
            budget_tokens: Annotated[int, _count("The most tokens the block may take (~4 characters a token).",
                                                 1, 100_000)] = 2000,
    ) -> Outcome:
        ctx = self.vault.context(message, session=session, budget_tokens=budget_tokens)
        return Outcome(ctx.text, ctx.to_dict())

    def list_topics(self) -> Outcome:
        infos = sorted(self.vault.topics(), key=lambda t: t.updated, reverse=True)
        topics = [t.to_dict() for t in infos]
        return Outcome(_as_json(topics), {"topics": topics})

    def read_topic(self, name: Annotated[str, _text(TOPIC_NAME, 200, required=True)]) -> Outcome:
        data = self.vault.show_topic(name)  # a topic split away: its name and split_into, as `memkit show`
        return Outcome(_as_json(data), data)

    def recent_topics(self) -> Outcome:
        items = [r.to_dict() for r in self.vault.recent()]
        return Outcome(_as_json(items), {"recent": items})

    def list_sessions(
            self,
            archived: Annotated[bool, _flag("The pruned (archived) sessions instead.")] = False,
    ) -> Outcome:
        sessions = [i.to_dict() for i in self.vault.sessions(archived=archived)]
        return Outcome(_as_json(sessions), {"sessions": sessions})

    def start_session(
            self,
            title: Annotated[str | None, _text("A short title.", 200)] = None,
            system_prompt: Annotated[str | None, _text("The system prompt of the conversation, kept with it.",
                                                       MAX_MESSAGE_CHARS)] = None,
            session: Annotated[str | None, _text("An id to use (letters, digits, '.', '_', '-'); default: a new "
                                                 "random one.", 80)] = None,
    ) -> Outcome:
        data = self.vault.create_session(title=title, system_prompt=system_prompt, session_id=session).to_dict()
        data.pop("messages", None)
        return Outcome(_as_json(data), data)

    def save_message(
            self,
            session: Annotated[str, _text("The session id (from start_session or list_sessions).", MAX_ID_CHARS,
                                          required=True)],
            role: Annotated[str, _text("user, assistant, system or tool.", 20, required=True)],
            content: Annotated[str, _text("The message.", MAX_SESSION_MESSAGE_CHARS)],
            important: Annotated[bool, _flag("A decision or key fact: kept word for word when the history is "
                                             "condensed.")] = False,
    ) -> Outcome:
        data = dict(self.vault.save_message(session, role, content, important=important, exact=True).to_dict(),
                    session=session)  # exact: a session "user1" must not write into "user12"
        return Outcome(_as_json(data), data)

    def load_session(
            self,
            session: Annotated[str, _text("The session id.", MAX_ID_CHARS, required=True)],
            max_tokens: Annotated[int, _count("The budget (~4 characters a token).", 1, 1_000_000)] = 4096,
            strategy: Annotated[str | None, _text("simple (newest that fit), summary (older condensed by the LLM) "
                                                  "or hybrid (important and system messages kept, routine ones "
                                                  "condensed). Default: the vault's session_strategy.", 20)] = None,
    ) -> Outcome:
        result = self.vault.recent_messages(session, max_tokens, strategy=strategy, exact=True)
        text = "\n\n".join(f"{m.role}: {m.content}" for m in result.messages)
        if result.note:
            text = f"(note: {result.note})\n\n{text}"
        return Outcome(text, result.to_dict())

    def search_sessions(
            self,
            query: Annotated[str, _text("What to look for.", MAX_QUERY_CHARS, required=True)],
            k: Annotated[int, _count("How many results at most.", 1, MAX_SEARCH_RESULTS)] = 5,
            session: Annotated[str | None, _text("Only this session.", MAX_ID_CHARS)] = None,
    ) -> Outcome:
        hits = [h.to_dict() for h in self.vault.search_sessions(query, k=k, session=session, exact=True)]
        return Outcome(_as_json(hits), {"hits": hits})

    def proactive(
            self,
            at: Annotated[str | None, _text("The moment asked about, 'YYYY-MM-DD HH:MM' local time (default: now).",
                                            40)] = None,
    ) -> Outcome:
        nudge = self.vault.proactive(now=_moment(at)).to_dict()
        text = ("now: " if nudge["now"] else "not now: ") + nudge["reason"]
        if nudge["follow_up"] is not None:
            text += f"\nsay: {nudge['opening'] or nudge['question']}"
        return Outcome(text, nudge)

    def run_upkeep(
            self,
            at: Annotated[str | None, _text("Run as if at this moment, 'YYYY-MM-DD HH:MM' local time (default: "
                                            "now).", 40)] = None,
    ) -> Outcome:
        report = (self.digest_vault or self.vault).upkeep(now=_moment(at))
        return Outcome("\n".join(report.lines()), report.to_dict())

    def digest_transcript(
            self,
            text: Annotated[str, _text("The conversation.", MAX_TRANSCRIPT_BYTES, required=True)],
            dry_run: Annotated[bool, _flag("Only compute the change; write nothing.")] = False,
    ) -> Outcome:
        assert self.digest_vault is not None
        data = text.encode("utf-8", errors="surrogatepass")
        if len(data) > MAX_TRANSCRIPT_BYTES:
            raise MemkitError(f"transcript is {len(data) / 1e6:.1f} MB; memkit digests at most "
                              f"{MAX_TRANSCRIPT_BYTES / 1e6:.0f} MB at once: split it into smaller parts")
        report = self.digest_vault.digest_text(text, name="transcript", dry_run=dry_run)
        result = report.to_dict()
        return Outcome(_as_json(result), result)

    def read_topic_file(self, name: str) -> tuple[str, str]:
        """(name, exact text) of a topic file, for the resource."""
        t = self.vault.topic(name)
        return t.name, t.raw


# ---- typed tools: schemas and validation from the signatures (needs the SDK) ----------------------

_KIND_NAMES = {"int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
               "string_type": "a string", "bool_type": "true or false", "bool_parsing": "true or false",
               "list_type": "a list of strings"}


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _plain_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The signature's JSON schema as clients read it best: ``anyOf [X, null]`` (an optional
    argument) as X, no generated titles, and unknown arguments refused."""
    props = {}
    for name, spec in schema.get("properties", {}).items():
        spec = {k: v for k, v in spec.items() if k != "title"}
        options = spec.pop("anyOf", None)
        if options:
            spec = {**next(o for o in options if o.get("type") != "null"), **spec}
        props[name] = spec
    return {"type": "object", "properties": props, "required": schema.get("required", []),
            "additionalProperties": False}


def argument_error(tool: str, exc: Any) -> ArgumentError:
    """A pydantic ``ValidationError`` of a tool's arguments as one line, the CLI's way of saying it."""
    error = exc.errors()[0]
    kind, loc, ctx, given = error["type"], error["loc"], error.get("ctx") or {}, error.get("input")
    name = str(loc[0]) if loc else "arguments"
    item = len(loc) > 1
    if kind == "missing":
        return ArgumentError(f"{tool}: missing required argument {name!r}")
    if kind in _KIND_NAMES:
        want = "a list of strings" if item else _KIND_NAMES[kind]
        return ArgumentError(f"invalid value for {name}: expected {want}, got {_shown(given)}")
    if kind == "greater_than_equal":
        return ArgumentError(f"invalid value for {name}: {given} is below the minimum {ctx.get('ge')}")
    if kind == "less_than_equal":
        return ArgumentError(f"invalid value for {name}: {given} is above the maximum {ctx.get('le')}")
    if kind == "string_too_long":
        what = "an item of " if item else ""
        return ArgumentError(f"invalid value for {name}: {what}{len(given):,} characters, the limit is "
                             f"{ctx.get('max_length'):,}")
    if kind == "too_long":
        return ArgumentError(f"invalid value for {name}: {len(given)} items, the limit is {ctx.get('max_length')}")
    return ArgumentError(f"invalid value for {name}: {' '.join(str(error.get('msg', kind)).split())}")


class TypedTools:
    """The tools of ``memory`` made by the SDK from the methods' signatures: their listing and a
    validated call."""

    def __init__(self, memory: Memory) -> None:
        from mcp.server.mcpserver.tools.base import Tool

        self.memory = memory
        self.tools = {name: Tool.from_function(getattr(memory, name), name=name, title=TOOLS[name]["title"],
                                               description=TOOLS[name]["description"], structured_output=False)
                      for name in memory.tool_names()}

    def schema(self, name: str) -> dict[str, Any]:
        return _plain_schema(self.tools[name].parameters)

    def call(self, tool: str, arguments: Any) -> Outcome:
        """Validate the arguments against the tool's signature and run it (in the caller's thread)."""
        if tool not in self.tools:
            raise ArgumentError(f"unknown tool {tool!r}: use one of {', '.join(self.tools)}")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ArgumentError(f"{tool}: the arguments must be a JSON object")
        fields = list(self.tools[tool].fn_metadata.arg_model.model_fields)
        unknown = sorted(set(arguments) - set(fields))
        if unknown:
            raise ArgumentError(f"unknown argument {unknown[0]!r} (expected: {', '.join(fields) or 'none'})")
        given = {k: v for k, v in arguments.items() if v is not None}  # null: the default
        try:
            values = self.tools[tool].fn_metadata.arg_model.model_validate(given).model_dump_one_level()
        except ValidationError as exc:
            raise argument_error(tool, exc) from None
        method: Callable[..., Outcome] = getattr(self.memory, tool)
        return method(**values)


def error_message(exc: BaseException) -> str:
    """The one-line message the CLI prints for ``exc`` (without click's 'Error: ' prefix)."""
    if isinstance(exc, MemkitError):
        return str(exc)
    return f"unexpected error: {type(exc).__name__}: {exc} (the traceback is in the server's stderr log)"


# ---- the server ------------------------------------------------------------------------------

def require_sdk() -> None:
    """Raise a one-line :class:`MemkitError` naming the install command when the MCP SDK (2.x)
    is missing or too old."""
    try:
        version = importlib.metadata.version("mcp")
        import mcp.server  # noqa: F401
    except ImportError:
        raise MemkitError(f"memkit mcp needs the MCP Python SDK, which is not installed: {INSTALL_HINT}") from None
    except importlib.metadata.PackageNotFoundError:
        raise MemkitError(f"memkit mcp needs the MCP Python SDK, which is not installed: {INSTALL_HINT}") from None
    if int(version.split(".")[0]) < 2:
        raise MemkitError(f"memkit mcp needs version 2 of the MCP Python SDK (found {version}): "
                          f"pip install -U 'mcp>=2'")


def build_server(memory: Memory) -> Any:
    """The low-level MCP ``Server`` for ``memory`` (typed tools, tool errors as results)."""
    import anyio
    import anyio.to_thread
    import mcp.types as types
    from mcp import MCPError
    from mcp.server import Server

    limiter = anyio.CapacityLimiter(1)  # the Vault is used by one thread at a time
    digest_limiter = anyio.CapacityLimiter(1)

    async def run(fn: Callable[[], Any], digest: bool = False) -> Any:
        if not digest:
            return await anyio.to_thread.run_sync(fn, limiter=limiter)
        return await anyio.to_thread.run_sync(fn, limiter=digest_limiter)

    typed = TypedTools(memory)
    tools = [
        types.Tool(name=name, title=TOOLS[name]["title"], description=TOOLS[name]["description"],
                   input_schema=typed.schema(name), annotations=types.ToolAnnotations(**TOOLS[name]["annotations"]))
        for name in memory.tool_names()
    ]

    @asynccontextmanager
    async def lifespan(_server: Any) -> Any:
        async with anyio.create_task_group() as group:
            async def warm() -> None:
                await anyio.to_thread.run_sync(memory.warm_up, limiter=limiter, abandon_on_cancel=True)

            group.start_soon(warm)
            try:
                yield memory
            finally:
                group.cancel_scope.cancel()

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        name, arguments = params.name, params.arguments

        def work() -> Outcome:
            return typed.call(name, arguments)

        try:
            slow = name in ("digest_transcript", "run_upkeep")  # the LLM at work: searches go on meanwhile
            outcome = await run(work, digest=slow)
            if slow and not (arguments or {}).get("dry_run"):
                memory.vault.changed()  # the served Vault sees the digest's entries at once
        except Exception as exc:  # every failure is a tool error the model can read; the server goes on
            if isinstance(exc, MemkitError):
                log.info("%s: %s", name, exc)
            else:
                trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
                log.error("%s failed:\n%s", name, trace)
            return types.CallToolResult(content=[types.TextContent(type="text", text=error_message(exc))],
                                        is_error=True)
        return types.CallToolResult(content=[types.TextContent(type="text", text=outcome.text)],
                                    structured_content=outcome.structured)

    async def list_resources(ctx: Any, params: Any) -> Any:
        try:
            infos = await run(memory.vault.topics)
        except MemkitError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        return types.ListResourcesResult(resources=[
            types.Resource(uri=TOPIC_URI + quote(t.name, safe=""), name=t.name, title=f"memkit topic {t.name}",
                           description=f"{t.summary + ' — ' if t.summary else ''}{t.entries} entries ({t.file})",
                           mime_type="text/markdown")
            for t in sorted(infos, key=lambda t: t.name)
        ])

    async def list_resource_templates(ctx: Any, params: Any) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=TOPIC_URI + "{name}", name="topic", title="memkit topic file",
                                   description="A whole topic file of the memory (markdown with frontmatter).",
                                   mime_type="text/markdown")
        ])

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        if not uri.startswith(TOPIC_URI) or not uri[len(TOPIC_URI):]:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri}: memkit serves {TOPIC_URI}NAME",
                           {"uri": uri})
        try:
            name, text = await run(lambda: memory.read_topic_file(unquote(uri[len(TOPIC_URI):])))
        except MemkitError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc), {"uri": uri}) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text,
                                                                             mime_type="text/markdown")])

    return Server(
        "memkit", version=__version__, title="memkit memory",
        description=f"Long-term memory in {memory.vault.root}", instructions=INSTRUCTIONS, lifespan=lifespan,
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates, on_read_resource=read_resource,
    )


def serve(vault: Vault) -> None:
    """Serve ``vault`` over stdio until the client closes stdin (or SIGTERM / Ctrl-C)."""
    require_sdk()
    import anyio
    from mcp.server.stdio import stdio_server

    memory = Memory.open(vault)
    server = build_server(memory)
    log.info("memkit mcp: serving %s over stdio (%d tools)", vault.root, len(memory.tool_names()))

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        pass


__all__ = ["ArgumentError", "INSTRUCTIONS", "Memory", "TOOLS", "TypedTools", "argument_error", "build_server",
           "require_sdk", "serve"]

