"""An OTLP trace export request (protobuf or JSON, gzip or not) into the spans pairing reads,
every byte it takes reserved first (`intake.Reservation`).

A gzip body is inflated a piece at a time into one buffer reserved as it grows, never past
`max_bytes`, every member of it (a gzip file may hold several, one after another: their
contents are concatenated, as `gunzip` does). Parsing is the encoding's reader
(`wire.read_export`, `otlp_json.read_export`), linear in the body, building only what a
pairing rule reads and reserving it as it builds.
"""

from __future__ import annotations

import zlib

from refcheck_callbacks.integrations.otlp import otlp_json, wire
from refcheck_callbacks.integrations.otlp.intake import GrowingBuffer, Reservation
from refcheck_callbacks.integrations.otlp.received import (
    AddSpans,
    Admit,
    BadIds,
    PayloadError,
    PayloadTooLarge,
    ReceivedSpan,
    SpanReader,
    UnsupportedEncoding,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_IN_STEP = 1 << 16
"""Compressed bytes handed to zlib at a time."""
_OUT_STEP = 1 << 20
"""Decompressed bytes taken from zlib at a time."""

__all__ = ["PayloadError", "PayloadTooLarge", "ReceivedSpan", "UnsupportedEncoding"]


def decompress(
    body: bytes | bytearray, encoding: str | None, max_bytes: int, reservation: Reservation
) -> bytes | bytearray:
    """The body, gunzipped when `encoding` says gzip, never longer than `max_bytes`."""
    if not encoding or encoding == "identity":
        if len(body) > max_bytes:
            raise PayloadTooLarge(f"body of {len(body)} bytes exceeds {max_bytes}")
        return body
    if encoding != "gzip":
        raise UnsupportedEncoding(f"unsupported Content-Encoding {encoding!r} (gzip or none)")
    out = GrowingBuffer(reservation, max_bytes, "the decompressed body")
    try:
        _inflate(memoryview(body), out)
    except zlib.error as exc:
        raise PayloadError(f"bad gzip body: {exc}") from exc
    return out.data


def _inflate(view: memoryview, out: GrowingBuffer) -> None:
    """Every gzip member of `view`, one after another, into `out`; trailing NUL bytes (the
    padding some writers add) end it too."""
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    feed: bytes | memoryview = view[:_IN_STEP]
    pos = len(feed)
    while True:
        out.extend(inflate.decompress(feed, _OUT_STEP))
        feed = inflate.unconsumed_tail
        if inflate.eof:
            feed = inflate.unused_data
            while not bytes(feed).strip(b"\0"):  # nothing, or padding, so far
                if pos >= len(view):
                    return
                feed = view[pos : pos + _IN_STEP]
                pos += len(feed)
            inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # the next member
        if not feed:
            if pos >= len(view):
                raise PayloadError("truncated gzip body")
            feed = view[pos : pos + _IN_STEP]
            pos += len(feed)


def read(
    data: bytes | bytearray,
    content_type: str,
    add: AddSpans,
    admit: Admit = lambda _: True,
    bad_ids: BadIds | None = None,
    reservation: Reservation | None = None,
) -> BadIds:
    """Read the spans of an export request, handing them to `add` in batches; those
    `admit(trace_id)` refuses are not read further, those without a valid trace or span id
    are left out and counted (the returned `BadIds`)."""
    bad_ids = bad_ids or BadIds()
    reader = SpanReader(add, admit, bad_ids, reservation)
    if content_type == PROTOBUF:
        wire.read_export(data, reader)
    else:
        otlp_json.read_export(data, reader)
    return bad_ids
