"""A running receiver: the collector, the HTTP (and gRPC) server and the optional forwarder,
started and stopped together, submitting to an `AnswerSink` (what `refcheck collect` runs with
a `RefCheckMonitor`; tests start one in-process)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from refcheck_callbacks.contract.answers import AnswerSink
from refcheck_callbacks.integrations.otlp.collector import Record, TraceCollector
from refcheck_callbacks.integrations.otlp.forward import Forwarder
from refcheck_callbacks.integrations.otlp.http_receiver import ReceiverServer
from refcheck_callbacks.integrations.otlp.limits import (
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    REQUEST_TIMEOUT,
    TraceLimits,
)

if TYPE_CHECKING:
    from refcheck_callbacks.integrations.otlp.grpc_receiver import GrpcReceiver


@dataclass
class ReceiverOptions:
    host: str = "127.0.0.1"
    port: int = 4318
    token: str | None = None
    max_body_bytes: int = MAX_BODY_BYTES
    forward: str | None = None
    """URL the received export requests are posted to, untouched (…/v1/traces)."""
    limits: TraceLimits = field(default_factory=TraceLimits)
    max_connections: int = MAX_CONNECTIONS
    """Connections open at once; a new one evicts the one that waited longest for its request."""
    request_timeout: float = REQUEST_TIMEOUT
    """Seconds a request may take to arrive whole (headers and body), or a connection may sit
    idle, before it is closed."""
    grpc_port: int | None = None
    """OTLP/gRPC port (the `grpc` extra); None: HTTP only."""


class Receiver:
    """Binds when built; `start` serves in threads; `stop` submits the open traces whose root
    arrived to the sink (and counts the rest) and stops. The sink is not shut down."""

    def __init__(
        self, sink: AnswerSink, options: ReceiverOptions, record: Record | None = None
    ) -> None:
        """`record`: where refusals are also counted for the metrics (`monitor.record`)."""
        self.sink = sink
        self.options = options
        self.collector = TraceCollector(sink, options.limits, record=record)
        self.forwarder = (
            None
            if options.forward is None
            else Forwarder(options.forward, self.collector.lose_forward)
        )
        self.server = ReceiverServer(
            (options.host, options.port),
            self.collector,
            token=options.token,
            max_body_bytes=options.max_body_bytes,
            forwarder=self.forwarder,
            max_connections=options.max_connections,
            request_timeout=options.request_timeout,
        )
        self.grpc: GrpcReceiver | None = None
        if options.grpc_port is not None:
            from refcheck_callbacks.integrations.otlp.grpc_receiver import GrpcReceiver

            self.grpc = GrpcReceiver(
                self.collector, options.host, options.grpc_port, options.token,
                options.max_body_bytes,
            )  # fmt: skip

    @property
    def url(self) -> str:
        return f"http://{self.options.host}:{self.server.port}"

    def start(self) -> Receiver:
        self.collector.start()
        self.server.start()
        if self.grpc is not None:
            self.grpc.start()
        return self

    def stop(self) -> None:
        self.server.stop()
        if self.grpc is not None:
            self.grpc.stop()
        self.collector.close()
        if self.forwarder is not None:
            self.forwarder.close()
