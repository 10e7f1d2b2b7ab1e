"""Answers a person can judge: below the threshold, search shows the closest few marked weak
instead of nothing, never noise; scores are on 0..1 in every mode."""
from __future__ import annotations

import json

from click.testing import CliRunner
from util import FakeEmbedder, vault_with

from memkit import Vault
from memkit.frontends.cli.group import main

NOTES = "".join(f"- {t}\n" for t in [
    "I drive a 2014 Subaru Outback", "Car wash every other Saturday", "Dentist is Dr Okafor",
    "Allergic to penicillin", "Sister Ana lives in Porto", "Router is a MikroTik hAP ax3",
    "Prefers bomba rice for paella", "Pays the mortgage on the first of the month",
    "Learning European Portuguese on Tuesdays", "Runs the Lisbon half marathon in March",
    "Passport expires in June 2029", "Son Leo plays the cello"])


def cli(vault, *args):
    return CliRunner().invoke(main, ["--vault", str(vault.root), *args], prog_name="memkit",
                              obj={"vault_obj": vault})


def test_nothing_above_the_threshold_gives_the_closest_marked_weak(tmp_path):
    vault = vault_with(tmp_path, {"life": NOTES})
    # the static stage's weak matches (the judge's have tests of their own, tests/embeddings/test_judge.py)
    (vault.root / "memkit.yaml").write_text("embedding_similarity_threshold: 0.95\njudge: false\n")
    vault = Vault(vault.root, embedder=FakeEmbedder())
    query = "saturday dentist cello"  # one word of three in each entry: below the threshold, not noise
    hits = vault.search(query, threshold="auto")
    assert len(hits) == 3 and not any(h.confident for h in hits)
    assert {h.text for h in hits} == {"Car wash every other Saturday", "Dentist is Dr Okafor", "Son Leo plays the cello"}
    assert vault.search(query, threshold="auto", weak=0) == []  # the library's answer without weak matches
    result = cli(vault, "search", query)
    assert result.exit_code == 0
    assert result.stderr.startswith("no confident match; the closest 3 memories, weak")
    assert "Dentist is Dr Okafor" in result.stdout
    data = json.loads(cli(vault, "search", query, "--json").stdout)
    assert [d["confident"] for d in data] == [False] * 3


class EvenEmbedder:
    """Each entry a one-hot vector (its first word); a query sharing no entry's first word is the
    uniform vector: the same cosine with every entry, nothing stands out of the noise."""

    name, dim = "even", 64

    def embed(self, texts):
        import numpy as np

        out = np.full((len(texts), self.dim), 1 / 8, dtype="float32")
        for i, text in enumerate(texts):
            first = text.split()[0].lower()
            slot = self._slots.get(first)
            if slot is not None:
                out[i] = 0
                out[i, slot] = 1
        return out

    def __init__(self):
        self._slots = {t.split()[0].lower(): i for i, t in enumerate(NOTES.replace("- ", "").splitlines())}


def test_noise_is_never_shown(tmp_path):
    vault = vault_with(tmp_path, {"life": NOTES}, embedder=EvenEmbedder())
    (vault.root / "memkit.yaml").write_text("judge: false\n")  # the static stage's noise test
    vault = Vault(vault.root, embedder=EvenEmbedder())
    hits = vault.search("zxqv plorb wibble", threshold=0.95)  # no shared word, every cosine the same
    assert hits == []
    result = cli(vault, "search", "zxqv plorb wibble", "--threshold", "0.95")
    assert result.exit_code == 0 and result.stdout == "" and "no memories match" in result.stderr



def test_confident_hits_are_marked_so(tmp_path):
    vault = vault_with(tmp_path, {"life": NOTES})
    hits = vault.search("Subaru Outback", threshold=None)
    assert hits[0].confident and hits[0].text.startswith("I drive a 2014 Subaru")


def test_scores_are_on_zero_to_one_in_every_mode(tmp_path):
    vault = vault_with(tmp_path, {"life": NOTES})
    for mode in ("lexical", "vector", "hybrid"):
        hits = vault.search("MikroTik hAP ax3 router", mode=mode, threshold=None)
        assert hits[0].text == "Router is a MikroTik hAP ax3", mode
        assert all(0.0 <= h.score <= 1.0 for h in hits), (mode, [h.score for h in hits])
    lexical = vault.search("MikroTik hAP ax3 router", mode="lexical")
    assert lexical[0].score > 0.6 and lexical[0].lexical > 1.0  # the BM25 score itself stays in .lexical
