"""One LangChain root run: what its run tree produced, gathered from callbacks.

The handler fills a `RootRun` from callbacks on many threads; each mutation is one atomic
operation (an attribute store, `list.append` / `extend`, a dict set or pop), so the threads of
one run need no lock of their own. When the root ends, `pairing` reads it to decide the
question, the answer and the references (see that module for the rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from langchain_core.documents import Document
from langchain_core.messages import ToolMessage

from refcheck_callbacks.integrations.langchain import outputs as read
from refcheck_callbacks.integrations.shared.prompt_match import Prompt
from refcheck_callbacks.types import TraceContext

# Scope flags of a run, inherited by its descendants (kept only for runs that have one).
IN_RETRIEVER = 1
"""Inside a retriever run: its LLM calls rewrite queries or compress, they do not answer."""
IN_ANSWER = 2
"""Inside the run marked as the answer (`answer_node=`, or the tag `refcheck:answer`)."""
IN_REFERENCES = 4
"""Inside the run marked as giving the references (the tag `refcheck:references`)."""

ANSWER_TAG = "refcheck:answer"
REFERENCES_TAG = "refcheck:references"
MAX_GENERATIONS = 32
"""Generations kept per root (the latest): an agent loop may call its model many times."""
MAX_SEARCHES = 32
"""Vector-store searches kept per root (the first): a search's result list each."""


class Generation:
    """One finished LLM or chat model call: what it wrote and what it was given."""

    __slots__ = (
        "_prompt",
        "_tool_prompt",
        "asks_tools",
        "flags",
        "generation",
        "inputs",
        "response",
        "start",
        "text",
    )

    def __init__(
        self,
        generation: Any,
        response: Any,
        start: Mapping[str, Any],
        inputs: Any,
        flags: int,
        asks_tools: bool = False,
    ) -> None:
        self.generation = generation
        self.response = response
        self.start = start
        """The keyword arguments its run started with (they name the model)."""
        self.inputs = inputs
        """Its prompt: the chat messages, or the prompt strings of a text model."""
        self.flags = flags
        self.asks_tools = asks_tools
        """It called tools: an agent's step, or a structured answer in a tool call's
        arguments (`with_structured_output`), never an answer as text."""
        self.text: str = generation.text
        self._prompt: Prompt | None = None
        self._tool_prompt: Prompt | None = None

    @property
    def message(self) -> Any:
        """The chat message it wrote (None for a text model)."""
        return getattr(self.generation, "message", None)

    @property
    def prompt(self) -> Prompt:
        """Its prompt read for matching (the messages' contents, or the prompt strings; empty
        when it has no text), read once: pairing asks about it several times, in the worker
        and never on the app's thread."""
        if self._prompt is None:
            parts = (
                [m if isinstance(m, str) else (read.content_of(m) or "") for m in self.inputs]
                if isinstance(self.inputs, list)
                else []
            )
            self._prompt = Prompt("\n".join(parts))
        return self._prompt

    @property
    def tool_prompt(self) -> Prompt:
        """The tool results of its prompt, read for matching (empty when it has none): where
        a tool's own model wrote what this one was shown (see `sources`). Read once, in the
        worker."""
        if self._tool_prompt is None:
            results = (
                [m for m in self.inputs if isinstance(m, ToolMessage)]
                if isinstance(self.inputs, list)
                else []
            )
            self._tool_prompt = Prompt("\n".join(read.content_of(m) or "" for m in results))
        return self._tool_prompt

    @property
    def model(self) -> str | None:
        return read.response_model(self.generation) or read.model_name(self.start)

    @property
    def response_id(self) -> str | None:
        return read.response_id(self.generation, self.response)


def searched_documents(searches: list[Any], kept: Mapping[int, Any]) -> list[Any]:
    """The documents of vector-store searches, less the lists a retriever returned as they
    were (a vector-store retriever returns its search's list): `kept` is the run's
    `document_lists`."""
    return [d for found in searches if kept.get(id(found), (None,))[0] is not found for d in found]


