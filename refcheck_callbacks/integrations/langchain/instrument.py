"""Attach one LangChain handler to every chain: wraps `BaseCallbackManager.__init__`.

The same shape as `instrument_llamaindex`: `instrument_langchain(sink, **options)` returns the
installed capture (here the `RefCheckCallbackHandler`), the same one for the same sink and
options, a new one replacing it for others; `uninstrument_langchain()` detaches. Runs already
started keep the handler they were given and end as usual, so nothing open is lost.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any

from refcheck_callbacks.support.extras import require

require("langchain_core", "langchain")

from langchain_core.callbacks import BaseCallbackManager  # noqa: E402

from refcheck_callbacks.contract.answers import AnswerSink  # noqa: E402
from refcheck_callbacks.contract.reasons import ErrorReason  # noqa: E402
from refcheck_callbacks.integrations.langchain.handler import RefCheckCallbackHandler  # noqa: E402
from refcheck_callbacks.support.logs import logger  # noqa: E402

_instrument_lock = threading.Lock()
_global_handler: RefCheckCallbackHandler | None = None
_global_options: dict[str, Any] = {}
_original_init: Callable[..., None] | None = None
_patched_init: Callable[..., None] | None = None


def _add_global_handler(manager: Any) -> None:
    """Give a new callback manager our handler, unless it already holds one of ours."""
    handler = _global_handler
    if handler is None:
        return
    try:
        if not any(isinstance(h, RefCheckCallbackHandler) for h in manager.handlers):
            manager.add_handler(handler, inherit=True)
    except Exception:
        with contextlib.suppress(Exception):
            handler.sink.errored(ErrorReason.LANGCHAIN_CALLBACK)
        logger.exception("refcheck: could not attach to a LangChain callback manager")


def _wrap_init(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        _add_global_handler(self)

    return __init__


def instrument_langchain(sink: AnswerSink, **options: Any) -> RefCheckCallbackHandler:
    """Check the answers of every LangChain chain run from now on with `sink` (a monitor).

    Like OpenInference, this wraps `BaseCallbackManager.__init__`: each new callback
    manager gets the handler unless it already holds a `RefCheckCallbackHandler` (one passed
    in `config["callbacks"]` wins). Idempotent: calling it again with the same sink and
    options returns the installed handler; with others it replaces it for runs started
    afterwards. `options` are `RefCheckCallbackHandler`'s keyword arguments.
    """
    global _global_handler, _global_options, _original_init, _patched_init
    with _instrument_lock:
        current = _global_handler
        if current is not None and current.sink is sink and _global_options == options:
            return current
        handler = RefCheckCallbackHandler(sink, **options)
        if _original_init is None:
            _original_init = BaseCallbackManager.__init__
            _patched_init = _wrap_init(_original_init)
            BaseCallbackManager.__init__ = _patched_init
        _global_handler, _global_options = handler, options
        return handler


def uninstrument_langchain() -> None:
    """Stop attaching to new chains and restore `BaseCallbackManager.__init__`. Idempotent.

    When another instrumentation wrapped `__init__` after us, our wrapper stays under theirs
    but does nothing any more.
    """
    global _global_handler, _global_options, _original_init, _patched_init
    with _instrument_lock:
        _global_handler, _global_options = None, {}
        if _original_init is not None and BaseCallbackManager.__dict__["__init__"] is _patched_init:
            BaseCallbackManager.__init__ = _original_init
            _original_init, _patched_init = None, None
