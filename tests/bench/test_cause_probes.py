"""The relevance bench's parts on hand-made data: probe construction, the swapped-reference
derangement, the baseline scorer and its cut, and the figures of a probe."""

from __future__ import annotations

import random

import pytest

from refcheck_callbacks.bench.cause_probes import Probe, changed_figure, qa_probes, swapped
from refcheck_callbacks.bench.datasets import LabelledExample
from refcheck_callbacks.bench.relevance_baseline import StaticCosineRelevance, balanced_threshold
from refcheck_callbacks.bench.relevance_bench import probe_figures
from refcheck_callbacks.bench.relevance_ranking import QAQuestion
from refcheck_callbacks.types import Cause, Label, Verdict

QUESTION = QAQuestion(
    split="hand dev",
    question_id="q1",
    question="when was the eiffel tower opened ?",
    passages=(
        "The Eiffel Tower is a wrought-iron tower in Paris .",
        "The tower was opened in 1889 for the World's Fair .",
        "Its design was criticised by artists .",
        "Visitors since 1889 number in the hundreds of millions .",
    ),
    relevant=(False, True, False, True),
)


def test_the_qa_probes_pair_the_right_answer_with_what_each_probe_says() -> None:
    probes = {probe.name: probe for probe in qa_probes([QUESTION])}
    assert list(probes) == [
        "right vs topical", "right vs positives", "wrong vs positives", "right vs counterfactual",
    ]  # fmt: skip
    right = "The tower was opened in 1889 for the World's Fair ."
    for probe in probes.values():
        [request] = probe.requests
        assert request.question == QUESTION.question and probe.source == "hand dev"
    texts = {name: [r.text for r in p.requests[0].references] for name, p in probes.items()}
    claims = {name: p.requests[0].claims[0].text for name, p in probes.items()}  # type: ignore[index]
    assert claims["right vs topical"] == right and texts["right vs topical"] == list(
        QUESTION.negatives
    )
    assert texts["right vs positives"] == QUESTION.positives
    figure, value = changed_figure(right) or ("", "")
    assert (figure, value) == ("1889", "1896")
    assert claims["wrong vs positives"] == right.replace("1889", "1896")
    assert texts["wrong vs positives"] == QUESTION.positives
    # The counterfactual context states the other value wherever it stated the answer's.
    assert claims["right vs counterfactual"] == right
    assert texts["right vs counterfactual"] == [
        p.replace("1889", "1896") for p in QUESTION.positives
    ]


def test_an_answer_without_a_figure_gets_no_figure_probes() -> None:
    plain = QAQuestion("hand dev", "q2", "who designed it ?", ("Gustave Eiffel .", "Paris ."),
                       (True, False))  # fmt: skip
    assert [p.name for p in qa_probes([plain])] == ["right vs topical", "right vs positives"]


def _examples(groups: int, per_group: int) -> list[LabelledExample]:
    return [
        LabelledExample(
            dataset="hand",
            example_id=f"{g}/{i}",
            group=f"g{g}",
            claim=f"claim {g} {i}",
            references=[f"document {g}"],
            supported=True,
        )
        for g in range(groups)
        for i in range(per_group)
    ]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_swapped_references_come_from_another_group_and_cover_every_group(seed: int) -> None:
    examples = _examples(groups=6, per_group=3)
    out = swapped(examples, seed)
    assert [e.claim for e in out] == [e.claim for e in examples]
    for before, after in zip(examples, out, strict=True):
        assert after.references != before.references
    # A derangement of the groups: each group's references go to exactly one other group.
    given = {e.group: e.references[0] for e in out}
    assert sorted(given.values()) == sorted({e.references[0] for e in examples})
    assert swapped(examples, seed) == out


def test_a_single_group_cannot_be_swapped() -> None:
    assert swapped(_examples(groups=1, per_group=4)) == []


def test_the_balanced_cut_separates_separable_scores_and_maximises_balanced_accuracy() -> None:
    relevant = [False, False, True, False, True, True]
    scores = [0.1, 0.2, 0.7, 0.3, 0.8, 0.9]
    cut = balanced_threshold(relevant, scores)
    assert 0.3 < cut < 0.7
    rng = random.Random(4)
    relevant = [rng.random() < 0.3 for _ in range(200)]
    scores = [rng.random() + (0.3 if r else 0.0) for r in relevant]

    def balanced(cut: float) -> float:
        hits = [s >= cut for s, r in zip(scores, relevant, strict=True) if r]
        misses = [s < cut for s, r in zip(scores, relevant, strict=True) if not r]
        return (sum(hits) / len(hits) + sum(misses) / len(misses)) / 2

    best = max(balanced(s) for s in scores)
    assert balanced(balanced_threshold(relevant, scores)) == pytest.approx(best)
    assert balanced_threshold([True, True], [0.1, 0.2]) == 0.5


def test_the_baseline_scores_a_passage_on_the_question_above_one_off_it() -> None:
    scorer = StaticCosineRelevance(threshold=0.6)
    passages = scorer.prepare(
        ["The Eiffel Tower opened in Paris in 1889.", "Photosynthesis turns light into sugar."]
    )
    among, alone = scorer.scores("When did the Eiffel Tower in Paris open?", passages)
    assert among == alone and all(0.0 <= s <= 1.0 for s in among)
    assert among[0] > among[1]
    # A cosine reads no other claim: a claim's relevance is its score against the question.
    assert scorer.claim_scores("When did the Eiffel Tower in Paris open?", passages) == among
    assert scorer.threshold == 0.6 and scorer.with_threshold(0.7).threshold == 0.7
    assert scorer.score("anything", []) == []


def _verdict(label: Label, cause: Cause | None = None) -> Verdict:
    return Verdict(label=label, confidence=0.9, cause=cause)


def test_the_probe_figures_are_shares_of_the_claims_and_of_the_unsupported() -> None:
    probe = Probe(
        "swapped references",
        "hand",
        {
            "unsupported:retrieval_missed": "high",
            "label:entailment": "~0",
            "cause:contradicted": "",
        },
    )
    verdicts = [
        _verdict(Label.ENTAILMENT),
        _verdict(Label.NEUTRAL, Cause.RETRIEVAL_MISSED),
        _verdict(Label.NEUTRAL, Cause.RETRIEVAL_MISSED),
        _verdict(Label.NEUTRAL, Cause.UNSUPPORTED_BY_RELEVANT_CONTEXT),
        _verdict(Label.CONTRADICTION, Cause.CONTRADICTED),
        Verdict(label=None, error="the checker failed"),
    ]
    figures = probe_figures(probe, "embedded", "head", 3, verdicts)
    assert figures.claims == 5 and figures.unsupported == 4 and figures.requests == 3
    assert figures.labels == {"entailment": 0.2, "neutral": 0.6, "contradiction": 0.2}
    assert figures.causes == {
        "retrieval_missed": 0.5, "unsupported_by_relevant_context": 0.25, "contradicted": 0.25,
    }  # fmt: skip
    assert figures.figures == {
        "unsupported:retrieval_missed": 0.5, "label:entailment": 0.2, "cause:contradicted": 0.2,
    }  # fmt: skip
    empty = probe_figures(probe, "embedded", "head", 0, [])
    assert empty.claims == 0 and set(empty.figures.values()) == {None}
