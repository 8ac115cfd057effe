"""The instrumentors in the app's own process: OpenTelemetry's `BaseInstrumentor` contract,
typed options matching the integrations', and the environment-built monitor's laziness."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator
from typing import Any

import gated_components
import pytest
from langchain_core.callbacks import BaseCallbackManager, CallbackManager
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from results import RecordingExporter

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.instrumentation import environment_monitor
from refcheck_callbacks.instrumentation.environment_monitor import EnvironmentMonitor
from refcheck_callbacks.instrumentation.langchain import (
    LangChainOptions,
    RefCheckLangChainInstrumentor,
)
from refcheck_callbacks.instrumentation.llamaindex import (
    LlamaIndexOptions,
    RefCheckLlamaIndexInstrumentor,
)
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler
from refcheck_callbacks.integrations.llamaindex import QueryCapture, instrument_llamaindex
from refcheck_callbacks.integrations.llamaindex.instrument import RefCheckSpanHandler

ORIGINAL_INIT = BaseCallbackManager.__init__


@pytest.fixture(autouse=True)
def uninstrumented(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(environment_monitor, "_shared", None)
    yield
    for instrumentor in (RefCheckLangChainInstrumentor(), RefCheckLlamaIndexInstrumentor()):
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
    assert BaseCallbackManager.__init__ is ORIGINAL_INIT


def ours(manager: BaseCallbackManager) -> list[RefCheckCallbackHandler]:
    return [h for h in manager.handlers if isinstance(h, RefCheckCallbackHandler)]


def keyword_parameters(function: Any) -> set[str]:
    parameters = inspect.signature(function).parameters.values()
    return {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}


def test_they_are_base_instrumentors_with_version_ranges() -> None:
    for instrumentor, library in (
        (RefCheckLangChainInstrumentor(), "langchain-core"),
        (RefCheckLlamaIndexInstrumentor(), "llama-index-core"),
    ):
        assert isinstance(instrumentor, BaseInstrumentor)
        (requirement,) = instrumentor.instrumentation_dependencies()
        assert requirement.startswith(library) and ">=" in requirement and "<" in requirement
        assert instrumentor._check_dependency_conflicts() is None  # the installed one fits


def test_typed_options_are_the_integrations_keywords() -> None:
    assert set(LangChainOptions.__annotations__) == keyword_parameters(RefCheckCallbackHandler)
    assert set(LlamaIndexOptions.__annotations__) == keyword_parameters(instrument_llamaindex)


def test_instrument_attaches_a_monitor_with_options_and_uninstrument_detaches(
    monitor: RefCheckMonitor,
) -> None:
    instrumentor = RefCheckLangChainInstrumentor()
    instrumentor.instrument(monitor=monitor, answer_from="llm", max_runs=7)
    (handler,) = ours(CallbackManager.configure())
    assert handler.sink is monitor and handler.answer_from == "llm"
    instrumentor.instrument(monitor=monitor)  # OpenTelemetry's rule: a second call does nothing
    assert ours(CallbackManager.configure()) == [handler]
    instrumentor.uninstrument()
    assert ours(CallbackManager.configure()) == []

    llamaindex = RefCheckLlamaIndexInstrumentor()
    llamaindex.instrument(monitor=monitor, stream_ttl=30.0)
    (span_handler,) = [
        h for h in get_dispatcher().span_handlers if isinstance(h, RefCheckSpanHandler)
    ]
    assert isinstance(span_handler.capture, QueryCapture)
    assert span_handler.capture.options[0] == 30.0
    llamaindex.uninstrument()
    assert not [h for h in get_dispatcher().span_handlers if isinstance(h, RefCheckSpanHandler)]


class TowerRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [Document(page_content="The tower stands in Paris.")]


def test_the_environment_monitor_is_built_on_the_first_answer_and_shared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REFCHECK_CHECKER", "py:scripted_checkers:KeywordChecker")
    monkeypatch.setenv("REFCHECK_PLACEMENT", "thread")
    monkeypatch.setenv("REFCHECK_EXPORTERS", "py:results:RecordingExporter")
    monkeypatch.setattr(RecordingExporter, "exported", [])
    RefCheckLangChainInstrumentor().instrument()
    RefCheckLlamaIndexInstrumentor().instrument()
    (handler,) = ours(CallbackManager.configure())
    sink = handler.sink
    assert isinstance(sink, EnvironmentMonitor) and sink._monitor is None  # nothing built yet
    capture = next(
        h.capture for h in get_dispatcher().span_handlers if isinstance(h, RefCheckSpanHandler)
    )
    assert capture is not None and capture.sink is sink  # one monitor for both libraries

    chain = (
        TowerRetriever()
        | (lambda docs: docs[0].page_content)
        | FakeListChatModel(responses=["The tower stands in Paris."])
    )
    chain.invoke("Where is the tower?")
    assert sink.built.wait(30)
    monitor = sink.monitor
    assert monitor is not None and monitor.flush(30)
    assert monitor.runner.placement == "thread"
    (result,) = RecordingExporter.exported
    assert result.request.answer == "The tower stands in Paris."
    assert [r.text for r in result.request.references] == ["The tower stands in Paris."]


def test_a_bad_variable_leaves_the_instrumentor_inert_and_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("REFCHECK_EXPORTERS", "zipkin")
    with caplog.at_level(logging.ERROR):
        RefCheckLangChainInstrumentor().instrument()
    assert ours(CallbackManager.configure()) == []
    assert "REFCHECK_EXPORTERS='zipkin' cannot be used: 'zipkin' is no exporter" in caplog.text


def test_the_build_never_runs_on_the_apps_thread_and_its_backlog_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REFCHECK_CHECKER", "py:gated_components:gated_keyword_checker")
    monkeypatch.setenv("REFCHECK_PLACEMENT", "thread")
    monkeypatch.setenv("REFCHECK_EXPORTERS", "py:results:RecordingExporter")
    monkeypatch.setattr(RecordingExporter, "exported", [])
    gated_components.GATE.clear()
    sink = EnvironmentMonitor(backlog=2)
    tracer = TracerProvider().get_tracer("app")
    with tracer.start_as_current_span("request") as span:
        accepted = [
            sink.submit(answer=f"The tower is in Paris {n}.", references=["Paris."])
            for n in range(4)
        ]
    assert accepted == [True, True, False, False]  # held while the build waits, then full
    assert sink.monitor is None and not sink.built.is_set()
    gated_components.GATE.set()
    assert sink.built.wait(30)
    monitor = sink.monitor
    assert monitor is not None and monitor.flush(30)
    assert gated_components.BUILT_ON[-1] == "refcheck-build"
    assert [r.request.answer for r in RecordingExporter.exported] == [
        "The tower is in Paris 0.",
        "The tower is in Paris 1.",
    ]
    # Held answers keep the trace of the caller that submitted them.
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert {r.request.trace_context.trace_id for r in RecordingExporter.exported} == {trace_id}
    assert monitor.stats.snapshot() == {"dropped": {"queue_full": 2}}
    assert sink.submit(answer="The tower is in Paris.", references=["Paris."])
    monitor.shutdown(10)
