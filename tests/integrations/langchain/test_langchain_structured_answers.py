"""Answers given as structured output, from LangChain's "QA with citations" how-to:
`with_structured_output(CitedAnswer)`, the model writing JSON text (JSON mode) or calling the
schema as a tool (the default for chat models). The answer is its answer field, found by rule;
its citations point at the references; an answer found nowhere is counted. Real chains and
graphs, fake models, in `invoke`, `stream` and `astream_events`."""

from __future__ import annotations

import json
from typing import Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain.agents.structured_output import ToolStrategy
from langchain_chains import CORPUS, scripted, tool_call
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from langchain_modes import MODES, run_in
from langgraph.graph import START, StateGraph
from pydantic import BaseModel, Field
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor, Tally
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler
from refcheck_callbacks.integrations.langchain.pairing import ANSWER_FIELD_KEY, CITED_KEY

QUESTION = "How tall is the Eiffel Tower?"
ANSWER = "The Eiffel Tower is 330 metres tall."


class CitedAnswer(BaseModel):
    """Answer the user question based only on the given sources, and cite the sources used."""

    answer: str = Field(description="The answer, based only on the given sources.")
    citations: list[int] = Field(description="The integer IDs of the sources cited.")


PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer the question from these sources only.\n{context}"),
        ("human", "{question}"),
    ]
)


def format_docs_with_id(docs: list[Document]) -> str:
    formatted = [f"Source ID: {i}\nArticle Snippet: {d.page_content}" for i, d in enumerate(docs)]
    return "\n\n" + "\n\n".join(formatted)


def cited_answer_model(method: str, answer: dict[str, Any]) -> Any:
    """A model that answers with `answer` in JSON text (JSON mode) or in a tool call."""
    if method == "json_mode":
        return scripted(AIMessage(json.dumps(answer))).with_structured_output(
            CitedAnswer, method="json_mode"
        )
    return scripted(tool_call("CitedAnswer", "call-1", **answer)).with_structured_output(
        CitedAnswer
    )


METHODS = ("json_mode", "function_calling")


def cited(request: Any) -> list[str | None]:
    """The ids of the references the answer cites (the metadata holds their indexes)."""
    return [request.references[i].id for i in request.metadata[CITED_KEY]]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", MODES)
