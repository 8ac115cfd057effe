"""`refcheck calibrate` on a small labelled file with the real embedded checker, and
`refcheck check --calibration` applying (or refusing) what it wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from refcheck_callbacks import Outcome, RefCheckMonitor
from refcheck_callbacks.check.calibration.file import load_calibration
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.cli.main import main

TOWER = (
    "The Eiffel Tower is 330 metres tall. It was completed in 1889 for the World's Fair. "
    "Gustave Eiffel's company designed and built the tower."
)
BRIDGE = (
    "The Golden Gate Bridge opened in 1937. Its main span is 1,280 metres long. "
    "It connects San Francisco to Marin County."
)
LIBRARY = (
    "The library holds two million books. It was founded in 1602 by Thomas Bodley. "
    "Readers may not take books out of the building."
)
SUPPORTED = {
    TOWER: ["The Eiffel Tower is 330 metres tall.", "It was completed in 1889."],
    BRIDGE: ["The Golden Gate Bridge opened in 1937.", "It connects San Francisco to Marin."],
    LIBRARY: ["The library holds two million books.", "It was founded by Thomas Bodley."],
}
UNSUPPORTED = {
    TOWER: ["The tower is painted red every year.", "The Eiffel Tower is 500 metres tall."],
    BRIDGE: ["The bridge was designed by a team of Italian engineers.", "It opened in 1950."],
    LIBRARY: ["The library has a famous rooftop cafe.", "It was founded in 1850."],
}


def _records() -> list[dict[str, Any]]:
    records = []
    for number in range(2):  # each topic twice: enough responses for folds
        for reference, claims in SUPPORTED.items():
            wrong = UNSUPPORTED[reference]
            records.append(
                {
                    "response_id": f"{reference[:10]}-{number}",
                    "references": [{"id": "doc", "text": reference}],
                    "claims": [claims[number], wrong[number]],
                    "labels": ["Entailment", "Contradiction" if number else False],
                }
            )
    return records


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    path = tmp_path / "labelled.jsonl"
    lines = [json.dumps(record) for record in _records()]
    lines.insert(2, '{"claims": ["x"], "labels": ["Entailment"]')  # broken JSON on line 3
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_calibrate_writes_a_calibration_for_the_embedded_checker(
    labelled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "calibration.json"
    status = main(["calibrate", "--input", str(labelled), "--output", str(output), "--folds", "3"])
    captured = capsys.readouterr()
    assert status == 3, captured.err  # one record skipped
    assert f"{labelled}, line 3: not JSON" in captured.err
    calibration = load_calibration(output)
    assert calibration.checker.name == "embedded"
    assert calibration.checker.fingerprint == EmbeddedChecker().fingerprint
    assert calibration.checker.conflict == "stated-facts"
    assert calibration.defaults.support_threshold == pytest.approx(
        EmbeddedChecker().support_threshold
    )
    data = calibration.data
    assert (data.records, data.skipped_records, data.claims) == (6, 1, 12)
    assert (data.supported, data.unsupported, data.responses) == (6, 6, 6)
    checked = calibration.cross_validated
    assert checked is not None and checked.folds == 3
    before = checked.before
    assert before.claims == 12
    assert (
        before.supported.entailment + before.supported.neutral + before.supported.contradiction == 6
    )
    # What the command wrote is what the default monitor runs: accepted as it is.
    with RefCheckMonitor(placement="thread", exporters=[], calibration=output) as monitor:
        assert monitor.check(answer=TOWER, references=[TOWER]).outcome is Outcome.CHECKED
    # The cross-validated confusion, before and after, is printed for a person.
    assert "balanced accuracy" in captured.out and "false-contradiction rate" in captured.out
    assert captured.out.count("supported") >= 4 and "after" in captured.out


def _claims_file(tmp_path: Path) -> Path:
    path = tmp_path / "claims.json"
    record = {
        "response": "x",
        "reference": TOWER,
        "claims": ["The Eiffel Tower is 330 metres tall."],
    }
    path.write_text(json.dumps([record]), encoding="utf-8")
    return path


def _labels(output: Path) -> list[str]:
    return [str(label) for record in json.loads(output.read_text()) for label in record["ys"]]


def test_check_applies_a_calibration_and_refuses_one_for_another_checker(
    labelled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fitted = tmp_path / "calibration.json"
    assert main(["calibrate", "--input", str(labelled), "--output", str(fitted)]) == 3
    claims, plain, calibrated = _claims_file(tmp_path), tmp_path / "a.json", tmp_path / "b.json"
    assert main(["check", "--input", str(claims), "--output", str(plain), "--no-progress"]) == 0
    assert _labels(plain) == ["Entailment"]
    strict = json.loads(fitted.read_text())
    strict["points"]["support_threshold"] = 1.0  # nothing is supported enough
    fitted.write_text(json.dumps(strict), encoding="utf-8")
    args = ["check", "--input", str(claims), "--output", str(calibrated), "--no-progress"]
    assert main([*args, "--calibration", str(fitted)]) == 0
    assert _labels(calibrated) == ["Neutral"]

    strict["checker"]["fingerprint"] = "0123456789abcdef"
    fitted.write_text(json.dumps(strict), encoding="utf-8")
    capsys.readouterr()
    assert main([*args, "--calibration", str(fitted)]) == 2
    error = capsys.readouterr().err
    assert "was fitted for checker 'embedded'" in error and "0123456789abcdef" in error
    fitted.write_text("{}", encoding="utf-8")
    assert main([*args, "--calibration", str(fitted)]) == 2
    assert "is not a calibration" in capsys.readouterr().err


def test_a_file_with_nothing_usable_fails_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('[1, 2\n{"claims": []}\n', encoding="utf-8")
    output = tmp_path / "calibration.json"
    assert main(["calibrate", "--input", str(bad), "--output", str(output)]) == 1
    err = capsys.readouterr().err
    assert "no labelled claim could be read" in err and "Traceback" not in err
    assert not output.exists()
    one_class = tmp_path / "one.jsonl"
    record = {"context": TOWER, "claims": ["It is 330 metres tall."], "labels": [True]}
    one_class.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert main(["calibrate", "--input", str(one_class), "--output", str(output)]) == 1
    assert "both supported and unsupported" in capsys.readouterr().err
    assert main(["calibrate", "--input", str(tmp_path / "absent"), "--output", str(output)]) == 2
