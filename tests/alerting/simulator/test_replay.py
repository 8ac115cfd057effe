"""The replay is the rule file's arithmetic: promtool, on the same series, finds the same pages,
firing minutes and detection minute; a replay that is off by a minute is caught."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refcheck_callbacks.alerting.rules import rules_yaml
from refcheck_callbacks.alerting.share_rules import SHARE_ALERTS, SHARES
from refcheck_callbacks.alerting.simulator.adjusted import audit, fit_columns
from refcheck_callbacks.alerting.simulator.promtool import Series, observe
from refcheck_callbacks.alerting.simulator.replay import (
    _held,
    _increase,
    baseline_ready,
    onsets,
    replay,
    whole_minutes,
)
from refcheck_callbacks.alerting.simulator.traffic import LabelRates, Traffic, counters
from refcheck_callbacks.cli.alert_rules import parse_settings
from refcheck_callbacks.errors import PromtoolError

RATES = LabelRates(name="mid", supported=(0.7, 0.2, 0.1), unsupported=(0.2, 0.5, 0.3))
ALERTS = list(SHARE_ALERTS)
# Loose on purpose: pages on clean traffic, alerts that come and go, onboarding within the span.
LOOSE = parse_settings(
    [
        "share_test.z=1",
        "share_test.min_baseline_claims=300",
        "share_test.baseline_window=6h",
        *(f"{rise}.slow_min_effect=0" for rise in ("contradiction_rise", "hallucination_rise")),
        "contradiction_rise.fast_min_effect=0.02",
        "hallucination_rise.pending_for=1m",
        "contradiction_level.level=0.05",  # below RATES' clean 10%: pages while onboarding
        "hallucination_level.level=0.25",
    ]
)


def _series(volume: float, seed: int, clean: int = 600) -> Series:
    counts = counters(Traffic(RATES, volume, clean, 120), seed)
    return Series(f"svc_{seed}", counts, clean, replay(counts, LOOSE))


def test_promtool_finds_what_the_replay_predicts_pages_firing_and_detection(
    tmp_path: Path,
) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(LOOSE))
    named = [(f"{volume:g}/min", _series(volume, seed)) for seed, volume in enumerate((5, 30))]
    for _, series in named:  # the comparison covers pages that come and go
        assert series.predicted is not None
        pages = sum(
            int(onsets(f)[: series.clean_minutes + 1].sum()) for f in series.predicted.values()
        )
        assert pages > 2
    seen = observe(rules, named, ALERTS, workers=2)  # raises where the two disagree
    for (_, series), found in zip(named, seen, strict=True):
        assert series.predicted is not None
        for alert, firing in series.predicted.items():
            assert found.pages[alert] == onsets(firing)[: series.clean_minutes + 1].sum()
            assert found.firing_minutes[alert] == firing[: series.clean_minutes + 1].sum()
        assert found.detected_after is not None
        ready = baseline_ready(series.counts, LOOSE)
        for share in SHARES:  # the new-service alerts: only while onboarding, and they did fire
            level = series.predicted[share.level_alert]
            assert level.any() and not (level & ready).any()


def test_promtool_alone_reads_each_chunk_of_pages_by_its_own_time(tmp_path: Path) -> None:
    """Without a prediction (a rule file the replay does not model) every page and firing
    minute comes from promtool's report; chunks share their expression, not their time."""
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(LOOSE))
    predicted = _series(30, 1)
    assert predicted.predicted is not None
    alone = Series(predicted.job, predicted.counts, predicted.clean_minutes)
    [found] = observe(rules, [("alone", alone)], ALERTS, chunk_minutes=60)
    clean = predicted.clean_minutes + 1
    for alert, firing in predicted.predicted.items():
        assert found.pages[alert] == onsets(firing)[:clean].sum()
        assert found.firing_minutes[alert] == firing[:clean].sum()
    assert sum(found.pages.values()) > 2


def test_a_replay_one_minute_off_is_caught(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(LOOSE))
    series = _series(30, 0, clean=300)
    assert series.predicted is not None
    late = Series(
        series.job, series.counts, 300, {a: np.roll(f, 1) for a, f in series.predicted.items()}
    )
    with pytest.raises(PromtoolError, match="promtool and the replay disagree"):
        observe(rules, [("late by a minute", late)], ALERTS)


def test_increase_reads_both_ends_of_the_range_and_needs_two_samples() -> None:
    counts = np.array([[0, 0, 0], [1, 0, 2], [3, 1, 2], [6, 1, 5], [10, 2, 5]])
    window = _increase(counts, window=2, offset=1)
    assert np.isnan(window[:2]).all()  # offset 1: at minute 1 the range holds one sample
    assert window[2:].tolist() == [[1, 0, 2], [3, 1, 2], [5, 1, 3]]


def test_an_alert_fires_when_its_condition_held_for_the_whole_pending_time() -> None:
    condition = np.array([1, 1, 1, 0, 1, 1, 1, 1], dtype=bool)
    assert _held(condition, 2).tolist() == [0, 0, 1, 0, 0, 0, 1, 1]
    assert _held(condition, 0).tolist() == condition.tolist()
    assert onsets(_held(condition, 0)).tolist() == [1, 0, 0, 0, 1, 0, 0, 0]


def test_onboarding_ends_when_the_baseline_holds_enough_claims() -> None:
    counts = np.cumsum(np.concatenate([[[0, 0, 0]], np.full((200, 3), [8, 1, 1])]), axis=0)
    ready = baseline_ready(counts)  # 10 claims a minute, 1,000 needed, baseline ends 62 min ago
    assert not ready[161] and ready[162]


def test_the_simulator_runs_once_a_minute() -> None:
    assert whole_minutes("1h2m") == 62
    with pytest.raises(ValueError, match="whole minutes"):
        whole_minutes("90s")


def test_a_calibrated_service_pages_on_its_adjusted_rate_as_promtool_does(tmp_path: Path) -> None:
    """A calibrated new service whose answers turn 60% unsupported while it onboards: the raw
    levels are out of reach (99%), so only the adjusted rate's lower bound can page it; the
    gauges and the calibration id go through promtool with the counters."""
    tunables = LOOSE.model_copy(
        update={
            "hallucination_level": LOOSE.hallucination_level.model_copy(
                update={"level": 0.99, "adjusted_level": 0.3}
            ),
            "contradiction_level": LOOSE.contradiction_level.model_copy(
                update={"level": 0.99, "adjusted_level": 0.3}
            ),
        }
    )
    rules = tmp_path / "rules.yml"
    rules.write_text(rules_yaml(tunables))
    named = []
    for seed, volume in enumerate((5, 30)):
        counts = counters(Traffic(RATES, volume, 20, 300, unsupported=0.6), seed)
        fits = audit(RATES, 200, 0.3, seed)
        columns = {rate: column[0] for rate, column in fit_columns([fits]).items()}
        predicted = replay(counts, tunables, columns)
        uncalibrated = replay(counts, tunables)
        hallucination = SHARES[1].level_alert
        assert predicted[hallucination].any() and not uncalibrated[hallucination].any()
        named.append(
            (f"calibrated {volume}/min", Series(f"cal_{seed}", counts, 20, predicted, fits))
        )
    seen = observe(rules, named, ALERTS, workers=2)  # raises where the two disagree
    assert all(found.detected_after is not None for found in seen)
