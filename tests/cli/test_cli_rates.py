"""`refcheck calibrate` on an audit file, `refcheck check` on traffic, `refcheck rates` on the
result: real CLI runs with the embedded checker on BEGIN claims (real labels), and the
outcomes of bad input."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from refcheck_callbacks.bench.datasets import LabelledExample, load_dataset
from refcheck_callbacks.check.calibration.file import load_calibration
from refcheck_callbacks.check.calibration.rates import RateName
from refcheck_callbacks.cli.main import main

pytestmark = pytest.mark.labelled_data("begin")
TRUE_RATE = 0.3


def _audit_record(example: LabelledExample, number: int, label: str | None) -> dict[str, Any]:
    """One answer as the monitor's audit writes it (docs/rates.md), labelled by a person."""
    return {
        "audit": True,
        "request_id": f"req-{number}",
        "response_id": example.response_id,
        "question": None,
        "response": example.claim,
        "references": [{"id": None, "text": text} for text in example.references],
        "claims": [example.claim],
        "labels": [label],
        "predicted": [None],
        "probabilities": [None],
        "evidence": [None],
        "checker": "embedded",
        "calibration": None,
        "drawn_at": f"2026-12-01T00:{number // 60:02d}:{number % 60:02d}Z",
        "labelled_at": None if label is None else f"2026-12-02T00:{number // 60:02d}:00Z",
    }


@pytest.fixture(scope="module")
def begin() -> tuple[list[LabelledExample], list[LabelledExample]]:
    """220 shuffled BEGIN claims for the audit, the others for the traffic."""
    examples = load_dataset("begin")
    random.Random(7).shuffle(examples)
    return examples[:220], examples[220:]


def _write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _audit_file(tmp_path: Path, audit: list[LabelledExample]) -> Path:
    records = []
    for number, example in enumerate(audit):
        # Every 11th claim skipped by the reviewer (null): not a label.
        label = None if number % 11 == 0 else "Entailment" if example.supported else "Neutral"
        records.append(_audit_record(example, number, label))
    # Feedback a user gave where they saw a problem: labelled, but not a random sample.
    feedback = {**_audit_record(audit[0], 999, "Neutral"), "audit": False}
    return _write_lines(tmp_path / "audit.jsonl", [*records, feedback] * 1)


def _traffic(tmp_path: Path, pool: list[LabelledExample], claims: int = 150) -> Path:
    unsupported = [e for e in pool if not e.supported][: round(TRUE_RATE * claims)]
    supported = [e for e in pool if e.supported][: claims - len(unsupported)]
    records = [
        {"response": e.claim, "reference": e.references, "claims": [e.claim]}
        for e in unsupported + supported
    ]
    return _write_lines(tmp_path / "traffic.jsonl", records)


def _rates(
    capsys: pytest.CaptureFixture[str], checked: Path, calibration: Path
) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    status = main(["rates", "--input", str(checked), "--calibration", str(calibration)])
    out = capsys.readouterr()
    return status, json.loads(out.out) if out.out.strip() else {}, out.err


