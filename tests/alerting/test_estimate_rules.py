"""The shipped recording rules compute the adjusted rate and its 90% interval as
`closed_form` does, through the real `promtool test rules` (issue 44).

`deploy/prometheus/refcheck-estimate.test.yml` feeds claim counters (two replicas of a service,
summed) and calibration gauges (the same on both replicas, not summed) and reads the raw share,
the adjusted rate and both bounds. Its expected values are `closed_form`'s on the same counts:
The paging interval (the share test's z, which the new-service alerts read) is checked against
`closed_form(..., z=3.75)` the same way. `estimate_tests()` below writes the file, and a test
keeps the shipped one equal to it, so the numbers cannot drift from the estimator. Regenerate with
`python tests/alerting/test_estimate_rules.py > deploy/prometheus/refcheck-estimate.test.yml`.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from refcheck_callbacks.alerting.estimate_rules import ADJUSTED, LABELS_NEEDED, PAGED, RAW
from refcheck_callbacks.alerting.tunables import AlertTunables
from refcheck_callbacks.check.calibration.estimate import closed_form
from refcheck_callbacks.check.calibration.rates import RateFit, RateName, flags
from refcheck_callbacks.exporters import names
from refcheck_callbacks.support import yaml_text
from refcheck_callbacks.types import Label, Verdict

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
TESTS = PROMETHEUS_DIR / "refcheck-estimate.test.yml"
MINUTES = 60
"""Counters grow for an hour, sampled each minute: the slow window (1h) at minute 60 reads them
from 0, the fast one (10m) their last ten minutes; `increase` extrapolates nothing."""
VERDICTS = ("entailment", "neutral", "contradiction", "error")
_LABELS = {label.value: label for label in Label}


@dataclass(frozen=True)
class Service:
    """One service: claims a minute per verdict on each replica, and its calibration."""

    job: str
    replicas: tuple[dict[str, int], ...]
    calibration: str | None
    rates: dict[RateName, RateFit] = field(default_factory=dict)

    def labels(self, rate: RateName) -> int:
        fit = self.rates.get(rate)
        return 0 if fit is None else fit.labels


GOOD = {
    RateName.HALLUCINATION: RateFit(
        positives=60, negatives=140, flagged_positives=51, flagged_negatives=35
    ),
    RateName.CONTRADICTION: RateFit(
        positives=12, negatives=188, flagged_positives=7, flagged_negatives=4
    ),
}
SERVICES = (
    # Two replicas, one calibration: counters summed, gauges not.
    Service(
        "two_replicas",
        (
            {"entailment": 6, "neutral": 3, "contradiction": 1, "error": 1},
            {"entailment": 4, "neutral": 1, "contradiction": 1},
        ),
        "a1b2c3d4e5f6",
        GOOD,
    ),
    # Flags below the false-positive rate: adjusted 0, clipped.
    Service("clean", ({"entailment": 30, "neutral": 2},), "a1b2c3d4e5f6", GOOD),
    # A checker that does not separate: no adjusted value, the interval is [0, 1].
    Service(
        "poor_separation",
        ({"entailment": 5, "neutral": 5},),
        "0f0f0f0f0f0f",
        {
            RateName.HALLUCINATION: RateFit(
                positives=30, negatives=90, flagged_positives=11, flagged_negatives=38
            ),
            RateName.CONTRADICTION: RateFit(
                positives=3, negatives=117, flagged_positives=0, flagged_negatives=1
            ),
        },
    ),
    # No calibration: no estimate, and every label still needed.
    Service("uncalibrated", ({"entailment": 8, "neutral": 2},), None),
)


def _flagged(rate: RateName, counts: dict[str, int]) -> int:
    return sum(
        count
        for verdict, count in counts.items()
        if verdict != "error" and flags(rate, Verdict(label=_LABELS[verdict]))
    )


def _series(service: Service) -> list[dict[str, str]]:
    series = []
    identity = (
        "" if service.calibration is None else f',refcheck_calibration_id="{service.calibration}"'
    )
    for index, counts in enumerate(service.replicas):
        instance = f'job="{service.job}",instance="replica-{index}"'
        for verdict, per_minute in counts.items():
            labels = f'{instance},refcheck_verdict="{verdict}"{identity}'
            metric = names.PROMETHEUS[names.CLAIMS]
            series.append(
                {"series": f"{metric}{{{labels}}}", "values": f"0+{per_minute}x{MINUTES}"}
            )
        for rate in RateName:
            fit = service.rates.get(rate)
            rate_labels = f'{instance},refcheck_rate="{rate.value}"{identity}'
            labels_gauge = names.PROMETHEUS[names.CALIBRATION_LABELS]
            count = service.labels(rate)
            series.append(
                {"series": f"{labels_gauge}{{{rate_labels}}}", "values": f"{count}x{MINUTES}"}
            )
            if fit is None:
                continue
            for gauge, value in (
                (names.CALIBRATION_POSITIVES, fit.positives),
                (names.CALIBRATION_NEGATIVES, fit.negatives),
                (names.CALIBRATION_FLAGGED_POSITIVES, fit.flagged_positives),
                (names.CALIBRATION_FLAGGED_NEGATIVES, fit.flagged_negatives),
            ):
                metric = names.PROMETHEUS[gauge]
                series.append(
                    {"series": f"{metric}{{{rate_labels}}}", "values": f"{value}x{MINUTES}"}
                )
    return series


def _expected(service: Service, rate: RateName, window: str, minutes: int) -> list[dict[str, Any]]:
    """The queries of one (service, rate, window), expecting `closed_form`'s numbers."""
    counts = [{v: per_minute * minutes for v, per_minute in c.items()} for c in service.replicas]
    checked = sum(n for c in counts for v, n in c.items() if v != "error")
    flagged = sum(_flagged(rate, c) for c in counts)
    fit = service.rates.get(rate)
    estimate = closed_form(checked, flagged, fit)
    paging = closed_form(checked, flagged, fit, z=AlertTunables().share_test.z)
    labels = (
        f'job="{service.job}",refcheck_calibration_id="{service.calibration}",'
        f'refcheck_rate="{rate.value}"'
    )
    adjusted = ADJUSTED[window]
    cases = []
    for recorded, value in (
        (RAW[window], estimate.raw),
        (adjusted.ratio, estimate.adjusted),
        (adjusted.lower_bound, estimate.low),
        (adjusted.upper_bound, estimate.high),
        (PAGED[window].lower_bound, paging.low),
        (PAGED[window].upper_bound, paging.high),
    ):
        selector = f'{recorded}{{job="{service.job}",refcheck_rate="{rate.value}"}}'
        shown = service.calibration is not None and value is not None
        samples = [{"labels": f"{recorded}{{{labels}}}", "value": value}] if shown else []
        cases.append({"expr": selector, "eval_time": f"{MINUTES}m", "exp_samples": samples})
    return cases


