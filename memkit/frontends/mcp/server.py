"""`memkit mcp`: the vault as an MCP server over stdio, on the official MCP Python SDK (2.x).

Tools: ``search_memories``, ``add_memory``, ``edit_memory``, ``forget_memory``, ``get_context``,
``related_memories``, ``list_topics``, ``read_topic``, ``recent_topics``, ``pending_follow_ups``, ``mark_done``, the
conversation sessions' ``list_sessions``, ``start_session``, ``load_session``, ``save_message`` and
``search_sessions``, ``proactive``, ``run_upkeep`` and, when memkit.yaml configures an LLM,
``digest_transcript``. The HTTP API (:mod:`memkit.frontends.http.spec`) and the CLI offer the same
operations with the same parameters and limits: all three are made from one table
(:mod:`memkit.frontends.operations`).
Topic files are resources too: ``memkit://topics/NAME``; ``memkit://context`` is the memory block
without a message, and the prompt ``memory`` (arguments ``message``, ``session``) yields the block
for a message, for the clients that put prompts or resources into the conversation (docs/hooks.md).

Same guarantees as the CLI: every write goes through the public :class:`memkit.Vault` methods
(the vault's write lock, atomic writes); the Vault and its model are created once and kept warm
(the model loads in the background right after start-up, so ``initialize`` is answered at once);
calls on the vault are serialised in one worker thread, so the event loop keeps serving; a
library error (:class:`memkit.MemkitError`) or a bad argument becomes a tool error (``isError``)
carrying the same one-line message the CLI prints, and the next call works as before. Nothing but
protocol is written to stdout: the SDK points file descriptor 1 at stderr while it serves, and
memkit's log goes to stderr.

Each tool is a method of :class:`Memory`; its input schema is made from the table of operations,
which also checks the arguments (:class:`TypedTools`): a bad one is said in one line the way the
CLI says it ("invalid value for k: 0 is below the minimum 1"), an unknown argument is refused.

The ``mcp`` package is imported only when the server is built, so ``memkit --help`` stays fast and
memkit works without it (``pip install 'mcp>=2'`` adds it).

An interface-layer module: it uses memkit's public API, and the library's own limits
(:mod:`memkit.base.limits`, through the table) on a query, an entry, a message and a transcript.
"""
from __future__ import annotations

import importlib.metadata
import json
import logging
import traceback
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Callable
from urllib.parse import quote, unquote

from ... import InvalidValue, MemkitError, Vault, __version__
from ...base.limits import MAX_MESSAGE_CHARS, MAX_TRANSCRIPT_BYTES
from ..facts import add_person_answer, get_answer, people_answer, set_answer
from ..operations import OPERATIONS, ArgumentError, Style, check, schema, time_value
from ..privacy import without_private
from .tools import INSTRUCTIONS, TOOLS

log = logging.getLogger("memkit")

INSTALL_HINT = "pip install 'mcp>=2'"
TOPIC_URI = "memkit://topics/"
CONTEXT_URI = "memkit://context"  #: the memory block without a message (profile, due, recent topics, instructions)
MEMORY_PROMPT = "memory"  #: the prompt that yields the memory block for a message

