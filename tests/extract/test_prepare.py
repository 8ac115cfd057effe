"""Text preparation through the pipeline: what the checker reads of each claim, and where the
claim stays in the answer."""

from __future__ import annotations

import json
from pathlib import Path

from refcheck_callbacks import Label, Outcome, RefCheckMonitor
from refcheck_callbacks.extract.prepare import prepared_claims
from refcheck_callbacks.text.markup import markup
from refcheck_callbacks.types import CharSpan, CheckRequest, Claim

TOWER = "The Eiffel Tower was finished in 1889. It is 330 metres tall and stands in Paris."
SHORT_ANSWERS = Path(__file__).resolve().parents[1] / "data" / "short_answers.jsonl"


def test_citation_markers_leave_the_claim_and_its_span_stays(monitor: RefCheckMonitor) -> None:
    answer = "The tower was finished in 1889 [1][2]. It is 330 metres tall【3】 (Source: doc-2)."
    result = monitor.check(answer=answer, references=[TOWER])
    assert [claim.text for claim in result.claims] == [
        "The tower was finished in 1889.",
        "The tower is 330 metres tall.",
    ]
    first, second = (claim.span for claim in result.claims)
    assert first is not None and second is not None
    assert answer[first.start : first.end] == "The tower was finished in 1889 [1][2]."
    assert answer[second.start : second.end].startswith("It is 330 metres tall")
    assert [v.label for v in result.verdicts] == [Label.ENTAILMENT, Label.ENTAILMENT]


def test_a_marker_glued_to_the_full_stop_still_ends_the_sentence(monitor: RefCheckMonitor) -> None:
    result = monitor.check(
        answer="It was finished in 1889.[1] It stands in Paris.", references=[TOWER]
    )
    assert [claim.text for claim in result.claims] == [
        "It was finished in 1889.",
        "It stands in Paris.",
    ]


def test_markdown_is_read_as_the_text_it_formats(monitor: RefCheckMonitor) -> None:
    answer = (
        "## The tower\n"
        "- **The Eiffel Tower** was finished in *1889*.\n"
        "- It stands in [Paris](https://paris.fr).\n"
        "```\nThe tower is 900 metres tall.\n```\n"
    )
    result = monitor.check(answer=answer, references=[TOWER])
    assert [claim.text for claim in result.claims] == [
        "The Eiffel Tower was finished in 1889.",
        "The Eiffel Tower stands in Paris.",
    ]
    span = result.claims[0].span
    assert (
        span is not None
        and answer[span.start : span.end] == "The Eiffel Tower** was finished in *1889*."
    )
    assert all(v.label is Label.ENTAILMENT for v in result.verdicts)


def test_a_pronoun_takes_the_subject_of_the_claim_before_it(monitor: RefCheckMonitor) -> None:
    """The issue's example: "It is the largest planet" matched "Jupiter is the largest planet"
    (Entailment 0.92) when read alone."""
    result = monitor.check(
        answer="Saturn is known for its rings. It is the largest planet.",
        references=["Jupiter is the largest planet. Saturn is known for its rings."],
    )
    assert [claim.text for claim in result.claims] == [
        "Saturn is known for its rings.",
        "Saturn is the largest planet.",
    ]
    rings, largest = result.verdicts
    assert rings.label is Label.ENTAILMENT
    assert largest.label is Label.CONTRADICTION and largest.conflict is not None
    assert largest.conflict.value == "entity"
    assert result.evidence_text(1) == "Jupiter is the largest planet."


def test_claims_the_caller_gives_lose_markers_but_not_their_pronouns() -> None:
    request = CheckRequest(
        answer="x",
        claims=(Claim(text="**Paris** is big [2]."), Claim(text="It is old.")),
    )
    texts = [c.text for c in prepared_claims(request, list(request.claims or ()))]
    assert texts == ["Paris is big.", "It is old."]


def test_a_short_answer_is_checked_as_its_questions_statement(monitor: RefCheckMonitor) -> None:
    result = monitor.check(
        question="What is the capital of India?",
        answer="New Delhi.",
        references=["New Delhi is the capital of India."],
    )
    assert result.outcome is Outcome.CHECKED
    assert [claim.text for claim in result.claims] == ["New Delhi is the capital of India"]
    assert result.claims[0].span == CharSpan(start=0, end=len("New Delhi."))
    assert result.verdicts[0].label is Label.ENTAILMENT


def test_a_short_answer_without_a_question_still_abstains(monitor: RefCheckMonitor) -> None:
    result = monitor.check(answer="Delhi", references=["New Delhi is the capital of India."])
    assert result.outcome is Outcome.ABSTAIN


def test_correct_short_answers_of_a_qa_set_are_checked_not_abstained(
    monitor: RefCheckMonitor,
) -> None:
    """Thirty questions with a passage each, written for this test (no shared set has short
    answers): every correct short answer is checked and found supported."""
    rows = [json.loads(line) for line in SHORT_ANSWERS.read_text(encoding="utf-8").splitlines()]
    labels = [
        monitor.check(question=row["question"], answer=row["answer"], references=[row["passage"]])
        for row in rows
    ]
    assert [r.outcome for r in labels] == [Outcome.CHECKED] * len(rows)
    assert all(r.verdicts[0].label is Label.ENTAILMENT for r in labels)


def test_preparation_keeps_every_span_inside_the_answer() -> None:
    answer = "**Bold** [1]\n- item one is here\n1. Item two is here¹"
    prepared = markup(answer)
    request = CheckRequest(answer=answer)
    claims = [Claim(text=prepared.plain[2:8], span=CharSpan(start=2, end=8))]
    out = prepared_claims(request, claims, prepared)
    assert out[0].text == "Bold"
    assert out[0].span == CharSpan(start=2, end=8)
