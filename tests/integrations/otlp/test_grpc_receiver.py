"""OTLP/gRPC (the `grpc` extra): a gRPC client calling the collector's TraceService/Export on
the receiver's gRPC port delivers spans like the HTTP front does; a broken message and a
missing token are refused and counted."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator

import grpc
import pytest
from otlp_export import export, new_trace_id, span

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.contract.reasons import RejectReason, Tally
from refcheck_callbacks.integrations.otlp.connections import CONNECTION_BYTES
from refcheck_callbacks.integrations.otlp.grpc_receiver import SERVICE
from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
from refcheck_callbacks.integrations.otlp.traces import TraceLimits

TOKEN = "grpc-token"
MB = 1 << 20


@pytest.fixture
def grpc_receiver() -> Iterator[Receiver]:
    monitor = RefCheckMonitor(checker="embedded", exporters=[], placement="thread")
    options = ReceiverOptions(port=0, grpc_port=0, token=TOKEN, limits=TraceLimits(idle=60))
    receiver = Receiver(monitor, options).start()
    yield receiver
    receiver.stop()
    monitor.shutdown()


def export_call(receiver: Receiver) -> grpc.UnaryUnaryMultiCallable:
    assert receiver.grpc is not None
    channel = grpc.insecure_channel(f"127.0.0.1:{receiver.grpc.port}")
    return channel.unary_unary(f"/{SERVICE}/Export")


def test_an_export_with_the_token_is_taken(grpc_receiver: Receiver) -> None:
    trace_id = new_trace_id()
    body = export(span(trace_id, os.urandom(8)), span(trace_id, os.urandom(8), os.urandom(8)))
    reply = export_call(grpc_receiver)(body, metadata=[("authorization", f"Bearer {TOKEN}")])
    assert reply == b""  # an empty ExportTraceServiceResponse
    assert grpc_receiver.collector.assembly.spans.received == 2
    assert grpc_receiver.collector.assembly.open_traces == 1


def test_broken_messages_and_missing_tokens_are_refused_and_counted(
    grpc_receiver: Receiver,
) -> None:
    call = export_call(grpc_receiver)
    with pytest.raises(grpc.RpcError) as refused:
        call(export(span(new_trace_id(), os.urandom(8))))
    assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as broken:
        call(b"\x0a\xff\xff\xff\xff\x0f", metadata=[("authorization", f"Bearer {TOKEN}")])
    assert broken.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert grpc_receiver.collector.rejected == {
        RejectReason.UNAUTHORIZED.value: 1,
        RejectReason.MALFORMED.value: 1,
    }
    assert grpc_receiver.collector.assembly.spans.received == 0


def test_a_message_over_the_body_limit_is_refused_and_counted_too_large() -> None:
    monitor = RefCheckMonitor(checker="embedded", exporters=[], placement="thread")
    options = ReceiverOptions(
        port=0, grpc_port=0, limits=TraceLimits(idle=60), max_body_bytes=64 << 10
    )
    receiver = Receiver(monitor, options, record=monitor.record).start()
    try:
        trace_id = new_trace_id()
        large = span(trace_id, os.urandom(8), attributes={"input.value": "x" * (100 << 10)})
        with pytest.raises(grpc.RpcError) as refused:
            export_call(receiver)(export(large))
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert receiver.collector.rejected == {RejectReason.TOO_LARGE.value: 1}
        assert monitor.stats.get(Tally.REJECTED, RejectReason.TOO_LARGE) == 1
        assert receiver.collector.assembly.spans.received == 0
    finally:
        receiver.stop()
        monitor.shutdown()


def test_concurrent_exports_are_all_taken_or_counted() -> None:
    """128 exports of 1 MB at once on one channel: each is taken or refused with a counted
    reason, so what /v1/stats counts adds up to what was sent (gRPC's own concurrency limit
    refused up to 36 of 64 such exports uncounted)."""
    monitor = RefCheckMonitor(checker="embedded", exporters=[], placement="thread")
    options = ReceiverOptions(port=0, grpc_port=0, limits=TraceLimits(idle=60))
    receiver = Receiver(monitor, options, record=monitor.record).start()
    try:
        assert receiver.grpc is not None
        channel = grpc.insecure_channel(f"127.0.0.1:{receiver.grpc.port}")
        call = channel.unary_unary(f"/{SERVICE}/Export")
        sent = 128
        body = export(span(new_trace_id(), os.urandom(8), attributes={"input.value": "x" * MB}))
        futures = [call.future(body, timeout=120) for _ in range(sent)]
        refused = 0
        for future in futures:
            try:
                future.result()
            except grpc.RpcError:
                refused += 1
        stats = receiver.collector.stats()
        assert receiver.collector.assembly.spans.received == sent - refused
        assert sum(stats["rejected_requests"].values()) == refused
        assert refused == 0, stats["rejected_requests"]
        channel.close()
    finally:
        receiver.stop()
        monitor.shutdown()


def test_an_export_that_finds_the_room_held_is_unavailable_and_counted(
    grpc_receiver: Receiver,
) -> None:
    """HTTP clients hold most of the room for requests in flight with bodies they never
    finish; a gRPC export that does not fit beside them is answered UNAVAILABLE (retried by
    OTLP exporters) and counted `no_room`, and gets in once the room is free."""
    intake = grpc_receiver.collector.intake
    each = 15 * MB
    body = export(
        *(span(new_trace_id(), os.urandom(8), attributes={"input.value": "y" * 4096})
          for _ in range(1_000))
    )  # fmt: skip
    assert len(body) > intake.capacity - 4 * each - 4 * CONNECTION_BYTES
    call = export_call(grpc_receiver)
    token = [("authorization", f"Bearer {TOKEN}")]
    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {each}\r\n\r\n".encode()
    )
    holders = [socket.create_connection(("127.0.0.1", grpc_receiver.server.port)) for _ in "1234"]
    try:
        for holder in holders:
            holder.sendall(head + b"\0" * 1024)
        _wait_until(lambda: intake.used >= 4 * each)
        with pytest.raises(grpc.RpcError) as refused:
            call(body, metadata=token)
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
    finally:
        for holder in holders:
            holder.close()
    _wait_until(lambda: intake.used < each)
    assert call(body, metadata=token) == b""
    rejected = grpc_receiver.collector.rejected
    assert rejected[RejectReason.NO_ROOM.value] == 1
    assert set(rejected) == {RejectReason.NO_ROOM.value, RejectReason.MALFORMED.value}


def _wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
