"""Pairing by content, in apps written the way the official tutorials write them: documents
passed straight into a prompt template (the prompt holds the printed list, with `\\n` escapes
and escaped quotes), a LangGraph corrective-RAG graph whose grader rejects a document and
whose web-search node appends one `Document` it built, an adaptive-RAG node that returns one
`Document`, HyDE in two root runs. Real LangChain and LangGraph parts, fake chat models."""

from __future__ import annotations

from operator import itemgetter
from typing import Any, TypedDict

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.load import dumps, loads
from langchain_core.output_parsers import JsonOutputParser, StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import END, START, StateGraph
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.embeddings.langchain import SentenceEncoderEmbeddings
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler, override_pairing
from refcheck_callbacks.integrations.langchain.pairing import FALLBACK_KEY

# Chunks as a web loader and a text splitter leave them: a title line first, quotes, accents.
BLOG = [
    Document(
        id="agents-1",
        page_content=(
            "LLM Powered Autonomous Agents\nDate: June 23, 2023\n\nBuilding agents with an LLM "
            'as its core controller is a cool concept. The agent\'s "brain" plans, reflects '
            "and uses tools."
        ),
    ),
    Document(
        id="agents-2",
        page_content=(
            "Task Decomposition\nChain of thought (CoT) has become a standard prompting "
            "technique: the model is instructed to “think step by step” to decompose hard "
            "tasks into smaller and simpler steps."
        ),
    ),
    Document(
        id="agents-3",
        page_content=(
            "Self-reflection lets autonomous agents improve iteratively by refining past "
            "action decisions and correcting previous mistakes, as in ReAct and Reflexion."
        ),
    ),
    Document(
        id="memory-1",
        page_content=(
            "Memory\nShort-term memory is in-context learning; long-term memory lets the "
            "agent retain and recall information over extended periods, often with an "
            "external vector store and fast retrieval (MIPS)."
        ),
    ),
    Document(
        id="eiffel",
        page_content=(
            "Eiffel Tower\nThe Eiffel Tower in Paris is 330 metres tall; it's the "
            '"Iron Lady" of the Champ de Mars, built in 1887-1889.'
        ),
    ),
    Document(
        id="everest",
        page_content="Mount Everest\nMount Everest is 8,849 metres high, between Nepal and China.",
    ),
]

# LangChain "RAG from scratch" (part 1) and the hub's rlm/rag-prompt, as the tutorials use them.
RAG_FROM_SCRATCH = ChatPromptTemplate.from_template(
    "Answer the question based only on the following context:\n{context}\n\nQuestion: {question}\n"
)
RAG_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "human",
            "You are an assistant for question-answering tasks. Use the following pieces of "
            "retrieved context to answer the question. If you don't know the answer, just say "
            "that you don't know.\nQuestion: {question} \nContext: {context} \nAnswer:",
        )
    ]
)


@pytest.fixture(scope="module")
def blog_store(encoder: SentenceEncoder) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding=SentenceEncoderEmbeddings(encoder))
    store.add_documents(BLOG)
    return store


