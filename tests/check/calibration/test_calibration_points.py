"""`check.calibration`: how decision points relabel verdicts, and the file that carries them."""

from __future__ import annotations

from pathlib import Path

import pytest
from calibrations import calibration_for, embedded_identity

from refcheck_callbacks.check.calibration.file import (
    load_calibration,
    write_calibration,
)
from refcheck_callbacks.check.calibration.points import DecisionPoints, relabel
from refcheck_callbacks.errors import CalibrationError, CalibrationMismatchError, RefCheckError
from refcheck_callbacks.types import CharSpan, ConflictKind, Evidence, Label, Verdict


def _verdict(label: Label, entailment: float, contradiction: float = 0.0) -> Verdict:
    probabilities = {
        Label.ENTAILMENT: entailment,
        Label.NEUTRAL: 1.0 - entailment - contradiction,
        Label.CONTRADICTION: contradiction,
    }
    return Verdict(
        label=label,
        confidence=probabilities[label],
        probabilities=probabilities,
        evidence=[Evidence(reference_index=0, span=CharSpan(start=0, end=4), probability=0.5)],
        conflict=ConflictKind.VALUE if label is Label.CONTRADICTION else None,
    )


def test_the_support_threshold_moves_from_the_checkers_own() -> None:
    raised = DecisionPoints(support_threshold=0.6)
    assert relabel(_verdict(Label.ENTAILMENT, 0.55), raised, 0.5).label is Label.NEUTRAL
    assert relabel(_verdict(Label.ENTAILMENT, 0.7), raised, 0.5).label is Label.ENTAILMENT
    lowered = DecisionPoints(support_threshold=0.4)
    taken_in = relabel(_verdict(Label.NEUTRAL, 0.45), lowered, 0.5)
    assert taken_in.label is Label.ENTAILMENT
    # The calibrated threshold lands on 1/2: 0.45 is a twelfth of the way from 0.4 to 1.
    assert taken_in.confidence == pytest.approx(0.5 + 0.5 * 0.05 / 0.6)
    assert taken_in.evidence[0].probability == pytest.approx(taken_in.confidence)
    assert relabel(_verdict(Label.NEUTRAL, 0.3), lowered, 0.5).confidence == pytest.approx(
        1 - 0.5 * 0.3 / 0.4
    )
    # Neutral at the checker's own threshold: the checker vetoed it, unless vetoes go.
    assert relabel(_verdict(Label.NEUTRAL, 0.5), lowered, 0.5).label is Label.NEUTRAL
    overruled = lowered.model_copy(update={"keep_vetoes": False})
    assert relabel(_verdict(Label.NEUTRAL, 0.5), overruled, 0.5).label is Label.ENTAILMENT
    for label, entailment in ((Label.NEUTRAL, 0.5), (Label.ENTAILMENT, 0.5), (Label.NEUTRAL, 0.3)):
        verdict = _verdict(label, entailment)
        assert relabel(verdict, DecisionPoints(support_threshold=0.5), 0.5) is verdict


def test_a_contradiction_stays_only_of_a_counted_kind_and_sure_enough() -> None:
    conflict = _verdict(Label.CONTRADICTION, 0.2, 0.6)
    same = relabel(conflict, DecisionPoints(support_threshold=0.5), 0.5)
    assert same.label is Label.CONTRADICTION
    sure = DecisionPoints(support_threshold=0.5, min_contradiction=0.7)
    dropped = relabel(conflict, sure, 0.5)
    assert (dropped.label, dropped.conflict) == (Label.NEUTRAL, None)
    no_values = DecisionPoints(support_threshold=0.1, conflict_kinds=(ConflictKind.DATE,))
    # Not counted: unsupported still, even above the threshold; P(entailment) mapped onto the
    # calibrated scale (0.2 at threshold 0.1 is above 1/2), held at 1/2: a conflict was found.
    demoted = relabel(conflict, no_values, 0.5)
    assert (demoted.label, demoted.conflict) == (Label.NEUTRAL, None)
    assert demoted.probabilities is not None
    assert demoted.probabilities[Label.ENTAILMENT] == pytest.approx(0.5)
    below = relabel(conflict, DecisionPoints(support_threshold=0.8, min_contradiction=0.7), 0.5)
    assert below.probabilities is not None
    assert below.probabilities[Label.ENTAILMENT] == pytest.approx(0.5 * 0.2 / 0.8)


def test_a_failed_claim_keeps_no_label() -> None:
    failed = Verdict(label=None, error="boom")
    assert relabel(failed, DecisionPoints(support_threshold=0.0), 0.5) is failed


def test_the_file_round_trips_and_refuses_another_checker(tmp_path: Path) -> None:
    identity = embedded_identity()
    assert identity.fingerprint and identity.conflict == "stated-facts"
    path = tmp_path / "calibration.json"
    write_calibration(calibration_for(identity, DecisionPoints(support_threshold=0.4)), path)
    loaded = load_calibration(path)
    assert loaded.points.support_threshold == 0.4
    loaded.verify(identity)
    other = identity.model_copy(update={"fingerprint": "0123456789abcdef"})
    with pytest.raises(CalibrationMismatchError) as refused:
        loaded.verify(other)
    assert isinstance(refused.value, RefCheckError)
    assert str(path) in str(refused.value) and "0123456789abcdef" in str(refused.value)
    without_stage = identity.model_copy(update={"conflict": None})
    with pytest.raises(CalibrationMismatchError, match="conflict stage 'none'"):
        loaded.verify(without_stage)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("not json", "not a calibration"),
        ('{"format": 2}', "format"),
        ("[]", "not a calibration"),
    ],
)
def test_a_bad_file_is_a_calibration_error_naming_it(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CalibrationError, match=says) as error:
        load_calibration(path)
    assert str(path) in str(error.value)
    with pytest.raises(CalibrationError, match="cannot read"):
        load_calibration(tmp_path / "absent.json")
