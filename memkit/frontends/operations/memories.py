"""The table's operations on memories: search, add, edit, forget, the memories like one, where one
came from, the memory block, the topics, the follow-ups (:mod:`memkit.frontends.operations`).

Each entry is the operation's one declaration: its parameters, its handler (one call into
:class:`memkit.Vault`), its MCP tool and its HTTP routes; the front ends are made from it.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...base.limits import MAX_ENTRY_CHARS, MAX_MESSAGE_CHARS, MAX_SEARCH_RESULTS, SEARCH_MODES
from ...vault import Vault
from ..privacy import without_private
from .kit import MAX_NAME_CHARS, NULL_STR, WRITE, ArgumentError, Operation, Param, Route, Tool, listed, obj, ref, same
from .shared import (
    KIND,
    MATCH,
    PERSON,
    RELATION,
    TOPIC_NAME,
    WHERE,
    entry_id_param,
    path_entry_id_param,
    query_param,
    topic_param,
)

__all__ = ["MEMORIES"]


# ---- the handlers: each one call into Vault (what the servers show: no private topic unasked) ----

def _search(vault: Vault, query: str, **given: Any) -> Any:
    return vault.search(query, **given, private=False)  # private topics only when asked for by name


def _add(vault: Vault, text: str, tags: list[str] | None = None, **given: Any) -> Any:
    return vault.add(text, tags=tags or (), **given)


def one_of(id: str | None, match: str | None, what: str = "the entry") -> None:  # noqa: A002
    """An entry is named by its id or by a match of its text: one of the two. :raises ArgumentError:"""
    if (id is None) == (match is None):
        raise ArgumentError(f"give {what}'s 'id' or a 'match' of its text (one of the two)")


def _edit(vault: Vault, text: str, id: str | None = None, match: str | None = None,  # noqa: A002
          topic: str | None = None) -> Any:
    one_of(id, match)
    return vault.edit(id, text, match=match, topic=topic)


def _forget(vault: Vault, id: str | None = None, match: str | None = None, topic: str | None = None,  # noqa: A002
            all: bool = False) -> Any:  # noqa: A002
    one_of(id, match)
    return vault.forget(id, match=match, topic=topic, every=True) if all else \
        [vault.forget(id, match=match, topic=topic)]


def _done(vault: Vault, id: str | None = None, match: str | None = None, topic: str | None = None) -> Any:  # noqa: A002
    one_of(id, match, "the follow-up")
    return vault.upkeep.done(id, match=match, topic=topic)


def _topics(vault: Vault) -> Any:
    return sorted(without_private(vault, vault.topics(), lambda t: t.name), key=lambda t: t.updated, reverse=True)


def _recent(vault: Vault, rebuild: bool = False) -> Any:
    return without_private(vault, vault.recent(rebuild=rebuild), lambda r: r.topic)


def _pending(vault: Vault) -> Any:
    return without_private(vault, vault.upkeep.pending(), lambda f: f.entry.topic)


# ---- the table ---------------------------------------------------------------------------------------

MEMORIES: tuple[Operation, ...] = (
    Operation("search", (
        query_param("What to look for: a question, keywords, a name or a part number."),
        Param("k", "integer", "How many results at most (default: memkit.yaml's max_memories_per_search).",
              low=1, high=MAX_SEARCH_RESULTS, cli=("-k",), metavar="N",
              overrides={"mcp": {"default": 10}}),  # a model reads more candidates than a person at the shell
        topic_param(f"Only this topic and its subtopics (topic-*). {TOPIC_NAME}"),
        KIND,
        Param("tag", "string", "Only entries with this #tag (without the '#').", max_length=40, nonempty=True,
              cli=("--tag",), metavar="TAG"),
        Param("since", "string", "Only entries dated on or after this day, YYYY-MM-DD.", max_length=10,
              format="date", cli=("--since",), metavar="DATE"),
        PERSON, RELATION, WHERE,
        Param("linked", "string", "Only this topic and the topics it links to or is linked from by [[links]] "
              "(a topic's name, its file's name alone, or an alias).", max_length=MAX_NAME_CHARS, nonempty=True,
              cli=("--linked",), metavar="TOPIC"),
        Param("mode", "string", "hybrid: words and meaning fused; vector or lexical: one side only.",
              choices=SEARCH_MODES, default="hybrid", cli=("--mode",)),
        Param("min_importance", "number", "Only entries whose (importance X) is at least this, 0..1 (none given "
              "counts as 0.5).", low=0, high=1, cli=("--min-importance",), metavar="X"),
        Param("fast", "boolean", "Skip the second stage (the judge transformer re-scoring the best candidates): "
              "faster, weaker on questions worded unlike their answer.", default=False, cli=("--fast",)),
        Param("threshold", "number", "Minimum cosine similarity (exact rare-word matches pass anyway). Default: "
              "memkit.yaml or the model's calibrated value.", low=-1, high=1, cli=("--threshold",), metavar="X",
              absent={"mcp": "a tuning knob for a person; a served vault uses memkit.yaml's",
                      "http": "a tuning knob for a person; a served vault uses memkit.yaml's"}),
        Param("no_threshold", "boolean", "No threshold: always return the k best.", default=False, cli=("--all",),
              absent={"mcp": "each hit says whether it passed the threshold (confident)",
                      "http": "each hit says whether it passed the threshold (confident)"}),
        Param("sessions", "boolean", "Search the messages of past conversations (sessions/) instead of the "
              "memories.", default=False, cli=("--sessions",),
              absent={"mcp": "search_sessions does it", "http": "GET /sessions/search does it"}),
    ), ("search",),
    Tool("search_memories", "Search memories",
         "Search the user's long-term memory for entries relevant to a query (exact words and meaning, "
         "fused). Use it before answering anything that may depend on what the user told you in earlier "
         "conversations. Returns a JSON list of hits, best first, each with id, text, topic, kind, tags, "
         "date, file, line, score (ranking, 0..1), cosine and lexical (the two sides of the first stage's "
         "score), judge (the second stage's cosine, when it ran), relevance (when the judge ran: how likely "
         "the hit answers the query, 0..1, not relative to the best hit) and confident (false: only one of "
         "the closest, the vault may not answer this; weigh it as such). An empty list means nothing "
         "relevant is stored. person, relation and where filter on who and what a memory is about.",
         extra={"refresh": True}),
    (Route("GET", "/search", "Search memories (exact words and meaning, fused), best first.", errors=(400, 404)),),
    call=_search, answer=listed("hits", "Hit")),
    Operation("add", (
        Param("text", "string", "The memory: one self-contained sentence.",
              required=True, max_length=MAX_ENTRY_CHARS, nonempty=True, argument=True, stdin=True),
        topic_param(f"Where it belongs (default: general; created if new). {TOPIC_NAME}"),
        Param("kind", "string", "One word memkit knows: fact, preference, decision, discovery, event, context, "
              "observation, pending, conversation, or one memkit.yaml's expire: names (else an error).",
              max_length=40, nonempty=True, cli=("--kind",), metavar="KIND"),
        Param("tags", "array", "#tags, one word each, without the '#'.", names={"cli": "tags"}, cli=("--tag",),
              metavar="TAG", overrides={"cli": {"help": "A #tag; repeat for several."}}),
        Param("due", "string", "A follow-up due this day, YYYY-MM-DD: adds '(due DAY)' (kind pending unless "
              "given); it is listed with the pending follow-ups.", max_length=10, format="date", cli=("--due",),
              metavar="DATE"),
        Param("until", "string", "The memory expires after this day, YYYY-MM-DD: adds '(until DAY)'.",
              max_length=10, format="date", cli=("--until",), metavar="DATE"),
        Param("allow_duplicate", "boolean", "Write it even when the topic holds the same text already (compared "
              "as the digest does: kind, tags, markers, case and end punctuation aside).",
              default=False, cli=("--allow-duplicate",),
              absent={"mcp": "a model or a client must not write the same memory twice",
                      "http": "a model or a client must not write the same memory twice"}),
    ), ("add",),
    Tool("add_memory", "Add a memory",
         "Store one durable memory about the user: a fact, preference, decision, plan, or an observation "
         "the user confirmed. Write one self-contained sentence (it will be read later without this "
         "conversation). It is appended to the topic file as '- [kind] text #tags (date)'; a new topic is "
         "created when needed, and a topic that grows too big is split into subtopics (the result says "
         "where the entry landed). Returns the entry written: id, text, topic, kind, tags, date, file, line; "
         "when the topic holds the same text already, that entry, with duplicate: true (nothing is written).",
         WRITE),
    (Route("POST", "/add", "Append a memory to a topic; returns the entry written (and where: a topic "
          "over its size limit is split at once).",
          ref("Entry"), ok=201, errors=(400, 409)),),
    call=_add),
    Operation("edit", (
        Param("id", "string", "The entry id, e.g. '3f2a9c1e'.", max_length=MAX_NAME_CHARS, nonempty=True,
              overrides={"mcp": {"required": True}},  # a model names an entry by its id
              absent={"cli": "[ID] TEXT: one positional pair (args)"}),
        MATCH,
        topic_param("Look only in this topic.", absent={"mcp": "a model names an entry by its id"}),
        Param("text", "string", "The new text, one self-contained sentence (its kind and tags stay unless it "
              "gives its own).", required=True, max_length=MAX_ENTRY_CHARS, nonempty=True,
              absent={"cli": "[ID] TEXT: one positional pair (args)"}),
        Param("args", "array", "[ID] TEXT: the entry's id (without --match) and the new text.", required=True,
              argument=True, nargs=-1, metavar="[ID] TEXT",
              absent={"mcp": "named arguments id and text", "http": "named fields id and text"}),
    ), ("edit",),
    Tool("edit_memory", "Edit a memory",
         "Change one memory where it stands, by its id (from search_memories or read_topic): use it when the "
         "user corrects a memory rather than dropping it. Its kind and tags stay unless the new text gives "
         "its own, and it is dated today; the old line is kept in archive.md pointing at the new one. "
         "Returns the new entry: id, text, topic, kind, tags, date, file, line.",
         WRITE),
    (Route("POST", "/edit", "Change a memory where it stands (by id or text); the old line is kept in "
          "archive.md. Returns the new entry (dated today).",
          ref("Entry"), errors=(400, 404, 409)),),
    call=_edit),
    Operation("forget", (
        entry_id_param("The entry id, e.g. '3f2a9c1e'."),
        MATCH,
        topic_param("Look only in this topic (the same line in two topics).",
               absent={"mcp": "a model names an entry by its id"}),
        Param("all", "boolean", "An entry written several times (after a merge): remove every copy.", default=False,
              names={"cli": "all_"}, cli=("--all",),
              absent={"mcp": "a model forgets the one entry it names"}),
    ), ("forget",),
    Tool("forget_memory", "Forget a memory",
         "Remove one memory by its id (from search_memories or read_topic; a unique prefix of at least 4 "
         "characters works). The line moves to archive.md with the date and its topic, so the user can "
         "undo it; nothing is deleted. Use it when the user says a memory is wrong or asks you to forget "
         "it. Returns the entry that moved: id, text, topic, kind, tags, date, file, line.",
         dict(WRITE, destructive_hint=True),
         answer=lambda a: dict(a["forgotten"][0], archive="archive.md")),
    (Route("POST", "/forget", "Remove a memory (by id or text): the line moves to archive.md with "
          "the day and its topic, so it can be put back; nothing is deleted.", errors=(400, 404, 409)),),
    call=_forget, answer=listed("forgotten", "Entry")),
    Operation("related", (
        Param("ref", "string", "An entry id (from search_memories or read_topic) or a topic name: what the memories "
              "must be like.", required=True, max_length=MAX_NAME_CHARS, nonempty=True, argument=True,
              metavar="ID|TOPIC"),
        Param("k", "integer", "How many at most (default: memkit.yaml's max_memories_per_search).",
              low=1, high=MAX_SEARCH_RESULTS, cli=("-k",), metavar="N"),
    ), ("related",),
    Tool("related_memories", "Memories like this one",
         "The memories most like a memory or a topic, found without a query: its own text goes through "
         "the two stages of search_memories, and the memory itself (or the whole topic) is left out. Use it "
         "to gather what else the user said about something you found, or to see what a topic touches. "
         "Takes an entry id (from search_memories or read_topic) or a topic name. Returns of {id, text, "
         "topic} or {topic} and hits, as search_memories gives them."),
    (Route("GET", "/related", "The memories most like a memory (ref: its id) or a topic (ref: its "
          "name), without a query: its text through the two stages of GET /search, itself left out. 404: no "
          "such entry or topic.",
          obj(["of", "hits"], of={"type": "object"}, hits={"type": "array", "items": ref("Hit")}), errors=(400, 404)),),
    call=lambda vault, ref, k=None: vault.links.related(ref, k=k, private=False)),
    Operation("why", (
        path_entry_id_param("The entry id, e.g. '3f2a9c1e' (from search_memories or read_topic; an archived "
                            "entry's too)."),
    ), ("why",),
    Tool("why_memory", "Where a memory came from",
         "Why memory holds something: the conversation a memory was digested from (a saved session or a "
         "transcript, and its day) and the lines of it that say the memory, with their line numbers. Use "
         "it when the user asks why you think something about them. Takes the memory's id (from "
         "search_memories or read_topic; an archived one's too). Returns id, text, topic, status, source, "
         "day, file, kind (session, raw or transcript) and lines [{line, role, text, match}]; a memory "
         "written by hand names no conversation (an error says so).",
         text=lambda found: found.render()),
    (Route("GET", "/why/{id}", "Where a memory came from: the conversation its (from …) marker names "
          "(a session, an aged session's raw archive, a transcript in inbox/done/) and the lines of it that say "
          "the memory. 404: no such entry, it names no conversation, or that conversation is gone.",
          ref("Why"), errors=(400, 404)),),
    call=lambda vault, id: vault.why(id)),
    Operation("history", (
        path_entry_id_param("The id of any version of the memory, e.g. '3f2a9c1e' (from search_memories, "
                            "read_topic or an edit's answer; an archived version's too)."),
    ), ("history",),
    Tool("memory_history", "Every version of a memory",
         "How a memory changed: every version of it, oldest first (an edit, a digest's newer fact, a "
         "compaction each leave the old line in archive.md pointing at the new one), each with its topic and "
         "status (current, or why and on which day it left), and the git log of the newest version when the "
         "vault is a git repository. Use it when the user asks what a memory used to say or since when it "
         "holds. Takes the id of any version (a current or an archived one). Returns versions [{id, text, "
         "topic, status, day}] and git [lines].",
         text=lambda found: found.render()),
    (Route("GET", "/history/{id}", "Every version of a memory, oldest first (archive.md's chain of "
          "edits, a digest's updates and compactions), and the git log of the newest. 404: no version has "
          "that id.",
          obj(["versions", "git"],
              versions={"type": "array", "items": obj(
                  ["id", "text", "topic", "status", "day"], id={"type": "string"}, text={"type": "string"},
                  topic={"type": "string"}, status={"type": "string", "description": "current, or why it left "
                                                    "its topic (edited, now ID; forgotten; superseded…)"},
                  day=dict(NULL_STR, description="The day it left its topic (null: the current version)."))},
              git={"type": "array", "items": {"type": "string"}}), errors=(400, 404)),),
    call=lambda vault, id: vault.upkeep.versions(id)),
    Operation("context", (
        Param("message", "string", "The user's latest message (may be empty).",
              required=True, max_length=MAX_MESSAGE_CHARS, argument=True, stdin=True),
        Param("session", "string", "A conversation session's id (started if there is none): its last turns "
              "join the block (the caller saves the messages), memories accumulate and a detected topic sticks "
              "across calls that share it. Without it the block is for this message alone.", max_length=MAX_NAME_CHARS,
              nonempty=True, cli=("--session", "-s"), metavar="ID"),
        Param("budget_tokens", "integer", "The most tokens the block may take (~4 characters a token); the "
              "instructions are always kept.", low=1, high=100_000, default=2000, names={"cli": "budget"},
              cli=("--budget",), metavar="N"),
        Param("reset", "boolean", "Forget the session's accumulated memories and topic first (its conversation "
              "stays).", default=False, cli=("--reset",)),
        Param("clear", "boolean", "End the conversation's window first: later blocks show only the messages saved "
              "after now; the conversation file keeps them all.", default=False, cli=("--clear",)),
        Param("markers", "boolean", "Show the entries' markers ((importance 0.8), (people: Ana), (city: Porto)…), "
              "which the block leaves out by default.", default=False, cli=("--markers",)),
    ), ("context",),
    Tool("get_context", "Memory block for the system prompt",
         "The memory block to keep in mind for the user's latest message: the recent topics, then the "
         "memories relevant to the message and the conversation so far (and, once its topic is detected, "
         "that topic's file after them), then instructions on using memory. Call it at the start of a conversation, and again "
         "with the same session id when the subject changes. The text content is the block itself; the "
         "structured result adds tokens, topic, recent, memories and omitted.",
         text=lambda block: block.text),
    (Route("POST", "/context", "The memory block for an assistant's system prompt, for the user's "
          "latest message.",
          ref("Context"), errors=(400,)),),
    call=lambda vault, message, **given: vault.context(message, **given)),
    Operation("topics", (), ("topics",),
    Tool("list_topics", "List topics",
         "Every topic of the memory, most recently updated first: name, entries (count), "
         "updated (ISO time), summary, file."),
    (Route("GET", "/topics", "Every topic, most recently updated first: name, entries, updated, "
          "summary, file."),),
    call=_topics, answer=listed("topics", "TopicInfo")),
    Operation("show", (
        Param("topic", "string", TOPIC_NAME, required=True, max_length=MAX_NAME_CHARS, nonempty=True, where="path",
              names={"mcp": "name"}, argument=True),
    ), ("show",),
    Tool("read_topic", "Read a topic",
         "All entries of one topic with their ids (for forget_memory): name, title, summary, file, "
         "and entries [{id, text, topic, kind, tags, date, file, line}]. The whole file is also "
         "the resource memkit://topics/NAME."),
    (Route("GET", "/topics/{topic}", "One topic's entries with their ids (for POST /forget and "
          "POST /edit), or, for a topic that was split, the topics it was split into.",
          ref("Topic"), errors=(400, 404, 409), operation_id="show_topic"),),
    call=lambda vault, topic: vault.store.show_topic(topic), answer=same),
    Operation("recent", (
        Param("rebuild", "boolean", "Regenerate index.txt from the topic files.", default=False, cli=("--rebuild",),
              absent={"mcp": "index.txt is a person's repair; every write keeps it current",
                      "http": "index.txt is a person's repair; every write keeps it current"}),
    ), ("recent",),
    Tool("recent_topics", "Recent topics",
         "The recent-topics index (index.txt), newest first: updated (ISO time), topic, summary. "
         "Shows what the user has been busy with lately."),
    (Route("GET", "/recent", "The recent-topics index (index.txt), newest first."),),
    call=_recent, answer=listed("recent", "Recent")),
    Operation("pending", (), ("pending",),
    Tool("pending_follow_ups", "List follow-ups",
         "The follow-ups the user left open (memories of kind pending, e.g. added with add_memory's due), most "
         "urgent first: id, text, topic, due, overdue_days, urgency and question (what to ask). Resolve one "
         "with mark_done when the user says it is settled."),
    (Route("GET", "/pending", "The follow-ups (kind pending), most urgent first."),),
    call=_pending, answer=listed("pending", "FollowUp")),
    Operation("done", (
        entry_id_param("The follow-up's id, e.g. '3f2a9c1e' (from pending_follow_ups)."),
        replace(MATCH, help="Or: text the follow-up contains (it must be the only one)."),
        topic_param("Look only in this topic.", absent={"mcp": "a model names a follow-up by its id"}),
    ), ("done",),
    Tool("mark_done", "Mark a follow-up done",
         "Resolve a follow-up by its id (from pending_follow_ups): it moves to archive.md as done, so it is "
         "no longer raised. Returns the entry that moved: id, text, topic, kind, tags, date, file, line.",
         WRITE,
         answer=lambda a: dict(a["done"], archive="archive.md")),
    (Route("POST", "/pending/done", "Resolve a follow-up (by id or text): it moves to archive.md as "
          "done.",
          obj(["done"], done=ref("Entry")), errors=(400, 404, 409)),),
    call=_done, answer=lambda entry: {"done": entry.to_dict()}),
)
