"""What a checker or extractor call looks like off the app's process: pydantic models as JSON.

The same models travel over HTTP to `refcheck serve` and back, and are validated on both
ends; nothing here knows the transport, so any other carrier (a pipe to a child process) can
send them too. One call carries a whole engine batch. A check call sends each request's
references once, however many of its claims are in the batch, and the service rebuilds the
`CheckItem`s from it. What the app keeps to itself never goes out: request and reference
`metadata`, trace context, and (for extraction) the references.

What arrives as JSON is checked beyond its types, on both ends: every number is finite (JSON
from elsewhere may say `NaN` or `1e999`; ours writes a non-finite float as null), a claim's
index is one a checker can hold, and a reply's evidence and claim spans point into the call
that asked for them (`WireCall.misfit`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from typing import Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from refcheck_callbacks.contract.components import Extraction
from refcheck_callbacks.environment_variables import REFCHECK_SERVE_TOKEN
from refcheck_callbacks.types import CheckItem, CheckRequest, Claim, Reference, Verdict

WIRE_VERSION: Final = 1
CHECK_PATH: Final = f"/v{WIRE_VERSION}/check"
EXTRACT_PATH: Final = f"/v{WIRE_VERSION}/extract"
STATS_PATH: Final = f"/v{WIRE_VERSION}/stats"
HEALTH_PATH: Final = "/healthz"
"""Liveness: the service answers HTTP. Needs no token and touches no model."""
READY_PATH: Final = "/readyz"
"""Readiness: every component has loaded and answers. Needs no token."""
TOKEN_ENV: Final = REFCHECK_SERVE_TOKEN
"""The bearer token, for `refcheck serve` and for `RemoteChecker` / `RemoteExtractor`."""
DEFAULT_MAX_REQUEST_BYTES: Final = 16 * 1024 * 1024
"""The largest request body the service accepts, and the client sends, unless configured."""
DEFAULT_MAX_REPLY_BYTES: Final = 64 * 1024 * 1024
"""The largest reply body the client reads, unless configured."""
DEFAULT_MAX_CALL_INPUTS: Final = 4096
"""Claims (or answers, to extract) in one call at most: the service refuses more, unless
configured, and the client sends no more, so one caller's call cannot hold a replica long."""
MAX_CLIENT_ID_CHARS: Final = 64
MAX_CLAIM_INDEX: Final = 2**31 - 1
"""A claim's index in its answer fits a 32-bit integer, the index any checker may keep it in."""


class _WireModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _non_finite(value: object, where: str) -> str | None:
    """Where the first NaN or infinity in `value` sits (a dotted path), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value}"
    if isinstance(value, BaseModel):
        items: Sequence[tuple[object, object]] = list(value.__dict__.items())
    elif isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list | tuple):
        items = list(enumerate(value))
    else:
        return None
    for key, item in items:
        name = key.value if isinstance(key, Enum) else key
        found = _non_finite(item, f"{where}.{name}" if where else str(name))
        if found is not None:
            return found
    return None


class _Message(_WireModel):
    """A call or reply: its JSON form holds finite numbers only."""

    @model_validator(mode="after")
    def _finite_numbers(self, info: ValidationInfo) -> _Message:
        # Only what arrives as JSON: a float the app built in-process (a retriever's NaN score)
        # is sent as null, never refused here.
        if info.mode == "json":
            found = _non_finite(self, "")
            if found is not None:
                raise ValueError(f"{found}; numbers must be finite")
        return self


class WireCall(_Message):
    """A call to a component: many inputs, split in halves when it is too large to send."""

    client: str = Field(default="", max_length=MAX_CLIENT_ID_CHARS)
    """An opaque id of the caller, so the service can tell callers apart in a batch."""

    def __len__(self) -> int:
        """The outputs the reply must hold."""
        raise NotImplementedError

    def halves(self) -> tuple[WireCall, WireCall] | None:
        """Two calls holding the inputs of this one, in order; None when it cannot split."""
        raise NotImplementedError

    def parts(self, max_inputs: int) -> list[WireCall]:
        """Calls of at most `max_inputs` inputs holding the inputs of this one, in order."""
        raise NotImplementedError

    def misfit(self, reply: WireReply) -> str | None:
        """What in `reply` does not answer this call (a count, an index or span outside what
        was sent), or None when it fits."""
        if len(reply) != len(self):
            return f"the service returned {len(reply)} outputs for {len(self)} inputs"
        return self._outside(reply)

    def _outside(self, reply: WireReply) -> str | None:
        """The first index or span in `reply`, one output per input, that points outside this
        call; None when there is none."""
        raise NotImplementedError


class ReferenceSet(_WireModel):
    """The references (and question) shared by every claim of one request in the call."""

    request_id: str
    question: str | None = None
    references: list[Reference] = Field(default_factory=list)


class ClaimToCheck(_WireModel):
    claim: Claim
    request: int = Field(ge=0)
    """Index of the claim's request in `CheckCall.requests`."""
    claim_index: int = Field(ge=0, le=MAX_CLAIM_INDEX)


