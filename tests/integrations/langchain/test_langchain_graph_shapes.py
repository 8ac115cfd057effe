"""Pairing in LangGraph graphs and agents: the tutorial RAG graph, a corrective-RAG graph with
graders, `create_react_agent`, `langchain.agents.create_agent` with an artifact tool, and a
checkpointed multi-turn agent. Real graphs; fake chat models that emit tool calls."""

from __future__ import annotations

from typing import Any, TypedDict

from langchain.agents import create_agent
from langchain_chains import PROMPT, format_docs, scripted, tool_call
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers import JsonOutputParser, StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import create_retriever_tool, tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import create_react_agent
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor, Tally
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler
from refcheck_callbacks.integrations.langchain.pairing import EARLIER_TURNS_KEY

EIFFEL = "How tall is the Eiffel Tower?"


class RagState(TypedDict, total=False):
    question: str
    context: list[Document]
    answer: str


def test_the_tutorial_graph_that_searches_the_vector_store_directly(
    vector_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    llm = FakeListChatModel(responses=["It is 330 metres tall."])

    def retrieve(state: RagState) -> RagState:
        return {"context": vector_store.similarity_search(state["question"], k=2)}

    def generate(state: RagState) -> RagState:
        prompt = PROMPT.invoke(
            {"question": state["question"], "context": format_docs(state["context"])}
        )
        return {"answer": str(llm.invoke(prompt).content)}

    graph = StateGraph(RagState).add_sequence([retrieve, generate])
    graph.add_edge(START, "retrieve")
    output = graph.compile().invoke({"question": EIFFEL}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == EIFFEL
    assert request.answer == output["answer"] == "It is 330 metres tall."
    assert [r.id for r in request.references] == [d.id for d in output["context"]]


class CragState(TypedDict, total=False):
    question: str
    documents: list[Document]
    generation: str
    grounded: str


def test_a_corrective_rag_graph_checks_the_generation_against_the_documents_kept(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    grade = ChatPromptTemplate.from_messages(
        [("human", "Is this document relevant to {question}?\n{document}\nAnswer in JSON.")]
    )
    # Grades the two retrieved documents in turn: the first is kept, the second dropped.
    grader = (
        grade
        | FakeListChatModel(responses=['{"binary_score": "yes"}', '{"binary_score": "no"}'])
        | JsonOutputParser()
    )
    generator = PROMPT | FakeListChatModel(responses=["It is 330 metres tall."]) | StrOutputParser()
    checker = (
        ChatPromptTemplate.from_messages([("human", "Facts:\n{documents}\nAnswer: {generation}")])
        | FakeListChatModel(responses=['{"binary_score": "yes"}'])
        | JsonOutputParser()
    )

    def retrieve(state: CragState) -> CragState:
        return {"documents": vector_retriever.invoke(state["question"])}

    def grade_documents(state: CragState) -> CragState:
        kept = [
            d
            for d in state["documents"]
            if grader.invoke({"question": state["question"], "document": d.page_content})[
                "binary_score"
            ]
            == "yes"
        ]
        return {"documents": kept}

    def generate(state: CragState) -> CragState:
        context = format_docs(state["documents"])
        return {"generation": generator.invoke({"context": context, "question": state["question"]})}

    def check_grounded(state: CragState) -> CragState:
        documents = format_docs(state["documents"])
        verdict = checker.invoke({"documents": documents, "generation": state["generation"]})
        return {"grounded": verdict["binary_score"]}

    graph = StateGraph(CragState).add_sequence(
        [retrieve, grade_documents, generate, check_grounded]
    )
    graph.add_edge(START, "retrieve")
    output = graph.compile().invoke({"question": EIFFEL}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.answer == output["generation"] == "It is 330 metres tall."
    assert request.question == EIFFEL
    assert [r.id for r in request.references] == [d.id for d in output["documents"]] == ["eiffel"]


def retriever_tool(retriever: BaseRetriever) -> Any:
    return create_retriever_tool(retriever, "search", "Search the encyclopedia.")


FINAL = "The Eiffel Tower is 330 metres tall."


def test_create_react_agent_checks_its_final_answer_for_the_users_question(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    model = scripted(tool_call("search", "1", query="Eiffel Tower"), FINAL)
    agent = create_react_agent(model, [retriever_tool(vector_retriever)])
    output = agent.invoke({"messages": [("user", EIFFEL)]}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == EIFFEL
    assert request.metadata["refcheck.retrieval_query"] == "Eiffel Tower"
    assert request.answer == output["messages"][-1].content == FINAL
    assert [r.id for r in request.references] == [
        d.id for d in vector_retriever.invoke("Eiffel Tower")
    ]


def test_create_agent_with_an_artifact_tool_checks_against_its_artifacts(
    vector_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    @tool(response_format="content_and_artifact")
    def retrieve(query: str) -> tuple[str, list[Document]]:
        """Retrieve information related to a query."""
        documents = vector_store.similarity_search(query, k=2)
        text = "\n\n".join(f"Source: {d.metadata}\nContent: {d.page_content}" for d in documents)
        return text, documents

    model = scripted(tool_call("retrieve", "1", query="Eiffel Tower height"), FINAL)
    agent = create_agent(model, [retrieve], system_prompt="Answer from the tools.")
    output = agent.invoke({"messages": [HumanMessage(EIFFEL)]}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == EIFFEL
    assert request.answer == output["messages"][-1].content == FINAL
    expected = vector_store.similarity_search("Eiffel Tower height", k=2)
    assert [r.id for r in request.references] == [d.id for d in expected]


def test_a_tool_result_without_documents_is_the_reference_it_showed_the_model(
    handler: RefCheckCallbackHandler, monitor: RefCheckMonitor, sink: Any
) -> None:
    @tool
    def lookup(name: str) -> str:
        """Look a landmark up in the city's own register."""
        return "The Eiffel Tower is 330 metres tall and stands on the Champ de Mars."

    model = scripted(tool_call("lookup", "7", name="Eiffel Tower"), FINAL)
    create_agent(model, [lookup]).invoke({"messages": [("user", EIFFEL)]}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    [reference] = request.references
    assert reference.text == lookup.invoke({"name": "x"})
    assert reference.metadata == {"tool_call_id": "7", "tool": "lookup"}


def test_a_checkpointed_agent_checks_each_turn_with_that_turns_question(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    model = scripted(
        tool_call("search", "1", query="Eiffel Tower"),
        FINAL,
        tool_call("search", "2", query="Python creator"),
        "Guido van Rossum created Python.",
    )
    agent = create_react_agent(
        model, [retriever_tool(vector_retriever)], checkpointer=InMemorySaver()
    )
    config: Any = {"callbacks": [handler], "configurable": {"thread_id": "t-1"}}
    agent.invoke({"messages": [("user", EIFFEL)]}, config)
    agent.invoke({"messages": [("user", "And who created Python?")]}, config)
    first, second = sorted(checked_requests(monitor, sink, count=2), key=lambda r: r.submitted_at)
    assert (first.question, first.answer) == (EIFFEL, FINAL)
    assert (second.question, second.answer) == (
        "And who created Python?",
        "Guido van Rossum created Python.",
    )
    assert {"eiffel"} <= {r.id for r in first.references}
    # The second turn's model still sees the first turn's tool result in its history: its
    # documents, as they were retrieved (more in test_langchain_conversations.py).
    turns = [vector_retriever.invoke(q) for q in ("Python creator", "Eiffel Tower")]
    assert [r.id for r in second.references] == [d.id for docs in turns for d in docs]
    assert second.metadata[EARLIER_TURNS_KEY] == len(turns[1])


def test_question_key_reads_a_message_list(
    vector_retriever: BaseRetriever, monitor: RefCheckMonitor, sink: Any
) -> None:
    handler = RefCheckCallbackHandler(monitor, question_key="messages")
    model = scripted(tool_call("search", "1", query="Eiffel Tower"), FINAL)
    agent = create_react_agent(model, [retriever_tool(vector_retriever)])
    agent.invoke({"messages": [("user", EIFFEL)]}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == EIFFEL


def test_answer_node_names_the_node_whose_output_is_the_answer(
    vector_retriever: BaseRetriever, monitor: RefCheckMonitor, sink: Any
) -> None:
    draft = PROMPT | FakeListChatModel(responses=["It is 330 metres tall."]) | StrOutputParser()
    polish = FakeListChatModel(responses=["Polished: 330 metres."])

    class State(TypedDict, total=False):
        question: str
        context: str
        draft: str
        final: str

    def retrieve(state: State) -> State:
        return {"context": format_docs(vector_retriever.invoke(state["question"]))}

    def write(state: State) -> State:
        return {"draft": draft.invoke(state)}

    def rewrite(state: State) -> State:
        return {"final": str(polish.invoke(state["draft"]).content)}

    graph = StateGraph(State).add_sequence([retrieve, write, rewrite])
    graph.add_edge(START, "retrieve")
    graph.add_edge("rewrite", END)
    handler = RefCheckCallbackHandler(monitor, answer_node="write")
    graph.compile().invoke({"question": EIFFEL}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.answer == "It is 330 metres tall."
    assert monitor.stats.get(Tally.SKIPPED) == 0


def test_a_graph_without_retrieval_or_tools_is_counted(
    handler: RefCheckCallbackHandler, monitor: RefCheckMonitor, sink: Any
) -> None:
    agent = create_react_agent(scripted(AIMessage("Hello!")), [])
    agent.invoke({"messages": [("user", "Hi")]}, {"callbacks": [handler]})
    assert checked_requests(monitor, sink, count=0) == []
    assert monitor.stats.get(Tally.SKIPPED, "no_references") == 1
