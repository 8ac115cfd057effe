"""Every threshold, window and `for` duration of the generated alert rules, with its default.

`refcheck alert-rules --set ALERT.FIELD=VALUE` changes one; `--help` lists them all with these
descriptions. The defaults are the shipped `deploy/prometheus/refcheck-alerts.yml`; the traffic
simulator (`refcheck alert-rules --simulate`, deploy/README.md) measures what they give.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(text: str) -> float:
    """Seconds in a Prometheus duration such as `10m`, `1h30m` or `250ms`."""
    total, number, index = 0.0, "", 0
    while index < len(text):
        char = text[index]
        if char.isdigit():
            number += char
            index += 1
            continue
        unit = "ms" if text.startswith("ms", index) else char
        if not number or unit not in _UNIT_SECONDS:
            raise ValueError(f"{text!r} is not a Prometheus duration (like 30s, 10m, 1h30m)")
        total += int(number) * _UNIT_SECONDS[unit]
        number, index = "", index + len(unit)
    if number or not text:
        raise ValueError(f"{text!r} is not a Prometheus duration (like 30s, 10m, 1h30m)")
    return total


def format_duration(seconds: float) -> str:
    """A Prometheus duration for `seconds` (whole milliseconds): 900 -> `15m`, 5400 -> `1h30m`."""
    remaining, parts = round(seconds * 1000), []
    for unit, size in (("h", 3600000), ("m", 60000), ("s", 1000), ("ms", 1)):
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def _valid_duration(text: str) -> str:
    if duration_seconds(text) <= 0:
        raise ValueError("a duration must be positive")
    return text


Duration = Annotated[str, AfterValidator(_valid_duration)]
Share = Annotated[float, Field(ge=0.0, le=1.0)]


class _Tunables(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _pending_for(default: str) -> Any:
    return Field(default, description="how long the condition must hold before the alert fires")


def _severity(default: str) -> Any:
    return Field(default, description="the alert's severity label")


class ShareTest(_Tunables):
    """How a service's recent share of claims is compared with its own baseline: one-sided
    Wilson score bounds on counts, over a fast and a slow window (shared by both share alerts).
    """

    fast_window: Duration = Field("10m", description="the short recent window: catches a burst")
    slow_window: Duration = Field(
        "1h",
        description="the long recent window: catches a sustained shift too small for the short",
    )
    baseline_window: Duration = Field(
        "1d",
        description="the window of the service's normal share, ending slow_window + the longest "
        "pending_for ago",
    )
    z: float = Field(
        3.75,
        gt=0.0,
        description="standard scores of the one-sided bounds (3.75: 99.991%): the recent lower "
        "bound and the baseline's upper bound",
    )
    fast_min_claims: int = Field(30, ge=1, description="claims with a verdict in the fast window")
    slow_min_claims: int = Field(200, ge=1, description="claims with a verdict in the slow window")
    min_baseline_claims: int = Field(
        1000,
        ge=1,
        description="claims in the baseline window before a service leaves onboarding (until "
        "then it has no baseline and the share alerts cannot fire)",
    )

    @model_validator(mode="after")
    def _windows_grow(self) -> ShareTest:
        fast, slow = duration_seconds(self.fast_window), duration_seconds(self.slow_window)
        if not fast < slow < duration_seconds(self.baseline_window):
            raise ValueError("windows must grow: fast_window < slow_window < baseline_window")
        return self


class ShareRise(_Tunables):
    """A share of claims (contradicted, or not supported) significantly above its baseline:
    the recent window's lower bound exceeds the baseline's upper bound by a minimum effect."""

    fast_min_effect: Share = Field(
        0.10, description="how far the fast window's lower bound must clear the baseline's"
    )
    slow_min_effect: Share = Field(
        0.01, description="how far the slow window's lower bound must clear the baseline's"
    )
    pending_for: Duration = _pending_for("2m")
    severity: str = _severity("page")


class ShareLevel(_Tunables):
    """A new service's share of claims significantly above an absolute level: while it has no
    baseline (onboarding), the fast or slow window's lower bound exceeds a level. A broken
    launch pages without waiting a day for a baseline; once the service has one, the rise
    alerts compare it with itself and this one stays quiet.

    A calibrated service (audit labels, issue 44) is judged on the lower bound of its adjusted
    rate's 90% interval against `adjusted_level`, a share of claims truly of the kind; an
    uncalibrated one on the Wilson lower bound of its raw flag share against `level`, which
    must sit above what the checker flags of supported claims."""

    level: Share
    """The absolute raw share (each share's own default below)."""
    adjusted_level: Share
    """The absolute adjusted share, for calibrated services."""
    pending_for: Duration = _pending_for("2m")
    severity: str = _severity("page")


class ContradictionLevel(ShareLevel):
    level: Share = Field(
        0.2,
        description="the contradicted share a new service's lower bound must exceed: above what "
        "a checker contradicts of supported claims (the default checker: 0 to 4% on the shared "
        "sets; raise it for one that contradicts more)",
    )
    adjusted_level: Share = Field(
        0.2,
        description="the contradicted share a calibrated new service's adjusted lower bound "
        "must exceed",
    )


class HallucinationLevel(ShareLevel):
    level: Share = Field(
        0.8,
        description="the unsupported share a new service's lower bound must exceed: above the "
        "neutral + contradicted share of fully supported answers (the default checker: 2 to 59% "
        "on the shared sets)",
    )
    adjusted_level: Share = Field(
        0.3,
        description="the unsupported share a calibrated new service's adjusted lower bound "
        "must exceed: the adjusted rate estimates the true share, so this is far below `level`",
    )


class Estimate(_Tunables):
    """The adjusted rates (`alerting.estimate_rules`): the claim counts of the share test's fast
    and slow windows adjusted by the calibration gauges, with their 90% intervals."""

    labels_needed: int = Field(
        200,
        ge=1,
        description="audit labels a calibration should have: the dashboard says "
        "'uncalibrated' with how many are missing until a service's calibration has them",
    )


class RelevanceDrop(_Tunables):
    """Retrieved references' relevance significantly below the service's own baseline: the
    share of references that are not relevant (relevance at most 1/2), compared as the share
    alerts compare claims (`share_test`'s windows and z, Wilson bounds on counts, here on the
    effective count of references: see `design_effect`), with minimum counts of references and
    effects of its own. A stale index, a new embedding model or a
    filter bug shows here before it shows as unsupported claims."""

    fast_min_effect: Share = Field(
        0.10, description="how far the fast window's lower bound must clear the baseline's"
    )
    slow_min_effect: Share = Field(
        0.02, description="how far the slow window's lower bound must clear the baseline's"
    )
    design_effect: float = Field(
        2.5,
        ge=1.0,
        description="how much noisier the share of references is than if each were drawn "
        "alone, since references of one answer share their fate: 1 + (references per answer - "
        "1) x their correlation (2.5: four references correlated at 0.5); the bounds count "
        "references / design_effect",
    )
    fast_min_references: int = Field(
        100, ge=1, description="references with a relevance score in the fast window"
    )
    slow_min_references: int = Field(
        600, ge=1, description="references with a relevance score in the slow window"
    )
    min_baseline_references: int = Field(
        3000,
        ge=1,
        description="references in the baseline window before the service has a relevance "
        "baseline (until then the alert cannot fire)",
    )
    pending_for: Duration = _pending_for("2m")
    severity: str = _severity("page")


class CheckerErrors(_Tunables):
    """Answers whose check failed or timed out, or claims that got no verdict."""

    window: Duration = Field("15m", description="the window the failure shares are taken over")
    threshold: Share = Field(0.05, description="the failed share above which it fires")
    min_answers: int = Field(20, ge=1, description="answers needed in the window")
    min_claims: int = Field(50, ge=1, description="claims needed in the window")
    pending_for: Duration = _pending_for("10m")
    severity: str = _severity("warning")


class DroppedEvaluations(_Tunables):
    """Answers dropped unchecked (queue full, shut down) among all answers handed over."""

    window: Duration = Field("10m", description="the window the dropped share is taken over")
    threshold: Share = Field(0.01, description="the dropped share above which it fires")
    min_dropped: int = Field(10, ge=1, description="dropped answers needed in the window")
    pending_for: Duration = _pending_for("10m")
    severity: str = _severity("warning")


class StalledChecker(_Tunables):
    """A queue that never empties while no answer gets a result."""

    window: Duration = Field("10m", description="how long the queue stays non-empty with no result")
    pending_for: Duration = _pending_for("5m")
    severity: str = _severity("page")


class JudgeBudgetNearlySpent(_Tunables):
    """An LLM judge or extractor whose budget (`JudgeBudget`) is nearly spent in its window:
    soon its claims go to the fallback checker."""

    threshold: Share = Field(0.9, description="the share of the budget spent or held")
    pending_for: Duration = _pending_for("5m")
    severity: str = _severity("warning")


class AlertTunables(_Tunables):
    """Every threshold, window and duration of the generated rules; defaults are the shipped."""

    share_test: ShareTest = ShareTest()
    contradiction_rise: ShareRise = ShareRise()
    hallucination_rise: ShareRise = ShareRise()
    contradiction_level: ContradictionLevel = ContradictionLevel()
    hallucination_level: HallucinationLevel = HallucinationLevel()
    estimate: Estimate = Estimate()
    relevance_drop: RelevanceDrop = RelevanceDrop()
    checker_errors: CheckerErrors = CheckerErrors()
    dropped_evaluations: DroppedEvaluations = DroppedEvaluations()
    stalled_checker: StalledChecker = StalledChecker()
    judge_budget: JudgeBudgetNearlySpent = JudgeBudgetNearlySpent()

    @property
    def baseline_offset(self) -> str:
        """The baseline ends this long ago: a sustained shift is not in the baseline it is
        compared with until the slow window's alert has had its `for` time to fire."""
        pending = max(
            duration_seconds(rise.pending_for)
            for rise in (self.contradiction_rise, self.hallucination_rise, self.relevance_drop)
        )
        return format_duration(duration_seconds(self.share_test.slow_window) + pending)


def changed_tunables(tunables: AlertTunables) -> dict[str, Any]:
    """`alert.field` -> value for every tunable that differs from its default."""
    defaults = AlertTunables()
    return {
        f"{alert}.{field}": value
        for alert in AlertTunables.model_fields
        for field, value in getattr(tunables, alert).model_dump().items()
        if getattr(getattr(defaults, alert), field) != value
    }
