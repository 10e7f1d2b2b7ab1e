"""A scripted stand-in for an LLM server, so `make demo` runs offline.

It speaks the OpenAI chat protocol on 127.0.0.1 (tests/fake_llm.py) and answers the digest
prompts for bench/demo/transcript-2026-11-21.txt the way a good model would.
Usage: python bench/demo/demo_llm.py PORT_FILE   (writes the base URL to PORT_FILE, serves until killed)
"""
from __future__ import annotations

import json
import re
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from fake_llm import FakeLLM  # noqa: E402

CONCLUSIONS = [
    {"kind": "decision", "text": "Switched the sourdough starter Bolinha to 100% rye flour for good; "
                                 "T65 wheat is now only used in the dough", "topic": "cooking"},
    {"kind": "discovery", "text": "On rye, Bolinha doubles in about four hours", "topic": "cooking"},
    {"kind": "decision", "text": "Signed up for the Lisbon half marathon in March 2027, aiming for under 1:45",
     "topic": "running"},
    {"kind": "event", "text": "Sister Ana is moving from Coimbra to Porto in January 2027 because Miguel "
                              "got a job there; Tomás changes school after Christmas", "topic": "family"},
    {"kind": "preference", "text": "Eats vegetarian Monday to Friday since September 2026; meat and fish "
                                   "only at weekends", "topic": None},
]
# the Lisbon conversation of the demo and the README, as it ages
SUMMARY = {"summary": "Maya plans a week in Lisbon in March, her first trip alone since the move.",
           "key_points": ["TAP flight TP 571 booked: March 3rd, back on the 10th", "Wants a quiet hotel in Alfama",
                          "Museu do Azulejo; a fado evening (book a week ahead)"],
           "emotional_highlights": ["Nervous but excited: first trip alone"]}
CORE = {"core": "Maya's March week in Lisbon: TAP TP 571 on March 3rd, a quiet hotel in Alfama, tiles and a "
                "fado evening; her first trip alone.",
        "clearly": ["the flight on March 3rd"], "vaguely": ["a hotel in Alfama"], "barely": ["which fado club"]}
# which existing entries (by memkit id) each conclusion makes outdated
UPDATES = {
    "Switched the sourdough starter": ["3e72b62d"],
    "Signed up for the Lisbon half marathon": ["d4dd7fa4"],
    "Sister Ana is moving": ["bf801c7b"],
}


def answer(request: dict) -> str:
    prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
    if "starting a conversation with the user to follow up" in prompt:  # memkit proactive
        return "Hey, I've been wondering since you mentioned it: how did the job interview at Acme go?"
    if "keep only its core" in prompt:  # a conversation a week old (memkit upkeep: session-aging)
        return json.dumps(CORE)
    if "condense it into what is worth remembering" in prompt:  # three days old
        return json.dumps(SUMMARY)
    if "condense the earlier part of a conversation" in prompt:  # a session's summary strategy
        return ("Maya is planning a week in Lisbon in March; the TAP flight TP 571 on March 3rd is booked "
                "and she asked for a quiet hotel.")
    if "<transcript>" in prompt:
        return json.dumps({"conclusions": CONCLUSIONS, "new_topic": None})
    if "outdated" in prompt:
        updates = []
        for number, text in re.findall(r"^(\d+)\. NEW: (.*)$", prompt, re.M):
            for start, ids in UPDATES.items():
                shown = [i for i in ids if f"[{i}]" in prompt]
                if text.startswith(start) and shown:
                    updates.append({"new": int(number), "outdated": shown})
        return json.dumps({"updates": updates})
    return "{}"  # anything else (e.g. naming subtopics): no opinion, memkit falls back to its own


def main() -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with FakeLLM(answer) as fake:
        Path(sys.argv[1]).write_text(fake.base_url)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
