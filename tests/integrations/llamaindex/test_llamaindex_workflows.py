"""The question is the user's input wherever a workflow gets it: a start event with several
fields (`run(query_str=..., tavily_ai_apikey=...)`), a custom start event whose fields are
named after no query (the one the first retrieval is given), chat messages. The app is the
corrective-RAG workflow of LlamaIndex's docs (custom events, a relevance grader, a query
transform, a web search, a summary index over what is kept), run as the notebook does and
with its events streamed. Real LlamaIndex workflows and indexes, a scripted LLM."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core import Document, SummaryIndex, VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import NodeWithScore
from llama_index.core.workflow import Context, Event, StartEvent, StopEvent, Workflow, step
from llamaindex_llms import PromptedLLM
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.embeddings.llamaindex import SentenceEncoderEmbedding
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.llamaindex.instrument import (
    QueryCapture,
    instrument_llamaindex,
    uninstrument_llamaindex,
)

QUESTION = "How tall is the Eiffel Tower?"
API_KEY = "tvly-0123456789abcdef"
EIFFEL = "The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889."
COLOSSEUM = "The Colosseum in Rome could hold about 50,000 spectators."
WEB = "Web: the Eiffel Tower grew to 330 metres with its antennas; it was 312 metres in 1889."
ANSWER = "The Eiffel Tower is 330 metres tall."
REWRITTEN = "Eiffel Tower height in metres"

# The notebook's two prompts (shortened): a relevance grader and a query transform.
RELEVANCY_PROMPT = PromptTemplate(
    "As a grader, your task is to evaluate the relevance of a document retrieved in response "
    "to a user's question.\nRetrieved Document:\n{context_str}\nUser Question:\n{query_str}\n"
    "Use 'yes' if the document is relevant to the question, or 'no' if it is not."
)
TRANSFORM_QUERY_PROMPT = PromptTemplate(
    "Your task is to refine a query to ensure it is highly effective for retrieving relevant "
    "search results.\nOriginal Query:\n{query_str}\nRespond with the optimized query only:"
)


class PrepEvent(Event):
    pass


class RetrieveEvent(Event):
    retrieved_nodes: list[NodeWithScore]


class RelevanceEvalEvent(Event):
    relevant_results: list[str]


class TextExtractEvent(Event):
    relevant_text: str


class QueryEvent(Event):
    relevant_text: str
    search_text: str


class WebSearch:
    """Stands in for the notebook's `TavilyToolSpec(api_key=...)`: the same `search` call,
    answered from a local page (the tests reach no network)."""

    def __init__(self, api_key: str) -> None:
        assert api_key == API_KEY
        self.pages = [Document(text=WEB)]

    def search(self, query: str, max_results: int = 5) -> list[Document]:
        return self.pages[:max_results]


class CorrectiveRAGWorkflow(Workflow):
    """LlamaIndex's corrective-RAG workflow, step for step."""

    def __init__(self, llm: PromptedLLM, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.llm = llm

    @step
    async def prepare_for_retrieval(self, ctx: Context, ev: StartEvent) -> PrepEvent | None:
        query_str: str | None = ev.get("query_str")
        if query_str is None:
            return None
        await ctx.store.set("index", ev.get("index"))
        await ctx.store.set("tavily_tool", WebSearch(api_key=ev.get("tavily_ai_apikey")))
        await ctx.store.set("query_str", query_str)
        await ctx.store.set("retriever_kwargs", ev.get("retriever_kwargs") or {})
        return PrepEvent()

    @step
    async def retrieve(self, ctx: Context, ev: PrepEvent) -> RetrieveEvent:
        query_str = await ctx.store.get("query_str")
        retriever_kwargs = await ctx.store.get("retriever_kwargs")
        index = await ctx.store.get("index")
        result = index.as_retriever(**retriever_kwargs).retrieve(query_str)
        await ctx.store.set("retrieved_nodes", result)
        return RetrieveEvent(retrieved_nodes=result)

    @step
    async def eval_relevance(self, ctx: Context, ev: RetrieveEvent) -> RelevanceEvalEvent:
        query_str = await ctx.store.get("query_str")
        relevancy_results = []
        for node in ev.retrieved_nodes:
            prompt = RELEVANCY_PROMPT.format(context_str=node.text, query_str=query_str)
            relevancy = await self.llm.acomplete(prompt)
            relevancy_results.append(relevancy.text.lower().strip())
        await ctx.store.set("relevancy_results", relevancy_results)
        return RelevanceEvalEvent(relevant_results=relevancy_results)

    @step
    async def extract_relevant_texts(
        self, ctx: Context, ev: RelevanceEvalEvent
    ) -> TextExtractEvent:
        retrieved_nodes = await ctx.store.get("retrieved_nodes")
        relevant_texts = [
            retrieved_nodes[i].text
            for i, result in enumerate(ev.relevant_results)
            if result == "yes"
        ]
        return TextExtractEvent(relevant_text="\n".join(relevant_texts))

    @step
    async def transform_query_pipeline(self, ctx: Context, ev: TextExtractEvent) -> QueryEvent:
        relevancy_results = await ctx.store.get("relevancy_results")
        query_str = await ctx.store.get("query_str")
        search_text = ""
        if "no" in relevancy_results:
            prompt = TRANSFORM_QUERY_PROMPT.format(query_str=query_str)
            transformed_query_str = (await self.llm.acomplete(prompt)).text
            tavily_tool = await ctx.store.get("tavily_tool")
            search_results = tavily_tool.search(transformed_query_str, max_results=5)
            search_text = "\n".join([result.text for result in search_results])
        return QueryEvent(relevant_text=ev.relevant_text, search_text=search_text)

    @step
    async def query_result(self, ctx: Context, ev: QueryEvent) -> StopEvent:
        query_str = await ctx.store.get("query_str")
        documents = [Document(text=ev.relevant_text + "\n" + ev.search_text)]
        index = SummaryIndex.from_documents(documents)
        query_engine = index.as_query_engine(llm=self.llm)
        result = await query_engine.aquery(query_str)
        return StopEvent(result=result)


@pytest.fixture(scope="module")
def index(encoder: SentenceEncoder) -> VectorStoreIndex:
    documents = [Document(text=EIFFEL), Document(text=COLOSSEUM)]
    return VectorStoreIndex.from_documents(documents, embed_model=SentenceEncoderEmbedding(encoder))


@pytest.fixture
def capture(monitor: RefCheckMonitor) -> Iterator[QueryCapture]:
    capture = instrument_llamaindex(monitor)
    yield capture
    uninstrument_llamaindex()


def grader_and_answerer() -> PromptedLLM:
    """Grades the Eiffel page relevant and the Colosseum page not, rewrites the query, and
    answers from the context it is given."""
    return PromptedLLM(
        rules=[
            (f"Retrieved Document:\n{EIFFEL}", "yes"),
            ("Retrieved Document:", "no"),
            ("Original Query:", REWRITTEN),
            ("Context information", ANSWER),
        ]
    )


RUNS = ("run", "stream_events")


def run(workflow: Workflow, how: str, **start: Any) -> Any:
    """`await workflow.run(...)` as the notebook does, or with its events streamed first."""

    async def main() -> Any:
        handler = workflow.run(**start)
        if how == "stream_events":
            async for _ in handler.stream_events():
                pass
        return await handler

    return asyncio.run(main())


@pytest.mark.parametrize("how", RUNS)
def test_corrective_rag_takes_the_query_field_and_the_text_its_answer_was_given(
    how: str, index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    """`run(query_str=..., index=..., tavily_ai_apikey=...)`: the question is `query_str`,
    never the key; the references are what the answering model was given (the page the
    grader kept and the web result), not the page it rejected."""
    llm = grader_and_answerer()
    workflow = CorrectiveRAGWorkflow(llm=llm, timeout=60)
    response = run(
        workflow,
        how,
        query_str=QUESTION,
        index=index,
        tavily_ai_apikey=API_KEY,
        retriever_kwargs={"similarity_top_k": 2},
    )
    assert str(response) == ANSWER
    [request] = checked_requests(monitor, sink)
    assert request.question == QUESTION
    assert request.answer == ANSWER
    [reference] = request.references
    assert reference.text == f"{EIFFEL}\n{WEB}"
    assert any(reference.text in prompt for prompt in llm.prompts)  # what the answerer saw


class TopicStart(StartEvent):
    """A custom start event whose fields are named after no query."""

    topic: str
    audience: str


class TopicWorkflow(Workflow):
    """Retrieves with one of its start fields: that one is the user's input."""

    def __init__(self, index: VectorStoreIndex, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.engine = index.as_query_engine(llm=PromptedLLM(default=ANSWER), similarity_top_k=1)

    @step
    async def answer(self, ev: TopicStart) -> StopEvent:
        return StopEvent(result=await self.engine.aquery(ev.topic))


@pytest.mark.parametrize("how", RUNS)
def test_of_several_start_fields_the_question_is_the_one_the_first_query_was_given(
    how: str, index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    run(
        TopicWorkflow(index, timeout=60),
        how,
        start_event=TopicStart(topic=QUESTION, audience="kids"),
    )
    [request] = checked_requests(monitor, sink)
    assert request.question == QUESTION
    assert [r.text for r in request.references] == [EIFFEL]


class ChatWorkflow(Workflow):
    """Started with a chat history: the turn being answered is its last user message."""

    def __init__(self, index: VectorStoreIndex, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.engine = index.as_query_engine(llm=PromptedLLM(default=ANSWER), similarity_top_k=1)

    @step
    async def answer(self, ev: StartEvent) -> StopEvent:
        messages: list[ChatMessage] = ev.get("messages")
        return StopEvent(result=await self.engine.aquery(str(messages[-1].content)))


@pytest.mark.parametrize("how", RUNS)
def test_a_workflow_started_with_chat_messages_asks_its_last_user_message(
    how: str, index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    messages = [
        ChatMessage(role=MessageRole.USER, content="Hi! I have questions about Paris."),
        ChatMessage(role=MessageRole.ASSISTANT, content="Sure, ask away."),
        ChatMessage(role=MessageRole.USER, content=QUESTION),
    ]
    run(ChatWorkflow(index, timeout=60), how, messages=messages, session="s-1")
    [request] = checked_requests(monitor, sink)
    assert request.question == QUESTION  # not the session, the one other text field


class HistoryWorkflow(Workflow):
    """Started with the turn's query and the chat history before it."""

    def __init__(self, index: VectorStoreIndex, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.engine = index.as_query_engine(llm=PromptedLLM(default=ANSWER), similarity_top_k=1)

    @step
    async def answer(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await self.engine.aquery(ev.get("query")))


def test_a_query_field_beside_a_chat_history_is_the_turn_being_asked(
    index: VectorStoreIndex, capture: QueryCapture, monitor: RefCheckMonitor, sink: Any
) -> None:
    """`run(query=..., chat_history=[...])`: the history holds earlier turns' questions."""
    history = [ChatMessage(role=MessageRole.USER, content="What is the Colosseum?")]
    run(HistoryWorkflow(index, timeout=60), "run", query=QUESTION, chat_history=history)
    [request] = checked_requests(monitor, sink)
    assert request.question == QUESTION
