"""LangGraph apps seen only through their traces: OpenInference's and OpenLLMetry's LangChain
instrumentations export OTLP/HTTP to `refcheck collect`, and no retriever span reports the
documents. They are read where the trace has them: the graph's state (a node's output
documents), else the answering prompt's context by its structure (the prompt template's
variables, the tool results), marked as paired from the prompt and counted. A prompt without
a recorded template (a dynamic system prompt) cannot be split into instructions and context:
it stays a counted skip. Real graphs and agents, fake chat models, real instrumentations and
receiver; in `invoke`, `stream` and `astream_events`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from langchain_chains import CORPUS
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_modes import MODES, run_in
from langchain_text_splitters import RecursiveCharacterTextSplitter
from langgraph_apps import (
    dynamic_prompt_agent,
    formatted_context_graph,
    rag_tutorial_graph,
    retriever_tool_agent,
    search_tool_agent,
    small_to_big_graph,
)
from long_documents import EIFFEL_PARENT, PARENTS
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from otlp_export import instrumented, openllmetry_instrumented, traces_done, wait_for
from results import ResultSink

from refcheck_callbacks import CheckRequest
from refcheck_callbacks.contract.reasons import SkipReason, Tally
from refcheck_callbacks.embeddings.langchain import SentenceEncoderEmbeddings
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.otlp.launch import Receiver
from refcheck_callbacks.integrations.otlp.prompt_context import SOURCE_KEY
from refcheck_callbacks.integrations.shared.overlap import CONTAINED, LEFT_OUT_KEY

QUESTION = "How tall is the Eiffel Tower?"
ANSWER = "The Eiffel Tower is 330 metres tall."
INSTRUMENTATIONS: dict[str, Callable[[TracerProvider], AbstractContextManager[Any]]] = {
    "openinference": lambda provider: instrumented(LangChainInstrumentor(), provider),
    "openllmetry": openllmetry_instrumented,
}


@pytest.fixture(scope="module")
def store(encoder: SentenceEncoder) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=SentenceEncoderEmbeddings(encoder))
    store.add_documents(CORPUS)
    return store


@pytest.fixture(params=sorted(INSTRUMENTATIONS))
def traced(request: pytest.FixtureRequest, app_tracing: TracerProvider) -> Iterator[str]:
    """The app traced by one instrumentation onto a provider exporting to the receiver."""
    with INSTRUMENTATIONS[request.param](app_tracing):
        yield request.param


def checked(receiver: Receiver, app: TracerProvider, sink: ResultSink) -> CheckRequest | None:
    """The request the receiver checked for the app's one trace (None: it checked none)."""
    assert app.force_flush(10)
    wait_for(traces_done(receiver, 1))
    assert receiver.sink.flush(60)
    assert len(sink.results) <= 1
    return sink.results[0].request if sink.results else None


def similar(store: InMemoryVectorStore, k: int = 2) -> list[Document]:
    return store.similarity_search(QUESTION, k=k)


@pytest.mark.parametrize("mode", MODES)
def test_the_rag_tutorial_graph_is_paired_from_its_state_documents(
    mode: str,
    traced: str,
    store: InMemoryVectorStore,
    receiver: Receiver,
    app_tracing: TracerProvider,
    sink: ResultSink,
) -> None:
    run_in(mode, rag_tutorial_graph(store, ANSWER), {"question": QUESTION}, {})
    request = checked(receiver, app_tracing, sink)
    assert request is not None
    assert (request.question, request.answer) == (QUESTION, ANSWER)
    assert [(r.id, r.text) for r in request.references] == [
        (d.id, d.page_content) for d in similar(store)
    ]
    assert SOURCE_KEY not in request.metadata
    assert receiver.collector.stats()["paired"] == {"documents": 1}


