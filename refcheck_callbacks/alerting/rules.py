"""Prometheus recording and alerting rules on refcheck's metrics, written from tunables.

`deploy/prometheus/refcheck-alerts.yml` is `alert_rules(AlertTunables())` as YAML (a test keeps
the two equal); `refcheck alert-rules --set share_test.z=4` writes the rules with any threshold,
window or `for` duration changed (`alerting.tunables`). Metric names are those of
`exporters.names.PROMETHEUS`.

The share alerts (a service against its own baseline, and a new one against an absolute level)
are `share_rules`'. The others here keep issue 18's lessons: every ratio needs a minimum
volume, so a handful of answers cannot page; a series that does not exist yet counts as zero
where that is what it means, never as "no data" (which would silence the comparison); counters
that reset on a restart are read with `rate` / `increase`, which handle resets.
"""

from __future__ import annotations

from typing import Any

from refcheck_callbacks.alerting import relevance_rules
from refcheck_callbacks.alerting.estimate_rules import ESTIMATE_RECORDED, estimate_recording_rules
from refcheck_callbacks.alerting.share_rules import (
    RECORDED as SHARE_RECORDED,
)
from refcheck_callbacks.alerting.share_rules import (
    SHARES,
    level_alert,
    share_alert,
    share_recording_rules,
)
from refcheck_callbacks.alerting.tunables import (
    AlertTunables,
    CheckerErrors,
    DroppedEvaluations,
    JudgeBudgetNearlySpent,
    StalledChecker,
    changed_tunables,
)
from refcheck_callbacks.exporters.names import (
    CLAIMS,
    DROPPED,
    GEN_AI_REQUEST_MODEL,
    LLM_BUDGET_UTILIZATION,
    LLM_ROLE,
    PROMETHEUS,
    QUEUE_SIZE,
    RESPONSES,
)
from refcheck_callbacks.support import yaml_text

__all__ = ["RECORDED", "AlertTunables", "alert_rules", "rules_yaml"]

RECORDED = (*SHARE_RECORDED, *ESTIMATE_RECORDED, *relevance_rules.RECORDED)
"""Every recording, in the order the rule file evaluates them."""

_CLAIMS = PROMETHEUS[CLAIMS]
_RESPONSES = PROMETHEUS[RESPONSES]


def _alert(name: str, expr: str, settings: Any, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": settings.pending_for,
        "labels": {"severity": settings.severity},
        "annotations": annotations,
    }


def _errors_alert(errors: CheckerErrors) -> dict[str, Any]:
    window = errors.window
    failed = f'{_RESPONSES}{{refcheck_outcome=~"error|timeout"}}'
    no_verdict = f'{_CLAIMS}{{refcheck_verdict="error"}}'
    return _alert(
        "RefCheckCheckerErrors",
        f"(\n  sum by (job) (rate({failed}[{window}]))\n"
        f"  / sum by (job) (rate({_RESPONSES}[{window}]))\n  > {errors.threshold:g}\n  and\n"
        f"  sum by (job) (increase({_RESPONSES}[{window}])) >= {errors.min_answers}\n)\nor\n"
        f"(\n  sum by (job) (rate({no_verdict}[{window}]))\n"
        f"  / sum by (job) (rate({_CLAIMS}[{window}]))\n  > {errors.threshold:g}\n  and\n"
        f"  sum by (job) (increase({_CLAIMS}[{window}])) >= {errors.min_claims}\n)",
        errors,
        {
            "summary": "{{ $labels.job }}: {{ $value | humanizePercentage }} of checks are failing",
            "description": f"Over the last {window} {{{{ $value | humanizePercentage }}}} of "
            "{{ $labels.job }}'s answers (or claims) could not be checked: the checker raised, "
            "timed out, or returned no verdict. Hallucination metrics for this service are "
            "incomplete meanwhile.",
            "runbook": "1. Find `evaluate refcheck` spans with status ERROR: error.type says "
            "which failure (TimeoutError, a provider error, CheckError for unparseable judge "
            "replies). 2. LLM judge: check the provider's status, rate limits and API key; "
            "raise timeouts or concurrency if the provider is slow. 3. Local model: check GPU "
            "memory and the refcheck.stage.duration of the check stage. 4. The app is not "
            "affected: refcheck never blocks or fails the chain.",
        },
    )


def _dropped_alert(dropped: DroppedEvaluations) -> dict[str, Any]:
    drops = f"sum by (job) (rate({PROMETHEUS[DROPPED]}[{dropped.window}]))"
    return _alert(
        "RefCheckDroppingEvaluations",
        f"{drops}\n/ (\n  {drops}\n  + (\n"
        f"    sum by (job) (rate({_RESPONSES}[{dropped.window}]))\n    or {drops} * 0\n  )\n)\n"
        f"> {dropped.threshold:g}\nand\n"
        f"sum by (job) (increase({PROMETHEUS[DROPPED]}[{dropped.window}])) >= "
        f"{dropped.min_dropped}",
        dropped,
        {
            "summary": "{{ $labels.job }}: {{ $value | humanizePercentage }} of answers are "
            "dropped unchecked",
            "description": f"Over the last {dropped.window} {{{{ $value | humanizePercentage }}}} "
            "of {{ $labels.job }}'s answers were dropped before checking (refcheck_reason says "
            "why, usually queue_full): the checker cannot keep up with traffic.",
            "runbook": "1. Compare the throughput and queue size panels: is traffic up, or is "
            "the check stage slower (refcheck.stage.duration)? 2. Give the checker more "
            "capacity: larger batch_size, a GPU, more concurrency for LLM judges, or the "
            "remote checker on dedicated nodes. 3. Or check a sample of traffic on purpose "
            "(sample_rate), which is counted as skipped, not dropped. 4. A larger max_queue "
            "only helps with short bursts.",
        },
    )


