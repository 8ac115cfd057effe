"""Fixtures for the trace receiver tests: a `refcheck collect` receiver on 127.0.0.1 checking
with the embedded checker into in-memory telemetry, and an app's tracer provider that exports
OTLP/HTTP to it, as an instrumented app does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from results import ResultSink
from telemetry import Telemetry

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.integrations.otlp.launch import Receiver, ReceiverOptions
from refcheck_callbacks.integrations.otlp.traces import TraceLimits

IDLE_S = 0.2


@pytest.fixture
def receiver(
    embedded_checker: EmbeddedChecker, telemetry: Telemetry, sink: ResultSink
) -> Iterator[Receiver]:
    """A receiver on a free port whose monitor checks every trace with the embedded checker."""
    monitor = RefCheckMonitor(
        checker=embedded_checker, exporters=[telemetry.exporter()], on_result=[sink]
    )
    options = ReceiverOptions(port=0, limits=TraceLimits(idle=IDLE_S))
    started = Receiver(monitor, options).start()
    yield started
    started.stop()
    monitor.shutdown()


@pytest.fixture
def app_tracing(receiver: Receiver) -> Iterator[TracerProvider]:
    """The app's tracer provider, exporting OTLP/HTTP protobuf to the receiver."""
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    exporter = OTLPSpanExporter(f"{receiver.url}/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=100))
    yield provider
    provider.shutdown()
