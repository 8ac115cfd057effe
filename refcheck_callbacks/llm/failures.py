"""What an LLM call's failure was, and whether another try can help.

litellm wraps the provider SDK's error, which wraps the HTTP client's, which wraps the
socket's: the kind is read from the whole chain. The kinds are `LLMCallError.kind`, the
`error_type` of a failed verdict or extraction (rate_limit, server_error, timeout,
connection, client_error; `deadline` is the client's own).
"""

from __future__ import annotations

import asyncio
import socket

_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def retry_after(exc: BaseException) -> float | None:
    """The server's Retry-After (seconds form), from wherever litellm kept the headers."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if not headers:
            continue
        value = headers.get("retry-after-ms")
        if value is not None:
            try:
                return float(value) / 1000.0
            except ValueError:
                pass
        value = headers.get("retry-after")
        if value is not None:
            try:
                return float(value)
            except ValueError:
                return None  # an HTTP date: fall back to our own backoff
    return None


def _chain(exc: BaseException, depth: int = 6) -> list[BaseException]:
    """The exception and the ones it was raised from: litellm wraps the SDK's error, which
    wraps the HTTP client's, which wraps the socket's."""
    chain = [exc]
    while len(chain) < depth and (cause := chain[-1].__cause__ or chain[-1].__context__):
        chain.append(cause)
    return chain


def _failed_before_sending(exc: BaseException) -> bool:
    """litellm reports a client that could not even be built (no API key) as a 500 it raised
    while handling the OpenAI SDK's bare `OpenAIError`; retrying that cannot help."""
    for cause in _chain(exc, depth=5)[1:]:
        kind = type(cause)
        # The SDK's base class exactly: its HTTP failures are subclasses with other names.
        if kind.__name__ == "OpenAIError" and kind.__module__.partition(".")[0] == "openai":
            return True
    return False


def _timed_out(exc: BaseException) -> bool:
    return any(
        isinstance(cause, asyncio.TimeoutError) or "Timeout" in type(cause).__name__
        for cause in _chain(exc)
    )


def _failed_to_connect(exc: BaseException) -> bool:
    """Whether the connection failed: refused, reset, unreachable, or a host name that does
    not resolve. litellm reports that as a 500 of its own, but no server answered."""
    return any(
        isinstance(cause, ConnectionError | socket.gaierror) or "Connect" in type(cause).__name__
        for cause in _chain(exc)
    )


def classify(exc: BaseException) -> tuple[str, bool]:
    """(kind, retryable) for an exception raised by one attempt."""
    if _failed_before_sending(exc):
        return "client_error", False
    if _timed_out(exc):
        return "timeout", True
    if _failed_to_connect(exc):
        return "connection", True
    status = status_of(exc)
    if status == 429:
        return "rate_limit", True
    if status == 408:
        return "timeout", True
    if status is not None and status >= 500:
        return "server_error", status in _RETRYABLE_STATUS
    if status is not None:
        return "client_error", status in _RETRYABLE_STATUS
    return "client_error", False
