"""End to end: a real LangChain app traced by OpenInference exports OTLP/HTTP to `refcheck
collect`, and its planted contradiction comes back as a Contradiction on the app's own trace.

The app is LangChain's LCEL RAG chain (a keyword retriever over a small corpus, prompt, chat
model, parser) with OpenInference's LangChain instrumentation on a tracer provider that exports
to the receiver over loopback HTTP, as a deployed app would: it imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_chains import CORPUS, KeywordRetriever, rag_chain
from langchain_core.language_models import FakeListChatModel
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from otlp_export import instrumented, traces_done, wait_for
from results import ResultSink
from telemetry import Telemetry

from refcheck_callbacks import Label
from refcheck_callbacks.contract.reasons import SkipReason, Tally
from refcheck_callbacks.exporters import names
from refcheck_callbacks.integrations.otlp.launch import Receiver

QUESTION = "How tall is the Eiffel Tower?"
CONTRADICTING = "The Eiffel Tower is 450 metres tall."


@pytest.fixture
def langchain_traced(app_tracing: TracerProvider) -> Iterator[TracerProvider]:
    with instrumented(LangChainInstrumentor(), app_tracing) as provider:
        yield provider


def test_planted_contradiction_is_a_contradiction_record_on_the_apps_trace(
    receiver: Receiver, langchain_traced: TracerProvider, telemetry: Telemetry, sink: ResultSink
) -> None:
    chain = rag_chain(
        KeywordRetriever(documents=CORPUS), FakeListChatModel(responses=[CONTRADICTING])
    )
    tracer = langchain_traced.get_tracer("rag-app")
    with tracer.start_as_current_span("POST /ask") as request_span:
        assert chain.invoke(QUESTION) == CONTRADICTING
    app_trace_id = format(request_span.get_span_context().trace_id, "032x")
    app_root_id = format(request_span.get_span_context().span_id, "016x")
    assert langchain_traced.force_flush(10)
    wait_for(traces_done(receiver, 1))
    assert receiver.sink.flush(60)

    [result] = sink.results
    request = result.request
    assert request.question == QUESTION
    assert request.answer == CONTRADICTING
    # The keyword retriever's two documents (sharing "is" and "tall"), both in the prompt.
    assert [r.text for r in request.references] == [CORPUS[0].page_content, CORPUS[2].page_content]
    assert request.trace_context is not None
    assert request.trace_context.trace_id == app_trace_id
    assert request.trace_context.span_id == app_root_id
    assert [v.label for v in result.verdicts] == [Label.CONTRADICTION]

    records = telemetry.evaluation_records()
    claim_records = [
        r
        for r in records
        if r.log_record.attributes[names.GEN_AI_EVALUATION_NAME] == names.CLAIM_EVALUATION
    ]
    assert [
        r.log_record.attributes[names.GEN_AI_EVALUATION_SCORE_LABEL] for r in claim_records
    ] == ["contradiction"]
    assert all(format(r.log_record.trace_id, "032x") == app_trace_id for r in claim_records)
    evaluation = telemetry.span(names.EVALUATION_SPAN)
    assert format(evaluation.context.trace_id, "032x") == app_trace_id
    assert evaluation.parent is not None
    assert format(evaluation.parent.span_id, "016x") == app_root_id


def test_a_trace_without_a_model_call_is_counted_unpaired(
    receiver: Receiver, langchain_traced: TracerProvider, sink: ResultSink
) -> None:
    retriever = KeywordRetriever(documents=CORPUS)
    retriever.invoke(QUESTION)  # traced, but no model answered anything
    assert langchain_traced.force_flush(10)
    wait_for(traces_done(receiver, 1))
    assert receiver.sink.flush(90)
    assert sink.results == []
    assert receiver.sink.stats.get(Tally.SKIPPED, SkipReason.TRACE_UNPAIRED) == 1
