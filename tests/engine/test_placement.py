"""Every result says where its claims were checked, and the evaluation span carries it."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from scripted_checkers import KeywordChecker
from scripted_openai_server import Received, Reply, ScriptedOpenAIServer

from refcheck_callbacks import (
    Label,
    Outcome,
    Placement,
    PlacementError,
    ProtocolError,
    RefCheckMonitor,
    Verdict,
)
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.engine.pipeline import Pipeline
from refcheck_callbacks.exporters import names
from refcheck_callbacks.exporters.opentelemetry import OpenTelemetryExporter
from refcheck_callbacks.extract.sentences import SentenceExtractor
from refcheck_callbacks.remote.wire import CheckCall, CheckReply


def test_in_thread_results_say_thread_on_the_span_under_the_apps_span(
    embedded_checker: EmbeddedChecker,
) -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    exporter = OpenTelemetryExporter(tracer_provider=provider)
    app_span = provider.get_tracer("app").start_as_current_span("app request")
    with (
        RefCheckMonitor(checker=embedded_checker, exporters=[exporter]) as monitor,
        app_span as app,
    ):
        result = monitor.check(
            answer="Paris is the capital of France.", references=["Paris is in France."]
        )
    assert result.placement is Placement.THREAD
    [evaluation] = [s for s in spans.get_finished_spans() if s.name == names.EVALUATION_SPAN]
    assert (evaluation.attributes or {})[names.CHECKER_PLACEMENT] == "thread"
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == app.get_span_context().span_id


def test_a_pipeline_in_a_child_process_says_process_unless_its_checker_is_a_service(
    embedded_checker: EmbeddedChecker,
) -> None:
    from refcheck_callbacks.check.remote import RemoteChecker

    extractor = SentenceExtractor()
    in_child = Pipeline(extractor, embedded_checker, runs_in=Placement.PROCESS)
    assert in_child.placement is Placement.PROCESS
    remote = RemoteChecker("http://127.0.0.1:9")
    assert Pipeline(extractor, remote, runs_in=Placement.PROCESS).placement is Placement.SERVICE


class NoCheck:
    """A checker written from the README that forgot `check`."""

    name = "no-check"
    needs_references = True


@pytest.mark.parametrize("placement", ["thread", "process"])
@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"checker": NoCheck()}, "the checker NoCheck does not implement Checker: it has no check"),
        (
            {"checker": KeywordChecker, "extractor": object()},
            "the extractor object does not implement Extractor: it has no extract, name",
        ),
    ],
    ids=["checker-without-check", "extractor-of-nothing"],
)
def test_an_object_that_lacks_a_member_is_refused_naming_the_member(
    placement: str, options: dict[str, object], says: str
) -> None:
    with pytest.raises(ProtocolError, match=says):
        RefCheckMonitor(placement=placement, exporters=[], **options)  # type: ignore[arg-type]


def _entailed(received: Received) -> Reply:
    """A checker service's reply: every claim of the call entailed."""
    call = CheckCall.model_validate(received.body)
    verdicts = [Verdict(label=Label.ENTAILMENT, confidence=0.9) for _ in call.claims]
    return Reply(raw=CheckReply(checker="served", verdicts=verdicts).model_dump_json().encode())


def test_placement_service_checks_on_the_service_from_the_monitors_thread(
    llm_server: ScriptedOpenAIServer,
) -> None:
    llm_server.respond(_entailed)
    with RefCheckMonitor(
        checker=f"remote:{llm_server.url}", placement="service", exporters=[]
    ) as monitor:
        assert monitor.runner.placement is Placement.SERVICE
        assert not hasattr(monitor.runner, "pid")  # no checking process for a service
        result = monitor.check(
            answer="Paris is the capital of France.", references=["Paris is in France."]
        )
    assert (result.outcome, result.placement) == (Outcome.CHECKED, Placement.SERVICE)
    assert [v.label for v in result.verdicts] == [Label.ENTAILMENT]
    assert len(llm_server.received) == 1


def test_placement_service_refuses_a_checker_that_checks_in_the_app() -> None:
    with pytest.raises(PlacementError, match=r"placement='service' .*checker='remote:URL'"):
        RefCheckMonitor(checker=KeywordChecker(), placement="service", exporters=[])
    with pytest.raises(PlacementError, match="'thread', 'process' or 'service', not 'cloud'"):
        RefCheckMonitor(checker=KeywordChecker(), placement="cloud", exporters=[])
