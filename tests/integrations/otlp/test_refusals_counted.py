"""Every refusal of `refcheck collect` is counted under its reason where people look: in
`/v1/stats`, in the monitor's counts (the `refcheck.collect.*` metrics), and in the log (the
first of each reason, then rate-limited)."""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from otlp_export import export, new_trace_id, span, wait_for
from scripted_checkers import KeywordChecker

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.contract.reasons import ForwardReason, RejectReason, Tally
from refcheck_callbacks.integrations.otlp.collector import TraceCollector
from refcheck_callbacks.integrations.otlp.forward import Forwarder
from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
from refcheck_callbacks.integrations.otlp.traces import TraceLimits


@pytest.fixture
def monitor() -> Iterator[RefCheckMonitor]:
    with RefCheckMonitor(checker=KeywordChecker(), exporters=[], placement="thread") as started:
        yield started


def _stats(receiver: Receiver) -> dict[str, object]:
    connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=10)
    connection.request("GET", "/v1/stats")
    return dict(json.loads(connection.getresponse().read()))


def test_spans_with_ids_of_the_wrong_length_are_counted_and_reported(
    monitor: RefCheckMonitor, caplog: pytest.LogCaptureFixture
) -> None:
    """3,500 spans in 1,500 traces whose ids have the wrong length, beside one good span: the
    reply says 3,500 were rejected, and they are counted `bad_span_id` everywhere."""
    options = ReceiverOptions(port=0, limits=TraceLimits(idle=60))
    receiver = Receiver(monitor, options, record=monitor.record).start()
    try:
        traces = [os.urandom(n % 15 + 1) for n in range(1_500)]  # 1..15 bytes, never 16
        bad = [span(traces[n % 1_500], os.urandom(8)) for n in range(3_000)]
        bad += [span(new_trace_id(), os.urandom(n % 7 + 1)) for n in range(500)]  # short ids
        body = export(span(new_trace_id(), os.urandom(8)), *bad)
        connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=30)
        with caplog.at_level(logging.WARNING, "refcheck_callbacks"):
            connection.request(
                "POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"}
            )
            reply = connection.getresponse()
            answer = ExportTraceServiceResponse.FromString(reply.read())
        assert reply.status == 200
        assert answer.partial_success.rejected_spans == 3_500
        assert receiver.collector.assembly.spans.received == 1
        assert _stats(receiver)["rejected_requests"] == {RejectReason.BAD_SPAN_ID.value: 3_500}
        assert monitor.stats.get(Tally.REJECTED, RejectReason.BAD_SPAN_ID) == 3_500
        assert any("bad_span_id" in record.getMessage() for record in caplog.records)
    finally:
        receiver.stop()


def test_the_forwarders_losses_are_counted_in_stats_and_metrics(
    monitor: RefCheckMonitor,
) -> None:
    """A downstream that accepts connections and never answers: the first body waits for it,
    the next fill the queue, the rest are counted queue_full, and the first timeout."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1/traces"
        collector = TraceCollector(monitor, TraceLimits(idle=60), record=monitor.record)
        forwarder = Forwarder(url, collector.lose_forward, max_queued_bytes=1_000, timeout=1.0)
        for _ in range(5):
            forwarder.put(b"x" * 400, "application/x-protobuf", None)
        wait_for(lambda: collector.stats()["not_forwarded"].get("timeout", 0) >= 1, timeout=30)
        forwarder.close(timeout=10)
    counts = collector.stats()["not_forwarded"]
    assert counts[ForwardReason.QUEUE_FULL.value] >= 2
    assert counts[ForwardReason.QUEUE_FULL.value] + counts[ForwardReason.TIMEOUT.value] == 5
    assert monitor.stats.get(Tally.NOT_FORWARDED, ForwardReason.QUEUE_FULL) >= 2
    assert forwarder.forwarded == 0
