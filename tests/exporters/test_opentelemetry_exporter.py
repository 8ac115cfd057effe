"""The OpenTelemetry exporter against the real SDK, read back through its in-memory exporters."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
import weakref
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import SpanKind, StatusCode
from scripted_checkers import KeywordChecker
from telemetry import Telemetry

from refcheck_callbacks import (
    CharSpan,
    CheckError,
    CheckRequest,
    CheckResult,
    Claim,
    ConflictKind,
    Evidence,
    Label,
    Outcome,
    Ratios,
    RefCheckMonitor,
    Reference,
    ResponseLabel,
    Tally,
    TraceContext,
    Usage,
    Verdict,
)
from refcheck_callbacks.exporters import names
from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter

APP_TRACE = "0af7651916cd43dd8448eb211c80319c"
APP_SPAN = "b7ad6b7169203331"
CONTENT_KEYS = {
    names.QUESTION,
    names.ANSWER,
    names.CLAIM_TEXT,
    names.GEN_AI_EVALUATION_EXPLANATION,
    names.CLAIM_EVIDENCE_TEXT,
    names.CLAIM_SUGGESTION,
    names.MESSAGE,
}
SECRET = "Paris"


def _request(**fields: Any) -> CheckRequest:
    now = time.time()
    defaults: dict[str, Any] = {
        "answer": f"The capital of France is {SECRET}. It has 90 million people.",
        "question": "What is the capital of France?",
        "references": [
            Reference(text=f"{SECRET} is the capital of France.", id="doc-1"),
            Reference(text="France has about 68 million inhabitants."),
        ],
        "trace_context": TraceContext(trace_id=APP_TRACE, span_id=APP_SPAN),
        "model": "gpt-test",
        "response_id": "resp-42",
        "submitted_at": now - 2.0,
    }
    return CheckRequest(**{**defaults, **fields})


def _checked(**fields: Any) -> CheckResult:
    request = _request(**fields)
    t0 = request.submitted_at
    return CheckResult(
        request=request,
        outcome=Outcome.CHECKED,
        claims=[
            Claim(text=f"The capital of France is {SECRET}.", span=CharSpan(start=0, end=31)),
            Claim(text="France has 90 million people.", span=CharSpan(start=32, end=60)),
        ],
        verdicts=[
            Verdict(
                label=Label.ENTAILMENT,
                confidence=0.93,
                evidence=[
                    Evidence(reference_index=0, reference_id="doc-1", span=CharSpan(start=0, end=5))
                ],
                explanation=f"The reference names {SECRET} as the capital.",
            ),
            Verdict(
                label=Label.CONTRADICTION,
                confidence=0.81,
                evidence=[Evidence(reference_index=1, span=CharSpan(start=0, end=40))],
                hallucination_type="entity",
                suggestion="France has 68 million people.",
                conflict=ConflictKind.VALUE,
            ),
        ],
        response_label=ResponseLabel.CONTRADICTION,
        # Not the shares two claims give (0.5 / 0.5): every ratio, and the hallucination ratio
        # (neutral + contradiction = 0.6), differs from the others, so a swapped mapping fails.
        ratios=Ratios(entailment=0.4, neutral=0.25, contradiction=0.35),
        timings={"queue": 0.5, "extract": 0.25, "check": 1.0, "aggregate": 0.01, "total": 1.9},
        stage_started={"queue": t0, "extract": t0 + 0.5, "check": t0 + 0.8, "aggregate": t0 + 1.85},
        extractor="sentences",
        checker="scripted",
        usage=Usage(prompt_tokens=120, completion_tokens=30, requests=1, cost_usd=0.002),
        finished_at=t0 + 1.9,
    )


def _abstained() -> CheckResult:
    return CheckResult(
        request=_request(answer="I don't know."),
        outcome=Outcome.ABSTAIN,
        response_label=ResponseLabel.ABSTAIN,
        message="the answer holds no checkable claim",
        extractor="sentences",
        checker="scripted",
    )


def _failed() -> CheckResult:
    return CheckResult(
        request=_request(),
        outcome=Outcome.ERROR,
        claims=[Claim(text=f"The capital of France is {SECRET}.")],
        verdicts=[Verdict(label=None, error=f"judge reply unreadable: '{SECRET}?'")],
        error_type=CheckError.__name__,
        message=f"judge reply unreadable: '{SECRET}?'",
        extractor="sentences",
        checker="scripted",
    )


def _events(telemetry: Telemetry, span: ReadableSpan, evaluation: str) -> list[dict[str, Any]]:
    """The attributes of the span's `evaluation` log records, in order."""
    assert span.context is not None
    return [
        dict(r.log_record.attributes or {})
        for r in telemetry.evaluation_records()
        if r.log_record.span_id == span.context.span_id
        and (r.log_record.attributes or {}).get(names.GEN_AI_EVALUATION_NAME) == evaluation
    ]


