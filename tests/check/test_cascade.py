"""CascadeChecker with real checkers: the embedded checker first, an LLM judge on a loopback
OpenAI-compatible server second. The server counts every call and answers per claim."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

import pytest
from scripted_openai_server import UNPRICED_MODEL, Received, Reply, ScriptedOpenAIServer
from telemetry import Telemetry

from refcheck_callbacks import CheckItem, Claim, Label, Outcome, RefCheckMonitor, Reference, Verdict
from refcheck_callbacks.check.cascade import CascadeChecker, CascadeStage
from refcheck_callbacks.check.embedded.checker import EmbeddedChecker
from refcheck_callbacks.check.judge.checker import LLMChecker
from refcheck_callbacks.exporters import names
from refcheck_callbacks.llm.client import LLMClient, RetryPolicy

pytestmark = pytest.mark.timeout(120)

REFERENCES = [
    "The Eiffel Tower is in Paris. It was finished in 1889 for the World's Fair. "
    "Gustave Eiffel's company designed and built it. It is about 330 metres tall.",
    "Paris is the capital of France. About two million people live in the city.",
]
CLAIMS = [
    "The Eiffel Tower is in Paris.",
    "The Eiffel Tower was finished in 1889.",
    "It is about 330 metres tall.",
    "The Eiffel Tower was finished in 1925.",
    "The tower is painted bright green every spring.",
    "About two million people live in Paris.",
    "Berlin is the capital of France.",
    "The city hosts a famous jazz festival each July.",
]
JUDGE = "llm-adherence"


def items(claims: Sequence[str] = CLAIMS) -> list[CheckItem]:
    refs = [Reference(text=t, id=f"doc{i}") for i, t in enumerate(REFERENCES)]
    return [
        CheckItem(claim=Claim(text=c), references=refs, request_id="r", claim_index=i)
        for i, c in enumerate(claims)
    ]


def judge(server: ScriptedOpenAIServer) -> LLMChecker:
    client = LLMClient(UNPRICED_MODEL, server.api_base, "k", retry=RetryPolicy(max_retries=0))
    return LLMChecker(client, joint=False)


def judged_claim(request: Received) -> str:
    return re.findall(r"Claim 1: (.*)", request.prompt)[-1].strip()


def answer_neutral_except(broken: str = "") -> object:
    """Every claim Neutral, except `broken`, which gets a reply with no label in it."""

    def respond(request: Received) -> Reply:
        if judged_claim(request) == broken:
            return Reply(content="Claim 1:\nReasoning: I am not sure.")
        return Reply(content="Claim 1:\nReasoning: Checked.\nLabel: Neutral")

    return respond


@pytest.fixture(scope="module")
def first_stage(embedded_checker: EmbeddedChecker) -> list[Verdict]:
    return asyncio.run(embedded_checker.check(items()))


def median_confidence(verdicts: list[Verdict]) -> float:
    ordered = sorted(v.confidence for v in verdicts)
    return (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2


def test_only_claims_below_the_threshold_reach_the_judge(
    embedded_checker: EmbeddedChecker, first_stage: list[Verdict], llm_server: ScriptedOpenAIServer
) -> None:
    threshold = median_confidence(first_stage)
    unsure = {c for c, v in zip(CLAIMS, first_stage, strict=True) if v.confidence < threshold}
    assert 0 < len(unsure) < len(CLAIMS)
    llm_server.respond(answer_neutral_except())
    cascade = CascadeChecker(
        [CascadeStage(embedded_checker, threshold=threshold), judge(llm_server)]
    )
    verdicts = asyncio.run(cascade.check(items()))
    assert {judged_claim(r) for r in llm_server.chat_requests()} == unsure
    assert len(llm_server.chat_requests()) == len(unsure)
    for claim, verdict, cheap in zip(CLAIMS, verdicts, first_stage, strict=True):
        path = [step.stage for step in verdict.stages]
        assert verdict.stages[0].label is cheap.label
        assert verdict.stages[0].confidence == pytest.approx(cheap.confidence)
        if claim in unsure:
            assert path == ["embedded", JUDGE]
            assert verdict.label is Label.NEUTRAL and verdict.usage is not None
            assert verdict.usage.requests == 1
        else:
            assert path == ["embedded"]
            assert (verdict.label, verdict.evidence) == (cheap.label, cheap.evidence)
            assert verdict.usage is None
    assert cascade.name == f"cascade(embedded>{JUDGE})"


def test_by_margin_the_distance_of_p_entailment_from_the_decision_point_decides(
    embedded_checker: EmbeddedChecker, first_stage: list[Verdict], llm_server: ScriptedOpenAIServer
) -> None:
    point = embedded_checker.support_threshold
    assert point == 0.5  # its heads' trained threshold (about 0.38) mapped onto 1/2
    margins = [abs((v.probabilities or {})[Label.ENTAILMENT] - point) for v in first_stage]
    threshold = sorted(margins)[len(margins) // 2]
    llm_server.respond(answer_neutral_except())
    stage = CascadeStage(embedded_checker, threshold=threshold, by="margin")
    asyncio.run(CascadeChecker([stage, judge(llm_server)]).check(items()))
    want = {c for c, m in zip(CLAIMS, margins, strict=True) if m < threshold}
    assert {judged_claim(r) for r in llm_server.chat_requests()} == want
    by_confidence = {c for c, v in zip(CLAIMS, first_stage, strict=True) if v.confidence < 0.5}
    assert want != by_confidence or not want  # the two rules are not the same rule


def test_labels_named_to_escalate_go_on_whatever_their_confidence(
    embedded_checker: EmbeddedChecker, first_stage: list[Verdict], llm_server: ScriptedOpenAIServer
) -> None:
    llm_server.respond(answer_neutral_except())
    named = {label for label in Label if label is not Label.ENTAILMENT}
    cascade = CascadeChecker([CascadeStage(embedded_checker, escalate=named), judge(llm_server)])
    asyncio.run(cascade.check(items()))
    want = {c for c, v in zip(CLAIMS, first_stage, strict=True) if v.label in named}
    assert {judged_claim(r) for r in llm_server.chat_requests()} == want


def test_judge_errors_stay_with_their_claim_through_the_monitor(
    embedded_checker: EmbeddedChecker, llm_server: ScriptedOpenAIServer
) -> None:
    broken = "The tower is painted bright green every spring."
    llm_server.respond(answer_neutral_except(broken))
    telemetry = Telemetry()
    cascade = CascadeChecker([CascadeStage(embedded_checker, threshold=1.0), judge(llm_server)])
    with RefCheckMonitor(checker=cascade, exporters=[telemetry.exporter()]) as monitor:
        result = monitor.check(answer=" ".join(CLAIMS), references=REFERENCES)
    assert result.outcome is Outcome.PARTIAL, result.message
    failed = [
        (c.text, v) for c, v in zip(result.claims, result.verdicts, strict=True) if not v.label
    ]
    [(text, verdict)] = failed
    assert text == broken
    assert verdict.error is not None and "no label for claim 1" in verdict.error
    assert [s.stage for s in verdict.stages] == ["embedded", JUDGE]
    # The judge says Neutral; the conflict stage finds the year and the capital the references
    # state otherwise.
    labels = {c.text: v.label for c, v in zip(result.claims, result.verdicts, strict=True)}
    assert labels.pop("The Eiffel Tower was finished in 1925.") is Label.CONTRADICTION
    assert labels.pop("Berlin is the capital of France.") is Label.CONTRADICTION
    assert all(label is Label.NEUTRAL for text, label in labels.items() if text != broken)
    claims = len(result.claims)
    assert len(llm_server.chat_requests()) == claims  # threshold 1.0: every claim escalates

    escalations = telemetry.points(names.CASCADE_ESCALATIONS)
    assert {k: p.value for k, p in escalations.items()} == {
        frozenset({(names.STAGE, "embedded")}): claims
    }
    durations = telemetry.points(names.STAGE_DURATION)
    stages = {dict(key)[names.STAGE] for key in durations}
    assert {"check", "check.embedded", f"check.{JUDGE}"} <= stages
    records = [r.log_record.attributes or {} for r in telemetry.evaluation_records()]
    decided = [attributes.get(names.CLAIM_STAGE) for attributes in records]
    assert decided.count(JUDGE) == claims


class Raising:
    name = "raising"
    needs_references = True

    async def check(self, items: Sequence[CheckItem]) -> list[Verdict]:
        raise RuntimeError("the model server is down")


def test_a_stage_that_raises_passes_its_claims_on_and_fails_them_only_at_the_end(
    embedded_checker: EmbeddedChecker,
) -> None:
    first_broken = CascadeChecker([Raising(), embedded_checker])
    verdicts = asyncio.run(first_broken.check(items()))
    assert all(v.label is not None for v in verdicts)
    assert all([s.stage for s in v.stages] == ["raising", "embedded"] for v in verdicts)
    assert all(v.stages[0].label is None for v in verdicts)

    last_broken = CascadeChecker([CascadeStage(embedded_checker, threshold=0.99), Raising()])
    verdicts = asyncio.run(last_broken.check(items()))
    failed = [v for v in verdicts if v.label is None]
    assert failed and all("the model server is down" in (v.error or "") for v in failed)
    assert all(v.stages[-1].stage == "embedded" for v in verdicts if v.label is not None)


def test_stages_are_validated_and_named_apart(embedded_checker: EmbeddedChecker) -> None:
    with pytest.raises(ValueError, match="at least two stages"):
        CascadeChecker([embedded_checker])
    with pytest.raises(ValueError, match=r"confidence in \[0, 1\], got 1.5"):
        CascadeStage(embedded_checker, threshold=1.5)
    with pytest.raises(ValueError, match="by 'confidence' or 'margin', not 'odds'"):
        CascadeStage(embedded_checker, by="odds")  # type: ignore[arg-type]
    twice = CascadeChecker([embedded_checker, embedded_checker, embedded_checker])
    assert [name for name, _ in twice.stages] == ["embedded", "embedded-2", "embedded-3"]
