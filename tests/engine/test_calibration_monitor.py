"""`RefCheckMonitor(calibration=...)`: the app's decision points applied wherever it checks,
and a calibration for another checker refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from calibrations import calibration_for, embedded_identity

from refcheck_callbacks import Label, Outcome, Placement, RefCheckMonitor
from refcheck_callbacks.check.calibration.file import write_calibration
from refcheck_callbacks.check.calibration.points import DecisionPoints
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.errors import CalibrationError, CalibrationMismatchError

REFERENCE = "The Eiffel Tower is 330 metres tall. It was completed in 1889."
ANSWER = "The Eiffel Tower is 330 metres tall."


def _support(monitor: RefCheckMonitor) -> tuple[Label | None, float]:
    result = monitor.check(answer=ANSWER, references=[REFERENCE])
    assert result.outcome is Outcome.CHECKED, result.message
    verdict = result.verdicts[0]
    assert verdict.probabilities is not None
    return verdict.label, verdict.probabilities[Label.ENTAILMENT]


def test_a_threshold_above_the_claims_support_flips_it_to_neutral() -> None:
    with RefCheckMonitor(checker=EmbeddedChecker, placement="thread", exporters=[]) as monitor:
        label, entailment = _support(monitor)
    assert label is Label.ENTAILMENT
    # P(entailment) is mapped so that the calibrated threshold lands on 1/2 (`check.scores`).
    for threshold, expected in ((entailment + 0.01, Label.NEUTRAL), (entailment, label)):
        threshold = min(1.0, threshold)
        calibration = calibration_for(
            embedded_identity(), DecisionPoints(support_threshold=threshold)
        )
        with RefCheckMonitor(
            checker=EmbeddedChecker, placement="thread", exporters=[], calibration=calibration
        ) as monitor:
            mapped = 0.5 * entailment / threshold if entailment < threshold else 0.5
            assert _support(monitor) == (expected, pytest.approx(mapped))


def test_a_calibration_for_other_parameters_is_refused_at_once(tmp_path: Path) -> None:
    other = embedded_identity().model_copy(update={"fingerprint": "0123456789abcdef"})
    path = tmp_path / "calibration.json"
    write_calibration(calibration_for(other, DecisionPoints(support_threshold=0.5)), path)
    with pytest.raises(CalibrationMismatchError, match=str(path)):
        RefCheckMonitor(checker=EmbeddedChecker, placement="thread", calibration=path)
    with pytest.raises(CalibrationMismatchError, match="conflict stage 'none'"):
        RefCheckMonitor(
            checker=EmbeddedChecker,
            placement="thread",
            conflict=None,
            calibration=calibration_for(embedded_identity(), DecisionPoints(support_threshold=0.5)),
        )
    path.write_text('{"points": {}}', encoding="utf-8")
    with pytest.raises(CalibrationError, match="not a calibration"):
        RefCheckMonitor(checker=EmbeddedChecker, placement="thread", calibration=path)


@pytest.mark.slow
def test_the_calibration_travels_to_the_checking_process(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    write_calibration(
        calibration_for(embedded_identity(), DecisionPoints(support_threshold=1.0)), path
    )
    with RefCheckMonitor(placement="process", exporters=[], calibration=path) as monitor:
        result = monitor.check(answer=ANSWER, references=[REFERENCE])
    assert result.placement is Placement.PROCESS
    assert result.outcome is Outcome.CHECKED, result.message
    assert result.verdicts[0].label is Label.NEUTRAL

    other = embedded_identity().model_copy(update={"name": "another"})
    write_calibration(calibration_for(other, DecisionPoints(support_threshold=1.0)), path)
    with RefCheckMonitor(placement="process", exporters=[], calibration=path) as monitor:
        refused = monitor.check(answer=ANSWER, references=[REFERENCE])
    assert refused.outcome is Outcome.ERROR
    assert refused.error_type == CalibrationMismatchError.__name__
    assert "fitted for checker 'another'" in (refused.message or "")
