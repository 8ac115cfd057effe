"""What the LlamaIndex handlers capture: per-query state, pairing, streams, submission.

`QueryCapture` receives the dispatcher's span and event callbacks (through the handlers in
`instrument.py`, which also checks that llama-index-core is installed) and turns each query
root into one `AnswerSink.submit` of a `pairing.CapturedQuery`. The rules it follows are in
`instrument.py` (what is captured when) and `pairing.py` (what is paired).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import (
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.chat_engine.types import BaseChatEngine
from llama_index.core.instrumentation.events.llm import LLMChatStartEvent, LLMCompletionStartEvent
from llama_index.core.instrumentation.events.query import QueryEndEvent, QueryStartEvent
from llama_index.core.instrumentation.events.retrieval import (
    RetrievalEndEvent,
    RetrievalStartEvent,
)
from llama_index.core.instrumentation.events.synthesis import SynthesizeEndEvent
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.workflow import Workflow

from refcheck_callbacks.contract.answers import AnswerSink
from refcheck_callbacks.contract.reasons import DropReason, ErrorReason, SkipReason
from refcheck_callbacks.contract.tracing import current_trace_context
from refcheck_callbacks.integrations.llamaindex import pairing
from refcheck_callbacks.integrations.llamaindex.override import PairingOverrideEvent
from refcheck_callbacks.integrations.shared.run_state import RunStates
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import TraceContext

_QUERY_METHODS = frozenset({"query", "aquery"})
_CHAT_METHODS = frozenset({"chat", "achat", "stream_chat", "astream_chat"})
_WORKFLOW_METHOD = "run"
_SYNTHESIS_METHODS = frozenset({"synthesize", "asynthesize"})
_ROOT_METHODS = _QUERY_METHODS | _CHAT_METHODS | _SYNTHESIS_METHODS | {_WORKFLOW_METHOD}
"""A synthesizer is a root only when called outside any other root (hand-written code that
retrieves, then synthesizes)."""
_RESPONDING_METHODS = _QUERY_METHODS | _CHAT_METHODS | _SYNTHESIS_METHODS
"""Spans whose result reports the nodes its model was shown (`source_nodes`)."""
_EXIT_METHODS = _ROOT_METHODS | _RESPONDING_METHODS
_UNNAMED_MODEL = "unknown"
"""`LLMMetadata.model_name` of LLMs that do not say which model they are."""
_HANDLED = frozenset(
    {
        RetrievalStartEvent,
        RetrievalEndEvent,
        QueryStartEvent,
        QueryEndEvent,
        SynthesizeEndEvent,
        LLMChatStartEvent,
        LLMCompletionStartEvent,
        PairingOverrideEvent,
    }
)
"""The events the capture reads; every other event returns at once."""


class _Stream:
    """A streamed answer, collected token by token as the app reads it."""

    __slots__ = ("done", "parts", "response", "root")

    def __init__(self, root: Hashable, response: Any) -> None:
        self.root = root
        self.response = response
        """The LlamaIndex response whose generator we wrapped (so it is wrapped once)."""
        self.parts: list[str] = []
        self.done = False

    def text(self) -> str:
        return "".join(self.parts)


@dataclass(slots=True)
class _Query:
    """What one query root has captured so far."""

    trace_context: TraceContext | None
    tags: dict[str, Any]
    """The app's `instrument_tags` at query start: they become the request's metadata."""
    question: Any = None
    nodes: list[Any] = field(default_factory=list)
    """`NodeWithScore` of every retrieval under the root, in order, duplicates included."""
    shown: list[Any] = field(default_factory=list)
    """`NodeWithScore` the responses under the root say their model was shown."""
    workflow: bool = False
    """The root is a workflow run (an agent): its result is the answer, its start event
    holds the question."""
    start: dict[str, Any] | None = None
    """A workflow's start event fields, while they leave the question open (several text
    fields, none named as one): the one the first retrieval or query is given decides."""
    answer: str | _Stream | None = None
    override: dict[str, Any] = field(default_factory=dict)
    """What the app said with `override_pairing`."""
    model: str | None = None
    exited: bool = False
    """The root span returned while its streamed answer was still unread."""
    context_retaken: bool = False
    """The context was taken again inside the root's body (when there was none at start)."""


def _method_name(span_id: str) -> str:
    """`ContextChatEngine.stream_chat-<uuid4>` -> `stream_chat` (LlamaIndex's id format)."""
    return span_id.partition("-")[0].rpartition(".")[2]


