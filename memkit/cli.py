"""The `memkit` command: a thin click layer over the library (the only module importing click)."""
from __future__ import annotations

import json
import logging
import os
import sqlite3
import sys
from datetime import datetime
from typing import Any, Callable

import click

from .cli_serve import serve
from .errors import InvalidValue, MemkitError, TopicNameError, TopicNotFound
from .cli_session import print_session_hits, session_group
from .vault import Threshold, Vault, find_vault, merge_files, parse_day, relative_time

DEBUG_ENV = "MEMKIT_DEBUG"


class _StderrHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"memkit: {record.levelname.lower()}: {record.getMessage()}", err=True)


def _setup_logging() -> None:
    log = logging.getLogger("memkit")
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        log.addHandler(_StderrHandler())
    log.setLevel(logging.INFO)
    log.propagate = False


GLOBAL_OPTIONS = ("--vault", "--model")  #: the group's options, also accepted after the command name


def hoist_global_options(args: list[str], commands: set[str]) -> list[str]:
    """``memkit topics --vault X`` -> ``memkit --vault X topics``: the group's options may follow the
    command name (never after ``--``, where everything is text)."""
    head: list[str] = []
    rest: list[str] = []
    seen_command = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        name = arg.split("=", 1)[0]
        if seen_command and name in GLOBAL_OPTIONS and ("=" in arg or i + 1 < len(args)):
            take = 1 if "=" in arg else 2
            head += args[i:i + take]
            i += take
            continue
        if not seen_command and arg in commands:
            seen_command = True
        (rest if seen_command else head).append(arg)
        i += 1
    return head + rest


def wants_json(args: list[str]) -> bool:
    """Whether ``--json`` was given (before any ``--``): errors are then JSON too."""
    return "--json" in (args[:args.index("--")] if "--" in args else args)


def usage_line(exc: click.UsageError, argv: list[str]) -> str:
    """One line for a usage error, with what to do (never click's usage block)."""
    message = exc.format_message().rstrip(".")
    message = message[:1].lower() + message[1:]
    command = exc.ctx.command_path if exc.ctx is not None else "memkit"
    if isinstance(exc, click.NoSuchOption):
        given = next((a for a in argv if a.startswith(exc.option_name)), exc.option_name)
        if not given.startswith("--") or " " in given:  # "-5 degrees", "-think again": text, not an option
            return f"{message}: text that starts with '-' goes after '--' ({command} -- {json.dumps(given)})"
    return f"{message} (see '{command} --help')"


def report_error(message: str, code: int, as_json: bool) -> None:
    """An error the way every command prints it: ``memkit: error: …`` on stderr, or with --json a
    ``{"error": …, "code": exit code}`` object on stdout."""
    if as_json:
        click.echo(json.dumps({"error": message, "code": code}, ensure_ascii=False))
    else:
        click.echo(f"memkit: error: {message}", err=True)


class BadValue(click.ClickException):
    """A value the library refused (a topic name, a date, an empty query): exit 2, like click's own."""

    exit_code = 2


