"""The shipped alert rules: valid for promtool, unit-tested by promtool, on our metric names."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from refcheck_callbacks.exporters import names

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = PROMETHEUS_DIR / "refcheck-alerts.yml"
RULE_TESTS = PROMETHEUS_DIR / "refcheck-alerts.test.yml"
ALERTS = {
    "RefCheckContradictionSpike",
    "RefCheckHighHallucinationRate",
    "RefCheckCheckerErrors",
    "RefCheckDroppingEvaluations",
    "RefCheckStalledChecker",
}


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool not found: run `make system-deps` (Debian package prometheus)")
    return subprocess.run(
        [promtool, *args], cwd=PROMETHEUS_DIR, capture_output=True, text=True, timeout=120
    )


def _rules() -> list[dict[str, object]]:
    return [
        rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]
    ]


def test_promtool_check_rules_passes() -> None:
    checked = _promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in checked.stdout


def test_promtool_unit_tests_pass() -> None:
    tested = _promtool("test", "rules", RULE_TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_every_alert_is_unit_tested_firing_and_quiet() -> None:
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    firing = {
        case["alertname"]
        for test in tests
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    # Each test group holds a steady and a low-volume service that must stay out of exp_alerts.
    quiet_jobs = {
        series["series"].split('job="')[1].split('"')[0]
        for test in tests
        for series in test["input_series"]
    }
    assert firing == ALERTS
    assert {"steady", "quiet"} <= quiet_jobs


def test_rules_use_only_exported_metric_names_and_carry_runbooks() -> None:
    rules = _rules()
    assert {rule["alert"] for rule in rules} == ALERTS
    exported = set(names.PROMETHEUS.values())
    for rule in rules:
        used = set(re.findall(r"\brefcheck_[a-z_]+(?=[{[])", str(rule["expr"])))
        series = {re.sub(r"_(sum|count|bucket)$", "", name) for name in used}
        assert series <= exported, (rule["alert"], series - exported)
        annotations = rule["annotations"]
        assert isinstance(annotations, dict)
        assert {"summary", "description", "runbook"} <= set(annotations), rule["alert"]
