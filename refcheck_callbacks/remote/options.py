"""`RemoteOptions`: how an app talks to a `refcheck serve` service, in one validated object.

`RemoteChecker`, `RemoteExtractor` and the `ServiceClient` under them take the same settings;
one frozen model carries them, validated once where it is made (a bad value fails there, with
the field named), so no layer repeats nine keyword arguments and their defaults.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

from refcheck_callbacks.remote.wire import (
    DEFAULT_MAX_CALL_INPUTS,
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_MAX_REQUEST_BYTES,
    TOKEN_ENV,
)
from refcheck_callbacks.support.retry import RetryPolicy


class RemoteOptions(BaseModel):
    """Settings of the HTTP calls to a refcheck service; every field has a working default.

    `RemoteChecker(url, RemoteOptions(deadline=20, concurrency=8))`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    token: str | None = Field(default=None, repr=False)
    """The bearer token; None reads the `REFCHECK_SERVE_TOKEN` environment variable."""
    deadline: float = Field(default=55.0, gt=0)
    """Seconds one call may take, connecting, retries and backoff included. Keep it under the
    monitor's stage timeout (`StageTimeouts`: 60 s extract, 120 s check), so that a slow
    service ends as counted errors of its own rather than a stage timeout."""
    connect_timeout: float = Field(default=5.0, gt=0)
    """Seconds to open a connection, within the deadline."""
    concurrency: int = Field(default=4, ge=1)
    """Calls in flight at once (per event loop), and pooled connections."""
    retry: RetryPolicy = RetryPolicy(max_retries=4, backoff=0.2, max_backoff=10.0)
    """Backoff for 429 / 502 / 503 / 504 and connection failures; its `max_backoff` also caps
    a server's Retry-After."""
    max_request_bytes: int = Field(default=DEFAULT_MAX_REQUEST_BYTES, ge=1)
    """The largest body sent; keep it at or under the service's cap. A larger call is halved."""
    max_reply_bytes: int = Field(default=DEFAULT_MAX_REPLY_BYTES, ge=1)
    """The largest reply read; a larger one fails the call (`bad_reply`) unread."""
    max_call_inputs: int = Field(default=DEFAULT_MAX_CALL_INPUTS, ge=1)
    """Claims (or answers) in one call at most; keep it at or under the service's
    `--max-call-inputs`. A larger call goes in parts."""

    def bearer_token(self) -> str | None:
        """The token to send: the given one, else the environment's, else none."""
        return self.token if self.token is not None else os.environ.get(TOKEN_ENV)
