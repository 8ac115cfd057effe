"""The LlamaIndex integration, driven through real query engines, chat engines and a router.

Every engine is LlamaIndex's own: a `VectorStoreIndex` over MiniLM embeddings, `MockLLM`
(which answers with its prompt), real retrievers, synthesizers and the root dispatcher.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.dispatcher import instrument_tags
from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MockLLM,
)
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import (
    RetrieverQueryEngine,
    RouterQueryEngine,
    SubQuestionQueryEngine,
)
from llama_index.core.question_gen import LLMQuestionGenerator
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.selectors import EmbeddingSingleSelector
from llama_index.core.tools import QueryEngineTool
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from refcheck_callbacks import CheckResult, Outcome, RefCheckMonitor, Tally
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.embeddings.llamaindex import SentenceEncoderEmbedding
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.llamaindex.instrument import (
    QueryCapture,
    RefCheckEventHandler,
    RefCheckSpanHandler,
    instrument_llamaindex,
    uninstrument_llamaindex,
)

LANDMARKS = [
    Document(
        text="The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889.",
        metadata={"topic": "landmarks"},
    ),
    Document(
        text="The Colosseum in Rome could hold about 50,000 spectators.",
        metadata={"topic": "landmarks"},
    ),
]
NATURE = [
    Document(
        text="Mount Everest is 8,849 metres high and lies on the border of Nepal and China.",
        metadata={"topic": "nature"},
    ),
    Document(
        text="The Nile is about 6,650 kilometres long and flows into the Mediterranean Sea.",
        metadata={"topic": "nature"},
    ),
]


@pytest.fixture(scope="module")
def embed_model(encoder: SentenceEncoder) -> SentenceEncoderEmbedding:
    return SentenceEncoderEmbedding(encoder)


@pytest.fixture(scope="module")
def index(embed_model: SentenceEncoderEmbedding) -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(LANDMARKS + NATURE, embed_model=embed_model)


@pytest.fixture
def capture(monitor: RefCheckMonitor) -> Iterator[QueryCapture]:
    capture = instrument_llamaindex(monitor)
    yield capture
    uninstrument_llamaindex()


def _results(monitor: RefCheckMonitor, sink: Any) -> list[CheckResult]:
    assert monitor.flush(timeout=120)
    results: list[CheckResult] = sink.results
    return results


def _node_ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def _assert_no_state(capture: QueryCapture) -> None:
    assert (capture.open_queries, capture.open_spans) == (0, 0)


# -- query engines ---------------------------------------------------------------------------


def test_query_submits_its_question_answer_and_retrieved_nodes(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=2)
    tracer = TracerProvider().get_tracer("app")
    with tracer.start_as_current_span("handle request") as app_span:
        response = engine.query("How tall is the Eiffel Tower?")

    [result] = _results(monitor, sink)
    request = result.request
    assert request.question == "How tall is the Eiffel Tower?"
    assert request.answer == str(response)
    assert [r.id for r in request.references] == _node_ids(response.source_nodes)
    first = request.references[0]
    assert first.text == response.source_nodes[0].node.get_content()
    assert first.score == pytest.approx(response.source_nodes[0].score)
    assert first.metadata["topic"] == "landmarks"
    assert request.trace_context is not None
    assert request.trace_context.trace_id == format(app_span.get_span_context().trace_id, "032x")
    assert request.trace_context.span_id == format(app_span.get_span_context().span_id, "016x")
    assert result.claims, "the echoed context holds checkable claims"
    _assert_no_state(capture)


def test_aquery_is_captured_like_query(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1)
    response = asyncio.run(engine.aquery("How long is the Nile?"))

    [result] = _results(monitor, sink)
    assert result.request.question == "How long is the Nile?"
    assert result.request.answer == str(response)
    assert [r.id for r in result.request.references] == _node_ids(response.source_nodes)
    _assert_no_state(capture)


class _NamedMockLLM(MockLLM):
    """MockLLM reporting a model name, as hosted-model LLM classes do."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="mock-large")


