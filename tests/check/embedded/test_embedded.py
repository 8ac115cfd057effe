"""The learned embedded checker: shipped parameters, sane calibrated verdicts, evidence spans."""

from __future__ import annotations

import json
import math

import pytest
from reference_checks import case_items, recorded_cases
from results import ResultSink

from refcheck_callbacks import RefCheckMonitor, Reference
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.embeddings.minilm import SentenceEncoder, bundled_minilm_path
from refcheck_callbacks.text.lexical import dates, entities, unmatched_share
from refcheck_callbacks.types import CheckItem, Claim, Label, Outcome

EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
    "It is named after the engineer Gustave Eiffel, whose company designed and built the tower "
    "from 1887 to 1889. The tower is 330 metres tall, about the same height as an 81-storey "
    "building. It was the entrance arch to the 1889 World's Fair."
)
PAINT = (
    "The tower has been repainted 19 times since it was built. Painting takes about 60 tonnes "
    "of paint and is done roughly every seven years."
)
PYTHON = (
    "Python is a high-level, general-purpose programming language. It was created by Guido "
    "van Rossum and first released in 1991. Python 3.0 was released in 2008."
)


def _items(claims: list[str], references: list[str]) -> list[CheckItem]:
    refs = [Reference(text=text, id=f"doc-{i}") for i, text in enumerate(references)]
    return [
        CheckItem(claim=Claim(text=claim), references=refs, request_id="r", claim_index=index)
        for index, claim in enumerate(claims)
    ]


RECORDED_PROBABILITY_TOLERANCE = 1e-6
"""What the golden test protects: the shipped parameters, the feature code and every tree path.

Features are computed in float64 and rounded to float32 once, so BLAS kernels and SIMD widths
move these probabilities by at most ~4e-16 (tests/check/embedded/test_embedded_arithmetic.py);
1e-6 leaves room for another libm's last bits in exp. The smallest change that matters is a
feature crossing a tree split by one float32 ulp, which moved a probability by 0.009 before the
arithmetic was made exact; a changed parameter or feature moves them by far more."""


def test_shipped_parameters_reproduce_the_recorded_probabilities(
    embedded_checker: EmbeddedChecker,
) -> None:
    from refcheck_callbacks.check.embedded.model import (
        METADATA_PATH,
        MODEL_PATH,
        numeric_environment,
    )

    assert MODEL_PATH.stat().st_size + METADATA_PATH.stat().st_size < 10_000_000
    metadata = json.loads(METADATA_PATH.read_text(encoding="utf-8"))
    recorded = recorded_cases()
    assert len(recorded) >= 5
    environments = f"recorded in {metadata['environment']['recorded']}, now {numeric_environment()}"
    for case, item in zip(recorded, case_items(recorded), strict=True):
        verdict = embedded_checker.check_batch([item])[0]
        assert verdict.label is not None and verdict.label.value == case["label"], environments
        assert verdict.probabilities is not None
        assert sorted(case["probabilities"]) == sorted(label.value for label in Label)
        for label, probability in case["probabilities"].items():
            assert verdict.probabilities[Label(label)] == pytest.approx(
                probability, abs=RECORDED_PROBABILITY_TOLERANCE
            ), environments


def test_probabilities_are_a_distribution_and_confidence_is_the_labels(
    embedded_checker: EmbeddedChecker,
) -> None:
    claims = [
        "The Eiffel Tower is 330 metres tall.",
        "The Eiffel Tower is 450 metres tall.",
        "The tower was painted bright green to honour the French navy.",
        "Penguins are the fastest animals on land.",
    ]
    verdicts = embedded_checker.check_batch(_items(claims, [EIFFEL, PAINT]))
    assert len(verdicts) == len(claims)
    for verdict in verdicts:
        assert verdict.label is not None and verdict.probabilities is not None
        assert math.isclose(sum(verdict.probabilities.values()), 1.0, abs_tol=1e-6)
        assert all(0.0 <= p <= 1.0 for p in verdict.probabilities.values())
        assert verdict.confidence == pytest.approx(verdict.probabilities[verdict.label])
        assert verdict.evidence and verdict.evidence[0].probability == verdict.confidence


