"""The estimate `refcheck rates` prints: the median sweep, with clustering counted.

The closed form adjusts the share of claims the pipeline flags by the flag rates of that one
cut. Where the checker separates supported from unsupported claims poorly (TPR - FPR small),
that one ratio swings with every few audit labels. The median sweep (Forman, 2008) cuts the
traffic's P(entailment) at many thresholds, adjusts each cut by its own flag rates on the
audit, and takes the median of the estimates, and of the interval bounds, over the cuts that
separate well (TPR - FPR at least `MIN_SEPARATION`; all of them where none does). Chosen by
measurement over the closed form, the probabilistic form and a Bayesian posterior
(docs/rates.md, `benchmarks/rates_simulation.py`).

Each cut's interval is Fieller's, as in the closed form, with every variance scaled by its
design effect (`clusters`): the claims of one answer are flagged together, so the traffic and
the audit carry less information than their claim counts say.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Sequence

from refcheck_callbacks.check.calibration.estimate import (
    INDEPENDENT,
    DesignEffects,
    Estimate,
    adjusted_count,
)
from refcheck_callbacks.check.calibration.rates import RateFit, SweepPoint

THRESHOLDS = tuple(round(0.05 * step, 2) for step in range(1, 20))
"""The support thresholds the audit's flag counts are kept for: 0.05 to 0.95."""
MIN_SEPARATION = 0.25
"""The TPR - FPR a cut needs to take part (Forman's MS2 rule)."""


def sweep_points(
    positive_scores: Sequence[float], negative_scores: Sequence[float]
) -> tuple[SweepPoint, ...]:
    """The audit's flag counts at every threshold, from the P(entailment) of its claims of
    the rate's kind (`positive_scores`) and of the others."""
    positives, negatives = sorted(positive_scores), sorted(negative_scores)
    return tuple(
        SweepPoint(
            threshold=threshold,
            flagged_positives=bisect.bisect_left(positives, threshold),
            flagged_negatives=bisect.bisect_left(negatives, threshold),
        )
        for threshold in THRESHOLDS
    )


def _cut(fit: RateFit, point: SweepPoint) -> RateFit:
    return fit.model_copy(
        update={
            "flagged_positives": point.flagged_positives,
            "flagged_negatives": point.flagged_negatives,
            "sweep": (),
        }
    )


def median_sweep(
    claims: int,
    flagged: int,
    support_scores: Sequence[float],
    fit: RateFit | None,
    design: DesignEffects = INDEPENDENT,
) -> Estimate:
    """The median sweep (module docstring) over the traffic's `claims`, `flagged` of them
    flagged by the pipeline (the raw share) and `support_scores` their P(entailment); the
    design-effect-scaled adjusted count of the pipeline's own flags where the fit has no
    sweep (the contradiction rate)."""
    single = adjusted_count(claims, flagged, fit, design=design)
    if fit is None or not fit.sweep or single.adjusted is None:
        return single
    scores = sorted(support_scores)  # flagged at a cut: the scores below it
    found = []
    for point in fit.sweep:
        cut = _cut(fit, point)
        estimate = adjusted_count(
            claims, bisect.bisect_left(scores, point.threshold), cut, design=design
        )
        tpr, fpr = cut.true_positive_rate or 0.0, cut.false_positive_rate or 0.0
        if estimate.adjusted is not None:
            found.append((tpr - fpr, estimate))
    kept = [e for gap, e in found if gap >= MIN_SEPARATION] or [e for _, e in found]
    bounds = [(e.adjusted, e.low, e.high) for e in kept]
    columns = [
        [value for value in column if value is not None] for column in zip(*bounds, strict=True)
    ]
    if not kept or any(len(column) != len(kept) for column in columns):
        return single
    adjusted, low, high = (statistics.median(column) for column in columns)
    return single.model_copy(update={"adjusted": adjusted, "low": low, "high": high})
