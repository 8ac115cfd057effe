"""Retrieval diagnostics through the OpenTelemetry exporter, read back from the real SDK's
in-memory exporters: `relevance` evaluation events (per reference with its document id, and
for the answer), cause and relevance on claim events, and the diagnostics' metrics."""

from __future__ import annotations

import time
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from telemetry import Telemetry

from refcheck_callbacks import (
    CharSpan,
    CheckRequest,
    CheckResult,
    Claim,
    Evidence,
    Label,
    Outcome,
    Ratios,
    Reference,
    ResponseLabel,
)
from refcheck_callbacks.exporters import names
from refcheck_callbacks.exporters.instruments import RATIO_BUCKETS
from refcheck_callbacks.types import Cause, ReferenceUse, Verdict

QUESTION = "When did the Eiffel Tower open?"
DOCS = ("eiffel-opening", "eiffel-height", "louvre")


def _diagnosed(**fields: Any) -> CheckResult:
    """Three references (two with ids of the retriever, one relevant and used), three claims:
    supported, unsupported by the relevant context, and one that came from elsewhere."""
    now = time.time()
    request = CheckRequest(
        answer="It opened in 1889. It is 330 metres tall. It was painted gold.",
        question=QUESTION,
        references=[
            Reference(text="The Eiffel Tower opened in 1889.", id=DOCS[0]),
            Reference(text="The tower is 330 metres tall.", id=DOCS[1]),
            Reference(text="The Louvre is a museum."),
        ],
        response_id="resp-7",
        model="gpt-test",
        submitted_at=now - 1,
    )
    verdicts = [
        Verdict(
            label=Label.ENTAILMENT,
            confidence=0.9,
            evidence=[
                Evidence(reference_index=0, reference_id=DOCS[0], span=CharSpan(start=0, end=5))
            ],
            relevance=0.95,
        ),
        Verdict(
            label=Label.NEUTRAL,
            confidence=0.6,
            relevance=0.35,
            cause=Cause.UNSUPPORTED_BY_RELEVANT_CONTEXT,
        ),
        Verdict(label=Label.NEUTRAL, confidence=0.7, relevance=0.05, cause=Cause.RETRIEVAL_MISSED),
    ]
    defaults: dict[str, Any] = {
        "request": request,
        "outcome": Outcome.CHECKED,
        "claims": [Claim(text=t) for t in ("It opened in 1889.", "330 m.", "Painted gold.")],
        "verdicts": verdicts,
        "response_label": ResponseLabel.NEUTRAL,
        "ratios": Ratios(entailment=1 / 3, neutral=2 / 3),
        "checker": "scripted",
        "references_used": [
            ReferenceUse(index=0, relevance=0.92, used=True, supports=(0,)),
            ReferenceUse(index=1, relevance=0.4),
            ReferenceUse(index=2, relevance=0.03),
        ],
        "answer_relevance": 0.81,
        "finished_at": now,
    }
    return CheckResult(**{**defaults, **fields})


def _evaluations(telemetry: Telemetry, name: str) -> list[dict[str, Any]]:
    return [
        dict(r.log_record.attributes or {})
        for r in telemetry.evaluation_records()
        if (r.log_record.attributes or {}).get(names.GEN_AI_EVALUATION_NAME) == name
    ]


def test_each_reference_and_the_answer_get_a_relevance_event_with_the_documents_ids(
    telemetry: Telemetry,
) -> None:
    telemetry.exporter().export([_diagnosed()])
    *references, answer = _evaluations(telemetry, names.RELEVANCE_EVALUATION)
    assert [e[names.RELEVANCE_SUBJECT] for e in references] == ["reference"] * 3
    assert [e[names.REFERENCE_INDEX] for e in references] == [0, 1, 2]
    assert [e.get(names.REFERENCE_DOC_ID) for e in references] == [DOCS[0], DOCS[1], None]
    assert [e[names.GEN_AI_EVALUATION_SCORE_VALUE] for e in references] == [0.92, 0.4, 0.03]
    assert [e[names.GEN_AI_EVALUATION_SCORE_LABEL] for e in references] == [
        "relevant",
        "not_relevant",
        "not_relevant",
    ]
    assert [e[names.REFERENCE_USED] for e in references] == [True, False, False]
    assert references[0][names.REFERENCE_SUPPORTED_CLAIMS] == (0,)
    assert names.REFERENCE_SUPPORTED_CLAIMS not in references[1]
    assert {e[names.GEN_AI_RESPONSE_ID] for e in references} == {"resp-7"}

    assert answer[names.RELEVANCE_SUBJECT] == "answer"
    assert answer[names.GEN_AI_EVALUATION_SCORE_VALUE] == 0.81
    assert answer[names.GEN_AI_EVALUATION_SCORE_LABEL] == "relevant"
    assert answer[names.RESPONSE_REFERENCES_USED_RATIO] == pytest.approx(1 / 3)
    assert answer[names.RESPONSE_NON_ANSWER] is False