def _exported_attributes(telemetry: Telemetry) -> list[dict[str, Any]]:
    """Every attribute map that left: spans, span events and log records."""
    maps = []
    for span in telemetry.spans.get_finished_spans():
        maps.append(dict(span.attributes or {}))
        maps += [dict(event.attributes or {}) for event in span.events]
    maps += [dict(r.log_record.attributes or {}) for r in telemetry.logs.get_finished_logs()]
    return maps


def test_checked_answer_is_a_child_of_the_app_span_with_link_times_and_stage_spans(
    telemetry: Telemetry,
) -> None:
    result = _checked()
    telemetry.exporter().export([result])

    span = telemetry.span(names.EVALUATION_SPAN)
    assert span.kind is SpanKind.INTERNAL
    assert span.context is not None and span.parent is not None
    assert format(span.context.trace_id, "032x") == APP_TRACE
    assert format(span.parent.span_id, "016x") == APP_SPAN
    assert [format(link.context.span_id, "016x") for link in span.links] == [APP_SPAN]
    assert span.start_time == int(result.request.submitted_at * 1e9)
    assert span.end_time == int(result.finished_at * 1e9)
    assert span.status.status_code is StatusCode.UNSET

    attributes = dict(span.attributes or {})
    assert attributes[names.GEN_AI_OPERATION_NAME] == "evaluation"
    assert attributes[names.OUTCOME] == "checked"
    assert attributes[names.RESPONSE_LABEL] == "contradiction"
    assert attributes[names.RESPONSE_HALLUCINATION_RATIO] == pytest.approx(0.6)
    assert attributes[names.RESPONSE_CONTRADICTION_RATIO] == pytest.approx(0.35)
    assert attributes[names.CLAIM_COUNT] == 2
    assert attributes[names.CLAIM_FAILED_COUNT] == 0
    assert attributes[names.REFERENCE_COUNT] == 2
    assert attributes[names.EXTRACTOR] == "sentences"
    assert attributes[names.CHECKER] == "scripted"
    assert attributes[names.GEN_AI_REQUEST_MODEL] == "gpt-test"
    assert attributes[names.GEN_AI_RESPONSE_ID] == "resp-42"
    assert attributes[names.REQUEST_ID] == result.request.request_id

    stages = {
        s.name: s for s in telemetry.spans.get_finished_spans() if s.name != names.EVALUATION_SPAN
    }
    assert set(stages) == {f"refcheck {s}" for s in ("queue", "extract", "check", "aggregate")}
    check = stages["refcheck check"]
    assert check.parent is not None and check.parent.span_id == span.context.span_id
    assert check.start_time == int(result.stage_started["check"] * 1e9)
    assert check.end_time == int((result.stage_started["check"] + 1.0) * 1e9)
    assert dict(check.attributes or {}) == {names.STAGE: "check"}


