"""LangChain integration: one callback handler that pairs every answer with what its model saw.

LangChain reports a tree of runs (`run_id`, `parent_run_id`) from the caller's thread, its
worker threads and asyncio tasks. The handler keeps one small state per root run in
`RunStates` (children are aliases of their root): retriever runs, chain outputs and tool
artifacts add documents, LLM runs add generations with their prompts, and when the root ends
the handler submits what it captured to its `AnswerSink` (the monitor) as a
`pairing.CapturedAnswer`, whose rules decide the question, the answer and the references. The
callback path only copies references to objects and enqueues; matching documents against the
prompt runs in the monitor's worker.
Every body is guarded, so nothing we do can raise into the chain.

Attach it per call with `config={"callbacks": [handler]}`, or to every chain with
`instrument_langchain(monitor)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from refcheck_callbacks.support.extras import require

require("langchain_core", "langchain")

from langchain_core.messages import BaseMessage  # noqa: E402

from refcheck_callbacks.contract.answers import AnswerSink  # noqa: E402
from refcheck_callbacks.integrations.langchain import outputs as read  # noqa: E402
from refcheck_callbacks.integrations.langchain import pairing, vector_search  # noqa: E402
from refcheck_callbacks.integrations.langchain.conversation import EarlierTurns  # noqa: E402
from refcheck_callbacks.integrations.langchain.override import EVENT as OVERRIDE_EVENT  # noqa: E402
from refcheck_callbacks.integrations.langchain.parked import ParkedDocuments  # noqa: E402
from refcheck_callbacks.integrations.langchain.run import (  # noqa: E402
    ANSWER_TAG,
    IN_RETRIEVER,
    MAX_SEARCHES,
    REFERENCES_TAG,
    Generation,
    RootRun,
)
from refcheck_callbacks.integrations.langchain.tree import RunTree  # noqa: E402
from refcheck_callbacks.integrations.shared.run_state import RunStates  # noqa: E402


class RefCheckCallbackHandler(RunTree, vector_search.SearchListener):
    """Captures question, answer and references of each root run and submits them for checking.

    Args:
        sink: where answers go: a `RefCheckMonitor` (its `submit` never blocks).
        question_key: take the question from this key of the root run's input dict (text or a
            message list); by default the root input (see `pairing`).
        answer_from: "output" (default): the root output when it is text, a message or a
            graph's messages (see `pairing`), else the answering generation; "llm": the text
            of the answering generation (what the model wrote, before any post-processing).
        output_key: the key of the root output dict that holds the answer.
        answer_node: the name of the run (a LangGraph node, or a runnable's `run_name`)
            whose output is the answer, when the root's output is not.
        run_ttl: seconds after which a root run that never ended (an abandoned stream) is
            freed and counted as skipped `run_expired`.
        max_runs: root runs tracked at once; the oldest beyond it is dropped (`run_overflow`).
        park_ttl: seconds a retrieval without an answer waits for a later run's answer in the
            same request (`parked`); unclaimed it is counted as skipped `unpaired`.
    """

    raise_error = False
    run_inline = True
    """Called directly on the caller's thread or task: our work is O(1), a thread hop is not."""

    def __init__(
        self,
        sink: AnswerSink,
        *,
        question_key: str | None = None,
        answer_from: pairing.AnswerSource = "output",
        output_key: str | None = None,
        answer_node: str | None = None,
        run_ttl: float = 600.0,
        max_runs: int = 10_000,
        park_ttl: float = 60.0,
    ) -> None:
        if answer_from not in ("llm", "output"):
            raise ValueError(f"answer_from must be 'llm' or 'output', not {answer_from!r}")
        self.sink = sink
        self.question_key = question_key
        self.answer_from = answer_from
        self.output_key = output_key
        self.answer_node = answer_node
        self._max_references = sink.limits.max_references
        # Keyed by `UUID.int`: hashing an int is C code, hashing a UUID is Python code, and
        # each callback hashes its ids several times.
        self._runs: RunStates[RootRun] = RunStates(
            ttl=run_ttl, max_runs=max_runs, on_evict=self._evicted
        )
        self._parked = ParkedDocuments(self._unpaired, ttl=park_ttl, max_keys=max_runs)
        self._earlier_turns = EarlierTurns(self._max_references, max_conversations=max_runs)
        self._roots_with_parent = set()
        vector_search.install()

    # LangChain reads an `ignore_*` flag before every event it dispatches to a handler; the
    # base class answers through properties, plain class attributes answer faster. Tool
    # events share `ignore_agent`, and we need them: a retriever inside a tool is a child.
    ignore_llm = False
    ignore_chain = False
    ignore_agent = False
    ignore_retriever = False
    ignore_chat_model = False
    ignore_retry = True
    ignore_custom_event = False
    """Custom events carry `override_pairing`."""

    @property
    def pending_runs(self) -> int:
        """Root runs started and not yet ended (nor expired)."""
        return len(self._runs)

    @property
    def parked_retrievals(self) -> int:
        """Requests whose retrievals wait for a later answer (see `parked`)."""
        return len(self._parked)

    def sweep(self) -> int:
        """Free root runs older than `run_ttl` now, and count retrievals parked longer than
        `park_ttl` as unpaired (both also happen as new runs start)."""
        self._parked.sweep()
        return self._runs.sweep()

    # Every callback body is inline and guarded by its own try: a decorator would add a
    # Python call to each of the ~20 callbacks of a small chain's run.

    # -- chains and tools -----------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            # The child fast path of `_enter`, inline: chain starts are half of all callbacks.
            if parent_run_id is not None:
                state = self._runs.alias(run_id.int, parent_run_id.int)
                if state is not None:
                    if not state.trace_retaken or state.flags or self.answer_node is not None:
                        self._enter(run_id, parent_run_id, inputs, kwargs)
                    return
            self._enter(run_id, parent_run_id, inputs, kwargs)
        except Exception:
            self._failed("on_chain_start")

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._run_ended(outputs, run_id, parent_run_id, kwargs, "on_chain_end")

    def _run_ended(
        self,
        output: Any,
        run_id: UUID,
        parent_run_id: UUID | None,
        kwargs: Mapping[str, Any],
        name: str,
    ) -> None:
        try:
            key = run_id.int
            if parent_run_id is None or key in self._roots_with_parent:
                state = self._free(key)
                if state is not None:
                    self._finish(state, output, kwargs.get("inputs"))
                return
            tags = kwargs.get("tags")
            if (
                isinstance(output, str)
                and self.answer_node is None
                and not (tags and (ANSWER_TAG in tags or REFERENCES_TAG in tags))
            ):
                return  # most steps end with untagged text: no documents in it, nothing to do
            state = self._runs.get(key)
            if state is not None:
                self._child_ended(state, key, output, tags)
        except Exception:
            self._failed(name)

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._ended_with_error(error, run_id, parent_run_id)

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            self._enter(run_id, parent_run_id, kwargs.get("inputs"), kwargs)
        except Exception:
            self._failed("on_tool_start")

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._run_ended(output, run_id, parent_run_id, kwargs, "on_tool_end")

    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._ended_with_error(error, run_id, parent_run_id)

    def _ended_with_error(
        self, error: BaseException, run_id: UUID, parent_run_id: UUID | None
    ) -> None:
        """A chain, tool or retriever failed: a root that fails is counted, not checked."""
        try:
            if self._end(run_id, parent_run_id) is not None:
                self.sink.skipped(read.error_reason(error))
        except Exception:
            self._failed("on_error")

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            if name == OVERRIDE_EVENT and (state := self._runs.get(run_id.int)) is not None:
                state.override.update(pairing.overrides(data))
        except Exception:
            self._failed("on_custom_event")

    # -- retrievers -----------------------------------------------------------------------

    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            state, flags = self._enter(run_id, parent_run_id, query, kwargs)
            state.flags[run_id.int] = flags | IN_RETRIEVER
            if state.query is None and not flags & IN_RETRIEVER and isinstance(query, str):
                state.query = query
        except Exception:
            self._failed("on_retriever_start")

    def on_retriever_end(
        self,
        documents: Sequence[Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            state = self._runs.get(run_id.int)
            if state is None:
                return
            outermost = parent_run_id is None or not (
                state.flags.get(parent_run_id.int, 0) & IN_RETRIEVER
            )
            state.add_documents(documents, self._max_references, outermost)
            if state.run_id == run_id:
                self._free(state.key)
                self._finish(state, None, None)
            else:
                state.flags.pop(run_id.int, None)
                tags = kwargs.get("tags")
                if state.marked or (tags and REFERENCES_TAG in tags):
                    self._child_ended(state, run_id.int, list(documents), tags)
        except Exception:
            self._failed("on_retriever_end")

    def on_retriever_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._ended_with_error(error, run_id, parent_run_id)

    def searched(self, run_id: UUID, found: Any) -> None:
        """A vector-store search returned `found` during the run `run_id` (`vector_search`):
        kept, unread, as a candidate of its root."""
        try:
            state = self._runs.get(run_id.int)
            if state is not None and isinstance(found, list) and found:
                searches = state.searches
                if len(searches) < MAX_SEARCHES:
                    searches.append(found)
        except Exception:
            self._failed("searched")

    # -- LLMs and chat models -------------------------------------------------------------

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._generation_started(run_id, parent_run_id, prompts, kwargs)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self._generation_started(run_id, parent_run_id, messages[0] if messages else [], kwargs)

    def _generation_started(
        self, run_id: UUID, parent_run_id: UUID | None, prompt: Any, kwargs: Mapping[str, Any]
    ) -> None:
        try:
            state, flags = self._enter(run_id, parent_run_id, None, kwargs)
            state.open_generations[run_id.int] = (kwargs, prompt, flags)
        except Exception:
            self._failed("on_llm_start")

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            state = self._runs.get(run_id.int)
            if state is None:
                return
            start, prompt, flags = state.open_generations.pop(run_id.int, ({}, None, 0))
            if flags:
                state.flags.pop(run_id.int, None)
            generation = read.first_generation(response)
            if generation is not None:
                asks_tools = read.requests_tools(generation)
                state.add_generation(
                    Generation(generation, response, start, prompt, flags, asks_tools)
                )
            if state.run_id == run_id:
                self._free(state.key)
                self._finish(state, None, None)
        except Exception:
            self._failed("on_llm_end")

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            state = self._runs.get(run_id.int)
            if state is None:
                return
            state.open_generations.pop(run_id.int, None)
            if state.run_id == run_id:
                self._free(state.key)
                self.sink.skipped(read.error_reason(error))
        except Exception:
            self._failed("on_llm_error")
