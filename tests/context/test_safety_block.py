"""The memory block keeps what keeps a person safe (issue 40): an allergy, a medication or a
condition that bears on the message is in the block, even where the judge ranks it far down."""
from __future__ import annotations

import pytest

from memkit import Vault
from memkit.embeddings.judge import judge_status
from memkit.search.safety import is_safety_note

needs_judge = pytest.mark.skipif(judge_status() is not None, reason=f"judge unavailable: {judge_status()}")

NOTES = {
    "health": ["Peanut allergy: carries an EpiPen everywhere", "Dentist is Dr Okafor, check-up every six months"],
    "food": ["Loves Thai green curry", "Orders pad see ew from the place on Elm Street",
             "Makes sourdough every Sunday"],
    "life": ["Commutes on the number 23 bus", "Cat called Miso, a grey tabby", "Plays five-a-side on Thursdays",
             "Sister Ana lives in Porto", "Works night shifts at St Mary's", "Saving for a flat in Lisbon"],
}


def test_safety_notes_are_told_by_their_words():
    assert is_safety_note("Allergic to penicillin: came out in hives")
    assert is_safety_note("Lactose intolerant, lactase tablets before anything with cream")
    assert is_safety_note("Asthma: blue inhaler in every coat")
    assert not is_safety_note("Loves Thai green curry")
    assert not is_safety_note("Dentist is Dr Okafor")


@needs_judge
def test_a_thai_dish_to_order_brings_the_peanut_allergy(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    for name, lines in NOTES.items():
        (root / "topics" / f"{name}.md").write_text(
            f"---\ntitle: {name}\n---\n" + "".join(f"- {line}\n" for line in lines))
    vault = Vault(root)
    block = vault.context("Can you suggest a Thai dish I could order tonight?").text
    assert "Peanut allergy" in block
    assert "Loves Thai green curry" in block  # the best memories stay first
    assert block.index("Loves Thai green curry") < block.index("Peanut allergy")
    assert "Peanut allergy" not in vault.context("hi").text  # small talk brings nothing


@needs_judge
def test_a_pinned_profile_line_is_shown_once(tmp_path):
    """Issue 41, item 6: the profile's line appeared under "About the user" and again under the
    message's memories."""
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "topics" / "profile.md").write_text("---\ntitle: Profile\npinned: true\n---\n"
                                                "- Peanut allergy: carries an EpiPen everywhere\n")
    for name, lines in NOTES.items():
        if name != "health":
            (root / "topics" / f"{name}.md").write_text(
                f"---\ntitle: {name}\n---\n" + "".join(f"- {line}\n" for line in lines))
    block = Vault(root).context("Can you suggest a Thai dish I could order tonight? I have a peanut allergy").text
    assert block.count("Peanut allergy: carries an EpiPen") == 1, block
