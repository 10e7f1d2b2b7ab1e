"""What `memkit session list` and `session load` say (issue 26.6): an aged session counts the
messages its summary condensed (not "0 messages"), and a load names the strategy asked for when
nothing needed condensing. The clock is injected, the LLM is the loopback fake."""
from __future__ import annotations

from datetime import timedelta

from click.testing import CliRunner
from fake_llm import FakeLLM
from test_session_aging import T0, answer, chat, job, make

from memkit.frontends.cli.group import main


def cli(v, *args: str):
    result = CliRunner().invoke(main, ["--vault", str(v.root), *args], obj={"vault_obj": v})
    assert result.exit_code == 0, result.output
    return result


def test_an_aged_session_lists_the_messages_it_condensed(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        chat(v)
        assert "5 messages" in cli(v, "session", "list").output
        assert job(v, T0 + timedelta(days=3, hours=1)).changed
        listed = cli(v, "session", "list").output
        assert "5 messages" in listed and "(summary)" in listed, listed
        v.conversations.append("lisbon", "user", "Found a hotel in Alfama!", now=T0 + timedelta(days=4))
        assert "6 messages" in cli(v, "session", "list").output
        assert v.conversations.list()[0].messages == 6


def test_load_names_the_strategy_asked_for(tmp_path):
    v = make(tmp_path, None)
    chat(v)
    fits = cli(v, "session", "load", "lisbon", "--strategy", "hybrid").output
    assert fits.rstrip().endswith("tokens, hybrid)"), fits
    squeezed = cli(v, "session", "load", "lisbon", "--strategy", "hybrid", "--tokens", "60").output
    assert "simple: hybrid fell back" in squeezed and "no LLM configured" in squeezed, squeezed
