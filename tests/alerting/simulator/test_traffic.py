"""Label rates from a bench report, and the claim counters a service with them would export."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from bench_reports import write_bench_json

from refcheck_callbacks.alerting.simulator.traffic import (
    LabelRates,
    Traffic,
    counters,
    rates_from_bench,
)

RATES = LabelRates(name="set", supported=(0.7, 0.2, 0.1), unsupported=(0.2, 0.5, 0.3))


def test_rates_come_from_the_bench_reports_label_counts(tmp_path: Path) -> None:
    path = write_bench_json(
        tmp_path / "bench.json", {"low": ((96, 1, 3), (20, 50, 30)), "high": ((5, 0, 5), (1, 1, 8))}
    )
    low, high = rates_from_bench(path)
    assert low.name == "low" and high.name == "high"
    assert low.supported == pytest.approx((0.96, 0.01, 0.03))
    assert low.unsupported == pytest.approx((0.2, 0.5, 0.3))
    # A fifth of the claims unsupported: 80% of the one mix and 20% of the other.
    assert low.hallucination_share(0.0) == pytest.approx(0.04)
    assert low.hallucination_share(0.2) == pytest.approx(0.8 * 0.04 + 0.2 * 0.8)
    assert high.contradiction_share(0.2) == pytest.approx(0.8 * 0.5 + 0.2 * 0.8)


def test_a_bench_report_without_label_counts_says_to_run_bench_again(tmp_path: Path) -> None:
    path = write_bench_json(tmp_path / "bench.json", {"old": ((9, 0, 1), (1, 5, 4))})
    report = json.loads(path.read_text())
    del report["datasets"][0]["checkers"][0]["binary"]["predicted_labels"]
    path.write_text(json.dumps(report))
    with pytest.raises(ValueError, match="run `refcheck bench` again"):
        rates_from_bench(path)
    (tmp_path / "other.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"not a bench\.json"):
        rates_from_bench(tmp_path / "other.json")


def test_a_mix_must_be_shares() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        LabelRates(name="bad", supported=(0.5, 0.2, 0.2), unsupported=(0.2, 0.5, 0.3))


def test_counters_are_cumulative_per_verdict_and_the_same_for_a_seed() -> None:
    traffic = Traffic(RATES, 20.0, clean_minutes=60, shifted_minutes=30)
    counts = counters(traffic, 3)
    assert counts.shape == (91, 3) and counts.dtype == np.int64
    assert (counts[0] == 0).all() and (np.diff(counts, axis=0) >= 0).all()
    assert (counters(traffic, 3) == counts).all()
    assert not (counters(traffic, 4) == counts).all()
    other = Traffic(RATES.model_copy(update={"name": "other"}), 20.0, 60, 30)
    assert not (counters(other, 3) == counts).all()  # services of one simulation differ


def test_the_drawn_shares_are_the_rates_before_and_after_the_shift() -> None:
    clean_days = 3
    traffic = Traffic(RATES, 100.0, clean_minutes=clean_days * 1440, shifted_minutes=3 * 1440)
    counts = counters(traffic, 0)
    clean = counts[traffic.clean_minutes]
    shifted = counts[-1] - clean
    assert clean.sum() == pytest.approx(100 * traffic.clean_minutes, rel=0.01)
    assert (clean[1] + clean[2]) / clean.sum() == pytest.approx(0.3, abs=0.005)
    assert (shifted[1] + shifted[2]) / shifted.sum() == pytest.approx(
        RATES.hallucination_share(0.2), abs=0.005
    )
    assert shifted[2] / shifted.sum() == pytest.approx(RATES.contradiction_share(0.2), abs=0.005)
