"""`memkit search`, `related`, `context` and `index`: finding memories (click commands over :class:`memkit.Vault`;
the group is in :mod:`memkit.frontends.cli.group`)."""
from __future__ import annotations

import sys
from typing import Any

import click

from ...vault import Threshold
from .common import cli_params, echo_json, get_vault, json_option, plural, table_command


@click.command()
@cli_params("search")
@json_option
@click.pass_context
def search(ctx: click.Context, query: str, k: int | None, threshold: float | None, no_threshold: bool,
           topic: str | None, kind: str | None, tag: str | None, since: str | None, person: str | None,
           relation: str | None, where: tuple[str, ...], linked: str | None, min_importance: float | None,
           mode: str, fast: bool, sessions: bool, json_: bool) -> None:
    """Search memories: exact words and meaning, fused.

    Indexes changed files first (a cheap check). Prints the best entries with id, topic and their
    relevance: how likely each answers the question, 0..1, where the judge ran (else the ranking
    score); "(weak)" marks a hit the vault may not answer the question with.

    \b
    Examples:
      memkit search "what rice do I use"
      memkit search "hAP ax3" --topic home-lab --json
      memkit search "vet" --kind event --since 2026-01-01 -k 10
      memkit search "family" --min-importance 0.8
      memkit search "weekend plans" --with Ana
      memkit search "birthday" --relation family
      memkit search "move" --where city=Porto
      memkit search "budget" --linked work/harbor
      memkit search "what do I drive" --fast
      memkit search --sessions "when do I fly to Lisbon"
    """
    vault = get_vault(ctx)
    if sessions:
        from .session import print_session_hits  # printed as `memkit session search` prints; loaded for --sessions

        print_session_hits(vault.conversations.search(query, k=k or 5, since=since), json_)
        return
    limit: Threshold = None if no_threshold else threshold if threshold is not None else "auto"
    hits = vault.search(query, k=k, threshold=limit, topic=topic, kind=kind, tag=tag, since=since,
                        mode=mode, min_importance=min_importance,  # type: ignore[arg-type]  # click.Choice checked the mode
                        fast=fast, person=person, relation=relation, where=where,
                        linked=linked)
    if json_:
        echo_json([h.to_dict() for h in hits])
        return
    if not hits:
        filters = [f for f, v in (("--topic", topic), ("--kind", kind), ("--tag", tag), ("--since", since),
                                  ("--with", person), ("--relation", relation), ("--where", where or None),
                                  ("--linked", linked),
                                  ("--min-importance", min_importance)) if v is not None and v != ""]
        hint = f"; check the filters: {', '.join(filters)}" if filters else ""
        click.echo(f"no memories match{hint}", err=True)
        return
    if not any(h.confident for h in hits):
        click.echo(f"no confident match; the closest {plural(len(hits), 'memory', 'memories')}, weak "
                   "(below the similarity threshold):", err=True)
        weak = ""
    else:
        weak = "  (weak)"  # a weak hit among confident ones (the judge ranks it there)
    print_hits(hits, weak)


def print_hits(hits: list[Any], weak: str) -> None:
    """Hits as `memkit search` prints them: relevance, id, topic, text, (weak)."""
    for h in hits:
        shown = h.score if h.relevance is None else h.relevance
        click.echo(f"{shown:.2f}  {h.id}  {h.topic:<14} {h.text}{'' if h.confident else weak}")


@click.command("related")
@cli_params("related")
@json_option
@click.pass_context
def related(ctx: click.Context, ref: str, k: int | None, json_: bool) -> None:
    """The memories most like a memory (its ID) or a topic, without a query.

    The memory's own text (a topic's title, summary and entries) goes through the two stages of a
    search (words and meaning, then the judge); the memory itself, or the whole topic, is left
    out. "(weak)" marks a hit below the search threshold.

    \b
    Examples:
      memkit related 3f2a9c1e
      memkit related work/harbor --json
    """
    found = get_vault(ctx).links.related(ref, k=k)
    if json_:
        echo_json(found.to_dict())
        return
    if not found.hits:
        click.echo("nothing else in the vault is like it", err=True)
        return
    print_hits(found.hits, "" if not any(h.confident for h in found.hits) else "  (weak)")


@table_command("context")
def context_cmd(block: Any, answer: dict[str, Any], **_: Any) -> None:
    """Print the memory block to put in an assistant's system prompt for MESSAGE.

    Recent topics (with relative times), then the memories relevant to the conversation so far
    (or, once its topic is detected, that topic's file), then instructions on using memory.
    MESSAGE "-" reads the message from stdin.

    With --session ID, the conversation session ID (started if there is none) adds its last
    context_turns messages and its earlier messages relevant to MESSAGE. The context only reads
    it: save each message with `memkit session append`. --clear ends its window: later blocks
    show only the messages saved after it (the file keeps them all).

    \b
    Examples:
      memkit context "what should I cook tonight?" --session kitchen
      memkit context "and for dessert?" --session kitchen --json
      echo "$USER_MESSAGE" | memkit context - --session "$CHAT_ID" --budget 1000
    """
    click.echo(block.text, nl=False)


class _Progress:
    """A progress bar on stderr for long embedding runs (silent for short ones and non-terminals)."""

    def __init__(self, label: str = "embedding", least: int = 5000) -> None:
        self.bar: Any = None
        self.label = label
        self.least = least

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if total < self.least or not sys.stderr.isatty():
                return
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


@click.command()
@cli_params("index")
@json_option
@click.pass_context
def index(ctx: click.Context, full: bool, judge: bool, json_: bool) -> None:
    """Update the embedding index (.memkit/) for changed topic files.

    Incremental by default: only files whose content changed are re-read, and only entries whose
    text is new are embedded. Search does this by itself; run it to index ahead of time.

    It returns once the first search stage is indexed and says how many entries have no judge
    vector yet: a search embeds the ones it meets (milliseconds each), and `memkit watch`,
    `memkit serve` and `memkit mcp` fill them while they run; --judge fills them now.

    \b
    Example:
      memkit index
      memkit index --full
      memkit index --judge
    """
    vault = get_vault(ctx)
    progress, judging = _Progress(), _Progress("judge vectors", 500)
    try:
        report = vault.index(full=full, progress=progress, judge_progress=judging, judge=judge)
    finally:
        progress.close()
        judging.close()
    missing = None if judge or report.busy else vault.frontend_internals.judge_missing()
    if json_:
        echo_json(report.to_dict() | ({} if missing is None else {"judge_missing": missing}))
    else:
        click.echo(report.summary())
        if missing:
            click.echo(f"about {missing:,} entr{'y has' if missing == 1 else 'ies have'} no judge vector yet: searches "
                       "embed the ones they meet; `memkit index --judge` fills them now", err=True)
        if report.errors:
            click.echo(f"{len(report.errors)} file(s) with problems (unreadable ones skipped, the others read around them), see the warnings above", err=True)



__all__ = ["search", "related", "context_cmd", "index", "print_hits"]
