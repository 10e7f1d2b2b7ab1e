"""`memkit digest`, `capture`, `watch`, `split`, `tidy`, `compact`, `distill`, `upkeep`, `proactive`: the
jobs that write for you, most of them with the LLM (click commands over :class:`memkit.Vault`; the group
is in :mod:`memkit.frontends.cli.group`)."""
from __future__ import annotations

import sys
from typing import Any, Callable

import click

from ...errors import MemkitError
from ...vault import LLMChoice, parse_day
from ..operations import moment
from .common import cli_params, echo_json, get_vault, json_option, plural


@click.command()
@click.argument("transcripts", nargs=-1, required=True, type=click.Path(dir_okay=False), metavar="TRANSCRIPT...")
@click.option("--dry-run", is_flag=True, help="Show the change as a unified diff; write nothing.")
@click.option("--force", is_flag=True, help="Read a transcript again, even one digested before.")
@click.option("--allow-many-supersedes", is_flag=True,
              help="Archive more than 3 entries as outdated by one transcript (else the digest stops and asks).")
@json_option
@click.pass_context
def digest(ctx: click.Context, transcripts: tuple[str, ...], dry_run: bool, force: bool, allow_many_supersedes: bool,
           json_: bool) -> None:
    """Turn conversation transcripts into memory entries with the configured LLM.

    A transcript is `Speaker: text` lines, a JSON list of {role, content} messages, or JSONL.
    Conclusions go to the topic they belong to (or a new topic, or general); duplicates are
    skipped, and so is what was forgotten, edited away or done (archive.md); entries they make
    outdated move to archive.md, only those it plainly bears on (shared words, the same topic and
    kind, or a close meaning), at most 3 (--allow-many-supersedes: more). Digesting a transcript twice adds nothing; a conversation that
    went on is read from where the last digest ended (--force reads it all again). Each
    transcript ends in a report of what was written where and what was skipped.

    \b
    Examples:
      memkit digest chat-2026-11-21.txt
      memkit digest --dry-run session.jsonl
    """
    vault = get_vault(ctx)
    reports, failed = [], 0
    for path in transcripts:
        try:
            report = vault.digest(path, dry_run=dry_run, force=force,
                                  allow_many_supersedes=allow_many_supersedes)
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
        for topic, old, new, _why in report.refused:
            click.echo(f"  ! {topic}: kept \"{old}\" (the LLM called it outdated by \"{new}\", which does not bear on it)")
        for text, reason in report.skipped:
            click.echo(f"  - skipped \"{text}\": {reason}")
        for name in report.split:
            click.echo(f"  split {name} into subtopics (over topic_split_threshold_lines)")
    if json_:
        echo_json([r.to_dict() for r in reports])
    if failed:
        ctx.exit(1)


@click.command()
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


@click.command()
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
    llm: LLMChoice = "auto" if vault.config.llm else None

    def upkeep() -> None:
        if llm is not None:
            for result in vault.upkeep.process_inbox(llm=llm):
                if result.error:
                    click.echo(f"inbox/{result.file}: {result.error}", err=True)
                elif result.report is not None:
                    summary = result.report.summary().split(": ", 1)[-1]
                    click.echo(f"inbox/{result.file}: {summary} (moved to inbox/done/)")
        if vault.upkeep.due():  # once a day, from upkeep_hour: the scheduled jobs
            for job in vault.upkeep.run(llm=llm).jobs:
                if job.changed:
                    click.echo(f"upkeep: {job.name}: {job.did}")

    inbox_handler: Callable[[], None] | None = upkeep

    def on_update(report: Any) -> None:
        if report.new or report.removed or report.changed_files:
            click.echo(report.summary())

    click.echo(f"watching {vault.root} (topics/{' and inbox/' if llm is not None else ''}); Ctrl-C to stop", err=True)
    waiting = vault.upkeep.waiting_transcripts()
    if waiting:
        what = plural(len(waiting), "transcript")
        click.echo(f"{what} waiting in inbox/: " + ("digested once idle" if llm is not None else
                   "no LLM is configured, so nothing digests them (set `llm:` in memkit.yaml)"), err=True)
    # errors are already printed by the memkit logger on stderr; no on_error echo here
    # check the inbox often enough that an idle transcript waits at most ~half its timeout extra
    interval = max(1.0, min(30.0, vault.config.session_timeout_minutes * 30))
    from ..watch import run_watch  # only this command needs watchdog

    run_watch(vault, polling=polling, debounce_s=debounce, on_update=on_update, inbox_handler=inbox_handler,
              inbox_interval_s=interval)
    click.echo("stopped", err=True)


@click.command()
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
        click.echo(plan.diff(vault.store), nl=False)
    else:
        click.echo(f"split {plan.parent} into {len(plan.parts)} topics:")
        for p in plan.parts:
            click.echo(f"  {p.name} ({plural(len(p.entries), 'entry', 'entries')}): {p.summary}")


@click.command()
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
    report = get_vault(ctx).upkeep.tidy(dry_run=dry_run)
    if json_:
        echo_json(report.to_dict())
        return
    if dry_run and report.diff:
        click.echo(report.diff, nl=False)
    for entry, why in report.expired:
        click.echo(f"{'would move' if dry_run else 'moved'} {entry.id} from {entry.topic} ({why}): {entry.text}")
    if not report.expired:
        click.echo("nothing has expired")


@click.command()
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
    report = get_vault(ctx).upkeep.compact(topic, before=parse_day(before, "--before"), dry_run=dry_run)
    _print_change(report, json_, "compacted")


@click.command()
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
    report = get_vault(ctx).upkeep.distill(dry_run=dry_run, proposed=proposed)
    _print_change(report, json_, "profile")


@click.command()
@cli_params("upkeep")
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
    report = get_vault(ctx).upkeep.run(now=moment(at, "--at"))
    if json_:
        echo_json(report.to_dict())
        return
    for line in report.lines():
        click.echo(line)


@click.command()
@cli_params("proactive")
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
    nudge = get_vault(ctx).proactive(now=moment(at, "--at"), llm=None if no_llm else "auto")
    if json_:
        echo_json(nudge.to_dict())
        return
    click.echo(("now: " if nudge.now else "not now: ") + nudge.reason)
    if nudge.follow_up is not None:
        click.echo(f"  {nudge.follow_up.entry.id}  {nudge.follow_up.entry.text}")
        click.echo(f"  say: {nudge.opening or nudge.question}")


def _print_change(report: Any, json_: bool, what: str) -> None:
    if json_:
        echo_json(report.to_dict())
        return
    if report.diff:
        click.echo(report.diff, nl=False)
    verb = "would replace" if report.dry_run else "replaced"
    click.echo(f"{what}: {verb} {len(report.removed)} line(s) with {len(report.added)}"
               + (f"; {len(report.kept)} left as they were" if getattr(report, "kept", None) else ""))



__all__ = ["digest", "capture", "watch", "split", "tidy", "compact", "distill", "upkeep", "proactive"]