def _stalled_alert(stalled: StalledChecker) -> dict[str, Any]:
    queue = PROMETHEUS[QUEUE_SIZE]
    return _alert(
        "RefCheckStalledChecker",
        f"max by (job) (min_over_time({queue}[{stalled.window}])) > 0\n"
        # A queue that appeared less than a window ago has not been waiting that long.
        f"and on (job) max by (job) ({queue} offset {stalled.window})\n"
        f"unless on (job)\nsum by (job) (rate({_RESPONSES}[{stalled.window}])) > 0",
        stalled,
        {
            "summary": "{{ $labels.job }}: the refcheck worker has stopped producing results",
            "description": f"For {stalled.window} {{{{ $labels.job }}}}'s refcheck queue has "
            "never been empty, yet no answer has been evaluated. The checker is hung (a stuck "
            "model or a request without a timeout) or the worker thread died; nothing is "
            "being checked.",
            "runbook": "1. Look at the process's logs for `refcheck` errors and at the last "
            "`evaluate refcheck` span. 2. Check the checker's dependencies: GPU health, the "
            "remote checker's or LLM provider's endpoint. 3. Restarting the app process "
            "restarts the worker; lower the stage timeouts (StageTimeouts) so a hung call "
            "fails the batch instead of stalling it.",
        },
    )


def _label(attribute: str) -> str:
    """An attribute as the Prometheus exporter renders its label (`names.PROMETHEUS`)."""
    return attribute.replace(".", "_")


def _budget_alert(budget: JudgeBudgetNearlySpent) -> dict[str, Any]:
    by = f"job, {_label(GEN_AI_REQUEST_MODEL)}, {_label(LLM_ROLE)}"
    return _alert(
        "RefCheckJudgeBudgetNearlySpent",
        f"max by ({by}) ({PROMETHEUS[LLM_BUDGET_UTILIZATION]}) > {budget.threshold:g}",
        budget,
        {
            "summary": "{{ $labels.job }}: the judge budget of {{ $labels.gen_ai_request_model }}"
            " is {{ $value | humanizePercentage }} spent",
            "description": "{{ $labels.job }}'s LLM "
            "{{ $labels.refcheck_llm_role }} ({{ $labels.gen_ai_request_model }}) has spent or "
            "holds {{ $value | humanizePercentage }} of its JudgeBudget in the rolling window. "
            "Once it is spent, its calls are not sent and their claims go to the fallback "
            "checker (refcheck_llm_budget_fallbacks_total counts them): verdicts get cheaper "
            "and less exact until older spend leaves the window.",
            "runbook": "1. Check the spend panels: a traffic rise (more answers checked), "
            "longer prompts (more or longer documents), or a new model with a higher price? "
            "2. If the spend is expected, raise the budget (JudgeBudget usd / tokens, "
            "REFCHECK_JUDGE_BUDGET_USD / _TOKENS) or check a sample (sample_rate). 3. Or put "
            "a cheaper stage first: a cascade (`cascade:embedded[margin]>llm:...`) sends the "
            "judge only the claims the embedded checker is unsure of.",
        },
    )


def alert_rules(tunables: AlertTunables | None = None) -> dict[str, Any]:
    """The rule file's content: one group, recording rules first (the share tests', the
    adjusted rates', the references' relevance; alerts read them at the same evaluation), then
    the nine alerts."""
    tunables = tunables or AlertTunables()
    rules = [
        *share_recording_rules(tunables),
        *estimate_recording_rules(tunables),
        *relevance_rules.relevance_recording_rules(tunables),
        *(share_alert(share, tunables) for share in SHARES),
        *(level_alert(share, tunables) for share in SHARES),
        relevance_rules.relevance_alert(tunables),
        _errors_alert(tunables.checker_errors),
        _dropped_alert(tunables.dropped_evaluations),
        _stalled_alert(tunables.stalled_checker),
        _budget_alert(tunables.judge_budget),
    ]
    return {"groups": [{"name": "refcheck", "rules": rules}]}


_HEADER = """\
Alerts on refcheck_callbacks metrics, as the OpenTelemetry Prometheus exporter (or an
OpenTelemetry Collector's Prometheus exporter) renders them: `refcheck.claims` becomes
`refcheck_claims_total`, attribute `refcheck.verdict` the label `refcheck_verdict`, and so on
(see refcheck_callbacks/exporters/names.py). Everything is grouped by `job`: the scrape job, or
service.name when the metrics come through a collector.

Written by `refcheck alert-rules` (refcheck_callbacks/alerting/rules.py, which explains each
rule); change thresholds and windows with `--set`, not by hand. Checked by `promtool check
rules`, unit-tested by `promtool test rules refcheck-alerts.test.yml refcheck-alerts.sim.test.yml
refcheck-estimate.test.yml` (deploy/prometheus; the second is written by the traffic simulator,
the third holds the adjusted rates to closed_form's numbers: docs/telemetry.md)."""


def rules_yaml(tunables: AlertTunables | None = None) -> str:
    """The rule file as YAML, headed by a comment naming the tunables that differ from the
    defaults (so a generated file says how it was made)."""
    tunables = tunables or AlertTunables()
    changed = [f"  {key}={value}" for key, value in changed_tunables(tunables).items()]
    header = _HEADER + ("\n\nTunables changed from the defaults:\n" + "\n".join(changed))
    if not changed:
        header = _HEADER
    comment = "\n".join(f"# {line}".rstrip() for line in header.splitlines())
    return f"{comment}\n{yaml_text.dump(alert_rules(tunables))}"
