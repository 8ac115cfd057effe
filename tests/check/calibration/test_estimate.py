"""The closed-form estimate: the adjusted count undoes a checker's known error rates, and its
interval is honest (wide when the checker separates poorly, covering the truth when it
separates well)."""

from __future__ import annotations

import random

from refcheck_callbacks.check.calibration.estimate import closed_form
from refcheck_callbacks.check.calibration.rates import RateFit


def _fit(positives: int, negatives: int, tpr: float, fpr: float) -> RateFit:
    return RateFit(
        positives=positives,
        negatives=negatives,
        flagged_positives=round(positives * tpr),
        flagged_negatives=round(negatives * fpr),
    )


def test_the_adjusted_count_undoes_false_flags_on_clean_traffic() -> None:
    fit = _fit(100, 100, tpr=0.9, fpr=0.5)
    estimate = closed_form(claims=10_000, flagged=5_000, fit=fit)
    assert estimate.raw == 0.5
    assert estimate.adjusted is not None and estimate.adjusted < 0.02
    assert estimate.low == 0.0
    assert estimate.high is not None and estimate.high < 0.35


def test_a_checker_that_does_not_separate_gets_the_whole_range() -> None:
    fit = _fit(20, 180, tpr=0.55, fpr=0.5)
    estimate = closed_form(claims=2_000, flagged=1_100, fit=fit)
    assert (estimate.low, estimate.high) == (0.0, 1.0)


def test_without_labels_of_both_classes_there_is_no_estimate() -> None:
    estimate = closed_form(
        claims=100,
        flagged=40,
        fit=RateFit(positives=0, negatives=50, flagged_positives=0, flagged_negatives=10),
    )
    assert estimate.raw == 0.4 and estimate.adjusted is None and estimate.labels == 50
    assert closed_form(claims=0, flagged=0, fit=None).raw is None


def test_the_interval_covers_the_true_rate_in_most_draws() -> None:
    rng = random.Random(7)
    tpr, fpr, truth, covered, draws = 0.8, 0.3, 0.3, 0, 300
    for _ in range(draws):
        labels = [rng.random() < truth for _ in range(200)]
        flags = [rng.random() < (tpr if bad else fpr) for bad in labels]
        fit = RateFit(
            positives=sum(labels),
            negatives=len(labels) - sum(labels),
            flagged_positives=sum(f for f, bad in zip(flags, labels, strict=True) if bad),
            flagged_negatives=sum(f for f, bad in zip(flags, labels, strict=True) if not bad),
        )
        traffic = sum(rng.random() < (tpr if rng.random() < truth else fpr) for _ in range(2_000))
        estimate = closed_form(claims=2_000, flagged=traffic, fit=fit)
        assert estimate.low is not None and estimate.high is not None
        covered += estimate.low <= truth <= estimate.high
    assert covered / draws >= 0.85