class MemkitGroup(click.Group):
    """Turns library errors into one-line messages (exit 1; bad values and usage exit 2), JSON ones
    with --json; MEMKIT_DEBUG=1 shows tracebacks."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        argv = hoist_global_options(list(sys.argv[1:] if args is None else args), set(self.commands))
        if not standalone_mode:
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        as_json = wants_json(argv)
        try:
            result = super().main(argv, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # plain `memkit`: its help, as always
            click.echo(exc.ctx.get_help() if exc.ctx is not None else "")
            sys.exit(0)
        except click.UsageError as exc:
            report_error(usage_line(exc, argv), exc.exit_code, as_json)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            report_error(exc.format_message(), exc.exit_code, as_json)
            sys.exit(exc.exit_code)
        except click.Abort:
            report_error("aborted", 1, as_json)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (TopicNameError, InvalidValue) as exc:
            raise BadValue(str(exc)) from exc
        except MemkitError as exc:
            raise click.ClickException(str(exc)) from exc
        except (click.exceptions.Exit, click.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            raise click.Abort() from None
        except BrokenPipeError:  # `memkit topics | head`: the reader left, that is fine
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)
        except OSError as exc:  # a full disk, a read-only folder, a vanished file: one line, never a traceback
            where = f" ({exc.filename})" if exc.filename else ""
            raise click.ClickException(f"{exc.strerror or exc}{where}") from exc
        except sqlite3.OperationalError as exc:  # the index: "database or disk is full", "unable to open"
            raise click.ClickException(f"the search index (.memkit/index/): {exc}; memkit rebuilds it from the "
                                       f"files once the cause (disk space, permissions) is fixed") from exc
        except Exception as exc:  # an unexpected error: one line unless debugging
            if os.environ.get(DEBUG_ENV):
                raise
            raise click.ClickException(
                f"unexpected error: {type(exc).__name__}: {exc} (set {DEBUG_ENV}=1 for the traceback)"
            ) from exc


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 entry``, ``3 entries``."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def json_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "json_", is_flag=True, help="Print JSON for scripts.")(fn)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def get_vault(ctx: click.Context) -> Vault:
    obj = ctx.find_root().obj or {}
    if "vault_obj" not in obj:
        root = find_vault(obj.get("vault"), os.environ.get("MEMKIT_VAULT"))
        obj["vault_obj"] = Vault(root, model=obj.get("model"))
    return obj["vault_obj"]


@click.group(cls=MemkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--vault", "vault", type=click.Path(file_okay=False), metavar="PATH",
              help="The vault folder. Default: $MEMKIT_VAULT, else the nearest parent folder with memkit.yaml.")
@click.option("--model", envvar="MEMKIT_MODEL", metavar="MODEL",
              help="model2vec model id or folder (default: memkit.yaml's model). Env: MEMKIT_MODEL.")
@click.version_option(package_name="memkit-md", prog_name="memkit")
@click.pass_context
def main(ctx: click.Context, vault: str | None, model: str | None) -> None:
    """File-first, plain-text long-term memory for LLM assistants.

    Memories are markdown list items in vault/topics/*.md; edit them by hand, commit them to git.

    \b
    Quick start:
      memkit init ~/memory && cd ~/memory
      memkit add "Prefers bomba rice for paella" --topic cooking --kind preference
      memkit search "what rice do I use"
    """
    _setup_logging()
    # An ``obj`` given by the caller is kept: a test (or a program embedding the CLI) may pass
    # ``{"vault_obj": Vault(...)}`` to run the commands on a vault it built.
    ctx.ensure_object(dict).update(vault=vault, model=model)


@main.command()
@click.argument("path", default=".", type=click.Path(file_okay=False))
def init(path: str) -> None:
    """Create a vault in PATH (default: here).

    Writes memkit.yaml with commented defaults, topics/, inbox/, index.txt and a .gitignore that
    ignores .memkit/. Refuses to touch an existing vault.

    \b
    Example:
      memkit init ~/memory
    """
    vault = Vault.init(path)
    click.echo(f"created vault {vault.root}")
    hint = "" if os.path.abspath(path) == os.getcwd() else f"cd {path} && "
    click.echo(f"next: {hint}memkit add \"your first memory\"")


@main.command()
@click.argument("text")
@click.option("--topic", "-t", metavar="TOPIC", help="Topic name (default: general). Created if new.")
@click.option("--kind", metavar="KIND", help="fact, preference, decision, discovery, event, context…")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A #tag; repeat for several.")
@click.option("--due", metavar="DATE", help="A follow-up due then (kind pending): '(due DATE)'.")
@click.option("--until", metavar="DATE", help="The memory expires after this day: '(until DATE)'.")
@json_option
@click.pass_context
def add(ctx: click.Context, text: str, topic: str | None, kind: str | None, tags: tuple[str, ...], due: str | None,
        until: str | None, json_: bool) -> None:
    """Append a memory to a topic. TEXT '-' reads it from stdin (lines are joined into one entry).

    A topic that grows past topic_split_threshold_lines is split into subtopics right away; a
    topic that was split is not recreated: the memory goes to its closest subtopic. A pasted
    entry ('- [decision] Chose oak (2026-02-01)') keeps its kind and date. Text starting with
    '-' goes after '--'.

    \b
    Example:
      memkit add "Prefers bomba rice for paella" --topic cooking --kind preference --tag rice
      echo "Allergic to tree nuts" | memkit add - --topic health
      memkit add -- "-5 degrees tonight, the pipes may freeze"
      memkit add "Ask how the job interview went" --due 2026-11-28
      memkit add "Parking spot at the office is B14" --until 2026-12-31
    """
    if text == "-":
        text = sys.stdin.read()
    vault = get_vault(ctx)
    entry = vault.add(text, topic=topic, kind=kind, tags=tags, due=parse_day(due, "--due") if due is not None else None,
                      until=parse_day(until, "--until") if until is not None else None)
    if json_:
        echo_json(entry.to_dict())
    else:
        click.echo(f"added {entry.id} to {entry.topic}: {entry.text}")


@main.command()
@json_option
@click.pass_context
def topics(ctx: click.Context, json_: bool) -> None:
    """List topics: name, entries, last update, summary.

    \b
    Example:
      memkit topics
    """
    infos = sorted(get_vault(ctx).topics(), key=lambda t: t.updated, reverse=True)
    if json_:
        echo_json([t.to_dict() for t in infos])
        return
    if not infos:
        click.echo("no topics yet: add one with `memkit add TEXT --topic NAME`")
        return
    width = max(len(t.name) for t in infos)
    now = datetime.now()
    for t in infos:
        click.echo(f"{t.name:<{width}}  {t.entries:>4}  {relative_time(t.updated, now):<14}  {t.summary}")


@main.command()
@click.argument("topic")
@json_option
@click.pass_context
def show(ctx: click.Context, topic: str, json_: bool) -> None:
    """Show a topic's entries with their ids (for `memkit forget ID`).

    \b
    Example:
      memkit show cooking
    """
    vault = get_vault(ctx)
    try:
        t = vault.topic(topic)
    except TopicNotFound:
        children = vault.subtopics(topic)
        if not children:
            raise
        if json_:
            echo_json({"name": topic, "split_into": children})
        else:
            click.echo(f"{topic} was split into: {', '.join(children)} (see `memkit show {children[0]}`)")
        return
    children = vault.subtopics(t.name)
    if json_:
        echo_json(dict(t.to_dict(), file=t.path.relative_to(vault.root).as_posix(), split_into=children))
        return
    click.echo(f"{t.title} ({t.name}, {plural(len(t.entries), 'entry', 'entries')})"
               f"{' — ' + t.summary if t.summary else ''}")
    for e in t.entries:
        click.echo(f"{e.id}  {e.text}")
    if children:
        click.echo(f"(it was split into {', '.join(children)}; `memkit check` says how to fold this file into them)")


@main.command()
@click.argument("entry_id", required=False, metavar="[ID]")
@click.option("--match", "-m", metavar="TEXT", help="Forget the one entry whose text contains TEXT.")
@click.option("--topic", "-t", metavar="TOPIC", help="Look only in this topic (the same line in two topics).")
@click.option("--all", "all_", is_flag=True, help="An entry written several times (after a merge): remove every copy.")
@json_option
@click.pass_context
def forget(ctx: click.Context, entry_id: str | None, match: str | None, topic: str | None, all_: bool,
           json_: bool) -> None:
    """Remove an entry; it is kept in archive.md so you (and git) can undo it.

    \b
    Examples:
      memkit forget 3f2a9c1e
      memkit forget --match "stock cubes"
      memkit forget 3f2a9c1e --all       # the same line twice after a merge: both copies

    An entry written more than once loses its last copy (the output says which line), or every
    copy with --all.
    """
    if bool(entry_id) == bool(match):
        raise click.UsageError("give either an entry ID or --match TEXT")
    vault = get_vault(ctx)
    entries = vault.forget_every(entry_id, match=match, topic=topic) if all_ else \
        [vault.forget(entry_id, match=match, topic=topic)]
    if json_:
        echo_json(entries[0].to_dict() if not all_ else [e.to_dict() for e in entries])
    else:
        for entry in entries:
            click.echo(f"forgot {entry.id} from {entry.file} line {entry.line}: {entry.text}")
        click.echo("(moved to archive.md; put the line back in its topic to undo)")


@main.command()
@click.option("--rebuild", is_flag=True, help="Regenerate index.txt from the topic files.")
@json_option
@click.pass_context
def recent(ctx: click.Context, rebuild: bool, json_: bool) -> None:
    """Show the recent-topics index (index.txt) with relative times.

    \b
    Examples:
      memkit recent
      memkit recent --rebuild
    """
    vault = get_vault(ctx)
    items = vault.rebuild_recent() if rebuild else vault.recent()
    if json_:
        echo_json([r.to_dict() for r in items])
        return
    if rebuild:
        click.echo(f"rebuilt index.txt: {len(items)} topics", err=True)
    now = datetime.now()
    width = max((len(r.topic) for r in items), default=0)
    for r in items:
        click.echo(f"{relative_time(r.updated, now):<14}  {r.topic:<{width}}  {r.summary}".rstrip())


class _Progress:
    """A progress bar on stderr for long embedding runs (silent for short ones and non-terminals)."""

    def __init__(self) -> None:
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if total < 5000 or not sys.stderr.isatty():
                return
            self.bar = click.progressbar(length=total, label="embedding", file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


@main.command()
@click.option("--full", is_flag=True, help="Re-embed everything instead of only changed files.")
@json_option
@click.pass_context
def index(ctx: click.Context, full: bool, json_: bool) -> None:
    """Update the embedding index (.memkit/) for changed topic files.

    Incremental by default: only files whose content changed are re-read, and only entries whose
    text is new are embedded. Search does this by itself; run it to index ahead of time.

    \b
    Example:
      memkit index
      memkit index --full
    """
    vault = get_vault(ctx)
    progress = _Progress()
    try:
        report = vault.index(full=full, progress=progress)
    finally:
        progress.close()
    if json_:
        echo_json(report.to_dict())
    else:
        click.echo(report.summary())
        if report.errors:
            click.echo(f"{len(report.errors)} file(s) skipped, see the warnings above", err=True)


@main.command()
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(1, 1000), metavar="N", help="How many results (default: max_memories_per_search).")
@click.option("--threshold", type=click.FloatRange(-1, 1), metavar="X",
              help="Minimum cosine similarity (exact rare-word matches pass anyway). Default: memkit.yaml or the model's calibrated value.")
@click.option("--all", "no_threshold", is_flag=True, help="No threshold: always return the k best.")
@click.option("--topic", "-t", metavar="TOPIC", help="Only this topic (and its subtopics).")
@click.option("--kind", metavar="KIND", help="Only entries of this [kind].")
@click.option("--tag", metavar="TAG", help="Only entries with this #tag.")
@click.option("--since", metavar="DATE", help="Only entries dated on or after YYYY-MM-DD.")
@click.option("--min-importance", type=click.FloatRange(0, 1), metavar="X",
              help="Only entries of at least this (importance X), 0..1; an entry without one counts as 0.5.")
@click.option("--mode", type=click.Choice(["hybrid", "vector", "lexical"]), default="hybrid", show_default=True,
              help="Ranking: lexical + vector fusion, or one side alone.")
@click.option("--sessions", "sessions", is_flag=True,
              help="Search the messages of past conversations (sessions/) instead of the memories.")
@json_option
@click.pass_context
def search(ctx: click.Context, query: str, k: int | None, threshold: float | None, no_threshold: bool,
           topic: str | None, kind: str | None, tag: str | None, since: str | None, min_importance: float | None,
           mode: str, sessions: bool, json_: bool) -> None:
    """Search memories: exact words and meaning, fused.

    Indexes changed files first (a cheap check). Prints the best entries with id, topic and score.

    \b
    Examples:
      memkit search "what rice do I use"
      memkit search "hAP ax3" --topic home-lab --json
      memkit search "vet" --kind event --since 2026-01-01 -k 10
      memkit search "family" --min-importance 0.8
      memkit search --sessions "when do I fly to Lisbon"
    """
    if since is not None:
        since = parse_day(since, "--since").isoformat()
    vault = get_vault(ctx)
    if sessions:
        print_session_hits(vault.search_sessions(query, k=k or 5, since=since), json_)
        return
    limit: Threshold = None if no_threshold else threshold if threshold is not None else "auto"
    hits = vault.search(query, k=k, threshold=limit, topic=topic, kind=kind, tag=tag, since=since,
                        mode=mode, min_importance=min_importance)  # type: ignore[arg-type]  # click.Choice checked the mode
    if json_:
        echo_json([h.to_dict() for h in hits])
        return
    if not hits:
        filters = [f for f, v in (("--topic", topic), ("--kind", kind), ("--tag", tag), ("--since", since),
                                  ("--min-importance", min_importance)) if v is not None and v != ""]
        hint = f"check the filters ({', '.join(filters)})" if filters else ""
        click.echo(f"no memories match{' (' + hint + ')' if hint else ''}", err=True)
        return
    if not hits[0].confident:
        click.echo(f"no confident match; the closest {plural(len(hits), 'memory', 'memories')}, weak "
                   "(below the similarity threshold):", err=True)
    for h in hits:
        click.echo(f"{h.score:.2f}  {h.id}  {h.topic:<14} {h.text}")


@main.command()
@click.argument("transcripts", nargs=-1, required=True, type=click.Path(dir_okay=False), metavar="TRANSCRIPT...")
@click.option("--dry-run", is_flag=True, help="Show the change as a unified diff; write nothing.")
@json_option
@click.pass_context
def digest(ctx: click.Context, transcripts: tuple[str, ...], dry_run: bool, json_: bool) -> None:
    """Turn conversation transcripts into memory entries with the configured LLM.

    A transcript is `Speaker: text` lines, a JSON list of {role, content} messages, or JSONL.
    Conclusions go to the topic they belong to (or a new topic, or general); duplicates are
    skipped; entries they make outdated move to archive.md. Digesting a transcript twice adds
    nothing. Each transcript ends in a report of what was written where and what was skipped.

    \b
    Examples:
      memkit digest chat-2026-11-21.txt
      memkit digest --dry-run session.jsonl
    """
    vault = get_vault(ctx)
    llm = vault.llm()
    reports, failed = [], 0
    for path in transcripts:
        try:
            report = vault.digest(path, llm=llm, dry_run=dry_run)
        except MemkitError as exc:
            if len(transcripts) == 1:
                raise
            click.echo(f"memkit: error: {exc}", err=True)
            failed += 1
            continue
        reports.append(report)
        if json_:
            continue
        if dry_run and report.diff:
            click.echo(report.diff, nl=False)
        click.echo(report.summary())
        for topic, line in report.written:
            click.echo(f"  + {topic}: {line}")
        for topic, old, new in report.superseded:
            click.echo(f"  ~ {topic}: archived \"{old}\" (superseded by \"{new}\")")
        for text, reason in report.skipped:
            click.echo(f"  - skipped \"{text}\": {reason}")
        for name in report.split:
            click.echo(f"  split {name} into subtopics (over topic_split_threshold_lines)")
    if json_:
        echo_json([r.to_dict() for r in reports])
    if failed:
        ctx.exit(1)


@main.command("context")
@click.argument("message")
@click.option("--session", "-s", metavar="ID",
              help="Conversation id: memories accumulate, and a detected topic sticks, across calls with the same ID. "
                   "Without it the block is for this message alone.")
@click.option("--budget", type=click.IntRange(min=1), default=2000, show_default=True, metavar="N",
              help="Most tokens the block may take (~4 characters a token); the instructions are always kept.")
@click.option("--reset", is_flag=True, help="Forget the session's accumulated memories and topic first.")
@json_option
@click.pass_context
def context_cmd(ctx: click.Context, message: str, session: str | None, budget: int, reset: bool, json_: bool) -> None:
    """Print the memory block to put in an assistant's system prompt for MESSAGE.

    Recent topics (with relative times), then the memories relevant to the conversation so far
    (or, once its topic is detected, that topic's file), then instructions on using memory.
    MESSAGE "-" reads the message from stdin.

    \b
    Examples:
      memkit context "what should I cook tonight?" --session kitchen
      memkit context "and for dessert?" --session kitchen --json
      echo "$USER_MESSAGE" | memkit context - --session "$CHAT_ID" --budget 1000
    """
    vault = get_vault(ctx)
    if message == "-":
        message = sys.stdin.read()
    if reset and session:
        vault.reset_session(session)
    result = vault.context(message, session=session, budget_tokens=budget)
    if json_:
        echo_json(result.to_dict())
    else:
        click.echo(result.text, nl=False)


@main.command()
@click.option("--polling", is_flag=True, help="Poll the files instead of OS events (network drives, some containers).")
@click.option("--debounce", type=click.FloatRange(0.05, 10), default=0.3, show_default=True, metavar="SECONDS",
              help="Quiet time after a change before re-indexing (bursts are coalesced, at most ~1 s).")
@click.pass_context
def watch(ctx: click.Context, polling: bool, debounce: float) -> None:
    """Keep the index and index.txt current while files change; digest idle inbox transcripts.

    Runs until Ctrl-C or SIGTERM. Editors' save patterns, swap files, bursts of changes (git pull)
    and moved or deleted topics are handled; a change is searchable within about a second.
    With an LLM configured, a transcript in inbox/ unchanged for session_timeout_minutes is
    digested and moved to inbox/done/ (on failure: inbox/NAME.error). Once a day from
    upkeep_hour it runs `memkit upkeep` (expired entries to archive.md, the profile when due).

    \b
    Example:
      memkit watch
      memkit watch --polling
    """
    vault = get_vault(ctx)
    llm = vault.llm() if vault.config.llm else None

    def upkeep() -> None:
        if llm is not None:
            for result in vault.process_inbox(llm=llm):
                if result.error:
                    click.echo(f"inbox/{result.file}: {result.error}", err=True)
                elif result.report is not None:
                    summary = result.report.summary().split(": ", 1)[-1]
                    click.echo(f"inbox/{result.file}: {summary} (moved to inbox/done/)")
        if vault.upkeep_due():  # once a day, from upkeep_hour: the scheduled jobs
            for job in vault.upkeep(llm=llm).jobs:
                if job.changed:
                    click.echo(f"upkeep: {job.name}: {job.did}")

    inbox_handler: Callable[[], None] | None = upkeep

    def on_update(report: Any) -> None:
        if report.new or report.removed or report.changed_files:
            click.echo(report.summary())

    click.echo(f"watching {vault.root} (topics/{' and inbox/' if llm is not None else ''}); Ctrl-C to stop", err=True)
    waiting = vault.waiting_transcripts()
    if waiting:
        what = plural(len(waiting), "transcript")
        click.echo(f"{what} waiting in inbox/: " + ("digested once idle" if llm is not None else
                   "no LLM is configured, so nothing digests them (set `llm:` in memkit.yaml)"), err=True)
    # errors are already printed by the memkit logger on stderr; no on_error echo here
    # check the inbox often enough that an idle transcript waits at most ~half its timeout extra
    interval = max(1.0, min(30.0, vault.config.session_timeout_minutes * 30))
    from .watch import run_watch  # only this command needs watchdog

    run_watch(vault, polling=polling, debounce_s=debounce, on_update=on_update, inbox_handler=inbox_handler,
              inbox_interval_s=interval)
    click.echo("stopped", err=True)


@main.command()
@click.argument("topic")
@click.option("--dry-run", is_flag=True, help="Show the change as a unified diff; write nothing.")
@click.option("--min-part", type=click.IntRange(1), default=5, show_default=True, metavar="N",
              help="Smallest cluster kept as its own subtopic.")
@click.option("--max-parts", type=click.IntRange(2), default=None, metavar="N", help="Most subtopics (default 6, plus -general).")
@click.option("--no-llm", is_flag=True, help="Name subtopics from their own words even if an LLM is configured.")
@json_option
@click.pass_context
def split(ctx: click.Context, topic: str, dry_run: bool, min_part: int, max_parts: int | None, no_llm: bool,
          json_: bool) -> None:
    """Split TOPIC into subtopics by meaning (cooking -> cooking-rice, cooking-bread, cooking-general).

    Every entry moves, byte for byte, to exactly one subtopic; the new files get `parent: TOPIC`;
    the old file is removed only after the new ones are written. Subtopics are named by the LLM
    when one is configured, else from their entries' own distinctive words.

    \b
    Examples:
      memkit split cooking --dry-run
      memkit split cooking
    """
    vault = get_vault(ctx)
    plan = vault.split(topic, llm=None if no_llm else "auto", dry_run=dry_run, min_part=min_part,
                       max_parts=max_parts)
    if json_:
        echo_json(plan.to_dict())
    elif dry_run:
        click.echo(vault.split_diff(plan), nl=False)
    else:
        click.echo(f"split {plan.parent} into {len(plan.parts)} topics:")
        for p in plan.parts:
            click.echo(f"  {p.name} ({plural(len(p.entries), 'entry', 'entries')}): {p.summary}")


# ---- assistants: the MCP server and the conversation capture hook (issue 9) --------------------

@main.command()
@click.option("--dry-run", is_flag=True, help="Show the diff; write nothing.")
@json_option
@click.pass_context
def tidy(ctx: click.Context, dry_run: bool, json_: bool) -> None:
    """Move expired memories to archive.md (nothing is deleted).

    An entry expires after its own '(until DATE)', or when its kind's lifetime has passed since its
    date (memkit.yaml expire:, default context 1d, conversation 30d). Expired entries are already
    left out of search and context; `memkit watch` tidies once a day.

    \b
    Examples:
      memkit tidy --dry-run
      memkit tidy
    """
    report = get_vault(ctx).tidy(dry_run=dry_run)
    if json_:
        echo_json(report.to_dict())
        return
    if dry_run and report.diff:
        click.echo(report.diff, nl=False)
    for entry, why in report.expired:
        click.echo(f"{'would move' if dry_run else 'moved'} {entry.id} from {entry.topic} ({why}): {entry.text}")
    if not report.expired:
        click.echo("nothing has expired")


@main.command()
@click.argument("args", nargs=-1, required=True, metavar="[ID] TEXT")
@click.option("--match", "-m", metavar="TEXT", help="Edit the one entry whose text contains TEXT (no ID).")
@click.option("--topic", "-t", metavar="TOPIC", help="Look only in this topic.")
@json_option
@click.pass_context
def edit(ctx: click.Context, args: tuple[str, ...], match: str | None, topic: str | None, json_: bool) -> None:
    """Change a memory where it stands; the old line is kept in archive.md (see `memkit history`).

    Its kind and tags stay unless TEXT gives its own; it is dated today.

    \b
    Examples:
      memkit edit 3f2a9c1e "Manager is Tom Berg since Priya moved teams"
      memkit edit --match "Priya" "Manager is Tom Berg"
    """
    if len(args) == 2 and match is None:
        entry_id, text = args
    elif len(args) == 1 and match is not None:
        entry_id, text = None, args[0]
    else:
        raise click.UsageError("give an entry ID and the new text, or --match TEXT and the new text")
    entry = get_vault(ctx).edit(entry_id, text, match=match, topic=topic)
    if json_:
        echo_json(entry.to_dict())
    else:
        click.echo(f"edited: now {entry.id} in {entry.topic}: {entry.text}")
        click.echo(f"(the old line is in archive.md; `memkit history {entry.id}` shows the chain)")


@main.command()
@click.argument("entry_id", metavar="ID")
@json_option
@click.pass_context
def history(ctx: click.Context, entry_id: str, json_: bool) -> None:
    """Every version of a memory, oldest first (from archive.md; and git log in a git vault).

    \b
    Example:
      memkit history 3f2a9c1e
    """
    vault = get_vault(ctx)
    steps = vault.history(entry_id)
    commits = vault.git_history(steps[-1]) if steps else []
    if json_:
        echo_json({"versions": [s.to_dict() for s in steps], "git": commits})
        return
    for s in steps:
        where = "now, in " + s.topic if s.status == "current" else f"{s.day}, left {s.topic}: {s.status}"
        click.echo(f"{s.id}  {s.text}\n          ({where})")
    if commits:
        click.echo("git log of the newest version:")
        for line in commits:
            click.echo(f"  {line}")


@main.command()
@json_option
@click.pass_context
def pending(ctx: click.Context, json_: bool) -> None:
    """List follow-ups (kind pending), the most urgent first.

    A follow-up is an entry like '- [pending] Interview at Acme (due 2026-11-28) (urgency high)
    (ask: How did it go?)': its background, when to ask, how urgent and what to ask. Add one with
    `memkit add TEXT --due DATE`; a digest writes them too. The due and overdue ones appear in
    `memkit context`. A follow-up is kept 7 days, or until its due day (memkit.yaml expire.pending).

    \b
    Example:
      memkit pending
    """
    items = get_vault(ctx).pending()
    if json_:
        echo_json([f.to_dict() for f in items])
        return
    if not items:
        click.echo("no follow-ups: add one with `memkit add TEXT --due DATE`")
    for f in items:
        when = ("no due date" if f.due is None else f"due {f.due.isoformat()}" +
                (f", {f.overdue_days} day{'s' if f.overdue_days != 1 else ''} overdue" if f.overdue_days > 0
                 else " (today)" if f.overdue_days == 0 else ""))
        click.echo(f"{f.entry.id}  {f.entry.text}  [{when}; {f.entry.topic}]")
        if f.urgency or f.question:
            said = " · ".join(x for x in (f.urgency, f"ask: {f.question}" if f.question else None) if x)
            click.echo(f"          {said}")


@main.command()
@click.argument("entry_id", required=False, metavar="[ID]")
@click.option("--match", "-m", metavar="TEXT", help="The one entry whose text contains TEXT.")
@json_option
@click.pass_context
def done(ctx: click.Context, entry_id: str | None, match: str | None, json_: bool) -> None:
    """Mark a follow-up done: it moves to archive.md ('done').

    \b
    Example:
      memkit done 3f2a9c1e
    """
    if bool(entry_id) == bool(match):
        raise click.UsageError("give either an entry ID or --match TEXT")
    entry = get_vault(ctx).done(entry_id, match=match)
    if json_:
        echo_json(entry.to_dict())
    else:
        click.echo(f"done: {entry.id} ({entry.text}) moved to archive.md")


@main.command()
@click.option("--at", "at", metavar="TIME", help="Ask about this moment instead of now: 'YYYY-MM-DD HH:MM'.")
@click.option("--no-llm", is_flag=True, help="Give the suggested question; do not ask the LLM for an opening line.")
@json_option
@click.pass_context
def proactive(ctx: click.Context, at: str | None, no_llm: bool, json_: bool) -> None:
    """Is now a good moment to bring something up? Which follow-up, and how.

    Looks at the due, overdue and urgent follow-ups, memkit.yaml's quiet_hours and the time since
    the last conversation (proactive_gap_hours). With an LLM configured it drafts the opening
    line; without one it gives the follow-up's suggested question. Exit 0 either way; --json
    has "now": true or false.

    \b
    Examples:
      memkit proactive
      memkit proactive --json --at "2026-11-28 09:00"
    """
    nudge = get_vault(ctx).proactive(now=_moment(at), llm=None if no_llm else "auto")
    if json_:
        echo_json(nudge.to_dict())
        return
    click.echo(("now: " if nudge.now else "not now: ") + nudge.reason)
    if nudge.follow_up is not None:
        click.echo(f"  {nudge.follow_up.entry.id}  {nudge.follow_up.entry.text}")
        click.echo(f"  say: {nudge.opening or nudge.question}")


@main.command()
@json_option
@click.pass_context
def stats(ctx: click.Context, json_: bool) -> None:
    """Counts: entries per topic and kind, follow-ups, expired entries, archive, index, inbox.

    \b
    Example:
      memkit stats --json
    """
    data = get_vault(ctx).stats()
    if json_:
        echo_json(data)
        return
    click.echo(f"{plural(data['entries'], 'entry', 'entries')} in {plural(data['topics'], 'topic')}; "
               f"{data['archive_entries']} in archive.md")
    click.echo("by kind: " + ", ".join(f"{k} {n}" for k, n in data["per_kind"].items()))
    click.echo(f"follow-ups: {data['pending']} ({data['overdue']} overdue, {data['due'] - data['overdue']} due today); "
               f"expired awaiting `memkit tidy`: {data['expired_awaiting_tidy']}")
    index = data["index"]
    if index.get("model"):
        click.echo(f"index: {index['model']} ({index['dim']}-d), {index['stale_files']} topic file(s) to re-index")
    inbox = data["inbox"]
    click.echo(f"inbox: {len(inbox['waiting'])} waiting, {len(inbox['errors'])} error(s); "
               f"last digest: {data['last_digest'] or 'never'}")
    if data["files_needing_attention"]:
        click.echo(f"{data['files_needing_attention']} file(s) need you: see `memkit check`")


@main.command()
@click.argument("topic")
@click.option("--before", required=True, metavar="DATE", help="Condense entries dated before this day (YYYY-MM-DD).")
@click.option("--dry-run", is_flag=True, help="Show the diff; write nothing.")
@json_option
@click.pass_context
def compact(ctx: click.Context, topic: str, before: str, dry_run: bool, json_: bool) -> None:
    """Condense a topic's older entries into fewer, denser ones (LLM); originals go to archive.md.

    Entries dated on or after --before, and undated ones, are never touched.

    \b
    Example:
      memkit compact running --before 2025-01-01 --dry-run
    """
    report = get_vault(ctx).compact(topic, before=parse_day(before, "--before"), dry_run=dry_run)
    _print_change(report, json_, "compacted")


@main.command()
@click.option("--dry-run", is_flag=True, help="Show the proposed profile as a diff; write nothing.")
@click.option("--proposed", is_flag=True, help="The rewrite `memkit upkeep` proposed, as it was (no LLM call).")
@json_option
@click.pass_context
def distill(ctx: click.Context, dry_run: bool, proposed: bool, json_: bool) -> None:
    """Rewrite the pinned profile (topics/profile.md) from the vault's durable memories (LLM).

    The profile is always the first layer of `memkit context`; it is kept under
    profile_max_entries lines, and lines it drops go to archive.md. After distill_after new
    conclusions `memkit upkeep` proposes a rewrite: --proposed --dry-run shows it, --proposed
    writes it.

    \b
    Examples:
      memkit distill --dry-run
      memkit distill --proposed
    """
    report = get_vault(ctx).distill(dry_run=dry_run, proposed=proposed)
    _print_change(report, json_, "profile")


@main.command()
@click.option("--at", "at", metavar="TIME", help="Run as if at this moment: 'YYYY-MM-DD HH:MM'.")
@json_option
@click.pass_context
def upkeep(ctx: click.Context, at: str | None, json_: bool) -> None:
    """Run every scheduled job now and say what each did.

    Expired entries move to archive.md (tidy); after distill_after new conclusions the pinned
    profile is distilled again (written at once with distill_apply: true, else proposed for
    review). `memkit watch` runs this once a day from upkeep_hour.

    \b
    Examples:
      memkit upkeep
      memkit upkeep --json
    """
    report = get_vault(ctx).upkeep(now=_moment(at))
    if json_:
        echo_json(report.to_dict())
        return
    for line in report.lines():
        click.echo(line)


def _moment(at: str | None) -> datetime | None:
    """An --at option's moment (None: now)."""
    if at is None:
        return None
    try:
        return datetime.fromisoformat(at.strip())
    except ValueError:
        raise BadValue(f"--at must be like '2026-11-28 09:00', got {at!r}") from None


def _print_change(report: Any, json_: bool, what: str) -> None:
    if json_:
        echo_json(report.to_dict())
        return
    if report.diff:
        click.echo(report.diff, nl=False)
    verb = "would replace" if report.dry_run else "replaced"
    click.echo(f"{what}: {verb} {len(report.removed)} line(s) with {len(report.added)}"
               + (f"; {len(report.kept)} left as they were" if getattr(report, "kept", None) else ""))


@main.command("check")
@click.option("--fix", is_flag=True, help="Repair what is safe: duplicate entries (to archive.md), duplicate "
                                         "frontmatter keys, index.txt, the search index.")
@json_option
@click.pass_context
def check(ctx: click.Context, fix: bool, json_: bool) -> None:
    """Report every problem in the vault, with file and line; exit 1 if one needs a person.

    Needs a person: merge conflicts, invalid frontmatter, files memkit skips (and why), a topic
    recreated beside its subtopics, transcripts the watcher could not digest. --fix repairs the
    rest. As a git pre-commit hook (.git/hooks/pre-commit):

    \b
      #!/bin/sh
      exec memkit --vault "$(git rev-parse --show-toplevel)" check

    \b
    Examples:
      memkit check
      memkit check --fix
      memkit check --json
    """
    report = get_vault(ctx).check(fix=fix)
    if json_:
        echo_json(report.to_dict())
    else:
        for line in report.fixed:
            click.echo(f"fixed: {line}")
        for problem in report.problems:
            label = "needs you" if problem.needs_person else "note" if problem.note else "fixable"
            click.echo(f"{label}: {problem.message}")
        if report.clean:
            click.echo("no problems found" + (" (after the fixes above)" if report.fixed else ""))
        elif not fix and not report.needs_person:
            click.echo("run `memkit check --fix` to repair these")
    if report.needs_person:
        ctx.exit(1)


@main.command("git-setup")
@json_option
@click.pass_context
def git_setup(ctx: click.Context, json_: bool) -> None:
    """Make the vault merge-friendly in git; run once per clone (idempotent).

    Adds memkit's lines to .gitattributes (topic files use memkit's merge driver; archive.md and
    index.txt are union-merged) and .gitignore (.memkit/, inbox/done/, *.error), and registers
    the merge driver in this clone's .git/config, which git does not copy when cloning.

    \b
    Example:
      cd ~/memory && git init && memkit git-setup && git add -A && git commit -m memory
    """
    result = get_vault(ctx).git_setup()
    if json_:
        echo_json(result.to_dict())
        return
    click.echo(f"updated {', '.join(result.changed)}" if result.changed else ".gitattributes and .gitignore already set up")
    if result.registered:
        click.echo(f"merge driver 'memkit' registered in {result.repository}")
    else:
        click.echo("not in a git repository yet: run `git init`, then `memkit git-setup` again", err=True)


@main.command("merge-driver", hidden=True)
@click.argument("base")
@click.argument("ours")
@click.argument("theirs")
@click.argument("path", required=False)
def merge_driver(base: str, ours: str, theirs: str, path: str | None) -> None:
    """Git's merge driver for topic files: merges BASE, OURS and THEIRS into OURS.

    Git runs it (`memkit git-setup` registers it): both sides' new entries are kept, the newest
    `updated:` wins, real conflicts are left marked and exit 1.

    \b
    Example (what git runs; %O %A %B %P are git's placeholders):
      memkit merge-driver %O %A %B %P
    """
    left = merge_files(base, ours, theirs)
    if left:
        click.echo(f"memkit: {path or ours}: {left} conflict(s) left for you to resolve", err=True)
    sys.exit(1 if left else 0)


@main.command("mcp")
@click.pass_context
def mcp_cmd(ctx: click.Context) -> None:
    """Serve the vault to an assistant as an MCP server over stdio.

    Tools: search_memories, add_memory, forget_memory, get_context, list_topics, read_topic,
    recent_topics, and digest_transcript when memkit.yaml configures an LLM; topic files are
    resources (memkit://topics/NAME). The model loads once and stays warm; writes take the vault's
    lock like the CLI. Stdout carries only the protocol; messages go to stderr. Needs the MCP SDK:
    pip install 'mcp>=2'.

    \b
    Examples:
      memkit --vault ~/memory mcp
      claude mcp add memkit -- memkit --vault ~/memory mcp
    """
    from .mcp_server import require_sdk, serve  # only this command needs the MCP SDK

    require_sdk()
    serve(get_vault(ctx))


main.add_command(session_group)


@main.command()
@click.argument("transcript", required=False, metavar="[TRANSCRIPT]")
@click.option("--session", "-s", metavar="ID",
              help="Name the queued file after this id (default: the hook's session_id, the transcript's own, "
                   "the file path, or the content). The same id replaces the same file.")
@click.option("--now", "now", is_flag=True, help="Digest at once with the configured LLM instead of queueing.")
@click.option("--save", "save", is_flag=True,
              help="Also store the conversation as a session in sessions/ (again: only new messages are added).")
@json_option
@click.pass_context
def capture(ctx: click.Context, transcript: str | None, session: str | None, now: bool, save: bool,
            json_: bool) -> None:
    """Queue a finished conversation in inbox/ for `memkit watch` to digest.

    Reads TRANSCRIPT, or stdin: a Claude Code Stop/SessionEnd hook payload (its JSONL transcript
    is read: user and assistant text only, no tool calls, tool results or thinking), JSON
    messages, or `Speaker: text` lines. Capturing the same session again replaces its queued
    file. A TRANSCRIPT that is not a regular file (a FIFO, a device) is refused. Its errors exit
    with 1, not 2 (which a Claude Code Stop hook reads as "do not stop").

    \b
    Examples:
      memkit --vault ~/memory capture          # as a Claude Code Stop / SessionEnd hook
      memkit capture chat.txt --session chat-42
      echo '[{"role": "user", "content": "I moved to Porto"}]' | memkit capture --json
      memkit capture ~/.claude/projects/p/3f1c.jsonl --now
    """
    vault = get_vault(ctx)
    if transcript in (None, "-"):
        if transcript is None and sys.stdin.isatty():
            raise click.ClickException("give a TRANSCRIPT path, or pipe a conversation or a hook payload on stdin")
        result = vault.capture(stdin=sys.stdin.buffer, session=session, now=now, save=save)
    else:
        result = vault.capture(path=transcript, session=session, now=now, save=save)
    if json_:
        echo_json(result.to_dict())
    else:
        click.echo(result.summary())


main.add_command(serve)
