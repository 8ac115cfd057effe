"""Every span, event, attribute and metric name refcheck exports, in one place.

Names follow the OpenTelemetry GenAI semantic conventions where they define one (the
`gen_ai.evaluation.result` event and its attributes, `gen_ai.request.model`, `error.type`);
everything of ours sits under the `refcheck.` prefix. Units are UCUM and no name carries a
`_total`: Prometheus exporters add suffixes themselves (see `PROMETHEUS` below, which the shipped
alert rules and dashboard use). Dashboards, alerts and tests import these constants instead of
retyping strings.
"""

from __future__ import annotations

from typing import Final

INSTRUMENTATION_SCOPE: Final = "refcheck_callbacks"

# -- spans -------------------------------------------------------------------------------------
EVALUATION_SPAN: Final = "evaluate refcheck"
"""One per checked answer; a child of the app's captured span context and linked to it."""
STAGE_SPAN_PREFIX: Final = "refcheck "
"""Child spans of the evaluation span are named `refcheck <stage>` (queue, redact, extract...)."""

# -- events ------------------------------------------------------------------------------------
EVALUATION_EVENT: Final = "gen_ai.evaluation.result"
CLAIM_EVALUATION: Final = "refcheck.claim"
"""`gen_ai.evaluation.name` of the event for one claim."""
RESPONSE_EVALUATION: Final = "refcheck.response"
"""`gen_ai.evaluation.name` of the event for the whole answer; its score is the hallucination
ratio (0 = every claim entailed), its label the strict aggregate or `abstain`."""
FEEDBACK_EVALUATION: Final = "refcheck.feedback"
"""`gen_ai.evaluation.name` of a person's verdict (`monitor.feedback`): one event per labelled
claim (with `refcheck.claim.index`), or one for the answer; its label is the person's."""
RELEVANCE_EVALUATION: Final = "relevance"
"""`gen_ai.evaluation.name` of retrieval diagnostics' relevance scores: one event per reference
(`refcheck.relevance.subject` = `reference`, with its index and document id) and one for the
answer (`answer`). The canonical name, not a `refcheck.` one: consumers that keep only
canonical evaluation names (Splunk's emitter keeps relevance, hallucination, sentiment,
toxicity, bias) keep these."""

# -- attributes from the GenAI conventions -----------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
EVALUATION_OPERATION: Final = "evaluation"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
"""Content: exported only with `capture_content=True`."""
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
TOKEN_TYPE_INPUT: Final = "input"
TOKEN_TYPE_OUTPUT: Final = "output"
ERROR_TYPE: Final = "error.type"

