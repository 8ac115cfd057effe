"""Small spans read by protobuf's own parser (upb, in C): three times the speed of the wire
reader (`wire.py`) on the spans apps send, at a cost in memory that is bounded by the span's
size, so reserved before it is parsed.

The cost: upb builds every message of the span (a link, an event, a key-value pair), and the
kept values are built as Python objects beside them. Measured as peak RSS per byte of a 4 MiB
span, parsed and read here: 32 for empty links, 22 for arrays of empty key-value lists, 20
for empty events, 16 to 17 for empty attributes, empty key-value lists and arrays of empty
values, 11 for kept events, 3.5 for arrays of numbers. So a span of `n` bytes is parsed here
only once `n * UPB_FACTOR` bytes are reserved, and only up to `SMALL_SPAN_BYTES`; a larger
span is read by the wire reader, which builds only what it keeps, sized as it is built.
"""

from __future__ import annotations

import sys
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from refcheck_callbacks.integrations.otlp.received import (
    ITEM,
    KEPT_PREFIXES,
    MAX_DEPTH,
    SCALAR,
    SPAN_OVERHEAD,
    PayloadError,
    ReceivedSpan,
    SpanReader,
)

SMALL_SPAN_BYTES = 64 << 10
UPB_FACTOR = 48
"""Bytes reserved per byte of a span parsed here: 1.5 times the worst measured (32)."""


def read_span(data: bytes | bytearray, start: int, stop: int, reader: SpanReader) -> None:
    """The span at `data[start:stop]` (at most `SMALL_SPAN_BYTES`), handed to `reader`."""
    transient = (stop - start) * UPB_FACTOR
    if reader.building + transient > reader.allowed:
        reader.reserve(transient)
    try:
        span = Span.FromString(bytes(data[start:stop]))
    except (DecodeError, ValueError, RecursionError) as exc:
        raise PayloadError(f"broken protobuf: {exc}") from exc
    hex_id = reader.admitted(span.trace_id, span.span_id)
    if hex_id is None:
        return
    attributes, size = _kept(span.attributes)
    events = []
    for event in span.events:
        if event.name.startswith(KEPT_PREFIXES):
            event_attributes, event_size = _kept(event.attributes)
            events.append((event.name, event_attributes))
            size += event_size + sys.getsizeof(event.name) + 64 + ITEM
    parent = span.parent_span_id
    size += SPAN_OVERHEAD
    reader.building += size
    reader.put(
        ReceivedSpan(
            trace_id=hex_id,
            span_id=span.span_id.hex(),
            parent_id=parent.hex() if len(parent) == 8 else None,
            name=span.name[:200],
            start_ns=span.start_time_unix_nano,
            end_ns=span.end_time_unix_nano,
            attributes=attributes,
            events=events,
            size=size,
        )
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
                size += sys.getsizeof(key) + sys.getsizeof(text) + ITEM
            else:
                kept[key], value_size = _value(value, 0)
                size += sys.getsizeof(key) + value_size + ITEM
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
        return getattr(value, which), SCALAR
    if which is None or which == "bytes_value" or depth >= MAX_DEPTH:
        return None, 0
    if which == "array_value":
        items: list[Any] = []
        size = 0
        for item in value.array_value.values:
            converted, item_size = _value(item, depth + 1)
            items.append(converted)
            size += item_size + ITEM
        return items, size + sys.getsizeof(items)
    pairs: dict[str, Any] = {}
    size = 0
    for pair in value.kvlist_value.values:
        converted, item_size = _value(pair.value, depth + 1)
        pairs[pair.key] = converted
        size += sys.getsizeof(pair.key) + item_size + ITEM
    return pairs, size + sys.getsizeof(pairs)
