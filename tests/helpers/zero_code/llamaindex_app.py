"""A LlamaIndex RAG app that knows nothing of refcheck: run by tests/instrumentation under
`opentelemetry-instrument`, configured only by environment variables.

A real `VectorStoreIndex` and query engine over mock embeddings, and a fake LLM (offline). The
app traces its own request with the OpenTelemetry API and prints that trace's id (`trace ID`).
"""

from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from opentelemetry import trace

ANSWER = "The Eiffel Tower is 450 metres tall."


class FixedAnswerLLM(CustomLLM):
    @property
    def metadata(self):
        return LLMMetadata(model_name="fixed-answer")

    @llm_completion_callback()
    def complete(self, prompt, formatted=False, **kwargs):
        return CompletionResponse(text=ANSWER)

    @llm_completion_callback()
    def stream_complete(self, prompt, formatted=False, **kwargs):
        yield CompletionResponse(text=ANSWER, delta=ANSWER)


Settings.embed_model = MockEmbedding(embed_dim=8)
Settings.llm = FixedAnswerLLM()
index = VectorStoreIndex.from_documents(
    [Document(text="The Eiffel Tower in Paris is 330 metres tall.", doc_id="eiffel")]
)
engine = index.as_query_engine(similarity_top_k=1)

with trace.get_tracer("tower-app").start_as_current_span("answer question") as span:
    print("trace", format(span.get_span_context().trace_id, "032x"), flush=True)
    print("answer", engine.query("How tall is the Eiffel Tower?"), flush=True)
