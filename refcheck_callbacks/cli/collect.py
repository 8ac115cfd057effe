"""`refcheck collect`: check the RAG answers of any app that sends OpenTelemetry traces.

The options are parsed here; the receiver (`integrations.otlp`) and the checker load only when
the command runs, so `refcheck --help` stays instant.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

from refcheck_callbacks.cli.component_names import describe
from refcheck_callbacks.cli.exit_status import fail
from refcheck_callbacks.contract.registry import CHECKERS
from refcheck_callbacks.integrations.otlp import limits

if TYPE_CHECKING:
    from refcheck_callbacks.contract.components import Exporter
    from refcheck_callbacks.integrations.otlp.launch import ReceiverOptions

TOKEN_ENV = "REFCHECK_COLLECT_TOKEN"
_SUMMARY = "receive an app's OpenTelemetry traces (OTLP) and check the RAG answers in them"

_DESCRIPTION = f"""\
{_SUMMARY}.

An OTLP/HTTP receiver: POST /v1/traces, protobuf or JSON, gzip or not. Point the app's trace
exporter at it (OpenInference, OpenLLMetry or the OpenTelemetry GenAI conventions, any
language):

  refcheck collect --port 4318 --export-endpoint http://otel-collector:4318
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces python app.py

Each trace is checked once it is complete: its root span has arrived and no span came for
--idle seconds. The question is the root's input, the answer its output (else the answering
model call's), the references the retrieved documents that reached the answering prompt. A
trace no rule covers is counted unpaired (trace_unpaired), never guessed. The evaluation
span and its gen_ai.evaluation.result log records carry the app's trace id, parented to the
trace's root span, and go to --export-endpoint over OTLP/HTTP; --forward passes the received
spans on untouched, so the receiver can sit between the app and its collector.