# -- our attributes: always exported (labels, scores, counts, ids) ----------------------------
EXTRACTOR: Final = "refcheck.extractor"
CHECKER: Final = "refcheck.checker"
LLM_ROLE: Final = "refcheck.llm.role"
"""What an LLM call of refcheck's was for: `checker` (a judge) or `extractor`."""
CHECKER_PLACEMENT: Final = "refcheck.checker.placement"
"""Where the claims were checked: `thread`, `process` or `service` (`types.Placement`)."""
OUTCOME: Final = "refcheck.outcome"
REQUEST_ID: Final = "refcheck.request.id"
REFERENCE_COUNT: Final = "refcheck.reference.count"
CLAIM_COUNT: Final = "refcheck.claim.count"
CLAIM_FAILED_COUNT: Final = "refcheck.claim.failed_count"
CLAIM_INDEX: Final = "refcheck.claim.index"
CLAIM_EVIDENCE_DOC_IDS: Final = "refcheck.claim.evidence.doc_ids"
"""Ids of the references that decided the verdict (those that have an id)."""
CLAIM_EVIDENCE_INDICES: Final = "refcheck.claim.evidence.reference_indices"
"""Positions of those references in the request, for references without an id."""
CLAIM_STAGE: Final = "refcheck.claim.stage"
"""The cascade stage that decided the claim (cascade checkers only)."""
CLAIM_DECIDED_BY: Final = "refcheck.claim.decided_by"
"""The checker that decided the claim: the answer's checker, or the fallback a judge budget
sent it to (`Verdict.decided_by`)."""
CLAIM_FALLBACK: Final = "refcheck.claim.fallback"
"""Why a fallback checker decided the claim: `budget_exhausted` (`Verdict.fallback`)."""
CLAIM_HALLUCINATION_TYPE: Final = "refcheck.claim.hallucination_type"
"""A FAVA-style type (entity, relation, invented, ...) when the checker gives one."""
CLAIM_CONFLICT: Final = "refcheck.claim.conflict"
"""A Contradiction's kind of conflict: value, date, entity, negation or exclusive
(`types.ConflictKind`)."""
CLAIM_CAUSE: Final = "refcheck.claim.cause"
"""Why a claim is not supported: retrieval_missed, unsupported_by_relevant_context or
contradicted (`types.Cause`); absent on a supported claim."""
CLAIM_RELEVANCE: Final = "refcheck.claim.relevance"
"""How much the claim bears on the question, in [0, 1] (`Verdict.relevance`)."""
RELEVANCE_SUBJECT: Final = "refcheck.relevance.subject"
"""What a `relevance` event scores: `reference` (one retrieved document) or `answer`; on a
relevance fallback also `claim`."""
SUBJECT_REFERENCE: Final = "reference"
SUBJECT_ANSWER: Final = "answer"
RELEVANCE_SCORER: Final = "refcheck.relevance.scorer"
"""Who scored relevance: `embedded` (the offline head) or `llm` (`CheckResult.relevance_scorer`)."""
RELEVANCE_FALLBACK: Final = "refcheck.relevance.fallback"
"""Why the LLM relevance judge gave no score: `budget_exhausted`, `unreadable`, `left_out`,
or the failed call's kind (`types.RelevanceFallback.reason`)."""
RELEVANT_ABOVE: Final = 0.5
"""A relevance score above this is `relevant`: the boundary of the relevance histograms'
`le="0.5"` bucket, so an event's label and the alert rule's count of references that are not
relevant agree."""
RELEVANT: Final = "relevant"
"""`gen_ai.evaluation.score.label` of a relevance score above `RELEVANT_ABOVE`."""
NOT_RELEVANT: Final = "not_relevant"
NON_ANSWER_LABEL: Final = "non_answer"
"""The answer relevance event's label for a refusal or non-answer, whatever its score."""
REFERENCE_INDEX: Final = "refcheck.reference.index"
"""A reference's position in the request's references."""
REFERENCE_DOC_ID: Final = "refcheck.reference.doc_id"
"""The reference's document id, when the retriever gave one."""
REFERENCE_USED: Final = "refcheck.reference.used"
"""Whether the reference supported at least one claim (`ReferenceUse.used`)."""
REFERENCE_SUPPORTED_CLAIMS: Final = "refcheck.reference.supported_claims"
"""The indices of the claims the reference supports."""
RESPONSE_ANSWER_RELEVANCE: Final = "refcheck.response.answer_relevance"
"""Whether the answer addresses the question, in [0, 1] (`CheckResult.answer_relevance`)."""
RESPONSE_REFERENCES_USED_RATIO: Final = "refcheck.response.references_used_ratio"
"""The share of the answer's references that supported at least one claim."""
RESPONSE_NON_ANSWER: Final = "refcheck.response.non_answer"
"""The answer is a refusal or a non-answer (`CheckResult.non_answer`)."""
RESPONSE_LABEL: Final = "refcheck.response.label"
RESPONSE_HALLUCINATION_RATIO: Final = "refcheck.response.hallucination_ratio"
RESPONSE_CONTRADICTION_RATIO: Final = "refcheck.response.contradiction_ratio"
STAGE: Final = "refcheck.stage"
"""A pipeline stage (queue, extract, check...), `check.<name>` for a cascade stage's share of
the check, or the cascade stage itself on escalations."""
VERDICT: Final = "refcheck.verdict"
VERDICT_ERROR: Final = "error"
"""`refcheck.verdict` of a claim the checker failed on (a verdict with no label)."""
REASON: Final = "refcheck.reason"
FEEDBACK_LABEL: Final = "refcheck.feedback.label"
"""A person's label: entailment, neutral or contradiction; supported or unsupported."""
FEEDBACK_AGREED: Final = "refcheck.feedback.agreed"
"""Whether the checker's verdict agrees with the person's label (`true` / `false`)."""
CALIBRATION_ID: Final = "refcheck.calibration.id"
"""The `Calibration.id` the monitor's pipeline applies (a 12-hex digest): on `refcheck.claims`
and the calibration gauges, absent when the monitor is uncalibrated."""
RATE: Final = "refcheck.rate"
"""The prevalence rate a calibration gauge is for: `hallucination` or `contradiction`
(`check.calibration.rates.RateName`)."""

