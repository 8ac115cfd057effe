"""Vector-store searches made during a run, which no retriever callback reports.

LangChain v1's own RAG tutorial searches the vector store inside a `@dynamic_prompt`
middleware and prints the documents into the system prompt; tools and plain functions called
from a graph node do the same. No retriever runs, so no callback carries the documents. Here
every `VectorStore` class's public search methods (`similarity_search*`,
`max_marginal_relevance_search*`, and their async `a...` forms) are wrapped: after the search
returns, the wrapper looks up the run it was called in (the runnable config LangChain keeps in
a context variable, as `dispatch_custom_event` does) and hands the result to the
`SearchListener`s among that run's callback handlers (a `RefCheckCallbackHandler`), which keep
a reference to it as a candidate of the run's root. Which of them reached the answering prompt
is decided by content in the monitor's worker, as for every candidate.

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
_install_lock = threading.Lock()
_installed = False


class SearchListener:
    """A callback handler that wants the searches made in its runs (see the module)."""

    def searched(self, run_id: UUID, found: Any) -> None:
        """`found` (a search's result list) was returned inside the run `run_id`."""


def _captured(found: Any) -> None:
    """Hand `found` to the listeners of the run the search was made in, if any."""
    try:
        config = var_child_runnable_config.get()
        if not config:
            return
        manager = config.get("callbacks")
        run_id = getattr(manager, "parent_run_id", None)
        if run_id is None:
            return
        for handler in manager.handlers:
            if isinstance(handler, SearchListener):
                handler.searched(run_id, found)
    except Exception:
        logger.exception("refcheck: could not capture a vector-store search")


def _wrap(method: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(method):

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

        wrapped: Any = asearch
    else:

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

        wrapped = search
    setattr(wrapped, _WRAPPED, True)
    return wrapped


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
