"""`refcheck bench` reports the estimated hallucination rate beside its other figures: a real
run on BEGIN with the embedded checker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from refcheck_callbacks.bench.datasets import load_dataset
from refcheck_callbacks.cli.main import main


@pytest.mark.labelled_data("begin")
def test_bench_reports_the_estimated_rate_next_to_the_raw_one(tmp_path: Path) -> None:
    assert (
        main(["bench", "--dataset", "begin", "--output-dir", str(tmp_path), "--no-progress"]) == 0
    )
    [scores] = json.loads((tmp_path / "bench.json").read_text())["datasets"][0]["checkers"]
    rates = scores["rates"]
    examples = load_dataset("begin")
    assert rates["audit_labels"] >= 200
    assert rates["claims"] == len(examples) - rates["audit_labels"]
    unsupported = sum(not e.supported for e in examples)
    assert 0.5 < rates["true"] < 0.9 and abs(rates["true"] - unsupported / len(examples)) < 0.05
    assert rates["low"] <= rates["adjusted"] <= rates["high"]
    assert rates["low"] <= rates["true"] <= rates["high"]
    assert abs(rates["adjusted"] - rates["true"]) < abs(rates["raw"] - rates["true"])
    markdown = (tmp_path / "bench.md").read_text()
    assert f"| begin | embedded | {rates['audit_labels']} | {rates['claims']} |" in markdown
