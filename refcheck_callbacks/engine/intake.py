"""Turning what `submit` captured into a valid `CheckRequest`, in the worker, never raising.

Production inputs are messy: bytes with invalid UTF-8, lone surrogates, None, a 5 MB page.
Every repair is recorded in `CheckRequest.notes`, so a result always says what was checked.
`paired` first calls an integration's `Pairing` where it left the pairing to the worker (see
`contract.answers`), then `build_request` makes the request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from refcheck_callbacks.contract.answers import InputLimits
from refcheck_callbacks.contract.reasons import SkipReason, TruncateReason
from refcheck_callbacks.engine.submission import RawInput
from refcheck_callbacks.support.bounded_copy import bounded_copy
from refcheck_callbacks.types import CharSpan, CheckRequest, Claim, Reference

_SURROGATE = re.compile("[\ud800-\udfff]")


def paired(raw: RawInput) -> RawInput | SkipReason | None:
    """`raw` with its `Pairing` decided (in the worker); None when it pairs with nothing, the
    reason when the pairing skipped it."""
    if raw.pairing is None:
        return raw
    decided = raw.pairing.pair()
    if decided is None or isinstance(decided, SkipReason):
        return decided
    metadata = raw.metadata
    if decided.metadata:
        metadata = {**(metadata if isinstance(metadata, Mapping) else {}), **decided.metadata}
    return replace(
        raw,
        question=raw.question if decided.question is None else decided.question,
        answer=decided.answer,
        references=decided.references,
        model=decided.model,
        response_id=decided.response_id,
        metadata=metadata,
        pairing=None,
    )


def as_text(value: Any, what: str, notes: list[str], limit: int | None = None) -> str:
    """A clean str from str, bytes or anything printable; repairs are noted. With `limit`, at
    most `limit + 1` characters, read no further (the caller tells a cut from the extra one)."""
    if isinstance(value, bytes | bytearray | memoryview):
        # A UTF-8 character is at most 4 bytes: enough for `limit + 1` characters.
        raw = bytes(value if limit is None else memoryview(value)[: 4 * (limit + 1)])
        text = raw.decode("utf-8", errors="replace")
        if limit is not None:
            text = text[: limit + 1]  # before the check: the bytes may end in half a character
        if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
            notes.append(f"{what}: invalid UTF-8 bytes were replaced with U+FFFD")
        return text
    if not isinstance(value, str):
        notes.append(f"{what}: a {type(value).__name__} was converted to text")
        value = str(value)
    if limit is not None:
        value = value[: limit + 1]
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        notes.append(f"{what}: unpaired surrogate characters were replaced with U+FFFD")
        value = _SURROGATE.sub("\ufffd", value)
    return value


@dataclass
class Cuts:
    """The fields of one request cut to their limits: noted in the request, counted once each
    (`Tally.TRUNCATED`)."""

    notes: list[str] = field(default_factory=list)
    fields: set[TruncateReason] = field(default_factory=set)

    def cut(self, reason: TruncateReason, note: str) -> None:
        self.notes.append(note)
        self.fields.add(reason)

    def text(self, value: Any, what: str, limit: int, setting: str, reason: TruncateReason) -> str:
        """`value` as text (`as_text`), cut to `limit` characters."""
        text = as_text(value, what, self.notes, limit)
        if len(text) <= limit:
            return text
        self.cut(reason, f"{what}: cut to {limit:,} characters ({setting}={limit:,})")
        return text[:limit]

    def optional_text(
        self, value: Any, what: str, limit: int, setting: str, reason: TruncateReason
    ) -> str | None:
        return None if value is None else self.text(value, what, limit, setting, reason)


def _reference(item: Any, index: int, notes: list[str], limit: int) -> Reference | None:
    """The reference, its text read no further than `limit + 1` characters."""
    what = f"reference {index}"
    if isinstance(item, Reference):
        fixed = as_text(item.text, what, notes, limit)
        return item if fixed is item.text else item.model_copy(update={"text": fixed})
    if isinstance(item, Mapping):
        text = item.get("text", item.get("page_content"))
        if text is None:
            notes.append(f"{what}: a mapping without 'text' was skipped")
            return None
        score = item.get("score")
        return Reference(
            text=as_text(text, what, notes, limit),
            id=None if item.get("id") is None else str(item.get("id")),
            score=float(score) if isinstance(score, int | float) else None,
            metadata=dict(item.get("metadata") or {}),
        )
    if item is None:
        notes.append(f"{what}: None was skipped")
        return None
    return Reference(text=as_text(item, what, notes, limit))


def _references(value: Any, limits: InputLimits, cuts: Cuts) -> list[Reference]:
    if callable(value):
        # Deferred by the caller, so that converting its objects runs here, in the worker,
        # and not on the caller's thread.
        value = value()
    if value is None:
        return []
    if isinstance(value, str | bytes | Reference | Mapping):
        value = [value]
    if not isinstance(value, Sequence):
        value = list(value)
    notes = cuts.notes
    if len(value) > limits.max_references:
        cuts.cut(
            TruncateReason.REFERENCES,
            f"references: only the first {limits.max_references} of {len(value)} kept",
        )
        value = value[: limits.max_references]
    references = []
    budget = limits.max_reference_chars
    for index, item in enumerate(value):
        reference = _reference(item, index, notes, budget)
        if reference is None:
            continue
        if not reference.text.strip():
            notes.append(f"reference {index}: empty text was skipped")
            continue
        if len(reference.text) > budget:
            cuts.cut(
                TruncateReason.REFERENCE_TEXT,
                f"reference {index}: truncated to {budget:,} characters "
                f"(max_reference_chars={limits.max_reference_chars:,} across the references)",
            )
            reference = reference.model_copy(update={"text": reference.text[:budget]})
        budget -= len(reference.text)
        references.append(reference)
        if budget <= 0:
            break
    return references


def _claims(value: Any, answer: str, limits: InputLimits, cuts: Cuts) -> list[Claim] | None:
    if value is None:
        return None
    if isinstance(value, str | Claim):
        value = [value]
    value = list(value)
    if len(value) > limits.max_claims:
        cuts.cut(
            TruncateReason.CLAIMS,
            f"claims: only the first {limits.max_claims:,} of {len(value):,} given claims were "
            f"checked (max_claims={limits.max_claims:,})",
        )
    claims = []
    limit = limits.max_claim_chars
    for index, item in enumerate(value[: limits.max_claims]):
        what = f"claim {index}"
        if isinstance(item, Claim):
            if len(item.text) > limit:
                text = cuts.text(item.text, what, limit, "max_claim_chars", TruncateReason.CLAIM)
                item = item.model_copy(update={"text": text})
            claims.append(item)
            continue
        text = cuts.text(item, what, limit, "max_claim_chars", TruncateReason.CLAIM).strip()
        if not text:
            continue
        offset = answer.find(text)
        span = CharSpan(start=offset, end=offset + len(text)) if offset >= 0 else None
        claims.append(Claim(text=text, span=span))
    return claims


def _response_id(value: Any, limits: InputLimits, cuts: Cuts) -> str | None:
    if value is None:
        return None
    limit = limits.max_response_id_chars
    text = as_text(value, "response_id", cuts.notes, limit)
    if len(text) <= limit:
        return text
    cuts.cut(
        TruncateReason.RESPONSE_ID,
        f"response_id: longer than {limit:,} characters (max_response_id_chars), left out",
    )
    return None


def _metadata(value: Any, limits: InputLimits, cuts: Cuts) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    kept, whole = bounded_copy(value, limits.max_metadata_chars, limits.max_metadata_depth)
    if not whole:
        cuts.cut(
            TruncateReason.METADATA,
            f"metadata: cut to {limits.max_metadata_chars:,} characters and "
            f"{limits.max_metadata_depth} levels (max_metadata_chars, max_metadata_depth)",
        )
    return dict(kept)


def build_request(raw: RawInput, limits: InputLimits, cuts: Cuts | None = None) -> CheckRequest:
    """A valid request from raw input; never raises on content, only notes repairs. The
    fields cut to their limits are added to `cuts` (a fresh one when not given)."""
    cuts = Cuts() if cuts is None else cuts
    answer = ""
    if raw.answer is not None:
        answer = cuts.text(
            raw.answer, "answer", limits.max_answer_chars, "max_answer_chars", TruncateReason.ANSWER
        )
    question = cuts.optional_text(
        raw.question,
        "question",
        limits.max_question_chars,
        "max_question_chars",
        TruncateReason.QUESTION,
    )
    return CheckRequest(
        answer=answer,
        references=_references(raw.references, limits, cuts),
        question=question,
        claims=_claims(raw.claims, answer, limits, cuts),
        trace_context=raw.trace_context,
        metadata=_metadata(raw.metadata, limits, cuts),
        model=cuts.optional_text(
            raw.model, "model", limits.max_model_chars, "max_model_chars", TruncateReason.MODEL
        ),
        response_id=_response_id(raw.response_id, limits, cuts),
        notes=cuts.notes,
        **({"submitted_at": raw.submitted_at} if raw.submitted_at else {}),
    )