def test_an_lcel_chain_with_cited_answers_checks_the_answer_field(
    mode: str,
    method: str,
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """The how-to's chain: `{"input", "context", "answer": CitedAnswer}` is the root output."""
    structured = cited_answer_model(method, {"answer": ANSWER, "citations": [0]})
    answer_from_docs = (
        RunnablePassthrough.assign(context=lambda x: format_docs_with_id(x["context"]))
        | (lambda x: {"context": x["context"], "question": x["input"]})
        | PROMPT
        | structured
    )
    retrieve = (lambda x: x["input"]) | vector_retriever
    chain = RunnablePassthrough.assign(context=retrieve).assign(answer=answer_from_docs)
    run_in(mode, chain, {"input": QUESTION}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == QUESTION
    assert request.answer == ANSWER
    assert request.metadata[ANSWER_FIELD_KEY] == "answer.answer"
    retrieved = vector_retriever.invoke(QUESTION)
    assert [r.id for r in request.references] == [d.id for d in retrieved]
    assert cited(request) == [retrieved[0].id]


class CitedState(TypedDict, total=False):
    question: str
    context: list[Document]
    answer: CitedAnswer


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", MODES)
def test_a_graph_with_cited_answers_checks_the_answer_field(
    mode: str,
    method: str,
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """The how-to's LangGraph version: the state's `answer` is the `CitedAnswer`."""
    structured = cited_answer_model(method, {"answer": ANSWER, "citations": [1, 0, 7]})

    def retrieve(state: CitedState) -> CitedState:
        return {"context": vector_retriever.invoke(state["question"])}

    def generate(state: CitedState) -> CitedState:
        context = format_docs_with_id(state["context"])
        messages = PROMPT.invoke({"question": state["question"], "context": context})
        return {"answer": structured.invoke(messages)}

    graph = StateGraph(CitedState).add_sequence([retrieve, generate])
    graph.add_edge(START, "retrieve")
    run_in(mode, graph.compile(), {"question": QUESTION}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert (request.question, request.answer) == (QUESTION, ANSWER)
    assert request.metadata[ANSWER_FIELD_KEY] == "answer.answer"
    retrieved = vector_retriever.invoke(QUESTION)
    assert [r.id for r in request.references] == [d.id for d in retrieved]
    # Source 7 does not exist: a citation that points at no reference is left out.
    assert cited(request) == [retrieved[1].id, retrieved[0].id]


class Citation(BaseModel):
    source_id: int = Field(description="The integer ID of a source which justifies the answer.")
    quote: str = Field(description="The verbatim quote from the source.")


class QuotedAnswer(BaseModel):
    """Answer the user question from the given sources, citing them with quotes."""

    citations: list[Citation]
    response: str = Field(description="The answer, based only on the given sources.")


@pytest.mark.parametrize("mode", MODES)
def test_quoted_citations_under_another_name_are_found_by_rule(
    mode: str,
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """The answer field is the structured object's prose, whatever its name; each citation's
    source id points at a reference (the quotes are not the answer)."""
    quote = CORPUS[0].page_content
    call = tool_call(
        "QuotedAnswer",
        "call-1",
        citations=[{"source_id": 0, "quote": quote}],
        response=ANSWER,
    )
    chain = (
        {"context": vector_retriever | format_docs_with_id, "question": RunnablePassthrough()}
        | PROMPT
        | scripted(call).with_structured_output(QuotedAnswer)
    )
    run_in(mode, chain, QUESTION, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert (request.question, request.answer) == (QUESTION, ANSWER)
    assert request.metadata[ANSWER_FIELD_KEY] == "response"
    retrieved = vector_retriever.invoke(QUESTION)
    assert [r.id for r in request.references] == [d.id for d in retrieved]
    assert cited(request) == [retrieved[0].id]


class Rating(BaseModel):
    """How well the sources answer the question."""

    stars: int
    relevant: bool


@pytest.mark.parametrize("method", METHODS)
def test_a_structured_output_with_no_answer_in_it_is_counted(
    method: str,
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    if method == "json_mode":
        model = scripted(AIMessage('{"stars": 4, "relevant": true}'))
    else:
        model = scripted(tool_call("Rating", "call-1", stars=4, relevant=True))
    chain = (
        {"context": vector_retriever | format_docs_with_id, "question": RunnablePassthrough()}
        | PROMPT
        | model.with_structured_output(Rating, method=method)
    )
    assert chain.invoke(QUESTION, {"callbacks": [handler]}) == Rating(stars=4, relevant=True)
    assert checked_requests(monitor, sink, count=0) == []
    assert monitor.stats.get(Tally.SKIPPED, "no_answer") == 1
    assert handler.parked_retrievals == 0


@pytest.mark.parametrize("mode", MODES)
def test_create_agent_with_a_structured_response_checks_its_answer_field(
    mode: str,
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """LangChain v1's `create_agent(response_format=ToolStrategy(CitedAnswer))`: the answer is
    the state's structured response, beside a history whose last AI message is its tool call."""

    @dynamic_prompt
    def sources(request: ModelRequest) -> str:
        found = vector_retriever.invoke(request.state["messages"][-1].text)
        return f"Answer from these sources only.{format_docs_with_id(found)}"

    model = scripted(tool_call("CitedAnswer", "call-1", answer=ANSWER, citations=[0]))
    agent = create_agent(
        model, tools=[], middleware=[sources], response_format=ToolStrategy(CitedAnswer)
    )
    run_in(mode, agent, {"messages": [("user", QUESTION)]}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert (request.question, request.answer) == (QUESTION, ANSWER)
    assert request.metadata[ANSWER_FIELD_KEY] == "structured_response.answer"
    retrieved = vector_retriever.invoke(QUESTION)
    assert [r.id for r in request.references] == [d.id for d in retrieved]
    assert cited(request) == [retrieved[0].id]


def test_json_nested_too_deep_to_read_is_checked_as_the_text_it_is(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """Untrusted text: JSON nested deeper than Python's parser recurses is no structured
    answer, and reading it raises nothing (no callback error is counted)."""
    deep = '{"answer": "It is 330 metres tall.", "trail": ' + "[" * 5_000 + "]" * 5_000 + "}"
    chain = (
        {"context": vector_retriever | format_docs_with_id, "question": RunnablePassthrough()}
        | PROMPT
        | scripted(AIMessage(deep))
        | StrOutputParser()
    )
    chain.invoke(QUESTION, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.answer == deep
    assert ANSWER_FIELD_KEY not in request.metadata
    assert monitor.stats.get(Tally.ERRORS) == 0


def test_a_chain_that_returns_a_tool_call_request_has_no_answer(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """A model bound to tools, no parser: the run returns the model's request for a tool, which
    the app executes; nobody got an answer yet."""
    chain = (
        {"context": vector_retriever | format_docs_with_id, "question": RunnablePassthrough()}
        | PROMPT
        | scripted(tool_call("lookup", "call-1", query="Eiffel Tower height in metres"))
    )
    assert chain.invoke(QUESTION, {"callbacks": [handler]}).tool_calls
    assert checked_requests(monitor, sink, count=0) == []
    assert monitor.stats.get(Tally.SKIPPED, "no_answer") == 1
