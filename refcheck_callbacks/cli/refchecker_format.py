"""RefChecker's file format: its input records in, its output fields (plus ours) out.

RefChecker's `refchecker-cli` reads a JSON list of `{response, question?, reference, claims?}`
(the reference a text or a list of passages; a claim a text or a `[head, relation, tail]`
triplet) and writes every input field back, adding `claims` (extract), `ys` (one label per
claim) and `Y` (the response: a label for strict / major, the share of each label for soft),
labels spelled `Entailment` / `Neutral` / `Contradiction` / `Abstain`. We add one `refcheck`
object per record with what RefChecker does not give: confidences, probabilities, evidence,
the outcome, and the record's index in the input and a fingerprint of it (which `--resume`
relies on).
"""

from __future__ import annotations

import hashlib
import json
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from refcheck_callbacks.contract.answers import InputLimits
from refcheck_callbacks.engine import aggregate
from refcheck_callbacks.engine.aggregate import Aggregator
from refcheck_callbacks.engine.intake import as_text, build_request
from refcheck_callbacks.engine.submission import RawInput
from refcheck_callbacks.errors import BadRecordError
from refcheck_callbacks.types import (
    CheckRequest,
    CheckResult,
    Claim,
    Label,
    Reference,
    ResponseLabel,
    Triplet,
    Verdict,
)

OUR_FIELD = "refcheck"
FILE_LIMITS = InputLimits(
    max_answer_chars=1_000_000,
    max_reference_chars=20_000_000,
    max_references=100_000,
    max_claims=100_000,
)


class Mode(str, Enum):
    EXTRACT = "extract"
    CHECK = "check"
    EXTRACT_CHECK = "extract-check"

    @property
    def checks(self) -> bool:
        return self is not Mode.EXTRACT


class RefCheckerRecord(BaseModel):
    """One input record. Unknown fields are kept and written back unchanged."""

    model_config = ConfigDict(extra="allow")

    response: str
    question: str | None = None
    reference: str | list[str] | None = None
    claims: list[str | list[str]] | None = None

    @field_validator("claims")
    @classmethod
    def _triplets_have_three_parts(
        cls, claims: list[str | list[str]] | None
    ) -> list[str | list[str]] | None:
        for index, claim in enumerate(claims or []):
            if isinstance(claim, list) and len(claim) != 3:
                raise ValueError(
                    f"claim {index} is a list of {len(claim)} items; a triplet has 3 "
                    "(head, relation, tail)"
                )
            parts = claim if isinstance(claim, list) else [claim]
            if not all(part.strip() for part in parts):
                raise ValueError(f"claim {index} is empty")
        return claims


class ClaimReport(BaseModel):
    """Our per-claim detail, beside RefChecker's bare label in `ys`."""

    text: str
    label: str | None
    confidence: float | None = None
    probabilities: dict[str, float] | None = None
    evidence: list[dict[str, Any]] = Field(default_factory=list)
    explanation: str | None = None
    error: str | None = None
    stages: list[dict[str, Any]] | None = None
    """A cascade's path: each stage's label and confidence, the last one deciding."""


def _label_name(label: Label | ResponseLabel) -> str:
    """RefChecker's spelling: `Entailment`, not `entailment`."""
    return label.value.capitalize()


def read_record(raw: Any, mode: Mode) -> RefCheckerRecord:
    """The validated record, or `BadRecordError` with a message a user can act on."""
    if not isinstance(raw, dict):
        raise BadRecordError(f"a record must be a JSON object, not {type(raw).__name__}")
    if mode is not Mode.CHECK:
        # Only `check` reads given claims; the others ignore them, whatever their shape.
        raw = {key: value for key, value in raw.items() if key != "claims"}
    try:
        record = RefCheckerRecord.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'record'}: {error['msg']}"
            for error in exc.errors()
        )
        raise BadRecordError(problems) from None
    if mode.checks and not _reference_texts(record):
        raise BadRecordError("'reference' is required to check claims, and must hold some text")
    if mode is Mode.CHECK and record.claims is None:
        raise BadRecordError(
            "'claims' is required by `check` (run `extract-check` to extract them)"
        )
    return record


def _reference_texts(record: RefCheckerRecord) -> list[str]:
    passages = [record.reference] if isinstance(record.reference, str) else record.reference
    return [text for text in passages or [] if text.strip()]


def _claim(claim: str | list[str], index: int, notes: list[str]) -> str | Claim:
    """A text claim as is (intake repairs and locates it), a triplet repaired here."""
    if isinstance(claim, str):
        return claim
    subject, predicate, obj = (as_text(part, f"claim {index}", notes) for part in claim)
    triplet = Triplet(subject=subject, predicate=predicate, object=obj)
    return Claim(text=triplet.as_text(), triplet=triplet)


def to_request(record: RefCheckerRecord, mode: Mode) -> CheckRequest:
    """The request the pipeline checks; given claims are used only by `check`.

    Built by `intake.build_request`, so text is repaired (invalid UTF-16 surrogates from JSON
    escapes) and every repair noted, as for the monitor; the limits are wide because a file
    is checked offline and `ys` must keep one entry per given claim.
    """
    passages = [record.reference] if isinstance(record.reference, str) else record.reference
    notes: list[str] = []
    claims = record.claims if mode is Mode.CHECK else None
    raw = RawInput(
        answer=record.response,
        question=record.question,
        references=[
            Reference(text=text, id=str(number))
            for number, text in enumerate(passages or [])
            if text.strip()
        ],
        claims=None if claims is None else [_claim(c, i, notes) for i, c in enumerate(claims)],
    )
    request = build_request(raw, FILE_LIMITS)
    return request.model_copy(update={"notes": (*request.notes, *notes)})


