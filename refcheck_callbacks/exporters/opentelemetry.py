"""Results as OpenTelemetry: an `evaluate refcheck` span per answer, evaluation events, metrics.

The span joins the app's trace: it is a child of the span context captured when the answer was
produced (and links to it, so back ends that draw links show the jump from the chain to its
late-arriving evaluation). It starts when the answer was submitted and ends when its result was
ready, with one child span per pipeline stage at the stage's real wall-clock time. Each claim's
verdict and the answer's aggregate are `gen_ai.evaluation.result` events in the span's context
(log records by default; see `events`). Metrics are recorded inside the span's context so the
SDK can attach exemplars that point at the trace.

Content (question, answer, claim, explanation and evidence text, failure messages) is exported
only with `capture_content=True`, clipped to `max_content_chars`. The pipeline already ran the
monitor's `redact` hook over every text in a result; `redact` here is an extra hook for text
that only this exporter sees leave the process.

All names come from `refcheck_callbacks.exporters.names`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence

from opentelemetry import _logs, metrics, trace
from opentelemetry import context as otel_context
from opentelemetry._logs import LoggerProvider
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TracerProvider,
)

from refcheck_callbacks.check.calibration.file import Calibration
from refcheck_callbacks.contract.components import Exporter
from refcheck_callbacks.contract.feedback import Feedback
from refcheck_callbacks.contract.reasons import Tally
from refcheck_callbacks.exporters import names
from refcheck_callbacks.exporters.attributes import ResultAttributes, clip_value, exportable
from refcheck_callbacks.exporters.diagnostics import record_diagnostics
from refcheck_callbacks.exporters.events import EvaluationEvents, EventMode
from refcheck_callbacks.exporters.instruments import instruments_for
from refcheck_callbacks.support.deadline import MAX_WAIT_S, Deadline
from refcheck_callbacks.support.instrumentation import suppressed_instrumentation
from refcheck_callbacks.types import CheckResult, ModelSpend, Outcome, TraceContext

_NO_DEADLINE_FLUSH_MS = int(MAX_WAIT_S * 1000)
"""What a provider's `force_flush` is told when the flush has no deadline: the longest wait."""
_FAILED_OUTCOMES = frozenset({Outcome.ERROR, Outcome.TIMEOUT, Outcome.INVALID_INPUT})


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _parent_context(captured: TraceContext | None) -> tuple[Context, list[Link]]:
    """The context to start the evaluation span in, and the link back to the app's span.

    Built on the current context (which carries the suppression flag) but never on its span:
    the worker thread's ambient span, if any, is not the answer's.
    """
    current = otel_context.get_current()
    if captured is None:
        return trace.set_span_in_context(trace.INVALID_SPAN, current), []
    span_context = SpanContext(
        trace_id=captured.trace_id_int,
        span_id=int(captured.span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(captured.trace_flags),
    )
    return trace.set_span_in_context(NonRecordingSpan(span_context), current), [Link(span_context)]


class OpenTelemetryExporter(Exporter):
    """Exports every result as a span with evaluation events, and keeps refcheck's metrics.

    Args:
        tracer_provider, meter_provider, logger_provider: where spans, metrics and evaluation
            events go; default the global ones (resolved lazily, so an app may configure
            OpenTelemetry after creating the monitor).
        events: "logs" (default): `gen_ai.evaluation.result` log records through the Logs API;
            "span": span events on the evaluation span, for back ends that read only spans;
            "both".
        capture_content: export question, answer, claim, explanation and evidence text.
        max_content_chars: longest text attribute exported; longer ones end in "…".
        redact: an extra hook over exported text, on top of the monitor's `redact`.

    The providers belong to the app: `shutdown` stops this exporter's gauge but never shuts a
    provider down, and `force_flush` flushes them (a no-op on providers that cannot flush).
    """

    name = "opentelemetry"

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        *,
        events: str | EventMode = EventMode.LOGS,
        capture_content: bool = False,
        max_content_chars: int = 4096,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        if max_content_chars < 1:
            raise ValueError("max_content_chars must be at least 1")
        self.capture_content = capture_content
        self._attributes = ResultAttributes(capture_content, max_content_chars, redact)
        self._providers = (tracer_provider, meter_provider, logger_provider)
        self._tracer = trace.get_tracer(
            names.INSTRUMENTATION_SCOPE, tracer_provider=tracer_provider
        )
        logger = _logs.get_logger(names.INSTRUMENTATION_SCOPE, logger_provider=logger_provider)
        self._events = EvaluationEvents(EventMode(events), logger, self._attributes)
        self._instruments = instruments_for(meter_provider)
        self._queue_size: Callable[[], int] | None = None
        self._calibration_id: str | None = None

    # -- Exporter ---------------------------------------------------------------------------

    def bind(self, queue_size: Callable[[], int]) -> None:
        self._queue_size = queue_size
        self._instruments.watch_queue(self)

    def calibrated(self, calibration: Calibration | None) -> None:
        """Name the calibration on the claim counts, and export its flag counts as gauges
        (`calibration_gauges`) until `shutdown`."""
        self._calibration_id = None if calibration is None else calibration.id
        self._instruments.calibration.watch(self, calibration)

    def queue_size(self) -> int | None:
        """The bound monitor's queue length; None before `bind` or after `shutdown`."""
        return None if self._queue_size is None else self._queue_size()

    def export(self, results: Sequence[CheckResult]) -> None:
        with suppressed_instrumentation():
            claims = sum(len(r.claims) for r in results if r.verdicts)
            if claims:
                self._instruments.batch_size.record(claims)
            for result in results:
                self._export_one(result)

    def _export_one(self, result: CheckResult) -> None:
        parent, links = _parent_context(result.request.trace_context)
        span = self._tracer.start_span(
            names.EVALUATION_SPAN,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=self._attributes.span(result),
            links=links,
            start_time=_ns(result.request.submitted_at),
        )
        try:
            in_span = trace.set_span_in_context(span, parent)
            self._stage_spans(result, in_span)
            self._events.emit(result, in_span, _ns(result.finished_at))
            if result.outcome in _FAILED_OUTCOMES:
                description = clip_value(result.error_type or "refcheck")
                span.set_status(Status(StatusCode.ERROR, description))
            self._record_metrics(result, in_span)
        finally:
            span.end(end_time=_ns(max(result.finished_at, result.request.submitted_at)))

    def feedback(self, feedback: Feedback) -> None:
        """A person's verdict: `refcheck.feedback` events in the answer's trace, and the
        labelled claims counted by agreement (a claim the checker failed on is not)."""
        with suppressed_instrumentation():
            parent, _ = _parent_context(feedback.trace_context)
            self._events.emit_feedback(feedback, parent, time.time_ns())
            checker = exportable({names.CHECKER: feedback.checker})
            for claim in feedback.claims:
                if claim.agreed is None or claim.predicted is None:
                    continue
                attributes = {
                    **checker,
                    names.VERDICT: claim.predicted.value,
                    names.FEEDBACK_LABEL: claim.label.value,
                    names.FEEDBACK_AGREED: str(claim.agreed).lower(),
                }
                self._instruments.feedback_claims.add(1, attributes, parent)

    def record(self, tally: Tally, reason: str, count: int = 1) -> None:
        with suppressed_instrumentation():
            self._instruments.tallies[tally].add(count, {names.REASON: reason})

    def force_flush(self, timeout: float) -> bool:
        """Flush the three providers within `timeout` seconds in total (each is told what is
        left). The SDK can overrun what it is told; the monitor bounds this call as a whole."""
        deadline = Deadline(timeout)
        tracer_provider, meter_provider, logger_provider = self._providers
        flushed = True
        with suppressed_instrumentation():
            for provider in (
                tracer_provider or trace.get_tracer_provider(),
                meter_provider or metrics.get_meter_provider(),
                logger_provider or _logs.get_logger_provider(),
            ):
                flush = getattr(provider, "force_flush", None)
                if flush is not None:
                    left = deadline.remaining()
                    millis = _NO_DEADLINE_FLUSH_MS if left is None else int(left * 1000)
                    flushed = bool(flush(millis)) and flushed
        return flushed

    def shutdown(self) -> None:
        self._queue_size = None
        self._instruments.unwatch_queue(self)
        self._instruments.calibration.unwatch(self)

    # -- spans ------------------------------------------------------------------------------

    def _stage_spans(self, result: CheckResult, parent: Context) -> None:
        """A child span per stage with a known start; `total` is the evaluation span itself."""
        for stage, seconds in result.timings.items():
            started = result.stage_started.get(stage)
            if stage == "total" or started is None:
                continue
            span = self._tracer.start_span(
                names.STAGE_SPAN_PREFIX + stage,
                context=parent,
                attributes={names.STAGE: stage},
                start_time=_ns(started),
            )
            span.end(end_time=_ns(started + seconds))

    # -- metrics ----------------------------------------------------------------------------

    def _record_metrics(self, result: CheckResult, context: Context) -> None:
        """Every point is recorded in the evaluation span's context, for exemplars."""
        meters = self._instruments
        common = exportable(
            {names.CHECKER: result.checker, names.GEN_AI_REQUEST_MODEL: result.request.model}
        )
        verdicts = Counter(
            names.VERDICT_ERROR if v.label is None else v.label.value for v in result.verdicts
        )
        claims = {**common, **exportable({names.CALIBRATION_ID: self._calibration_id})}
        for verdict, count in sorted(verdicts.items()):
            meters.claims.add(count, {**claims, names.VERDICT: verdict}, context)
        response = {**common, names.OUTCOME: result.outcome.value}
        if result.response_label is not None:
            response[names.RESPONSE_LABEL] = result.response_label.value
        meters.responses.add(1, response, context)
        if result.ratios is not None:
            meters.hallucination_ratio.record(result.ratios.hallucination, common, context)
            meters.contradiction_ratio.record(result.ratios.contradiction, common, context)
        for stage, seconds in result.timings.items():
            meters.stage_duration.record(seconds, {names.STAGE: stage}, context)
        self._record_cascade(result, context)
        self._record_usage(result, context)
        record_diagnostics(meters.diagnostics, result, common, context)

    def _record_cascade(self, result: CheckResult, context: Context) -> None:
        """Escalations by the stage that passed claims on, and each stage's share of the check:
        the longest of its calls that held one of this answer's claims."""
        escalated = Counter(step.stage for v in result.verdicts for step in v.stages[:-1])
        for stage, count in sorted(escalated.items()):
            self._instruments.escalations.add(count, {names.STAGE: stage}, context)
        seconds: dict[str, float] = {}
        for step in (step for v in result.verdicts for step in v.stages):
            seconds[step.stage] = max(seconds.get(step.stage, 0.0), step.seconds)
        for stage, spent in seconds.items():
            attributes = {names.STAGE: f"check.{stage}"}
            self._instruments.stage_duration.record(spent, attributes, context)

    def _record_usage(self, result: CheckResult, context: Context) -> None:
        """Spend by model and role (`Usage.by_model`); usage from a component that does not
        say its model is recorded by the stages' names alone."""
        usage = result.usage
        if usage is None:
            return
        stages = exportable({names.EXTRACTOR: result.extractor, names.CHECKER: result.checker})
        by_model = usage.by_model or (
            ModelSpend(
                model="",
                role="",
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cost_usd=usage.cost_usd,
            ),
        )
        instruments = self._instruments
        for spend in by_model:
            attributes = {
                **stages,
                **exportable(
                    {
                        names.GEN_AI_REQUEST_MODEL: spend.model or None,
                        names.LLM_ROLE: spend.role or None,
                    }
                ),
            }
            for token_type, tokens in (
                (names.TOKEN_TYPE_INPUT, spend.prompt_tokens),
                (names.TOKEN_TYPE_OUTPUT, spend.completion_tokens),
            ):
                if tokens:
                    typed = {**attributes, names.GEN_AI_TOKEN_TYPE: token_type}
                    instruments.llm_tokens.add(tokens, typed, context)
            if spend.cost_usd:
                instruments.llm_cost.add(spend.cost_usd, attributes, context)
            if spend.refused:
                instruments.llm_budget_fallbacks.add(spend.refused, attributes, context)
            if spend.budget_used is not None:
                instruments.llm_budget_utilization.set(spend.budget_used, attributes, context)
