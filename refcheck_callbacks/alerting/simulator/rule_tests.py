"""promtool unit tests of the share alerts, written by the simulator.

Each test group is one simulated service (`SCENARIOS`: a checker's measured rates, a volume):
hours of clean traffic from its first claim, then a shift to 20% unsupported claims. What the
group expects is what the replay computes on those very series: the minute onboarding ends, no
page on the clean traffic, which alert fires first after the shift and when. promtool passing
them is the replay and the rule file agreeing; `deploy/prometheus/refcheck-alerts.sim.test.yml`
is `rule_tests_yaml()` (a test keeps them equal; `refcheck alert-rules --promtool-tests FILE`
writes it, for tuned rules too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from refcheck_callbacks.alerting.share_rules import BASELINE_READY, SHARE_ALERTS, SHARES
from refcheck_callbacks.alerting.simulator.promtool import (
    Series,
    detection_query,
    firing_query,
    first_firing,
    page_queries,
    promtool_group,
)
from refcheck_callbacks.alerting.simulator.replay import baseline_ready, onsets, replay
from refcheck_callbacks.alerting.simulator.report import SHIFTED_MINUTES
from refcheck_callbacks.alerting.simulator.traffic import LabelRates, Traffic, counters
from refcheck_callbacks.alerting.tunables import AlertTunables
from refcheck_callbacks.support import yaml_text


def _rates(name: str, supported: Sequence[int], unsupported: Sequence[int]) -> LabelRates:
    def mix(counts: Sequence[int]) -> tuple[float, float, float]:
        return counts[0] / sum(counts), counts[1] / sum(counts), counts[2] / sum(counts)

    return LabelRates(name=name, supported=mix(supported), unsupported=mix(unsupported))


SCENARIOS = (
    (_rates("begin", (234, 4, 1), (118, 405, 5)), 5.0),
    (_rates("expertqa", (364, 167, 3), (66, 138, 3)), 100.0),
    (_rates("faithbench", (98, 131, 9), (68, 450, 44)), 100.0),
    (_rates("summedits", (701, 598, 13), (782, 1221, 346)), 20.0),
)
"""The default checker's label counts (entailment, neutral, contradiction) on gold-supported
and gold-unsupported claims of four shared sets, from `refcheck bench --dataset all` at c5acbe0
(issue 37): a low baseline at a low volume, a middling one, the highest unsupported share of
fully supported answers (59%: the new-service level must stay above it while the service
onboards), and a shift the checker barely separates (the hallucination share rises by 0.06)."""
CLEAN_MINUTES = 480
"""Eight hours from a service's first claim: onboarding, then hours of clean traffic."""
_HEADER = """\
promtool unit tests of the share alerts on simulated traffic: `promtool test rules
refcheck-alerts.sim.test.yml`. Written by `refcheck alert-rules --promtool-tests` (the traffic
simulator, refcheck_callbacks/alerting/simulator/rule_tests.py); do not edit. Each group is a
new service with one checker's measured label rates: claims drawn minute by minute (Poisson
volume, binomial labels), 8 hours of fully supported answers from its first claim, then 20%
unsupported claims. The expectations are the simulator's replay of the rules on the same
series: the minute the service leaves onboarding, no page on clean traffic, and which alert
fires first after the shift, and when."""


def rule_tests(
    tunables: AlertTunables | None = None, rules: str = "refcheck-alerts.yml"
) -> dict[str, Any]:
    tunables = tunables or AlertTunables()
    groups = []
    for rates, volume in SCENARIOS:
        traffic = Traffic(rates, volume, CLEAN_MINUTES, SHIFTED_MINUTES)
        counts = counters(traffic, 0)
        job = f"{rates.name}_{volume:g}"
        series = Series(job, counts, CLEAN_MINUTES, replay(counts, tunables))
        groups.append(_group(series, traffic, tunables))
    return {"rule_files": [rules], "evaluation_interval": "1m", "tests": groups}


def _group(series: Series, traffic: Traffic, tunables: AlertTunables) -> dict[str, Any]:
    alerts = list(SHARE_ALERTS)
    assert series.predicted is not None
    ready = baseline_ready(series.counts, tunables)
    onboarded = int(ready.argmax()) if ready.any() else None
    first = first_firing(series.predicted, series.clean_minutes)
    queries = [*page_queries(series, alerts), firing_query(series, alerts)]
    detection = detection_query(series, alerts)
    group = promtool_group(_name(series, traffic, onboarded, first), series, [*queries, detection])
    tests = group["promql_expr_test"]
    if onboarded is not None:
        tests += [_ready(series.job, onboarded - 1, 0.0), _ready(series.job, onboarded, 1.0)]
    if first is not None:
        minute, fired = series.clean_minutes + first[0], first[1]
        severity = {
            alert: getattr(tunables, key).severity
            for share in SHARES
            for alert, key in ((share.alert, share.key), (share.level_alert, share.level_key))
        }
        tests += [
            _alerts(series.job, minute - 1, []),
            _alerts(series.job, minute, [(alert, severity[alert]) for alert in fired]),
        ]
    return group


def _name(
    series: Series, traffic: Traffic, onboarded: int | None, first: tuple[int, list[str]] | None
) -> str:
    assert series.predicted is not None
    rates = traffic.rates
    clean = rates.hallucination_share(0.0)
    shifted = rates.hallucination_share(traffic.unsupported)
    pages = sum(
        int(onsets(firing)[: series.clean_minutes + 1].sum())
        for firing in series.predicted.values()
    )
    outcome = "no alert within 3 hours"
    if first is not None:
        verb = "fires" if len(first[1]) == 1 else "fire"
        outcome = f"{' and '.join(first[1])} {verb} {first[0]} minutes after"
    return (
        f"share alerts, simulated: {rates.name}'s rates, {traffic.claims_per_minute:g} claims a "
        f"minute; onboarding until minute {onboarded}, {pages or 'no'} page{'s' * (pages != 1)} "
        f"in {series.clean_minutes} minutes of clean traffic (hallucination share {clean:.3f}); "
        f"then {traffic.unsupported:.0%} unsupported claims (share {shifted:.3f}): {outcome}"
    )


def _ready(job: str, minute: int, value: float) -> dict[str, Any]:
    return {
        "expr": f'{BASELINE_READY}{{job="{job}"}}',
        "eval_time": f"{minute}m",
        "exp_samples": [{"labels": f'{BASELINE_READY}{{job="{job}"}}', "value": value}],
    }


def _alerts(job: str, minute: int, fired: list[tuple[str, str]]) -> dict[str, Any]:
    """`fired`: (alert, severity) pairs expected firing at `minute`."""
    return {
        "expr": f'ALERTS{{alertstate="firing",job="{job}"}}',
        "eval_time": f"{minute}m",
        "exp_samples": [
            {
                "labels": f'ALERTS{{alertname="{alert}",alertstate="firing",job="{job}",'
                f'severity="{severity}"}}',
                "value": 1,
            }
            for alert, severity in fired
        ],
    }


def rule_tests_yaml(
    tunables: AlertTunables | None = None, rules: str = "refcheck-alerts.yml"
) -> str:
    comment = "\n".join(f"# {line}".rstrip() for line in _HEADER.splitlines())
    return f"{comment}\n{yaml_text.dump(rule_tests(tunables, rules))}"
