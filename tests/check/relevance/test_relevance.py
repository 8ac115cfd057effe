"""The shipped relevance head: answer-bearing passages score above topical ones."""

from __future__ import annotations

import json

import numpy as np
import pytest

from refcheck_callbacks.bench.metrics import mean_average_precision
from refcheck_callbacks.check.relevance.answer_types import AnswerType, expected_type
from refcheck_callbacks.check.relevance.head import HEAD_PATH, RelevanceHead, load_head
from refcheck_callbacks.check.relevance.scorer import EmbeddedRelevance


@pytest.fixture(scope="module")
def relevance() -> EmbeddedRelevance:
    return EmbeddedRelevance()


def test_an_answer_bearing_passage_outranks_topical_ones(relevance: EmbeddedRelevance) -> None:
    passages = relevance.prepare(
        [
            "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris.",
            "Construction of the Eiffel Tower was completed in March 1889.",
            "Millions of tourists visit the tower every year and climb its stairs.",
        ]
    )
    scores = relevance.score("When was the Eiffel Tower completed?", passages)
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert scores.index(max(scores)) == 1


def test_an_unrelated_passage_is_not_relevant(relevance: EmbeddedRelevance) -> None:
    passages = relevance.prepare(
        [
            "Photosynthesis converts light energy into chemical energy in plants.",
            "Marie Curie was a physicist who won two Nobel Prizes.",
        ]
    )
    unrelated, answer = relevance.score("Who won two Nobel Prizes?", passages)
    assert unrelated < relevance.threshold <= answer


def test_a_claim_is_read_with_the_rest_of_its_answer(relevance: EmbeddedRelevance) -> None:
    question = "When was the Eiffel Tower completed?"
    claims = [
        "The Eiffel Tower was completed in 1889.",
        "It was built for the 1889 World's Fair in Paris.",
        "Bananas are rich in potassium.",
    ]
    on_topic, context, digression = relevance.claim_scores(question, relevance.prepare(claims))
    assert all(0.0 <= score <= 1.0 for score in (on_topic, context, digression))
    assert digression < min(on_topic, context)
    # A one-claim answer is judged against the question alone, not against itself.
    [alone] = relevance.claim_scores(question, relevance.prepare(claims[2:]))
    assert alone < 0.5 < relevance.claim_scores(question, relevance.prepare(claims[:1]))[0]
    assert relevance.claim_scores(question, []) == []


def test_no_passage_gives_no_score(relevance: EmbeddedRelevance) -> None:
    assert relevance.score("Who?", relevance.prepare([])) == []


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When did the war end?", AnswerType.DATE),
        ("what year was the bridge built", AnswerType.DATE),
        ("How many moons does Mars have?", AnswerType.NUMBER),
        ("Who wrote Hamlet?", AnswerType.PERSON),
        ("Where is the Taj Mahal?", AnswerType.PLACE),
        ("What is a glacier?", AnswerType.DEFINITION),
        ("Name the largest ocean.", AnswerType.OTHER),
    ],
)
def test_the_expected_answer_type_follows_the_wh_word(question: str, kind: AnswerType) -> None:
    assert expected_type(question) is kind


def test_mean_average_precision_ranks_within_each_question() -> None:
    groups = ["a", "a", "a", "b", "b", "c"]
    relevant = [False, True, False, True, False, True]
    scores = [0.9, 0.5, 0.1, 0.8, 0.2, 0.3]
    # a: the relevant passage is second (1/2); b: first (1); c has no negative: left out.
    assert mean_average_precision(groups, relevant, scores) == pytest.approx(0.75)


def test_the_loaded_head_cuts_at_one_half_as_it_ranked_and_decided_at_its_own_cut() -> None:
    """The head's balanced cut is folded into its output, so that the cause rule, the exported
    relevant / not_relevant label and the alert's le="0.5" bucket read one cut."""
    raw = RelevanceHead.from_json(json.loads(HEAD_PATH.read_text(encoding="utf-8")))
    centred = load_head()
    assert raw.threshold != 0.5 and centred.threshold == 0.5
    features = np.random.default_rng(3).normal(size=(500, len(raw.feature_names)))
    features = features * raw.scale + raw.mean
    before, after = raw.probability(features), centred.probability(features)
    assert (np.argsort(before) == np.argsort(after)).all()
    assert ((before >= raw.threshold) == (after >= 0.5)).mean() > 0.99  # rounding at the cut
