"""OpenTelemetry exporter benchmark: what exporting costs per answer, side by side in one run.

The exporter runs in the monitor's worker thread, never on the app's path, but it still takes
worker time away from checking. This measures `OpenTelemetryExporter.export()` on one realistic
result (5 claims with evidence, all stage timings, LLM usage) in four set-ups, interleaved in
rounds so machine noise hits them alike, and reports microseconds per result and the ratio to
the no-SDK case:

- noop: the default when the app has not configured OpenTelemetry (API proxies only);
- sdk: SDK tracer provider (BatchSpanProcessor, queue large enough to drop nothing, to an
  exporter that discards spans) and SDK meter provider (in-memory reader), capture_content off;
- sdk+content: the same with capture_content on;
- sdk+no-stages: sdk with the stage child spans left out of the result (their cost alone).

    python benchmarks/otel_exporter.py [--results 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from refcheck_callbacks import (
    CharSpan,
    CheckRequest,
    CheckResult,
    Claim,
    Evidence,
    Label,
    Outcome,
    Ratios,
    Reference,
    ResponseLabel,
    TraceContext,
    Usage,
    Verdict,
)
from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter


class _DroppingSpanExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _result(stage_spans: bool = True) -> CheckResult:
    now = time.time()
    references = [Reference(text=f"Reference {i} text. " * 40, id=f"doc-{i}") for i in range(5)]
    claims = [Claim(text=f"Claim number {i} states a fact about the world.") for i in range(5)]
    labels = [
        Label.ENTAILMENT,
        Label.ENTAILMENT,
        Label.NEUTRAL,
        Label.CONTRADICTION,
        Label.ENTAILMENT,
    ]
    verdicts = [
        Verdict(
            label=label,
            confidence=0.8,
            evidence=[
                Evidence(reference_index=i, reference_id=f"doc-{i}", span=CharSpan(start=0, end=60))
            ],
            explanation="The reference states otherwise." if label is Label.CONTRADICTION else None,
        )
        for i, label in enumerate(labels)
    ]
    timings = {"queue": 0.01, "extract": 0.02, "check": 0.1, "aggregate": 0.001, "total": 0.14}
    starts = {
        "queue": now - 0.14,
        "extract": now - 0.13,
        "check": now - 0.11,
        "aggregate": now - 0.001,
    }
    return CheckResult(
        request=CheckRequest(
            answer=" ".join(c.text for c in claims),
            question="What are the facts?",
            references=references,
            trace_context=TraceContext(
                trace_id="0af7651916cd43dd8448eb211c80319c", span_id="b7ad6b7169203331"
            ),
            model="gpt-test",
            submitted_at=now - 0.14,
        ),
        outcome=Outcome.CHECKED,
        claims=claims,
        verdicts=verdicts,
        response_label=ResponseLabel.CONTRADICTION,
        ratios=Ratios(entailment=0.6, neutral=0.2, contradiction=0.2),
        timings=timings,
        stage_started=starts if stage_spans else {},
        extractor="sentences",
        checker="embedded",
        usage=Usage(prompt_tokens=900, completion_tokens=60, requests=1, cost_usd=0.001),
        finished_at=now,
    )


def _sdk_exporter(capture_content: bool) -> OpenTelemetryExporter:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(
        BatchSpanProcessor(_DroppingSpanExporter(), max_queue_size=1_000_000)
    )
    meter_provider = MeterProvider([InMemoryMetricReader()])
    return OpenTelemetryExporter(tracer_provider, meter_provider, capture_content=capture_content)


def _per_result_us(exporter: OpenTelemetryExporter, result: CheckResult, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        exporter.export(result)
    return (time.perf_counter() - started) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--results", type=int, default=2000, help="exports per set-up and round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    setups = {
        "noop": (OpenTelemetryExporter(), _result()),
        "sdk": (_sdk_exporter(False), _result()),
        "sdk+content": (_sdk_exporter(True), _result()),
        "sdk+no-stages": (_sdk_exporter(False), _result(stage_spans=False)),
    }
    samples: dict[str, list[float]] = {name: [] for name in setups}
    for exporter, result in setups.values():
        _per_result_us(exporter, result, 200)  # warm-up
    for _ in range(args.rounds):
        for name, (exporter, result) in setups.items():
            samples[name].append(_per_result_us(exporter, result, args.results))

    base = statistics.median(samples["noop"])
    print(f"export() per result, median of {args.rounds} rounds x {args.results} results")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"  {name:<14} {median:8.1f} us   x{median / base:5.1f} vs noop")


if __name__ == "__main__":
    main()
