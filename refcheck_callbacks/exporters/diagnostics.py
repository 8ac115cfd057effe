"""Retrieval diagnostics as telemetry: relevance events, cause on claims, and their metrics.

What a result's diagnostics say (`CheckResult.references_used`, `answer_relevance`,
`non_answer`, each verdict's `relevance` and `cause`) leaves the process as:

- `gen_ai.evaluation.result` events named `relevance` (the canonical name, which consumers that
  keep only canonical names keep): one per reference with a relevance score, carrying its index,
  its document id, whether it was used and which claims it supports; one for the answer;
- attributes on the claim events (`refcheck.claim.cause`, `refcheck.claim.relevance`) and on
  the evaluation span and answer event (answer relevance, share of references used,
  non-answer);
- low-cardinality metrics: the references' and answers' relevance and the share used
  (histograms), claims by cause and non-answers (counters), by checker and model only; and
  the scores an LLM relevance judge could not give, by subject and reason (counter).

A result whose diagnostics did not run (no `references_used`, no scores) adds nothing here, so
a dashboard never reads zeros for answers that were not diagnosed. Labels and scores only: no
text, whatever the content settings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from refcheck_callbacks.exporters import names
from refcheck_callbacks.exporters.instruments import DiagnosticInstruments
from refcheck_callbacks.types import CheckResult, ReferenceUse, Verdict

Raw = Mapping[str, AttributeValue | None]
"""Attributes before `attributes.exportable` drops the missing ones and clips strings."""


def relevance_label(score: float) -> str:
    return names.RELEVANT if score > names.RELEVANT_ABOVE else names.NOT_RELEVANT


def used_ratio(result: CheckResult) -> float | None:
    """The share of the references that supported a claim; None when diagnostics did not run."""
    uses = result.references_used
    return sum(use.used for use in uses) / len(uses) if uses else None


def _diagnosed(result: CheckResult) -> bool:
    return bool(result.references_used) or result.answer_relevance is not None


def answer_attributes(result: CheckResult) -> Raw:
    """For the evaluation span and the answer's `refcheck.response` event."""
    return {
        names.RESPONSE_ANSWER_RELEVANCE: result.answer_relevance,
        names.RESPONSE_REFERENCES_USED_RATIO: used_ratio(result),
        names.RESPONSE_NON_ANSWER: result.non_answer
        if result.non_answer or _diagnosed(result)
        else None,
    }


def claim_attributes(verdict: Verdict) -> Raw:
    """For a claim's `refcheck.claim` event."""
    return {
        names.CLAIM_CAUSE: verdict.cause and verdict.cause.value,
        names.CLAIM_RELEVANCE: verdict.relevance,
    }


def _reference_event(result: CheckResult, use: ReferenceUse, score: float) -> Raw:
    references = result.request.references
    reference = references[use.index] if use.index < len(references) else None
    return {
        names.GEN_AI_EVALUATION_NAME: names.RELEVANCE_EVALUATION,
        names.RELEVANCE_SUBJECT: names.SUBJECT_REFERENCE,
        names.GEN_AI_EVALUATION_SCORE_VALUE: score,
        names.GEN_AI_EVALUATION_SCORE_LABEL: relevance_label(score),
        names.REFERENCE_INDEX: use.index,
        names.REFERENCE_DOC_ID: None if reference is None else reference.id,
        names.REFERENCE_USED: use.used,
        names.REFERENCE_SUPPORTED_CLAIMS: list(use.supports) or None,
        names.GEN_AI_RESPONSE_ID: result.request.response_id,
    }


def relevance_events(result: CheckResult) -> list[Raw]:
    """One event per reference that has a relevance score, in input order, then the answer's
    when it has one. A refusal or non-answer is labelled `non_answer` whatever its score."""
    events = [
        _reference_event(result, use, use.relevance)
        for use in result.references_used
        if use.relevance is not None
    ]
    score = result.answer_relevance
    if score is not None:
        label = names.NON_ANSWER_LABEL if result.non_answer else relevance_label(score)
        events.append(
            {
                names.GEN_AI_EVALUATION_NAME: names.RELEVANCE_EVALUATION,
                names.RELEVANCE_SUBJECT: names.SUBJECT_ANSWER,
                names.GEN_AI_EVALUATION_SCORE_VALUE: score,
                names.GEN_AI_EVALUATION_SCORE_LABEL: label,
                names.RESPONSE_REFERENCES_USED_RATIO: used_ratio(result),
                names.RESPONSE_NON_ANSWER: result.non_answer,
                names.GEN_AI_RESPONSE_ID: result.request.response_id,
            }
        )
    return events


def record_diagnostics(
    meters: DiagnosticInstruments,
    result: CheckResult,
    common: Mapping[str, AttributeValue],
    context: Context,
) -> None:
    """The result's diagnostics into the metrics, by `common` (checker and model) only."""
    for use in result.references_used:
        if use.relevance is not None:
            meters.reference_relevance.record(use.relevance, common, context)
    if result.answer_relevance is not None:
        meters.answer_relevance.record(result.answer_relevance, common, context)
    if (ratio := used_ratio(result)) is not None:
        meters.references_used_ratio.record(ratio, common, context)
    causes = Counter(v.cause.value for v in result.verdicts if v.cause is not None)
    for cause, count in sorted(causes.items()):
        meters.claim_causes.add(count, {**common, names.CLAIM_CAUSE: cause}, context)
    if result.non_answer:
        meters.non_answers.add(1, common, context)
    fallbacks = Counter((f.subject.value, f.reason) for f in result.relevance_fallbacks)
    for (subject, reason), count in sorted(fallbacks.items()):
        attributes = {
            **common,
            names.RELEVANCE_SUBJECT: subject,
            names.RELEVANCE_FALLBACK: reason,
            names.RELEVANCE_SCORER: result.relevance_scorer or "",
        }
        meters.relevance_fallbacks.add(count, attributes, context)
