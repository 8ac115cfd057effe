"""The share alerts: a service's contradicted (or unsupported) share of claims against its own
baseline, with a significance test on counts, in two windows.

Why this shape (issue 30): every app has its own normal rate (the default checker contradicts
22-67% of fully supported claims on some domains, 2% on others), so a fixed floor pages some
services all day and misses real shifts in others. These rules page when the recent share is
*significantly* above the service's own baseline:

    lower Wilson bound of the recent share - upper Wilson bound of the baseline share > effect

- Bounds come from counts (claims with a verdict, and those contradicted or not supported), so
  a quiet service needs a larger rise than a busy one before it pages: noise alone does not.
- Two recent windows, as in burn-rate alerting: the fast one (10 m) catches a burst with a large
  minimum effect, the slow one (1 h) a sustained shift with a small one.
- The baseline (1 d) ends `slow_window + pending_for` ago: a shift is never in the baseline it
  is compared with before its alert has had time to fire.
- Onboarding: until the baseline window holds `min_baseline_claims` claims a service has no
  baseline bound, the alerts cannot fire, and `BASELINE_READY` says so (0) for the dashboard.
- A verdict with no series yet (no contradiction so far) counts as zero claims, not as no data.
- A new service (issue 37): while it has no baseline, a second alert per share pages when the
  fast or slow window's lower bound is above an absolute level (`contradiction_level.level`,
  `hallucination_level.level`), over the same minimum claims. A launch whose answers are 49%
  contradicted pages within minutes instead of becoming its own baseline a day later; the
  levels sit above what the default checker says of supported claims on every shared set, so
  clean traffic does not page while onboarding.

`alerting.simulator.replay` evaluates the same arithmetic with numpy; the simulator checks that
it agrees with promtool on the same series, sample for sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from refcheck_callbacks.alerting import estimate_rules
from refcheck_callbacks.alerting.promql import number, record, windows
from refcheck_callbacks.alerting.tunables import AlertTunables, ShareLevel, ShareRise, ShareTest
from refcheck_callbacks.check.calibration.rates import RateName
from refcheck_callbacks.exporters.names import CLAIMS, PROMETHEUS

_CLAIMS = PROMETHEUS[CLAIMS]
WINDOWS = ("fast", "slow", "baseline")

# Recording rules (`level:metric:operation`), in evaluation order.
BY_VERDICT = {w: f"job_refcheck_verdict:refcheck_claims:increase_{w}" for w in WINDOWS}
"""Claims per verdict in each window: the only rules that read the raw counter."""
CHECKED = {w: f"job:refcheck_claims_checked:increase_{w}" for w in WINDOWS}
"""Claims with a verdict (not `error`) in each window."""
BASELINE_READY = "job:refcheck_claims_checked:baseline_ready"
"""1 once the baseline window holds enough claims, 0 while the service is onboarding."""


@dataclass(frozen=True)
class Share:
    """One share of claims that can rise: which verdicts count, and its recordings."""

    key: str
    """The tunables' section: `contradiction_rise` or `hallucination_rise`."""
    alert: str
    metric: str
    """The recordings' metric part: `refcheck_claims_<metric>`."""
    verdicts: str
    """A `refcheck_verdict` matcher: the verdicts whose claims make up the share."""
    subject: str
    """What the share is, in the alert's text."""
    level_key: str
    """The tunables' section of the new-service alert: `contradiction_level`, ..."""
    level_alert: str
    """The alert on a service with no baseline yet, against an absolute level."""
    rate: RateName
    """The prevalence rate whose adjusted lower bound the level alert reads once calibrated."""

    def ratio(self, window: str) -> str:
        return f"job:refcheck_claims_{self.metric}:ratio_{window}"

    def lower_bound(self, window: str) -> str:
        return f"job:refcheck_claims_{self.metric}:lower_bound_{window}"

    @property
    def upper_bound(self) -> str:
        return f"job:refcheck_claims_{self.metric}:upper_bound_baseline"


