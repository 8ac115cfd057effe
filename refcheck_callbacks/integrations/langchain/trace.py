"""The span another instrumentation made for a LangChain run, so the check joins its trace.

OpenInference's LangChain tracer never makes its spans current (it parents them by
`parent_run_id`, which is safer in a callback system), so the span context current while a
chain runs without an app span of its own is empty. Its instrumentor is a singleton that
keeps a span per run and hands it out by run id (`LangChainInstrumentor().get_span`, public
API); we look it up only when the app has imported it. OpenLLMetry's LangChain handler does
attach its spans to the context, so the context current inside the run is its span: the
handler takes the current context again at the root's first child event for that reason.
"""

from __future__ import annotations

import sys
from typing import Any
from uuid import UUID

from refcheck_callbacks.contract.tracing import as_trace_context
from refcheck_callbacks.types import TraceContext

OPENINFERENCE = "openinference.instrumentation.langchain"
OPENLLMETRY = "opentelemetry.instrumentation.langchain"
_instrumentor: list[Any] = []
"""OpenInference's instrumentor, once its module is imported (a singleton: kept, not rebuilt)."""


def instrumentation_span(run_id: UUID) -> TraceContext | None:
    """The context of OpenInference's span for `run_id`, when OpenInference traces LangChain."""
    if not _instrumentor:
        module = sys.modules.get(OPENINFERENCE)
        if module is None:
            return None
        _instrumentor.append(module.LangChainInstrumentor())
    instrumentor = _instrumentor[0]
    if not instrumentor.is_instrumented_by_opentelemetry:
        return None
    span = instrumentor.get_span(run_id)
    return None if span is None else as_trace_context(span.get_span_context())


def attaches_context() -> bool:
    """Whether a LangChain tracer that makes its spans current (OpenLLMetry) is loaded."""
    return OPENLLMETRY in sys.modules
