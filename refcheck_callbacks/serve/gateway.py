"""The service's HTTP front: versioned routes, the bearer token, size caps, validation.

Every call is answered with JSON. A bad call gets a 4xx whose `ErrorReply` says what is wrong
(401 no or wrong token, 413 too many bytes or more claims than `max_call_inputs`, 400 malformed
JSON, 422 valid JSON that is not a call, a non-finite number or an impossible index, 404 / 405
unknown route or method); a service that cannot take the call now gets a 503 with
Retry-After (a component's queue is full, or its replicas are starting), which clients retry.
Nothing a caller sends can stop the gateway from serving the next call. The gateway holds no
model: it validates, then hands the call to the component deployments.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ValidationError
from ray import serve
from ray.serve.exceptions import BackPressureError, DeploymentUnavailableError
from ray.serve.handle import DeploymentHandle
from starlette.requests import Request
from starlette.responses import Response

from refcheck_callbacks.remote.wire import (
    CHECK_PATH,
    DEFAULT_MAX_CALL_INPUTS,
    DEFAULT_MAX_REQUEST_BYTES,
    EXTRACT_PATH,
    HEALTH_PATH,
    READY_PATH,
    STATS_PATH,
    TOKEN_ENV,
    CheckCall,
    ErrorReply,
    ExtractCall,
    WireCall,
)
from refcheck_callbacks.serve.loopback import replica_server_on_node_address
from refcheck_callbacks.support.logs import logger

_RETRY_AFTER_S = 1
_READY_TIMEOUT_S = 5.0


class GatewayOptions(BaseModel):
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_call_inputs: int = DEFAULT_MAX_CALL_INPUTS
    token_sha256: str | None = None
    """SHA-256 (hex) of the bearer token. None: the gateway reads `REFCHECK_SERVE_TOKEN` in its
    own process, and runs open when that is unset too."""


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class _Refused(Exception):
    """A call answered with an error status instead of a reply."""

    def __init__(self, status: int, error: str, message: str, retry: bool = False) -> None:
        super().__init__(message)
        self.reply = ErrorReply(error=error, message=message)
        self.status = status
        self.headers = {"retry-after": str(_RETRY_AFTER_S)} if retry else {}
        if status == 401:
            self.headers["www-authenticate"] = "Bearer"


def _json(model: BaseModel, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        model.model_dump_json(),
        status_code=status,
        headers=headers,
        media_type="application/json",
    )


def _plain_json(payload: dict[str, Any], status: int = 200) -> Response:
    return Response(json.dumps(payload), status_code=status, media_type="application/json")


def _problem(exc: ValidationError) -> _Refused:
    errors = exc.errors(include_url=False)
    if any(e["type"] == "json_invalid" for e in errors):
        return _Refused(400, "malformed_json", f"the body is not JSON: {errors[0]['msg']}")
    shown = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in errors[:5]
    )
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return _Refused(422, "invalid_request", f"the body is not a valid call: {shown}{more}")


class GatewayReplica:
    """Routes calls to the checker and (optional) extractor deployments."""

    def __init__(
        self,
        checker: DeploymentHandle,
        extractor: DeploymentHandle | None,
        options: GatewayOptions,
    ) -> None:
        replica_server_on_node_address()
        self.components = {CHECK_PATH: checker}
        if extractor is not None:
            self.components[EXTRACT_PATH] = extractor
        self.settings = options
        digest = options.token_sha256
        if digest is None and os.environ.get(TOKEN_ENV):
            digest = token_digest(os.environ[TOKEN_ENV])
        self._digest = digest
        self._routes: dict[str, tuple[str, Callable[[Request], Awaitable[Response]]]] = {
            HEALTH_PATH: ("GET", self._health),
            READY_PATH: ("GET", self._ready),
            STATS_PATH: ("GET", self._stats),
            CHECK_PATH: ("POST", self._call),
            EXTRACT_PATH: ("POST", self._call),
        }

    async def __call__(self, request: Request) -> Response:
        path = _route(request)
        try:
            route = self._routes.get(path)
            if route is None or (path == EXTRACT_PATH and path not in self.components):
                raise _Refused(404, "not_found", _not_found(path, self.components))
            method, handler = route
            if request.method != method:
                raise _Refused(405, "method_not_allowed", f"{path} takes {method} only")
            if path not in (HEALTH_PATH, READY_PATH):
                self._authorize(request)
            return await handler(request)
        except _Refused as refused:
            return _json(refused.reply, refused.status, refused.headers)
        except Exception as exc:
            logger.exception("refcheck serve: %s failed", path)
            reply = ErrorReply(error="component_failed", message=f"the call failed: {exc!r}")
            return _json(reply, 500)

    def _authorize(self, request: Request) -> None:
        if self._digest is None:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise _Refused(401, "unauthorized", "this service needs an Authorization: Bearer token")
        if not hmac.compare_digest(token_digest(token.strip()), self._digest):
            raise _Refused(401, "unauthorized", "the bearer token is wrong")

    async def _body(self, request: Request) -> bytes:
        cap = self.settings.max_request_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            raise _Refused(413, "too_large", f"the body is {declared} bytes; the cap is {cap}")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise _Refused(413, "too_large", f"the body is over the {cap}-byte cap")
            chunks.append(chunk)
        return b"".join(chunks)

    async def _call(self, request: Request) -> Response:
        path = _route(request)
        body = await self._body(request)
        call: WireCall
        try:
            call = (CheckCall if path == CHECK_PATH else ExtractCall).model_validate_json(body)
        except ValidationError as exc:
            raise _problem(exc) from None
        self._within_limit(path, call)
        try:
            reply = await self.components[path].answer.remote(call)
        except BackPressureError as exc:
            raise _Refused(503, "overloaded", str(exc), retry=True) from None
        except DeploymentUnavailableError as exc:
            raise _Refused(503, "unavailable", exc.message, retry=True) from None
        return _json(reply)

    def _within_limit(self, path: str, call: WireCall) -> None:
        limit = self.settings.max_call_inputs
        if len(call) > limit:
            what = "claims" if path == CHECK_PATH else "answers"
            raise _Refused(
                413,
                "too_large",
                f"the call holds {len(call):,} {what}; this service takes at most {limit:,} "
                f"{what} per call: split it into calls of at most {limit:,} (RemoteChecker and "
                "RemoteExtractor do, by max_call_inputs)",
            )

    async def _health(self, request: Request) -> Response:
        return _plain_json({"status": "ok"})

    async def _ready(self, request: Request) -> Response:
        try:
            names = await asyncio.wait_for(
                asyncio.gather(*(h.ready.remote() for h in self.components.values())),
                _READY_TIMEOUT_S,
            )
        except Exception as exc:
            reply = ErrorReply(error="unavailable", message=f"not ready: {exc!r}")
            return _json(reply, 503, {"retry-after": str(_RETRY_AFTER_S)})
        roles = ["checker", "extractor"][: len(names)]
        return _plain_json({"status": "ready", **dict(zip(roles, names, strict=True))})

    async def _stats(self, request: Request) -> Response:
        stats = await asyncio.gather(*(h.stats.remote() for h in self.components.values()))
        return _plain_json({s["role"]: s for s in stats})


def _route(request: Request) -> str:
    """The path below the application's route prefix."""
    path: str = request.scope.get("path", "")
    root: str = request.scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return "/" + path.strip("/")


def _not_found(path: str, components: dict[str, DeploymentHandle]) -> str:
    if path == EXTRACT_PATH:
        return "this service runs no extractor; start it with --extractor SPEC"
    known = ", ".join([CHECK_PATH, *([EXTRACT_PATH] if EXTRACT_PATH in components else [])])
    return f"no route {path}; calls go to {known} (POST), {STATS_PATH}, {HEALTH_PATH}, {READY_PATH}"


Gateway = serve.deployment(max_ongoing_requests=256, graceful_shutdown_timeout_s=10)(GatewayReplica)