def test_calibrate_check_rates_estimates_the_traffics_rate(
    begin: tuple[list[LabelledExample], list[LabelledExample]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    audit, pool = begin
    calibration = tmp_path / "calibration.json"
    audit_file = _audit_file(tmp_path, audit)
    assert main(["calibrate", "--input", str(audit_file), "--output", str(calibration)]) == 0
    fitted = load_calibration(calibration)
    hallucination = fitted.rates[RateName.HALLUCINATION]
    labelled = sum(1 for n in range(len(audit)) if n % 11)  # the feedback line is not counted
    assert hallucination.labels == labelled == 200
    assert hallucination.positives == sum(not e.supported for n, e in enumerate(audit) if n % 11)
    assert len(hallucination.sweep) == 19
    # 3-way labels, but no claim labelled Contradiction: that rate stays uncalibrated.
    assert fitted.rates[RateName.CONTRADICTION].positives == 0

    checked = tmp_path / "checked.jsonl"
    args = ["check", "--input", str(_traffic(tmp_path, pool)), "--output", str(checked)]
    assert main([*args, "--calibration", str(calibration), "--no-progress"]) == 0
    status, figures, err = _rates(capsys, checked, calibration)
    assert status == 0
    rate = figures["hallucination"]
    assert rate["claims"] == 150 and rate["labels"] == 200
    assert rate["low"] <= TRUE_RATE <= rate["high"]
    # 150 claims of traffic: its own sampling moves the flagged share by about 4 points.
    assert abs(rate["adjusted"] - TRUE_RATE) < 0.1
    assert rate["high"] - rate["low"] < 0.3
    contradiction = figures["contradiction"]
    assert contradiction["adjusted"] is None and contradiction["low"] is None
    assert "contradiction rate uncalibrated: 1 more labels needed" in err
    assert figures["calibration"] == fitted.id


def test_the_window_keeps_the_latest_audit_labels(
    begin: tuple[list[LabelledExample], list[LabelledExample]], tmp_path: Path
) -> None:
    audit, _ = begin
    calibration = tmp_path / "calibration.json"
    args = ["calibrate", "--input", str(_audit_file(tmp_path, audit)), "--output"]
    assert main([*args, str(calibration), "--audit-window", "50"]) == 0
    fit = load_calibration(calibration).rates[RateName.HALLUCINATION]
    latest = [e for n, e in enumerate(audit) if n % 11][-50:]  # labelled_at grows with n
    assert fit.labels == 50
    assert fit.positives == sum(not e.supported for e in latest)
    assert main([*args, str(calibration), "--audit-window", "0"]) == 2


def test_without_audit_labels_the_rates_say_how_many_are_needed(
    begin: tuple[list[LabelledExample], list[LabelledExample]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    audit, pool = begin
    records = [
        {**_audit_record(e, n, "Entailment" if e.supported else "Neutral"), "audit": False}
        for n, e in enumerate(audit[:60])
    ]
    calibration = tmp_path / "calibration.json"
    labelled = _write_lines(tmp_path / "feedback.jsonl", records)
    assert main(["calibrate", "--input", str(labelled), "--output", str(calibration)]) == 0
    assert load_calibration(calibration).rates == {}
    checked = tmp_path / "checked.jsonl"
    args = ["check", "--input", str(_traffic(tmp_path, pool, 20)), "--output", str(checked)]
    assert main([*args, "--no-progress"]) == 0
    status, figures, err = _rates(capsys, checked, calibration)
    assert status == 0
    assert figures["hallucination"]["claims"] == 20
    assert figures["hallucination"]["raw"] is not None
    assert figures["hallucination"]["adjusted"] is None and figures["hallucination"]["labels"] == 0
    assert "hallucination rate uncalibrated: 200 more labels needed" in err


def test_bad_input_gets_a_clear_message(
    begin: tuple[list[LabelledExample], list[LabelledExample]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    audit, pool = begin
    calibration = tmp_path / "calibration.json"
    audit_file = _audit_file(tmp_path, audit)
    assert main(["calibrate", "--input", str(audit_file), "--output", str(calibration)]) == 0
    checked = tmp_path / "checked.jsonl"
    args = ["check", "--input", str(_traffic(tmp_path, pool, 30)), "--output", str(checked)]
    assert main([*args, "--no-progress"]) == 0
    good = checked.read_bytes()

    # A line that is not JSON, one not UTF-8, one not checked: reported, the rest estimated.
    checked.write_bytes(good + b"{not json\n" + b'{"x": "\xff"}\n' + b'{"response": "r"}\n')
    status, figures, err = _rates(capsys, checked, calibration)
    assert status == 3 and figures["hallucination"]["claims"] == 30
    assert "is not valid JSON" in err and "not valid UTF-8" in err
    assert "no `refcheck.claims` list" in err

    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    status, figures, err = _rates(capsys, empty, calibration)
    assert status == 1 and figures == {} and "no checked record could be read" in err

    status, _, err = _rates(capsys, tmp_path / "missing.jsonl", calibration)
    assert status == 2 and "input file not found" in err
    status, _, err = _rates(capsys, checked, audit_file)
    assert status == 2 and "is not a calibration" in err
