"""Web apps whose monitor is built at import and left at the default placement, as a user
writes them: `wsgi` for gunicorn, `asgi` for uvicorn. Each answer says where it was checked:
`PLACEMENT OUTCOME APP_PID CHECKING_PID` (the checking process's pid, or None)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from refcheck_callbacks import CheckResult, RefCheckMonitor

monitor = RefCheckMonitor(checker="py:scripted_checkers:KeywordChecker", exporters=[])
ANSWER = {"answer": "The tower is in Paris.", "references": ["The tower stands in Paris."]}


def _said(result: CheckResult) -> bytes:
    placement = None if result.placement is None else result.placement.value
    checking = getattr(monitor.runner, "pid", None)
    return f"{placement} {result.outcome.value} {os.getpid()} {checking}".encode()


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    body = _said(monitor.check(**ANSWER))
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body]


async def asgi(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] != "http":
        return
    body = _said(await monitor.acheck(**ANSWER))
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})
