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

Each tool is an operation of the table (:mod:`memkit.frontends.operations`): its listing, its input
schema and its handler (one call into the Vault) come from there; the schema also checks the
arguments (:class:`TypedTools`): a bad one is said in one line the way the
CLI says it ("invalid value for k: 0 is below the minimum 1"), an unknown argument is refused.

The ``mcp`` package is imported only when the server is built, so ``memkit --help`` stays fast and
memkit works without it (``pip install 'mcp>=2'`` adds it).

An interface-layer module: it uses memkit's public API, and the library's own limits
(:mod:`memkit.base.limits`, through the table) on a query, an entry, a message and a transcript.
"""
from __future__ import annotations

import importlib.metadata
import logging
import traceback
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence
from urllib.parse import quote, unquote

from ... import MemkitError, Vault, __version__
from ...base.limits import MAX_MESSAGE_CHARS
from ..operations import OPERATIONS, ArgumentError, Listed, Operation, Style, Tool, as_json, check, schema
from .tools import INSTRUCTIONS, TOOLS

log = logging.getLogger("memkit")

INSTALL_HINT = "pip install 'mcp>=2'"
TOPIC_URI = "memkit://topics/"
CONTEXT_URI = "memkit://context"  #: the memory block without a message (profile, due, recent topics, instructions)
MEMORY_PROMPT = "memory"  #: the prompt that yields the memory block for a message

# ---- the tools: the table of operations -----------------------------------------------------------
# Each tool is an operation of the table (memkit.frontends.operations, the same as the CLI's and
# the HTTP API's): its name, title, description and hints, its parameters (the input schema the
# client sees, which also checks the arguments: :class:`TypedTools`) and its handler, one call into
# the Vault; Memory holds the served Vaults it runs on.

@dataclass
class Outcome:
    """A tool's answer: the text the model reads and the structured result for the client."""

    text: str
    structured: dict[str, Any] | None = None


#: the tools whose work may wait for the LLM: on the digest's Vault, so searches go on meanwhile
SLOW = ("digest_transcript", "run_upkeep")


@dataclass
class Memory:
    """The served vault: one :class:`Vault` kept warm, and the operations of ``table`` as its tools."""

    vault: Vault
    #: a second Vault for digest (its own in-process index, the same model), so a slow LLM does not
    #: hold up searches; None when no LLM is configured
    digest_vault: Vault | None = None
    table: Sequence[Operation] = OPERATIONS

    @classmethod
    def open(cls, vault: Vault, table: Sequence[Operation] = OPERATIONS) -> "Memory":
        digest_vault = None
        if vault.config.llm:
            digest_vault = Vault(vault.root, config=vault.config, model=vault.model)
        return cls(vault, digest_vault, table)

    def tool_names(self) -> list[str]:
        return [op.mcp.name for op in self.table
                if op.mcp is not None and (op.mcp.name != "digest_transcript" or self.digest_vault is not None)]

    def vault_for(self, tool: str) -> Vault:
        """The Vault a tool runs on: the digest's for the slow ones (:data:`SLOW`), when there is one."""
        return (self.digest_vault or self.vault) if tool in SLOW else self.vault

    def warm_up(self) -> None:
        """Load the model and bring the index up to date, so the first search is fast."""
        try:
            self.vault.index(judge=False)
            self.vault.search("warm up", k=1)
            self.vault.frontend_internals.fill_judge_aside()  # the judge's vectors while serving (a daemon thread)
        except MemkitError as exc:
            log.warning("%s", exc)  # each tool call will report it again

    def read_topic_file(self, name: str) -> tuple[str, str]:
        """(name, exact text) of a topic file, for the resource."""
        t = self.vault.topic(name)
        return t.name, t.raw


#: each tool's operation in the table
TOOL_OPERATIONS = {op.mcp.name: op for op in OPERATIONS if op.mcp is not None}
#: how the MCP server says a bad argument; blank text, a session id and a date are the library's to
#: refuse, with the message the CLI gives
STYLE = Style(invalid="invalid value for", what="argument", edge=False)


def outcome(tool: Tool, op: Operation, result: Any) -> Outcome:
    """What a tool answers: the operation's answer (or the tool's own made of it) as the structured
    result, and the text the model reads (:attr:`memkit.frontends.operations.Tool.text`)."""
    answer = op.answer(result)
    if tool.answer is not None:
        answer = tool.answer(answer)
    if tool.text is not None:
        text = tool.text(result)
    elif tool.answer is None and isinstance(op.answer, Listed):
        text = as_json(answer[op.answer.key])  # the list alone; the structured result names it
    else:
        text = as_json(answer)
    return Outcome(text, answer)


class TypedTools:
    """The tools of ``memory``: their input schemas (from the table of operations) and a validated call."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        by_name = {op.mcp.name: op for op in memory.table if op.mcp is not None}
        self.tools = {name: by_name[name] for name in memory.tool_names()}

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
        op = self.tools[tool]
        assert op.mcp is not None
        return outcome(op.mcp, op, op.run(self.memory.vault_for(tool), "mcp", values, **op.mcp.extra))


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
        types.Tool(name=name, title=op.mcp.title, description=op.mcp.description, input_schema=typed.schema(name),
                   annotations=types.ToolAnnotations(**op.mcp.annotations))
        for name, op in typed.tools.items() if op.mcp is not None
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
            slow = name in SLOW  # the LLM at work: searches go on meanwhile
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


__all__ = ["ArgumentError", "INSTRUCTIONS", "Memory", "Outcome", "SLOW", "TOOLS", "TOOL_OPERATIONS", "TypedTools",
           "build_server", "outcome", "require_sdk", "serve"]

