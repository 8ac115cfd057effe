"""The conflict stage gives every checker's labels one meaning: Contradiction names a
conflicting reference statement and its kind; a claim that is only unsupported is Neutral."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from refcheck_callbacks import ComponentSpecError, RefCheckMonitor
from refcheck_callbacks.check.base import SyncChecker
from refcheck_callbacks.check.conflict.stage import MODEL_CONTRADICTION_BAR, settle
from refcheck_callbacks.check.conflict.stated_facts import StatedFactFinder
from refcheck_callbacks.contract.registry import conflict_finder
from refcheck_callbacks.types import (
    CharSpan,
    CheckItem,
    Claim,
    ConflictKind,
    Evidence,
    Label,
    Reference,
    Verdict,
)

TOWER = (
    "The Eiffel Tower is in Paris. The tower is 330 metres tall. "
    "It was finished in 1889 by the company of Gustave Eiffel."
)


class Scripted(SyncChecker):
    """Gives each claim the verdict `decide` returns: a stand-in for a model's output."""

    name = "scripted"

    def __init__(self, decide: Callable[[CheckItem], Verdict]) -> None:
        self.decide = decide

    def check_batch(self, items: Sequence[CheckItem]) -> list[Verdict]:
        return [self.decide(item) for item in items]


def unsupported(item: CheckItem) -> Verdict:
    """What a binary checker (MiniCheck, HHEM) says of a claim it does not find supported."""
    return Verdict(
        label=Label.NEUTRAL,
        confidence=0.9,
        probabilities={Label.ENTAILMENT: 0.1, Label.NEUTRAL: 0.9, Label.CONTRADICTION: 0.0},
        evidence=[Evidence(reference_index=0, span=CharSpan(start=0, end=29), probability=0.9)],
    )


def model_contradiction(probability: float, evidence: bool = True) -> Verdict:
    """A 3-way model's own Contradiction, citing the whole reference (or nothing)."""
    rest = (1.0 - probability) / 2
    return Verdict(
        label=Label.CONTRADICTION,
        confidence=probability,
        probabilities={
            Label.ENTAILMENT: rest,
            Label.NEUTRAL: rest,
            Label.CONTRADICTION: probability,
        },
        evidence=[Evidence(reference_index=0, span=CharSpan(start=0, end=len(TOWER)))]
        if evidence
        else [],
    )


def check(monitor: RefCheckMonitor, *claims: str) -> list[Verdict]:
    result = monitor.check(answer=" ".join(claims), references=[TOWER])
    return list(result.verdicts)


@pytest.fixture
def binary() -> RefCheckMonitor:
    with RefCheckMonitor(checker=Scripted(unsupported), exporters=[]) as monitor:
        yield monitor


def test_a_binary_checkers_unsupported_claim_with_a_stated_conflict_is_a_contradiction(
    binary: RefCheckMonitor,
) -> None:
    [taller, later, other, absent] = check(
        binary,
        "The tower is 450 metres tall.",
        "It was finished in 1895 by the company of Gustave Eiffel.",
        "It was finished in 1889 by the company of Le Corbusier.",
        "The tower has 1,665 steps.",
    )
    assert (taller.label, taller.conflict) == (Label.CONTRADICTION, ConflictKind.VALUE)
    assert (later.label, later.conflict) == (Label.CONTRADICTION, ConflictKind.DATE)
    assert (other.label, other.conflict) == (Label.CONTRADICTION, ConflictKind.ENTITY)
    cited = taller.evidence[0].span
    assert TOWER[cited.start : cited.end] == "The tower is 330 metres tall."
    assert "'330 metres'" in (taller.explanation or "")
    assert taller.probabilities is not None
    # The checker's own 0.1 (under the cap 0.75 / 1.75); the conflict's share 0.75 of the rest.
    assert taller.probabilities[Label.ENTAILMENT] == pytest.approx(0.1)
    assert taller.probabilities[Label.CONTRADICTION] == pytest.approx(0.9 * 0.75)
    assert (absent.label, absent.conflict) == (Label.NEUTRAL, None)


def test_a_models_contradiction_needs_evidence_and_the_bar() -> None:
    items = [
        CheckItem(
            claim=Claim(text=text),
            references=(Reference(text=TOWER),),
            request_id="r",
            claim_index=index,
        )
        for index, text in enumerate(
            ["The tower is not in Paris.", "The tower is in Lyon.", "The tower is very old."]
        )
    ]
    verdicts = [
        model_contradiction(0.95),
        model_contradiction(MODEL_CONTRADICTION_BAR - 0.1),
        model_contradiction(0.99, evidence=False),
    ]
    sure, unsure, blind = asyncio.run(settle(_NoConflicts(), items, verdicts))
    assert sure.label is Label.CONTRADICTION and sure.conflict is ConflictKind.NEGATION
    span = sure.evidence[0].span
    assert TOWER[span.start : span.end] == "The Eiffel Tower is in Paris."
    assert sure.probabilities == verdicts[0].probabilities
    assert unsure.label is Label.NEUTRAL and unsure.probabilities is not None
    assert unsure.probabilities[Label.CONTRADICTION] == 0.0
    assert blind.label is Label.NEUTRAL


class _NoConflicts:
    """A finder that never finds one: the checker's own word is all there is."""

    name = "none-found"

    async def find(self, items: Sequence[CheckItem]) -> list[None]:
        return [None] * len(items)


def test_entailed_and_failed_claims_are_left_as_they_are() -> None:
    item = CheckItem(
        claim=Claim(text="The tower is 450 metres tall."),
        references=(Reference(text=TOWER),),
        request_id="r",
        claim_index=0,
    )
    entailed = Verdict(label=Label.ENTAILMENT, confidence=0.8)
    failed = Verdict(label=None, error="model failed")
    out = asyncio.run(settle(StatedFactFinder(), [item, item], [entailed, failed]))
    assert out == [entailed, failed]


def test_without_a_conflict_stage_the_checkers_labels_stay() -> None:
    with RefCheckMonitor(checker=Scripted(unsupported), conflict=None, exporters=[]) as monitor:
        [verdict] = check(monitor, "The tower is 450 metres tall.")
    assert verdict.label is Label.NEUTRAL and verdict.conflict is None


def test_conflict_specs_build_their_finders() -> None:
    assert isinstance(conflict_finder("embedded"), StatedFactFinder)
    assert conflict_finder("none") is None and conflict_finder(None) is None
    built = conflict_finder("py:refcheck_callbacks.check.conflict.stated_facts:StatedFactFinder")
    assert isinstance(built, StatedFactFinder)
    with pytest.raises(ComponentSpecError, match="unknown conflict stage"):
        conflict_finder("regex")
    with pytest.raises(ComponentSpecError, match="needs a `name`"):
        conflict_finder(lambda: object())


def test_only_a_contradiction_names_a_kind_of_conflict() -> None:
    with pytest.raises(ValueError, match="only a contradiction"):
        Verdict(label=Label.NEUTRAL, conflict=ConflictKind.VALUE)