def test_instrument_tags_become_the_request_metadata(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1)
    with instrument_tags({"session": "s-42", "tenant": "acme"}):
        engine.query("How long is the Nile?")

    [result] = _results(monitor, sink)
    assert result.request.metadata == {"session": "s-42", "tenant": "acme"}


def test_the_model_named_by_the_llm_is_submitted(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    index.as_query_engine(llm=_NamedMockLLM(), similarity_top_k=1).query("How long is the Nile?")
    index.as_query_engine(llm=MockLLM(), similarity_top_k=1).query("How high is Everest?")

    models = {r.request.question: r.request.model for r in _results(monitor, sink)}
    assert models == {"How long is the Nile?": "mock-large", "How high is Everest?": None}


def test_queries_from_many_threads_each_get_their_own_nodes(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1)
    questions = [
        "How tall is the Eiffel Tower?",
        "How many spectators did the Colosseum hold?",
        "How high is Mount Everest?",
        "How long is the Nile?",
    ] * 4
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(engine.query, questions))

    results = _results(monitor, sink)
    assert len(results) == len(questions)
    expected = sorted(
        (q, str(r), tuple(_node_ids(r.source_nodes)))
        for q, r in zip(questions, responses, strict=True)
    )
    got = sorted(
        (r.request.question, r.request.answer, tuple(ref.id for ref in r.request.references))
        for r in results
    )
    assert got == expected
    _assert_no_state(capture)


def test_streamed_answer_is_checked_once_read(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1, streaming=True)
    response = engine.query("How high is Mount Everest?")
    assert isinstance(response, StreamingResponse)

    assert _results(monitor, sink) == []
    assert capture.open_queries == 1
    text = "".join(response.response_gen)

    [result] = _results(monitor, sink)
    assert result.request.answer == text
    assert "8,849 metres" in text
    assert [r.id for r in result.request.references] == _node_ids(response.source_nodes)
    _assert_no_state(capture)


def test_async_streamed_answer_is_checked_once_read(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1, streaming=True)

    async def ask() -> tuple[str, list[CheckResult]]:
        response = await engine.aquery("How long is the Nile?")
        assert isinstance(response, AsyncStreamingResponse)
        assert capture.open_queries == 1
        tokens = [token async for token in response.async_response_gen()]
        return "".join(tokens), list(sink.results)

    text, before_reading = asyncio.run(ask())
    [result] = _results(monitor, sink)
    assert result.request.answer == text
    assert result.request.question == "How long is the Nile?"
    assert before_reading == []
    _assert_no_state(capture)


def test_stream_abandoned_half_way_is_counted_not_checked(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1, streaming=True)
    tokens = engine.query("How tall is the Eiffel Tower?").response_gen
    next(tokens)
    tokens.close()

    assert _results(monitor, sink) == []
    assert monitor.stats.get(Tally.SKIPPED, "stream_incomplete") == 1
    _assert_no_state(capture)


class _BreakingStreamLLM(MockLLM):
    """MockLLM whose stream fails after its first token, as a dropped connection does."""

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        def tokens() -> CompletionResponseGen:
            yield CompletionResponse(text=prompt[:5], delta=prompt[:5])
            raise ConnectionError("the model server went away")

        return tokens()


def test_stream_that_fails_is_counted_and_the_error_reaches_the_app(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    engine = index.as_query_engine(llm=_BreakingStreamLLM(), similarity_top_k=1, streaming=True)
    response = engine.query("How tall is the Eiffel Tower?")
    with pytest.raises(ConnectionError, match="went away"):
        "".join(response.response_gen)

    assert _results(monitor, sink) == []
    assert monitor.stats.get(Tally.SKIPPED, "stream_error") == 1
    _assert_no_state(capture)


def test_stream_never_read_is_freed_after_the_ttl(
    index: VectorStoreIndex, monitor: RefCheckMonitor, sink: Any
) -> None:
    capture = instrument_llamaindex(monitor, stream_ttl=0.05)
    try:
        engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1, streaming=True)
        response = engine.query("How tall is the Eiffel Tower?")
        assert capture.open_queries == 1
        asyncio.run(asyncio.sleep(0.1))
        assert capture.sweep() == 1
        assert monitor.stats.get(Tally.SKIPPED, "stream_not_read") == 1
        _assert_no_state(capture)
        "".join(response.response_gen)  # read after expiry: the app is unaffected
        assert _results(monitor, sink) == []
    finally:
        uninstrument_llamaindex()