CONTRADICTION = Share(
    "contradiction_rise",
    "RefCheckContradictionRise",
    "contradicted",
    'refcheck_verdict="contradiction"',
    "contradicted by the documents they were written from",
    "contradiction_level",
    "RefCheckNewServiceContradiction",
    RateName.CONTRADICTION,
)
HALLUCINATION = Share(
    "hallucination_rise",
    "RefCheckHallucinationRise",
    "unsupported",
    'refcheck_verdict=~"neutral|contradiction"',
    "not supported by the documents (neutral or contradicted)",
    "hallucination_level",
    "RefCheckNewServiceHallucination",
    RateName.HALLUCINATION,
)
SHARES = (CONTRADICTION, HALLUCINATION)
SHARE_ALERTS = (*(share.alert for share in SHARES), *(share.level_alert for share in SHARES))
"""Every alert on the shares of claims, in the rule file's order."""

RECORDED = (
    *BY_VERDICT.values(),
    *CHECKED.values(),
    BASELINE_READY,
    *(
        name
        for share in SHARES
        for name in (
            *(share.ratio(w) for w in WINDOWS),
            share.lower_bound("fast"),
            share.lower_bound("slow"),
            share.upper_bound,
        )
    ),
)
"""Every recording, in the order the rule file evaluates them."""


def wilson_terms(z: float) -> tuple[float, float, float]:
    """z^2 / 2, z^2 / 4 and z^2: the constants of the Wilson bounds, computed once here for
    the rules and the replay alike."""
    return z * z / 2, z * z / 4, z * z


def wilson_bound(ratio: str, count: str, z: float, sign: str) -> str:
    """The Wilson score bound of a share `ratio` of `count` claims (`-` lower, `+` upper):
    (p + z²/2n ∓ z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    half_square, quarter_square, square = wilson_terms(z)
    return (
        f"(\n  {ratio} + {number(half_square)} / {count}\n"
        f"  {sign} {number(z)} * sqrt(\n"
        f"    {ratio} * (1 - {ratio}) / {count}\n"
        f"    + {number(quarter_square)} / {count} ^ 2\n  )\n)\n"
        f"/ (1 + {number(square)} / {count})"
    )


def share_recording_rules(tunables: AlertTunables) -> list[dict[str, Any]]:
    test = tunables.share_test
    ranges = windows(test, tunables.baseline_offset)
    rules = [
        record(BY_VERDICT[w], f"sum by (job, refcheck_verdict) (increase({_CLAIMS}{ranges[w]}))")
        for w in WINDOWS
    ]
    rules += [
        record(CHECKED[w], f'sum by (job) ({BY_VERDICT[w]}{{refcheck_verdict!="error"}})')
        for w in WINDOWS
    ]
    rules.append(
        record(
            BASELINE_READY,
            f"{CHECKED['baseline']} >= bool {test.min_baseline_claims}\n"
            f"or on (job)\n{CHECKED['slow']} * 0",
        )
    )
    for share in SHARES:
        rules += [
            record(
                share.ratio(w),
                f"(\n  sum by (job) ({BY_VERDICT[w]}{{{share.verdicts}}})\n"
                f"  or\n  {CHECKED[w]} * 0\n)\n/ {CHECKED[w]}",
            )
            for w in WINDOWS
        ]
        rules += [
            record(share.lower_bound(w), wilson_bound(share.ratio(w), CHECKED[w], test.z, "-"))
            for w in ("fast", "slow")
        ]
        upper = wilson_bound(share.ratio("baseline"), CHECKED["baseline"], test.z, "+")
        rules.append(
            record(
                share.upper_bound,
                f"{upper}\nand on (job)\n{CHECKED['baseline']} >= {test.min_baseline_claims}",
            )
        )
    return rules


def _condition(share: Share, window: str, effect: float, min_claims: int) -> str:
    return (
        f"(\n  {share.ratio(window)}\n"
        f"  and on (job)\n  {share.lower_bound(window)} - on (job) {share.upper_bound}"
        f" > {number(effect)}\n"
        f"  and on (job)\n  {CHECKED[window]} >= {min_claims}\n)"
    )


def recorded_value(name: str, missing: str = "unknown") -> str:
    """An annotation template: the recorded series' value for the alert's job, as a percentage."""
    return (
        f'{{{{ with printf `{name}{{job="%s"}}` $labels.job | query }}}}'
        f"{{{{ . | first | value | humanizePercentage }}}}{{{{ else }}}}{missing}{{{{ end }}}}"
    )


def share_alert(share: Share, tunables: AlertTunables) -> dict[str, Any]:
    test: ShareTest = tunables.share_test
    rise: ShareRise = getattr(tunables, share.key)
    fast = _condition(share, "fast", rise.fast_min_effect, test.fast_min_claims)
    slow = _condition(share, "slow", rise.slow_min_effect, test.slow_min_claims)
    return {
        "alert": share.alert,
        "expr": f"{fast}\nor\n{slow}",
        "for": rise.pending_for,
        "labels": {"severity": rise.severity},
        "annotations": {
            "summary": f"{{{{ $labels.job }}}}: the {share.metric} share of claims rose to "
            "{{ $value | humanizePercentage }}",
            "description": f"{{{{ $value | humanizePercentage }}}} of the claims in "
            f"{{{{ $labels.job }}}}'s recent answers were {share.subject}, significantly "
            f"above its own baseline of {recorded_value(share.ratio('baseline'))} (the "
            f"{test.baseline_window} ending {tunables.baseline_offset} ago). Lower bounds "
            f"(z={number(test.z)}): {recorded_value(share.lower_bound('fast'), 'too few claims')}"
            f" over the last {test.fast_window}, "
            f"{recorded_value(share.lower_bound('slow'), 'too few claims')} over the last "
            f"{test.slow_window}; the baseline's upper bound is "
            f"{recorded_value(share.upper_bound)}. It fires when a lower bound clears that by "
            f"{percent(rise.fast_min_effect)} ({test.fast_window}) or "
            f"{percent(rise.slow_min_effect)} ({test.slow_window}).",
            "runbook": _RUNBOOKS[share.key],
        },
    }


def _level_condition(share: Share, window: str, level: float, min_claims: int) -> str:
    return (
        f"(\n  {share.ratio(window)}\n"
        f"  and on (job)\n  {share.lower_bound(window)} > {number(level)}\n"
        f"  and on (job)\n  {CHECKED[window]} >= {min_claims}\n)"
    )


def _rate(name: str, share: Share) -> str:
    """A per-calibration estimate recording of `share`'s rate, by service: the highest of a
    service's calibrations (several while a new one rolls out)."""
    return f"max by (job) ({_selected(name, share)})"


