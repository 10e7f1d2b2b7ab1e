"""The table's jobs: is now a moment to follow up, the scheduled upkeep, a transcript digested, the
counts, the index (:mod:`memkit.frontends.operations`)."""
from __future__ import annotations

from typing import Any

from ...base.limits import MAX_TRANSCRIPT_BYTES
from ...errors import MemkitError
from ...vault import Vault
from .kit import READ, WRITE, Operation, Param, Route, Tool, moment, obj, ref, same
from .shared import AT

__all__ = ["JOBS"]


def _proactive(vault: Vault, now: str | None = None, last_conversation: str | None = None, draft: bool = True) -> Any:
    return vault.proactive(now=moment(now), last_conversation=moment(last_conversation, "last_conversation"),
                           llm="auto" if draft else None)


def _nudge_text(nudge: Any) -> str:
    said = nudge.to_dict()
    text = ("now: " if said["now"] else "not now: ") + said["reason"]
    if said["follow_up"] is not None:
        text += f"\nsay: {said['opening'] or said['question']}"
    return text


def _digest(vault: Vault, text: str, dry_run: bool = False) -> Any:
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) > MAX_TRANSCRIPT_BYTES:
        raise MemkitError(f"transcript is {len(data) / 1e6:.1f} MB; memkit digests at most "
                          f"{MAX_TRANSCRIPT_BYTES / 1e6:.0f} MB at once: split it into smaller parts")
    return vault.digest(text=text, name="transcript", dry_run=dry_run)


JOBS: tuple[Operation, ...] = (
    Operation("proactive", (
        Param("now", "string", "The moment asked about, 'YYYY-MM-DD HH:MM' local time (default: now).",
              max_length=40, format="date-time", names={"mcp": "at", "cli": "at"}, cli=("--at",),
              metavar="TIME"),
        Param("last_conversation", "string", "When the person last talked to the assistant (default: the latest "
              "context session's time).", max_length=40, format="date-time",
              absent={"cli": "the shell asks about the vault's own sessions",
                      "mcp": "the server knows the latest context session"}),
        Param("draft", "boolean", "Draft an opening line with the LLM memkit.yaml configures (false: never ask "
              "it).", default=True,
              absent={"cli": "said inverted: --no-llm (no_llm)", "mcp": "the model drafts its own line"}),
        Param("no_llm", "boolean", "Give the suggested question; do not ask the LLM for an opening line.",
              default=False, cli=("--no-llm",),
              absent={"mcp": "the model drafts its own line", "http": "said as draft=false"}),
    ), ("proactive",),
    Tool("proactive", "Is now a good moment to follow up?",
         "Whether now is a good moment to bring up something the user left open (a follow-up that is due, "
         "overdue or urgent), which one, and how: never during the vault's quiet hours, nor soon after the "
         "last conversation. Call it when a conversation starts or when the assistant could speak first. "
         "Returns now (true: raise it now), reason (one line), follow_up (id, text, topic, due, urgency), "
         "question (the suggested question) and opening (a drafted opening line when an LLM is configured; "
         "else null: ask the question).",
         dict(READ, open_world_hint=True),
         text=_nudge_text),
    (Route("GET", "/proactive", "Whether now is a good moment to raise a follow-up (never in "
          "quiet_hours, nor within proactive_gap_hours of the last conversation), which one, its question "
          "and, with an LLM, a drafted opening line.",
          ref("Nudge"), errors=(400,)),),
    call=_proactive),
    Operation("upkeep", (AT,), ("upkeep",),
    Tool("run_upkeep", "Run the scheduled upkeep",
         "Run memkit's scheduled jobs now, as `memkit upkeep` does (the watcher runs them once a day): "
         "expired memories to archive.md, saved conversations digested every digest_every_messages, idle "
         "conversations condensed to a summary (day 3) and a core memory (day 7) with the raw kept in "
         "sessions/archive/raw/, old sessions archived, the profile re-distilled when due. Slow when an LLM "
         "is configured. Returns at and jobs [{job, did (one line), changed}].",
         dict(WRITE, idempotent_hint=True, open_world_hint=True),
         text=lambda report: "\n".join(report.lines())),
    (Route("POST", "/upkeep", "Run the scheduled jobs now, as `memkit upkeep` does: expired "
          "memories archived, sessions digested and aged, old ones archived, the profile re-distilled when "
          "due. Slow when an LLM is configured; searches go on meanwhile.",
          ref("Upkeep"), errors=(400, 409), body_required=False, operation_id="run_upkeep"),),
    call=lambda vault, at=None: vault.upkeep.run(now=moment(at))),
    Operation("digest_transcript", (
        Param("text", "string", "The conversation.", required=True, max_length=MAX_TRANSCRIPT_BYTES, nonempty=True),
        Param("dry_run", "boolean", "Only compute the change; write nothing.", default=False),
    ), None,
    Tool("digest_transcript", "Digest a conversation",
         "Turn a conversation transcript into memories with the LLM configured in memkit.yaml, like "
         "`memkit digest`: durable conclusions are extracted, routed to their topics, near-duplicates of "
         "stored memories are skipped, and memories they make outdated move to archive.md. Digesting the "
         "same transcript twice adds nothing. The transcript is 'Speaker: text' lines, a JSON list of "
         "{role, content} messages, or JSONL, at most 1 MB. With dry_run the change is only computed "
         "(a unified diff in 'diff'). Returns the report: written, skipped, superseded, new_topics, split.",
         dict(WRITE, idempotent_hint=True, open_world_hint=True)), (),
    call=_digest,
    absent={"cli": "memkit digest reads transcript files (TRANSCRIPT...)",
                "http": "a served vault digests inbox/ (--watch) and saved sessions"}),
    Operation("stats", (), ("stats",), None,
    (Route("GET", "/stats", "Counts: entries per topic and kind, follow-ups, archive, index, inbox.",
          obj(["topics", "entries", "per_topic", "per_kind", "pending", "index"],
          topics={"type": "integer"}, entries={"type": "integer"}, per_topic={"type": "object"},
          per_kind={"type": "object"}, pending={"type": "integer"}, index={"type": "object"})),),
    call=lambda vault: vault.upkeep.stats(), answer=same,
    absent={"mcp": "counts are for a person or a dashboard, not for a model's answers"}),
    Operation("index", (
        Param("full", "boolean", "Parse and embed every file again, not only the changed ones.", default=False,
              cli=("--full",)),
        Param("judge", "boolean", "Also store the judge's vector of every entry that has none (with a progress "
              "bar; searches embed the ones they meet, and the watcher and the servers fill them as they run).",
              default=False, cli=("--judge",),
              absent={"http": "a POST /index job runs in the background: it fills them too"}),
    ), ("index",), None,
    (Route("POST", "/index", "Start bringing the index up to date in the background; "
          "GET /index and GET /busy follow it.",
          obj(["job"], job=ref("Job")), ok=202, errors=(400, 409), body_required=False, server="index_start", operation_id="index_start"),),
    call=lambda vault, full=False, judge=True: vault.index(full=full, judge=judge),
    absent={"mcp": "the MCP server indexes changed files before each search"}),
)
