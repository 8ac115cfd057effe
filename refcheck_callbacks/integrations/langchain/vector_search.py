"""Vector-store searches made during a run, which no retriever callback reports.

LangChain v1's own RAG tutorial searches the vector store inside a `@dynamic_prompt`
middleware and prints the documents into the system prompt; tools and plain functions called
from a graph node do the same. No retriever runs, so no callback carries the documents. Here
every `VectorStore` class's public search methods (`similarity_search*`,
`max_marginal_relevance_search*`, and their async `a...` forms) are wrapped, each keeping its
kind and signature as `inspect` sees them (a streaming search stays a generator or an async
generator; what it yielded is captured when it ends): after the search returns, the wrapper
looks up the run it was called in (the runnable config LangChain keeps in a context variable,
as `dispatch_custom_event` does) and hands the result to the `SearchListener`s among that
run's callback handlers (a `RefCheckCallbackHandler`), which keep a reference to it as a
candidate of the run's root. Which of them reached the answering prompt is decided by content
in the monitor's worker, as for every candidate.

On the app's thread: a context variable set and reset around the search (the searches it
makes in turn are not captured again), one read of the run's config and a scan of its
handlers (a handful), whatever the documents; about 0.5 us per search outside any run, 1 us
in a run with our handler. Nothing here raises into the app: a failing capture is logged and
the search's result returned as it was. Installed once per process, by the first handler
made; vector-store classes defined later are wrapped as they are defined.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.vectorstores import VectorStore

from refcheck_callbacks.support.logs import logger

SEARCH_PREFIXES = (
    "similarity_search",
    "asimilarity_search",
    "max_marginal_relevance_search",
    "amax_marginal_relevance_search",
)
_WRAPPED = "__refcheck_search__"
_searching: ContextVar[bool] = ContextVar("refcheck_searching", default=False)
"""Set while a wrapped search runs: the searches it makes in turn (`similarity_search` calls
`similarity_search_with_score`, an async search its sync one in a thread) are not captured
again; the outermost one's result is what the caller got."""
MAX_YIELDED = 1000
"""Items of a streaming search kept for its run (the handler keeps a reference per search)."""
_install_lock = threading.Lock()
_installed = False


class SearchListener:
    """A callback handler that wants the searches made in its runs (see the module)."""

    def searched(self, run_id: UUID, found: Any) -> None:
        """`found` (a search's result list) was returned inside the run `run_id`."""


def _listeners() -> tuple[UUID, list[SearchListener]] | None:
    """The run the caller is in and its `SearchListener`s, if any."""
    config = var_child_runnable_config.get()
    if not config:
        return None
    manager = config.get("callbacks")
    run_id = getattr(manager, "parent_run_id", None)
    if run_id is None:
        return None
    found = [h for h in manager.handlers if isinstance(h, SearchListener)]
    return (run_id, found) if found else None


def _hand(listeners: tuple[UUID, list[SearchListener]] | None, found: Any) -> None:
    if listeners is not None:
        run_id, handlers = listeners
        for handler in handlers:
            handler.searched(run_id, found)


def _captured(found: Any) -> None:
    """Hand `found` to the listeners of the run the search was made in, if any."""
    try:
        _hand(_listeners(), found)
    except Exception:
        logger.exception("refcheck: could not capture a vector-store search")


class _Yielded:
    """What a streaming search (a generator) yielded, for the run it was started in: taken
    when it starts (a generator's steps run in whatever context the consumer is in), handed on
    when it ends, however it ends (exhausted, closed early, raised). At most `MAX_YIELDED`."""

    def __init__(self) -> None:
        try:
            self.listeners = _listeners()
        except Exception:
            logger.exception("refcheck: could not capture a vector-store search")
            self.listeners = None
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        if self.listeners is not None and len(self.items) < MAX_YIELDED:
            self.items.append(item)

    def done(self) -> None:
        try:
            if self.items:
                _hand(self.listeners, self.items)
        except Exception:
            logger.exception("refcheck: could not capture a vector-store search")