def test_the_answers_own_event_stays_last_and_every_event_is_in_the_evaluation_span(
    telemetry: Telemetry,
) -> None:
    telemetry.exporter().export([_diagnosed()])
    records = telemetry.evaluation_records()
    evaluations = [(r.log_record.attributes or {})[names.GEN_AI_EVALUATION_NAME] for r in records]
    assert evaluations == ["refcheck.claim"] * 3 + ["relevance"] * 4 + ["refcheck.response"]
    span = telemetry.span(names.EVALUATION_SPAN)
    assert span.context is not None
    assert {r.log_record.span_id for r in records} == {span.context.span_id}


def test_span_events_carry_the_same_relevance_events_for_trace_only_back_ends(
    telemetry: Telemetry,
) -> None:
    telemetry.exporter(events="span").export([_diagnosed()])
    span = telemetry.span(names.EVALUATION_SPAN)
    relevance = [
        dict(e.attributes or {})
        for e in span.events
        if (e.attributes or {}).get(names.GEN_AI_EVALUATION_NAME) == names.RELEVANCE_EVALUATION
    ]
    assert [e.get(names.REFERENCE_DOC_ID) for e in relevance] == [DOCS[0], DOCS[1], None, None]


def test_claim_events_carry_cause_and_relevance_and_a_supported_claim_no_cause(
    telemetry: Telemetry,
) -> None:
    telemetry.exporter().export([_diagnosed()])
    supported, unsupported, missed = _evaluations(telemetry, names.CLAIM_EVALUATION)
    assert names.CLAIM_CAUSE not in supported
    assert supported[names.CLAIM_RELEVANCE] == 0.95
    assert unsupported[names.CLAIM_CAUSE] == "unsupported_by_relevant_context"
    assert missed[names.CLAIM_CAUSE] == "retrieval_missed"
    assert missed[names.CLAIM_RELEVANCE] == 0.05


def test_the_span_and_the_answer_event_carry_answer_relevance_share_used_and_non_answer(
    telemetry: Telemetry,
) -> None:
    telemetry.exporter().export([_diagnosed()])
    span = dict(telemetry.span(names.EVALUATION_SPAN).attributes or {})
    [response] = _evaluations(telemetry, names.RESPONSE_EVALUATION)
    for attributes in (span, response):
        assert attributes[names.RESPONSE_ANSWER_RELEVANCE] == 0.81
        assert attributes[names.RESPONSE_REFERENCES_USED_RATIO] == pytest.approx(1 / 3)
        assert attributes[names.RESPONSE_NON_ANSWER] is False


def _histogram(telemetry: Telemetry, name: str) -> HistogramDataPoint:
    [point] = telemetry.points(name).values()
    assert isinstance(point, HistogramDataPoint)
    return point


def _per_bucket(point: HistogramDataPoint) -> dict[str, int]:
    """Counts by upper bound, as Prometheus's `le` labels read them (cumulated)."""
    bounds = [*(f"{b:g}" for b in point.explicit_bounds), "+Inf"]
    running, cumulative = 0, {}
    for bound, count in zip(bounds, point.bucket_counts, strict=True):
        running += count
        cumulative[bound] = running
    return cumulative


