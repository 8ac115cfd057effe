"""The attributes of a result's evaluation span and of its `gen_ai.evaluation.result` events.

Labels, scores, counts and ids always; text (question, answer, claim, explanation, evidence,
failure messages) only with content capture on, after the exporter's redact hook. Never text
of a result whose redaction failed (`RedactionError`), nor text the exporter's own redact hook
failed on: redaction fails closed. Every string is clipped, ids and model names included: an
app can pass anything as a model name, and the SDK exports an attribute whole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from opentelemetry.util.types import AttributeValue

from refcheck_callbacks.contract.feedback import ClaimFeedback, Feedback
from refcheck_callbacks.errors import CheckError, RedactionError
from refcheck_callbacks.exporters import diagnostics, names
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import CheckResult, Verdict

Attributes = dict[str, AttributeValue]

MAX_VALUE_CHARS = 256
"""Longest string exported in a non-content attribute (model, ids, error type, names)."""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def clip_value(text: str) -> str:
    """A non-content string as it may be exported."""
    return _clip(text, MAX_VALUE_CHARS)


def _clipped(value: AttributeValue, limit: int) -> AttributeValue:
    if isinstance(value, str):
        return _clip(value, limit)
    if isinstance(value, list | tuple) and value and isinstance(value[0], str):
        return [_clip(str(item), limit) for item in value]
    return value


def exportable(
    attributes: Mapping[str, AttributeValue | None], max_content_chars: int = MAX_VALUE_CHARS
) -> Attributes:
    """The attributes that have a value (OpenTelemetry refuses None), every string clipped:
    content attributes to `max_content_chars`, the others to `MAX_VALUE_CHARS`."""
    return {
        key: _clipped(
            value, max_content_chars if key in names.CONTENT_ATTRIBUTES else MAX_VALUE_CHARS
        )
        for key, value in attributes.items()
        if value is not None
    }


def content_withheld(result: CheckResult) -> bool:
    """Whether the result's request was withheld because its redaction failed."""
    return result.error_type == RedactionError.__name__


def _evidence_text(result: CheckResult, index: int, verdict: Verdict) -> str | None:
    """The text of the verdict's first evidence; None when a checker cited no reference or one
    the request does not have (a checker bug must not cost the rest of the result's telemetry)."""
    cited = verdict.evidence[0].reference_index if verdict.evidence else None
    if cited is None or cited >= len(result.request.references):
        return None
    return result.evidence_text(index)


