"""One rule for documents that overlap, in LlamaIndex: retrieval at two granularities fused
into one query engine (a sentence-sized chunk index and a whole-page index, as in
multi-granularity RAG) shows the answering model the chunk and the page it comes from. The
chunk lies inside the page: the page is the reference, the chunk is counted as contained. Real
LlamaIndex indexes, fusion retriever and query engine over MiniLM; a scripted LLM; `query`,
`aquery` and a streamed query."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever
from llamaindex_llms import PromptedLLM
from long_documents import EIFFEL_PARENT, PARENTS
from results import checked_requests

from refcheck_callbacks import RefCheckMonitor
from refcheck_callbacks.embeddings.llamaindex import SentenceEncoderEmbedding
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.llamaindex.instrument import (
    QueryCapture,
    instrument_llamaindex,
    uninstrument_llamaindex,
)
from refcheck_callbacks.integrations.shared.overlap import CONTAINED, LEFT_OUT_KEY

QUESTION = "How tall is the Eiffel Tower?"
ANSWER = "The Eiffel Tower is 330 metres tall."


@pytest.fixture(scope="module")
def fusion(encoder: SentenceEncoder) -> QueryFusionRetriever:
    embed = SentenceEncoderEmbedding(encoder)
    pages = [Document(text=d.page_content, metadata=d.metadata) for d in PARENTS]
    chunks = VectorStoreIndex.from_documents(
        pages, embed_model=embed, transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0)]
    )
    whole = VectorStoreIndex.from_documents(
        pages, embed_model=embed, transformations=[SentenceSplitter(chunk_size=1024)]
    )
    return QueryFusionRetriever(
        [chunks.as_retriever(similarity_top_k=1), whole.as_retriever(similarity_top_k=1)],
        llm=PromptedLLM(),
        similarity_top_k=2,
        num_queries=1,
        use_async=False,
    )


@pytest.fixture
def capture(monitor: RefCheckMonitor) -> Any:
    capture = instrument_llamaindex(monitor)
    yield capture
    uninstrument_llamaindex()


@pytest.mark.parametrize("how", ["query", "aquery", "stream"])
def test_a_chunk_inside_the_page_it_comes_from_is_one_reference(
    how: str,
    fusion: QueryFusionRetriever,
    capture: QueryCapture,
    monitor: RefCheckMonitor,
    sink: Any,
) -> None:
    llm = PromptedLLM(default=ANSWER)
    engine = RetrieverQueryEngine.from_args(fusion, llm=llm, streaming=how == "stream")
    if how == "aquery":
        response: Any = asyncio.run(engine.aquery(QUESTION))
    else:
        response = engine.query(QUESTION)
    if how == "stream":
        assert "".join(response.response_gen) == ANSWER
    shown = [n.node.get_content() for n in response.source_nodes]
    assert len(shown) == 2 and EIFFEL_PARENT in shown
    assert any(text != EIFFEL_PARENT and text in EIFFEL_PARENT for text in shown)
    [request] = checked_requests(monitor, sink)
    assert [r.text for r in request.references] == [EIFFEL_PARENT]
    assert request.metadata[LEFT_OUT_KEY] == {CONTAINED: 1}
