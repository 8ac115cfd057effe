"""Attach one LangChain handler to every chain: a configure hook of LangChain's own.

The same shape as `instrument_llamaindex`: `instrument_langchain(sink, **options)` returns the
installed capture (here the `RefCheckCallbackHandler`), the same one for the same sink and
options, a new one replacing it for others; `uninstrument_langchain()` detaches. Runs already
started keep the handler they were given and end as usual, so nothing open is lost.

The handler is added where LangChain configures the callback manager of every run it starts
(`CallbackManager.configure`, which every runnable, retriever, model and tool calls; child
runs inherit it), through `register_configure_hook`, as LangSmith's tracer is. Nothing of
LangChain's is patched, so no other instrumentation can remove it: OpenInference and
OpenLLMetry wrap `BaseCallbackManager.__init__` and, on `uninstrument()`, put back the
`__init__` they saw, which would drop a wrapper of ours installed after theirs (issue 47: 0
results for 20 answers, nothing said). Ours in turn never touches theirs.
"""

from __future__ import annotations

import threading
from typing import Any, cast

from refcheck_callbacks.support.extras import require

require("langchain_core", "langchain")

from langchain_core.tracers.context import register_configure_hook  # noqa: E402

from refcheck_callbacks.contract.answers import AnswerSink  # noqa: E402
from refcheck_callbacks.integrations.langchain.handler import RefCheckCallbackHandler  # noqa: E402

_instrument_lock = threading.Lock()
_global_handler: RefCheckCallbackHandler | None = None
_global_options: dict[str, Any] = {}
_hook_registered = False


class _InstalledHandler:
    """What the configure hook reads, as it reads a context variable (`get()`): the handler
    installed now, in every thread and task. A `ContextVar` set by `instrument_langchain`
    would hold it only in the context that called it, not in threads started before."""

    def get(self) -> RefCheckCallbackHandler | None:
        return _global_handler


def instrument_langchain(sink: AnswerSink, **options: Any) -> RefCheckCallbackHandler:
    """Check the answers of every LangChain chain run from now on with `sink` (a monitor).

    Each run LangChain configures gets the handler unless its callbacks already hold a
    `RefCheckCallbackHandler` (one passed in `config["callbacks"]` wins). Idempotent: calling
    it again with the same sink and options returns the installed handler; with others it
    replaces it for runs started afterwards. `options` are `RefCheckCallbackHandler`'s
    keyword arguments.
    """
    global _global_handler, _global_options, _hook_registered
    with _instrument_lock:
        current = _global_handler
        if current is not None and current.sink is sink and _global_options == options:
            return current
        handler = RefCheckCallbackHandler(sink, **options)
        if not _hook_registered:
            # Registered once per process: it adds nothing while no handler is installed.
            register_configure_hook(cast(Any, _InstalledHandler()), True, RefCheckCallbackHandler)
            _hook_registered = True
        _global_handler, _global_options = handler, options
        return handler


def uninstrument_langchain() -> None:
    """Stop attaching to new chains. Idempotent; leaves other instrumentations as they are."""
    global _global_handler, _global_options
    with _instrument_lock:
        _global_handler, _global_options = None, {}
