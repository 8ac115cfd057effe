"""The OTLP/HTTP trace receiver: `POST /v1/traces`, protobuf or JSON, gzip or not.

HTTP/1.1 is parsed by h11 (a maintained, sans-I/O parser built for untrusted peers), served by
one asyncio loop in a thread, so a connection costs a task, not a thread: a client that drips
its request holds nothing a fast client needs.

- Every request must arrive whole (headers and body) within `request_timeout` seconds of the
  connection becoming ready for it; an idle keep-alive connection is closed after as long.
  A request cut off is counted `timeout`.
- At most `max_connections` connections are open; a new one closes one waiting on its client
  (`connections.py` says which), counted `timeout`, so it never waits behind them.
- Every byte held for a client is reserved first (`intake.py`): its connection's buffers,
  its body (`http_request.py`), gunzipped, parsed. No room: 503 `no_room`, never an eviction.
- Framing is h11's: an invalid Content-Length (`²`, negative, duplicates that disagree), a
  Transfer-Encoding other than chunked, or a broken chunk size gets a 400 (`malformed`).
  A Content-Length over `max_body_bytes` gets a 413 before any body byte is read; a chunked
  body is refused (413) as soon as it passes the limit, with at most one read of the socket
  (`READ_BYTES`) taken beyond it.

Then, in order: path (404), bearer token (401), media type and encoding (415), decoding (400,
or 413 when gzip expands beyond the limit), in a small thread pool off the loop. Every refusal
is counted once by its `RejectReason`; the reply is sent before forwarding. Exports of the
signals the receiver does not read (`/v1/metrics`, `/v1/logs`) are answered 200 with their
signal's empty response, as a collector answers, and counted `ignored`. `GET /healthz`
answers 200, `GET /v1/stats` the counts (token required), keeping the connection open.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus

import h11
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from refcheck_callbacks.contract.reasons import IgnoreReason, RejectReason
from refcheck_callbacks.integrations.otlp import decode
from refcheck_callbacks.integrations.otlp.collector import TraceCollector
from refcheck_callbacks.integrations.otlp.connections import (
    CONNECTION_BYTES,
    Connection,
    ConnectionTable,
    Waiting,
)
from refcheck_callbacks.integrations.otlp.forward import Forwarder
from refcheck_callbacks.integrations.otlp.http_request import (
    READ_BYTES,
    Refused,
    declares_body,
    discard,
    discard_body,
    media_type,
    next_event,
    read_body,
    text,
)
from refcheck_callbacks.integrations.otlp.limits import (
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    REQUEST_TIMEOUT,
)
from refcheck_callbacks.integrations.otlp.received import NoRoom
from refcheck_callbacks.support.logs import logger

TRACES_PATH = "/v1/traces"
IGNORED_PATHS = {"/v1/metrics": IgnoreReason.METRICS, "/v1/logs": IgnoreReason.LOGS}
HEALTH_PATH = "/healthz"
STATS_PATH = "/v1/stats"
_MAX_HEADER_BYTES = 16 << 10
"""Request line and headers (and a chunk size line): h11 refuses more (a 400)."""
_DECODE_THREADS = 1
"""Decoding is CPU-bound under the GIL: one thread keeps the loop free."""
_LINGER_S = 2.0
_LINGER_BYTES = 64 << 20
_RETRY_AFTER_S = "1"
_STATUS = {
    RejectReason.MALFORMED: HTTPStatus.BAD_REQUEST,
    RejectReason.TOO_LARGE: HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
    RejectReason.UNAUTHORIZED: HTTPStatus.UNAUTHORIZED,
    RejectReason.UNSUPPORTED_MEDIA_TYPE: HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
    RejectReason.NOT_FOUND: HTTPStatus.NOT_FOUND,
    RejectReason.NO_ROOM: HTTPStatus.SERVICE_UNAVAILABLE,
}


@dataclass
class _Export:
    """A `POST /v1/traces` that arrived whole."""

    headers: dict[str, bytes]
    body: bytes | bytearray


@dataclass
class _Reply:
    status: int
    body: bytes
    content_type: str
    then: tuple[bytes, str, str | None] | None = None
    """The export to forward once the reply is sent."""


class ReceiverServer:
    """Binds when built; `start` serves on a thread of its own; `stop` closes every
    connection and waits for the loop to end."""

    def __init__(
        self,
        address: tuple[str, int],
        collector: TraceCollector,
        token: str | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        forwarder: Forwarder | None = None,
        max_connections: int = MAX_CONNECTIONS,
        request_timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self.collector = collector
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.forwarder = forwarder
        self.max_connections = max_connections
        self.request_timeout = request_timeout
        self._socket = socket.create_server(address, backlog=128)
        self._loop = asyncio.new_event_loop()
        self._decoding = ThreadPoolExecutor(_DECODE_THREADS, "refcheck-collect-decode")
        self._table: ConnectionTable | None = None  # made in the loop
        self._stopping = asyncio.Event()  # bound to the loop on first use, in the loop
        self._thread = threading.Thread(target=self._run, name="refcheck-collect-http", daemon=True)
        self.port = int(self._socket.getsockname()[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join(timeout)
        self._socket.close()
        self._decoding.shutdown(wait=False)

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        expected = f"Bearer {self.token}".encode()
        return header is not None and hmac.compare_digest(header.encode(), expected)

    # -- the loop ----------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._table = ConnectionTable(
            self.max_connections,
            self.collector.intake,
            lambda: self.collector.reject(
                RejectReason.TIMEOUT, "a connection waiting on its client closed for a new one"
            ),
        )
        server = await asyncio.start_server(self._accepted, sock=self._socket, limit=READ_BYTES)
        await self._stopping.wait()
        server.close()
        serving = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in serving:
            task.cancel()
        await asyncio.gather(*serving, return_exceptions=True)
        await server.wait_closed()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._table is not None
        connection: Connection | None = None
        try:
            connection = await self._table.admit(writer)
            await self._converse(connection, reader)
        except decode.PayloadTooLarge as exc:  # no room for one more connection's buffers
            self.collector.reject(RejectReason.NO_ROOM, str(exc))
            writer.write(_raw_refusal(RejectReason.NO_ROOM, str(exc)))
            with contextlib.suppress(OSError, asyncio.TimeoutError):
                await asyncio.wait_for(writer.drain(), 1.0)
        except (OSError, asyncio.TimeoutError):
            pass  # the client went away, was evicted, or did not read its reply in time
        except asyncio.CancelledError:
            if not self._stopping.is_set():
                raise
        except Exception:  # a bug of ours must not stop the loop
            logger.exception("refcheck collect: serving a connection failed")
        finally:
            if connection is not None:
                self._table.close(connection)
            writer.transport.abort()

    async def _converse(self, connection: Connection, reader: asyncio.StreamReader) -> None:
        """Serve requests on one connection until it closes, a deadline passes or a refusal
        ends it."""
        http = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEADER_BYTES)
        served = False
        while not connection.evicted:
            connection.now(Waiting.IDLE if served else Waiting.FRESH)
            try:
                arrived = await asyncio.wait_for(
                    self._request(http, reader, connection), self.request_timeout
                )
            except asyncio.TimeoutError:
                if not connection.evicted and (
                    http.their_state is not h11.IDLE or http.trailing_data[0]
                ):
                    self.collector.reject(
                        RejectReason.TIMEOUT,
                        f"a request not whole within {self.request_timeout:g} s closed",
                    )
                return
            if isinstance(arrived, _Export):
                connection.now(Waiting.SERVING)  # our own time, not the client's: no deadline
                loop = asyncio.get_running_loop()
                reply: _Reply | None = await loop.run_in_executor(
                    self._decoding, self._ingest, arrived, connection
                )
            else:
                reply = arrived
            arrived = None  # the body is let go before its room is
            connection.reservation.shrink_to(CONNECTION_BYTES)
            if reply is None:
                return  # the client closed
            connection.now(Waiting.CLIENT)  # until the client has read the reply
            connection.answered = True
            keep_alive = await self._send(connection, http, reply)
            served = True
            if reply.then is not None and self.forwarder is not None:
                self.forwarder.put(*reply.then)
            if not keep_alive:
                await self._linger(connection, reader)
                return
            http.start_next_cycle()
            # Pipelined requests already read never suspend the coroutine: let the loop run
            # between them, or one client's backlog holds up every other connection.
            await asyncio.sleep(0)

    async def _request(
        self, http: h11.Connection, reader: asyncio.StreamReader, connection: Connection
    ) -> _Reply | _Export | None:
        """Read one request: an export to ingest, or the reply to anything else; None when the
        connection closed between requests."""
        arrived = await self._read_request(http, reader, connection)
        connection.answered = isinstance(arrived, _Reply)  # before any other task runs
        return arrived

    async def _read_request(
        self, http: h11.Connection, reader: asyncio.StreamReader, connection: Connection
    ) -> _Reply | _Export | None:
        try:
            event = await next_event(http, reader, connection)
            if isinstance(event, h11.ConnectionClosed):
                return None
            assert isinstance(event, h11.Request)
            target = event.target.decode("latin-1").split("?", 1)[0]
            headers = {name.decode("latin-1"): value for name, value in event.headers}
            if "transfer-encoding" in headers and "content-length" in headers:
                raise Refused(  # one framing or the other: both is how requests are smuggled
                    RejectReason.MALFORMED, "both Transfer-Encoding and Content-Length"
                )
            if event.method == b"GET":
                if not declares_body(headers):  # read its end: the connection stays open
                    await next_event(http, reader, connection)
                return self._get(target, headers)
            ignored = IGNORED_PATHS.get(target)
            if event.method != b"POST" or (target != TRACES_PATH and ignored is None):
                raise Refused(RejectReason.NOT_FOUND, f"no route {target}; traces: {TRACES_PATH}")
            if not self.authorized(text(headers.get("authorization"))):
                raise Refused(RejectReason.UNAUTHORIZED, "a bearer token is required")
            if ignored is not None:
                return await self._ignore(http, reader, connection, headers, ignored)
            return _Export(
                headers, await read_body(http, reader, connection, headers, self.max_body_bytes)
            )
        except h11.RemoteProtocolError as exc:
            if connection.evicted:
                return None
            return self._refusal(Refused(RejectReason.MALFORMED, f"bad HTTP framing: {exc}"))
        except NoRoom as exc:
            return self._refusal(Refused(RejectReason.NO_ROOM, str(exc)))
        except decode.PayloadTooLarge as exc:
            return self._refusal(Refused(RejectReason.TOO_LARGE, str(exc)))
        except Refused as refused:
            return self._refusal(refused)

    async def _ignore(
        self,
        http: h11.Connection,
        reader: asyncio.StreamReader,
        connection: Connection,
        headers: dict[str, bytes],
        signal: IgnoreReason,
    ) -> _Reply:
        """An export of a signal not read: its body discarded, the empty success response
        (an empty message, in protobuf or OTLP/JSON, as the request was), counted."""
        await discard_body(http, reader, connection, self.max_body_bytes)
        self.collector.ignore(signal)
        if media_type(headers) == decode.JSON:
            return _Reply(HTTPStatus.OK, b"{}", decode.JSON)
        return _Reply(HTTPStatus.OK, b"", decode.PROTOBUF)

    def _get(self, target: str, headers: dict[str, bytes]) -> _Reply:
        if target == HEALTH_PATH:
            return _Reply(HTTPStatus.OK, b"ok\n", "text/plain")
        if target != STATS_PATH:
            raise Refused(RejectReason.NOT_FOUND, f"no route {target}")
        if not self.authorized(text(headers.get("authorization"))):
            raise Refused(RejectReason.UNAUTHORIZED, "a bearer token is required")
        return _Reply(HTTPStatus.OK, json.dumps(self.collector.stats()).encode(), decode.JSON)

    def _ingest(self, export: _Export, connection: Connection) -> _Reply:
        """Decode and take an export (in the decoding pool)."""
        headers, body = export.headers, export.body
        content_type = media_type(headers)
        encoding = (text(headers.get("content-encoding")) or "").strip().lower() or None
        try:
            if content_type not in (decode.PROTOBUF, decode.JSON):
                raise Refused(
                    RejectReason.UNSUPPORTED_MEDIA_TYPE,
                    f"Content-Type {content_type!r}: send {decode.PROTOBUF} or {decode.JSON}",
                )
            reservation = connection.reservation
            data = decode.decompress(body, encoding, self.max_body_bytes, reservation)
            bad_ids = self.collector.take(data, content_type, reservation)
        except NoRoom as exc:
            return self._refusal(Refused(RejectReason.NO_ROOM, str(exc)))
        except decode.PayloadTooLarge as exc:
            return self._refusal(Refused(RejectReason.TOO_LARGE, str(exc)))
        except decode.PayloadError as exc:
            return self._refusal(Refused(RejectReason.MALFORMED, str(exc)))
        except decode.UnsupportedEncoding as exc:
            return self._refusal(Refused(RejectReason.UNSUPPORTED_MEDIA_TYPE, str(exc)))
        except Refused as refused:
            return self._refusal(refused)
        response = ExportTraceServiceResponse()
        if bad_ids:
            response.partial_success.rejected_spans = bad_ids
            response.partial_success.error_message = "spans with ids of the wrong length"
        if content_type == decode.PROTOBUF:
            answer = response.SerializeToString()
        else:
            answer = json_format.MessageToJson(response).encode()
        forward = (bytes(body), content_type, encoding) if self.forwarder is not None else None
        return _Reply(HTTPStatus.OK, answer, content_type, forward)

    def _refusal(self, refused: Refused) -> _Reply:
        self.collector.reject(refused.reason, str(refused))
        return _Reply(
            _STATUS[refused.reason], _refusal_body(refused.reason, str(refused)), decode.JSON
        )

    async def _send(self, connection: Connection, http: h11.Connection, reply: _Reply) -> bool:
        """Write the reply; whether the connection can take another request."""
        headers = [("Content-Type", reply.content_type), ("Content-Length", str(len(reply.body)))]
        if reply.status == HTTPStatus.SERVICE_UNAVAILABLE:
            headers.append(("Retry-After", _RETRY_AFTER_S))
        whole = http.their_state is h11.DONE
        if not whole:  # refused before its body was read: the rest is discarded, then closed
            headers.append(("Connection", "close"))
        writer = connection.writer
        try:
            writer.write(http.send(h11.Response(status_code=reply.status, headers=headers)) or b"")
            writer.write(http.send(h11.Data(data=reply.body)) or b"")
            writer.write(http.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError:  # the request's framing broke h11's state
            return False
        if writer.transport.get_write_buffer_size():  # the socket took it all: no wait
            await asyncio.wait_for(writer.drain(), self.request_timeout)
        return whole and http.our_state is h11.DONE and http.their_state is h11.DONE

    async def _linger(self, connection: Connection, reader: asyncio.StreamReader) -> None:
        """Discard what the client still sends of a refused body (at most `_LINGER_BYTES`, for
        `_LINGER_S`) before closing: closing with unread data resets the connection, and a
        reset can destroy the reply before the client reads it. Its request is counted, so
        closing it for a new connection counts nothing more."""
        assert self._table is not None
        self._table.linger(connection)
        writer = connection.writer
        if writer.can_write_eof():
            writer.write_eof()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(discard(reader, _LINGER_BYTES), _LINGER_S)


def _refusal_body(reason: RejectReason, message: str) -> bytes:
    return json.dumps({"error": reason.value, "message": message}).encode()


def _raw_refusal(reason: RejectReason, message: str) -> bytes:
    """A refusal written before any request was read (no h11 state to answer it with)."""
    body = _refusal_body(reason, message)
    return (
        f"HTTP/1.1 {int(_STATUS[reason])} {_STATUS[reason].phrase}\r\n"
        f"Content-Type: {decode.JSON}\r\nContent-Length: {len(body)}\r\n"
        f"Retry-After: {_RETRY_AFTER_S}\r\nConnection: close\r\n\r\n"
    ).encode() + body