class RootRun:
    __slots__ = (
        "answer_output",
        "conversation",
        "document_lists",
        "documents",
        "extra_documents",
        "flags",
        "generations",
        "input_question",
        "key",
        "marked",
        "name",
        "open_generations",
        "override",
        "pair_key",
        "query",
        "references_output",
        "run_id",
        "searches",
        "trace_context",
        "trace_retaken",
    )

    def __init__(
        self,
        run_id: UUID,
        name: str | None,
        trace_context: TraceContext | None,
        pair_key: Any,
    ) -> None:
        self.run_id = run_id
        self.key = run_id.int
        self.name = name
        self.trace_context = trace_context
        self.trace_retaken = False
        """The trace context was looked up again inside the run (see the handler)."""
        self.pair_key = pair_key
        """Where a retrieval without an answer waits for a later answer (see `parked`)."""
        self.input_question: Any = None
        """The root input (or its value under the handler's `question_key`)."""
        self.query: str | None = None
        """The first query of an outermost retriever."""
        self.documents: list[Any] = []
        """The outermost retrievers' documents (a compression or rerank wrapper's output, not
        its base retriever's), as LangChain returned them (read in the worker)."""
        self.document_lists: dict[int, tuple[Any, int]] | None = None
        """The document groups kept, by `id`, with their length then (held, so that no other
        object takes the id)."""
        self.extra_documents: list[Any] = []
        """Documents seen elsewhere in the tree: the root's own input, inner retrievers, chain
        outputs and graph state values (a vector store called in a graph node, a `Document`
        built in one), tool artifacts; used where they reached the prompt."""
        self.searches: list[Any] = []
        """The result lists of vector-store searches made during the run (see
        `vector_search`), as they were returned."""
        self.conversation: Any = None
        """The conversation the run is a turn of (LangGraph's `thread_id`), if any."""
        self.generations: list[Generation] = []
        self.open_generations: dict[int, tuple[Mapping[str, Any], Any, int]] = {}
        """LLM runs started and not yet ended: start keyword arguments, prompt, scope flags."""
        self.flags: dict[int, int] = {}
        """Scope flags of the runs that have any, by run key."""
        self.marked: dict[int, int] | None = None
        """The outermost runs marked as the answer or the references, until they end."""
        self.answer_output: tuple[Any] | None = None
        """The output of the outermost run marked as the answer, once it ended."""
        self.references_output: list[Any] | None = None
        """The output of the outermost run marked as giving the references, once it ended."""
        self.override: dict[str, Any] = {}
        """What the app said with `override_pairing` (question, answer, references)."""

    def add_documents(self, group: Any, limit: int, outermost: bool) -> None:
        """Keep a group of documents (a list or tuple of them, or one `Document`), up to
        `limit` in each list for the whole run. A group already kept (a retriever's output
        passing through a graph's nodes and channels) is skipped, save for documents a node
        appended to its list since (a web-search result added to the graded documents)."""
        if self.document_lists is None:
            self.document_lists = {}
        many = type(group) is list or not isinstance(group, Document)
        size = len(group) if many else 1
        kept = self.document_lists.get(id(group))
        if kept is not None and kept[0] is group:
            if kept[1] >= size:
                return
            start = kept[1]
        else:
            start = 0
        self.document_lists[id(group)] = (group, size)
        into = self.documents if outermost else self.extra_documents
        room = limit - len(into)
        if room <= 0:
            return
        if many:
            into.extend(group[start : start + room])
        else:
            into.append(group)

    def add_generation(self, generation: Generation) -> None:
        self.generations.append(generation)
        if len(self.generations) > MAX_GENERATIONS:
            del self.generations[0]

    def metadata(self) -> dict[str, Any]:
        """Ids that let a result be found next to the run in LangChain tracing tools."""
        metadata: dict[str, Any] = {"langchain.run_id": str(self.run_id)}
        if self.name:
            metadata["langchain.run_name"] = self.name
        return metadata
