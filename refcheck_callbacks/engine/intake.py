"""Turning what `submit` captured into a valid `CheckRequest`, in the worker, never raising.

Production inputs are messy: bytes with invalid UTF-8, lone surrogates, None, a 5 MB page.
Every repair is recorded in `CheckRequest.notes`, so a result always says what was checked.
`paired` first calls an integration's `Pairing` where it left the pairing to the worker (see
`contract.answers`), then `build_request` makes the request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from refcheck_callbacks.contract.answers import InputLimits
from refcheck_callbacks.engine.submission import RawInput
from refcheck_callbacks.types import CharSpan, CheckRequest, Claim, Reference

_SURROGATE = re.compile("[\ud800-\udfff]")


def paired(raw: RawInput) -> RawInput | None:
    """`raw` with its `Pairing` decided (in the worker); None when it pairs with nothing."""
    if raw.pairing is None:
        return raw
    decided = raw.pairing.pair()
    if decided is None:
        return None
    metadata = raw.metadata
    if decided.metadata:
        metadata = {**(metadata if isinstance(metadata, Mapping) else {}), **decided.metadata}
    return replace(
        raw,
        answer=decided.answer,
        references=decided.references,
        model=decided.model,
        response_id=decided.response_id,
        metadata=metadata,
        pairing=None,
    )


def as_text(value: Any, what: str, notes: list[str]) -> str:
    """A clean str from str, bytes or anything printable; repairs are noted."""
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        text = raw.decode("utf-8", errors="replace")
        if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
            notes.append(f"{what}: invalid UTF-8 bytes were replaced with U+FFFD")
        return text
    if not isinstance(value, str):
        notes.append(f"{what}: a {type(value).__name__} was converted to text")
        value = str(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        notes.append(f"{what}: unpaired surrogate characters were replaced with U+FFFD")
        value = _SURROGATE.sub("\ufffd", value)
    return value


def _optional_text(value: Any, what: str, notes: list[str]) -> str | None:
    return None if value is None else as_text(value, what, notes)


def _reference(item: Any, index: int, notes: list[str]) -> Reference | None:
    what = f"reference {index}"
    if isinstance(item, Reference):
        fixed = as_text(item.text, what, notes)
        return item if fixed is item.text else item.model_copy(update={"text": fixed})
    if isinstance(item, Mapping):
        text = item.get("text", item.get("page_content"))
        if text is None:
            notes.append(f"{what}: a mapping without 'text' was skipped")
            return None
        score = item.get("score")
        return Reference(
            text=as_text(text, what, notes),
            id=None if item.get("id") is None else str(item.get("id")),
            score=float(score) if isinstance(score, int | float) else None,
            metadata=dict(item.get("metadata") or {}),
        )
    if item is None:
        notes.append(f"{what}: None was skipped")
        return None
    return Reference(text=as_text(item, what, notes))


def _references(value: Any, limits: InputLimits, notes: list[str]) -> list[Reference]:
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
    if len(value) > limits.max_references:
        notes.append(f"references: only the first {limits.max_references} of {len(value)} kept")
        value = value[: limits.max_references]
    references = []
    budget = limits.max_reference_chars
    for index, item in enumerate(value):
        reference = _reference(item, index, notes)
        if reference is None:
            continue
        if not reference.text.strip():
            notes.append(f"reference {index}: empty text was skipped")
            continue
        if len(reference.text) > budget:
            notes.append(
                f"reference {index}: truncated from {len(reference.text):,} to {budget:,} "
                f"characters (max_reference_chars={limits.max_reference_chars:,})"
            )
            reference = reference.model_copy(update={"text": reference.text[:budget]})
        budget -= len(reference.text)
        references.append(reference)
        if budget <= 0:
            break
    return references


def _claims(value: Any, answer: str, limits: InputLimits, notes: list[str]) -> list[Claim] | None:
    if value is None:
        return None
    if isinstance(value, str | Claim):
        value = [value]
    value = list(value)
    if len(value) > limits.max_claims:
        notes.append(
            f"claims: only the first {limits.max_claims:,} of {len(value):,} given claims were "
            f"checked (max_claims={limits.max_claims:,})"
        )
    claims = []
    for index, item in enumerate(value[: limits.max_claims]):
        if isinstance(item, Claim):
            claims.append(item)
            continue
        text = as_text(item, f"claim {index}", notes).strip()
        if not text:
            continue
        offset = answer.find(text)
        span = CharSpan(start=offset, end=offset + len(text)) if offset >= 0 else None
        claims.append(Claim(text=text, span=span))
    return claims


def build_request(raw: RawInput, limits: InputLimits) -> CheckRequest:
    """A valid request from raw input; never raises on content, only notes repairs."""
    notes: list[str] = []
    answer = "" if raw.answer is None else as_text(raw.answer, "answer", notes)
    if len(answer) > limits.max_answer_chars:
        notes.append(
            f"answer: truncated from {len(answer):,} to {limits.max_answer_chars:,} characters"
        )
        answer = answer[: limits.max_answer_chars]
    metadata = dict(raw.metadata) if isinstance(raw.metadata, Mapping) else {}
    return CheckRequest(
        answer=answer,
        references=_references(raw.references, limits, notes),
        question=_optional_text(raw.question, "question", notes),
        claims=_claims(raw.claims, answer, limits, notes),
        trace_context=raw.trace_context,
        metadata=metadata,
        model=_optional_text(raw.model, "model", notes),
        response_id=_optional_text(raw.response_id, "response_id", notes),
        notes=notes,
        **({"submitted_at": raw.submitted_at} if raw.submitted_at else {}),
    )
