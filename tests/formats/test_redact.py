"""memkit.formats.redact: secrets and identifiers never reach a file."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.errors import InvalidValue
from memkit.formats.redact import REDACTED, compile_rules, redact


@pytest.mark.parametrize("text, expected", [
    ("my key is sk-proj-abcdefghijklmnopqrstuvwx1234", "my key is [redacted]"),
    ("aws AKIAIOSFODNN7EXAMPLE here", "aws [redacted] here"),
    ("token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "token [redacted]"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abcdefghijk", "Authorization: Bearer [redacted]"),
    ("slack xoxb-1234567890-abcdefghij", "slack [redacted]"),
    ("The wifi password is hunter22", "The wifi password is [redacted]"),
    ("password: S3cr3t!x, then login", "password: [redacted], then login"),
    ("Door pin is 4821.", "Door pin is [redacted]."),
    ('Password = "correct horse"', 'Password = "[redacted]"'),
    ("the passphrase: 'blue moon', fine", "the passphrase: '[redacted]', fine"),
    ("card 4111 1111 1111 1111 exp 12/29", "card [redacted] exp 12/29"),
    ("card 4111-1111-1111-1111", "card [redacted]"),
    ("IBAN GB82 WEST 1234 5698 7654 32 for rent", "IBAN [redacted] for rent"),
    ("pay to DE89370400440532013000", "pay to [redacted]"),
])
def test_the_built_in_rules_replace_the_secret_only(text, expected):
    got = redact(text)
    assert got.text == expected
    assert got.count == 1


@pytest.mark.parametrize("text", [
    "Call me at 4111 1111 1111 1112 (not a card: the Luhn check fails)",
    "Order 1234567890123 shipped",
    "Forgot the password again, resets it monthly",
    "GB82 WEST 1234 5698 7654 33 has wrong check digits",
    "Prefers bomba rice for paella (2026-02-12)",
    "sk-short is not a key",
    "Phone +351 912 345 678",
])
def test_ordinary_text_is_left_as_it_is(text):
    got = redact(text)
    assert got.text == text and got.count == 0


def test_a_code_next_to_the_word_naming_it_is_redacted_unless_a_word_says_it_is_public():
    """Issue 41.8: "the code is 1234" was kept (the rule only knew "pin is"); a zip, an error, a
    flight or a promo code is no secret."""
    assert redact("the code is 1234 and the passphrase: 'blue moon'").text == \
        "the code is [redacted] and the passphrase: '[redacted]'"
    assert redact("PIN 7391 for the debit card").text == "PIN [redacted] for the debit card"
    assert redact("My bank login is maya / Tr0ub4dor&3").text == "My bank login is maya / [redacted]"
    for public in ("zip code 10001", "error code 404", "the flight code is TP571", "promo code 2024WINTER"):
        assert redact(public).count == 0, public


def test_several_secrets_are_counted():
    got = redact("password is abc123 and card 5555 5555 5555 4444 and key sk-abcdefghijklmnopqrstuvwxyz")
    assert got.count == 3
    assert got.text.count(REDACTED) == 3


def test_a_vault_picks_its_rules_and_adds_its_own():
    rules = compile_rules([r"\bCASE-\d{5}\b", r"badge (\d+)"], defaults=["card"])
    got = redact("CASE-12345 badge 991, password is kept 4111111111111111", rules)
    assert got.text == "[redacted] badge [redacted], password is kept [redacted]"
    assert got.count == 3


def test_a_bad_pattern_or_an_unknown_rule_is_named():
    with pytest.raises(InvalidValue, match=r"pattern 2 \('\('\) is not a regular expression"):
        compile_rules(["ok", "("])
    with pytest.raises(InvalidValue, match="unknown built-in redaction 'ssn'"):
        compile_rules([], defaults=["ssn"])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_redacting_twice_changes_nothing_more(text):
    once = redact(text)
    twice = redact(once.text)
    assert twice.text == once.text and twice.count == 0


@pytest.mark.parametrize("text, expected", [
    ("IBAN DE89370400440532013000 EUR monthly", "IBAN [redacted] EUR monthly"),
    ("Pay DE89 3704 0044 0532 0130 00 NOW", "Pay [redacted] NOW"),
    ("the password is in the drawer", "the password is in the drawer"),
    ("password is not set yet", "password is not set yet"),
    ("The password was changed yesterday", "The password was changed yesterday"),
    ("the password is insecure99", "the password is [redacted]"),
])
def test_an_iban_before_a_capital_word_and_a_password_talked_about(text, expected):
    """An IBAN followed by an upper-case word was missed (the match ran into the word and failed the
    check); "password is in the drawer" lost the word "in"."""
    assert redact(text).text == expected


@pytest.mark.parametrize("pattern, why", [
    (r"(a+)+$", "a repetition inside a repetition"),
    (r"(\w+\s?)+x", "a repetition inside a repetition"),
    (r"(.*a){20}", "a repetition inside a repetition"),
    (r"(a|ab)*c", "alternatives a repetition can take in more than one way"),
    (r"\d+\d+\d+x", "two repetitions next to each other"),
    (r"secret (.*)@(.*)", "two repetitions next to each other"),
])
def test_a_pattern_of_ones_own_whose_time_is_unbounded_is_refused(pattern, why):
    """Issue 41.17: a user's pattern had no time bound ((a+)+$ on 40 a's and a b never ends). The
    check reads the pattern's parse, never times a text: the same answer on every machine."""
    with pytest.raises(InvalidValue, match=rf"redaction pattern 1 .* has {why}"):
        compile_rules([pattern])


@pytest.mark.parametrize("pattern", [
    r"(?i)door code:?\s*(\d+)", r"\bCASE-\d{5}\b", r"(?i)badge no\.? ([A-Z]{2}\d{5})", r"(?:\d{3}-){2}\d{4}",
    r"\w+@\w+\.\w+", r"(?:foo|bar)+ (\d+)", r"(?:[A-Z]{2}\d{2} ?)+", r"secret: (.*)$", r"[a-z]+\d+",
])
def test_ordinary_patterns_pass_the_check(pattern):
    assert len(compile_rules([pattern], defaults=[])) == 1


def test_a_pattern_of_ones_own_searches_a_long_text_window_by_window():
    """A long text is searched WINDOW characters at a time, the windows overlapping by REACH: a
    secret anywhere (across a window's edge too) is found once; a match longer than REACH may not be."""
    from memkit.formats.redact import REACH, WINDOW

    rules = compile_rules([r"badge (\d{6})"], defaults=[])
    filler = "x" * (WINDOW - 8)
    text = filler + " badge 123456 " + "y " * 3000 + "badge 654321 and " + "z" * 5000 + " badge 777777"
    got = redact(text, rules)
    assert got.count == 3 and "123456" not in got.text and "654321" not in got.text and "777777" not in got.text
    assert got.text.count(REDACTED) == 3
    long_match = compile_rules([r"start [^!]*end"], defaults=[])
    assert redact("start " + "w" * (2 * WINDOW) + " end" + "." * WINDOW, long_match).count == 0
    assert redact("start " + "w" * (REACH - 20) + " end" + "." * WINDOW, long_match).count == 1


def test_a_catastrophic_pattern_in_memkit_yaml_is_named_when_the_vault_opens(tmp_path):
    from memkit import Vault
    from memkit.errors import ConfigError

    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "memkit.yaml").write_text('redact:\n  patterns: ["badge (\\\\d+)", "(a+)+$"]\n')
    with pytest.raises(ConfigError, match=r"redact.patterns: pattern 2 \('\(a\+\)\+\$'\) has a repetition inside"):
        Vault(root)