def estimate_tests() -> dict[str, Any]:
    """The promtool test file: every service, rate and window, and the labels still needed."""
    test = AlertTunables().share_test
    windows = {"fast": int(test.fast_window.removesuffix("m")), "slow": 60}
    assert test.slow_window == "1h", "the slow window reads the hour of counters"
    needed = AlertTunables().estimate.labels_needed
    cases = [
        case
        for service in SERVICES
        for rate in RateName
        for window, minutes in windows.items()
        for case in _expected(service, rate, window, minutes)
    ]
    for service in SERVICES:
        for rate in RateName:
            selector = f'{LABELS_NEEDED}{{job="{service.job}",refcheck_rate="{rate.value}"}}'
            missing = max(needed - service.labels(rate), 0)
            cases.append(
                {
                    "expr": selector,
                    "eval_time": f"{MINUTES}m",
                    "exp_samples": [{"labels": selector, "value": missing}],
                }
            )
    group = {
        "name": "adjusted rates: claim counters and calibration gauges of four services "
        "(two replicas summed; clipped at 0; a checker that does not separate; uncalibrated), "
        "read as closed_form computes them",
        "interval": "1m",
        "input_series": [s for service in SERVICES for s in _series(service)],
        "promql_expr_test": cases,
    }
    return {"rule_files": ["refcheck-alerts.yml"], "evaluation_interval": "1m", "tests": [group]}


def estimate_tests_yaml() -> str:
    header = (
        "# promtool unit tests of the adjusted-rate recording rules: `promtool test rules\n"
        "# refcheck-estimate.test.yml`. Written by tests/alerting/test_estimate_rules.py; its "
        "expected\n# values are closed_form's (refcheck_callbacks/check/calibration/estimate.py) "
        "on the same counts.\n"
    )
    return header + yaml_text.dump(estimate_tests())


def test_the_shipped_promtool_tests_expect_closed_forms_numbers() -> None:
    assert TESTS.read_text() == estimate_tests_yaml(), (
        "regenerate: python tests/alerting/test_estimate_rules.py > "
        "deploy/prometheus/refcheck-estimate.test.yml"
    )


def test_the_cases_cover_a_value_a_clipped_value_no_value_and_uncalibrated() -> None:
    cases = estimate_tests()["tests"][0]["promql_expr_test"]
    values = [s["value"] for case in cases for s in case["exp_samples"]]
    assert any(0.0 < v < 1.0 for v in values if isinstance(v, float))
    adjusted = {
        case["expr"]: case["exp_samples"]
        for case in cases
        if ADJUSTED["slow"].ratio in case["expr"]
    }
    assert [] in adjusted.values()  # poor separation and uncalibrated: no adjusted series
    assert any(s and s[0]["value"] == 0.0 for s in adjusted.values())  # clipped


def test_promtool_reads_the_adjusted_rate_and_its_bounds() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool not found: run `make system-deps` (Debian package prometheus)")
    tested = subprocess.run(
        [promtool, "test", "rules", TESTS.name],
        cwd=PROMETHEUS_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


if __name__ == "__main__":
    print(estimate_tests_yaml(), end="")
