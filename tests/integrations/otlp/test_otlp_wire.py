"""The receiver's own readers of OTLP (`wire.py` for protobuf, `otlp_json.py` for JSON) read
what the protobuf library reads: an export the OpenTelemetry SDK encodes, and the same export
as OTLP/JSON, give the same spans; broken bodies are malformed, not crashes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_export import received

from refcheck_callbacks.integrations.otlp import decode
from refcheck_callbacks.integrations.otlp.received import PayloadError


def _sdk_export() -> ExportTraceServiceRequest:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span("chain") as root:
        root.set_attribute("input.value", "How tall is the Eiffel Tower? \U0001f5fc é")
        root.set_attribute("http.method", "GET")  # not kept
        root.set_attribute("llm.token_count.prompt", -12)
        root.set_attribute("retrieval.score", 0.25)
        root.set_attribute("openinference.flag", True)
        root.set_attribute("llm.tags", ["a", "b"])
        root.add_event("gen_ai.client.inference.operation.details", {"gen_ai.x": "y"})
        root.add_event("exception", {"exception.message": "not kept"})
        with tracer.start_as_current_span("child", links=[]) as child:
            child.set_attribute("output.value", "330 metres")
    request = encode_spans(spans.get_finished_spans())
    kvlist = AnyValue(
        kvlist_value=KeyValueList(
            values=[
                KeyValue(key="page_content", value=AnyValue(string_value="text")),
                KeyValue(
                    key="nested",
                    value=AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=7)])),
                ),
            ]
        )
    )
    span = next(s for s in request.resource_spans[0].scope_spans[0].spans if s.name == "chain")
    span.attributes.append(KeyValue(key="input.document", value=kvlist))
    return request


def _as_otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON: protobuf's JSON mapping with the ids in hex."""
    document: Any = json_format.MessageToDict(request)
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(document).encode()


def _fields(span: decode.ReceivedSpan) -> tuple[object, ...]:
    return (span.trace_id, span.span_id, span.parent_id, span.name, span.start_ns,
            span.end_ns, span.attributes, span.events)  # fmt: skip


def test_both_encodings_read_what_the_protobuf_library_reads() -> None:
    request = _sdk_export()
    from_wire = received(request.SerializeToString())
    from_json = received(_as_otlp_json(request), decode.JSON)
    library = request.resource_spans[0].scope_spans[0].spans
    assert [span.name for span in from_wire] == [span.name for span in library]
    root = next(span for span in from_wire if span.parent_id is None)
    assert root.trace_id == library[0].trace_id.hex() == library[1].trace_id.hex()
    assert root.start_ns == next(s for s in library if s.name == "chain").start_time_unix_nano
    assert root.attributes == {
        "input.value": "How tall is the Eiffel Tower? \U0001f5fc é",
        "llm.token_count.prompt": -12,
        "retrieval.score": 0.25,
        "openinference.flag": True,
        "llm.tags": ["a", "b"],
        "input.document": {"page_content": "text", "nested": [7]},
    }
    assert root.events == [("gen_ai.client.inference.operation.details", {"gen_ai.x": "y"})]
    assert [_fields(span) for span in from_json] == [_fields(span) for span in from_wire]
    assert all(span.size > 600 for span in from_wire)


@pytest.mark.parametrize(
    "body",
    [
        b"\x0a\x05\x12\x03\x12\x01",  # a span cut off
        b"\x0b\x00",  # a group
        b"\x00\x00",  # field number 0
        b"\x0a\x04\x12\x02\x12\x80",  # a varint cut off
        b"\x0a\x10\x12\x0e\x12\x0c\x4a\x0a\x0a\x08input.\xff\xfe",  # a kept key not UTF-8
    ],
)
def test_broken_protobuf_is_a_payload_error(body: bytes) -> None:
    with pytest.raises(PayloadError):
        received(body)
