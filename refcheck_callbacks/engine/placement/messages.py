"""What the app and its checking process say to each other: pydantic models as JSON.

One socket joins them; each message is a 4-byte big-endian length and one model as JSON,
validated on arrival. The app sends `Call`s (one engine batch each) and, at the end, `Stop`;
the child says `Ready` (or `StartFailed`) once its components are built, then one `Reply` per
call (or `CallFailed`). What the app keeps to itself never crosses: request and reference
`metadata` and the trace context. A reply does not send the requests back either: each result
carries a stub request holding only the notes the child added (an extractor's), and the app
puts its own request, with those notes, back in place (`Reply.results_for`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from refcheck_callbacks.types import CheckRequest, CheckResult, Placement

MAX_MESSAGE_BYTES: Final = 1 << 30
"""Far above any batch `InputLimits` allows; a longer length prefix is a broken stream."""
_PREFIX: Final = 4


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Ready(_Message):
    """The child built its components and takes calls."""

    kind: Literal["ready"] = "ready"
    extractor: str
    checker: str
    placement: Placement
    """Where the child's checker checks: `process`, or `service` for a `RemoteChecker`."""


class StartFailed(_Message):
    """The child could not build its components (a bad spec, a model that cannot load)."""

    kind: Literal["start_failed"] = "start_failed"
    error_type: str
    message: str
    unreadable_recipe: bool = False
    """It could not even read how to build them: a factory that exists only in the app's
    process (defined in a notebook or `python -c`)."""


class Call(_Message):
    """One engine batch, already redacted by the app."""

    kind: Literal["call"] = "call"
    id: int
    requests: tuple[CheckRequest, ...]


class Reply(_Message):
    """The results of one call, in order, each with a stub request (see the module doc)."""

    kind: Literal["reply"] = "reply"
    id: int
    results: tuple[CheckResult, ...]

    @classmethod
    def of(cls, call: Call, results: Sequence[CheckResult]) -> Reply:
        stubs = [
            result.model_copy(update={"request": _stub(sent, result.request)})
            for sent, result in zip(call.requests, results, strict=True)
        ]
        return cls(id=call.id, results=tuple(stubs))

    def results_for(self, requests: Sequence[CheckRequest]) -> list[CheckResult]:
        """The results with the app's own `requests` (those of the call) in place of the stubs.
        Raises ValueError when the reply does not answer exactly those requests, in order."""
        if len(self.results) != len(requests) or any(
            result.request.request_id != request.request_id
            for result, request in zip(self.results, requests, strict=True)
        ):
            raise ValueError(f"reply {self.id} does not answer the requests of its call")
        return [
            result.model_copy(update={"request": _with_notes(request, result.request.notes)})
            for result, request in zip(self.results, requests, strict=True)
        ]


class CallFailed(_Message):
    """The pipeline itself raised on a call (a bug of ours): each of its requests fails."""

    kind: Literal["call_failed"] = "call_failed"
    id: int
    error_type: str
    message: str


class Stop(_Message):
    """Finish the calls in hand, then exit."""

    kind: Literal["stop"] = "stop"


ToChild = Call | Stop
ToApp = Ready | StartFailed | Reply | CallFailed
TO_CHILD: Final[TypeAdapter[ToChild]] = TypeAdapter(Annotated[ToChild, Field(discriminator="kind")])
TO_APP: Final[TypeAdapter[ToApp]] = TypeAdapter(Annotated[ToApp, Field(discriminator="kind")])

_APP_ONLY: Final[dict[str, Any]] = {
    "requests": {
        "__all__": {
            "metadata": True,
            "trace_context": True,
            "references": {"__all__": {"metadata"}},
        }
    }
}


def _stub(sent: CheckRequest, checked: CheckRequest) -> CheckRequest:
    return CheckRequest(
        answer="",
        request_id=checked.request_id,
        submitted_at=checked.submitted_at,
        notes=checked.notes[len(sent.notes) :],
    )


def _with_notes(request: CheckRequest, added: tuple[str, ...]) -> CheckRequest:
    return request.model_copy(update={"notes": (*request.notes, *added)}) if added else request


def encode(message: _Message) -> bytes:
    """The message framed for the socket; a call without what stays in the app."""
    body = message.model_dump_json(exclude=_APP_ONLY if isinstance(message, Call) else None)
    data = body.encode()
    return len(data).to_bytes(_PREFIX, "big") + data


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next message's JSON; None at the end of the stream (the other side is gone).
    Raises ValueError for a length no message can have."""
    try:
        size = int.from_bytes(await reader.readexactly(_PREFIX), "big")
        if size > MAX_MESSAGE_BYTES:
            raise ValueError(f"a message of {size} bytes: the stream is broken")
        return await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
