"""Graders after the answer: LangGraph's adaptive RAG (router, document grader, generator,
hallucination grader, answer grader, one regeneration), its graders giving structured output
as tool calls or as JSON text. The answer is what the graph returns (the final state's
`generation`), never a grader's verdict, and the references the documents the generator saw.
Real graphs, one fake model for every role as in the tutorial, in `invoke`, `stream` and
`astream_events`."""

from __future__ import annotations

import json
from typing import Any, Literal, TypedDict

import pytest
from langchain_chains import scripted, tool_call
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_modes import MODES, run_in
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, Field
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler

QUESTION = "How tall is the Eiffel Tower?"
FIRST = "Answer: It is 300 metres tall."
SECOND = "Answer: It is 330 metres tall, built for the 1889 World's Fair."


class RouteQuery(BaseModel):
    """Route a user query to the most relevant datasource."""

    datasource: Literal["vectorstore", "web_search"] = Field(description="Where to look.")


class GradeDocuments(BaseModel):
    """Binary score for relevance check on retrieved documents."""

    binary_score: str = Field(description="Documents are relevant to the question, 'yes' or 'no'")


class GradeHallucinations(BaseModel):
    """Binary score for hallucination present in generation answer."""

    binary_score: str = Field(description="Answer is grounded in the facts, 'yes' or 'no'")


class GradeAnswer(BaseModel):
    """Binary score to assess answer addresses question."""

    binary_score: str = Field(description="Answer addresses the question, 'yes' or 'no'")


def verdict(form: str, schema: type[BaseModel], step: int, **fields: str) -> AIMessage:
    if form == "json":
        return AIMessage(json.dumps(fields))
    return tool_call(schema.__name__, f"call-{step}", **fields)


def tutorial_llm(form: str) -> Any:
    """One model for every role, in the order the graph calls it."""
    return scripted(
        verdict(form, RouteQuery, 0, datasource="vectorstore"),
        verdict(form, GradeDocuments, 1, binary_score="yes"),  # the Eiffel Tower document
        verdict(form, GradeDocuments, 2, binary_score="no"),  # the Everest document
        FIRST,
        verdict(form, GradeHallucinations, 3, binary_score="no"),  # not grounded: again
        SECOND,
        verdict(form, GradeHallucinations, 4, binary_score="yes"),
        verdict(form, GradeAnswer, 5, binary_score="yes"),
    )


class GraphState(TypedDict, total=False):
    question: str
    generation: str
    documents: list[Document]


def adaptive_rag(llm: Any, form: str, retriever: BaseRetriever) -> Any:
    method = "json_mode" if form == "json" else "function_calling"

    def structured(schema: type[BaseModel], human: str) -> Any:
        prompt = ChatPromptTemplate.from_messages([("system", "You grade."), ("human", human)])
        return prompt | llm.with_structured_output(schema, method=method)

    question_router = structured(RouteQuery, "{question}")
    retrieval_grader = structured(
        GradeDocuments, "Retrieved document: \n\n {document} \n\n User question: {question}"
    )
    hallucination_grader = structured(
        GradeHallucinations, "Set of facts: \n\n {documents} \n\n LLM generation: {generation}"
    )
    answer_grader = structured(
        GradeAnswer, "User question: \n\n {question} \n\n LLM generation: {generation}"
    )
    rag_prompt = ChatPromptTemplate.from_messages(
        [("human", "Use the context to answer.\nQuestion: {question} \nContext: {context} \n")]
    )
    rag_chain = rag_prompt | llm | StrOutputParser()

    def retrieve(state: GraphState) -> GraphState:
        return {"documents": retriever.invoke(state["question"]), "question": state["question"]}

    def grade_documents(state: GraphState) -> GraphState:
        kept = [
            d
            for d in state["documents"]
            if retrieval_grader.invoke(
                {"question": state["question"], "document": d.page_content}
            ).binary_score
            == "yes"
        ]
        return {"documents": kept, "question": state["question"]}

    def generate(state: GraphState) -> GraphState:
        generation = rag_chain.invoke(
            {"context": state["documents"], "question": state["question"]}
        )
        # The app tidies the model's text: what the user gets is no model's output verbatim.
        return {"generation": generation.removeprefix("Answer: ")}

    def route_question(state: GraphState) -> str:
        return question_router.invoke({"question": state["question"]}).datasource

    def grade_generation(state: GraphState) -> str:
        facts = {"documents": state["documents"], "generation": state["generation"]}
        if hallucination_grader.invoke(facts).binary_score != "yes":
            return "not supported"
        asked = {"question": state["question"], "generation": state["generation"]}
        return "useful" if answer_grader.invoke(asked).binary_score == "yes" else "not useful"

    workflow = StateGraph(GraphState)
    workflow.add_node("retrieve", retrieve)
    workflow.add_node("grade_documents", grade_documents)
    workflow.add_node("generate", generate)
    workflow.add_conditional_edges(START, route_question, {"vectorstore": "retrieve"})
    workflow.add_edge("retrieve", "grade_documents")
    workflow.add_edge("grade_documents", "generate")
    workflow.add_conditional_edges(
        "generate",
        grade_generation,
        {"not supported": "generate", "useful": END, "not useful": END},
    )
    return workflow.compile()


@pytest.mark.parametrize("form", ["tool_call", "json"])
@pytest.mark.parametrize("mode", MODES)
def test_adaptive_rag_checks_the_generation_it_returns_not_a_graders_verdict(
    mode: str,
    form: str,
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    app = adaptive_rag(tutorial_llm(form), form, vector_retriever)
    run_in(mode, app, {"question": QUESTION}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == QUESTION
    assert request.answer == SECOND.removeprefix("Answer: ")
    assert request.metadata["refcheck.answer_field"] == "generation"
    assert [r.id for r in request.references] == ["eiffel"]  # the grader rejected Everest


class WebState(TypedDict, total=False):
    question: str
    documents: Document
    generation: str


def test_a_document_in_the_final_state_is_never_taken_for_the_answer(
    handler: RefCheckCallbackHandler, monitor: RefCheckMonitor, sink: Any
) -> None:
    """Adaptive RAG's web-search node keeps one `Document` in the state (a pydantic object with
    prose in it); the answer field is the tidied generation beside it."""
    found = Document(page_content="The Eiffel Tower, finished in 1889, is 330 metres tall.")
    rag_prompt = ChatPromptTemplate.from_messages([("human", "{context}\n\n{question}")])
    rag_chain = rag_prompt | scripted(SECOND) | StrOutputParser()

    def web_search(state: WebState) -> WebState:
        return {"documents": found}

    def generate(state: WebState) -> WebState:
        text = rag_chain.invoke({"context": state["documents"], "question": state["question"]})
        return {"generation": text.removeprefix("Answer: ")}

    graph = StateGraph(WebState).add_sequence([web_search, generate])
    graph.add_edge(START, "web_search")
    graph.compile().invoke({"question": QUESTION}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.answer == SECOND.removeprefix("Answer: ")
    assert [r.text for r in request.references] == [found.page_content]