def test_checked_answer_has_one_event_per_claim_and_one_per_response(telemetry: Telemetry) -> None:
    telemetry.exporter().export([_checked()])
    span = telemetry.span(names.EVALUATION_SPAN)

    assert len(telemetry.evaluation_records()) == 3
    assert span.events == ()  # log records, not the deprecated span events
    first, second = _events(telemetry, span, names.CLAIM_EVALUATION)
    assert first[names.CLAIM_INDEX] == 0
    assert first[names.GEN_AI_EVALUATION_SCORE_LABEL] == "entailment"
    assert first[names.GEN_AI_EVALUATION_SCORE_VALUE] == pytest.approx(0.93)
    assert first[names.CLAIM_EVIDENCE_DOC_IDS] == ("doc-1",)
    assert first[names.GEN_AI_RESPONSE_ID] == "resp-42"
    assert second[names.GEN_AI_EVALUATION_SCORE_LABEL] == "contradiction"
    assert second[names.CLAIM_EVIDENCE_INDICES] == (1,)
    assert names.CLAIM_EVIDENCE_DOC_IDS not in second  # that reference has no id
    assert second[names.CLAIM_HALLUCINATION_TYPE] == "entity"
    assert second[names.CLAIM_CONFLICT] == "value"
    assert names.CLAIM_CONFLICT not in first  # no conflict: an entailed claim

    [response] = _events(telemetry, span, names.RESPONSE_EVALUATION)
    assert response[names.GEN_AI_EVALUATION_SCORE_LABEL] == "contradiction"
    assert response[names.GEN_AI_EVALUATION_SCORE_VALUE] == pytest.approx(0.6)
    assert response[names.RESPONSE_CONTRADICTION_RATIO] == pytest.approx(0.35)
    assert response[names.OUTCOME] == "checked"


def test_checked_answer_metrics_with_exemplars_on_the_evaluation_trace(
    telemetry: Telemetry,
) -> None:
    telemetry.exporter().export([_checked()])
    common = {names.CHECKER: "scripted", names.GEN_AI_REQUEST_MODEL: "gpt-test"}

    claims = telemetry.points(names.CLAIMS)
    assert {dict(k)[names.VERDICT]: p.value for k, p in claims.items()} == {
        "entailment": 1,
        "contradiction": 1,
    }
    assert all(dict(k).items() >= common.items() for k in claims)
    [(response_key, response)] = telemetry.points(names.RESPONSES).items()
    assert dict(response_key) == {
        **common,
        names.OUTCOME: "checked",
        names.RESPONSE_LABEL: "contradiction",
    }
    assert response.value == 1

    [ratio] = telemetry.points(names.HALLUCINATION_RATIO).values()
    assert (ratio.count, ratio.sum) == (1, pytest.approx(0.6))
    assert telemetry.metrics()[names.HALLUCINATION_RATIO].unit == "1"
    [contradiction] = telemetry.points(names.CONTRADICTION_RATIO).values()
    assert (contradiction.count, contradiction.sum) == (1, pytest.approx(0.35))

    durations = telemetry.points(names.STAGE_DURATION)
    by_stage = {dict(k)[names.STAGE]: p.sum for k, p in durations.items()}
    assert by_stage == pytest.approx(
        {"queue": 0.5, "extract": 0.25, "check": 1.0, "aggregate": 0.01, "total": 1.9}
    )
    assert telemetry.metrics()[names.STAGE_DURATION].unit == "s"

    evaluation = telemetry.span(names.EVALUATION_SPAN).context
    assert evaluation is not None
    exemplar_traces = {e.trace_id for p in claims.values() for e in p.exemplars}
    assert exemplar_traces == {evaluation.trace_id}

    tokens = telemetry.points(names.LLM_TOKENS)
    assert {dict(k)[names.GEN_AI_TOKEN_TYPE]: p.value for k, p in tokens.items()} == {
        "input": 120,
        "output": 30,
    }
    assert telemetry.metrics()[names.LLM_TOKENS].unit == "{token}"
    [cost] = telemetry.points(names.LLM_COST).values()
    assert cost.value == pytest.approx(0.002)


