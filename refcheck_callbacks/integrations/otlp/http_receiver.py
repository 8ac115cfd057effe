"""The OTLP/HTTP trace receiver: `POST /v1/traces`, protobuf or JSON, gzip or not.

A standard-library HTTP server with a bounded number of connection threads: beyond
`max_connections` new connections wait in the listen backlog, and an idle or slow connection is
closed after `timeout` seconds, so no client can hold the receiver. Each request is checked in
order: path (404), bearer token (401), Content-Length against `max_body_bytes` (413, the body
is not read), media type and encoding (415), then decoded (400 for anything that is not a
trace export, 413 when gzip expands beyond the limit). Every refusal is counted by its
`RejectReason`; the reply is sent before forwarding, and decoding is linear in the body.
`GET /healthz` answers 200, `GET /v1/stats` the collector's counts (token required).
"""

from __future__ import annotations

import hmac
import json
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from refcheck_callbacks.contract.reasons import RejectReason
from refcheck_callbacks.integrations.otlp import decode
from refcheck_callbacks.integrations.otlp.collector import TraceCollector
from refcheck_callbacks.integrations.otlp.forward import Forwarder
from refcheck_callbacks.support.logs import logger

TRACES_PATH = "/v1/traces"
HEALTH_PATH = "/healthz"
STATS_PATH = "/v1/stats"
DEFAULT_MAX_BODY_BYTES = 16 << 20
_MAX_CHUNK_LINE = 1024
_LINGER_S = 2.0
_LINGER_BYTES = 64 << 20
_STATUS = {
    RejectReason.MALFORMED: HTTPStatus.BAD_REQUEST,
    RejectReason.TOO_LARGE: HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
    RejectReason.UNAUTHORIZED: HTTPStatus.UNAUTHORIZED,
    RejectReason.UNSUPPORTED_MEDIA_TYPE: HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
    RejectReason.NOT_FOUND: HTTPStatus.NOT_FOUND,
}


