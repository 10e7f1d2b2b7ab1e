#!/usr/bin/env python3
"""Drive `memkit mcp` the way an assistant does: start it on a vault as a subprocess and talk to it
with the MCP SDK's stdio client — list the tools, add a memory, search, forget, and one bad call.

    python bench/demo_mcp.py [VAULT] [--bench N]

VAULT defaults to $MEMKIT_VAULT. The model is $MEMKIT_MODEL, else the offline
``tokenlearn-static-model`` (no network needed). ``--bench N`` also times N searches through MCP.
Needs the SDK: pip install 'mcp>=2'.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def signature(tool) -> str:
    props = tool.input_schema.get("properties", {})
    required = set(tool.input_schema.get("required", []))
    parts = []
    for name, spec in props.items():
        if name in required:
            parts.append(name)
        elif "default" in spec:
            parts.append(f"{name}={json.dumps(spec['default'])}")
        else:
            parts.append(f"{name}?")
    return f"{tool.name}({', '.join(parts)})"


async def demo(vault: str, bench: int) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {"MEMKIT_MODEL": os.environ.get("MEMKIT_MODEL") or "tokenlearn-static-model", "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "memkit", "--vault", vault, "mcp"], env=env)

    def step(title: str) -> None:
        print(f"\n\033[1m{title}\033[0m", flush=True)

    async def call(client, tool: str, /, **arguments):
        print(f"→ {tool} {json.dumps(arguments, ensure_ascii=False)}")
        result = await client.call_tool(tool, arguments)
        if result.is_error:
            print(f"  tool error: {result.content[0].text}")
        return result

    step(f"$ memkit --vault {vault} mcp   (started by the client, stdio)")
    started = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            ready = time.perf_counter() - started
            print(f"server {init.server_info.name} {init.server_info.version}, protocol {init.protocol_version}, "
                  f"initialize answered {ready:.2f} s after spawn")

            step("tools/list")
            for tool in (await session.list_tools()).tools:
                print(f"  {signature(tool):<62} {tool.description.split('. ')[0].rstrip('.')}.")
            resources = (await session.list_resources()).resources
            print(f"  resources: {len(resources)} topic files, e.g. {resources[0].uri}" if resources else
                  "  resources: none yet")

            step("add_memory")
            added = (await call(session, "add_memory", text="Prefers window seats on long train rides",
                                topic="travel", kind="preference", tags=["trains"])).structured_content
            print(f"  added {added['id']} to {added['topic']} ({added['file']} line {added['line']}): {added['text']}")

            step("search_memories")
            hits = (await call(session, "search_memories", query="which seat do I like on trains",
                               k=3)).structured_content["hits"]
            for hit in hits:
                print(f"  {hit['score']:.2f}  {hit['id']}  {hit['topic']:<10} {hit['text']}")

            step("forget_memory")
            gone = (await call(session, "forget_memory", id=added["id"])).structured_content
            print(f"  moved to {gone['archive']}: {gone['text']}")

            step("list_sessions, load_session, save_message: an assistant continues yesterday's conversation")
            listed = (await call(session, "list_sessions")).structured_content["sessions"]
            for item in listed[:3]:
                print(f"  {item['id']:<10} {item['updated']}  {item['messages']} messages  {item['title']}")
            if listed:
                loaded = await call(session, "load_session", session=listed[0]["id"], max_tokens=120)
                for line in loaded.content[0].text.splitlines():
                    print(f"  {line}")
                saved = (await call(session, "save_message", session=listed[0]["id"], role="assistant",
                                    content="Here are three quiet hotels in Alfama.")).structured_content
                print(f"  saved at {saved['time']}")

            step("a bad argument comes back as a tool error; the server carries on")
            await call(session, "add_memory", text="x", topic="../etc")
            await call(session, "search_memories", query="")

            if bench:
                step(f"{bench} searches through MCP")
                times = []
                for _ in range(bench):
                    t0 = time.perf_counter()
                    await session.call_tool("search_memories", {"query": "what rice do I use for paella"})
                    times.append(time.perf_counter() - t0)
                print(f"  median {statistics.median(times) * 1000:.2f} ms, "
                      f"p90 {sorted(times)[int(len(times) * 0.9)] * 1000:.2f} ms (round trip, warm model)")
    print("\nserver stopped (the client closed its stdin)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", nargs="?", default=os.environ.get("MEMKIT_VAULT"),
                        help="the vault (default: $MEMKIT_VAULT)")
    parser.add_argument("--bench", type=int, default=0, metavar="N", help="also time N searches")
    args = parser.parse_args()
    if not args.vault:
        parser.error("give a VAULT or set MEMKIT_VAULT")
    try:
        import anyio
        import mcp  # noqa: F401
    except ImportError:
        sys.exit("demo_mcp.py needs the MCP SDK: pip install 'mcp>=2'")
    anyio.run(demo, args.vault, args.bench)


if __name__ == "__main__":
    main()
