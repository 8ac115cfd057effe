"""What `submit` keeps of the caller's `AnswerFields`, on the caller's path: O(1), no parsing.

The fields are kept as given, with the trace context resolved (the given one, else the span
current in the caller's thread or task), and queued as a `RawInput`. Everything that reads
them happens in the worker (`intake`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from refcheck_callbacks.contract.answers import ANSWER_FIELDS, AnswerFields, Pairing
from refcheck_callbacks.contract.tracing import current_trace_context
from refcheck_callbacks.types import TraceContext


class _Auto:
    """Sentinel: capture the caller's current OpenTelemetry context."""

    def __repr__(self) -> str:
        return "AUTO"


AUTO: Any = _Auto()


def trace_context_of(fields: AnswerFields) -> TraceContext | None:
    """The trace context a request is parented to: the given one, else the caller's."""
    context = fields.get("trace_context", AUTO)
    return current_trace_context() if context is AUTO else context


@dataclass(slots=True)
class RawInput:
    """The caller's `AnswerFields`, captured as-is on the hot path."""

    answer: Any
    references: Any
    question: Any = None
    claims: Any = None
    trace_context: TraceContext | None = None
    metadata: Any = None
    model: Any = None
    response_id: Any = None
    submitted_at: float = 0.0
    pairing: Pairing | None = None


def capture(
    fields: AnswerFields, context: TraceContext | None, submitted_at: float = 0.0
) -> RawInput:
    """The fields as given, with the trace context already resolved. O(1); raises TypeError
    for a field that is not one of `AnswerFields`."""
    unknown = fields.keys() - ANSWER_FIELDS
    if unknown:
        raise TypeError(
            f"unknown fields {sorted(unknown)}; expected some of {sorted(ANSWER_FIELDS)}"
        )
    get = fields.get
    return RawInput(
        get("answer"),
        get("references"),
        get("question"),
        get("claims"),
        context,
        get("metadata"),
        get("model"),
        get("response_id"),
        submitted_at,
        fields.get("pairing"),
    )