def test_abstained_answer_has_a_response_event_and_no_claims(telemetry: Telemetry) -> None:
    telemetry.exporter().export([_abstained()])
    span = telemetry.span(names.EVALUATION_SPAN)

    assert dict(span.attributes or {})[names.OUTCOME] == "abstain"
    assert dict(span.attributes or {})[names.RESPONSE_LABEL] == "abstain"
    assert span.status.status_code is StatusCode.UNSET
    assert _events(telemetry, span, names.CLAIM_EVALUATION) == []
    [response] = _events(telemetry, span, names.RESPONSE_EVALUATION)
    assert response[names.GEN_AI_EVALUATION_SCORE_LABEL] == "abstain"
    assert names.GEN_AI_EVALUATION_SCORE_VALUE not in response

    [key] = telemetry.points(names.RESPONSES)
    assert dict(key)[names.OUTCOME] == "abstain"
    assert dict(key)[names.RESPONSE_LABEL] == "abstain"
    assert names.CLAIMS not in telemetry.metrics()
    assert names.HALLUCINATION_RATIO not in telemetry.metrics()
    assert names.LLM_TOKENS not in telemetry.metrics()  # no usage, no token counts


def test_failed_answer_is_an_error_span_and_its_failed_claim_counts_as_error(
    telemetry: Telemetry,
) -> None:
    telemetry.exporter().export([_failed()])
    span = telemetry.span(names.EVALUATION_SPAN)

    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "CheckError"
    attributes = dict(span.attributes or {})
    assert attributes[names.OUTCOME] == "error"
    assert attributes[names.ERROR_TYPE] == "CheckError"
    assert attributes[names.CLAIM_FAILED_COUNT] == 1
    assert names.RESPONSE_LABEL not in attributes

    [claim] = _events(telemetry, span, names.CLAIM_EVALUATION)
    assert claim[names.ERROR_TYPE] == "CheckError"
    assert names.GEN_AI_EVALUATION_SCORE_LABEL not in claim
    [response] = _events(telemetry, span, names.RESPONSE_EVALUATION)
    assert response[names.ERROR_TYPE] == "CheckError"

    [key] = telemetry.points(names.CLAIMS)
    assert dict(key)[names.VERDICT] == names.VERDICT_ERROR
    [key] = telemetry.points(names.RESPONSES)
    assert dict(key)[names.OUTCOME] == "error"
    assert names.RESPONSE_LABEL not in dict(key)


def test_no_text_leaves_without_content_capture(telemetry: Telemetry) -> None:
    exporter = telemetry.exporter()
    for result in (_checked(), _abstained(), _failed()):
        exporter.export([result])

    exported = _exported_attributes(telemetry)
    spans = telemetry.spans.get_finished_spans()
    # What is searched below: every answer's span and records.
    assert sum(s.name == names.EVALUATION_SPAN for s in spans) == 3
    assert len(telemetry.logs.get_finished_logs()) == 3 + 1 + 2
    assert not {key for attributes in exported for key in attributes} & CONTENT_KEYS
    assert not any(SECRET in str(v) for attributes in exported for v in attributes.values())
    for span in spans:
        assert span.status.description is None or SECRET not in span.status.description


def test_content_capture_exports_clipped_redacted_text(telemetry: Telemetry) -> None:
    telemetry.exporter(
        capture_content=True, max_content_chars=20, redact=lambda t: t.replace(SECRET, "[CITY]")
    ).export([_checked()])
    telemetry.exporter(capture_content=True).export([_failed()])
    checked, failed = (
        s for s in telemetry.spans.get_finished_spans() if s.name == names.EVALUATION_SPAN
    )

    attributes = dict(checked.attributes or {})
    assert attributes[names.QUESTION] == "What is the capital…"
    assert attributes[names.ANSWER] == "The capital of Fran…"
    first, second = _events(telemetry, checked, names.CLAIM_EVALUATION)
    assert first[names.CLAIM_TEXT] == "The capital of Fran…"
    assert first[names.GEN_AI_EVALUATION_EXPLANATION] == "The reference names…"
    assert first[names.CLAIM_EVIDENCE_TEXT] == "[CITY]"
    assert second[names.CLAIM_SUGGESTION] == "France has 68 milli…"
    clipped = CONTENT_KEYS & set(first)
    assert len(clipped) == 3 and all(len(str(first[k])) <= 20 for k in clipped)

    assert dict(failed.attributes or {})[names.MESSAGE] == f"judge reply unreadable: '{SECRET}?'"
    [claim] = _events(telemetry, failed, names.CLAIM_EVALUATION)
    assert claim[names.MESSAGE] == f"judge reply unreadable: '{SECRET}?'"


