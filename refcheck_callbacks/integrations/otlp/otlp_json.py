"""An OTLP/JSON trace export into `ReceivedSpan`s: `json.loads`, then the spans read from the
objects, with ids in hex as OTLP/JSON writes them (and protobuf's JSON names, snake_case,
accepted too).

`json.loads` builds the whole document before we see any of it, so its peak is reserved
before it runs, from what the body's bytes say it can build at most (`parse_cost`): each
`{`, `[`, `,`, `:` and `"` in the body is at most one object, entry or slot (one inside a
string only raises the estimate), each byte of text at most one character, of 1, 2 or 4 bytes
as the widest character the body holds. Measured (RSS growth of `json.loads` on 4 MB arrays
of one item repeated, against `parse_cost`): 0.78 of it for numbers, 0.61 for one-entry
objects and objects holding an empty one, 0.57 for empty objects and lists of lists, 0.42
for strings, 0.40 for empty lists, 0.22 to 0.26 for objects of empty strings; OTLP attributes
of small values take 10.5 bytes per byte of body, 23 reserved.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

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

_COSTS = ((b"{", 80), (b"[", 112), (b",", 48), (b":", 136), (b'"', 28))
"""Bytes reserved per occurrence: an empty dict, a list, a slot (a number in it), a dict's
entry (the first one makes the dict 120 bytes larger), half a string object."""
_WIDE = (
    (re.compile(rb"[\xf0-\xf4]"), 4),  # a character beyond the BMP: 4 bytes each
    (re.compile(rb"[\xc4-\xef]"), 2),  # beyond Latin-1: 2 bytes each
)
_VALUE_KINDS = {
    "stringValue": "string",
    "string_value": "string",
    "boolValue": "bool",
    "bool_value": "bool",
    "intValue": "int",
    "int_value": "int",
    "doubleValue": "double",
    "double_value": "double",
    "arrayValue": "array",
    "array_value": "array",
    "kvlistValue": "kvlist",
    "kvlist_value": "kvlist",
}


def parse_cost(data: bytes | bytearray) -> int:
    """The most `json.loads(data)` can hold, in bytes (see the module's docstring)."""
    width = next((width for wide, width in _WIDE if wide.search(data)), 1)
    return width * len(data) + sum(data.count(char) * cost for char, cost in _COSTS)


def read_export(data: bytes | bytearray, reader: SpanReader) -> None:
    """Every span of an OTLP/JSON export, handed to `reader`; the document's own peak
    (`parse_cost`) is reserved first."""
    cost = parse_cost(data)
    if reader.building + cost > reader.allowed:
        reader.reserve(cost)
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise PayloadError(f"not an OTLP/JSON trace export: {exc}") from exc
    if not isinstance(document, dict):
        raise PayloadError("an OTLP/JSON export is an object")
    reader.building += cost  # the document, held until its spans are read
    _Spans(reader).read(document)
    reader.flush()


def _field(item: dict[str, Any], camel: str, snake: str) -> Any:
    return item.get(camel, item.get(snake))


def _list(item: dict[str, Any], camel: str, snake: str) -> list[Any]:
    value = _field(item, camel, snake)
    if value is None:
        return []
    if not isinstance(value, list):
        raise PayloadError(f"{camel} is not a list")
    return value


def _objects(values: list[Any], name: str) -> list[dict[str, Any]]:
    if not all(isinstance(value, dict) for value in values):
        raise PayloadError(f"an item of {name} is not an object")
    return values


def _id(span: dict[str, Any], camel: str, snake: str) -> bytes:
    value = _field(span, camel, snake)
    if value is None or value == "":
        return b""
    if not isinstance(value, str):
        raise PayloadError(f"{camel} is not a string")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise PayloadError(f"{camel} {value[:40]!r} is not hex") from None


def _nanos(span: dict[str, Any], camel: str, snake: str) -> int:
    value = _field(span, camel, snake)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        raise PayloadError(f"{camel} {str(value)[:40]!r} is not a number") from None


class _Spans:
    def __init__(self, reader: SpanReader) -> None:
        self.reader = reader

    def _built(self, size: int) -> None:
        reader = self.reader
        reader.building += size
        if reader.building > reader.allowed:
            reader.reserve()

    def read(self, document: dict[str, Any]) -> None:
        for resource in _objects(_list(document, "resourceSpans", "resource_spans"), "spans"):
            for scope in _objects(_list(resource, "scopeSpans", "scope_spans"), "scopeSpans"):
                for span in _objects(_list(scope, "spans", "spans"), "spans"):
                    self._span(span)

    def _span(self, span: dict[str, Any]) -> None:
        reader = self.reader
        trace_id = _id(span, "traceId", "trace_id")
        span_id = _id(span, "spanId", "span_id")
        parent = _id(span, "parentSpanId", "parent_span_id")
        hex_id = reader.admitted(trace_id, span_id)
        if hex_id is None:
            return
        before = reader.building
        attributes = self._attributes(span, 0)
        events = []
        for event in _objects(_list(span, "events", "events"), "events"):
            name = event.get("name")
            if isinstance(name, str) and name.startswith(KEPT_PREFIXES):
                events.append((name, self._attributes(event, 0)))
                self._built(sys.getsizeof(name) + 64 + ITEM)
        name = span.get("name")
        self._built(SPAN_OVERHEAD)
        reader.put(
            ReceivedSpan(
                trace_id=hex_id,
                span_id=span_id.hex(),
                parent_id=parent.hex() if len(parent) == 8 else None,
                name=name[:200] if isinstance(name, str) else "",
                start_ns=_nanos(span, "startTimeUnixNano", "start_time_unix_nano"),
                end_ns=_nanos(span, "endTimeUnixNano", "end_time_unix_nano"),
                attributes=attributes,
                events=events,
                size=reader.building - before,
            )
        )

    def _attributes(self, item: dict[str, Any], depth: int) -> dict[str, Any]:
        """Key-value pairs (`attributes`, or a kvlist's `values`): at depth 0 the kept ones."""
        kept: dict[str, Any] = {}
        name = "attributes" if depth == 0 else "values"
        for pair in _objects(_list(item, name, name), name):
            key = pair.get("key")
            if not isinstance(key, str) or (depth == 0 and not key.startswith(KEPT_PREFIXES)):
                continue
            value = pair.get("value")
            kept[key] = self._value(value, depth) if isinstance(value, dict) else None
            self._built(sys.getsizeof(key) + ITEM)
        self._built(sys.getsizeof(kept))
        return kept

    def _value(self, value: dict[str, Any], depth: int) -> Any:
        kind = next((_VALUE_KINDS[key] for key in value if key in _VALUE_KINDS), None)
        item: Any = next((value[key] for key in value if key in _VALUE_KINDS), None)
        if kind == "string":
            if not isinstance(item, str):
                raise PayloadError("a stringValue that is not a string")
            self._built(sys.getsizeof(item))
            return item
        if kind == "bool":
            return bool(item)
        if kind in ("int", "double"):
            self._built(SCALAR)
            try:
                return int(item) if kind == "int" else float(item)
            except (TypeError, ValueError):
                raise PayloadError(f"an {kind}Value {str(item)[:40]!r}") from None
        if kind is None or depth >= MAX_DEPTH or not isinstance(item, dict):
            return None
        if kind == "kvlist":
            return self._attributes(item, depth + 1)
        values: list[Any] = []
        for inner in _objects(_list(item, "values", "values"), "values"):
            values.append(self._value(inner, depth + 1))
            self._built(ITEM)
        self._built(sys.getsizeof(values))
        return values
