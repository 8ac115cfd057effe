"""The shipped alert rules: generated from the default tunables, valid for promtool, unit-tested
by promtool on hand-made series shaped like real traffic and on simulated traffic (the
simulator's tests are its output, kept up to date like the rules), on our metric names."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from refcheck_callbacks.alerting.rules import RECORDED, alert_rules, rules_yaml
from refcheck_callbacks.alerting.simulator.rule_tests import rule_tests_yaml
from refcheck_callbacks.cli.main import main
from refcheck_callbacks.exporters import names

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = PROMETHEUS_DIR / "refcheck-alerts.yml"
RULE_TESTS = PROMETHEUS_DIR / "refcheck-alerts.test.yml"
SIMULATED_TESTS = PROMETHEUS_DIR / "refcheck-alerts.sim.test.yml"
ALERTS = {
    "RefCheckContradictionRise",
    "RefCheckHallucinationRise",
    "RefCheckNewServiceContradiction",
    "RefCheckNewServiceHallucination",
    "RefCheckCheckerErrors",
    "RefCheckDroppingEvaluations",
    "RefCheckStalledChecker",
    "RefCheckJudgeBudgetNearlySpent",
    "RefCheckRelevanceDrop",
}


def _promtool(*args: str, cwd: Path = PROMETHEUS_DIR) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool not found: run `make system-deps` (Debian package prometheus)")
    return subprocess.run([promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _rules() -> list[dict[str, object]]:
    return [
        rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]
    ]


def test_the_shipped_file_is_the_generators_output_with_the_defaults() -> None:
    assert RULES.read_text() == rules_yaml()
    assert yaml.safe_load(RULES.read_text()) == alert_rules()


def test_promtool_check_rules_passes() -> None:
    checked = _promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(ALERTS) + len(RECORDED)} rules found" in checked.stdout


def test_the_simulated_tests_are_the_simulators_output() -> None:
    assert SIMULATED_TESTS.read_text() == rule_tests_yaml(), (
        "regenerate: refcheck alert-rules --promtool-tests "
        "deploy/prometheus/refcheck-alerts.sim.test.yml"
    )


@pytest.mark.parametrize("tests", [RULE_TESTS, SIMULATED_TESTS], ids=lambda p: p.name)
def test_promtool_unit_tests_pass(tests: Path) -> None:
    tested = _promtool("test", "rules", tests.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_the_simulated_tests_cover_every_volume_quiet_and_firing() -> None:
    groups = yaml.safe_load(SIMULATED_TESTS.read_text())["tests"]
    names = " ".join(str(group["name"]) for group in groups)
    for volume in ("5 claims", "20 claims", "100 claims"):
        assert volume in names, volume
    fired = [
        case["exp_samples"]
        for group in groups
        for case in group["promql_expr_test"]
        if case["expr"].startswith("ALERTS{") and case["exp_samples"]
    ]
    alerts = {re.findall(r'alertname="(\w+)"', s["labels"])[0] for case in fired for s in case}
    assert alerts and alerts <= ALERTS
    assert "no alert within 3 hours" in names  # a shift the checker barely separates


def _tests() -> list[dict[str, Any]]:
    return list(yaml.safe_load(RULE_TESTS.read_text())["tests"])


def _fired_jobs(case: dict[str, Any]) -> set[str]:
    return {alert["exp_labels"]["job"] for alert in case["exp_alerts"]}


def test_every_alert_is_unit_tested_firing_and_quiet_on_real_traffic_shapes() -> None:
    tests = _tests()
    cases = [case for test in tests for case in test["alert_rule_test"]]
    assert {case["alertname"] for case in cases if case["exp_alerts"]} == ALERTS
    for test in tests:
        jobs = {re.findall(r'job="([^"]+)"', s["series"])[0] for s in test["input_series"]}
        fired = [_fired_jobs(case) for case in test["alert_rule_test"]]
        # Something fires, and something stays quiet: a service, or a moment before or after.
        assert any(fired), test["name"]
        assert jobs - set().union(*fired) or not all(fired), test["name"]
    values = [s["values"] for test in tests for s in test["input_series"]]
    # Restarts: a gap, then the counter from 0. Late series: missing samples first.
    assert any(re.search(r"_x\d+ 0\+", v) for v in values)
    assert any(v.startswith("_x") for v in values)


def test_the_share_tests_cover_the_issues_burst_onboarding_restarts_late_traffic_and_drift() -> (
    None
):
    share = " ".join(str(t["name"]) for t in _tests() if "share alerts" in str(t["name"]))
    for shape in (
        "the issue's burst",
        "onboarding",
        "restarts",
        "after the first scrape",
        "slow drift",
        "whatever the baseline",
    ):
        assert shape in share, shape


def test_rules_use_only_exported_metric_names_and_carry_runbooks() -> None:
    rules = _rules()
    assert {rule["alert"] for rule in rules if "alert" in rule} == ALERTS
    assert [rule["record"] for rule in rules if "record" in rule] == list(RECORDED)
    exported = set(names.PROMETHEUS.values())
    for rule in rules:
        used = set(re.findall(r"(?<![\w:])refcheck_[a-z_]+(?=[{[])", str(rule["expr"])))
        series = {re.sub(r"_(sum|count|bucket)$", "", name) for name in used}
        assert series <= exported, (rule, series - exported)
        if "alert" in rule:
            annotations = rule["annotations"]
            assert isinstance(annotations, dict)
            assert {"summary", "description", "runbook"} <= set(annotations), rule["alert"]


def test_tuned_rules_are_written_by_the_cli_and_pass_promtool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "tuned.yml"
    status = main(
        [
            "alert-rules",
            "--set", "share_test.slow_window=30m",
            "--set", "hallucination_rise.pending_for=15s",
            "--set", "share_test.z=4",
            "--set", "contradiction_rise.slow_min_effect=0.03",
            "--set", "stalled_checker.severity=critical",
            "--output", str(output),
        ]
    )  # fmt: skip
    assert status == 0
    text = output.read_text()
    assert "#   share_test.z=4.0" in text
    # The baseline ends the slow window plus the longest `for` (2m, not 15s) ago.
    assert "[30m]" in text and "[1d] offset 32m" in text and "for: 15s" in text
    assert "- 4.0 * sqrt(" in text and "/ (1 + 16.0 /" in text and "> 0.03" in text
    assert "severity: critical" in text
    checked = _promtool("check", "rules", str(output), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    capsys.readouterr()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("contradiction_rise.slow_min_effect=1.5", "contradiction_rise.slow_min_effect"),
        ("share_test.fast_window=ten", "not a Prometheus duration"),
        ("share_test.baseline_window=30m", "windows must grow"),
        ("share_test.z=0", "share_test.z"),
        ("spike.floor=0.2", "spike"),
        ("floor", "ALERT.FIELD=VALUE"),
    ],
)
def test_bad_tunables_are_refused_with_a_message(
    setting: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["alert-rules", "--set", setting]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err
