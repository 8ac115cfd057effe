"""The offline finder on the issue's cases, through the default checker: each claim that
the references state otherwise is a Contradiction naming the kind of conflict."""

from __future__ import annotations

import pytest

from refcheck_callbacks import ConflictKind, Label, RefCheckMonitor

CURIE = (
    "Marie Curie was the first person to win Nobel Prizes in two sciences: physics (1903) and "
    "chemistry (1911)."
)


@pytest.mark.parametrize(
    ("answer", "reference", "kind", "cited"),
    [
        (
            "Paris has 3 million people.",
            "Paris is the capital of France. It has about 2.1 million residents.",
            ConflictKind.VALUE,
            "It has about 2.1 million residents.",
        ),
        (
            "Marie Curie won a Nobel Prize in biology.",
            CURIE,
            ConflictKind.EXCLUSIVE,
            CURIE,
        ),
        (
            "Saturn is the largest planet in the Solar System.",
            "Saturn has rings. Jupiter is the largest planet in the Solar System.",
            ConflictKind.ENTITY,
            "Jupiter is the largest planet in the Solar System.",
        ),
        (
            "The naturalist died in Calgary on May 9, 2018.",
            "By Jane Doe, May 10, 2018. The naturalist died in Calgary on May 7.",
            ConflictKind.DATE,
            "The naturalist died in Calgary on May 7.",
        ),
        (
            "The tower was not finished in 1889.",
            "The tower was finished in 1889 for the fair.",
            ConflictKind.NEGATION,
            "The tower was finished in 1889 for the fair.",
        ),
    ],
)
def test_a_statement_the_references_make_otherwise_is_a_contradiction(
    monitor: RefCheckMonitor, answer: str, reference: str, kind: ConflictKind, cited: str
) -> None:
    result = monitor.check(answer=answer, references=[reference])
    [verdict] = result.verdicts
    assert (verdict.label, verdict.conflict) == (Label.CONTRADICTION, kind), verdict.explanation
    assert result.evidence_text(0) == cited


@pytest.mark.parametrize(
    ("answer", "reference"),
    [
        ("Paris has 2 million people.", "Paris has about 2.1 million residents."),
        ("Marie Curie won a Nobel Prize in physics.", CURIE),
        ("Jupiter is the largest planet.", "Jupiter is the largest planet in the Solar System."),
        ("Curie studied biology.", CURIE),  # no term of the reference in its place
        ("The naturalist died on May 7, 2018.", "By Jane Doe, May 10, 2018. He died on May 7."),
    ],
)
def test_a_statement_the_references_agree_with_is_no_contradiction(
    monitor: RefCheckMonitor, answer: str, reference: str
) -> None:
    [verdict] = monitor.check(answer=answer, references=[reference]).verdicts
    assert verdict.label is not Label.CONTRADICTION, verdict.explanation


def test_an_unsupported_claim_with_nothing_stated_otherwise_is_neutral(
    monitor: RefCheckMonitor,
) -> None:
    """The contradiction head's share no longer makes a label: "Penguins are the fastest
    animals on land" was a Contradiction from the head alone."""
    [verdict] = monitor.check(
        answer="Penguins are the fastest animals on land.",
        references=["The Eiffel Tower is 330 metres tall."],
    ).verdicts
    assert verdict.label is Label.NEUTRAL
    assert verdict.probabilities is not None
    assert verdict.probabilities[Label.CONTRADICTION] == 0.0
