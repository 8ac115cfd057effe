"""Hostile input to `refcheck collect`: floods of traces and spans, spans that never end, huge
and broken bodies. Memory stays bounded, everything is counted, and the receiver keeps serving.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import socket
import time
from collections.abc import Iterator

import pytest
from memory import peak_rss_growth
from otlp_export import export, new_trace_id, span, wait_for
from results import ResultSink

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.contract.reasons import DropReason, RejectReason, Tally
from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
from refcheck_callbacks.integrations.otlp.traces import TraceLimits

PROTOBUF = {"Content-Type": "application/x-protobuf"}
LIMITS = TraceLimits(
    idle=0.1,
    max_open_traces=100,
    max_spans_per_trace=500,
    max_trace_age=1.0,
    max_buffered_bytes=8 << 20,
)


@pytest.fixture
def hostile_receiver(sink: ResultSink) -> Iterator[Receiver]:
    """A receiver with small limits and no checker work to wait for (nothing it gets pairs)."""
    monitor = RefCheckMonitor(
        checker="embedded", exporters=[], on_result=[sink], placement="thread"
    )
    options = ReceiverOptions(
        port=0, limits=LIMITS, max_body_bytes=4 << 20, max_connections=4, request_timeout=1.0
    )
    started = Receiver(monitor, options).start()
    yield started
    started.stop()
    monitor.shutdown()


def post(receiver: Receiver, body: bytes, headers: dict[str, str] | None = None) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=30)
    try:
        connection.request("POST", "/v1/traces", body=body, headers=headers or PROTOBUF)
        reply = connection.getresponse()
        reply.read()
        return reply.status
    finally:
        connection.close()


def still_serves(receiver: Receiver) -> None:
    trace_id = new_trace_id()
    assert post(receiver, export(span(trace_id, os.urandom(8)))) == 200


@pytest.mark.slow
def test_a_thousand_traces_of_ten_thousand_spans_stay_within_the_limits(
    hostile_receiver: Receiver,
) -> None:
    """10 million spans in all, sent as 1,000 traces of 10,000 spans in requests of 2,500:
    each trace is given up at its span limit, open traces stay under their limit, and the
    memory the flood adds stays far below what holding it would take."""
    collector = hostile_receiver.collector
    batch = 2_500
    placeholder = b"\xee" * 16
    parent = os.urandom(8)
    # Four requests' bodies, built once; each trace gets its own id written into them.
    bodies = [
        export(
            *(
                span(placeholder, os.urandom(8), parent, attributes={"input.value": "x" * 40})
                for _ in range(batch)
            )
        )
        for _ in range(10_000 // batch)
    ]
    with peak_rss_growth() as growth:
        for _ in range(1_000):
            trace_id = new_trace_id()
            for body in bodies:
                assert post(hostile_receiver, body.replace(placeholder, trace_id)) == 200
            assert collector.assembly.open_traces <= LIMITS.max_open_traces
    assert collector.traces[DropReason.TRACE_TOO_LARGE.value] == 1_000
    assert hostile_receiver.sink.stats.get(Tally.DROPPED, DropReason.TRACE_TOO_LARGE) == 1_000
    assert collector.assembly.spans.received == 10_000_000
    assert collector.assembly.spans.received == (
        collector.assembly.spans.given_up + collector.assembly.spans.late
    )
    # Holding every span would take over 3 GB; a bounded receiver stays under 200 MB.
    assert growth.bytes < 200 << 20
    still_serves(hostile_receiver)


def test_spans_whose_root_never_ends_are_given_up_by_age(hostile_receiver: Receiver) -> None:
    """Children arrive, their root never does (it never ended): each trace waits at most
    `max_trace_age`, then is dropped and counted, and its late spans open nothing."""
    collector = hostile_receiver.collector
    never_ended = os.urandom(8)
    trace_ids = [new_trace_id() for _ in range(20)]
    for trace_id in trace_ids:
        body = export(*(span(trace_id, os.urandom(8), never_ended) for _ in range(10)))
        assert post(hostile_receiver, body) == 200
    assert collector.assembly.open_traces == 20
    wait_for(lambda: collector.assembly.open_traces == 0, timeout=10)
    assert collector.traces[DropReason.TRACE_EXPIRED.value] == 20
    assert hostile_receiver.sink.stats.get(Tally.DROPPED, DropReason.TRACE_EXPIRED) == 20
    assert collector.assembly.buffered_bytes == 0
    assert post(hostile_receiver, export(span(trace_ids[0], never_ended))) == 200
    assert collector.assembly.open_traces == 0
    assert collector.assembly.spans.late == 1


def test_more_open_traces_than_the_limit_push_out_the_least_recent(
    hostile_receiver: Receiver,
) -> None:
    collector = hostile_receiver.collector
    for _ in range(250):
        assert (
            post(hostile_receiver, export(span(new_trace_id(), os.urandom(8), os.urandom(8))))
            == 200
        )
    assert collector.assembly.open_traces == LIMITS.max_open_traces
    assert collector.traces[DropReason.TRACE_OVERFLOW.value] == 150


def test_a_50_mb_body_gets_413_and_the_receiver_keeps_serving(
    hostile_receiver: Receiver,
) -> None:
    body = b"\x0a" * (50 << 20)
    with peak_rss_growth() as growth:
        assert post(hostile_receiver, body) == 413
    assert growth.bytes < 2 * len(body)  # the client's copy; the receiver keeps none
    assert hostile_receiver.collector.rejected[RejectReason.TOO_LARGE.value] == 1
    still_serves(hostile_receiver)


def test_a_gzip_body_that_expands_beyond_the_limit_gets_413(hostile_receiver: Receiver) -> None:
    bomb = gzip.compress(b"\0" * (64 << 20))  # 64 MiB of zeros in about 64 KB
    assert len(bomb) < 1 << 20
    with peak_rss_growth() as growth:
        status = post(hostile_receiver, bomb, {**PROTOBUF, "Content-Encoding": "gzip"})
    assert status == 413
    assert growth.bytes < 32 << 20
    assert hostile_receiver.collector.rejected[RejectReason.TOO_LARGE.value] == 1
    still_serves(hostile_receiver)


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b"\x0a\xff\xff\xff\xff\x0f", PROTOBUF),  # a length beyond the body
        (b"\x0a\x05\x12\x03\x12\x01\xff", PROTOBUF),  # a wire type that does not fit
        (b"{not json", {"Content-Type": "application/json"}),
        (b"[1, 2]", {"Content-Type": "application/json"}),
        (
            json.dumps(
                {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}
            ).encode(),
            {"Content-Type": "application/json"},
        ),
        (b"\x1f\x8b\x08broken", {**PROTOBUF, "Content-Encoding": "gzip"}),
        (b"[" * 10_000 + b"]" * 10_000, {"Content-Type": "application/json"}),  # too deep
    ],
)
def test_malformed_payloads_get_400_and_are_counted(
    hostile_receiver: Receiver, body: bytes, headers: dict[str, str]
) -> None:
    assert post(hostile_receiver, body, headers) == 400
    assert hostile_receiver.collector.rejected == {RejectReason.MALFORMED.value: 1}
    still_serves(hostile_receiver)


def test_idle_and_stalled_connections_cannot_hold_the_receiver(hostile_receiver: Receiver) -> None:
    """More connections than it serves at once, idle or stalled mid-request: each is closed
    after the connection timeout, and a real export gets through meanwhile."""
    port = hostile_receiver.server.port
    holders = [socket.create_connection(("127.0.0.1", port)) for _ in range(6)]
    for holder in holders[:3]:  # stalled: headers promise a body that never comes
        holder.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
            b"Content-Type: application/x-protobuf\r\n\r\nabc"
        )
    try:
        started = time.monotonic()
        still_serves(hostile_receiver)
        assert time.monotonic() - started < 10
        wait_for(lambda: hostile_receiver.collector.rejected == {RejectReason.TIMEOUT.value: 3})
    finally:
        for holder in holders:
            holder.close()