class ResultAttributes:
    """Builds attribute maps for one exporter's content settings."""

    def __init__(
        self, capture_content: bool, max_content_chars: int, redact: Callable[[str], str] | None
    ) -> None:
        self.capture_content = capture_content
        self.max_content_chars = max_content_chars
        self.redact = redact

    def content(self, result: CheckResult, text: str | None) -> str | None:
        """`text` as it may leave the process: None unless content capture is on, and None
        when redaction failed, the request's or this exporter's own."""
        if text is None or not self.capture_content or content_withheld(result):
            return None
        if self.redact is None:
            return text
        try:
            return self.redact(text)
        except BaseException as exc:
            logger.warning(
                "refcheck: the exporter's redact hook raised %s; the text was not exported",
                type(exc).__name__,
            )
            return None

    def span(self, result: CheckResult) -> Attributes:
        request = result.request
        ratios = result.ratios
        return exportable(
            {
                names.GEN_AI_OPERATION_NAME: names.EVALUATION_OPERATION,
                names.OUTCOME: result.outcome.value,
                names.REQUEST_ID: request.request_id,
                names.EXTRACTOR: result.extractor,
                names.CHECKER: result.checker,
                names.CHECKER_PLACEMENT: result.placement and result.placement.value,
                names.REFERENCE_COUNT: len(request.references),
                names.CLAIM_COUNT: len(result.claims),
                names.CLAIM_FAILED_COUNT: sum(v.label is None for v in result.verdicts),
                names.RESPONSE_LABEL: result.response_label and result.response_label.value,
                names.RESPONSE_HALLUCINATION_RATIO: None
                if ratios is None
                else ratios.hallucination,
                names.RESPONSE_CONTRADICTION_RATIO: None
                if ratios is None
                else ratios.contradiction,
                names.GEN_AI_REQUEST_MODEL: request.model,
                names.GEN_AI_RESPONSE_ID: request.response_id,
                names.ERROR_TYPE: result.error_type,
                **diagnostics.answer_attributes(result),
                names.QUESTION: self.content(result, request.question),
                names.ANSWER: self.content(result, request.answer),
                names.MESSAGE: self.content(result, result.message),
            },
            self.max_content_chars,
        )

    def claim(self, result: CheckResult, index: int) -> Attributes:
        verdict = result.verdicts[index]
        claim = result.claims[index] if index < len(result.claims) else None
        doc_ids = [e.reference_id for e in verdict.evidence if e.reference_id is not None]
        return exportable(
            {
                names.GEN_AI_EVALUATION_NAME: names.CLAIM_EVALUATION,
                names.CLAIM_INDEX: index,
                names.GEN_AI_EVALUATION_SCORE_LABEL: verdict.label and verdict.label.value,
                names.GEN_AI_EVALUATION_SCORE_VALUE: None
                if verdict.label is None
                else verdict.confidence,
                # A claim the checker failed on: no label, and the failure's class.
                names.ERROR_TYPE: (verdict.error_type or CheckError.__name__)
                if verdict.label is None
                else None,
                names.CLAIM_EVIDENCE_DOC_IDS: doc_ids or None,
                names.CLAIM_EVIDENCE_INDICES: [e.reference_index for e in verdict.evidence] or None,
                names.CLAIM_HALLUCINATION_TYPE: verdict.hallucination_type,
                names.CLAIM_CONFLICT: verdict.conflict and verdict.conflict.value,
                names.CLAIM_STAGE: verdict.stages[-1].stage if verdict.stages else None,
                names.CLAIM_DECIDED_BY: verdict.decided_by,
                names.CLAIM_FALLBACK: verdict.fallback,
                **diagnostics.claim_attributes(verdict),
                names.GEN_AI_RESPONSE_ID: result.request.response_id,
                names.CLAIM_TEXT: self.content(result, None if claim is None else claim.text),
                names.GEN_AI_EVALUATION_EXPLANATION: self.content(result, verdict.explanation),
                names.CLAIM_EVIDENCE_TEXT: self.content(
                    result, _evidence_text(result, index, verdict)
                ),
                names.CLAIM_SUGGESTION: self.content(result, verdict.suggestion),
                names.MESSAGE: self.content(result, verdict.error),
            },
            self.max_content_chars,
        )

    def response(self, result: CheckResult) -> Attributes:
        ratios = result.ratios
        return exportable(
            {
                names.GEN_AI_EVALUATION_NAME: names.RESPONSE_EVALUATION,
                names.GEN_AI_EVALUATION_SCORE_LABEL: result.response_label
                and result.response_label.value,
                names.GEN_AI_EVALUATION_SCORE_VALUE: None
                if ratios is None
                else ratios.hallucination,
                names.RESPONSE_CONTRADICTION_RATIO: None
                if ratios is None
                else ratios.contradiction,
                names.OUTCOME: result.outcome.value,
                names.CLAIM_COUNT: len(result.claims),
                names.ERROR_TYPE: result.error_type,
                names.GEN_AI_RESPONSE_ID: result.request.response_id,
                **diagnostics.answer_attributes(result),
                names.MESSAGE: self.content(result, result.message),
            },
            self.max_content_chars,
        )

    def relevance(self, result: CheckResult) -> list[Attributes]:
        """The `relevance` events of retrieval diagnostics (`exporters.diagnostics`)."""
        return [exportable(event) for event in diagnostics.relevance_events(result)]


def _feedback(feedback: Feedback, **attributes: AttributeValue | None) -> Attributes:
    return exportable(
        {
            names.GEN_AI_EVALUATION_NAME: names.FEEDBACK_EVALUATION,
            names.GEN_AI_RESPONSE_ID: feedback.response_id,
            names.REQUEST_ID: feedback.request_id,
            names.CHECKER: feedback.checker,
            **attributes,
        }
    )


def feedback_claim(feedback: Feedback, claim: ClaimFeedback) -> Attributes:
    """A person's label of one claim, beside the checker's: labels and ids, never text."""
    predicted = names.VERDICT_ERROR if claim.predicted is None else claim.predicted.value
    return _feedback(
        feedback,
        **{
            names.CLAIM_INDEX: claim.index,
            names.GEN_AI_EVALUATION_SCORE_LABEL: claim.label.value,
            names.VERDICT: predicted,
            names.FEEDBACK_AGREED: claim.agreed,
        },
    )


def feedback_answer(feedback: Feedback) -> Attributes:
    """A person's label of the whole answer."""
    return _feedback(
        feedback,
        **{
            names.GEN_AI_EVALUATION_SCORE_LABEL: feedback.answer and feedback.answer.value,
            names.FEEDBACK_AGREED: feedback.answer_agreed,
        },
    )
