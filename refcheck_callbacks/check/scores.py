"""One meaning of a verdict's scores, whatever checker gave them.

Every family reports P(entailment) on one scale: at or above `SUPPORT_THRESHOLD` (1/2) the
checker finds the claim supported, below it does not. A checker that decides at another point
(the embedded checker's trained threshold, a calibration's fitted one) maps its own score onto
that scale with `at_half`, a monotone map, so what ranks claims (AUROC) is unchanged while the
label's probability is always the largest of the three (`types.Verdict`'s score rule).
"""

from __future__ import annotations

SUPPORT_THRESHOLD = 0.5
"""P(entailment) from which every checker's verdict means supported."""


def at_half(score: float, threshold: float) -> float:
    """`score` mapped so that `threshold` lands on 1/2: linear on [0, threshold] and on
    [threshold, 1], monotone, 0 and 1 kept."""
    score = min(1.0, max(0.0, float(score)))
    if score < threshold:  # so threshold > 0
        return SUPPORT_THRESHOLD * score / threshold
    if threshold >= 1.0:
        return 1.0
    above = (score - threshold) / (1.0 - threshold)
    return SUPPORT_THRESHOLD + (1.0 - SUPPORT_THRESHOLD) * max(0.0, above)