def test_metrics_hold_the_relevance_distribution_share_used_and_claims_by_cause(
    telemetry: Telemetry,
) -> None:
    exporter = telemetry.exporter()
    exporter.export([_diagnosed(), _diagnosed()])
    common = {names.CHECKER: "scripted", names.GEN_AI_REQUEST_MODEL: "gpt-test"}

    relevance = _histogram(telemetry, names.REFERENCE_RELEVANCE)
    assert dict(relevance.attributes) == common
    assert tuple(relevance.explicit_bounds) == RATIO_BUCKETS
    assert (relevance.count, relevance.sum) == (6, pytest.approx(2 * (0.92 + 0.4 + 0.03)))
    assert _per_bucket(relevance)["0.5"] == 4  # not relevant: what the drop alert counts
    assert telemetry.metrics()[names.REFERENCE_RELEVANCE].unit == "1"

    used = _histogram(telemetry, names.REFERENCES_USED_RATIO)
    assert (used.count, used.sum) == (2, pytest.approx(2 / 3))
    answer = _histogram(telemetry, names.ANSWER_RELEVANCE)
    assert (answer.count, answer.sum) == (2, pytest.approx(1.62))

    causes = telemetry.points(names.CLAIM_CAUSES)
    assert {dict(k)[names.CLAIM_CAUSE]: p.value for k, p in causes.items()} == {
        "retrieval_missed": 2,
        "unsupported_by_relevant_context": 2,
    }
    assert all(set(dict(k)) == {*common, names.CLAIM_CAUSE} for k in causes)  # no ids, no text
    assert names.NON_ANSWERS not in telemetry.metrics()


def test_a_non_answer_is_counted_apart_and_labelled_so(telemetry: Telemetry) -> None:
    refusal = _diagnosed(
        request=CheckRequest(
            answer="I could not find that in the documents.",
            question=QUESTION,
            references=[Reference(text="The Louvre is a museum.", id="louvre")],
        ),
        outcome=Outcome.ABSTAIN,
        claims=[],
        verdicts=[],
        response_label=ResponseLabel.ABSTAIN,
        ratios=None,
        references_used=[ReferenceUse(index=0, relevance=0.1)],
        answer_relevance=0.7,
        non_answer=True,
    )
    telemetry.exporter().export([refusal])
    [reference, answer] = _evaluations(telemetry, names.RELEVANCE_EVALUATION)
    assert reference[names.REFERENCE_DOC_ID] == "louvre"
    assert answer[names.GEN_AI_EVALUATION_SCORE_LABEL] == "non_answer"
    assert answer[names.RESPONSE_NON_ANSWER] is True
    [non_answers] = telemetry.points(names.NON_ANSWERS).values()
    assert non_answers.value == 1
    assert names.CLAIM_CAUSES not in telemetry.metrics()
    assert _histogram(telemetry, names.REFERENCES_USED_RATIO).sum == 0.0


def test_a_result_without_diagnostics_adds_no_event_attribute_or_metric(
    telemetry: Telemetry,
) -> None:
    plain = _diagnosed(
        verdicts=[Verdict(label=Label.ENTAILMENT, confidence=0.9)] * 3,
        references_used=[],
        answer_relevance=None,
    )
    telemetry.exporter().export([plain])
    assert _evaluations(telemetry, names.RELEVANCE_EVALUATION) == []
    span = dict(telemetry.span(names.EVALUATION_SPAN).attributes or {})
    diagnostic = {
        names.RESPONSE_ANSWER_RELEVANCE,
        names.RESPONSE_REFERENCES_USED_RATIO,
        names.RESPONSE_NON_ANSWER,
    }
    assert not diagnostic & set(span)
    claims = _evaluations(telemetry, names.CLAIM_EVALUATION)
    assert all(not {names.CLAIM_CAUSE, names.CLAIM_RELEVANCE} & set(c) for c in claims)
    exported = set(telemetry.metrics())
    assert names.CLAIMS in exported
    for metric in (
        names.REFERENCE_RELEVANCE,
        names.ANSWER_RELEVANCE,
        names.REFERENCES_USED_RATIO,
        names.CLAIM_CAUSES,
        names.NON_ANSWERS,
    ):
        assert metric not in exported


def test_a_reference_use_past_the_requests_references_costs_only_its_id(
    telemetry: Telemetry,
) -> None:
    """A diagnostics bug (an index the request does not have) must not cost the telemetry."""
    odd = _diagnosed(references_used=[ReferenceUse(index=9, relevance=0.8, used=True)])
    telemetry.exporter().export([odd])
    [reference, _answer] = _evaluations(telemetry, names.RELEVANCE_EVALUATION)
    assert reference[names.REFERENCE_INDEX] == 9 and names.REFERENCE_DOC_ID not in reference