def test_rag_from_scratch_pipes_the_retrievers_documents_into_the_prompt(
    blog_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    retriever = blog_store.as_retriever(search_kwargs={"k": 3})
    llm = FakeListChatModel(responses=["Task decomposition splits hard tasks into steps."])
    rag_chain = (
        {"context": retriever, "question": RunnablePassthrough()}
        | RAG_FROM_SCRATCH
        | llm
        | StrOutputParser()
    )
    question = "What is Task Decomposition?"
    answer = rag_chain.invoke(question, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == question
    assert request.answer == answer == "Task decomposition splits hard tasks into steps."
    retrieved = retriever.invoke(question)
    assert len(retrieved) == 3
    # All three are in the prompt, printed as a list of `Document` reprs.
    assert [r.id for r in request.references] == [d.id for d in retrieved]
    assert FALLBACK_KEY not in request.metadata


@pytest.mark.filterwarnings("ignore:The function `loads` is in beta", "ignore:The default value")
def test_rag_from_scratch_multi_query_gives_the_unique_union_it_printed(
    blog_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """RAG from scratch (multi-query): the union of the retrievals, made unique by a JSON
    round trip (new `Document` objects, a chain's output), piped into the prompt."""
    retriever = blog_store.as_retriever(search_kwargs={"k": 2})
    prompt_perspectives = ChatPromptTemplate.from_template(
        "Generate three different versions of the given user question, one per line.\n"
        "Original question: {question}"
    )
    queries = "How do agents break down tasks?\nWhat memory do LLM agents use?"
    generate_queries = (
        prompt_perspectives
        | FakeListChatModel(responses=[queries])
        | StrOutputParser()
        | (lambda x: x.split("\n"))
    )

    def get_unique_union(documents: list[list[Document]]) -> list[Document]:
        flattened_docs = [dumps(doc) for sublist in documents for doc in sublist]
        unique_docs = list(set(flattened_docs))
        return [loads(doc) for doc in unique_docs]

    retrieval_chain = generate_queries | retriever.map() | get_unique_union
    final_rag_chain = (
        {"context": retrieval_chain, "question": itemgetter("question")}
        | RAG_FROM_SCRATCH
        | FakeListChatModel(responses=["They decompose tasks and use vector memory."])
        | StrOutputParser()
    )
    question = "How do LLM agents plan and remember?"
    answer = final_rag_chain.invoke({"question": question}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == question
    assert request.answer == answer
    expected = {d.id for q in queries.split("\n") for d in retriever.invoke(q)}
    assert len(expected) >= 3
    assert sorted(r.id for r in request.references) == sorted(expected)


def test_documents_passed_into_a_streamed_answer_chain_are_its_references(
    blog_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """A stream reports its input only when it ends: the documents in it still count."""
    question = "What is Task Decomposition?"
    documents = blog_store.similarity_search(question, k=2)  # no callback sees this
    chain = (
        RAG_FROM_SCRATCH
        | FakeListChatModel(responses=["It splits hard tasks into steps."])
        | StrOutputParser()
    )
    streamed = chain.stream({"context": documents, "question": question}, {"callbacks": [handler]})
    assert "".join(streamed) == "It splits hard tasks into steps."
    [request] = checked_requests(monitor, sink)
    assert request.question == question
    assert [r.id for r in request.references] == [d.id for d in documents]


class CragState(TypedDict, total=False):
    question: str
    generation: str
    web_search: str
    documents: list[Document]


@tool
def web_search_tool(query: str) -> list[dict[str, str]]:
    """Search the web (a fixed result page standing in for Tavily)."""
    return [
        {"url": "https://example.org/tower", "content": "The tower was finished in March 1889."},
        {"url": "https://example.org/lifts", "content": "Its lifts climb 276 metres\nin total."},
    ]


def test_corrective_rag_leaves_out_the_documents_its_grader_rejected(
    blog_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """LangGraph's corrective-RAG tutorial: the grader keeps one of two documents, so the
    question is rewritten and a web search adds one `Document` to the kept list; the answer
    is checked against those two, never against the rejected one."""
    retriever = blog_store.as_retriever(search_kwargs={"k": 2})
    grade_prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Grade whether the document is relevant to the question, yes or no."),
            ("human", "Retrieved document: \n\n {document} \n\n User question: {question}"),
        ]
    )
    retrieval_grader = (
        grade_prompt
        | FakeListChatModel(responses=['{"binary_score": "yes"}', '{"binary_score": "no"}'])
        | JsonOutputParser()
    )
    rag_chain = (
        RAG_PROMPT
        | FakeListChatModel(responses=["It is 330 m, finished in 1889."])
        | StrOutputParser()
    )
    re_write_prompt = ChatPromptTemplate.from_messages(
        [("human", "Here is the initial question: \n\n {question} \n Formulate an improved one.")]
    )
    question_rewriter = (
        re_write_prompt
        | FakeListChatModel(responses=["Eiffel Tower height and completion date"])
        | StrOutputParser()
    )

    def retrieve(state: CragState) -> CragState:
        return {"documents": retriever.invoke(state["question"]), "question": state["question"]}

    def generate(state: CragState) -> CragState:
        question, documents = state["question"], state["documents"]
        generation = rag_chain.invoke({"context": documents, "question": question})
        return {"documents": documents, "question": question, "generation": generation}

    def grade_documents(state: CragState) -> CragState:
        filtered_docs = []
        web_search = "No"
        for d in state["documents"]:
            score = retrieval_grader.invoke(
                {"question": state["question"], "document": d.page_content}
            )
            if score["binary_score"] == "yes":
                filtered_docs.append(d)
            else:
                web_search = "Yes"
        return {"documents": filtered_docs, "question": state["question"], "web_search": web_search}

    def transform_query(state: CragState) -> CragState:
        better_question = question_rewriter.invoke({"question": state["question"]})
        return {"documents": state["documents"], "question": better_question}

    def web_search(state: CragState) -> CragState:
        documents = state["documents"]
        docs = web_search_tool.invoke({"query": state["question"]})
        web_results = Document(page_content="\n".join(d["content"] for d in docs))
        documents.append(web_results)
        return {"documents": documents, "question": state["question"]}

    def decide_to_generate(state: CragState) -> str:
        return "transform_query" if state["web_search"] == "Yes" else "generate"

    workflow = StateGraph(CragState)
    for node in (retrieve, grade_documents, generate, transform_query, web_search):
        workflow.add_node(node.__name__, node)
    workflow.add_edge(START, "retrieve")
    workflow.add_edge("retrieve", "grade_documents")
    workflow.add_conditional_edges(
        "grade_documents",
        decide_to_generate,
        {"transform_query": "transform_query", "generate": "generate"},
    )
    workflow.add_edge("transform_query", "web_search")
    workflow.add_edge("web_search", "generate")
    workflow.add_edge("generate", END)
    app = workflow.compile()

    question = "How tall is the Eiffel Tower?"
    retrieved = retriever.invoke(question)
    assert [d.id for d in retrieved] == ["eiffel", "everest"]  # the grader rejects Everest
    output = app.invoke({"question": question}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == question
    assert request.answer == output["generation"] == "It is 330 m, finished in 1889."
    assert [(r.id, r.text) for r in request.references] == [
        ("eiffel", BLOG[4].page_content),
        (None, "The tower was finished in March 1889.\nIts lifts climb 276 metres\nin total."),
    ]
    assert FALLBACK_KEY not in request.metadata


class AdaptiveState(TypedDict, total=False):
    question: str
    generation: str
    documents: Any


def test_an_adaptive_rag_web_search_node_returns_one_document(
    handler: RefCheckCallbackHandler, monitor: RefCheckMonitor, sink: Any
) -> None:
    """LangGraph's adaptive-RAG tutorial routes to web search, whose node wraps the results in
    one `Document` (not a list) that the generator's prompt prints."""
    question_router = (
        ChatPromptTemplate.from_messages(
            [("human", "Route to vectorstore or web_search: {question}")]
        )
        | FakeListChatModel(responses=['{"datasource": "web_search"}'])
        | JsonOutputParser()
    )
    rag_chain = (
        RAG_PROMPT | FakeListChatModel(responses=["It was finished in 1889."]) | StrOutputParser()
    )

    def web_search(state: AdaptiveState) -> AdaptiveState:
        docs = web_search_tool.invoke({"query": state["question"]})
        web_results = Document(page_content="\n".join(d["content"] for d in docs))
        return {"documents": web_results, "question": state["question"]}

    def generate(state: AdaptiveState) -> AdaptiveState:
        question, documents = state["question"], state["documents"]
        generation = rag_chain.invoke({"context": documents, "question": question})
        return {"documents": documents, "question": question, "generation": generation}

    def route_question(state: AdaptiveState) -> str:
        source = question_router.invoke({"question": state["question"]})
        return "web_search" if source["datasource"] == "web_search" else "vectorstore"

    workflow = StateGraph(AdaptiveState)
    workflow.add_node("web_search", web_search)
    workflow.add_node("generate", generate)
    workflow.add_conditional_edges(START, route_question, {"web_search": "web_search"})
    workflow.add_edge("web_search", "generate")
    workflow.add_edge("generate", END)
    question = "When was the Eiffel Tower finished?"
    output = workflow.compile().invoke({"question": question}, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.question == question
    assert request.answer == output["generation"] == "It was finished in 1889."
    assert [r.text for r in request.references] == [output["documents"].page_content]


def test_hyde_parks_the_retrieval_its_llm_wrote_the_query_for_and_checks_the_answer(
    blog_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """RAG from scratch (HyDE): one root writes a hypothetical passage and retrieves with it
    (its output is documents: a retrieval, not an answer); the next root is invoked with
    those documents as its context and answers."""
    retriever = blog_store.as_retriever(search_kwargs={"k": 2})
    passage = "Task decomposition breaks a complex task into smaller, simpler steps."
    prompt_hyde = ChatPromptTemplate.from_template(
        "Please write a scientific paper passage to answer the question\n"
        "Question: {question}\nPassage:"
    )
    generate_docs_for_retrieval = (
        prompt_hyde | FakeListChatModel(responses=[passage]) | StrOutputParser()
    )
    retrieval_chain = generate_docs_for_retrieval | retriever
    question = "What is task decomposition for LLM agents?"
    retrieved_docs = retrieval_chain.invoke({"question": question}, {"callbacks": [handler]})
    prompt = ChatPromptTemplate.from_template(
        "Answer the following question based on this context:\n\n{context}\n\n"
        "Question: {question}\n"
    )
    final_rag_chain = (
        prompt
        | FakeListChatModel(responses=["It splits hard tasks into steps."])
        | StrOutputParser()
    )
    answer = final_rag_chain.invoke(
        {"context": retrieved_docs, "question": question}, {"callbacks": [handler]}
    )
    [request] = checked_requests(monitor, sink)  # the passage is not checked as an answer
    assert request.question == question
    assert request.answer == answer == "It splits hard tasks into steps."
    assert [r.id for r in request.references] == [d.id for d in retriever.invoke(passage)]
    assert [r.id for r in request.references] == [d.id for d in retrieved_docs]
    assert handler.parked_retrievals == 0  # taken by the answer, not left to count `unpaired`
    assert monitor.stats.snapshot() == {}


def test_a_prompt_that_shows_none_of_the_documents_gives_no_references(
    blog_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """The retrieved documents never reached the model (the app dropped them): the answer is
    not checked against them, it is counted."""
    retriever = blog_store.as_retriever(search_kwargs={"k": 2})
    chain = (
        {"context": retriever, "question": RunnablePassthrough()}
        | RunnableLambda(lambda x: {"question": x["question"], "context": "(none kept)"})
        | RAG_FROM_SCRATCH
        | FakeListChatModel(responses=["I don't know."])
        | StrOutputParser()
    )
    chain.invoke("What is Task Decomposition?", {"callbacks": [handler]})
    assert checked_requests(monitor, sink, count=0) == []
    assert monitor.stats.snapshot() == {"skipped": {"no_references": 1}}


def test_where_no_prompt_can_be_read_the_retrievers_documents_are_taken_and_noted(
    blog_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """An answer written outside LangChain (a provider's SDK called directly) and reported
    with `override_pairing`: no prompt to read, so the outer retriever's documents are the
    last resort, and the request's metadata says so."""
    retriever = blog_store.as_retriever(search_kwargs={"k": 2})

    def answer(inputs: dict[str, Any]) -> str:
        text = "Task decomposition splits a task into steps."  # from the provider's SDK
        override_pairing(answer=text)
        return text

    chain = {"context": retriever, "question": RunnablePassthrough()} | RunnableLambda(answer)
    chain.invoke("What is Task Decomposition?", {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.answer == "Task decomposition splits a task into steps."
    assert [r.id for r in request.references] == [
        d.id for d in retriever.invoke("What is Task Decomposition?")
    ]
    assert request.metadata[FALLBACK_KEY] == "retrievers"


def test_a_run_returning_documents_with_an_answer_the_app_named_is_checked(
    blog_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """Output that is documents is a retrieval, unless the app said what the answer is."""
    retriever = blog_store.as_retriever(search_kwargs={"k": 2})

    def answer_and_sources(question: str) -> list[Document]:
        documents = retriever.invoke(question)
        override_pairing(answer="Task decomposition splits a task into steps.")
        return documents  # the app shows its sources; the answer went out elsewhere

    RunnableLambda(answer_and_sources).invoke(
        "What is Task Decomposition?", {"callbacks": [handler]}
    )
    [request] = checked_requests(monitor, sink)
    assert request.answer == "Task decomposition splits a task into steps."
    assert [r.id for r in request.references] == [
        d.id for d in retriever.invoke("What is Task Decomposition?")
    ]
    assert handler.parked_retrievals == 0


def test_where_no_prompt_can_be_read_nor_a_retriever_ran_every_document_seen_is_taken(
    blog_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """The same, with the documents from a vector store called in a step (no retriever run):
    the documents seen are the last resort, noted as such."""
    question = "What is Task Decomposition?"

    def search(question: str) -> dict[str, Any]:
        return {"question": question, "context": blog_store.similarity_search(question, k=2)}

    def answer(inputs: dict[str, Any]) -> str:
        override_pairing(answer="It splits a task into steps.")
        return "It splits a task into steps."

    (RunnableLambda(search) | RunnableLambda(answer)).invoke(question, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert [r.id for r in request.references] == [
        d.id for d in blog_store.similarity_search(question, k=2)
    ]
    assert request.metadata[FALLBACK_KEY] == "seen"
