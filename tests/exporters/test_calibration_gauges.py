"""The monitor exports its calibration's flag counts as gauges and names it on the claim counts
(issue 44), read back from the real OpenTelemetry SDK; an uncalibrated monitor says so with a
label count of 0."""

from __future__ import annotations

from typing import Any

from calibrations import calibration_for
from scripted_checkers import KeywordChecker
from telemetry import Telemetry

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.check.calibration.file import Calibration, identity_of
from refcheck_callbacks.check.calibration.points import defaults_of
from refcheck_callbacks.check.calibration.rates import RateFit, RateName
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.exporters import names

HALLUCINATION = RateFit(positives=60, negatives=140, flagged_positives=51, flagged_negatives=35)
CONTRADICTION = RateFit(positives=12, negatives=188, flagged_positives=7, flagged_negatives=4)
GAUGES = {
    names.CALIBRATION_POSITIVES: "positives",
    names.CALIBRATION_NEGATIVES: "negatives",
    names.CALIBRATION_FLAGGED_POSITIVES: "flagged_positives",
    names.CALIBRATION_FLAGGED_NEGATIVES: "flagged_negatives",
}


def _calibration(rates: dict[RateName, RateFit]) -> Calibration:
    calibration = calibration_for(
        identity_of(KeywordChecker(), None), defaults_of(EmbeddedChecker())
    )
    return calibration.model_copy(update={"rates": rates})


def _monitor(telemetry: Telemetry, calibration: Calibration | None) -> RefCheckMonitor:
    return RefCheckMonitor(
        checker=KeywordChecker(),
        conflict=None,
        placement="thread",
        exporters=[telemetry.exporter()],
        calibration=calibration,
    )


def _values(telemetry: Telemetry, name: str) -> dict[frozenset[tuple[str, Any]], Any]:
    return {key: point.value for key, point in telemetry.points(name).items()}


def _key(rate: RateName, calibration_id: str | None = None) -> frozenset[tuple[str, Any]]:
    attributes = {names.RATE: rate.value}
    if calibration_id is not None:
        attributes[names.CALIBRATION_ID] = calibration_id
    return frozenset(attributes.items())


def test_a_calibrated_monitor_exports_each_rates_flag_counts_and_names_it_on_claims(
    telemetry: Telemetry,
) -> None:
    calibration = _calibration(
        {RateName.HALLUCINATION: HALLUCINATION, RateName.CONTRADICTION: CONTRADICTION}
    )
    with _monitor(telemetry, calibration) as monitor:
        result = monitor.check(
            answer="Paris is supported. Lyon is contradicted. Nice is unknowable.",
            references=["Paris is the capital."],
        )
        assert [v.label and v.label.value for v in result.verdicts] == [
            "entailment",
            "contradiction",
            None,
        ]
        assert monitor.flush(10)
        for name, field in GAUGES.items():
            assert _values(telemetry, name) == {
                _key(RateName.HALLUCINATION, calibration.id): getattr(HALLUCINATION, field),
                _key(RateName.CONTRADICTION, calibration.id): getattr(CONTRADICTION, field),
            }, name
        assert _values(telemetry, names.CALIBRATION_LABELS) == {
            _key(RateName.HALLUCINATION, calibration.id): 200,
            _key(RateName.CONTRADICTION, calibration.id): 200,
        }
        claims = telemetry.points(names.CLAIMS)
        by_verdict = {dict(key)[names.VERDICT]: dict(key) for key in claims}
        assert set(by_verdict) == {"entailment", "contradiction", "error"}
        assert all(key[names.CALIBRATION_ID] == calibration.id for key in by_verdict.values())
    # Shut down: the monitor's calibration is no longer reported.
    assert names.CALIBRATION_POSITIVES not in telemetry.metrics() or not _values(
        telemetry, names.CALIBRATION_POSITIVES
    )


def test_an_uncalibrated_monitor_reports_zero_labels_and_no_calibration_id(
    telemetry: Telemetry,
) -> None:
    with _monitor(telemetry, None) as monitor:
        monitor.check(answer="Paris is supported.", references=["Paris."])
        assert monitor.flush(10)
        assert _values(telemetry, names.CALIBRATION_LABELS) == {
            _key(RateName.HALLUCINATION): 0,
            _key(RateName.CONTRADICTION): 0,
        }
        metrics = telemetry.metrics()
        assert all(name not in metrics for name in GAUGES)
        [claims] = telemetry.points(names.CLAIMS)
        assert names.CALIBRATION_ID not in dict(claims)


def test_a_calibration_without_a_rates_fit_reports_that_rate_as_unlabelled(
    telemetry: Telemetry,
) -> None:
    calibration = _calibration({RateName.HALLUCINATION: HALLUCINATION})
    with _monitor(telemetry, calibration), _monitor(telemetry, calibration):
        # Two monitors with one calibration on one provider: one value per series, not two.
        assert _values(telemetry, names.CALIBRATION_LABELS) == {
            _key(RateName.HALLUCINATION, calibration.id): 200,
            _key(RateName.CONTRADICTION, calibration.id): 0,
        }
        assert _values(telemetry, names.CALIBRATION_POSITIVES) == {
            _key(RateName.HALLUCINATION, calibration.id): 60
        }
