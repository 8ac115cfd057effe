"""The time each LangChain callback of our handler takes on the app's thread.

A `TimedHandler` is a real `RefCheckCallbackHandler` whose callbacks are timed around the
handler's own code (LangChain's dispatch is outside), so a test or benchmark sees what the
app's thread waits for in each one, by callback name. `hand_written_step` runs the app shape
whose callbacks once grew with the documents (issue 26): a retriever invoked as one root run,
then a chain whose prompt shows the documents as a second one. `OUTPUT_SHAPES` are the runs
whose input or output can be of any size (issue 47): a tool call's arguments, a long answer, a
bare tool request, a wide input.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from langchain_chains import PROMPT, format_docs
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.output_parsers.openai_tools import JsonOutputKeyToolsParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda

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


# -- what a run returns, of any size (issue 47) --------------------------------------------

ANSWER = "The Eiffel Tower is 330 metres tall."
QUESTION = "How tall is the Eiffel Tower?"


def wide_mapping(size: int, answer: str | None = ANSWER) -> dict[str, Any]:
    """`size` scalar fields (texts every other one), then an answer field when `answer`."""
    fields: dict[str, Any] = {f"field_{n}": (f"v{n}" if n % 2 else n) for n in range(size)}
    if answer is not None:
        fields["answer"] = answer
    return fields


def _retrieval() -> Any:
    from langchain_chains import CORPUS, KeywordRetriever
    from langchain_core.runnables import RunnablePassthrough

    return {
        "context": KeywordRetriever(documents=CORPUS) | format_docs,
        "question": RunnablePassthrough(),
    }


def _model(message: AIMessage) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([message]))


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": arguments, "id": "call-1"}


@dataclass(frozen=True)
class SizedRun:
    """A chain, what it is invoked with, and the object of the given size it is handed or
    returns (the payload a linear baseline is measured on)."""

    chain: Any
    inputs: Any
    payload: Any


def tool_call_answer(size: int) -> SizedRun:
    """`with_structured_output`'s shape: a tool call whose arguments (`size` fields and the
    answer) the chain returns as a mapping."""
    arguments = wide_mapping(size)
    model = _model(AIMessage(content="", tool_calls=[_call("Answer", arguments)]))
    parser = JsonOutputKeyToolsParser(key_name="Answer", first_tool_only=True)
    return SizedRun(_retrieval() | PROMPT | model | parser, QUESTION, arguments)


def long_answer(size: int) -> SizedRun:
    """An answer of `size` characters, returned in a mapping beside the question."""
    text = (ANSWER + " ") * (size // (len(ANSWER) + 1))
    chain = _retrieval() | PROMPT | _model(AIMessage(content=text)) | StrOutputParser()
    beside = RunnableLambda(lambda answer: {"answer": answer, "question": QUESTION})
    return SizedRun(chain | beside, QUESTION, text)


def bare_tool_request(size: int) -> SizedRun:
    """A model that only asks for a tool, with `size` arguments: the chain returns the
    message (no answer: skipped `no_answer`)."""
    arguments = wide_mapping(size, answer=None)
    model = _model(AIMessage(content="", tool_calls=[_call("search", arguments)]))
    return SizedRun(_retrieval() | PROMPT | model, QUESTION, arguments)


def wide_input(size: int) -> SizedRun:
    """A chain invoked with a mapping of `size` fields beside its question."""
    inputs = wide_mapping(size, answer=None)
    inputs["question"] = QUESTION
    pick = RunnableLambda(lambda fields: fields["question"])
    chain = pick | _retrieval() | PROMPT | _model(AIMessage(content=ANSWER)) | StrOutputParser()
    return SizedRun(chain, inputs, inputs)


OUTPUT_SHAPES = {
    "tool-call answer": tool_call_answer,
    "long answer": long_answer,
    "bare tool request": bare_tool_request,
    "wide input": wide_input,
}
"""What a root run is handed or returns, by size (fields, or characters for the answer)."""


def slowest_of_run(handler: TimedHandler, run: SizedRun) -> float:
    """The slowest callback of one run, in seconds."""
    handler.reset()
    run.chain.invoke(run.inputs, {"callbacks": [handler]})
    return handler.slowest()[1]
