"""Scoring checkers on hand-built labelled examples: the numbers and the failure accounting."""

from __future__ import annotations

import asyncio

import pytest
from scripted_checkers import KeywordChecker

from refcheck_callbacks.bench.datasets import LabelledExample
from refcheck_callbacks.bench.runner import (
    check_examples,
    score,
    subsample,
    support_score,
)
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.support.progress import Progress
from refcheck_callbacks.types import Label, Verdict

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def _example(
    n: int,
    label: Label | None,
    supported: bool | None = None,
    response: str | None = None,
    reference: str | None = None,
) -> LabelledExample:
    return LabelledExample(
        dataset="hand",
        example_id=f"x{n}",
        group=f"g{n}",
        claim=f"claim {n}",
        references=[reference or f"reference {n}"],
        label=label,
        supported=supported,
        response_id=response,
    )


def _verdict(label: Label, p_entailment: float) -> Verdict:
    """A verdict whose label's probability is the largest: the rest goes to the label, or is
    split between neutral and contradiction under an Entailment."""
    rest = 1.0 - p_entailment
    if label is E:
        probabilities = {E: p_entailment, N: rest / 2, C: rest / 2}
    else:
        probabilities = {E: p_entailment, N: 0.0, C: 0.0, label: rest}
    return Verdict(label=label, confidence=probabilities[label], probabilities=probabilities)


def test_support_score_prefers_probabilities_then_confidence() -> None:
    assert support_score(_verdict(N, 0.2)) == pytest.approx(0.2)
    assert support_score(Verdict(label=E, confidence=0.9)) == pytest.approx(0.9)
    assert support_score(Verdict(label=C, confidence=0.9)) == pytest.approx(0.1)


def test_three_way_binary_and_response_scores_by_hand() -> None:
    examples = [
        _example(0, E, response="r1"),
        _example(1, N, response="r1"),
        _example(2, C, response="r2"),
        _example(3, E, response="r2"),
        _example(4, N, response="r3"),
        _example(5, E, response="r3"),
    ]
    verdicts: list[Verdict | None] = [
        _verdict(E, 0.9),
        _verdict(E, 0.6),  # wrong: gold neutral
        _verdict(C, 0.1),
        _verdict(E, 0.8),
        _verdict(N, 0.3),
        None,  # the checker failed on this one
    ]
    scores = score("hand", examples, verdicts, seconds=2.0)
    assert (scores.examples, scores.failed) == (6, 1)
    assert scores.claims_per_second == pytest.approx(3.0)

    three = scores.three_way
    assert three is not None
    assert three.labels == ["entailment", "neutral", "contradiction"]
    assert three.accuracy == pytest.approx(4 / 5)
    assert three.confusion == [[2, 0, 0], [1, 1, 0], [0, 0, 1]]
    # F1: entailment 2/(2+0.5+0) -> P 2/3, R 1 -> 0.8; neutral P 1 R 0.5 -> 2/3; contradiction 1.
    assert three.per_label["entailment"].f1 == pytest.approx(0.8)
    assert three.macro_f1 == pytest.approx((0.8 + 2 / 3 + 1.0) / 3)

    binary = scores.binary
    assert binary is not None
    assert (binary.examples, binary.supported) == (5, 2)
    # Supported claims scored 0.9, 0.8; unsupported 0.6, 0.1, 0.3: every pair ordered right.
    assert binary.auroc == pytest.approx(1.0)
    assert binary.confusion == [[2, 0], [1, 2]]
    assert binary.balanced_accuracy == pytest.approx((1.0 + 2 / 3) / 2)
    assert sum(binary.histogram_supported) == 2
    assert sum(binary.histogram_unsupported) == 3
    assert binary.predicted_labels == {
        "supported": {"entailment": 2, "neutral": 0, "contradiction": 0},
        "unsupported": {"entailment": 1, "neutral": 1, "contradiction": 1},
    }

    # r1: gold 1/2 unsupported, predicted 0/2; r2: 1/2 vs 1/2; r3 has one checked claim only.
    response = scores.response_level
    assert response is not None
    assert response.responses == 2
    assert response.pearson is None  # predicted rates 0 and 0.5 vs gold 0.5 and 0.5: constant


def test_binary_only_sets_have_no_three_way_scores() -> None:
    examples = [_example(i, None, supported=i % 2 == 0) for i in range(4)]
    verdicts: list[Verdict | None] = [_verdict(E, 0.7), _verdict(N, 0.4)] * 2
    scores = score("hand", examples, verdicts, seconds=1.0)
    assert scores.three_way is None
    assert scores.binary is not None and scores.binary.auroc == pytest.approx(1.0)
    assert scores.response_level is None


def test_subsample_is_seeded_keeps_whole_responses_and_order() -> None:
    examples = [_example(i, E, response=f"r{i // 3}") for i in range(30)]
    first = subsample(examples, 7, seed=0)
    assert first == subsample(examples, 7, seed=0)
    assert first != subsample(examples, 7, seed=1)
    assert 7 <= len(first) <= 9
    ids = [int(e.example_id[1:]) for e in first]
    assert ids == sorted(ids)
    for response in {e.response_id for e in first}:
        assert sum(e.response_id == response for e in first) == 3
    assert subsample(examples, 100) == examples


def test_failed_claims_are_counted_not_scored() -> None:
    examples = [_example(0, E), _example(1, N), _example(2, E)]
    examples[1] = examples[1].model_copy(update={"claim": "a broken claim"})
    progress = Progress(3, "test", enabled=False)
    verdicts = asyncio.run(check_examples(KeywordChecker(), examples, 8, progress))
    assert [v is None for v in verdicts] == [False, True, False]
    assert progress.done == 3
    assert score("keyword", examples, verdicts, 1.0).failed == 1


def test_claims_sharing_references_are_checked_as_one_request() -> None:
    examples = [
        _example(0, E, reference="doc A"),
        _example(1, N, reference="doc B"),
        _example(2, E, reference="doc A"),
    ]
    checker = KeywordChecker()
    progress = Progress(3, "test", enabled=False)
    verdicts = asyncio.run(check_examples(checker, examples, 8, progress))
    assert all(v is not None for v in verdicts)
    assert sorted(checker.requests.values()) == [["claim 0", "claim 2"], ["claim 1"]]


def test_the_embedded_checker_separates_supported_from_contradicted(
    embedded_checker: EmbeddedChecker,
) -> None:
    reference = "The Eiffel Tower is 330 metres tall. It was completed in 1889 in Paris."
    claims = [
        ("The Eiffel Tower was completed in 1889.", True),
        ("The Eiffel Tower is 330 metres tall.", True),
        ("The Eiffel Tower was completed in 1925.", False),
        ("The Eiffel Tower is 120 metres tall.", False),
    ]
    examples = [
        LabelledExample(
            dataset="hand", example_id=str(i), group="g", claim=claim, references=[reference],
            supported=supported,
        )
        for i, (claim, supported) in enumerate(claims)
    ]  # fmt: skip
    progress = Progress(len(examples), "test", enabled=False)
    verdicts = asyncio.run(check_examples(embedded_checker, examples, 2, progress))
    scores = score("embedded", examples, verdicts, 1.0)
    assert scores.failed == 0
    assert scores.binary is not None and scores.binary.auroc == pytest.approx(1.0)