def test_answer_without_trace_context_starts_its_own_trace(telemetry: Telemetry) -> None:
    telemetry.exporter().export([_checked(trace_context=None)])
    span = telemetry.span(names.EVALUATION_SPAN)
    assert span.parent is None
    assert span.links == ()
    assert span.context is not None and format(span.context.trace_id, "032x") != APP_TRACE


def test_unsampled_app_trace_is_not_recorded(telemetry: Telemetry) -> None:
    unsampled = TraceContext(trace_id=APP_TRACE, span_id=APP_SPAN, trace_flags=0)
    telemetry.exporter().export([_checked(trace_context=unsampled)])
    assert telemetry.spans.get_finished_spans() == ()
    assert telemetry.points(names.RESPONSES)  # metrics count every answer all the same


def test_tallies_batches_and_queue_size(telemetry: Telemetry) -> None:
    first, second = telemetry.exporter(), telemetry.exporter()
    first.record(Tally.DROPPED, "queue_full", 3)
    first.record(Tally.SKIPPED, "sampled_out")
    second.record(Tally.ERRORS, "exporter", 2)
    first.export([_checked(), _abstained(), _checked()])
    first.bind(lambda: 5)
    second.bind(lambda: 2)

    assert {dict(k)[names.REASON]: p.value for k, p in telemetry.points(names.DROPPED).items()} == {
        "queue_full": 3
    }
    assert [p.value for p in telemetry.points(names.SKIPPED).values()] == [1]
    assert [p.value for p in telemetry.points(names.ERRORS).values()] == [2]
    [batch] = telemetry.points(names.CHECKER_BATCH_SIZE).values()
    assert (batch.count, batch.sum) == (1, 4)  # claims of the batch's checked answers
    [queue] = telemetry.points(names.QUEUE_SIZE).values()
    assert queue.value == 7  # both monitors on this provider, summed

    second.shutdown()
    [queue] = telemetry.points(names.QUEUE_SIZE).values()
    assert queue.value == 5
    assert telemetry.tracer_provider.force_flush()
    assert first.force_flush(1.0)


class _SuppressionProbe(SpanProcessor):
    """Notes whether instrumentation was suppressed while each span started."""

    def __init__(self) -> None:
        self.suppressed: list[bool] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.suppressed.append(bool(otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY)))


def test_export_runs_with_instrumentation_suppressed(telemetry: Telemetry) -> None:
    probe = _SuppressionProbe()
    telemetry.tracer_provider.add_span_processor(probe)
    telemetry.exporter().export([_checked()])
    assert probe.suppressed and all(probe.suppressed)
    assert not otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY)


def test_monitor_defaults_to_an_opentelemetry_exporter() -> None:
    with RefCheckMonitor(checker=KeywordChecker(), capture_content=True) as monitor:
        [exporter] = monitor.exporters
        assert isinstance(exporter, OpenTelemetryExporter)
        assert exporter.capture_content
    with RefCheckMonitor(checker=KeywordChecker(), exporters=[]) as monitor:
        assert monitor.exporters == []