# -- our attributes: content, only with capture_content=True ----------------------------------
QUESTION: Final = "refcheck.question"
ANSWER: Final = "refcheck.answer"
CLAIM_TEXT: Final = "refcheck.claim.text"
CLAIM_EVIDENCE_TEXT: Final = "refcheck.claim.evidence.text"
CLAIM_SUGGESTION: Final = "refcheck.claim.suggestion"
MESSAGE: Final = "refcheck.message"
"""Why the outcome is what it is; content because error messages can quote the input."""
CONTENT_ATTRIBUTES: Final = frozenset(
    {QUESTION, ANSWER, CLAIM_TEXT, CLAIM_EVIDENCE_TEXT, CLAIM_SUGGESTION, MESSAGE}
    | {GEN_AI_EVALUATION_EXPLANATION}
)
"""The attributes that carry text from the request or the checker: clipped to the exporter's
`max_content_chars` (every other string attribute to `attributes.MAX_VALUE_CHARS`)."""

# -- metrics (OpenTelemetry names, units) ------------------------------------------------------
CLAIMS: Final = "refcheck.claims"
RESPONSES: Final = "refcheck.responses"
HALLUCINATION_RATIO: Final = RESPONSE_HALLUCINATION_RATIO
CONTRADICTION_RATIO: Final = RESPONSE_CONTRADICTION_RATIO
STAGE_DURATION: Final = "refcheck.stage.duration"
QUEUE_SIZE: Final = "refcheck.queue.size"
CHECKER_BATCH_SIZE: Final = "refcheck.checker.batch.size"
DROPPED: Final = "refcheck.dropped"
SKIPPED: Final = "refcheck.skipped"
ERRORS: Final = "refcheck.errors"
LLM_TOKENS: Final = "refcheck.llm.tokens"
LLM_COST: Final = "refcheck.llm.cost"
LLM_BUDGET_FALLBACKS: Final = "refcheck.llm.budget.fallbacks"
"""LLM calls a judge budget refused (their claims went to the fallback), by model and role."""
LLM_BUDGET_UTILIZATION: Final = "refcheck.llm.budget.utilization"
"""Gauge: the share of the judge budget spent or held in its window, by model and role."""
CASCADE_ESCALATIONS: Final = "refcheck.cascade.escalations"
FEEDBACK_CLAIMS: Final = "refcheck.feedback.claims"
"""Claims a person labelled, by the checker's verdict, the person's label and agreement."""
FEEDBACK_REFUSED: Final = "refcheck.feedback.refused"
REFERENCE_RELEVANCE: Final = "refcheck.reference.relevance"
"""Histogram: each retrieved reference's relevance to the question (its `le="0.5"` bucket
counts the references that are not relevant, which `RefCheckRelevanceDrop` reads)."""
ANSWER_RELEVANCE: Final = RESPONSE_ANSWER_RELEVANCE
REFERENCES_USED_RATIO: Final = RESPONSE_REFERENCES_USED_RATIO
CLAIM_CAUSES: Final = "refcheck.claim.causes"
"""Claims not supported, by `refcheck.claim.cause`."""
NON_ANSWERS: Final = "refcheck.non_answers"
"""Refusals and non-answers, counted apart from hallucination."""
RELEVANCE_FALLBACKS: Final = "refcheck.relevance.fallbacks"
"""Relevance scores the LLM relevance judge could not give (the offline head gave them), by
`refcheck.relevance.subject` (reference, claim, answer) and `refcheck.relevance.fallback`."""
TRUNCATED: Final = "refcheck.truncated"
"""Answers checked with a field cut to its limit (`InputLimits`), by field."""
COLLECT_REJECTED: Final = "refcheck.collect.rejected"
"""What `refcheck collect` refused (requests; spans for `bad_span_id`), by reason."""
COLLECT_NOT_FORWARDED: Final = "refcheck.collect.not_forwarded"
COLLECT_IGNORED: Final = "refcheck.collect.ignored"
"""Export requests of signals `refcheck collect` answers and does not read, by signal."""

# The loaded calibration's flag counts on audit labels (`RateFit`), per rate and calibration id:
# gauges, so recording rules adjust a window's flag share by them (`alerting.estimate_rules`).
CALIBRATION_POSITIVES: Final = "refcheck.calibration.positives"
"""Gauge: audit-labelled claims of the rate's kind (unsupported, or contradicted)."""
CALIBRATION_NEGATIVES: Final = "refcheck.calibration.negatives"
"""Gauge: audit-labelled claims not of the rate's kind."""
CALIBRATION_FLAGGED_POSITIVES: Final = "refcheck.calibration.flagged_positives"
"""Gauge: of the positives, those the checker flagged (`rates.flags`)."""
CALIBRATION_FLAGGED_NEGATIVES: Final = "refcheck.calibration.flagged_negatives"
"""Gauge: of the negatives, those the checker flagged."""
CALIBRATION_LABELS: Final = "refcheck.calibration.labels"
"""Gauge: audit labels the rate's fit used; 0 (and no calibration id) when uncalibrated."""
AUDIT_DRAWS: Final = "refcheck.audit.draws"
"""Answers the random audit drew, by what became of each (`written`, or why not)."""

