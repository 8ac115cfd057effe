"""The shipped Grafana dashboard's structure: templated on data source and service, our names.

Whether its queries run and return data is checked against a real Prometheus in
`test_prometheus_e2e.py`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from refcheck_callbacks.alerting import relevance_rules
from refcheck_callbacks.alerting.estimate_rules import ADJUSTED, LABELS_NEEDED
from refcheck_callbacks.alerting.rules import RECORDED
from refcheck_callbacks.alerting.share_rules import BASELINE_READY, SHARES
from refcheck_callbacks.alerting.tunables import AlertTunables
from refcheck_callbacks.exporters import names

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "refcheck-dashboard.json"
_METRIC = r"(?<![\w:])(?:job(?:_[a-z]+)*:)?refcheck_[a-z_:]+(?=[{[])"
"""A metric in a selector: ours, or one of the alert rules' recordings (`job:refcheck_...`,
`job_calibration_rate:refcheck_...`)."""


def _dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def _targets(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [target for panel in dashboard["panels"] for target in panel["targets"]]


def test_templated_on_datasource_and_service() -> None:
    variables = {v["name"]: v for v in _dashboard()["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    service = variables["service"]
    assert service["query"]["query"] == "label_values(refcheck_responses_total, job)"
    assert service["multi"] and service["includeAll"] and service["allValue"] == ".*"


def test_every_query_uses_the_variables_and_exported_or_recorded_metrics() -> None:
    dashboard = _dashboard()
    known = set(names.PROMETHEUS.values()) | set(RECORDED)
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
    for target in _targets(dashboard):
        expr = target["expr"]
        metrics = set(re.findall(_METRIC, expr))
        assert metrics, expr
        assert {re.sub(r"_(sum|count|bucket)$", "", m) for m in metrics} <= known, expr
        assert expr.count('job=~"$service"') == len(re.findall(_METRIC + r"\{", expr))


def test_what_the_share_alerts_compare_and_the_onboarding_state_are_plotted() -> None:
    dashboard = _dashboard()
    exprs = " ".join(t["expr"] for t in _targets(dashboard))
    for share in SHARES:
        compared = (share.ratio("slow"), share.lower_bound("fast"), share.lower_bound("slow"))
        for recorded in (*compared, share.upper_bound):
            assert f'{recorded}{{job=~"$service"}}' in exprs, recorded
    [state] = [p for p in dashboard["panels"] if BASELINE_READY in p["targets"][0]["expr"]]
    [mapping] = state["fieldConfig"]["defaults"]["mappings"]
    assert {v["text"] for v in mapping["options"].values()} == {"onboarding", "baseline ready"}


def test_panels_cover_what_an_operator_needs() -> None:
    dashboard = _dashboard()
    exprs = " ".join(t["expr"] for t in _targets(dashboard))
    for needed in (
        "refcheck_response_hallucination_ratio_sum",
        'refcheck_verdict="contradiction"',
        "sum by (refcheck_verdict)",
        "histogram_quantile(0.5, sum by (le, refcheck_stage)",
        "histogram_quantile(0.99, sum by (le, refcheck_stage)",
        "refcheck_queue_size",
        "refcheck_dropped_total",
        "refcheck_errors_total",
    ):
        assert needed in exprs, needed
    assert "gen_ai_request_model" in exprs  # rates by model, not only by service
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_the_feedback_agreement_rate_is_plotted() -> None:
    feedback = [
        t["expr"]
        for t in _targets(_dashboard())
        if names.PROMETHEUS[names.FEEDBACK_CLAIMS] in t["expr"]
    ]
    agreed = f'{names.FEEDBACK_AGREED.replace(".", "_")}="true"'
    [rate] = [expr for expr in feedback if agreed in expr]
    numerator, denominator = rate.split(" / ")
    assert agreed in numerator and "agreed" not in denominator
    assert any(names.FEEDBACK_LABEL.replace(".", "_") in expr for expr in feedback)


def test_judge_budgets_are_plotted_by_model_and_role_with_the_alerts_threshold() -> None:
    dashboard = _dashboard()
    [budget] = [p for p in dashboard["panels"] if "Judge budget" in p["title"]]
    exprs = [t["expr"] for t in budget["targets"]]
    by = "job, gen_ai_request_model, refcheck_llm_role"
    assert exprs[0].startswith(f"max by ({by}) ({names.PROMETHEUS[names.LLM_BUDGET_UTILIZATION]}")
    assert names.PROMETHEUS[names.LLM_BUDGET_FALLBACKS] in exprs[1] and by in exprs[1]
    steps = budget["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert steps[-1]["value"] == AlertTunables().judge_budget.threshold
    [spend] = [p for p in dashboard["panels"] if p["title"] == "LLM spend by model and role"]
    assert all(by in t["expr"] for t in spend["targets"])


def test_the_adjusted_rates_are_plotted_with_their_band_beside_the_raw_rate() -> None:
    dashboard = _dashboard()
    slow = ADJUSTED["slow"]
    for share in SHARES:
        [panel] = [
            p
            for p in dashboard["panels"]
            if any(f'refcheck_rate="{share.rate.value}"' in t["expr"] for t in p["targets"])
        ]
        exprs = [t["expr"] for t in panel["targets"]]
        assert slow.ratio in exprs[0] and slow.lower_bound in exprs[1]
        # The band is stacked on the lower bound: its height is upper - lower, per service.
        assert (
            exprs[2].startswith(f"max by (job) ({slow.upper_bound}")
            and slow.lower_bound in exprs[2]
        )
        assert exprs[3] == f'{share.ratio("slow")}{{job=~"$service"}}'  # the raw rate
        assert panel["repeat"] == "service"  # one band per panel: stacking is per panel
        assert panel["fieldConfig"]["defaults"]["noValue"] == "uncalibrated"


def test_without_audit_labels_the_dashboard_says_uncalibrated_with_the_labels_needed() -> None:
    [panel] = [p for p in _dashboard()["panels"] if LABELS_NEEDED in p["targets"][0]["expr"]]
    defaults = panel["fieldConfig"]["defaults"]
    assert "uncalibrated" in defaults["unit"] and "labels needed" in defaults["unit"]
    [mapping] = defaults["mappings"]
    assert mapping["options"] == {"0": {"text": "calibrated", "color": "green", "index": 0}}
    assert AlertTunables().estimate.labels_needed == 200


def test_retrieval_diagnostics_and_what_the_relevance_alert_compares_are_plotted() -> None:
    exprs = " ".join(t["expr"] for t in _targets(_dashboard()))
    compared = (*relevance_rules.LOWER_BOUND.values(), relevance_rules.UPPER_BOUND)
    for recorded in (relevance_rules.RATIO["slow"], *compared):
        assert f'{recorded}{{job=~"$service"}}' in exprs, recorded
    prometheus = names.PROMETHEUS
    for needed in (
        f"sum by (le, job) (rate({prometheus[names.REFERENCE_RELEVANCE]}_bucket",
        f"sum by (le, job) (rate({prometheus[names.ANSWER_RELEVANCE]}_bucket",
        f"sum by (job, refcheck_claim_cause) (rate({prometheus[names.CLAIM_CAUSES]}",
        f"{prometheus[names.REFERENCES_USED_RATIO]}_sum",
        prometheus[names.NON_ANSWERS],
    ):
        assert needed in exprs, needed
    assert names.CLAIM_CAUSE.replace(".", "_") == "refcheck_claim_cause"
