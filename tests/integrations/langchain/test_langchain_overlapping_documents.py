"""One rule for documents that overlap: a captured document whose text lies wholly inside
another reference is the same evidence, left out and counted (`contained_in_other_reference`).

`ParentDocumentRetriever` (langchain_classic) searches its vector store for small child chunks
and returns their parents: the vector-store search is captured too, and every child lies
inside the parent the prompt shows, so the answer has one reference, the parent, as it had
before vector-store searches were captured. Real retriever, in-memory vector store over
MiniLM, in-memory docstore, LangChain's text splitter, fake chat model; in `invoke`, `stream`
and `astream_events`."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_chains import rag_chain
from langchain_classic.retrievers import ParentDocumentRetriever
from langchain_core.language_models import FakeListChatModel
from langchain_core.stores import InMemoryStore
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_modes import MODES, run_in
from langchain_text_splitters import RecursiveCharacterTextSplitter
from long_documents import EIFFEL_PARENT, PARENTS
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.embeddings.langchain import SentenceEncoderEmbeddings
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler
from refcheck_callbacks.integrations.shared.overlap import CONTAINED, LEFT_OUT_KEY

QUESTION = "How tall is the Eiffel Tower?"
ANSWER = "The Eiffel Tower is 330 metres tall."
CHILDREN = 4


@pytest.fixture(scope="module")
def parent_retriever(encoder: SentenceEncoder) -> ParentDocumentRetriever:
    """The LangChain how-to's retriever: children of 250 characters in the vector store,
    whole parents in the docstore."""
    retriever = ParentDocumentRetriever(
        vectorstore=InMemoryVectorStore(embedding=SentenceEncoderEmbeddings(encoder)),
        docstore=InMemoryStore(),
        child_splitter=RecursiveCharacterTextSplitter(chunk_size=250, chunk_overlap=20),
        search_kwargs={"k": CHILDREN},
    )
    retriever.add_documents(PARENTS)
    return retriever


@pytest.mark.parametrize("mode", MODES)
def test_parent_document_retriever_gives_the_parent_not_its_children(
    mode: str,
    parent_retriever: ParentDocumentRetriever,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    children = parent_retriever.vectorstore.similarity_search(QUESTION, k=CHILDREN)
    assert len(children) == CHILDREN
    assert all(child.page_content in EIFFEL_PARENT for child in children)
    assert [d.page_content for d in parent_retriever.invoke(QUESTION)] == [EIFFEL_PARENT]

    chain = rag_chain(parent_retriever, FakeListChatModel(responses=[ANSWER]))
    run_in(mode, chain, QUESTION, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert (request.question, request.answer) == (QUESTION, ANSWER)
    assert [r.text for r in request.references] == [EIFFEL_PARENT]
    assert request.references[0].metadata == {"source": "wiki/eiffel"}
    assert request.metadata[LEFT_OUT_KEY] == {CONTAINED: CHILDREN}


def test_documents_that_share_a_sentence_are_both_references(
    vector_store: InMemoryVectorStore,
    handler: RefCheckCallbackHandler,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    """Overlap is decided by the share of a document found inside another, not by a few
    words: two chunks that share their overlapping sentence both count."""
    splitter = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=120)
    chunks = splitter.split_text(EIFFEL_PARENT)[:2]
    store = InMemoryVectorStore(embedding=vector_store.embeddings)
    store.add_texts(chunks)
    retriever = store.as_retriever(search_kwargs={"k": 2})
    chain = rag_chain(retriever, FakeListChatModel(responses=[ANSWER]))
    chain.invoke(QUESTION, {"callbacks": [handler]})
    [request] = checked_requests(monitor, sink)
    assert sorted(r.text for r in request.references) == sorted(chunks)
    assert LEFT_OUT_KEY not in request.metadata
