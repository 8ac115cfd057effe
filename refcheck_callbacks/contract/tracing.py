"""Capturing the app's OpenTelemetry span context, so the evaluation joins the app's trace.

Part of the contract because an integration captures it where the answer is made (a root
run's start, on the app's thread) and hands it over as `AnswerFields.trace_context`.
"""

from __future__ import annotations

from opentelemetry import trace

from refcheck_callbacks.types import TraceContext


def current_trace_context() -> TraceContext | None:
    """The span context current in this thread or task, or None when nothing is being traced."""
    return as_trace_context(trace.get_current_span().get_span_context())


def as_trace_context(context: trace.SpanContext) -> TraceContext | None:
    """Our copy of an OpenTelemetry span context; None when it is not valid."""
    if not context.is_valid:
        return None
    return TraceContext(
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        trace_flags=int(context.trace_flags),
    )
