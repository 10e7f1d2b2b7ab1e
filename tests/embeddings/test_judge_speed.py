"""``judge: auto``: the judge runs on a processor where a query's pass fits the budget, measured
once a machine and kept in .memkit/judge/speed.json; a slow one searches with the static stage
alone and says why once. The measurement is stubbed here: the tests never depend on this CPU."""
from __future__ import annotations

import json

import pytest

from memkit import Vault
from memkit.embeddings import judge_speed
from memkit.embeddings.judge import judge_status

needs_judge = pytest.mark.skipif(judge_status() is not None, reason=f"judge unavailable: {judge_status()}")


def auto_vault(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "topics" / "cars.md").write_text("---\ntitle: cars\n---\n# cars\n\n- Drives a 2019 Mazda 3\n"
                                             "- Parking spot at work is B15\n")
    (root / "memkit.yaml").write_text("judge: auto\n")
    return root


def timed(monkeypatch, ms):
    calls = []
    monkeypatch.setattr(judge_speed, "measure", lambda embed, runs=judge_speed.RUNS: calls.append(1) or ms)
    return calls


@needs_judge
@pytest.mark.parametrize("ms, judged", [(3.0, True), (judge_speed.BUDGET_MS, True), (250.0, False)])
def test_auto_keeps_the_judge_where_it_is_fast_enough(tmp_path, monkeypatch, ms, judged):
    root = auto_vault(tmp_path)
    calls = timed(monkeypatch, ms)
    hits = Vault(root).search("what car do I drive?", threshold=None)
    assert hits and all((h.judge is not None) == judged for h in hits)
    record = json.loads((root / ".memkit" / "judge" / "speed.json").read_text())
    (entry,) = record.values()
    assert entry["ms"] == ms and calls == [1]
    # a later process on this machine reads the record: no timing again, the same decision
    again = Vault(root).search("what car do I drive?", threshold=None)
    assert calls == [1] and all((h.judge is not None) == judged for h in again)


@needs_judge
def test_a_slow_processor_is_said_once_and_true_runs_the_judge_anyway(tmp_path, monkeypatch, caplog):
    root = auto_vault(tmp_path)
    timed(monkeypatch, 250.0)
    v = Vault(root)
    with caplog.at_level("WARNING", logger="memkit"):
        v.search("car", threshold=None)
        v.search("parking", threshold=None)
    assert caplog.text.count("takes 250 ms a query on this processor") == 1
    (root / "memkit.yaml").write_text("judge: true\n")
    assert all(h.judge is not None for h in Vault(root).search("what car do I drive?", threshold=None))


def test_another_machine_measures_again_and_keeps_the_first_record(tmp_path):
    folder = tmp_path / "judge"
    judge_speed.record(folder, "x86_64|A|2|100|1", 3.0)
    judge_speed.record(folder, "aarch64|B|4|100|1", 90.0)
    assert judge_speed.cached_fits(folder, "x86_64|A|2|100|1") == (True, 3.0)
    assert judge_speed.cached_fits(folder, "aarch64|B|4|100|1") == (False, 90.0)
    assert judge_speed.cached_fits(folder, "x86_64|A|2|100|2") is None  # another thread count
    (folder / "speed.json").write_text("{not json")
    assert judge_speed.cached_fits(folder, "x86_64|A|2|100|1") is None  # a damaged record: measured again


def test_the_measure_is_the_median_after_a_warm_pass():
    seen = []
    assert judge_speed.measure(lambda texts: seen.append(texts), runs=3) >= 0
    assert len(seen) == 4 and seen[0] == [judge_speed.PROBE]


def test_the_setting_takes_true_false_and_auto(tmp_path):
    from memkit.config import load_config
    from memkit.errors import ConfigError

    for text, want in [("judge: auto\n", "auto"), ("judge: AUTO\n", "auto"), ("judge: false\n", False)]:
        (tmp_path / "memkit.yaml").write_text(text)
        assert load_config(tmp_path).judge == want
    (tmp_path / "memkit.yaml").write_text("judge: sometimes\n")
    with pytest.raises(ConfigError, match="true, false or auto"):
        load_config(tmp_path)


def test_a_cold_search_preloads_the_judge_only_where_auto_knows_it_is_fast(tmp_path, monkeypatch):
    from memkit.search import searcher as searcher_mod

    root = auto_vault(tmp_path)
    timed(monkeypatch, 3.0)
    loads = []
    monkeypatch.setattr(searcher_mod, "prefetch_query", lambda text: loads.append(text))
    v = Vault(root)
    assert not judge_speed.judge_known_fast(v.store.state_dir / "judge")
    v.search("car", threshold=None, judge=False)
    v.searcher.find(v.searcher.query("car"))  # no record yet: not preloaded (it is timed when needed)
    assert loads == []
    if judge_speed.judge_folder() is None:
        return
    key = judge_speed.machine_key(judge_speed.judge_folder() / "model.onnx", judge_speed.judge_threads())
    judge_speed.record(v.store.state_dir / "judge", key, 2.0)
    assert judge_speed.judge_known_fast(v.store.state_dir / "judge")
    fresh = Vault(root)
    fresh.searcher.find(fresh.searcher.query("car"))
    assert loads == ["car"]