def claim_field(claim: Claim) -> str | list[str]:
    """A claim as RefChecker writes it: a triplet as `[head, relation, tail]`, else its text."""
    if claim.triplet is not None:
        return [claim.triplet.subject, claim.triplet.predicate, claim.triplet.object]
    return claim.text


def response_field(labels: list[Label], aggregator: Aggregator) -> str | dict[str, float]:
    """RefChecker's `Y`: a label (strict, major) or the share of each label (soft)."""
    if aggregator is Aggregator.SOFT:
        ratios = aggregate.soft(labels)
        if ratios is None:
            return {"Entailment": 0.0, "Neutral": 0.0, "Contradiction": 0.0, "Abstain": 1.0}
        return {
            "Entailment": ratios.entailment,
            "Neutral": ratios.neutral,
            "Contradiction": ratios.contradiction,
            "Abstain": 0.0,
        }
    return _label_name(aggregate.response_label(labels, aggregator))


def _evidence(result: CheckResult, verdict: Verdict) -> list[dict[str, Any]]:
    references = result.request.references
    return [
        {
            "reference_index": int(references[e.reference_index].id or e.reference_index),
            "start": e.span.start,
            "end": e.span.end,
            "text": e.span.of(references[e.reference_index].text),
            "probability": e.probability,
        }
        for e in verdict.evidence
    ]


def _claim_report(result: CheckResult, claim: Claim, verdict: Verdict) -> ClaimReport:
    return ClaimReport(
        text=claim.text,
        label=None if verdict.label is None else _label_name(verdict.label),
        confidence=verdict.confidence if verdict.label is not None else None,
        probabilities=None
        if verdict.probabilities is None
        else {_label_name(k): v for k, v in verdict.probabilities.items()},
        evidence=_evidence(result, verdict),
        explanation=verdict.explanation,
        error=verdict.error,
        stages=[
            {
                "stage": step.stage,
                "label": None if step.label is None else _label_name(step.label),
                "confidence": step.confidence,
            }
            for step in verdict.stages
        ]
        or None,
    )


def _diagnosed_claim(verdict: Verdict) -> dict[str, Any]:
    """A claim's relevance to the question and its cause: null when unknown or supported."""
    return {
        "relevance": verdict.relevance,
        "cause": None if verdict.cause is None else verdict.cause.value,
    }


def _references(result: CheckResult) -> list[dict[str, Any]]:
    """One entry per (non-blank) reference, in input order, numbered as the input numbers
    it (the `reference_index` of evidence): its relevance to the question and whether a
    supported claim used it."""
    references = result.request.references
    return [
        {
            "index": int(references[use.index].id or use.index),
            "relevance": use.relevance,
            "used": use.used,
        }
        for use in result.references_used
    ]


def input_hash(raw: Any) -> str:
    """A short fingerprint of an input record, so `--resume` can tell that the input changed."""
    canonical = json.dumps(raw, sort_keys=True, default=str)
    return hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:16]


def extracted_record(
    raw: dict[str, Any], index: int, claims: list[Claim], extractor: str
) -> dict[str, Any]:
    """`extract`'s output: the input record with `claims` and our `refcheck` object added."""
    ours = {
        "index": index,
        "input_hash": input_hash(raw),
        "extractor": extractor,
        "claim_count": len(claims),
    }
    return {**raw, "claims": [claim_field(c) for c in claims], OUR_FIELD: ours}


def checked_record(
    raw: dict[str, Any], index: int, result: CheckResult, mode: Mode, aggregator: Aggregator
) -> dict[str, Any]:
    """The input record with RefChecker's output fields and our `refcheck` object added."""
    ours: dict[str, Any] = {
        "index": index,
        "input_hash": input_hash(raw),
        "outcome": result.outcome.value,
        "extractor": result.extractor,
        "checker": result.checker,
        "aggregator": aggregator.value,
    }
    if result.message:
        ours["message"] = result.message
    if result.request.notes:
        ours["notes"] = result.request.notes
    ours["claims"] = [
        _claim_report(result, c, v).model_dump(exclude_none=True) | _diagnosed_claim(v)
        for c, v in zip(result.claims, result.verdicts, strict=True)
    ]
    if result.references_used:
        ours["references"] = _references(result)
        ours["answer_relevance"] = result.answer_relevance
        ours["non_answer"] = result.non_answer
        ours["relevance_scorer"] = result.relevance_scorer
        if result.relevance_fallbacks:
            ours["relevance_fallbacks"] = [
                f.model_dump(mode="json") for f in result.relevance_fallbacks
            ]
    out = dict(raw)
    if mode is Mode.EXTRACT_CHECK:
        out["claims"] = [claim_field(c) for c in result.claims]
    labels = [v.label for v in result.verdicts if v.label is not None]
    # A claim the checker failed on has no label: null keeps `ys` aligned with `claims`.
    out["ys"] = [None if v.label is None else _label_name(v.label) for v in result.verdicts]
    out["Y"] = response_field(labels, aggregator)
    out[OUR_FIELD] = ours
    return out
