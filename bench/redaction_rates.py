#!/usr/bin/env python3
"""How well memkit's built-in redaction does on tests/formats/redaction_set.json: the share of the
secret-bearing sentences that lose every secret, and the share of the harmless sentences (dates,
prices, phone numbers, versions, addresses, times) left exactly as they were. docs/privacy.md quotes
both; tests/formats/test_redaction_set.py requires 100 % of each.

    python bench/redaction_rates.py            # the two rates
    python bench/redaction_rates.py --misses   # and each sentence it got wrong
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memkit.formats.redact import redact  # noqa: E402

SET = Path(__file__).resolve().parents[1] / "tests" / "formats" / "redaction_set.json"


def rates(data: dict) -> tuple[list[str], list[str]]:
    """(the secret sentences that kept a secret, the harmless sentences that changed)."""
    missed = [item["text"] for item in data["secret"]
              if any(s in redact(item["text"]).text for s in item["secrets"]) or not redact(item["text"]).count]
    changed = [text for text in data["harmless"] if redact(text).text != text]
    return missed, changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="list each sentence redaction got wrong")
    args = parser.parse_args(argv)
    data = json.loads(SET.read_text(encoding="utf-8"))
    missed, changed = rates(data)
    n_secret, n_harmless = len(data["secret"]), len(data["harmless"])
    print(f"secrets redacted: {n_secret - len(missed)}/{n_secret} ({(n_secret - len(missed)) / n_secret:.1%})")
    print(f"harmless kept:    {n_harmless - len(changed)}/{n_harmless} ({(n_harmless - len(changed)) / n_harmless:.1%})")
    if args.misses:
        for text in missed:
            print(f"  missed:  {text}  ->  {redact(text).text}")
        for text in changed:
            print(f"  changed: {text}  ->  {redact(text).text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
