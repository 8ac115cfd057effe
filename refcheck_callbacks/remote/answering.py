"""Answering calls with a checker or extractor: merged calls in, each caller's outputs back.

Transport-free: the Ray Serve replica (`serve.component`) runs it on the calls `@serve.batch`
gathers, and any other carrier of the wire format (a child process) can run it the same way.
The component makes one `check` (or `extract`) call on the inputs of every call; when that
raises, each request is run alone, as the in-process pipeline does, so one poisonous answer
fails only its own request (its claims get `Verdict(label=None, error=...)`, it gets
`Extraction(error=...)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import TypeVar

from refcheck_callbacks.contract.components import Extraction, preload
from refcheck_callbacks.contract.registry import build_checker, build_extractor
from refcheck_callbacks.errors import StageOutputError
from refcheck_callbacks.remote.wire import (
    CheckCall,
    CheckReply,
    ExtractCall,
    ExtractReply,
    WireCall,
    WireReply,
    expect,
)
from refcheck_callbacks.support.logs import logger
from refcheck_callbacks.types import Verdict


class Role(str, Enum):
    CHECKER = "checker"
    EXTRACTOR = "extractor"


class _Checking:
    """The checker's side of a call: claims in, verdicts out."""

    def __init__(self, spec: str, api_base: str | None) -> None:
        self.component = build_checker(spec, api_base)
        self.name = self.component.name

    async def run(self, calls: Sequence[WireCall]) -> list[WireReply]:
        checks = [expect(CheckCall, call) for call in calls]
        items = [item for call in checks for item in call.items()]
        verdicts = await self.component.check(items)
        return [
            CheckReply(checker=self.name, verdicts=part)
            for part in _per_call(verdicts, checks, "verdicts")
        ]

    def per_request(self, call: WireCall) -> list[WireCall]:
        check = expect(CheckCall, call)
        return [
            CheckCall(
                client=check.client,
                requests=[group],
                claims=[
                    c.model_copy(update={"request": 0}) for c in check.claims if c.request == index
                ],
            )
            for index, group in enumerate(check.requests)
        ]

    def failed(self, call: WireCall, exc: Exception) -> WireReply:
        error = f"the service's checker failed: {exc!r}"
        return CheckReply(
            checker=self.name, verdicts=[Verdict(label=None, error=error) for _ in range(len(call))]
        )

    def merged(self, call: WireCall, parts: Sequence[WireReply]) -> WireReply:
        """The reply to `call` from the replies to its `per_request` parts, in call order."""
        check = expect(CheckCall, call)
        pending = {
            index: iter(expect(CheckReply, part).verdicts) for index, part in enumerate(parts)
        }
        verdicts = [next(pending[claim.request]) for claim in check.claims]
        return CheckReply(checker=self.name, verdicts=verdicts)


class _Extracting:
    """The extractor's side of a call: answers in, claims out."""

    def __init__(self, spec: str, api_base: str | None) -> None:
        self.component = build_extractor(spec, api_base)
        self.name = self.component.name

    async def run(self, calls: Sequence[WireCall]) -> list[WireReply]:
        extracts = [expect(ExtractCall, call) for call in calls]
        requests = [request for call in extracts for request in call.requests]
        extractions = await self.component.extract(requests)
        return [
            ExtractReply(extractor=self.name, extractions=part)
            for part in _per_call(extractions, extracts, "extractions")
        ]

    def per_request(self, call: WireCall) -> list[WireCall]:
        extract = expect(ExtractCall, call)
        return [ExtractCall(client=extract.client, requests=[r]) for r in extract.requests]

    def failed(self, call: WireCall, exc: Exception) -> WireReply:
        error = f"the service's extractor failed: {exc!r}"
        failed = Extraction(error=error, error_type=type(exc).__name__)
        return ExtractReply(extractor=self.name, extractions=[failed] * len(call))

    def merged(self, call: WireCall, parts: Sequence[WireReply]) -> WireReply:
        extractions = [e for part in parts for e in expect(ExtractReply, part).extractions]
        return ExtractReply(extractor=self.name, extractions=extractions)


Output = TypeVar("Output")


def _per_call(
    outputs: Sequence[Output], calls: Sequence[WireCall], what: str
) -> list[list[Output]]:
    """The merged call's outputs cut back into each caller's share, in order."""
    wanted = sum(len(call) for call in calls)
    if len(outputs) != wanted:
        raise StageOutputError(f"the component returned {len(outputs)} {what} for {wanted} inputs")
    shares, cursor = [], 0
    for call in calls:
        shares.append(list(outputs[cursor : cursor + len(call)]))
        cursor += len(call)
    return shares


class ComponentRunner:
    """A checker or extractor built from its spec, answering merged calls."""

    def __init__(self, role: Role, spec: str, api_base: str | None = None) -> None:
        self.role = role
        self.work = (
            _Checking(spec, api_base) if role is Role.CHECKER else _Extracting(spec, api_base)
        )
        self.name = self.work.name
        preload(self.work.component)

    async def answer(self, calls: Sequence[WireCall]) -> tuple[list[WireReply], int]:
        """One reply per call, in order, and how many requests failed even when run alone."""
        try:
            return await self.work.run(calls), 0
        except Exception as exc:
            logger.warning("refcheck: a merged %s call raised %r", self.role.value, exc)
        replies, failed = [], 0
        for call in calls:
            reply, failures = await self._one_by_one(call)
            replies.append(reply)
            failed += failures
        return replies, failed

    async def _one_by_one(self, call: WireCall) -> tuple[WireReply, int]:
        parts: list[WireReply] = []
        failed = 0
        for part in self.work.per_request(call):
            try:
                [reply] = await self.work.run([part])
            except Exception as exc:
                reply, failed = self.work.failed(part, exc), failed + 1
            parts.append(reply)
        return self.work.merged(call, parts), failed
