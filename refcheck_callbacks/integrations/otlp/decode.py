"""An OTLP trace export request (protobuf or JSON, gzip or not) into the spans pairing reads.

Only what a pairing rule reads is kept of a span: its ids, name, times, and the attributes and
events of the conventions we know (`KEPT_PREFIXES`). An HTTP or database span of the app costs
a few hundred bytes while its trace waits. `size` estimates what a span holds, so the receiver
can bound its memory in bytes. Bodies are decompressed with a cap, so a small gzip body cannot
expand beyond `max_bytes`. Parsing is linear in the body (protobuf, `json.loads`).
"""

from __future__ import annotations

import base64
import json
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
KEPT_PREFIXES = (
    "input.",
    "output.",
    "llm.",
    "retrieval.",
    "reranker.",
    "openinference.",
    "traceloop.",
    "gen_ai.",
)
"""Attribute (and event) names the pairing rules read: OpenInference, OpenLLMetry, GenAI."""
_SPAN_OVERHEAD = 600
"""Bytes a kept span costs beyond its attributes and events (the object, its id strings, its
name): measured with tracemalloc (benchmarks/collect_throughput.py)."""
_SCALAR = 32
"""An int or float object (24-28 bytes) and the slot that holds it."""
PARSE_EXPANSION = 16
"""Bytes parsing may take per byte of body, at worst: protobuf's messages for a body of empty
or one-entry key-value lists (about 4 wire bytes each) take 14 times its size (measured as
RSS), OTLP/JSON's dicts about 12 times."""
_MAX_DEPTH = 8
"""Nesting of array / kvlist values read; deeper values are left out."""


class PayloadError(ValueError):
    """A body that is not an OTLP trace export. Internal to the receiver (it becomes a 400),
    so not part of the public `RefCheckError` tree."""


class PayloadTooLarge(ValueError):
    """A body whose decompressed form exceeds the limit (a 413)."""


class UnsupportedEncoding(ValueError):
    """A Content-Encoding other than gzip (a 415)."""


@dataclass(slots=True)
class ReceivedSpan:
    """One span, as much of it as pairing reads."""

    trace_id: str
    """32 lowercase hex digits."""
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    size: int
    """Estimated bytes held, as Python holds them: every str, list and dict by its
    `sys.getsizeof` (a string of 4-byte characters costs 4 bytes a character), every number
    as an object, nesting counted, plus `_SPAN_OVERHEAD`."""


