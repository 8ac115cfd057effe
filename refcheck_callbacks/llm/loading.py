"""litellm, imported on first use only, quiet, and kept out of its own logging for our calls."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import ModuleType

from refcheck_callbacks.support.extras import require


def load_litellm() -> ModuleType:
    """litellm, imported once, offline (no price-map download) and quiet on errors."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = require("litellm", "llm")
    # litellm prints a "Give Feedback" banner to stdout on every exception; we handle and
    # count every failure ourselves, so the host's stdout stays clean.
    setattr(litellm, "suppress_debug_info", True)  # noqa: B010 (untyped module attribute)
    return litellm


def unlogged_call_flag() -> ContextVar[bool] | None:
    """litellm's flag for calls it must not log or bill (its own nested calls), if it has one.

    litellm (1.7x on) hands each async call's success logging to one process-wide worker task,
    bound to the event loop it last ran on. A call from another loop (our worker's, while the
    app calls litellm on its own loop, or a second monitor's) rebinds it and orphans the old
    task, which the garbage collector then destroys while pending: asyncio logs "Task was
    destroyed but it is pending!" into the app's logs at every switch between loops. Our judge
    and extractor calls are not the app's work (they are kept out of its traces as well, see
    `LLMClient._send`), so they skip litellm's logging callbacks, and with them that worker.
    Usage and cost are still read from each response.
    """
    try:
        from litellm._internal_context import is_internal_call
    except ImportError:  # older litellm: per-call tasks on the calling loop, nothing to rebind
        return None
    return is_internal_call


@contextmanager
def unlogged(flag: ContextVar[bool] | None) -> Iterator[None]:
    if flag is None:
        yield
        return
    token = flag.set(True)
    try:
        yield
    finally:
        flag.reset(token)
