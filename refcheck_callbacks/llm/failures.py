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
_PROVIDER_SDKS = frozenset({"openai", "anthropic"})
"""SDKs whose status errors mean the provider answered with that status."""
_CONNECT_FAILURES = frozenset({"ConnectError", "ConnectTimeout", "ClientConnectorError"})
"""The HTTP clients' errors (httpx, aiohttp) for a connection that was never made."""


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


def _chain(exc: BaseException, depth: int = 8) -> list[BaseException]:
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


def _answered_with_error(exc: BaseException) -> bool:
    """Whether the provider itself answered with an error status (the HTTP client's or the
    provider SDK's status error is in the chain; litellm's own exceptions carry a status
    code too, 500 for a reply it could not read, so they do not count)."""
    for cause in _chain(exc):
        kind = type(cause)
        package = kind.__module__.partition(".")[0]
        if kind.__name__ == "HTTPStatusError" and package == "httpx":
            return True
        if package in _PROVIDER_SDKS and isinstance(getattr(cause, "status_code", None), int):
            return True
    return False


def _never_connected(exc: BaseException) -> bool:
    """Whether the request never reached a server: refused, unresolvable, no connection made
    in time (a reset after sending does not count: the provider may have done the work)."""
    return any(
        isinstance(cause, ConnectionRefusedError | socket.gaierror)
        or type(cause).__name__ in _CONNECT_FAILURES
        for cause in _chain(exc)
    )


def billable(exc: BaseException) -> bool:
    """Whether the provider may bill a call that ended with `exc`: all but one it refused with
    an error status or never received. A reply slower than our timeout, a connection dropped
    after sending, a reply litellm could not read, a cancelled call: the provider may have
    done the work, so a budget charges them (`llm.budget`)."""
    return not (_failed_before_sending(exc) or _answered_with_error(exc) or _never_connected(exc))


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
