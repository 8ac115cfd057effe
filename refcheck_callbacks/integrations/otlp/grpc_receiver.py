"""The OTLP/gRPC trace receiver (port 4317), with the `grpc` extra: the same collector, limits,
token and counts as the HTTP one.

The method takes the raw request bytes and decodes them itself, so that a broken message is
answered INVALID_ARGUMENT and counted `malformed` like an HTTP 400, rather than failing inside
gRPC uncounted. For the same reason gRPC's own size limit is set at `_GRPC_LIMIT_FACTOR` times
`max_body_bytes`: a message over `max_body_bytes` reaches the method, which answers
RESOURCE_EXHAUSTED and counts it `too_large`. (One over gRPC's own limit is cancelled inside
gRPC before any code of ours runs, so it cannot be counted; the factor makes that a message
more than twice the limit.) The message is parsed within the same room for requests in flight
as HTTP bodies (`collector.take` reserves it): when other requests hold that room the call is
answered UNAVAILABLE, which OTLP exporters retry, and counted `no_room`.

No `maximum_concurrent_rpcs`: gRPC refuses the calls beyond it RESOURCE_EXHAUSTED ("Concurrent
RPC limit exceeded!") before any code of ours runs, so they could be counted nowhere (36 of 64
concurrent 1 MB exports were, at the 16 it was). Calls beyond the `workers` wait for a thread
instead; a call's message is read only once a thread serves it, so at most `workers` messages
are held at once, each within gRPC's size limit. `bdp_probe` is off so that gRPC keeps its
flow-control window at 64 KiB a call: with it on, the window grows and gRPC takes in the
messages of waiting calls too (64 concurrent 12 MiB messages: 405 MiB of RSS, 125 MiB off).
"""

from __future__ import annotations

import hmac
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from refcheck_callbacks.contract.reasons import RejectReason
from refcheck_callbacks.integrations.otlp import decode
from refcheck_callbacks.integrations.otlp.collector import TraceCollector
from refcheck_callbacks.integrations.otlp.limits import MAX_BODY_BYTES
from refcheck_callbacks.integrations.otlp.received import NoRoom

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
_GRPC_LIMIT_FACTOR = 2


class GrpcReceiver:
    def __init__(
        self,
        collector: TraceCollector,
        host: str,
        port: int,
        token: str | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        workers: int = 4,
    ) -> None:
        self.collector = collector
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.server = grpc.server(
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="refcheck-collect-grpc"),
            options=[
                ("grpc.max_receive_message_length", _GRPC_LIMIT_FACTOR * max_body_bytes),
                ("grpc.http2.bdp_probe", 0),
            ],
        )
        handler = grpc.unary_unary_rpc_method_handler(self._export)
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, {"Export": handler}),)
        )
        self.port = self.server.add_insecure_port(f"{host}:{port}")
        if self.port == 0:
            raise OSError(f"cannot bind the gRPC receiver to {host}:{port}")

    def start(self) -> None:
        self.server.start()

    def stop(self, grace: float = 2.0) -> None:
        self.server.stop(grace).wait()

    def _export(self, body: bytes, context: Any) -> bytes:
        if not self._authorized(context):
            self.collector.reject(RejectReason.UNAUTHORIZED, "gRPC: a bearer token is required")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "a bearer token is required")
        if len(body) > self.max_body_bytes:
            message = f"gRPC: a message of {len(body)} bytes exceeds {self.max_body_bytes}"
            self.collector.reject(RejectReason.TOO_LARGE, message)
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)
        try:
            bad_ids = self.collector.take(body, decode.PROTOBUF)
        except NoRoom as exc:  # other requests hold the room now: UNAVAILABLE is retried
            self.collector.reject(RejectReason.NO_ROOM, f"gRPC: {exc}")
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except decode.PayloadTooLarge as exc:
            self.collector.reject(RejectReason.TOO_LARGE, f"gRPC: {exc}")
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except decode.PayloadError as exc:
            self.collector.reject(RejectReason.MALFORMED, f"gRPC: {exc}")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        response = ExportTraceServiceResponse()
        if bad_ids:
            response.partial_success.rejected_spans = bad_ids
            response.partial_success.error_message = "spans with ids of the wrong length"
        return bytes(response.SerializeToString())

    def _authorized(self, context: Any) -> bool:
        if self.token is None:
            return True
        given = dict(context.invocation_metadata()).get("authorization", "")
        return hmac.compare_digest(str(given).encode(), f"Bearer {self.token}".encode())