def _selected(name: str, share: Share) -> str:
    return f'{name}{{refcheck_rate="{share.rate.value}"}}'


def _adjusted_condition(share: Share, window: str, level: float, min_claims: int) -> str:
    adjusted = estimate_rules.PAGED[window]
    checked = (
        f'sum by (job) ({estimate_rules.CHECKED[window]}{{refcheck_rate="{share.rate.value}"}})'
    )
    return (
        f"(\n  {_rate(adjusted.ratio, share)}\n"
        f"  and on (job)\n  {_rate(adjusted.lower_bound, share)} > {number(level)}\n"
        f"  and on (job)\n  {checked} >= {min_claims}\n)"
    )


def level_alert(share: Share, tunables: AlertTunables) -> dict[str, Any]:
    """A service with no baseline yet whose share is significantly above the absolute level:
    a calibrated service's adjusted lower bound (issue 44), else the raw share's Wilson bound."""
    test: ShareTest = tunables.share_test
    level: ShareLevel = getattr(tunables, share.level_key)
    raw = [
        _level_condition(share, "fast", level.level, test.fast_min_claims),
        _level_condition(share, "slow", level.level, test.slow_min_claims),
    ]
    adjusted = [
        _adjusted_condition(share, "fast", level.adjusted_level, test.fast_min_claims),
        _adjusted_condition(share, "slow", level.adjusted_level, test.slow_min_claims),
    ]
    calibrated = _rate(estimate_rules.PAGED["slow"].lower_bound, share)
    expr = (
        f"(\n(\n{raw[0]}\nor\n{raw[1]}\n)\nunless on (job)\n{calibrated}\n"
        f"or\n{adjusted[0]}\nor\n{adjusted[1]}\n)\nand on (job)\n{BASELINE_READY} == 0"
    )
    return {
        "alert": share.level_alert,
        "expr": expr,
        "for": level.pending_for,
        "labels": {"severity": level.severity},
        "annotations": {
            "summary": "{{ $labels.job }}: a new service, {{ $value | humanizePercentage }} of "
            f"its claims {share.metric}",
            "description": _level_description(share, tunables, level),
            "runbook": _NEW_SERVICE_RUNBOOK,
        },
    }


