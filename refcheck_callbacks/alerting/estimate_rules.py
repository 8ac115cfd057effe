"""Recording rules for the adjusted rates: a window's flag share adjusted by the calibration's
flag rates, with its 90% interval, term for term as `check.calibration.estimate.closed_form`.

Why in Prometheus (issue 44): a checker's raw flag share is biased by its error rates,
differently in every domain, so the dashboard's rate can be 40 points off on clean traffic.
The monitor exports the claim counts by calibration id (`refcheck.claims`) and the loaded
calibration's flag counts on audit labels (`refcheck.calibration.*` gauges); these rules
compute, for every service (`job`), calibration and rate (`refcheck_rate`: hallucination or
contradiction), over the share test's fast and slow windows:

    raw = flagged / checked; TPR, FPR = (flagged + 1/2) / (labelled + 1) per class (Jeffreys)
    adjusted = clamp((raw - FPR) / (TPR - FPR), 0, 1)
    low, high = Fieller's interval of that ratio, clipped to [0, 1] and widened to hold the
                adjusted value; [0, 1] when TPR - FPR is not significantly above zero

- Counters are summed across replicas (`sum by` of `increase`); the gauges of one calibration
  are the same on every replica that loaded it, so they are taken by `max`, over the slow window
  (a replica restarting between scrapes does not blank the fit).
- A claim counts as flagged for a rate as `check.calibration.rates.flags` says; failed claims
  (`refcheck_verdict="error"`) are neither checked nor flagged.
- Claims without a calibration id (an uncalibrated monitor), and a calibration without both
  classes labelled, give no series: the dashboard says "uncalibrated" instead, from
  `LABELS_NEEDED`.

`tests/alerting/test_estimate_rules.py` feeds counters and gauges through promtool and checks
the three numbers against `closed_form` on the same counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from refcheck_callbacks.alerting.promql import number, record, windows
from refcheck_callbacks.alerting.tunables import AlertTunables
from refcheck_callbacks.check.calibration.estimate import PRIOR_COUNT, Z_90
from refcheck_callbacks.check.calibration.rates import RateName, flags
from refcheck_callbacks.exporters.names import (
    CALIBRATION_FLAGGED_NEGATIVES,
    CALIBRATION_FLAGGED_POSITIVES,
    CALIBRATION_ID,
    CALIBRATION_LABELS,
    CALIBRATION_NEGATIVES,
    CALIBRATION_POSITIVES,
    CLAIMS,
    PROMETHEUS,
    RATE,
)
from refcheck_callbacks.types import Label, Verdict

ESTIMATED = ("fast", "slow")
"""The share test's windows the adjusted rates are recorded over."""
_ID = CALIBRATION_ID.replace(".", "_")
_RATE = RATE.replace(".", "_")
BY = f"job, {_ID}, {_RATE}"
"""The labels of every estimate recording: the service, the calibration and the rate."""
_LEVEL = "job_calibration_rate"

BY_VERDICT = {w: f"job_calibration_verdict:refcheck_claims:increase_{w}" for w in ESTIMATED}
"""Claims per verdict and calibration in each window (claims with a calibration id only)."""
CHECKED = {w: f"{_LEVEL}:refcheck_claims_checked:increase_{w}" for w in ESTIMATED}
FLAGGED = {w: f"{_LEVEL}:refcheck_claims_flagged:increase_{w}" for w in ESTIMATED}
RAW = {w: f"{_LEVEL}:refcheck_claims_flagged:ratio_{w}" for w in ESTIMATED}
"""The raw flag share: what the estimate adjusts."""


def _fit(field: str) -> str:
    return f"{_LEVEL}:refcheck_calibration_{field}:max"


FIT = {
    gauge: _fit(PROMETHEUS[gauge].removeprefix("refcheck_calibration_"))
    for gauge in (
        CALIBRATION_POSITIVES,
        CALIBRATION_NEGATIVES,
        CALIBRATION_FLAGGED_POSITIVES,
        CALIBRATION_FLAGGED_NEGATIVES,
    )
}
"""Each calibration gauge, by max across replicas."""
TPR = f"{_LEVEL}:refcheck_calibration_true_positive_rate:smoothed"
FPR = f"{_LEVEL}:refcheck_calibration_false_positive_rate:smoothed"
SEPARATION = f"{_LEVEL}:refcheck_calibration_separation:smoothed"
"""TPR - FPR: the denominator of the adjusted count."""
FPR_VARIANCE = f"{_LEVEL}:refcheck_calibration_false_positive_rate:variance"
SEPARATION_VARIANCE = f"{_LEVEL}:refcheck_calibration_separation:variance"
LABELS_NEEDED = "job_rate:refcheck_calibration_labels:needed"
"""Audit labels a service's calibration still lacks per rate (0: calibrated enough)."""
DASHBOARD, PAGING = "", "paging"
"""The two intervals: the dashboard's 90% one (closed_form's default z), and the one the
new-service alerts page on, at the share test's z (3.75: the Wilson bounds' one-sided 99.991%),
because an alert looks at a fresh window every minute and a 5% miss would page clean traffic."""
QUADRATIC = {
    kind: f"{_LEVEL}:refcheck_calibration_fieller:quadratic{'_' + kind if kind else ''}"
    for kind in (DASHBOARD, PAGING)
}
"""Fieller's leading coefficient per interval: it is bounded only where this is positive."""


