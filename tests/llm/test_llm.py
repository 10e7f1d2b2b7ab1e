"""memkit.llm.client against a real OpenAI-compatible server on loopback and real shell commands."""
from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import memkit.llm.client as llm_mod
from memkit.errors import LLMError
from memkit.llm.client import (
    CommandLLM,
    HTTPChatLLM,
    LLMSettings,
    make_llm,
)
from memkit.llm.replies import ask_json, parse_json_reply

try:
    from fake_llm import FakeLLM, Reply, last_user_message
except ImportError:  # tests/ imported as a package
    from tests.fake_llm import FakeLLM, Reply, last_user_message

FAKE_SCRIPT = Path(__file__).resolve().parents[1] / "fake_llm.py"
ASK = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "hello"}]
SECRET = "sk-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def strict_no_thread_leaks(request) -> Iterator[None]:
    """Every FakeLLM must have joined all its threads by the end of the test (a test of a command
    whose grandchild keeps its pipes open leaves the daemon threads reading them: ``pumps_left``)."""
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    if request.node.get_closest_marker("pumps_left"):
        leaked = [t for t in leaked if "pump" not in t.name]
    assert not leaked, f"leaked threads: {leaked}"


@pytest.fixture
def fast_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shorten the pause before the one retry, for the tests that only count requests."""
    monkeypatch.setattr(HTTPChatLLM, "retry_delay_s", 0.01)


def client(fake: FakeLLM, **kwargs: Any) -> HTTPChatLLM:
    env = kwargs.pop("env", {})
    return HTTPChatLLM(LLMSettings(base_url=fake.base_url, model="fake-model", **kwargs), env=env)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def python_command(code: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


# ---------------------------------------------------------------------------- HTTP


def test_chat_returns_content_and_sends_openai_request() -> None:
    with FakeLLM(['{"ok": true}']) as fake:
        answer = client(fake).chat(ASK)
    assert answer == '{"ok": true}'
    assert fake.paths == ["/v1/chat/completions"]
    assert fake.requests == [
        {
            "model": "fake-model",
            "messages": ASK,
            "temperature": 0.0,
            "response_format": {"type": "json_object"},
        }
    ]
    assert fake.headers[0]["content-type"] == "application/json"
    assert "authorization" not in fake.headers[0]


def test_json_mode_off_sends_no_response_format() -> None:
    with FakeLLM(["hi"]) as fake:
        assert client(fake, json_mode=False, temperature=0.7).chat(ASK) == "hi"
    assert "response_format" not in fake.requests[0]
    assert fake.requests[0]["temperature"] == 0.7


def test_trailing_slash_in_base_url() -> None:
    with FakeLLM(["hi"]) as fake:
        llm = HTTPChatLLM(LLMSettings(base_url=fake.base_url + "/", model="m"), env={})
        assert llm.chat(ASK) == "hi"
    assert fake.paths == ["/v1/chat/completions"]


def test_api_key_sent_from_env_var_and_never_shown_in_errors() -> None:
    with FakeLLM(
        [
            "ok",
            Reply(status=401, body={"error": {"message": f"Incorrect API key provided: {SECRET}"}}),
        ]
    ) as fake:
        llm = client(fake, api_key_env="MK_TEST_KEY", env={"MK_TEST_KEY": SECRET})
        assert llm.chat(ASK) == "ok"
        with pytest.raises(LLMError) as excinfo:
            llm.chat(ASK)
    assert fake.headers[0]["authorization"] == f"Bearer {SECRET}"
    message = str(excinfo.value)
    assert "check the API key in $MK_TEST_KEY" in message
    assert "HTTP 401" in message
    assert SECRET not in message
    assert SECRET not in repr(llm)
    assert len(fake.requests) == 2  # no retry on 401


def test_missing_api_key_env_var() -> None:
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="MK_NOPE")
    with pytest.raises(LLMError) as excinfo:
        HTTPChatLLM(settings, env={})
    assert str(excinfo.value) == "environment variable MK_NOPE (llm.api_key_env) is not set"


def test_response_format_rejected_falls_back_and_remembers() -> None:
    rejected = Reply(
        status=400,
        body={"error": {"message": "Unrecognized request argument supplied: response_format"}},
    )
    with FakeLLM([rejected, "first", "second"]) as fake:
        llm = client(fake)
        assert llm.chat(ASK) == "first"
        assert llm.chat(ASK) == "second"
    assert "response_format" in fake.requests[0]
    assert "response_format" not in fake.requests[1]
    assert "response_format" not in fake.requests[2]
    assert len(fake.requests) == 3


def test_other_400_is_not_retried() -> None:
    too_long = Reply(status=400, body={"error": {"message": "context too long"}})
    with FakeLLM([too_long, "ok"]) as fake:
        with pytest.raises(LLMError, match=r"HTTP 400: context too long"):
            client(fake).chat(ASK)
    assert len(fake.requests) == 1


def test_404_hints_at_base_url_and_model() -> None:
    with FakeLLM([Reply(status=404, body={"error": {"message": "model 'x' not found"}})]) as fake:
        with pytest.raises(LLMError) as excinfo:
            client(fake).chat(ASK)
    message = str(excinfo.value)
    assert "check llm.base_url (expects the /v1 prefix for most servers) and llm.model" in message
    assert "model 'x' not found" in message
    assert len(fake.requests) == 1


def test_500_then_success_retries_once(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(llm_mod.time, "sleep", pauses.append)
    with FakeLLM([Reply(status=500), "recovered"]) as fake:
        assert client(fake).chat(ASK) == "recovered"
    assert len(fake.requests) == 2
    assert pauses == [0.5]  # one pause, the default, before the one retry


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_transient_statuses_are_retried(status: int, fast_retry: None) -> None:
    with FakeLLM([Reply(status=status), "ok"]) as fake:
        assert client(fake).chat(ASK) == "ok"
    assert len(fake.requests) == 2


def test_500_twice_fails(fast_retry: None) -> None:
    with FakeLLM([Reply(status=500, body="internal oops")]) as fake:
        with pytest.raises(LLMError, match=r"HTTP 500 twice: internal oops"):
            client(fake).chat(ASK)
    assert len(fake.requests) == 2


def test_slow_reply_times_out() -> None:
    with FakeLLM([Reply(delay=30.0, content="too late")]) as fake:
        started = time.monotonic()
        with pytest.raises(LLMError) as excinfo:
            client(fake, timeout_s=0.3).chat(ASK)
        elapsed = time.monotonic() - started
    assert str(excinfo.value) == (
        f"LLM at {fake.base_url}/chat/completions did not answer within 0.3 s (llm.timeout_s)"
    )
    assert elapsed < 10  # the timeout, not the reply's 30 s
    assert len(fake.requests) == 1  # a timeout is not retried: it would double the wait


def test_truncated_body_retried_then_fails(fast_retry: None) -> None:
    with FakeLLM([Reply(truncate=True, content="cut")]) as fake:
        with pytest.raises(LLMError, match="closed the connection before the reply was complete"):
            client(fake).chat(ASK)
    assert len(fake.requests) == 2


def test_truncated_body_then_success(fast_retry: None) -> None:
    with FakeLLM([Reply(truncate=True, content="cut"), "whole"]) as fake:
        assert client(fake).chat(ASK) == "whole"
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    "raw",
    [
        b"<html>502 Bad Gateway</html>",
        b'{"object": "chat.completion"}',
        b'{"choices": []}',
        b'{"choices": [{"message": {"role": "assistant", "content": null}}]}',
        b"\xff\xfe not utf-8",
    ],
    ids=["html", "no-choices", "empty-choices", "null-content", "not-utf8"],
)
def test_unusable_200_body(raw: bytes) -> None:
    with FakeLLM([Reply(raw=raw)]) as fake:
        with pytest.raises(LLMError) as excinfo:
            client(fake).chat(ASK)
    expected = f"unexpected reply from {fake.base_url}/chat/completions: "
    assert str(excinfo.value).startswith(expected)
    assert len(fake.requests) == 1


def test_error_object_in_200_body() -> None:
    with FakeLLM([Reply(raw=b'{"error": {"message": "model is loading"}}')]) as fake:
        with pytest.raises(LLMError, match="returned an error: model is loading"):
            client(fake).chat(ASK)


def test_content_parts_are_joined() -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    body = {"choices": [{"message": {"content": parts}}]}
    with FakeLLM([Reply(raw=json.dumps(body).encode())]) as fake:
        assert client(fake).chat(ASK) == "ab"


def test_connection_refused_names_the_url() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    llm = HTTPChatLLM(LLMSettings(base_url=url, model="m"), env={})
    started = time.monotonic()
    with pytest.raises(LLMError) as excinfo:
        llm.chat(ASK)
    message = str(excinfo.value)
    assert message.startswith(f"cannot reach the LLM at {url}/chat/completions: ")
    assert message.endswith("is the server running?")
    assert time.monotonic() - started < 10  # refused at once, not after the 60 s timeout


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1/v1", "file:///etc/passwd", "127.0.0.1:11434/v1", "http://"]
)
def test_only_http_urls(url: str) -> None:
    with pytest.raises(LLMError, match="must be an http:// or https:// URL"):
        HTTPChatLLM(LLMSettings(base_url=url, model="m"), env={})
    with pytest.raises(LLMError, match="must be an http:// or https:// URL"):
        LLMSettings.from_config({"base_url": url, "model": "m"})


def test_fake_answers_from_a_callable() -> None:
    def respond(request: dict[str, Any]) -> str | Reply:
        text = last_user_message(request)
        return Reply(status=503) if text == "fail" else text.upper()

    with FakeLLM(respond) as fake:
        llm = client(fake)
        assert llm.chat([{"role": "user", "content": "shout"}]) == "SHOUT"
        assert llm.chat([{"role": "user", "content": "again"}]) == "AGAIN"


def test_fake_repeats_last_reply_and_defaults_to_empty_object() -> None:
    with FakeLLM(["a", "b"]) as fake:
        llm = client(fake)
        assert [llm.chat(ASK) for _ in range(3)] == ["a", "b", "b"]
    with FakeLLM() as fake:
        assert client(fake).chat(ASK) == "{}"


def test_fake_stops_promptly_with_a_delayed_reply_pending() -> None:
    started = time.monotonic()
    with FakeLLM([Reply(delay=30.0, content="late")]) as fake:
        with pytest.raises(LLMError, match="did not answer"):
            client(fake, timeout_s=0.2).chat(ASK)
    assert time.monotonic() - started < 10  # exiting woke the handler sleeping for 30 s


def test_fake_llm_script_mode(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(
        json.dumps(
            [
                {"match": "rice", "content": '{"topic": "cooking"}'},
                "first",
                "second",
            ]
        )
    )
    process = subprocess.Popen(
        [sys.executable, str(FAKE_SCRIPT), "--port", "0", "--script", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:") and line.endswith("/v1"), line
        base_url = line.removeprefix("listening on ")
        llm = HTTPChatLLM(LLMSettings(base_url=base_url, model="m"), env={})
        rice = [{"role": "user", "content": "how long to cook rice?"}]
        assert llm.chat(rice) == '{"topic": "cooking"}'
        assert llm.chat(ASK) == "first"
        assert llm.chat(ASK) == "second"
        assert llm.chat(ASK) == "second"
    finally:
        process.terminate()
        out, err = process.communicate(timeout=5)
    assert process.returncode == 0, err


# ---------------------------------------------------------------------------- JSON replies


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1}', {"a": 1}),
        ("[1, 2, 3]", [1, 2, 3]),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Here is the JSON:\n```json\n{"a": 1}\n```\nLet me know!', {"a": 1}),
        ('Sure! Here it is: {"a": {"b": "c}"}} Hope that helps.', {"a": {"b": "c}"}}),
        ('I found [some] items: [{"x": 1}, {"x": 2}]', [{"x": 1}, {"x": 2}]),
        ("{'a': 'it\\'s', 'b': [True, None]}", {"a": "it's", "b": [True, None]}),
        ("Result: {'topic': 'cooking', 'new': false}", {"topic": "cooking", "new": False}),
        ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        ('{"text": "commas, ] inside, }", }', {"text": "commas, ] inside, }"}),
        ('<think>maybe {"a": 0}?</think>\n{"a": 1}', {"a": 1}),
        ("It's done: {\"a\": \"don't\"}", {"a": "don't"}),
    ],
    ids=[
        "plain-object",
        "plain-list",
        "fenced-json",
        "fenced-bare",
        "fence-in-prose",
        "prose-around",
        "prose-brackets-first",
        "single-quotes",
        "python-dict-json-words",
        "trailing-commas",
        "trailing-comma-strings-untouched",
        "think-block",
        "apostrophes",
    ],
)
def test_parse_json_reply(text: str, expected: Any) -> None:
    assert parse_json_reply(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I cannot help with that.",
        "{not json at all}",
        '{"a": 1',
        "```json\n{oops}\n```",
        "[" * 5000,
        "{'a': __import__('os').system('true')}",
    ],
    ids=["empty", "prose", "braces-garbage", "unclosed", "bad-fence", "many-brackets", "code"],
)
def test_parse_json_reply_garbage(text: str) -> None:
    with pytest.raises(LLMError) as excinfo:
        parse_json_reply(text)
    assert str(excinfo.value).startswith("could not parse JSON from the LLM reply: ")
    assert len(str(excinfo.value)) < 300


def needs_topic(value: Any) -> str:
    if not isinstance(value, dict) or not isinstance(value.get("topic"), str):
        raise ValueError('expected an object {"topic": "<name>"}')
    return value["topic"].strip()


def test_ask_json_valid_first_time() -> None:
    with FakeLLM(['```json\n{"topic": " cooking "}\n```']) as fake:
        assert ask_json(client(fake), ASK, validate=needs_topic) == "cooking"
    assert len(fake.requests) == 1


@pytest.mark.parametrize("bad", ["Sure, the topic is cooking.", '{"subject": "cooking"}'])
def test_ask_json_repair_succeeds(bad: str) -> None:
    with FakeLLM([bad, '{"topic": "cooking"}']) as fake:
        assert ask_json(client(fake), ASK, validate=needs_topic) == "cooking"
    assert len(fake.requests) == 2
    repair = fake.requests[1]["messages"]
    assert repair[: len(ASK)] == ASK
    assert repair[len(ASK)] == {"role": "assistant", "content": bad}
    last = repair[-1]
    assert last["role"] == "user"
    assert last["content"].startswith("Your reply was not valid JSON of the requested shape: ")
    assert last["content"].endswith(". Reply again with only the JSON.")
    assert len(repair) == len(ASK) + 2


def test_ask_json_repair_fails() -> None:
    with FakeLLM(["no json here", '{"subject": "still wrong"}']) as fake:
        with pytest.raises(LLMError) as excinfo:
            ask_json(client(fake), ASK, validate=needs_topic)
    assert len(fake.requests) == 2
    assert fake.requests[1]["messages"][-2] == {"role": "assistant", "content": "no json here"}
    assert 'expected an object {"topic": "<name>"}' in str(excinfo.value)
    assert "even after a repair request" in str(excinfo.value)


def test_ask_json_does_not_repair_transport_errors(fast_retry: None) -> None:
    with FakeLLM([Reply(status=500)]) as fake:
        with pytest.raises(LLMError, match="HTTP 500 twice"):
            ask_json(client(fake), ASK)
    assert len(fake.requests) == 2  # the transport retry, not a repair request


# ---------------------------------------------------------------------------- settings


def test_from_config_empty_is_none() -> None:
    assert LLMSettings.from_config({}) is None
    assert LLMSettings.from_config(None) is None


def test_from_config_http_and_command() -> None:
    settings = LLMSettings.from_config(
        {
            "base_url": "http://127.0.0.1:11434/v1",
            "model": "qwen2.5:3b",
            "api_key_env": "OPENAI_API_KEY",
            "timeout_s": 30,
            "temperature": 0,
            "json_mode": False,
        }
    )
    assert settings == LLMSettings(
        base_url="http://127.0.0.1:11434/v1",
        model="qwen2.5:3b",
        api_key_env="OPENAI_API_KEY",
        timeout_s=30.0,
        json_mode=False,
    )
    command = LLMSettings.from_config({"command": "llm -m local"})
    assert command == LLMSettings(command="llm -m local")


@pytest.mark.parametrize(
    "config, message",
    [
        ({"modle": "x"}, "llm: unknown key 'modle' (did you mean 'model'? allowed: api_key_env, "
         "base_url, command, json_mode, model, temperature, timeout_s)"),
        ({"base_url": "http://h/v1", "model": 3}, "llm.model must be a string, not 3 (int)"),
        ({"command": "x", "timeout_s": "10s"}, "llm.timeout_s must be a number of seconds over 0, not '10s' (str)"),
        ({"command": "x", "timeout_s": True}, "llm.timeout_s must be a number of seconds over 0, not True (bool)"),
        ({"command": "x", "timeout_s": 0}, "llm.timeout_s must be a number of seconds over 0, not 0 (int)"),
        ({"command": "x", "json_mode": "yes"}, "llm.json_mode must be true or false, not 'yes'"),
        ({"base_url": "http://h/v1"}, "llm.model is missing: with llm.base_url set, also set"),
        ({"model": "m"}, "llm: set llm.base_url and llm.model"),
        ({"command": "x", "base_url": "http://h/v1", "model": "m"}, "not both"),
        ({"command": "x", "api_key_env": SECRET}, "must be the NAME of an environment variable"),
        (["command"], "llm must be a mapping"),
    ],
    ids=[
        "unknown-key",
        "model-int",
        "timeout-str",
        "timeout-bool",
        "timeout-zero",
        "json-mode-str",
        "missing-model",
        "missing-base-url",
        "both",
        "key-not-name",
        "not-mapping",
    ],
)
def test_from_config_errors(config: Any, message: str) -> None:
    with pytest.raises(LLMError) as excinfo:
        LLMSettings.from_config(config)
    assert message in str(excinfo.value)
    assert SECRET not in str(excinfo.value)


def test_make_llm() -> None:
    assert make_llm(None) is None
    assert isinstance(make_llm(LLMSettings(command="cat")), CommandLLM)
    http = make_llm(LLMSettings(base_url="http://127.0.0.1:9/v1", model="m"), env={})
    assert isinstance(http, HTTPChatLLM)
    with pytest.raises(LLMError):
        make_llm(LLMSettings(base_url="http://127.0.0.1:9/v1"))


# ---------------------------------------------------------------------------- command


def test_command_llm_reads_prompt_on_stdin() -> None:
    echo = python_command(
        "import sys; text = sys.stdin.read(); print('got ' + repr(text))"
    )
    answer = CommandLLM(LLMSettings(command=echo)).chat(ASK)
    assert answer == "got " + repr("SYSTEM:\nAnswer in JSON.\n\nUSER:\nhello\n")


def test_command_llm_non_ascii_and_env() -> None:
    code = (
        "import os, sys; "
        "sys.stdout.buffer.write((os.environ['MK_X'] + sys.stdin.buffer.read().decode()).encode())"
    )
    llm = CommandLLM(LLMSettings(command=python_command(code)), env={"MK_X": "é:"})
    assert llm.chat([{"role": "user", "content": "naïve ☃"}]) == "é:USER:\nnaïve ☃"


def test_command_llm_non_zero_exit_shows_stderr_tail() -> None:
    code = "import sys; sys.stderr.write('x' * 2000 + 'model not found'); sys.exit(3)"
    with pytest.raises(LLMError) as excinfo:
        CommandLLM(LLMSettings(command=python_command(code))).chat(ASK)
    message = str(excinfo.value)
    assert "exited with status 3: " in message
    assert message.endswith("model not found")
    assert len(message) < 800


def test_command_llm_not_found() -> None:
    with pytest.raises(LLMError, match="exited with status 127"):
        CommandLLM(LLMSettings(command="memkit-no-such-llm-command")).chat(ASK)


def test_command_llm_empty_output() -> None:
    with pytest.raises(LLMError, match="printed nothing"):
        CommandLLM(LLMSettings(command=python_command("pass"))).chat(ASK)


def test_command_llm_timeout_kills_the_command() -> None:
    # A pipeline, so the sleeper is a grandchild of the shell holding stdout open: unless the
    # whole process group is killed, reading the pipes would wait the full 5 s.
    command = f"{python_command('import time; time.sleep(30)')} | cat"
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"did not answer within 0.3 s \(llm.timeout_s\)"):
        CommandLLM(LLMSettings(command=command, timeout_s=0.3)).chat(ASK)
    assert time.monotonic() - started < 10  # killed at the timeout, not after the sleeper's 30 s


def _command_llm(command: str, timeout_s: float):
    from memkit.llm.client import CommandLLM, LLMSettings

    return CommandLLM(LLMSettings(command=command, timeout_s=timeout_s))


@pytest.mark.skipif(os.name != "posix" or not Path("/usr/bin/setsid").exists(), reason="needs setsid")
@pytest.mark.pumps_left
def test_a_command_whose_background_grandchild_holds_stdout_answers_promptly() -> None:
    # it answers, then leaves a process in a session of its own holding stdout open
    llm = _command_llm("echo '{\"ok\": true}'; setsid sleep 30 &", timeout_s=8)
    # the answer, after the pipe grace (1 s); waiting for the grandchild would end in a timeout error
    assert llm.chat([{"role": "user", "content": "hi"}]) == '{"ok": true}'


@pytest.mark.skipif(os.name != "posix" or not Path("/usr/bin/setsid").exists(), reason="needs setsid")
@pytest.mark.pumps_left
def test_timeout_bounds_a_command_with_a_grandchild() -> None:
    import time

    from memkit.errors import LLMError

    llm = _command_llm("setsid sleep 30 & sleep 30", timeout_s=1)
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"did not answer within 1 s"):
        llm.chat([{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 20  # about timeout_s (1 s), never the children's 30 s


def test_a_bracket_bomb_reply_is_refused_and_a_repair_asked_for() -> None:
    from memkit.llm.replies import ask_json

    class Scripted:
        def __init__(self, replies):
            self.replies = list(replies)
            self.asked = 0

        def chat(self, messages):
            self.asked += 1
            return self.replies.pop(0)

    llm = Scripted(["[" * 100_000 + "]" * 100_000, '{"conclusions": []}'])
    assert ask_json(llm, [{"role": "user", "content": "x"}]) == {"conclusions": []}
    assert llm.asked == 2  # refused before parsing (no RecursionError from 100k-deep nesting), then repaired


@pytest.mark.parametrize("where", ["header", "body"])
def test_timeout_bounds_the_whole_call_against_a_server_that_drips(where: str) -> None:
    """timeout_s is a deadline on the call, not on each socket read: a server sending its answer a
    byte every 0.2 s (each read well within the timeout) is cut at timeout_s (it used to run the
    call for as long as it dripped: 25 s for a 4 s timeout)."""
    from util import DripServer, dripped_json

    answer = dripped_json({"choices": [{"message": {"role": "assistant", "content": "x" * 400}}]})
    head, _, body = answer.partition(b"\r\n\r\n")
    # the status line and header a byte at a time, or the header at once and the body a byte at a time
    parts = (b"", answer) if where == "header" else (head + b"\r\n\r\n", body)
    with DripServer(parts[1], every=0.2, head=parts[0]) as server:
        llm = HTTPChatLLM(LLMSettings(base_url=server.base_url, model="fake", timeout_s=1.0), env={})
        started = time.monotonic()
        with pytest.raises(LLMError, match=r"did not answer within 1 s \(llm.timeout_s\)"):
            llm.chat(ASK)
        elapsed = time.monotonic() - started
    assert elapsed < 8  # the 1 s deadline and slack, not the ~100 s the drip takes
