"""Retrieval diagnostics through the real offline pipeline (sentence extractor, embedded
checker, conflict stage): relevance, use, non-answers and the cause rule."""

from __future__ import annotations

import asyncio

import pytest

from refcheck_callbacks.check.diagnose.causes import cause_of
from refcheck_callbacks.check.diagnose.non_answers import is_non_answer
from refcheck_callbacks.check.embedded import recent
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.check.relevance.features import prepare_passages
from refcheck_callbacks.check.relevance.scorer import EmbeddedRelevance, shipped_static
from refcheck_callbacks.engine.pipeline import Pipeline
from refcheck_callbacks.extract.sentences import SentenceExtractor
from refcheck_callbacks.types import Cause, CheckRequest, CheckResult, Label, Reference, Verdict

TOWER = Reference(
    text="The Eiffel Tower is a lattice tower on the Champ de Mars in Paris, France. "
    "It was completed in 1889.",
    id="tower",
)
TOURISTS = Reference(text="Millions of tourists visit the Eiffel Tower in Paris every year.")
BANANAS = Reference(text="Bananas are rich in potassium.", id="bananas")
QUESTION = "When was the Eiffel Tower completed?"


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    return Pipeline(SentenceExtractor(), EmbeddedChecker())


def run(pipeline: Pipeline, **request: object) -> CheckResult:
    return asyncio.run(pipeline.run([CheckRequest.model_validate(request)]))[0]


def test_each_reference_gets_relevance_and_use_in_input_order(pipeline: Pipeline) -> None:
    result = run(
        pipeline,
        question=QUESTION,
        answer="The Eiffel Tower was completed in 1889.",
        references=[BANANAS, TOWER],
    )
    bananas, tower = result.references_used
    assert (bananas.index, tower.index) == (0, 1)
    assert bananas.relevance < 0.5 < tower.relevance
    assert not bananas.used and tower.used and tower.supports == (0,)
    assert result.verdicts[0].label is Label.ENTAILMENT and result.verdicts[0].cause is None
    assert result.verdicts[0].relevance > 0.5
    assert result.answer_relevance is not None and result.answer_relevance > 0.5
    assert not result.non_answer


def test_a_claim_against_passages_without_the_answer_is_retrieval_missed(
    pipeline: Pipeline,
) -> None:
    result = run(
        pipeline,
        question=QUESTION,
        answer="The Eiffel Tower was completed in 1889.",
        references=[TOURISTS],
    )
    assert result.verdicts[0].label is Label.NEUTRAL
    assert result.verdicts[0].cause is Cause.RETRIEVAL_MISSED


def test_a_claim_that_answers_better_than_anything_retrieved_is_retrieval_missed(
    pipeline: Pipeline,
) -> None:
    """A topical reference can pass the relevance cut and still not answer the question; the
    claim that does answer it came from elsewhere (the rule's second half)."""
    topical = "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris."
    claim = "The Eiffel Tower was completed in 1889."
    relevance = EmbeddedRelevance()
    [reference_alone] = relevance.scores(QUESTION, relevance.prepare([topical]))[1]
    [claim_alone] = relevance.scores(QUESTION, relevance.prepare([claim]))[1]
    assert claim_alone > reference_alone >= relevance.threshold
    result = run(pipeline, question=QUESTION, answer=claim, references=[Reference(text=topical)])
    assert result.verdicts[0].label is Label.NEUTRAL
    assert result.verdicts[0].cause is Cause.RETRIEVAL_MISSED


def test_a_digression_against_relevant_context_is_unsupported_by_it(pipeline: Pipeline) -> None:
    result = run(
        pipeline,
        question=QUESTION,
        answer="The Eiffel Tower was completed in 1889. Its elevators were made in Norway.",
        references=[TOWER],
    )
    digression = result.verdicts[1]
    assert digression.label is Label.NEUTRAL
    assert digression.cause is Cause.UNSUPPORTED_BY_RELEVANT_CONTEXT


def test_a_conflicting_claim_is_contradicted(pipeline: Pipeline) -> None:
    result = run(
        pipeline,
        question=QUESTION,
        answer="The Eiffel Tower was completed in 1925.",
        references=[TOWER],
    )
    assert result.verdicts[0].cause is Cause.CONTRADICTED


def test_without_a_question_claims_still_get_use_and_cause(pipeline: Pipeline) -> None:
    result = run(
        pipeline,
        answer="The Eiffel Tower was completed in 1889. The tower was painted green in 2001.",
        references=[TOWER],
    )
    assert result.answer_relevance is None
    assert result.references_used[0].relevance is None
    assert result.references_used[0].used
    first, second = result.verdicts
    assert first.cause is None and first.relevance is None
    assert second.label is not Label.ENTAILMENT and second.cause is not None


def test_a_refusal_is_a_non_answer_with_no_cause(pipeline: Pipeline) -> None:
    result = run(
        pipeline,
        question="Who won the race?",
        answer="I could not find that in the documents.",
        references=[BANANAS],
    )
    assert result.non_answer
    assert all(verdict.cause is None for verdict in result.verdicts)
    assert result.answer_relevance is not None and result.answer_relevance < 0.5


def test_diagnostics_can_be_turned_off() -> None:
    quiet = Pipeline(SentenceExtractor(), EmbeddedChecker(), diagnostics=False)
    result = run(quiet, question=QUESTION, answer="It was completed in 1889.", references=[TOWER])
    assert result.references_used == () and result.answer_relevance is None
    assert "diagnose" not in result.timings


@pytest.mark.parametrize(
    "text",
    [
        "I could not find that in the documents.",
        "I'm sorry, but the provided context does not mention the winner.",
        "The documents don't say who won.",
        "There is no information about the winner.",
        "The date is not mentioned in the provided text.",
    ],
)
def test_refusals_are_non_answers(text: str) -> None:
    assert is_non_answer(text)


@pytest.mark.parametrize(
    "text",
    ["The tower was completed in 1889.", "I found that the tower opened in 1889.", ""],
)
def test_answers_are_not_non_answers(text: str) -> None:
    assert not is_non_answer(text)


def test_a_long_run_of_spaces_is_read_in_linear_time() -> None:
    assert not is_non_answer("I" + " " * 200_000 + "x")


def test_the_cause_rule() -> None:
    neutral = Verdict(label=Label.NEUTRAL, confidence=1.0)
    assert cause_of(neutral, context_relevant=False) is Cause.RETRIEVAL_MISSED
    assert cause_of(neutral, context_relevant=True) is Cause.UNSUPPORTED_BY_RELEVANT_CONTEXT
    assert cause_of(neutral, context_relevant=False, refusal=True) is None
    contradiction = Verdict(label=Label.CONTRADICTION, confidence=1.0)
    assert cause_of(contradiction, context_relevant=False) is Cause.CONTRADICTED
    assert cause_of(Verdict(label=Label.ENTAILMENT, confidence=1.0), True) is None
    assert cause_of(Verdict(label=None, error="failed"), False) is None


def test_diagnostics_read_the_references_the_checker_prepared(pipeline: Pipeline) -> None:
    texts = [TOWER.text + " (prepared once)"]
    run(
        pipeline,
        question=QUESTION,
        answer="It was completed in 1889.",
        references=[Reference(text=texts[0])],
    )
    checked = recent.recall(texts)
    assert checked is not None, "the checker keeps what it prepared"
    reused = EmbeddedRelevance().prepare(texts)[0]
    fresh = prepare_passages(texts, shipped_static())[0]
    assert list(reused.ids) == list(fresh.ids)
    assert float(reused.vector @ fresh.vector) == pytest.approx(1.0, abs=1e-6)