@pytest.mark.parametrize("mode", MODES)
def test_chunks_kept_beside_the_pages_they_come_from_count_once(
    mode: str,
    traced: str,
    encoder: SentenceEncoder,
    receiver: Receiver,
    app_tracing: TracerProvider,
    sink: ResultSink,
) -> None:
    pages = {d.metadata["source"]: d for d in PARENTS}
    splitter = RecursiveCharacterTextSplitter(chunk_size=200, chunk_overlap=0)
    chunks = InMemoryVectorStore(embedding=SentenceEncoderEmbeddings(encoder))
    chunks.add_documents(
        [
            Document(page_content=text, metadata={"page": source})
            for source, page in pages.items()
            for text in splitter.split_text(page.page_content)
        ]
    )
    found = chunks.similarity_search(QUESTION, k=3)
    assert {d.metadata["page"] for d in found} == {"wiki/eiffel"}
    run_in(mode, small_to_big_graph(chunks, pages, ANSWER), {"question": QUESTION}, {})
    request = checked(receiver, app_tracing, sink)
    assert request is not None
    assert [r.text for r in request.references] == [EIFFEL_PARENT]
    assert request.metadata[LEFT_OUT_KEY] == {CONTAINED: 3}


@pytest.mark.parametrize("mode", MODES)
def test_a_graph_that_keeps_no_documents_is_paired_from_its_prompt_template(
    mode: str,
    traced: str,
    store: InMemoryVectorStore,
    receiver: Receiver,
    app_tracing: TracerProvider,
    sink: ResultSink,
) -> None:
    """The context is the template's `context` variable: not the question, not the
    template's instructions."""
    run_in(mode, formatted_context_graph(store, ANSWER), {"question": QUESTION}, {})
    request = checked(receiver, app_tracing, sink)
    assert request is not None
    assert (request.question, request.answer) == (QUESTION, ANSWER)
    [reference] = request.references
    assert reference.text == "\n\n".join(d.page_content for d in similar(store))
    assert reference.metadata == {"prompt_variable": "context"}
    assert request.metadata[SOURCE_KEY] == "prompt"
    assert receiver.collector.stats()["paired"] == {"prompt": 1}


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_whose_tool_returns_text_is_paired_from_the_tool_results(
    mode: str,
    traced: str,
    store: InMemoryVectorStore,
    receiver: Receiver,
    app_tracing: TracerProvider,
    sink: ResultSink,
) -> None:
    agent = search_tool_agent(store, "Eiffel Tower", ANSWER)
    run_in(mode, agent, {"messages": [{"role": "user", "content": QUESTION}]}, {})
    request = checked(receiver, app_tracing, sink)
    assert request is not None
    assert (request.question, request.answer) == (QUESTION, ANSWER)
    [reference] = request.references
    for document in store.similarity_search("Eiffel Tower", k=2):
        assert document.page_content in reference.text
    assert request.metadata[SOURCE_KEY] == "prompt"


@pytest.mark.parametrize("mode", MODES)
def test_a_retriever_span_under_a_graph_node_gives_the_documents_the_agent_saw(
    mode: str,
    traced: str,
    store: InMemoryVectorStore,
    receiver: Receiver,
    app_tracing: TracerProvider,
    sink: ResultSink,
) -> None:
    agent = retriever_tool_agent(store, "Eiffel Tower", ANSWER)
    run_in(mode, agent, {"messages": [("user", QUESTION)]}, {})
    request = checked(receiver, app_tracing, sink)
    assert request is not None
    assert (request.question, request.answer) == (QUESTION, ANSWER)
    expected = store.similarity_search("Eiffel Tower", k=2)
    assert [r.text for r in request.references] == [d.page_content for d in expected]
    assert SOURCE_KEY not in request.metadata


@pytest.mark.parametrize("mode", MODES)
def test_a_dynamic_system_prompt_is_a_counted_skip(
    mode: str,
    traced: str,
    store: InMemoryVectorStore,
    receiver: Receiver,
    app_tracing: TracerProvider,
    sink: ResultSink,
) -> None:
    """The documents and the app's instructions share one system message the app formatted
    itself: nothing tells them apart, so nothing is guessed."""
    agent = dynamic_prompt_agent(store, ANSWER)
    run_in(mode, agent, {"messages": [{"role": "user", "content": QUESTION}]}, {})
    assert checked(receiver, app_tracing, sink) is None
    assert receiver.sink.stats.get(Tally.SKIPPED, SkipReason.NO_REFERENCES) == 1