class _Refused(Exception):
    def __init__(self, reason: RejectReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ReceiverServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(
        self,
        address: tuple[str, int],
        collector: TraceCollector,
        token: str | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        forwarder: Forwarder | None = None,
        max_connections: int = 32,
        timeout: float = 10.0,
    ) -> None:
        self.collector = collector
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.forwarder = forwarder
        self._slots = threading.BoundedSemaphore(max_connections)
        # A connection idle or slow for `timeout` seconds is closed (socket timeout).
        super().__init__(address, type("Handler", (_Handler,), {"timeout": timeout}))

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        self._slots.acquire()  # blocks accepting: the backlog holds the rest
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        expected = f"Bearer {self.token}".encode()
        return header is not None and hmac.compare_digest(header.encode(), expected)


class _Handler(BaseHTTPRequestHandler):
    server: ReceiverServer
    protocol_version = "HTTP/1.1"
    server_version = "refcheck-collect"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a request log line per export would flood the receiver's output."""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == HEALTH_PATH:
            self._reply(HTTPStatus.OK, b"ok\n", "text/plain")
        elif path == STATS_PATH and self.server.authorized(self.headers.get("Authorization")):
            body = json.dumps(self.server.collector.stats()).encode()
            self._reply(HTTPStatus.OK, body, decode.JSON)
        elif path == STATS_PATH:
            self._refuse(_Refused(RejectReason.UNAUTHORIZED, "a bearer token is required"))
        else:
            self._refuse(_Refused(RejectReason.NOT_FOUND, f"no route {path}"))

    def do_POST(self) -> None:
        try:
            content_type, body, encoding = self._read_export()
        except _Refused as refused:
            self._refuse(refused)
            return
        except OSError:  # the client stalled past the connection timeout, or went away
            self.server.collector.reject(RejectReason.TIMEOUT)
            self.close_connection = True
            return
        try:
            data = decode.decompress(body, encoding, self.server.max_body_bytes)
            request = decode.parse(data, content_type)
            self.server.collector.receive(request)
        except decode.PayloadTooLarge as exc:
            self._refuse(_Refused(RejectReason.TOO_LARGE, str(exc)))
            return
        except decode.PayloadError as exc:
            self._refuse(_Refused(RejectReason.MALFORMED, str(exc)))
            return
        except decode.UnsupportedEncoding as exc:
            self._refuse(_Refused(RejectReason.UNSUPPORTED_MEDIA_TYPE, str(exc)))
            return
        if content_type == decode.PROTOBUF:
            self._reply(
                HTTPStatus.OK, ExportTraceServiceResponse().SerializeToString(), content_type
            )
        else:
            self._reply(HTTPStatus.OK, b"{}", decode.JSON)
        if self.server.forwarder is not None:
            self.server.forwarder.put(body, content_type, encoding)

    def _read_export(self) -> tuple[str, bytes, str | None]:
        """The media type, body and encoding of an export request, or `_Refused`."""
        path = self.path.split("?", 1)[0]
        if path != TRACES_PATH:
            self.close_connection = True
            raise _Refused(RejectReason.NOT_FOUND, f"no route {path}; traces go to {TRACES_PATH}")
        if not self.server.authorized(self.headers.get("Authorization")):
            self.close_connection = True
            raise _Refused(RejectReason.UNAUTHORIZED, "a bearer token is required")
        content_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        body = self._read_body()
        if content_type not in (decode.PROTOBUF, decode.JSON):
            raise _Refused(
                RejectReason.UNSUPPORTED_MEDIA_TYPE,
                f"Content-Type {content_type!r}: send {decode.PROTOBUF} or {decode.JSON}",
            )
        encoding = (self.headers.get("Content-Encoding") or "").strip().lower() or None
        return content_type, body, encoding

    def _read_body(self) -> bytes:
        """The body, by Content-Length or chunked (as Node's OTLP exporter sends it), never
        more than `max_body_bytes`."""
        limit = self.server.max_body_bytes
        self.close_connection = True  # until the body was read in full
        if (self.headers.get("Transfer-Encoding") or "").strip().lower() == "chunked":
            body = self._read_chunked(limit)
        else:
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit():
                raise _Refused(RejectReason.MALFORMED, "Content-Length or chunked is required")
            if int(length) > limit:
                raise _Refused(RejectReason.TOO_LARGE, f"body of {length} bytes exceeds {limit}")
            body = self.rfile.read(int(length))
            if len(body) != int(length):
                raise _Refused(RejectReason.MALFORMED, "body shorter than its Content-Length")
        self.close_connection = False
        return body

    def _read_chunked(self, limit: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            line = self.rfile.readline(_MAX_CHUNK_LINE)
            try:
                length = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError as exc:
                raise _Refused(RejectReason.MALFORMED, "a broken chunk size line") from exc
            if length == 0:
                while self.rfile.readline(_MAX_CHUNK_LINE) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            size += length
            if size > limit:
                raise _Refused(RejectReason.TOO_LARGE, f"chunked body exceeds {limit} bytes")
            chunk = self.rfile.read(length)
            if len(chunk) != length or self.rfile.readline(_MAX_CHUNK_LINE).strip():
                raise _Refused(RejectReason.MALFORMED, "a chunk shorter than its size")
            chunks.append(chunk)

    def _refuse(self, refused: _Refused) -> None:
        self.server.collector.reject(refused.reason)
        logger.debug("refcheck collect: refused a request: %s", refused)
        body = json.dumps({"error": refused.reason.value, "message": str(refused)}).encode()
        self._reply(_STATUS[refused.reason], body, decode.JSON)
        if self.close_connection:
            self._linger()

    def _linger(self) -> None:
        """Discard what the client still sends of a refused body (at most `_LINGER_BYTES`, for
        `_LINGER_S`) before closing: closing with unread data resets the connection, and a
        reset can destroy the reply before the client reads it."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(_LINGER_S)
            deadline = time.monotonic() + _LINGER_S
            read = 0
            while read < _LINGER_BYTES and time.monotonic() < deadline:
                chunk = self.connection.recv(1 << 16)
                if not chunk:
                    break
                read += len(chunk)
        except OSError:
            pass

    def _reply(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
