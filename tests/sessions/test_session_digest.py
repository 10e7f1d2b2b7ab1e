"""Memory that keeps itself current (issue 20.5): a conversation that never goes idle is digested
every `digest_every_messages` new messages, the LLM seeing only what it has not seen. The LLM is the
loopback fake; times are given."""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

from fake_llm import FakeLLM, last_user_message
from util import FakeEmbedder

from memkit import Vault

T0 = datetime(2026, 11, 24, 10, 0, tzinfo=timezone.utc)
FACTS = ["Maya's daughter Lina turns eight on March 2nd", "Maya is learning the cello since October",
         "Maya's bike is a green Brompton", "Maya prefers oat milk in coffee", "Maya's dentist is Dr. Lemos",
         "Maya works from home on Fridays", "Maya's favourite beach is Comporta"]


def answer(request: dict) -> str:
    prompt = last_user_message(request)
    if "<transcript>" in prompt:
        said = [f for f in FACTS if f.split(" ", 1)[1] in prompt]
        return json.dumps({"conclusions": [{"kind": "fact", "text": f, "topic": "family"} for f in said],
                           "new_topic": None})
    if "outdated" in prompt:
        return json.dumps({"updates": []})
    return "{}"


def make(tmp_path, fake: FakeLLM | None, every: int = 3) -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    llm = f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 10}}\n" if fake is not None else ""
    (root / "memkit.yaml").write_text(f"digest_every_messages: {every}\n" + llm)
    return Vault(root, embedder=FakeEmbedder())


def transcripts(fake: FakeLLM) -> list[str]:
    return [last_user_message(r) for r in fake.requests if "<transcript>" in last_user_message(r)]


def say(v: Vault, i: int) -> None:
    v.conversations.append("voice", "user", f"By the way: {FACTS[i].split(' ', 1)[1]}.", now=T0 + timedelta(minutes=i))


