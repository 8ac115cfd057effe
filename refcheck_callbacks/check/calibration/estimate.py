"""The closed-form prevalence estimate: the adjusted count with Fieller's 90% interval.

This is the estimate the dashboard's recording rules compute from counters and gauges
(deploy/prometheus/refcheck-rules.yml mirrors it term for term), so that a window over any
set of replicas reads the same number `refcheck rates` would print from the same counts.

Given `claims` checked in some traffic, `flagged` of them flagged, and a `RateFit` from audit
labels, the adjusted share is `A / B` with `A = q - FPR` and `B = TPR - FPR`. The flag rates are
smoothed by half a count per class (Jeffreys) so an empty class does not divide by zero. The
interval solves Fieller's quadratic for the ratio of two estimated differences: it counts the
traffic's sampling variance (`q`) and the labels' (`TPR`, `FPR`, which enter both `A` and `B`),
and it is unbounded, so [0, 1], when `B` is not clearly above zero: a checker that separates
poorly gets a wide interval, never a confident number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from refcheck_callbacks.check.calibration.rates import RateFit

Z_90 = 1.6448536269514722
"""The standard normal quantile for a two-sided 90% interval."""

PRIOR_COUNT = 0.5
"""The half count added to each class's flagged and unflagged claims (Jeffreys)."""


class Estimate(BaseModel):
    """A prevalence estimate: the raw flag share, the adjusted share and its interval."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    claims: int
    raw: float | None
    """The flagged share of the traffic's claims; None without claims."""
    adjusted: float | None
    """The adjusted share in [0, 1]; None without claims or without audit labels."""
    low: float | None
    high: float | None
    labels: int
    """How many audit labels the fit used."""


def smoothed_rate(flagged: int, total: int) -> float:
    """A flag rate with half a count of each outcome added."""
    return (flagged + PRIOR_COUNT) / (total + 2 * PRIOR_COUNT)


def _bernoulli_variance(rate: float, total: float) -> float:
    return rate * (1.0 - rate) / max(total, 1.0)


def fieller_interval(
    a: float, b: float, var_a: float, var_b: float, cov: float, z: float
) -> tuple[float, float]:
    """The set of ratios r with (a - r b)^2 <= z^2 (var_a - 2 r cov + r^2 var_b), within
    [0, 1]; [0, 1] itself when the denominator is not significantly positive."""
    z2 = z * z
    quad = b * b - z2 * var_b
    if b <= 0.0 or quad <= 0.0:
        return 0.0, 1.0
    half = a * b - z2 * cov
    disc = half * half - quad * (a * a - z2 * var_a)
    root = math.sqrt(max(disc, 0.0))
    low, high = (half - root) / quad, (half + root) / quad
    return min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0)


@dataclass(frozen=True)
class DesignEffects:
    """How much more than binomial the traffic's flag share and the audit's flag rates vary,
    claims of one answer being flagged together (`clusters.design_effect`); 1 each: claims
    counted as independent, as the recording rules count them."""

    traffic: float = 1.0
    positives: float = 1.0
    negatives: float = 1.0


INDEPENDENT = DesignEffects()


def adjusted_count(
    claims: int,
    flagged: int,
    fit: RateFit | None,
    z: float = Z_90,
    design: DesignEffects = INDEPENDENT,
) -> Estimate:
    """The adjusted count and its Fieller interval (module docstring), each variance scaled by
    its design effect."""
    raw = flagged / claims if claims else None
    labels = fit.labels if fit is not None else 0
    if raw is None or fit is None or not fit.positives or not fit.negatives:
        return Estimate(claims=claims, raw=raw, adjusted=None, low=None, high=None, labels=labels)
    tpr = smoothed_rate(fit.flagged_positives, fit.positives)
    fpr = smoothed_rate(fit.flagged_negatives, fit.negatives)
    var_q = design.traffic * _bernoulli_variance(raw, claims)
    var_t = design.positives * _bernoulli_variance(tpr, fit.positives + 2 * PRIOR_COUNT)
    var_f = design.negatives * _bernoulli_variance(fpr, fit.negatives + 2 * PRIOR_COUNT)
    a, b = raw - fpr, tpr - fpr
    adjusted = min(max(a / b, 0.0), 1.0) if b > 0.0 else None
    low, high = fieller_interval(a, b, var_q + var_f, var_t + var_f, var_f, z)
    if adjusted is not None:
        low, high = min(low, adjusted), max(high, adjusted)
    return Estimate(claims=claims, raw=raw, adjusted=adjusted, low=low, high=high, labels=labels)


def closed_form(claims: int, flagged: int, fit: RateFit | None, z: float = Z_90) -> Estimate:
    """The adjusted count and its Fieller interval (module docstring), claims counted as
    independent: what the recording rules compute from counters and gauges."""
    return adjusted_count(claims, flagged, fit, z)
