"""Pairing in retrieval shapes: compression and rerank wrappers, multi-query and ensemble
retrievers, a history-aware retriever, parallel branches, and hand-written code that retrieves
in one run and answers in another. Real LangChain parts over the MiniLM vector store."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_chains import CORPUS, PROMPT, format_docs
from langchain_classic.chains import create_history_aware_retriever, create_retrieval_chain
from langchain_classic.chains.combine_documents import create_stuff_documents_chain
from langchain_classic.retrievers import (
    ContextualCompressionRetriever,
    EnsembleRetriever,
    MultiQueryRetriever,
)
from langchain_classic.retrievers.document_compressors import EmbeddingsFilter, LLMChainExtractor
from langchain_community.retrievers import BM25Retriever
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from opentelemetry.sdk.trace import TracerProvider
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor, Tally
from refcheck_callbacks.embeddings.langchain import SentenceEncoderEmbeddings
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler

BOTH = "How high is Mount Everest and how tall is the Eiffel Tower?"


def answer_chain(retriever: Any, answer: str) -> Any:
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | PROMPT
        | FakeListChatModel(responses=[answer])
        | StrOutputParser()
    )


def test_an_embeddings_filter_gives_only_the_documents_it_kept_with_their_ids(
    vector_store: InMemoryVectorStore,
    encoder: SentenceEncoder,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    retriever = ContextualCompressionRetriever(
        base_compressor=EmbeddingsFilter(
            embeddings=SentenceEncoderEmbeddings(encoder), similarity_threshold=0.5
        ),
        base_retriever=vector_store.as_retriever(search_kwargs={"k": 4}),
    )
    kept = retriever.invoke(BOTH)
    assert len(kept) == 2 and all(d.id is None for d in kept)  # the filter drops the ids
    answer_chain(retriever, "Everest is 8,849 m; the tower is 330 m.").invoke(
        BOTH, {"callbacks": [handler]}
    )
    [request] = checked_requests(monitor, sink)
    assert sorted(r.id for r in request.references) == ["eiffel", "everest"]  # 2 of 4 seen
    assert request.question == BOTH


def test_an_llm_extractor_gives_the_extracted_text_the_model_saw(
    vector_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    extractor = LLMChainExtractor.from_llm(
        FakeListChatModel(responses=["The Eiffel Tower in Paris is 330 metres tall", "NO_OUTPUT"])
    )
    retriever = ContextualCompressionRetriever(
        base_compressor=extractor, base_retriever=vector_store.as_retriever(search_kwargs={"k": 2})
    )
    output = answer_chain(retriever, "It is 330 metres tall.").invoke(
        "How tall is the Eiffel Tower?", {"callbacks": [handler]}
    )
    [request] = checked_requests(monitor, sink)
    assert request.answer == output == "It is 330 metres tall."  # not the extractor's text
    assert [r.text for r in request.references] == ["The Eiffel Tower in Paris is 330 metres tall"]


def test_a_multi_query_retriever_gives_its_union_and_the_users_question(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    queries = "How tall is the Eiffel Tower?\nWho created Python?"
    retriever = MultiQueryRetriever.from_llm(
        vector_retriever, FakeListChatModel(responses=[queries])
    )
    answer_chain(retriever, "330 metres; Guido van Rossum.").invoke(
        "Tower height and Python's author?", {"callbacks": [handler]}
    )
    [request] = checked_requests(monitor, sink)
    expected = {d.id for q in queries.split("\n") for d in vector_retriever.invoke(q)}
    assert {r.id for r in request.references} == expected
    assert request.question == "Tower height and Python's author?"
    assert request.answer == "330 metres; Guido van Rossum."


def test_an_ensemble_of_bm25_and_vectors_gives_the_fused_documents(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    bm25 = BM25Retriever.from_documents(CORPUS, k=2)
    retriever = EnsembleRetriever(retrievers=[bm25, vector_retriever], weights=[0.5, 0.5])
    fused = retriever.invoke("Who created Python?")
    answer_chain(retriever, "Guido van Rossum.").invoke(
        "Who created Python?", {"callbacks": [handler]}
    )
    [request] = checked_requests(monitor, sink)
    assert [r.id for r in request.references] == [d.id for d in fused]


def test_a_history_aware_retriever_keeps_the_users_question_and_notes_the_rewrite(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    rewrite = "Standalone: how tall is the Eiffel Tower?"
    rephrase = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("chat_history"), ("human", "{input}"), ("human", "Rephrase.")]
    )
    history_aware = create_history_aware_retriever(
        FakeListChatModel(responses=[rewrite]), vector_retriever, rephrase
    )
    answer_prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Context:\n{context}"),
            MessagesPlaceholder("chat_history"),
            ("human", "{input}"),
        ]
    )
    chain = create_retrieval_chain(
        history_aware,
        create_stuff_documents_chain(
            FakeListChatModel(responses=["It is 330 metres tall."]), answer_prompt
        ),
    )
    history = [HumanMessage("Tell me about the Eiffel Tower."), AIMessage("It is in Paris.")]
    output = chain.invoke(
        {"input": "How tall is it?", "chat_history": history}, {"callbacks": [handler]}
    )
    [request] = checked_requests(monitor, sink)
    assert request.question == "How tall is it?"
    assert request.metadata["refcheck.retrieval_query"] == rewrite
    assert request.answer == output["answer"] == "It is 330 metres tall."
    assert [r.id for r in request.references] == [d.id for d in output["context"]]


def test_parallel_branches_check_the_answer_not_the_follow_up_suggestions(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    suggest = (
        ChatPromptTemplate.from_messages([("human", "Suggest follow-ups to: {question}")])
        # Slower, so that it is the last model to finish.
        | FakeListChatModel(responses=["Ask about its architect next."], sleep=0.02)
        | StrOutputParser()
    )
    answer = PROMPT | FakeListChatModel(responses=["It is 330 metres tall."]) | StrOutputParser()
    chain = {
        "context": vector_retriever | format_docs,
        "question": RunnablePassthrough(),
    } | RunnableParallel(answer=answer, suggestions=suggest)
    chain.batch(["How tall is the Eiffel Tower?"] * 10, {"callbacks": [handler]})
    checked = checked_requests(monitor, sink, count=10)
    assert {r.answer for r in checked} == {"It is 330 metres tall."}


def test_two_hand_written_steps_in_a_plain_function_are_paired(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    chain = PROMPT | FakeListChatModel(responses=["It is 330 metres tall."]) | StrOutputParser()

    def answer(question: str) -> str:
        documents = vector_retriever.invoke(question, {"callbacks": [handler]})
        context = format_docs(documents)
        return chain.invoke({"context": context, "question": question}, {"callbacks": [handler]})

    answer("How tall is the Eiffel Tower?")  # paired by thread
    with TracerProvider().get_tracer("app").start_as_current_span("POST /ask") as span:
        answer("How tall is the Eiffel Tower?")  # paired by trace
    checked = checked_requests(monitor, sink, count=2)
    expected = [d.id for d in vector_retriever.invoke("How tall is the Eiffel Tower?")]
    for request in checked:
        assert request.question == "How tall is the Eiffel Tower?"
        assert [r.id for r in request.references] == expected
    traced = [r for r in checked if r.trace_context is not None]
    assert [r.trace_context.trace_id for r in traced] == [  # type: ignore[union-attr]
        format(span.get_span_context().trace_id, "032x")
    ]
    assert handler.parked_retrievals == 0
    assert monitor.stats.snapshot() == {}


def test_a_run_between_that_does_not_show_the_documents_leaves_them_to_the_answer(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """The parked documents are taken in the worker, by the answer whose prompt shows them: a
    query rewrite in between (its own root run, prompt without them) is counted and skipped."""
    question = "How tall is the Eiffel Tower?"
    rewrite = FakeListChatModel(responses=["Eiffel Tower height"])
    chain = PROMPT | FakeListChatModel(responses=["It is 330 metres tall."]) | StrOutputParser()
    documents = vector_retriever.invoke(question, {"callbacks": [handler]})
    rewrite.invoke(f"Rewrite as a search query: {question}", {"callbacks": [handler]})
    inputs = {"context": format_docs(documents), "question": question}
    chain.invoke(inputs, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert request.answer == "It is 330 metres tall."
    assert [r.id for r in request.references] == [d.id for d in documents]
    assert monitor.stats.snapshot() == {"skipped": {"no_references": 1}}
    assert handler.parked_retrievals == 0


def test_a_sampled_out_answer_still_takes_its_parked_retrieval(
    vector_retriever: BaseRetriever, monitor: RefCheckMonitor
) -> None:
    """An answer the monitor samples out never reaches the worker: its retrieval is taken
    all the same, not counted `unpaired` as well."""
    sampled = RefCheckMonitor(checker=monitor.checker, sample_rate=0.0, exporters=[])
    handler = RefCheckCallbackHandler(sampled, park_ttl=0.05)
    chain = PROMPT | FakeListChatModel(responses=["It is 330 metres tall."]) | StrOutputParser()
    with sampled:
        documents = vector_retriever.invoke("Eiffel Tower?", {"callbacks": [handler]})
        chain.invoke(
            {"context": format_docs(documents), "question": "Eiffel Tower?"},
            {"callbacks": [handler]},
        )
        assert handler.parked_retrievals == 0
        time.sleep(0.1)
        handler.sweep()
        assert sampled.flush(30)
        assert sampled.stats.snapshot() == {"skipped": {"sampled_out": 1}}


def test_concurrent_hand_written_requests_pair_within_their_own_task(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    questions = ["How tall is the Eiffel Tower?", "Who created Python?", "How high is Everest?"]
    answers = {q: f"Answer to {q}" for q in questions}
    chains = {
        q: PROMPT | FakeListChatModel(responses=[a], sleep=0.01) | StrOutputParser()
        for q, a in answers.items()
    }

    async def answer(question: str) -> str:
        documents = await vector_retriever.ainvoke(question, {"callbacks": [handler]})
        await asyncio.sleep(0.01)  # the other requests retrieve meanwhile
        inputs = {"context": format_docs(documents), "question": question}
        return await chains[question].ainvoke(inputs, {"callbacks": [handler]})

    async def main() -> None:
        await asyncio.gather(*(answer(q) for q in questions))

    asyncio.run(main())
    by_question = {r.question: r for r in checked_requests(monitor, sink, count=3)}
    for question in questions:
        request = by_question[question]
        assert request.answer == answers[question]
        assert [r.id for r in request.references] == [
            d.id for d in vector_retriever.invoke(question)
        ]


def test_a_retrieval_no_answer_follows_is_counted_as_unpaired(
    vector_retriever: BaseRetriever, monitor: RefCheckMonitor, sink: Any
) -> None:
    handler = RefCheckCallbackHandler(monitor, park_ttl=0.05)
    vector_retriever.invoke("How tall is the Eiffel Tower?", {"callbacks": [handler]})
    assert handler.parked_retrievals == 1
    time.sleep(0.1)
    handler.sweep()
    assert handler.parked_retrievals == 0
    assert monitor.stats.get(Tally.SKIPPED, "unpaired") == 1
    assert checked_requests(monitor, sink, count=0) == []


def test_a_thread_pool_fan_out_inside_a_chain_gives_the_documents_it_returned(
    vector_retriever: BaseRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    def fan_out(question: str) -> list[Document]:
        # A plain pool: its threads see no LangChain config, so no callback reports these.
        with ThreadPoolExecutor(max_workers=2) as pool:
            found = pool.map(vector_retriever.invoke, [question, "Who created Python?"])
        return [d for documents in found for d in documents]

    chain = answer_chain(RunnableLambda(fan_out), "330 metres; Guido van Rossum.")
    chain.invoke("How tall is the Eiffel Tower?", {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    expected = {d.id for d in fan_out("How tall is the Eiffel Tower?")}
    assert {r.id for r in request.references} == expected
    assert request.question == "How tall is the Eiffel Tower?"
