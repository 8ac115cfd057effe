"""`--forward` to a downstream that misbehaves: whatever it answers (not HTTP, a 70 KB header
line, 150 headers, a head without end, a redirect, a closed connection, a reply dripped a byte
at a time, a 1 GB body), the forwarding thread goes on; every export it could not pass on is
counted with its reason in `/v1/stats` and the metrics and logged once per reason; what it
reads of a reply is bounded; and the exports after it forward again once the downstream
answers. Real loopback servers throughout, raw sockets for the garbage."""

from __future__ import annotations

import http.client
import json
import logging
import os
import time
from collections.abc import Callable, Iterator

import pytest
from loopback_servers import BlackHole, HugeReplyServer, RawHTTPServer, http_reply
from otlp_export import export, new_trace_id, span, wait_for
from scripted_checkers import KeywordChecker

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.contract.reasons import ForwardReason, Tally
from refcheck_callbacks.errors import ConfigurationError
from refcheck_callbacks.integrations.otlp.collector import TraceCollector
from refcheck_callbacks.integrations.otlp.forward import Forwarder
from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
from refcheck_callbacks.integrations.otlp.traces import TraceLimits
from refcheck_callbacks.support.logs import RateLimitFilter, logger

PROTOBUF = "application/x-protobuf"
OK = http_reply(b"{}")
GARBAGE: dict[str, tuple[bytes, ForwardReason]] = {
    "not_http": (b"SSH-2.0-OpenSSH_9.6\r\n" * 8, ForwardReason.BAD_REPLY),
    "a_70_kb_header_line": (
        b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000 + b"\r\nContent-Length: 0\r\n\r\n",
        ForwardReason.BAD_REPLY,
    ),
    "a_head_without_end": (
        b"HTTP/1.1 200 OK\r\n" + b"X-Header: value\r\n" * 60_000,
        ForwardReason.BAD_REPLY,
    ),
    "a_closed_connection": (b"", ForwardReason.FAILED),
    "half_a_status_line_then_closed": (b"HTTP/1.1 2", ForwardReason.FAILED),
    "a_302_redirect": (
        b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n",
        ForwardReason.REFUSED,
    ),
    "a_307_redirect": (
        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /v1/other\r\nContent-Length: 0\r\n\r\n",
        ForwardReason.REFUSED,
    ),
    "a_503": (http_reply(b"busy", "503 Service Unavailable"), ForwardReason.REFUSED),
}


@pytest.fixture
def monitor() -> Iterator[RefCheckMonitor]:
    with RefCheckMonitor(checker=KeywordChecker(), exporters=[], placement="thread") as started:
        yield started


