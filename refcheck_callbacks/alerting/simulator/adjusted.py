"""The adjusted rate's lower bound in numpy, operation for operation as the recording rules
(`alerting.estimate_rules`) and `check.calibration.estimate.closed_form` compute it, and the
audit a simulated service is calibrated on.

The same float operations in the same order as the rules, so promtool and the replay agree on
every comparison (`promtool.check_replay` runs them side by side on calibrated services too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from refcheck_callbacks.alerting.simulator.traffic import LabelRates
from refcheck_callbacks.check.calibration.estimate import PRIOR_COUNT, Z_90
from refcheck_callbacks.check.calibration.rates import RateFit, RateName
from refcheck_callbacks.support.extras import require

if TYPE_CHECKING:
    import numpy as np

Fits = dict[RateName, "np.ndarray"]
"""Per rate, each series' fit as columns positives, negatives, flagged positives, flagged
negatives: shape (..., 4)."""


def audit(rates: LabelRates, labels: int, unsupported: float, seed: int) -> dict[RateName, RateFit]:
    """A calibration's flag counts from `labels` random audit labels of traffic in which a share
    `unsupported` of claims is unsupported. The simulator's gold is binary (supported or not),
    so both rates' positives are the unsupported claims: the contradiction rate's fit is how
    often the checker contradicts them, and supported ones."""
    numpy: Any = require("numpy", "simulate")
    rng = numpy.random.default_rng([seed, labels, 44])
    positives = int(rng.binomial(labels, unsupported))
    negatives = labels - positives
    flagged = int(rng.binomial(positives, rates.unsupported[1] + rates.unsupported[2]))
    false_flags = int(rng.binomial(negatives, rates.supported[1] + rates.supported[2]))
    contradicted = int(rng.binomial(flagged, _within(rates.unsupported)))
    false_contradicted = int(rng.binomial(false_flags, _within(rates.supported)))
    return {
        RateName.HALLUCINATION: RateFit(
            positives=positives,
            negatives=negatives,
            flagged_positives=flagged,
            flagged_negatives=false_flags,
        ),
        RateName.CONTRADICTION: RateFit(
            positives=positives,
            negatives=negatives,
            flagged_positives=contradicted,
            flagged_negatives=false_contradicted,
        ),
    }


def _within(mix: tuple[float, float, float]) -> float:
    """Of the flagged claims (neutral or contradiction), the contradicted share."""
    flagged = mix[1] + mix[2]
    return mix[2] / flagged if flagged else 0.0


def fit_columns(fits: list[dict[RateName, RateFit]]) -> Fits:
    """Per rate, the fits of several series stacked (series on the leading axis)."""
    numpy: Any = require("numpy", "simulate")
    return {
        rate: numpy.array(
            [
                [fit.positives, fit.negatives, fit.flagged_positives, fit.flagged_negatives]
                for fit in (series[rate] for series in fits)
            ],
            dtype=numpy.float64,
        )
        for rate in RateName
    }


def lower_bound(
    flagged: np.ndarray, checked: np.ndarray, fit: np.ndarray, z: float = Z_90
) -> np.ndarray:
    """The adjusted rate's lower bound at standard score `z` at each minute (NaN where the
    rules record none: no claims in the window, or a fit without both classes); `flagged` and
    `checked` are window counts of shape (..., minutes), `fit` (..., 4)."""
    numpy: Any = require("numpy", "simulate")
    positives, negatives, flagged_positives, flagged_negatives = (
        fit[..., column, None] for column in range(4)
    )
    prior, both, z2 = PRIOR_COUNT, 2 * PRIOR_COUNT, z * z
    with numpy.errstate(divide="ignore", invalid="ignore"):
        labelled = (positives > 0) & (negatives > 0)
        tpr = numpy.where(labelled, (flagged_positives + prior) / (positives + both), numpy.nan)
        fpr = numpy.where(labelled, (flagged_negatives + prior) / (negatives + both), numpy.nan)
        separation = tpr - fpr
        fpr_variance = fpr * (1 - fpr) / numpy.maximum(negatives + both, 1)
        separation_variance = tpr * (1 - tpr) / numpy.maximum(positives + both, 1) + fpr_variance
        quadratic = separation * separation - z2 * separation_variance
        raw = numpy.where(checked > 0, flagged / checked, numpy.nan)
        numerator = raw - fpr
        half = numerator * separation - z2 * fpr_variance
        variance = raw * (1 - raw) / numpy.maximum(checked, 1) + fpr_variance
        disc = half * half - quadratic * (numerator * numerator - z2 * variance)
        root = numpy.sqrt(numpy.maximum(disc, 0))
        significant = (quadratic > 0) & (separation > 0)
        fieller = numpy.where(
            significant, numpy.clip((half - root) / quadratic, 0, 1), numerator * 0
        )
        adjusted = numpy.where(separation > 0, numpy.clip(numerator / separation, 0, 1), numpy.nan)
        low: np.ndarray = numpy.where(separation > 0, numpy.minimum(fieller, adjusted), fieller)
    return low