@dataclass(frozen=True)
class Interval:
    """The per-window recordings of the estimate: the adjusted rate (shared by both intervals)
    and one interval's terms and bounds."""

    window: str
    kind: str = DASHBOARD

    def _shared(self, operation: str) -> str:
        return f"{_LEVEL}:refcheck_claims_adjusted:{operation}_{self.window}"

    def _name(self, operation: str) -> str:
        return self._shared(f"{operation}_{self.kind}" if self.kind else operation)

    @property
    def numerator(self) -> str:
        return self._shared("numerator")

    @property
    def ratio(self) -> str:
        """The adjusted rate (no series where TPR - FPR <= 0)."""
        return self._shared("ratio")

    @property
    def quadratic(self) -> str:
        return QUADRATIC[self.kind]

    @property
    def half(self) -> str:
        return self._name("fieller_half")

    @property
    def root(self) -> str:
        return self._name("fieller_root")

    @property
    def fieller_lower(self) -> str:
        return self._name("fieller_lower")

    @property
    def fieller_upper(self) -> str:
        return self._name("fieller_upper")

    @property
    def lower_bound(self) -> str:
        return self._name("lower_bound")

    @property
    def upper_bound(self) -> str:
        return self._name("upper_bound")

    def bounds(self) -> tuple[str, ...]:
        return (
            self.half,
            self.root,
            self.fieller_lower,
            self.fieller_upper,
            self.lower_bound,
            self.upper_bound,
        )


ADJUSTED = {w: Interval(w) for w in ESTIMATED}
"""The dashboard's 90% interval per window."""
PAGED = {w: Interval(w, PAGING) for w in ESTIMATED}
"""The paging interval per window (the new-service alerts' lower bound)."""

ESTIMATE_RECORDED = (
    *FIT.values(),
    TPR,
    FPR,
    SEPARATION,
    FPR_VARIANCE,
    SEPARATION_VARIANCE,
    *QUADRATIC.values(),
    LABELS_NEEDED,
    *(
        name
        for w in ESTIMATED
        for name in (
            BY_VERDICT[w],
            CHECKED[w],
            FLAGGED[w],
            RAW[w],
            ADJUSTED[w].numerator,
            ADJUSTED[w].ratio,
            *ADJUSTED[w].bounds(),
            *PAGED[w].bounds(),
        )
    ),
)
"""Every estimate recording, in the order the rule file evaluates them."""


def flagged_verdicts(rate: RateName) -> str:
    """A `refcheck_verdict` matcher of the verdicts `flags` counts as flagged for `rate`."""
    flagged = [label.value for label in Label if flags(rate, Verdict(label=label))]
    return f'refcheck_verdict=~"{"|".join(flagged)}"'


def _per_rate(expr: str, rate: RateName) -> str:
    return f'label_replace(\n  {expr},\n  "{_RATE}", "{rate.value}", "", ""\n)'


def _fit_rules(tunables: AlertTunables) -> list[dict[str, Any]]:
    slow = tunables.share_test.slow_window
    rules = [
        record(FIT[gauge], f"max by ({BY}) (max_over_time({PROMETHEUS[gauge]}[{slow}]))")
        for gauge in FIT
    ]
    prior, both = number(PRIOR_COUNT), number(2 * PRIOR_COUNT)
    positives, negatives = FIT[CALIBRATION_POSITIVES], FIT[CALIBRATION_NEGATIVES]
    labelled = f"and {positives} > 0 and {negatives} > 0"
    rules += [
        record(
            TPR,
            f"({FIT[CALIBRATION_FLAGGED_POSITIVES]} + {prior}) / ({positives} + {both})\n"
            f"{labelled}",
        ),
        record(
            FPR,
            f"({FIT[CALIBRATION_FLAGGED_NEGATIVES]} + {prior}) / ({negatives} + {both})\n"
            f"{labelled}",
        ),
        record(SEPARATION, f"{TPR} - {FPR}"),
        record(FPR_VARIANCE, f"{FPR} * (1 - {FPR}) / clamp_min({negatives} + {both}, 1)"),
        record(
            SEPARATION_VARIANCE,
            f"{TPR} * (1 - {TPR}) / clamp_min({positives} + {both}, 1)\n+ {FPR_VARIANCE}",
        ),
        *(
            record(
                QUADRATIC[kind],
                f"{SEPARATION} * {SEPARATION} - {number(z * z)} * {SEPARATION_VARIANCE}",
            )
            for kind, z in _scores(tunables).items()
        ),
        record(
            LABELS_NEEDED,
            f"clamp_min(\n  {tunables.estimate.labels_needed}\n  - max by (job, {_RATE}) "
            f"({PROMETHEUS[CALIBRATION_LABELS]}),\n  0\n)",
        ),
    ]
    return rules


