"""Pairing in a conversation that a LangGraph checkpointer keeps: the model answering turn 3
sees turn 1's and turn 2's tool results in its history. Those documents are references of
turn 3 as the documents they were (ids and metadata from the earlier retrieval or the tool's
artifact), and the result says how many came from earlier turns. Real LangGraph agents with
`MemorySaver`, fake models, in `invoke`, `stream` and `astream_events`."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_chains import CORPUS, scripted, tool_call
from langchain_core.documents import Document
from langchain_core.tools import create_retriever_tool, tool
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_modes import MODES, run_in
from langgraph.checkpoint.memory import MemorySaver
from langgraph.prebuilt import create_react_agent
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.embeddings.langchain import SentenceEncoderEmbeddings
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler
from refcheck_callbacks.integrations.langchain.conversation import EarlierTurns
from refcheck_callbacks.integrations.langchain.pairing import EARLIER_TURNS_KEY

TURNS = [
    ("How tall is the Eiffel Tower?", "Eiffel Tower", "It is 330 metres tall."),
    ("And Mount Everest?", "Mount Everest", "Everest is 8,849 metres high."),
    ("Which of the two is taller?", None, "Mount Everest, by far."),
]


@pytest.fixture(scope="module")
def sourced_store(encoder: SentenceEncoder) -> InMemoryVectorStore:
    """The corpus with metadata, which references must keep from the earlier retrieval."""
    store = InMemoryVectorStore(embedding=SentenceEncoderEmbeddings(encoder))
    store.add_documents(
        [
            Document(id=d.id, page_content=d.page_content, metadata={"source": f"wiki/{d.id}"})
            for d in CORPUS
        ]
    )
    return store


def three_turns(mode: str, agent: Any, handler: RefCheckCallbackHandler) -> None:
    config: Any = {"callbacks": [handler], "configurable": {"thread_id": f"chat-{mode}"}}
    for question, _, _ in TURNS:
        run_in(mode, agent, {"messages": [("user", question)]}, config)


def script(tool_name: str) -> Any:
    """Turns 1 and 2 search, turn 3 answers from the history."""
    messages: list[Any] = []
    for index, (_, query, answer) in enumerate(TURNS):
        if query is not None:
            messages.append(tool_call(tool_name, f"call-{index}", query=query))
        messages.append(answer)
    return scripted(*messages)


def assert_turns(requests: list[Any], retrieved: list[list[Document]]) -> None:
    """Each turn's references: its own documents, then those of earlier turns (each once)."""
    for turn, (request, (question, _, answer)) in enumerate(zip(requests, TURNS, strict=True)):
        assert (request.question, request.answer) == (question, answer)
        own = {d.id: d for d in retrieved[turn]}
        earlier = {d.id: d for docs in retrieved[:turn] for d in docs if d.id not in own}
        expected = [(d.id, d.page_content, d.metadata) for d in [*own.values(), *earlier.values()]]
        assert sorted((r.id, r.text, r.metadata) for r in request.references) == sorted(expected)
        assert request.metadata.get(EARLIER_TURNS_KEY, 0) == len(earlier)


@pytest.mark.parametrize("mode", MODES)
def test_a_react_agent_with_a_retriever_tool_keeps_earlier_turns_documents(
    mode: str,
    sourced_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    retriever = sourced_store.as_retriever(search_kwargs={"k": 2})
    search = create_retriever_tool(retriever, "search", "Search the encyclopedia.")
    agent = create_react_agent(script("search"), [search], checkpointer=MemorySaver())
    three_turns(mode, agent, handler)
    requests = sorted(checked_requests(monitor, sink, count=3), key=lambda r: r.submitted_at)
    searched = [retriever.invoke(query) if query else [] for _, query, _ in TURNS]
    assert_turns(requests, searched)


@pytest.mark.parametrize("mode", MODES)
def test_an_artifact_tool_agent_finds_earlier_turns_documents_by_content(
    mode: str,
    sourced_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """LangChain v1's agentic RAG: a `content_and_artifact` retrieve tool, `create_agent`."""

    @tool(response_format="content_and_artifact")
    def retrieve(query: str) -> tuple[str, list[Document]]:
        """Retrieve information related to a query."""
        documents = sourced_store.similarity_search(query, k=1)
        text = "\n\n".join(f"Source: {d.metadata}\nContent: {d.page_content}" for d in documents)
        return text, documents

    agent = create_agent(script("retrieve"), [retrieve], checkpointer=MemorySaver())
    three_turns(mode, agent, handler)
    requests = sorted(checked_requests(monitor, sink, count=3), key=lambda r: r.submitted_at)
    searched = [sourced_store.similarity_search(q, k=1) if q else [] for _, q, _ in TURNS]
    assert_turns(requests, searched)


def test_a_conversation_keeps_its_latest_documents_and_the_latest_conversations() -> None:
    turns = EarlierTurns(max_documents=3, max_conversations=2)
    documents = [Document(page_content=f"Document number {i}.") for i in range(5)]
    assert turns.turn("a", documents[:2]) == ()
    assert turns.turn("a", documents[2:]) == tuple(documents[:2])
    assert turns.turn("a", []) == tuple(documents[2:])  # the latest 3
    turns.turn("b", documents[:1])
    turns.turn("c", documents[:1])  # pushes out "a", the least recent
    assert len(turns) == 2
    assert turns.turn("a", []) == ()
