"""End to end: a real Prometheus scrapes an app running the monitor; the alert and dashboard work.

The app (`refcheck_metrics_app.py`) runs `RefCheckMonitor` with its default OpenTelemetry
exporter behind the OpenTelemetry Prometheus exporter. Prometheus (the Debian `prometheus`
binary, on 127.0.0.1 with a temporary data dir) scrapes it every second and evaluates the
generated alert rules with windows in seconds instead of minutes and hours (`E2E_TUNABLES`,
through the generator's tunables, as a user would tune them).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from feedback_records import calibrate_records
from free_ports import OutputWatch

from refcheck_callbacks.alerting import relevance_rules
from refcheck_callbacks.alerting.estimate_rules import ADJUSTED, RAW
from refcheck_callbacks.alerting.rules import rules_yaml
from refcheck_callbacks.alerting.share_rules import BASELINE_READY, CONTRADICTION
from refcheck_callbacks.alerting.tunables import duration_seconds
from refcheck_callbacks.cli.alert_rules import parse_settings
from refcheck_callbacks.exporters import names

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "refcheck-dashboard.json"
APP = Path(__file__).with_name("refcheck_metrics_app.py")
JOB = "rag-app"
E2E_TUNABLES = parse_settings(
    [
        "share_test.fast_window=10s",
        "share_test.slow_window=20s",
        "share_test.baseline_window=5m",
        "share_test.min_baseline_claims=200",
        "relevance_drop.min_baseline_references=200",
        *(
            f"{alert}.pending_for=5s"
            for alert in ("contradiction_rise", "hallucination_rise", "relevance_drop")
        ),
        "checker_errors.window=10s",
        *(f"{alert}.window=6s" for alert in ("dropped_evaluations", "stalled_checker")),
        *(
            f"{alert}.pending_for=2s"
            for alert in ("checker_errors", "dropped_evaluations", "stalled_checker")
        ),
    ]
)  # fmt: skip
RISE = E2E_TUNABLES.contradiction_rise
DASHBOARD_VARIABLES = {"$service": JOB, "$__rate_interval": "2m", "$__range": "5m"}

pytestmark = pytest.mark.slow


def _wait_until(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if value := condition():
                return value
        except OSError:
            pass
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout:g}s waiting for {what}")


class App:
    """The app process: send a command, get its running totals back."""

    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process, self.port = process, port

    def send(self, **command: int | float) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the app exited"
        return dict(json.loads(line))


class Prometheus:
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"

    def get(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        return list(self.get("/api/v1/query", query=expr)["result"])

    def by(self, label: str, expr: str) -> dict[str, float]:
        return {r["metric"].get(label, ""): float(r["value"][1]) for r in self.query(expr)}

    def firing(self, alert: str) -> list[dict[str, Any]]:
        return [
            a
            for a in self.get("/api/v1/alerts")["alerts"]
            if a["labels"]["alertname"] == alert and a["state"] == "firing"
        ]

    def active(self, alert: str) -> list[dict[str, Any]]:
        return [
            a for a in self.get("/api/v1/alerts")["alerts"] if a["labels"]["alertname"] == alert
        ]


@pytest.fixture
def feedback_file(tmp_path: Path) -> Path:
    return tmp_path / "feedback.jsonl"


@pytest.fixture
def app(feedback_file: Path) -> Iterator[App]:
    process = subprocess.Popen(
        [sys.executable, str(APP), "0", str(feedback_file)],  # it binds a free port, says which
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        assert ready["ready"] is True
        yield App(process, int(ready["port"]))
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def prometheus(app: App, tmp_path: Path) -> Iterator[Prometheus]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus not found: run `make system-deps` (Debian package prometheus)")
    (tmp_path / "rules.yml").write_text(rules_yaml(E2E_TUNABLES))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp_path / "rules.yml")],
        "scrape_configs": [
            {"job_name": JOB, "static_configs": [{"targets": [f"127.0.0.1:{app.port}"]}]}
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            "--web.listen-address=127.0.0.1:0",  # a free port, which its log names
            "--log.level=info",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    log = OutputWatch(process.stderr)
    try:
        server = Prometheus(log.port(r'msg="Listening on" address=127\.0\.0\.1:(?P<port>\d+)'))
        _wait_until(lambda: server.query(f'up{{job="{JOB}"}} == 1'), 30, "the first scrape")
        yield server
    finally:
        process.terminate()
        process.wait(timeout=20)


def _stream(app: App, chunks: int, answers: int, contradiction_share: float) -> dict[str, Any]:
    totals: dict[str, Any] = {}
    for _ in range(chunks):
        totals = app.send(answers=answers, contradiction_share=contradiction_share)
        time.sleep(1.0)
    return totals


def _dashboard_expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    exprs += [a["expr"] for a in dashboard["annotations"]["list"]]
    for name, value in DASHBOARD_VARIABLES.items():
        exprs = [e.replace(name, value) for e in exprs]
    return exprs


def _burst_until_firing(app: App, prometheus: Prometheus, alert: str) -> dict[str, Any]:
    """The issue's burst (49% of claims contradicted), a chunk a second, until `alert` fires."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        app.send(answers=30, contradiction_share=0.49)
        if firing := prometheus.firing(alert):
            return dict(firing[0])
        time.sleep(1.0)
    pytest.fail(f"{alert} did not fire within 60 s of burst")


