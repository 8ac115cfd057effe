"""LlamaIndex integration: capture every query and chat turn through the instrumentation dispatcher.

    from refcheck_callbacks.integrations.llamaindex import instrument_llamaindex
    instrument_llamaindex(monitor)          # every query engine and chat engine, from now on

The same shape as `instrument_langchain`: `instrument_llamaindex(sink, **options)` returns the
installed capture (here the `QueryCapture`), the same one for the same sink and options, a new
one replacing it for others; `uninstrument_llamaindex()` detaches. Queries open when the
capture is replaced or removed can never finish: they are counted (`uninstrumented`).

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
- when the root span exits, the answer is submitted to the sink (the monitor). A streamed answer is
  submitted once the app has read the stream to its end; a stream abandoned half-way or
  failing is counted, one never read is freed after `stream_ttl` and counted.

The OpenTelemetry context is taken when the root starts, and again inside its body (its
`QueryStartEvent`, or its first event when there was none at the start), where a tracer's
span for the query is current whatever the order the handlers were registered in.

Every handler body is O(1) in the app's work (O(nodes) for a retrieval), takes no I/O, is
guarded, and counts what it skips or fails through the sink (`monitor.stats`).
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

from refcheck_callbacks.contract.answers import AnswerSink
from refcheck_callbacks.support.extras import require

require("llama_index.core", "llamaindex")

from llama_index.core.instrumentation import Dispatcher, get_dispatcher  # noqa: E402
from llama_index.core.instrumentation.event_handlers import BaseEventHandler  # noqa: E402
from llama_index.core.instrumentation.events import BaseEvent  # noqa: E402
from llama_index.core.instrumentation.span import BaseSpan  # noqa: E402
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler  # noqa: E402
from pydantic import Field  # noqa: E402

from refcheck_callbacks.integrations.llamaindex.capture import QueryCapture  # noqa: E402

__all__ = ["QueryCapture", "instrument_llamaindex", "uninstrument_llamaindex"]


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
                capture.span_exited(id_, result)
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
    sink: AnswerSink,
    *,
    stream_ttl: float = 600.0,
    max_open_queries: int = 10_000,
) -> QueryCapture:
    """Check the answers of every LlamaIndex query and chat engine with `sink` (a monitor).

    Registers one span handler and one event handler on LlamaIndex's root dispatcher.
    Idempotent: calling it again with the same sink and options returns the installed
    capture; with others it replaces our pair of handlers (never adding a second pair), and
    the queries the old capture held open are counted as skipped `uninstrumented`.

    Args:
        stream_ttl: seconds a query may stay open (a streamed answer nobody finishes
            reading); older ones are freed and counted as skipped.
        max_open_queries: queries held at once at most; beyond it the oldest is dropped and
            counted.

    Returns the `QueryCapture`, which says how much per-query state is held.
    """
    with _install_lock:
        dispatcher = get_dispatcher()
        installed = _installed(dispatcher)
        options = (stream_ttl, max_open_queries)
        if installed is not None and installed.sink is sink and installed.options == options:
            return installed
        capture = QueryCapture(sink, stream_ttl, max_open_queries)
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


def _installed(dispatcher: Dispatcher) -> QueryCapture | None:
    """The capture our handlers on `dispatcher` feed, if they are there."""
    ours = [h for h in dispatcher.span_handlers if isinstance(h, RefCheckSpanHandler)]
    return ours[0].capture if ours else None


def _remove(dispatcher: Dispatcher) -> QueryCapture | None:
    """Take our handlers off `dispatcher`; returns the capture they fed, if any."""
    installed = _installed(dispatcher)
    dispatcher.span_handlers = [
        h for h in dispatcher.span_handlers if not isinstance(h, RefCheckSpanHandler)
    ]
    dispatcher.event_handlers = [
        h for h in dispatcher.event_handlers if not isinstance(h, RefCheckEventHandler)
    ]
    return installed
