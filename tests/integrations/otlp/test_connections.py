"""The receiver's connections under hostile and ordinary clients, on real sockets: each refusal
counted once, a clean stop, churn that never cuts a real export, a client that does not read
its replies holding nobody up, `Expect: 100-continue`, and a request pipelined after a GET."""

from __future__ import annotations

import http.client
import logging
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

PROTOBUF = "application/x-protobuf"
TOKEN = "t0ken"


class NullSink:
    """An `AnswerSink` that takes nothing: these tests look at the receiver alone."""

    def submit(self, **fields: object) -> bool:
        return False

    def skipped(self, reason: object, count: int = 1) -> None: ...

    dropped = errored = skipped


def _start(**options: object) -> Receiver:
    settings = {"port": 0, "limits": TraceLimits(idle=60), **options}
    return Receiver(NullSink(), ReceiverOptions(**settings)).start()  # type: ignore[arg-type]


@pytest.fixture
def small() -> Iterator[Receiver]:
    """A receiver of 8 connections, a 5 s request deadline."""
    receiver = _start(max_connections=8, request_timeout=5.0)
    yield receiver
    receiver.stop()


def _export_request(body: bytes | None = None, extra: bytes = b"") -> bytes:
    body = body if body is not None else export(span(new_trace_id(), os.urandom(8)))
    head = (
        f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
        f"Content-Length: {len(body)}\r\n"
    ).encode()
    return head + extra + b"\r\n" + body


def _replies(client: socket.socket, count: int) -> list[bytes]:
    """The status lines of the next `count` replies (each body is short)."""
    data = b""
    while data.count(b"HTTP/1.1 ") < count:
        chunk = client.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    return [b"HTTP/1.1 " + part.split(b"\r\n", 1)[0] for part in data.split(b"HTTP/1.1 ")[1:]]


def test_oversized_heads_are_counted_once_each(small: Receiver) -> None:
    """48 clients (6 times the connection limit) send 5 requests each whose head passes the
    16 KiB limit (past one read of 64 KiB): each request is counted once, `malformed` for a
    400, `timeout` for a connection closed for a new one before its head was whole; none is
    counted twice for its connection lingering after its 400."""
    head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (100 << 10) + b"\r\n\r\n"
    answered: list[bytes] = []

    def client() -> None:
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", small.server.port), timeout=30) as sock:
                try:
                    sock.sendall(head)
                    answered.extend(_replies(sock, 1))
                except ConnectionResetError:
                    pass  # closed for a new connection

    threads = [threading.Thread(target=client) for _ in range(48)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts = small.collector.rejected
    assert set(counts) <= {RejectReason.MALFORMED.value, RejectReason.TIMEOUT.value}
    assert sum(counts.values()) == 240
    assert all(status.startswith(b"HTTP/1.1 400") for status in answered)
    assert len(answered) <= counts[RejectReason.MALFORMED.value]


def test_stop_with_open_connections_prints_no_traceback(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """30 connections open at `stop()`: idle, mid-request, lingering after a refusal."""
    receiver = _start(max_connections=64)
    port = receiver.server.port
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(30)]
    for client in clients[10:20]:
        client.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab")
    for client in clients[20:]:
        client.sendall(b"GET /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 99999\r\n\r\nab")
        assert _replies(client, 1)[0].startswith(b"HTTP/1.1 404")
    with caplog.at_level(logging.DEBUG):
        receiver.stop()
    for client in clients:
        client.close()
    printed = capfd.readouterr()
    assert "Traceback" not in printed.err + printed.out
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def test_a_churn_of_connections_never_cuts_a_real_export(small: Receiver) -> None:
    """Clients open about 2,000 connections over a few seconds (250 times the limit), each
    held a moment and closed unused; meanwhile a real exporter posts over one keep-alive
    connection. It gets every reply: the churn closes its own kind first."""
    port = small.server.port
    stop = threading.Event()
    opened = [0]

    def churn() -> None:
        while not stop.is_set() and opened[0] < 2_000:
            with socket.create_connection(("127.0.0.1", port)):
                opened[0] += 1
                time.sleep(0.005)

    churners = [threading.Thread(target=churn) for _ in range(16)]
    for thread in churners:
        thread.start()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    statuses = []
    try:
        # Until the churn is over and enough exports went through it (a loaded machine may
        # open the 2,000 connections before the exporter's 21st request).
        while opened[0] < 2_000 or len(statuses) <= 20:
            body = export(span(new_trace_id(), os.urandom(8)))
            connection.request("POST", "/v1/traces", body, {"Content-Type": PROTOBUF})
            reply = connection.getresponse()
            reply.read()
            statuses.append(reply.status)
            time.sleep(0.01)
    finally:
        stop.set()
        for thread in churners:
            thread.join()
        connection.close()
    assert len(statuses) > 20
    assert set(statuses) == {200}


def test_clients_that_never_read_their_replies_hold_nobody_up() -> None:
    """Two clients fill the receiver's two places with pipelined requests and never read a
    reply; a third client's export is answered long before the 20 s the others could hold
    their places for (the client gives up after 5 s)."""
    receiver = _start(max_connections=2, request_timeout=20.0)
    try:
        stuck = []
        for _ in range(2):
            client = socket.socket()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect(("127.0.0.1", receiver.server.port))
            client.setblocking(False)
            refused = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx"
            for _ in range(100):  # 415s, each keeping the connection, until it stops reading
                try:
                    client.send(refused * 200)
                except BlockingIOError:
                    break
            stuck.append(client)
        time.sleep(0.5)
        connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=5)
        body = export(span(new_trace_id(), os.urandom(8)))
        connection.request("POST", "/v1/traces", body, {"Content-Type": PROTOBUF})
        assert connection.getresponse().status == 200
        for client in stuck:
            client.close()
    finally:
        receiver.stop()


def test_expect_100_continue_gets_its_100_before_the_body_is_sent(small: Receiver) -> None:
    body = export(span(new_trace_id(), os.urandom(8)))
    request = _export_request(body, b"Expect: 100-continue\r\n")
    head, _ = request.split(b"\r\n\r\n", 1)
    with socket.create_connection(("127.0.0.1", small.server.port), timeout=5) as client:
        client.sendall(head + b"\r\n\r\n")
        assert client.recv(1 << 16).startswith(b"HTTP/1.1 100 ")  # else a timeout
        client.sendall(body)
        assert _replies(client, 1) == [b"HTTP/1.1 200 "]


def test_expect_100_continue_gets_a_refusal_at_once() -> None:
    receiver = _start(token=TOKEN)
    try:
        head = _export_request(b"x" * 1000, b"Expect: 100-continue\r\n").split(b"\r\n\r\n")[0]
        with socket.create_connection(("127.0.0.1", receiver.server.port), timeout=5) as client:
            client.sendall(head + b"\r\n\r\n")
            assert client.recv(1 << 16).startswith(b"HTTP/1.1 401 ")
        assert receiver.collector.rejected == {RejectReason.UNAUTHORIZED.value: 1}
    finally:
        receiver.stop()


def test_an_export_pipelined_after_a_get_is_served(small: Receiver) -> None:
    with socket.create_connection(("127.0.0.1", small.server.port), timeout=10) as client:
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + _export_request())
        assert _replies(client, 2) == [b"HTTP/1.1 200 ", b"HTTP/1.1 200 "]
    wait_for(lambda: small.collector.assembly.spans.received == 1)