def test_monitor_results_join_the_app_trace_with_real_stage_spans(telemetry: Telemetry) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    exporter = telemetry.exporter()
    with RefCheckMonitor(checker=KeywordChecker(), exporters=[exporter]) as monitor:
        with tracer.start_as_current_span("rag chain") as app_span:
            assert monitor.submit(
                answer="Paris is in France. The rest is unknowable.",
                references=["Paris is the capital of France."],
            )
        assert monitor.submit(answer="This one explodes.", references=["x"], trace_context=None)
        assert monitor.flush(10)

    spans = telemetry.spans.get_finished_spans()
    evaluations = {
        dict(s.attributes or {})[names.OUTCOME]: s for s in spans if s.name == names.EVALUATION_SPAN
    }
    evaluation, failed = evaluations["partial"], evaluations["error"]
    app = app_span.get_span_context()
    assert evaluation.context is not None and evaluation.parent is not None
    assert (evaluation.context.trace_id, evaluation.parent.span_id) == (app.trace_id, app.span_id)
    stage_names = {
        s.name for s in spans if s.parent and s.parent.span_id == evaluation.context.span_id
    }
    assert {
        "refcheck queue",
        "refcheck extract",
        "refcheck check",
        "refcheck aggregate",
    } <= stage_names
    assert evaluation.start_time is not None and evaluation.end_time is not None
    for stage in spans:
        if stage.name in stage_names:
            assert stage.start_time is not None and stage.end_time is not None
            assert evaluation.start_time <= stage.start_time <= stage.end_time
            assert stage.end_time <= evaluation.end_time + 1_000_000  # within a millisecond
    verdicts = {dict(k)[names.VERDICT]: p.value for k, p in telemetry.points(names.CLAIMS).items()}
    assert verdicts == {"entailment": 1, "error": 1}

    assert failed.status.status_code is StatusCode.ERROR
    assert dict(failed.attributes or {})[names.ERROR_TYPE] == "RuntimeError"
    assert failed.parent is None


def test_monitor_redact_hook_runs_before_content_is_exported(telemetry: Telemetry) -> None:
    exporter = telemetry.exporter(capture_content=True)
    with RefCheckMonitor(
        checker=KeywordChecker(),
        exporters=[exporter],
        redact=lambda text: text.replace(SECRET, "<city>"),
    ) as monitor:
        monitor.check(
            answer=f"{SECRET} is the capital of France.",
            references=[f"{SECRET} is the capital of France."],
            question=f"Is {SECRET} the capital?",
        )

    span = telemetry.span(names.EVALUATION_SPAN)
    attributes = dict(span.attributes or {})
    assert attributes[names.ANSWER] == "<city> is the capital of France."
    assert attributes[names.QUESTION] == "Is <city> the capital?"
    [claim] = _events(telemetry, span, names.CLAIM_EVALUATION)
    assert claim[names.CLAIM_TEXT] == "<city> is the capital of France."


GLOBAL_PROVIDERS_APP = """
import json
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from refcheck_callbacks import Label, RefCheckMonitor, Verdict

class Checker:
    name = "all-entailed"
    needs_references = True
    async def check(self, items):
        return [Verdict(label=Label.ENTAILMENT, confidence=1.0) for _ in items]

monitor = RefCheckMonitor(checker=Checker())  # created before the app configures OpenTelemetry
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider([reader]))
spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(provider)
monitor.submit(answer="Paris is the capital of France.", references=["Paris is in France."])
monitor.flush(10)
scopes = [s for r in reader.get_metrics_data().resource_metrics for s in r.scope_metrics]
print(json.dumps({
    "spans": [s.name for s in spans.get_finished_spans()],
    "metrics": sorted(m.name for s in scopes for m in s.metrics),
}))
monitor.shutdown()
"""