# ---- the tools: methods of Memory --------------------------------------------------------------
# Each tool is a method of Memory; its parameters, their limits and the input schema the client
# sees come from the table of operations (memkit.frontends.operations, the same as the CLI's and
# the HTTP API's), which also checks the arguments (:class:`TypedTools`). The metadata (title,
# description, hints) is the rest of each tool's listing: :data:`memkit.frontends.mcp.tools.TOOLS`.

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
            self.vault.frontend_internals.fill_judge_aside()  # the judge's vectors while serving (a daemon thread)
        except MemkitError as exc:
            log.warning("%s", exc)  # each tool call will report it again

    # each tool runs in a worker thread, one at a time (see build_server()); the arguments are checked
    # (TypedTools.call) and complete, their defaults filled in
    def search_memories(self, query: str, k: int, topic: str | None, kind: str | None, tag: str | None,
                        since: str | None, person: str | None, relation: str | None, where: list[str] | None,
                        linked: str | None, mode: str, min_importance: float | None, fast: bool) -> Outcome:
        hits = [h.to_dict() for h in self.vault.search(query, k=k, topic=topic, kind=kind, tag=tag, since=since,
                                                        mode=mode,  # type: ignore[arg-type]  # the table's choices
                                                        min_importance=min_importance, refresh=True,
                                                        fast=fast, private=False, person=person,
                                                        relation=relation, where=where, linked=linked)]
        return Outcome(_as_json(hits), {"hits": hits})

    def related_memories(self, ref: str, k: int | None) -> Outcome:
        data = self.vault.links.related(ref, k=k, private=False).to_dict()
        return Outcome(_as_json(data), data)

    def add_memory(self, text: str, topic: str | None, kind: str | None, tags: list[str] | None, due: str | None,
                   until: str | None) -> Outcome:
        entry = self.vault.add(text, topic=topic, kind=kind, tags=tags or (), due=due, until=until).to_dict()
        return Outcome(_as_json(entry), entry)

    def edit_memory(self, id: str, text: str) -> Outcome:  # noqa: A002
        entry = self.vault.edit(id, text).to_dict()
        return Outcome(_as_json(entry), entry)

    def set_fact(self, key: str, value: str) -> Outcome:
        data = set_answer(self.vault, key, value)
        return Outcome(_as_json(data), data)

    def get_fact(self, key: str | None, history: bool) -> Outcome:
        data = get_answer(self.vault, key, history)
        return Outcome(_as_json(data), data)

    def list_people(self) -> Outcome:
        data = people_answer(self.vault)
        return Outcome(_as_json(data["people"]), data)

    def add_person(self, name: str, relation: str | None, detail: str | None, about: str | None) -> Outcome:
        data = add_person_answer(self.vault, name, relation, detail, about)
        return Outcome(_as_json(data), data)

    def pending_follow_ups(self) -> Outcome:
        items = [f.to_dict() for f in without_private(self.vault, self.vault.upkeep.pending(), lambda f: f.entry.topic)]
        return Outcome(_as_json(items), {"pending": items})

    def mark_done(self, id: str) -> Outcome:  # noqa: A002
        entry = self.vault.upkeep.done(id).to_dict()
        entry["archive"] = "archive.md"
        return Outcome(_as_json(entry), entry)

    def forget_memory(self, id: str) -> Outcome:  # noqa: A002
        entry = self.vault.forget(id).to_dict()
        entry["archive"] = "archive.md"
        return Outcome(_as_json(entry), entry)

    def why_memory(self, id: str) -> Outcome:  # noqa: A002
        found = self.vault.why(id)
        return Outcome(found.render(), found.to_dict())

    def get_context(self, message: str, session: str | None, budget_tokens: int, reset: bool,
                    clear: bool = False, markers: bool = False) -> Outcome:
        ctx = self.vault.context(message, session=session, budget_tokens=budget_tokens, reset=reset, clear=clear,
                                 markers=markers)
        return Outcome(ctx.text, ctx.to_dict())

    def list_topics(self) -> Outcome:
        infos = sorted(without_private(self.vault, self.vault.topics(), lambda t: t.name), key=lambda t: t.updated,
                       reverse=True)
        topics = [t.to_dict() for t in infos]
        return Outcome(_as_json(topics), {"topics": topics})

    def read_topic(self, name: str) -> Outcome:
        data = self.vault.store.show_topic(name)  # a topic split away: its name and split_into, as `memkit show`
        return Outcome(_as_json(data), data)

    def recent_topics(self) -> Outcome:
        items = [r.to_dict() for r in without_private(self.vault, self.vault.recent(), lambda r: r.topic)]
        return Outcome(_as_json(items), {"recent": items})

    def list_sessions(self, limit: int | None, archived: bool) -> Outcome:
        sessions = [i.to_dict() for i in self.vault.conversations.list(archived=archived)[:limit]]
        return Outcome(_as_json(sessions), {"sessions": sessions})

    def start_session(self, session: str | None, title: str | None, system_prompt: str | None, user: str | None,
                      tags: list[str] | None, metadata: dict[str, str] | None) -> Outcome:
        data = self.vault.conversations.new(title=title, system_prompt=system_prompt, session_id=session, user=user,
                                            tags=tags or (), metadata=metadata).to_dict()
        data.pop("messages", None)
        return Outcome(_as_json(data), data)

    def save_message(self, session: str, role: str, content: str, important: bool, name: str | None,
                     time: str | None) -> Outcome:
        data = dict(self.vault.conversations.append(session, role, content, important=important, name=name,
                                                    now=time_value(time), exact=True).to_dict(),
                    session=session)  # exact: a session "user1" must not write into "user12"
        return Outcome(_as_json(data), data)

    def load_session(self, session: str, max_tokens: int, strategy: str | None) -> Outcome:
        result = self.vault.conversations.window(session, max_tokens, strategy=strategy, exact=True)
        text = "\n\n".join(f"{m.role}: {m.content}" for m in result.messages)
        if result.note:
            text = f"(note: {result.note})\n\n{text}"
        return Outcome(text, result.to_dict())

    def search_sessions(self, query: str, k: int, session: str | None, role: str | None,
                        since: str | None) -> Outcome:
        found = self.vault.conversations.search(query, k=k, session=session, role=role, since=since, exact=True)
        hits = [h.to_dict() for h in found]
        return Outcome(_as_json(hits), {"hits": hits})

    def proactive(self, at: str | None) -> Outcome:
        nudge = self.vault.proactive(now=_moment(at)).to_dict()
        text = ("now: " if nudge["now"] else "not now: ") + nudge["reason"]
        if nudge["follow_up"] is not None:
            text += f"\nsay: {nudge['opening'] or nudge['question']}"
        return Outcome(text, nudge)

    def run_upkeep(self, at: str | None) -> Outcome:
        report = (self.digest_vault or self.vault).upkeep.run(now=_moment(at))
        return Outcome("\n".join(report.lines()), report.to_dict())

    def digest_transcript(self, text: str, dry_run: bool) -> Outcome:
        assert self.digest_vault is not None
        data = text.encode("utf-8", errors="surrogatepass")
        if len(data) > MAX_TRANSCRIPT_BYTES:
            raise MemkitError(f"transcript is {len(data) / 1e6:.1f} MB; memkit digests at most "
                              f"{MAX_TRANSCRIPT_BYTES / 1e6:.0f} MB at once: split it into smaller parts")
        report = self.digest_vault.digest(text=text, name="transcript", dry_run=dry_run)
        result = report.to_dict()
        return Outcome(_as_json(result), result)

    def read_topic_file(self, name: str) -> tuple[str, str]:
        """(name, exact text) of a topic file, for the resource."""
        t = self.vault.topic(name)
        return t.name, t.raw


