"""Reading one request's events and body off a connection (h11 over an asyncio stream), every
byte of the body reserved before it is read (`intake.Reservation`): a Content-Length body
into one buffer of that size, a chunked one into one buffer that reserves as it grows (a body
of 1-byte chunks costs what its bytes do, not an object per chunk). A client that sent
`Expect: 100-continue` gets its `100 Continue` once the request is accepted and its room
reserved, just before its body is read."""

from __future__ import annotations

import asyncio

import h11

from refcheck_callbacks.contract.reasons import RejectReason
from refcheck_callbacks.integrations.otlp.connections import Connection, Waiting
from refcheck_callbacks.integrations.otlp.intake import GrowingBuffer

READ_BYTES = 1 << 16


class Refused(Exception):
    """A request refused: its reply is the reason's status and this message."""

    def __init__(self, reason: RejectReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


async def next_event(
    http: h11.Connection, reader: asyncio.StreamReader, connection: Connection
) -> object:
    while True:
        event = http.next_event()
        if event is not h11.NEED_DATA:
            return event
        data = await reader.read(READ_BYTES)
        if data and connection.state is not Waiting.CLIENT:
            connection.now(Waiting.CLIENT)  # a request is arriving
        http.receive_data(data)


def _continue(http: h11.Connection, connection: Connection) -> None:
    """`100 Continue` to a client that waits for it before sending its body."""
    if http.they_are_waiting_for_100_continue:
        response = h11.InformationalResponse(status_code=100, headers=[])
        connection.writer.write(http.send(response) or b"")


async def read_body(
    http: h11.Connection,
    reader: asyncio.StreamReader,
    connection: Connection,
    headers: dict[str, bytes],
    limit: int,
) -> bytearray:
    """The body, never more than `limit` bytes of it held, its room reserved before it is
    read (`received.PayloadTooLarge` / `NoRoom` when it cannot be)."""
    length = headers.get("content-length")
    reservation = connection.reservation
    if length is None:
        growing = GrowingBuffer(reservation, limit, "the chunked body")
        _continue(http, connection)
        while isinstance(event := await next_event(http, reader, connection), h11.Data):
            growing.extend(event.data)
        return _ended(event, growing.data)
    size = int(length)  # h11 checked it is digits
    if size > limit:
        raise Refused(RejectReason.TOO_LARGE, f"body of {size} bytes exceeds {limit}")
    reservation.grow_to(reservation.held + size, "the body")
    body = bytearray(size)
    _continue(http, connection)
    filled = 0
    while isinstance(event := await next_event(http, reader, connection), h11.Data):
        body[filled : filled + len(event.data)] = event.data
        filled += len(event.data)
    return _ended(event, body)


async def discard_body(
    http: h11.Connection, reader: asyncio.StreamReader, connection: Connection, most: int
) -> None:
    """Read a body to its end, holding none of it; `too_large` past `most` bytes."""
    _continue(http, connection)
    size = 0
    while isinstance(event := await next_event(http, reader, connection), h11.Data):
        size += len(event.data)
        if size > most:
            raise Refused(RejectReason.TOO_LARGE, f"body exceeds {most} bytes")
    _ended(event, bytearray())


def _ended(event: object, body: bytearray) -> bytearray:
    if not isinstance(event, h11.EndOfMessage):
        raise Refused(RejectReason.MALFORMED, "the body ended before its length")
    return body


async def discard(reader: asyncio.StreamReader, most: int) -> None:
    while most > 0:
        chunk = await reader.read(READ_BYTES)
        if not chunk:
            return
        most -= len(chunk)


def declares_body(headers: dict[str, bytes]) -> bool:
    return "transfer-encoding" in headers or headers.get("content-length", b"0") != b"0"


def media_type(headers: dict[str, bytes]) -> str:
    content_type = text(headers.get("content-type")) or ""
    return content_type.split(";", 1)[0].strip().lower()


def text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")
