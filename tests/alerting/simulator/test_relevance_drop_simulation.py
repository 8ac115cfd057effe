"""The relevance alert on simulated traffic: the replay is the rule file's arithmetic (promtool
finds the same pages and detection), clean traffic with correlated references does not page
with the shipped tunables, and a drop in relevance is detected."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refcheck_callbacks.alerting import relevance_rules
from refcheck_callbacks.alerting.rules import rules_yaml
from refcheck_callbacks.alerting.simulator.promtool import Series, observe
from refcheck_callbacks.alerting.simulator.relevance import (
    SCENARIOS,
    RelevanceRates,
    RelevanceSettings,
    RelevanceTraffic,
    relevance_counters,
    relevance_input_series,
    relevance_markdown,
    replay_relevance,
    simulate_relevance,
)
from refcheck_callbacks.alerting.simulator.replay import onsets
from refcheck_callbacks.cli.alert_rules import parse_settings
from refcheck_callbacks.cli.main import main

TYPICAL = SCENARIOS[1]
# Loose on purpose: references read as independent, a low z, small minimums: pages on clean
# traffic, alerts that come and go, onboarding within the span.
LOOSE = parse_settings(
    [
        "share_test.z=1",
        "share_test.baseline_window=6h",
        "relevance_drop.design_effect=1",
        "relevance_drop.slow_min_effect=0",
        "relevance_drop.fast_min_effect=0.02",
        "relevance_drop.fast_min_references=20",
        "relevance_drop.slow_min_references=50",
        "relevance_drop.min_baseline_references=300",
        "relevance_drop.pending_for=1m",
    ]
)


def test_promtool_finds_what_the_replay_predicts(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(LOOSE))
    named = []
    for seed, volume in enumerate((2.0, 10.0)):
        counts = relevance_counters(RelevanceTraffic(TYPICAL, volume, 600, 120), seed)
        job = f"svc_{seed}"
        named.append((job, Series(job, counts, 600, replay_relevance(counts, LOOSE))))
    for _, series in named:  # the comparison covers pages that come and go
        assert series.predicted is not None
        assert int(onsets(series.predicted[relevance_rules.ALERT])[:601].sum()) > 2
    seen = observe(
        rules, named, [relevance_rules.ALERT], workers=2, inputs=relevance_input_series
    )  # raises where the two disagree
    for (_, series), found in zip(named, seen, strict=True):
        assert series.predicted is not None
        firing = series.predicted[relevance_rules.ALERT]
        assert found.pages[relevance_rules.ALERT] == onsets(firing)[:601].sum()
        assert found.detected_after is not None


def test_counters_are_cumulative_and_references_of_an_answer_share_their_fate() -> None:
    rates = RelevanceRates(name="r", clean_not_relevant=0.4, missed_not_relevant=0.9)
    traffic = RelevanceTraffic(rates, 50.0, clean_minutes=1440, shifted_minutes=1440, missed=0.5)
    counts = relevance_counters(traffic, 1)
    assert counts.shape == (2881, 2) and (counts[0] == 0).all()
    assert (np.diff(counts, axis=0) >= 0).all() and (counts[:, 0] <= counts[:, 1]).all()
    assert (relevance_counters(traffic, 1) == counts).all()
    per_minute = np.diff(counts, axis=0)
    clean, shifted = per_minute[:1440], per_minute[1440:]
    assert clean[:, 0].sum() / clean[:, 1].sum() == pytest.approx(0.4, abs=0.01)
    assert shifted[:, 0].sum() / shifted[:, 1].sum() == pytest.approx(0.65, abs=0.01)
    # Correlated at 0.5, four references of an answer vary 2.5 times as much as independent
    # ones: the minute's share is that much noisier than a binomial's.
    share = clean[:, 0] / clean[:, 1]
    binomial = 0.4 * 0.6 / clean[:, 1].mean()
    assert share.var() / binomial == pytest.approx(2.5, rel=0.25)


def test_the_shipped_tunables_stay_quiet_on_clean_traffic_and_detect_a_drop() -> None:
    settings = RelevanceSettings(volumes=(5.0, 25.0), days=5, seeds=4, promtool_days=0.25)
    low, high = simulate_relevance([TYPICAL], settings)
    for cell in (low, high):
        assert cell.replay_pages_per_30_days == 0.0 and cell.promtool_pages == 0
    assert high.replay_detected_median is not None and high.replay_detected_median < 180
    assert high.promtool_detected_after is not None
    table = relevance_markdown([low, high])
    assert table.count("\n| typical |") == 2 and "0.500 → 0.560 (+0.060)" in table


def test_references_read_as_independent_page_on_correlated_clean_traffic() -> None:
    """Why `design_effect`: without it, the same clean traffic pages."""
    naive = parse_settings(["relevance_drop.design_effect=1", "relevance_drop.slow_min_effect=0"])
    settings = RelevanceSettings(volumes=(25.0,), days=5, seeds=4, promtool_days=0)
    [cell] = simulate_relevance([TYPICAL], settings, naive)
    assert cell.replay_pages_per_30_days > 0


def test_the_command_prints_the_relevance_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["alert-rules", "--simulate-relevance", "--volume", "25", "--days", "1"]
    args += ["--seeds", "2", "--promtool-days", "0", "--json", str(tmp_path / "f.json")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("| relevance rates |") and out.count("| 25 | 100 |") == len(SCENARIOS)
    assert (tmp_path / "f.json").is_file()
    assert main([*args, "--shift", "0"]) == 2
    assert "--shift" in capsys.readouterr().err
