"""LCEL RAG chains over a small corpus for the LangChain integration tests (real parts only)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser, StrOutputParser
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnablePassthrough

CORPUS = [
    Document(
        id="eiffel",
        page_content="The Eiffel Tower in Paris is 330 metres tall; it was built in 1887-1889.",
    ),
    Document(
        id="python",
        page_content="Python was created by Guido van Rossum and first released in 1991.",
    ),
    Document(
        id="everest",
        page_content="Mount Everest is 8,849 metres high, on the border of Nepal and China.",
    ),
    Document(
        id="amazon",
        page_content="The Amazon river flows through Brazil, Peru and Colombia into the Atlantic.",
    ),
    Document(
        id="moon",
        page_content="Neil Armstrong was the first person to walk on the Moon, in July 1969.",
    ),
    Document(
        id="insulin",
        page_content="Insulin was discovered in 1921 by Frederick Banting and Charles Best.",
    ),
]

PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer from this context only:\n{context}"), ("human", "{question}")]
)


class KeywordRetriever(BaseRetriever):
    """A real retriever without a model: documents sharing a word with the query."""

    documents: list[Document]
    k: int = 2

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = set(query.lower().split())
        hits = [d for d in self.documents if words & set(d.page_content.lower().split())]
        return hits[: self.k]


def format_docs(documents: list[Document]) -> str:
    return "\n".join(d.page_content for d in documents)


def rag_chain(retriever: Runnable[str, list[Document]], llm: BaseChatModel) -> Runnable[str, str]:
    """retriever | prompt | chat model | parser: the LCEL RAG chain of LangChain's docs."""
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | PROMPT
        | llm
        | StrOutputParser()
    )


class ToolCallingFakeChatModel(GenericFakeChatModel):
    """langchain_core's fake chat model, replaying scripted `AIMessage`s (tool calls included),
    that agent builders accept: they bind tools, which the script already knows about."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeChatModel:
        return self

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, method: str = "function_calling", **kwargs: Any
    ) -> Runnable[Any, Any]:
        """`method="json_mode"` as langchain-openai builds it (the model writes JSON text, a
        parser reads it); otherwise langchain_core's tool-calling structured output."""
        if method != "json_mode":
            return super().with_structured_output(schema, **kwargs)
        parser = (
            PydanticOutputParser(pydantic_object=schema)
            if isinstance(schema, type)
            else JsonOutputParser()
        )
        return self.bind(response_format={"type": "json_object"}) | parser

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The scripted message word by word, then its tool calls in one chunk, as providers
        stream them (the base class streams no tool calls)."""
        message = self._generate(messages, stop=stop, **kwargs).generations[0].message
        assert isinstance(message, AIMessage)
        text = message.content if isinstance(message.content, str) else ""
        for token in re.split(r"(\s)", text) if text else ():
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token, id=message.id))
            if run_manager:
                run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk
        if message.tool_calls:
            calls = [
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
                for i, c in enumerate(message.tool_calls)
            ]
            yield ChatGenerationChunk(
                message=AIMessageChunk(content="", id=message.id, tool_call_chunks=calls)
            )


def scripted(*messages: AIMessage | str) -> ToolCallingFakeChatModel:
    return ToolCallingFakeChatModel(
        messages=iter([m if isinstance(m, AIMessage) else AIMessage(m) for m in messages])
    )


def tool_call(tool: str, call_id: str, **args: Any) -> AIMessage:
    """A model turn that asks for one tool call."""
    return AIMessage("", tool_calls=[{"name": tool, "args": args, "id": call_id}])
