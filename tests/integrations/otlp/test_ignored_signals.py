"""Apps pointed at `refcheck collect` (OpenLLMetry's `TRACELOOP_BASE_URL`, an
`OTEL_EXPORTER_OTLP_ENDPOINT`) also post their metrics and logs: the receiver answers them as
a collector does (success, the signal's empty response in the request's encoding), counts
them `ignored` in `/v1/stats` and the metrics, and refuses nothing."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from scripted_checkers import KeywordChecker

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.contract.reasons import IgnoreReason, Tally
from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
from refcheck_callbacks.integrations.otlp.traces import TraceLimits


@pytest.fixture
def monitor() -> Iterator[RefCheckMonitor]:
    with RefCheckMonitor(checker=KeywordChecker(), exporters=[], placement="thread") as started:
        yield started


@pytest.fixture
def receiver(monitor: RefCheckMonitor) -> Iterator[Receiver]:
    options = ReceiverOptions(port=0, limits=TraceLimits(idle=60))
    started = Receiver(monitor, options, record=monitor.record).start()
    yield started
    started.stop()


def _stats(receiver: Receiver) -> dict[str, object]:
    connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=10)
    connection.request("GET", "/v1/stats")
    return dict(json.loads(connection.getresponse().read()))


def test_the_sdks_metric_and_log_exports_succeed_and_are_counted_ignored(
    receiver: Receiver, monitor: RefCheckMonitor
) -> None:
    """The OpenTelemetry SDK's own OTLP/HTTP exporters, as an app runs them."""
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    meters.get_meter("app").create_counter("requests").add(3)
    metrics = reader.get_metrics_data()
    assert metrics is not None
    metric_exporter = OTLPMetricExporter(f"{receiver.url}/v1/metrics")
    assert metric_exporter.export(metrics) is MetricExportResult.SUCCESS
    assert metric_exporter.export(metrics) is MetricExportResult.SUCCESS

    logs = LoggerProvider()
    logs.add_log_record_processor(
        SimpleLogRecordProcessor(OTLPLogExporter(f"{receiver.url}/v1/logs"))
    )
    logs.get_logger("app").emit(body="a log line")  # exported at once, in this thread
    meters.shutdown()
    logs.shutdown()

    stats = _stats(receiver)
    assert stats["ignored_requests"] == {"metrics": 2, "logs": 1}
    assert stats["rejected_requests"] == {}
    assert monitor.stats.get(Tally.IGNORED, IgnoreReason.METRICS) == 2
    assert monitor.stats.get(Tally.IGNORED, IgnoreReason.LOGS) == 1
    assert monitor.stats.get(Tally.REJECTED) == 0


@pytest.mark.parametrize(
    ("content_type", "expected"), [("application/json", b"{}"), ("application/x-protobuf", b"")]
)
def test_the_reply_is_the_signals_empty_response_in_the_requests_encoding(
    receiver: Receiver, content_type: str, expected: bytes
) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", receiver.server.port, timeout=10)
    connection.request("POST", "/v1/logs", b"{}", {"Content-Type": content_type})
    reply = connection.getresponse()
    body = reply.read()
    assert (reply.status, reply.getheader("Content-Type"), body) == (200, content_type, expected)
    if content_type == "application/x-protobuf":
        assert ExportLogsServiceResponse.FromString(body) == ExportLogsServiceResponse()
    assert receiver.collector.ignored == {"logs": 1}