def decompress(body: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """The body, gunzipped when `encoding` says gzip, never longer than `max_bytes`."""
    if not encoding or encoding == "identity":
        if len(body) > max_bytes:
            raise PayloadTooLarge(f"body of {len(body)} bytes exceeds {max_bytes}")
        return body
    if encoding != "gzip":
        raise UnsupportedEncoding(f"unsupported Content-Encoding {encoding!r} (gzip or none)")
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflate.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise PayloadError(f"bad gzip body: {exc}") from exc
    if len(data) > max_bytes or inflate.unconsumed_tail:
        raise PayloadTooLarge(f"decompressed body exceeds {max_bytes} bytes")
    if not inflate.eof:
        raise PayloadError("truncated gzip body")
    return data


def parse(data: bytes, content_type: str) -> ExportTraceServiceRequest:
    """An export request from its protobuf or OTLP/JSON encoding."""
    request = ExportTraceServiceRequest()
    if content_type == PROTOBUF:
        try:
            request.ParseFromString(data)
        except (DecodeError, ValueError, RecursionError) as exc:
            raise PayloadError(f"broken protobuf: {exc}") from exc
        return request
    try:
        document = json.loads(data)
        json_format.ParseDict(_ids_as_base64(document), request, ignore_unknown_fields=True)
    except (ValueError, json_format.ParseError, RecursionError, TypeError) as exc:
        raise PayloadError(f"not an OTLP/JSON trace export: {exc}") from exc
    return request


_ID_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def _ids_as_base64(document: Any) -> Any:
    """OTLP/JSON writes span and trace ids in hex; protobuf's JSON mapping reads bytes as
    base64. Rewrites the ids of spans and links in place."""
    if not isinstance(document, dict):
        raise PayloadError("an OTLP/JSON export is an object")
    for resource in _list(document.get("resourceSpans")):
        for scope in _list(_get(resource, "scopeSpans")):
            for span in _list(_get(scope, "spans")):
                _hex_ids(span)
                for link in _list(_get(span, "links")):
                    _hex_ids(link)
    return document


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _hex_ids(item: Any) -> None:
    if not isinstance(item, dict):
        return
    for key in _ID_FIELDS:
        value = item.get(key)
        if isinstance(value, str) and value:
            try:
                item[key] = base64.b64encode(bytes.fromhex(value)).decode()
            except ValueError as exc:
                raise PayloadError(f"{key} {value[:40]!r} is not hex") from exc


@dataclass(slots=True)
class BadIds:
    """The spans `spans_of` left out for an id of the wrong length."""

    count: int = 0
    example: str = ""


def spans_of(
    request: ExportTraceServiceRequest,
    admit: Callable[[str], bool] = lambda _: True,
    bad_ids: BadIds | None = None,
) -> Iterator[ReceivedSpan]:
    """The spans of an export request that `admit(trace_id)` takes; those without a valid
    trace or span id are left out (counted in `bad_ids`). A span not admitted is not read
    further."""
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                if len(span.trace_id) != 16 or len(span.span_id) != 8:
                    if bad_ids is not None:
                        bad_ids.count += 1
                        bad_ids.example = (
                            f"a span with a {len(span.trace_id)}-byte trace id and a "
                            f"{len(span.span_id)}-byte span id"
                        )
                    continue
                trace_id = span.trace_id.hex()
                if not admit(trace_id):
                    continue
                attributes, size = _kept(span.attributes)
                events = []
                for event in span.events:
                    if event.name.startswith(KEPT_PREFIXES):
                        event_attributes, event_size = _kept(event.attributes)
                        kept_event = (event.name, event_attributes)
                        events.append(kept_event)
                        size += event_size + sys.getsizeof(kept_event)
                        size += sys.getsizeof(event.name)
                parent = span.parent_span_id.hex() if len(span.parent_span_id) == 8 else None
                yield ReceivedSpan(
                    trace_id=trace_id,
                    span_id=span.span_id.hex(),
                    parent_id=parent,
                    name=span.name[:200],
                    start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano,
                    attributes=attributes,
                    events=events,
                    size=size + _SPAN_OVERHEAD,
                )


def _kept(attributes: Any) -> tuple[dict[str, Any], int]:
    kept: dict[str, Any] = {}
    size = 0
    for pair in attributes:
        key = pair.key
        if key.startswith(KEPT_PREFIXES):
            value = pair.value
            if value.WhichOneof("value") == "string_value":  # most are: spared a call
                text = value.string_value
                kept[key] = text
                size += sys.getsizeof(key) + sys.getsizeof(text)
            else:
                kept[key], value_size = _value(value, 0)
                size += sys.getsizeof(key) + value_size
    return kept, size + sys.getsizeof(kept)


def _value(value: AnyValue, depth: int) -> tuple[Any, int]:
    """A Python value and the bytes it holds (`sys.getsizeof` of each object in it, as
    `ReceivedSpan.size` says), beyond the slot that holds it."""
    which = value.WhichOneof("value")
    if which == "string_value":
        text = value.string_value
        return text, sys.getsizeof(text)
    if which == "bool_value":
        return value.bool_value, 0
    if which in ("int_value", "double_value"):
        return getattr(value, which), _SCALAR
    if which is None or which == "bytes_value" or depth >= _MAX_DEPTH:
        return None, 0
    if which == "array_value":
        items: list[Any] = []
        size = 0
        for item in value.array_value.values:
            converted, item_size = _value(item, depth + 1)
            items.append(converted)
            size += item_size
        return items, size + sys.getsizeof(items)
    pairs: dict[str, Any] = {}
    size = 0
    for pair in value.kvlist_value.values:
        converted, item_size = _value(pair.value, depth + 1)
        pairs[pair.key] = converted
        size += sys.getsizeof(pair.key) + item_size
    return pairs, size + sys.getsizeof(pairs)
