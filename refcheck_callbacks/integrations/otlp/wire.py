"""An OTLP/protobuf trace export read from its wire format into `ReceivedSpan`s: the request,
its resource and scope spans here, each span by protobuf's parser when it is small
(`small_spans.py`), else here.

Why not protobuf's parser for the whole body: it builds every message of the body before we
see one, and a body of empty messages (two bytes each on the wire) takes 28 to 44 bytes of
memory per byte of body (measured: 4 MiB of empty attributes, events, links, resource spans),
so its peak could not be reserved without refusing ordinary bodies. Read here, a field is
only skipped over
unless a pairing rule reads it: links, status, resources and the attributes of other
conventions (their key is compared as bytes) build nothing, and what is built is sized and
reserved (`SpanReader`) as it is built. Linear in the body: each byte is looked at a bounded
number of times, the nesting of values is bounded (`MAX_DEPTH`).

Only the fields of `opentelemetry/proto/trace/v1/trace.proto` and `common.proto` that pairing
reads are decoded; every other field, known or not, is skipped by its wire type, as protobuf
does with unknown fields. Groups (wire types 3 and 4, absent from proto3) are malformed.
"""

from __future__ import annotations

import struct
import sys
from typing import Any

from refcheck_callbacks.integrations.otlp.received import (
    ITEM,
    KEPT_PREFIX_BYTES,
    MAX_DEPTH,
    SCALAR,
    SPAN_OVERHEAD,
    PayloadError,
    ReceivedSpan,
    SpanReader,
)
from refcheck_callbacks.integrations.otlp.small_spans import SMALL_SPAN_BYTES, read_span

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_LARGE_TEXT = 1 << 12
"""A string this long is reserved for at its worst (4 bytes a character) before it is built."""
_DOUBLE = struct.Struct("<d")
Body = bytes | bytearray
_FIXED64_INT = struct.Struct("<Q")


def _varint(data: Body, pos: int) -> tuple[int, int]:
    byte = data[pos]
    if byte < 0x80:
        return byte, pos + 1
    result = byte & 0x7F
    shift = 7
    while True:
        pos += 1
        byte = data[pos]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos + 1
        shift += 7
        if shift > 63:
            raise PayloadError("a varint longer than 10 bytes")


def _fields(data: Body, pos: int, end: int) -> Any:
    """(field number, wire type, value, end): for a length-delimited field the value is its
    start, for the others the value itself."""
    while pos < end:
        tag, pos = _varint(data, pos)
        if tag < 8:
            raise PayloadError("field number 0 (not protobuf)")
        wire = tag & 7
        if wire == _LEN:
            length, pos = _varint(data, pos)
            stop = pos + length
            if stop > end:
                raise PayloadError("a field longer than the message that holds it")
            yield tag >> 3, wire, pos, stop
            pos = stop
        elif wire == _VARINT:
            value, pos = _varint(data, pos)
            yield tag >> 3, wire, value, pos
        elif wire == _FIXED64:
            pos += 8
            if pos > end:
                raise PayloadError("a fixed64 past the end of its message")
            yield tag >> 3, wire, pos - 8, pos
        elif wire == _FIXED32:
            pos += 4
            if pos > end:
                raise PayloadError("a fixed32 past the end of its message")
            yield tag >> 3, wire, pos - 4, pos
        else:
            raise PayloadError(f"wire type {wire} (a group, or not protobuf)")
    if pos != end:
        raise PayloadError("a field past the end of its message")


def read_export(data: Body, reader: SpanReader) -> None:
    """Every span of an `ExportTraceServiceRequest`, handed to `reader` (`PayloadError`
    when the body is not one)."""
    try:
        for number, wire, start, stop in _fields(data, 0, len(data)):
            if number == 1 and wire == _LEN:  # resource_spans
                for number2, wire2, start2, stop2 in _fields(data, start, stop):
                    if number2 == 2 and wire2 == _LEN:  # scope_spans
                        for number3, wire3, start3, stop3 in _fields(data, start2, stop2):
                            if number3 == 2 and wire3 == _LEN:  # spans
                                if stop3 - start3 <= SMALL_SPAN_BYTES:
                                    read_span(data, start3, stop3, reader)
                                else:
                                    _SpanWire(data, reader).read(start3, stop3)
    except IndexError:
        raise PayloadError("broken protobuf: a field cut off by the end of the body") from None
    except UnicodeDecodeError as exc:
        raise PayloadError(f"broken protobuf: a string that is not UTF-8 ({exc})") from None
    reader.flush()


