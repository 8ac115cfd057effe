"""The relevance alert: a service's retrieved references are significantly less relevant than
its own baseline (`RefCheckRelevanceDrop`).

The share alerts' shape (`share_rules`), on references instead of claims: the share of
references that are not relevant (the `le="0.5"` bucket of `refcheck.reference.relevance`, whose
count is every reference scored) in a fast and a slow window, against the same share over the
baseline window that ends `baseline_offset` ago:

    lower Wilson bound of the recent share - upper Wilson bound of the baseline share > effect

Relevance differs by app as much as hallucination does (a retriever that returns four passages
for a question one answers has a high normal share of irrelevant ones), so there is no absolute
floor; a service has no relevance baseline, and cannot page, until its baseline window holds
`min_baseline_references`. References of one answer share their fate (a missed retrieval makes
all of them irrelevant), so their share is noisier than a binomial of that many: the bounds
count `references / design_effect` (2.5 by default: four references correlated at 0.5; 1 reads
them as independent), and `alerting.simulator.relevance` measures what that gives on traffic
drawn with such correlation.
"""

from __future__ import annotations

from typing import Any

from refcheck_callbacks.alerting.promql import number, record, windows
from refcheck_callbacks.alerting.share_rules import (
    WINDOWS,
    percent,
    recorded_value,
    wilson_bound,
)
from refcheck_callbacks.alerting.tunables import AlertTunables, RelevanceDrop
from refcheck_callbacks.exporters.names import PROMETHEUS, REFERENCE_RELEVANCE, RELEVANT_ABOVE

ALERT = "RefCheckRelevanceDrop"
_HISTOGRAM = PROMETHEUS[REFERENCE_RELEVANCE]
NOT_RELEVANT_BUCKET = f'{_HISTOGRAM}_bucket{{le="{RELEVANT_ABOVE:g}"}}'
"""References scored at most 1/2: the exporter's label of them is `not_relevant`."""

SCORED = {w: f"job:refcheck_references_scored:increase_{w}" for w in WINDOWS}
"""References with a relevance score in each window."""
NOT_RELEVANT = {w: f"job:refcheck_references_not_relevant:increase_{w}" for w in WINDOWS}
RATIO = {w: f"job:refcheck_references_not_relevant:ratio_{w}" for w in WINDOWS}
LOWER_BOUND = {w: f"job:refcheck_references_not_relevant:lower_bound_{w}" for w in ("fast", "slow")}
UPPER_BOUND = "job:refcheck_references_not_relevant:upper_bound_baseline"

RECORDED = (
    *SCORED.values(),
    *NOT_RELEVANT.values(),
    *RATIO.values(),
    *LOWER_BOUND.values(),
    UPPER_BOUND,
)
"""Every recording of the relevance alert, in the order the rule file evaluates them."""


def relevance_recording_rules(tunables: AlertTunables) -> list[dict[str, Any]]:
    test, drop = tunables.share_test, tunables.relevance_drop
    ranges = windows(test, tunables.baseline_offset)
    rules = [
        record(SCORED[w], f"sum by (job) (increase({_HISTOGRAM}_count{ranges[w]}))")
        for w in WINDOWS
    ]
    rules += [
        record(NOT_RELEVANT[w], f"sum by (job) (increase({NOT_RELEVANT_BUCKET}{ranges[w]}))")
        for w in WINDOWS
    ]
    rules += [record(RATIO[w], f"{NOT_RELEVANT[w]}\n/ {SCORED[w]}") for w in WINDOWS]
    effective = {w: f"({SCORED[w]} / {number(drop.design_effect)})" for w in WINDOWS}
    rules += [
        record(LOWER_BOUND[w], wilson_bound(RATIO[w], effective[w], test.z, "-"))
        for w in ("fast", "slow")
    ]
    upper = wilson_bound(RATIO["baseline"], effective["baseline"], test.z, "+")
    rules.append(
        record(
            UPPER_BOUND,
            f"{upper}\nand on (job)\n{SCORED['baseline']} >= {drop.min_baseline_references}",
        )
    )
    return rules


def _condition(window: str, effect: float, min_references: int) -> str:
    return (
        f"(\n  {RATIO[window]}\n"
        f"  and on (job)\n  {LOWER_BOUND[window]} - on (job) {UPPER_BOUND} > {number(effect)}\n"
        f"  and on (job)\n  {SCORED[window]} >= {min_references}\n)"
    )


def relevance_alert(tunables: AlertTunables) -> dict[str, Any]:
    test = tunables.share_test
    drop: RelevanceDrop = tunables.relevance_drop
    fast = _condition("fast", drop.fast_min_effect, drop.fast_min_references)
    slow = _condition("slow", drop.slow_min_effect, drop.slow_min_references)
    too_few = "too few references"
    return {
        "alert": ALERT,
        "expr": f"{fast}\nor\n{slow}",
        "for": drop.pending_for,
        "labels": {"severity": drop.severity},
        "annotations": {
            "summary": "{{ $labels.job }}: {{ $value | humanizePercentage }} of retrieved "
            "references are not relevant to their questions",
            "description": "{{ $value | humanizePercentage }} of the references retrieved for "
            "{{ $labels.job }}'s recent answers were not relevant to the question (relevance at "
            f"most {RELEVANT_ABOVE:g}), significantly above its own baseline of "
            f"{recorded_value(RATIO['baseline'])} (the {test.baseline_window} ending "
            f"{tunables.baseline_offset} ago). Lower bounds (z={number(test.z)}): "
            f"{recorded_value(LOWER_BOUND['fast'], too_few)} over the last {test.fast_window}, "
            f"{recorded_value(LOWER_BOUND['slow'], too_few)} over the last {test.slow_window}; "
            f"the baseline's upper bound is {recorded_value(UPPER_BOUND)}. It fires when a "
            f"lower bound clears that by {percent(drop.fast_min_effect)} ({test.fast_window}) "
            f"or {percent(drop.slow_min_effect)} ({test.slow_window}).",
            "runbook": _RUNBOOK,
        },
    }


_RUNBOOK = (
    "1. Retrieval changed, not generation: check what was deployed to the retriever (the "
    "index build and its freshness, the embedding model, metadata filters, the number of "
    "documents returned, a reranker). 2. Open the dashboard's diagnostics panels: did claims "
    "by cause move to retrieval_missed (answers from outside the documents) and the share of "
    "references used fall? 3. Look up recent `evaluate refcheck` spans: their `relevance` "
    "gen_ai.evaluation.result events name each document (refcheck.reference.doc_id) with its "
    "score; documents scored not relevant across many questions point at the bad index or "
    "filter. 4. A new kind of traffic (other questions) moves the baseline too: the alert "
    "resolves once the new share has become the baseline (a day by default); a service whose "
    "share legitimately swings needs a larger minimum effect "
    "(`refcheck alert-rules --set relevance_drop.slow_min_effect=...`)."
)
