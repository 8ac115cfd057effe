"""An OTLP endpoint that is down cannot hold `flush` or `shutdown` past their timeout.

Issue 19: `flush(10)` blocked 42 s against a closed port and 63 s against a black hole (a
listener that accepts and never answers), and returned True: the SDK's own `force_flush`
overruns what it is told. Here the real OTLP/HTTP exporters of all three signals, behind the
SDK's batching processors as an app configures them, point at such endpoints.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from deadlines import SLACK
from loopback_servers import BlackHole, closed_port
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from results import ResultSink
from scripted_checkers import KeywordChecker

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter


def _exporter(endpoint: str) -> OpenTelemetryExporter:
    """OpenTelemetry as an app sets it up, every signal to `endpoint`. The providers do not
    shut down at exit: against a dead endpoint that alone would hold the test run a minute."""
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces"))
    )
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"), export_interval_millis=3_600_000
    )
    meter_provider = MeterProvider([reader], shutdown_on_exit=False)
    logger_provider = LoggerProvider(shutdown_on_exit=False)
    logger_provider.add_log_record_processor(
        BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{endpoint}/v1/logs"))
    )
    return OpenTelemetryExporter(tracer_provider, meter_provider, logger_provider)


@pytest.fixture(params=["closed port", "black hole"])
def endpoint(request: Any) -> Iterator[str]:
    if request.param == "closed port":
        yield f"http://127.0.0.1:{closed_port()}"
        return
    hole = BlackHole()
    yield hole.url
    hole.close()


def _monitor(endpoint: str, sink: ResultSink) -> RefCheckMonitor:
    monitor = RefCheckMonitor(
        checker=KeywordChecker(), exporters=[_exporter(endpoint)], on_result=sink
    )
    for i in range(20):
        assert monitor.submit(answer=f"Claim {i} is in Paris.", references=["It is in Paris."])
    return monitor


def test_flush_returns_false_within_its_timeout_when_the_endpoint_is_down(
    endpoint: str, sink: ResultSink
) -> None:
    monitor = _monitor(endpoint, sink)
    started = time.monotonic()
    flushed = monitor.flush(timeout=2)
    elapsed = time.monotonic() - started
    assert elapsed < 2 + SLACK, f"flush(timeout=2) took {elapsed:.1f}s"
    assert not flushed, "flush claimed success while nothing reached the endpoint"
    assert len(sink.results) == 20  # our own work was done; only the export is stuck
    # A second flush while the first is still stuck in the SDK waits for it, within its own
    # deadline, and starts no second flush thread.
    started = time.monotonic()
    assert not monitor.flush(timeout=1)
    assert time.monotonic() - started < 1 + SLACK
    started = time.monotonic()
    monitor.shutdown(timeout=1)
    assert time.monotonic() - started < 1 + SLACK
