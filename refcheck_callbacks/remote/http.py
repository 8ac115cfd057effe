"""The HTTP client behind `RemoteChecker` and `RemoteExtractor`: one POST per engine batch.

Connections are pooled and the calls in flight bounded (per event loop: an httpx client and
its pool belong to the loop that made them). Every call has a deadline that covers connecting,
waiting, retries and backoff; nothing outlives it. 429, 502, 503, 504 and connection failures
(refused, reset, closed before replying) are retried with exponential backoff and jitter,
after the server's Retry-After when it sends one, capped. Checking is idempotent, so a retry
after a reset connection is safe. A reply is read as it arrives, up to `max_reply_bytes`: a
larger one (a wrong URL, a proxy's error page, a broken service) ends the call without the
rest being read (`remote.reply`). A reply must fit its call (`WireCall.misfit`). A failure ends as
`RemoteCallError` with a `kind`, which the checker and extractor turn into per-claim or
per-request errors; they are counted here. httpx is imported when the first client is built.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import partial
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY

from refcheck_callbacks.errors import RemoteCallError
from refcheck_callbacks.remote.options import RemoteOptions
from refcheck_callbacks.remote.reply import (
    ERROR_BODY_BYTES,
    Answer,
    Reply,
    read_body,
    reason,
    validated,
)
from refcheck_callbacks.remote.wire import WireCall
from refcheck_callbacks.support.extras import require
from refcheck_callbacks.support.logs import logger

if TYPE_CHECKING:
    import httpx

RETRYABLE_STATUS = frozenset({429, 502, 503, 504})


def _status_kind(status: int) -> str:
    if status == 413:
        return "too_large"
    if status == 429:
        return "rate_limit"
    if status in RETRYABLE_STATUS:
        return "unavailable"
    return "rejected" if status < 500 else "server_error"


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date (RFC 9110); None when absent or bad."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class _Failed:
    kind: str
    message: str
    retry_after: float | None = None


def _out_of_time(deadline: float, attempts: int, last: _Failed | None) -> RemoteCallError:
    """The deadline passed after a failed try: the failure is what the tries met (a service that
    is down stays "connection" even when a busy host oversleeps a backoff), the deadline ends it."""
    if last is None:
        return RemoteCallError(f"no reply within the {deadline:g}s deadline", "deadline")
    return RemoteCallError(
        f"{last.message}; no reply within the {deadline:g}s deadline after {attempts} attempts",
        last.kind,
    )


class ServiceClient:
    """POSTs pydantic models as JSON to a refcheck service and validates the replies.

    Args:
        url: the service's base URL, with any route prefix (`http://checker:8000`).
        options: deadline, retries, caps and token (`RemoteOptions`; defaults when None).
    """

    def __init__(self, url: str, options: RemoteOptions | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the service URL must start with http:// or https://, not {url!r}")
        self._httpx = require("httpx", "remote")
        self.url = url.rstrip("/")
        self.options = options = options or RemoteOptions()
        self.client_id = uuid.uuid4().hex
        """Sent with every call: the service's batch records tell callers apart by it."""
        token = options.bearer_token()
        self._headers = {"content-type": "application/json"}
        if token:
            self._headers["authorization"] = f"Bearer {token}"
        self._reset()
        os.register_at_fork(after_in_child=partial(_reset_in_child, weakref.ref(self)))
        self.calls = 0
        self.requests_sent = 0
        self.failures: Counter[str] = Counter()
        """Calls that failed for good, by `RemoteCallError.kind`."""

    def _reset(self) -> None:
        """No clients and a fresh lock: at start, and in a forked child, which must not use
        its parent's connections or a lock another thread held at the fork."""
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[httpx.AsyncClient, asyncio.Semaphore]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def stats(self) -> dict[str, object]:
        with self._lock:
            return {
                "calls": self.calls,
                "requests_sent": self.requests_sent,
                "failures": dict(self.failures),
            }

    async def send(
        self, path: str, call: WireCall, reply_type: type[Reply]
    ) -> list[tuple[WireCall, Reply | RemoteCallError]]:
        """POST `call` to `path`: each part sent (the call itself; its parts of at most
        `max_call_inputs`; its halves when it is over `max_request_bytes` or the service's own
        caps) with its validated reply or why it has none. Never raises for the service's
        sake; every failure is counted."""
        if len(call) > self.options.max_call_inputs:
            return await self._each(path, call.parts(self.options.max_call_inputs), reply_type)
        body = call.model_dump_json(exclude_defaults=True).encode()
        try:
            if len(body) > self.options.max_request_bytes:
                raise RemoteCallError(
                    f"{len(body)} bytes, over the {self.options.max_request_bytes}-byte cap on "
                    "a request to the service",
                    "too_large",
                )
            with self._lock:
                self.calls += 1
            reply = await self._call(path, body, reply_type)
        except RemoteCallError as exc:
            halves = call.halves() if exc.kind == "too_large" else None
            if halves is None:
                return [(call, self._counted(path, exc))]
            return await self._each(path, halves, reply_type)
        misfit = call.misfit(reply)
        if misfit is not None:
            return [(call, self._counted(path, RemoteCallError(misfit, "bad_reply")))]
        return [(call, reply)]

    async def _each(
        self, path: str, calls: Sequence[WireCall], reply_type: type[Reply]
    ) -> list[tuple[WireCall, Reply | RemoteCallError]]:
        sent = await asyncio.gather(*(self.send(path, call, reply_type) for call in calls))
        return [piece for part in sent for piece in part]

    def _counted(self, path: str, exc: RemoteCallError) -> RemoteCallError:
        with self._lock:
            self.failures[exc.kind] += 1
        logger.warning("refcheck: call to %s%s failed (%s): %s", self.url, path, exc.kind, exc)
        return exc

    async def _call(self, path: str, body: bytes, reply_type: type[Reply]) -> Reply:
        give_up_at = time.monotonic() + self.options.deadline
        attempt = 0
        last: _Failed | None = None
        while True:
            attempt += 1
            remaining = give_up_at - time.monotonic()
            if remaining <= 0:
                raise _out_of_time(self.options.deadline, attempt - 1, last)
            outcome = await self._attempt(path, body, remaining)
            if isinstance(outcome, bytearray):
                return validated(reply_type, outcome)
            if outcome.kind == "deadline":
                raise _out_of_time(self.options.deadline, attempt, last)
            if outcome.kind not in ("connection", "rate_limit", "unavailable"):
                raise RemoteCallError(outcome.message, outcome.kind)
            if attempt > self.options.retry.max_retries:
                raise RemoteCallError(
                    f"retries spent after {attempt} attempts: {outcome.message}", outcome.kind
                )
            last = outcome
            wait = self.options.retry.wait(attempt, outcome.retry_after)
            if time.monotonic() + wait >= give_up_at:
                raise RemoteCallError(
                    f"{outcome.message}; the next try (in {wait:.1f}s) would pass the "
                    f"{self.options.deadline:g}s deadline",
                    outcome.kind,
                )
            await asyncio.sleep(wait)

    async def _attempt(self, path: str, body: bytes, remaining: float) -> bytearray | _Failed:
        """One POST: the reply body, or why there is none."""
        httpx = self._httpx
        client, slots = self._client()
        timeout = httpx.Timeout(remaining, connect=min(self.options.connect_timeout, remaining))
        token = otel_context.attach(otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            # Our own clock as well as httpx's: a server that trickles bytes, or a slot that
            # frees late, must not hold the call past its deadline.
            answer = await asyncio.wait_for(
                self._post(client, slots, path, body, timeout), remaining
            )
        except httpx.ConnectTimeout as exc:
            return _Failed("connection", f"could not connect to {self.url}: {exc!r}")
        except (asyncio.TimeoutError, httpx.TimeoutException):
            return _Failed("deadline", f"no reply within the {self.options.deadline:g}s deadline")
        except httpx.TransportError as exc:
            return _Failed("connection", f"{type(exc).__name__} talking to {self.url}: {exc}")
        finally:
            otel_context.detach(token)
        if answer.status == 200:
            return answer.body
        return _Failed(
            _status_kind(answer.status),
            f"HTTP {answer.status} from {self.url}{path}: {reason(answer)}",
            retry_after_seconds(answer.retry_after),
        )

    async def _post(
        self,
        client: httpx.AsyncClient,
        slots: asyncio.Semaphore,
        path: str,
        body: bytes,
        timeout: httpx.Timeout,
    ) -> Answer:
        async with slots:
            with self._lock:
                self.requests_sent += 1
            async with client.stream("POST", path, content=body, timeout=timeout) as response:
                ok = response.status_code == 200
                cap = (
                    self.options.max_reply_bytes
                    if ok
                    else min(ERROR_BODY_BYTES, self.options.max_reply_bytes)
                )
                return Answer(
                    response.status_code,
                    response.reason_phrase,
                    response.headers.get("retry-after"),
                    await read_body(response, cap, whole=ok),
                )

    def _client(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        with self._lock:
            pair = self._clients.get(loop)
            if pair is None:
                httpx = self._httpx
                client = httpx.AsyncClient(
                    base_url=self.url,
                    headers=self._headers,
                    limits=httpx.Limits(
                        max_connections=self.options.concurrency,
                        max_keepalive_connections=self.options.concurrency,
                    ),
                )
                pair = self._clients[loop] = (client, asyncio.Semaphore(self.options.concurrency))
            return pair

    async def aclose(self) -> None:
        """Close the pooled connections of the running loop's client."""
        with self._lock:
            pair = self._clients.pop(asyncio.get_running_loop(), None)
        if pair is not None:
            await pair[0].aclose()


def _reset_in_child(ref: weakref.ReferenceType[ServiceClient]) -> None:
    client = ref()
    if client is not None:
        client._reset()


class RemoteComponent:
    """What `RemoteChecker` and `RemoteExtractor` share: a `ServiceClient` and its counts.

    Args:
        url: the service's base URL (`http://refcheck:8000`, with any route prefix).
        options: token, deadline, retries and caps (`RemoteOptions`; defaults when None).
        name: the component's name in results and telemetry (default "remote").
    """

    def __init__(
        self, url: str, options: RemoteOptions | None = None, *, name: str = "remote"
    ) -> None:
        self.client = ServiceClient(url, options)
        self.name = name
        self.served_by: str | None = None
        """The name the service gave for its component, once it has answered."""

    def stats(self) -> dict[str, object]:
        """Calls made, HTTP requests sent (retries included) and failures by kind."""
        return self.client.stats()