def _scores(tunables: AlertTunables) -> dict[str, float]:
    """Each interval's standard score."""
    return {DASHBOARD: Z_90, PAGING: tunables.share_test.z}


def _window_rules(window: str, ranges: dict[str, str]) -> list[dict[str, Any]]:
    claims = f'{PROMETHEUS[CLAIMS]}{{{_ID}!=""}}'
    by_verdict, checked, flagged, raw = (
        BY_VERDICT[window],
        CHECKED[window],
        FLAGGED[window],
        RAW[window],
    )
    checked_sum = f'sum by (job, {_ID}) ({by_verdict}{{refcheck_verdict!="error"}})'
    adjusted = ADJUSTED[window]
    return [
        record(
            by_verdict,
            f"sum by (job, {_ID}, refcheck_verdict) (increase({claims}{ranges[window]}))",
        ),
        record(checked, "\nor\n".join(_per_rate(checked_sum, rate) for rate in RateName)),
        record(
            flagged,
            "\nor\n".join(
                _per_rate(f"sum by (job, {_ID}) ({by_verdict}{{{flagged_verdicts(rate)}}})", rate)
                for rate in RateName
            )
            + f"\nor\n{checked} * 0",
        ),
        record(raw, f"{flagged} / ({checked} > 0)"),
        record(adjusted.numerator, f"{raw} - {FPR}"),
        record(adjusted.ratio, f"clamp({adjusted.numerator} / ({SEPARATION} > 0), 0, 1)"),
    ]


def _interval_rules(interval: Interval, z: float) -> list[dict[str, Any]]:
    """Fieller's interval of the adjusted rate at standard score `z`, clipped to [0, 1] and
    widened to hold the adjusted rate (`estimate._fieller`, `closed_form`)."""
    raw, checked, z2 = RAW[interval.window], CHECKED[interval.window], number(z * z)
    numerator, quadratic = interval.numerator, interval.quadratic
    significant = f"({quadratic} > 0 and {SEPARATION} > 0)"
    return [
        record(interval.half, f"{numerator} * {SEPARATION} - {z2} * {FPR_VARIANCE}"),
        record(
            interval.root,
            f"sqrt(clamp_min(\n  {interval.half} * {interval.half}\n  - {quadratic} * (\n"
            f"    {numerator} * {numerator}\n    - {z2} * (\n"
            f"      {raw} * (1 - {raw}) / clamp_min({checked}, 1)\n      + {FPR_VARIANCE}\n"
            "    )\n  ),\n  0\n))",
        ),
        record(
            interval.fieller_lower,
            f"clamp(({interval.half} - {interval.root}) / {significant}, 0, 1)\n"
            f"or\n{numerator} * 0",
        ),
        record(
            interval.fieller_upper,
            f"clamp(({interval.half} + {interval.root}) / {significant}, 0, 1)\n"
            f"or\n{numerator} * 0 + 1",
        ),
        # The interval holds the adjusted value (min and max of the two, where it exists).
        record(
            interval.lower_bound,
            f"({interval.fieller_lower} <= {interval.ratio})\nor\n{interval.ratio}\n"
            f"or\n{interval.fieller_lower}",
        ),
        record(
            interval.upper_bound,
            f"({interval.fieller_upper} >= {interval.ratio})\nor\n{interval.ratio}\n"
            f"or\n{interval.fieller_upper}",
        ),
    ]


def estimate_recording_rules(tunables: AlertTunables) -> list[dict[str, Any]]:
    ranges = windows(tunables.share_test, tunables.baseline_offset)
    rules = _fit_rules(tunables)
    scores = _scores(tunables)
    for window in ESTIMATED:
        rules += _window_rules(window, ranges)
        rules += _interval_rules(ADJUSTED[window], scores[DASHBOARD])
        rules += _interval_rules(PAGED[window], scores[PAGING])
    return rules