@pytest.fixture
def fresh_log_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The package logger's rate limit as a fresh process has it, so that this test sees the
    first line of each reason whatever other tests logged."""
    monkeypatch.setattr(logger, "filters", [RateLimitFilter()])


class Downstream:
    """A raw-socket downstream whose answer the test switches: `answer` is sent to each
    request; `bodies` keeps the bodies it was sent while it answered `OK`."""

    def __init__(self) -> None:
        self.answer = OK
        self.bodies: list[bytes] = []
        self.server = RawHTTPServer(self._reply)

    def _reply(self, request: bytes) -> bytes:
        if self.answer is OK:
            self.bodies.append(request.partition(b"\r\n\r\n")[2])
        return self.answer

    @property
    def url(self) -> str:
        return f"{self.server.url}/v1/traces"


def _post(receiver: Receiver, body: bytes) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=30)
    try:
        connection.request("POST", "/v1/traces", body=body, headers={"Content-Type": PROTOBUF})
        reply = connection.getresponse()
        reply.read()
        return reply.status
    finally:
        connection.close()


def _stats(receiver: Receiver) -> dict[str, object]:
    connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=10)
    try:
        connection.request("GET", "/v1/stats")
        return dict(json.loads(connection.getresponse().read()))
    finally:
        connection.close()


def _lines(caplog: pytest.LogCaptureFixture, reason: ForwardReason) -> int:
    return sum(f"refcheck collect: {reason.value}:" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kind", sorted(GARBAGE))
@pytest.mark.usefixtures("fresh_log_limit")
def test_after_any_garbage_later_exports_forward_once_the_downstream_recovers(
    kind: str, monitor: RefCheckMonitor, caplog: pytest.LogCaptureFixture
) -> None:
    answer, reason = GARBAGE[kind]
    downstream = Downstream()
    options = ReceiverOptions(port=0, limits=TraceLimits(idle=60), forward=downstream.url)
    receiver = Receiver(monitor, options, record=monitor.record).start()
    forwarder = receiver.forwarder
    assert forwarder is not None
    caplog.set_level(logging.WARNING, logger="refcheck_callbacks")
    try:
        downstream.answer = answer
        for _ in range(3):
            assert _post(receiver, export(span(new_trace_id(), os.urandom(8)))) == 200
        wait_for(lambda: sum(receiver.collector.not_forwarded.values()) == 3, timeout=30)
        downstream.answer = OK
        later = [export(span(new_trace_id(), os.urandom(8))) for _ in range(2)]
        for body in later:
            assert _post(receiver, body) == 200
        wait_for(lambda: forwarder.forwarded == 2, timeout=30)
        assert _stats(receiver)["not_forwarded"] == {reason.value: 3}
        assert monitor.stats.get(Tally.NOT_FORWARDED, reason) == 3
        assert _lines(caplog, reason) == 1
        assert downstream.bodies == later
    finally:
        receiver.stop()
        downstream.server.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % n for n in range(150)) + b"\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
    ],
    ids=["150_headers", "a_100_before_its_202"],
)
def test_a_reply_of_many_headers_or_an_interim_status_is_a_reply(answer: bytes) -> None:
    downstream = Downstream()
    downstream.answer = answer
    lost: list[ForwardReason] = []
    forwarder = Forwarder(downstream.url, lambda reason, _: lost.append(reason), timeout=10)
    try:
        forwarder.put(b"spans", PROTOBUF, None)
        wait_for(lambda: forwarder.forwarded == 1, timeout=30)
        assert lost == []
    finally:
        forwarder.close()
        downstream.server.close()


@pytest.mark.parametrize(
    ("head", "fill", "outcome"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n", b"x", None),
        (b"HTTP/1.1 200 OK\r\nX-Long: ", b"a", ForwardReason.BAD_REPLY),
    ],
    ids=["a_1_gb_body", "a_1_gb_header"],
)
def test_what_is_read_of_a_reply_is_bounded(
    head: bytes, fill: bytes, outcome: ForwardReason | None
) -> None:
    """The body of a 2xx reply is never read, a head is read to 64 KiB: the downstream's
    socket takes what the kernel buffers hold, not the gigabyte it offers."""
    server = HugeReplyServer(head, 1 << 30, fill)
    lost: list[ForwardReason] = []
    forwarder = Forwarder(f"{server.url}/v1/traces", lambda r, _: lost.append(r), timeout=30)
    try:
        forwarder.put(b"spans", PROTOBUF, None)
        wait_for(lambda: forwarder.forwarded + len(lost) == 1, timeout=60)
        assert lost == ([] if outcome is None else [outcome])
        forwarder.close()
        assert _settled(lambda: server.sent) < 64 << 20
    finally:
        server.close()


def _settled(count: Callable[[], int]) -> int:
    """`count()` once it has not changed for half a second (the server stopped sending)."""
    last = -1
    while (now := count()) != last:
        last = now
        time.sleep(0.5)
    return now


def test_a_reply_dripped_a_byte_at_a_time_is_cut_off_at_one_deadline(
    monitor: RefCheckMonitor,
) -> None:
    """Each byte comes well within the timeout, so only a deadline for the whole reply (not
    for each read) ends it; the next export, to a prompt downstream, forwards."""
    dripping = RawHTTPServer(lambda _: OK, chunk=1, pause=0.25)
    collector = TraceCollector(monitor, TraceLimits(idle=60), record=monitor.record)
    forwarder = Forwarder(f"{dripping.url}/v1/traces", collector.lose_forward, timeout=1.0)
    try:
        forwarder.put(b"spans", PROTOBUF, None)
        wait_for(lambda: collector.not_forwarded == {ForwardReason.TIMEOUT.value: 1}, timeout=8)
        assert monitor.stats.get(Tally.NOT_FORWARDED, ForwardReason.TIMEOUT) == 1
    finally:
        forwarder.close(timeout=5)
        dripping.close()


def test_bodies_still_queued_when_it_stops_are_counted_shutdown(monitor: RefCheckMonitor) -> None:
    silent = BlackHole()
    collector = TraceCollector(monitor, TraceLimits(idle=60), record=monitor.record)
    forwarder = Forwarder(f"{silent.url}/v1/traces", collector.lose_forward, timeout=3.0)
    try:
        for _ in range(4):
            forwarder.put(b"spans", PROTOBUF, None)
        forwarder.close(timeout=0.2)
        wait_for(lambda: sum(collector.not_forwarded.values()) == 4, timeout=10)
        assert collector.not_forwarded == {
            ForwardReason.SHUTDOWN.value: 3,
            ForwardReason.TIMEOUT.value: 1,
        }
    finally:
        silent.close()


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1/v1/traces", "127.0.0.1:4318/v1/traces", "http:///v1/traces",
            "http://127.0.0.1:99999/v1/traces"],
)  # fmt: skip
def test_a_url_that_cannot_be_posted_to_is_refused_at_start(url: str) -> None:
    lost: Callable[[ForwardReason, str], None] = lambda *_: None  # noqa: E731
    with pytest.raises(ConfigurationError, match="--forward"):
        Forwarder(url, lost)