def test_planted_contradictions_unsupported_and_supported_claims(
    embedded_checker: EmbeddedChecker,
) -> None:
    eiffel = embedded_checker.check_batch(
        _items(
            [
                "The Eiffel Tower is 450 metres tall.",
                "It was built by Gustave Eiffel's company from 1887 to 1889.",
                "The tower was originally painted bright green to honour the French navy.",
            ],
            [EIFFEL, PAINT],
        )
    )
    assert [v.label for v in eiffel] == [Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL]
    python = embedded_checker.check_batch(
        _items(
            [
                "Python was created by Guido van Rossum and first released in 1994.",
                "Python was created by Guido van Rossum and first released in 1991.",
                "It is the most widely used language for embedded firmware.",
            ],
            [PYTHON],
        )
    )
    assert [v.label for v in python] == [Label.CONTRADICTION, Label.ENTAILMENT, Label.NEUTRAL]
    # The changed figure, not the topic, is what makes the first claim a contradiction.
    assert eiffel[0].probabilities is not None and python[1].probabilities is not None
    assert python[1].probabilities[Label.ENTAILMENT] > 0.5
    assert "figures" in (eiffel[0].explanation or "")


def test_evidence_span_points_at_the_deciding_sentence(
    embedded_checker: EmbeddedChecker,
) -> None:
    references = [PAINT, EIFFEL]
    verdicts = embedded_checker.check_batch(
        _items(
            ["The Eiffel Tower is 450 metres tall.", "Painting takes 60 tonnes of paint."],
            references,
        )
    )
    height, paint = (v.evidence[0] for v in verdicts)
    assert height.reference_index == 1 and height.reference_id == "doc-1"
    assert "330 metres tall" in height.span.of(references[1])
    assert paint.reference_index == 0
    assert "60 tonnes" in paint.span.of(references[0])
    assert len(paint.span.of(references[0]).split()) <= 40


def test_a_claim_without_references_is_neutral(embedded_checker: EmbeddedChecker) -> None:
    verdict = embedded_checker.check_batch(_items(["The sky is green."], [""]))[0]
    assert verdict.label is Label.NEUTRAL
    assert verdict.explanation == "no reference text"


def test_a_claim_the_tokenizer_rejects_fails_alone(embedded_checker: EmbeddedChecker) -> None:
    # A lone surrogate cannot be tokenised (the monitor's intake repairs it; a direct caller
    # may not): that claim gets an error verdict, its neighbour in the batch is still checked.
    bad, good = embedded_checker.check_batch(
        _items(["bad \ud800 claim", "The Eiffel Tower is 330 metres tall."], [EIFFEL])
    )
    assert bad.label is None and bad.error is not None and "TypeError" in bad.error
    assert good.label is Label.ENTAILMENT


def test_the_checker_runs_in_the_monitor(monitor: RefCheckMonitor, sink: ResultSink) -> None:
    result = monitor.check(
        question="How tall is the Eiffel Tower?",
        answer="The Eiffel Tower is 450 metres tall. It was built from 1887 to 1889.",
        references=[Reference(text=EIFFEL, id="wiki")],
    )
    assert result.outcome is Outcome.CHECKED
    assert result.checker == "embedded"
    assert [v.label for v in result.verdicts] == [Label.CONTRADICTION, Label.ENTAILMENT]
    assert "330 metres" in result.evidence_text(0)


def test_a_given_encoder_lends_its_tokenizer(encoder: SentenceEncoder) -> None:
    shared = EmbeddedChecker(encoder=encoder)
    own = EmbeddedChecker()
    items = _items(["The Eiffel Tower is 330 metres tall."], [EIFFEL])
    assert shared.check_batch(items)[0].probabilities == own.check_batch(items)[0].probabilities
    assert bundled_minilm_path().is_dir()


def test_lexical_signals_find_names_dates_and_missing_facts() -> None:
    text = "The tower was built by Gustave Eiffel in 1889. In May, Paris hosted the fair."
    assert {"gustave", "eiffel", "1889", "paris"} <= entities(text)
    assert "in" not in entities(text) and "the" not in entities(text)
    assert dates(text) == {"1889", "may"}
    assert unmatched_share({"450", "1889"}, {"1889"}) == 0.5
    assert unmatched_share(set(), {"x"}) == 0.0
