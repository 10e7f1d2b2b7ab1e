"""memkit.formats.transcript: ``Speaker: text`` lines, a JSON list or JSON Lines; errors name the file and line."""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.base.limits import MAX_TRANSCRIPT_BYTES
from memkit.errors import TranscriptError
from memkit.formats.transcript import (
    Message,
    decode_utf8,
    json_lines,
    parse_transcript,
    read_transcript,
    render,
)

FAST = settings(max_examples=30, deadline=None, derandomize=True)
line_text = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=50) \
    .map(lambda s: " ".join(s.split())).filter(bool)
roles = st.tuples(st.sampled_from("AZaz"), st.text("abcXYZ019 ._'-", max_size=12), st.sampled_from("bY5")) \
    .map("".join)


def test_speaker_lines_crlf_cr_bom_and_continuations():
    want = [Message("User", "hi"), Message("Assistant", "hello more")]
    for data in (b"User: hi\nAssistant: hello\n  more\n", b"User: hi\r\nAssistant: hello\r\n  more\r\n",
                 b"User: hi\rAssistant: hello\r  more\r", b"\xef\xbb\xbfUser: hi\nAssistant: hello\nmore"):
        assert parse_transcript(data) == want


def test_lines_before_any_speaker_are_the_user_and_urls_are_not_speakers():
    assert parse_transcript(b"hi there\nno speaker") == [Message("user", "hi there no speaker")]
    assert parse_transcript(b"http://x.example: y\n") == [Message("user", "http://x.example: y")]


def test_unicode_speakers_and_text():
    assert parse_transcript("Zoë: ça va? 東京\n".encode()) == [Message("Zoë", "ça va? 東京")]


def test_a_json_list_with_openai_content_parts_and_tool_calls():
    data = json.dumps([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "look"}, "at  this"]},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"speaker": "Ana", "text": "  multi\nline  "},
        {"content": "no role"},
    ]).encode()
    assert parse_transcript(data) == [Message("system", "be brief"), Message("user", "look at this"),
                                      Message("Ana", "multi line"), Message("user", "no role")]


def test_json_lines_skip_blank_lines():
    data = b'{"role":"user","content":"a"}\r\n\r\n{"role":"assistant","content":"b"}\n'
    assert parse_transcript(data) == [Message("user", "a"), Message("assistant", "b")]


@pytest.mark.parametrize("data, message", [
    (b"", "t.txt: the transcript is empty"),
    (b"  \n\r\n\t", "t.txt: the transcript is empty"),
    (b"\xef\xbb\xbf", "t.txt: the transcript is empty"),
    (b"a\x00b", "t.txt: contains NUL bytes"),
    (b"User: ok\n\xff\xfe\n", "t.txt line 2: not valid UTF-8; save the transcript as UTF-8"),
    (b'[{"role": "user", "content": "hi"},\n {"role": ]', "t.txt line 2: looks like JSON but is not valid"),
    (b'{"role":"user","content":"a"}\n{bad\n', "t.txt line 2: not valid JSON Lines"),
    (b"[1, 2]", "t.txt: message 1 is not an object"),
    (b'{"a": 1}', "t.txt: the transcript has no messages with content"),
    (b'[{"role":"assistant","content":null}]', "t.txt: the transcript has no messages with content"),
    (b'"just a string"', None),  # plain text: one user line
    (b"[" * 100_000, "t.txt: JSON nested too deeply"),
    (b'{"a": ' * 100_000, "t.txt line 1: JSON nested too deeply"),
])
def test_errors_name_the_file_and_line(data, message):
    if message is None:
        assert parse_transcript(data, "t.txt") == [Message("user", '"just a string"')]
        return
    with pytest.raises(TranscriptError) as exc:
        parse_transcript(data, "t.txt")
    assert str(exc.value).startswith(message)


def test_a_json_error_after_leading_blank_lines_names_the_file_line():
    with pytest.raises(TranscriptError, match=r"t.json line 4: looks like JSON"):
        parse_transcript(b'\n\n[{"role": "user", "content": "hi"},\n bad]', "t.json")


def test_a_bad_byte_in_a_cr_only_transcript_names_its_line():
    with pytest.raises(TranscriptError, match=r"t.txt line 3: not valid UTF-8"):
        parse_transcript(b"User: ok\rNext: x\r\xff\r", "t.txt")


def test_decode_utf8_and_json_lines_helpers():
    assert decode_utf8(b"\xef\xbb\xbfa", "f") == "a"
    with pytest.raises(TranscriptError, match=r"^f line 3: not valid UTF-8, hint$"):
        decode_utf8(b"a\nb\n\xc3(", "f", ", hint")
    assert json_lines('1\n\n  \n[2]\n', "f") == [1, [2]]
    with pytest.raises(TranscriptError, match=r"^f line 3: not valid JSON Lines"):
        json_lines('1\n\n{\n', "f")


@FAST
@given(st.lists(st.tuples(roles, line_text), min_size=1, max_size=6))
def test_render_then_parse_speaker_lines_round_trips(pairs):
    messages = [Message(r, c) for r, c in pairs]
    text = render(messages)
    assert parse_transcript(text.encode()) == messages
    assert parse_transcript(text.replace("\n", "\r\n").encode()) == messages
    assert parse_transcript(text.replace("\n", "\r").encode()) == messages


@FAST
@given(st.lists(st.tuples(st.text(min_size=1, max_size=10), st.text(max_size=40)), min_size=1, max_size=6),
       st.booleans())
def test_json_and_json_lines_keep_every_message_with_content(pairs, lines):
    objects = [{"role": r, "content": c} for r, c in pairs]
    data = "\n".join(json.dumps(o) for o in objects) if lines else json.dumps(objects, indent=1)
    want = [Message(r, " ".join(c.split())) for r, c in pairs if c.split()]
    if not want:
        with pytest.raises(TranscriptError, match="no messages with content"):
            parse_transcript(data.encode())
        return
    assert parse_transcript(data.encode()) == want


def test_read_transcript_returns_the_raw_bytes(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"User: hi\r\n")
    assert read_transcript(path) == ([Message("User", "hi")], b"User: hi\r\n")


def test_read_transcript_refuses_missing_large_and_special_files(tmp_path):
    with pytest.raises(TranscriptError, match="cannot read"):
        read_transcript(tmp_path / "missing.txt")
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(MAX_TRANSCRIPT_BYTES + 1)
    with pytest.raises(TranscriptError, match=r"big.txt: transcript is 1.0 MB; .*split it"):
        read_transcript(big)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        with pytest.raises(TranscriptError, match="not read"):
            read_transcript(fifo)  # refused, never waited on
    with pytest.raises(TranscriptError, match="cannot read|not read"):
        read_transcript(tmp_path)  # a folder
