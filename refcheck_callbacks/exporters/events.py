"""`gen_ai.evaluation.result` events: one per claim, retrieval diagnostics' `relevance` events
(`exporters.diagnostics`), and one per answer.

OpenTelemetry deprecated span events in 2026 (OTEP 4430): new events are log records emitted
through the Logs API, with an event name, in the context of the span they describe (so they
carry its trace and span ids). That is the default here. Back ends that read only spans (Jaeger,
Zipkin, Phoenix's trace view) need the old form: span events on the evaluation span, which
`EventMode.SPAN` keeps, and `EventMode.BOTH` sends both ways.
"""

from __future__ import annotations

from enum import Enum

from opentelemetry import trace
from opentelemetry._logs import Logger, SeverityNumber
from opentelemetry.context import Context

from refcheck_callbacks.contract.feedback import Feedback
from refcheck_callbacks.exporters import names
from refcheck_callbacks.exporters.attributes import (
    Attributes,
    ResultAttributes,
    feedback_answer,
    feedback_claim,
)
from refcheck_callbacks.types import CheckResult


class EventMode(str, Enum):
    """Where evaluation events go."""

    LOGS = "logs"
    """Log records through the Logs API (the current convention; needs a LoggerProvider)."""
    SPAN = "span"
    """Span events on the evaluation span (for back ends that read only spans)."""
    BOTH = "both"


class EvaluationEvents:
    """Emits a result's events the way `mode` says."""

    def __init__(self, mode: EventMode, logger: Logger, attributes: ResultAttributes) -> None:
        self.mode = mode
        self.logger = logger
        self.attributes = attributes

    def emit(self, result: CheckResult, in_span: Context, timestamp: int) -> None:
        """The answer's event last: the SDK keeps only a span's latest events (128 by
        default), so an answer with very many claims loses its first claim events, never
        its verdict."""
        for index in range(len(result.verdicts)):
            self._one(self.attributes.claim(result, index), in_span, timestamp)
        for relevance in self.attributes.relevance(result):
            self._one(relevance, in_span, timestamp)
        self._one(self.attributes.response(result), in_span, timestamp)

    def emit_feedback(self, feedback: Feedback, in_trace: Context, timestamp: int) -> None:
        """One event per labelled claim, then one for the answer when it was labelled. Log
        records whatever the mode: the answer's spans ended long before a person's verdict,
        so there is no span left to add an event to."""
        for claim in feedback.claims:
            self._log(feedback_claim(feedback, claim), in_trace, timestamp)
        if feedback.answer is not None:
            self._log(feedback_answer(feedback), in_trace, timestamp)

    def _log(self, attributes: Attributes, context: Context, timestamp: int) -> None:
        self.logger.emit(
            timestamp=timestamp,
            context=context,
            severity_number=SeverityNumber.INFO,
            attributes=attributes,
            event_name=names.EVALUATION_EVENT,
        )

    def _one(self, attributes: Attributes, in_span: Context, timestamp: int) -> None:
        if self.mode is not EventMode.SPAN:
            self._log(attributes, in_span, timestamp)
        if self.mode is not EventMode.LOGS:
            trace.get_current_span(in_span).add_event(names.EVALUATION_EVENT, attributes, timestamp)
