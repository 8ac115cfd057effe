"""An app process that checks its answers through a refcheck service: run as a real subprocess.

    python tests/helpers/remote_app.py URL [--deadline S] [--remote-extractor]

It builds a `RefCheckMonitor` with `RemoteChecker(URL)` (and `RemoteExtractor(URL)`), exports
to an in-memory OpenTelemetry SDK, prints one JSON line `{"client": ...}` when ready, then
reads commands from stdin, one JSON line each:

    {"answers": [{"answer": ..., "references": [...], "question": ...}, ...]}
        submits them all inside an app span, flushes, and prints one JSON line per command:
        {"results": [{"outcome", "labels", "message", "check_s", "placement",
                      "span_placement", "parent_is_app_span"}, ...], "failures": {...}}
    {"quit": true}
        shuts the monitor down and exits 0.

Any exception that reaches this script ends it with a traceback and a non-zero status: the
tests treat that as the plugin hurting the app.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from refcheck_callbacks import CheckResult, RefCheckMonitor
from refcheck_callbacks.check.remote import RemoteChecker
from refcheck_callbacks.exporters import names
from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter
from refcheck_callbacks.extract.remote import RemoteExtractor
from refcheck_callbacks.extract.sentences import SentenceExtractor
from refcheck_callbacks.llm.client import RetryPolicy
from refcheck_callbacks.remote.options import RemoteOptions


def _summary(result: CheckResult, spans: InMemorySpanExporter, app_span: int) -> dict[str, Any]:
    [span] = [
        s
        for s in spans.get_finished_spans()
        if s.name == names.EVALUATION_SPAN
        and (s.attributes or {}).get(names.REQUEST_ID) == result.request.request_id
    ]
    return {
        "index": result.request.metadata["index"],
        "outcome": result.outcome.value,
        "labels": [None if v.label is None else v.label.value for v in result.verdicts],
        "message": result.message,
        "check_s": result.timings.get("check"),
        "placement": None if result.placement is None else result.placement.value,
        "span_placement": (span.attributes or {}).get(names.CHECKER_PLACEMENT),
        "parent_is_app_span": span.parent is not None and span.parent.span_id == app_span,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--deadline", type=float, default=10.0)
    parser.add_argument("--remote-extractor", action="store_true")
    args = parser.parse_args()
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracer = provider.get_tracer("app")
    retry = RetryPolicy(max_retries=3, backoff=0.1, max_backoff=0.5)
    checker = RemoteChecker(args.url, RemoteOptions(deadline=args.deadline, retry=retry))
    extractor = (
        RemoteExtractor(args.url, RemoteOptions(deadline=args.deadline, retry=retry))
        if args.remote_extractor
        else SentenceExtractor()
    )
    results: list[CheckResult] = []
    monitor = RefCheckMonitor(
        checker=checker,
        extractor=extractor,
        exporters=[OpenTelemetryExporter(tracer_provider=provider)],
        on_result=results.append,
    )
    print(json.dumps({"client": checker.client.client_id}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command.get("quit"):
            break
        results.clear()
        with tracer.start_as_current_span("app request") as app:
            for index, answer in enumerate(command["answers"]):
                monitor.submit(**answer, metadata={"index": index})
        flushed = monitor.flush(timeout=60)
        app_span = app.get_span_context().span_id
        ordered = sorted(results, key=lambda r: r.request.metadata["index"])
        print(
            json.dumps(
                {
                    "flushed": flushed,
                    "results": [_summary(r, spans, app_span) for r in ordered],
                    "failures": checker.stats()["failures"],
                }
            ),
            flush=True,
        )
    monitor.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