Everything held for clients is bounded by --max-buffered-bytes: waiting spans (beyond, the
least recently active trace is given up, counted) and requests in flight (reserved before they
are read; without room, a 503 no_room that exporters retry). --max-open-traces,
--max-spans-per-trace and --max-trace-age bound the traces too. A request that is not a trace
export gets a 400, a body over --max-body-bytes a 413, a missing token a 401; all are counted.
Metrics and logs (POST /v1/metrics, /v1/logs) are answered with success and counted ignored.
GET /v1/stats shows the counts, GET /healthz answers 200. With the grpc extra, OTLP/gRPC is
served on --grpc-port as well. More: docs/collect.md.
"""


def add_collect_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "collect",
        help=_SUMMARY,
        description=_DESCRIPTION,
        epilog=f"Checker specs:\n{describe(CHECKERS)}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=run_collect)
    where = parser.add_argument_group("where")
    where.add_argument("--host", default="127.0.0.1", help="bind address (127.0.0.1)")
    where.add_argument("--port", type=int, default=4318, help="OTLP/HTTP port (4318)")
    where.add_argument(
        "--grpc-port", default="4317", metavar="PORT",
        help="OTLP/gRPC port, with the grpc extra installed (4317); off: none",
    )  # fmt: skip
    where.add_argument(
        "--token",
        help=f"bearer token every request must carry (default: ${TOKEN_ENV}, if set)",
    )
    where.add_argument(
        "--max-connections", type=int, default=limits.MAX_CONNECTIONS, metavar="N",
        help="connections open at once; a new one closes the one that has waited longest for "
        f"its request, counted timeout ({limits.MAX_CONNECTIONS})",
    )  # fmt: skip
    where.add_argument(
        "--request-timeout", type=float, default=limits.REQUEST_TIMEOUT, metavar="SECONDS",
        help="a request must arrive whole (headers and body) within this long, else its "
        "connection is closed, counted timeout; the same for an idle connection "
        f"({limits.REQUEST_TIMEOUT:g})",
    )  # fmt: skip
    where.add_argument(
        "--max-body-bytes", type=int, default=limits.MAX_BODY_BYTES, metavar="N",
        help=f"largest request body, also after gunzip ({_size(limits.MAX_BODY_BYTES)})",
    )  # fmt: skip
    out = parser.add_argument_group("where results and spans go")
    out.add_argument(
        "--export-endpoint", metavar="URL",
        help="OTLP/HTTP base URL the evaluation spans, log records and metrics go to "
        "(default: $OTEL_EXPORTER_OTLP_ENDPOINT if set, else they are only counted)",
    )  # fmt: skip
    out.add_argument(
        "--forward", metavar="URL",
        help="post every received export request, untouched, to this URL (…/v1/traces); each "
        "one not passed on is counted by reason in /v1/stats",
    )  # fmt: skip
    out.add_argument(
        "--events", choices=("logs", "span", "both"), default="logs",
        help="the per-claim evaluation events as log records (default), span events (for "
        "back ends that read only spans, such as Phoenix), or both",
    )  # fmt: skip
    out.add_argument(
        "--capture-content", action="store_true",
        help="include question, answer, claim and document text in what is exported",
    )  # fmt: skip
    check = parser.add_argument_group("checking")
    check.add_argument("--checker", default="embedded", metavar="SPEC", help="default: embedded")
    check.add_argument("--extractor", default="sentence", metavar="SPEC", help="default: sentence")
    check.add_argument(
        "--sample-rate", type=float, default=1.0, metavar="SHARE",
        help="share of traces checked, stable per trace id (1.0)",
    )  # fmt: skip
    check.add_argument(
        "--placement", choices=("thread", "process", "service"), default=None,
        help="where checking runs (default: a child process where one can start)",
    )  # fmt: skip
    traces = parser.add_argument_group("traces waiting in memory")
    for limit in dataclasses.fields(limits.TraceLimits):
        default = limit.default
        assert isinstance(default, int | float), limit.name
        shown = _size(default) if limit.name.endswith("_bytes") else f"{default:g}"
        traces.add_argument(
            "--" + limit.name.replace("_", "-"),
            type=type(default),
            default=default,
            metavar="SECONDS" if isinstance(default, float) else "N",
            help=f"{limit.metadata['help']} ({shown})",
        )


def _size(count: float) -> str:
    """A byte count as people write it: 16 MiB, 256 MiB, or the number."""
    return (
        f"{int(count) >> 20} MiB"
        if count >= 1 << 20 and int(count) % (1 << 20) == 0
        else f"{count:g}"
    )


def _options(args: argparse.Namespace) -> ReceiverOptions:
    from refcheck_callbacks.integrations.otlp.downstream import Downstream
    from refcheck_callbacks.integrations.otlp.launch import ReceiverOptions

    if args.forward is not None:
        Downstream.parse(args.forward)  # a URL it cannot post to fails before anything starts

    if args.max_body_bytes < 1 or args.max_connections < 1:
        raise ValueError("--max-body-bytes and --max-connections must be at least 1")
    if args.request_timeout <= 0:
        raise ValueError("--request-timeout must be positive")
    if not 0.0 <= args.sample_rate <= 1.0:
        raise ValueError("--sample-rate is a share between 0 and 1")
    trace_limits = limits.TraceLimits(
        **{
            limit.name: getattr(args, limit.name)
            for limit in dataclasses.fields(limits.TraceLimits)
        }
    )
    return ReceiverOptions(
        grpc_port=_grpc_port(args.grpc_port),
        host=args.host,
        port=args.port,
        token=args.token or os.environ.get(TOKEN_ENV) or None,
        max_body_bytes=args.max_body_bytes,
        forward=args.forward,
        limits=trace_limits,
        max_connections=args.max_connections,
        request_timeout=args.request_timeout,
    )


def _grpc_port(value: str) -> int | None:
    """The gRPC port; None when turned off, or left at its default without the grpc extra."""
    if value == "off":
        return None
    if not value.isdigit():
        raise ValueError(f"--grpc-port takes a port or off, not {value!r}")
    try:
        import grpc  # noqa: F401
    except ImportError:
        if value == "4317":
            return None
        raise ValueError(
            "--grpc-port needs the grpc extra: pip install 'refcheck-callbacks[grpc]'"
        ) from None
    return int(value)


def run_collect(args: argparse.Namespace) -> int:
    try:
        options = _options(args)
        from refcheck_callbacks.integrations.otlp.launch import Receiver
    except ValueError as exc:
        return fail(str(exc))
    except ImportError as exc:
        return fail(f"{exc}; install the collect extra: pip install 'refcheck-callbacks[collect]'")
    from refcheck_callbacks.engine.monitor import RefCheckMonitor
    from refcheck_callbacks.errors import RefCheckError

    endpoint = args.export_endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    exporters = (
        [] if endpoint is None else [export_exporter(endpoint, args.capture_content, args.events)]
    )
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    try:
        monitor = RefCheckMonitor(
            extractor=args.extractor,
            checker=args.checker,
            sample_rate=args.sample_rate,
            exporters=exporters,
            capture_content=args.capture_content,
            placement=args.placement,
        )
        receiver = Receiver(monitor, options, record=monitor.record).start()
    except (RefCheckError, OSError) as exc:
        return fail(str(exc))
    if options.token is None:
        print(
            f"refcheck collect: warning: no token, so anyone who reaches {options.host} can "
            f"send traces; set --token or {TOKEN_ENV}",
            file=sys.stderr,
        )
    print(f"refcheck collect: receiving OTLP/HTTP traces on {receiver.url}/v1/traces", flush=True)
    if receiver.grpc is not None:
        print(f"refcheck collect: and OTLP/gRPC on {options.host}:{receiver.grpc.port}", flush=True)
    stop.wait()
    receiver.stop()
    monitor.shutdown()
    return 0


def export_exporter(endpoint: str, capture_content: bool = False, events: str = "logs") -> Exporter:
    """An `OpenTelemetryExporter` sending spans, log records and metrics to `endpoint` (the
    OTLP/HTTP base URL: /v1/traces, /v1/logs, /v1/metrics are appended), on providers of its
    own; their resource takes `$OTEL_RESOURCE_ATTRIBUTES` (for Phoenix,
    `openinference.project.name=PROJECT` puts the evaluations in the app's project)."""
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
    resource = Resource.create({"service.name": "refcheck-collect"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{base}/v1/traces")))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(
        BatchLogRecordProcessor(OTLPLogExporter(f"{base}/v1/logs"))
    )
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(f"{base}/v1/metrics"))
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    return OpenTelemetryExporter(
        tracer_provider,
        meter_provider,
        logger_provider,
        events=events,
        capture_content=capture_content,
    )
