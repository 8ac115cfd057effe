"""The time each LangChain callback of our handler takes on the app's thread.

A `TimedHandler` is a real `RefCheckCallbackHandler` whose callbacks are timed around the
handler's own code (LangChain's dispatch is outside), so a test or benchmark sees what the
app's thread waits for in each one, by callback name. `hand_written_step` runs the app shape
whose callbacks once grew with the documents (issue 26): a retriever invoked as one root run,
then a chain whose prompt shows the documents as a second one.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from langchain_chains import PROMPT, format_docs
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.retrievers import BaseRetriever

from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler

CALLBACKS = (
    "on_chain_start",
    "on_chain_end",
    "on_chain_error",
    "on_retriever_start",
    "on_retriever_end",
    "on_retriever_error",
    "on_chat_model_start",
    "on_llm_start",
    "on_llm_end",
    "on_llm_error",
    "on_tool_start",
    "on_tool_end",
    "on_tool_error",
    "on_custom_event",
)


class TimedHandler(RefCheckCallbackHandler):
    """Records, per callback name, every duration measured on the thread that called it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds: defaultdict[str, list[float]] = defaultdict(list)
        self.threads: set[int] = set()

    def slowest(self) -> tuple[str, float]:
        """The slowest callback seen since the last `reset`: its name and seconds."""
        return max(((name, max(t)) for name, t in self.seconds.items()), key=lambda x: x[1])

    def reset(self) -> None:
        self.seconds.clear()
        self.threads.clear()


def _timed(name: str) -> Any:
    def callback(self: TimedHandler, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return getattr(RefCheckCallbackHandler, name)(self, *args, **kwargs)
        finally:
            self.seconds[name].append(time.perf_counter() - started)
            self.threads.add(threading.get_ident())

    callback.__name__ = name
    return callback


for _name in CALLBACKS:
    setattr(TimedHandler, _name, _timed(_name))


def sized_documents(count: int, size: int) -> list[Document]:
    """`count` documents of `size` characters each: distinct starts, then ordinary prose with
    line breaks (what normalising whitespace has to walk through)."""
    prose = "The Eiffel Tower in Paris is 330 metres tall.\nIt was built in 1887-1889. "
    body = prose * (size // len(prose) + 1)
    return [
        Document(id=f"doc-{n}", page_content=(f"Document {n} of the corpus. {body}")[:size])
        for n in range(count)
    ]


class FixedRetriever(BaseRetriever):
    """A real retriever that returns the same documents for any query."""

    documents: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self.documents


def hand_written_step(
    handler: TimedHandler, documents: list[Document], question: str, answer: str
) -> tuple[str, float]:
    """`docs = retriever.invoke(question)`, then `prompt | model | parser` on the documents,
    each its own root run; the slowest callback of the two (name, seconds)."""
    retriever = FixedRetriever(documents=documents)
    chain = PROMPT | FakeListChatModel(responses=[answer]) | StrOutputParser()
    handler.reset()
    found = retriever.invoke(question, {"callbacks": [handler]})
    chain.invoke({"context": format_docs(found), "question": question}, {"callbacks": [handler]})
    return handler.slowest()
