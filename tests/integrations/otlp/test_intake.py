"""Room for requests in flight: a request is refused rather than evict what waits, a gzip body
is taken whole (every member), and every refusal is counted in `/v1/stats` and the metrics."""

from __future__ import annotations

import gzip
import http.client
import json
import os
import socket
from collections.abc import Iterator

import pytest
from otlp_export import export, new_trace_id, span, wait_for
from scripted_checkers import KeywordChecker

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.contract.reasons import RejectReason, Tally
from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
from refcheck_callbacks.integrations.otlp.traces import TraceLimits

PROTOBUF = {"Content-Type": "application/x-protobuf"}
BOUND = 64 << 20
CONNECTION_BYTES = 256 << 10
"""`connections.CONNECTION_BYTES`, written out so that this test runs on a tree without it."""


@pytest.fixture
def monitor() -> Iterator[RefCheckMonitor]:
    with RefCheckMonitor(checker=KeywordChecker(), exporters=[], placement="thread") as started:
        yield started


def _receiver(monitor: RefCheckMonitor, bound: int) -> Receiver:
    limits = TraceLimits(idle=3600, max_trace_age=3600, max_buffered_bytes=bound)
    options = ReceiverOptions(port=0, limits=limits, max_body_bytes=16 << 20)
    return Receiver(monitor, options, record=monitor.record).start()


@pytest.fixture
def receiver(monitor: RefCheckMonitor) -> Iterator[Receiver]:
    """A 64 MiB bound (16 MiB for requests in flight), 16 MiB bodies, traces that wait."""
    started = _receiver(monitor, BOUND)
    yield started
    started.stop()


@pytest.fixture
def default_bound(monitor: RefCheckMonitor) -> Iterator[Receiver]:
    """The default bound (256 MiB), 16 MiB bodies, traces that wait."""
    started = _receiver(monitor, TraceLimits().max_buffered_bytes)
    yield started
    started.stop()


def _post(receiver: Receiver, body: bytes, headers: dict[str, str]) -> tuple[int, bytes, str]:
    connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=60)
    try:
        connection.request("POST", "/v1/traces", body, headers)
        reply = connection.getresponse()
        return reply.status, reply.read(), reply.getheader("Retry-After") or ""
    finally:
        connection.close()


def _stats(receiver: Receiver) -> dict[str, object]:
    connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=10)
    connection.request("GET", "/v1/stats")
    return dict(json.loads(connection.getresponse().read()))


def _waiting_traces(receiver: Receiver, count: int) -> None:
    for _ in range(count):
        body = export(span(new_trace_id(), os.urandom(8), os.urandom(8), name="waiting"))
        assert _post(receiver, body, PROTOBUF)[0] == 200


def test_a_gzip_bomb_is_refused_without_evicting_what_waits(
    default_bound: Receiver, monitor: RefCheckMonitor
) -> None:
    """2,000 traces wait; a 16 KB gzip body expands to almost 16 MiB of zeros (not an export):
    it is refused, and every trace still waits."""
    receiver = default_bound
    _waiting_traces(receiver, 2_000)
    bomb = gzip.compress(b"\0" * ((16 << 20) - 1024), 9)
    assert len(bomb) < 20_000
    status, _, _ = _post(receiver, bomb, {**PROTOBUF, "Content-Encoding": "gzip"})
    assert status in (400, 413)
    stats = _stats(receiver)
    assert stats["open_traces"] == 2_000
    assert stats["traces"] == {}
    assert monitor.stats.get(Tally.DROPPED) == 0
    assert sum(receiver.collector.rejected.values()) == 1


def test_a_request_that_finds_the_room_held_gets_503_and_evicts_nothing(
    receiver: Receiver, monitor: RefCheckMonitor
) -> None:
    """A client holds most of the room for requests in flight with a body it never finishes;
    a second request that does not fit beside it is refused 503 `no_room` with Retry-After,
    the traces waiting stay, and once the first is gone the second gets in."""
    _waiting_traces(receiver, 50)
    held = (12 << 20) + (512 << 10)
    with socket.create_connection(("127.0.0.1", receiver.server.port)) as holder:
        holder.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            + f"Content-Length: {held}\r\n\r\n".encode()
            + b"\0" * 1024
        )
        wait_for(lambda: _stats(receiver)["in_flight_bytes"] >= held)
        small = export(span(new_trace_id(), os.urandom(8), os.urandom(8)))
        large = export(
            *(
                span(new_trace_id(), os.urandom(8), attributes={"input.value": "y" * 4096})
                for _ in range(1_000)
            )
        )
        assert len(large) > receiver.collector.intake.capacity - held
        status, reply, retry_after = _post(receiver, large, PROTOBUF)
        assert (status, json.loads(reply)["error"], retry_after) == (503, "no_room", "1")
        assert _post(receiver, small, PROTOBUF)[0] == 200  # a small one still fits
    wait_for(lambda: _stats(receiver)["in_flight_bytes"] <= 2 * CONNECTION_BYTES)
    assert _post(receiver, large, PROTOBUF)[0] == 200
    assert receiver.collector.rejected == {  # and the holder's body, cut off by its client
        RejectReason.NO_ROOM.value: 1,
        RejectReason.MALFORMED.value: 1,
    }
    assert monitor.stats.get(Tally.REJECTED, RejectReason.NO_ROOM) == 1
    assert monitor.stats.get(Tally.DROPPED) == 0
    assert _stats(receiver)["open_traces"] == 50 + 1 + 1_000


def test_every_member_of_a_gzip_body_is_taken(receiver: Receiver) -> None:
    """Two gzip members, one after another (legal gzip, as `cat a.gz b.gz` makes): the spans
    of both are taken, and trailing NUL padding is accepted."""
    first = export(*(span(new_trace_id(), os.urandom(8)) for _ in range(3)))
    second = export(*(span(new_trace_id(), os.urandom(8)) for _ in range(4)))
    body = gzip.compress(first) + gzip.compress(second) + b"\0" * 16
    status, _, _ = _post(receiver, body, {**PROTOBUF, "Content-Encoding": "gzip"})
    assert status == 200
    assert receiver.collector.assembly.spans.received == 7
    assert receiver.collector.rejected == {}


def test_garbage_after_a_gzip_member_is_malformed(receiver: Receiver) -> None:
    body = gzip.compress(export(span(new_trace_id(), os.urandom(8)))) + b"not gzip"
    status, _, _ = _post(receiver, body, {**PROTOBUF, "Content-Encoding": "gzip"})
    assert status == 400
    assert receiver.collector.rejected == {RejectReason.MALFORMED.value: 1}