class CheckCall(WireCall):
    """The claims of one engine batch."""

    requests: list[ReferenceSet] = Field(default_factory=list)
    claims: list[ClaimToCheck] = Field(default_factory=list)

    @model_validator(mode="after")
    def _claims_name_a_request(self) -> CheckCall:
        for position, claim in enumerate(self.claims):
            if claim.request >= len(self.requests):
                raise ValueError(
                    f"claims[{position}] names request {claim.request}, but the call holds "
                    f"{len(self.requests)} requests"
                )
        return self

    @classmethod
    def of(cls, items: Sequence[CheckItem], client: str = "") -> CheckCall:
        """The call for a checker's items; each request's references are sent once."""
        requests: list[ReferenceSet] = []
        index_of: dict[str, int] = {}
        claims = []
        for item in items:
            index = index_of.get(item.request_id)
            if index is None or not _same_context(requests[index], item):
                index = index_of[item.request_id] = len(requests)
                requests.append(
                    ReferenceSet(
                        request_id=item.request_id,
                        question=item.question,
                        references=[_shareable(r) for r in item.references],
                    )
                )
            claims.append(
                ClaimToCheck(claim=item.claim, request=index, claim_index=item.claim_index)
            )
        return cls(client=client, requests=requests, claims=claims)

    def __len__(self) -> int:
        return len(self.claims)

    def items(self) -> list[CheckItem]:
        """The checker's items, in the order they were sent."""
        return [
            CheckItem(
                claim=claim.claim,
                references=self.requests[claim.request].references,
                question=self.requests[claim.request].question,
                request_id=self.requests[claim.request].request_id,
                claim_index=claim.claim_index,
            )
            for claim in self.claims
        ]

    def _outside(self, reply: WireReply) -> str | None:
        verdicts = expect(CheckReply, reply).verdicts
        for position, (claim, verdict) in enumerate(zip(self.claims, verdicts, strict=True)):
            references = self.requests[claim.request].references
            for evidence in verdict.evidence:
                where = f"verdicts[{position}] cites reference {evidence.reference_index}"
                if evidence.reference_index >= len(references):
                    return f"{where}; its claim was sent with {len(references)}"
                text = references[evidence.reference_index].text
                if evidence.span.end > len(text):
                    return f"{where} up to character {evidence.span.end}; it has {len(text)}"
        return None

    def halves(self) -> tuple[CheckCall, CheckCall] | None:
        """The claims split in two, in order, each half with the requests its claims need.

        The cut is the request boundary nearest the middle, so a request's claims stay in one
        call; only a lone request too large to send whole is cut between its claims."""
        if len(self.claims) < 2:
            return None
        middle = len(self.claims) / 2
        boundaries = [
            i
            for i in range(1, len(self.claims))
            if self.claims[i].request != self.claims[i - 1].request
        ]
        cut = (
            min(boundaries, key=lambda i: abs(i - middle)) if boundaries else len(self.claims) // 2
        )
        return self._part(self.claims[:cut]), self._part(self.claims[cut:])

    def parts(self, max_inputs: int) -> list[WireCall]:
        """The claims in calls of at most `max_inputs`, in order: whole requests packed together,
        and a request with more claims than that cut between its claims (each part then
        carries the request's references)."""
        runs: list[list[ClaimToCheck]] = []
        for claim in self.claims:
            if runs and runs[-1][-1].request == claim.request:
                runs[-1].append(claim)
            else:
                runs.append([claim])
        parts: list[list[ClaimToCheck]] = []
        current: list[ClaimToCheck] = []
        for run in runs:
            if current and len(current) + len(run) > max_inputs:
                parts.append(current)
                current = []
            while len(current) + len(run) > max_inputs:
                parts.append(run[:max_inputs])
                run = run[max_inputs:]
            current += run
        return [self._part(part) for part in [*parts, current] if part]

    def _part(self, claims: list[ClaimToCheck]) -> CheckCall:
        index_of: dict[int, int] = {}
        for claim in claims:
            index_of.setdefault(claim.request, len(index_of))
        return CheckCall(
            client=self.client,
            requests=[self.requests[old] for old in index_of],
            claims=[c.model_copy(update={"request": index_of[c.request]}) for c in claims],
        )