def _level_description(share: Share, tunables: AlertTunables, level: ShareLevel) -> str:
    """What fired: the adjusted rate's lower bound for a calibrated service, the raw share's
    Wilson bounds for another (an annotation template that asks which it is)."""
    test = tunables.share_test
    lower = estimate_rules.PAGED["slow"].lower_bound
    query = f'max({lower}{{job="%s",refcheck_rate="{share.rate.value}"}})'
    opening = (
        f"{{{{ $value | humanizePercentage }}}} of the claims in {{{{ $labels.job }}}}'s recent "
        f"answers were {share.subject}"
    )
    onboarding = (
        f"The service has no baseline yet (fewer than {test.min_baseline_claims} claims in the "
        f"{test.baseline_window} ending {tunables.baseline_offset} ago), and the share is "
        "significantly above the absolute level of"
    )
    return (
        f"{{{{ with printf `{query}` $labels.job | query }}}}"
        f"{opening}, as the adjusted rate estimates it from the calibration's audit labels. "
        f"{onboarding} {percent(level.adjusted_level)}: the lower bound of its interval "
        f"(z={number(test.z)}) is {{{{ . | first | value | humanizePercentage }}}} over the last "
        f"{test.slow_window}."
        f"{{{{ else }}}}{opening}. {onboarding} {percent(level.level)}: lower bounds "
        f"(z={number(test.z)}) "
        f"{recorded_value(share.lower_bound('fast'), 'too few claims')} over the last "
        f"{test.fast_window}, {recorded_value(share.lower_bound('slow'), 'too few claims')}"
        f" over the last {test.slow_window}.{{{{ end }}}}"
    )


def percent(share: float) -> str:
    return f"{share * 100:g}%"


_NEW_SERVICE_RUNBOOK = (
    "1. A new service (or one whose metrics are new: a renamed job, a fresh Prometheus) is "
    "answering against its documents far worse than any checked service does when healthy: "
    "treat it as a broken launch. 2. Look up its recent `evaluate refcheck` spans and their "
    "gen_ai.evaluation.result events: which claims, which documents. 3. Typical causes: the "
    "retriever points at the wrong or an empty index, the prompt template does not put the "
    "documents in front of the model, a model that ignores them. 4. If the checker is new to "
    "this kind of text and its normal share is this high, raise the level "
    "(`refcheck alert-rules --set contradiction_level.level=...`, or hallucination_level); "
    "the alert stops once the service has a baseline, and the rise alerts take over."
)
_RUNBOOKS = {
    "contradiction_rise": "1. Open the RefCheck dashboard for this service: is the rise on one "
    "model (gen_ai_request_model) or all of them, a burst (the fast window) or a shift (the "
    "slow one)? 2. Look up recent `evaluate refcheck` spans with "
    "refcheck.response.label=contradiction in your trace back end; their "
    "gen_ai.evaluation.result events show which claim, which document and (with "
    "capture_content) the text. 3. Typical causes: a model or prompt rollout (roll back), a "
    "retriever or index change returning stale or wrong documents (check the index build), or "
    "an upstream data change. 4. If the checker itself changed (new model or threshold), its "
    "own rates moved: the alert resolves once the new rate has become the baseline. 5. A rise "
    "that stays resolves when it has become the baseline (a day by default): fix it before.",
    "hallucination_rise": "1. Check the verdict mix panel: mostly neutral means answers go "
    "beyond the documents (retrieval recall, a prompt that no longer constrains the model to "
    "the context); mostly contradiction means answers disagree with them (see "
    "RefCheckContradictionRise). 2. Sample answers from traces with high "
    "refcheck.response.hallucination_ratio. 3. Check whether retrieval returns fewer or "
    "shorter documents than usual (refcheck.reference.count on the spans). 4. A service whose "
    "share legitimately swings (open-ended chat, hours with different users) needs a larger "
    "minimum effect: `refcheck alert-rules --set hallucination_rise.slow_min_effect=...`; "
    "`refcheck alert-rules --simulate` shows what a setting gives at your volume.",
}
