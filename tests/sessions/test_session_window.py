"""A long session within a token budget: the simple, summary and hybrid strategies
(memkit.sessions.budget), the summary against the loopback fake LLM, its cache in the file."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from fake_llm import FakeLLM, Reply, last_user_message
from util import loopback_llm

from memkit import InvalidValue
from memkit.sessions.budget import PREFIX, estimate_tokens

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def long_session(vault, n=40, important=(), system="You are helpful."):
    s = vault.conversations.new(session_id="long", system_prompt=system, now=T0)
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        vault.conversations.append(s.id, role, f"message number {i} " + "blah " * 20, important=i in important,
                           now=at(i + 1))
    return s


def contents(window):
    return [m.content.split(" blah")[0] for m in window.messages]


def test_simple_keeps_the_newest_that_fit_oldest_first(vault):
    long_session(vault)
    w = vault.conversations.window("long", max_tokens=200, strategy="simple")
    assert w.messages[0].role == "system" and w.messages[0].content == "You are helpful."
    # each message costs 34 tokens (118 characters + 4), the system prompt 8: 5 fit in 200
    assert contents(w)[1:] == [f"message number {i}" for i in range(35, 40)]
    assert w.tokens == 8 + 5 * 34 and w.omitted == 35 and w.strategy == "simple" and w.total == 40
    whole = vault.conversations.window("long", max_tokens=100_000)
    assert len(whole) == 41 and whole.omitted == 0
    assert whole.chat_messages()[1] == {"role": "user", "content": "message number 0 " + "blah " * 20}


def test_simple_budget_edges(vault):
    s = vault.conversations.new(session_id="tiny", system_prompt="x" * 100, now=T0)
    vault.conversations.append(s.id, "user", "hello", now=at(1))
    w = vault.conversations.window("tiny", max_tokens=10)  # the system prompt alone is over: still sent alone
    assert [m.role for m in w.messages] == ["system"] and w.omitted == 1
    with pytest.raises(InvalidValue, match="max_tokens"):
        vault.conversations.window("tiny", max_tokens=0)
    with pytest.raises(InvalidValue, match="unknown strategy"):
        vault.conversations.window("tiny", strategy="magic")


def test_summary_without_an_llm_falls_back_and_says_so(vault):
    long_session(vault)
    w = vault.conversations.window("long", max_tokens=200, strategy="summary", llm=None)
    assert w.strategy == "simple" and w.requested == "summary" and "no LLM configured" in w.note
    assert contents(w)[-1] == "message number 39"


def test_summary_condenses_older_messages_and_caches_them(vault):
    long_session(vault)
    with FakeLLM(["Ana plans a Lisbon trip.", "Ana plans a Lisbon trip; hotels chosen."]) as fake:
        llm = loopback_llm(fake)
        w = vault.conversations.window("long", max_tokens=300, strategy="summary", llm=llm, now=at(100))
        assert len(fake.requests) == 1
        asked = last_user_message(fake.requests[0])
        assert "message number 0" in asked and "message number 39" not in asked
        assert w.messages[1].role == "system" and w.messages[1].content == PREFIX + "Ana plans a Lisbon trip."
        assert not w.summary_cached and w.summarised > 0 and w.omitted == 0 and w.tokens <= 300
        assert contents(w)[-1] == "message number 39"
        assert w.summarised + len(w.messages) - 2 == 40  # every message is in the summary or verbatim
        text = (vault.root / vault.conversations.show("long").file).read_text()
        assert f"### summary · 2026-03-01T10:40:00Z · of=summary · covers={w.summarised}" in text

        again = vault.conversations.window("long", max_tokens=300, strategy="summary", llm=llm)
        assert again.summary_cached and len(fake.requests) == 1  # no second LLM call
        assert again.messages == w.messages

        vault.conversations.append("long", "user", "one more " + "blah " * 20, now=at(200))  # still fits: cached
        assert vault.conversations.window("long", max_tokens=300, strategy="summary", llm=llm).summary_cached
        for i in range(6):  # enough that the tail no longer fits: a new summary from the old one
            vault.conversations.append("long", "assistant", f"later {i} " + "blah " * 20, now=at(201 + i))
        w3 = vault.conversations.window("long", max_tokens=300, strategy="summary", llm=llm)
        assert len(fake.requests) == 2 and not w3.summary_cached
        second = last_user_message(fake.requests[1])
        assert second.startswith("The note so far:\nAna plans a Lisbon trip.")
        assert "message number 0 " not in second  # only the messages since the last summary
        assert w3.messages[1].content.endswith("hotels chosen.")
        # the cached summary serves without an LLM too
        w4 = vault.conversations.window("long", max_tokens=300, strategy="summary", llm=None)
        assert w4.summary_cached and w4.messages[1].content.endswith("hotels chosen.")


def test_a_hand_edit_invalidates_the_cached_summary(vault):
    s = long_session(vault)
    with FakeLLM(["first summary", "second summary"]) as fake:
        llm = loopback_llm(fake)
        vault.conversations.window("long", max_tokens=300, strategy="summary", llm=llm)
        path = vault.root / s.file
        path.write_text(path.read_text().replace("message number 3 ", "message number three "))
        w = vault.conversations.window("long", max_tokens=300, strategy="summary", llm=llm)
        assert len(fake.requests) == 2 and w.messages[1].content == PREFIX + "second summary"
        assert "message number three" in last_user_message(fake.requests[1])


def test_an_llm_failure_falls_back_to_windowing(vault):
    long_session(vault)
    with FakeLLM([Reply(status=400, body={"error": {"message": "bad model"}})]) as fake:
        w = vault.conversations.window("long", max_tokens=300, strategy="summary", llm=loopback_llm(fake))
    assert w.strategy == "simple" and "the LLM failed" in w.note and contents(w)[-1] == "message number 39"


def test_hybrid_keeps_system_and_important_messages_verbatim(vault):
    s = long_session(vault, important={4, 30})
    vault.conversations.append(s.id, "system", "The user switched to metric units.", now=at(60))
    for i in range(4):
        vault.conversations.append(s.id, "user", f"tail {i}", now=at(61 + i))
    with FakeLLM(["routine chat about a trip"]) as fake:
        w = vault.conversations.window("long", max_tokens=400, strategy="hybrid", llm=loopback_llm(fake),
                                  keep_recent=3)
        asked = last_user_message(fake.requests[0])
    assert "message number 4 " not in asked and "message number 30 " not in asked  # never summarised
    assert "message number 5 " in asked
    got = contents(w)
    assert got[0] == "You are helpful." and got[1] == PREFIX + "routine chat about a trip"
    assert got[2:] == ["message number 4", "message number 30", "The user switched to metric units.",
                       "tail 1", "tail 2", "tail 3"]
    assert w.strategy == "hybrid" and w.tokens <= 400


def test_hybrid_without_an_llm_keeps_the_important_ones(vault):
    long_session(vault, important={2})
    w = vault.conversations.window("long", max_tokens=200, strategy="hybrid", llm=None)
    assert "nothing summarised" in w.note
    assert contents(w)[1] == "message number 2" and contents(w)[-1] == "message number 39"
    assert w.tokens <= 200


def test_the_strategy_comes_from_memkit_yaml(tmp_path):
    from memkit import Vault
    v = Vault.init(tmp_path / "y")
    (v.root / "memkit.yaml").write_text("session_strategy: hybrid\nsession_keep_recent: 2\n")
    v = Vault(v.root)
    long_session(v, n=6)
    w = v.conversations.window("long", max_tokens=10_000)  # everything fits: no summary needed
    assert w.requested == "hybrid" and len(w) == 7


def test_estimate_tokens():
    from memkit.formats.session import SessionMessage
    assert estimate_tokens(SessionMessage("user", "x" * 9, "2026-03-01T09:00:00Z")) == 3 + 4


def test_simple_reads_a_long_session_from_its_end_with_the_same_result(vault):
    from memkit.formats.session import parse_session_tail
    from memkit.sessions.budget import window
    s = long_session(vault, n=300)
    vault.conversations.append(s.id, "user", "### user · 2026-01-01T00:00:00Z\nescaped heading inside", now=at(400))
    full = vault.conversations.show("long")
    text = (vault.root / s.file).read_text()
    for chars in (10, 500, 5000, len(text)):
        tail, earlier = parse_session_tail(text, s.file, "long", chars)
        assert earlier + len(tail.messages) == 301
        assert tail.messages == full.messages[earlier:] and tail.system == full.system
    w = vault.conversations.window("long", max_tokens=500)
    expected = window(full, max_tokens=500)
    assert w.messages == expected.messages and (w.total, w.omitted) == (301, expected.omitted)


def test_tail_of_a_file_without_a_header():
    from memkit.formats.session import parse_session_tail
    text = "".join(f"### user · 2026-03-01T09:0{i}:00Z\nm{i}\n\n" for i in range(5))
    last = len("### user · 2026-03-01T09:04:00Z\nm4\n\n")
    tail, earlier = parse_session_tail(text, "f", "x", last)
    assert earlier == 4 and [m.content for m in tail.messages] == ["m4"]
    tail, earlier = parse_session_tail(text, "f", "x", last - 1)  # a cut inside a heading: not that message
    assert earlier == 5 and tail.messages == []
    tail, earlier = parse_session_tail(text, "f", "x", 10_000)
    assert earlier == 0 and len(tail.messages) == 5


def test_a_cut_inside_a_line_never_reads_a_heading_there():
    from memkit.formats.session import parse_session_tail
    text = "### user · 2026-03-01T09:00:00Z\nsee ### user · 2026-03-01T09:01:00Z here\n"
    tail, earlier = parse_session_tail(text, "f", "x", len(text) - 4)
    assert (earlier, tail.messages) == (1, [])


def test_a_long_winded_summary_is_cut_to_its_share_of_the_budget(vault):
    long_session(vault)
    with FakeLLM(["word " * 2000]) as fake:
        w = vault.conversations.window("long", max_tokens=300, strategy="summary", llm=loopback_llm(fake))
    assert w.tokens <= 300 and w.messages[1].content.endswith("…")
    assert contents(w)[-1] == "message number 39"


def test_hybrid_recent_messages_come_before_important_ones(vault):
    s = vault.conversations.new(session_id="many", now=T0)
    for i in range(30):
        vault.conversations.append(s.id, "user", f"decision {i} " + "blah " * 20, important=True, now=at(i))
    for i in range(4):
        vault.conversations.append(s.id, "user", f"recent {i}", now=at(100 + i))
    with FakeLLM(["routine"]) as fake:
        w = vault.conversations.window("many", max_tokens=300, strategy="hybrid", llm=loopback_llm(fake), keep_recent=3)
    got = contents(w)
    assert got[-3:] == ["recent 1", "recent 2", "recent 3"] and w.tokens <= 300
    kept = [c for c in got if c.startswith("decision")]
    assert kept and kept[-1] == "decision 29"  # the newest important ones, as many as fit
    assert w.summarised + len(kept) + w.omitted + 3 == 34  # every message accounted for


def test_hybrid_with_nothing_routine_makes_no_summary(vault):
    s = vault.conversations.new(session_id="all", now=T0)
    for i in range(20):
        vault.conversations.append(s.id, "user", f"decision {i} " + "blah " * 20, important=True, now=at(i))
    with FakeLLM([]) as fake:
        w = vault.conversations.window("all", max_tokens=300, strategy="hybrid", llm=loopback_llm(fake))
        assert fake.requests == []
    assert not any(m.content.startswith(PREFIX) for m in w.messages)
    assert contents(w)[-1] == "decision 19" and w.tokens <= 300 and w.omitted + len(w) == 20
    assert "### summary" not in (vault.root / s.file).read_text()


@pytest.mark.parametrize("strategy", ["summary", "hybrid"])
def test_a_budget_too_small_for_a_summary_asks_no_llm_and_stays_within_it(vault, strategy):
    """At 60 tokens a summary's share could not hold its own heading: the summary was cut to "…"
    and the window went over the budget. Now the newest messages fit instead, said in the note."""
    s = vault.conversations.new(session_id="short", now=T0)
    for i in range(12):
        vault.conversations.append(s.id, "user", f"message number {i} about the Lisbon trip and the hotel", important=i == 1,
                           now=at(i + 1))
    with FakeLLM(lambda request: "A summary that would be cut to nothing.") as fake:
        llm = loopback_llm(fake)
        for budget in (40, 60, 70):
            w = vault.conversations.window("short", max_tokens=budget, strategy=strategy, llm=llm)
            assert w.tokens <= budget and w.strategy == "simple" and w.summarised == 0
            assert f"{budget} tokens leave no room for a summary" in w.note
            assert not any(m.content.startswith(PREFIX) for m in w.messages)
        assert fake.requests == []
        w = vault.conversations.window("short", max_tokens=160, strategy=strategy, llm=llm)  # room enough: a summary
        assert w.tokens <= 160 and w.summarised > 0 and len(fake.requests) == 1


def test_a_newest_message_over_half_the_room_is_still_kept_after_the_summary(vault):
    """When the newest message did not fit half of what the summary leaves, every message was
    summarised and the newest was not sent at all: it is kept verbatim when it fits the room."""
    s = vault.conversations.new(session_id="long-last", now=T0)
    for i in range(8):
        vault.conversations.append(s.id, "user", f"short message {i}", now=at(i + 1))
    last = "the newest message, long enough to fill more than half the room " + "word " * 20
    vault.conversations.append(s.id, "user", last, now=at(10))
    with FakeLLM(lambda request: "They talked about short things.") as fake:
        w = vault.conversations.window("long-last", max_tokens=100, strategy="summary", llm=loopback_llm(fake))
    assert w.messages[-1].content == last and w.summarised >= 1 and w.tokens <= 100
