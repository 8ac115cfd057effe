"""The estimate `refcheck rates` prints: clusters, design effects and the median sweep."""

from __future__ import annotations

import pytest

from refcheck_callbacks.check.calibration.clusters import cluster_ids, design_effect, flag_clusters
from refcheck_callbacks.check.calibration.estimate import (
    DesignEffects,
    adjusted_count,
    closed_form,
    smoothed_rate,
)
from refcheck_callbacks.check.calibration.rates import RateFit
from refcheck_callbacks.check.calibration.sweep import THRESHOLDS, median_sweep, sweep_points

FIT = RateFit(positives=100, negatives=100, flagged_positives=80, flagged_negatives=10)


def test_answers_sharing_a_claim_text_are_one_cluster() -> None:
    ids = cluster_ids([["A is B.", "C is D."], ["e is f."], ["a  is b."], ["G."]])
    assert ids[0] == [ids[0][0]] * 2
    assert ids[2][0] == ids[0][0]  # the same text, blind to case and spacing
    assert len({ids[1][0], ids[3][0], ids[0][0]}) == 3


def test_the_design_effect_grows_with_claims_flagged_together() -> None:
    independent = flag_clusters(list(range(100)), [n % 2 == 0 for n in range(100)])
    assert design_effect(independent) == pytest.approx(1.0, abs=0.02)
    # 20 answers of 5 claims, flagged all or none: five claims tell what one does.
    together = flag_clusters([n // 5 for n in range(100)], [(n // 5) % 2 == 0 for n in range(100)])
    assert design_effect(together) == pytest.approx(5.0 * 20 / 19, rel=0.01)
    assert design_effect([(3, 3)]) == 1.0 and design_effect([(0, 4), (0, 2)]) == 1.0


def test_the_closed_form_is_the_adjusted_count_of_independent_claims() -> None:
    tpr, fpr = smoothed_rate(80, 100), smoothed_rate(10, 100)
    estimate = closed_form(1000, 300, FIT)
    assert estimate.adjusted == pytest.approx((0.3 - fpr) / (tpr - fpr))
    assert estimate == adjusted_count(1000, 300, FIT)
    assert estimate.low is not None and estimate.high is not None
    assert estimate.low < estimate.adjusted < estimate.high


def test_design_effects_widen_the_interval_not_the_estimate() -> None:
    plain = adjusted_count(1000, 300, FIT)
    clustered = adjusted_count(1000, 300, FIT, design=DesignEffects(4.0, 3.0, 3.0))
    assert clustered.adjusted == plain.adjusted
    assert clustered.low is not None and plain.low is not None
    assert clustered.high is not None and plain.high is not None
    assert clustered.high - clustered.low > 1.5 * (plain.high - plain.low)


def test_the_sweep_reads_every_threshold_and_takes_the_median() -> None:
    # A checker whose P(entailment) separates perfectly at 0.5: every cut from 0.25 to 0.75
    # counts the traffic's unsupported share exactly; the others are left out or outvoted.
    positives, negatives = [0.2] * 50, [0.8] * 50
    points = sweep_points(positives, negatives)
    assert [p.threshold for p in points] == list(THRESHOLDS)
    fit = RateFit(
        positives=50, negatives=50, flagged_positives=40, flagged_negatives=20, sweep=points
    )
    traffic = [0.2] * 300 + [0.8] * 700
    estimate = median_sweep(1000, 450, traffic, fit)
    assert estimate.raw == 0.45  # the pipeline's own flags, whatever the sweep says
    assert estimate.adjusted == pytest.approx(0.3, abs=0.01)
    assert estimate.low is not None and estimate.high is not None
    assert estimate.low <= 0.3 <= estimate.high
    # Without a sweep (the contradiction rate): the adjusted count of the pipeline's flags.
    single = median_sweep(1000, 450, traffic, fit.model_copy(update={"sweep": ()}))
    assert single == adjusted_count(1000, 450, fit)


def test_no_labels_of_a_kind_leaves_the_rate_unestimated() -> None:
    fit = RateFit(positives=0, negatives=40, flagged_positives=0, flagged_negatives=3)
    estimate = median_sweep(100, 10, [0.9] * 100, fit)
    assert estimate.raw == 0.1 and estimate.adjusted is None and estimate.labels == 40
    assert median_sweep(0, 0, [], FIT).raw is None
