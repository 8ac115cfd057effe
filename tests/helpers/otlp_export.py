"""OTLP export requests built span by span, for the receiver tests that need exact shapes
(hostile input, each convention's attributes) rather than an instrumented app; and waiting
for a receiver to finish its traces."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace import TracerProvider

from refcheck_callbacks.integrations.otlp import decode
from refcheck_callbacks.integrations.otlp.launch import Receiver
from refcheck_callbacks.integrations.otlp.received import ReceivedSpan


def new_trace_id() -> bytes:
    return os.urandom(16)


def value(item: Any) -> AnyValue:
    if isinstance(item, str):
        return AnyValue(string_value=item)
    if isinstance(item, bool):
        return AnyValue(bool_value=item)
    if isinstance(item, int):
        return AnyValue(int_value=item)
    return AnyValue(double_value=float(item))


def span(
    trace_id: bytes,
    span_id: bytes,
    parent: bytes = b"",
    name: str = "span",
    attributes: dict[str, Any] | None = None,
    start: int = 1,
) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_time_unix_nano=start,
        end_time_unix_nano=start + 1,
        attributes=[KeyValue(key=k, value=value(v)) for k, v in (attributes or {}).items()],
    )


def export(*spans: Span) -> bytes:
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.extend(spans)
    return request.SerializeToString()


def received(body: bytes, content_type: str = decode.PROTOBUF) -> list[ReceivedSpan]:
    """The spans the receiver reads from an export request's body."""
    spans: list[ReceivedSpan] = []
    decode.read(body, content_type, spans.extend)
    return spans


def wait_for(condition: Callable[[], bool], timeout: float = 90.0) -> None:
    """Poll until `condition()` holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def traces_done(receiver: Receiver, count: int) -> Callable[[], bool]:
    """Whether `count` traces were finished (submitted or counted) and none is open."""

    def done() -> bool:
        finished = sum(receiver.collector.traces.values())
        return finished >= count and receiver.collector.assembly.open_traces == 0

    return done


@contextmanager
def instrumented(instrumentor: Any, provider: TracerProvider) -> Iterator[TracerProvider]:
    """An instrumentor (OpenInference's, OpenLLMetry's) tracing onto `provider` for the block."""
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider
    finally:
        instrumentor.uninstrument()


@contextmanager
def openllmetry_instrumented(provider: TracerProvider) -> Iterator[TracerProvider]:
    """OpenLLMetry's LangChain instrumentation on `provider` for the block. Its `uninstrument`
    (0.62) leaves one layer of its wrappers in place (a handler that makes its spans current,
    which would reparent later tests' spans), so the originals are put back afterwards."""
    from langchain_core.callbacks import BaseCallbackManager
    from langgraph.pregel import Pregel
    from langgraph.types import Command
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    patched = [(BaseCallbackManager, "__init__"), (Pregel, "stream"), (Pregel, "astream")]
    patched.append((Command, "__init__"))
    originals = [(owner, name, owner.__dict__[name]) for owner, name in patched]
    try:
        with instrumented(LangchainInstrumentor(), provider):
            yield provider
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