class WireReply(_Message):
    """A component's reply: one output per input of the call, in order."""

    def __len__(self) -> int:
        raise NotImplementedError

    def joined(self, later: Sequence[WireReply]) -> WireReply:
        """This reply followed by the replies to the later parts of its call."""
        raise NotImplementedError


class CheckReply(WireReply):
    checker: str
    """The name of the checker that gave the verdicts."""
    verdicts: list[Verdict]
    """One per claim of the call, in order."""

    def __len__(self) -> int:
        return len(self.verdicts)

    def joined(self, later: Sequence[WireReply]) -> CheckReply:
        verdicts = [v for reply in (self, *later) for v in expect(CheckReply, reply).verdicts]
        return CheckReply(checker=self.checker, verdicts=verdicts)


class ExtractCall(WireCall):
    """The answers of one engine batch."""

    requests: list[CheckRequest] = Field(default_factory=list)

    @classmethod
    def of(cls, requests: Sequence[CheckRequest], client: str = "") -> ExtractCall:
        """The call for an extractor's requests: answer, question and ids only."""
        return cls(client=client, requests=[_extractable(r) for r in requests])

    def __len__(self) -> int:
        return len(self.requests)

    def _outside(self, reply: WireReply) -> str | None:
        pairs = zip(self.requests, expect(ExtractReply, reply).extractions, strict=True)
        for position, (request, extraction) in enumerate(pairs):
            for claim in extraction.claims:
                if claim.span is not None and claim.span.end > len(request.answer):
                    return (
                        f"extractions[{position}] has a claim up to character {claim.span.end}"
                        f"; its answer has {len(request.answer)}"
                    )
        return None

    def halves(self) -> tuple[ExtractCall, ExtractCall] | None:
        if len(self.requests) < 2:
            return None
        cut = len(self.requests) // 2
        return (
            ExtractCall(client=self.client, requests=self.requests[:cut]),
            ExtractCall(client=self.client, requests=self.requests[cut:]),
        )

    def parts(self, max_inputs: int) -> list[WireCall]:
        return [
            ExtractCall(client=self.client, requests=self.requests[start : start + max_inputs])
            for start in range(0, len(self.requests), max_inputs)
        ]


class ExtractReply(WireReply):
    extractor: str
    extractions: list[Extraction]
    """One per request of the call, in order."""

    def __len__(self) -> int:
        return len(self.extractions)

    def joined(self, later: Sequence[WireReply]) -> ExtractReply:
        extractions = [
            e for reply in (self, *later) for e in expect(ExtractReply, reply).extractions
        ]
        return ExtractReply(extractor=self.extractor, extractions=extractions)


class ErrorReply(_WireModel):
    """The body of every 4xx and 5xx the service sends."""

    error: str
    """A stable code: `unauthorized`, `too_large`, `malformed_json`, `invalid_request`,
    `not_found`, `method_not_allowed`, `overloaded`, `unavailable`, `component_failed`."""
    message: str
    """What is wrong, for a person."""


def _same_context(group: ReferenceSet, item: CheckItem) -> bool:
    """Whether `item` shares `group`'s references: the same objects, as the engine makes
    them, or equal ones. A request id reused by two different requests gets two groups."""
    if group.question != item.question or len(group.references) != len(item.references):
        return False
    return all(
        a.text == b.text and a.id == b.id and a.score == b.score
        for a, b in zip(group.references, item.references, strict=True)
    )


def _shareable(reference: Reference) -> Reference:
    """The reference without the app's metadata: a checker needs text, id and score only."""
    if not reference.metadata:
        return reference
    return Reference(text=reference.text, id=reference.id, score=reference.score)


def _extractable(request: CheckRequest) -> CheckRequest:
    return CheckRequest(
        answer=request.answer,
        question=request.question,
        request_id=request.request_id,
        submitted_at=request.submitted_at,
        model=request.model,
    )


Expected = TypeVar("Expected", bound=BaseModel)


def expect(kind: type[Expected], value: object) -> Expected:
    """`value`, which must be a `kind` (a call or reply of the kind at hand)."""
    if not isinstance(value, kind):
        raise TypeError(f"expected a {kind.__name__}, got a {type(value).__name__}")
    return value
