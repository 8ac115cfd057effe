"""A running receiver: the monitor, the collector, the HTTP server and the optional forwarder,
started and stopped together (what `refcheck collect` runs; tests start one in-process).

`export_exporter` builds the OpenTelemetry exporter that sends the evaluations over OTLP/HTTP:
its own tracer, logger and meter providers, so that the receiver's output never depends on
global state.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from refcheck_callbacks.contract.components import Exporter
from refcheck_callbacks.engine.monitor import RefCheckMonitor
from refcheck_callbacks.integrations.otlp.collector import TraceCollector
from refcheck_callbacks.integrations.otlp.forward import Forwarder
from refcheck_callbacks.integrations.otlp.http_receiver import (
    DEFAULT_MAX_BODY_BYTES,
    ReceiverServer,
)
from refcheck_callbacks.integrations.otlp.traces import TraceLimits

if TYPE_CHECKING:
    from refcheck_callbacks.integrations.otlp.grpc_receiver import GrpcReceiver

SERVICE_NAME = "refcheck-collect"


@dataclass
class ReceiverOptions:
    host: str = "127.0.0.1"
    port: int = 4318
    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    forward: str | None = None
    """URL the received export requests are posted to, untouched (…/v1/traces)."""
    limits: TraceLimits = field(default_factory=TraceLimits)
    max_connections: int = 32
    grpc_port: int | None = None
    """OTLP/gRPC port (the `grpc` extra); None: HTTP only."""


class Receiver:
    """`start` binds and serves in a thread; `stop` finishes open traces into the monitor."""

    def __init__(self, monitor: RefCheckMonitor, options: ReceiverOptions) -> None:
        self.monitor = monitor
        self.options = options
        self.collector = TraceCollector(monitor, options.limits)
        self.forwarder = None if options.forward is None else Forwarder(options.forward)
        self.server = ReceiverServer(
            (options.host, options.port),
            self.collector,
            token=options.token,
            max_body_bytes=options.max_body_bytes,
            forwarder=self.forwarder,
            max_connections=options.max_connections,
        )
        self.grpc: GrpcReceiver | None = None
        if options.grpc_port is not None:
            from refcheck_callbacks.integrations.otlp.grpc_receiver import GrpcReceiver

            self.grpc = GrpcReceiver(
                self.collector, options.host, options.grpc_port, options.token,
                options.max_body_bytes,
            )  # fmt: skip
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="refcheck-collect-http", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://{self.options.host}:{self.server.port}"

    def start(self) -> Receiver:
        self.collector.start()
        self._thread.start()
        if self.grpc is not None:
            self.grpc.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self.grpc is not None:
            self.grpc.stop()
        self.collector.close()
        if self.forwarder is not None:
            self.forwarder.close()
        self.monitor.flush(timeout)


def export_exporter(endpoint: str, capture_content: bool = False) -> Exporter:
    """An `OpenTelemetryExporter` sending spans, log records and metrics to `endpoint` (the
    OTLP/HTTP base URL: /v1/traces, /v1/logs, /v1/metrics are appended)."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter

    base = endpoint.rstrip("/")
    resource = Resource.create({"service.name": SERVICE_NAME})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{base}/v1/traces")))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(
        BatchLogRecordProcessor(OTLPLogExporter(f"{base}/v1/logs"))
    )
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(f"{base}/v1/metrics"))
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    return OpenTelemetryExporter(
        tracer_provider, meter_provider, logger_provider, capture_content=capture_content
    )
