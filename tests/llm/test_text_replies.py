"""Plain text asked for as plain text (issue 26.5): the proactive opening line and a session's
summary are requested without ``response_format: json_object``, and a JSON reply is never taken
for the text (never printed as `say:`, never cached as the summary). The LLM is the loopback fake."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from fake_llm import FakeLLM
from test_proactive import NOW, make
from util import loopback_llm

from memkit import LLMError
from memkit.llm.client import CommandLLM, LLMSettings
from memkit.llm.replies import ask_text

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def test_the_opening_line_is_asked_as_text(tmp_path):
    v = make(tmp_path)
    with FakeLLM(["Hey, how did the Acme interview go?"]) as fake:
        nudge = v.proactive(now=NOW, llm=loopback_llm(fake))
    assert nudge.opening == "Hey, how did the Acme interview go?"
    assert "response_format" not in fake.requests[0]


def test_an_opening_line_in_json_is_not_said(tmp_path):
    v = make(tmp_path)
    with FakeLLM(['{"opening": "Hey, how did it go?"}']) as fake:
        nudge = v.proactive(now=NOW, llm=loopback_llm(fake))
    assert nudge.opening is None and nudge.question == "How did the Acme interview go?"


def long_session(vault, n=40):
    s = vault.conversations.new(session_id="long", system_prompt="You are helpful.", now=T0)
    for i in range(n):
        vault.conversations.append(s.id, "user" if i % 2 == 0 else "assistant", f"message number {i} " + "blah " * 20,
                           now=T0 + timedelta(minutes=i + 1))


def test_the_summary_is_asked_as_text_and_a_json_one_is_never_cached(vault):
    long_session(vault)
    with FakeLLM(['{"summary": "Maya planned a trip."}']) as fake:
        w = vault.conversations.window("long", max_tokens=300, strategy="summary", llm=loopback_llm(fake))
        assert all("response_format" not in r for r in fake.requests)
    assert w.strategy == "simple" and "JSON where text was asked for" in w.note
    assert "### summary" not in (vault.root / "sessions").joinpath(
        next(p.name for p in (vault.root / "sessions").iterdir() if p.suffix == ".md")).read_text()
    with FakeLLM(["Maya planned a trip to Lisbon."]) as fake:
        w = vault.conversations.window("long", max_tokens=300, strategy="summary", llm=loopback_llm(fake))
        assert all("response_format" not in r for r in fake.requests)
    assert w.strategy == "summary" and "Maya planned a trip to Lisbon." in w.messages[1].content


@pytest.mark.parametrize("reply", ['{"text": "hi"}', '["hi"]', "  ", ""])
def test_ask_text_refuses_what_is_not_text(tmp_path, reply):
    script = tmp_path / "llm.sh"
    script.write_text(f"cat > /dev/null; printf '%s' '{reply}'\n")
    with pytest.raises(LLMError):
        ask_text(CommandLLM(LLMSettings(command=f"sh {script}")), [{"role": "user", "content": "hi"}])


def test_ask_text_keeps_text_that_merely_has_braces():
    class Echo:
        def chat(self, messages):
            return "{not json} but a sentence about sets {1, 2}"
    assert ask_text(Echo(), [{"role": "user", "content": "x"}]).startswith("{not json}")