def test_open_queries_beyond_the_limit_drop_the_oldest_and_are_counted(
    index: VectorStoreIndex, monitor: RefCheckMonitor, sink: Any
) -> None:
    capture = instrument_llamaindex(monitor, max_open_queries=2)
    try:
        engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1, streaming=True)
        first, second, third = (engine.query(q) for q in ("Eiffel?", "Nile?", "Everest?"))
        assert capture.open_queries == 2
        assert monitor.stats.get(Tally.DROPPED, "run_overflow") == 1
        "".join(first.response_gen)  # evicted: reading it later checks nothing
        "".join(second.response_gen)
        "".join(third.response_gen)
        assert sorted(r.request.question for r in _results(monitor, sink)) == ["Everest?", "Nile?"]
        _assert_no_state(capture)
    finally:
        uninstrument_llamaindex()


def test_fifty_concurrent_aqueries_each_get_one_result_with_their_own_nodes(
    embed_model: SentenceEncoderEmbedding,
    capture: QueryCapture,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    cities = [f"City{i}" for i in range(50)]
    documents = [
        Document(text=f"{city} has a population of {1000 + i} people.")
        for i, city in enumerate(cities)
    ]
    engine = VectorStoreIndex.from_documents(documents, embed_model=embed_model).as_query_engine(
        llm=MockLLM(), similarity_top_k=2
    )

    most_open = 0

    async def watch() -> None:
        nonlocal most_open
        while True:
            most_open = max(most_open, capture.open_queries)
            await asyncio.sleep(0)

    async def ask_all() -> list[Any]:
        watcher = asyncio.create_task(watch())
        responses = await asyncio.gather(
            *(engine.aquery(f"How many people live in {c}?") for c in cities)
        )
        watcher.cancel()
        return list(responses)

    responses = asyncio.run(ask_all())
    assert most_open > 1, "the queries really ran interleaved"
    results = _results(monitor, sink)
    assert len(results) == 50
    by_question = {r.request.question: r.request for r in results}
    assert len(by_question) == 50
    for city, response in zip(cities, responses, strict=True):
        request = by_question[f"How many people live in {city}?"]
        assert [r.id for r in request.references] == _node_ids(response.source_nodes)
        assert request.answer == str(response)
    _assert_no_state(capture)


def test_fused_retrievers_give_the_union_of_their_nodes(
    embed_model: SentenceEncoderEmbedding,
    capture: QueryCapture,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    landmarks = VectorStoreIndex.from_documents(LANDMARKS, embed_model=embed_model)
    nature = VectorStoreIndex.from_documents(NATURE, embed_model=embed_model)
    retriever = QueryFusionRetriever(
        [landmarks.as_retriever(similarity_top_k=1), nature.as_retriever(similarity_top_k=1)],
        llm=MockLLM(),
        num_queries=1,
        similarity_top_k=4,
        use_async=False,
    )
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query("Which is taller, the Eiffel Tower or Mount Everest?")

    [result] = _results(monitor, sink)
    ids = [r.id for r in result.request.references]
    assert len(ids) == len(set(ids)) == 2, "one reference per node, across both retrievers"
    assert set(ids) == set(_node_ids(response.source_nodes))
    assert {r.metadata["topic"] for r in result.request.references} == {"landmarks", "nature"}
    _assert_no_state(capture)


def _topic_engine(docs: list[Document], embed_model: SentenceEncoderEmbedding) -> Any:
    """A one-node query engine over one topic's documents, for routers and sub-questions."""
    return VectorStoreIndex.from_documents(docs, embed_model=embed_model).as_query_engine(
        llm=MockLLM(), similarity_top_k=1
    )


def test_router_is_one_query_with_the_routed_engines_nodes(
    embed_model: SentenceEncoderEmbedding,
    capture: QueryCapture,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    tools = [
        QueryEngineTool.from_defaults(
            _topic_engine(docs, embed_model),
            description=description,
        )
        for docs, description in [
            (LANDMARKS, "Famous buildings and monuments in European cities."),
            (NATURE, "Mountains, rivers and other natural features of the world."),
        ]
    ]
    router = RouterQueryEngine(
        selector=EmbeddingSingleSelector.from_defaults(embed_model=embed_model),
        query_engine_tools=tools,
        llm=MockLLM(),
    )
    response = router.query("How long is the river Nile?")

    [result] = _results(monitor, sink)
    assert result.request.question == "How long is the river Nile?"
    assert result.request.answer == str(response)
    assert [r.metadata["topic"] for r in result.request.references] == ["nature"]
    _assert_no_state(capture)


def test_sub_questions_are_one_query_with_the_union_of_their_retrievals(
    embed_model: SentenceEncoderEmbedding,
    capture: QueryCapture,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    tools = [
        QueryEngineTool.from_defaults(
            _topic_engine(docs, embed_model),
            name=name,
            description=name,
        )
        for docs, name in [(LANDMARKS, "landmarks"), (NATURE, "nature")]
    ]
    # MockLLM answers with its prompt: a prompt that is the plan makes it the generated plan.
    plan = json.dumps(
        [
            {"sub_question": "How tall is the Eiffel Tower?", "tool_name": "landmarks"},
            {"sub_question": "How long is the Nile?", "tool_name": "nature"},
        ]
    )
    engine = SubQuestionQueryEngine.from_defaults(
        query_engine_tools=tools,
        question_gen=LLMQuestionGenerator.from_defaults(llm=MockLLM(), prompt_template_str=plan),
        llm=MockLLM(),
        use_async=False,
    )
    response = engine.query("Which is longer, the Eiffel Tower or the Nile?")

    [result] = _results(monitor, sink)
    assert result.request.question == "Which is longer, the Eiffel Tower or the Nile?"
    assert result.request.answer == str(response)
    assert [r.metadata["topic"] for r in result.request.references] == ["landmarks", "nature"]
    _assert_no_state(capture)


@pytest.fixture
def openinference_spans() -> Iterator[InMemorySpanExporter]:
    """OpenInference's LlamaIndex tracer, registered after our handlers, into memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield exporter
    instrumentor.uninstrument()


def test_checks_join_the_trace_of_a_tracer_registered_after_us(
    index: VectorStoreIndex,
    capture: QueryCapture,
    openinference_spans: InMemorySpanExporter,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    response = index.as_query_engine(llm=MockLLM(), similarity_top_k=1).query("Nile length?")
    index.as_chat_engine(chat_mode="context", llm=MockLLM()).chat("Everest height?")

    by_question = {r.request.question: r.request for r in _results(monitor, sink)}
    spans = openinference_spans.get_finished_spans()
    [query_span] = [s for s in spans if s.name.endswith(".query")]
    [chat_span] = [s for s in spans if s.name.endswith(".chat")]
    query_context = by_question["Nile length?"].trace_context
    assert query_context is not None
    assert query_context.trace_id == format(query_span.context.trace_id, "032x")
    assert query_context.span_id == format(query_span.context.span_id, "016x")
    chat_context = by_question["Everest height?"].trace_context
    assert chat_context is not None
    assert chat_context.trace_id == format(chat_span.context.trace_id, "032x")
    assert str(response) == by_question["Nile length?"].answer
    _assert_no_state(capture)


# -- chat engines ----------------------------------------------------------------------------


def test_context_chat_engine_checks_each_turn_against_its_own_context(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    chat = index.as_chat_engine(chat_mode="context", llm=MockLLM(), similarity_top_k=1)
    first = chat.chat("Tell me about Mount Everest.")
    second = chat.chat("And how long is the Nile?")

    results = sorted(_results(monitor, sink), key=lambda r: r.request.submitted_at)
    assert [r.request.question for r in results] == [
        "Tell me about Mount Everest.",
        "And how long is the Nile?",
    ]
    for result, reply in zip(results, [first, second], strict=True):
        assert result.request.answer == reply.response
        assert [r.id for r in result.request.references] == _node_ids(reply.source_nodes)
    _assert_no_state(capture)


def test_streamed_chat_turn_is_checked_once_the_stream_is_read(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    chat = index.as_chat_engine(chat_mode="context", llm=MockLLM(), similarity_top_k=1)
    reply = chat.stream_chat("How tall is the Eiffel Tower?")
    text = "".join(reply.response_gen)

    [result] = _results(monitor, sink)
    assert result.request.question == "How tall is the Eiffel Tower?"
    assert result.request.answer == text
    assert [r.id for r in result.request.references] == _node_ids(reply.source_nodes)
    _assert_no_state(capture)


def test_async_streamed_chat_turn_is_checked_once_the_stream_is_read(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    chat = index.as_chat_engine(chat_mode="context", llm=MockLLM(), similarity_top_k=1)

    async def converse() -> tuple[str, Any]:
        reply = await chat.astream_chat("How long is the Nile?")
        text = "".join([token async for token in reply.async_response_gen()])
        return text, reply

    text, reply = asyncio.run(converse())
    [result] = _results(monitor, sink)
    assert result.request.question == "How long is the Nile?"
    assert result.request.answer == text
    assert [r.id for r in result.request.references] == _node_ids(reply.source_nodes)
    _assert_no_state(capture)


def test_chat_without_retrieval_is_counted_as_having_no_references(
    capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    SimpleChatEngine.from_defaults(llm=MockLLM()).chat("Hello there")

    assert _results(monitor, sink) == []
    assert monitor.stats.get(Tally.SKIPPED, "no_references") == 1
    _assert_no_state(capture)


# -- failures --------------------------------------------------------------------------------


class _Broken(RuntimeError):
    pass


class _FailingPostprocessor(BaseNodePostprocessor):
    """A node postprocessor that fails: an error inside the app's own query."""

    error: Any = None

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        raise self.error


def test_an_exception_inside_the_engine_propagates_unchanged(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    error = _Broken("the reranker is down")
    engine = index.as_query_engine(
        llm=MockLLM(), node_postprocessors=[_FailingPostprocessor(error=error)]
    )
    with pytest.raises(_Broken) as raised:
        engine.query("How tall is the Eiffel Tower?")

    assert raised.value is error
    assert _results(monitor, sink) == []
    assert monitor.stats.get(Tally.SKIPPED, "query_error") == 1
    _assert_no_state(capture)


class _UnreadableNode(TextNode):
    """A node whose plain content cannot be read (the LLM prompt path still works)."""

    def get_content(self, metadata_mode: MetadataMode = MetadataMode.NONE) -> str:
        if metadata_mode == MetadataMode.NONE:
            raise ValueError("no plain text")
        return str(super().get_content(metadata_mode))


class _UnreadableRetriever(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=_UnreadableNode(text="Paris is in France."), score=1.0)]


def test_a_node_that_cannot_be_read_fails_its_check_in_the_worker_not_the_app(
    capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    engine = RetrieverQueryEngine.from_args(_UnreadableRetriever(), llm=MockLLM())
    response = engine.query("Where is Paris?")

    assert "Paris is in France." in str(response)
    (result,) = _results(monitor, sink)
    assert result.outcome is Outcome.INVALID_INPUT
    assert "no plain text" in (result.message or "")
    _assert_no_state(capture)


class _RaisingMonitor(RefCheckMonitor):
    """A monitor broken in a way `submit` itself would never be: it raises."""

    def submit(self, **kwargs: Any) -> bool:
        raise RuntimeError("broken monitor")


def test_a_failure_in_our_capture_is_counted_and_never_reaches_the_app(
    index: VectorStoreIndex, embedded_checker: EmbeddedChecker
) -> None:
    with _RaisingMonitor(checker=embedded_checker, exporters=[]) as broken:
        capture = instrument_llamaindex(broken)
        try:
            response = index.as_query_engine(llm=MockLLM()).query("How tall is it?")
        finally:
            uninstrument_llamaindex()

    assert str(response)
    assert broken.stats.get(Tally.ERRORS, "llamaindex_callback") == 1
    _assert_no_state(capture)


# -- instrumentation lifecycle ---------------------------------------------------------------


def _ours_on_root() -> tuple[int, int]:
    dispatcher = get_dispatcher()
    return (
        sum(isinstance(h, RefCheckSpanHandler) for h in dispatcher.span_handlers),
        sum(isinstance(h, RefCheckEventHandler) for h in dispatcher.event_handlers),
    )


def test_instrumenting_twice_registers_once(
    index: VectorStoreIndex, monitor: RefCheckMonitor, sink: Any
) -> None:
    try:
        first = instrument_llamaindex(monitor)
        capture = instrument_llamaindex(monitor)
        assert capture is first  # the same sink and options: the installed capture
        assert _ours_on_root() == (1, 1)
        index.as_query_engine(llm=MockLLM(), similarity_top_k=1).query("How long is the Nile?")
        assert len(_results(monitor, sink)) == 1
        _assert_no_state(capture)
    finally:
        uninstrument_llamaindex()
    assert _ours_on_root() == (0, 0)


def test_other_options_replace_the_capture(monitor: RefCheckMonitor) -> None:
    try:
        first = instrument_llamaindex(monitor)
        second = instrument_llamaindex(monitor, stream_ttl=5.0)
        assert second is not first and second.options == (5.0, 10_000)
        assert _ours_on_root() == (1, 1)
    finally:
        uninstrument_llamaindex()


def test_instrumenting_again_moves_capture_to_the_new_monitor(
    index: VectorStoreIndex, embedded_checker: EmbeddedChecker, monitor: RefCheckMonitor, sink: Any
) -> None:
    later: list[CheckResult] = []
    with RefCheckMonitor(checker=embedded_checker, on_result=later.append) as other:
        try:
            instrument_llamaindex(monitor)
            engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1, streaming=True)
            pending = engine.query("How long is the Nile?")
            instrument_llamaindex(other)
            assert _ours_on_root() == (1, 1)
            assert monitor.stats.get(Tally.SKIPPED, "uninstrumented") == 1
            "".join(pending.response_gen)
            index.as_query_engine(llm=MockLLM(), similarity_top_k=1).query("How high is Everest?")
            assert other.flush(timeout=120)
        finally:
            uninstrument_llamaindex()
    assert [r.request.question for r in later] == ["How high is Everest?"]
    assert _results(monitor, sink) == []


def test_nothing_is_captured_after_uninstrumenting(
    index: VectorStoreIndex, monitor: RefCheckMonitor, sink: Any
) -> None:
    instrument_llamaindex(monitor)
    uninstrument_llamaindex()
    uninstrument_llamaindex()  # idempotent too
    assert _ours_on_root() == (0, 0)

    index.as_query_engine(llm=MockLLM(), similarity_top_k=1).query("How long is the Nile?")
    assert _results(monitor, sink) == []
    assert monitor.stats.snapshot() == {}


@pytest.mark.slow
def test_per_query_state_is_empty_after_ten_thousand_queries(
    index: VectorStoreIndex, embedded_checker: EmbeddedChecker
) -> None:
    """Plain, streamed and failing queries; sampling is off so only the capture path runs."""
    with RefCheckMonitor(checker=embedded_checker, sample_rate=0.0) as monitor:
        capture = instrument_llamaindex(monitor)
        try:
            plain = index.as_query_engine(
                llm=MockLLM(), similarity_top_k=1, response_mode="generation"
            )
            streamed = index.as_query_engine(
                llm=MockLLM(),
                similarity_top_k=1,
                response_mode="generation",
                streaming=True,
            )
            failing = index.as_query_engine(
                llm=MockLLM(), node_postprocessors=[_FailingPostprocessor(error=_Broken())]
            )
            for i in range(10_000):
                if i % 100 == 1:
                    "".join(streamed.query("How tall is the Eiffel Tower?").response_gen)
                elif i % 100 == 2:
                    with pytest.raises(_Broken):
                        failing.query("How tall is the Eiffel Tower?")
                else:
                    plain.query("How tall is the Eiffel Tower?")
            _assert_no_state(capture)
            assert monitor.stats.snapshot() == {
                "skipped": {"sampled_out": 9_900, "query_error": 100}
            }
        finally:
            uninstrument_llamaindex()
