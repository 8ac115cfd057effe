"""The run-tree bookkeeping and submission behind `RefCheckCallbackHandler`.

Split from the handler's callbacks: here a run joins its root's state (`RunStates` aliases),
gets its scope flags (inside a retriever, marked as the answer or the references), and the
root, when it ends, is submitted for pairing in the worker (`root_end`), parked (`parked`) or
counted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from refcheck_callbacks.contract.answers import AnswerSink
from refcheck_callbacks.contract.reasons import DropReason, ErrorReason, SkipReason
from refcheck_callbacks.contract.tracing import current_trace_context
from refcheck_callbacks.integrations.langchain import outputs as read
from refcheck_callbacks.integrations.langchain import pairing
from refcheck_callbacks.integrations.langchain.conversation import EarlierTurns, Turn
from refcheck_callbacks.integrations.langchain.parked import ParkedDocuments, pairing_key
from refcheck_callbacks.integrations.langchain.root_end import RootEnd
from refcheck_callbacks.integrations.langchain.run import (
    ANSWER_TAG,
    IN_ANSWER,
    IN_REFERENCES,
    IN_RETRIEVER,
    REFERENCES_TAG,
    RootRun,
    searched_documents,
)
from refcheck_callbacks.integrations.langchain.trace import attaches_context, instrumentation_span
from refcheck_callbacks.integrations.shared.run_state import RunStates
from refcheck_callbacks.support.logs import logger


class RunTree(BaseCallbackHandler):
    """Per-root state and submission; `RefCheckCallbackHandler` feeds it from callbacks."""

    sink: AnswerSink
    question_key: str | None
    answer_from: pairing.AnswerSource
    output_key: str | None
    answer_node: str | None
    _max_references: int
    _runs: RunStates[RootRun]
    _parked: ParkedDocuments
    _earlier_turns: EarlierTurns
    _roots_with_parent: set[int]
    """Roots LangChain gave a parent we never saw (the handler was attached below the top
    of the tree). Any other run that has a parent is a child, and its end needs no lookup."""

    # Every callback body is inline and guarded by its own try: a decorator would add a
    # Python call to each of the ~20 callbacks of a small chain's run.

    def _enter(
        self, run_id: UUID, parent_run_id: UUID | None, inputs: Any, kwargs: Mapping[str, Any]
    ) -> tuple[RootRun, int]:
        """The state of the root `run_id` belongs to, and the run's scope flags. A run whose
        parent is unknown to us (no parent, or the handler was attached below the top of the
        tree) starts a root."""
        if parent_run_id is not None:
            # Idempotent: `on_chain_start` may have aliased the run already.
            state = self._runs.alias(run_id.int, parent_run_id.int)
            if state is not None:
                if not state.trace_retaken:
                    self._retake_trace(state)
                if state.flags or self.answer_node is not None:
                    return state, self._child_flags(state, run_id, parent_run_id, kwargs)
                return state, 0
        return self._start_root(run_id, parent_run_id, inputs, kwargs), 0

    def _child_flags(
        self, state: RootRun, run_id: UUID, parent_run_id: UUID, kwargs: Mapping[str, Any]
    ) -> int:
        """Scope flags of a child run (inherited, plus `answer_node`), recorded when any, until
        the run ends. (Tags are read when a run ends: they cost nothing at the start.)"""
        flags = state.flags.get(parent_run_id.int, 0)
        if (
            self.answer_node is not None
            and not flags & IN_ANSWER
            and kwargs.get("name") == self.answer_node
        ):
            flags |= IN_ANSWER
            if state.marked is None:
                state.marked = {}
            state.marked[run_id.int] = IN_ANSWER
        if flags:
            state.flags[run_id.int] = flags
        return flags

    def _retake_trace(self, state: RootRun) -> None:
        """At the root's first child: by now any tracer has made its span for the root. Prefer
        it, so the check is a child of the chain's span (see `trace`)."""
        state.trace_retaken = True
        context = instrumentation_span(state.run_id)
        if context is None and state.trace_context is None and attaches_context():
            context = current_trace_context()
        if context is not None:
            state.trace_context = context

    def _start_root(
        self, run_id: UUID, parent_run_id: UUID | None, inputs: Any, kwargs: Mapping[str, Any]
    ) -> RootRun:
        context = current_trace_context()
        state = RootRun(run_id, kwargs.get("name"), context, pairing_key(context))
        if parent_run_id is not None:
            self._roots_with_parent.add(state.key)
        metadata = kwargs.get("metadata")
        if metadata:
            state.conversation = metadata.get("thread_id")
        if self.question_key is not None:
            state.input_question = read.value_at(inputs, self.question_key)
        else:
            state.input_question = inputs
        self._add_documents(state, inputs)  # passed in: `chain.invoke({"context": docs, ...})`
        self._runs.start(state.key, state)
        return state

    def _add_documents(self, state: RootRun, value: Any) -> None:
        """Keep the documents a run's input or output holds (a bounded scan)."""
        for group in read.document_groups(value):
            state.add_documents(group, self._max_references, outermost=False)

    def _end(self, run_id: UUID, parent_run_id: UUID | None) -> RootRun | None:
        """The state of `run_id` when it is a root (now freed); None for child runs."""
        key = run_id.int
        if parent_run_id is not None and key not in self._roots_with_parent:
            return None
        return self._free(key)

    def _free(self, key: int) -> RootRun | None:
        self._roots_with_parent.discard(key)
        return self._runs.pop(key)

    def _child_ended(self, state: RootRun, key: int, output: Any, tags: Any) -> None:
        """A child run's output: documents it holds, and the marked runs' outputs. A run
        tagged `refcheck:answer` or `refcheck:references` passes the tag to its children, which
        end first: the last to end, the outermost, is the one kept."""
        if state.flags:
            state.flags.pop(key, None)
        self._add_documents(state, output)
        marks = state.marked.pop(key, 0) if state.marked else 0
        if tags:
            marks |= (IN_ANSWER if ANSWER_TAG in tags else 0) | (
                IN_REFERENCES if REFERENCES_TAG in tags else 0
            )
        if marks & IN_ANSWER:
            state.answer_output = (output,)
        if marks & IN_REFERENCES:
            state.references_output = output if isinstance(output, list) else [output]

    # -- submitting -----------------------------------------------------------------------

    def _finish(self, state: RootRun, output: Any, end_inputs: Any) -> None:
        """Submit the root for pairing in the worker (`root_end.RootEnd`), park its documents
        when no model of it answered, or count why it has neither. Reads no document, prompt
        or output: what it looks at is the run's shape (which generations ran, whether it
        holds documents), so its time does not grow with what the run returned; the answer and
        the question are read in the worker."""
        if state.open_generations:
            # The root ended while a generation was still streaming: its consumer stopped
            # iterating, so the answer is a fragment nobody saw in full.
            self.sink.skipped(SkipReason.ANSWER_INCOMPLETE)
            return
        if end_inputs is not None:
            # Streaming runs report their input only when they end.
            self._add_documents(state, end_inputs)
        # A run whose output is documents is a retrieval, even where an LLM wrote its query
        # (HyDE): its documents wait for the answer that follows. Unless the app said where
        # the answer is.
        retrieval = (
            read.is_documents(output)
            and state.answer_output is None
            and state.override.get("answer") is None
        )
        everything = (
            [] if retrieval else [g for g in state.generations if not g.flags & IN_RETRIEVER]
        )
        if not everything and state.override.get("answer") is None:
            # No model answered (or the run was a retrieval): its documents wait for one.
            documents = state.documents or state.extra_documents
            if not documents and retrieval:
                documents = read.documents_in(output, self._max_references)
            if documents:
                self._parked.park(state.pair_key, documents)
            else:
                self.sink.skipped(SkipReason.NO_REFERENCES)
            return
        earlier: tuple[Any, ...] = ()
        if state.conversation is not None:
            # The turn's documents, its vector-store searches' too (a tool that searches and
            # prints what it found) but those a retriever returned as they were, for the
            # turns that follow.
            searched = searched_documents(state.searches, state.document_lists or {})
            earlier = self._earlier_turns.turn(
                state.conversation, [*state.documents, *state.extra_documents, *searched]
            )
        # A run without a retrieval of its own may answer one parked earlier, also when its
        # documents came in through its input (the second root of HyDE): the worker takes
        # those its prompt shows.
        parked = None
        if not state.documents and (everything or state.extra_documents):
            parked = self._parked.peek(state.pair_key)
        own_sources = pairing.has_sources(state, everything)
        if parked is None and not own_sources and not earlier:
            self.sink.skipped(SkipReason.NO_REFERENCES)
            return
        captured = RootEnd(
            state,
            output,
            end_inputs,
            self.answer_from,
            self.output_key,
            self.question_key,
            parked,
            earlier,
            None if state.conversation is None else Turn(self._earlier_turns, state.conversation),
        )
        submitted = self.sink.submit(pairing=captured, trace_context=state.trace_context)
        if not submitted and parked is not None and not own_sources:
            # Sampled out or dropped (and counted): the answer had its retrieval all the same,
            # which is not left to be counted `unpaired` as well. (One with sources of its own
            # may not have been shown the parked documents: they are left to the next answer.)
            parked.take()

    def _unpaired(self, count: int) -> None:
        self.sink.skipped(SkipReason.UNPAIRED, count)

    def _evicted(self, state: RootRun, why: str) -> None:
        self._roots_with_parent.discard(state.key)
        if why == "expired":
            self.sink.skipped(SkipReason.RUN_EXPIRED)
        else:
            self.sink.dropped(DropReason.RUN_OVERFLOW)

    def _failed(self, callback: str) -> None:
        # A broken sink cannot count its own failure; the log line still tells the user.
        with contextlib.suppress(Exception):
            self.sink.errored(ErrorReason.LANGCHAIN_CALLBACK)
        logger.exception("refcheck: LangChain callback %s failed; the run is not checked", callback)
