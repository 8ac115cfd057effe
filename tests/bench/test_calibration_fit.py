"""`bench.calibration_fit`: the decision points it chooses, and honest held-out figures."""

from __future__ import annotations

import random

import pytest

from refcheck_callbacks.bench.calibration_fit import (
    Scored,
    cross_validate,
    fit_points,
    folds_by_group,
)
from refcheck_callbacks.check.calibration.points import DecisionPoints
from refcheck_callbacks.types import ConflictKind, Label, Verdict


def _verdict(entailment: float, conflict: ConflictKind | None = None) -> Verdict:
    if conflict is None:
        label = Label.ENTAILMENT if entailment >= 0.5 else Label.NEUTRAL
        probabilities = {
            Label.ENTAILMENT: entailment,
            Label.NEUTRAL: 1 - entailment,
            Label.CONTRADICTION: 0.0,
        }
        return Verdict(label=label, confidence=probabilities[label], probabilities=probabilities)
    entailment = min(entailment, 0.45)  # a conflict keeps P(entailment) under its cap
    probabilities = {
        Label.ENTAILMENT: entailment,
        Label.NEUTRAL: 0.1 * (1 - entailment),
        Label.CONTRADICTION: 0.9 * (1 - entailment),
    }
    return Verdict(
        label=Label.CONTRADICTION,
        confidence=probabilities[Label.CONTRADICTION],
        probabilities=probabilities,
        conflict=conflict,
    )


def _rows(seed: int = 0) -> list[Scored]:
    """Supported claims score about 0.75, unsupported about 0.55: the checker's 0.5 is too low.
    Value conflicts fall on supported claims (a domain that rounds figures), date conflicts
    on unsupported ones."""
    rng = random.Random(seed)
    rows = []
    for index in range(400):
        supported = index % 2 == 0
        score = rng.gauss(0.75 if supported else 0.55, 0.05)
        conflict = None
        if index % 10 == 0:
            conflict = ConflictKind.VALUE
        elif index % 10 == 1:
            conflict = ConflictKind.DATE
        rows.append(Scored(f"r{index // 4}", supported, _verdict(score, conflict)))
    return rows


def test_the_fit_moves_the_threshold_and_drops_the_kind_that_misfires() -> None:
    points = fit_points(_rows(), DecisionPoints(support_threshold=0.5), 0.01)
    assert 0.6 < points.support_threshold < 0.7
    assert ConflictKind.VALUE not in points.conflict_kinds
    assert ConflictKind.DATE in points.conflict_kinds
    # Kinds never seen stay counted: no data says to drop them.
    assert ConflictKind.ENTITY in points.conflict_kinds


def test_vetoes_are_dropped_only_where_they_misfire() -> None:
    """Neutral above the checker's own 0.5 (vetoed) on supported claims: worth overruling;
    on unsupported claims: worth keeping."""
    rows = _rows()
    points = fit_points(rows, DecisionPoints(support_threshold=0.5), 0.01)
    assert points.keep_vetoes
    vetoed = [
        Scored(row.group, row.supported, row.verdict.model_copy(update={"label": Label.NEUTRAL}))
        if row.supported and row.verdict.label is Label.ENTAILMENT and index % 3 == 0
        else row
        for index, row in enumerate(rows)
    ]
    assert not fit_points(vetoed, DecisionPoints(support_threshold=0.5), 0.01).keep_vetoes


def test_cross_validated_figures_improve_on_held_out_folds() -> None:
    checked = cross_validate(_rows(), DecisionPoints(support_threshold=0.5), 0.01, folds=5)
    assert checked is not None and checked.folds == 5
    assert checked.before.false_contradiction_rate == pytest.approx(0.2)
    assert checked.after.false_contradiction_rate == 0.0
    assert checked.after.balanced_accuracy > checked.before.balanced_accuracy + 0.2
    # Within a fold the ranking is kept; each fold maps its own threshold onto 1/2.
    assert checked.after.auroc == pytest.approx(checked.before.auroc, abs=0.005)
    assert checked.after.unsupported.contradiction == 40  # the date conflicts stay


def test_folds_never_split_a_response() -> None:
    rows = _rows()
    fold = folds_by_group(rows, 5, seed=3)
    by_group: dict[str, set[int]] = {}
    for row, f in zip(rows, fold, strict=True):
        by_group.setdefault(row.group, set()).add(f)
    assert all(len(folds) == 1 for folds in by_group.values())
    assert set(fold) == set(range(5))


def test_one_class_cannot_be_calibrated() -> None:
    supported = [row for row in _rows() if row.supported]
    with pytest.raises(ValueError, match="all supported"):
        fit_points(supported, DecisionPoints(support_threshold=0.5), 0.01)
    one_response = supported[:2]
    assert cross_validate(one_response, DecisionPoints(support_threshold=0.5), 0.01) is None