# ---- the tools' schemas and their validation: the table of operations -----------------------------

#: each tool's operation in the table
TOOL_OPERATIONS = {op.mcp: op for op in OPERATIONS if op.mcp is not None}
#: how the MCP server says a bad argument; blank text, a session id and a date are the library's to
#: refuse, with the message the CLI gives
STYLE = Style(invalid="invalid value for", what="argument", edge=False)


class TypedTools:
    """The tools of ``memory``: their input schemas (from the table of operations) and a validated call."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.tools = {name: TOOL_OPERATIONS[name] for name in memory.tool_names()}

    def schema(self, name: str) -> dict[str, Any]:
        return schema(self.tools[name], "mcp")

    def call(self, tool: str, arguments: Any) -> Outcome:
        """Validate the arguments against the tool's parameters and run it (in the caller's thread).

        :raises ArgumentError: an argument that does not fit, said in one line."""
        if tool not in self.tools:
            raise ArgumentError(f"unknown tool {tool!r}: use one of {', '.join(self.tools)}")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ArgumentError(f"{tool}: the arguments must be a JSON object")
        given = {k: v for k, v in arguments.items() if v is not None}  # null: the default
        values = check(self.schema(tool), given, replace(STYLE, prefix=f"{tool}: "))
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
            types.Resource(uri=CONTEXT_URI, name="context", title="memkit memory block",
                           description="The memory block for a new conversation: the profile, what is due, the "
                                       "recent topics and the memory instructions.", mime_type="text/markdown"),
        ] + [
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
        if uri == CONTEXT_URI:
            try:
                block = await run(lambda: memory.vault.context("").text)
            except MemkitError as exc:
                raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
            return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=block,
                                                                                 mime_type="text/markdown")])
        if not uri.startswith(TOPIC_URI) or not uri[len(TOPIC_URI):]:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri}: memkit serves {TOPIC_URI}NAME",
                           {"uri": uri})
        try:
            name, text = await run(lambda: memory.read_topic_file(unquote(uri[len(TOPIC_URI):])))
        except MemkitError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc), {"uri": uri}) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text,
                                                                             mime_type="text/markdown")])

    prompt = types.Prompt(
        name=MEMORY_PROMPT, title="memkit memory",
        description="The memory block (what memkit remembers about the user) for the user's message.",
        arguments=[types.PromptArgument(name="message", description="The user's message (may be empty).",
                                        required=False),
                   types.PromptArgument(name="session", description="A context session's id: memories accumulate "
                                        "across the calls that share it.", required=False)])

    async def list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(ctx: Any, params: Any) -> Any:
        if params.name != MEMORY_PROMPT:
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name!r}: memkit offers {MEMORY_PROMPT!r}")
        args = params.arguments or {}
        message = str(args.get("message") or "")[:MAX_MESSAGE_CHARS]
        session = str(args.get("session") or "").strip() or None
        try:
            block = await run(lambda: memory.vault.context(message, session=session).text)
        except MemkitError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        return types.GetPromptResult(description="memkit's memory block", messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=block))])

    return Server(
        "memkit", version=__version__, title="memkit memory",
        description=f"Long-term memory in {memory.vault.root}", instructions=INSTRUCTIONS, lifespan=lifespan,
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates, on_read_resource=read_resource,
        on_list_prompts=list_prompts, on_get_prompt=get_prompt,
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


__all__ = ["ArgumentError", "INSTRUCTIONS", "Memory", "TOOLS", "TOOL_OPERATIONS", "TypedTools", "build_server",
           "require_sdk", "serve"]

