"""Documents no retriever returns: vector-store searches made inside middleware, tools or plain
functions during a run are candidates for that run, kept where the answering prompt shows
them. LangChain v1's own RAG tutorial (`create_agent` with a `@dynamic_prompt` middleware that
searches the vector store and puts the documents in the system prompt), and searches of every
kind (`similarity_search*`, `max_marginal_relevance_search*`, sync and async) in a plain
function. Real agents and vector stores, fake models."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_chains import CORPUS, PROMPT, format_docs, scripted
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_modes import MODES, run_in
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.embeddings.langchain import SentenceEncoderEmbeddings
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler

QUESTION = "How tall is the Eiffel Tower?"
ANSWER = "It is 330 metres tall."


@pytest.mark.parametrize("mode", MODES)
def test_create_agent_with_a_dynamic_prompt_that_searches_the_vector_store(
    mode: str,
    vector_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """The v1 tutorial's "RAG chain": no retriever runs, no tool is called."""

    @dynamic_prompt
    def prompt_with_context(request: ModelRequest) -> str:
        last_query = request.state["messages"][-1].text
        retrieved_docs = vector_store.similarity_search(last_query, k=2)
        docs_content = "\n\n".join(doc.page_content for doc in retrieved_docs)
        return f"You are a helpful assistant. Use the following context:\n\n{docs_content}"

    agent = create_agent(scripted(ANSWER), tools=[], middleware=[prompt_with_context])
    inputs = {"messages": [{"role": "user", "content": QUESTION}]}
    run_in(mode, agent, inputs, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert (request.question, request.answer) == (QUESTION, ANSWER)
    expected = vector_store.similarity_search(QUESTION, k=2)
    assert [(r.id, r.text) for r in request.references] == [
        (d.id, d.page_content) for d in expected
    ]


def _answering_from(lookup: RunnableLambda[str, str]) -> Any:
    """A chain whose prompt's context is what `lookup` makes of the question."""
    return (
        {"context": lookup, "question": lambda q: q}
        | PROMPT
        | FakeListChatModel(responses=[ANSWER])
        | StrOutputParser()
    )


def _documents(found: list[Any]) -> list[Document]:
    """A search's documents, with or without their scores."""
    return [d[0] if isinstance(d, tuple) else d for d in found]


SEARCHES = [
    ("similarity_search", {"k": 2}),
    ("similarity_search_with_score", {"k": 2}),
    ("max_marginal_relevance_search", {"k": 2, "fetch_k": 4}),
    ("asimilarity_search", {"k": 2}),
    ("asimilarity_search_with_score", {"k": 2}),
    ("amax_marginal_relevance_search", {"k": 2, "fetch_k": 4}),
]


@pytest.mark.parametrize(("method", "kwargs"), SEARCHES, ids=[s[0] for s in SEARCHES])
def test_a_search_in_a_plain_function_during_the_run_gives_the_documents_shown(
    method: str,
    kwargs: dict[str, Any],
    vector_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """The app prints only the first document found: the second is no reference."""
    search = getattr(vector_store, method)
    found: list[Document] = []

    def context(question: str) -> str:
        found.extend(_documents(search(question, **kwargs)))
        return found[0].page_content

    async def acontext(question: str) -> str:
        found.extend(_documents(await search(question, **kwargs)))
        return found[0].page_content

    chain = _answering_from(RunnableLambda(context, afunc=acontext))
    if method.startswith("a"):
        asyncio.run(chain.ainvoke(QUESTION, {"callbacks": [handler]}))
    else:
        chain.invoke(QUESTION, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert len(found) == 2
    assert [(r.id, r.text) for r in request.references] == [(found[0].id, found[0].page_content)]
    if "score" in method:
        assert request.references[0].score is not None


def test_a_vector_store_class_defined_after_the_handler_is_captured_too(
    handler: RefCheckCallbackHandler, monitor: RefCheckMonitor, sink: Any
) -> None:
    """A store module imported late (a community integration) overrides the search methods
    itself: its class is wrapped as it is defined."""

    class ShelfStore(VectorStore):
        """Documents sharing a word with the query, no embeddings."""

        def __init__(self, documents: list[Document]) -> None:
            self.documents = documents

        def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
            words = set(query.lower().split())
            return [d for d in self.documents if words & set(d.page_content.lower().split())][:k]

        @classmethod
        def from_texts(
            cls, texts: Any, embedding: Any, metadatas: Any = None, **kwargs: Any
        ) -> Any:
            return cls([Document(page_content=t) for t in texts])

    store = ShelfStore(CORPUS)
    chain = (
        {"context": lambda q: format_docs(store.similarity_search(q, k=1)), "question": lambda q: q}
        | PROMPT
        | FakeListChatModel(responses=[ANSWER])
        | StrOutputParser()
    )
    chain.invoke("How tall is the Eiffel Tower?", {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert [r.id for r in request.references] == ["eiffel"]


class StreamingStore(InMemoryVectorStore):
    """A store whose searches also stream: a generator and an async generator (as stores
    with `similarity_search_iter` / `asimilarity_search_stream` have them)."""

    def similarity_search_iter(self, query: str, k: int = 4) -> Iterator[Document]:
        yield from self.similarity_search(query, k=k)

    async def asimilarity_search_stream(self, query: str, k: int = 4) -> AsyncIterator[Document]:
        for document in await self.asimilarity_search(query, k=k):
            yield document


def _kind(function: Any) -> tuple[bool, bool, bool]:
    return (
        inspect.iscoroutinefunction(function),
        inspect.isasyncgenfunction(function),
        inspect.isgeneratorfunction(function),
    )


def test_every_wrapped_search_keeps_its_kind_and_signature(
    handler: RefCheckCallbackHandler,
) -> None:
    """Issue 47: after wrapping, a generator search and an async generator search were plain
    functions to `inspect`, so code dispatching on `isasyncgenfunction` (LangChain's own
    runnables do) took the wrong path."""
    wrapped = [
        (cls, name, method)
        for cls in [VectorStore, *_all_subclasses(VectorStore)]
        for name, method in vars(cls).items()
        if getattr(method, "__refcheck_search__", False)
    ]
    names = {name for cls, name, _ in wrapped if cls is StreamingStore}
    assert names == {"similarity_search_iter", "asimilarity_search_stream"}
    assert len(wrapped) >= 10
    for cls, name, method in wrapped:
        original = method.__wrapped__
        assert _kind(method) == _kind(original), (cls, name)
        assert inspect.signature(method) == inspect.signature(original), (cls, name)
        bound = getattr(StreamingStore.__new__(StreamingStore), name, None)
        if cls in StreamingStore.__mro__ and bound is not None:
            assert _kind(bound) == _kind(original), (cls, name)
    assert _kind(StreamingStore.similarity_search_iter) == (False, False, True)
    assert _kind(StreamingStore.asimilarity_search_stream) == (False, True, False)


def _all_subclasses(cls: type) -> list[type]:
    found, pending = [], list(cls.__subclasses__())
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(current.__subclasses__())
    return found


@pytest.mark.parametrize("stream", ["generator", "async generator", "closed early"])
def test_a_streaming_search_gives_the_documents_it_yielded(
    stream: str,
    encoder: Any,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    store = StreamingStore(embedding=SentenceEncoderEmbeddings(encoder))
    store.add_documents(CORPUS)

    def context(question: str) -> str:
        found = store.similarity_search_iter(question, k=2)
        if stream == "closed early":
            first = next(found)
            found.close()  # the consumer stops after the first document
            return first.page_content
        return format_docs(list(found))

    async def acontext(question: str) -> str:
        found = [d async for d in store.asimilarity_search_stream(question, k=2)]
        return format_docs(found)

    chain = _answering_from(RunnableLambda(context, afunc=acontext))
    if stream == "async generator":
        asyncio.run(chain.ainvoke(QUESTION, {"callbacks": [handler]}))
    else:
        chain.invoke(QUESTION, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    expected = store.similarity_search(QUESTION, k=1 if stream == "closed early" else 2)
    assert [(r.id, r.text) for r in request.references] == [
        (d.id, d.page_content) for d in expected
    ]