def test_the_issues_burst_fires_the_rise_alert_and_every_dashboard_query_returns_data(
    app: App, prometheus: Prometheus, feedback_file: Path
) -> None:
    # The issue's shape: about 1,200 claims at 2% contradicted, a quiet spell that moves them
    # into the baseline (which ends slow window + for ago), then a burst at 49%.
    _stream(app, chunks=20, answers=30, contradiction_share=0.02)
    app.send(feedback=20, non_answers=3)  # people's verdicts, before and after the burst
    time.sleep(duration_seconds(E2E_TUNABLES.baseline_offset) + 5)
    assert prometheus.active(CONTRADICTION.alert) == [], "fired on a normal stream"
    assert prometheus.active(relevance_rules.ALERT) == [], "fired on unchanged retrieval"
    assert prometheus.by("job", BASELINE_READY) == {JOB: 1.0}  # onboarded: 1,200 claims

    started = time.monotonic()
    alert = _burst_until_firing(app, prometheus, CONTRADICTION.alert)
    took = time.monotonic() - started
    # Pending as soon as a scrape or two hold the fast window's minimum claims, firing `for`
    # later.
    bound = duration_seconds(RISE.pending_for) + duration_seconds(
        E2E_TUNABLES.share_test.fast_window
    )
    assert took <= bound, f"fired {took:.1f}s after the burst began, later than {bound:g}s"
    print(f"\nrise alert firing {took:.1f}s after the burst began (for: {RISE.pending_for})")
    assert alert["labels"]["job"] == JOB
    assert alert["labels"]["severity"] == "page"
    assert 0.3 < float(alert["value"]) < 0.7
    baseline = prometheus.by("job", f'{CONTRADICTION.ratio("baseline")}{{job="{JOB}"}}')
    assert 0.0 < baseline[JOB] < 0.06  # the 2% stream, not the burst
    assert "unknown" not in alert["annotations"]["description"]

    totals = app.send(skip=3, burst=20, hook_errors=2, overlong=2, cascade=30, feedback=20)
    selector = f'{{job="{JOB}"}}'
    claims_by_verdict = f"sum by (refcheck_verdict) (refcheck_claims_total{selector})"
    expected_claims = {k: float(v) for k, v in totals["claims"].items()}
    # One scrape reads every metric at once: when it has the last claims, it has everything.
    claims = _wait_until(
        lambda: (
            (c := prometheus.by("refcheck_verdict", claims_by_verdict)) == expected_claims and c
        ),
        30,
        "a scrape after the last result",
    )
    assert {"entailment", "contradiction", "neutral", "error"} <= set(claims)
    agreement = f"sum by (refcheck_feedback_agreed) (refcheck_feedback_claims_total{selector})"
    expected_agreement = {agreed: float(count) for agreed, count in totals["agreed"].items()}
    _wait_until(
        lambda: prometheus.by("refcheck_feedback_agreed", agreement) == expected_agreement,
        30,
        "a scrape after the last feedback",
    )
    assert set(totals["agreed"]) == {"true", "false"}  # unverified and contradicted claims disagree
    assert prometheus.by(
        "refcheck_reason", f"sum by (refcheck_reason) (refcheck_feedback_refused_total{selector})"
    ) == {"unknown_response": 2.0}
    records = calibrate_records(feedback_file)
    assert len(records) == 40 and {r["labels"][0] for r in records} == {True}
    responses = prometheus.by(
        "refcheck_outcome", f"sum by (refcheck_outcome) (refcheck_responses_total{selector})"
    )
    assert responses == {k: float(v) for k, v in totals["responses"].items()}
    [ratios] = prometheus.query(f"sum(refcheck_response_hallucination_ratio_count{selector})")
    assert (
        float(ratios["value"][1]) == totals["responses"]["checked"] + totals["responses"]["partial"]
    )
    stats = totals["stats"]
    for tally, metric in (("dropped", "dropped"), ("skipped", "skipped"), ("errors", "errors")):
        [value] = prometheus.query(f"sum(refcheck_{metric}_total{selector})")
        assert float(value["value"][1]) == stats[tally] > 0, tally
    assert prometheus.by(
        "refcheck_reason", f"sum by (refcheck_reason) (refcheck_skipped_total{selector})"
    ) == {"sampled_out": 3.0}
    assert prometheus.by(
        "refcheck_reason", f"sum by (refcheck_reason) (refcheck_errors_total{selector})"
    ) == {"on_result": 2.0}
    assert prometheus.by(
        "refcheck_reason", f"sum by (refcheck_reason) (refcheck_truncated_total{selector})"
    ) == {"question": 2.0}
    stages = prometheus.by(
        "refcheck_stage",
        f"sum by (refcheck_stage) (refcheck_stage_duration_seconds_count{selector})",
    )
    pipeline = {"queue", "extract", "check", "conflict", "diagnose", "aggregate", "total"}
    assert set(stages) == pipeline | {"check.quick", "check.scripted"}  # cascade stages
    escalations = prometheus.by(
        "refcheck_stage", f"sum by (refcheck_stage) (refcheck_cascade_escalations_total{selector})"
    )
    assert escalations == {k: float(v) for k, v in totals["escalations"].items()}
    assert set(escalations) == {"quick"} and escalations["quick"] > 0
    usage = totals["usage"]
    tokens = prometheus.by(
        "gen_ai_token_type", f"sum by (gen_ai_token_type) (refcheck_llm_tokens_total{selector})"
    )
    assert tokens == {
        "input": float(usage["prompt_tokens"]),
        "output": float(usage["completion_tokens"]),
    }
    [cost] = prometheus.query(f"sum(refcheck_llm_cost_total{selector})")
    assert float(cost["value"][1]) == pytest.approx(usage["cost_usd"])
    assert prometheus.query(f"refcheck_queue_size{selector}")
    # Retrieval diagnostics: every scored reference, unsupported claims by cause, non-answers.
    [scored] = prometheus.query(f"sum(refcheck_reference_relevance_count{selector})")
    assert float(scored["value"][1]) == totals["scored_references"] > 0
    causes = prometheus.by(
        "refcheck_claim_cause",
        f"sum by (refcheck_claim_cause) (refcheck_claim_causes_total{selector})",
    )
    assert causes == {k: float(v) for k, v in totals["causes"].items()}
    assert "contradicted" in causes
    [non_answers] = prometheus.query(f"sum(refcheck_non_answers_total{selector})")
    assert float(non_answers["value"][1]) == totals["non_answers"] == 3

    with urllib.request.urlopen(f"http://127.0.0.1:{app.port}/metrics", timeout=10) as response:
        exposition = response.read().decode()
    for otel_name, prometheus_name in names.PROMETHEUS.items():
        assert f"# TYPE {prometheus_name} " in exposition, (otel_name, prometheus_name)

    jobs = prometheus.get("/api/v1/label/job/values", **{"match[]": "refcheck_responses_total"})
    assert jobs == [JOB]  # the dashboard's service variable
    for expr in _dashboard_expressions():
        result = prometheus.query(expr)
        values = [float(r["value"][1]) for r in result]
        assert any(math.isfinite(v) for v in values), f"no data for: {expr}"

    # The calibrated monitor's gauges and the adjusted rate over the scraped counters.
    positives = prometheus.by("refcheck_rate", f"refcheck_calibration_positives{selector}")
    assert positives == {"hallucination": 60.0, "contradiction": 20.0}
    slow = ADJUSTED["slow"]
    for rate in ("hallucination", "contradiction"):
        rate_selector = f'{{job="{JOB}",refcheck_rate="{rate}"}}'
        [raw] = prometheus.query(f"{RAW['slow']}{rate_selector}")
        assert raw["metric"]["refcheck_calibration_id"]
        low, adjusted, high = (
            prometheus.by("job", f"{name}{rate_selector}")[JOB]
            for name in (slow.lower_bound, slow.ratio, slow.upper_bound)
        )
        assert 0.0 <= low <= adjusted <= high <= 1.0, (rate, low, adjusted, high)
