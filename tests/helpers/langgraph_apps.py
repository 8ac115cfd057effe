"""LangGraph apps as LangChain's docs write them, for the tests that see them only through their
traces (`refcheck collect`): no retriever runs in any of them, the documents reach the model
through a graph node, a tool or a prompt. Real LangGraph graphs and agents; fake chat models
whose replies are scripted."""

from __future__ import annotations

from typing import Any, TypedDict

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_chains import scripted, tool_call
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import create_retriever_tool, tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import create_react_agent

RAG_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "human",
            "You are an assistant for question-answering tasks. Use the following pieces of "
            "retrieved context to answer the question. If you don't know the answer, just say "
            "that you don't know. Use three sentences maximum and keep the answer concise.\n"
            "Question: {question} \nContext: {context} \nAnswer:",
        )
    ]
)
"""The RAG tutorial's prompt (`rlm/rag-prompt` from the LangChain hub)."""


class TutorialState(TypedDict):
    question: str
    context: list[Document]
    answer: str


def rag_tutorial_graph(store: InMemoryVectorStore, answer: str, k: int = 2) -> Any:
    """The RAG tutorial's graph: `retrieve` calls `vector_store.similarity_search` and keeps
    the documents in the state, `generate` formats them into the prompt."""
    llm = FakeListChatModel(responses=[answer])

    def retrieve(state: TutorialState) -> dict[str, Any]:
        return {"context": store.similarity_search(state["question"], k=k)}

    def generate(state: TutorialState) -> dict[str, Any]:
        docs_content = "\n\n".join(doc.page_content for doc in state["context"])
        messages = RAG_PROMPT.invoke({"question": state["question"], "context": docs_content})
        return {"answer": llm.invoke(messages).content}

    graph = StateGraph(TutorialState).add_sequence([retrieve, generate])
    graph.add_edge(START, "retrieve")
    return graph.compile()


class SmallToBigState(TypedDict, total=False):
    question: str
    chunks: list[Document]
    context: list[Document]
    answer: str


def small_to_big_graph(chunks: InMemoryVectorStore, pages: dict[str, Document], answer: str) -> Any:
    """Small-to-big retrieval: search small chunks, answer from the pages they come from; the
    state keeps both (the chunks for the app's citations)."""
    llm = FakeListChatModel(responses=[answer])

    def retrieve(state: SmallToBigState) -> dict[str, Any]:
        found = chunks.similarity_search(state["question"], k=3)
        sources = dict.fromkeys(d.metadata["page"] for d in found)
        return {"chunks": found, "context": [pages[s] for s in sources]}

    def generate(state: SmallToBigState) -> dict[str, Any]:
        docs_content = "\n\n".join(doc.page_content for doc in state["context"])
        messages = RAG_PROMPT.invoke({"question": state["question"], "context": docs_content})
        return {"answer": llm.invoke(messages).content}

    graph = StateGraph(SmallToBigState).add_sequence([retrieve, generate])
    graph.add_edge(START, "retrieve")
    return graph.compile()


class TextState(TypedDict, total=False):
    question: str
    context: str
    answer: str


def formatted_context_graph(store: InMemoryVectorStore, answer: str) -> Any:
    """The tutorial's graph with the documents formatted in the retrieve node: the state holds
    text, no document, so the trace's only record of them is the prompt its template
    rendered."""
    llm = FakeListChatModel(responses=[answer])

    def retrieve(state: TextState) -> dict[str, Any]:
        found = store.similarity_search(state["question"], k=2)
        return {"context": "\n\n".join(doc.page_content for doc in found)}

    def generate(state: TextState) -> dict[str, Any]:
        messages = RAG_PROMPT.invoke({"question": state["question"], "context": state["context"]})
        return {"answer": llm.invoke(messages).content}

    graph = StateGraph(TextState).add_sequence([retrieve, generate])
    graph.add_edge(START, "retrieve")
    return graph.compile()


def search_tool_agent(store: InMemoryVectorStore, query: str, answer: str) -> Any:
    """LangChain v1's agentic RAG: `create_agent` with a tool that searches the vector store
    and returns the documents as text."""

    @tool
    def retrieve(query: str) -> str:
        """Retrieve information related to a query."""
        found = store.similarity_search(query, k=2)
        return "\n\n".join(f"Source: {d.metadata}\nContent: {d.page_content}" for d in found)

    model = scripted(tool_call("retrieve", "call-1", query=query), answer)
    return create_agent(model, [retrieve], system_prompt="Answer from the encyclopedia.")


def retriever_tool_agent(store: InMemoryVectorStore, query: str, answer: str) -> Any:
    """LangGraph's agentic RAG: a ReAct agent whose tool is a retriever (a retriever span under
    the graph's tools node)."""
    search = create_retriever_tool(
        store.as_retriever(search_kwargs={"k": 2}), "search", "Search the encyclopedia."
    )
    return create_react_agent(
        scripted(tool_call("search", "call-1", query=query), answer), [search]
    )


def dynamic_prompt_agent(store: InMemoryVectorStore, answer: str) -> Any:
    """LangChain v1's RAG chain: a `@dynamic_prompt` middleware searches the vector store and
    writes the documents into the system prompt, beside the app's instructions."""

    @dynamic_prompt
    def prompt_with_context(request: ModelRequest) -> str:
        last_query = request.state["messages"][-1].text
        docs_content = "\n\n".join(d.page_content for d in store.similarity_search(last_query, k=2))
        return f"You are a helpful assistant. Use the following context:\n\n{docs_content}"

    return create_agent(scripted(answer), tools=[], middleware=[prompt_with_context])
