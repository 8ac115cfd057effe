"""The alert-rules generator: durations, tunables, and the baseline that ends before the windows
it is compared with.

promtool and a real Prometheus check the generated rules' behaviour in tests/deploy; these check
the generator's own arithmetic and validation.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from refcheck_callbacks.alerting import relevance_rules
from refcheck_callbacks.alerting.rules import alert_rules
from refcheck_callbacks.alerting.share_rules import (
    BY_VERDICT,
    CONTRADICTION,
    HALLUCINATION,
    number,
    wilson_terms,
)
from refcheck_callbacks.alerting.tunables import (
    AlertTunables,
    ShareRise,
    ShareTest,
    changed_tunables,
    duration_seconds,
    format_duration,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("10m", 600), ("6h", 21600), ("1h30m", 5400), ("250ms", 0.25), ("1d", 86400)],
)
def test_durations_parse_and_format_back(text: str, seconds: float) -> None:
    assert duration_seconds(text) == seconds
    assert duration_seconds(format_duration(seconds)) == seconds


@pytest.mark.parametrize("text", ["", "10", "m", "10x", "1.5m", "-5m", "5m ", "10mm"])
def test_malformed_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a Prometheus duration"):
        duration_seconds(text)


def _rules(tunables: AlertTunables | None = None) -> dict[str, dict[str, object]]:
    return {r.get("record", r.get("alert")): r for r in alert_rules(tunables)["groups"][0]["rules"]}


def test_the_baseline_ends_before_the_slow_window_and_the_longest_for() -> None:
    tunables = AlertTunables.model_validate(
        {"share_test": {"slow_window": "30m"}, "hallucination_rise": {"pending_for": "7m"}}
    )
    assert tunables.baseline_offset == "37m"
    rules = _rules(tunables)
    assert rules[BY_VERDICT["baseline"]]["expr"] == (
        "sum by (job, refcheck_verdict) (increase(refcheck_claims_total[1d] offset 37m))"
    )
    assert "[30m]" in str(rules[BY_VERDICT["slow"]]["expr"])


def test_the_bounds_are_wilson_bounds_with_the_tunable_z() -> None:
    assert wilson_terms(3.5) == (6.125, 3.0625, 12.25)
    rules = _rules(AlertTunables.model_validate({"share_test": {"z": 2}}))
    lower = str(rules[CONTRADICTION.lower_bound("slow")]["expr"])
    upper = str(rules[HALLUCINATION.upper_bound]["expr"])
    assert "+ 2.0 / job:refcheck_claims_checked:increase_slow" in lower
    assert "- 2.0 * sqrt(" in lower and "+ 2.0 * sqrt(" in upper
    assert "/ (1 + 4.0 / job:refcheck_claims_checked:increase_baseline)" in upper
    # Onboarding: no baseline bound until the baseline window holds enough claims.
    assert upper.endswith("job:refcheck_claims_checked:increase_baseline >= 1000")


def test_each_share_alert_pages_on_either_window_with_its_own_minimum_effect() -> None:
    tunables = AlertTunables.model_validate(
        {"contradiction_rise": {"fast_min_effect": 0.2, "slow_min_effect": 0.03}}
    )
    expr = str(_rules(tunables)[CONTRADICTION.alert]["expr"])
    fast, slow = expr.split("\nor\n")
    assert "lower_bound_fast - on (job)" in fast and "> 0.2\n" in fast and ">= 30" in fast
    assert "lower_bound_slow - on (job)" in slow and "> 0.03\n" in slow and ">= 200" in slow
    assert "> 0.1\n" in str(_rules(tunables)[HALLUCINATION.alert]["expr"])


def test_constants_are_written_as_the_floats_the_replay_uses() -> None:
    for value in (0.1, 1 / 3, 3.3 * 3.3 / 2, 12.25):
        assert float(number(value)) == value
    assert number(30) == "30"


@pytest.mark.parametrize(
    "settings",
    [
        {"fast_window": "1h", "slow_window": "30m"},
        {"slow_window": "2d"},
        {"z": 0},
        {"fast_min_claims": 0},
        {"fast_window": "0s"},
        {"unknown": 1},
    ],
)
def test_share_tests_that_make_no_sense_are_refused(settings: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ShareTest.model_validate(settings)


@pytest.mark.parametrize("settings", [{"slow_min_effect": 1.5}, {"fast_min_effect": -0.1}])
def test_effects_are_shares(settings: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ShareRise.model_validate(settings)


def test_changed_tunables_name_only_what_differs() -> None:
    tunables = AlertTunables.model_validate(
        {"share_test": {"z": 4.0}, "stalled_checker": {"window": "10m"}}
    )
    assert changed_tunables(tunables) == {"share_test.z": 4.0}
    assert changed_tunables(AlertTunables()) == {}


def test_the_relevance_drop_counts_references_at_most_one_half_with_its_own_minimums() -> None:
    tunables = AlertTunables.model_validate(
        {
            "relevance_drop": {"slow_min_effect": 0.05, "fast_min_references": 40},
            "share_test": {"z": 2},
        }
    )
    rules = _rules(tunables)
    not_relevant = str(rules[relevance_rules.NOT_RELEVANT["slow"]]["expr"])
    assert not_relevant == (
        'sum by (job) (increase(refcheck_reference_relevance_bucket{le="0.5"}[1h]))'
    )
    scored = str(rules[relevance_rules.SCORED["baseline"]]["expr"])
    assert scored.endswith("refcheck_reference_relevance_count[1d] offset 1h2m))")
    lower = str(rules[relevance_rules.LOWER_BOUND["fast"]]["expr"])
    assert "- 2.0 * sqrt(" in lower
    # Four references of one answer count as 1.6 independent ones (design effect 2.5).
    assert "/ (job:refcheck_references_scored:increase_fast / 2.5)" in lower
    upper = str(rules[relevance_rules.UPPER_BOUND]["expr"])
    assert upper.endswith("job:refcheck_references_scored:increase_baseline >= 3000")
    fast, slow = str(rules[relevance_rules.ALERT]["expr"]).split("\nor\n")
    assert "> 0.1\n" in fast and ">= 40" in fast
    assert "> 0.05\n" in slow and ">= 600" in slow


def test_a_longer_relevance_for_moves_every_baseline_back() -> None:
    tunables = AlertTunables.model_validate({"relevance_drop": {"pending_for": "10m"}})
    assert tunables.baseline_offset == "1h10m"
    rules = _rules(tunables)
    assert "offset 1h10m" in str(rules[BY_VERDICT["baseline"]]["expr"])
    assert "offset 1h10m" in str(rules[relevance_rules.SCORED["baseline"]]["expr"])
