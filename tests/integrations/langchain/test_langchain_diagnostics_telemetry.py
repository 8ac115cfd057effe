"""End to end: a LangChain RAG app (real vector-store retriever, fake chat model) checked by
RefCheckCallbackHandler on the embedded checker, exported through the real OpenTelemetry SDK.
Retrieval diagnostics computed by the pipeline reach the `relevance` evaluation events (with
the retrieved documents' ids), the claim events' cause and the metrics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_chains import rag_chain
from langchain_core.language_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from results import ResultSink
from telemetry import Telemetry

from refcheck_callbacks import CheckResult, RefCheckMonitor
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.exporters import names
from refcheck_callbacks.integrations.langchain import RefCheckCallbackHandler


@pytest.fixture
def exported_monitor(
    embedded_checker: EmbeddedChecker, sink: ResultSink, telemetry: Telemetry
) -> Iterator[RefCheckMonitor]:
    with RefCheckMonitor(
        checker=embedded_checker, exporters=[telemetry.exporter()], on_result=[sink]
    ) as monitor:
        yield monitor


def _ask(
    retriever: BaseRetriever, monitor: RefCheckMonitor, sink: ResultSink, question: str, answer: str
) -> CheckResult:
    chain = rag_chain(retriever, FakeListChatModel(responses=[answer]))
    before = len(sink.results)
    chain.invoke(question, config={"callbacks": [RefCheckCallbackHandler(monitor)]})
    assert monitor.flush(60)
    [result] = sink.results[before:]
    return result


def _evaluations(telemetry: Telemetry, result: CheckResult, name: str) -> list[dict[str, Any]]:
    """The answer's evaluation events named `name`, in order."""
    return [
        attributes
        for record in telemetry.evaluation_records()
        if (attributes := dict(record.log_record.attributes or {})).get(
            names.GEN_AI_EVALUATION_NAME
        )
        == name
        and record.log_record.trace_id == _trace_id(telemetry, result)
    ]


def _trace_id(telemetry: Telemetry, result: CheckResult) -> int:
    [span] = [
        s
        for s in telemetry.spans.get_finished_spans()
        if s.name == names.EVALUATION_SPAN
        and (s.attributes or {}).get(names.REQUEST_ID) == result.request.request_id
    ]
    assert span.context is not None
    return span.context.trace_id


def test_relevance_events_name_the_retrieved_documents_and_claims_carry_their_cause(
    vector_store: InMemoryVectorStore,
    vector_retriever: BaseRetriever,
    exported_monitor: RefCheckMonitor,
    sink: ResultSink,
    telemetry: Telemetry,
) -> None:
    question = "How tall is the Eiffel Tower?"
    answer = "The Eiffel Tower is 330 metres tall. It was painted gold by Gustave Eiffel in 2020."
    result = _ask(vector_retriever, exported_monitor, sink, question, answer)

    retrieved = [d.id for d in vector_store.similarity_search(question, k=2)]
    assert retrieved[0] == "eiffel"
    assert [r.id for r in result.request.references] == retrieved
    uses = result.references_used
    assert [u.index for u in uses] == [0, 1] and all(u.relevance is not None for u in uses)

    *references, answered = _evaluations(telemetry, result, names.RELEVANCE_EVALUATION)
    assert [e[names.REFERENCE_DOC_ID] for e in references] == retrieved
    assert [e[names.GEN_AI_EVALUATION_SCORE_VALUE] for e in references] == [
        u.relevance for u in uses
    ]
    eiffel, other = references
    assert eiffel[names.GEN_AI_EVALUATION_SCORE_VALUE] > other[names.GEN_AI_EVALUATION_SCORE_VALUE]
    assert eiffel[names.GEN_AI_EVALUATION_SCORE_LABEL] == "relevant"
    assert eiffel[names.REFERENCE_USED] is True
    assert answered[names.RELEVANCE_SUBJECT] == "answer"
    assert answered[names.GEN_AI_EVALUATION_SCORE_VALUE] == result.answer_relevance

    claims = _evaluations(telemetry, result, names.CLAIM_EVALUATION)
    assert [c.get(names.CLAIM_CAUSE) for c in claims] == [
        v.cause and v.cause.value for v in result.verdicts
    ]
    assert claims[0][names.GEN_AI_EVALUATION_SCORE_LABEL] == "entailment"
    assert names.CLAIM_CAUSE not in claims[0]
    assert 0 in eiffel[names.REFERENCE_SUPPORTED_CLAIMS]
    # The painting is nowhere in the documents, yet the Eiffel document is relevant to the
    # question: the documents were right, the answer went beyond them.
    assert claims[1][names.CLAIM_CAUSE] == "unsupported_by_relevant_context"

    [relevance] = telemetry.points(names.REFERENCE_RELEVANCE).values()
    assert relevance.count == 2
    assert relevance.sum == pytest.approx(sum(u.relevance or 0.0 for u in uses))
    causes = telemetry.points(names.CLAIM_CAUSES)
    assert {dict(k)[names.CLAIM_CAUSE]: p.value for k, p in causes.items()} == {
        "unsupported_by_relevant_context": 1
    }
    [used] = telemetry.points(names.REFERENCES_USED_RATIO).values()
    assert used.count == 1 and used.sum == pytest.approx(0.5)


def test_an_answer_from_outside_the_documents_is_retrieval_missed_and_a_refusal_counted_apart(
    vector_retriever: BaseRetriever,
    exported_monitor: RefCheckMonitor,
    sink: ResultSink,
    telemetry: Telemetry,
) -> None:
    missed = _ask(
        vector_retriever,
        exported_monitor,
        sink,
        "Who painted the Mona Lisa?",
        "Leonardo da Vinci painted the Mona Lisa.",
    )
    references = _evaluations(telemetry, missed, names.RELEVANCE_EVALUATION)[:-1]
    assert {e[names.GEN_AI_EVALUATION_SCORE_LABEL] for e in references} == {"not_relevant"}
    [claim] = _evaluations(telemetry, missed, names.CLAIM_EVALUATION)
    assert claim[names.GEN_AI_EVALUATION_SCORE_LABEL] != "entailment"
    assert claim[names.CLAIM_CAUSE] == "retrieval_missed"

    refusal = _ask(
        vector_retriever,
        exported_monitor,
        sink,
        "Who painted the Mona Lisa?",
        "I could not find that in the documents.",
    )
    assert refusal.non_answer
    answered = _evaluations(telemetry, refusal, names.RELEVANCE_EVALUATION)[-1]
    assert answered[names.GEN_AI_EVALUATION_SCORE_LABEL] == "non_answer"
    [non_answers] = telemetry.points(names.NON_ANSWERS).values()
    assert non_answers.value == 1
    causes = telemetry.points(names.CLAIM_CAUSES)
    assert {dict(k)[names.CLAIM_CAUSE]: p.value for k, p in causes.items()} == {
        "retrieval_missed": 1
    }
    [relevance] = telemetry.points(names.REFERENCE_RELEVANCE).values()
    assert relevance.count == 4  # two retrieved documents per answer
