"""Every field of an answer has a limit (`InputLimits`): past it the field is cut (an id is left
out), the cut is noted in the request, and counted once per answer and field
(`truncated`, by `TruncateReason`) in `monitor.stats` and `refcheck.truncated`.

The issue's hostile shapes: a 50 MB question, 20 MB `response_id` and `model`, 10 MB metadata,
64 given claims of 2.1 MB each (which took 12.2 s to prepare before each claim had a limit).
"""

from __future__ import annotations

from typing import Any

from scripted_checkers import KeywordChecker
from telemetry import Telemetry

from refcheck_callbacks import Claim, InputLimits, Outcome, RefCheckMonitor
from refcheck_callbacks.exporters import names

LIMITS = InputLimits()
REFERENCE = "The tower stands in Paris."


def _nested(levels: int) -> dict[str, Any]:
    nested: dict[str, Any] = {"leaf": "bottom"}
    for level in range(levels):
        nested = {f"level {level}": nested}
    return nested


def _check(telemetry: Telemetry, **fields: Any) -> tuple[Any, dict[str, int], dict[str, int]]:
    with RefCheckMonitor(
        checker=KeywordChecker(), placement="thread", conflict=None,
        exporters=[telemetry.exporter()],
    ) as monitor:  # fmt: skip
        result = monitor.check(**fields)
        stats = monitor.stats.snapshot().get("truncated", {})
    counted = {}
    if names.TRUNCATED in telemetry.metrics():
        points = telemetry.points(names.TRUNCATED).items()
        counted = {dict(key)[names.REASON]: point.value for key, point in points}
    return result, stats, counted


def test_the_issues_hostile_fields_are_cut_to_their_limits_noted_and_counted(
    telemetry: Telemetry,
) -> None:
    claim = "The tower stands in Paris. " + "Filler words about the tower. " * 70_000
    assert len(claim) > 2_100_000
    result, stats, counted = _check(
        telemetry,
        answer="The tower stands in Paris.",
        references=[REFERENCE],
        question="Where is the tower? " * 2_500_000,  # 50 MB
        response_id="r" * 20_000_000,
        model=b"m" * 20_000_000,
        metadata={"user": "u-1", "nested": _nested(20), "blob": "b" * 10_000_000},
        claims=[claim] * 63 + [Claim(text=claim)],
    )
    assert result.outcome is Outcome.CHECKED and len(result.verdicts) == 64
    request = result.request
    assert len(request.question or "") == LIMITS.max_question_chars
    assert request.model == "m" * LIMITS.max_model_chars
    assert request.response_id is None  # a prefix of an id may be another answer's id
    # Cut after "tower.", then stripped of the space.
    assert {len(c.text) for c in result.claims} == {LIMITS.max_claim_chars - 1}
    assert request.metadata["user"] == "u-1"
    assert len(request.metadata["blob"]) < LIMITS.max_metadata_chars
    depth, nested = 1, request.metadata["nested"]
    while isinstance(nested, dict) and nested:
        depth, nested = depth + 1, next(iter(nested.values()))
    assert depth <= LIMITS.max_metadata_depth
    notes = " ".join(request.notes)
    for setting in (
        "max_question_chars", "max_model_chars", "max_response_id_chars", "max_claim_chars",
        "max_metadata_chars",
    ):  # fmt: skip
        assert setting in notes, setting
    expected = {"question": 1, "model": 1, "response_id": 1, "claim": 1, "metadata": 1}
    assert stats == counted == expected


def test_the_limits_the_answer_and_references_had_are_counted_too(telemetry: Telemetry) -> None:
    result, stats, counted = _check(
        telemetry,
        answer="The tower stands in Paris. " * 1_000,  # 27,000 characters
        references=[REFERENCE * 10_000] * (LIMITS.max_references + 1),
        claims=["The tower stands in Paris."] * (LIMITS.max_claims + 1),
    )
    assert result.outcome is Outcome.CHECKED
    assert len(result.request.answer) == LIMITS.max_answer_chars
    expected = {"answer": 1, "references": 1, "reference_text": 1, "claims": 1}
    assert stats == counted == expected


def test_fields_within_their_limits_are_kept_as_given_and_nothing_is_counted(
    telemetry: Telemetry,
) -> None:
    metadata = {"user": "u-1", "tags": ["a", "b"], "nested": _nested(5)}
    result, stats, counted = _check(
        telemetry,
        answer="The tower stands in Paris.",
        references=[REFERENCE],
        question="Where is the tower?",
        response_id="chatcmpl-1",
        model="model-a",
        metadata=metadata,
        claims=["The tower stands in Paris."],
    )
    request = result.request
    assert (request.question, request.response_id, request.model) == (
        "Where is the tower?", "chatcmpl-1", "model-a",
    )  # fmt: skip
    assert request.metadata == metadata and request.metadata["tags"] is metadata["tags"]
    assert request.notes == () and stats == counted == {}
