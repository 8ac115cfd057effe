"""Reading a service's reply: as it arrives, up to a cap, and into the wire model it must be.

A reply larger than the client's `max_reply_bytes` (a wrong URL, a proxy's error page, a broken
service) ends the call as `bad_reply` without the rest being read: the app holds the cap at
most, never the reply. A failed call's body is read only as far as its message needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from pydantic import ValidationError

from refcheck_callbacks.errors import RemoteCallError
from refcheck_callbacks.remote.wire import ErrorReply, WireReply

if TYPE_CHECKING:
    import httpx

Reply = TypeVar("Reply", bound=WireReply)

ERROR_BODY_BYTES = 64 * 1024
"""What is read of a failed call's body: enough for the service's message."""


def validated(reply_type: type[Reply], content: bytes | bytearray) -> Reply:
    try:
        return reply_type.model_validate_json(content)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "reply"
        raise RemoteCallError(
            f"the service's reply is not a valid {reply_type.__name__}: {where}: {first['msg']}",
            "bad_reply",
        ) from exc


@dataclass(frozen=True)
class Answer:
    """What one POST got back: the status, the headers the client reads, the body (capped)."""

    status: int
    reason_phrase: str
    retry_after: str | None
    body: bytearray


async def read_body(response: httpx.Response, cap: int, whole: bool) -> bytearray:
    """The body as it arrives, `cap` bytes at most: past it a reply (`whole`) ends the call as
    `bad_reply`, an error body is cut there. What is past the cap is never read."""
    declared = response.headers.get("content-length", "")
    if whole and declared.isdigit() and int(declared) > cap:
        raise _too_large(cap, f"it says {int(declared):,} bytes")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        if len(body) + len(chunk) > cap:
            if whole:
                raise _too_large(cap, "its body went past the cap")
            body += chunk[: cap - len(body)]
            break
        body += chunk
    return body


def _too_large(cap: int, detail: str) -> RemoteCallError:
    return RemoteCallError(
        f"reply larger than {cap:,} bytes (max_reply_bytes): {detail}; the rest was not read",
        "bad_reply",
    )


def reason(answer: Answer) -> str:
    """The service's own message for a failed call, else the start of the body."""
    try:
        return ErrorReply.model_validate_json(answer.body).message
    except ValidationError:
        return answer.body[:200].decode(errors="replace") or answer.reason_phrase