class QueryCapture:
    """The capture logic shared by our span and event handlers; one per instrumentation.

    Holds the open query roots. `open_queries` and `open_spans` say how much state is held
    (both are 0 when no query is running and no stream is waiting to be read).
    """

    def __init__(self, sink: AnswerSink, stream_ttl: float, max_open_queries: int):
        self.sink = sink
        self.options = (stream_ttl, max_open_queries)
        """What `instrument_llamaindex` built it with (the same again returns it)."""
        self._runs: RunStates[_Query] = RunStates(
            ttl=stream_ttl, max_runs=max_open_queries, on_evict=self._evicted
        )
        self._lock = threading.Lock()
        """Orders a root's exit against the end of its stream (they race across threads)."""
        self._active = True

    @property
    def open_queries(self) -> int:
        return len(self._runs)

    @property
    def open_spans(self) -> int:
        return self._runs.alias_count

    def close(self) -> None:
        """Stop capturing; queries still open are counted as skipped and forgotten."""
        self._active = False
        pending = len(self._runs)
        self._runs = RunStates(ttl=self._runs.ttl, max_runs=self._runs.max_runs)
        if pending:
            self.sink.skipped(SkipReason.UNINSTRUMENTED, pending)

    def sweep(self) -> int:
        """Free queries older than `stream_ttl` now (this also happens as queries start)."""
        return self._runs.sweep()

    # -- spans -----------------------------------------------------------------------------

    def span_entered(
        self,
        span_id: str,
        parent_id: str | None,
        instance: Any,
        arguments: dict[str, Any],
        tags: dict[str, Any] | None,
    ) -> None:
        if parent_id is not None and self._runs.alias(span_id, parent_id) is not None:
            return
        if isinstance(instance, BaseQueryEngine):
            is_root = _method_name(span_id) in _QUERY_METHODS
        elif isinstance(instance, BaseChatEngine):
            is_root = _method_name(span_id) in _CHAT_METHODS
        elif isinstance(instance, Workflow):
            is_root = _method_name(span_id) == _WORKFLOW_METHOD
        elif isinstance(instance, BaseSynthesizer):
            is_root = _method_name(span_id) in _SYNTHESIS_METHODS
        else:
            return
        if is_root:
            query = _Query(trace_context=current_trace_context(), tags=dict(tags or {}))
            if isinstance(instance, Workflow):
                query.workflow = True
                fields = pairing.start_fields(arguments.get("start_event"))
                query.question = pairing.question_of_start(fields)
                query.start = fields if query.question is None and fields else None
            else:
                query.question = pairing.question_of(
                    arguments.get("message", arguments.get("query"))
                )
            self._runs.start(span_id, query)

    def span_exited(self, span_id: str, result: Any) -> None:
        # The name test spares the lookups for the many spans that neither end a root nor
        # report what their model was shown.
        method = _method_name(span_id)
        if method not in _EXIT_METHODS:
            return
        query = self._runs.get(span_id)
        if query is None:
            return
        if method in _RESPONDING_METHODS:
            query.shown.extend(pairing.shown_nodes(result))
        if method not in _ROOT_METHODS or self._runs.root_of(span_id) != span_id:
            return
        if query.workflow:
            answer = pairing.answer_of_result(result)
            query.answer = answer if answer is not None else query.answer
        with self._lock:
            if isinstance(query.answer, _Stream) and not query.answer.done:
                query.exited = True
                return
        self._finish(span_id)

    def span_dropped(self, span_id: str) -> None:
        if self._runs.root_of(span_id) == span_id and self._runs.pop(span_id) is not None:
            self.sink.skipped(SkipReason.QUERY_ERROR)

    # -- events ----------------------------------------------------------------------------

    def event(self, event: Any) -> None:
        kind = type(event)
        if kind not in _HANDLED or event.span_id is None:
            return
        root = self._runs.root_of(event.span_id)
        query = None if root is None else self._runs.get(root)
        if root is None or query is None:
            return
        if (kind is QueryStartEvent and event.span_id == root) or (
            query.trace_context is None and not query.context_retaken
        ):
            # Inside the root's body, a tracer registered after us (OpenInference) has made
            # its span for the query current: prefer it, so the check joins that trace. Its
            # own QueryStartEvent is the place; without one, the first event under it.
            query.context_retaken = True
            query.trace_context = current_trace_context() or query.trace_context
        if kind is RetrievalEndEvent:
            query.nodes.extend(event.nodes)
        elif kind is RetrievalStartEvent or kind is QueryStartEvent:
            asked = event.str_or_query_bundle if kind is RetrievalStartEvent else event.query
            if query.start is not None:
                # The workflow's first retrieval or query: the start field it was given.
                reached = pairing.question_of(asked)
                fields, query.start = query.start, None
                if isinstance(reached, str):
                    query.question = pairing.question_of_start(fields, reached)
            elif kind is QueryStartEvent and query.question is None and not query.workflow:
                query.question = pairing.question_of(asked)
        elif kind is QueryEndEvent or kind is SynthesizeEndEvent:
            self._answered(root, query, event.response)
        elif kind is PairingOverrideEvent:
            query.override.update(event.given())
        elif query.model is None:
            name = event.model_dict.get("model_name")
            query.model = None if name == _UNNAMED_MODEL else name

    def _answered(self, root: Hashable, query: _Query, response: Any) -> None:
        """Record the latest answer; a streamed one is wrapped so we see it as it is read."""
        if isinstance(query.answer, _Stream) and query.answer.response is response:
            return
        if isinstance(response, StreamingResponse | AsyncStreamingResponse):
            if response.response_txt is None and response.response_gen is not None:
                stream = _Stream(root, response)
                wrap = self._tee if isinstance(response, StreamingResponse) else self._atee
                response.response_gen = wrap(response.response_gen, stream)
                query.answer = stream
                return
            query.answer = response.response_txt
        elif isinstance(response, Response):
            query.answer = response.response
        else:
            query.answer = str(response)

    # -- streams ---------------------------------------------------------------------------

    def _tee(self, tokens: Iterator[str], stream: _Stream) -> Iterator[str]:
        ending: SkipReason | None = SkipReason.STREAM_INCOMPLETE
        try:
            for token in tokens:
                stream.parts.append(token)
                yield token
            ending = None
        except Exception:
            ending = SkipReason.STREAM_ERROR
            raise
        finally:
            self._stream_ended(stream, ending)

    async def _atee(self, tokens: AsyncIterator[str], stream: _Stream) -> AsyncIterator[str]:
        ending: SkipReason | None = SkipReason.STREAM_INCOMPLETE
        try:
            async for token in tokens:
                stream.parts.append(token)
                yield token
            ending = None
        except Exception:
            ending = SkipReason.STREAM_ERROR
            raise
        finally:
            self._stream_ended(stream, ending)

    def _stream_ended(self, stream: _Stream, failure: SkipReason | None) -> None:
        """Submit once both the stream is read and its root has returned, whichever is last.

        `failure` is None when the stream was read to its end, else the reason to count:
        closed early (`stream_incomplete`) or raised (`stream_error`).
        """
        try:
            query = self._runs.get(stream.root) if self._active else None
            if query is None or query.answer is not stream:
                return
            if failure is not None:
                if self._runs.pop(stream.root) is not None:
                    self.sink.skipped(failure)
                return
            with self._lock:
                stream.done = True
                exited = query.exited
            if exited:
                self._finish(stream.root)
        except Exception:
            self.record_failure()

    # -- submission ------------------------------------------------------------------------

    def _finish(self, root: Hashable) -> None:
        query = self._runs.pop(root)
        if query is None:
            return
        override = query.override
        if not query.nodes and not query.shown and "references" not in override:
            self.sink.skipped(SkipReason.NO_REFERENCES)
            return
        answer = query.answer.text() if isinstance(query.answer, _Stream) else query.answer
        answer = override.get("answer", answer)
        if answer is None:
            self.sink.skipped(SkipReason.NO_ANSWER)
            return
        self.sink.submit(
            question=override.get("question", query.question),
            # Its nodes become references in the monitor's worker, off the app's thread.
            pairing=pairing.CapturedQuery(
                answer, query.nodes, query.shown, override.get("references"), query.model
            ),
            trace_context=query.trace_context,
            metadata=query.tags,
        )

    def _evicted(self, query: _Query, reason: str) -> None:
        if reason == "overflow":
            self.sink.dropped(DropReason.RUN_OVERFLOW)
        else:
            expired = SkipReason.STREAM_NOT_READ if query.exited else SkipReason.RUN_EXPIRED
            self.sink.skipped(expired)

    def record_failure(self) -> None:
        logger.exception("refcheck: the LlamaIndex handler failed; this query is not checked")
        self.sink.errored(ErrorReason.LLAMAINDEX_CALLBACK)