def test_default_exporter_follows_global_providers_configured_after_the_monitor() -> None:
    """Global providers can be set once per process, so this runs in its own interpreter."""
    run = subprocess.run(
        [sys.executable, "-c", GLOBAL_PROVIDERS_APP], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert names.EVALUATION_SPAN in seen["spans"]
    assert "refcheck check" in seen["spans"]
    assert {names.CLAIMS, names.RESPONSES, names.QUEUE_SIZE, names.STAGE_DURATION} <= set(
        seen["metrics"]
    )


def test_exporters_keep_neither_providers_nor_monitors_alive() -> None:
    provider = MeterProvider(shutdown_on_exit=False)
    exporter = OpenTelemetryExporter(TracerProvider(), provider)
    with RefCheckMonitor(checker=KeywordChecker(), exporters=[exporter]) as monitor:
        monitor_ref = weakref.ref(monitor)
    provider_ref = weakref.ref(provider)
    provider.shutdown()
    del provider, exporter, monitor
    gc.collect()
    assert provider_ref() is None
    assert monitor_ref() is None


def test_evidence_pointing_past_the_references_still_exports_the_result(
    telemetry: Telemetry,
) -> None:
    result = _checked()
    buggy = result.verdicts[1].evidence[0].model_copy(update={"reference_index": 7})
    verdicts = (result.verdicts[0], result.verdicts[1].model_copy(update={"evidence": (buggy,)}))
    result = result.model_copy(update={"verdicts": verdicts})  # a buggy checker's citation
    telemetry.exporter(capture_content=True).export([result])
    span = telemetry.span(names.EVALUATION_SPAN)
    first, second = _events(telemetry, span, names.CLAIM_EVALUATION)
    assert first[names.CLAIM_EVIDENCE_TEXT] == SECRET
    assert names.CLAIM_EVIDENCE_TEXT not in second
    assert second[names.CLAIM_EVIDENCE_INDICES] == (7,)


def test_an_answer_with_more_claims_than_the_event_limit_keeps_its_response_event(
    telemetry: Telemetry,
) -> None:
    result = _checked().model_copy(
        update={
            "claims": tuple(Claim(text=f"Claim {i}.") for i in range(300)),
            "verdicts": tuple(Verdict(label=Label.ENTAILMENT, confidence=0.9) for _ in range(300)),
        }
    )
    telemetry.exporter(events="span").export([result])

    span = telemetry.span(names.EVALUATION_SPAN)
    evaluations = [dict(e.attributes or {}).get(names.GEN_AI_EVALUATION_NAME) for e in span.events]
    assert evaluations[-1] == names.RESPONSE_EVALUATION  # the answer's event is kept
    assert span.dropped_events == 301 - len(span.events) > 0  # the SDK's limit, counted
    assert dict(span.attributes or {})[names.CLAIM_COUNT] == 300
    [claims] = telemetry.points(names.CLAIMS).values()
    assert claims.value == 300  # metrics count every claim


def test_evaluation_events_are_log_records_in_the_evaluation_spans_context(
    telemetry: Telemetry,
) -> None:
    telemetry.exporter().export([_checked(), _abstained()])

    spans = [s for s in telemetry.spans.get_finished_spans() if s.name == names.EVALUATION_SPAN]
    records = telemetry.evaluation_records()
    assert len(spans) == 2  # one per answer: the loop below checks both
    assert len(records) == 2 + 1 + 1  # a record per claim and per answer, both answers
    for span in spans:
        assert span.context is not None and span.events == ()
        own = [r.log_record for r in records if r.log_record.span_id == span.context.span_id]
        assert all(r.trace_id == span.context.trace_id for r in own)
        evaluations = [dict(r.attributes or {})[names.GEN_AI_EVALUATION_NAME] for r in own]
        claims = dict(span.attributes or {})[names.CLAIM_COUNT]
        assert evaluations == [names.CLAIM_EVALUATION] * claims + [names.RESPONSE_EVALUATION]
    assert {r.log_record.event_name for r in records} == {names.EVALUATION_EVENT}
    assert all(r.instrumentation_scope.name == names.INSTRUMENTATION_SCOPE for r in records)


@pytest.mark.parametrize(("events", "records", "span_events"), [("span", 0, 3), ("both", 3, 3)])
def test_span_events_remain_an_option_for_span_only_back_ends(
    telemetry: Telemetry, events: str, records: int, span_events: int
) -> None:
    telemetry.exporter(events=events).export([_checked()])
    span = telemetry.span(names.EVALUATION_SPAN)
    assert len(telemetry.evaluation_records()) == records
    assert [e.name for e in span.events] == [names.EVALUATION_EVENT] * span_events
    assert [dict(e.attributes or {})[names.GEN_AI_EVALUATION_NAME] for e in span.events] == [
        names.CLAIM_EVALUATION,
        names.CLAIM_EVALUATION,
        names.RESPONSE_EVALUATION,
    ][:span_events]