# -- the checker service (`refcheck serve`): Ray Serve metrics --------------------------------
SERVE_BATCH_INPUTS: Final = "refcheck_serve_batch_inputs"
"""Histogram: claims (checker) or answers (extractor) per model call the service made. Ray
names metrics Prometheus-style and exports them with a `ray_` prefix; tags `role`, `component`."""
SERVE_BATCH_CALLS: Final = "refcheck_serve_batch_calls"
"""Histogram: callers' calls merged into one model call by `@serve.batch`."""
SERVE_FAILED_REQUESTS: Final = "refcheck_serve_failed_requests"
"""Counter: requests whose inputs failed in the service's component even when run alone."""

UNIT_CLAIM: Final = "{claim}"
UNIT_RESPONSE: Final = "{response}"
UNIT_REQUEST: Final = "{request}"
UNIT_ERROR: Final = "{error}"
UNIT_TOKEN: Final = "{token}"
UNIT_USD: Final = "{USD}"
UNIT_CALL: Final = "{call}"
UNIT_FEEDBACK: Final = "{feedback}"
UNIT_SCORE: Final = "{score}"
UNIT_RATIO: Final = "1"
UNIT_SECONDS: Final = "s"

PROMETHEUS: Final[dict[str, str]] = {
    CLAIMS: "refcheck_claims_total",
    RESPONSES: "refcheck_responses_total",
    HALLUCINATION_RATIO: "refcheck_response_hallucination_ratio",
    CONTRADICTION_RATIO: "refcheck_response_contradiction_ratio",
    STAGE_DURATION: "refcheck_stage_duration_seconds",
    QUEUE_SIZE: "refcheck_queue_size",
    CHECKER_BATCH_SIZE: "refcheck_checker_batch_size",
    DROPPED: "refcheck_dropped_total",
    SKIPPED: "refcheck_skipped_total",
    ERRORS: "refcheck_errors_total",
    LLM_TOKENS: "refcheck_llm_tokens_total",
    LLM_COST: "refcheck_llm_cost_total",
    LLM_BUDGET_FALLBACKS: "refcheck_llm_budget_fallbacks_total",
    LLM_BUDGET_UTILIZATION: "refcheck_llm_budget_utilization",
    CASCADE_ESCALATIONS: "refcheck_cascade_escalations_total",
    FEEDBACK_CLAIMS: "refcheck_feedback_claims_total",
    FEEDBACK_REFUSED: "refcheck_feedback_refused_total",
    REFERENCE_RELEVANCE: "refcheck_reference_relevance",
    ANSWER_RELEVANCE: "refcheck_response_answer_relevance",
    REFERENCES_USED_RATIO: "refcheck_response_references_used_ratio",
    CLAIM_CAUSES: "refcheck_claim_causes_total",
    NON_ANSWERS: "refcheck_non_answers_total",
    RELEVANCE_FALLBACKS: "refcheck_relevance_fallbacks_total",
    TRUNCATED: "refcheck_truncated_total",
    COLLECT_REJECTED: "refcheck_collect_rejected_total",
    COLLECT_NOT_FORWARDED: "refcheck_collect_not_forwarded_total",
    COLLECT_IGNORED: "refcheck_collect_ignored_total",
    CALIBRATION_POSITIVES: "refcheck_calibration_positives",
    CALIBRATION_NEGATIVES: "refcheck_calibration_negatives",
    CALIBRATION_FLAGGED_POSITIVES: "refcheck_calibration_flagged_positives",
    CALIBRATION_FLAGGED_NEGATIVES: "refcheck_calibration_flagged_negatives",
    CALIBRATION_LABELS: "refcheck_calibration_labels",
    AUDIT_DRAWS: "refcheck_audit_draws_total",
}
"""How `opentelemetry-exporter-prometheus` (and the collector's Prometheus exporter) render each
metric: dots become underscores, the unit `s` adds `_seconds`, counters get `_total`, and
annotation units like `{claim}` add nothing. Attribute keys render the same way
(`refcheck.verdict` -> `refcheck_verdict`). A test scrapes a real exporter to keep this true."""