def _wrap(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` with its result captured, of the same kind (coroutine, generator, async
    generator or plain function: LangChain's runnables dispatch on `inspect`'s answer) and,
    through `functools.wraps`, with the same signature."""
    if inspect.isasyncgenfunction(method):
        wrapped: Any = _wrap_async_generator(method)
    elif inspect.isgeneratorfunction(method):
        wrapped = _wrap_generator(method)
    elif inspect.iscoroutinefunction(method):
        wrapped = _wrap_coroutine(method)
    else:
        wrapped = _wrap_function(method)
    setattr(wrapped, _WRAPPED, True)
    return wrapped


def _wrap_function(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def search(*args: Any, **kwargs: Any) -> Any:
        if _searching.get():
            return method(*args, **kwargs)
        token = _searching.set(True)
        try:
            found = method(*args, **kwargs)
        finally:
            _searching.reset(token)
        _captured(found)
        return found

    return search


def _wrap_coroutine(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def asearch(*args: Any, **kwargs: Any) -> Any:
        if _searching.get():
            return await method(*args, **kwargs)
        token = _searching.set(True)
        try:
            found = await method(*args, **kwargs)
        finally:
            _searching.reset(token)
        _captured(found)
        return found

    return asearch


def _wrap_generator(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def search_iter(*args: Any, **kwargs: Any) -> Any:
        if _searching.get():
            return (yield from method(*args, **kwargs))
        yielded = _Yielded()
        inner = method(*args, **kwargs)
        sent: Any = None
        thrown: BaseException | None = None
        try:
            while True:  # `yield from`, with the flag set around each of the inner's steps
                token = _searching.set(True)
                try:
                    item = inner.send(sent) if thrown is None else inner.throw(thrown)
                except StopIteration as stop:
                    return stop.value
                finally:
                    _searching.reset(token)
                yielded.add(item)
                sent, thrown = None, None
                try:
                    sent = yield item
                except GeneratorExit:
                    inner.close()
                    raise
                except BaseException as exc:
                    thrown = exc
        finally:
            yielded.done()

    return search_iter


def _wrap_async_generator(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def asearch_stream(*args: Any, **kwargs: Any) -> Any:
        if _searching.get():
            async for item in method(*args, **kwargs):
                yield item
            return
        yielded = _Yielded()
        inner = method(*args, **kwargs)
        sent: Any = None
        thrown: BaseException | None = None
        try:
            while True:
                token = _searching.set(True)
                try:
                    step = inner.asend(sent) if thrown is None else inner.athrow(thrown)
                    item = await step
                except StopAsyncIteration:
                    return
                finally:
                    _searching.reset(token)
                yielded.add(item)
                sent, thrown = None, None
                try:
                    sent = yield item
                except GeneratorExit:
                    await inner.aclose()
                    raise
                except BaseException as exc:
                    thrown = exc
        finally:
            yielded.done()

    return asearch_stream


def _wrap_class(cls: type) -> None:
    for name, method in list(vars(cls).items()):
        if (
            name.startswith(SEARCH_PREFIXES)
            and inspect.isfunction(method)
            and not getattr(method, _WRAPPED, False)
        ):
            setattr(cls, name, _wrap(method))


def _subclasses(cls: type) -> list[type]:
    found, pending = [], [cls]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(current.__subclasses__())
    return found


def install() -> None:
    """Wrap the search methods of every vector-store class, now and defined later.
    Idempotent; never raises."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        try:
            for cls in _subclasses(VectorStore):
                _wrap_class(cls)
            original = VectorStore.__dict__.get("__init_subclass__")

            def __init_subclass__(cls: type, **kwargs: Any) -> None:
                if original is not None:
                    original.__func__(cls, **kwargs)
                else:
                    super(VectorStore, cls).__init_subclass__(**kwargs)
                _wrap_class(cls)

            VectorStore.__init_subclass__ = classmethod(__init_subclass__)
        except Exception:
            logger.exception("refcheck: could not instrument vector-store searches")
        _installed = True
