"""The receiver on h11, as hostile clients meet it on real sockets: dripping clients never make
a fast one wait and are closed within the request deadline; any invalid framing gets a counted
400; a body is never held past the limit."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from otlp_export import export, new_trace_id, span, wait_for

from refcheck_callbacks.contract.reasons import RejectReason
from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
from refcheck_callbacks.integrations.otlp.traces import TraceLimits

DEADLINE_S = 1.5
LIMIT = 1 << 20


class NullSink:
    """An `AnswerSink` that takes nothing: these tests look at the receiver alone."""

    def submit(self, **fields: object) -> bool:
        return False

    def skipped(self, reason: object, count: int = 1) -> None: ...

    dropped = errored = skipped


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    options = ReceiverOptions(
        port=0,
        limits=TraceLimits(idle=60),
        max_body_bytes=LIMIT,
        max_connections=8,
        request_timeout=DEADLINE_S,
    )
    started = Receiver(NullSink(), options).start()  # type: ignore[arg-type]
    yield started
    started.stop()


def _raw(receiver: Receiver, request: bytes) -> bytes:
    """Send a raw request; the reply's status line."""
    with socket.create_connection(("127.0.0.1", receiver.server.port), timeout=10) as client:
        client.sendall(request)
        return client.recv(1 << 16).split(b"\r\n", 1)[0]


def _post(receiver: Receiver, timeout: float = 10) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=timeout)
    try:
        body = export(span(new_trace_id(), os.urandom(8)))
        connection.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        reply = connection.getresponse()
        reply.read()
        return reply.status
    finally:
        connection.close()


def test_dripping_clients_never_make_an_export_wait_and_are_closed_by_the_deadline(
    receiver: Receiver,
) -> None:
    """40 clients (5x the connection limit) each send a byte of a request every 0.3 s, for
    longer than the deadline; real exports meanwhile are answered at once, and every
    dripping connection is closed (counted `timeout`) within the deadline."""
    drippers = [socket.create_connection(("127.0.0.1", receiver.server.port)) for _ in range(40)]
    request = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"x" * 100
    closed_at: dict[int, float] = {}
    started = time.monotonic()

    def drip(index: int, client: socket.socket) -> None:
        client.settimeout(0.3)
        for byte in request:
            try:
                client.sendall(bytes([byte]))
                if client.recv(1) == b"":
                    break
            except TimeoutError:
                continue
            except OSError:
                break
        closed_at[index] = time.monotonic() - started

    threads = [
        threading.Thread(target=drip, args=(index, client), daemon=True)
        for index, client in enumerate(drippers)
    ]
    for thread in threads:
        thread.start()
    try:
        for _ in range(3):
            time.sleep(0.4)
            assert _post(receiver, timeout=1.0) == 200  # answered within 1 s, or it raises
        for thread in threads:
            thread.join(2 * DEADLINE_S + 1)
        assert len(closed_at) == 40
        assert max(closed_at.values()) < DEADLINE_S + 1.0
        assert receiver.collector.rejected[RejectReason.TIMEOUT.value] == 40
    finally:
        for client in drippers:
            client.close()


@pytest.mark.parametrize(
    "head",
    [
        b"Content-Length: \xb2",  # superscript two: str.isdigit() says yes
        b"Content-Length: -1",
        b"Content-Length: \xef\xbc\x91",  # a full-width 1
        b"Content-Length: 5\r\nContent-Length: 6",
        b"Content-Length: 5, 6",
        b"Content-Length: 0x5",
        b"Transfer-Encoding: gzip",
        b"Transfer-Encoding: chunked, gzip",
        b"Transfer-Encoding: chunked\r\nContent-Length: 5",
    ],
)
def test_invalid_framing_gets_a_counted_400(receiver: Receiver, head: bytes) -> None:
    request = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n\r\nhello"
    assert _raw(receiver, request).startswith(b"HTTP/1.1 400")
    wait_for(lambda: receiver.collector.rejected == {RejectReason.MALFORMED.value: 1})
    assert _post(receiver) == 200


@pytest.mark.parametrize("size", [b"-1", b"zz", b"1 2", b"0x10", b"\xb2"])
def test_an_invalid_chunk_size_gets_a_counted_400(receiver: Receiver, size: bytes) -> None:
    request = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        + size
        + b"\r\n"
        + b"x" * 100
    )
    assert _raw(receiver, request).startswith(b"HTTP/1.1 400")
    wait_for(lambda: receiver.collector.rejected == {RejectReason.MALFORMED.value: 1})


def test_a_chunked_body_past_the_limit_gets_413_before_it_is_read(receiver: Receiver) -> None:
    """The client streams 64 times the limit; the receiver answers 413 once the limit is
    passed, and reads no more than the limit and one socket read beyond it before that."""
    sent = 0
    with socket.create_connection(("127.0.0.1", receiver.server.port), timeout=10) as client:
        client.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: application/x-protobuf\r\n\r\n"
        )
        chunk = b"10000\r\n" + b"\0" * 0x10000 + b"\r\n"
        client.setblocking(False)
        reply = b""
        while sent < 64 * LIMIT and not reply:
            try:
                sent += client.send(chunk)
            except BlockingIOError:
                time.sleep(0.01)
            with contextlib.suppress(BlockingIOError):
                reply = client.recv(1 << 16)
        client.setblocking(True)
        reply = reply or client.recv(1 << 16)
    assert reply.startswith(b"HTTP/1.1 413")
    assert sent < 16 * LIMIT  # refused while the client was still sending
    assert receiver.collector.rejected == {RejectReason.TOO_LARGE.value: 1}


def test_a_content_length_past_the_limit_gets_413_unread(receiver: Receiver) -> None:
    head = f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: {LIMIT + 1}\r\n\r\n"
    assert _raw(receiver, head.encode()).startswith(b"HTTP/1.1 413")
    assert receiver.collector.rejected == {RejectReason.TOO_LARGE.value: 1}