def test_every_n_new_messages_the_new_ones_are_digested(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        v.conversations.new(session_id="voice", now=T0)
        say(v, 0)
        say(v, 1)
        assert transcripts(fake) == []  # 2 of 3
        say(v, 2)
        first = transcripts(fake)
        assert len(first) == 1 and all(FACTS[i].split(" ", 1)[1] in first[0] for i in range(3))
        say(v, 3)
        say(v, 4)
        assert len(transcripts(fake)) == 1
        say(v, 5)
        second = transcripts(fake)[1]
        assert all(FACTS[i].split(" ", 1)[1] in second for i in (3, 4, 5))
        assert not any(FACTS[i].split(" ", 1)[1] in second for i in (0, 1, 2))  # only what it has not seen
    assert sorted(e.body for e in v.entries()) == sorted(f"{f} (from voice 2026-11-24)" for f in FACTS[:6])
    state = json.loads((v.store.state_dir / "session-digest.json").read_text())
    assert state["voice"]["upto"] == "2026-11-24T10:05:00Z" and state["voice"]["messages"] == 6
    digested = json.loads((v.store.state_dir / "digested.json").read_text())
    assert sorted(d["transcript"] for d in digested.values()) == [
        "2026-11-24-voice.md (messages 1-3)", "2026-11-24-voice.md (messages 4-6)"]


def test_a_failing_llm_never_loses_the_message_and_upkeep_digests_later(tmp_path):
    with FakeLLM(lambda r: "not json at all") as bad:
        v = make(tmp_path, bad, every=2)
        v.conversations.new(session_id="voice", now=T0)
        say(v, 0)
        say(v, 1)  # the digest fails: logged, the message is saved
    assert [m.content for m in v.conversations.show("voice").messages][-1]== "By the way: is learning the cello since October."
    assert not (v.store.state_dir / "session-digest.json").exists()
    with FakeLLM(answer) as fake:
        text = (v.root / "memkit.yaml").read_text()
        (v.root / "memkit.yaml").write_text(re.sub(r"base_url: '[^']*'", f"base_url: '{fake.base_url}'", text))
        v = Vault(v.root, embedder=FakeEmbedder())
        job = next(j for j in v.upkeep.run(now=T0 + timedelta(hours=1)).jobs if j.name == "session-digest")
        assert job.did == "digested voice (2 new messages, 2 memories)"
        again = next(j for j in v.upkeep.run(now=T0 + timedelta(hours=2)).jobs if j.name == "session-digest")
        assert again.did == "no session has 2 new messages"
    assert sorted(e.body for e in v.entries()) == sorted(f"{f} (from voice 2026-11-24)" for f in FACTS[:2])


def test_a_session_about_to_age_is_digested_first_whatever_its_count(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake, every=10)
        v.conversations.new(session_id="voice", now=T0)
        for i in range(6):
            say(v, i)
        assert transcripts(fake) == []
        report = v.upkeep.run(now=T0 + timedelta(days=3, hours=1))
        digest, aging = report.jobs[1], report.jobs[2]
        assert digest.did == "digested voice (6 new messages, 6 memories)"
        assert aging.did == "no conversation is due; 1 too short to condense"


def test_no_llm_saves_messages_and_upkeep_says_it_skipped(tmp_path):
    v = make(tmp_path, None, every=1)
    v.conversations.new(session_id="voice", now=T0)
    say(v, 0)
    assert len(v.conversations.show("voice").messages) == 1
    job = next(j for j in v.upkeep.run(now=T0 + timedelta(hours=1)).jobs if j.name == "session-digest")
    assert job.did == "1 session(s) due but no LLM is configured: skipped"


def test_only_the_end_of_a_long_session_is_read_yet_every_new_message_is_sent(tmp_path):
    """The new messages are looked for at the end of the file first, further back when they reach
    further: 300 new messages of 200 characters all go to the digest, then only the next ones."""
    from memkit.sessions.folder import Sessions
    from memkit.sessions.live_digest import digest_new

    v = Vault.init(tmp_path / "v", profile=False)
    v.conversations.new(session_id="voice", now=T0)
    for i in range(300):
        v.conversations.append("voice", "user", f"{i:03d} " + "x" * 196, now=T0 + timedelta(seconds=i))
    sent: list[tuple[str, str]] = []
    sessions = Sessions(v.root, v.store.state_dir, v.config)
    done = digest_new(sessions, v.store.state_dir, "voice", 2, lambda text, name: sent.append((text, name)))
    assert done is not None and done.messages == 300
    assert sent[0][1] == "sessions/2026-11-24-voice.md (messages 1-300)" and sent[0][0].count("\n") == 300
    v.conversations.append("voice", "user", "the 301st", now=T0 + timedelta(hours=1))
    assert digest_new(sessions, v.store.state_dir, "voice", 2, lambda t, n: sent.append((t, n))) is None
    v.conversations.append("voice", "assistant", "the 302nd", now=T0 + timedelta(hours=1))
    digest_new(sessions, v.store.state_dir, "voice", 2, lambda t, n: sent.append((t, n)))
    assert sent[1] == ('{"role": "user", "content": "the 301st"}\n{"role": "assistant", "content": "the 302nd"}\n',
                       "sessions/2026-11-24-voice.md (messages 301-302)")


def test_a_session_digested_by_hand_counts_as_digested(tmp_path):
    """`memkit session digest` sends the whole session; the automatic digest then sends only the
    messages saved after it, not those again."""
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake, every=100)
        v.conversations.new(session_id="voice", now=T0)
        for i in range(3):
            say(v, i)
        v.conversations.digest("voice", dry_run=True)  # a dry run marks nothing
        assert v.conversations.digest_new("voice") is not None
        v.conversations.digest("voice")
        assert v.conversations.digest_new("voice") is None  # nothing new since
        say(v, 3)
        got = v.conversations.digest_new("voice")
        assert got is not None and got.messages == 1
        last = transcripts(fake)[-1]
        assert FACTS[3].split(" ", 1)[1] in last and FACTS[0].split(" ", 1)[1] not in last


def test_marking_waits_for_a_running_digest_then_gives_up_with_a_warning(tmp_path, caplog):
    from memkit.base.fsutil import file_lock
    from memkit.sessions.live_digest import LOCK, mark_digested

    v = make(tmp_path, None)
    v.conversations.new(session_id="voice", now=T0)
    say(v, 0)
    conv = v.conversations.show("voice")
    with file_lock(v.store.state_dir / LOCK):  # an automatic digest in progress
        assert mark_digested(v.store.state_dir, conv, wait=0.05) == 0
    assert "may send these messages again" in caplog.text
    assert mark_digested(v.store.state_dir, conv) == 1 and mark_digested(v.store.state_dir, conv) == 0