class _SpanWire:
    def __init__(self, data: Body, reader: SpanReader) -> None:
        self.data = data
        self.reader = reader

    def _built(self, size: int) -> None:
        reader = self.reader
        reader.building += size
        if reader.building > reader.allowed:
            reader.reserve()

    def _text(self, start: int, stop: int) -> tuple[str, int]:
        if stop - start >= _LARGE_TEXT:
            reader = self.reader
            if reader.building + 4 * (stop - start) > reader.allowed:
                reader.reserve(4 * (stop - start))
        text = self.data[start:stop].decode()
        size = sys.getsizeof(text)
        self._built(size)
        return text, size

    def read(self, pos: int, end: int) -> None:
        data = self.data
        reader = self.reader
        before = reader.building
        trace_id: Body = b""
        span_id: Body = b""
        parent: Body = b""
        name_at = (0, 0)
        start_ns = end_ns = 0
        attributes: dict[str, Any] = {}
        events: list[tuple[str, dict[str, Any]]] = []
        hex_id: str | None = None
        checked = False
        for number, wire, value, stop in _fields(data, pos, end):
            if wire == _LEN:
                if number == 1:
                    trace_id = data[value:stop]
                elif number == 2:
                    span_id = data[value:stop]
                elif number == 4:
                    parent = data[value:stop]
                elif number == 5:
                    name_at = (value, stop)
                elif number in (9, 11):
                    if not checked and trace_id and span_id:  # ids first, as exporters write
                        hex_id, checked = reader.admitted(trace_id, span_id), True
                    if checked and hex_id is None:
                        continue  # left out (counted once): its values need not be read
                    if number == 9:
                        self._pair(value, stop, attributes, 0)
                    else:
                        self._event(value, stop, events)
            elif wire == _FIXED64 and number in (7, 8):
                (nanos,) = _FIXED64_INT.unpack_from(data, value)
                if number == 7:
                    start_ns = nanos
                else:
                    end_ns = nanos
        if not checked:
            hex_id = reader.admitted(trace_id, span_id)
        if hex_id is None:
            reader.drop_span(reader.building - before)
            return
        name = data[name_at[0] : min(name_at[1], name_at[0] + 800)].decode(errors="ignore")
        self._built(SPAN_OVERHEAD + sys.getsizeof(attributes))
        reader.put(
            ReceivedSpan(
                trace_id=hex_id,
                span_id=span_id.hex(),
                parent_id=parent.hex() if len(parent) == 8 else None,
                name=name[:200],
                start_ns=start_ns,
                end_ns=end_ns,
                attributes=attributes,
                events=events,
                size=reader.building - before,
            )
        )

    def _event(self, pos: int, end: int, events: list[tuple[str, dict[str, Any]]]) -> None:
        """A span event, when its name is kept: its name first, then (a second pass) its
        attributes, so that nothing is built for an event left out."""
        data = self.data
        name_at: tuple[int, int] | None = None
        for number, wire, value, stop in _fields(data, pos, end):
            if wire == _LEN and number == 2:
                name_at = (value, stop)
        if name_at is None or not data.startswith(KEPT_PREFIX_BYTES, *name_at):
            return
        name, _ = self._text(*name_at)
        attributes: dict[str, Any] = {}
        for number, wire, value, stop in _fields(data, pos, end):
            if wire == _LEN and number == 3:
                self._pair(value, stop, attributes, 0)
        self._built(sys.getsizeof(attributes) + 64 + ITEM)  # the dict, the tuple, its slot
        events.append((name, attributes))

    def _pair(self, pos: int, end: int, into: dict[str, Any], depth: int) -> None:
        """A KeyValue into `into`, when its key is kept (at depth 0) or always (nested)."""
        data = self.data
        key_at: tuple[int, int] | None = None
        value_at: tuple[int, int] | None = None
        for number, wire, value, stop in _fields(data, pos, end):
            if wire == _LEN and number == 1:
                key_at = (value, stop)
                if depth == 0 and not data.startswith(KEPT_PREFIX_BYTES, value, stop):
                    return
            elif wire == _LEN and number == 2:
                value_at = (value, stop)
        if key_at is None:
            key_at = (pos, pos)
            if depth == 0:
                return
        key, _ = self._text(*key_at)
        self._built(ITEM)
        into[key] = None if value_at is None else self._value(*value_at, depth)

    def _value(self, pos: int, end: int, depth: int) -> Any:
        """An AnyValue as Python: the last of its `value` fields, as protobuf reads a oneof."""
        data = self.data
        found: tuple[int, int, int, int] | None = None
        for field in _fields(data, pos, end):
            if 1 <= field[0] <= 7:
                found = field
        if found is None:
            return None
        number, wire, value, stop = found
        if number == 1 and wire == _LEN:
            return self._text(value, stop)[0]
        if number == 2 and wire == _VARINT:
            return bool(value)
        if number == 3 and wire == _VARINT:
            self._built(SCALAR)
            return value - (1 << 64) if value >= 1 << 63 else value
        if number == 4 and wire == _FIXED64:
            self._built(SCALAR)
            return _DOUBLE.unpack_from(data, value)[0]
        if wire != _LEN or depth >= MAX_DEPTH or number == 7:
            return None
        if number == 5:  # array_value: ArrayValue.values
            items: list[Any] = []
            for inner, inner_wire, start, inner_stop in _fields(data, value, stop):
                if inner == 1 and inner_wire == _LEN:
                    self._built(ITEM)
                    items.append(self._value(start, inner_stop, depth + 1))
            self._built(sys.getsizeof(items))
            return items
        pairs: dict[str, Any] = {}  # kvlist_value: KeyValueList.values
        for inner, inner_wire, start, inner_stop in _fields(data, value, stop):
            if inner == 1 and inner_wire == _LEN:
                self._built(ITEM)
                self._pair(start, inner_stop, pairs, depth + 1)
        self._built(sys.getsizeof(pairs))
        return pairs
