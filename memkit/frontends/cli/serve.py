"""`memkit serve`: the click command that starts the local HTTP API (:mod:`memkit.frontends.http.api`).

A thin layer: it reads the options (flag, then environment, then memkit.yaml's ``serve:``), checks
the token rule and hands the vault to :class:`memkit.frontends.http.api.HTTPServer`. The server module, and
Starlette and uvicorn with it, are imported only when the command runs.
"""
from __future__ import annotations

import os
import sys

import click

from ...errors import MemkitError
from .common import get_vault

TOKEN_ENV = "MEMKIT_TOKEN"


@click.command()
@click.option("--host", metavar="ADDRESS", help="Address to bind (default: memkit.yaml serve.host, else 127.0.0.1). "
              "Any but a loopback address needs a token.")
@click.option("--port", type=click.IntRange(0, 65535), metavar="N",
              help="TCP port (default: memkit.yaml serve.port, else 8765; 0: any free port).")
@click.option("--token", envvar=TOKEN_ENV, metavar="TOKEN", show_envvar=True,
              help="Requests must send 'Authorization: Bearer TOKEN'. Env: MEMKIT_TOKEN, else the variable "
                   "memkit.yaml's serve.token_env names.")
@click.option("--socket", "unix", type=click.Path(dir_okay=False), metavar="PATH",
              help="Listen on a Unix socket (mode 0600, no token needed) instead of a TCP port.")
@click.option("--watch", is_flag=True, help="Also keep the index and index.txt current while files change and, with "
              "an LLM configured, digest idle inbox/ transcripts (as `memkit watch`, but not its daily upkeep: "
              "POST /upkeep runs it).")
@click.option("--polling", is_flag=True, help="With --watch: poll the files instead of OS events.")
@click.option("--mcp", "mcp", is_flag=True, help="Also serve MCP (streamable HTTP) at /mcp: the tools of `memkit mcp`.")
@click.option("--idle-exit", type=click.FloatRange(0), default=0, metavar="MINUTES",
              help="Stop after MINUTES with no request (0: never, the default; the hook's server: 30).")
@click.pass_context
def serve(ctx: click.Context, host: str | None, port: int | None, token: str | None, unix: str | None, watch: bool,
          polling: bool, mcp: bool, idle_exit: float) -> None:
    """Serve the vault as a local HTTP API (JSON; described at /openapi.json).

    Routes: GET /search, POST /add, POST /edit, POST /forget, GET /topics, GET /topics/NAME,
    GET /why/ID, GET /related, GET /recent, POST /context, GET /pending, POST /pending/done, GET /proactive, GET /stats,
    GET /busy, GET /index, POST /index; the sessions' GET and POST /sessions, GET
    /sessions/search, GET /sessions/ID, POST /sessions/ID/window, POST /sessions/ID/messages;
    POST /upkeep; GET /health; a web page at /; with --mcp, MCP at /mcp. Binds 127.0.0.1:8765 by default; binding any other
    address needs a token. Requests from web pages of other sites are refused. Runs until Ctrl-C
    or SIGTERM. Needs Starlette and uvicorn, which the MCP extra installs: pip install 'mcp>=2'.

    \b
    Example:
      memkit serve
      curl -s 'http://127.0.0.1:8765/search?q=rice&k=3'
      MEMKIT_TOKEN=s3cret memkit serve --host 0.0.0.0 --watch
    """
    vault = get_vault(ctx)
    settings = vault.config.serve
    host = host or settings.host
    port = settings.port if port is None else port
    if not token and settings.token_env:
        token = os.environ.get(settings.token_env) or None
        if token is None:
            raise MemkitError(f"memkit.yaml serve.token_env names {settings.token_env}, which is not set")
    from ..http import HTTPServer  # only this command needs the server (and Starlette, uvicorn)

    server = HTTPServer(vault, host=host, port=port, token=token, unix=unix, watch=watch, polling=polling, mcp=mcp,
                        idle_exit_s=idle_exit * 60 or None)
    try:
        server.prepare()  # the model loaded, the index current, the watcher started: then we say so
    except BaseException:
        server.close()
        raise
    where = f"{server.url} on the Unix socket {server.where}" if unix else server.url
    click.echo(f"serving {vault.root} on {where} (API: {server.url}/openapi.json)"
               f"{'; MCP at /mcp' if mcp else ''}{'; token required' if token else ''}; Ctrl-C to stop")
    sys.stdout.flush()
    server.run()
    click.echo(f"stopped: no request for {idle_exit:g} minutes" if server.idled else "stopped")
