"""End to end with the other Python instrumentations: OpenLLMetry's LangChain tracer, and
LlamaIndex traced by OpenInference, each exporting OTLP/HTTP to `refcheck collect`. The planted
contradiction comes back as a Contradiction on the app's trace."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_chains import CORPUS, KeywordRetriever, rag_chain
from langchain_core.language_models import FakeListChatModel
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from otlp_export import instrumented, openllmetry_instrumented, traces_done, wait_for
from results import ResultSink

from refcheck_callbacks import Label
from refcheck_callbacks.embeddings.llamaindex import SentenceEncoderEmbedding
from refcheck_callbacks.embeddings.minilm import SentenceEncoder
from refcheck_callbacks.integrations.otlp.launch import Receiver

QUESTION = "How tall is the Eiffel Tower?"
CONTRADICTING = "The Eiffel Tower is 450 metres tall."
EIFFEL = "The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889."


def checked(receiver: Receiver, app: TracerProvider, sink: ResultSink) -> Any:
    assert app.force_flush(10)
    wait_for(traces_done(receiver, 1))
    assert receiver.sink.flush(60)
    [result] = sink.results
    return result


def test_openllmetry_langchain(
    receiver: Receiver, app_tracing: TracerProvider, sink: ResultSink
) -> None:
    with openllmetry_instrumented(app_tracing):
        chain = rag_chain(
            KeywordRetriever(documents=CORPUS), FakeListChatModel(responses=[CONTRADICTING])
        )
        assert chain.invoke(QUESTION) == CONTRADICTING
    result = checked(receiver, app_tracing, sink)
    assert result.request.question == QUESTION
    assert result.request.answer == CONTRADICTING
    assert [r.text for r in result.request.references] == [
        CORPUS[0].page_content,
        CORPUS[2].page_content,
    ]
    assert result.request.metadata["refcheck.trace.convention"] == "openllmetry"
    assert [v.label for v in result.verdicts] == [Label.CONTRADICTION]


class FixedAnswerLLM(CustomLLM):
    """A LlamaIndex LLM that answers one text whatever the prompt (the planted answer)."""

    answer: str

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="fixed-answer")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.answer)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        yield CompletionResponse(text=self.answer, delta=self.answer)


@pytest.fixture
def llamaindex_traced(app_tracing: TracerProvider) -> Iterator[TracerProvider]:
    with instrumented(LlamaIndexInstrumentor(), app_tracing) as provider:
        yield provider


def test_llamaindex_openinference(
    receiver: Receiver,
    llamaindex_traced: TracerProvider,
    sink: ResultSink,
    encoder: SentenceEncoder,
) -> None:
    documents = [
        Document(text=EIFFEL),
        Document(text="Mount Everest is 8,849 metres high, on the border of Nepal and China."),
    ]
    index = VectorStoreIndex.from_documents(
        documents, embed_model=SentenceEncoderEmbedding(encoder)
    )
    engine = index.as_query_engine(llm=FixedAnswerLLM(answer=CONTRADICTING), similarity_top_k=1)
    assert str(engine.query(QUESTION)) == CONTRADICTING
    result = checked(receiver, llamaindex_traced, sink)
    assert result.request.question == QUESTION
    assert result.request.answer == CONTRADICTING
    assert [r.text for r in result.request.references] == [EIFFEL]
    assert [v.label for v in result.verdicts] == [Label.CONTRADICTION]
