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


def test_a_safety_note_bears_on_a_message_by_its_words():
    """memkit.search.safety.bears_on: the note's words and the message's meet in one domain (the
    same on every CPU: no model)."""
    from memkit.search import bears_on

    shellfish = "Shellfish allergy: prawns and mussels make my throat swell, EpiPen in the blue bag"
    assert bears_on(shellfish, "Can you suggest a Thai dish I could order tonight?")
    assert bears_on(shellfish, "book us a table at a seafood restaurant for Friday")
    assert bears_on(shellfish, "help me pack for the trip")  # the EpiPen goes in the bag
    assert not bears_on(shellfish, "book me a haircut near my workplace this Friday lunchtime")
    assert bears_on("Ibuprofen upsets my stomach, paracetamol is fine", "I've pulled a muscle, what can I take?")
    assert not bears_on("Ibuprofen upsets my stomach, paracetamol is fine", "the washer is leaking all over the floor")
    assert bears_on("Allergic to penicillin: came out in hives", "the GP wants to prescribe something for my ear infection")
    assert bears_on("Asthma: blue inhaler in every coat", "planning a hike in the heat on Saturday")
    assert bears_on("Torn meniscus in the right knee", "signing up for a charity 5k fun run")
    assert not bears_on("Torn meniscus in the right knee", "booking train tickets to London")
    assert not bears_on("Take 50 mcg levothyroxine every morning", "the smart lights stopped responding")
    # a message about health itself: every safety note bears on it
    assert bears_on("Allergic to tree nuts (cashews, walnuts)", "is there anything I react badly to?")
    assert bears_on("Take 50 mcg levothyroxine every morning", "any health issues I should tell the new doctor about?")
    assert bears_on("Allergic to tree nuts (cashews, walnuts)", "I'm making pesto tonight")


@needs_judge
def test_a_health_note_stays_out_of_a_block_it_does_not_bear_on(tmp_path):
    """The judge rates "book me a haircut" and the thyroid pill 0.20 (far below the 0.3 from which a
    health note is in the block whatever its words): no health note in that block, and the
    shellfish allergy in the block of a seafood dinner, whose wording the judge rates far lower."""
    root = Vault.init(tmp_path / "v", profile=False).root
    notes = {**NOTES, "health": ["Take 50 mcg levothyroxine every morning before coffee",
                                 "Shellfish allergy: prawns and mussels make my throat swell",
                                 "Dentist is Dr Okafor, check-up every six months"]}
    for name, lines in notes.items():
        (root / "topics" / f"{name}.md").write_text(
            f"---\ntitle: {name}\n---\n" + "".join(f"- {line}\n" for line in lines))
    vault = Vault(root)
    haircut = vault.context("book me a haircut near my workplace this Friday lunchtime").text
    assert "levothyroxine" not in haircut and "Shellfish" not in haircut, haircut
    assert "Shellfish allergy" in vault.context("we're getting pad thai takeaway, what should I pick?").text


def test_without_the_judge_the_words_still_bring_the_allergy(tmp_path):
    """A board too slow for the judge (``judge: false``) still gets the safety note that bears on
    the message, by its words (memkit.search.safety.bears_on), and none where it does not."""
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "memkit.yaml").write_text("judge: false\n")
    for name, lines in NOTES.items():
        (root / "topics" / f"{name}.md").write_text(
            f"---\ntitle: {name}\n---\n" + "".join(f"- {line}\n" for line in lines))
    vault = Vault(root)
    assert "Peanut allergy" in vault.context("Can you suggest a Thai dish I could order tonight?").text
    assert "Peanut allergy" not in vault.context("remind me to renew the car insurance").text
    assert vault.searcher.safety_hits("what should we get from the takeaway?")[0].text.startswith("Peanut allergy")
