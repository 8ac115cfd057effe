"""A LangChain RAG app that knows nothing of refcheck: run by tests/instrumentation under
`opentelemetry-instrument`, configured only by environment variables.

A real retriever and prompt, a fake chat model (offline). The app traces its own request with
the OpenTelemetry API, as a traced app does, and prints that trace's id (`trace ID`).
"""

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from opentelemetry import trace

DOCUMENTS = [
    Document(page_content="The Eiffel Tower in Paris is 330 metres tall.", id="eiffel"),
    Document(page_content="It was completed in 1889 for the World's Fair.", id="fair"),
]
PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer from these documents:\n{context}"), ("human", "{question}")]
)


class TowerRetriever(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):
        return DOCUMENTS


def context(documents):
    return "\n\n".join(d.page_content for d in documents)


model = FakeListChatModel(responses=["The Eiffel Tower is 450 metres tall."])
chain = (
    {"context": TowerRetriever() | context, "question": lambda question: question}
    | PROMPT
    | model
    | StrOutputParser()
)

with trace.get_tracer("tower-app").start_as_current_span("answer question") as span:
    print("trace", format(span.get_span_context().trace_id, "032x"), flush=True)
    print("answer", chain.invoke("How tall is the Eiffel Tower?"), flush=True)
