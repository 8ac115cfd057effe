"""Figures per set and volume, of the generated rules (promtool and replay) and of a rule file
the replay does not model (promtool alone), and the command that prints them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from bench_reports import write_bench_json

from refcheck_callbacks.alerting.share_rules import SHARE_ALERTS
from refcheck_callbacks.alerting.simulator.promtool import promtool_binary
from refcheck_callbacks.alerting.simulator.report import (
    Settings,
    detection_target,
    markdown,
    share_alerts,
    simulate,
)
from refcheck_callbacks.alerting.simulator.rule_tests import rule_tests_yaml
from refcheck_callbacks.alerting.simulator.traffic import LabelRates
from refcheck_callbacks.cli.main import main

SEPARATED = LabelRates(name="separated", supported=(0.96, 0.02, 0.02), unsupported=(0.1, 0.5, 0.4))
UNSEPARATED = LabelRates(name="flat", supported=(0.5, 0.1, 0.4), unsupported=(0.45, 0.1, 0.45))
FIXED_FLOOR = """\
groups:
  - name: old
    rules:
      - alert: ContradictionAboveTenPercent
        expr: |-
          sum by (job) (rate(refcheck_claims_total{refcheck_verdict="contradiction"}[10m]))
          / sum by (job) (rate(refcheck_claims_total[10m])) > 0.1
        for: 5m
        labels:
          severity: page
      - alert: RefCheckStalledChecker
        expr: vector(1)
"""


@pytest.mark.parametrize(
    ("volume", "rise", "minutes"),
    [(20, 0.05, 60), (100, 0.2, 60), (20, 0.04, None), (5, 0.1, 120), (5, 0.09, None)],
)
def test_the_issues_targets(volume: float, rise: float, minutes: int | None) -> None:
    assert detection_target(volume, rise) == minutes


def test_the_generated_rules_figures_promtool_and_replay() -> None:
    settings = Settings(volumes=(100.0,), days=1, seeds=4, promtool_days=0.3)
    separated, flat = simulate([SEPARATED, UNSEPARATED], settings)
    assert separated.target_minutes == 60 and flat.target_minutes is None
    quiet = dict.fromkeys(SHARE_ALERTS, 0)
    assert separated.promtool_pages == quiet
    assert separated.replay_pages_per_30_days == 0.0 and separated.replay_seeds == 4
    # A checker that contradicts 40% of supported claims looks like a broken launch until the
    # service has a baseline: the new-service alert pages once, while it onboards, and never
    # after (one page per 1-day service, 30 per 30 days).
    assert flat.promtool_pages == {**quiet, "RefCheckNewServiceContradiction": 1}
    assert flat.replay_pages_per_30_days == 30.0 and flat.replay_seeds_with_pages == 4
    assert separated.promtool_detected_after is not None and separated.promtool_detected_after < 60
    assert separated.replay_within_target == 1.0
    assert flat.replay_detected_median is None  # no rise to detect: not one of four fired
    table = markdown([separated, flat])
    assert table.count("\n| ") == 2 and "| separated | 100 |" in table and "> 180 min" in table


def test_calibrated_services_are_judged_on_their_adjusted_rate_promtool_and_replay() -> None:
    """The flat checker's onboarding page above is its raw share; calibrated on 200 audit
    labels, its adjusted rate is honest about not separating (an interval of [0, 1]), so it
    does not page; the separated checker's rises are as before."""
    settings = Settings(volumes=(100.0,), days=1, seeds=4, promtool_days=0.3, audit_labels=200)
    separated, flat = simulate([SEPARATED, UNSEPARATED], settings)
    quiet = dict.fromkeys(SHARE_ALERTS, 0)
    assert flat.promtool_pages == quiet and flat.replay_pages_per_30_days == 0.0
    assert separated.promtool_pages == quiet and separated.replay_pages_per_30_days == 0.0
    assert separated.promtool_detected_after is not None and separated.promtool_detected_after < 60


def test_a_rule_file_the_replay_does_not_model_is_measured_by_promtool(tmp_path: Path) -> None:
    rules = tmp_path / "old.yml"
    rules.write_text(FIXED_FLOOR)
    assert share_alerts(FIXED_FLOOR) == ["ContradictionAboveTenPercent"]
    settings = Settings(volumes=(20.0,), promtool_days=0.2)
    [cell] = simulate([UNSEPARATED], settings, rules=rules)  # 40% contradicted on clean traffic
    assert cell.promtool_pages == {"ContradictionAboveTenPercent": 1}
    assert cell.promtool_firing_at_shift and cell.promtool_firing_share is not None
    assert cell.promtool_firing_share > 0.95
    assert cell.replay_seeds == 0 and cell.replay_pages_per_30_days is None
    assert "already firing" in markdown([cell])


def test_the_command_prints_the_figures_and_writes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = write_bench_json(tmp_path / "bench.json", {"qa": ((96, 2, 2), (10, 50, 40))})
    args = ["alert-rules", "--simulate", str(bench), "--volume", "20", "--days", "1"]
    args += ["--seeds", "2", "--promtool-days", "0.2", "--json", str(tmp_path / "f.json")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("| set | claims/min |") and "| qa | 20 |" in out
    [figures] = json.loads((tmp_path / "f.json").read_text())
    assert figures["rates"] == "qa" and figures["replay_seeds"] == 2
    assert main([*args[:3], "--shift", "0"]) == 2
    assert "--shift" in capsys.readouterr().err


def test_the_command_writes_the_promtool_tests_for_the_rules_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tests, rules = tmp_path / "mine.test.yml", tmp_path / "mine.yml"
    assert main(["alert-rules", "--promtool-tests", str(tests)]) == 0
    assert tests.read_text() == rule_tests_yaml()
    tuned = ["--set", "share_test.z=4", "--output", str(rules)]
    assert main(["alert-rules", "--promtool-tests", str(tests), *tuned]) == 0
    assert "rule_files:\n  - mine.yml\n" in tests.read_text() and rules.is_file()
    assert tests.read_text() != rule_tests_yaml()  # z=4: other bounds, other minutes
    tested = subprocess.run(
        [promtool_binary(), "test", "rules", tests.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    capsys.readouterr()
