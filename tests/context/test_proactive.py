"""`memkit proactive`: is now a good moment to raise a follow-up (quiet hours, the time since the
last conversation, due and urgent follow-ups), and the opening line the loopback LLM drafts. The
clock is always injected."""
from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from click.testing import CliRunner
from fake_llm import FakeLLM, Reply
from util import FakeEmbedder, loopback_llm, write

from memkit import Vault
from memkit.config.settings import ConfigError, parse_config
from memkit.context.block import build_context
from memkit.frontends.cli.group import main

NOW = datetime(2026, 11, 28, 10, 0)


def make(tmp_path, yaml: str = "", lines: str | None = None) -> Vault:
    root = Vault.init(tmp_path / "v").root
    if yaml:
        (root / "memkit.yaml").write_text(yaml)
    write(root / "topics" / "life.md", lines if lines is not None else (
        "- [pending] Job interview at Acme, nervous about the design round (due 2026-11-27) "
        "(ask: How did the Acme interview go?) (2026-11-24)\n"
        "- [pending] Repainting the kitchen, unsure about the colour (urgency low) (2026-11-25)\n"))
    return Vault(root, embedder=FakeEmbedder())


def test_an_overdue_follow_up_is_raised_when_the_person_has_been_away(tmp_path):
    v = make(tmp_path)
    nudge = v.proactive(now=NOW, last_conversation=NOW - timedelta(hours=20), llm=None)
    assert nudge.now and nudge.reason.startswith("overdue: ")
    assert nudge.follow_up is not None and "Acme" in nudge.follow_up.entry.text
    assert nudge.question == "How did the Acme interview go?" and nudge.opening is None


def test_not_during_quiet_hours_nor_right_after_a_conversation(tmp_path):
    v = make(tmp_path, "quiet_hours: '22:00-07:30'\nproactive_gap_hours: 3\n")
    night = v.proactive(now=datetime(2026, 11, 28, 23, 15), last_conversation=NOW - timedelta(days=2), llm=None)
    assert not night.now and night.quiet_until == datetime(2026, 11, 29, 7, 30)
    assert "quiet hours (22:00-07:30) until 07:30" in night.reason and night.follow_up is not None
    early = v.proactive(now=datetime(2026, 11, 28, 6, 0), last_conversation=NOW - timedelta(days=2), llm=None)
    assert not early.now and early.quiet_until == datetime(2026, 11, 28, 7, 30)
    just_talked = v.proactive(now=NOW, last_conversation=NOW - timedelta(minutes=50), llm=None)
    assert not just_talked.now and "50 min ago" in just_talked.reason and "3 h" in just_talked.reason
    assert v.proactive(now=NOW, last_conversation=NOW - timedelta(hours=3, minutes=1), llm=None).now


def test_the_last_conversation_is_the_latest_context_session(tmp_path):
    v = make(tmp_path)
    build_context(v.searcher, "how are you", session="chat-1", now=NOW - timedelta(hours=1))
    assert not v.proactive(now=NOW, llm=None).now  # 1 h ago: the default gap is 4 h
    assert v.proactive(now=NOW + timedelta(hours=4), llm=None).now


def test_nothing_to_raise(tmp_path):
    v = make(tmp_path, lines="- [pending] Repainting the kitchen (urgency low) (2026-11-25)\n"
                             "- [pending] Dentist in a month (due 2026-12-28) (2026-11-25)\n")
    nudge = v.proactive(now=NOW, llm=None)
    assert not nudge.now and nudge.follow_up is None and nudge.reason.startswith("nothing to follow up on")


def test_an_urgent_follow_up_without_a_question_gets_one(tmp_path):
    v = make(tmp_path, lines="- [pending] Mother's hip surgery on Monday. (urgency high) (2026-11-26)\n")
    nudge = v.proactive(now=NOW, llm=None)
    assert nudge.now and nudge.reason.startswith("urgent: ")
    assert nudge.question == "How did it go: Mother's hip surgery on Monday?"


def test_the_llm_drafts_the_opening_line_and_a_failure_falls_back(tmp_path):
    v = make(tmp_path)
    with FakeLLM(lambda request: '  "Hey, how did the Acme interview go on Thursday?"\n') as fake:
        nudge = v.proactive(now=NOW, llm=loopback_llm(fake))
        prompt = fake.requests[0]["messages"][-1]["content"]
    assert nudge.opening == "Hey, how did the Acme interview go on Thursday?"
    assert "Job interview at Acme, nervous about the design round" in prompt and "2026-11-27" in prompt
    with FakeLLM([Reply(status=500, body="down")]) as fake:
        nudge = v.proactive(now=NOW, llm=loopback_llm(fake))
    assert nudge.now and nudge.opening is None and nudge.question == "How did the Acme interview go?"


def test_cli(tmp_path):
    v = make(tmp_path)
    result = CliRunner().invoke(main, ["--vault", str(v.root), "proactive", "--json", "--at", "2026-11-28 10:00"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["now"] is True and data["question"] == "How did the Acme interview go?"
    assert data["follow_up"]["urgency"] is None and data["follow_up"]["due"] == "2026-11-27"
    text = CliRunner().invoke(main, ["--vault", str(v.root), "proactive", "--at", "2026-11-28 10:00"]).output
    assert text.startswith("now: overdue: ") and "say: How did the Acme interview go?" in text
    bad = CliRunner().invoke(main, ["--vault", str(v.root), "proactive", "--at", "tomorrow"])
    assert bad.exit_code == 2 and "--at must be like" in bad.output


@pytest.mark.parametrize("value", ["22-07", "25:00-07:00", "evening", 22])
def test_quiet_hours_must_be_a_span(value):
    with pytest.raises(ConfigError, match="quiet_hours"):
        parse_config({"quiet_hours": value})


def test_an_urgent_follow_up_due_today_goes_before_a_minor_overdue_one(tmp_path):
    v = make(tmp_path, lines="- [pending] Return the library book (due 2026-11-20) (urgency low) (2026-11-18)\n"
                             "- [pending] Mother's biopsy results today (due 2026-11-28) (urgency high) (2026-11-25)\n")
    nudge = v.proactive(now=NOW, llm=None)
    assert nudge.now and nudge.follow_up is not None and "biopsy" in nudge.follow_up.entry.text
