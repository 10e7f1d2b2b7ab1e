"""`memkit upkeep`: the scheduled jobs (expiry tidy, the profile re-distilled after distill_after
new conclusions, applied or proposed for review) and when the watcher runs them. The clock is
always injected; the LLM is the loopback fake."""
from __future__ import annotations

import json
from datetime import datetime, timedelta

from click.testing import CliRunner
from fake_llm import FakeLLM
from util import FakeEmbedder, write

from memkit import Vault
from memkit.frontends.cli.group import main

NOW = datetime(2026, 11, 28, 10, 0)
REPLY = {"profile": ["Is called Maya", "Daughter Lina is 7 and loves chess"]}


def make(tmp_path, yaml: str = "", fake: FakeLLM | None = None) -> Vault:
    root = Vault.init(tmp_path / "v", profile=True).root
    llm = f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 10}}\n" if fake is not None else ""
    (root / "memkit.yaml").write_text(yaml + llm)
    write(root / "topics" / "profile.md", "---\ntitle: Profile\npinned: true\n---\n# Profile\n\n- Is called Maya (2026-01-01)\n")
    write(root / "topics" / "family.md", "- [fact] Lina loves chess (2026-11-20)\n"
                                        "- [context] Busy week at work (2026-11-20)\n")  # context: kept 1 day
    return Vault(root, embedder=FakeEmbedder())


def digested(v: Vault, *runs: tuple[datetime, int]) -> None:
    """Record digests as `memkit digest` does in .memkit/digested.json: (when, conclusions added)."""
    data = {f"sha{i}": {"transcript": f"t{i}.txt", "at": at.isoformat(), "added": n} for i, (at, n) in enumerate(runs)}
    write(v.store.state_dir / "digested.json", json.dumps(data))


def test_tidy_runs_and_distill_is_off_by_default(tmp_path):
    v = make(tmp_path)
    report = v.upkeep.run(now=NOW)
    assert report.lines() == ["tidy: 1 expired entry moved to archive.md",
                              "session-digest: off (digest_every_messages: 0)",
                              "session-aging: no conversation is due",
                              "session-prune: no session idle over 30 days",
                              "distill: off (distill_after: 0)"]
    assert "Busy week at work" in (v.root / "archive.md").read_text()
    assert v.upkeep.run(now=NOW).lines()[0] == "tidy: nothing has expired"


def test_the_profile_is_proposed_after_enough_new_conclusions_and_applied_as_reviewed(tmp_path):
    with FakeLLM(lambda request: json.dumps(REPLY)) as fake:
        v = make(tmp_path, "distill_after: 5\n", fake)
        digested(v, (NOW - timedelta(days=2), 3))
        assert v.upkeep.run(now=NOW).jobs[-1].did == "not due: 3 of 5 new conclusions since the last rewrite"
        assert not fake.requests
        digested(v, (NOW - timedelta(days=2), 3), (NOW - timedelta(hours=1), 2))
        job = v.upkeep.run(now=NOW).jobs[-1]
        asked = len(fake.requests)
    assert job.changed and job.did.startswith("profile rewrite proposed after 5 new conclusions")
    assert "+- Daughter Lina is 7 and loves chess" in job.details["diff"]
    assert [e.body for e in v.topic("profile").entries] == ["Is called Maya"]  # nothing written yet
    assert asked == 1
    # reviewed later, without an LLM: exactly what was proposed is written
    v = Vault(v.root, embedder=FakeEmbedder())
    result = CliRunner().invoke(main, ["--vault", str(v.root), "distill", "--proposed", "--dry-run"])
    assert result.exit_code == 0 and "+- Daughter Lina is 7 and loves chess" in result.output
    v.upkeep.distill(proposed=True)
    assert [e.body for e in v.topic("profile").entries] == ["Is called Maya", "Daughter Lina is 7 and loves chess"]
    again = CliRunner().invoke(main, ["--vault", str(v.root), "distill", "--proposed"])
    assert again.exit_code == 1 and "no profile rewrite is waiting for review" in again.output
    # counted from the rewrite on: the same digests do not make it due again
    assert v.upkeep.run(now=NOW + timedelta(days=1), llm=None).jobs[-1].did.startswith("not due: 0 of 5")


def test_distill_apply_writes_at_once_and_no_llm_skips(tmp_path):
    with FakeLLM(lambda request: json.dumps(REPLY)) as fake:
        v = make(tmp_path, "distill_after: 2\ndistill_apply: true\n", fake)
        digested(v, (NOW - timedelta(hours=3), 2))
        job = v.upkeep.run(now=NOW).jobs[-1]
    assert job.did == "profile rewritten after 2 new conclusions: +1 -0"
    assert [e.body for e in v.topic("profile").entries][-1] == "Daughter Lina is 7 and loves chess"
    bare = make(tmp_path / "b", "distill_after: 2\n")
    digested(bare, (NOW - timedelta(hours=3), 4))
    assert bare.upkeep.run(now=NOW).jobs[-1].did == "due (4 new conclusions) but no LLM is configured: skipped"


def test_the_daily_run_is_due_once_a_day_from_its_hour(tmp_path):
    v = make(tmp_path, "upkeep_hour: 6\n")
    assert not v.upkeep.due(datetime(2026, 11, 28, 5, 59))
    assert v.upkeep.due(datetime(2026, 11, 28, 6, 0))
    v.upkeep.run(now=datetime(2026, 11, 28, 6, 0))
    assert not v.upkeep.due(datetime(2026, 11, 28, 23, 0))
    assert v.upkeep.due(datetime(2026, 11, 29, 6, 30))


def test_cli(tmp_path):
    v = make(tmp_path)
    result = CliRunner().invoke(main, ["--vault", str(v.root), "upkeep", "--json", "--at", "2026-11-28 10:00"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [j["job"] for j in data["jobs"]] == ["tidy", "session-digest", "session-aging", "session-prune", "distill"] and data["jobs"][0]["changed"] is True
    assert data["jobs"][0]["expired"][0]["reason"].startswith("expired: context entries are kept 1 day")
