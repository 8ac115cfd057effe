"""LlamaIndex integration: capture every query and chat turn through the instrumentation dispatcher.

    from refcheck_callbacks.integrations.llamaindex import instrument_llamaindex
    instrument_llamaindex(monitor)          # every query engine and chat engine, from now on

LlamaIndex reports work as a tree of spans (one per decorated method call) and events that
carry the id of the span they happened in. The outermost `query` / `aquery` of a query
engine, or `chat` / `achat` / `stream_chat` / `astream_chat` of a chat engine, is a *query
root*; every span opened beneath it is aliased to it (`RunStates`). Then:

- `RetrievalEndEvent` anywhere under the root adds its nodes: several retrievals (routers,
  sub-questions, chat context + condense) give the union, deduplicated by node id;
- the question is the first `QueryStartEvent` under the root, or the chat message;
- the answer is the last `QueryEndEvent` / `SynthesizeEndEvent` response under the root;
- the model is the first named one an LLM call under the root reports, and the app's
  `instrument_tags` at the root's start become the request's metadata;
- when the root span exits, the answer is submitted to the monitor. A streamed answer is
  submitted once the app has read the stream to its end; a stream abandoned half-way or
  failing is counted, one never read is freed after `stream_ttl` and counted.

The OpenTelemetry context is taken when the root starts, and again inside its body (its
`QueryStartEvent`, or its first event when there was none at the start), where a tracer's
span for the query is current whatever the order the handlers were registered in.

Every handler body is O(1) in the app's work (O(nodes) for a retrieval), takes no I/O, is
guarded, and counts what it skips or fails in `monitor.stats`.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import AsyncIterator, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

from refcheck_callbacks._optional import MissingExtraError
from refcheck_callbacks.integrations.run_state import RunStates
from refcheck_callbacks.logs import logger
from refcheck_callbacks.monitor import RefCheckMonitor
from refcheck_callbacks.stats import Tally
from refcheck_callbacks.tracing import current_trace_context
from refcheck_callbacks.types import TraceContext

try:
    from llama_index.core.base.base_query_engine import BaseQueryEngine
    from llama_index.core.base.response.schema import (
        AsyncStreamingResponse,
        Response,
        StreamingResponse,
    )
    from llama_index.core.chat_engine.types import BaseChatEngine
    from llama_index.core.instrumentation import Dispatcher, get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index.core.instrumentation.events.llm import (
        LLMChatStartEvent,
        LLMCompletionStartEvent,
    )
    from llama_index.core.instrumentation.events.query import QueryEndEvent, QueryStartEvent
    from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
    from llama_index.core.instrumentation.events.synthesis import SynthesizeEndEvent
    from llama_index.core.instrumentation.span import BaseSpan
    from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
    from pydantic import Field
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError(
        "the LlamaIndex integration needs llama-index-core; install it with: "
        "pip install 'refcheck-callbacks[llamaindex]'"
    ) from exc

__all__ = ["QueryCapture", "instrument_llamaindex", "uninstrument_llamaindex"]

_QUERY_METHODS = frozenset({"query", "aquery"})
_CHAT_METHODS = frozenset({"chat", "achat", "stream_chat", "astream_chat"})
_ROOT_METHODS = _QUERY_METHODS | _CHAT_METHODS
_CALLBACK_FAILED = "llamaindex_callback"
_UNNAMED_MODEL = "unknown"
"""`LLMMetadata.model_name` of LLMs that do not say which model they are."""


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
    answer: str | _Stream | None = None
    model: str | None = None
    exited: bool = False
    """The root span returned while its streamed answer was still unread."""


def _method_name(span_id: str) -> str:
    """`ContextChatEngine.stream_chat-<uuid4>` -> `stream_chat` (LlamaIndex's id format)."""
    return span_id.partition("-")[0].rpartition(".")[2]


def _question_of(query: Any) -> Any:
    """A `QueryBundle`'s text, or the query as given."""
    return getattr(query, "query_str", query)


def _references(nodes: list[Any]) -> list[dict[str, Any]]:
    """One reference per distinct node, in retrieval order, with its best score.

    Plain dicts, which the monitor turns into `Reference`s in its worker, off the app's
    thread. The node id is the reference id; `ref_doc_id` (the source document) joins the
    node's metadata.
    """
    by_id: dict[str, dict[str, Any]] = {}
    for scored in nodes:
        node = scored.node
        seen = by_id.get(node.node_id)
        if seen is None:
            metadata = dict(node.metadata)
            if node.ref_doc_id is not None:
                metadata.setdefault("ref_doc_id", node.ref_doc_id)
            by_id[node.node_id] = {
                "text": node.get_content(),
                "id": node.node_id,
                "score": scored.score,
                "metadata": metadata,
            }
        elif scored.score is not None and (seen["score"] is None or scored.score > seen["score"]):
            seen["score"] = scored.score
    return list(by_id.values())


class QueryCapture:
    """The capture logic shared by our span and event handlers; one per instrumentation.

    Holds the open query roots. `open_queries` and `open_spans` say how much state is held
    (both are 0 when no query is running and no stream is waiting to be read).
    """

    def __init__(self, monitor: RefCheckMonitor, stream_ttl: float, max_open_queries: int):
        self.monitor = monitor
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
            self.monitor.record(Tally.SKIPPED, "uninstrumented", pending)

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
        else:
            return
        if is_root:
            query = _Query(trace_context=current_trace_context(), tags=dict(tags or {}))
            query.question = arguments.get("message")
            self._runs.start(span_id, query)

    def span_exited(self, span_id: str) -> None:
        # The name test spares the lock for the many spans that cannot be a root.
        if _method_name(span_id) not in _ROOT_METHODS or self._runs.root_of(span_id) != span_id:
            return
        query = self._runs.get(span_id)
        if query is None:
            return
        with self._lock:
            if isinstance(query.answer, _Stream) and not query.answer.done:
                query.exited = True
                return
        self._finish(span_id)

    def span_dropped(self, span_id: str) -> None:
        if self._runs.root_of(span_id) == span_id and self._runs.pop(span_id) is not None:
            self.monitor.record(Tally.SKIPPED, "query_error")

    # -- events ----------------------------------------------------------------------------

    def event(self, event: Any) -> None:
        kind = type(event)
        if kind not in _HANDLED or event.span_id is None:
            return
        root = self._runs.root_of(event.span_id)
        query = None if root is None else self._runs.get(root)
        if root is None or query is None:
            return
        if query.trace_context is None or (kind is QueryStartEvent and event.span_id == root):
            # Inside the root's body, a tracer registered after us (OpenInference) has made
            # its span for the query current: prefer it, so the check joins that trace.
            query.trace_context = current_trace_context() or query.trace_context
        if kind is RetrievalEndEvent:
            query.nodes.extend(event.nodes)
        elif kind is QueryStartEvent:
            if query.question is None:
                query.question = _question_of(event.query)
        elif kind is QueryEndEvent or kind is SynthesizeEndEvent:
            self._answered(root, query, event.response)
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
        ending = "stream_incomplete"
        try:
            for token in tokens:
                stream.parts.append(token)
                yield token
            ending = ""
        except Exception:
            ending = "stream_error"
            raise
        finally:
            self._stream_ended(stream, ending)

    async def _atee(self, tokens: AsyncIterator[str], stream: _Stream) -> AsyncIterator[str]:
        ending = "stream_incomplete"
        try:
            async for token in tokens:
                stream.parts.append(token)
                yield token
            ending = ""
        except Exception:
            ending = "stream_error"
            raise
        finally:
            self._stream_ended(stream, ending)

    def _stream_ended(self, stream: _Stream, failure: str) -> None:
        """Submit once both the stream is read and its root has returned, whichever is last.

        `failure` is empty when the stream was read to its end, else the reason to count:
        closed early ("stream_incomplete") or raised ("stream_error").
        """
        try:
            query = self._runs.get(stream.root) if self._active else None
            if query is None or query.answer is not stream:
                return
            if failure:
                if self._runs.pop(stream.root) is not None:
                    self.monitor.record(Tally.SKIPPED, failure)
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
        if not query.nodes:
            self.monitor.record(Tally.SKIPPED, "no_references")
            return
        answer = query.answer.text() if isinstance(query.answer, _Stream) else query.answer
        if answer is None:
            self.monitor.record(Tally.SKIPPED, "no_answer")
            return
        self.monitor.submit(
            question=query.question,
            answer=answer,
            references=_references(query.nodes),
            trace_context=query.trace_context,
            metadata=query.tags,
            model=query.model,
        )

    def _evicted(self, query: _Query, reason: str) -> None:
        if reason == "overflow":
            self.monitor.record(Tally.DROPPED, "run_overflow")
        else:
            self.monitor.record(Tally.SKIPPED, "stream_not_read" if query.exited else "run_expired")

    def record_failure(self) -> None:
        logger.exception("refcheck: the LlamaIndex handler failed; this query is not checked")
        self.monitor.record(Tally.ERRORS, _CALLBACK_FAILED)


_HANDLED = frozenset(
    {
        RetrievalEndEvent,
        QueryStartEvent,
        QueryEndEvent,
        SynthesizeEndEvent,
        LLMChatStartEvent,
        LLMCompletionStartEvent,
    }
)


class RefCheckSpanHandler(BaseSpanHandler[BaseSpan]):
    """Follows the span tree into `QueryCapture`; keeps no spans of its own."""

    # A plain field, not a pydantic private attribute: reading one of those goes through
    # `__getattr__` and costs microseconds, on every span of the app.
    capture: QueryCapture | None = Field(default=None, exclude=True)

    def __init__(self, capture: QueryCapture) -> None:
        super().__init__()
        self.capture = capture

    @classmethod
    def class_name(cls) -> str:
        return "RefCheckSpanHandler"

    def span_enter(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if (capture := self.capture) is not None:
            try:
                capture.span_entered(id_, parent_id, instance, bound_args.arguments, tags)
            except Exception:
                capture.record_failure()

    def span_exit(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any = None,
        result: Any = None,
        **kwargs: Any,
    ) -> None:
        if (capture := self.capture) is not None:
            try:
                capture.span_exited(id_)
            except Exception:
                capture.record_failure()

    def span_drop(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        if (capture := self.capture) is not None:
            try:
                capture.span_dropped(id_)
            except Exception:
                capture.record_failure()

    # The dispatcher only calls the three methods above; these satisfy the abstract base.
    def new_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> None:
        return None


class RefCheckEventHandler(BaseEventHandler):
    """Hands retrieval, query, synthesis and LLM-start events to `QueryCapture`."""

    capture: QueryCapture = Field(exclude=True)

    @classmethod
    def class_name(cls) -> str:
        return "RefCheckEventHandler"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        capture = self.capture
        try:
            capture.event(event)
        except Exception:
            capture.record_failure()


_install_lock = threading.Lock()


def instrument_llamaindex(
    monitor: RefCheckMonitor,
    *,
    stream_ttl: float = 600.0,
    max_open_queries: int = 10_000,
) -> QueryCapture:
    """Check the answers of every LlamaIndex query and chat engine with `monitor`.

    Registers one span handler and one event handler on LlamaIndex's root dispatcher.
    Idempotent: calling it again replaces our pair of handlers (now pointing at `monitor`
    and the given limits) and never adds a second pair.

    Args:
        stream_ttl: seconds a query may stay open (a streamed answer nobody finishes
            reading); older ones are freed and counted as skipped.
        max_open_queries: queries held at once at most; beyond it the oldest is dropped and
            counted.

    Returns the `QueryCapture`, which says how much per-query state is held.
    """
    capture = QueryCapture(monitor, stream_ttl, max_open_queries)
    with _install_lock:
        dispatcher = get_dispatcher()
        previous = _remove(dispatcher)
        # Assigning new lists (instead of appending in place) keeps a dispatch that is
        # walking the old list on another thread consistent.
        dispatcher.span_handlers = [*dispatcher.span_handlers, RefCheckSpanHandler(capture)]
        dispatcher.event_handlers = [
            *dispatcher.event_handlers,
            RefCheckEventHandler(capture=capture),
        ]
    if previous is not None:
        previous.close()
    return capture


def uninstrument_llamaindex() -> None:
    """Remove our handlers from the root dispatcher; open queries are counted and forgotten."""
    with _install_lock:
        previous = _remove(get_dispatcher())
    if previous is not None:
        previous.close()


def _remove(dispatcher: Dispatcher) -> QueryCapture | None:
    """Take our handlers off `dispatcher`; returns the capture they fed, if any."""
    ours = [h for h in dispatcher.span_handlers if isinstance(h, RefCheckSpanHandler)]
    dispatcher.span_handlers = [
        h for h in dispatcher.span_handlers if not isinstance(h, RefCheckSpanHandler)
    ]
    dispatcher.event_handlers = [
        h for h in dispatcher.event_handlers if not isinstance(h, RefCheckEventHandler)
    ]
    return ours[0].capture if ours else None
